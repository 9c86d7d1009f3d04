"""Module docs."""
import os


# Parses arguments.
def parse_args(argv):
    return argv


class Parser(Base):
    """A parser."""

    limit = 3

    def __init__(self):
        self.x = 1

    @staticmethod
    def parse(text):
        return text


@cache
def cached():
    pass

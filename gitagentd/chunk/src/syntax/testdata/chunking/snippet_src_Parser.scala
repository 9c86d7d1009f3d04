package demo

class Parser(limit: Int) {
  def parse(text: String): String = {
    text
  }
}

object Parser {
  def apply(): Parser = new Parser(1)
}

trait Visitor {
  def visit(): Unit
}

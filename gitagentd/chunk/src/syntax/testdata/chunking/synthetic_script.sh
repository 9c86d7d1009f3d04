#!/bin/sh
set -e

# Greets.
greet() {
  echo hi
}

function build {
  make
}

greet
build

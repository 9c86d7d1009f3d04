//! Declarations found per language: kinds, names, members with their
//! container, lines with the comments above them.

use super::*;

/// `(kind name, first line, last line)` of each declaration.
fn decls(path: &str, source: &str) -> Vec<(String, usize, usize)> {
    let outline = outline(path, source).unwrap_or_else(|| panic!("{path} has no outline"));
    outline.decls.iter().map(|decl| (format!("{} {}", decl.kind, decl.name), decl.start_line, decl.end_line)).collect()
}

fn names(path: &str, source: &str) -> Vec<String> {
    decls(path, source).into_iter().map(|(name, _, _)| name).collect()
}

fn d(name: &str, start: usize, end: usize) -> (String, usize, usize) {
    (name.to_string(), start, end)
}

#[cfg(feature = "lang-rust")]
#[test]
fn rust_items_methods_and_comments() {
    let source = r#"//! Module docs.
use std::fmt;

/// A searcher.
#[derive(Debug)]
pub struct Searcher<'a> {
    root: &'a str,
}

impl<'a> Searcher<'a> {
    /// Searches one path.
    pub fn search_path(&self, path: &str) -> bool {
        path.starts_with(self.root)
    }

    fn helper() {}
}

impl fmt::Display for Searcher<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)
    }
}

pub trait Scorer {
    fn score(&self) -> f64;
}

const LIMIT: usize = 3;

mod inner {
    pub fn parse_args() {}
}
"#;
    assert_eq!(
        decls("src/lib.rs", source),
        [
            d("struct Searcher", 4, 8),
            d("impl Searcher", 10, 10),
            d("method Searcher::search_path", 11, 14),
            d("method Searcher::helper", 16, 16),
            d("impl fmt::Display for Searcher", 19, 19),
            d("method Searcher::fmt", 20, 22),
            d("trait Scorer", 25, 25),
            d("method Scorer::score", 26, 26),
            d("const LIMIT", 29, 29),
            d("function parse_args", 32, 32),
        ]
    );
    let outline = outline("src/lib.rs", source).unwrap();
    assert_eq!(outline.decls[2].parent, Some(1));
    assert_eq!(outline.decls[2].signature_line, 12);
    assert!(outline.decls[1].container);
}

#[cfg(feature = "lang-python")]
#[test]
fn python_classes_decorators_and_functions() {
    let source = r#""""Module docs."""
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
"#;
    assert_eq!(
        decls("tool/cli.py", source),
        [
            d("function parse_args", 5, 7),
            d("class Parser", 10, 14),
            d("method Parser.__init__", 15, 16),
            d("method Parser.parse", 18, 20),
            d("function cached", 23, 25),
        ]
    );
}

#[cfg(feature = "lang-javascript")]
#[test]
fn javascript_functions_classes_and_exports() {
    let source = r#"import x from "x";

export function parseArgs(argv) {
  return argv;
}

const handler = async (req) => {
  return req;
};

const LIMIT = 3;

export default class Parser extends Base {
  constructor() {
    super();
  }

  parse(text) {
    return text;
  }
}
"#;
    assert_eq!(
        names("src/cli.js", source),
        [
            "function parseArgs",
            "function handler",
            "const LIMIT",
            "class Parser",
            "method Parser.constructor",
            "method Parser.parse"
        ]
    );
    let jsx = "export function App() {\n  return <div className=\"a\">hi</div>;\n}\n";
    assert_eq!(names("src/App.jsx", jsx), ["function App"]);
}

#[cfg(feature = "lang-typescript")]
#[test]
fn typescript_interfaces_types_and_tsx() {
    let source = r#"export interface Options {
  limit: number;
}

export type Id = string;

enum Color { Red, Green }

export class Store<T> {
  private items: T[] = [];

  add(item: T): void {
    this.items.push(item);
  }
}

namespace Util {
  export function clamp(x: number): number {
    return x;
  }
}
"#;
    assert_eq!(
        names("src/store.ts", source),
        ["interface Options", "type Id", "enum Color", "class Store", "method Store.add", "function clamp",]
    );
    let tsx = "export const App = (props: Props) => {\n  return <div>{props.name}</div>;\n};\n";
    assert_eq!(names("src/App.tsx", tsx), ["function App"]);
}

#[cfg(feature = "lang-java")]
#[test]
fn java_classes_and_methods() {
    let source = r#"package demo;

import java.util.List;

/** A parser. */
public class Parser {
    private int limit;

    public Parser(int limit) {
        this.limit = limit;
    }

    /** Parses. */
    public List<String> parse(String text) {
        return List.of(text);
    }

    interface Visitor {
        void visit();
    }
}
"#;
    assert_eq!(
        names("src/Parser.java", source),
        [
            "class Parser",
            "constructor Parser.Parser",
            "method Parser.parse",
            "interface Parser.Visitor",
            "method Parser.Visitor.visit"
        ]
    );
}

/// An enum constant with a class body is a declaration of its own (its
/// methods inside it); one without a body stays in the enum's header.
#[cfg(feature = "lang-java")]
#[test]
fn java_enum_constants_with_bodies() {
    let source = include_str!("testdata/chunking/snippet_src_NamingPolicy.java");
    let expected = [
        d("enum NamingPolicy", 3, 4),
        d("constant NamingPolicy.IDENTITY", 5, 11),
        d("constant NamingPolicy.UPPER_FIRST", 13, 24),
        d("constructor NamingPolicy.NamingPolicy", 28, 28),
        d("constructor NamingPolicy.NamingPolicy", 30, 30),
        d("method NamingPolicy.upperFirst", 32, 34),
    ];
    assert_eq!(decls("src/NamingPolicy.java", source), expected);
}

#[cfg(feature = "lang-c")]
#[test]
fn c_functions_structs_and_macros() {
    let source = r#"#include <stdio.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct point {
    int x;
};

typedef struct point point_t;

/* Parses arguments. */
static int *parse_args(int argc, char **argv) {
    return 0;
}
"#;
    assert_eq!(names("src/main.c", source), ["macro MAX", "struct point", "type point_t", "function parse_args"]);
}

#[cfg(feature = "lang-cpp")]
#[test]
fn cpp_classes_namespaces_and_templates() {
    let source = r#"namespace demo {

class Parser {
public:
    int parse(const char *text) {
        return 0;
    }
};

template <typename T>
T identity(T value) {
    return value;
}

int Parser::count() const {
    return 1;
}

}
"#;
    assert_eq!(
        names("src/parser.cpp", source),
        ["class Parser", "method Parser::parse", "function identity", "function Parser::count"]
    );
}

#[cfg(feature = "lang-csharp")]
#[test]
fn csharp_namespaces_classes_and_members() {
    let source = r#"using System;

namespace Demo
{
    public class Parser
    {
        public int Limit { get; set; }

        public Parser() { }

        public string Parse(string text)
        {
            return text;
        }
    }

    public enum Color { Red }
}
"#;
    assert_eq!(
        names("src/Parser.cs", source),
        ["class Parser", "property Parser.Limit", "constructor Parser.Parser", "method Parser.Parse", "enum Color"]
    );
}

#[cfg(feature = "lang-ruby")]
#[test]
fn ruby_classes_modules_and_methods() {
    let source = r#"require "json"

module Tools
  class Parser
    def parse(text)
      text
    end

    def self.build
      new
    end
  end
end

def helper
  1
end
"#;
    assert_eq!(
        names("lib/parser.rb", source),
        [
            "module Tools",
            "class Tools.Parser",
            "method Tools.Parser.parse",
            "method Tools.Parser.self.build",
            "function helper"
        ]
    );
}

#[cfg(feature = "lang-php")]
#[test]
fn php_classes_and_functions() {
    let source = r#"<?php

namespace App;

function helper($x) {
    return $x;
}

class Parser {
    private $limit;

    public function parse($text) {
        return $text;
    }
}
"#;
    assert_eq!(names("src/Parser.php", source), ["function helper", "class Parser", "method Parser::parse"]);
}

#[cfg(feature = "lang-kotlin")]
#[test]
fn kotlin_classes_objects_and_functions() {
    let source = r#"package demo

fun parseArgs(argv: Array<String>): List<String> {
    return argv.toList()
}

class Parser(val limit: Int) {
    fun parse(text: String): String {
        return text
    }

    companion object {
        fun create(): Parser = Parser(1)
    }
}
"#;
    assert_eq!(
        names("src/Parser.kt", source),
        [
            "function parseArgs",
            "class Parser",
            "method Parser.parse",
            "object Parser.Companion",
            "method Parser.Companion.create"
        ]
    );
}

#[cfg(feature = "lang-swift")]
#[test]
fn swift_types_extensions_and_functions() {
    let source = r#"import Foundation

struct Parser {
    var limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func parse(_ text: String) -> String {
        return text
    }
}

extension Parser {
    func count() -> Int { 1 }
}

func parseArgs() -> [String] {
    return []
}
"#;
    assert_eq!(
        names("Sources/Parser.swift", source),
        [
            "struct Parser",
            "init Parser.init",
            "method Parser.parse",
            "extension Parser",
            "method Parser.count",
            "function parseArgs"
        ]
    );
}

#[cfg(feature = "lang-scala")]
#[test]
fn scala_classes_objects_and_defs() {
    let source = r#"package demo

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
"#;
    assert_eq!(
        names("src/Parser.scala", source),
        [
            "class Parser",
            "method Parser.parse",
            "object Parser",
            "method Parser.apply",
            "trait Visitor",
            "method Visitor.visit"
        ]
    );
}

#[cfg(feature = "lang-bash")]
#[test]
fn shell_functions() {
    let source = "#!/bin/sh\nset -e\n\n# Greets.\ngreet() {\n  echo hi\n}\n\nfunction build {\n  make\n}\n\ngreet\n";
    assert_eq!(decls("scripts/run.sh", source), [d("function greet", 4, 7), d("function build", 9, 11)]);
}

#[cfg(feature = "lang-python")]
#[test]
fn files_that_do_not_parse_have_no_outline() {
    assert!(outline("a.py", "def broken(:\n    return ]]\n").is_none());
    assert!(outline("notes.txt", "def f():\n    pass\n").is_none());
}

#[test]
fn markdown_is_cut_at_headings_outside_fences() {
    let text = "Intro line.\n\n# Title\n\nText.\n\n```sh\n# not a heading\n```\n\n## Usage ##\nRun it.";
    let outline = markdown::outline(text).unwrap();
    let got: Vec<_> = outline.decls.iter().map(|decl| (decl.name.as_str(), decl.start_line, decl.end_line)).collect();
    assert_eq!(got, [("Title", 3, 10), ("Usage", 11, 12)]);
    assert!(markdown::outline("no headings\n#hashtag").is_none());
}

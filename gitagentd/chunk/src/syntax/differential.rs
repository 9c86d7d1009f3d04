//! The fast path (bodies left out of the parse, [`super::elide`]) against
//! the full parse: on every golden fixture, on hand-written inputs that
//! try to fool the body scan, and on thousands of mutated fixtures, both
//! give the same outline. The one allowed difference: a file whose full
//! parse has a syntax error somewhere (inside a body the fast path never
//! reads, a declaration's error is not seen).

use super::{Parse, outline_with, parse_facts};
use std::path::PathBuf;

fn fixtures() -> Vec<(String, String)> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/syntax/testdata/chunking");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&folder)
        .expect("the chunking fixtures")
        .map(|entry| {
            let path = entry.expect("a fixture").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = crate::chunking::normalize(std::fs::read_to_string(&path).expect("a UTF-8 fixture"));
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// Whether the fast path has a scan for `path`'s language.
fn scanned(path: &str) -> bool {
    let grammar = super::grammars::for_path(path);
    grammar.is_some_and(|grammar| super::elide::gaps(grammar.feature, "").is_some())
}

/// Asserts both parses agree on `text`, unless the full parse has an
/// error; returns whether the fast path was taken.
fn agree(path: &str, text: &str) -> bool {
    let full = outline_with(path, text, Parse::Full);
    let fast = outline_with(path, text, Parse::Elided);
    let (elided, error) = parse_facts(path, text);
    if full != fast {
        assert!(error, "{path}: the fast path differs from the full parse of an error-free file:\n{text}");
    }
    elided
}

#[test]
fn every_fixture_outlines_the_same_and_the_fast_path_is_taken() {
    let mut taken = Vec::new();
    for (name, text) in fixtures() {
        if !scanned(&name) {
            continue;
        }
        let full = outline_with(&name, &text, Parse::Full);
        let fast = outline_with(&name, &text, Parse::Elided);
        assert_eq!(full, fast, "{name}");
        if parse_facts(&name, &text).0 {
            taken.push(name.clone());
        }
    }
    for expected in [
        "ripgrep_searcher_mod.rs",
        "tokio_mpsc_bounded.rs",
        "flask_app.py",
        "vue_reactivity_ref.ts",
        "vue_componentProps.ts",
        "snippet_src_Parser.java",
        "snippet_src_Parser.cs",
        "synthetic_Long.java",
        "vue_scripts_build.js",
    ] {
        assert!(taken.iter().any(|name| name == expected), "{expected} took the full parse ({taken:?})");
    }
}

/// Inputs written to fool a byte-level scan: braces in strings, comments,
/// characters and templates; nested functions; closures; generics.
const TRICKY: &[(&str, &str)] = &[
    (
        "a.rs",
        r##"/// Doc with { brace
pub struct S<'a> { x: &'a str }

impl<'a> S<'a> {
    pub fn new(x: &'a str) -> Self {
        let c = '{';
        let d = '\'';
        let e = '\u{7D}';
        let s = "}}}";
        let r = r#"raw " { "#;
        let b = br"}";
        /* block /* nested { */ } */
        let f = |y: u32| -> u32 { y + 1 };
        'outer: loop { break 'outer; }
        fn inner() -> Vec<Vec<u8>> { vec![vec![]] }
        S { x }
    }

    fn generic<T: Into<Vec<Vec<u8>>>>(t: T) -> Result<(), Box<dyn std::error::Error>> where T: Clone {
        let _ = t.into();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn works() {
        assert_eq!(1 + 1, 2);
    }
}

macro_rules! m {
    ($x:ident) => { fn $x() { println!("{}", 1); } };
}

const F: fn(u32) -> u32 = { fn g(x: u32) -> u32 { x * 2 * 3 * 4 * 5 * 6 * 7 } g };
trait T { fn required(&self); fn provided(&self) -> u32 { 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 } }
"##,
    ),
    (
        "a.py",
        r#"import os


@decorator(arg={"a": 1})
def decorated(x, y=")"):
    """Docstring with def inside: def fake():"""
    s = '''multi
line { string
'''
    def nested():
        return 1
    return nested() + len(s)


class Outer:
    """A class."""

    class Inner:
        def method(self):
            if self:
                return [
                    1,
                    2,
                ]
            else:
                return 3

    async def run(self, *args,
                  **kwargs) -> dict[str, int]:
        async with lock:
            await thing()
        # trailing comment at body level

    def one_liner(self): return 1

    def ends_in_else(self):
        if x:
            y = 1
        else: y = 2

    def with_continuation(self):
        total = 1 + \
            2
        return total
# comment at column zero


def last(a,
         b):
    x = f"{a!r} {{ }}"
    y = rb'\x00'
    return (x,
            y)


from typing import (
    Any,
    Dict,
)

TABLE = {
    "key": [1, 2, 3],
    "other": ("a", "b"),
    "nested": {"x": {"y": "}"}},
}

MATRIX = grid[
    1:2
]

register(
    name="handler",
    callback=lambda event: event,
)


class Config(
    Base,
    metaclass=Meta,
):
    defaults = [
        "one", "two", "three", "four", "five",
    ]

    def method(self, values=[
        1, 2, 3,
    ]):
        return values
"#,
    ),
    (
        "a.js",
        r#"const path = require("path");

// { brace in a comment
function build(options) {
    const re = /[}]+/g;
    return `${options.name} }`;
}

class Builder extends Base {
    run() {
        return [1, 2, 3].map((x) => { return x * 2; });
    }
}

module.exports = { build, Builder };
"#,
    ),
    (
        "a.ts",
        r#"import { a } from "./a";

// A comment with { brace
export function f(x: number): Promise<Map<string, Array<number>>> {
    const s = `template ${x + `nested ${"}"}`} }`;
    const r = /[{}]\//g;
    const half = x / 2 / 3;
    return Promise.resolve(new Map());
}

export class C<T> extends Base<T> implements I {
    private x = () => { return 1; };
    constructor(private readonly y: string) {
        super();
    }
    get value(): { a: number } {
        return { a: 1 };
    }
    static async *gen(): AsyncGenerator<number> {
        yield 1;
    }
}

class D extends mixin(A, B) {
    method() {
        return "}";
    }
}

export const handler = async (event: Event): Promise<void> => {
    if (event) {
        console.log('{');
    }
};

namespace N {
    export function g() {
        return 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9;
    }
}

describe("suite", () => {
    it("works", () => {
        expect(1).toBe(1);
    });
});

interface I { m(): void; n(a: string): { b: number }; }
enum E { A = 1, B = 2 }
"#,
    ),
    (
        "A.java",
        r#"package a;

@SuppressWarnings("unchecked")
public class A extends B<C<D>> implements E {
    private static final String S = "{";
    private final Runnable r = () -> { System.out.println("}"); };
    private final Object o = new Object() { public String toString() { return "{"; } };

    static { init(); }

    @Override
    public <T> List<List<T>> method(final T t) throws IOException {
        char c = '{';
        String block = """
            text { block
            """;
        return null;
    }

    enum Kind { ONE { void f() { } }, TWO; void g() { System.out.println(1); } }

    interface Inner { default void d() { System.out.println("d"); } }

    record R(int x) { R { if (x < 0) throw new IllegalArgumentException(); } }
}

@interface Note { String value() default "}"; }
"#,
    ),
    (
        "a.c",
        r#"#include <stdio.h>
#define BRACE '{'
#define MULTI(x) \
    do { x; } while (0)

/* comment { */
struct point { int x, y; };

static int add(int a, int b) {
    char c = '}';
    const char *s = "{\"}";
    return a + b;
}

#ifdef FEATURE
int feature(void) {
    return 1 + 2 + 3 + 4 + 5 + 6 + 7;
}
#endif

typedef struct { int a; } anon;

int (*pointer(int x))(int) {
    return 0 ? 0 : (int (*)(int))0;
}
"#,
    ),
    (
        "a.cpp",
        r#"#include <vector>

namespace outer::inner {

template <typename T>
class Box : public Base<Box<T>> {
public:
    Box() : value_{}, items_(10) {
        auto lambda = [this](int x) -> int { return x + value_; };
    }
    T get() const noexcept override {
        const char *raw = R"delim(raw { " string)delim";
        return value_;
    }
    int digits() { return 1'000'000; }
private:
    T value_;
    std::vector<int> items_;
};

auto free_function(int a) -> decltype(a) {
    return a * 2 * 3 * 4 * 5 * 6 * 7 * 8 * 9;
}

}  // namespace outer::inner

extern "C" {
int c_function(void) { return 42 + 42 + 42 + 42 + 42 + 42; }
}
"#,
    ),
    (
        "A.cs",
        r#"using System;

namespace Demo
{
    [Serializable]
    public class A<T> : B where T : class
    {
        private string s = @"verbatim "" { ";
        private string i = $"interpolated {1 + 1} }}";
        public int P { get { return 1; } set { } }
        public int Q => 42;

        public A()
        {
            Console.WriteLine("{");
        }

        #region helpers
        public void M(int x)
        {
            char c = '}';
            Func<int, int> f = y => { return y + 1; };
        }
        #endregion
    }

    public record R(int X) { public int Y { get; init; } }
}
"#,
    ),
    (
        "comments.rs",
        "//! Inner documentation of the module, long enough to leave out.\r\n//! Its second line.\r\n\r\n/// A reader of configuration files, documented over\r\n/// three lines so the run is long:\r\n////  four slashes make a plain comment, not documentation\r\n#[derive(Debug)]\r\n/// A doc line after an attribute, still above the struct.\r\npub struct Reader { position: usize }\r\n\r\n/* A block comment /* with a nested one */ between items, long. */\r\nimpl Reader {\r\n    // A plain comment above a method inside the impl, long enough.\r\n    //\r\n    pub fn open() -> Self { Reader { position: 0 } }\r\n    /** A block doc comment above the second method, long. */\r\n    pub fn close(&self) {}\r\n}\r\n// The last line of the file is a comment without a newline",
    ),
    (
        "comments.ts",
        r#"/**
 * A class documented with JSDoc, over several lines.
 * @example new Store()
 */
export class Store {
  // The items kept by the store, in the order they arrived.
  // A second line of the same comment.
  items: string[] = []

  /** Adds an item at the end of the store, then returns it. */
  add(item: string): string { this.items.push(item); return item }
}

// A function with a regular expression and a string that look like comments.
export function strip(text: string): string { return text.replace(/\/\/.*$/, "// not a comment") }
"#,
    ),
    (
        "unicode.rs",
        "//! Ünïcödé at the start of a module comment, long enough to leave out: ü\n/// Größe of the buffer, documented in German and ending on é\n/// and a second line that ends on a three-byte character: 語\npub struct Größe { wert: u32 }\n/*ü block comment with non-ASCII text inside, long enough: 語 */\nimpl Größe { /// Döc above a method, long enough to leave out ß\n    pub fn wert(&self) -> u32 { self.wert + 1 + 2 + 3 + 4 + 5 } }\n",
    ),
    (
        "blocks.rs",
        r#"pub struct Config { pub name: String, pub retries: u32, pub verbose: bool }
pub enum Mode { Fast = 1, Careful { depth: usize, budget: u64 }, Off(u8) }
union Bits { word: u32, bytes: [u8; 4], halves: [u16; 2] }
macro_rules! twice { ($e:expr) => { { let x = $e; x + x } }; () => { 0 + 0 + 0 } }
extern "C" { fn abs(input: i32) -> i32; fn labs(input: i64) -> i64; }
cfg_feature! { pub fn hidden_in_a_macro() -> u32 { 1 + 2 + 3 + 4 + 5 } }
const TABLE: [u32; 4] = { let mut t = [0; 4]; t[0] = 1; t };
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
impl<T: Fn() -> u32> Runner<T> where T: Clone { pub fn run(&self) -> u32 { (self.0)() + 1 + 2 + 3 } }
pub mod nested { pub struct Inner { pub a: u8, pub b: u16, pub c: u32 } }
trait Shape { const SIDES: u32 = { 3 + 1 + 0 + 0 + 0 + 0 }; fn area(&self) -> f64; }
"#,
    ),
    (
        "blocks.ts",
        r#"export class Store<T = any, K extends keyof T = keyof T> {
  items: T[] = []
  options = { capacity: 10, name: "store", strict: true }
  get(key: K): T[K] | undefined { return this.items[0]?.[key] }
}
export interface Options { capacity: number; name: string; strict?: boolean }
export enum Level { Low = 1, Middle = 2, High = 3, Highest = 4 }
export type Pair = { left: number; right: number; label: string }
export default { name: "component", data() { return { count: 0, label: "x" } } }
module.exports = { handler: function (event) { return event.body + "handled" } }
declare module "virtual" { export function load(id: string): Promise<string> }
namespace Outer.Inner { export const answer = { value: 42, label: "answer" } }
declare global { interface Window { store: Store; options: Options } }
const { left, right } = { left: 1, right: 2, label: "destructured pair" }
"#,
    ),
    (
        "Blocks.java",
        r#"public class Blocks {
    static final int[] TABLE = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
    static { System.out.println("static initializer with a long body"); }
    { System.out.println("instance initializer with a long body too"); }
    enum Op { ADD { int apply(int a, int b) { return a + b + 0 + 0; } }, NEG; }
    @interface Marker { String value() default "a default value here"; }
    record Point(int x, int y) { Point { if (x < 0) throw new IllegalArgumentException(); } }
    int sum() { return TABLE[0] + TABLE[1] + TABLE[2] + TABLE[3]; }
}
"#,
    ),
];

#[test]
fn tricky_inputs_outline_the_same_through_the_fast_path() {
    for (path, text) in TRICKY {
        let full = outline_with(path, text, Parse::Full);
        let fast = outline_with(path, text, Parse::Elided);
        assert!(full.is_some(), "{path}: the full parse has no outline");
        assert_eq!(full, fast, "{path}");
        let (elided, error) = parse_facts(path, text);
        assert!(!error, "{path}: the input itself has a syntax error");
        assert!(elided, "{path}: the fast path was not taken");
    }
}

/// A small deterministic generator (xorshift), so that a failure replays.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

/// `text` with one random edit: a deletion, an inserted token that
/// upsets a lexer, or a duplicated line.
fn mutate(text: &str, random: &mut Random) -> String {
    const INSERTS: &[&str] = &[
        "{",
        "}",
        "\"",
        "'",
        "/*",
        "*/",
        "//",
        "`",
        "(",
        ")",
        "\n",
        "#",
        "r#\"",
        "\"\"\"",
        "=>",
        "->",
        "\\",
        "${",
        "/",
        ":",
        "[",
        "]",
        "\n    ",
        "fn g() {}\n",
        "def g():\n    pass\n",
        "function g() { return 1; }\n",
        "class K {\n",
    ];
    let mut at = random.below(text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let mut out = String::with_capacity(text.len() + 32);
    match random.below(3) {
        0 => {
            let mut end = (at + 1 + random.below(20)).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            out.push_str(&text[..at]);
            out.push_str(&text[end..]);
        }
        1 => {
            out.push_str(&text[..at]);
            out.push_str(INSERTS[random.below(INSERTS.len())]);
            out.push_str(&text[at..]);
        }
        _ => {
            let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
            let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n + 1);
            out.push_str(&text[..line_end]);
            out.push_str(&text[line_start..line_end]);
            out.push_str(&text[line_end..]);
        }
    }
    out
}

#[test]
fn mutated_inputs_never_outline_differently_when_they_parse_cleanly() {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let mut sources: Vec<(String, String)> = fixtures().into_iter().filter(|(name, _)| scanned(name)).collect();
    sources.extend(TRICKY.iter().map(|(path, text)| (path.to_string(), text.to_string())));
    let (mut runs, mut fast) = (0, 0);
    for (name, text) in &sources {
        // Larger files take fewer rounds: every file gets its share.
        let rounds = (300_000 / text.len().max(1)).clamp(20, 150);
        for _ in 0..rounds {
            let mut mutated = mutate(text, &mut random);
            if random.below(2) == 0 {
                mutated = mutate(&mutated, &mut random);
            }
            runs += 1;
            if agree(name, &mutated) {
                fast += 1;
            }
        }
    }
    assert!(runs >= 2000, "only {runs} mutated inputs");
    // Most edits break the syntax (the full parse then decides); enough
    // of them keep it for the comparison to mean something.
    assert!(fast >= 500, "the fast path was taken for only {fast} of {runs} mutated inputs");
}

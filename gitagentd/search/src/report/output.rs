//! What search writes on stdout: the JSON envelope (field for field the
//! original implementation's, numbers printed the way it prints them),
//! the brief format, and the `--ls` / `--ls-files` listings.

use crate::chunking::Symbol;
use crate::rank::history::Replay;
use crate::rank::query::Hit;
use crate::source::discovery::SkipCounts;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;

/// Serializes numbers as JSON per ECMAScript's shortest round-trip form
/// (what Go's JSON encoder writes): `1`, `0.7`, `1e-9`, `1e+21`.
struct GoNumbers;

impl serde_json::ser::Formatter for GoNumbers {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(format_number(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }
}

/// ECMAScript number formatting of a finite value.
pub fn format_number(value: f64) -> String {
    if !value.is_finite() {
        return "null".into();
    }
    if value == 0.0 {
        return "0".into();
    }
    let abs = value.abs();
    if (1e-6..1e21).contains(&abs) {
        return format!("{value}");
    }
    let text = format!("{value:e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
        _ => text,
    }
}

/// Compact JSON followed by a newline.
pub fn to_json_line<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, GoNumbers);
    // Serializing plain data into memory cannot fail.
    if value.serialize(&mut serializer).is_err() {
        out.clear();
        out.extend_from_slice(b"null");
    }
    out.push(b'\n');
    out
}

#[derive(Serialize)]
pub struct SearchOutput {
    pub query: String,
    pub source: SourceOut,
    pub min_score: f64,
    pub retrieval: Retrieval,
    pub results: Vec<ResultOut>,
    pub replay: ReplayOut,
}

#[derive(Serialize, Default)]
pub struct SourceOut {
    pub mode: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub root: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub remote: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rev: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resolved_rev: String,
}

#[derive(Serialize)]
pub struct Retrieval {
    pub mode: &'static str,
    /// `local` for the in-process model; absent for an endpoint, so a
    /// remote search prints what it always printed.
    #[serde(skip_serializing_if = "is_remote")]
    pub embedding_backend: &'static str,
    pub embedding_model: String,
    pub index: &'static str,
    pub dimensions: usize,
    #[serde(skip_serializing_if = "Filters::is_zero")]
    pub filters: Filters,
    #[serde(skip_serializing_if = "SkippedOut::is_zero")]
    pub skipped: SkippedOut,
}

fn is_remote(backend: &&'static str) -> bool {
    *backend == "remote"
}

#[derive(Serialize, Clone, Default)]
pub struct Filters {
    pub code: bool,
    pub no_tests: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
}

impl Filters {
    fn is_zero(&self) -> bool {
        !self.code && !self.no_tests && self.scope.is_empty()
    }
}

#[derive(Serialize, Default)]
pub struct SkippedOut {
    pub dirs: usize,
    pub binary: usize,
    pub non_text: usize,
    pub oversized: usize,
    pub symlink: usize,
    pub unreadable: usize,
}

impl SkippedOut {
    fn is_zero(&self) -> bool {
        self.dirs == 0
            && self.binary == 0
            && self.non_text == 0
            && self.oversized == 0
            && self.symlink == 0
            && self.unreadable == 0
    }
}

impl From<SkipCounts> for SkippedOut {
    fn from(counts: SkipCounts) -> Self {
        Self {
            dirs: counts.dirs,
            binary: counts.binary,
            non_text: counts.non_text,
            oversized: counts.oversized,
            symlink: counts.symlink,
            unreadable: counts.unreadable,
        }
    }
}

#[derive(Serialize)]
pub struct ResultOut {
    pub relatedness: f64,
    pub range: String,
    pub symbol: Option<SymbolOut>,
    pub scores: ScoresOut,
    pub excerpt: String,
    #[serde(skip)]
    pub path: String,
    #[serde(skip)]
    pub start_line: u32,
}

#[derive(Serialize)]
pub struct SymbolOut {
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
}

#[derive(Serialize)]
pub struct ScoresOut {
    pub cosine: f64,
    pub vector_relatedness: f64,
    pub text: f64,
    pub path: f64,
    pub symbol: f64,
    pub lexical: f64,
    pub rank: f64,
}

#[derive(Serialize)]
pub struct ReplayOut {
    pub mode: String,
    pub from: Option<String>,
}

impl From<&Replay> for ReplayOut {
    fn from(replay: &Replay) -> Self {
        match replay {
            Replay::Unset => Self { mode: String::new(), from: None },
            Replay::None => Self { mode: "none".into(), from: None },
            Replay::Hit(from) => Self { mode: "hit".into(), from: Some(from.clone()) },
            Replay::Similar(from) => Self { mode: "similar".into(), from: Some(from.clone()) },
        }
    }
}

impl From<&Hit> for ResultOut {
    fn from(hit: &Hit) -> Self {
        Self {
            relatedness: hit.scores.rank,
            range: format!("{}:{}-{}", hit.path, hit.start_line, hit.end_line),
            symbol: hit
                .symbol
                .as_ref()
                .map(|Symbol { kind, name }| SymbolOut { kind: kind.to_string(), name: name.clone() }),
            scores: ScoresOut {
                cosine: hit.scores.cosine,
                vector_relatedness: hit.scores.vector_relatedness,
                text: hit.scores.text,
                path: hit.scores.path,
                symbol: hit.scores.symbol,
                lexical: hit.scores.lexical,
                rank: hit.scores.rank,
            },
            excerpt: hit.excerpt.clone(),
            path: hit.path.clone(),
            start_line: hit.start_line,
        }
    }
}

/// The `index=` value of the brief header.
pub fn freshness(chunks: usize, embedded: usize, reused: usize) -> &'static str {
    if chunks == 0 {
        "empty"
    } else if embedded == 0 && reused > 0 {
        "fresh"
    } else if reused > 0 {
        "refreshed"
    } else {
        "built"
    }
}

/// `# mode=... index=...` and one `<score> <path>:<line> <summary>` line
/// per result; a Go `package` chunk is left out when another result of the
/// same file has a symbol.
pub fn brief(mode: &str, freshness: &str, results: &[ResultOut]) -> String {
    let mut out = format!("# mode={mode} index={freshness}\n");
    let with_symbols: std::collections::HashSet<&str> = results
        .iter()
        .filter(|result| result.symbol.as_ref().is_some_and(|symbol| !symbol.name.is_empty()))
        .map(|result| result.path.as_str())
        .collect();
    for result in results {
        let summary = brief_summary(result);
        if result.symbol.is_none()
            && result.path.ends_with(".go")
            && with_symbols.contains(result.path.as_str())
            && summary.starts_with("package ")
        {
            continue;
        }
        out.push_str(&format!("{:.2} {}:{} {}\n", result.relatedness, result.path, result.start_line, summary));
    }
    out
}

/// The symbol's name, else the first meaningful excerpt line (not blank,
/// not punctuation alone such as a closing brace, not a lone short word),
/// else the first line with a letter or digit, else the first that is not
/// blank.
fn brief_summary(result: &ResultOut) -> String {
    if let Some(symbol) = result.symbol.as_ref().filter(|symbol| !symbol.name.is_empty()) {
        return symbol.name.clone();
    }
    let mut fallback: Option<&str> = None;
    let mut last_resort: Option<&str> = None;
    for line in result.excerpt.split('\n') {
        let text = match line.split_once(':') {
            Some((prefix, text)) if prefix.trim().parse::<i64>().is_ok() => text.trim(),
            _ => line.trim(),
        };
        if text.is_empty() {
            continue;
        }
        if is_meaningful_line(text) {
            return text.to_string();
        }
        if crate::chunking::is_trivial_line(text) {
            last_resort.get_or_insert(text);
        } else {
            fallback.get_or_insert(text);
        }
    }
    fallback.or(last_resort).unwrap_or_default().to_string()
}

/// A line that says something on its own: more than punctuation or a
/// closing keyword, and more than one short word (`self`, `pass`).
fn is_meaningful_line(text: &str) -> bool {
    !crate::chunking::is_trivial_line(text) && (text.contains([' ', '\t']) || text.chars().count() >= 8)
}

/// One completed index, as `--ls` lists it.
#[derive(Serialize, Clone)]
pub struct IndexInfo {
    pub mode: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub root: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub remote: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resolved_rev: String,
    pub embedding_model: String,
    pub dimensions: i64,
    pub created_at: String,
    pub files: usize,
    pub chunks: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
    pub dir: String,
}

/// `--ls` text.
pub fn format_indexes(indexes: &[IndexInfo], created_seconds: &dyn Fn(&str) -> String) -> String {
    if indexes.is_empty() {
        return "no search indexes\n".into();
    }
    let mut out = String::new();
    for (position, index) in indexes.iter().enumerate() {
        if position > 0 {
            out.push('\n');
        }
        out.push_str(&index.mode);
        if !index.resolved_rev.is_empty() {
            out.push_str(&format!(" rev={}", &index.resolved_rev[..index.resolved_rev.len().min(12)]));
        }
        if !index.root.is_empty() {
            out.push_str(&format!(" root={}", index.root));
        }
        if !index.remote.is_empty() {
            out.push_str(&format!(" remote={}", index.remote));
        }
        if !index.filters.is_empty() {
            out.push_str(&format!(" filters={}", index.filters.join(",")));
        }
        out.push_str(&format!(
            " files={} chunks={} model={} dims={} created={}\n",
            index.files,
            index.chunks,
            index.embedding_model,
            index.dimensions,
            created_seconds(&index.created_at)
        ));
        out.push_str(&format!("  {}\n", index.dir));
    }
    out
}

/// `--ls-files --format json`.
#[derive(Serialize)]
pub struct IndexFiles {
    pub index: IndexInfo,
    pub files: Vec<String>,
}

/// `--ls-files` tree: `.` and box-drawing branches, folders with `/`; a
/// quoted key is split by its bytes, each name that is not UTF-8 quoted
/// on its own (`"dir\377"/`, then `x.py`).
pub fn format_tree(paths: &[String]) -> String {
    #[derive(Default)]
    struct Node {
        children: BTreeMap<String, Node>,
        is_file: bool,
    }
    let mut root = Node::default();
    for path in paths {
        let mut node = &mut root;
        let bytes = git_agent_shared::quote::key_bytes(path);
        let parts: Vec<&[u8]> =
            bytes.split(|&byte| byte == b'/').filter(|part| !part.is_empty() && *part != b".").collect();
        for (index, part) in parts.iter().enumerate() {
            node = node.children.entry(git_agent_shared::quote::utf8_or_quoted(part).into_owned()).or_default();
            if index + 1 == parts.len() {
                node.is_file = true;
            }
        }
    }
    fn write(out: &mut String, node: &Node, prefix: &str) {
        let count = node.children.len();
        for (position, (name, child)) in node.children.iter().enumerate() {
            let last = position + 1 == count;
            let (branch, next) = if last { ("└── ", "    ") } else { ("├── ", "│   ") };
            let label = if !child.is_file && !child.children.is_empty() { format!("{name}/") } else { name.clone() };
            out.push_str(&format!("{prefix}{branch}{label}\n"));
            if !child.children.is_empty() {
                write(out, child, &format!("{prefix}{next}"));
            }
        }
    }
    let mut out = String::from(".\n");
    write(&mut out, &root, "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_go() {
        assert_eq!(format_number(1.0), "1");
        assert_eq!(format_number(0.7), "0.7");
        assert_eq!(format_number(0.0), "0");
        assert_eq!(format_number(1e-9), "1e-9");
        assert_eq!(format_number(1.5e-7), "1.5e-7");
        assert_eq!(format_number(0.000001), "0.000001");
        assert_eq!(format_number(1e21), "1e+21");
        assert_eq!(format_number(-0.25), "-0.25");
        let line = to_json_line(&serde_json::json!({"a": 1.0, "b": [0.5, 1e-9], "c": 3}));
        assert_eq!(line, b"{\"a\":1,\"b\":[0.5,1e-9],\"c\":3}\n");
    }

    #[test]
    fn tree_quotes_each_name_that_is_not_utf8() {
        let paths = ["\"dir\\377/x.py\"".to_string(), "\"caf\\351.py\"".to_string(), "a.py".to_string()];
        assert_eq!(format_tree(&paths), ".\n├── \"caf\\351.py\"\n├── \"dir\\377\"/\n│   └── x.py\n└── a.py\n");
    }

    #[test]
    fn tree_renders_folders_and_files() {
        let paths: Vec<String> = ["README.md", "cmd/app.go", "internal/cli/app.go", "internal/cli/run.go"]
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            format_tree(&paths),
            ".\n├── README.md\n├── cmd/\n│   └── app.go\n└── internal/\n    └── cli/\n        ├── app.go\n        └── run.go\n"
        );
        assert_eq!(format_tree(&[]), ".\n");
    }

    #[test]
    fn brief_suppresses_go_package_chunks_next_to_symbols() {
        let result = |path: &str, line: u32, symbol: Option<&str>, excerpt: &str, score: f64| ResultOut {
            relatedness: score,
            range: String::new(),
            symbol: symbol.map(|name| SymbolOut { kind: "function".into(), name: name.into() }),
            scores: ScoresOut {
                cosine: 0.0,
                vector_relatedness: 0.0,
                text: 0.0,
                path: 0.0,
                symbol: 0.0,
                lexical: 0.0,
                rank: score,
            },
            excerpt: excerpt.into(),
            path: path.into(),
            start_line: line,
        };
        let results = vec![
            result("a.go", 1, None, "1: package a\n2: ", 0.9),
            result("a.go", 3, Some("Run"), "3: func Run() {}", 0.876),
            result("b.go", 1, None, "1: package b", 0.8),
            result("c.md", 4, None, "4: \n5:   # Title", 0.756),
            result("d.rs", 61, None, "61: \n62:     }\n63:     self\n64: }\n65: fn main() {", 0.5),
            result("e.txt", 1, None, "1: }\n2: self", 0.4),
        ];
        assert_eq!(
            brief("filesystem", "fresh", &results),
            "# mode=filesystem index=fresh\n0.88 a.go:3 Run\n0.80 b.go:1 package b\n0.76 c.md:4 # Title\n0.50 d.rs:61 fn main() {\n0.40 e.txt:1 self\n"
        );
        assert_eq!(freshness(0, 0, 0), "empty");
        assert_eq!(freshness(3, 0, 3), "fresh");
        assert_eq!(freshness(3, 1, 2), "refreshed");
        assert_eq!(freshness(3, 3, 0), "built");
    }
}

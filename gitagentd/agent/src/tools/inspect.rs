//! `inspect_file`: a file's exact size and line count and a bounded
//! outline (Go declarations, Markdown headings, JSON pointers),
//! without its content.

use super::paths::RepoFiles;
use super::repository::read_prefix;
use super::schema;
use super::{BlockingTool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Outline parsing keeps at most this much of a file.
const OUTLINE_CONTENT: usize = 4 << 20;
const OUTLINE_ENTRIES: usize = 200;
const OUTLINE_BYTES: usize = 64 << 10;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Repository-relative file path.
    path: String,
    /// Where to read: worktree, index or head; null for the command's default.
    #[schemars(schema_with = "schema::source")]
    source: Option<String>,
}

#[derive(Debug, Serialize, PartialEq)]
struct OutlineEntry {
    kind: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
}

#[derive(Default)]
struct Outline {
    entries: Vec<OutlineEntry>,
    bytes: usize,
    truncated: bool,
}

impl Outline {
    fn add(&mut self, kind: impl Into<String>, name: impl Into<String>, line: Option<usize>) -> bool {
        let (kind, name) = (kind.into(), name.into());
        if self.entries.len() == OUTLINE_ENTRIES || self.bytes + kind.len() + name.len() > OUTLINE_BYTES {
            self.truncated = true;
            return false;
        }
        self.bytes += kind.len() + name.len();
        self.entries.push(OutlineEntry { kind, name, line });
        true
    }
}

#[derive(Clone)]
pub(super) struct InspectFile(pub(super) Arc<RepoFiles>);

impl BlockingTool for InspectFile {
    const NAME: &'static str = "inspect_file";
    const DESCRIPTION: &'static str = "Size, line count and a bounded outline (Go declarations, Markdown headings, JSON pointers) of a file, without its content.";
    type Args = Args;

    fn run(&self, args: Args, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let files = &self.0;
        let source = files.source(args.source.as_deref())?;
        let kind = outline_kind(&args.path);
        let (content, size, lines, cut) = read_prefix(files, source, &args.path, OUTLINE_CONTENT, cancel)?;
        let text = String::from_utf8_lossy(&content);
        let outline = match kind {
            "code" => go_outline(&text),
            "markdown" => markdown_outline(&text),
            "json" if !cut => json_outline(&text),
            _ => Outline::default(),
        };
        Ok(ToolOutput::new(
            json!({
                "path": args.path, "source": source.as_str(), "outline_kind": kind,
                "size_bytes": size, "lines": lines, "outline": outline.entries,
            }),
            (cut && kind != "none") || outline.truncated,
        ))
    }
}

fn outline_kind(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "go" => "code",
        "md" | "markdown" => "markdown",
        "json" => "json",
        _ => "none",
    }
}

/// Top-level Go declarations as search's Go lexer finds them (functions,
/// methods as `Receiver.Name`, types, constants and variables, one entry
/// per name of a grouped declaration); none for text the lexer cannot
/// follow.
fn go_outline(text: &str) -> Outline {
    let mut outline = Outline::default();
    let Some(file) = gitagent_golang::scan(text) else { return outline };
    let lines: Vec<&str> = text.lines().collect();
    for decl in file.decls {
        let names: Vec<String> = match decl.kind {
            "method" => {
                let receiver = lines.get(decl.start_line - 1).and_then(|line| receiver_type(line)).unwrap_or_default();
                vec![if receiver.is_empty() { decl.name } else { format!("{receiver}.{}", decl.name) }]
            }
            _ => decl.name.split(", ").map(str::to_string).collect(),
        };
        for name in names {
            if !outline.add(decl.kind, name, Some(decl.start_line)) {
                return outline;
            }
        }
    }
    outline
}

/// The receiver's type name on a method's first line: `Repo` in
/// `func (r *Repo[T]) Close() error {`.
fn receiver_type(line: &str) -> Option<&str> {
    let receiver = line.strip_prefix("func")?.trim_start().strip_prefix('(')?.split_once(')')?.0;
    let receiver = receiver.split_whitespace().last()?.trim_start_matches('*');
    Some(receiver.split('[').next().unwrap_or(receiver))
}

/// ATX headings outside fenced code blocks.
fn markdown_outline(text: &str) -> Outline {
    let mut outline = Outline::default();
    let mut fence: Option<(char, usize)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(marker) = marker {
            let run = trimmed.chars().take_while(|c| *c == marker).count();
            if run >= 3 {
                fence = match fence {
                    None => Some((marker, run)),
                    Some((open, length)) if open == marker && run >= length && trimmed[run..].trim().is_empty() => None,
                    other => other,
                };
                continue;
            }
        }
        if fence.is_some() {
            continue;
        }
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&level) && trimmed[level..].starts_with(' ') {
            let title = trimmed[level..].trim();
            if !outline.add(format!("heading{level}"), title, Some(index + 1)) {
                break;
            }
        }
    }
    outline
}

/// Every JSON pointer with its value kind, depth first, keys sorted.
fn json_outline(text: &str) -> Outline {
    let mut outline = Outline::default();
    let Ok(value) = serde_json::from_str::<Value>(text) else { return outline };
    fn walk(value: &Value, pointer: &str, outline: &mut Outline) -> bool {
        let children: Vec<(String, &Value)> = match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                keys.into_iter().map(|key| (key.replace('~', "~0").replace('/', "~1"), &map[key])).collect()
            }
            Value::Array(items) => items.iter().enumerate().map(|(i, item)| (i.to_string(), item)).collect(),
            _ => return true,
        };
        for (token, child) in children {
            let next = format!("{pointer}/{token}");
            if !outline.add(super::jq::kind_of(child), next.clone(), None) || !walk(child, &next, outline) {
                return false;
            }
        }
        true
    }
    walk(&value, "", &mut outline);
    outline
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_outlines_find_types_functions_and_methods() {
        let outline =
            go_outline("package x\n\ntype Repo struct{}\n\nfunc Open() {}\nfunc (r *Repo) Close() error {}\n");
        let names: Vec<(&str, &str)> = outline.entries.iter().map(|e| (e.kind.as_str(), e.name.as_str())).collect();
        assert_eq!(names, [("type", "Repo"), ("function", "Open"), ("method", "Repo.Close")]);
    }

    #[test]
    fn go_outlines_see_grouped_and_multi_line_declarations() {
        let source = "package x\n\ntype (\n\tA struct{}\n\tB int\n)\n\nconst Max = 3\n\nfunc (s *Set[T]) Add(\n\tv T,\n) {\n\tfunc() {}()\n}\n\nvar x, y = 1, 2\n";
        let outline = go_outline(source);
        let entries: Vec<(&str, &str, Option<usize>)> =
            outline.entries.iter().map(|e| (e.kind.as_str(), e.name.as_str(), e.line)).collect();
        assert_eq!(
            entries,
            [
                ("type", "A", Some(3)),
                ("type", "B", Some(3)),
                ("const", "Max", Some(8)),
                ("method", "Set.Add", Some(10)),
                ("var", "x", Some(16)),
                ("var", "y", Some(16)),
            ],
            "a nested func literal is no declaration"
        );
        assert!(go_outline("not go at all {").entries.is_empty());
    }

    #[test]
    fn markdown_headings_skip_fenced_code() {
        let outline = markdown_outline("# Title\n```\n# not a heading\n```\n## Part\n");
        let names: Vec<&str> = outline.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Title", "Part"]);
        assert_eq!(outline.entries[1].kind, "heading2");
    }

    #[test]
    fn json_outlines_are_pointers_with_kinds_and_capped() {
        let outline = json_outline(r#"{"b":[1],"a/x":{"c":null}}"#);
        let names: Vec<(&str, &str)> = outline.entries.iter().map(|e| (e.kind.as_str(), e.name.as_str())).collect();
        assert_eq!(names, [("object", "/a~1x"), ("null", "/a~1x/c"), ("array", "/b"), ("number", "/b/0")]);
        let big = format!("[{}]", vec!["0"; 500].join(","));
        let capped = json_outline(&big);
        assert!(capped.truncated && capped.entries.len() == OUTLINE_ENTRIES);
    }
}

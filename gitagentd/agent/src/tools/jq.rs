//! `jq`: one value of a repository JSON file by plain RFC 6901 pointer
//! (not jq filter syntax), from at most 16 MiB of the file. Values over
//! the caps come back as a bounded `value_preview` with size metadata.

use super::paths::RepoFiles;
use super::repository::read_prefix;
use super::schema;
use super::{BlockingTool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const DOCUMENT_LIMIT: usize = 16 << 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Repository-relative JSON file path.
    path: String,
    /// Where to read: worktree, index or head; null for the command's default.
    #[schemars(schema_with = "schema::source")]
    source: Option<String>,
    /// RFC 6901 pointer such as /dependencies/0; empty for the root.
    pointer: String,
    /// Maximum bytes of the formatted value; null for 32768.
    #[schemars(range(min = 1, max = 65536))]
    max_bytes: Option<u64>,
    /// Maximum lines of the formatted value; null for 800.
    #[schemars(range(min = 1, max = 2000))]
    max_lines: Option<u64>,
}

#[derive(Clone)]
pub(super) struct Jq(pub(super) Arc<RepoFiles>);

impl BlockingTool for Jq {
    const NAME: &'static str = "jq";
    const DESCRIPTION: &'static str =
        "One value of a repository JSON file by RFC 6901 JSON Pointer (empty pointer = whole document; no jq filters).";
    type Args = Args;

    fn run(&self, args: Args, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let files = &self.0;
        let source = files.source(args.source.as_deref())?;
        let (document, size, _, cut) = read_prefix(files, source, &args.path, DOCUMENT_LIMIT, cancel)?;
        if cut {
            return Err(ToolError::Recoverable(format!(
                "{}: {size} bytes exceed the {DOCUMENT_LIMIT}-byte JSON limit",
                args.path
            )));
        }
        let root: Value = serde_json::from_slice(&document)
            .map_err(|error| ToolError::Recoverable(format!("{}: invalid JSON: {error}", args.path)))?;
        let value = resolve(&root, &args.pointer)?;
        let formatted = serde_json::to_string_pretty(value).unwrap_or_default();
        let lines = formatted.lines().count().max(1);
        let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
        let mut data = json!({
            "path": args.path, "source": source.as_str(), "pointer": args.pointer,
            "value_kind": kind_of(value), "value_bytes": formatted.len(), "value_lines": lines,
        });
        let truncated = formatted.len() > max_bytes || lines > max_lines;
        if truncated {
            data["value_preview"] = json!(git_agent_shared::bounded::bound(&formatted, max_bytes, max_lines).text);
        } else {
            data["value"] = value.clone();
        }
        Ok(ToolOutput::new(data, truncated))
    }
}

/// The JSON type name of `value`.
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The value at `pointer` (RFC 6901, through serde_json); when it names
/// nothing, the error says how far it did resolve and what is there, so
/// the model can correct it.
fn resolve<'a>(root: &'a Value, pointer: &str) -> Result<&'a Value, ToolError> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(ToolError::Recoverable(format!("pointer {pointer:?} must be empty or start with /")));
    }
    if let Some(value) = root.pointer(pointer) {
        return Ok(value);
    }
    let (resolved, value) = pointer
        .match_indices('/')
        .rev()
        .map(|(at, _)| &pointer[..at])
        .find_map(|prefix| root.pointer(prefix).map(|value| (prefix, value)))
        .unwrap_or(("", root));
    let shown = if resolved.is_empty() { "the document" } else { resolved };
    let detail = match value {
        Value::Object(map) => format!("an object with {} keys", map.len()),
        Value::Array(items) => format!("an array of {} items (indexes without leading zeros)", items.len()),
        other => format!("a {}, which has no members", kind_of(other)),
    };
    Err(ToolError::Recoverable(format!("pointer {pointer:?} names nothing: {shown} is {detail}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_unescape_and_index_canonically() {
        let doc = json!({"a/b": {"~c": [10, 20]}});
        assert_eq!(resolve(&doc, "/a~1b/~0c/1").unwrap(), &json!(20));
        assert_eq!(resolve(&doc, "").unwrap(), &doc);
        for bad in ["a", "/missing", "/a~1b/~0c/01", "/a~1b/~0c/9", "/a~1b/~0c/0/x", "/a~2"] {
            assert!(resolve(&doc, bad).is_err(), "{bad}");
        }
    }
}

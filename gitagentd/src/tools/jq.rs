//! `jq`: one value of a repository JSON file by plain RFC 6901 pointer
//! (not jq filter syntax), from at most 16 MiB of the file. Values over
//! the caps come back as a bounded `value_preview` with size metadata.

use super::paths::RepoFiles;
use super::repository::read_prefix;
use super::schema;
use super::{Tool, ToolError, ToolFuture, ToolOutput, blocking};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

const DOCUMENT_LIMIT: usize = 16 << 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
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

pub(super) struct Jq(pub(super) Arc<RepoFiles>);

impl Tool for Jq {
    fn name(&self) -> &'static str {
        "jq"
    }
    fn description(&self) -> &'static str {
        "One value of a repository JSON file by RFC 6901 JSON Pointer (empty pointer = whole document; no jq filters)."
    }
    fn parameters(&self) -> Value {
        schema::strict::<Args>()
    }
    fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
        let files = Arc::clone(&self.0);
        blocking("jq", arguments, cancel, move |args: Args, cancel| {
            let source = files.source(args.source.as_deref())?;
            let (document, size, _, cut) = read_prefix(&files, source, &args.path, DOCUMENT_LIMIT, cancel)?;
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
                data["value_preview"] = json!(crate::bounded::bound(&formatted, max_bytes, max_lines).text);
            } else {
                data["value"] = value.clone();
            }
            Ok(ToolOutput::new(data, truncated))
        })
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

fn resolve<'a>(root: &'a Value, pointer: &str) -> Result<&'a Value, ToolError> {
    if pointer.is_empty() {
        return Ok(root);
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(ToolError::Recoverable(format!("pointer {pointer:?} must be empty or start with /")));
    };
    let mut value = root;
    for (position, raw) in rest.split('/').enumerate() {
        if raw.contains('~') && !raw.replace("~0", "").replace("~1", "").chars().all(|c| c != '~') {
            return Err(ToolError::Recoverable(format!("pointer {pointer:?}: invalid ~ escape in token {position}")));
        }
        let token = raw.replace("~1", "/").replace("~0", "~");
        value = match value {
            Value::Object(map) => map.get(&token).ok_or_else(|| {
                ToolError::Recoverable(format!("pointer {pointer:?}: no key {token:?} at token {position}"))
            })?,
            Value::Array(items) => {
                let canonical = token == "0" || (!token.starts_with('0') && token.chars().all(|c| c.is_ascii_digit()));
                let index: usize = token.parse().ok().filter(|_| canonical && !token.is_empty()).ok_or_else(|| {
                    ToolError::Recoverable(format!("pointer {pointer:?}: {token:?} is not an array index"))
                })?;
                items.get(index).ok_or_else(|| {
                    ToolError::Recoverable(format!("pointer {pointer:?}: index {index} is out of range"))
                })?
            }
            other => {
                return Err(ToolError::Recoverable(format!(
                    "pointer {pointer:?}: cannot step into a {} at token {position}",
                    kind_of(other)
                )));
            }
        };
    }
    Ok(value)
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

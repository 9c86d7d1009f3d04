//! The model's answer to an explore batch: its strict response schema,
//! parsing, and the checks an answer must pass before it is accepted:
//! one answer per requested item, non-empty findings, and references that
//! name existing paths beneath the exploration root with line ranges
//! inside the file.

use gitagent_agent::tools::{RepoFiles, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// One grounded finding, as printed on stdout and kept in sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub description: String,
    pub references: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Envelope {
    answers: Vec<Answer>,
}

#[derive(Debug, Deserialize)]
struct Answer {
    item_id: String,
    items: Vec<Finding>,
}

/// The strict schema of the final answer.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "item_id": {"type": "string"},
                        "items": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "description": {"type": "string", "minLength": 1},
                                    "references": {
                                        "type": "array",
                                        "minItems": 1,
                                        "items": {"type": "string", "minLength": 1}
                                    }
                                },
                                "required": ["description", "references"],
                                "additionalProperties": false
                            }
                        }
                    },
                    "required": ["item_id", "items"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["answers"],
        "additionalProperties": false
    })
}

/// Why an answer's text is not the schema's shape.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("the answer is not the required JSON object: {0}")]
    NotTheSchema(#[source] serde_json::Error),
    #[error("item_id {0} is answered twice")]
    AnsweredTwice(String),
}

/// Why a reference does not name an existing path beneath the root with a
/// line range inside the file (each message follows the quoted reference).
#[derive(Debug, thiserror::Error)]
enum ReferenceError {
    #[error("is refused: {0}")]
    Refused(#[source] ToolError),
    #[error("names no path; give a file or folder relative to the exploration root")]
    NoPath,
    #[error("does not exist: {0}")]
    Missing(#[source] ToolError),
    #[error("has an invalid line range {start}-{end}; lines count from 1 and end at or after the start")]
    InvalidRange { start: u64, end: u64 },
    #[error("cannot be read: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error("ends at line {end}, but {path} has {count} lines")]
    PastTheEnd { end: u64, path: String, count: u64 },
}

/// The findings of every item of an answer, by item ID; an error when
/// the text is not the schema's shape.
pub fn parse(text: &str) -> Result<BTreeMap<String, Vec<Finding>>, AnswerError> {
    let envelope: Envelope = serde_json::from_str(text.trim()).map_err(AnswerError::NotTheSchema)?;
    let mut answers = BTreeMap::new();
    for answer in envelope.answers {
        if answers.contains_key(&answer.item_id) {
            return Err(AnswerError::AnsweredTwice(answer.item_id));
        }
        answers.insert(answer.item_id, answer.items);
    }
    Ok(answers)
}

/// Everything wrong with `text` as the answer to `item_ids`, with the
/// references checked against the files under `files`' root.
pub fn validate(text: &str, item_ids: &[String], files: &RepoFiles) -> Vec<String> {
    let answers = match parse(text) {
        Ok(answers) => answers,
        Err(error) => return vec![error.to_string()],
    };
    let mut errors = Vec::new();
    for id in item_ids {
        if !answers.contains_key(id) {
            errors.push(format!("item_id {id} has no answer; answer every item_id of the input"));
        }
    }
    for (id, findings) in &answers {
        if !item_ids.contains(id) {
            errors.push(format!("item_id {id} was not asked; use only the item_ids of the input"));
            continue;
        }
        if findings.is_empty() {
            errors.push(format!("item_id {id} has no findings; give at least one"));
        }
        for (index, finding) in findings.iter().enumerate() {
            let at = format!("item_id {id}, finding {}", index + 1);
            if finding.description.trim().is_empty() {
                errors.push(format!("{at}: the description is empty"));
            }
            if finding.references.is_empty() {
                errors.push(format!("{at}: it needs at least one reference"));
            }
            for reference in &finding.references {
                if let Err(error) = check_reference(files, reference) {
                    errors.push(format!("{at}: reference {reference:?} {error}"));
                }
            }
        }
    }
    errors
}

/// A reference split into its path and optional inclusive line range.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference<'a> {
    path: &'a str,
    lines: Option<(u64, u64)>,
}

/// `path`, `path:N` or `path:N-M`.
fn split(reference: &str) -> Reference<'_> {
    if let Some((path, range)) = reference.rsplit_once(':') {
        let numbers = match range.split_once('-') {
            Some((start, end)) => start.parse().ok().zip(end.parse().ok()),
            None => range.parse().ok().map(|line| (line, line)),
        };
        if let Some(lines) = numbers {
            return Reference { path, lines: Some(lines) };
        }
    }
    Reference { path: reference, lines: None }
}

/// Why `reference` does not name an existing path beneath the root with
/// a line range inside the file.
fn check_reference(files: &RepoFiles, reference: &str) -> Result<(), ReferenceError> {
    let Reference { path, lines } = split(reference.trim());
    let clean = RepoFiles::clean(path).map_err(ReferenceError::Refused)?;
    if clean.is_empty() {
        return Err(ReferenceError::NoPath);
    }
    let resolved = files.resolve_worktree(&clean).map_err(ReferenceError::Missing)?;
    let Some((start, end)) = lines else { return Ok(()) };
    if start == 0 || end < start {
        return Err(ReferenceError::InvalidRange { start, end });
    }
    let count = line_count(&resolved).map_err(ReferenceError::Unreadable)?;
    if end > count {
        return Err(ReferenceError::PastTheEnd { end, path: clean, count });
    }
    Ok(())
}

/// The number of lines of a file (a last line without newline counts).
fn line_count(path: &Path) -> std::io::Result<u64> {
    if !path.is_file() {
        return Err(std::io::Error::other("not a regular file, so it has no lines"));
    }
    let bytes = std::fs::read(path)?;
    let newlines = bytes.iter().filter(|byte| **byte == b'\n').count() as u64;
    Ok(newlines + u64::from(bytes.last().is_some_and(|last| *last != b'\n')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> (tempfile::TempDir, RepoFiles) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "one\ntwo\nthree").unwrap();
        let files = RepoFiles::rooted(dir.path(), None);
        (dir, files)
    }

    fn answer(references: &[&str]) -> String {
        json!({"answers": [{"item_id": "A", "items": [{"description": "d", "references": references}]}]}).to_string()
    }

    #[test]
    fn references_split_into_path_and_lines() {
        assert_eq!(split("a.rs:3-9"), Reference { path: "a.rs", lines: Some((3, 9)) });
        assert_eq!(split("a.rs:7"), Reference { path: "a.rs", lines: Some((7, 7)) });
        assert_eq!(split("a.rs"), Reference { path: "a.rs", lines: None });
        assert_eq!(split("a:b.rs"), Reference { path: "a:b.rs", lines: None });
    }

    #[test]
    fn valid_answers_pass_and_each_fault_is_named() {
        let (_dir, files) = folder();
        let ids = vec!["A".to_string()];
        assert_eq!(validate(&answer(&["src/lib.rs:1-3", "src", "src/lib.rs:2"]), &ids, &files), Vec::<String>::new());
        for (reference, expected) in [
            ("src/lib.rs:2-4", "has 3 lines"),
            ("src/lib.rs:0-1", "invalid line range"),
            ("missing.rs", "does not exist"),
            ("../outside.rs", "is refused"),
            ("/etc/passwd", "is refused"),
            (".git/config", "is refused"),
            ("src:1-2", "not a regular file"),
        ] {
            let errors = validate(&answer(&[reference]), &ids, &files);
            assert!(errors.len() == 1 && errors[0].contains(expected), "{reference}: {errors:?}");
        }
        let errors = validate(&answer(&["src/lib.rs"]), &["B".to_string()], &files);
        assert!(errors.iter().any(|error| error.contains("item_id B has no answer")), "{errors:?}");
        assert!(errors.iter().any(|error| error.contains("item_id A was not asked")), "{errors:?}");
        assert!(validate("not json", &ids, &files)[0].contains("not the required JSON object"));
    }
}

//! The release-note document: what the model fills in (sections of
//! bullets with references) plus the changelog the task adds from the
//! prepared commit range, and its Markdown rendering.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The section headings a release note may use, in their default order.
pub const SECTION_HEADINGS: &[&str] = &["Breaking Changes", "Security", "New Features", "Improvements", "Bug Fixes"];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    pub sections: Vec<Section>,
    /// Parent-repository commits of the range, oldest first; added locally.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parent_changelog: Vec<ChangelogEntry>,
    /// Submodule commit groups, after the parent commits; added locally.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub submodules: Vec<SubmoduleGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    pub heading: String,
    pub bullets: Vec<Bullet>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bullet {
    #[serde(default)]
    pub label: Option<String>,
    pub summary: String,
    pub refs: Vec<Reference>,
    #[serde(default)]
    pub children: Vec<ChildBullet>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildBullet {
    pub summary: String,
    #[serde(default)]
    pub refs: Vec<Reference>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// `commit`, `pr` or `issue`.
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
    /// A link resolved locally from the prepared context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangelogEntry {
    pub sha: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmoduleGroup {
    pub path: String,
    /// The rendered group heading, such as `**lib** (abc1234...def5678)`.
    pub heading: String,
    pub entries: Vec<ChangelogEntry>,
}

/// The strict JSON schema the model's answer must follow (`text.format`).
pub fn output_schema() -> Value {
    let reference = json!({
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["commit", "pr", "issue"]},
            "value": {"type": "string"}
        },
        "required": ["type", "value"],
        "additionalProperties": false
    });
    json!({
        "type": "object",
        "properties": {
            "sections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "heading": {"type": "string", "enum": SECTION_HEADINGS},
                        "bullets": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": ["string", "null"]},
                                    "summary": {"type": "string"},
                                    "refs": {"type": "array", "minItems": 1, "items": reference},
                                    "children": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                "summary": {"type": "string"},
                                                "refs": {"type": "array", "items": reference}
                                            },
                                            "required": ["summary", "refs"],
                                            "additionalProperties": false
                                        }
                                    }
                                },
                                "required": ["label", "summary", "refs", "children"],
                                "additionalProperties": false
                            }
                        }
                    },
                    "required": ["heading", "bullets"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["sections"],
        "additionalProperties": false
    })
}

/// Renders the document as GitHub release Markdown.
pub fn render(document: &Document) -> String {
    let mut out: Vec<String> = Vec::new();
    for section in document.sections.iter().filter(|section| !section.bullets.is_empty()) {
        out.push(format!("### {}", section.heading));
        out.push(String::new());
        for bullet in &section.bullets {
            let label = bullet.label.as_deref().map(str::trim).filter(|label| !label.is_empty());
            let label = label.map(|label| format!("**{label}**: ")).unwrap_or_default();
            out.push(format!("- {label}{}{}", bullet.summary.trim(), render_refs(&bullet.refs)));
            for child in &bullet.children {
                out.push(format!("  - {}{}", child.summary.trim(), render_refs(&child.refs)));
            }
        }
        out.push(String::new());
    }
    if !document.parent_changelog.is_empty() || !document.submodules.is_empty() {
        out.push("### Full Changelog".to_string());
        out.push(String::new());
        out.extend(document.parent_changelog.iter().map(|entry| format!("- {}", render_entry(entry))));
        for group in &document.submodules {
            if out.last().is_some_and(|line| !line.is_empty()) {
                out.push(String::new());
            }
            out.push(group.heading.clone());
            out.push(String::new());
            out.extend(group.entries.iter().map(|entry| format!("  - {}", render_entry(entry))));
        }
    }
    out.join("\n").trim().to_string()
}

fn render_refs(refs: &[Reference]) -> String {
    let rendered: Vec<String> = refs
        .iter()
        .filter_map(|reference| match reference.kind.as_str() {
            "commit" => Some(reference.url.clone().unwrap_or_else(|| short_sha(&reference.value).to_string())),
            "pr" | "issue" => Some(format!("#{}", reference.value.trim())),
            _ => None,
        })
        .collect();
    if rendered.is_empty() { String::new() } else { format!(" ({})", rendered.join(", ")) }
}

fn render_entry(entry: &ChangelogEntry) -> String {
    let short = short_sha(&entry.sha);
    match &entry.url {
        Some(url) => format!("[{short}]({url}) {}", entry.summary),
        None => format!("{short} {}", entry.summary),
    }
}

/// The first seven characters of a commit id.
pub fn short_sha(sha: &str) -> &str {
    let sha = sha.trim();
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(value: &str) -> Reference {
        Reference { kind: "commit".into(), value: value.into(), url: None }
    }

    #[test]
    fn renders_sections_children_and_changelog() {
        let document = Document {
            sections: vec![
                Section {
                    heading: "New Features".into(),
                    bullets: vec![Bullet {
                        label: Some("Search".into()),
                        summary: "Add hybrid ranking".into(),
                        refs: vec![
                            commit("0123456789abcdef"),
                            Reference { kind: "pr".into(), value: "42".into(), url: None },
                        ],
                        children: vec![ChildBullet { summary: "Scores combine cosine and BM25".into(), refs: vec![] }],
                    }],
                },
                Section { heading: "Bug Fixes".into(), bullets: vec![] },
            ],
            parent_changelog: vec![ChangelogEntry {
                sha: "0123456789abcdef".into(),
                summary: "feat: add hybrid ranking".into(),
                url: Some("https://example.test/o/r/commit/0123456789abcdef".into()),
            }],
            submodules: vec![SubmoduleGroup {
                path: "lib".into(),
                heading: "**lib** (aaaaaaa...bbbbbbb)".into(),
                entries: vec![ChangelogEntry { sha: "bbbbbbbbbb".into(), summary: "fix: lib bug".into(), url: None }],
            }],
        };
        let expected = "### New Features\n\n- **Search**: Add hybrid ranking (0123456, #42)\n  - Scores combine cosine and BM25\n\n### Full Changelog\n\n- [0123456](https://example.test/o/r/commit/0123456789abcdef) feat: add hybrid ranking\n\n**lib** (aaaaaaa...bbbbbbb)\n\n  - bbbbbbb fix: lib bug";
        assert_eq!(render(&document), expected);
    }

    #[test]
    fn schema_is_strict_everywhere() {
        fn check(value: &Value) {
            if value.get("type") == Some(&json!("object")) {
                assert_eq!(value["additionalProperties"], json!(false), "{value}");
                let properties = value["properties"].as_object().unwrap();
                let required: Vec<&str> =
                    value["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
                for key in properties.keys() {
                    assert!(required.contains(&key.as_str()), "{key} is not required");
                }
            }
            match value {
                Value::Object(map) => map.values().for_each(check),
                Value::Array(items) => items.iter().for_each(check),
                _ => {}
            }
        }
        check(&output_schema());
    }
}

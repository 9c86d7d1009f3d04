//! Release-note validation: the model's structured document (headings,
//! bullets, references, low-signal clauses, lengths) and the rendered
//! Markdown (first printable line a `###` heading, no preamble, the full
//! changelog when code was touched, parent commits before submodule
//! groups, and links that belong to the repository that owns the commit).

use super::document::{Document, Reference, SECTION_HEADINGS};
use std::collections::{BTreeMap, HashSet};

const MAX_BULLET_CHARS: usize = 160;
const MAX_CHILD_CHARS: usize = 140;

/// Which repository's web address each commit link must start with.
#[derive(Debug, Clone, Default)]
pub struct LinkOwners {
    /// The parent repository, such as `https://github.com/org/repo`.
    pub parent: Option<String>,
    /// Submodule path to its repository address.
    pub submodules: BTreeMap<String, String>,
}

/// Checks the model's document; each message tells the repair pass what to
/// change.
pub fn validate_document(document: &Document) -> Vec<String> {
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    for section in &document.sections {
        let heading = section.heading.as_str();
        if !SECTION_HEADINGS.contains(&heading) {
            errors.push(format!("section heading {heading:?} is not one of {}", SECTION_HEADINGS.join(", ")));
        }
        if !seen.insert(heading) {
            errors.push(format!("section {heading:?} appears twice; merge its bullets into one section"));
        }
        if section.bullets.is_empty() {
            errors.push(format!("section {heading:?} has no bullets; drop it"));
        }
        for bullet in &section.bullets {
            if bullet.label.as_deref().is_some_and(|label| label.trim().is_empty()) {
                errors.push(format!("section {heading:?} has a blank bullet label; use null instead"));
            }
            check_summary(&mut errors, heading, "bullet", &bullet.summary, MAX_BULLET_CHARS);
            if bullet.refs.is_empty() {
                errors.push(format!("section {heading:?} bullet {:?} has no refs", bullet.summary));
            }
            check_refs(&mut errors, heading, &bullet.summary, &bullet.refs);
            for child in &bullet.children {
                check_summary(&mut errors, heading, "child", &child.summary, MAX_CHILD_CHARS);
                check_refs(&mut errors, heading, &child.summary, &child.refs);
            }
        }
    }
    errors
}

fn check_summary(errors: &mut Vec<String>, heading: &str, role: &str, summary: &str, limit: usize) {
    let trimmed = summary.trim();
    if trimmed.is_empty() {
        errors.push(format!("section {heading:?} has an empty {role} summary"));
        return;
    }
    if trimmed.contains("```") {
        errors.push(format!("section {heading:?} {role} {trimmed:?} contains a code fence"));
    }
    if let Some(clause) = low_signal_clause(trimmed) {
        errors.push(format!(
            "section {heading:?} {role} {trimmed:?} ends in the low-signal clause {clause:?}; state the change and move real detail into a child line"
        ));
    }
    let length = trimmed.chars().count();
    if length > limit {
        errors.push(format!("section {heading:?} {role} {trimmed:?} is {length} characters; keep it under {limit}"));
    }
}

fn check_refs(errors: &mut Vec<String>, heading: &str, summary: &str, refs: &[Reference]) {
    let mut seen = HashSet::new();
    for reference in refs {
        let value = reference.value.trim();
        if !seen.insert((reference.kind.as_str(), value)) {
            errors.push(format!("section {heading:?} {summary:?} repeats the ref {}:{value}", reference.kind));
            continue;
        }
        let valid = match reference.kind.as_str() {
            "commit" => value.len() >= 7 && value.bytes().all(|b| b.is_ascii_hexdigit()),
            "pr" | "issue" => !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()),
            _ => false,
        };
        if !valid {
            errors.push(format!("section {heading:?} {summary:?} has an invalid {} ref {value:?}", reference.kind));
        }
    }
}

/// A clause that restates a benefit instead of a fact ("enabling
/// operators to ...", "reducing confusion").
fn low_signal_clause(summary: &str) -> Option<String> {
    const LEADS: &[&str] =
        &["enabling", "which enables", "that enables", "allowing", "helping", "making it easier for"];
    const AUDIENCES: &[&str] = &["operators", "users", "admins", "teams"];
    const FRAGMENTS: &[&str] = &[
        "reducing editing errors",
        "reducing configuration errors",
        "reducing operator errors",
        "reducing user errors",
        "reducing mistakes",
        "reducing confusion",
        "reducing friction",
        "improving usability",
        "improving operator confidence",
        "improving user confidence",
    ];
    for clause in summary.split([',', ';']) {
        let mut clause = clause.trim().to_lowercase();
        while let Some(rest) = clause.strip_prefix("and ").or_else(|| clause.strip_prefix("while ")) {
            clause = rest.to_string();
        }
        let benefit = LEADS.iter().any(|lead| {
            clause.strip_prefix(lead).is_some_and(|rest| AUDIENCES.iter().any(|who| rest.trim_start().starts_with(who)))
        });
        if benefit || FRAGMENTS.iter().any(|fragment| clause.contains(fragment)) {
            return Some(clause);
        }
    }
    None
}

/// Checks the rendered Markdown against the document it came from.
pub fn validate_markdown(markdown: &str, document: &Document, code_touched: bool, owners: &LinkOwners) -> Vec<String> {
    let mut errors = Vec::new();
    match markdown.lines().map(str::trim).find(|line| !line.is_empty()) {
        Some(first) if first.starts_with("###") => {}
        Some(first) => errors.push(format!("the release note must start with a ### heading, not {first:?}")),
        None => errors.push("the release note is empty".to_string()),
    }
    let has_full_changelog = markdown.lines().any(|line| line.trim() == "### Full Changelog");
    if code_touched && !has_full_changelog {
        errors.push("the range touched code, so the release note needs a ### Full Changelog".to_string());
    }
    if let (Some(last_parent), Some(first_group)) = (
        document.parent_changelog.last().and_then(|entry| markdown.find(&format!("- {}", entry_marker(&entry.sha)))),
        document.submodules.first().and_then(|group| markdown.find(&group.heading)),
    ) && first_group < last_parent
    {
        errors.push("submodule groups must come after the parent repository's commits".to_string());
    }
    for entry in &document.parent_changelog {
        check_owner(&mut errors, entry.url.as_deref(), owners.parent.as_deref(), "the parent repository", &entry.sha);
    }
    for group in &document.submodules {
        let owner = owners.submodules.get(&group.path).map(String::as_str);
        for entry in &group.entries {
            check_owner(&mut errors, entry.url.as_deref(), owner, &format!("submodule {}", group.path), &entry.sha);
        }
    }
    errors
}

fn entry_marker(sha: &str) -> String {
    let short = super::document::short_sha(sha);
    format!("[{short}]")
}

fn check_owner(errors: &mut Vec<String>, url: Option<&str>, owner: Option<&str>, whose: &str, sha: &str) {
    let Some(url) = url else { return };
    match owner {
        Some(owner) if url.starts_with(&format!("{}/", owner.trim_end_matches('/'))) => {}
        Some(owner) => errors.push(format!("the link for {sha} must point into {whose} ({owner}), not {url}")),
        None => errors.push(format!("{whose} has no known web address, so {sha} must not be linked")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::document::{Bullet, ChangelogEntry, ChildBullet, Section, SubmoduleGroup, render};
    use super::*;

    fn bullet(summary: &str) -> Bullet {
        Bullet {
            label: None,
            summary: summary.into(),
            refs: vec![Reference { kind: "commit".into(), value: "abcdef1".into(), url: None }],
            children: vec![],
        }
    }

    fn document(sections: Vec<Section>) -> Document {
        Document { sections, ..Default::default() }
    }

    #[test]
    fn a_valid_document_passes() {
        let doc = document(vec![Section { heading: "Bug Fixes".into(), bullets: vec![bullet("Fix the retry loop")] }]);
        assert!(validate_document(&doc).is_empty());
    }

    #[test]
    fn unknown_duplicate_and_empty_sections_fail() {
        let doc = document(vec![
            Section { heading: "Misc".into(), bullets: vec![bullet("x")] },
            Section { heading: "Bug Fixes".into(), bullets: vec![bullet("y")] },
            Section { heading: "Bug Fixes".into(), bullets: vec![] },
        ]);
        let errors = validate_document(&doc);
        assert!(errors.iter().any(|e| e.contains("\"Misc\" is not one of")));
        assert!(errors.iter().any(|e| e.contains("appears twice")));
        assert!(errors.iter().any(|e| e.contains("has no bullets")));
    }

    #[test]
    fn low_signal_continuations_fail() {
        for summary in [
            "Add a config check, enabling operators to catch typos",
            "Validate schemas, reducing configuration errors",
            "Add presets, and making it easier for users to start",
        ] {
            let doc = document(vec![Section { heading: "Improvements".into(), bullets: vec![bullet(summary)] }]);
            assert!(validate_document(&doc).iter().any(|e| e.contains("low-signal")), "{summary}");
        }
        let doc =
            document(vec![Section { heading: "Improvements".into(), bullets: vec![bullet("Enable TLS by default")] }]);
        assert!(validate_document(&doc).is_empty());
    }

    #[test]
    fn refs_lengths_labels_and_fences_are_checked() {
        let mut long = bullet(&"x".repeat(161));
        long.label = Some("  ".into());
        long.refs.push(Reference { kind: "pr".into(), value: "12a".into(), url: None });
        long.refs.push(Reference { kind: "commit".into(), value: "abcdef1".into(), url: None });
        long.children.push(ChildBullet { summary: "```code```".into(), refs: vec![] });
        let mut no_refs = bullet("No refs");
        no_refs.refs.clear();
        let doc = document(vec![Section { heading: "Security".into(), bullets: vec![long, no_refs] }]);
        let errors = validate_document(&doc);
        for needle in
            ["blank bullet label", "161 characters", "invalid pr ref", "repeats the ref", "code fence", "has no refs"]
        {
            assert!(errors.iter().any(|e| e.contains(needle)), "{needle}: {errors:?}");
        }
    }

    #[test]
    fn markdown_must_start_with_a_heading_and_carry_the_full_changelog() {
        let doc = document(vec![Section { heading: "Bug Fixes".into(), bullets: vec![bullet("Fix")] }]);
        let errors = validate_markdown("Here are the notes\n### Bug Fixes", &doc, false, &LinkOwners::default());
        assert!(errors.iter().any(|e| e.contains("must start with a ### heading")));
        let markdown = render(&doc);
        assert!(validate_markdown(&markdown, &doc, false, &LinkOwners::default()).is_empty());
        assert!(
            validate_markdown(&markdown, &doc, true, &LinkOwners::default())
                .iter()
                .any(|e| e.contains("Full Changelog"))
        );
    }

    #[test]
    fn links_follow_repository_ownership() {
        let parent = "https://example.test/org/app";
        let lib = "https://example.test/org/lib";
        let mut doc = document(vec![]);
        doc.parent_changelog = vec![ChangelogEntry {
            sha: "1111111aaaa".into(),
            summary: "feat: a".into(),
            url: Some(format!("{lib}/commit/1111111aaaa")),
        }];
        doc.submodules = vec![SubmoduleGroup {
            path: "lib".into(),
            heading: "**lib**".into(),
            entries: vec![ChangelogEntry {
                sha: "2222222".into(),
                summary: "fix: b".into(),
                url: Some(format!("{lib}/commit/2222222")),
            }],
        }];
        let owners = LinkOwners {
            parent: Some(parent.into()),
            submodules: BTreeMap::from([("lib".to_string(), lib.to_string())]),
        };
        let errors = validate_markdown(&format!("### Full Changelog\n\n{}", render(&doc)), &doc, true, &owners);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("parent repository"));
    }

    #[test]
    fn submodule_groups_follow_parent_commits() {
        let mut doc = document(vec![]);
        doc.parent_changelog = vec![ChangelogEntry {
            sha: "1111111".into(),
            summary: "a".into(),
            url: Some("https://h/o/r/commit/1111111".into()),
        }];
        doc.submodules = vec![SubmoduleGroup { path: "lib".into(), heading: "**lib**".into(), entries: vec![] }];
        let reordered = "### Full Changelog\n\n**lib**\n\n- [1111111](https://h/o/r/commit/1111111) a";
        let owners = LinkOwners { parent: Some("https://h/o/r".into()), ..Default::default() };
        assert!(validate_markdown(reordered, &doc, true, &owners).iter().any(|e| e.contains("after the parent")));
        assert!(validate_markdown(&render(&doc), &doc, true, &owners).is_empty());
    }
}

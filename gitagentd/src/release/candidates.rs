//! Candidate release-note items, precomputed from each commit the policy
//! keeps: a draft fact taken from the message, the section it most likely
//! belongs in, a label, a confidence grade, the commit (and pull request
//! or issue) references, and compact evidence. The model polishes these
//! instead of inventing behaviour; the commit entries hold the full
//! message and the patch excerpt.

use super::classify::PathKind;
use super::context::PreparedCommit;
use serde::Serialize;

/// At most this many paths are quoted as a candidate's evidence.
const EVIDENCE_MAX_PATHS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Changed files and a patch excerpt back the message.
    High,
    /// Changed files back the message.
    Medium,
    /// Only the message.
    Low,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateRef {
    /// `commit`, `pr` or `issue`, as the output schema spells them.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub id: String,
    pub section: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub confidence: Confidence,
    pub draft_fact: String,
    pub refs: Vec<CandidateRef>,
    pub evidence: Vec<Evidence>,
    /// The submodule whose history the commit belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submodule: Option<String>,
}

/// The candidate for `commit` (of the parent repository when `submodule`
/// is `None`).
pub fn candidate(commit: &PreparedCommit, submodule: Option<&str>) -> Candidate {
    let short = commit.sha.get(..12).unwrap_or(&commit.sha);
    let id = format!("{}-{short}", submodule.unwrap_or("parent")).replace(['/', '_', ' '], "-");
    let mut refs = vec![CandidateRef { kind: "commit", value: commit.sha.clone() }];
    refs.extend(number_refs(&commit.summary, &commit.message));
    let mut evidence = vec![Evidence { kind: "subject", value: commit.summary.clone() }];
    if !commit.files.is_empty() {
        let mut paths: Vec<&str> =
            commit.files.iter().take(EVIDENCE_MAX_PATHS).map(|file| file.path.as_str()).collect();
        let more = commit.files.len().saturating_sub(EVIDENCE_MAX_PATHS);
        let more = if more > 0 { format!(" (+{more} more)") } else { String::new() };
        paths.dedup();
        evidence.push(Evidence { kind: "changed_paths", value: format!("{}{more}", paths.join(", ")) });
        evidence.push(Evidence { kind: "diffstat", value: commit.diffstat.describe() });
    }
    if !commit.signals.is_empty() {
        let signals: Vec<String> = commit
            .signals
            .iter()
            .map(|signal| {
                serde_json::to_value(signal).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
            })
            .collect();
        evidence.push(Evidence { kind: "signals", value: signals.join(", ") });
    }
    Candidate {
        id,
        section: section_for(&commit.summary, &commit.message),
        label: label_for(commit, submodule),
        confidence: if commit.evidence_error.is_some() || commit.files.is_empty() {
            Confidence::Low
        } else if commit.patch_excerpt.is_empty() {
            Confidence::Medium
        } else {
            Confidence::High
        },
        draft_fact: draft_fact(&commit.summary, &commit.message),
        refs,
        evidence,
        submodule: submodule.map(str::to_string),
    }
}

/// The conventional-commit type, scope and `!` of a subject such as
/// `feat(search)!: rank by recency`.
fn conventional(summary: &str) -> Option<(String, Option<String>, bool)> {
    let (head, rest) = summary.split_once(':')?;
    if !rest.starts_with(' ') || head.contains(' ') || head.is_empty() {
        return None;
    }
    let (head, breaking) = match head.strip_suffix('!') {
        Some(head) => (head, true),
        None => (head, false),
    };
    let (kind, scope) = match head.split_once('(') {
        Some((kind, scope)) => (kind, Some(scope.strip_suffix(')')?.to_string())),
        None => (head, None),
    };
    (!kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase())).then(|| (kind.to_string(), scope, breaking))
}

/// The section a commit most likely belongs in.
pub fn section_for(summary: &str, message: &str) -> &'static str {
    let parsed = conventional(summary);
    let breaking_footer = message.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with("BREAKING CHANGE:") || line.starts_with("BREAKING-CHANGE:")
    });
    if breaking_footer || parsed.as_ref().is_some_and(|(_, _, breaking)| *breaking) {
        return "Breaking Changes";
    }
    let lower = summary.to_lowercase();
    if lower.contains("security") || lower.contains("cve-") || lower.contains("vulnerab") {
        return "Security";
    }
    let kind = match &parsed {
        Some((kind, _, _)) => kind.clone(),
        None => lower.split_whitespace().next().unwrap_or_default().to_string(),
    };
    match kind.as_str() {
        "feat" | "feature" | "add" | "adds" | "added" | "introduce" | "introduces" | "implement" | "support" => {
            "New Features"
        }
        "fix" | "fixes" | "fixed" | "bugfix" | "hotfix" | "resolve" | "resolves" => "Bug Fixes",
        _ => "Improvements",
    }
}

/// A short label: the conventional scope, else the submodule, else the
/// area of the first runtime path.
fn label_for(commit: &PreparedCommit, submodule: Option<&str>) -> Option<String> {
    if let Some((_, Some(scope), _)) = conventional(&commit.summary)
        && !scope.trim().is_empty()
    {
        return Some(title_case(&scope));
    }
    if let Some(submodule) = submodule {
        return Some(submodule.to_string());
    }
    if !commit.files.is_empty() && commit.files.iter().all(|file| file.kinds.contains(&PathKind::Docs)) {
        return Some("Docs".to_string());
    }
    const SKIPPED: &[&str] = &["src", "lib", "internal", "pkg", "crates", "packages", "app", "apps", "source"];
    let file = commit.files.iter().find(|file| file.kinds.is_empty())?;
    let dirs: Vec<&str> = file.path.split('/').collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    if dirs.iter().any(|dir| matches!(*dir, "cmd" | "cli")) {
        return Some("CLI".to_string());
    }
    dirs.iter().rev().find(|dir| !SKIPPED.contains(dir)).map(|dir| title_case(dir))
}

fn title_case(value: &str) -> String {
    value
        .split(['-', '_', '/', '.', ' '])
        .filter(|part| !part.is_empty())
        .map(|part| match part.to_ascii_lowercase().as_str() {
            acronym @ ("api" | "cli" | "ui" | "tls" | "http" | "sql" | "ci" | "json" | "grpc") => {
                acronym.to_ascii_uppercase()
            }
            _ => {
                let mut chars = part.chars();
                chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first paragraph of the body, without trailers, as one sentence;
/// else the subject without its conventional prefix.
pub fn draft_fact(summary: &str, message: &str) -> String {
    let mut paragraph: Vec<&str> = Vec::new();
    for line in message.lines().skip(1) {
        let line = line.trim();
        let line = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")).unwrap_or(line);
        if line.is_empty() {
            if paragraph.is_empty() {
                continue;
            }
            break;
        }
        if is_trailer(line) {
            continue;
        }
        paragraph.push(line);
    }
    let fact = if paragraph.is_empty() {
        let subject = match summary.split_once(": ") {
            Some((head, rest)) if conventional(summary).is_some() && !head.is_empty() => rest,
            _ => summary,
        };
        let mut chars = subject.trim().chars();
        chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
    } else {
        paragraph.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let fact = fact.trim_end_matches('.');
    if fact.is_empty() { String::new() } else { format!("{fact}.") }
}

fn is_trailer(line: &str) -> bool {
    let Some((key, value)) = line.split_once(':') else { return false };
    !value.trim().is_empty() && key.contains('-') && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `(#123)` in the subject is a pull request; `Fixes #45`-style lines in
/// the message are issues.
fn number_refs(summary: &str, message: &str) -> Vec<CandidateRef> {
    let mut refs = Vec::new();
    let number_after = |text: &str| -> Option<String> {
        let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty()).then_some(digits)
    };
    for (index, _) in summary.match_indices("(#") {
        if let Some(number) = number_after(&summary[index + 2..]) {
            refs.push(CandidateRef { kind: "pr", value: number });
        }
    }
    for line in message.lines().skip(1) {
        let lower = line.trim().to_ascii_lowercase();
        for verb in ["fixes #", "fixed #", "fix #", "closes #", "closed #", "close #", "resolves #", "resolved #"] {
            if let Some(rest) = lower.strip_prefix(verb)
                && let Some(number) = number_after(rest)
                && !refs.iter().any(|existing| existing.value == number)
            {
                refs.push(CandidateRef { kind: "issue", value: number });
            }
        }
    }
    refs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_follow_conventional_types_and_plain_verbs() {
        assert_eq!(section_for("feat(search): rank", ""), "New Features");
        assert_eq!(section_for("fix: crash on empty repo", ""), "Bug Fixes");
        assert_eq!(section_for("refactor!: drop the v1 API", ""), "Breaking Changes");
        assert_eq!(
            section_for("perf: faster diff", "perf: faster diff\n\nBREAKING CHANGE: needs git 2.40"),
            "Breaking Changes"
        );
        assert_eq!(section_for("Fix the retry loop", ""), "Bug Fixes");
        assert_eq!(section_for("Add release notes", ""), "New Features");
        assert_eq!(section_for("Bump rustls for CVE-2026-1", ""), "Security");
        assert_eq!(section_for("Tidy things", ""), "Improvements");
    }

    #[test]
    fn draft_facts_prefer_the_body() {
        let message =
            "feat: add two\n\nAdd the `two` helper\nfor callers.\n\nSecond paragraph.\nSigned-off-by: A <a@b>";
        assert_eq!(draft_fact("feat: add two", message), "Add the `two` helper for callers.");
        assert_eq!(
            draft_fact("fix(core): handle empty input.", "fix(core): handle empty input."),
            "Handle empty input."
        );
        assert_eq!(draft_fact("Merge: x", "Merge: x\n\nReviewed-by: Someone <s@x>"), "Merge: x.");
    }

    #[test]
    fn pull_request_and_issue_numbers_become_refs() {
        let refs = number_refs("fix: crash (#12)", "fix: crash (#12)\n\nFixes #34\ncloses #34");
        let pairs: Vec<(&str, &str)> = refs.iter().map(|r| (r.kind, r.value.as_str())).collect();
        assert_eq!(pairs, [("pr", "12"), ("issue", "34")]);
    }

    #[test]
    fn labels_read_scopes() {
        assert_eq!(title_case("release-note"), "Release Note");
        assert_eq!(title_case("api"), "API");
    }
}

//! The strict report of each command: its provider JSON schema, the
//! validator (unknown fields, evidence paths and inclusive line ranges
//! against the authoritative source, severity order, style findings LOW
//! only, the recommendation rule), and the terminal review report that
//! adds the host `checks`.

use super::checks::CheckResult;
use super::git::{self, GitEnv};
use super::prepare::{Mode, PreparedScope};
use git_agent_shared::task_record::TaskCommand;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Read;

pub const SEVERITIES: [&str; 4] = ["CRITICAL", "HIGH", "MEDIUM", "LOW"];
pub const REVIEW_ASPECTS: [&str; 7] =
    ["correctness", "security", "reliability", "performance", "maintainability", "tests", "style"];
pub const SIMPLIFY_ASPECTS: [&str; 3] = ["reuse", "clarity", "efficiency"];
pub const RECOMMENDATIONS: [&str; 3] = ["APPROVE", "COMMENT", "FIX"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    pub title: String,
    pub path: String,
    pub line_start: i64,
    pub line_end: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub severity: String,
    pub aspect: String,
    pub title: String,
    pub impact: String,
    pub evidences: Vec<Evidence>,
    pub proposed_fix: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewReport {
    pub summary: String,
    pub recommendation: String,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opportunity {
    pub aspect: String,
    pub title: String,
    pub body: String,
    pub evidences: Vec<Evidence>,
    pub proposed_change: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimplifyReport {
    pub summary: String,
    pub opportunities: Vec<Opportunity>,
}

/// The review report as `--wait` prints it: the provider fields plus the
/// ordered host checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalReviewReport {
    pub summary: String,
    pub recommendation: String,
    pub findings: Vec<Finding>,
    pub checks: Vec<CheckResult>,
}

fn string_schema() -> Value {
    json!({"type": "string", "minLength": 1})
}

fn object_schema(properties: Value) -> Value {
    let mut required: Vec<String> = properties.as_object().map(|map| map.keys().cloned().collect()).unwrap_or_default();
    required.sort();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The strict JSON schema of the provider's report for `command`.
pub fn output_schema(command: TaskCommand) -> Value {
    let evidence = object_schema(json!({
        "title": string_schema(),
        "path": string_schema(),
        "line_start": {"type": "integer", "minimum": 1},
        "line_end": {"type": "integer", "minimum": 1},
    }));
    let evidences = json!({"type": "array", "minItems": 1, "items": evidence});
    match command {
        TaskCommand::Review => {
            let finding = object_schema(json!({
                "severity": {"type": "string", "enum": SEVERITIES},
                "aspect": {"type": "string", "enum": REVIEW_ASPECTS},
                "title": string_schema(),
                "impact": string_schema(),
                "evidences": evidences,
                "proposed_fix": string_schema(),
            }));
            object_schema(json!({
                "summary": string_schema(),
                "recommendation": {"type": "string", "enum": RECOMMENDATIONS},
                "findings": {"type": "array", "items": finding},
            }))
        }
        TaskCommand::Simplify => {
            let opportunity = object_schema(json!({
                "aspect": {"type": "string", "enum": SIMPLIFY_ASPECTS},
                "title": string_schema(),
                "body": string_schema(),
                "evidences": evidences,
                "proposed_change": string_schema(),
            }));
            object_schema(json!({
                "summary": string_schema(),
                "opportunities": {"type": "array", "items": opportunity},
            }))
        }
    }
}

/// The Responses API text format: name, description, schema, strict.
pub fn text_format(command: TaskCommand) -> Value {
    let description = match command {
        TaskCommand::Review => "Evidence-backed code review report.",
        TaskCommand::Simplify => "Evidence-backed behavior-preserving simplification report.",
    };
    json!({"type": "json_schema", "name": command.as_str(), "description": description, "schema": output_schema(command), "strict": true})
}

fn severity_rank(severity: &str) -> Option<u8> {
    match severity {
        "CRITICAL" => Some(4),
        "HIGH" => Some(3),
        "MEDIUM" => Some(2),
        "LOW" => Some(1),
        _ => None,
    }
}

/// The schema and rule checks that need no repository.
pub fn validate_text(command: TaskCommand, text: &str) -> Vec<String> {
    match command {
        TaskCommand::Review => match serde_json::from_str::<ReviewReport>(text) {
            Ok(report) => validate_review(&report),
            Err(error) => vec![format!("invalid report JSON: {error}")],
        },
        TaskCommand::Simplify => match serde_json::from_str::<SimplifyReport>(text) {
            Ok(report) => validate_simplify(&report),
            Err(error) => vec![format!("invalid report JSON: {error}")],
        },
    }
}

pub fn validate_review(report: &ReviewReport) -> Vec<String> {
    let mut errors = Vec::new();
    if report.summary.trim().is_empty() {
        errors.push("summary is required".to_string());
    }
    let mut previous = 5;
    let mut want = "APPROVE";
    let mut severities_valid = true;
    for (index, finding) in report.findings.iter().enumerate() {
        let rank = severity_rank(&finding.severity);
        match rank {
            None => {
                errors.push(format!("findings[{index}].severity is invalid"));
                severities_valid = false;
            }
            Some(rank) => {
                if rank > previous {
                    errors.push("findings must be ordered by descending severity".into());
                }
                previous = rank;
            }
        }
        if !REVIEW_ASPECTS.contains(&finding.aspect.as_str()) {
            errors.push(format!("findings[{index}].aspect is invalid"));
        }
        if finding.aspect == "style" && finding.severity != "LOW" {
            errors.push(format!("findings[{index}] style severity must be LOW"));
        }
        errors.extend(validate_item(
            "findings",
            index,
            &finding.title,
            &finding.impact,
            &finding.proposed_fix,
            &finding.evidences,
        ));
        match rank {
            Some(rank) if rank >= 3 => want = "FIX",
            Some(_) if want == "APPROVE" => want = "COMMENT",
            _ => {}
        }
    }
    if severities_valid && report.recommendation != want {
        errors.push(format!("recommendation must be {want}"));
    }
    errors
}

pub fn validate_simplify(report: &SimplifyReport) -> Vec<String> {
    let mut errors = Vec::new();
    if report.summary.trim().is_empty() {
        errors.push("summary is required".to_string());
    }
    for (index, opportunity) in report.opportunities.iter().enumerate() {
        if !SIMPLIFY_ASPECTS.contains(&opportunity.aspect.as_str()) {
            errors.push(format!("opportunities[{index}].aspect is invalid"));
        }
        errors.extend(validate_item(
            "opportunities",
            index,
            &opportunity.title,
            &opportunity.body,
            &opportunity.proposed_change,
            &opportunity.evidences,
        ));
    }
    errors
}

fn validate_item(
    field: &str,
    index: usize,
    title: &str,
    detail: &str,
    proposal: &str,
    evidences: &[Evidence],
) -> Vec<String> {
    let mut errors = Vec::new();
    for (name, value) in [("title", title), ("detail", detail), ("proposal", proposal)] {
        if value.trim().is_empty() {
            errors.push(format!("{field}[{index}].{name} is required"));
        }
    }
    if evidences.is_empty() {
        errors.push(format!("{field}[{index}].evidences requires at least one item"));
    }
    for (evidence_index, evidence) in evidences.iter().enumerate() {
        if evidence.title.trim().is_empty() {
            errors.push(format!("{field}[{index}].evidences[{evidence_index}].title is required"));
        }
        if !valid_evidence_path(&evidence.path) {
            errors.push(format!("{field}[{index}].evidences[{evidence_index}].path must be repository-relative"));
        }
        if evidence.line_start < 1 || evidence.line_end < evidence.line_start {
            errors.push(format!("{field}[{index}].evidences[{evidence_index}] has invalid line range"));
        }
    }
    errors
}

/// A repository-relative path that stays inside the repository.
pub fn valid_evidence_path(path: &str) -> bool {
    gitagent_agent::tools::clean_relative(path).is_ok_and(|clean| !clean.is_empty())
}

/// Where the validator reads evidence from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Worktree,
    Index,
    /// The base tree (HEAD, or the base commit of a commit range).
    Head,
    /// The reviewed commit's tree (commit-range modes).
    Target,
}

/// The full validation of a provider report: the launch fingerprint is
/// rechecked first (diff modes), then the rules, then every evidence
/// location against the authoritative source.
pub fn validate_repository(
    command: TaskCommand,
    text: &str,
    prepared: &PreparedScope,
    git_env: &GitEnv,
) -> Vec<String> {
    if let Err(error) = super::prepare::recheck(prepared, git_env) {
        return vec![error.to_string()];
    }
    let errors = validate_text(command, text);
    if !errors.is_empty() {
        return errors;
    }
    let sets: Vec<(String, Vec<Evidence>)> = match command {
        TaskCommand::Review => serde_json::from_str::<ReviewReport>(text)
            .map(|report| {
                report
                    .findings
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| (format!("findings[{i}]"), item.evidences))
                    .collect()
            })
            .unwrap_or_default(),
        TaskCommand::Simplify => serde_json::from_str::<SimplifyReport>(text)
            .map(|report| {
                report
                    .opportunities
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| (format!("opportunities[{i}]"), item.evidences))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let mut errors = Vec::new();
    for (field, evidences) in sets {
        for (index, evidence) in evidences.iter().enumerate() {
            if let Err(error) = check_location(prepared, git_env, evidence) {
                errors.push(format!("{field}.evidences[{index}] {error}"));
            }
        }
    }
    errors
}

/// Why an evidence location is not in the review's sources.
#[derive(Debug, thiserror::Error)]
enum LocationError {
    #[error("path {0:?} does not exist in authoritative review sources")]
    Missing(String),
    #[error("line_end {line_end} exceeds path {path:?}")]
    PastEnd { line_end: i64, path: String },
}

fn check_location(prepared: &PreparedScope, git_env: &GitEnv, evidence: &Evidence) -> Result<(), LocationError> {
    let primary = match prepared.mode {
        Mode::Staged => Source::Index,
        Mode::Base | Mode::Commit => Source::Target,
        Mode::Uncommitted | Mode::Codebase => Source::Worktree,
    };
    let mut content = read_source(prepared, git_env, primary, &evidence.path);
    if content.is_none() && prepared.mode != Mode::Codebase {
        // Deleted lines are evidence too: fall back to the base.
        content = read_source(prepared, git_env, Source::Head, &evidence.path);
    }
    let Some(content) = content else {
        if evidence.line_start == 1 && evidence.line_end == 1 && prepared.gitlinks.contains(&evidence.path) {
            return Ok(());
        }
        return Err(LocationError::Missing(evidence.path.clone()));
    };
    if !has_line(&content, evidence.line_end) {
        return Err(LocationError::PastEnd { line_end: evidence.line_end, path: evidence.path.clone() });
    }
    Ok(())
}

/// Whether `content` has line `wanted` (1-based). After a final newline,
/// the immediately following blank line also counts.
pub fn has_line(content: &[u8], wanted: i64) -> bool {
    if wanted < 1 {
        return false;
    }
    if content.is_empty() {
        return false;
    }
    // Without a final newline the last line is partial; with one, the
    // blank line after it counts: either way one more than the newlines.
    let lines = content.iter().filter(|&&byte| byte == b'\n').count() as i64 + 1;
    wanted <= lines
}

/// Reads `path` (relative to the invocation root) from `source`, resolving
/// nested repositories. `None` when it does not exist there.
pub fn read_source(prepared: &PreparedScope, git_env: &GitEnv, source: Source, path: &str) -> Option<Vec<u8>> {
    if !valid_evidence_path(path) {
        return None;
    }
    let (root, relative, trees) = resolve_component(prepared, git_env, path)?;
    match source {
        Source::Worktree => {
            let full = root.join(git_agent_shared::quote::key_path(&relative));
            let metadata = std::fs::symlink_metadata(&full).ok()?;
            if !metadata.is_file() {
                return None;
            }
            let mut bytes = Vec::new();
            std::fs::File::open(&full).ok()?.take(64 << 20).read_to_end(&mut bytes).ok()?;
            Some(bytes)
        }
        Source::Index => {
            let repo = git::open(&root, git_env).ok()?;
            let index = repo.index_or_empty().ok()?;
            let entry = index.entry_by_path(relative.as_bytes().into())?;
            if !matches!(entry.mode, gix::index::entry::Mode::FILE | gix::index::entry::Mode::FILE_EXECUTABLE) {
                return None;
            }
            git::blob_bytes(&repo, entry.id).ok()
        }
        Source::Head | Source::Target => {
            let (base_tree, target_tree) = trees?;
            let tree = if source == Source::Head { base_tree } else { target_tree };
            let repo = git::open(&root, git_env).ok()?;
            let flat = git::flatten_tree(&repo, tree).ok()?;
            let blob = flat.get(&relative)?;
            if blob.is_gitlink() || blob.mode.is_link() {
                return None;
            }
            git::blob_bytes(&repo, blob.id).ok()
        }
    }
}

/// The repository root, component-relative path and base and target
/// trees owning `path`, through the prepared component list.
#[allow(clippy::type_complexity)]
fn resolve_component(
    prepared: &PreparedScope,
    git_env: &GitEnv,
    path: &str,
) -> Option<(std::path::PathBuf, String, Option<(gix::hash::ObjectId, gix::hash::ObjectId)>)> {
    let mut best = "";
    for prefix in &prepared.components {
        if !prefix.is_empty() && path.starts_with(&format!("{prefix}/")) && prefix.len() > best.len() {
            best = prefix;
        }
    }
    let relative = if best.is_empty() { path.to_string() } else { path[best.len() + 1..].to_string() };
    let root = prepared.root.join(best);
    if prepared.mode == Mode::Codebase {
        return Some((root, relative, None));
    }
    // The base of a nested component is its recorded gitlink (or its own
    // HEAD when unavailable); the prepared fingerprint is still valid, so
    // the current workspace has the same bases.
    let workspace = super::prepare::current_workspace(prepared, git_env).ok()??;
    let component = workspace.components.iter().find(|component| component.prefix == best)?;
    Some((root, relative, Some((component.base_tree, component.target_tree))))
}

/// Why the terminal review report could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum FinalReportError {
    #[error("decode validated review report: {0}")]
    Decode(#[source] serde_json::Error),
    #[error("validated review report is invalid: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error(transparent)]
    Check(#[from] super::checks::InvalidCheck),
    #[error("invalid final review report: duplicate check {0:?}")]
    DuplicateCheck(String),
}

/// The terminal review report: the validated provider report plus checks.
pub fn final_review_report(
    provider_text: &str,
    checks: Vec<CheckResult>,
) -> Result<FinalReviewReport, FinalReportError> {
    let report: ReviewReport = serde_json::from_str(provider_text).map_err(FinalReportError::Decode)?;
    let errors = validate_review(&report);
    if !errors.is_empty() {
        return Err(FinalReportError::Invalid(errors));
    }
    let mut seen = std::collections::BTreeSet::new();
    for check in &checks {
        check.validate()?;
        if !seen.insert(check.name.clone()) {
            return Err(FinalReportError::DuplicateCheck(check.name.clone()));
        }
    }
    Ok(FinalReviewReport {
        summary: report.summary,
        recommendation: report.recommendation,
        findings: report.findings,
        checks,
    })
}

/// Validates a stored terminal report of `command` (used by tests and
/// follow-ups): the provider rules plus, for review, the checks array.
pub fn validate_final(command: TaskCommand, text: &str) -> Vec<String> {
    match command {
        TaskCommand::Review => match serde_json::from_str::<FinalReviewReport>(text) {
            Ok(report) => {
                let mut errors = validate_review(&ReviewReport {
                    summary: report.summary,
                    recommendation: report.recommendation,
                    findings: report.findings,
                });
                for check in &report.checks {
                    if let Err(error) = check.validate() {
                        errors.push(error.to_string());
                    }
                }
                errors
            }
            Err(error) => vec![format!("invalid report JSON: {error}")],
        },
        TaskCommand::Simplify => validate_text(command, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::{self, Mode, PrepareError};
    use crate::tests::Fixture;

    fn finding(severity: &str, aspect: &str, path: &str, start: i64, end: i64) -> Value {
        json!({
            "severity": severity, "aspect": aspect, "title": "t", "impact": "i", "proposed_fix": "f",
            "evidences": [{"title": "e", "path": path, "line_start": start, "line_end": end}],
        })
    }

    fn review(recommendation: &str, findings: Vec<Value>) -> String {
        json!({"summary": "s", "recommendation": recommendation, "findings": findings}).to_string()
    }

    #[test]
    fn valid_reports_are_accepted() {
        assert!(validate_text(TaskCommand::Review, &review("APPROVE", vec![])).is_empty());
        let findings = vec![finding("HIGH", "security", "a.go", 1, 2), finding("LOW", "style", "a.go", 3, 3)];
        assert!(validate_text(TaskCommand::Review, &review("FIX", findings)).is_empty());
        assert!(
            validate_text(TaskCommand::Review, &review("COMMENT", vec![finding("MEDIUM", "tests", "a", 1, 1)]))
                .is_empty()
        );
        let simplify = json!({"summary": "s", "opportunities": [{"aspect": "reuse", "title": "t", "body": "b", "proposed_change": "c",
            "evidences": [{"title": "e", "path": "x/y.rs", "line_start": 2, "line_end": 4}]}]});
        assert!(validate_text(TaskCommand::Simplify, &simplify.to_string()).is_empty());
        assert!(validate_text(TaskCommand::Simplify, r#"{"summary":"s","opportunities":[]}"#).is_empty());
    }

    #[test]
    fn each_rule_rejects() {
        let cases: Vec<(TaskCommand, String, &str)> = vec![
            (TaskCommand::Review, r#"{"summary":"s","recommendation":"APPROVE","findings":[],"extra":1}"#.into(), "unknown field"),
            (TaskCommand::Review, r#"{"summary":"s","recommendation":"APPROVE"}"#.into(), "missing field"),
            (TaskCommand::Review, r#"{"summary":"s","recommendation":"APPROVE","findings":[]} {}"#.into(), "trailing"),
            (TaskCommand::Review, review("APPROVE", vec![]).replace("\"s\"", "\" \""), "summary is required"),
            (TaskCommand::Review, review("FIX", vec![finding("LOW", "tests", "a", 1, 1), finding("HIGH", "tests", "a", 1, 1)]), "descending severity"),
            (TaskCommand::Review, review("COMMENT", vec![finding("MEDIUM", "style", "a", 1, 1)]), "style severity must be LOW"),
            (TaskCommand::Review, review("COMMENT", vec![finding("SEVERE", "tests", "a", 1, 1)]), "severity is invalid"),
            (TaskCommand::Review, review("COMMENT", vec![finding("LOW", "vibes", "a", 1, 1)]), "aspect is invalid"),
            (TaskCommand::Review, review("COMMENT", vec![finding("HIGH", "tests", "a", 1, 1)]), "recommendation must be FIX"),
            (TaskCommand::Review, review("APPROVE", vec![finding("LOW", "tests", "a", 1, 1)]), "recommendation must be COMMENT"),
            (TaskCommand::Review, review("FIX", vec![]), "recommendation must be APPROVE"),
            (TaskCommand::Review, review("COMMENT", vec![finding("LOW", "tests", "/etc/passwd", 1, 1)]), "repository-relative"),
            (TaskCommand::Review, review("COMMENT", vec![finding("LOW", "tests", "../x", 1, 1)]), "repository-relative"),
            (TaskCommand::Review, review("COMMENT", vec![finding("LOW", "tests", "a", 0, 1)]), "invalid line range"),
            (TaskCommand::Review, review("COMMENT", vec![finding("LOW", "tests", "a", 3, 2)]), "invalid line range"),
            (
                TaskCommand::Review,
                json!({"summary":"s","recommendation":"COMMENT","findings":[{"severity":"LOW","aspect":"tests","title":"t","impact":"i","proposed_fix":"f","evidences":[]}]}).to_string(),
                "requires at least one item",
            ),
            (TaskCommand::Simplify, r#"{"summary":"s","opportunities":[{"aspect":"taste","title":"t","body":"b","proposed_change":"c","evidences":[{"title":"e","path":"a","line_start":1,"line_end":1}]}]}"#.into(), "aspect is invalid"),
            (TaskCommand::Simplify, r#"{"summary":"s","opportunities":[{"aspect":"reuse","title":"","body":"b","proposed_change":"c","evidences":[{"title":"e","path":"a","line_start":1,"line_end":1}]}]}"#.into(), "title is required"),
            (TaskCommand::Simplify, r#"{"summary":"s","findings":[]}"#.into(), "unknown field"),
        ];
        for (command, text, wanted) in cases {
            let errors = validate_text(command, &text);
            assert!(errors.iter().any(|error| error.contains(wanted)), "{text}: {errors:?} lacks {wanted:?}");
        }
    }

    #[test]
    fn line_ranges_include_the_blank_eof_line() {
        assert!(has_line(b"a\nb\n", 2));
        assert!(has_line(b"a\nb\n", 3), "the blank line after a final newline is valid");
        assert!(!has_line(b"a\nb\n", 4));
        assert!(has_line(b"a\nb", 2));
        assert!(!has_line(b"a\nb", 3));
        assert!(!has_line(b"", 1));
    }

    #[test]
    fn evidence_is_checked_against_the_authoritative_source() {
        let fixture = Fixture::new();
        fixture.write("kept.txt", "1\n2\n3\n");
        fixture.write("gone.txt", "1\n2\n3\n4\n5\n");
        fixture.commit_all("initial");
        fixture.write("kept.txt", "1\n2\n3\n4\n");
        std::fs::remove_file(fixture.repo().join("gone.txt")).unwrap();
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        let env = fixture.env();
        let check = |path: &str, start: i64, end: i64| {
            validate_repository(
                TaskCommand::Review,
                &review("COMMENT", vec![finding("LOW", "tests", path, start, end)]),
                &prepared,
                &env,
            )
        };
        assert!(check("kept.txt", 1, 4).is_empty());
        assert!(check("kept.txt", 5, 5).is_empty(), "EOF blank line");
        assert!(check("kept.txt", 6, 6).iter().any(|error| error.contains("line_end 6 exceeds")));
        assert!(check("gone.txt", 5, 5).is_empty(), "deleted lines fall back to HEAD");
        assert!(check("missing.txt", 1, 1).iter().any(|error| error.contains("does not exist")));
        // Drift invalidates the report.
        fixture.write("kept.txt", "changed\n");
        assert!(check("kept.txt", 1, 1).iter().any(|error| error.contains("rerun command")));
    }

    #[test]
    fn staged_evidence_reads_the_index() {
        let fixture = Fixture::new();
        fixture.write("a.txt", "1\n");
        fixture.commit_all("initial");
        fixture.write("a.txt", "1\n2\n3\n");
        fixture.git(&["add", "a.txt"]);
        fixture.write("a.txt", "1\n2\n3\n4\n5\n6\n7\n");
        let prepared = fixture.prepare(Mode::Staged).unwrap();
        let env = fixture.env();
        let text = |end: i64| review("COMMENT", vec![finding("LOW", "tests", "a.txt", 1, end)]);
        assert!(validate_repository(TaskCommand::Review, &text(4), &prepared, &env).is_empty());
        assert!(!validate_repository(TaskCommand::Review, &text(6), &prepared, &env).is_empty());
    }

    /// main: c1 (a.txt), c3 (m.txt); feature from c1: c2 (f.rs), c4 merges
    /// main, c5 edits f.rs. HEAD is feature, with a dirty worktree.
    fn branched() -> Fixture {
        let fixture = Fixture::new();
        fixture.write("a.txt", "a\n");
        fixture.commit_all("c1");
        fixture.git(&["checkout", "-q", "-b", "feature"]);
        fixture.write("f.rs", "fn f() {}\n");
        fixture.commit_all("c2");
        fixture.git(&["checkout", "-q", "main"]);
        fixture.write("m.txt", "m1\nm2\n");
        fixture.commit_all("c3");
        fixture.git(&["checkout", "-q", "feature"]);
        fixture.git(&["merge", "-q", "--no-ff", "--no-edit", "main"]);
        fixture.write("f.rs", "fn f() {}\nfn g() {}\n");
        fixture.commit_all("c5");
        fixture.write("f.rs", "fn f() {}\nfn g() {}\nfn dirty() {}\n");
        fixture.write("dirty.txt", "not committed\n");
        fixture
    }

    #[test]
    fn base_mode_reviews_the_branch_against_its_merge_base() {
        let fixture = branched();
        let env = fixture.env();
        let prepared = prepare::prepare_with(&fixture.repo(), Mode::Base, Some("main"), &env).unwrap();
        assert_eq!(prepared.paths, ["f.rs"], "main's merged commit and the dirty worktree are out of scope");
        let range = prepared.range.clone().unwrap();
        let main = fixture.git(&["rev-parse", "main"]).trim().to_string();
        let head = fixture.git(&["rev-parse", "HEAD"]).trim().to_string();
        assert_eq!((range.base_commit.as_deref(), range.target_commit.as_str()), (Some(main.as_str()), head.as_str()));
        assert!(prepared.diff.contains("+fn g() {}") && !prepared.diff.contains("dirty"), "{}", prepared.diff);
        assert!(prepared.previous_head_context_pack.is_none());
        let check = |end: i64| {
            let text = review("COMMENT", vec![finding("LOW", "tests", "f.rs", 1, end)]);
            validate_repository(TaskCommand::Review, &text, &prepared, &env)
        };
        assert!(check(3).is_empty(), "the committed file has two lines and the EOF line");
        assert!(!check(4).is_empty(), "the dirty worktree line is not evidence");
        // The worktree may change; HEAD may not.
        fixture.write("f.rs", "other\n");
        prepare::recheck(&prepared, &env).unwrap();
        fixture.commit_all("c6");
        assert!(matches!(prepare::recheck(&prepared, &env), Err(PrepareError::Drift { .. })));
    }

    #[test]
    fn commit_mode_reviews_one_commit_against_its_first_parent() {
        let fixture = branched();
        let env = fixture.env();
        let merge = prepare::prepare_with(&fixture.repo(), Mode::Commit, Some("HEAD~1"), &env).unwrap();
        assert_eq!(merge.paths, ["m.txt"], "a merge commit against its first parent");
        let text = review("COMMENT", vec![finding("LOW", "tests", "m.txt", 2, 2)]);
        assert!(validate_repository(TaskCommand::Review, &text, &merge, &env).is_empty());
        let head = prepare::prepare_with(&fixture.repo(), Mode::Commit, Some("HEAD"), &env).unwrap();
        assert_eq!(head.paths, ["f.rs"]);
        let root = prepare::prepare_with(&fixture.repo(), Mode::Commit, Some("main~1"), &env).unwrap();
        assert_eq!((root.paths.as_slice(), root.range.unwrap().base_commit), (&["a.txt".to_string()][..], None));
        // A pinned commit never drifts, even when HEAD moves.
        fixture.commit_all("c6");
        prepare::recheck(&merge, &env).unwrap();
        let error = prepare::prepare_with(&fixture.repo(), Mode::Commit, Some("no-such-ref"), &env).unwrap_err();
        assert!(error.to_string().contains("cannot resolve \"no-such-ref\" to a commit"), "{error}");
        let error = prepare::prepare_with(&fixture.repo(), Mode::Base, Some("HEAD"), &env).unwrap_err();
        assert!(matches!(error, PrepareError::EmptyRange { .. }), "{error}");
    }

    #[test]
    fn final_reports_carry_checks() {
        let report = final_review_report(&review("APPROVE", vec![]), vec![]).unwrap();
        let text = serde_json::to_string(&report).unwrap();
        assert_eq!(text, r#"{"summary":"s","recommendation":"APPROVE","findings":[],"checks":[]}"#);
        assert!(validate_final(TaskCommand::Review, &text).is_empty());
        assert!(!validate_final(TaskCommand::Review, &review("APPROVE", vec![])).is_empty(), "checks are required");
    }

    #[test]
    fn schemas_are_strict() {
        let schema = output_schema(TaskCommand::Review);
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["findings", "recommendation", "summary"]));
        let finding = &schema["properties"]["findings"]["items"];
        assert_eq!(finding["required"], json!(["aspect", "evidences", "impact", "proposed_fix", "severity", "title"]));
        assert_eq!(finding["properties"]["evidences"]["minItems"], 1);
        let simplify = output_schema(TaskCommand::Simplify);
        assert_eq!(
            simplify["properties"]["opportunities"]["items"]["properties"]["aspect"]["enum"],
            json!(SIMPLIFY_ASPECTS)
        );
        assert_eq!(text_format(TaskCommand::Simplify)["strict"], true);
    }
}

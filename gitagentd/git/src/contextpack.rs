//! The generated-heavy context pack: a compact overview of a change set
//! that groups files by status, directory and extension, flags files that
//! carry the standard Go generated-code marker, and keeps small clusters
//! as raw outliers so handwritten changes stay visible next to dominant
//! generated groups. Its JSON shape is the original implementation's.

use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub const GO_GENERATED_RULE: &str = "go-generated-comment";

/// What the pack knows about one changed file.
#[derive(Debug, Clone, Default)]
pub struct FileFact {
    pub path: String,
    pub status: String,
    pub adds: u64,
    pub deletes: u64,
    /// The first bytes of the file, to recognise generated Go code.
    pub header: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ContextPack {
    pub overview: Overview,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Group>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<FileSummary>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Overview {
    pub files: u64,
    pub adds: u64,
    pub deletes: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub statuses: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "is_zero")]
    pub generated_files: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub dominant_scope: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub summary: String,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileSummary {
    pub path: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub adds: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub deletes: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub extension: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub generated: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub generated_by_rule: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Group {
    pub id: String,
    #[serde(rename = "match")]
    pub pattern: String,
    pub count: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    pub adds: u64,
    pub deletes: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub generated: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub generated_by_rule: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<FileSummary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top_churn: Vec<FileSummary>,
}

/// Change sets above this many files split single-file clusters out as
/// outliers.
const OUTLIER_MIN_FILES: usize = 20;
const SAMPLE_LIMIT: usize = 3;
const TOP_CHURN_LIMIT: usize = 3;

/// Builds the pack of `files`.
pub fn build(files: &[FileFact]) -> ContextPack {
    let mut facts: Vec<&FileFact> = files.iter().filter(|fact| !fact.path.is_empty()).collect();
    facts.sort_by(|a, b| a.path.cmp(&b.path));
    let summaries: Vec<FileSummary> = facts.iter().map(|fact| summarize(fact)).collect();
    let mut pack = ContextPack { overview: overview(&summaries), ..ContextPack::default() };
    let mut grouped: BTreeMap<String, Vec<FileSummary>> = BTreeMap::new();
    for summary in &summaries {
        grouped.entry(group_key(summary)).or_default().push(summary.clone());
    }
    for items in grouped.into_values() {
        if summaries.len() > OUTLIER_MIN_FILES && items.len() <= 1 {
            pack.outliers.extend(items);
        } else {
            pack.groups.push(group(items));
        }
    }
    pack.outliers.sort_by(|a, b| a.path.cmp(&b.path));
    pack
}

/// A change set is large and generated-heavy when it has more than this
/// many files ...
const LARGE_FILES: u64 = 100;
/// ... and at least this percentage of them carry a generated marker.
const GENERATED_PERCENT: u64 = 80;

/// Whether `pack` describes a large, generated-heavy change set, whose
/// requests compact the generated groups and keep the handwritten files'
/// diff raw.
pub fn is_large_generated_heavy(pack: &ContextPack) -> bool {
    pack.overview.files > LARGE_FILES && pack.overview.generated_files * 100 >= pack.overview.files * GENERATED_PERCENT
}

/// Whether a Go file's leading comments carry the standard
/// `// Code generated ... DO NOT EDIT.` marker.
pub fn is_go_generated(path: &str, header: &str) -> bool {
    if !path.ends_with(".go") {
        return false;
    }
    let mut in_block = false;
    for line in header.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("// Code generated ") && line.ends_with(" DO NOT EDIT.") {
            return true;
        }
        if in_block {
            in_block = !line.contains("*/");
            continue;
        }
        if line.starts_with("//") {
            continue;
        }
        if line.starts_with("/*") {
            in_block = !line.contains("*/");
            continue;
        }
        return false;
    }
    false
}

fn summarize(fact: &FileFact) -> FileSummary {
    let generated = is_go_generated(&fact.path, &fact.header);
    FileSummary {
        path: fact.path.clone(),
        status: if fact.status.is_empty() { "modified".into() } else { fact.status.clone() },
        adds: fact.adds,
        deletes: fact.deletes,
        extension: extension(&fact.path),
        generated,
        generated_by_rule: if generated { GO_GENERATED_RULE.into() } else { String::new() },
    }
}

fn overview(summaries: &[FileSummary]) -> Overview {
    let mut out = Overview { files: summaries.len() as u64, ..Overview::default() };
    let mut dirs: BTreeMap<String, u64> = BTreeMap::new();
    for summary in summaries {
        out.adds += summary.adds;
        out.deletes += summary.deletes;
        *out.statuses.entry(summary.status.clone()).or_default() += 1;
        *out.extensions.entry(summary.extension.clone()).or_default() += 1;
        out.generated_files += u64::from(summary.generated);
        *dirs.entry(dir_name(&summary.path)).or_default() += 1;
    }
    // The most frequent directory; ties go to the smallest name.
    let mut best: Option<(&String, u64)> = None;
    for (dir, count) in &dirs {
        if best.is_none_or(|(_, best_count)| *count > best_count) {
            best = Some((dir, *count));
        }
    }
    out.dominant_scope = best.map(|(dir, _)| dir.clone()).unwrap_or_default();
    out.summary = if out.files == 0 {
        "No changed files.".into()
    } else if out.generated_files > 0 {
        format!(
            "{} files changed (+{}/-{}); {} match standards-based generated-file markers.",
            out.files, out.adds, out.deletes, out.generated_files
        )
    } else {
        format!("{} files changed (+{}/-{}).", out.files, out.adds, out.deletes)
    };
    out
}

fn group_key(summary: &FileSummary) -> String {
    format!(
        "{}|generated={}|{}|{}|{}",
        summary.status,
        summary.generated,
        summary.generated_by_rule,
        dir_name(&summary.path),
        summary.extension
    )
}

fn group(mut items: Vec<FileSummary>) -> Group {
    items.sort_by(|a, b| a.path.cmp(&b.path));
    let pattern = group_match(&items);
    let statuses = sorted_unique(items.iter().map(|item| item.status.clone()));
    let extensions = sorted_unique(items.iter().map(|item| item.extension.clone()));
    let digest = Sha256::digest(format!("{pattern}|{}", statuses.join(",")).as_bytes());
    let id = format!("group_{}", digest.iter().take(6).map(|byte| format!("{byte:02x}")).collect::<String>());
    let adds = items.iter().map(|item| item.adds).sum();
    let deletes = items.iter().map(|item| item.deletes).sum();
    let mut group = Group {
        id,
        pattern,
        count: items.len() as u64,
        statuses,
        extensions,
        adds,
        deletes,
        generated: items[0].generated,
        generated_by_rule: items[0].generated_by_rule.clone(),
        summary: String::new(),
        samples: samples(&items),
        top_churn: top_churn(&items, TOP_CHURN_LIMIT),
    };
    let verb = if group.statuses.len() == 1 { status_verb(&group.statuses[0]) } else { "Changed" };
    let generated = if group.generated { " generated" } else { "" };
    let extensions = group.extensions.join(",");
    let place = group.pattern.strip_suffix(&format!("/*{extensions}")).unwrap_or(&group.pattern).to_string();
    group.summary = format!(
        "{verb} {}{generated} {extensions} files under {place} (+{}/-{}).",
        group.count, group.adds, group.deletes
    );
    group
}

fn group_match(items: &[FileSummary]) -> String {
    let dir = dir_name(&items[0].path);
    if dir == "." { format!("*{}", items[0].extension) } else { format!("{dir}/*{}", items[0].extension) }
}

fn samples(items: &[FileSummary]) -> Vec<FileSummary> {
    if items.len() <= SAMPLE_LIMIT {
        return items.to_vec();
    }
    let candidates = [items[0].clone(), items[items.len() / 2].clone(), top_churn(items, 1).remove(0)];
    let mut out: Vec<FileSummary> = Vec::new();
    for candidate in candidates {
        if !out.iter().any(|item| item.path == candidate.path) {
            out.push(candidate);
        }
    }
    out
}

fn top_churn(items: &[FileSummary], limit: usize) -> Vec<FileSummary> {
    let mut sorted = items.to_vec();
    sorted.sort_by(|a, b| (b.adds + b.deletes).cmp(&(a.adds + a.deletes)).then_with(|| a.path.cmp(&b.path)));
    sorted.truncate(limit);
    sorted
}

fn sorted_unique(values: impl Iterator<Item = String>) -> Vec<String> {
    let set: std::collections::BTreeSet<String> = values.filter(|value| !value.is_empty()).collect();
    set.into_iter().collect()
}

/// The folder of the file whose key is `path`, as a key (taken from the
/// path's bytes, so a quoted key gives a quoted folder).
fn dir_name(path: &str) -> String {
    let bytes = git_agent_shared::quote::key_bytes(path);
    match bytes.iter().rposition(|&byte| byte == b'/') {
        Some(slash) => git_agent_shared::quote::utf8_or_quoted(&bytes[..slash]).into_owned(),
        None => ".".to_string(),
    }
}

fn extension(path: &str) -> String {
    let bytes = git_agent_shared::quote::key_bytes(path);
    let name = bytes.rsplit(|&byte| byte == b'/').next().unwrap_or(&bytes);
    match name.iter().rposition(|&byte| byte == b'.') {
        Some(index) if index > 0 || name.len() > 1 => {
            git_agent_shared::quote::utf8_or_quoted(&name[index..]).into_owned()
        }
        _ => "<none>".into(),
    }
}

fn status_verb(status: &str) -> &'static str {
    match status {
        "A" | "added" => "Added",
        "D" | "deleted" => "Deleted",
        "R" | "renamed" => "Renamed",
        "M" | "modified" => "Modified",
        _ => "Changed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(path: &str, adds: u64, header: &str) -> FileFact {
        FileFact { path: path.into(), status: "modified".into(), adds, deletes: 0, header: header.into() }
    }

    #[test]
    fn go_generated_marker_after_leading_comments_only() {
        assert!(is_go_generated(
            "a.pb.go",
            "// Copyright\n\n// Code generated by protoc-gen-go. DO NOT EDIT.\npackage a\n"
        ));
        assert!(is_go_generated("a.go", "/* license\n block */\n// Code generated x DO NOT EDIT.\n"));
        assert!(!is_go_generated("a.go", "package a\n// Code generated x DO NOT EDIT.\n"));
        assert!(!is_go_generated("a.rs", "// Code generated x DO NOT EDIT.\n"));
    }

    #[test]
    fn large_change_sets_keep_single_clusters_as_outliers() {
        let generated = "// Code generated by tool. DO NOT EDIT.\n";
        let mut files: Vec<FileFact> = (0..25).map(|n| fact(&format!("gen/f{n:02}.go"), 100, generated)).collect();
        files.push(fact("cmd/main.go", 3, "package main\n"));
        let pack = build(&files);
        assert_eq!(pack.overview.files, 26);
        assert_eq!(pack.overview.generated_files, 25);
        assert_eq!(pack.groups.len(), 1);
        assert!(pack.groups[0].generated);
        assert_eq!(pack.groups[0].pattern, "gen/*.go");
        assert_eq!(pack.groups[0].samples.len(), 2);
        assert_eq!(pack.outliers.len(), 1);
        assert_eq!(pack.outliers[0].path, "cmd/main.go");
        assert_eq!(pack.groups[0].summary, "Modified 25 generated .go files under gen (+2500/-0).");
    }

    #[test]
    fn generated_heavy_needs_many_files_mostly_generated() {
        let generated = "// Code generated by tool. DO NOT EDIT.\n";
        let mut files: Vec<FileFact> = (0..100).map(|n| fact(&format!("gen/f{n:03}.go"), 1, generated)).collect();
        assert!(!is_large_generated_heavy(&build(&files)), "100 files are not many");
        files.push(fact("gen/x.go", 1, generated));
        assert!(is_large_generated_heavy(&build(&files)));
        files.extend((0..30).map(|n| fact(&format!("src/h{n}.rs"), 1, "")));
        assert!(!is_large_generated_heavy(&build(&files)), "77% generated is not heavy");
    }

    #[test]
    fn small_change_sets_group_everything() {
        let pack = build(&[fact("README", 1, ""), fact("src/a.rs", 2, "")]);
        assert!(pack.outliers.is_empty());
        assert_eq!(pack.groups.len(), 2);
        assert_eq!(pack.overview.summary, "2 files changed (+3/-0).");
        assert_eq!(pack.overview.extensions.get("<none>"), Some(&1));
    }
}

//! Unified patches and line statistics of a [`Workspace`]'s changes, in
//! Git's format: `diff --git` headers, mode and index lines, hunks with
//! three lines of context, `Binary files ... differ`, and gitlinks as
//! `Subproject commit` lines with bounded commit summaries when the
//! submodule's history is available. Nested repositories get a labelled
//! section whose patch paths are relative to that repository.

use super::git::{self, Blob, GitEnv, GitError};
use super::scope::{Change, Component, Workspace};
use git_agent_shared::task_record::limit_text;
use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, Diff, InternedInput, UnifiedDiff};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// At most this many submodule commits are summarised per moved gitlink.
const MAX_SUBMODULE_COMMITS: usize = 50;
/// Bytes inspected to tell binary content apart, as Git does.
const BINARY_PROBE: usize = 8000;

/// Added and deleted lines of one changed path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileStat {
    pub path: String,
    pub adds: u64,
    pub deletes: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_binary: bool,
}

/// The rendered patch of one change and its statistics.
#[derive(Debug, Clone)]
pub struct FilePatch {
    pub stat: FileStat,
    pub text: String,
}

/// A capped patch of a workspace and the statistics of every path in it.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    pub text: String,
    pub truncated: bool,
    /// Root-relative path → statistics.
    pub stats: BTreeMap<String, FileStat>,
}

/// Renders every change of `workspace` (or only those `selected` by their
/// root-relative path) and caps the text.
pub fn render(
    workspace: &Workspace,
    changes: &[Change],
    selected: Option<&dyn Fn(&str) -> bool>,
    git_env: &GitEnv,
    max_bytes: usize,
    max_lines: usize,
) -> Result<Rendered, GitError> {
    let mut out = String::new();
    let mut stats = BTreeMap::new();
    for component in &workspace.components {
        let own: Vec<&Change> = changes
            .iter()
            .filter(|change| change.prefix == component.prefix)
            .filter(|change| selected.is_none_or(|keep| keep(&change.full_path())))
            .collect();
        if own.is_empty() {
            continue;
        }
        let repo = git::open(&component.root, git_env)?;
        let mut text = String::new();
        let moved: Vec<&Change> = own.iter().copied().filter(|change| change.is_gitlink()).collect();
        text.push_str(&submodule_history(component, &moved, git_env));
        for change in &own {
            let patch = file_patch(&repo, component, change)?;
            text.push_str(&patch.text);
            let mut stat = patch.stat;
            stat.path = change.full_path();
            stats.insert(stat.path.clone(), stat);
        }
        if text.is_empty() {
            continue;
        }
        if !component.prefix.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            let _ = writeln!(
                out,
                "Repository {:?} (paths below are relative to {:?}):",
                component.prefix, component.prefix
            );
            if component.base_unavailable
                && let Some(expected) = component.expected_base
            {
                let _ = writeln!(
                    out,
                    "Base commit {expected} is unavailable locally; showing checkout-relative dirty changes only."
                );
            }
        }
        out.push_str(&text);
    }
    let (text, truncated) = limit_text(&out, max_bytes, max_lines);
    Ok(Rendered { text, truncated, stats })
}

fn side_bytes(
    repo: &gix::Repository,
    component: &Component,
    path: &str,
    blob: &Blob,
    worktree: bool,
) -> Result<Option<Vec<u8>>, GitError> {
    if worktree { git::worktree_bytes(&component.root, path, blob) } else { git::blob_bytes(repo, blob.id).map(Some) }
}

/// The patch of one change, with paths relative to its component.
pub fn file_patch(repo: &gix::Repository, component: &Component, change: &Change) -> Result<FilePatch, GitError> {
    let path = &change.path;
    let mut stat = FileStat { path: path.clone(), ..FileStat::default() };
    if change.is_gitlink() {
        stat.adds = u64::from(change.new.is_some());
        stat.deletes = u64::from(change.old.is_some());
        return Ok(FilePatch { stat, text: gitlink_patch(change) });
    }
    let mut text = format!("diff --git a/{path} b/{path}\n");
    match (change.old, change.new) {
        (None, Some(new)) => {
            let _ = writeln!(text, "new file mode {}", new.mode_octal());
            let _ = writeln!(text, "index {}..{}", short(None), new.id.to_hex_with_len(7));
        }
        (Some(old), None) => {
            let _ = writeln!(text, "deleted file mode {}", old.mode_octal());
            let _ = writeln!(text, "index {}..{}", old.id.to_hex_with_len(7), short(None));
        }
        (Some(old), Some(new)) => {
            if old.mode != new.mode {
                let _ = writeln!(text, "old mode {}\nnew mode {}", old.mode_octal(), new.mode_octal());
                let _ = writeln!(text, "index {}..{}", old.id.to_hex_with_len(7), new.id.to_hex_with_len(7));
            } else {
                let _ = writeln!(
                    text,
                    "index {}..{} {}",
                    old.id.to_hex_with_len(7),
                    new.id.to_hex_with_len(7),
                    new.mode_octal()
                );
            }
        }
        (None, None) => return Ok(FilePatch { stat, text: String::new() }),
    }
    if change.old.map(|blob| blob.id) == change.new.map(|blob| blob.id) {
        return Ok(FilePatch { stat, text });
    }
    let before = match change.old {
        Some(blob) => side_bytes(repo, component, path, &blob, false)?,
        None => Some(Vec::new()),
    };
    let after = match change.new {
        Some(blob) => side_bytes(repo, component, path, &blob, component.from_worktree.contains(path))?,
        None => Some(Vec::new()),
    };
    let old_name = if change.old.is_some() { format!("a/{path}") } else { "/dev/null".into() };
    let new_name = if change.new.is_some() { format!("b/{path}") } else { "/dev/null".into() };
    let (Some(before), Some(after)) = (before, after) else {
        stat.is_binary = true;
        let _ = writeln!(text, "Binary files {old_name} and {new_name} differ (larger than the review cap)");
        return Ok(FilePatch { stat, text });
    };
    if is_binary(&before) || is_binary(&after) {
        stat.is_binary = true;
        let _ = writeln!(text, "Binary files {old_name} and {new_name} differ");
        return Ok(FilePatch { stat, text });
    }
    let _ = writeln!(text, "--- {old_name}\n+++ {new_name}");
    let input = InternedInput::new(before.as_slice(), after.as_slice());
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_lines(&input);
    stat.adds = u64::from(diff.count_additions());
    stat.deletes = u64::from(diff.count_removals());
    let hunks =
        UnifiedDiff::new(&diff, &input, GitHunks::default(), ContextSize::symmetrical(3)).consume().unwrap_or_default();
    text.push_str(&hunks);
    Ok(FilePatch { stat, text })
}

fn short(id: Option<gix::hash::ObjectId>) -> String {
    id.map_or_else(|| "0000000".to_string(), |id| id.to_hex_with_len(7).to_string())
}

pub fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_PROBE)].contains(&0)
}

/// Collects hunks in Git's format, marking a last line without newline.
#[derive(Default)]
struct GitHunks {
    out: String,
}

impl ConsumeHunk for GitHunks {
    type Out = String;

    fn consume_hunk(&mut self, header: HunkHeader, lines: &[(DiffLineKind, &[u8])]) -> std::io::Result<()> {
        // Git names an empty range by the line before it.
        let range = |start: u32, len: u32| match len {
            0 => format!("{},0", start.saturating_sub(1)),
            1 => format!("{start}"),
            _ => format!("{start},{len}"),
        };
        let _ = writeln!(
            self.out,
            "@@ -{} +{} @@",
            range(header.before_hunk_start, header.before_hunk_len),
            range(header.after_hunk_start, header.after_hunk_len)
        );
        for (kind, content) in lines {
            self.out.push(kind.to_prefix());
            self.out.push_str(&String::from_utf8_lossy(content));
            if !content.ends_with(b"\n") {
                self.out.push_str("\n\\ No newline at end of file\n");
            }
        }
        Ok(())
    }

    fn finish(self) -> Self::Out {
        self.out
    }
}

fn gitlink_patch(change: &Change) -> String {
    let path = &change.path;
    let old = change.old.map(|blob| blob.id.to_string());
    let new = change.new.map(|blob| blob.id.to_string());
    let zeros = "0".repeat(40);
    let old_hash = old.clone().unwrap_or_else(|| zeros.clone());
    let new_hash = new.clone().unwrap_or(zeros);
    let old_name = if old.is_some() { format!("a/{path}") } else { "/dev/null".into() };
    let new_name = if new.is_some() { format!("b/{path}") } else { "/dev/null".into() };
    let mut text = format!(
        "diff --git a/{path} b/{path}\nindex {}..{} 160000\n--- {old_name}\n+++ {new_name}\n",
        &old_hash[..7],
        &new_hash[..7]
    );
    let dirty = if change.dirty { "-dirty" } else { "" };
    match (old, new) {
        (None, Some(new)) => {
            let _ = write!(text, "@@ -0,0 +1 @@\n+Subproject commit {new}{dirty}\n");
        }
        (Some(old), None) => {
            let _ = write!(text, "@@ -1 +0,0 @@\n-Subproject commit {old}\n");
        }
        (Some(old), Some(new)) => {
            let _ = write!(text, "@@ -1 +1 @@\n-Subproject commit {old}\n+Subproject commit {new}{dirty}\n");
        }
        (None, None) => {}
    }
    text
}

/// "Submodule commits <path> (<old>..<new>):" followed by the commits the
/// gitlink moved over, when the submodule's clone has them.
fn submodule_history(component: &Component, moved: &[&Change], git_env: &GitEnv) -> String {
    let mut out = String::new();
    for change in moved {
        let (Some(old), Some(new)) = (change.old, change.new) else { continue };
        if old.id == new.id {
            continue;
        }
        let Ok(sub) = git::open(&component.root.join(&change.path), git_env) else { continue };
        let Some(commits) = git::commit_summaries(&sub, old.id, new.id, MAX_SUBMODULE_COMMITS) else { continue };
        if commits.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "Submodule commits {} ({}..{}):",
            change.path,
            old.id.to_hex_with_len(7),
            new.id.to_hex_with_len(7)
        );
        for (sha, summary) in commits {
            let _ = writeln!(out, "  {sha} {summary}");
        }
    }
    out
}

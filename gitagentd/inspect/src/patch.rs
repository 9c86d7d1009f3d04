//! Unified patches and line statistics of a [`Workspace`]'s changes, in
//! Git's format as the one renderer in [`gitagent_git::patch`] writes it
//! (gitlinks as `Subproject commit` lines, `-dirty` for a dirty
//! checkout), with bounded commit summaries of moved gitlinks when the
//! submodule's history is available. Nested repositories get a labelled
//! section whose patch paths are relative to that repository.

use super::git::{self, Blob, GitEnv, GitError};
use super::scope::{Change, Component, Workspace};
use git_agent_shared::task_record::limit_text;
use gitagent_git::patch::{self as renderer, Content};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// At most this many submodule commits are summarised per moved gitlink.
const MAX_SUBMODULE_COMMITS: usize = 50;

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

/// The patch of one change, with paths relative to its component.
pub fn file_patch(repo: &gix::Repository, component: &Component, change: &Change) -> Result<FilePatch, GitError> {
    let path = &change.path;
    let side = |blob: Option<Blob>| blob.map(|blob| renderer::Side { id: blob.id, kind: blob.mode.kind() });
    let described = renderer::Change { path, old: side(change.old), new: side(change.new), rewrite: None };
    let mut stat = FileStat { path: path.clone(), ..FileStat::default() };
    if change.old.is_none() && change.new.is_none() {
        return Ok(FilePatch { stat, text: String::new() });
    }
    let (before, after) = if change.old.map(|blob| blob.id) == change.new.map(|blob| blob.id) && !change.dirty {
        // Only the mode changed: nothing to read.
        (Some(Vec::new()), Some(Vec::new()))
    } else {
        let before = match change.old {
            Some(blob) => side_bytes(repo, component, path, &blob, false, false)?,
            None => Some(Vec::new()),
        };
        let after = match change.new {
            Some(blob) => {
                side_bytes(repo, component, path, &blob, component.from_worktree.contains(path), change.dirty)?
            }
            None => Some(Vec::new()),
        };
        (before, after)
    };
    let content = match (&before, &after) {
        (Some(old), Some(new)) => Content::Bytes { old, new },
        _ => Content::TooLarge,
    };
    let (text, stats) = renderer::patch_text(&described, content);
    stat.adds = u64::from(stats.additions);
    stat.deletes = u64::from(stats.deletions);
    stat.is_binary = stats.binary;
    Ok(FilePatch { stat, text })
}

/// The bytes of one side; `None` when a worktree file is larger than the
/// review cap. A gitlink's side is its `Subproject commit` line.
fn side_bytes(
    repo: &gix::Repository,
    component: &Component,
    path: &str,
    blob: &Blob,
    worktree: bool,
    dirty: bool,
) -> Result<Option<Vec<u8>>, GitError> {
    if blob.is_gitlink() {
        Ok(Some(renderer::gitlink_content(blob.id, dirty)))
    } else if worktree {
        git::worktree_bytes(&component.root, path, blob)
    } else {
        git::blob_bytes(repo, blob.id).map(Some)
    }
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
        let Ok(sub) = git::open(&component.root.join(git_agent_shared::quote::key_path(&change.path)), git_env) else {
            continue;
        };
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

//! The staged scope: every path whose index entry differs from HEAD, and
//! the precomputed [`StagedContext`] a commit-message request starts from.
//! Renames appear as a deletion plus an addition.

use super::history::CommitInfo;
use super::patch::FilePatch;
use super::{Entry, GitError, Repository};
use crate::bounded::{self, BoundedText};
use serde::Serialize;
use std::collections::BTreeMap;

/// One staged path: its HEAD entry (`old`) and index entry (`new`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedChange {
    pub path: String,
    pub old: Option<Entry>,
    pub new: Option<Entry>,
}

impl StagedChange {
    /// `A`dded, `D`eleted, `T`ype changed or `M`odified.
    pub fn status(&self) -> &'static str {
        match (&self.old, &self.new) {
            (None, _) => "A",
            (_, None) => "D",
            (Some(old), Some(new)) if old.kind != new.kind => "T",
            _ => "M",
        }
    }
}

/// A path and its staged status letter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathStatus {
    pub path: String,
    pub staging: String,
}

/// Added and deleted lines of one path; binary files count none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileStat {
    pub path: String,
    pub adds: usize,
    pub deletes: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_binary: bool,
}

impl Repository {
    /// Every staged change, sorted by path.
    pub fn staged_changes(&self) -> Result<Vec<StagedChange>, GitError> {
        let mut head: BTreeMap<String, Entry> = self.head_entries()?.into_iter().collect();
        let mut changes = Vec::new();
        for (path, entry) in self.index_entries()? {
            match head.remove(&path) {
                Some(old) if old == entry => {}
                old => changes.push(StagedChange { path, old, new: Some(entry) }),
            }
        }
        changes.extend(head.into_iter().map(|(path, old)| StagedChange { path, old: Some(old), new: None }));
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// Patches of `changes`; stats for all of them, text only while the
    /// rendered total stays under `render_budget` bytes.
    pub fn staged_patches(&self, changes: &[StagedChange], render_budget: usize) -> Result<Vec<FilePatch>, GitError> {
        let mut rendered = 0;
        let mut patches = Vec::with_capacity(changes.len());
        for change in changes {
            let patch =
                self.file_patch(&change.path, change.old.as_ref(), change.new.as_ref(), rendered <= render_budget)?;
            rendered += patch.text.len();
            patches.push(patch);
        }
        Ok(patches)
    }

    /// The staged diff of `paths` (all staged paths when empty), capped.
    pub fn staged_diff(&self, paths: &[String], max_bytes: usize, max_lines: usize) -> Result<BoundedText, GitError> {
        let changes: Vec<StagedChange> = self
            .staged_changes()?
            .into_iter()
            .filter(|change| paths.is_empty() || paths.iter().any(|path| covers(path, &change.path)))
            .collect();
        let patches = self.staged_patches(&changes, max_bytes)?;
        Ok(bounded::bound(&join(&patches), max_bytes, max_lines))
    }
}

/// Whether the requested `path` names `changed` itself or a folder of it.
fn covers(path: &str, changed: &str) -> bool {
    let path = path.trim_end_matches('/');
    path.is_empty() || path == "." || changed == path || changed.starts_with(&format!("{path}/"))
}

fn join(patches: &[FilePatch]) -> String {
    patches.iter().map(|patch| patch.text.as_str()).collect()
}

/// Caps of the prepared staged context.
#[derive(Debug, Clone, Copy)]
pub struct StagedLimits {
    pub diff_max_bytes: usize,
    pub diff_max_lines: usize,
    pub recent_commits: usize,
}

impl Default for StagedLimits {
    fn default() -> Self {
        Self { diff_max_bytes: 48 * 1024, diff_max_lines: 1200, recent_commits: 10 }
    }
}

/// The staged evidence prepared before the first model request: the
/// authoritative scope (paths, status, stats), recent commits as style
/// reference, and the staged diff, capped with explicit truncation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StagedContext {
    pub mode: &'static str,
    pub staged_paths: Vec<String>,
    pub staged_status: Vec<PathStatus>,
    pub staged_stats: Vec<FileStat>,
    pub recent_commits: Vec<CommitInfo>,
    pub diff: String,
    pub diff_truncated: bool,
}

impl StagedContext {
    /// Reads the staged scope of `repo`. An empty scope yields an empty
    /// context; the caller decides whether that is an error.
    pub fn prepare(repo: &Repository, limits: StagedLimits) -> Result<Self, GitError> {
        let changes = repo.staged_changes()?;
        let patches = repo.staged_patches(&changes, limits.diff_max_bytes)?;
        let diff = bounded::bound(&join(&patches), limits.diff_max_bytes, limits.diff_max_lines);
        let recent_commits = if changes.is_empty() { Vec::new() } else { repo.recent_commits(limits.recent_commits)? };
        Ok(Self {
            mode: "normal",
            staged_paths: changes.iter().map(|change| change.path.clone()).collect(),
            staged_status: changes
                .iter()
                .map(|change| PathStatus { path: change.path.clone(), staging: change.status().into() })
                .collect(),
            staged_stats: patches
                .iter()
                .map(|patch| FileStat {
                    path: patch.path.clone(),
                    adds: patch.adds,
                    deletes: patch.deletes,
                    is_binary: patch.binary,
                })
                .collect(),
            recent_commits,
            diff: diff.text,
            diff_truncated: diff.truncated,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.staged_paths.is_empty()
    }
}

//! The prepared amend context: the HEAD commit being rewritten (its
//! message, metadata, paths, stats and diff versus its first parent), the
//! staged refinement as diagnostics, recent commits as style, and the
//! authoritative final amended result (the index versus HEAD's first
//! parent), each diff capped with explicit truncation.

use super::history::{CommitDetails, CommitInfo};
use super::staged::{DiffScope, FileStat, PathStatus, ScopeEvidence};
use super::submodule::SubmoduleChange;
use super::{GitError, Repository};
use crate::contextpack::ContextPack;
use serde::Serialize;

/// Caps of the prepared amend context.
#[derive(Debug, Clone, Copy)]
pub struct AmendLimits {
    pub final_max_bytes: usize,
    pub final_max_lines: usize,
    pub head_max_bytes: usize,
    pub head_max_lines: usize,
    pub delta_max_bytes: usize,
    pub delta_max_lines: usize,
    pub recent_commits: usize,
}

impl Default for AmendLimits {
    fn default() -> Self {
        Self {
            final_max_bytes: 48 * 1024,
            final_max_lines: 1200,
            head_max_bytes: 24 * 1024,
            head_max_lines: 700,
            delta_max_bytes: 24 * 1024,
            delta_max_lines: 700,
            recent_commits: 10,
        }
    }
}

/// The evidence of an amend request, prepared before the first model
/// request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmendContext {
    pub mode: &'static str,
    /// The message being amended: the anchor of the new one.
    pub original_head_message: String,
    pub head: CommitDetails,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub detached: bool,
    pub recent_commits: Vec<CommitInfo>,
    pub final_paths: Vec<String>,
    pub final_stats: Vec<FileStat>,
    pub final_context_pack: ContextPack,
    pub final_diff: String,
    pub final_diff_truncated: bool,
    pub head_paths: Vec<String>,
    pub head_stats: Vec<FileStat>,
    pub head_diff: String,
    pub head_diff_truncated: bool,
    pub staged_paths: Vec<String>,
    pub staged_status: Vec<PathStatus>,
    pub staged_stats: Vec<FileStat>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub staged_submodules: Vec<SubmoduleChange>,
    pub amend_delta: String,
    pub amend_delta_truncated: bool,
}

impl AmendContext {
    /// Reads the amend evidence of `repo`; the three comparisons run on
    /// threads of their own. Nothing staged is fine (the message alone is
    /// rewritten); an unborn HEAD is an error.
    pub fn prepare(repo: &Repository, limits: AmendLimits) -> Result<Self, GitError> {
        let head = repo.head_details()?;
        let detached = repo.head().detached;
        let (amended, commit, staged) = std::thread::scope(|scope| {
            let commit = scope.spawn(|| {
                ScopeEvidence::collect(repo, DiffScope::HeadCommit, limits.head_max_bytes, limits.head_max_lines)
            });
            let staged = scope.spawn(|| {
                ScopeEvidence::collect(repo, DiffScope::Staged, limits.delta_max_bytes, limits.delta_max_lines)
            });
            let amended =
                ScopeEvidence::collect(repo, DiffScope::Amended, limits.final_max_bytes, limits.final_max_lines);
            let stopped = || repo.read_error("HEAD", "a reader stopped");
            let commit = commit.join().map_err(|_| stopped())?;
            let staged = staged.join().map_err(|_| stopped())?;
            Ok::<_, GitError>((amended, commit, staged))
        })?;
        let (amended, commit, staged) = (amended?, commit?, staged?);
        let (final_context_pack, _) = amended.context_pack(repo);
        Ok(Self {
            mode: "amend",
            original_head_message: head.message.clone(),
            head,
            detached,
            recent_commits: repo.recent_commits(limits.recent_commits).unwrap_or_default(),
            final_paths: amended.paths(),
            final_stats: amended.stats(),
            final_context_pack,
            final_diff: amended.diff.text.clone(),
            final_diff_truncated: amended.diff.truncated,
            head_paths: commit.paths(),
            head_stats: commit.stats(),
            head_diff: commit.diff.text.clone(),
            head_diff_truncated: commit.diff.truncated,
            staged_paths: staged.paths(),
            staged_status: staged.statuses(),
            staged_stats: staged.stats(),
            staged_submodules: repo.submodule_changes(&staged.changes),
            amend_delta: staged.diff.text.clone(),
            amend_delta_truncated: staged.diff.truncated,
        })
    }

    /// The subject of the commit being amended.
    pub fn original_subject(&self) -> &str {
        self.original_head_message.lines().next().unwrap_or_default().trim()
    }
}

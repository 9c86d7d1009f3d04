//! Committed history, read through gix, for `pr-message` and
//! `release-note`: revisions and tags resolved and peeled, commit ranges,
//! tree diffs with line statistics and bounded patches, per-commit
//! evidence, submodule gitlink movements and their local history, the
//! origin's web address, and the prepared pull-request context.
//!
//! The repository is opened with isolated options: the daemon's own
//! environment and the user's global Git configuration never change what
//! it reads. It only reads; it never writes to a repository and never runs
//! the `git` executable.

mod chain_cache;
mod diff;
mod evidence;
mod pr;
mod refs;
mod remote;
mod submodule;
mod walk;

/// Test repositories built with the real `git` (also for the daemon's
/// tests, through the `fixture` feature).
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;

pub use diff::{ChangeStatus, FileChange};
pub use evidence::{CommitEvidence, EvidenceLimits};
pub use pr::{PrContext, PrLimits};
pub use refs::{ResolvedRevision, RevisionKind, VersionTag};
pub use remote::{commit_url, compare_url, resolve_submodule_url, web_url};
pub use submodule::{GitlinkMove, SubmoduleHistory};

use gix::hash::ObjectId;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The object cache of each thread that diffs trees: commits and trees of
/// neighbouring commits are read many times in a row.
const OBJECT_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Why history could not be read; every message names the repository or
/// revision involved and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("{}", crate::identity::not_a_work_tree(path))]
    NotARepository { path: PathBuf },
    #[error("cannot open the git repository at {path}: {source}")]
    Open { path: PathBuf, source: Box<gix::Error> },
    #[error(
        "unknown revision {spec:?} in {root}\nhint: check the spelling; fetch missing tags with `git fetch --tags`"
    )]
    UnknownRevision { spec: String, root: PathBuf },
    #[error("revision {spec:?} names a {kind}, not a commit\nhint: pass a tag, branch or commit")]
    NotACommit { spec: String, kind: String },
    #[error("HEAD has no commits yet in {root}\nhint: commit something first")]
    UnbornHead { root: PathBuf },
    #[error(
        "no semantic version tag (vX.Y.Z or X.Y.Z) is reachable from HEAD in {root}\nhint: tag the last release, such as `git tag v0.1.0 <commit>`, or pass the range: git-agent release-note <base> <release>"
    )]
    NoVersionTag { root: PathBuf },
    #[error(
        "the repository at {root} has no origin remote, so there is no origin/HEAD to compare the branch with\nhint: add it with `git remote add origin <url>` and `git fetch origin`"
    )]
    NoOrigin { root: PathBuf },
    #[error(
        "origin/HEAD is not set in {root}\nhint: run `git remote set-head origin --auto` (or `git remote set-head origin <default-branch>`)"
    )]
    NoOriginHead { root: PathBuf },
    #[error(
        "origin/HEAD points to {target}, which does not exist in {root}\nhint: run `git fetch origin` and `git remote set-head origin --auto`"
    )]
    DanglingOriginHead { target: String, root: PathBuf },
    #[error(
        "HEAD ({head}) and {base} share no history in {root}\nhint: check that origin is the repository this branch came from"
    )]
    NoMergeBase { head: String, base: String, root: PathBuf },
    #[error(
        "the current branch has no committed changes against {base}\nhint: commit the work first; pr-message describes committed changes only, not staged or unstaged ones"
    )]
    NoBranchChanges { base: String },
    #[error("cannot read {what} in {root}: {source}")]
    Read { root: PathBuf, what: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("the command was cancelled")]
    Interrupted,
}

/// One commit as logs show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitSummary {
    pub sha: String,
    /// The first line of the message.
    pub summary: String,
    pub author: String,
    /// The author date, RFC 3339 in the author's offset.
    pub date: String,
}

/// A repository opened for reading history.
pub struct History {
    repo: gix::Repository,
    root: PathBuf,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History").field("root", &self.root).finish()
    }
}

impl History {
    /// Opens the repository whose worktree contains `start`.
    pub fn discover(start: &Path) -> Result<Self, HistoryError> {
        let root = crate::identity::find_repository_root(start)
            .ok_or_else(|| HistoryError::NotARepository { path: start.to_path_buf() })?;
        Self::open(&root)
    }

    /// Opens the repository at `path`: a worktree root, or a `.git`
    /// directory such as a submodule's `.git/modules/<name>`.
    pub fn open(path: &Path) -> Result<Self, HistoryError> {
        let options = gix::open::Options::isolated().strict_config(false);
        let mut repo = gix::open_opts(path, options)
            .map_err(|source| HistoryError::Open { path: path.to_path_buf(), source: Box::new(source) })?;
        prepare_handle(&mut repo);
        let root = repo.workdir().unwrap_or_else(|| repo.git_dir()).to_path_buf();
        Ok(Self { repo, root })
    }

    /// The worktree root, or the git directory of a repository without one.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn read_error(
        &self,
        what: impl Into<String>,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> HistoryError {
        HistoryError::Read { root: self.root.clone(), what: what.into(), source: error.into() }
    }

    /// The commit HEAD points to.
    pub fn head(&self) -> Result<ObjectId, HistoryError> {
        match self.repo.head_id() {
            Ok(id) => Ok(id.detach()),
            Err(_) => Err(HistoryError::UnbornHead { root: self.root.clone() }),
        }
    }

    /// The short name of the checked-out branch; `None` when detached.
    pub fn branch(&self) -> Option<String> {
        let name = self.repo.head_name().ok().flatten()?;
        Some(name.shorten().to_string())
    }

    /// The tree of `commit`.
    fn tree_of(&self, commit: ObjectId) -> Result<ObjectId, HistoryError> {
        let commit =
            self.repo.find_commit(commit).map_err(|error| self.read_error(format!("commit {commit}"), error))?;
        commit
            .tree_id()
            .map(|id| id.detach())
            .map_err(|error| self.read_error(format!("the tree of {}", commit.id), error))
    }

    /// The summary of one commit.
    pub fn commit_summary(&self, id: ObjectId) -> Result<CommitSummary, HistoryError> {
        let commit = self.repo.find_commit(id).map_err(|error| self.read_error(format!("commit {id}"), error))?;
        let decoded = commit.decode().map_err(|error| self.read_error(format!("commit {id}"), error))?;
        Ok(summarize(id, &decoded).0)
    }

    /// Whether the object database holds `id`.
    pub fn has_object(&self, id: ObjectId) -> bool {
        self.repo.has_object(id)
    }
}

/// Readies a repository handle for long reads: an object cache, and packs
/// kept mapped while the handle lives, which the delta-base cache needs to
/// map pack offsets back to object ids.
fn prepare_handle(repo: &mut gix::Repository) {
    repo.object_cache_size_if_unset(OBJECT_CACHE_BYTES);
    repo.objects.prevent_pack_unload();
}

/// The summary and the trimmed full message of a decoded commit.
fn summarize(id: ObjectId, commit: &gix::objs::CommitRef<'_>) -> (CommitSummary, String) {
    let message = String::from_utf8_lossy(commit.message).replace("\r\n", "\n").trim().to_string();
    let summary = message.lines().next().unwrap_or_default().trim().to_string();
    let author = commit.author().ok();
    let name = author.map(|author| String::from_utf8_lossy(author.name).trim().to_string()).unwrap_or_default();
    let date = author
        .and_then(|author| author.time().ok())
        .map(|time| time.format_or_unix(gix::date::time::format::ISO8601_STRICT))
        .unwrap_or_default();
    (CommitSummary { sha: id.to_string(), summary, author: name, date }, message)
}

pub use git_agent_shared::interrupt::Interrupt;

/// Stops a long preparation between commits once `interrupt` is raised.
fn check(interrupt: &Interrupt) -> Result<(), HistoryError> {
    if interrupt.is_raised() { Err(HistoryError::Interrupted) } else { Ok(()) }
}

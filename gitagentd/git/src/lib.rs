//! Typed, read-only repository inspection through gix: the only module
//! that knows gix. Its API is blocking; callers run it on
//! `spawn_blocking`. It reads the repository in isolation from the
//! daemon's own environment and global Git configuration.
//!
//! - [`Repository`]: discovery, HEAD, the index, blobs by source.
//! - [`staged`]: what is staged (index versus HEAD), with line stats and
//!   unified patches; [`StagedContext`] is the precomputed evidence of a
//!   commit-message request.
//! - [`history`]: recent commits, HEAD's details, commit ranges.
//! - [`submodule`]: staged gitlink movements and the submodule commits
//!   they move over, when that history is available locally.
//! - [`amend`]: [`AmendContext`], the evidence of an amend request.
//!
//! Detached HEAD, an unborn branch and a root commit (no parent) are
//! ordinary states here: an unborn HEAD and a missing parent read as the
//! empty tree.

pub mod amend;
pub mod contextpack;
pub mod history;
pub mod identity;
pub mod patch;
pub mod range;
pub mod staged;
pub mod submodule;
pub mod version;

pub use amend::{AmendContext, AmendLimits};
pub use history::{CommitDetails, CommitInfo};
pub use staged::{Change, DiffScope, FileStat, HeadState, PathStatus, StagedContext, StagedLimits};
pub use submodule::SubmoduleChange;

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{}", crate::identity::not_a_work_tree(path))]
    NotARepository { path: PathBuf },
    /// gix's message is shown as it is (`{source}`), which ends the
    /// rendered chain there.
    #[error("cannot open the Git repository at {path}: {source}")]
    Open { path: PathBuf, source: Box<gix::Error> },
    #[error("the repository at {path} has no work tree; git-agent needs a checkout")]
    Bare { path: PathBuf },
    #[error("cannot read {what} in {path}: {source}")]
    Read { path: PathBuf, what: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error(
        "nothing to amend: HEAD in {path} has no commit yet\nhint: commit first, e.g. with git-agent commit, then amend"
    )]
    NoHeadCommit { path: PathBuf },
    #[error(
        "cannot resolve revision {rev:?} in {path}: {source}\nhint: name a commit such as HEAD, HEAD~1, a branch, a tag or a commit id"
    )]
    Revision { path: PathBuf, rev: String, source: Box<dyn std::error::Error + Send + Sync> },
}

/// Where a file's content comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSource {
    Worktree,
    Index,
    Head,
}

impl FileSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Worktree => "worktree",
            Self::Index => "index",
            Self::Head => "head",
        }
    }
}

/// What a tracked path is, in the index or a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Regular,
    Executable,
    Symlink,
    /// A submodule commit.
    Gitlink,
}

impl EntryKind {
    fn from_tree_mode(mode: gix::object::tree::EntryMode) -> Option<Self> {
        use gix::object::tree::EntryKind as Kind;
        match mode.kind() {
            Kind::Blob => Some(Self::Regular),
            Kind::BlobExecutable => Some(Self::Executable),
            Kind::Link => Some(Self::Symlink),
            Kind::Commit => Some(Self::Gitlink),
            Kind::Tree => None,
        }
    }

    /// The mode as Git prints it in patches.
    pub fn octal(self) -> &'static str {
        match self {
            Self::Regular => "100644",
            Self::Executable => "100755",
            Self::Symlink => "120000",
            Self::Gitlink => "160000",
        }
    }
}

/// A path's entry: its kind and object id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    pub id: gix::ObjectId,
}

/// HEAD as a summary reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadInfo {
    /// The branch name, when HEAD is on a branch (born or not).
    pub branch: Option<String>,
    /// The commit, when HEAD points at one.
    pub sha: Option<String>,
    pub detached: bool,
}

/// An open repository with a work tree.
#[derive(Clone)]
pub struct Repository {
    repo: gix::ThreadSafeRepository,
    root: PathBuf,
    /// The commit that stands for HEAD in `head_*` reads (a reviewed
    /// commit of `review --commit`); the real HEAD when absent.
    pinned_head: Option<gix::ObjectId>,
    /// The index file the `index_*` reads use instead of the repository's
    /// own (`GIT_INDEX_FILE` of a hook under `git commit -a`).
    index_file: Option<PathBuf>,
}

/// Why `rev` names no commit in `repo`, in words a user can act on: an
/// empty repository and an ancestor beyond a shallow clone's history are
/// said as such; otherwise gix's own reason.
pub fn explain_unresolved(repo: &gix::Repository, rev: &str, error: &dyn std::fmt::Display) -> String {
    unresolved_reason(repo, rev).unwrap_or_else(|| error.to_string())
}

/// gix's error for an unresolved `rev`, or the reason
/// [`explain_unresolved`] gives instead, as a cause.
pub fn unresolved(repo: &gix::Repository, rev: &str, error: gix::Error) -> Box<dyn std::error::Error + Send + Sync> {
    unresolved_reason(repo, rev).map_or_else(|| Box::new(error) as _, Into::into)
}

/// The reason [`explain_unresolved`] gives instead of gix's, if any.
fn unresolved_reason(repo: &gix::Repository, rev: &str) -> Option<String> {
    if repo.head().is_ok_and(|head| head.is_unborn()) {
        return Some("the repository has no commit yet".to_string());
    }
    if repo.is_shallow().unwrap_or(false) && rev.contains(['~', '^']) {
        return Some(format!(
            "{rev} reaches past the history of this shallow clone (git fetch --deepen=<n> or --unshallow brings more)"
        ));
    }
    None
}

/// The index a read sees: the repository's own (shared snapshot) or a
/// chosen index file.
enum IndexView {
    Repository(gix::worktree::Index),
    Chosen(Box<gix::index::File>),
}

impl std::ops::Deref for IndexView {
    type Target = gix::index::File;

    fn deref(&self) -> &gix::index::File {
        match self {
            Self::Repository(index) => index,
            Self::Chosen(file) => file,
        }
    }
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository").field("root", &self.root).finish()
    }
}

impl Repository {
    /// Finds the repository containing `start` (its work tree or a
    /// subdirectory).
    pub fn discover(start: &Path) -> Result<Self, GitError> {
        let options = gix::open::Options::isolated().strict_config(false);
        let trust = gix::sec::trust::Mapping { full: options.clone(), reduced: options };
        if crate::identity::find_repository_root(start).is_none() {
            return Err(GitError::NotARepository { path: start.to_path_buf() });
        }
        let repo = gix::ThreadSafeRepository::discover_opts(start, Default::default(), trust)
            .map_err(|source| GitError::Open { path: start.to_path_buf(), source: Box::new(source) })?;
        let root =
            repo.work_dir().map(Path::to_path_buf).ok_or_else(|| GitError::Bare { path: start.to_path_buf() })?;
        let root = root.canonicalize().unwrap_or(root);
        Ok(Self { repo, root, pinned_head: None, index_file: None })
    }

    /// The top of the work tree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This repository with `commit` read as HEAD by the `head_*` reads.
    pub fn with_pinned_head(mut self, commit: gix::ObjectId) -> Self {
        self.pinned_head = Some(commit);
        self
    }

    /// This repository with `path` read as its index by the `index_*`
    /// reads: git's temporary index of `git commit -a` or `git commit
    /// <paths>`, which it names to hooks in `GIT_INDEX_FILE`.
    pub fn with_index_file(mut self, path: PathBuf) -> Self {
        self.index_file = Some(path);
        self
    }

    /// The index the `index_*` reads see: the chosen index file, else the
    /// repository's (empty when it has none).
    fn index(&self, repo: &gix::Repository) -> Result<IndexView, GitError> {
        match &self.index_file {
            Some(path) => gix::index::File::at(path, repo.object_hash(), false, Default::default())
                .map(|file| IndexView::Chosen(Box::new(file)))
                .map_err(|error| self.read_error(format!("the index file {}", path.display()), error)),
            None => {
                Ok(IndexView::Repository(repo.index_or_empty().map_err(|error| self.read_error("the index", error))?))
            }
        }
    }

    /// HEAD's commit (or the pinned one), when there is one.
    fn head_commit<'r>(&self, repo: &'r gix::Repository) -> Option<gix::Commit<'r>> {
        match self.pinned_head {
            Some(id) => repo.find_commit(id).ok(),
            None => repo.head_commit().ok(),
        }
    }

    fn local(&self) -> gix::Repository {
        self.repo.to_thread_local()
    }

    fn read_error(
        &self,
        what: impl Into<String>,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> GitError {
        GitError::Read { path: self.root.clone(), what: what.into(), source: error.into() }
    }

    pub fn head(&self) -> HeadInfo {
        let repo = self.local();
        let branch = repo.head_name().ok().flatten().map(|name| name.shorten().to_string());
        let sha = repo.head_id().ok().map(|id| id.to_string());
        let detached = repo.head().map(|head| head.is_detached()).unwrap_or(false);
        HeadInfo { branch, sha, detached }
    }

    /// Remote names and their URLs, credentials removed.
    pub fn remotes(&self) -> Vec<(String, Vec<String>)> {
        let repo = self.local();
        let config = repo.config_snapshot();
        let mut remotes = Vec::new();
        for name in repo.remote_names() {
            let key = format!("remote.{name}.url");
            let urls = config
                .strings(key.as_str())
                .unwrap_or_default()
                .iter()
                .map(|url| git_agent_shared::giturl::sanitize(&url.to_string()))
                .collect();
            remotes.push((name.to_string(), urls));
        }
        remotes
    }

    /// Every stage-0 entry of the index, by path.
    pub fn index_entries(&self) -> Result<Vec<(String, Entry)>, GitError> {
        let repo = self.local();
        let index = self.index(&repo)?;
        let mut entries = Vec::with_capacity(index.entries().len());
        for entry in index.entries() {
            if entry.stage() != gix::index::entry::Stage::Unconflicted
                || entry.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD)
            {
                continue;
            }
            let Some(kind) = entry.mode.to_tree_entry_mode().and_then(EntryKind::from_tree_mode) else { continue };
            // A name that is not UTF-8 is shown as git shows it.
            let path = git_agent_shared::quote::utf8_or_quoted(entry.path(&index)).into_owned();
            entries.push((path, Entry { kind, id: entry.id }));
        }
        Ok(entries)
    }

    /// Every non-tree entry of HEAD's tree, by path; empty when HEAD is
    /// unborn.
    pub fn head_entries(&self) -> Result<Vec<(String, Entry)>, GitError> {
        let repo = self.local();
        if let Some(commit) = self.pinned_head {
            return self.commit_entries(&repo, commit);
        }
        match repo.head_commit() {
            Ok(commit) => self.commit_entries(&repo, commit.id),
            Err(_) if repo.head().map(|head| head.is_unborn()).unwrap_or(false) => Ok(Vec::new()),
            Err(error) => Err(self.read_error("HEAD", error)),
        }
    }

    /// Every non-tree entry of HEAD's first parent, by path; empty when
    /// HEAD is unborn or a root commit.
    pub fn head_parent_entries(&self) -> Result<Vec<(String, Entry)>, GitError> {
        let repo = self.local();
        let Some(commit) = self.head_commit(&repo) else { return Ok(Vec::new()) };
        match commit.parent_ids().next() {
            Some(parent) => self.commit_entries(&repo, parent.detach()),
            None => Ok(Vec::new()),
        }
    }

    /// Every non-tree entry of the tree of `commit`, by path.
    fn commit_entries(&self, repo: &gix::Repository, commit: gix::ObjectId) -> Result<Vec<(String, Entry)>, GitError> {
        let what = || format!("the tree of commit {commit}");
        let commit = repo.find_commit(commit).map_err(|error| self.read_error(what(), error))?;
        let tree = commit.tree().map_err(|error| self.read_error(what(), error))?;
        let records = tree.traverse().breadthfirst.files().map_err(|error| self.read_error(what(), error))?;
        Ok(records
            .into_iter()
            .filter_map(|record| {
                let kind = EntryKind::from_tree_mode(record.mode)?;
                Some((
                    git_agent_shared::quote::utf8_or_quoted(&record.filepath).into_owned(),
                    Entry { kind, id: record.oid },
                ))
            })
            .collect())
    }

    /// The content of `path` in the commit `rev` names (`HEAD`, `HEAD~1`,
    /// a branch, a tag, an id); `None` when the commit has no such file.
    /// A symlink is no file here: its blob is the link's target, which
    /// may name a place outside the repository.
    pub fn file_at_revision(&self, rev: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let repo = self.local();
        let revision_error = |source: Box<dyn std::error::Error + Send + Sync>| GitError::Revision {
            path: self.root.clone(),
            rev: rev.to_string(),
            source,
        };
        let id = repo.rev_parse_single(rev).map_err(|error| revision_error(unresolved(&repo, rev, error)))?;
        let object = id.object().map_err(|error| revision_error(error.into()))?;
        let tree = object.peel_to_tree().map_err(|error| revision_error(error.into()))?;
        let entry = tree
            .lookup_entry_by_path(git_agent_shared::quote::key_path(path))
            .map_err(|error| self.read_error(format!("{path} at {rev}"), error))?;
        match entry {
            Some(entry) if entry.mode().is_blob() => self.blob(entry.object_id()).map(Some),
            _ => Ok(None),
        }
    }

    /// The bytes of a blob.
    pub fn blob(&self, id: gix::ObjectId) -> Result<Vec<u8>, GitError> {
        self.blob_in(&self.local(), id)
    }

    /// The bytes of a blob through an already open handle, for loops over
    /// many blobs.
    fn blob_in(&self, repo: &gix::Repository, id: gix::ObjectId) -> Result<Vec<u8>, GitError> {
        let object = repo.find_object(id).map_err(|error| self.read_error(format!("object {id}"), error))?;
        Ok(object.detach().data)
    }

    /// The content of `path` (repository-relative, `/`-separated) in the
    /// index or HEAD; `None` when it is not there. Gitlinks have no
    /// content to read.
    pub fn tracked_content(&self, source: FileSource, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let entry = match source {
            FileSource::Worktree => return Ok(None),
            FileSource::Index => self.index_entry(path)?,
            FileSource::Head => self.head_entry(path)?,
        };
        match entry {
            Some(entry) if entry.kind != EntryKind::Gitlink => self.blob(entry.id).map(Some),
            _ => Ok(None),
        }
    }

    /// The index entry of `path`, if staged.
    pub fn index_entry(&self, path: &str) -> Result<Option<Entry>, GitError> {
        let repo = self.local();
        let index = self.index(&repo)?;
        let bytes = git_agent_shared::quote::key_bytes(path);
        let entry = index.entry_by_path_and_stage(bytes.as_ref().into(), gix::index::entry::Stage::Unconflicted);
        Ok(entry.and_then(|entry| {
            let kind = entry.mode.to_tree_entry_mode().and_then(EntryKind::from_tree_mode)?;
            Some(Entry { kind, id: entry.id })
        }))
    }

    /// The entry of `path` in HEAD's tree, if there.
    pub fn head_entry(&self, path: &str) -> Result<Option<Entry>, GitError> {
        let repo = self.local();
        let Some(commit) = self.head_commit(&repo) else { return Ok(None) };
        let tree = commit.tree().map_err(|error| self.read_error("the HEAD tree", error))?;
        let entry = tree
            .lookup_entry_by_path(git_agent_shared::quote::key_path(path))
            .map_err(|error| self.read_error(format!("{path} in HEAD"), error))?;
        Ok(entry
            .and_then(|entry| Some(Entry { kind: EntryKind::from_tree_mode(entry.mode())?, id: entry.object_id() })))
    }
}

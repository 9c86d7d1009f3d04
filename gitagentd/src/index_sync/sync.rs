//! One round trip with `index.remote`: take the sync repository lock,
//! fetch, stage the remote tip, apply this machine's additions, commit
//! once, push once; on a non-fast-forward rejection fetch again and replay
//! the same additions on the new tip.

use super::manifest::{SyncRecord, Target};
use super::repo::{self, PushOutcome, SyncError, SyncRepo};
use crate::search::remote::Remote;
use crate::search::store;
use git_agent_shared::Environment;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use tokio_util::sync::CancellationToken;

/// How many times a rejected push is replayed on a newer remote tip.
pub const PUSH_ATTEMPTS: usize = 8;
const COMMIT_MESSAGE: &str = "git-agent: sync search indexes";

/// One index to publish.
#[derive(Debug, Clone)]
pub struct Export {
    pub target: Target,
    pub records: Vec<SyncRecord>,
}

/// What a publication did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    /// Indexes exported.
    pub indexes: usize,
    /// Records of the exported indexes.
    pub records: usize,
    /// Indexes that could not be exported.
    pub skipped: usize,
    /// Whether a commit was pushed (false: the remote already had everything).
    pub pushed: bool,
}

/// The sync repository of one `index.remote` for one invocation.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub remote: Remote,
    pub dir: PathBuf,
    pub env: Environment,
}

impl Endpoint {
    /// The endpoint of `url` below `metadata_root` (`~/.git-agent`).
    pub fn new(url: &str, metadata_root: &std::path::Path, env: &Environment) -> Result<Self, SyncError> {
        let remote = Remote::new(url, std::path::Path::new("/"), metadata_root, env).map_err(|error| {
            SyncError::Fetch { remote: git_agent_shared::giturl::sanitize(url), message: error.to_string() }
        })?;
        let dir = repo::sync_dir(metadata_root, remote.raw_url());
        Ok(Self { remote, dir, env: env.clone() })
    }

    fn lock_path(&self) -> PathBuf {
        store::lock_path(&self.dir)
    }

    /// Takes the sync repository lock (one user per machine at a time).
    pub(crate) async fn lock(&self, cancel: &CancellationToken) -> Result<store::FileLock, SyncError> {
        let path = self.lock_path();
        let token = cancel.clone();
        crate::blocking::run_to_end("the index sync lock", move || {
            store::lock_blocking(&path, &|| token.is_cancelled())
        })
        .await
        .map_err(|_| SyncError::Cancelled)?
        .map_err(|error| match error {
            store::StoreError::Cancelled => SyncError::Cancelled,
            other => SyncError::Io { dir: self.dir.clone(), source: std::io::Error::other(other.to_string()) },
        })
    }

    /// Reads the remote's records of `target` (fetching first).
    pub async fn import(
        &self,
        target: Target,
        cancel: &CancellationToken,
    ) -> Result<Option<Vec<SyncRecord>>, SyncError> {
        let _lock = self.lock(cancel).await?;
        let endpoint = self.clone();
        let interrupt = interrupt_on(cancel);
        let flag = Arc::clone(&interrupt.flag);
        crate::blocking::run_to_end("the index sync repository", move || {
            let repo = SyncRepo::open(endpoint.remote.clone(), endpoint.dir.clone())?;
            let tip = repo.fetch(&flag)?;
            repo.stage(&tip)?.import(&target)
        })
        .await
        .map_err(|_| SyncError::Cancelled)?
    }

    /// Publishes `exports` with at most one commit and one successful push.
    pub async fn publish(&self, exports: Vec<Export>, cancel: &CancellationToken) -> Result<Published, SyncError> {
        self.publish_from(Arc::new(exports), Arc::new(|_| {}), cancel).await
    }

    /// Publishes what `source` lists, reporting each phase to `progress`.
    /// A rejected push replays the whole source on the new remote tip.
    pub async fn publish_from(
        &self,
        source: Arc<dyn ExportSource>,
        progress: Arc<dyn Fn(Phase) + Send + Sync>,
        cancel: &CancellationToken,
    ) -> Result<Published, SyncError> {
        let _lock = self.lock(cancel).await?;
        for _ in 0..PUSH_ATTEMPTS {
            let endpoint = self.clone();
            let source = Arc::clone(&source);
            let report = Arc::clone(&progress);
            let interrupt = interrupt_on(cancel);
            let flag = Arc::clone(&interrupt.flag);
            let staged = crate::blocking::run_to_end("the index sync repository", move || {
                report(Phase::Fetching);
                let repo = SyncRepo::open(endpoint.remote.clone(), endpoint.dir.clone())?;
                let tip = repo.fetch(&flag)?;
                let mut staged = repo.stage(&tip)?;
                report(Phase::Scanning);
                let total = source.count();
                let mut published = Published::default();
                for index in 0..total {
                    if flag.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(SyncError::Cancelled);
                    }
                    match source.load(index) {
                        Some(export) => {
                            staged.export(&export.target, export.records.clone())?;
                            published.indexes += 1;
                            published.records += export.records.len();
                        }
                        None => published.skipped += 1,
                    }
                    report(Phase::Syncing { done: index + 1, total });
                }
                let branch = staged.branch().to_string();
                let commit = staged.commit(COMMIT_MESSAGE)?;
                Ok::<_, SyncError>((branch, commit, published))
            })
            .await
            .map_err(|_| SyncError::Cancelled)??;
            drop(interrupt);
            let (branch, commit, mut published) = staged;
            let Some(commit) = commit else {
                return Ok(published);
            };
            progress(Phase::Pushing);
            match self.push_commit(branch, commit, cancel).await? {
                PushOutcome::Pushed => {
                    published.pushed = true;
                    return Ok(published);
                }
                PushOutcome::Rejected => continue,
            }
        }
        Err(SyncError::Contended { remote: self.remote.sanitized.clone(), attempts: PUSH_ATTEMPTS })
    }

    /// Pushes `commit` (built on the fetched tip of `branch`) and, when the
    /// remote accepts it, records it as the new tracking tip. A rejection
    /// means another machine pushed first: the caller refetches and replans.
    pub(crate) async fn push_commit(
        &self,
        branch: String,
        commit: gix::ObjectId,
        cancel: &CancellationToken,
    ) -> Result<PushOutcome, SyncError> {
        let outcome = repo::push(&self.dir, &self.remote, &self.env, &branch, commit, cancel).await?;
        if outcome == PushOutcome::Pushed {
            let endpoint = self.clone();
            crate::blocking::run_to_end("the index sync repository", move || {
                SyncRepo::open(endpoint.remote.clone(), endpoint.dir.clone())?.pushed(&branch, commit)
            })
            .await
            .map_err(|_| SyncError::Cancelled)??;
        }
        Ok(outcome)
    }
}

/// Where a publication's indexes come from; read again on every replay.
pub trait ExportSource: Send + Sync + 'static {
    /// How many indexes the source lists.
    fn count(&self) -> usize;
    /// The index at `index`, or `None` when it cannot be exported now
    /// (corrupt, incomplete, incompatible): it is counted as skipped.
    fn load(&self, index: usize) -> Option<Export>;
}

impl ExportSource for Vec<Export> {
    fn count(&self) -> usize {
        self.len()
    }

    fn load(&self, index: usize) -> Option<Export> {
        self.get(index).cloned()
    }
}

/// The phases progress reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Fetching,
    Scanning,
    Syncing { done: usize, total: usize },
    Pushing,
}

/// An interrupt flag for gix that follows `cancel` while it lives.
pub(crate) struct Interrupt {
    pub(crate) flag: Arc<AtomicBool>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

pub(crate) fn interrupt_on(cancel: &CancellationToken) -> Interrupt {
    let flag = Arc::new(AtomicBool::new(cancel.is_cancelled()));
    let watched = Arc::clone(&flag);
    let token = cancel.clone();
    let watcher = tokio::spawn(async move {
        token.cancelled().await;
        watched.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    Interrupt { flag, watcher }
}

#[cfg(test)]
#[path = "sync_tests.rs"]
pub(crate) mod tests;

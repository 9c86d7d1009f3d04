//! One round trip with `index.remote`: take the sync repository lock,
//! fetch, stage the remote tip, apply this machine's additions, commit
//! once, push once; on a non-fast-forward rejection fetch again and replay
//! the same additions on the new tip.

use super::manifest::{SyncRecord, Target};
use super::repo::{self, PushOutcome, RemoteTip, SyncError, SyncRepo};
use git_agent_shared::Environment;
use gitagent_search::index::store;
use gitagent_search::source::remote::Remote;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;
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
    /// Indexes that could not be exported, each with why.
    pub skipped: Vec<Skipped>,
    /// Whether a commit was pushed (false: the remote already had everything).
    pub pushed: bool,
}

/// The sync repository of one `index.remote` for one invocation.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub remote: Remote,
    pub dir: PathBuf,
    pub env: Environment,
    /// When the invocation began: a remote observation that completed
    /// after it may stand in for this invocation's own fetch (`None`:
    /// always fetch).
    pub since: Option<Instant>,
    /// Test-only fault injection (`sync-push`: stop between commit and push).
    pub crash_at: Option<store::CrashPoint>,
}

/// A successful confirmation: when its view of the remote was taken and
/// the tip it saw (or pushed).
#[derive(Debug, Clone)]
struct Observation {
    completed: Instant,
    tip: RemoteTip,
}

/// The latest successful observation of each sync repository in this
/// daemon. Only a confirmation that succeeded is recorded, so a failed one
/// is never reused.
static OBSERVATIONS: Mutex<BTreeMap<PathBuf, Observation>> = Mutex::new(BTreeMap::new());

impl Endpoint {
    /// The endpoint of `url` below `metadata_root` (`~/.git-agent`).
    pub fn new(url: &str, metadata_root: &std::path::Path, env: &Environment) -> Result<Self, SyncError> {
        let remote = Remote::new(url, std::path::Path::new("/"), metadata_root, env).map_err(|error| {
            SyncError::Fetch { remote: git_agent_shared::giturl::sanitize(url), message: error.to_string() }
        })?;
        let dir = repo::sync_dir(metadata_root, remote.raw_url());
        Ok(Self { remote, dir, env: env.clone(), since: None, crash_at: None })
    }

    /// This endpoint for an invocation that began at `started`: it reuses a
    /// confirmation that completed after that (the spec's overlapping
    /// searches), never an earlier one (sequential searches).
    pub fn reusing_since(self, started: Instant) -> Self {
        Self { since: Some(started), ..self }
    }

    /// The tip of a successful observation that completed after this
    /// invocation began.
    fn reusable(&self) -> Option<RemoteTip> {
        let since = self.since?;
        let observations = OBSERVATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        observations.get(&self.dir).filter(|seen| seen.completed > since).map(|seen| seen.tip.clone())
    }

    /// Records a successful observation (the newest one wins).
    fn observed(&self, completed: Instant, tip: RemoteTip) {
        let mut observations = OBSERVATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let newer = observations.get(&self.dir).is_none_or(|seen| seen.completed < completed);
        if newer {
            observations.insert(self.dir.clone(), Observation { completed, tip });
        }
    }

    fn lock_path(&self) -> PathBuf {
        store::lock_path(&self.dir)
    }

    /// Takes the sync repository lock (one user per machine at a time).
    pub async fn lock(&self, cancel: &CancellationToken) -> Result<store::FileLock, SyncError> {
        let path = self.lock_path();
        let token = cancel.clone();
        gitagent_runtime::blocking::run_to_end("the index sync lock", move || {
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
        // A commit a stopped run made but never pushed goes first (pull
        // with rebase semantics), before this search reads the remote.
        let endpoint = self.clone();
        let pending = gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
            SyncRepo::open(endpoint.remote.clone(), endpoint.dir.clone())?.pending()
        })
        .await
        .map_err(|_| SyncError::Cancelled)??;
        if pending.is_some() {
            self.publish_locked(Arc::new(Vec::<Export>::new()), Arc::new(|_| {}), cancel).await?;
        }
        let endpoint = self.clone();
        let reused = self.reusable();
        let interrupt = interrupt_on(cancel);
        let flag = Arc::clone(&interrupt.flag);
        let (records, observation) = gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
            let repo = SyncRepo::open(endpoint.remote.clone(), endpoint.dir.clone())?;
            let (tip, observation) = match reused {
                Some(tip) => (tip, None),
                None => {
                    let tip = repo.fetch(&flag)?;
                    (tip.clone(), Some(Observation { completed: Instant::now(), tip }))
                }
            };
            let records = repo.stage(&tip)?.import(&target)?;
            Ok::<_, SyncError>((records, observation))
        })
        .await
        .map_err(|_| SyncError::Cancelled)??;
        if let Some(observation) = observation {
            self.observed(observation.completed, observation.tip);
        }
        Ok(records)
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
        self.publish_locked(source, progress, cancel).await
    }

    /// [`Self::publish_from`] with the sync repository lock held. A pending
    /// commit of a stopped run is replayed into the same commit.
    async fn publish_locked(
        &self,
        source: Arc<dyn ExportSource>,
        progress: Arc<dyn Fn(Phase) + Send + Sync>,
        cancel: &CancellationToken,
    ) -> Result<Published, SyncError> {
        // Only the first attempt may start from a reused observation; a
        // rejected push always fetches again.
        let mut reused = self.reusable();
        for _ in 0..PUSH_ATTEMPTS {
            let reused = reused.take();
            let endpoint = self.clone();
            let source = Arc::clone(&source);
            let report = Arc::clone(&progress);
            let transfer = phase_transfer(&progress, Phase::Transfer);
            let fetch_transfer = Arc::clone(&transfer);
            let interrupt = interrupt_on(cancel);
            let flag = Arc::clone(&interrupt.flag);
            let staged = gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
                let repo = SyncRepo::open(endpoint.remote.clone(), endpoint.dir.clone())?;
                let (tip, observed_at) = match reused {
                    Some(tip) => (tip, None),
                    None => {
                        report(Phase::Fetching);
                        let tip = repo.fetch_reporting(&flag, &TransferReport(fetch_transfer))?;
                        (tip, Some(Instant::now()))
                    }
                };
                let mut staged = repo.stage(&tip)?;
                if let Some(pending) = repo.pending()? {
                    for (target, records) in repo.pending_exports(&tip.branch, pending)? {
                        staged.export(&target, records)?;
                    }
                }
                report(Phase::Scanning);
                let total = source.count();
                let mut published = Published::default();
                for index in 0..total {
                    if flag.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(SyncError::Cancelled);
                    }
                    match source.load(index) {
                        Ok(export) => {
                            staged.export(&export.target, export.records.clone())?;
                            published.indexes += 1;
                            published.records += export.records.len();
                        }
                        Err(skipped) => published.skipped.push(skipped),
                    }
                    report(Phase::Syncing { done: index + 1, total });
                }
                let branch = staged.branch().to_string();
                let commit = staged.commit(COMMIT_MESSAGE)?;
                if commit.is_none() {
                    // The remote already holds whatever was pending.
                    repo.clear_pending()?;
                }
                Ok::<_, SyncError>((tip, observed_at, branch, commit, published))
            })
            .await
            .map_err(|_| SyncError::Cancelled)??;
            drop(interrupt);
            let (tip, observed_at, branch, commit, mut published) = staged;
            let Some(commit) = commit else {
                if let Some(completed) = observed_at {
                    self.observed(completed, tip);
                }
                return Ok(published);
            };
            store::crash_if(self.crash_at, store::CrashPoint::SyncPush);
            progress(Phase::Pushing);
            let pushed_branch = branch.clone();
            match self.push_commit(branch, commit, transfer, cancel).await? {
                PushOutcome::Pushed => {
                    self.observed(Instant::now(), RemoteTip { branch: pushed_branch, commit: Some(commit) });
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
    /// The push's transport progress goes to `transfer`.
    pub async fn push_commit(
        &self,
        branch: String,
        commit: gix::ObjectId,
        transfer: repo::TransferObserver,
        cancel: &CancellationToken,
    ) -> Result<PushOutcome, SyncError> {
        let outcome =
            repo::push_reporting(&self.dir, &self.remote, &self.env, &branch, commit, transfer, cancel).await?;
        if outcome == PushOutcome::Pushed {
            let endpoint = self.clone();
            gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
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
    /// The index at `index`, or why it cannot be exported now (corrupt,
    /// incomplete, incompatible): it is counted as skipped.
    fn load(&self, index: usize) -> Result<Export, Skipped>;
}

/// An index `index sync` passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub index_dir: std::path::PathBuf,
    pub reason: String,
}

impl ExportSource for Vec<Export> {
    fn count(&self) -> usize {
        self.len()
    }

    fn load(&self, index: usize) -> Result<Export, Skipped> {
        self.get(index)
            .cloned()
            .ok_or_else(|| Skipped { index_dir: Default::default(), reason: format!("no export number {index}") })
    }
}

/// The phases progress reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Fetching,
    Scanning,
    Syncing {
        done: usize,
        total: usize,
    },
    Pushing,
    /// Transport progress of the fetch or push under way (the phase
    /// reported last), its URL sanitized: shown as a bracketed suffix.
    Transfer(String),
}

/// A fetch's sanitized transfer totals handed to the observer a push
/// reports to, so that sync, migrate and gc's shared phase report both
/// transfers the same way (as their phase's bracketed suffix).
pub struct TransferReport(pub repo::TransferObserver);

impl gitagent_search::source::remote::FetchReporter for TransferReport {
    fn fetching(&self, detail: &str) {
        (self.0)(detail.to_string());
    }
}

/// The observer of a fetch's or push's transport details that reports each
/// one to `progress` as the phase `transfer` makes of it.
pub fn phase_transfer<P: 'static>(
    progress: &Arc<dyn Fn(P) + Send + Sync>,
    transfer: fn(String) -> P,
) -> repo::TransferObserver {
    let progress = Arc::clone(progress);
    Arc::new(move |detail| progress(transfer(detail)))
}

/// An interrupt flag for gix that follows `cancel` while it lives.
pub struct Interrupt {
    pub flag: Arc<AtomicBool>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

pub fn interrupt_on(cancel: &CancellationToken) -> Interrupt {
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
pub mod tests;

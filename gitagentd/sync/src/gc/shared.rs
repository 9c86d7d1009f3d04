//! GC-005: the optional shared cleanup of the `index.remote` repository.
//!
//! Under the sync repository lock, GC fetches the authoritative tip,
//! validates the complete schema-v2 tree strictly (every pack under its
//! content address, every manifest resolved through its packs; see
//! [`validate::validate_v2`]), and removes only the current-tree packs no
//! manifest refers to. The result is validated again, committed once on the
//! fetched tip and pushed. A non-fast-forward rejection discards the plan:
//! the new tip is fetched and reachability computed again from it, so a
//! pack another machine started to use in between is never removed, and
//! the summary describes the base and tree of the push that was accepted.
//!
//! A dry run plans in a disposable repository, so neither the persistent
//! sync repository nor the remote changes. Only the current tree changes:
//! no history is rewritten and no Git object is pruned.

use crate::FormatError;
use crate::migrate::disposable_dir;
use crate::repo::{PushOutcome, RemoteTip, Staged, SyncError, SyncRepo};
use crate::schema::SchemaVersion;
use crate::sync::{Endpoint, PUSH_ATTEMPTS, TransferReport, interrupt_on, phase_transfer};
use crate::validate;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const CLEANUP_MESSAGE: &str = "git-agent: prune unreferenced vector packs";

/// The remote counts of the summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedSummary {
    pub removed_packs: u64,
    pub current_bytes: u64,
    pub projected_bytes: u64,
}

/// The phases of the shared cleanup progress reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedPhase {
    Fetching,
    Scanning,
    Pruning,
    Pushing,
    /// Transport progress of the fetch or push under way, its URL
    /// sanitized: shown as a bracketed suffix, as `index sync` shows it.
    Transfer(String),
}

/// Why the shared cleanup failed.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("index gc: {0}")]
    Sync(#[from] SyncError),
    #[error(
        "index gc: the index.remote repository has schema v{0}; shared cleanup needs schema v2\nhint: git-agent index migrate --to v2"
    )]
    NotV2(u64),
    #[error(transparent)]
    Lock(#[from] Box<super::GcError>),
}

impl From<FormatError> for SharedError {
    fn from(error: FormatError) -> Self {
        Self::Sync(error.into())
    }
}

pub type Progress = Arc<dyn Fn(SharedPhase) + Send + Sync>;
/// Tests only: runs after each plan, before anything is pushed (the
/// attempt number is passed), as another machine's concurrent push would.
pub type AfterPlan = Arc<dyn Fn(usize) + Send + Sync>;

/// Runs the shared cleanup of `endpoint`'s repository.
pub async fn run_shared(
    endpoint: &Endpoint,
    dry_run: bool,
    progress: Progress,
    cancel: &CancellationToken,
    after_plan: Option<AfterPlan>,
) -> Result<SharedSummary, SharedError> {
    if dry_run {
        let remote = endpoint.remote.clone();
        let lock_path = gitagent_search::index::store::lock_path(&endpoint.dir);
        let interrupt = interrupt_on(cancel);
        let flag = Arc::clone(&interrupt.flag);
        let transfer = phase_transfer(&progress, SharedPhase::Transfer);
        return gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
            // The same lock as a normal run, but never a new lock file.
            let cancelled = || flag.load(std::sync::atomic::Ordering::Relaxed);
            let _lock = super::take_lock(&lock_path, true, &cancelled).map_err(Box::new)?;
            let scratch = disposable_dir()?;
            progress(SharedPhase::Fetching);
            let repo = SyncRepo::open(remote, scratch.path().join("repo"))?;
            let tip = repo.fetch_reporting(&flag, &TransferReport(transfer))?;
            let (summary, _) = plan(&repo, &tip, true, progress.as_ref())?;
            Ok(summary)
        })
        .await
        .map_err(|_| SyncError::Cancelled)?;
    }
    let _lock = endpoint.lock(cancel).await?;
    for attempt in 0..PUSH_ATTEMPTS {
        let repo_endpoint = endpoint.clone();
        let report = Arc::clone(&progress);
        let hook = after_plan.clone();
        let transfer = phase_transfer(&progress, SharedPhase::Transfer);
        let fetch_transfer = Arc::clone(&transfer);
        let interrupt = interrupt_on(cancel);
        let flag = Arc::clone(&interrupt.flag);
        let planned = gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
            report(SharedPhase::Fetching);
            let repo = SyncRepo::open(repo_endpoint.remote.clone(), repo_endpoint.dir.clone())?;
            let tip = repo.fetch_reporting(&flag, &TransferReport(fetch_transfer))?;
            let (summary, commit) = plan(&repo, &tip, false, report.as_ref())?;
            if let Some(hook) = hook {
                hook(attempt);
            }
            Ok::<_, SharedError>((tip.branch, summary, commit))
        })
        .await
        .map_err(|_| SyncError::Cancelled)??;
        drop(interrupt);
        let (branch, summary, commit) = planned;
        let Some(commit) = commit else {
            return Ok(summary);
        };
        progress(SharedPhase::Pushing);
        match endpoint.push_commit(branch, commit, transfer, cancel).await? {
            PushOutcome::Pushed => return Ok(summary),
            PushOutcome::Rejected => continue,
        }
    }
    Err(SyncError::Contended { remote: endpoint.remote.sanitized.clone(), attempts: PUSH_ATTEMPTS }.into())
}

/// Plans (and outside dry runs commits) the cleanup of `tip`'s tree.
fn plan(
    repo: &SyncRepo,
    tip: &RemoteTip,
    dry_run: bool,
    progress: &(dyn Fn(SharedPhase) + Send + Sync),
) -> Result<(SharedSummary, Option<gix::ObjectId>), SharedError> {
    let (files, schema) = repo.files_and_schema(tip.commit)?;
    // A new remote is a schema-v1 repository.
    let schema = schema.unwrap_or(SchemaVersion::V1);
    if schema != SchemaVersion::V2 {
        return Err(SharedError::NotV2(schema.number()));
    }
    progress(SharedPhase::Scanning);
    // Strict v2 rules: v1 manifests (a mixed tree) and unrelated paths fail.
    let mut staged = Staged::from_files(repo, tip, SchemaVersion::V2, files)?;
    let report = validate::validate_v2(&mut staged)?;
    let removals = report.unreferenced();
    progress(SharedPhase::Pruning);
    let removed_bytes: u64 = removals.iter().map(|(_, size)| size).sum();
    let summary = SharedSummary {
        removed_packs: removals.len() as u64,
        current_bytes: report.bytes,
        projected_bytes: report.bytes - removed_bytes,
    };
    if removals.is_empty() {
        return Ok((summary, None));
    }
    for (path, _) in &removals {
        staged.remove(path);
    }
    let after = validate::validate_v2(&mut staged)?;
    if after.bytes != summary.projected_bytes || !after.unreferenced().is_empty() {
        return Err(FormatError::Pack {
            name: "packs/".into(),
            reason: "the pruned tree does not validate as planned".into(),
        }
        .into());
    }
    if dry_run {
        return Ok((summary, None));
    }
    Ok((summary, staged.commit(CLEANUP_MESSAGE)?))
}

#[cfg(test)]
#[path = "shared_tests.rs"]
mod tests;

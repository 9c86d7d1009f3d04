//! `git-agent index migrate --to v2 [--dry-run]`: the explicit transition
//! of the sync repository from schema v1 (per-revision JSON snapshots) to
//! schema v2 (content-addressed packs plus manifests).
//!
//! The migration is planned on the fetched remote tip, as every sync
//! writer plans, and reuses the writers of normal sync: each v1 snapshot is
//! strictly decoded (its metadata must derive its path) and exported into a
//! staged schema-v2 tree through [`Staged::export`], which builds the packs
//! and manifests and merges with what the tree already holds. The complete
//! result is then revalidated ([`validate::validate_v2`]) before it is
//! committed once and pushed; a non-fast-forward rejection refetches and
//! plans again from the new tip.
//!
//! A schema-v2 tree that still holds 16-character v1 manifests is an
//! interrupted or mixed migration; only this command accepts it
//! ([`TreeRules::MixedMigration`]) and repairs it: the v1 records are merged
//! into v2 packs and manifests and every v1 path is removed. Anything else a
//! strict v2 tree does not allow still fails. A v2 tree without v1
//! manifests is a successful no-op.
//!
//! A run stopped after its local commit but before its push leaves that
//! commit pending in the sync repository: the migration reads it beside
//! the fetched tip (its v1 snapshots are recovered, its v2 indexes merged),
//! so the push that clears it loses nothing.
//!
//! A dry run fetches into a disposable repository in temporary storage and
//! builds the same tree there, so neither the persistent sync repository
//! nor the remote changes; it reads a pending commit from the persistent
//! repository without writing to it, so its summary is the real run's.

use super::FormatError;
use super::manifest::{self, SnapshotV1, SyncRecord, Target};
use super::merge;
use super::repo::{PushOutcome, RemoteTip, Staged, SyncError, SyncRepo, TransferObserver};
use super::schema::{self, SchemaVersion};
use super::sync::{Endpoint, PUSH_ATTEMPTS, TransferReport, interrupt_on};
use super::tree::{self, TreeEntry, TreeRules};
use super::validate;
use gix::ObjectId;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const MIGRATE_MESSAGE: &str = "git-agent: migrate search indexes to schema v2";
const REPAIR_MESSAGE: &str = "git-agent: repair a mixed schema v2 index store";

/// What a migration did (or, in a dry run, would do).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MigrationSummary {
    /// The schema the remote had: 1, or 2 for a no-op or a repair.
    pub from: u64,
    pub to: u64,
    /// Schema-v1 snapshots converted (or recovered).
    pub indexes: usize,
    /// Records of those snapshots.
    pub records: usize,
    /// Distinct vectors the resulting packs store.
    pub unique_vectors: usize,
    /// Packs of the resulting tree.
    pub packs: usize,
    /// Logical bytes of the tracked tree before.
    pub current_bytes: u64,
    /// Logical bytes of the tracked tree after.
    pub projected_bytes: u64,
}

impl MigrationSummary {
    fn no_op() -> Self {
        Self { from: 2, to: 2, ..Self::default() }
    }

    /// The exact stdout line of the command.
    pub fn line(&self, dry_run: bool) -> String {
        let Self { from, to, indexes, records, unique_vectors, packs, current_bytes, projected_bytes } = *self;
        if dry_run {
            let saved = i128::from(current_bytes) - i128::from(projected_bytes);
            format!(
                "migration from={from} to={to} indexes={indexes} records={records} unique_vectors={unique_vectors} packs={packs} current_bytes={current_bytes} projected_bytes={projected_bytes} saved_bytes={saved} dry_run=true\n"
            )
        } else {
            format!(
                "migrated from={from} to={to} indexes={indexes} records={records} unique_vectors={unique_vectors} packs={packs} bytes={projected_bytes}\n"
            )
        }
    }
}

/// The phases progress reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigratePhase {
    Fetching,
    Scanning,
    Building {
        done: usize,
        total: usize,
        elapsed: Duration,
    },
    Installing,
    Pushing,
    /// Transport progress of the fetch or push under way, its URL
    /// sanitized: shown as a bracketed suffix, as `index sync` shows it.
    Transfer(String),
}

/// Receives progress; an error aborts the migration.
pub type Progress = Arc<dyn Fn(MigratePhase) -> Result<(), SyncError> + Send + Sync>;

/// The first error progress returned for a transport detail. The transfer
/// cannot return it itself: `stop` ends the transfer, and [`Self::check`]
/// puts the error in place of the transfer's own outcome.
#[derive(Clone, Default)]
struct TransferFailure(Arc<std::sync::Mutex<Option<SyncError>>>);

impl TransferFailure {
    /// The observer reporting each detail as [`MigratePhase::Transfer`].
    fn observer(&self, progress: &Progress, stop: impl Fn() + Send + Sync + 'static) -> TransferObserver {
        let progress = Arc::clone(progress);
        let failure = self.clone();
        Arc::new(move |detail| {
            if let Err(error) = progress(MigratePhase::Transfer(detail)) {
                failure.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(error);
                stop();
            }
        })
    }

    fn check<T>(&self, outcome: Result<T, SyncError>) -> Result<T, SyncError> {
        match self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            Some(error) => Err(error),
            None => outcome,
        }
    }
}

/// Fetches `repo`'s remote, its transport details reported to `progress`.
fn fetch(repo: &SyncRepo, progress: &Progress, flag: &Arc<AtomicBool>) -> Result<RemoteTip, SyncError> {
    let failure = TransferFailure::default();
    let stop = Arc::clone(flag);
    let observer = failure.observer(progress, move || stop.store(true, Ordering::Relaxed));
    failure.check(repo.fetch_reporting(flag, &TransferReport(observer)))
}

/// Runs `index migrate --to v2` against `endpoint`'s remote.
pub async fn migrate(
    endpoint: &Endpoint,
    dry_run: bool,
    progress: Progress,
    cancel: &CancellationToken,
) -> Result<MigrationSummary, SyncError> {
    if dry_run {
        return dry_run_migration(endpoint, progress, cancel).await;
    }
    let _lock = endpoint.lock(cancel).await?;
    for _ in 0..PUSH_ATTEMPTS {
        let repo_endpoint = endpoint.clone();
        let report = Arc::clone(&progress);
        let interrupt = interrupt_on(cancel);
        let flag = Arc::clone(&interrupt.flag);
        let planned = gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
            report(MigratePhase::Fetching)?;
            let repo = SyncRepo::open(repo_endpoint.remote.clone(), repo_endpoint.dir.clone())?;
            let tip = fetch(&repo, &report, &flag)?;
            let pending = pending_changes(&repo, &tip)?;
            let plan = plan(&repo, &tip, pending, false, report.as_ref(), &flag)?;
            Ok::<_, SyncError>((tip.branch, plan))
        })
        .await
        .map_err(|_| SyncError::Cancelled)??;
        drop(interrupt);
        let (branch, Plan { summary, commit }) = planned;
        let Some(commit) = commit else {
            return Ok(summary);
        };
        progress(MigratePhase::Pushing)?;
        let failure = TransferFailure::default();
        let push_cancel = cancel.child_token();
        let stop = push_cancel.clone();
        let observer = failure.observer(&progress, move || stop.cancel());
        match failure.check(endpoint.push_commit(branch, commit, observer, &push_cancel).await)? {
            PushOutcome::Pushed => return Ok(summary),
            PushOutcome::Rejected => continue,
        }
    }
    Err(SyncError::Contended { remote: endpoint.remote.sanitized.clone(), attempts: PUSH_ATTEMPTS })
}

/// Fetches into a disposable repository and plans there; nothing below
/// the metadata root and nothing on the remote changes.
async fn dry_run_migration(
    endpoint: &Endpoint,
    progress: Progress,
    cancel: &CancellationToken,
) -> Result<MigrationSummary, SyncError> {
    let remote = endpoint.remote.clone();
    let dir = endpoint.dir.clone();
    let interrupt = interrupt_on(cancel);
    let flag = Arc::clone(&interrupt.flag);
    gitagent_runtime::blocking::run_to_end("the index sync repository", move || {
        let scratch = disposable_dir()?;
        progress(MigratePhase::Fetching)?;
        // A commit a stopped run left unpushed lives in this machine's sync
        // repository; the real migration carries it, so the preview reads it
        // too (without writing there).
        let persistent = SyncRepo::open_existing_read_only(remote.clone(), dir)?;
        let repo = SyncRepo::open(remote, scratch.path().join("repo"))?;
        let tip = fetch(&repo, &progress, &flag)?;
        let pending = pending_changes(persistent.as_ref().unwrap_or(&repo), &tip)?;
        Ok(plan(&repo, &tip, pending, true, progress.as_ref(), &flag)?.summary)
    })
    .await
    .map_err(|_| SyncError::Cancelled)?
}

/// A private temporary directory, removed when dropped.
pub fn disposable_dir() -> Result<tempfile::TempDir, SyncError> {
    let base = std::env::temp_dir();
    tempfile::Builder::new()
        .prefix("git-agent-index-")
        .tempdir_in(&base)
        .map_err(|source| SyncError::Io { dir: base, source })
}

/// A planned migration: its summary and, outside dry runs, the commit to
/// push (`None`: nothing to change).
struct Plan {
    summary: MigrationSummary,
    commit: Option<ObjectId>,
}

/// One schema-v1 snapshot, strictly decoded.
struct Snapshot {
    target: Target,
    records: Vec<SyncRecord>,
}

fn plan(
    repo: &SyncRepo,
    tip: &RemoteTip,
    pending: Pending,
    dry_run: bool,
    progress: &(dyn Fn(MigratePhase) -> Result<(), SyncError> + Send + Sync),
    interrupt: &AtomicBool,
) -> Result<Plan, SyncError> {
    let (files, schema) = repo.files_and_schema(tip.commit)?;
    // An empty remote is a schema-v1 repository without snapshots.
    let schema = schema.unwrap_or(SchemaVersion::V1);
    let (v1_paths, rest) = split_v1(&files, schema);
    if schema == SchemaVersion::V2 && v1_paths.is_empty() && pending.snapshots.is_empty() {
        // Validate the tree as normal sync would, then report the no-op.
        Staged::from_files(repo, tip, SchemaVersion::V2, files)?;
        return Ok(Plan { summary: MigrationSummary::no_op(), commit: None });
    }
    if schema == SchemaVersion::V1 {
        // Every path of a v1 tree must be one schema v1 allows.
        Staged::from_files(repo, tip, SchemaVersion::V1, files.clone())?;
    }
    progress(MigratePhase::Scanning)?;
    let mut current_bytes = 0;
    for id in files.values() {
        current_bytes += repo.blob_size(*id)?;
    }
    let mut snapshots = BTreeMap::new();
    for path in &v1_paths {
        cancelled(interrupt)?;
        snapshots.insert(path.clone(), read_snapshot(repo, path, &repo.blob(files[path])?)?);
    }
    // The pending commit's snapshots join the tip's; one both hold is
    // one index whose records merge.
    for (path, snapshot) in pending.snapshots {
        match snapshots.entry(path) {
            std::collections::btree_map::Entry::Occupied(mut entry) => {
                let current = entry.get_mut();
                let (model, dimensions) = (&current.target.model, current.target.dimensions);
                let records = std::mem::take(&mut current.records);
                current.records = merge::merge_strict(records, snapshot.records, model, dimensions)?;
            }
            std::collections::btree_map::Entry::Vacant(entry) => {
                entry.insert(snapshot);
            }
        }
    }
    // A repair keeps every v2 file and drops the v1 manifests; a migration
    // starts from an empty v2 tree.
    let base_files = if schema == SchemaVersion::V2 { rest } else { BTreeMap::new() };
    let mut staged = Staged::from_files(repo, tip, SchemaVersion::V2, base_files)?;
    staged.write("schema.json".into(), &schema::bytes(SchemaVersion::V2))?;
    let started = Instant::now();
    let total = snapshots.len();
    progress(MigratePhase::Building { done: 0, total, elapsed: Duration::ZERO })?;
    let mut summary = MigrationSummary { from: schema.number(), to: 2, current_bytes, ..Default::default() };
    for (done, snapshot) in snapshots.into_values().enumerate() {
        cancelled(interrupt)?;
        summary.indexes += 1;
        summary.records += snapshot.records.len();
        staged.export(&snapshot.target, snapshot.records)?;
        progress(MigratePhase::Building { done: done + 1, total, elapsed: started.elapsed() })?;
    }
    // The pending commit's v2 indexes are already v2: merged, not counted.
    for export in pending.exports {
        cancelled(interrupt)?;
        staged.export(&export.target, export.records)?;
    }
    for path in &v1_paths {
        staged.remove(path);
    }
    let report = validate::validate_v2(&mut staged)?;
    summary.unique_vectors = report.unique_vectors;
    summary.packs = report.packs.len();
    summary.projected_bytes = report.bytes;
    if dry_run {
        return Ok(Plan { summary, commit: None });
    }
    progress(MigratePhase::Installing)?;
    let message = if schema == SchemaVersion::V1 { MIGRATE_MESSAGE } else { REPAIR_MESSAGE };
    let commit = staged.commit(message)?;
    Ok(Plan { summary, commit })
}

/// What a run stopped between its local commit and its push left in the
/// sync repository (`refs/git-agent/pending`) beyond the fetched tip.
#[derive(Default)]
struct Pending {
    /// The v1 snapshots it wrote or changed, strictly decoded, by path.
    snapshots: Vec<(String, Snapshot)>,
    /// The records of the v2 manifests it wrote or changed.
    exports: Vec<Snapshot>,
}

/// Reads what the pending commit, if any, added or changed relative to
/// the tree it was made on. The migration merges it, so the push (which
/// clears the pending commit) loses none of it.
fn pending_changes(repo: &SyncRepo, tip: &RemoteTip) -> Result<Pending, SyncError> {
    let mut pending = Pending::default();
    let Some(commit) = repo.pending()? else {
        return Ok(pending);
    };
    if tip.commit == Some(commit) {
        return Ok(pending);
    }
    let (files, Some(schema)) = repo.files_and_schema(Some(commit))? else {
        return Ok(pending);
    };
    let before = repo.parent_files(commit)?;
    let changed = |path: &str, id: &ObjectId| before.get(path) != Some(id);
    let (v1_paths, rest) = split_v1(&files, schema);
    for path in v1_paths {
        let id = files[&path];
        if changed(&path, &id) {
            let snapshot = read_snapshot(repo, &path, &repo.blob(id)?)?;
            pending.snapshots.push((path, snapshot));
        }
    }
    if schema == SchemaVersion::V2 {
        let manifests: Vec<String> = rest
            .iter()
            .filter(|(path, id)| path.starts_with("indexes/") && changed(path, id))
            .map(|(path, _)| path.clone())
            .collect();
        if !manifests.is_empty() {
            let base = RemoteTip { branch: tip.branch.clone(), commit: Some(commit) };
            let mut staged = Staged::from_files(repo, &base, SchemaVersion::V2, rest)?;
            for path in manifests {
                let Some(bytes) = staged.read(&path)? else { continue };
                let target = manifest::target_of(&bytes, &path)?;
                if let Some(records) = staged.import(&target)? {
                    pending.exports.push(Snapshot { target, records });
                }
            }
        }
    }
    Ok(pending)
}

/// The schema-v1 manifest paths of `files` (only a v1 tree or a mixed v2
/// tree may hold them) and every other file.
fn split_v1(files: &BTreeMap<String, ObjectId>, schema: SchemaVersion) -> (Vec<String>, BTreeMap<String, ObjectId>) {
    let rules = match schema {
        SchemaVersion::V1 => TreeRules::Strict(SchemaVersion::V1),
        SchemaVersion::V2 => TreeRules::MixedMigration,
    };
    let mut v1 = Vec::new();
    let mut rest = BTreeMap::new();
    for (path, id) in files {
        if matches!(tree::classify(path, false, rules), Some(TreeEntry::ManifestV1 { .. })) {
            v1.push(path.clone());
        } else {
            rest.insert(path.clone(), *id);
        }
    }
    (v1, rest)
}

/// Decodes the v1 snapshot at `path`; its metadata must derive exactly
/// that path and every record must validate.
fn read_snapshot(repo: &SyncRepo, path: &str, bytes: &[u8]) -> Result<Snapshot, SyncError> {
    let shown = repo.dir().join(path).display().to_string();
    let header: SnapshotV1 =
        serde_json::from_slice(bytes).map_err(|source| FormatError::ManifestJson { path: shown.clone(), source })?;
    let target = validate::target_at(&shown, &header.origin, &header.revision, &header.model, header.dimensions)?;
    if target.manifest_path(SchemaVersion::V1)? != path {
        return Err(validate::path_mismatch(&shown).into());
    }
    let records = manifest::decode_v1(bytes, &shown, &target)?;
    Ok(Snapshot { target, records })
}

fn cancelled(interrupt: &AtomicBool) -> Result<(), SyncError> {
    if interrupt.load(Ordering::Relaxed) { Err(SyncError::Cancelled) } else { Ok(()) }
}

#[cfg(test)]
#[path = "migrate_tests.rs"]
pub mod tests;

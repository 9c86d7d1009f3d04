//! The local phase of `git-agent index gc`: garbage collection of the
//! search stores under `~/.git-agent/<id>/search/` and
//! `~/.git-agent/remotes/<id>/search/`.
//!
//! Every strictly valid completed manifest is a live root. Under each
//! metadata root's lifecycle lock (the shared vector-store lock, taken after
//! any index lock by every reader and writer), GC validates every root's
//! shared references against the current catalog, then compacts the shared
//! payload through two reserved catalog generations: the compact payload is
//! written and synced, a recovery catalog names it, an identical current
//! catalog follows, and only then are older generations removed, so every
//! interruption leaves a complete readable generation. Incomplete and
//! superseded per-index payloads are removed afterwards, one index at a time
//! under that index's own lock and never under the lifecycle lock.
//!
//! Preflight is strict: a symlink, a non-regular owned file, a malformed
//! generation filename, malformed completed metadata or a shared reference
//! that does not resolve fails the command before any store publishes. A
//! dry run takes the same locks without creating lock files and writes
//! nothing. This module never reads the environment; the command resolves
//! the metadata root and passes it in. The optional shared phase (GC-005)
//! is [`shared`].

use gitagent_search::index::store::{
    self, CatalogEntry, CrashPoint, FileLock, IndexRecord, MANIFEST, Manifest, RECORDS, StoreError,
};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The superseded JSON payload of the original implementation's indexes.
const EMBEDDINGS_JSON: &str = "embeddings.json";
/// Folders below `search/` that are never index candidates.
const QUERY_LOCKS: &str = "query-locks";
/// The recognized per-index payload filenames.
const INDEX_FILES: [&str; 4] = [MANIFEST, RECORDS, store::LOCAL_PAYLOAD, EMBEDDINGS_JSON];

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error(
        "index gc: {path}: {reason}\nhint: move the offending entry out of ~/.git-agent, then run git-agent index gc again"
    )]
    Unsafe { path: PathBuf, reason: &'static str },
    #[error(
        "index gc: {path}: {reason}\nhint: run git-agent search --reindex for that index, or remove its folder, then run git-agent index gc again"
    )]
    Invalid { path: PathBuf, reason: String },
    #[error("index gc: cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("index gc: {0}")]
    Store(#[from] StoreError),
    #[error("index gc was cancelled")]
    Cancelled,
}

fn io_error<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> GcError + 'a {
    move |source| GcError::Io { action, path: path.to_path_buf(), source }
}

/// How the local phase runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub dry_run: bool,
    /// Test-only fault injection (see [`CrashPoint`]).
    pub crash_at: Option<CrashPoint>,
    /// Tests only: stop (as a crash would) right after this boundary
    /// instead of killing the process.
    pub stop_at: Option<CrashPoint>,
}

/// The local counts of the summary line (GC-001).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LocalSummary {
    pub stores: u64,
    pub compacted: u64,
    pub vectors: u64,
    pub removed_vectors: u64,
    pub current_bytes: u64,
    pub projected_bytes: u64,
}

impl LocalSummary {
    fn add(&mut self, other: &LocalSummary) {
        self.stores += other.stores;
        self.compacted += other.compacted;
        self.vectors += other.vectors;
        self.removed_vectors += other.removed_vectors;
        self.current_bytes += other.current_bytes;
        self.projected_bytes += other.projected_bytes;
    }
}

/// The exact stdout summary; `shared` is `None` when the shared phase was
/// skipped (`remote_configured=false`, every remote count zero).
pub fn summary_line(local: &LocalSummary, shared: Option<&SharedSummary>, dry_run: bool) -> String {
    let saved = local.current_bytes as i128 - local.projected_bytes as i128;
    let remote = shared.copied().unwrap_or_default();
    let remote_saved = remote.current_bytes as i128 - remote.projected_bytes as i128;
    format!(
        "gc local_stores={} local_compacted={} local_vectors={} local_removed_vectors={} local_current_bytes={} local_projected_bytes={} local_saved_bytes={saved} remote_configured={} remote_removed_packs={} remote_current_bytes={} remote_projected_bytes={} remote_saved_bytes={remote_saved} dry_run={dry_run}\n",
        local.stores,
        local.compacted,
        local.vectors,
        local.removed_vectors,
        local.current_bytes,
        local.projected_bytes,
        shared.is_some(),
        remote.removed_packs,
        remote.current_bytes,
        remote.projected_bytes,
    )
}

/// The eligible metadata roots: direct folders named by 64 lowercase hex
/// characters in `metadata_root` and in `metadata_root/remotes`, sorted.
pub fn eligible_roots(metadata_root: &Path) -> Result<Vec<PathBuf>, GcError> {
    let mut roots = Vec::new();
    for parent in [metadata_root.to_path_buf(), metadata_root.join("remotes")] {
        let entries = match fs::read_dir(&parent) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(io_error("read", &parent)(error)),
        };
        for entry in entries {
            let entry = entry.map_err(io_error("read", &parent))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if name.len() != 64 || !name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                continue;
            }
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).map_err(io_error("inspect", &path))?;
            if meta.file_type().is_symlink() {
                return Err(GcError::Unsafe { path, reason: "a metadata root is a symbolic link" });
            }
            if meta.is_dir() {
                roots.push(path);
            }
        }
    }
    roots.sort();
    Ok(roots)
}

/// Removes (or, in a dry run, counts) the remote caches under
/// `metadata_root/remotes` that no fetch ever completed into and that hold
/// no index: what failed `--remote` attempts of earlier versions left.
/// Skipped while a search holds the global index single flight, since a
/// first fetch in progress looks the same (a dry run takes no lock and
/// may count one).
fn remove_abandoned_remote_caches(metadata_root: &Path, dry_run: bool) -> Result<usize, GcError> {
    let remotes = metadata_root.join("remotes");
    if !remotes.is_dir() {
        return Ok(0);
    }
    // A dry run writes nothing, not even a lock file: it only counts.
    let _flight = if dry_run {
        None
    } else {
        match store::try_lock(&store::lock_path(&metadata_root.join(store::PRODUCER_LOCK)))? {
            Some(lock) => Some(lock),
            None => return Ok(0),
        }
    };
    let mut removed = 0;
    for root in eligible_roots(metadata_root)?.into_iter().filter(|root| root.starts_with(&remotes)) {
        if gitagent_search::source::remote::is_abandoned(&root) {
            if !dry_run {
                fs::remove_dir_all(&root).map_err(io_error("remove", &root))?;
            }
            removed += 1;
        }
    }
    Ok(removed)
}

/// Runs the local phase over every eligible root under `metadata_root`.
/// All roots are preflighted (locked, validated, planned) before the first
/// store publishes; each store is then planned again under its lock and
/// published on its own.
pub fn run_local(
    metadata_root: &Path,
    options: &Options,
    progress: &mut dyn FnMut(String),
    cancelled: &dyn Fn() -> bool,
) -> Result<LocalSummary, GcError> {
    progress("index gc: scanning local indexes".to_string());
    let abandoned = remove_abandoned_remote_caches(metadata_root, options.dry_run)?;
    if abandoned > 0 {
        let verb = if options.dry_run { "would remove" } else { "removed" };
        progress(format!("index gc: {verb} {abandoned} abandoned remote cache(s) (failed first fetches)"));
    }
    let roots = eligible_roots(metadata_root)?;
    let mut summary = LocalSummary::default();
    let mut plans = Vec::with_capacity(roots.len());
    for root in &roots {
        let plan = with_lifecycle_lock(root, options.dry_run, cancelled, || plan_root(root))?;
        summary.add(&plan.summary());
        plans.push(plan);
    }
    let total = plans.iter().filter(|plan| plan.store.is_some()).count();
    progress(format!("index gc: compacting local stores 0/{total}"));
    if options.dry_run {
        progress(format!("index gc: compacting local stores {total}/{total}"));
        return Ok(summary);
    }
    let mut done = 0;
    for plan in plans {
        let cleanup = with_lifecycle_lock(&plan.root, false, cancelled, || {
            // Writers may have published since preflight: plan again.
            let plan = plan_root(&plan.root)?;
            if let Some(store) = &plan.store {
                publish_store(store, options)?;
            }
            Ok(plan.cleanup)
        })?;
        if plan.store.is_some() {
            done += 1;
            progress(format!("index gc: compacting local stores {done}/{total}"));
        }
        for candidate in &cleanup {
            clean_index(candidate, cancelled)?;
        }
    }
    Ok(summary)
}

/// Runs `work` holding the lifecycle lock of `root`. A dry run never
/// creates the lock file (nor its folder): when it does not exist, no
/// reader or writer holds it either.
fn with_lifecycle_lock<T>(
    root: &Path,
    dry_run: bool,
    cancelled: &dyn Fn() -> bool,
    work: impl FnOnce() -> Result<T, GcError>,
) -> Result<T, GcError> {
    let path = store::lock_path(&store::store_dir(root));
    let _lock = take_lock(&path, dry_run, cancelled)?;
    work()
}

/// An exclusive lock; in a dry run only on an existing lock file.
pub fn take_lock(path: &Path, dry_run: bool, cancelled: &dyn Fn() -> bool) -> Result<Option<LockGuard>, GcError> {
    if !dry_run {
        return Ok(Some(LockGuard::Store(store::lock_blocking(path, cancelled)?)));
    }
    let file = match OpenOptions::new().read(true).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error("open the lock", path)(error)),
    };
    let mut file = file;
    loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(Some(LockGuard::Existing(lock))),
            Err((returned, nix::errno::Errno::EWOULDBLOCK)) => file = returned,
            Err((_, errno)) => return Err(io_error("lock", path)(errno.into())),
        }
        if cancelled() {
            return Err(GcError::Cancelled);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub enum LockGuard {
    Store(#[allow(dead_code)] FileLock),
    Existing(#[allow(dead_code)] nix::fcntl::Flock<File>),
}

/// What GC found in one metadata root.
#[derive(Debug)]
struct RootPlan {
    root: PathBuf,
    store: Option<StorePlan>,
    cleanup: Vec<IndexCleanup>,
}

impl RootPlan {
    fn summary(&self) -> LocalSummary {
        let candidates: u64 = self.cleanup.iter().map(|candidate| candidate.bytes).sum();
        let mut summary = LocalSummary { current_bytes: candidates, ..LocalSummary::default() };
        if let Some(store) = &self.store {
            summary.stores = 1;
            summary.compacted = u64::from(!store.noop || !self.cleanup.is_empty());
            summary.vectors = store.live.len() as u64;
            summary.removed_vectors = store.removed_vectors;
            summary.current_bytes += store.current_bytes;
            summary.projected_bytes += store.projected_bytes;
        }
        summary
    }
}

/// The shared vector store of one root and its projected compact state.
#[derive(Debug)]
struct StorePlan {
    dir: PathBuf,
    /// Recognized catalogs and payloads present now, with their sizes.
    recognized: Vec<(String, u64)>,
    /// The payload the current catalog names, if there is a current catalog.
    payload: Option<String>,
    /// Live vector keys and their current entries, in key order.
    live: BTreeMap<String, CatalogEntry>,
    removed_vectors: u64,
    current_bytes: u64,
    projected_bytes: u64,
    /// The first of the two reserved generations.
    generation: u64,
    /// The store's files already are in their projected state.
    noop: bool,
}

/// Recognized per-index files GC removes after taking the index's lock.
#[derive(Debug)]
struct IndexCleanup {
    dir: PathBuf,
    kind: CleanupKind,
    files: Vec<String>,
    bytes: u64,
}

#[derive(Debug)]
enum CleanupKind {
    /// No completed manifest: its recognized payload files go.
    Incomplete,
    /// A completed all-shared index: its local payloads are superseded
    /// while the manifest and records stay byte-for-byte what was checked.
    Superseded { manifest: [u8; 32], records: [u8; 32] },
}

/// A folder of `search/` holding at least one recognized index file.
struct IndexDir {
    path: PathBuf,
    files: HashMap<&'static str, u64>,
}

fn plan_root(root: &Path) -> Result<RootPlan, GcError> {
    let search = store::search_root(root);
    let meta = match fs::symlink_metadata(&search) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok(RootPlan { root: root.to_path_buf(), store: None, cleanup: Vec::new() });
        }
        Err(error) => return Err(io_error("inspect", &search)(error)),
    };
    if meta.file_type().is_symlink() {
        return Err(GcError::Unsafe { path: search, reason: "the search folder is a symbolic link" });
    }
    if !meta.is_dir() {
        return Err(GcError::Unsafe { path: search, reason: "the search folder is not a folder" });
    }
    let store_dir = store::store_dir(root);
    let store_files = scan_store(&store_dir)?;
    let index_dirs = scan_indexes(root, &search, &store_dir)?;
    let current = match &store_files {
        Some(_) => current_catalog(&store_dir)?,
        None => None,
    };
    let mut resolver = Resolver::new(&store_dir, current.as_ref())?;
    let mut live: BTreeMap<String, CatalogEntry> = BTreeMap::new();
    let mut cleanup = Vec::new();
    for dir in index_dirs {
        if let Some(candidate) = plan_index(&dir, &mut resolver, &mut live)? {
            cleanup.push(candidate);
        }
    }
    let store = store_files.map(|recognized| plan_store(store_dir, recognized, current, live));
    Ok(RootPlan { root: root.to_path_buf(), store, cleanup })
}

/// The recognized files of `vector-store/`, or `None` when there is no
/// store folder.
fn scan_store(dir: &Path) -> Result<Option<Vec<(String, u64)>>, GcError> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error("inspect", dir)(error)),
    };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(GcError::Unsafe { path: dir.to_path_buf(), reason: "the vector store is not a regular folder" });
    }
    let mut recognized = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error("read", dir))? {
        let entry = entry.map_err(io_error("read", dir))?;
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(io_error("inspect", &path))?;
        if meta.file_type().is_symlink() {
            return Err(GcError::Unsafe { path, reason: "a symbolic link in the vector store" });
        }
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        let recognized_name = store::catalog_generation(&name).is_some()
            || store::payload_generation(&name).is_some()
            || name == store::DEFAULT_PAYLOAD;
        let generation_like = (name.starts_with("catalog-") && name.ends_with(".json"))
            || (name.starts_with("vectors-") && name.ends_with(".f32"));
        if generation_like && !recognized_name {
            return Err(GcError::Unsafe { path, reason: "a malformed generation filename in the vector store" });
        }
        if !recognized_name {
            if !meta.is_file() && !meta.is_dir() {
                return Err(GcError::Unsafe { path, reason: "a non-regular file in the vector store" });
            }
            continue;
        }
        if !meta.is_file() {
            return Err(GcError::Unsafe { path, reason: "a vector store generation is not a regular file" });
        }
        recognized.push((name, meta.len()));
    }
    recognized.sort();
    Ok(Some(recognized))
}

/// Every folder below `search/` holding a recognized index file, sorted,
/// after checking that nothing owned is a symlink or non-regular file.
fn scan_indexes(root: &Path, search: &Path, store_dir: &Path) -> Result<Vec<IndexDir>, GcError> {
    let mut found = Vec::new();
    let mut pending = vec![search.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if !dir.starts_with(root) {
            return Err(GcError::Unsafe { path: dir, reason: "a folder outside its metadata root" });
        }
        let mut files = HashMap::new();
        for entry in fs::read_dir(&dir).map_err(io_error("read", &dir))? {
            let entry = entry.map_err(io_error("read", &dir))?;
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).map_err(io_error("inspect", &path))?;
            if meta.file_type().is_symlink() {
                return Err(GcError::Unsafe { path, reason: "a symbolic link in the search folder" });
            }
            let name = entry.file_name();
            if meta.is_dir() {
                if path != store_dir && name != QUERY_LOCKS {
                    pending.push(path);
                }
                continue;
            }
            if !meta.is_file() {
                return Err(GcError::Unsafe { path, reason: "a non-regular file in the search folder" });
            }
            if let Some(known) = INDEX_FILES.iter().find(|known| name == **known) {
                files.insert(*known, meta.len());
            }
        }
        if !files.is_empty() {
            found.push(IndexDir { path: dir, files });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// The current catalog: its payload name and entries.
struct Current {
    payload: String,
    entries: HashMap<String, CatalogEntry>,
}

fn current_catalog(store_dir: &Path) -> Result<Option<Current>, GcError> {
    let (catalog, _) = store::load_catalog(store_dir)?;
    if catalog.generation == 0 {
        return Ok(None);
    }
    let Some(payload) = store::catalog_payload(&catalog).map(str::to_owned) else {
        return Ok(None);
    };
    Ok(Some(Current { payload, entries: catalog.entries.unwrap_or_default() }))
}

/// Resolves shared references through the current catalog, checking each
/// entry's bytes once.
struct Resolver<'a> {
    current: Option<&'a Current>,
    payload: Option<(PathBuf, File)>,
    verified: HashSet<String>,
    buf: Vec<u8>,
}

impl<'a> Resolver<'a> {
    fn new(store_dir: &Path, current: Option<&'a Current>) -> Result<Self, GcError> {
        let payload = match current {
            Some(current) => {
                let path = store_dir.join(&current.payload);
                let file = File::open(&path).map_err(io_error("open", &path))?;
                Some((path, file))
            }
            None => None,
        };
        Ok(Self { current, payload, verified: HashSet::new(), buf: Vec::new() })
    }

    /// The current entry of a record's shared key, after checking the
    /// record's identity and the payload bytes.
    fn resolve(&mut self, dir: &Path, record: &IndexRecord) -> Result<CatalogEntry, GcError> {
        let invalid = |reason: String| GcError::Invalid { path: dir.join(RECORDS), reason };
        if record.dimensions < 1
            || record.embedding_input_hash.is_empty()
            || record.vector_key
                != store::vector_key(&record.embedding_input_hash, &record.embedding_model, record.dimensions)
        {
            return Err(invalid(format!(
                "chunk {} has a shared vector key that does not match its input, model and dimensions",
                record.chunk_id
            )));
        }
        let (Some(current), Some((path, file))) = (self.current, &self.payload) else {
            return Err(invalid(format!(
                "chunk {} refers to a shared vector store without a catalog",
                record.chunk_id
            )));
        };
        let Some(entry) = current.entries.get(&record.vector_key).copied() else {
            return Err(invalid(format!(
                "chunk {} refers to a vector missing from the current catalog",
                record.chunk_id
            )));
        };
        if entry.dimensions != record.dimensions || entry.checksum != record.vector_checksum {
            return Err(invalid(format!(
                "chunk {} disagrees with the current catalog on dimensions or checksum",
                record.chunk_id
            )));
        }
        if self.verified.contains(&record.vector_key) {
            return Ok(entry);
        }
        let len = usize::try_from(entry.dimensions).unwrap_or(0) * 4;
        self.buf.resize(len, 0);
        let offset = u64::try_from(entry.offset)
            .map_err(|_| invalid(format!("chunk {} has a negative offset", record.chunk_id)))?;
        file.read_exact_at(&mut self.buf, offset).map_err(|_| GcError::Invalid {
            path: path.clone(),
            reason: format!("the vector of chunk {} lies outside the shared payload", record.chunk_id),
        })?;
        if crc32fast::hash(&self.buf) != entry.checksum {
            return Err(GcError::Invalid {
                path: path.clone(),
                reason: format!("the vector of chunk {} fails its checksum", record.chunk_id),
            });
        }
        self.verified.insert(record.vector_key.clone());
        Ok(entry)
    }
}

/// Strictly parses a completed manifest; `Err` for malformed metadata or
/// an unknown version.
fn parse_manifest(path: &Path, bytes: &[u8]) -> Result<Manifest, GcError> {
    let manifest: Manifest = serde_json::from_slice(bytes).map_err(|error| GcError::Invalid {
        path: path.to_path_buf(),
        reason: format!("malformed manifest: {error}"),
    })?;
    let known = match manifest.version {
        1 => true,
        store::LEGACY_INDEX_VERSION => manifest.vector_store.is_empty(),
        store::INDEX_VERSION => manifest.vector_store == store::SHARED_STORE_VERSION,
        _ => false,
    };
    if !known {
        return Err(GcError::Invalid {
            path: path.to_path_buf(),
            reason: format!("unknown manifest version {} ({:?})", manifest.version, manifest.vector_store),
        });
    }
    Ok(manifest)
}

/// Classifies one index folder: a completed index adds its shared keys to
/// `live` (and may own superseded local payloads); a folder without a
/// manifest is incomplete.
fn plan_index(
    dir: &IndexDir,
    resolver: &mut Resolver<'_>,
    live: &mut BTreeMap<String, CatalogEntry>,
) -> Result<Option<IndexCleanup>, GcError> {
    let candidate = |kind: CleanupKind, names: &[&'static str]| {
        let files: Vec<String> =
            names.iter().filter(|name| dir.files.contains_key(**name)).map(|name| (*name).to_string()).collect();
        let bytes = names.iter().filter_map(|name| dir.files.get(*name)).sum();
        (!files.is_empty()).then(|| IndexCleanup { dir: dir.path.clone(), kind, files, bytes })
    };
    if !dir.files.contains_key(MANIFEST) {
        return Ok(candidate(CleanupKind::Incomplete, &[RECORDS, store::LOCAL_PAYLOAD, EMBEDDINGS_JSON]));
    }
    let manifest_path = dir.path.join(MANIFEST);
    let manifest_bytes = fs::read(&manifest_path).map_err(io_error("read", &manifest_path))?;
    let manifest = parse_manifest(&manifest_path, &manifest_bytes)?;
    if manifest.version != store::INDEX_VERSION {
        // Older formats keep their index-local payloads.
        return Ok(None);
    }
    let records_path = dir.path.join(RECORDS);
    let records_bytes = fs::read(&records_path).map_err(io_error("read", &records_path))?;
    let records: Vec<IndexRecord> = serde_json::from_slice(&records_bytes).map_err(|error| GcError::Invalid {
        path: records_path.clone(),
        reason: format!("malformed vector records: {error}"),
    })?;
    let mut all_shared = true;
    for record in &records {
        if record.vector_key.is_empty() {
            all_shared = false;
            continue;
        }
        if record.embedding_model != manifest.embedding_model || record.dimensions != manifest.dimensions {
            return Err(GcError::Invalid {
                path: records_path,
                reason: format!("chunk {} does not match the manifest's model and dimensions", record.chunk_id),
            });
        }
        let entry = resolver.resolve(&dir.path, record)?;
        live.insert(record.vector_key.clone(), entry);
    }
    if !all_shared {
        return Ok(None);
    }
    // An empty local payload is what every shared publication writes; only
    // actual bytes are superseded.
    let mut superseded = vec![EMBEDDINGS_JSON];
    if dir.files.get(store::LOCAL_PAYLOAD).is_some_and(|len| *len > 0) {
        superseded.push(store::LOCAL_PAYLOAD);
    }
    let kind = CleanupKind::Superseded {
        manifest: Sha256::digest(&manifest_bytes).into(),
        records: Sha256::digest(&records_bytes).into(),
    };
    Ok(candidate(kind, &superseded))
}

/// The catalog JSON GC publishes, in the store's format with entries in
/// key order so equal states have equal bytes.
#[derive(Serialize)]
struct CatalogOut<'a> {
    version: u32,
    generation: u64,
    payload: &'a str,
    entries: &'a BTreeMap<String, CatalogEntry>,
}

fn payload_name(generation: u64) -> String {
    format!("vectors-{generation:020}.f32")
}

/// The compact layout of `live`: offsets in key order from zero.
fn compact_entries(live: &BTreeMap<String, CatalogEntry>) -> (BTreeMap<String, CatalogEntry>, u64) {
    let mut offset = 0i64;
    let entries = live
        .iter()
        .map(|(key, entry)| {
            let compact = CatalogEntry { offset, dimensions: entry.dimensions, checksum: entry.checksum };
            offset += entry.dimensions * 4;
            (key.clone(), compact)
        })
        .collect();
    (entries, offset as u64)
}

fn catalog_bytes(generation: u64, payload: &str, entries: &BTreeMap<String, CatalogEntry>) -> Vec<u8> {
    let mut out = serde_json::to_vec(&CatalogOut { version: store::CATALOG_VERSION, generation, payload, entries })
        .unwrap_or_default();
    out.push(b'\n');
    out
}

fn plan_store(
    dir: PathBuf,
    recognized: Vec<(String, u64)>,
    current: Option<Current>,
    live: BTreeMap<String, CatalogEntry>,
) -> StorePlan {
    let current_bytes = recognized.iter().map(|(_, len)| len).sum();
    let removed_vectors =
        current.as_ref().map_or(0, |current| current.entries.keys().filter(|key| !live.contains_key(*key)).count())
            as u64;
    let highest = recognized
        .iter()
        .filter_map(|(name, _)| store::catalog_generation(name).or_else(|| store::payload_generation(name)))
        .max()
        .unwrap_or(0);
    let (compact, payload_len) = compact_entries(&live);
    let (noop, generation, projected_bytes) = if live.is_empty() {
        // Nothing is live: the projected store holds no generation at all.
        (recognized.is_empty(), highest + 1, 0)
    } else {
        match already_compact(&dir, &recognized, &compact, payload_len) {
            Some(generation) => (true, generation, current_bytes),
            None => {
                let generation = highest + 1;
                let payload = payload_name(generation);
                let catalogs = catalog_bytes(generation, &payload, &compact).len()
                    + catalog_bytes(generation + 1, &payload, &compact).len();
                let projected = catalogs as u64 + payload_len;
                // A compaction that reclaims nothing would only rewrite
                // the store, and its second catalog can make it larger:
                // the store stays as it is.
                if projected >= current_bytes && current.is_some() {
                    (true, generation, current_bytes)
                } else {
                    (false, generation, projected)
                }
            }
        }
    };
    // A store left as it is removes no vector.
    let removed_vectors = if noop { 0 } else { removed_vectors };
    StorePlan {
        dir,
        recognized,
        payload: current.map(|current| current.payload),
        live,
        removed_vectors,
        current_bytes,
        projected_bytes,
        generation,
        noop,
    }
}

/// The first reserved generation when the store already holds exactly the
/// projected state: two consecutive catalogs with the compact mapping, both
/// naming the one compact payload of the first generation, and nothing
/// else recognized.
fn already_compact(
    dir: &Path,
    recognized: &[(String, u64)],
    compact: &BTreeMap<String, CatalogEntry>,
    payload_len: u64,
) -> Option<u64> {
    let mut catalogs: Vec<u64> = recognized.iter().filter_map(|(name, _)| store::catalog_generation(name)).collect();
    catalogs.sort_unstable();
    let [first, second] = catalogs[..] else { return None };
    if second != first.checked_add(1)? || recognized.len() != 3 {
        return None;
    }
    let payload = payload_name(first);
    if !recognized.iter().any(|(name, len)| *name == payload && *len == payload_len) {
        return None;
    }
    for generation in [first, second] {
        let bytes = fs::read(dir.join(store::catalog_name(generation))).ok()?;
        if bytes != catalog_bytes(generation, &payload, compact) {
            return None;
        }
    }
    Some(first)
}

/// Publishes the planned compact state of one store (under its lifecycle
/// lock): payload, recovery catalog, current catalog, then removal.
fn publish_store(plan: &StorePlan, options: &Options) -> Result<(), GcError> {
    if plan.noop {
        return Ok(());
    }
    let keep: HashSet<String> = if plan.live.is_empty() {
        HashSet::new()
    } else {
        write_compact(plan, options)?;
        [store::catalog_name(plan.generation), store::catalog_name(plan.generation + 1), payload_name(plan.generation)]
            .into_iter()
            .collect()
    };
    let mut removed = false;
    for (name, _) in &plan.recognized {
        if keep.contains(name) {
            continue;
        }
        let path = plan.dir.join(name);
        match fs::remove_file(&path) {
            Ok(()) => removed = true,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error("remove", &path)(error)),
        }
        if boundary(options, CrashPoint::GcRemove) {
            return Err(GcError::Cancelled);
        }
    }
    if removed {
        store::sync_dir(&plan.dir)?;
    }
    Ok(())
}

/// Whether to stop at `point` (test builds) after injecting its fault.
fn boundary(options: &Options, point: CrashPoint) -> bool {
    store::crash_if(options.crash_at, point);
    options.stop_at == Some(point)
}

fn write_compact(plan: &StorePlan, options: &Options) -> Result<(), GcError> {
    let payload = payload_name(plan.generation);
    let (compact, _) = compact_entries(&plan.live);
    let source_name = plan.payload.as_deref().unwrap_or(store::DEFAULT_PAYLOAD);
    let source_path = plan.dir.join(source_name);
    let source = File::open(&source_path).map_err(io_error("open", &source_path))?;
    let target = plan.dir.join(&payload);
    private_fs_write(&target, |out| {
        let mut buf = Vec::new();
        for entry in plan.live.values() {
            buf.resize(usize::try_from(entry.dimensions).unwrap_or(0) * 4, 0);
            source.read_exact_at(&mut buf, u64::try_from(entry.offset).unwrap_or(u64::MAX))?;
            if crc32fast::hash(&buf) != entry.checksum {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "a live vector changed during index gc"));
            }
            out.write_all(&buf)?;
        }
        Ok(())
    })?;
    if boundary(options, CrashPoint::GcPayload) {
        return Err(GcError::Cancelled);
    }
    for (generation, point) in
        [(plan.generation, CrashPoint::GcRecoveryCatalog), (plan.generation + 1, CrashPoint::GcCatalog)]
    {
        let path = plan.dir.join(store::catalog_name(generation));
        private_fs_write(&path, |out| out.write_all(&catalog_bytes(generation, &payload, &compact)))?;
        if boundary(options, point) {
            return Err(GcError::Cancelled);
        }
    }
    Ok(())
}

fn private_fs_write(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), GcError> {
    git_agent_shared::private_fs::write_atomic_with(path, write).map_err(io_error("write", path))
}

/// Removes one index folder's candidates under its own lock, after
/// checking they are still incomplete or superseded.
fn clean_index(candidate: &IndexCleanup, cancelled: &dyn Fn() -> bool) -> Result<(), GcError> {
    let _lock = store::lock_blocking(&store::lock_path(&candidate.dir), cancelled)?;
    match &candidate.kind {
        CleanupKind::Incomplete => {
            if candidate.dir.join(MANIFEST).exists() {
                return Ok(());
            }
        }
        CleanupKind::Superseded { manifest, records } => {
            let same = |name: &str, digest: &[u8; 32]| {
                fs::read(candidate.dir.join(name)).is_ok_and(|bytes| Sha256::digest(&bytes).as_slice() == digest)
            };
            if !same(MANIFEST, manifest) || !same(RECORDS, records) {
                return Ok(());
            }
        }
    }
    let mut removed = false;
    for name in &candidate.files {
        let path = candidate.dir.join(name);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                fs::remove_file(&path).map_err(io_error("remove", &path))?;
                removed = true;
            }
            _ => {}
        }
    }
    if removed {
        store::sync_dir(&candidate.dir)?;
    }
    if matches!(candidate.kind, CleanupKind::Incomplete) {
        // An emptied incomplete folder goes too; any unknown entry keeps it.
        if fs::read_dir(&candidate.dir).is_ok_and(|mut entries| entries.next().is_none()) {
            fs::remove_dir(&candidate.dir).map_err(io_error("remove", &candidate.dir))?;
            if let Some(parent) = candidate.dir.parent() {
                store::sync_dir(parent)?;
            }
        }
    }
    Ok(())
}

pub mod shared;

pub use shared::SharedSummary;

#[cfg(test)]
mod tests;

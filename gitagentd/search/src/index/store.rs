//! The on-disk search store, compatible with the original implementation's
//! files:
//!
//! ```text
//! ~/.git-agent/<project-id>/search/
//!   vector-store/                       shared per metadata root
//!     vectors.f32                       append-only little-endian f32 payload
//!     catalog-<20-digit generation>.json  immutable catalog generations
//!   vector-store.lock
//!   fs/<sha256(root)[:16]>/[scope-<sha256(scopes)[:16]>/]
//!     manifest.json                     format version 3, vector_store "shared-v1"
//!     vectors.index.json                chunk metadata + shared references
//!     vectors.f32                       local payload (legacy records only)
//!   fs/<...>.lock                       per-index lock
//! ```
//!
//! Publication order makes an interrupted write unreadable as a complete
//! snapshot: the old manifest is removed (and the folder synced) first,
//! new vectors are appended to the shared payload and synced, an immutable
//! catalog generation is published, the chunk records are written, and the
//! manifest comes last. Every shared reference carries its identity key
//! (SHA-256 of input hash, model and dimensions) and a CRC-32 of its bytes;
//! a reference that does not match the catalog or whose bytes fail the
//! checksum is a cache miss, never an error.
//!
//! This module never decides what to index; it reads and writes snapshots.

use super::records::{Records, RecordsBuilder};
use super::spool::{NewVectors, Spooled};
use crate::chunking::{Hash32, hex, parse_hash};
use git_agent_shared::{private_fs, timefmt};
use memmap2::Mmap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub const INDEX_VERSION: u32 = 3;
pub const LEGACY_INDEX_VERSION: u32 = 2;
pub const SHARED_STORE_VERSION: &str = "shared-v1";
pub const CATALOG_VERSION: u32 = 1;
pub const STORE_DIR: &str = "vector-store";
pub const DEFAULT_PAYLOAD: &str = "vectors.f32";
pub const MANIFEST: &str = "manifest.json";
pub const RECORDS: &str = "vectors.index.json";
pub const LOCAL_PAYLOAD: &str = "vectors.f32";
/// The user-level lock that serializes index production (the spec's global
/// single flight), beside the metadata root's project folders.
pub const PRODUCER_LOCK: &str = "search-index-producer";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot publish the search index {path}: {reason}")]
    Publish { path: PathBuf, reason: String },
    #[error("the search was cancelled")]
    Cancelled,
}

pub fn io_error<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io { action, path: path.to_path_buf(), source }
}

/// `manifest.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(default)]
    pub version: u32,
    #[serde(default)]
    pub mode: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub root: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub remote: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resolved_rev: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin_identity: String,
    #[serde(default)]
    pub embedding_model: String,
    #[serde(default)]
    pub dimensions: i64,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub file_count: i64,
    #[serde(default)]
    pub chunk_count: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vector_store: String,
    /// The chunker whose chunks the records hold
    /// ([`crate::chunking::chunker_version`]); empty for indexes written
    /// before it was recorded (or by the original implementation). A
    /// search refreshes an index of another chunker instead of trusting
    /// its records, reusing every vector whose exact input is unchanged.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chunker: String,
}

impl Manifest {
    /// When the index was built, when `created_at` parses.
    pub fn created(&self) -> Option<jiff::Timestamp> {
        timefmt::parse_rfc3339(&self.created_at)
    }
}

/// One entry of `vectors.index.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IndexRecord {
    #[serde(default)]
    pub chunk_id: String,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub source: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub blob: String,
    #[serde(default)]
    pub start_line: i64,
    #[serde(default)]
    pub end_line: i64,
    #[serde(default)]
    pub content_hash: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub embedding_input_hash: String,
    #[serde(default)]
    pub embedding_model: String,
    #[serde(default)]
    pub dimensions: i64,
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub mtime_unix_nano: i64,
    #[serde(default)]
    pub offset: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vector_key: String,
    #[serde(default)]
    pub vector_checksum: u32,
}

impl IndexRecord {
    /// The record without its payload reference (`offset`, `vector_key`,
    /// `vector_checksum`), which only means something in the store it was
    /// read from: publication fills it in anew, and index sync never
    /// shares it.
    pub fn without_payload_reference(self) -> Self {
        IndexRecord { offset: 0, vector_key: String::new(), vector_checksum: 0, ..self }
    }
}

/// `catalog-<generation>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    pub version: u32,
    pub generation: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub payload: String,
    pub entries: Option<HashMap<String, CatalogEntry>>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    pub offset: i64,
    pub dimensions: i64,
    pub checksum: u32,
}

/// The shared-store identity of a vector.
pub fn vector_key(input_hash: &str, model: &str, dimensions: i64) -> String {
    let mut hasher = Sha256::new();
    hasher.update(input_hash.as_bytes());
    hasher.update([0]);
    hasher.update(model.as_bytes());
    hasher.update([0]);
    hasher.update(dimensions.to_string().as_bytes());
    hex(&hasher.finalize())
}

pub fn search_root(metadata_dir: &Path) -> PathBuf {
    metadata_dir.join("search")
}

pub fn store_dir(metadata_dir: &Path) -> PathBuf {
    search_root(metadata_dir).join(STORE_DIR)
}

/// The physical index folder of a filesystem source: keyed by the root,
/// plus a `scope-*` folder for scopes that opt into skipped paths.
pub fn filesystem_index_dir(metadata_dir: &Path, root: &str, skipped_scope: Option<&[String]>) -> PathBuf {
    let root_key = &hex(&Sha256::digest(root.as_bytes()))[..16];
    let dir = search_root(metadata_dir).join("fs").join(root_key);
    match skipped_scope {
        Some(scope) => dir.join(scope_cache_name(scope)),
        None => dir,
    }
}

/// `scope-<16 hex>` for a normalized scope list.
pub fn scope_cache_name(scope: &[String]) -> String {
    format!("scope-{}", &hex(&Sha256::digest(scope.join("\0").as_bytes()))[..16])
}

/// The lock file guarding `dir`.
pub fn lock_path(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// An exclusive `flock` on a lock file, released on drop.
pub struct FileLock {
    _lock: nix::fcntl::Flock<File>,
}

/// Takes the exclusive lock at `path`, polling while another process holds
/// it, until `cancelled` says to stop.
pub fn lock_blocking(path: &Path, cancelled: &dyn Fn() -> bool) -> Result<FileLock, StoreError> {
    if let Some(parent) = path.parent() {
        private_fs::ensure_private_dir(parent).map_err(io_error("create the folder of", path))?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(io_error("open the lock", path))?;
    loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(FileLock { _lock: lock }),
            Err((returned, nix::errno::Errno::EWOULDBLOCK)) => file = returned,
            Err((_, errno)) => {
                return Err(StoreError::Io { action: "lock", path: path.to_path_buf(), source: errno.into() });
            }
        }
        if cancelled() {
            return Err(StoreError::Cancelled);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Tries the exclusive lock at `path` once.
pub fn try_lock(path: &Path) -> Result<Option<FileLock>, StoreError> {
    if let Some(parent) = path.parent() {
        private_fs::ensure_private_dir(parent).map_err(io_error("create the folder of", path))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(io_error("open the lock", path))?;
    match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(FileLock { _lock: lock })),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(StoreError::Io { action: "lock", path: path.to_path_buf(), source: errno.into() }),
    }
}

/// A read-only mapping of a payload file.
#[derive(Debug)]
pub struct Payload {
    map: Option<Mmap>,
}

impl Payload {
    fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(Self { map: None });
        }
        // SAFETY: the payload is append-only: bytes below the mapped length
        // are never rewritten by git-agent. A bit flip by another program is
        // caught by the per-vector checksum before a vector is trusted.
        let map = unsafe { Mmap::map(&file)? };
        Ok(Self { map: Some(map) })
    }

    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |map| map.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw bytes of a vector, when in range.
    pub fn bytes(&self, offset: i64, dimensions: i64) -> Option<&[u8]> {
        let map = self.map.as_ref()?;
        let offset = usize::try_from(offset).ok()?;
        let len = usize::try_from(dimensions).ok()?.checked_mul(4)?;
        map.get(offset..offset.checked_add(len)?)
    }

    /// The vector at `offset` as `f32`s, read in place.
    pub fn vector(&self, offset: i64, dimensions: i64) -> Option<&[f32]> {
        let bytes = self.bytes(offset, dimensions)?;
        if cfg!(target_endian = "big") || bytes.as_ptr().align_offset(std::mem::align_of::<f32>()) != 0 {
            return None;
        }
        // SAFETY: the slice is in bounds, aligned for f32 (checked above),
        // and f32 has no invalid bit patterns; the payload is little-endian
        // like this target.
        Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), bytes.len() / 4) })
    }
}

/// Where a record's vector lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorLoc {
    Shared { offset: i64 },
    Local { offset: i64 },
}

/// What identifies the files of one snapshot on disk; a change means
/// another writer published and cached state must be dropped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fingerprint(Vec<(PathBuf, Option<FileIdentity>)>);

/// Size, modification time and inode of a watched file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    len: u64,
    mtime_ns: i64,
    ino: u64,
}

impl Fingerprint {
    fn of(paths: &[PathBuf]) -> Self {
        Self(
            paths
                .iter()
                .map(|path| {
                    let stat = fs::metadata(path).ok().map(|meta| FileIdentity {
                        len: meta.len(),
                        mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
                        ino: meta.ino(),
                    });
                    (path.clone(), stat)
                })
                .collect(),
        )
    }

    /// Whether the files still look as they did.
    pub fn is_current(&self) -> bool {
        let paths: Vec<PathBuf> = self.0.iter().map(|(path, _)| path.clone()).collect();
        Self::of(&paths) == *self
    }
}

/// A snapshot as read from disk (or as just written).
#[derive(Debug)]
pub struct Snapshot {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// The chunk records, kept compact ([`super::records`]).
    pub records: Records,
    /// Per record: where its vector is, or `None` when the reference is
    /// missing, mismatched or corrupt (a cache miss).
    pub vectors: Vec<Option<VectorLoc>>,
    pub shared: Arc<Payload>,
    pub local: Arc<Payload>,
    pub fingerprint: Fingerprint,
}

impl Snapshot {
    /// An empty snapshot for a folder with no usable index.
    pub fn empty(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            manifest: Manifest::default(),
            records: Records::default(),
            vectors: Vec::new(),
            shared: Arc::new(Payload { map: None }),
            local: Arc::new(Payload { map: None }),
            fingerprint: Fingerprint::of(&[dir.join(MANIFEST)]),
        }
    }

    /// Whether a complete manifest was found.
    pub fn is_complete(&self) -> bool {
        self.manifest.version != 0
    }

    pub fn vector(&self, index: usize) -> Option<&[f32]> {
        let dimensions = self.records.get(index).dimensions();
        match self.vectors[index]? {
            VectorLoc::Shared { offset } => self.shared.vector(offset, dimensions),
            VectorLoc::Local { offset } => self.local.vector(offset, dimensions),
        }
    }
}

/// Reads and validates a manifest; `None` when it is missing, malformed
/// or of an unknown version.
pub fn read_manifest(dir: &Path) -> Option<Manifest> {
    let data = fs::read(dir.join(MANIFEST)).ok()?;
    let manifest: Manifest = serde_json::from_slice(&data).ok()?;
    match manifest.version {
        LEGACY_INDEX_VERSION if manifest.vector_store.is_empty() => Some(manifest),
        INDEX_VERSION if manifest.vector_store == SHARED_STORE_VERSION => Some(manifest),
        _ => None,
    }
}

/// Reads `vectors.index.json`.
pub fn read_records(dir: &Path) -> Option<Vec<IndexRecord>> {
    let data = fs::read(dir.join(RECORDS)).ok()?;
    serde_json::from_slice(&data).ok()
}

/// Loads the snapshot in `index_dir`. A missing or invalid snapshot is an
/// empty one; only lock and cancellation failures are errors.
pub fn load(metadata_dir: &Path, index_dir: &Path, cancelled: &dyn Fn() -> bool) -> Result<Snapshot, StoreError> {
    let _index_lock = lock_blocking(&lock_path(index_dir), cancelled)?;
    let store = store_dir(metadata_dir);
    let _store_lock = lock_blocking(&lock_path(&store), cancelled)?;
    let catalog = load_catalog(&store).ok().map(|(catalog, _)| catalog);
    let payload_name = catalog.as_ref().and_then(catalog_payload).unwrap_or(DEFAULT_PAYLOAD);
    let mut watched = vec![index_dir.join(MANIFEST), index_dir.join(RECORDS), store.join(payload_name)];
    if let Some(catalog) = &catalog {
        watched.push(store.join(catalog_name(catalog.generation)));
    }
    let fingerprint = Fingerprint::of(&watched);
    let Some(manifest) = read_manifest(index_dir) else {
        return Ok(Snapshot { fingerprint, ..Snapshot::empty(index_dir) });
    };
    let Some(records) = read_records(index_dir) else {
        return Ok(Snapshot { fingerprint, ..Snapshot::empty(index_dir) });
    };
    let local = Payload::open(&index_dir.join(LOCAL_PAYLOAD)).unwrap_or(Payload { map: None });
    let shared = if manifest.version == INDEX_VERSION {
        Payload::open(&store.join(payload_name)).unwrap_or(Payload { map: None })
    } else {
        Payload { map: None }
    };
    let entries = catalog.as_ref().and_then(|catalog| catalog.entries.as_ref());
    let vectors =
        records.iter().map(|record| validate_record(record, manifest.version, entries, &shared, &local)).collect();
    let records = Records::from_index_records(&records);
    Ok(Snapshot {
        dir: index_dir.to_path_buf(),
        manifest,
        records,
        vectors,
        shared: Arc::new(shared),
        local: Arc::new(local),
        fingerprint,
    })
}

fn validate_record(
    record: &IndexRecord,
    version: u32,
    entries: Option<&HashMap<String, CatalogEntry>>,
    shared: &Payload,
    local: &Payload,
) -> Option<VectorLoc> {
    if record.dimensions < 1 {
        return None;
    }
    if version == LEGACY_INDEX_VERSION {
        if !record.vector_key.is_empty() || record.vector_checksum != 0 {
            return None;
        }
        local.vector(record.offset, record.dimensions)?;
        return Some(VectorLoc::Local { offset: record.offset });
    }
    if record.vector_key.is_empty() {
        let bytes = local.bytes(record.offset, record.dimensions)?;
        (crc32fast::hash(bytes) == record.vector_checksum).then_some(())?;
        local.vector(record.offset, record.dimensions)?;
        return Some(VectorLoc::Local { offset: record.offset });
    }
    if !record.embedding_input_hash.is_empty()
        && record.vector_key != vector_key(&record.embedding_input_hash, &record.embedding_model, record.dimensions)
    {
        return None;
    }
    let entry = entries?.get(&record.vector_key)?;
    if entry.dimensions != record.dimensions || entry.checksum != record.vector_checksum {
        return None;
    }
    let bytes = shared.bytes(entry.offset, entry.dimensions)?;
    if crc32fast::hash(bytes) != entry.checksum {
        return None;
    }
    shared.vector(entry.offset, entry.dimensions)?;
    Some(VectorLoc::Shared { offset: entry.offset })
}

pub fn catalog_name(generation: u64) -> String {
    format!("catalog-{generation:020}.json")
}

pub fn catalog_generation(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("catalog-")?.strip_suffix(".json")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

pub fn payload_generation(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("vectors-")?.strip_suffix(".f32")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The payload file a catalog refers to; `None` when its name is not one
/// the store writes (a catalog that cannot be trusted).
pub fn catalog_payload(catalog: &Catalog) -> Option<&str> {
    if catalog.payload.is_empty() {
        return Some(DEFAULT_PAYLOAD);
    }
    if catalog.payload != DEFAULT_PAYLOAD && payload_generation(&catalog.payload).is_none() {
        return None;
    }
    Some(&catalog.payload)
}

/// The newest valid catalog generation and the next generation number.
pub fn load_catalog(store: &Path) -> Result<(Catalog, u64), StoreError> {
    let mut generations: Vec<(u64, String)> = match fs::read_dir(store) {
        Ok(entries) => entries
            .filter_map(|entry| {
                let name = entry.ok()?.file_name().into_string().ok()?;
                Some((catalog_generation(&name)?, name))
            })
            .collect(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(io_error("read", store)(error)),
    };
    generations.sort_by_key(|(generation, _)| std::cmp::Reverse(*generation));
    let max_generation = generations.first().map_or(0, |(generation, _)| *generation);
    let next = max_generation.checked_add(1).ok_or_else(|| StoreError::Publish {
        path: store.to_path_buf(),
        reason: "the shared vector catalog generation overflows".into(),
    })?;
    for (generation, name) in &generations {
        let path = store.join(name);
        if !fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_file()) {
            continue;
        }
        let Ok(data) = fs::read(&path) else { continue };
        let Ok(catalog) = serde_json::from_slice::<Catalog>(&data) else { continue };
        if catalog.version != CATALOG_VERSION || catalog.generation != *generation || catalog.entries.is_none() {
            continue;
        }
        let Some(payload) = catalog_payload(&catalog) else { continue };
        if !fs::symlink_metadata(store.join(payload)).is_ok_and(|meta| meta.is_file()) {
            continue;
        }
        return Ok((catalog, next));
    }
    Ok((
        Catalog { version: CATALOG_VERSION, generation: 0, payload: String::new(), entries: Some(HashMap::new()) },
        next,
    ))
}

/// A step of publication, for fault injection in tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// The previous manifest was removed.
    Invalidate,
    /// New vectors were appended and synced.
    Payload,
    /// A new catalog generation was published.
    Catalog,
    /// The chunk records were written.
    Records,
    /// Metadata migration: one entry of a legacy `<project>/.git-agent/`
    /// folder was moved.
    MigrateLegacy,
    /// Metadata migration: one path-keyed index was merged.
    MigrateSearch,
    /// `index gc`: the compact payload generation was written and synced.
    GcPayload,
    /// `index gc`: the first (recovery) catalog generation was published.
    GcRecoveryCatalog,
    /// `index gc`: the second (current) catalog generation was published.
    GcCatalog,
    /// `index gc`: the first superseded generation file was removed.
    GcRemove,
    /// `index.remote`: the sync repository committed, before the push.
    SyncPush,
}

impl CrashPoint {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "invalidate" => Some(Self::Invalidate),
            "payload" => Some(Self::Payload),
            "catalog" => Some(Self::Catalog),
            "records" => Some(Self::Records),
            "migrate-legacy" => Some(Self::MigrateLegacy),
            "migrate-search" => Some(Self::MigrateSearch),
            "gc-payload" => Some(Self::GcPayload),
            "gc-recovery-catalog" => Some(Self::GcRecoveryCatalog),
            "gc-catalog" => Some(Self::GcCatalog),
            "gc-remove" => Some(Self::GcRemove),
            "sync-push" => Some(Self::SyncPush),
            _ => None,
        }
    }
}

pub fn crash_if(configured: Option<CrashPoint>, point: CrashPoint) {
    if configured == Some(point) {
        tracing::warn!(?point, "fault injection: killing the daemon during index publication or migration");
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// One record to publish with its vector.
pub struct RecordToWrite<'a> {
    /// Metadata; `offset`, `vector_key` and `vector_checksum` are filled
    /// in by publication.
    pub record: IndexRecord,
    pub vector: VectorData<'a>,
    /// Where this exact vector is already stored in the shared payload,
    /// when it was read from there.
    pub stored: Option<CatalogEntry>,
}

/// The values of a vector to publish: in memory (usually a mapped
/// payload), in the spool of new vectors, or already in the shared
/// payload. Only the first is in the heap, so publication holds one
/// vector at a time.
#[derive(Clone, Copy)]
pub enum VectorData<'a> {
    Values(&'a [f32]),
    Spooled(&'a NewVectors, Spooled),
    /// At this entry of the shared payload (read from another index);
    /// its bytes must still match the entry's checksum.
    Stored(CatalogEntry),
}

impl VectorData<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Values(values) => values.len(),
            Self::Spooled(_, at) => at.values(),
            Self::Stored(entry) => usize::try_from(entry.dimensions).unwrap_or(0),
        }
    }

    /// The little-endian bytes, written into `buf`; `payload` is the
    /// shared payload file.
    fn encode_into(&self, payload: &File, buf: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Self::Values(values) => {
                buf.clear();
                for value in *values {
                    buf.extend_from_slice(&value.to_le_bytes());
                }
                Ok(())
            }
            Self::Spooled(spool, at) => spool.read_bytes(*at, buf),
            Self::Stored(entry) => {
                buf.clear();
                buf.resize(self.len() * 4, 0);
                payload.read_exact_at(buf, u64::try_from(entry.offset).unwrap_or(u64::MAX))?;
                if crc32fast::hash(buf) != entry.checksum {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a shared vector changed while the index was refreshed; run the search again",
                    ));
                }
                Ok(())
            }
        }
    }
}

/// What to publish.
pub struct Publication<'a> {
    pub metadata_dir: &'a Path,
    pub index_dir: &'a Path,
    pub manifest: Manifest,
    pub records: Vec<RecordToWrite<'a>>,
    /// `--reindex`: append a new generation even for identities the
    /// catalog already has.
    pub force_new: bool,
    pub crash_at: Option<CrashPoint>,
}

/// Publishes a snapshot and returns it as loaded.
pub fn publish(publication: Publication<'_>, cancelled: &dyn Fn() -> bool) -> Result<Snapshot, StoreError> {
    let Publication { metadata_dir, index_dir, mut manifest, records, force_new, crash_at } = publication;
    let _index_lock = lock_blocking(&lock_path(index_dir), cancelled)?;
    let store = store_dir(metadata_dir);
    private_fs::ensure_private_dir(index_dir).map_err(io_error("create", index_dir))?;
    private_fs::ensure_private_dir(&store).map_err(io_error("create", &store))?;
    let _store_lock = lock_blocking(&lock_path(&store), cancelled)?;

    // 1. Invalidate the previous snapshot.
    let manifest_path = index_dir.join(MANIFEST);
    match fs::remove_file(&manifest_path) {
        Ok(()) => sync_dir(index_dir)?,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error("remove", &manifest_path)(error)),
    }
    crash_if(crash_at, CrashPoint::Invalidate);

    // 2. Append new vectors to the shared payload.
    let (mut catalog, next_generation) = load_catalog(&store)?;
    let payload_name = catalog_payload(&catalog)
        .ok_or_else(|| StoreError::Publish {
            path: store.clone(),
            reason: "the shared vector catalog names an invalid payload file".into(),
        })?
        .to_string();
    let payload_path = store.join(&payload_name);
    let payload = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .mode(0o600)
        .open(&payload_path)
        .map_err(io_error("open", &payload_path))?;
    let mut offset = payload.metadata().map_err(io_error("stat", &payload_path))?.len() as i64;
    let mut appended = Appender::new(offset);
    let mut entries = catalog.entries.take().unwrap_or_default();
    // Each identity written by this publication, with its bytes' checksum.
    let mut written: HashMap<String, (CatalogEntry, u32)> = HashMap::with_capacity(records.len());
    let mut changed = false;
    let mut out_records = Vec::with_capacity(records.len());
    let mut out_vectors = Vec::with_capacity(records.len());
    let mut local_bytes: Vec<u8> = Vec::new();
    // One vector's bytes at a time: new vectors come from the spool, so
    // the heap never holds all of them.
    let mut data: Vec<u8> = Vec::new();
    for item in records {
        let mut record = item.record;
        if record.dimensions < 1 || item.vector.len() as i64 != record.dimensions {
            return Err(StoreError::Publish {
                path: index_dir.to_path_buf(),
                reason: format!(
                    "vector record {} has {} values for {} dimensions",
                    record.chunk_id,
                    item.vector.len(),
                    record.dimensions
                ),
            });
        }
        let vector = current_location(item.vector, &record, &entries);
        if matches!(vector, VectorData::Stored(_)) {
            appended.flush(&payload).map_err(io_error("append to", &payload_path))?;
        }
        vector.encode_into(&payload, &mut data).map_err(io_error("read the vectors to publish in", index_dir))?;
        if record.embedding_input_hash.is_empty() {
            record.offset = local_bytes.len() as i64;
            record.vector_checksum = crc32fast::hash(&data);
            record.vector_key.clear();
            out_vectors.push(Some(VectorLoc::Local { offset: record.offset }));
            local_bytes.extend_from_slice(&data);
            out_records.push(record);
            continue;
        }
        let key = vector_key(&record.embedding_input_hash, &record.embedding_model, record.dimensions);
        let checksum = crc32fast::hash(&data);
        let entry = if let Some((entry, written_checksum)) = written.get(&key) {
            if *written_checksum != checksum {
                return Err(StoreError::Publish {
                    path: index_dir.to_path_buf(),
                    reason: format!("vector records for embedding key {key} contain conflicting payloads"),
                });
            }
            *entry
        } else {
            let existing = entries.get(&key).copied().filter(|_| !force_new);
            let reusable = match (existing, item.stored) {
                (Some(current), Some(known)) if current == known => Some(current),
                (Some(current), _) if current.dimensions == record.dimensions => {
                    appended.flush(&payload).map_err(io_error("append to", &payload_path))?;
                    let mut stored = vec![0u8; data.len()];
                    let same = payload.read_exact_at(&mut stored, current.offset as u64).is_ok()
                        && crc32fast::hash(&stored) == current.checksum
                        && stored == data;
                    same.then_some(current)
                }
                _ => None,
            };
            let entry = match reusable {
                Some(entry) => entry,
                None => {
                    appended.push(&payload, &data).map_err(io_error("append to", &payload_path))?;
                    let entry = CatalogEntry { offset, dimensions: record.dimensions, checksum };
                    offset += data.len() as i64;
                    entries.insert(key.clone(), entry);
                    changed = true;
                    entry
                }
            };
            written.insert(key.clone(), (entry, checksum));
            entry
        };
        record.offset = entry.offset;
        record.vector_key = key;
        record.vector_checksum = entry.checksum;
        out_vectors.push(Some(VectorLoc::Shared { offset: entry.offset }));
        out_records.push(record);
    }
    appended.flush(&payload).map_err(io_error("append to", &payload_path))?;
    // 3. and 4. The appended vectors are synced while the new catalog
    // generation, the local payload and the chunk records are written and
    // synced into unpublished temporary files beside their targets; then
    // they are published in the order readers need (the catalog once the
    // payload is durable, the records, the manifest last). A failure of
    // any of them publishes nothing: the staged files are removed.
    let previous = catalog.generation;
    let mut catalog_path = (previous > 0).then(|| store.join(catalog_name(previous)));
    let next_catalog = changed.then(|| Catalog {
        version: CATALOG_VERSION,
        generation: next_generation,
        payload: catalog.payload.clone(),
        entries: Some(entries),
    });
    let next_catalog_path = store.join(catalog_name(next_generation));
    let records_path = index_dir.join(RECORDS);
    let local_path = index_dir.join(LOCAL_PAYLOAD);
    let (synced, staged_catalog, staged_local, staged_records) = std::thread::scope(|scope| {
        let payload = &payload;
        let synced = scope.spawn(move || if changed { payload.sync_all() } else { Ok(()) });
        let staged_catalog =
            scope.spawn(|| next_catalog.as_ref().map(|catalog| stage_json(&next_catalog_path, catalog)).transpose());
        let staged_records = scope.spawn(|| stage_json(&records_path, &out_records));
        let staged_local = private_fs::stage_with(&local_path, |out| out.write_all(&local_bytes))
            .map_err(io_error("write", &local_path));
        (joined(synced), joined(staged_catalog), staged_local, joined(staged_records))
    });
    synced.map_err(io_error("sync", &payload_path))?;
    let (staged_catalog, staged_local, staged_records) = (staged_catalog?, staged_local?, staged_records?);
    drop((next_catalog, local_bytes));
    if let Some(staged) = staged_catalog {
        crash_if(crash_at, CrashPoint::Payload);
        staged.publish().map_err(io_error("write", &next_catalog_path))?;
        crash_if(crash_at, CrashPoint::Catalog);
        remove_old_generations(&store, previous, next_generation, &payload_name)?;
        catalog_path = Some(next_catalog_path);
    }
    drop((payload, written));
    staged_local.publish().map_err(io_error("write", &local_path))?;
    staged_records.publish().map_err(io_error("write", &records_path))?;
    crash_if(crash_at, CrashPoint::Records);

    // 5. The manifest, last.
    manifest.version = INDEX_VERSION;
    manifest.vector_store = SHARED_STORE_VERSION.to_string();
    manifest.file_count = out_records.iter().map(|record| record.path.as_str()).collect::<HashSet<_>>().len() as i64;
    manifest.chunk_count = out_records.len() as i64;
    let mut data = serde_json::to_vec(&manifest).map_err(|error| StoreError::Publish {
        path: index_dir.to_path_buf(),
        reason: format!("cannot encode the manifest: {error}"),
    })?;
    data.push(b'\n');
    write_file_atomic(&manifest_path, &data)?;

    let mut watched = vec![manifest_path, index_dir.join(RECORDS), payload_path.clone()];
    if let Some(path) = catalog_path {
        watched.push(path);
    }
    let fingerprint = Fingerprint::of(&watched);
    let shared = Payload::open(&payload_path).map_err(io_error("map", &payload_path))?;
    let local = Payload::open(&index_dir.join(LOCAL_PAYLOAD)).unwrap_or(Payload { map: None });
    // The view keeps the records compact; each record's key was derived
    // above (or cleared for a local vector).
    let mut records = RecordsBuilder::with_capacity(out_records.len());
    for record in &out_records {
        records.push(record, Some(record.vector_key.as_str()));
    }
    drop(out_records);
    Ok(Snapshot {
        dir: index_dir.to_path_buf(),
        manifest,
        records: records.finish(),
        vectors: out_vectors,
        shared: Arc::new(shared),
        local: Arc::new(local),
        fingerprint,
    })
}

/// New vectors on their way to the end of the shared payload, written a
/// mebibyte at a time instead of one system call per vector. Whatever
/// reads the payload flushes first.
struct Appender {
    /// Where the buffered bytes go.
    at: u64,
    buf: Vec<u8>,
}

impl Appender {
    const CAPACITY: usize = 1 << 20;

    fn new(end: i64) -> Self {
        Self { at: u64::try_from(end).unwrap_or(0), buf: Vec::new() }
    }

    fn push(&mut self, payload: &File, bytes: &[u8]) -> io::Result<()> {
        if self.buf.len() + bytes.len() > Self::CAPACITY {
            self.flush(payload)?;
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self, payload: &File) -> io::Result<()> {
        if !self.buf.is_empty() {
            payload.write_all_at(&self.buf, self.at)?;
            self.at += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }
}

/// A vector read from the shared payload before publication took the
/// lifecycle lock may have moved since (`index gc` compacts the payload
/// and publishes new offsets): the current catalog's entry for the same
/// identity, dimensions and checksum is where its bytes are now.
fn current_location<'a>(
    vector: VectorData<'a>,
    record: &IndexRecord,
    entries: &HashMap<String, CatalogEntry>,
) -> VectorData<'a> {
    let VectorData::Stored(stored) = vector else { return vector };
    if record.embedding_input_hash.is_empty() {
        return vector;
    }
    let key = vector_key(&record.embedding_input_hash, &record.embedding_model, record.dimensions);
    match entries.get(&key) {
        Some(current) if current.dimensions == stored.dimensions && current.checksum == stored.checksum => {
            VectorData::Stored(*current)
        }
        _ => vector,
    }
}

fn remove_old_generations(store: &Path, previous: u64, current: u64, payload_name: &str) -> Result<(), StoreError> {
    let mut retained: HashSet<String> = HashSet::from([payload_name.to_string()]);
    if previous > 0
        && let Ok(data) = fs::read(store.join(catalog_name(previous)))
        && let Ok(catalog) = serde_json::from_slice::<Catalog>(&data)
        && let Some(name) = catalog_payload(&catalog)
    {
        retained.insert(name.to_string());
    }
    let entries = fs::read_dir(store).map_err(io_error("read", store))?;
    let mut removed = false;
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else { continue };
        let obsolete = match catalog_generation(&name) {
            Some(generation) => generation != previous && generation != current,
            None => (name == DEFAULT_PAYLOAD || payload_generation(&name).is_some()) && !retained.contains(&name),
        };
        if obsolete {
            fs::remove_file(entry.path()).map_err(io_error("remove", &entry.path()))?;
            removed = true;
        }
    }
    if removed {
        sync_dir(store)?;
    }
    Ok(())
}

fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    private_fs::write_atomic(path, bytes).map_err(io_error("write", path))
}

/// `value` as one line of JSON, encoded straight into a synced,
/// unpublished temporary file beside `path` ([`private_fs::stage_with`]):
/// the records and the catalog of a large index are tens of megabytes,
/// which publication must not hold a second time as text.
fn stage_json(path: &Path, value: &impl Serialize) -> Result<private_fs::Staged, StoreError> {
    private_fs::stage_with(path, |out| {
        serde_json::to_writer(&mut *out, value)?;
        out.write_all(b"\n")
    })
    .map_err(io_error("write", path))
}

/// The result of a scoped thread; its panic goes on unwinding here.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir).and_then(|file| file.sync_all()).map_err(io_error("sync", dir))
}

/// Input hashes of complete indexes under `metadata_dir` (other than
/// `exclude`) with the given model and dimensions, and their shared keys:
/// the candidates for cross-index reuse. Only those in `wanted`, or all
/// of them for `None`.
pub fn referenced_inputs(
    metadata_dir: &Path,
    exclude: &Path,
    model: &str,
    dimensions: i64,
    wanted: Option<&HashSet<Hash32>>,
) -> HashSet<Hash32> {
    let mut found = HashSet::new();
    let mut pending = vec![search_root(metadata_dir)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        let mut has_manifest = false;
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else { continue };
            let name = entry.file_name();
            if file_type.is_dir() {
                if name != STORE_DIR && name != "query-locks" {
                    pending.push(entry.path());
                }
            } else if name == MANIFEST {
                has_manifest = true;
            }
        }
        if !has_manifest || dir == exclude {
            continue;
        }
        let Some(manifest) = read_manifest(&dir) else { continue };
        if manifest.embedding_model != model || manifest.dimensions != dimensions || manifest.version != INDEX_VERSION {
            continue;
        }
        let Some(records) = read_records(&dir) else { continue };
        for record in records {
            let Some(hash) = parse_hash(&record.embedding_input_hash) else { continue };
            if wanted.is_none_or(|wanted| wanted.contains(&hash))
                && record.embedding_model == model
                && record.dimensions == dimensions
                && record.vector_key == vector_key(&record.embedding_input_hash, model, dimensions)
            {
                found.insert(hash);
            }
        }
        if wanted.is_some_and(|wanted| found.len() == wanted.len()) {
            break;
        }
    }
    found
}

/// The current catalog's entries for `inputs`, skipping any whose bytes
/// fail their checksum. The bytes stay in the payload: publication reads
/// them one at a time ([`VectorData::Stored`]).
pub fn read_shared_vectors(
    metadata_dir: &Path,
    inputs: &HashSet<Hash32>,
    model: &str,
    dimensions: i64,
    cancelled: &dyn Fn() -> bool,
) -> Result<HashMap<Hash32, CatalogEntry>, StoreError> {
    let store = store_dir(metadata_dir);
    let mut out = HashMap::new();
    if inputs.is_empty() || !store.is_dir() {
        return Ok(out);
    }
    let _lock = lock_blocking(&lock_path(&store), cancelled)?;
    let Ok((catalog, _)) = load_catalog(&store) else { return Ok(out) };
    let Some(name) = catalog_payload(&catalog) else { return Ok(out) };
    let Ok(payload) = Payload::open(&store.join(name)) else { return Ok(out) };
    let Some(entries) = catalog.entries.as_ref() else { return Ok(out) };
    for hash in inputs {
        let Some(entry) = entries.get(&vector_key(&hex(hash), model, dimensions)) else { continue };
        if entry.dimensions != dimensions {
            continue;
        }
        let Some(bytes) = payload.bytes(entry.offset, entry.dimensions) else { continue };
        if crc32fast::hash(bytes) != entry.checksum {
            continue;
        }
        out.insert(*hash, *entry);
    }
    Ok(out)
}

/// Every folder under the metadata root's `search/` that holds a valid
/// manifest, sorted.
pub fn complete_index_dirs(metadata_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![search_root(metadata_dir)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else { continue };
            if file_type.is_dir() && entry.file_name() != "query-locks" && entry.file_name() != STORE_DIR {
                pending.push(entry.path());
            }
        }
        if dir.join(MANIFEST).is_file() && read_manifest(&dir).is_some() {
            out.push(dir);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(path: &str, input: &str, dims: i64) -> IndexRecord {
        IndexRecord {
            chunk_id: "c000001".into(),
            path: path.into(),
            source: "filesystem".into(),
            start_line: 1,
            end_line: 2,
            content_hash: hex(&Sha256::digest(input.as_bytes())),
            embedding_input_hash: hex(&Sha256::digest(input.as_bytes())),
            embedding_model: "m".into(),
            dimensions: dims,
            size: 10,
            mtime_unix_nano: 20,
            ..IndexRecord::default()
        }
    }

    fn publish_simple(meta: &Path, dir: &Path, items: &[(&str, &str, Vec<f32>)], force: bool) -> Snapshot {
        try_publish(meta, dir, items, force).unwrap()
    }

    fn try_publish(
        meta: &Path,
        dir: &Path,
        items: &[(&str, &str, Vec<f32>)],
        force: bool,
    ) -> Result<Snapshot, StoreError> {
        let records = items
            .iter()
            .map(|(path, input, vector)| RecordToWrite {
                record: record(path, input, vector.len() as i64),
                vector: VectorData::Values(vector),
                stored: None,
            })
            .collect();
        let manifest = Manifest {
            mode: "filesystem".into(),
            root: "/r".into(),
            embedding_model: "m".into(),
            dimensions: 2,
            created_at: "2026-01-02T03:04:05Z".into(),
            ..Manifest::default()
        };
        publish(
            Publication { metadata_dir: meta, index_dir: dir, manifest, records, force_new: force, crash_at: None },
            &|| false,
        )
    }

    /// Names left in `dir` that start with `.tmp-`.
    fn staged_leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".tmp-"))
            .collect()
    }

    #[test]
    fn a_failed_publication_publishes_no_snapshot_and_leaves_no_staged_file() {
        let temp = tempfile::tempdir().unwrap();
        let meta = temp.path();
        let dir = filesystem_index_dir(meta, "/r", None);
        publish_simple(meta, &dir, &[("x.go", "one", vec![1.0, 2.0])], false);
        // The records cannot be renamed into place: a folder holds their name.
        fs::remove_file(dir.join(RECORDS)).unwrap();
        fs::create_dir_all(dir.join(RECORDS).join("blocker")).unwrap();
        let error = try_publish(meta, &dir, &[("x.go", "one", vec![1.0, 2.0]), ("y.go", "two", vec![3.0, 4.0])], false)
            .unwrap_err();
        assert!(error.to_string().contains(RECORDS), "{error}");
        assert!(!dir.join(MANIFEST).exists(), "a failed publication left a manifest");
        assert!(load(meta, &dir, &|| false).map(|snapshot| !snapshot.is_complete()).unwrap_or(true));
        assert_eq!(staged_leftovers(&dir), Vec::<String>::new());
        assert_eq!(staged_leftovers(&store_dir(meta)), Vec::<String>::new());
        // Once the name is free again, publication succeeds.
        fs::remove_dir_all(dir.join(RECORDS)).unwrap();
        let published = publish_simple(meta, &dir, &[("x.go", "one", vec![1.0, 2.0])], false);
        assert_eq!(published.manifest.chunk_count, 1);
    }

    #[test]
    fn appended_vectors_reach_the_payload_in_order_across_flushes() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("payload");
        fs::write(&path, b"head").unwrap();
        let file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut appended = Appender::new(4);
        let mut expected = b"head".to_vec();
        for index in 0..7_000u32 {
            // Odd sizes, so a flush falls between two vectors' bytes.
            let bytes: Vec<u8> = (0..(index % 700 + 1)).map(|byte| (byte ^ index) as u8).collect();
            appended.push(&file, &bytes).unwrap();
            expected.extend_from_slice(&bytes);
        }
        assert!(expected.len() > 2 * Appender::CAPACITY);
        appended.flush(&file).unwrap();
        assert_eq!(fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn published_snapshots_load_back_and_share_payload() {
        let temp = tempfile::tempdir().unwrap();
        let meta = temp.path();
        let a = filesystem_index_dir(meta, "/r", None);
        let b = filesystem_index_dir(meta, "/other", None);
        let written =
            publish_simple(meta, &a, &[("x.go", "one", vec![1.0, 2.0]), ("y.go", "two", vec![3.0, 4.0])], false);
        assert_eq!(written.manifest.chunk_count, 2);
        assert_eq!(written.vector(1), Some(&[3.0f32, 4.0][..]));
        let loaded = load(meta, &a, &|| false).unwrap();
        assert!(loaded.is_complete());
        assert_eq!(loaded.records.to_index_records(), written.records.to_index_records());
        assert_eq!(loaded.vector(0), Some(&[1.0f32, 2.0][..]));
        assert!(loaded.fingerprint.is_current());

        // A second index with one shared identity appends only the new one.
        let payload = store_dir(meta).join(DEFAULT_PAYLOAD);
        let before = fs::metadata(&payload).unwrap().len();
        publish_simple(meta, &b, &[("x.go", "one", vec![1.0, 2.0]), ("z.go", "three", vec![5.0, 6.0])], false);
        assert_eq!(fs::metadata(&payload).unwrap().len(), before + 8);
        // Reindex appends a new generation even for known identities.
        publish_simple(meta, &b, &[("x.go", "one", vec![1.0, 2.0])], true);
        assert_eq!(fs::metadata(&payload).unwrap().len(), before + 16);
        assert!(!loaded.fingerprint.is_current() || fs::metadata(&payload).is_ok());
        // Only the last two catalog generations are kept.
        let catalogs = fs::read_dir(store_dir(meta))
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().file_name().to_string_lossy().starts_with("catalog-"))
            .count();
        assert_eq!(catalogs, 2);
    }

    #[test]
    fn corrupt_payload_and_checksums_are_cache_misses() {
        let temp = tempfile::tempdir().unwrap();
        let meta = temp.path();
        let dir = filesystem_index_dir(meta, "/r", None);
        publish_simple(meta, &dir, &[("x.go", "one", vec![1.0, 2.0]), ("y.go", "two", vec![3.0, 4.0])], false);
        // Flip a byte of the first vector.
        let payload = store_dir(meta).join(DEFAULT_PAYLOAD);
        let mut bytes = fs::read(&payload).unwrap();
        bytes[0] ^= 0xff;
        fs::write(&payload, &bytes).unwrap();
        let loaded = load(meta, &dir, &|| false).unwrap();
        assert_eq!(loaded.vectors[0], None);
        assert!(loaded.vectors[1].is_some());

        // A record whose checksum disagrees with the catalog is a miss too.
        let mut records = read_records(&dir).unwrap();
        records[1].vector_checksum ^= 1;
        fs::write(dir.join(RECORDS), serde_json::to_vec(&records).unwrap()).unwrap();
        let loaded = load(meta, &dir, &|| false).unwrap();
        assert_eq!(loaded.vectors[1], None);

        // An unknown field or version makes the whole manifest unusable.
        fs::write(dir.join(MANIFEST), br#"{"version":3,"vector_store":"shared-v1","extra":1}"#).unwrap();
        assert!(!load(meta, &dir, &|| false).unwrap().is_complete());
        fs::write(dir.join(MANIFEST), br#"{"version":9}"#).unwrap();
        assert!(!load(meta, &dir, &|| false).unwrap().is_complete());
    }

    #[test]
    fn catalog_recovery_keeps_the_last_valid_generation() {
        let temp = tempfile::tempdir().unwrap();
        let meta = temp.path();
        let dir = filesystem_index_dir(meta, "/r", None);
        publish_simple(meta, &dir, &[("x.go", "one", vec![1.0, 2.0])], false);
        // A torn newer generation is skipped.
        fs::write(store_dir(meta).join(catalog_name(7)), b"{\"version\":1,").unwrap();
        let loaded = load(meta, &dir, &|| false).unwrap();
        assert!(loaded.vectors[0].is_some());
        let (_, next) = load_catalog(&store_dir(meta)).unwrap();
        assert_eq!(next, 8);
    }

    #[test]
    fn version_2_indexes_stay_readable_for_migration() {
        let temp = tempfile::tempdir().unwrap();
        let meta = temp.path();
        let dir = filesystem_index_dir(meta, "/r", None);
        fs::create_dir_all(&dir).unwrap();
        let vectors: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        fs::write(dir.join(LOCAL_PAYLOAD), &vectors).unwrap();
        let mut first = record("x.go", "one", 2);
        first.offset = 0;
        let mut second = record("y.go", "two", 2);
        second.offset = 8;
        // A v2 entry may not carry a shared reference.
        let mut shared = record("z.go", "three", 2);
        shared.vector_key = "k".into();
        fs::write(dir.join(RECORDS), serde_json::to_vec(&[first, second, shared]).unwrap()).unwrap();
        fs::write(
            dir.join(MANIFEST),
            br#"{"version":2,"mode":"filesystem","root":"/r","embedding_model":"m","dimensions":2,"created_at":"2026-01-02T03:04:05Z"}"#,
        )
        .unwrap();
        let loaded = load(meta, &dir, &|| false).unwrap();
        assert!(loaded.is_complete());
        assert_eq!(loaded.manifest.version, LEGACY_INDEX_VERSION);
        assert_eq!(loaded.vector(0), Some(&[1.0f32, 2.0][..]));
        assert_eq!(loaded.vector(1), Some(&[3.0f32, 4.0][..]));
        assert_eq!(loaded.vectors[2], None);
    }

    #[test]
    fn index_dirs_and_keys_are_stable() {
        let meta = Path::new("/home/u/.git-agent/p");
        let dir = filesystem_index_dir(meta, "/work/repo", None);
        assert_eq!(dir.parent().unwrap(), Path::new("/home/u/.git-agent/p/search/fs"));
        assert_eq!(dir.file_name().unwrap().len(), 16);
        let scoped = filesystem_index_dir(meta, "/work/repo", Some(&[".github".to_string()]));
        assert!(scoped.file_name().unwrap().to_string_lossy().starts_with("scope-"));
        assert_eq!(
            lock_path(&dir).file_name().unwrap().to_string_lossy(),
            format!("{}.lock", dir.file_name().unwrap().to_string_lossy())
        );
        assert_ne!(vector_key("a", "m", 2), vector_key("a", "m", 3));
        assert_ne!(vector_key("a", "m", 2), vector_key("a", "n", 2));
    }
}

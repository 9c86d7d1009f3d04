//! The daemon's in-memory view of one physical index: the snapshot as
//! published (records plus mapped vectors), the file versions it was last
//! matched against (chunks and body snapshot), and the links between them.
//! A `LiveIndex` is immutable; a refresh builds a new one and the daemon
//! swaps it in, so a running search keeps the view it started with.

use super::bodies::BodyRef;
use super::store::Snapshot;
use crate::chunking::{self, ChunkDraft, Hash32};
use crate::rank::query::Hit;
use crate::rank::ranking::{self, FileTerms};
use crate::source::discovery::{FileStat, SkipReason};
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

/// A file modified this close to when it was read may have changed again
/// within the timestamp's granularity: it is read again next time.
pub const RACY_WINDOW_NS: i128 = 2_000_000_000;

/// The `source` of filesystem records (and of their path-only checksums).
pub const FILESYSTEM_SOURCE: &str = "filesystem";

/// One version of a file as a search read it.
#[derive(Debug)]
pub struct FileContent {
    pub path: String,
    pub stat: FileStat,
    /// When reading started, nanoseconds since the epoch.
    pub read_started_ns: i128,
    /// The embedding input cap the chunk hashes were computed with.
    pub max_input_chars: usize,
    pub chunks: Vec<ChunkDraft>,
    pub body: BodyRef,
    /// The committed blob this version was read from (revision mode).
    pub blob: Option<gix::ObjectId>,
    terms: OnceLock<FileTerms>,
}

impl FileContent {
    pub fn new(
        path: String,
        stat: FileStat,
        read_started_ns: i128,
        max_input_chars: usize,
        chunks: Vec<ChunkDraft>,
        body: BodyRef,
    ) -> Self {
        Self { path, stat, read_started_ns, max_input_chars, chunks, body, blob: None, terms: OnceLock::new() }
    }

    /// This version, read from the committed blob `blob`.
    pub fn with_blob(mut self, blob: Option<gix::ObjectId>) -> Self {
        self.blob = blob;
        self
    }

    /// Whether this version still describes the file with `stat`.
    pub fn is_fresh_for(&self, stat: &FileStat, max_input_chars: usize) -> bool {
        self.stat == *stat && self.max_input_chars == max_input_chars && !self.is_racy()
    }

    pub fn is_racy(&self) -> bool {
        i128::from(self.stat.mtime_ns) + RACY_WINDOW_NS >= self.read_started_ns
    }

    /// The record checksum of chunk `index` ([`chunking::content_hash`]),
    /// computed when a record of this version is written (and not kept:
    /// the record holds it from then on).
    pub fn content_hash(&self, index: usize) -> Hash32 {
        let chunk = &self.chunks[index];
        chunking::content_hash(&self.path, self.source(), chunk, self.chunk_body(chunk))
    }

    /// The `source` of this version's records: `revision` for a
    /// committed blob.
    pub fn source(&self) -> &'static str {
        if self.blob.is_some() { crate::source::revision::SOURCE } else { FILESYSTEM_SOURCE }
    }

    pub fn chunk_body(&self, chunk: &ChunkDraft) -> &str {
        self.body.slice(chunk.body_start as usize, chunk.body_len as usize)
    }

    /// Whether the term statistics were computed already.
    pub fn has_terms(&self) -> bool {
        self.terms.get().is_some()
    }

    /// Body term statistics, computed on first use from the snapshot.
    pub fn terms(&self) -> &FileTerms {
        self.terms.get_or_init(|| {
            FileTerms::build(
                &self.path,
                self.chunks.iter().map(|chunk| {
                    let symbol = chunk.symbol.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                    (self.chunk_body(chunk), symbol)
                }),
            )
        })
    }
}

/// A record's link to the chunk it was matched with.
#[derive(Debug, Clone)]
pub struct Link {
    pub content: Arc<FileContent>,
    pub chunk: u32,
}

/// The records of one path.
#[derive(Debug, Clone, Default)]
pub struct PathEntry {
    pub records: Vec<usize>,
    /// Every record is usable and linked, one per chunk of the content.
    pub complete: bool,
}

/// See the module documentation.
pub struct LiveIndex {
    pub snapshot: Arc<Snapshot>,
    pub model: String,
    pub dimensions: usize,
    /// Per record: the norm of its vector when the vector is usable for
    /// this model and these dimensions.
    pub norms: Vec<Option<f64>>,
    pub links: Vec<Option<Link>>,
    pub paths: HashMap<String, PathEntry>,
    /// The first usable record of each embedding input, sorted by input
    /// hash ([`LiveIndex::record_for_input`]): four bytes a record where a
    /// map would take over forty.
    by_input: Vec<u32>,
    /// File versions this daemon has read, by path.
    pub contents: HashMap<String, Arc<FileContent>>,
    /// Files rejected by their contents (binary, non-text, ...), by path.
    pub rejected: HashMap<String, (FileStat, SkipReason)>,
    /// The latest rankings computed over this view, by query key.
    memo: Mutex<VecDeque<(u128, Arc<Vec<Hit>>)>>,
}

/// How many rankings a view remembers.
const MEMO_ENTRIES: usize = 16;

impl std::fmt::Debug for LiveIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveIndex")
            .field("dir", &self.snapshot.dir)
            .field("records", &self.snapshot.records.len())
            .field("contents", &self.contents.len())
            .finish()
    }
}

impl LiveIndex {
    /// Builds the view of `snapshot` for `model`/`dimensions`, linking its
    /// records to `contents`. Norms are reused from `previous` when it has
    /// the same snapshot.
    pub fn build(
        snapshot: Arc<Snapshot>,
        model: &str,
        dimensions: usize,
        contents: HashMap<String, Arc<FileContent>>,
        rejected: HashMap<String, (FileStat, SkipReason)>,
        previous: Option<&LiveIndex>,
    ) -> Self {
        let count = snapshot.records.len();
        let input_hashes: Vec<Option<Hash32>> = snapshot.records.iter().map(|record| record.input_hash()).collect();
        let norms = match previous {
            Some(previous)
                if Arc::ptr_eq(&previous.snapshot, &snapshot)
                    && previous.model == model
                    && previous.dimensions == dimensions =>
            {
                previous.norms.clone()
            }
            _ => compute_norms(&snapshot, &input_hashes, model, dimensions),
        };
        let mut paths: HashMap<String, PathEntry> = HashMap::new();
        for (index, record) in snapshot.records.iter().enumerate() {
            match paths.get_mut(record.path()) {
                Some(entry) => entry.records.push(index),
                None => {
                    paths.insert(record.path().to_string(), PathEntry { records: vec![index], complete: false });
                }
            }
        }
        let mut links: Vec<Option<Link>> = vec![None; count];
        let by_input = first_usable_by_input(&input_hashes, &norms);
        for (path, entry) in paths.iter_mut() {
            entry.records.shrink_to_fit();
            let Some(content) = contents.get(path) else { continue };
            let mut used = vec![false; content.chunks.len()];
            let mut linked = 0;
            for &index in &entry.records {
                let record = snapshot.records.get(index);
                let Some(hash) = input_hashes[index] else { continue };
                let found = content.chunks.iter().enumerate().position(|(chunk_index, chunk)| {
                    !used[chunk_index]
                        && i64::from(chunk.start_line) == record.start_line()
                        && i64::from(chunk.end_line) == record.end_line()
                        && chunk.input_hash == hash
                });
                if let Some(chunk_index) = found {
                    used[chunk_index] = true;
                    links[index] = Some(Link { content: Arc::clone(content), chunk: chunk_index as u32 });
                    if norms[index].is_some() {
                        linked += 1;
                    }
                }
            }
            entry.complete = linked == entry.records.len() && linked == content.chunks.len();
        }
        Self {
            snapshot,
            model: model.to_string(),
            dimensions,
            norms,
            links,
            paths,
            by_input,
            contents,
            rejected,
            memo: Mutex::new(VecDeque::new()),
        }
    }

    /// The first usable record whose embedding input is `hash`.
    pub fn record_for_input(&self, hash: &Hash32) -> Option<usize> {
        let records = &self.snapshot.records;
        let at = self.by_input.partition_point(|&index| records.get(index as usize).input_hash().as_ref() < Some(hash));
        let index = *self.by_input.get(at)? as usize;
        (records.get(index).input_hash().as_ref() == Some(hash)).then_some(index)
    }

    /// A remembered ranking.
    pub fn memo_get(&self, key: u128) -> Option<Arc<Vec<Hit>>> {
        let memo = self.memo.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        memo.iter().find(|(stored, _)| *stored == key).map(|(_, hits)| Arc::clone(hits))
    }

    /// Remembers a ranking, forgetting the oldest beyond a few.
    pub fn memo_put(&self, key: u128, hits: Arc<Vec<Hit>>) {
        let mut memo = self.memo.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        memo.retain(|(stored, _)| *stored != key);
        memo.push_back((key, hits));
        while memo.len() > MEMO_ENTRIES {
            memo.pop_front();
        }
    }

    /// Roughly what keeping this view costs: the mapped bytes of its
    /// usable vectors plus a share per record for its metadata.
    pub fn footprint(&self) -> u64 {
        const PER_RECORD: u64 = 512;
        let usable = self.norms.iter().filter(|norm| norm.is_some()).count() as u64;
        usable * self.dimensions as u64 * 4 + self.snapshot.records.len() as u64 * PER_RECORD
    }

    /// The vector of a usable record.
    pub fn vector(&self, index: usize) -> Option<&[f32]> {
        self.norms[index]?;
        self.snapshot.vector(index)
    }
}

/// Per distinct input hash, the lowest index of a usable record with it,
/// sorted by hash.
fn first_usable_by_input(hashes: &[Option<Hash32>], norms: &[Option<f64>]) -> Vec<u32> {
    let mut usable: Vec<u32> = (0..hashes.len())
        .filter(|&index| hashes[index].is_some() && norms[index].is_some())
        .map(|index| index as u32)
        .collect();
    usable.sort_unstable_by_key(|&index| (hashes[index as usize], index));
    usable.dedup_by_key(|index| hashes[*index as usize]);
    usable.shrink_to_fit();
    usable
}

fn compute_norms(snapshot: &Snapshot, hashes: &[Option<Hash32>], model: &str, dimensions: usize) -> Vec<Option<f64>> {
    let count = snapshot.records.len();
    let norm_of = |index: usize| -> Option<f64> {
        let record = snapshot.records.get(index);
        if record.embedding_model() != model || record.dimensions() != dimensions as i64 || hashes[index].is_none() {
            return None;
        }
        snapshot.vector(index).map(ranking::norm)
    };
    if count < 4096 {
        return (0..count).map(norm_of).collect();
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let per = count.div_ceil(threads);
    let mut out = vec![None; count];
    std::thread::scope(|scope| {
        for (part, slot) in out.chunks_mut(per).enumerate() {
            let norm_of = &norm_of;
            scope.spawn(move || {
                for (offset, value) in slot.iter_mut().enumerate() {
                    *value = norm_of(part * per + offset);
                }
            });
        }
    });
    out
}

/// Computes the term statistics of `contents` that are missing, on up to
/// four threads, stopping early once `cancelled` says so. Ranking calls it
/// before its lexical pass, and a build calls it beside publication so the
/// first ranking finds the statistics ready.
pub fn compute_missing_terms(contents: &[&Arc<FileContent>], cancelled: &(dyn Fn() -> bool + Sync)) {
    let pending: Vec<&Arc<FileContent>> = contents.iter().copied().filter(|content| !content.has_terms()).collect();
    if pending.is_empty() {
        return;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let per = pending.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for part in pending.chunks(per) {
            scope.spawn(move || {
                for content in part {
                    if cancelled() {
                        return;
                    }
                    content.terms();
                }
            });
        }
    });
}

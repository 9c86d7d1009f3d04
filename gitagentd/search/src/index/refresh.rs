//! Bringing one physical index up to date with the files on disk. Runs
//! while the caller holds the global index single flight.
//!
//! 1. `prepare` (blocking): reload the snapshot if its files changed under
//!    the daemon, walk the source, read only files whose stat changed (or
//!    that were read too soon after their last change), chunk them into a
//!    new body snapshot segment, and resolve each candidate chunk's vector:
//!    from this index by exact embedding input, else (not for `--reindex`)
//!    from another complete index of the metadata root, else "missing".
//! 2. the caller embeds the missing inputs (async, outside this module).
//! 3. `finish` (blocking): assemble the records (candidates, plus entries
//!    `--code` and visible scopes must preserve), publish when anything
//!    differs from the snapshot, and build the new [`LiveIndex`].
//!
//! When nothing changed, `prepare` says so and the cached view is reused
//! as is: that is the warm path.

use super::bodies::{BodyWriter, body_ref};
use super::live::{FileContent, LiveIndex};
use super::records::Record;
use super::spool::{NewVectors, Spooled};
use super::store::{self, CatalogEntry, CrashPoint, IndexRecord, Manifest, RecordToWrite, StoreError, VectorData};
use crate::chunking::{self, ChunkDraft, Hash32, hex};
use crate::paths::{is_code_path, path_in_scope};
use crate::source::discovery::{self, FileStat, IgnoreRules, MAX_FILE_BYTES, SkipCounts, SkipReason};
use crate::source::revision::{self, RevisionError, TreeSource};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// What one refresh is asked to do.
#[derive(Debug, Clone)]
pub struct RefreshRequest {
    pub root: PathBuf,
    pub metadata_dir: PathBuf,
    pub index_dir: PathBuf,
    /// Limits the walk; empty for the whole root.
    pub scope: Vec<String>,
    /// A visible scope shares the root's cache: entries outside it are
    /// kept while their files are unchanged.
    pub shared_scope: bool,
    pub code_only: bool,
    pub reindex: bool,
    /// When the command started (to let parallel `--reindex` requests
    /// reuse a rebuild that completed after they started).
    pub started_ns: i128,
    pub model: String,
    pub dimensions: usize,
    pub max_input_chars: usize,
    pub manifest: Manifest,
    pub temp_dir: PathBuf,
    pub crash_at: Option<CrashPoint>,
    /// Revision mode: the committed tree to read instead of `root`'s files.
    pub tree: Option<Arc<TreeSource>>,
    /// Every file's text passes through it before it is chunked, so chunk
    /// bodies, embedding inputs and the stored text hold markers only.
    pub redactor: gitagent_provider::Redactor,
}

/// Receives discovery diagnostics and timings.
pub trait Reporter: Send + Sync {
    fn skip(&self, path: &str, reason: SkipReason);
    fn timing(&self, step: &str, duration: Duration);
    /// The CPU time a step took on every thread it ran on (`read`,
    /// `chunk` and `segment` on the walk's threads, `persist`), when the
    /// step ran; steps overlap in wall time, so their CPU tells which one
    /// costs the most.
    fn cpu(&self, step: &str, cpu: Duration);
}

/// CPU time the calling thread has used (zero where the clock is missing).
pub fn thread_cpu() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(Duration::ZERO, Duration::from)
}

#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Revision(#[from] RevisionError),
    #[error(
        "cannot create the search snapshot in {dir}: {source}\nhint: set TMPDIR to a writable folder with free space"
    )]
    Snapshot {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where a candidate chunk's vector comes from.
#[derive(Debug, Clone)]
enum Source {
    /// A usable record of the current snapshot.
    Record(usize),
    /// Another index's entry in the shared store (its bytes are read
    /// from the payload when the record is written).
    Shared(CatalogEntry),
    /// To be embedded.
    Missing,
}

/// One candidate file.
#[derive(Debug, Clone)]
struct Candidate {
    content: Arc<FileContent>,
}

/// The state between `prepare` and `finish`.
pub struct Prepared {
    request: RefreshRequest,
    pub live: Arc<LiveIndex>,
    /// Candidate paths in walk order.
    pub candidate_paths: Vec<String>,
    candidates: Vec<Candidate>,
    /// Accepted files that are not candidates (`--code`), with their stat.
    others: Vec<(String, FileStat)>,
    sources: Vec<Vec<Source>>,
    /// Unique embedding inputs to embed, with the chunks that need them.
    pub missing: Vec<MissingInput>,
    pub reindex: bool,
    pub unchanged: bool,
    pub files: usize,
    pub chunks: usize,
    pub reused: usize,
    pub embedded_chunks: usize,
    pub skipped: SkipCounts,
    /// Inputs already handed to the early sink while the walk ran (see
    /// [`prepare`]): their vectors come from there.
    pub streamed: HashSet<Hash32>,
    contents: HashMap<String, Arc<FileContent>>,
    rejected: HashMap<String, (FileStat, SkipReason)>,
}

/// One input the embeddings endpoint must see.
#[derive(Debug, Clone)]
pub struct MissingInput {
    pub hash: Hash32,
    pub input_bytes: usize,
    /// (candidate index, chunk index) of one chunk with this input.
    first: (usize, usize),
}

impl Prepared {
    /// The candidate files' versions, for work that runs beside
    /// publication ([`warm_terms`]).
    pub fn candidate_contents(&self) -> Vec<Arc<FileContent>> {
        self.candidates.iter().map(|candidate| Arc::clone(&candidate.content)).collect()
    }

    /// The exact input text of a missing entry, built from the snapshot.
    pub fn input_text(&self, missing: &MissingInput) -> String {
        let candidate = &self.candidates[missing.first.0];
        input_text(&candidate.content, missing.first.1, self.request.max_input_chars)
    }

    /// A builder for the inputs of `self.missing[selected[i]]` (by ranges
    /// of `selected`) that owns what it needs.
    pub fn input_builder(
        &self,
        selected: &[usize],
    ) -> impl Fn(std::ops::Range<usize>) -> Vec<String> + Send + Sync + 'static {
        let parts: Vec<(Arc<FileContent>, usize)> = selected
            .iter()
            .map(|&index| {
                let missing = &self.missing[index];
                (Arc::clone(&self.candidates[missing.first.0].content), missing.first.1)
            })
            .collect();
        let cap = self.request.max_input_chars;
        move |range| parts[range].iter().map(|(content, chunk)| input_text(content, *chunk, cap)).collect()
    }
}

fn input_text(content: &FileContent, chunk: usize, cap: usize) -> String {
    let draft = &content.chunks[chunk];
    chunking::chunk_input(&content.path, content.body.text(), draft, cap)
}

fn now_ns() -> i128 {
    git_agent_shared::timefmt::unix_nanos(SystemTime::now())
}

/// Loads the snapshot of `request.index_dir` as a fresh view.
pub fn load_live(
    request: &RefreshRequest,
    previous: Option<&LiveIndex>,
    cancelled: &dyn Fn() -> bool,
) -> Result<Arc<LiveIndex>, RefreshError> {
    let reusable = previous.filter(|live| live.snapshot.fingerprint.is_current());
    if let Some(live) = reusable {
        if live.model == request.model && live.dimensions == request.dimensions {
            return Ok(Arc::new(LiveIndex::build(
                Arc::clone(&live.snapshot),
                &request.model,
                request.dimensions,
                live.contents.clone(),
                live.rejected.clone(),
                Some(live),
            )));
        }
        return Ok(Arc::new(LiveIndex::build(
            Arc::clone(&live.snapshot),
            &request.model,
            request.dimensions,
            live.contents.clone(),
            live.rejected.clone(),
            None,
        )));
    }
    let snapshot = store::load(&request.metadata_dir, &request.index_dir, cancelled)?;
    let (contents, rejected) = previous.map(|live| (live.contents.clone(), live.rejected.clone())).unwrap_or_default();
    Ok(Arc::new(LiveIndex::build(Arc::new(snapshot), &request.model, request.dimensions, contents, rejected, None)))
}

/// Receives embedding inputs while the walk still runs, a file's new
/// inputs at a time (one hand-over, so one wake-up of the embedder, per
/// file rather than per chunk); `false` once nobody takes them any more
/// (the build is failing).
pub type InputSink = Box<dyn Fn(Vec<(Hash32, String)>) -> bool + Send + Sync>;

/// The early half of the build pipeline: each file the walk's threads
/// chunk hands its new embedding inputs to the sink at once, so complete
/// embedding windows go out while discovery and chunking continue.
/// Inputs this index or another index of the metadata root already holds
/// are not sent (`--reindex` sends all); neither are the files `--code`
/// leaves out. An input the shared store turns out not to hold after all
/// is embedded after the walk with the rest of [`Prepared::missing`].
struct Early<'a> {
    /// Taken (dropped) when production ends.
    sink: RwLock<Option<InputSink>>,
    request: &'a RefreshRequest,
    live: &'a LiveIndex,
    reindex: bool,
    /// Inputs other indexes of the metadata root hold, read at the first
    /// file that has new chunks (a warm walk never reads them).
    shared: OnceLock<HashSet<Hash32>>,
    sent: Mutex<HashSet<Hash32>>,
    closed: AtomicBool,
}

impl<'a> Early<'a> {
    fn new(sink: InputSink, request: &'a RefreshRequest, live: &'a LiveIndex, reindex: bool) -> Self {
        Self {
            sink: RwLock::new(Some(sink)),
            request,
            live,
            reindex,
            shared: OnceLock::new(),
            sent: Mutex::new(HashSet::new()),
            closed: AtomicBool::new(false),
        }
    }

    /// Sends the inputs of one chunked file that nothing holds yet.
    /// Returns whether any was sent.
    fn offer(&self, path: &str, chunked: &chunking::ChunkedFile) -> bool {
        if self.closed.load(Ordering::Relaxed) || (self.request.code_only && !is_code_path(path)) {
            return false;
        }
        let mut inputs = Vec::new();
        for draft in &chunked.chunks {
            if !self.reindex
                && (self.live.record_for_input(&draft.input_hash).is_some() || self.held_elsewhere(&draft.input_hash))
            {
                continue;
            }
            if !self.sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(draft.input_hash) {
                continue;
            }
            let input = chunking::chunk_input(path, &chunked.text, draft, self.request.max_input_chars);
            inputs.push((draft.input_hash, input));
        }
        if inputs.is_empty() {
            return false;
        }
        let sink = self.sink.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !sink.as_ref().is_some_and(|sink| sink(inputs)) {
            self.closed.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn held_elsewhere(&self, hash: &Hash32) -> bool {
        self.shared
            .get_or_init(|| {
                let request = self.request;
                store::referenced_inputs(
                    &request.metadata_dir,
                    &request.index_dir,
                    &request.model,
                    request.dimensions as i64,
                    None,
                )
            })
            .contains(hash)
    }

    /// Ends production (the sink, and with it the channel, is dropped):
    /// what was sent.
    fn finish(&self) -> HashSet<Hash32> {
        self.sink.write().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        std::mem::take(&mut *self.sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// Keeps the first build of the daemon's life producing, after its first
/// file with streamed inputs, until the build is cancelled (at most 60 s),
/// where a test asks for it ([`gitagent_runtime::test_hooks::hold_production`]).
fn hold_production(cancelled: &dyn Fn() -> bool) {
    static HELD: AtomicBool = AtomicBool::new(false);
    if !gitagent_runtime::test_hooks::hold_production() || HELD.swap(true, Ordering::SeqCst) {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cancelled() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Step 1: walk, read what changed, resolve vectors. With a `sink`, new
/// embedding inputs are handed to it as the walk's threads chunk each
/// file; the sink is dropped when the walk ends (production closes), and
/// [`Prepared::streamed`] lists what it was given.
pub fn prepare(
    request: RefreshRequest,
    previous: Option<Arc<LiveIndex>>,
    reporter: &dyn Reporter,
    cancelled: &(dyn Fn() -> bool + Sync),
    sink: Option<InputSink>,
) -> Result<Prepared, RefreshError> {
    let mut phase = Instant::now();
    let live = match previous {
        Some(live)
            if live.snapshot.fingerprint.is_current()
                && live.model == request.model
                && live.dimensions == request.dimensions =>
        {
            live
        }
        other => load_live(&request, other.as_deref(), cancelled)?,
    };
    let built_since_start =
        live.snapshot.manifest.created().is_some_and(|created| created.as_nanosecond() >= request.started_ns);
    let reindex = request.reindex && !built_since_start;

    // One pass: the walk's threads read and chunk each file whose cached
    // version cannot be trusted as soon as its folder is listed.
    let mut rules = IgnoreRules::new(&request.root);
    let now = now_ns();
    let early = sink.map(|sink| Early::new(sink, &request, &live, reindex));
    let reader = Reader { request: &request, live: &live, now, cancelled, early: early.as_ref() };
    let worked = match &request.tree {
        Some(tree) => revision::walk_with(tree, &request.scope, &reader),
        None => Ok(discovery::walk_with(&request.root, &request.scope, &mut rules, &reader)),
    };
    // Production ends with the walk: the last partial window may go.
    let streamed = early.as_ref().map(Early::finish).unwrap_or_default();
    let worked = worked?;
    let reader = Reader { request: &request, live: &live, now, cancelled, early: None };
    if cancelled() {
        return Err(StoreError::Cancelled.into());
    }
    let cpu = worked.states.iter().fold(WalkCpu::default(), |sum, thread| sum.add(&thread.cpu));
    if cpu.files > 0 {
        reporter.cpu("read", cpu.read);
        reporter.cpu("chunk", cpu.chunk);
        reporter.cpu("segment", cpu.segment);
    }
    let read = finish_reads(&request, worked.outputs, worked.states)?;
    let walk = worked.walk;
    let mut skipped = walk.skipped;
    for skip in &walk.skips {
        reporter.skip(&skip.path, skip.reason);
    }

    enum State {
        Fresh(Arc<FileContent>),
        Rejected,
        Read,
    }
    let mut states = Vec::with_capacity(walk.files.len());
    let mut any_read = false;
    for (file, read) in walk.files.iter().zip(&read) {
        if read.is_some() {
            any_read = true;
            states.push(State::Read);
            continue;
        }
        match reader.cached(file) {
            Cached::Rejected(reason) => {
                skipped.count(reason);
                reporter.skip(&file.path, reason);
                states.push(State::Rejected);
            }
            Cached::Fresh(content) => states.push(State::Fresh(Arc::clone(content))),
            // Not reached: a file without a trusted cached version is read.
            Cached::None => states.push(State::Rejected),
        }
    }
    reporter.timing("discover", phase.elapsed());
    phase = Instant::now();

    let mut read_results = read.into_iter().flatten();
    let mut accepted: Vec<Arc<FileContent>> = Vec::with_capacity(walk.files.len());
    // Content and rejection changes, applied to copies of the caches only
    // when something changed.
    let mut read_contents: Vec<Arc<FileContent>> = Vec::new();
    let mut read_rejections: Vec<(String, FileStat, SkipReason)> = Vec::new();
    let mut rejected_now = 0;
    for (file, state) in walk.files.iter().zip(states) {
        match state {
            State::Fresh(content) => accepted.push(content),
            State::Rejected => rejected_now += 1,
            State::Read => match read_results.next() {
                Some(Ok(content)) => {
                    read_contents.push(Arc::clone(&content));
                    accepted.push(content);
                }
                Some(Err(reason)) => {
                    skipped.count(reason);
                    reporter.skip(&file.path, reason);
                    read_rejections.push((file.path.clone(), file.stat, reason));
                }
                None => {}
            },
        }
    }
    let in_universe = |path: &str| path_in_scope(path, &request.scope);
    let cached_in_universe = if request.scope.is_empty() {
        live.contents.len()
    } else {
        live.contents.keys().filter(|path| in_universe(path)).count()
    };
    let rejected_in_universe = if request.scope.is_empty() {
        live.rejected.len()
    } else {
        live.rejected.keys().filter(|path| in_universe(path)).count()
    };
    let caches_change = any_read || cached_in_universe != accepted.len() || rejected_in_universe != rejected_now;
    let (contents, rejected) = if caches_change {
        let mut contents = live.contents.clone();
        contents.reserve(read_contents.len());
        let mut rejected = live.rejected.clone();
        for content in read_contents {
            rejected.remove(&content.path);
            contents.insert(content.path.clone(), content);
        }
        for (path, stat, reason) in read_rejections {
            contents.remove(&path);
            rejected.insert(path, (stat, reason));
        }
        // Files of the walked universe that are gone (deleted, ignored, now
        // skipped) leave the caches.
        let accepted_paths: HashSet<&str> = accepted.iter().map(|content| content.path.as_str()).collect();
        contents.retain(|path, _| !in_universe(path) || accepted_paths.contains(path.as_str()));
        let found_paths: HashSet<&str> = walk.files.iter().map(|file| file.path.as_str()).collect();
        rejected.retain(|path, _| !in_universe(path) || found_paths.contains(path.as_str()));
        (contents, rejected)
    } else {
        (HashMap::new(), HashMap::new())
    };

    let (candidates, others): (Vec<Arc<FileContent>>, Vec<Arc<FileContent>>) =
        accepted.into_iter().partition(|content| !request.code_only || is_code_path(&content.path));
    let others: Vec<(String, FileStat)> = others.iter().map(|content| (content.path.clone(), content.stat)).collect();
    let candidate_paths: Vec<String> = candidates.iter().map(|content| content.path.clone()).collect();
    let chunks: usize = candidates.iter().map(|content| content.chunks.len()).sum();
    reporter.timing("chunk", phase.elapsed());
    phase = Instant::now();

    let unchanged = !reindex && !caches_change && is_unchanged(&live, &request, &candidates, &others);
    let (contents, rejected) = if !caches_change && !unchanged {
        (live.contents.clone(), live.rejected.clone())
    } else {
        (contents, rejected)
    };
    let mut prepared = Prepared {
        files: candidates.len(),
        chunks,
        candidate_paths,
        candidates: candidates.into_iter().map(|content| Candidate { content }).collect(),
        others,
        sources: Vec::new(),
        missing: Vec::new(),
        reindex,
        unchanged,
        reused: 0,
        embedded_chunks: 0,
        skipped,
        streamed,
        contents,
        rejected,
        live,
        request,
    };
    if unchanged {
        prepared.reused = chunks;
        reporter.timing("cache", phase.elapsed());
        return Ok(prepared);
    }
    resolve_sources(&mut prepared, cancelled)?;
    reporter.timing("cache", phase.elapsed());
    Ok(prepared)
}

/// Computes the term statistics of `contents` that are not computed yet,
/// on a few threads. A search runs this beside publication, which mostly
/// waits on syncs, so its first ranking finds them ready instead of
/// computing every file's after the build.
pub fn warm_terms(contents: &[Arc<FileContent>], cancelled: &(dyn Fn() -> bool + Sync)) {
    let contents: Vec<&Arc<FileContent>> = contents.iter().collect();
    super::live::compute_missing_terms(&contents, cancelled);
}

fn racy(stat: &FileStat, now: i128) -> bool {
    i128::from(stat.mtime_ns) + super::live::RACY_WINDOW_NS >= now
}

/// A file read into a content version, or the reason it was skipped.
type ReadOutcome = Result<Arc<FileContent>, SkipReason>;

/// A file read and chunked, before its segment is mapped.
struct PendingFile {
    path: String,
    stat: FileStat,
    blob: Option<gix::ObjectId>,
    started: i128,
    chunks: Vec<ChunkDraft>,
    /// The reader thread whose segment holds the text.
    thread: usize,
    offset: usize,
    len: usize,
}

/// What the previous view says about a found file.
enum Cached<'a> {
    /// Skipped before, and unchanged since.
    Rejected(SkipReason),
    /// Read before, and unchanged since.
    Fresh(&'a Arc<FileContent>),
    None,
}

/// The walk's file work: reads and chunks every file whose cached version
/// cannot be trusted, appending its text to the thread's own snapshot
/// segment.
struct Reader<'a, 'e> {
    request: &'a RefreshRequest,
    live: &'a LiveIndex,
    /// When the walk started (for the racy-timestamp check).
    now: i128,
    cancelled: &'a (dyn Fn() -> bool + Sync),
    early: Option<&'e Early<'a>>,
}

/// One reader thread's segment, opened at its first file.
struct ReaderThread {
    thread: usize,
    cpu: WalkCpu,
    writer: Option<BodyWriter>,
    error: Option<std::io::Error>,
    /// Revision mode: this thread's repository handle, opened at its
    /// first blob.
    repo: Option<gix::Repository>,
}

/// The CPU a reader thread spent on the files it read and chunked itself.
#[derive(Debug, Default, Clone, Copy)]
struct WalkCpu {
    files: usize,
    read: Duration,
    chunk: Duration,
    /// Appending chunked text to the thread's snapshot segment.
    segment: Duration,
}

impl WalkCpu {
    fn add(self, other: &WalkCpu) -> WalkCpu {
        WalkCpu {
            files: self.files + other.files,
            read: self.read + other.read,
            chunk: self.chunk + other.chunk,
            segment: self.segment + other.segment,
        }
    }
}

impl ReaderThread {
    /// Appends `text` to this thread's segment, opening it first if need be.
    fn append(&mut self, dir: &Path, text: &str) -> std::io::Result<(usize, usize)> {
        let writer = match self.writer.take() {
            Some(writer) => writer,
            None => BodyWriter::new(dir)?,
        };
        self.writer.insert(writer).append(text)
    }
}

impl Reader<'_, '_> {
    fn cached(&self, file: &discovery::FoundFile) -> Cached<'_> {
        if let Some((stat, reason)) = self.live.rejected.get(&file.path)
            && *stat == file.stat
            && !racy(stat, self.now)
        {
            return Cached::Rejected(*reason);
        }
        match self.live.contents.get(&file.path) {
            Some(content) if content.is_fresh_for(&file.stat, self.request.max_input_chars) => Cached::Fresh(content),
            _ => Cached::None,
        }
    }
}

impl discovery::FileWork for Reader<'_, '_> {
    type State = ReaderThread;
    type Output = Result<PendingFile, SkipReason>;

    fn state(&self, thread: usize) -> ReaderThread {
        ReaderThread { thread, cpu: WalkCpu::default(), writer: None, error: None, repo: None }
    }

    fn wants(&self, file: &discovery::FoundFile) -> bool {
        matches!(self.cached(file), Cached::None)
    }

    fn run(&self, state: &mut ReaderThread, file: &discovery::FoundFile) -> Self::Output {
        // After a failure or a cancellation the remaining files are passed
        // over; the caller reports why.
        if state.error.is_some() || (self.cancelled)() {
            return Err(SkipReason::Unreadable);
        }
        let started = now_ns();
        let before = thread_cpu();
        let text = match &self.request.tree {
            Some(tree) => tree.read(state.repo.get_or_insert_with(|| tree.local()), file)?,
            None => discovery::read_candidate(&self.request.root, &file.path, file.stat.size)?,
        };
        let read = thread_cpu();
        let mut text = text;
        self.request.redactor.redact_string(&mut text, gitagent_provider::redact::Origin::file(&file.path));
        let chunked = chunking::chunk_file(&file.path, text, self.request.max_input_chars);
        state.cpu.files += 1;
        state.cpu.read += read.saturating_sub(before);
        state.cpu.chunk += thread_cpu().saturating_sub(read);
        if let Some(early) = self.early
            && early.offer(&file.path, &chunked)
        {
            hold_production(self.cancelled);
        }
        let before = thread_cpu();
        let appended = state.append(&self.request.temp_dir, &chunked.text);
        state.cpu.segment += thread_cpu().saturating_sub(before);
        match appended {
            Ok((offset, len)) => Ok(PendingFile {
                path: file.path.clone(),
                stat: file.stat,
                blob: file.blob,
                started,
                chunks: chunked.chunks,
                thread: state.thread,
                offset,
                len,
            }),
            Err(error) => {
                state.error = Some(error);
                Err(SkipReason::Unreadable)
            }
        }
    }
}

/// Maps every reader thread's segment and turns the files read into
/// content versions (`None` for files the walk did not read).
fn finish_reads(
    request: &RefreshRequest,
    outputs: Vec<Option<Result<PendingFile, SkipReason>>>,
    threads: Vec<ReaderThread>,
) -> Result<Vec<Option<ReadOutcome>>, RefreshError> {
    let snapshot_error = |source| RefreshError::Snapshot { dir: request.temp_dir.clone(), source };
    let mut segments = Vec::with_capacity(threads.len());
    for thread in threads {
        if let Some(error) = thread.error {
            return Err(snapshot_error(error));
        }
        segments.push(thread.writer.map(BodyWriter::finish).transpose().map_err(snapshot_error)?);
    }
    Ok(outputs
        .into_iter()
        .map(|output| {
            output.map(|read| {
                let file = read?;
                let segment = segments[file.thread].as_ref().ok_or(SkipReason::Unreadable)?;
                Ok(Arc::new(
                    FileContent::new(
                        file.path,
                        file.stat,
                        file.started,
                        request.max_input_chars,
                        file.chunks,
                        body_ref(segment, file.offset, file.len),
                    )
                    .with_blob(file.blob),
                ))
            })
        })
        .collect())
}

/// The warm path: every candidate's records are linked to the very file
/// version just confirmed, nothing left the universe, and `--code`'s other
/// files still match their records.
fn is_unchanged(
    live: &LiveIndex,
    request: &RefreshRequest,
    candidates: &[Arc<FileContent>],
    others: &[(String, FileStat)],
) -> bool {
    let manifest = &live.snapshot.manifest;
    if !live.snapshot.is_complete()
        || manifest.version != store::INDEX_VERSION
        || manifest.chunker != chunking::chunker_version()
    {
        return false;
    }
    let mut with_records = 0;
    for content in candidates {
        let Some(entry) = live.paths.get(&content.path) else { return false };
        if !entry.complete {
            return false;
        }
        let linked_here = entry.records.first().and_then(|index| live.links[*index].as_ref());
        if !linked_here.is_some_and(|link| Arc::ptr_eq(&link.content, content)) {
            return false;
        }
        with_records += 1;
    }
    for (path, stat) in others {
        if let Some(entry) = live.paths.get(path) {
            if !entry.records.iter().all(|&index| {
                record_matches_stat(live.snapshot.records.get(index), stat) && live.norms[index].is_some()
            }) {
                return false;
            }
            with_records += 1;
        }
    }
    let indexed_in_universe = live.paths.keys().filter(|path| path_in_scope(path, &request.scope)).count();
    indexed_in_universe == with_records
}

fn record_matches_stat(record: Record<'_>, stat: &FileStat) -> bool {
    (record.size() == stat.size as i64 && record.mtime_unix_nano() == stat.mtime_ns)
        || (record.size() == 0 && record.mtime_unix_nano() == 0)
}

fn resolve_sources(prepared: &mut Prepared, cancelled: &dyn Fn() -> bool) -> Result<(), RefreshError> {
    let live = &prepared.live;
    let mut sources: Vec<Vec<Source>> = Vec::with_capacity(prepared.candidates.len());
    let mut missing_hashes: HashSet<Hash32> = HashSet::new();
    for candidate in &prepared.candidates {
        let mut file_sources = Vec::with_capacity(candidate.content.chunks.len());
        for chunk in &candidate.content.chunks {
            let source = match (prepared.reindex, live.record_for_input(&chunk.input_hash)) {
                (false, Some(index)) => Source::Record(index),
                _ => {
                    missing_hashes.insert(chunk.input_hash);
                    Source::Missing
                }
            };
            file_sources.push(source);
        }
        sources.push(file_sources);
    }
    if !prepared.reindex && !missing_hashes.is_empty() {
        let request = &prepared.request;
        let dimensions = request.dimensions as i64;
        let referenced = store::referenced_inputs(
            &request.metadata_dir,
            &request.index_dir,
            &request.model,
            dimensions,
            Some(&missing_hashes),
        );
        let shared =
            store::read_shared_vectors(&request.metadata_dir, &referenced, &request.model, dimensions, cancelled)?;
        for (candidate, file_sources) in prepared.candidates.iter().zip(sources.iter_mut()) {
            for (chunk, source) in candidate.content.chunks.iter().zip(file_sources.iter_mut()) {
                if matches!(source, Source::Missing)
                    && let Some(entry) = shared.get(&chunk.input_hash)
                {
                    *source = Source::Shared(*entry);
                }
            }
        }
    }
    let mut seen: HashSet<Hash32> = HashSet::new();
    let mut missing = Vec::new();
    let mut reused = 0;
    let mut embedded = 0;
    for (candidate_index, (candidate, file_sources)) in prepared.candidates.iter().zip(&sources).enumerate() {
        for (chunk_index, (chunk, source)) in candidate.content.chunks.iter().zip(file_sources).enumerate() {
            if matches!(source, Source::Missing) {
                embedded += 1;
                if seen.insert(chunk.input_hash) {
                    missing.push(MissingInput {
                        hash: chunk.input_hash,
                        input_bytes: chunk.input_bytes as usize,
                        first: (candidate_index, chunk_index),
                    });
                }
            } else {
                reused += 1;
            }
        }
    }
    prepared.sources = sources;
    prepared.missing = missing;
    prepared.reused = reused;
    prepared.embedded_chunks = embedded;
    Ok(())
}

/// A record to assemble, with its vector source and content link.
struct Assembled<'a> {
    record: IndexRecord,
    vector: AssembledVector,
    /// The file version and chunk a new record comes from: its checksum
    /// is filled in only if the snapshot is written.
    chunk: Option<(&'a FileContent, usize)>,
}

enum AssembledVector {
    Record(usize),
    Shared(CatalogEntry),
    New(Spooled),
}

/// Step 3: publish when needed and build the new view. `vectors` holds
/// the embeddings of `prepared.missing`, by input hash.
pub fn finish(
    prepared: Prepared,
    vectors: NewVectors,
    reporter: &dyn Reporter,
    cancelled: &dyn Fn() -> bool,
) -> Result<Arc<LiveIndex>, RefreshError> {
    let started = Instant::now();
    let started_cpu = thread_cpu();
    let Prepared { request, live, candidates, others, sources, reindex, unchanged, contents, rejected, .. } = prepared;
    if unchanged {
        reporter.timing("persist", started.elapsed());
        return Ok(live);
    }
    let snapshot = &live.snapshot;
    let mut assembled: Vec<Assembled> =
        Vec::with_capacity(candidates.iter().map(|candidate| candidate.content.chunks.len()).sum());
    let mut fresh_sources = false;
    let mut counter = 0usize;
    for (candidate, file_sources) in candidates.iter().zip(&sources) {
        let content = &candidate.content;
        for (index, (chunk, source)) in content.chunks.iter().zip(file_sources).enumerate() {
            counter += 1;
            let vector = match source {
                Source::Record(index) => AssembledVector::Record(*index),
                Source::Shared(entry) => {
                    fresh_sources = true;
                    AssembledVector::Shared(*entry)
                }
                Source::Missing => {
                    fresh_sources = true;
                    match vectors.get(&chunk.input_hash) {
                        Some(vector) => AssembledVector::New(vector),
                        None => {
                            return Err(StoreError::Publish {
                                path: request.index_dir.clone(),
                                reason: format!("no embedding for {}:{}", content.path, chunk.start_line),
                            }
                            .into());
                        }
                    }
                }
            };
            assembled.push(Assembled {
                record: chunk_record(&request, content, chunk, counter),
                vector,
                chunk: Some((content, index)),
            });
        }
    }
    // Entries outside the candidate set that stay in the shared cache.
    let mut preserved: Vec<usize> = Vec::new();
    for (path, stat) in &others {
        if let Some(entry) = live.paths.get(path)
            && entry
                .records
                .iter()
                .all(|&index| record_matches_stat(snapshot.records.get(index), stat) && live.norms[index].is_some())
        {
            preserved.extend(entry.records.iter().copied());
        }
    }
    let mut outside: Vec<usize> = Vec::new();
    if request.shared_scope {
        for (path, entry) in &live.paths {
            if !path_in_scope(path, &request.scope) {
                outside.extend(entry.records.iter().copied().filter(|&index| live.norms[index].is_some()));
            }
        }
    }
    // Records kept from an index of another chunker keep its version in
    // the manifest, so the next full pass refreshes them too.
    let kept_other_chunker =
        snapshot.manifest.chunker != chunking::chunker_version() && !(preserved.is_empty() && outside.is_empty());
    let chunker =
        if kept_other_chunker { snapshot.manifest.chunker.clone() } else { chunking::chunker_version().into() };
    // The record-by-record comparison runs only when nothing cheaper
    // decided already (a cold build never needs it).
    let must_save = reindex
        || fresh_sources
        || snapshot.manifest.chunker != chunker
        || !snapshot.is_complete()
        || snapshot.manifest.version != store::INDEX_VERSION
        || records_differ(snapshot, &request.scope, &assembled, &preserved, &live.norms);

    if !must_save {
        reporter.timing("persist", started.elapsed());
        return Ok(Arc::new(LiveIndex::build(
            Arc::clone(snapshot),
            &request.model,
            request.dimensions,
            contents,
            rejected,
            Some(&live),
        )));
    }

    // A committed tree never changes: its entries outside the scope stay.
    if request.shared_scope && !outside.is_empty() && request.tree.is_none() {
        let mut rules = IgnoreRules::new(&request.root);
        let mut verdicts: HashMap<String, bool> = HashMap::new();
        outside.retain(|&index| {
            let record = snapshot.records.get(index);
            *verdicts
                .entry(record.path().to_string())
                .or_insert_with(|| still_valid_outside(&request.root, &mut rules, record.path()))
                && (record.size() == 0 && record.mtime_unix_nano() == 0
                    || file_stat(&request.root, record.path()).is_some_and(|stat| {
                        stat.size as i64 == record.size() && stat.mtime_ns == record.mtime_unix_nano()
                    }))
        });
    }
    for index in preserved.into_iter().chain(outside) {
        assembled.push(Assembled {
            record: snapshot.records.get(index).to_index_record(),
            vector: AssembledVector::Record(index),
            chunk: None,
        });
    }
    fill_content_hashes(&mut assembled);
    // Sorted by moving small indices, not the records.
    let mut order: Vec<usize> = (0..assembled.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&assembled[a].record, &assembled[b].record);
        (a.path.as_str(), a.start_line, a.end_line).cmp(&(b.path.as_str(), b.start_line, b.end_line))
    });
    let mut slots: Vec<Option<Assembled>> = assembled.into_iter().map(Some).collect();
    let mut to_write = Vec::with_capacity(slots.len());
    // The records move into publication; the vectors are read there one
    // at a time.
    for item in order.into_iter().filter_map(|index| slots[index].take()) {
        let (vector, stored): (VectorData, Option<CatalogEntry>) = match item.vector {
            AssembledVector::Record(index) => {
                let Some(vector) = live.vector(index) else { continue };
                let stored = match snapshot.vectors[index] {
                    Some(store::VectorLoc::Shared { offset }) => Some(CatalogEntry {
                        offset,
                        dimensions: snapshot.records.get(index).dimensions(),
                        checksum: snapshot.records.get(index).vector_checksum(),
                    }),
                    _ => None,
                };
                (VectorData::Values(vector), stored)
            }
            AssembledVector::Shared(entry) => (VectorData::Stored(entry), Some(entry)),
            AssembledVector::New(at) => (VectorData::Spooled(&vectors, at), None),
        };
        let mut record = item.record;
        record.embedding_model.clone_from(&request.model);
        record.dimensions = request.dimensions as i64;
        to_write.push(RecordToWrite { record, vector, stored });
    }
    let mut manifest = request.manifest.clone();
    manifest.embedding_model = request.model.clone();
    manifest.dimensions = request.dimensions as i64;
    manifest.chunker = chunker;
    manifest.created_at = git_agent_shared::timefmt::format_rfc3339(jiff::Timestamp::now());
    let published = store::publish(
        store::Publication {
            metadata_dir: &request.metadata_dir,
            index_dir: &request.index_dir,
            manifest,
            records: to_write,
            force_new: reindex,
            crash_at: request.crash_at,
        },
        cancelled,
    )?;
    drop(vectors);
    drop(live);
    // Publication's transients go back before the new view maps its
    // vectors in (computing their norms reads every one).
    gitagent_runtime::memory::release_freed();
    reporter.timing("persist", started.elapsed());
    reporter.cpu("persist", thread_cpu().saturating_sub(started_cpu));
    Ok(Arc::new(LiveIndex::build(Arc::new(published), &request.model, request.dimensions, contents, rejected, None)))
}

/// Whether the records to write differ from the snapshot's records of the
/// walked universe (or one of those has no usable vector).
fn records_differ(
    snapshot: &store::Snapshot,
    scope: &[String],
    assembled: &[Assembled<'_>],
    preserved: &[usize],
    norms: &[Option<f64>],
) -> bool {
    let in_universe_old: Vec<usize> =
        (0..snapshot.records.len()).filter(|&index| path_in_scope(snapshot.records.get(index).path(), scope)).collect();
    if in_universe_old.len() != assembled.len() + preserved.len() {
        return true;
    }
    let mut new_keys: Vec<String> = assembled.iter().map(|item| cache_key(&item.record)).collect();
    new_keys.extend(preserved.iter().map(|&index| stored_cache_key(snapshot.records.get(index))));
    let mut old_keys: Vec<String> =
        in_universe_old.iter().map(|&index| stored_cache_key(snapshot.records.get(index))).collect();
    new_keys.sort();
    old_keys.sort();
    new_keys != old_keys || in_universe_old.iter().any(|&index| norms[index].is_none())
}

/// Fills in the body checksum of every new record, on a few threads: the
/// checksums are computed only once a snapshot is written, and hashing
/// every chunk body of a cold build is too much work for one thread.
fn fill_content_hashes(assembled: &mut [Assembled<'_>]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let per = assembled.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in assembled.chunks_mut(per) {
            scope.spawn(move || {
                for item in part {
                    if let Some((content, index)) = item.chunk {
                        item.record.content_hash = hex(&content.content_hash(index));
                    }
                }
            });
        }
    });
}

fn chunk_record(request: &RefreshRequest, content: &FileContent, chunk: &ChunkDraft, ordinal: usize) -> IndexRecord {
    let (size, mtime) = if chunk.path_only { (0, 0) } else { (content.stat.size as i64, content.stat.mtime_ns) };
    let blob = content.blob.map(|blob| blob.to_string()).unwrap_or_default();
    let source = content.source();
    IndexRecord {
        chunk_id: format!("c{ordinal:06}"),
        path: content.path.clone(),
        source: source.into(),
        blob,
        start_line: i64::from(chunk.start_line),
        end_line: i64::from(chunk.end_line),
        // Filled in when the record is written (see `Assembled::chunk`).
        content_hash: String::new(),
        embedding_input_hash: hex(&chunk.input_hash),
        embedding_model: request.model.clone(),
        dimensions: request.dimensions as i64,
        size,
        mtime_unix_nano: mtime,
        offset: 0,
        vector_key: String::new(),
        vector_checksum: 0,
    }
}

/// The identity of a record for "did the cache change" comparisons.
/// The content checksum is left out: a chunk whose path, lines, file size,
/// modification time and exact embedding input all match has the same
/// body, and leaving it out lets an unchanged tree (the first search after
/// the daemon starts) be confirmed without hashing any body.
fn cache_key(record: &IndexRecord) -> String {
    format!(
        "{}:{}:{}:{}:{}:{}:{}:{}:{}:{}",
        record.source,
        record.path,
        record.blob,
        record.start_line,
        record.end_line,
        record.size,
        record.mtime_unix_nano,
        record.embedding_input_hash,
        record.embedding_model,
        record.dimensions
    )
}

/// [`cache_key`] of a record of the snapshot.
fn stored_cache_key(record: Record<'_>) -> String {
    format!(
        "{}:{}:{}:{}:{}:{}:{}:{}:{}:{}",
        record.source(),
        record.path(),
        record.blob(),
        record.start_line(),
        record.end_line(),
        record.size(),
        record.mtime_unix_nano(),
        record.embedding_input_hash(),
        record.embedding_model(),
        record.dimensions()
    )
}

/// The stat of the file whose key is `path`.
fn file_stat(root: &Path, path: &str) -> Option<FileStat> {
    let metadata = std::fs::symlink_metadata(root.join(git_agent_shared::quote::key_path(path))).ok()?;
    (metadata.is_file() && metadata.len() <= MAX_FILE_BYTES).then(|| FileStat::of(&metadata))
}

fn still_valid_outside(root: &Path, rules: &mut IgnoreRules, path: &str) -> bool {
    !rules.excludes_file(path) && file_stat(root, path).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::spool::VectorSpool;
    use sha2::{Digest, Sha256};

    struct Quiet;

    impl Reporter for Quiet {
        fn skip(&self, _: &str, _: SkipReason) {}
        fn timing(&self, _: &str, _: Duration) {}
        fn cpu(&self, _: &str, _: Duration) {}
    }

    /// A filesystem-mode request over `root` with test model settings.
    fn request(root: &Path, metadata: &Path) -> RefreshRequest {
        RefreshRequest {
            root: root.to_path_buf(),
            metadata_dir: metadata.to_path_buf(),
            index_dir: metadata.join("index"),
            scope: Vec::new(),
            shared_scope: false,
            code_only: false,
            reindex: false,
            started_ns: 0,
            model: "m".into(),
            dimensions: 4,
            max_input_chars: 0,
            manifest: Manifest { mode: "filesystem".into(), ..Manifest::default() },
            temp_dir: std::env::temp_dir(),
            crash_at: None,
            tree: None,
            redactor: Default::default(),
        }
    }

    /// Prepares, embeds every missing input with a constant vector, and
    /// finishes.
    fn refresh(root: &Path, metadata: &Path, previous: Option<Arc<LiveIndex>>) -> Arc<LiveIndex> {
        refresh_with(request(root, metadata), previous)
    }

    fn refresh_with(request: RefreshRequest, previous: Option<Arc<LiveIndex>>) -> Arc<LiveIndex> {
        let prepared = prepare(request, previous, &Quiet, &|| false, None).unwrap();
        let mut spool = VectorSpool::new();
        for missing in &prepared.missing {
            spool.insert(&std::env::temp_dir(), missing.hash, &vector_of(&missing.hash)).unwrap();
        }
        finish(prepared, spool.finish().unwrap(), &Quiet, &|| false).unwrap()
    }

    /// A distinct vector per embedding input.
    fn vector_of(hash: &Hash32) -> Vec<f32> {
        hash[..4].iter().map(|&byte| f32::from(byte) + 1.0).collect()
    }

    #[test]
    fn another_index_reuses_shared_vectors_without_embedding_them() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        let metadata = tempfile::tempdir().unwrap();
        let go = "package demo\n\n// Run runs.\nfunc Run() int {\n\treturn 1\n}\n";
        write_old(&first.path().join("demo.go"), go);
        write_old(&second.path().join("demo.go"), go);
        // Both indexes where the store looks for others: under `search/`.
        let index_of = |root: &Path| {
            let mut request = request(root, metadata.path());
            request.index_dir = store::filesystem_index_dir(metadata.path(), &root.display().to_string(), None);
            request
        };
        let built = refresh_with(index_of(first.path()), None);

        let other = index_of(second.path());
        let prepared = prepare(other, None, &Quiet, &|| false, None).unwrap();
        assert!(prepared.missing.is_empty(), "every vector is in the shared store");
        assert_eq!(prepared.reused, built.snapshot.records.len());
        let reused = finish(prepared, NewVectors::default(), &Quiet, &|| false).unwrap();
        assert_eq!(reused.snapshot.records.len(), built.snapshot.records.len());
        for (index, record) in reused.snapshot.records.to_index_records().iter().enumerate() {
            let hash = chunking::parse_hash(&record.embedding_input_hash).unwrap();
            assert_eq!(reused.vector(index), Some(vector_of(&hash).as_slice()), "{}", record.path);
        }
    }

    /// Keeps the CPU steps a refresh reports.
    #[derive(Default)]
    struct CpuSteps(std::sync::Mutex<Vec<(String, Duration)>>);

    impl Reporter for CpuSteps {
        fn skip(&self, _: &str, _: SkipReason) {}
        fn timing(&self, _: &str, _: Duration) {}
        fn cpu(&self, step: &str, cpu: Duration) {
            self.0.lock().unwrap().push((step.to_string(), cpu));
        }
    }

    impl CpuSteps {
        fn refresh(
            root: &Path,
            metadata: &Path,
            previous: Option<Arc<LiveIndex>>,
        ) -> (Arc<LiveIndex>, Vec<(String, Duration)>) {
            let steps = CpuSteps::default();
            let prepared = prepare(request(root, metadata), previous, &steps, &|| false, None).unwrap();
            let mut spool = VectorSpool::new();
            for missing in &prepared.missing {
                spool.insert(&std::env::temp_dir(), missing.hash, &vector_of(&missing.hash)).unwrap();
            }
            let live = finish(prepared, spool.finish().unwrap(), &steps, &|| false).unwrap();
            (live, steps.0.into_inner().unwrap())
        }
    }

    #[test]
    fn a_cold_refresh_reports_the_cpu_of_reading_chunking_and_persisting_and_a_warm_one_none() {
        let root = tempfile::tempdir().unwrap();
        let metadata = tempfile::tempdir().unwrap();
        let mut rust = String::new();
        for index in 0..400 {
            rust.push_str(&format!(
                "/// Adds {index}.\npub fn add_{index}(value: u64) -> u64 {{\n    value + {index}\n}}\n\n"
            ));
        }
        write_old(&root.path().join("src/lib.rs"), &rust);
        write_old(&root.path().join("README.md"), "# Demo\n\nAdds numbers.\n");

        let (live, steps) = CpuSteps::refresh(root.path(), metadata.path(), None);
        let names: Vec<&str> = steps.iter().map(|(step, _)| step.as_str()).collect();
        assert_eq!(names, ["read", "chunk", "segment", "persist"]);
        let cpu = |name: &str| steps.iter().find(|(step, _)| step == name).unwrap().1;
        // Parsing 400 functions takes measurable CPU on any machine.
        assert!(cpu("chunk") > Duration::ZERO, "{steps:?}");
        assert!(cpu("persist") > Duration::ZERO, "{steps:?}");

        // Nothing changed: no file is read or chunked, nothing is saved.
        let (_, steps) = CpuSteps::refresh(root.path(), metadata.path(), Some(live));
        assert!(steps.is_empty(), "{steps:?}");
    }

    #[test]
    fn thread_cpu_grows_with_work_on_this_thread() {
        let before = thread_cpu();
        let started = Instant::now();
        let mut sum = 0u64;
        while started.elapsed() < Duration::from_millis(5) {
            sum = std::hint::black_box(sum.wrapping_add(1));
        }
        assert!(thread_cpu() > before, "a busy loop on this thread shows in its CPU clock");
    }

    fn write_old(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        // Older than the racy window, so the versions read are trusted.
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(old).unwrap();
    }

    #[test]
    fn record_checksums_are_written_and_an_unchanged_tree_is_not_republished() {
        let tree = tempfile::tempdir().unwrap();
        let metadata = tempfile::tempdir().unwrap();
        let go = "package demo\n\n// Run runs.\nfunc Run() int {\n\treturn 1\n}\n\nfunc Stop() {}\n";
        write_old(&tree.path().join("demo.go"), go);
        write_old(&tree.path().join("gen/mock.go"), "// Code generated. DO NOT EDIT.\n\npackage gen\n");
        write_old(&tree.path().join("notes.md"), "# Notes\n\nSome text.\n");

        let built = refresh(tree.path(), metadata.path(), None);
        let records = &built.snapshot.records.to_index_records();
        assert_eq!(records.len(), 5, "{records:#?}");
        // Every new vector went through the spool into the payload.
        for (index, record) in records.iter().enumerate() {
            let hash = chunking::parse_hash(&record.embedding_input_hash).unwrap();
            assert_eq!(built.vector(index), Some(vector_of(&hash).as_slice()), "{}", record.path);
        }
        for record in records {
            let expected = match record.path.as_str() {
                "gen/mock.go" => hex(&Sha256::digest(b"path-only:filesystem:gen/mock.go")),
                path => {
                    let text = std::fs::read_to_string(tree.path().join(path)).unwrap();
                    let chunked = chunking::chunk_file(path, text, 0);
                    let chunk =
                        chunked.chunks.iter().find(|chunk| i64::from(chunk.start_line) == record.start_line).unwrap();
                    hex(&Sha256::digest(chunked.body(chunk).as_bytes()))
                }
            };
            assert_eq!(record.content_hash, expected, "{}:{}", record.path, record.start_line);
        }

        // A new daemon (no view kept) reads every file again, finds the
        // same records, and keeps the published snapshot as it is.
        let again = refresh(tree.path(), metadata.path(), None);
        assert_eq!(again.snapshot.manifest.created_at, built.snapshot.manifest.created_at);
        assert_eq!(again.snapshot.records.to_index_records(), built.snapshot.records.to_index_records());

        // A changed file is published again, with its new checksum.
        write_old(&tree.path().join("notes.md"), "# Notes\n\nOther text.\n");
        let changed = refresh(tree.path(), metadata.path(), Some(again));
        assert_ne!(changed.snapshot.manifest.created_at, built.snapshot.manifest.created_at);
        let notes =
            changed.snapshot.records.to_index_records().into_iter().find(|record| record.path == "notes.md").unwrap();
        assert_eq!(notes.content_hash, hex(&Sha256::digest(b"# Notes\n\nOther text.")));
    }

    /// A build of many files: the records file holds, byte for byte, what
    /// a plain serial pass computes: every chunk in path and line order,
    /// its body checksum, its walk-order id and its vector.
    #[test]
    fn a_large_build_writes_the_records_a_serial_pass_computes() {
        let tree = tempfile::tempdir().unwrap();
        let metadata = tempfile::tempdir().unwrap();
        for file in 0..40 {
            let mut go = format!("package p{file}\n");
            for function in 0..30 {
                go.push_str(&format!(
                    "\n// F{function} works.\nfunc F{function}() int {{\n\treturn {file}{function}\n}}\n"
                ));
            }
            write_old(&tree.path().join(format!("d{}/f{file:02}.go", file % 3)), &go);
        }
        let built = refresh(tree.path(), metadata.path(), None);
        let written = std::fs::read(metadata.path().join("index").join(store::RECORDS)).unwrap();
        let records: Vec<IndexRecord> = serde_json::from_slice(&written).unwrap();
        let mut encoded = serde_json::to_vec(&records).unwrap();
        encoded.push(b'\n');
        assert_eq!(encoded, written);
        assert_eq!(records, built.snapshot.records.to_index_records());

        let mut expected = Vec::new();
        let mut paths: Vec<String> = (0..40).map(|file| format!("d{}/f{file:02}.go", file % 3)).collect();
        paths.sort();
        for path in &paths {
            let text = std::fs::read_to_string(tree.path().join(path)).unwrap();
            let chunked = chunking::chunk_file(path, text, 0);
            for chunk in &chunked.chunks {
                expected.push((
                    path.clone(),
                    i64::from(chunk.start_line),
                    i64::from(chunk.end_line),
                    hex(&Sha256::digest(chunked.body(chunk).as_bytes())),
                    hex(&chunk.input_hash),
                ));
            }
        }
        expected.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
        let expected: Vec<(String, i64, String, String)> =
            expected.into_iter().map(|(path, start, _, content, input)| (path, start, content, input)).collect();
        let found: Vec<(String, i64, String, String)> = records
            .iter()
            .map(|record| {
                (
                    record.path.clone(),
                    record.start_line,
                    record.content_hash.clone(),
                    record.embedding_input_hash.clone(),
                )
            })
            .collect();
        assert_eq!(found, expected);
        let mut ids: Vec<&str> = records.iter().map(|record| record.chunk_id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), records.len());
        for (index, record) in records.iter().enumerate() {
            let hash = chunking::parse_hash(&record.embedding_input_hash).unwrap();
            assert_eq!(built.vector(index), Some(vector_of(&hash).as_slice()), "{}", record.path);
        }
    }

    /// An index written by an earlier chunker (Go cut at declarations as
    /// today, Rust in plain windows, no `chunker` in its manifest) is
    /// refreshed: only the chunks whose exact input changed are embedded,
    /// unchanged Go keeps its vectors, and the manifest then names this
    /// chunker so the next search takes the warm path.
    #[test]
    fn an_index_of_another_chunker_is_refreshed_and_unchanged_inputs_keep_their_vectors() {
        let tree = tempfile::tempdir().unwrap();
        let metadata = tempfile::tempdir().unwrap();
        let go = "package demo\n\n// Run runs.\nfunc Run() int {\n\treturn 1\n}\n\nfunc Stop() {}\n";
        let rust = "impl Searcher {\n    pub fn search_path(&self) -> bool {\n        true\n    }\n}\n";
        write_old(&tree.path().join("demo.go"), go);
        write_old(&tree.path().join("src/lib.rs"), rust);
        let request = request(tree.path(), metadata.path());

        // The earlier chunker's records: Go as chunked today, the Rust file
        // as one window under the old header.
        let go_chunks = chunking::chunk_file("demo.go", go.to_string(), 0);
        let old_rust_input = format!("path: src/lib.rs\n\n{}", rust.trim_end());
        let old_rust_hash: Hash32 = Sha256::digest(old_rust_input.as_bytes()).into();
        let mut old: Vec<(IndexRecord, Vec<f32>)> = Vec::new();
        let stat_of = |path: &str| discovery::FileStat::of(&std::fs::metadata(tree.path().join(path)).unwrap());
        for chunk in &go_chunks.chunks {
            let stat = stat_of("demo.go");
            let record = IndexRecord {
                chunk_id: format!("c{:06}", old.len() + 1),
                path: "demo.go".into(),
                source: crate::index::live::FILESYSTEM_SOURCE.into(),
                start_line: chunk.start_line.into(),
                end_line: chunk.end_line.into(),
                content_hash: hex(&Sha256::digest(go_chunks.body(chunk).as_bytes())),
                embedding_input_hash: hex(&chunk.input_hash),
                embedding_model: "m".into(),
                dimensions: 4,
                size: stat.size as i64,
                mtime_unix_nano: stat.mtime_ns,
                ..IndexRecord::default()
            };
            old.push((record, vector_of(&chunk.input_hash)));
        }
        let stat = stat_of("src/lib.rs");
        old.push((
            IndexRecord {
                chunk_id: "c000004".into(),
                path: "src/lib.rs".into(),
                source: crate::index::live::FILESYSTEM_SOURCE.into(),
                start_line: 1,
                end_line: 5,
                content_hash: hex(&Sha256::digest(rust.trim_end().as_bytes())),
                embedding_input_hash: hex(&old_rust_hash),
                embedding_model: "m".into(),
                dimensions: 4,
                size: stat.size as i64,
                mtime_unix_nano: stat.mtime_ns,
                ..IndexRecord::default()
            },
            vector_of(&old_rust_hash),
        ));
        let manifest = Manifest {
            mode: "filesystem".into(),
            embedding_model: "m".into(),
            dimensions: 4,
            created_at: "2026-01-02T03:04:05Z".into(),
            ..Manifest::default()
        };
        let records = old
            .iter()
            .map(|(record, vector)| RecordToWrite {
                record: record.clone(),
                vector: VectorData::Values(vector),
                stored: None,
            })
            .collect();
        store::publish(
            store::Publication {
                metadata_dir: metadata.path(),
                index_dir: &request.index_dir,
                manifest,
                records,
                force_new: false,
                crash_at: None,
            },
            &|| false,
        )
        .unwrap();

        let prepared = prepare(request.clone(), None, &Quiet, &|| false, None).unwrap();
        assert!(!prepared.unchanged);
        let rust_chunks = chunking::chunk_file("src/lib.rs", rust.to_string(), 0);
        let mut missing: Vec<Hash32> = prepared.missing.iter().map(|missing| missing.hash).collect();
        let mut expected: Vec<Hash32> = rust_chunks.chunks.iter().map(|chunk| chunk.input_hash).collect();
        missing.sort();
        expected.sort();
        assert_eq!(missing, expected, "only the Rust chunks are embedded");
        assert_eq!(prepared.reused, go_chunks.chunks.len());
        let mut spool = VectorSpool::new();
        for missing in &prepared.missing {
            spool.insert(&std::env::temp_dir(), missing.hash, &vector_of(&missing.hash)).unwrap();
        }
        let refreshed = finish(prepared, spool.finish().unwrap(), &Quiet, &|| false).unwrap();
        assert_eq!(refreshed.snapshot.manifest.chunker, chunking::chunker_version());
        let symbols: Vec<String> = rust_chunks
            .chunks
            .iter()
            .map(|chunk| chunk.symbol.as_ref().map(|s| format!("{} {}", s.kind, s.name)).unwrap_or_default())
            .collect();
        #[cfg(feature = "lang-rust")]
        assert_eq!(symbols, ["method Searcher::search_path"]);
        #[cfg(not(feature = "lang-rust"))]
        assert_eq!(symbols, [""]);
        for (index, record) in refreshed.snapshot.records.to_index_records().iter().enumerate() {
            let hash = chunking::parse_hash(&record.embedding_input_hash).unwrap();
            assert_eq!(refreshed.vector(index), Some(vector_of(&hash).as_slice()), "{}", record.path);
        }

        // Now current: the warm path.
        let again = prepare(request.clone(), Some(Arc::clone(&refreshed)), &Quiet, &|| false, None).unwrap();
        assert!(again.unchanged);

        // The same records under another chunker's name are not trusted:
        // refreshed without embedding anything, and republished under
        // this chunker's name.
        let manifest_path = request.index_dir.join(store::MANIFEST);
        let mut manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
        manifest["chunker"] = "syntax-0+other".into();
        std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
        let stale = prepare(request, None, &Quiet, &|| false, None).unwrap();
        assert!(!stale.unchanged);
        assert!(stale.missing.is_empty());
        let republished = finish(stale, NewVectors::default(), &Quiet, &|| false).unwrap();
        assert_eq!(republished.snapshot.manifest.chunker, chunking::chunker_version());
        assert_eq!(republished.snapshot.records.len(), refreshed.snapshot.records.len());
    }
}

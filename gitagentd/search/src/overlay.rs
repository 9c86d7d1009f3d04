//! Remote mode's overlap of a cold fetch with chunking and embedding:
//! while the pack arrives, its entries are decoded
//! ([`super::packstream`]), the selected commit's trees place each
//! arriving blob at its paths, and the blobs are checked and chunked on
//! worker threads. The results wait in [`Prechunked`], keyed by path and
//! blob id, for the build that follows the fetch.
//!
//! Chunking is speculative: a blob is chunked as soon as it arrives at a
//! path of the tree, whether or not the build will select it. Embedding is
//! not: a file's inputs are handed to the embedder ([`Dispatch`]) only once
//! its selection is certain, that is once every folder above it has
//! arrived with its `.gitignore` and `.gitagentignore` blobs and the rules
//! of the tree walk ([`super::revision`]: scope, dot paths, ignored
//! folders, ignore patterns, `--code`) select it. A blob that occurs in
//! the pack but at no selected path is never embedded. Complete embedding
//! windows then go out while the pack still arrives; the build after the
//! fetch sends only what was not sent ([`Prechunked::take_sent`]), so no
//! input is embedded twice.
//!
//! The build still walks the fetched tree with every discovery rule; a
//! file it selects takes its chunks from here when this path and blob were
//! chunked, and is read from the repository otherwise. Chunking depends
//! only on the path, the text and the input cap, and a vector only on the
//! exact capped input, so the index is the same as without the overlap:
//! files later ignored, blobs whose trees arrive after them, a pack that
//! cannot be decoded (the decoder stops, nothing is kept for what follows)
//! only cost the speculative chunking, never a different record.
//!
//! Pack order makes this worthwhile: `git pack-objects` writes commits
//! first, and then trees before the blobs they name (depth first, or all
//! trees before all blobs when tags are present), and a folder's
//! `.gitignore` sorts before most of its files.

use super::chunking::{self, ChunkedFile, Hash32};
use super::discovery::{self, IGNORE_FILES, Level, MAX_FILE_BYTES, SkipReason};
use super::packstream::{Decoded, PackDecoder};
use super::paths::{dot_rule_skips, is_code_path, is_dot_name, path_in_scope, scope_may_contain_dir};
use super::refresh::{InputSink, thread_cpu};
use super::store;
use gix::ObjectId;
use gix::objs::Kind;
use gix::objs::tree::EntryKind;
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

/// What the overlap needs from the search: the files it may select.
#[derive(Debug, Clone)]
pub struct OverlapPlan {
    /// Limits the files chunked (remote-root relative); empty for all.
    pub scope: Vec<String>,
    pub max_input_chars: usize,
    /// Where the inputs of files certain to be selected go while the pack
    /// arrives; `None` chunks only.
    pub dispatch: Option<Arc<Dispatch>>,
}

/// The vectors the build would reuse instead of embedding: those other
/// indexes of the remote's metadata root hold (none for `--reindex`).
#[derive(Debug, Clone)]
pub struct Reuse {
    pub metadata_dir: PathBuf,
    pub model: String,
    pub dimensions: usize,
}

/// The embedding side of the overlap: the search's input stream (the same
/// one the build feeds after the fetch), open until the fetch ends.
pub struct Dispatch {
    sink: Mutex<Option<InputSink>>,
    code_only: bool,
    reuse: Option<Reuse>,
    /// Inputs held by other indexes, read once when a cold fetch starts.
    held: OnceLock<HashSet<Hash32>>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch").field("code_only", &self.code_only).field("reuse", &self.reuse).finish()
    }
}

impl Dispatch {
    /// Sends to `sink`; `--code` limits the files embedded, and inputs
    /// `reuse` finds elsewhere are not sent (`None`: send every input).
    pub fn new(sink: InputSink, code_only: bool, reuse: Option<Reuse>) -> Self {
        Self { sink: Mutex::new(Some(sink)), code_only, reuse, held: OnceLock::new(), closed: AtomicBool::new(false) }
    }

    fn held(&self) -> &HashSet<Hash32> {
        self.held.get_or_init(|| match &self.reuse {
            // No index is excluded: one of this very commit (a cache
            // whose repository was removed) holds vectors the build reuses.
            Some(reuse) => store::referenced_inputs(
                &reuse.metadata_dir,
                Path::new(""),
                &reuse.model,
                reuse.dimensions as i64,
                None,
            ),
            None => HashSet::new(),
        })
    }

    /// Sends `inputs`; `false` once the embedder takes no more (it failed,
    /// or the search was cancelled).
    fn send(&self, inputs: Vec<(Hash32, String)>) -> bool {
        if inputs.is_empty() {
            return !self.closed.load(Ordering::Relaxed);
        }
        let sink = self.sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.closed.load(Ordering::Relaxed) || !sink.as_ref().is_some_and(|sink| sink(inputs)) {
            self.closed.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Ends this side of the stream: the fetch is over, the build sends
    /// the rest.
    fn close(&self) {
        self.sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    }
}

/// A file checked and chunked while the pack arrived.
pub type Prechunk = Result<ChunkedFile, SkipReason>;

type FileKey = (String, ObjectId);

#[derive(Debug, Default)]
struct Files {
    chunked: HashMap<FileKey, Prechunk>,
    /// Files certain to be selected whose chunks are not ready yet: their
    /// inputs are sent as soon as they are.
    selected: HashSet<FileKey>,
}

/// The files chunked during the fetch, until the build takes them, and
/// the inputs sent to the embedder meanwhile.
#[derive(Debug, Default)]
pub struct Prechunked {
    max_input_chars: usize,
    files: Mutex<Files>,
    sent: Mutex<HashSet<Hash32>>,
    taken: AtomicUsize,
    missed: AtomicUsize,
}

impl Prechunked {
    /// Files chunked with the input cap `max_input_chars`.
    pub fn new(max_input_chars: usize) -> Self {
        Self { max_input_chars, ..Self::default() }
    }

    /// The outcome of `path` at `blob` when it was chunked with the cap
    /// `max_input_chars`; each is handed out once.
    pub fn take(&self, path: &str, blob: ObjectId, max_input_chars: usize) -> Option<Prechunk> {
        let taken = (max_input_chars == self.max_input_chars)
            .then(|| self.lock().chunked.remove(&(path.to_string(), blob)))
            .flatten();
        let counter = if taken.is_some() { &self.taken } else { &self.missed };
        counter.fetch_add(1, Ordering::Relaxed);
        taken
    }

    /// The inputs sent to the embedder during the fetch (handed over once,
    /// to the build, which sends only the others).
    pub fn take_sent(&self) -> HashSet<Hash32> {
        std::mem::take(&mut *self.sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// How many inputs were sent during the fetch so far.
    pub fn sent(&self) -> usize {
        self.sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// How many files the build read itself (not chunked during the fetch).
    pub fn missed(&self) -> usize {
        self.missed.load(Ordering::Relaxed)
    }

    /// How many files are waiting.
    pub fn len(&self) -> usize {
        self.lock().chunked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many the build took.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }

    /// Keeps a chunked file; returns its inputs to send when its selection
    /// was already certain.
    fn insert(&self, key: FileKey, outcome: Prechunk, dispatch: Option<&Dispatch>) -> Vec<(Hash32, String)> {
        let mut files = self.lock();
        let inputs = match (dispatch, &outcome) {
            (Some(dispatch), Ok(chunked)) if files.selected.remove(&key) => self.inputs(dispatch, &key.0, chunked),
            _ => Vec::new(),
        };
        files.chunked.insert(key, outcome);
        inputs
    }

    /// Marks a file certain to be selected; returns its inputs to send
    /// when it is chunked already.
    fn select(&self, key: FileKey, dispatch: &Dispatch) -> Vec<(Hash32, String)> {
        let mut files = self.lock();
        match files.chunked.get(&key) {
            Some(Ok(chunked)) => self.inputs(dispatch, &key.0, chunked),
            Some(Err(_)) => Vec::new(),
            None => {
                files.selected.insert(key);
                Vec::new()
            }
        }
    }

    /// The inputs of a selected file that nothing holds and that were not
    /// sent before, as the build's walk would offer them.
    fn inputs(&self, dispatch: &Dispatch, path: &str, chunked: &ChunkedFile) -> Vec<(Hash32, String)> {
        if dispatch.code_only && !is_code_path(path) {
            return Vec::new();
        }
        let held = dispatch.held();
        let mut sent = self.sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        chunked
            .chunks
            .iter()
            .filter(|draft| !held.contains(&draft.input_hash) && sent.insert(draft.input_hash))
            .map(|draft| (draft.input_hash, chunking::chunk_input(path, &chunked.text, draft, self.max_input_chars)))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What one overlap did.
#[derive(Debug, Clone, Default)]
pub struct OverlapStats {
    /// The object count of the pack header.
    pub pack_objects: u32,
    /// Entries decoded.
    pub decoded: u32,
    /// Files handed to the chunking threads.
    pub dispatched: usize,
    /// Of those, files whose blob the pack stored as a delta.
    pub dispatched_deltified: usize,
    /// The number of entries decoded when the first file was handed to
    /// the chunking threads (that many of `pack_objects` had arrived).
    pub first_dispatch_at: Option<u32>,
    /// Files found certain to be selected while the pack arrived.
    pub selected: usize,
    /// Embedding inputs sent while the pack arrived.
    pub inputs_sent: usize,
    /// Why decoding stopped early, if it did.
    pub stopped: Option<String>,
    /// CPU time of the decoding thread (decoding and placing entries) and,
    /// summed over the workers, of checking and chunking files.
    pub decode_cpu: Duration,
    pub chunk_cpu: Duration,
    /// CPU time of the thread that received the pack (gix's receive and
    /// indexing on that thread); set by the fetch.
    pub receive_cpu: Duration,
}

/// Work for the chunking threads.
enum Job {
    /// Check and chunk one file.
    Chunk { path: String, blob: ObjectId, data: Arc<[u8]> },
    /// Send the inputs of a file whose selection became certain after it
    /// was chunked (sending may wait on the embedder: not the decoder's job).
    Send(Vec<(Hash32, String)>),
}

/// One folder of the target tree, as far as its selection rules are
/// known.
#[derive(Debug, Default)]
struct Folder {
    /// The texts of its ignore files, by [`IGNORE_FILES`] index.
    texts: [Option<String>; 2],
    /// Its ignore files' blobs that have not arrived.
    waiting: usize,
    level: Option<Arc<Level>>,
    /// The ignore levels from the root down to this folder, once this
    /// folder is known to be walked.
    stack: Option<Vec<Arc<Level>>>,
    /// Its blobs in scope, and its subfolders placed.
    files: Vec<(String, ObjectId)>,
    dirs: Vec<String>,
}

/// Where the target commit's trees and blobs stand.
struct Placement<'a> {
    plan: &'a OverlapPlan,
    prechunked: &'a Prechunked,
    /// The commit searched; follows an annotated tag to what it names.
    target: ObjectId,
    seen: HashMap<ObjectId, (Kind, Arc<[u8]>)>,
    /// Blobs the pack stored as deltas.
    deltified: HashSet<ObjectId>,
    /// Trees and blobs of the target tree that have not arrived, with
    /// their paths.
    wanted_trees: HashMap<ObjectId, Vec<String>>,
    wanted_blobs: HashMap<ObjectId, Vec<String>>,
    /// With a dispatch: the folders placed, and the ignore blobs they wait
    /// for (folder, [`IGNORE_FILES`] index).
    folders: HashMap<String, Folder>,
    ignore_blobs: HashMap<ObjectId, Vec<(String, usize)>>,
    jobs: mpsc::Sender<Job>,
    dispatched: usize,
    dispatched_deltified: usize,
    selected: usize,
    decoded: u32,
    first_dispatch_at: Option<u32>,
}

impl Placement<'_> {
    fn arrived(&mut self, object: Decoded) {
        self.decoded += 1;
        let Decoded { id, kind, data, deltified } = object;
        if deltified {
            self.deltified.insert(id);
        }
        self.seen.insert(id, (kind, Arc::clone(&data)));
        self.handle(id, kind, &data);
    }

    fn handle(&mut self, id: ObjectId, kind: Kind, data: &Arc<[u8]>) {
        match kind {
            Kind::Tag if id == self.target => {
                if let Ok(target) = gix::objs::TagRefIter::from_bytes(data, gix::hash::Kind::Sha1).target_id() {
                    self.target = target;
                    if let Some((kind, data)) = self.seen.get(&target).cloned() {
                        self.handle(target, kind, &data);
                    }
                }
            }
            Kind::Commit if id == self.target => {
                if let Ok(tree) = gix::objs::CommitRefIter::from_bytes(data, gix::hash::Kind::Sha1).tree_id() {
                    self.place_tree(tree, String::new());
                }
            }
            Kind::Tree => {
                if let Some(dirs) = self.wanted_trees.remove(&id) {
                    for dir in dirs {
                        self.expand(data, &dir);
                    }
                }
            }
            Kind::Blob => {
                if let Some(waiting) = self.ignore_blobs.remove(&id) {
                    for (dir, slot) in waiting {
                        self.ignore_file_arrived(&dir, slot, data);
                    }
                }
                if let Some(paths) = self.wanted_blobs.remove(&id) {
                    for path in paths {
                        self.dispatch(path, id, Arc::clone(data));
                    }
                }
            }
            Kind::Tag | Kind::Commit => {}
        }
    }

    fn place_tree(&mut self, id: ObjectId, dir: String) {
        match self.seen.get(&id) {
            Some((Kind::Tree, data)) => {
                let data = Arc::clone(data);
                self.expand(&data, &dir);
            }
            Some(_) => {}
            None => self.wanted_trees.entry(id).or_default().push(dir),
        }
    }

    fn expand(&mut self, tree: &[u8], dir: &str) {
        let entries: Vec<(String, EntryKind, ObjectId)> =
            gix::objs::TreeRefIter::from_bytes(tree, gix::hash::Kind::Sha1)
                .filter_map(Result::ok)
                .map(|entry| (entry.filename.to_string(), entry.mode.kind(), entry.oid.to_owned()))
                .collect();
        let plan = self.plan;
        let selecting = plan.dispatch.is_some();
        let mut folder = Folder::default();
        for (name, kind, id) in entries {
            let path = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
            let scope = &plan.scope;
            match kind {
                EntryKind::Tree if path_in_scope(&path, scope) || scope_may_contain_dir(&path, scope) => {
                    if selecting {
                        folder.dirs.push(path.clone());
                    }
                    self.place_tree(id, path);
                }
                EntryKind::Blob | EntryKind::BlobExecutable => {
                    // The walk reads a folder's ignore files whatever the
                    // scope, from blobs only.
                    if let Some(slot) = IGNORE_FILES.iter().position(|ignore| *ignore == name)
                        && selecting
                    {
                        match self.seen.get(&id) {
                            Some((_, data)) => folder.texts[slot] = Some(String::from_utf8_lossy(data).into_owned()),
                            None => {
                                folder.waiting += 1;
                                self.ignore_blobs.entry(id).or_default().push((dir.to_string(), slot));
                            }
                        }
                    }
                    if !path_in_scope(&path, scope) {
                        continue;
                    }
                    if selecting {
                        folder.files.push((path.clone(), id));
                    }
                    match self.seen.get(&id) {
                        Some((Kind::Blob, data)) => {
                            let data = Arc::clone(data);
                            self.dispatch(path, id, data);
                        }
                        Some(_) => {}
                        None => self.wanted_blobs.entry(id).or_default().push(path),
                    }
                }
                _ => {}
            }
        }
        if selecting {
            let complete = folder.waiting == 0;
            self.folders.insert(dir.to_string(), folder);
            if complete {
                self.rules_known(dir);
            }
        }
    }

    fn ignore_file_arrived(&mut self, dir: &str, slot: usize, data: &[u8]) {
        let Some(folder) = self.folders.get_mut(dir) else { return };
        folder.texts[slot] = Some(String::from_utf8_lossy(data).into_owned());
        folder.waiting -= 1;
        if folder.waiting == 0 {
            self.rules_known(dir);
        }
    }

    /// Every ignore file of `dir` has arrived: its level is built, and the
    /// folder opened if its ancestors are.
    fn rules_known(&mut self, dir: &str) {
        let Some(folder) = self.folders.get_mut(dir) else { return };
        let texts = folder.texts.iter_mut().filter_map(Option::take).collect();
        folder.level = Some(Arc::new(Level::from_texts(Path::new("/"), dir, texts)));
        self.open(dir.to_string());
    }

    /// Decides what the tree walk selects in `dir` and, in turn, in the
    /// subfolders whose rules are known, once `dir` and every folder above
    /// it have their rules: the walk's checks of [`super::revision`],
    /// folder by folder.
    fn open(&mut self, dir: String) {
        let plan = self.plan;
        let scope = &plan.scope;
        let mut pending = vec![dir];
        while let Some(dir) = pending.pop() {
            let Some(folder) = self.folders.get(&dir) else { continue };
            let Some(level) = folder.level.clone() else { continue };
            if folder.stack.is_some() {
                continue;
            }
            let mut stack = match dir.rsplit_once('/') {
                None if dir.is_empty() => Vec::new(),
                split => {
                    let parent = split.map_or("", |(parent, _)| parent);
                    match self.folders.get(parent).and_then(|parent| parent.stack.clone()) {
                        Some(stack) => stack,
                        None => continue,
                    }
                }
            };
            if !dir.is_empty() && folder_skipped(&stack, &dir, scope) {
                continue;
            }
            stack.push(level);
            let Some(folder) = self.folders.get_mut(&dir) else { continue };
            folder.stack = Some(stack.clone());
            let files = std::mem::take(&mut folder.files);
            pending.extend(folder.dirs.iter().cloned());
            for (path, blob) in files {
                if file_selected(&stack, &path, scope) {
                    self.select(path, blob);
                }
            }
        }
    }

    fn select(&mut self, path: String, blob: ObjectId) {
        let plan = self.plan;
        let Some(dispatch) = plan.dispatch.as_deref() else { return };
        self.selected += 1;
        let inputs = self.prechunked.select((path, blob), dispatch);
        if !inputs.is_empty() {
            let _ = self.jobs.send(Job::Send(inputs));
        }
    }

    fn dispatch(&mut self, path: String, blob: ObjectId, data: Arc<[u8]>) {
        // The walk never reads an oversized blob.
        if data.len() as u64 > MAX_FILE_BYTES {
            return;
        }
        self.first_dispatch_at.get_or_insert(self.decoded);
        self.dispatched += 1;
        self.dispatched_deltified += usize::from(self.deltified.contains(&blob));
        let _ = self.jobs.send(Job::Chunk { path, blob, data });
    }
}

/// Whether the tree walk passes over the folder `dir` (dot folder, or
/// ignored by the levels above it).
fn folder_skipped(stack: &[Arc<Level>], dir: &str, scope: &[String]) -> bool {
    let name = dir.rsplit('/').next().unwrap_or(dir);
    (is_dot_name(name) && dot_rule_skips(dir, scope)) || discovery::ignored_with(stack, dir, true)
}

/// Whether the tree walk selects the blob at `path` in a walked folder
/// whose levels are `stack` (its size and content are checked apart).
fn file_selected(stack: &[Arc<Level>], path: &str, scope: &[String]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if !path_in_scope(path, scope) {
        return false;
    }
    if is_dot_name(name) && (IGNORE_FILES.contains(&name) || dot_rule_skips(path, scope)) {
        return false;
    }
    !discovery::ignored_with(stack, path, false)
}

/// Decodes the pack from `read` and chunks the files of `target`'s tree
/// (a commit, or a tag naming one) into `prechunked` on `workers` threads
/// as their blobs arrive; with a dispatch in `plan`, sends the inputs of
/// the files certain to be selected, then closes it. `chunked` hears each
/// file chunked. Returns once the pack ended (or could not be decoded
/// further) and every dispatched file is chunked; `cancelled` stops it
/// early.
pub fn run(
    read: impl BufRead,
    target: ObjectId,
    plan: &OverlapPlan,
    workers: usize,
    cancelled: &AtomicBool,
    prechunked: &Prechunked,
    chunked: &(dyn Fn() + Sync),
) -> OverlapStats {
    let dispatch = plan.dispatch.as_deref();
    if let Some(dispatch) = dispatch {
        dispatch.held();
    }
    let (sender, receiver) = mpsc::channel::<Job>();
    let receiver = Mutex::new(receiver);
    let chunk_cpu_ns = AtomicU64::new(0);
    let stats = std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            let (receiver, chunk_cpu_ns) = (&receiver, &chunk_cpu_ns);
            scope.spawn(move || {
                loop {
                    let job = receiver.lock().unwrap_or_else(std::sync::PoisonError::into_inner).recv();
                    let Ok(job) = job else { return };
                    if cancelled.load(Ordering::Relaxed) {
                        continue;
                    }
                    match job {
                        Job::Chunk { path, blob, data } => {
                            let started = thread_cpu();
                            let outcome = discovery::check_candidate(&path, data.to_vec())
                                .map(|text| chunking::chunk_file(&path, text, plan.max_input_chars));
                            let inputs = prechunked.insert((path, blob), outcome, dispatch);
                            let spent = thread_cpu().saturating_sub(started);
                            chunk_cpu_ns
                                .fetch_add(u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
                            chunked();
                            if let Some(dispatch) = dispatch
                                && !inputs.is_empty()
                            {
                                dispatch.send(inputs);
                            }
                        }
                        Job::Send(inputs) => {
                            if let Some(dispatch) = dispatch {
                                dispatch.send(inputs);
                            }
                        }
                    }
                }
            });
        }
        let mut placement = Placement {
            plan,
            prechunked,
            target,
            seen: HashMap::new(),
            deltified: HashSet::new(),
            wanted_trees: HashMap::new(),
            wanted_blobs: HashMap::new(),
            folders: HashMap::new(),
            ignore_blobs: HashMap::new(),
            jobs: sender,
            dispatched: 0,
            dispatched_deltified: 0,
            selected: 0,
            decoded: 0,
            first_dispatch_at: None,
        };
        let mut stats = OverlapStats::default();
        let decode_started = thread_cpu();
        match PackDecoder::new(read) {
            Ok(decoder) => {
                stats.pack_objects = decoder.objects();
                for object in decoder {
                    if cancelled.load(Ordering::Relaxed) {
                        stats.stopped = Some("cancelled".into());
                        break;
                    }
                    match object {
                        Ok(object) => placement.arrived(object),
                        Err(error) => {
                            stats.stopped = Some(error.to_string());
                            break;
                        }
                    }
                }
            }
            Err(error) => stats.stopped = Some(error.to_string()),
        }
        stats.decoded = placement.decoded;
        stats.dispatched = placement.dispatched;
        stats.dispatched_deltified = placement.dispatched_deltified;
        stats.first_dispatch_at = placement.first_dispatch_at;
        stats.selected = placement.selected;
        stats.decode_cpu = thread_cpu().saturating_sub(decode_started);
        // Ends the workers once the queue is drained.
        drop(placement);
        stats
    });
    // Production during the fetch is over; the build sends the rest.
    if let Some(dispatch) = dispatch {
        dispatch.close();
    }
    OverlapStats { inputs_sent: prechunked.sent(), chunk_cpu: Duration::from_nanos(chunk_cpu_ns.into_inner()), ..stats }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::LiveIndex;
    use crate::packstream::ChunkReader;
    use crate::packstream::tests::git;
    use crate::refresh::{self, RefreshRequest, Reporter};
    use crate::remote::{self, Freshness, Remote, Resolved};
    use crate::revision::{self, TreeSource};
    use crate::spool::VectorSpool;
    use crate::store::Manifest;
    use git_agent_shared::Environment;
    use std::sync::atomic::AtomicU64;
    use std::time::{Duration, Instant, SystemTime};

    const CAP: usize = 8_000;

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap().trim().to_string()
    }

    fn write(root: &Path, path: &str, content: &[u8]) {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }

    /// A repository whose pack has deltified selected blobs (near copies of
    /// one file, and its history), ignore files that arrive after blobs
    /// they ignore (`+early/` and `d/-first.rs` sort before the ignore
    /// files naming them), one blob at two paths, a binary and an
    /// oversized file.
    fn upstream(root: &Path) {
        git(root, &["init", "-q", "-b", "main"], None);
        let base: String = (0..300).map(|line| format!("fn line_{line}() -> usize {{ {line} }}\n")).collect();
        for round in 0..3 {
            let edited = base.replace(&format!("line_{}()", round * 40), &format!("edited_{round}()"));
            write(root, "src/big.rs", edited.as_bytes());
            for copy in 0..4 {
                write(root, &format!("src/copy{copy}.rs"), format!("{edited}// copy {copy} {round}\n").as_bytes());
            }
            git(root, &["add", "-A"], None);
            git(root, &["commit", "-q", "-m", &format!("round {round}")], None);
        }
        write(root, ".gitignore", b"*.skip\n");
        write(root, "+early/a.skip", b"fn ignored_early() {}\n");
        write(root, "+early/kept.rs", b"fn kept_early() {}\n");
        write(root, "d/-first.rs", b"fn ignored_late() {}\n");
        write(root, "d/.gitagentignore", b"-first.rs\n");
        write(root, "d/later.rs", b"fn later() {}\n");
        write(root, "dup1.rs", b"fn duplicate() {}\n");
        write(root, "dup2.rs", b"fn duplicate() {}\n");
        write(root, "bin.dat", b"\x00\x01binary\x00");
        write(root, "big.txt", "x".repeat(MAX_FILE_BYTES as usize + 1).as_bytes());
        for file in 0..30 {
            write(
                root,
                &format!("many/file{file:02}.rs"),
                format!("fn file_{file}() -> u32 {{ {file} }}\n").as_bytes(),
            );
        }
        git(root, &["add", "-A", "-f"], None);
        git(root, &["commit", "-q", "-m", "layout"], None);
    }

    fn wait_for(mut condition: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if condition() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// The pack of everything HEAD reaches in `root`, and HEAD.
    fn head_pack(root: &Path) -> (Vec<u8>, ObjectId) {
        let head = text(git(root, &["rev-parse", "HEAD"], None));
        let pack = git(root, &["pack-objects", "--revs", "--stdout", "--delta-base-offset"], Some(b"HEAD\n"));
        (pack, ObjectId::from_hex(head.as_bytes()).unwrap())
    }

    fn chunked_text(outcome: &Prechunk) -> String {
        match outcome {
            Ok(chunked) => format!("{:?} {:?}", chunked.text, chunked.chunks),
            Err(reason) => format!("{reason:?}"),
        }
    }

    #[test]
    fn files_are_chunked_and_embedded_before_the_rest_of_the_pack_has_arrived() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        upstream(root);
        let (pack, target) = head_pack(root);
        let sent = Recorder::default();
        let dispatch = Arc::new(Dispatch::new(sent.sink(), false, None));
        let plan = OverlapPlan { scope: Vec::new(), max_input_chars: CAP, dispatch: Some(dispatch) };
        let prechunked = Prechunked::new(CAP);
        let (sender, receiver) = mpsc::channel();
        let reader = ChunkReader::new(receiver, Arc::new(AtomicU64::new(0)));
        let stop = AtomicBool::new(false);
        let half = pack.len() / 2;
        let stats = std::thread::scope(|scope| {
            let running = scope.spawn(|| run(reader, target, &plan, 1, &stop, &prechunked, &|| {}));
            sender.send(pack[..half].to_vec()).unwrap();
            // The event: a file chunked, and the inputs of a file certain
            // to be selected sent, while half the pack is still to come.
            let early = wait_for(|| !prechunked.is_empty() && !sent.all().is_empty());
            sender.send(pack[half..].to_vec()).unwrap();
            drop(sender);
            let stats = running.join().unwrap();
            assert!(early, "nothing was chunked and sent before the second half of the pack arrived: {stats:?}");
            stats
        });
        assert_eq!(stats.inputs_sent, sent.all().len());
        assert!(stats.selected > 0 && stats.selected < stats.dispatched, "{stats:?}");
        // The dispatch closed with the fetch: the stream's last partial
        // window may go once the build's walk ends too.
        assert!(plan.dispatch.as_ref().unwrap().sink.lock().unwrap().is_none());
        assert_eq!(stats.stopped, None);
        assert_eq!(stats.decoded, stats.pack_objects);
        assert!(stats.first_dispatch_at.is_some_and(|at| at < stats.pack_objects / 2), "{stats:?}");
        assert!(stats.dispatched_deltified > 0, "a deltified blob was chunked: {stats:?}");
        // Both sides of the overlap report the CPU they took.
        assert!(stats.decode_cpu > Duration::ZERO && stats.chunk_cpu > Duration::ZERO, "{stats:?}");

        // Every file of the tree (but the oversized one) at its own path,
        // chunked as the build would chunk it, and nothing else.
        let listing = text(git(root, &["ls-tree", "-r", "HEAD"], None));
        let mut expected = 0;
        for line in listing.lines() {
            let (meta, path) = line.split_once('\t').unwrap();
            let blob = ObjectId::from_hex(meta.split_whitespace().nth(2).unwrap().as_bytes()).unwrap();
            let data = git(root, &["cat-file", "blob", &blob.to_string()], None);
            let outcome = prechunked.take(path, blob, CAP);
            if data.len() as u64 > MAX_FILE_BYTES {
                assert!(outcome.is_none(), "{path} is oversized");
                continue;
            }
            let want: Prechunk =
                discovery::check_candidate(path, data).map(|text| chunking::chunk_file(path, text, CAP));
            let got = outcome.unwrap_or_else(|| panic!("{path} was not chunked"));
            assert_eq!(chunked_text(&got), chunked_text(&want), "{path}");
            expected += 1;
        }
        assert!(prechunked.is_empty(), "files chunked at no path of the tree");
        assert_eq!(stats.dispatched, expected);
    }

    /// The paths of the inputs a recorder was given.
    fn input_paths(recorded: &Recorder) -> std::collections::BTreeSet<String> {
        recorded
            .all()
            .iter()
            .map(|(_, text)| text.lines().next().unwrap().strip_prefix("path: ").unwrap().to_string())
            .collect()
    }

    #[test]
    fn the_inputs_sent_during_the_fetch_are_those_of_the_files_the_walk_selects() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        upstream(root);
        let (pack, target) = head_pack(root);
        let repo = revision::open(root).unwrap();
        let source = TreeSource::new(repo, target).unwrap();
        struct NoWork;
        impl discovery::FileWork for NoWork {
            type State = ();
            type Output = ();
            fn state(&self, _: usize) {}
            fn wants(&self, _: &discovery::FoundFile) -> bool {
                false
            }
            fn run(&self, _: &mut (), _: &discovery::FoundFile) {}
        }
        let scopes: [&[&str]; 3] = [&[], &["d", "many"], &["+early/kept.rs", "src"]];
        for (scope, code_only) in scopes.iter().flat_map(|scope| [(scope, false), (scope, true)]) {
            let scope: Vec<String> = scope.iter().map(|part| part.to_string()).collect();
            let sent = Recorder::default();
            let dispatch = Arc::new(Dispatch::new(sent.sink(), code_only, None));
            let plan = OverlapPlan { scope: scope.clone(), max_input_chars: CAP, dispatch: Some(dispatch) };
            let prechunked = Prechunked::new(CAP);
            let stats = run(&pack[..], target, &plan, 2, &AtomicBool::new(false), &prechunked, &|| {});
            assert_eq!(stats.stopped, None);
            let expected: std::collections::BTreeSet<String> = revision::walk_with(&source, &scope, &NoWork)
                .unwrap()
                .walk
                .files
                .into_iter()
                .filter(|file| !code_only || is_code_path(&file.path))
                .filter(|file| {
                    let data = git(root, &["cat-file", "blob", &file.blob.unwrap().to_string()], None);
                    discovery::check_candidate(&file.path, data).is_ok()
                })
                .map(|file| file.path)
                .collect();
            assert!(!expected.is_empty(), "{scope:?}");
            assert_eq!(input_paths(&sent), expected, "scope {scope:?}, --code {code_only}");
            let hashes: HashSet<Hash32> = sent.all().iter().map(|(hash, _)| *hash).collect();
            assert_eq!(hashes.len(), sent.all().len(), "an input was sent twice");
        }
    }

    struct Quiet;
    impl Reporter for Quiet {
        fn skip(&self, _: &str, _: SkipReason) {}
        fn timing(&self, _: &str, _: Duration) {}
        fn cpu(&self, _: &str, _: Duration) {}
    }
    impl remote::FetchReporter for Quiet {
        fn fetching(&self, _: &str) {}
    }

    fn cold_resolve(upstream: &Path, home: &Path, plan: Option<&OverlapPlan>) -> (Remote, Resolved) {
        let env = Environment::new([("HOME".to_string(), home.display().to_string())].into_iter().collect());
        let remote = Remote::new(upstream.to_str().unwrap(), home, &home.join(".git-agent"), &env).unwrap();
        let freshness = Freshness { reindex: false, started: SystemTime::now() };
        let resolved = remote::resolve(&remote, None, freshness, &Quiet, &AtomicBool::new(false), plan).unwrap();
        (remote, resolved)
    }

    /// Records what an input sink is given.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<(Hash32, String)>>>);

    impl Recorder {
        fn sink(&self) -> InputSink {
            let recorded = self.clone();
            Box::new(move |inputs| {
                recorded.0.lock().unwrap().extend(inputs);
                true
            })
        }

        fn all(&self) -> Vec<(Hash32, String)> {
            self.0.lock().unwrap().clone()
        }
    }

    /// The fake embedding of an exact input text.
    fn vector_of(text: &str) -> Vec<f32> {
        use sha2::Digest;
        sha2::Sha256::digest(text.as_bytes())[..4].iter().map(|&byte| f32::from(byte) + 1.0).collect()
    }

    fn hash_of(text: &str) -> Hash32 {
        use sha2::Digest;
        sha2::Sha256::digest(text.as_bytes()).into()
    }

    /// Builds the index of a resolved remote commit as a search does: the
    /// inputs sent during the fetch (`fetched`) and by the walk are
    /// embedded as they came, the rest after the walk; every vector is a
    /// function of its exact input text. Returns the index and every input
    /// embedded, in order.
    fn build(
        remote: &Remote,
        resolved: &Resolved,
        prechunked: Option<Arc<Prechunked>>,
        fetched: &[(Hash32, String)],
    ) -> (Arc<LiveIndex>, Vec<Hash32>) {
        let repo = revision::open(&remote.repo_dir()).unwrap();
        let tree = Arc::new(TreeSource::new(repo, resolved.commit).unwrap());
        let metadata = remote.metadata_dir().to_path_buf();
        let request = RefreshRequest {
            index_dir: revision::index_dir(&metadata, &resolved.commit.to_string(), None),
            max_input_chars: CAP,
            manifest: Manifest { mode: "remote".into(), ..Manifest::default() },
            tree: Some(tree),
            prechunked,
            ..refresh::tests::request(&remote.repo_dir(), &metadata)
        };
        let walk = Recorder::default();
        let prepared = refresh::prepare(request, None, &Quiet, &|| false, Some(walk.sink())).unwrap();
        let missing: HashSet<Hash32> = prepared.missing.iter().map(|missing| missing.hash).collect();
        let mut embedded = Vec::new();
        let mut spool = VectorSpool::new();
        for (hash, text) in fetched.iter().chain(&walk.all()) {
            assert_eq!(hash_of(text), *hash, "an input was sent with another text than its hash");
            assert!(missing.contains(hash), "an input was sent that the index does not need: {text}");
            spool.insert(&std::env::temp_dir(), *hash, &vector_of(text)).unwrap();
            embedded.push(*hash);
        }
        assert!(prepared.streamed.iter().all(|hash| missing.contains(hash)));
        for missing in &prepared.missing {
            if !prepared.streamed.contains(&missing.hash) {
                let text = prepared.input_text(missing);
                spool.insert(&std::env::temp_dir(), missing.hash, &vector_of(&text)).unwrap();
                embedded.push(missing.hash);
            }
        }
        (refresh::finish(prepared, spool.finish().unwrap(), &Quiet, &|| false).unwrap(), embedded)
    }

    #[test]
    fn a_build_after_an_overlapped_cold_fetch_equals_one_without_the_overlap() {
        let temp = tempfile::tempdir().unwrap();
        let work = temp.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        upstream(&work);
        let fetched = Recorder::default();
        let dispatch = Arc::new(Dispatch::new(fetched.sink(), false, None));
        let plan = OverlapPlan { scope: Vec::new(), max_input_chars: CAP, dispatch: Some(dispatch) };

        let (remote, resolved) = cold_resolve(&work, &temp.path().join("a"), Some(&plan));
        let overlapped = resolved.overlap.clone().expect("a cold fetch overlaps");
        assert_eq!(overlapped.stats.stopped, None, "{:?}", overlapped.stats);
        assert!(overlapped.stats.dispatched_deltified > 0, "{:?}", overlapped.stats);
        let sent = fetched.all();
        assert!(!sent.is_empty(), "no input was sent during the fetch: {:?}", overlapped.stats);
        assert_eq!(overlapped.stats.inputs_sent, sent.len());
        let prechunked = Arc::clone(&overlapped.prechunked);
        let (with, embedded) = build(&remote, &resolved, Some(Arc::clone(&prechunked)), &sent);

        let (plain_remote, plain) = cold_resolve(&work, &temp.path().join("b"), None);
        assert!(plain.overlap.is_none());
        assert_eq!(plain.commit, resolved.commit);
        let (without, plain_embedded) = build(&plain_remote, &plain, None, &[]);

        // Nothing embedded twice, nothing the build would not embed.
        let unique: HashSet<Hash32> = embedded.iter().copied().collect();
        assert_eq!(unique.len(), embedded.len(), "an input was embedded twice");
        let plain_unique: HashSet<Hash32> = plain_embedded.iter().copied().collect();
        assert_eq!(unique, plain_unique);

        let records = with.snapshot.records.to_index_records();
        assert_eq!(records, without.snapshot.records.to_index_records());
        let paths: std::collections::BTreeSet<&str> = records.iter().map(|record| record.path.as_str()).collect();
        for path in ["+early/kept.rs", "d/later.rs", "dup1.rs", "dup2.rs", "src/copy3.rs", "many/file29.rs"] {
            assert!(paths.contains(path), "{path} is indexed: {paths:?}");
        }
        for path in ["+early/a.skip", "d/-first.rs", "bin.dat", "big.txt"] {
            assert!(!paths.contains(path), "{path} is not indexed");
        }
        // The vectors embedded during the fetch are the ones a build
        // without the overlap computes from the same inputs.
        for (index, record) in records.iter().enumerate() {
            assert_eq!(with.vector(index), without.vector(index), "{}", record.path);
        }
        // Files the tree's ignore files exclude were chunked (speculatively)
        // but never embedded.
        for (_, text) in &sent {
            assert!(!text.contains("ignored_early") && !text.contains("ignored_late"), "{text}");
        }
        // Every file the build read came from the overlap; what it left
        // are the speculative files the tree's ignore files exclude.
        assert_eq!(prechunked.missed(), 0, "the build read files the overlap should have chunked");
        assert!(prechunked.taken() >= paths.len(), "{} taken", prechunked.taken());
        let late = text(git(&work, &["rev-parse", "HEAD:d/-first.rs"], None));
        let late = ObjectId::from_hex(late.as_bytes()).unwrap();
        assert!(prechunked.take("d/-first.rs", late, CAP).is_some(), "the late-ignored file was chunked, unused");
    }

    #[test]
    fn a_warm_or_incremental_fetch_does_not_overlap() {
        let temp = tempfile::tempdir().unwrap();
        let work = temp.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        upstream(&work);
        let plan = OverlapPlan { scope: Vec::new(), max_input_chars: CAP, dispatch: None };
        let home = temp.path().join("a");
        let (remote, first) = cold_resolve(&work, &home, Some(&plan));
        assert!(first.overlap.is_some());
        write(&work, "new.rs", b"fn new() {}\n");
        git(&work, &["add", "-A"], None);
        git(&work, &["commit", "-q", "-m", "new"], None);
        let env = Environment::new([("HOME".to_string(), home.display().to_string())].into_iter().collect());
        let again = Remote::new(work.to_str().unwrap(), &home, &home.join(".git-agent"), &env).unwrap();
        assert_eq!(again.dir, remote.dir);
        let freshness = Freshness { reindex: true, started: SystemTime::now() };
        let second = remote::resolve(&again, None, freshness, &Quiet, &AtomicBool::new(false), Some(&plan)).unwrap();
        assert!(second.fetched_at.is_some());
        assert!(second.overlap.is_none(), "an incremental fetch keeps the normal path");
    }
}

//! Remote mode's overlap of a cold fetch with chunking: while the pack
//! arrives, its entries are decoded ([`super::packstream`]), the selected
//! commit's trees place each arriving blob at its paths, and the blobs
//! are checked and chunked on worker threads. The results wait in
//! [`Prechunked`], keyed by path and blob id, for the build that follows
//! the fetch.
//!
//! The build still walks the fetched tree with every discovery rule
//! (scope, dot paths, the tree's `.gitignore` and `.gitagentignore`,
//! sizes); a file it selects takes its chunks from here when this path
//! and blob were chunked, and is read from the repository otherwise.
//! Chunking depends only on the path, the text and the input cap, so the
//! index is the same as without the overlap: files later ignored, blobs
//! whose trees arrive after them, a pack that cannot be decoded (the
//! decoder stops, nothing is kept for what follows) only cost the
//! speculative work, never a different record. Nothing here is sent to
//! the embeddings provider: selection happens in the build.
//!
//! Pack order makes this worthwhile: `git pack-objects` writes commits
//! first, and then trees before the blobs they name (depth first, or all
//! trees before all blobs when tags are present).

use super::chunking::{self, ChunkedFile};
use super::discovery::{self, MAX_FILE_BYTES, SkipReason};
use super::packstream::{Decoded, PackDecoder};
use super::paths::{path_in_scope, scope_may_contain_dir};
use gix::ObjectId;
use gix::objs::Kind;
use gix::objs::tree::EntryKind;
use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

/// What the overlap needs from the search: the files it may select.
#[derive(Debug, Clone)]
pub struct OverlapPlan {
    /// Limits the files chunked (remote-root relative); empty for all.
    pub scope: Vec<String>,
    pub max_input_chars: usize,
}

/// A file checked and chunked while the pack arrived.
pub type Prechunk = Result<ChunkedFile, SkipReason>;

/// The files chunked during the fetch, until the build takes them.
#[derive(Debug, Default)]
pub struct Prechunked {
    max_input_chars: usize,
    files: Mutex<HashMap<(String, ObjectId), Prechunk>>,
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
        let taken =
            (max_input_chars == self.max_input_chars).then(|| self.lock().remove(&(path.to_string(), blob))).flatten();
        let counter = if taken.is_some() { &self.taken } else { &self.missed };
        counter.fetch_add(1, Ordering::Relaxed);
        taken
    }

    /// How many files the build read itself (not chunked during the fetch).
    pub fn missed(&self) -> usize {
        self.missed.load(Ordering::Relaxed)
    }

    /// How many files are waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many the build took.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }

    fn insert(&self, path: String, blob: ObjectId, outcome: Prechunk) {
        self.lock().insert((path, blob), outcome);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, ObjectId), Prechunk>> {
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
    /// Why decoding stopped early, if it did.
    pub stopped: Option<String>,
}

/// One file to chunk.
struct Job {
    path: String,
    blob: ObjectId,
    data: Arc<[u8]>,
}

/// Where the target commit's trees and blobs stand.
struct Placement<'a> {
    plan: &'a OverlapPlan,
    /// The commit searched; follows an annotated tag to what it names.
    target: ObjectId,
    seen: HashMap<ObjectId, (Kind, Arc<[u8]>)>,
    /// Blobs the pack stored as deltas.
    deltified: std::collections::HashSet<ObjectId>,
    /// Trees and blobs of the target tree that have not arrived, with
    /// their paths.
    wanted_trees: HashMap<ObjectId, Vec<String>>,
    wanted_blobs: HashMap<ObjectId, Vec<String>>,
    jobs: mpsc::Sender<Job>,
    dispatched: usize,
    dispatched_deltified: usize,
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
        for (name, kind, id) in entries {
            let path = if dir.is_empty() { name } else { format!("{dir}/{name}") };
            let scope = &self.plan.scope;
            match kind {
                EntryKind::Tree if path_in_scope(&path, scope) || scope_may_contain_dir(&path, scope) => {
                    self.place_tree(id, path);
                }
                EntryKind::Blob | EntryKind::BlobExecutable if path_in_scope(&path, scope) => {
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
    }

    fn dispatch(&mut self, path: String, blob: ObjectId, data: Arc<[u8]>) {
        // The walk never reads an oversized blob.
        if data.len() as u64 > MAX_FILE_BYTES {
            return;
        }
        self.first_dispatch_at.get_or_insert(self.decoded);
        self.dispatched += 1;
        self.dispatched_deltified += usize::from(self.deltified.contains(&blob));
        let _ = self.jobs.send(Job { path, blob, data });
    }
}

/// Decodes the pack from `read` and chunks the files of `target`'s tree
/// (a commit, or a tag naming one) into `prechunked` on `workers` threads
/// as their blobs arrive. Returns once the pack ended (or could not be
/// decoded further) and every dispatched file is chunked; `cancelled`
/// stops it early.
pub fn run(
    read: impl BufRead,
    target: ObjectId,
    plan: &OverlapPlan,
    workers: usize,
    cancelled: &AtomicBool,
    prechunked: &Prechunked,
) -> OverlapStats {
    let (sender, receiver) = mpsc::channel::<Job>();
    let receiver = Mutex::new(receiver);
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            let receiver = &receiver;
            scope.spawn(move || {
                loop {
                    let job = receiver.lock().unwrap_or_else(std::sync::PoisonError::into_inner).recv();
                    let Ok(job) = job else { return };
                    if cancelled.load(Ordering::Relaxed) {
                        continue;
                    }
                    let outcome = discovery::check_candidate(&job.path, job.data.to_vec())
                        .map(|text| chunking::chunk_file(&job.path, text, plan.max_input_chars));
                    prechunked.insert(job.path, job.blob, outcome);
                }
            });
        }
        let mut placement = Placement {
            plan,
            target,
            seen: HashMap::new(),
            deltified: Default::default(),
            wanted_trees: HashMap::new(),
            wanted_blobs: HashMap::new(),
            jobs: sender,
            dispatched: 0,
            dispatched_deltified: 0,
            decoded: 0,
            first_dispatch_at: None,
        };
        let mut stats = OverlapStats::default();
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
        // Ends the workers once the queue is drained.
        drop(placement);
        stats
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::live::LiveIndex;
    use crate::search::packstream::ChunkReader;
    use crate::search::packstream::tests::git;
    use crate::search::refresh::{self, RefreshRequest, Reporter};
    use crate::search::remote::{self, Freshness, Remote, Resolved};
    use crate::search::revision::{self, TreeSource};
    use crate::search::spool::VectorSpool;
    use crate::search::store::Manifest;
    use git_agent_shared::Environment;
    use std::path::Path;
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

    fn chunked_text(outcome: &Prechunk) -> String {
        match outcome {
            Ok(chunked) => format!("{:?} {:?}", chunked.text, chunked.chunks),
            Err(reason) => format!("{reason:?}"),
        }
    }

    #[test]
    fn files_are_chunked_before_the_rest_of_the_pack_has_arrived() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        upstream(root);
        let head = text(git(root, &["rev-parse", "HEAD"], None));
        let pack = git(root, &["pack-objects", "--revs", "--stdout", "--delta-base-offset"], Some(b"HEAD\n"));
        let target = ObjectId::from_hex(head.as_bytes()).unwrap();
        let plan = OverlapPlan { scope: Vec::new(), max_input_chars: CAP };
        let prechunked = Prechunked::new(CAP);
        let (sender, receiver) = mpsc::channel();
        let reader = ChunkReader::new(receiver, Arc::new(AtomicU64::new(0)));
        let stop = AtomicBool::new(false);
        let half = pack.len() / 2;
        let stats = std::thread::scope(|scope| {
            let running = scope.spawn(|| run(reader, target, &plan, 1, &stop, &prechunked));
            sender.send(pack[..half].to_vec()).unwrap();
            // The event: a file chunked while half the pack is still to come.
            let early = wait_for(|| !prechunked.is_empty());
            sender.send(pack[half..].to_vec()).unwrap();
            drop(sender);
            let stats = running.join().unwrap();
            assert!(early, "no file was chunked before the second half of the pack arrived: {stats:?}");
            stats
        });
        assert_eq!(stats.stopped, None);
        assert_eq!(stats.decoded, stats.pack_objects);
        assert!(stats.first_dispatch_at.is_some_and(|at| at < stats.pack_objects / 2), "{stats:?}");
        assert!(stats.dispatched_deltified > 0, "a deltified blob was chunked: {stats:?}");

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

    struct Quiet;
    impl Reporter for Quiet {
        fn skip(&self, _: &str, _: SkipReason) {}
        fn timing(&self, _: &str, _: Duration) {}
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

    /// Builds the index of a resolved remote commit as a search does, with
    /// one distinct vector per embedding input.
    fn build(remote: &Remote, resolved: &Resolved, prechunked: Option<Arc<Prechunked>>) -> Arc<LiveIndex> {
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
        let prepared = refresh::prepare(request, None, &Quiet, &|| false, None).unwrap();
        let mut spool = VectorSpool::new();
        for missing in &prepared.missing {
            let vector: Vec<f32> = missing.hash[..4].iter().map(|&byte| f32::from(byte) + 1.0).collect();
            spool.insert(&std::env::temp_dir(), missing.hash, &vector).unwrap();
        }
        refresh::finish(prepared, spool.finish().unwrap(), &Quiet, &|| false).unwrap()
    }

    #[test]
    fn a_build_after_an_overlapped_cold_fetch_equals_one_without_the_overlap() {
        let temp = tempfile::tempdir().unwrap();
        let work = temp.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        upstream(&work);
        let plan = OverlapPlan { scope: Vec::new(), max_input_chars: CAP };

        let (remote, resolved) = cold_resolve(&work, &temp.path().join("a"), Some(&plan));
        let overlapped = resolved.overlap.clone().expect("a cold fetch overlaps");
        assert_eq!(overlapped.stats.stopped, None, "{:?}", overlapped.stats);
        assert!(overlapped.stats.dispatched_deltified > 0, "{:?}", overlapped.stats);
        let prechunked = Arc::clone(&overlapped.prechunked);
        let with = build(&remote, &resolved, Some(Arc::clone(&prechunked)));

        let (plain_remote, plain) = cold_resolve(&work, &temp.path().join("b"), None);
        assert!(plain.overlap.is_none());
        assert_eq!(plain.commit, resolved.commit);
        let without = build(&plain_remote, &plain, None);

        let records = with.snapshot.records.to_index_records();
        assert_eq!(records, without.snapshot.records.to_index_records());
        let paths: std::collections::BTreeSet<&str> = records.iter().map(|record| record.path.as_str()).collect();
        for path in ["+early/kept.rs", "d/later.rs", "dup1.rs", "dup2.rs", "src/copy3.rs", "many/file29.rs"] {
            assert!(paths.contains(path), "{path} is indexed: {paths:?}");
        }
        for path in ["+early/a.skip", "d/-first.rs", "bin.dat", "big.txt"] {
            assert!(!paths.contains(path), "{path} is not indexed");
        }
        for (index, record) in records.iter().enumerate() {
            assert_eq!(with.vector(index), without.vector(index), "{}", record.path);
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
        let plan = OverlapPlan { scope: Vec::new(), max_input_chars: CAP };
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

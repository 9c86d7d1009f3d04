//! Filesystem discovery: which files under the search root are candidates,
//! read exactly as they are on disk (staged, unstaged and untracked alike).
//!
//! Skips, in order: paths outside `--scope`; dot paths (unless a scope opts
//! into them); `.gitignore` and `.gitagentignore` rules, where a deeper
//! directory's file wins over a shallower one, `.gitagentignore` wins over
//! `.gitignore` in the same directory, the last matching line of a file
//! wins, an ignored directory is never entered (so nothing below it can be
//! re-included), and the built-in low-signal list sits below every file;
//! symbolic links; non-regular files; files over 1 MiB. Reading a file
//! ([`read_candidate`]) adds the binary and non-text checks. The walk
//! itself only stats: the daemon decides which files it must read.
//!
//! Names are bytes: the walk lists, matches and enters folders by the
//! bytes of their names (a name that is not UTF-8 included), and a found
//! file carries its path's key (`git_agent_shared::quote`), which every
//! open goes back through ([`read_candidate`]).

use crate::paths::{dot_rule_skips, is_dot_name, path_in_scope, scope_may_contain_dir};
use git_agent_shared::quote::{key_bytes, key_path, utf8_or_quoted};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

/// Files larger than this are skipped as oversized.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The ignore files search reads, in precedence order within a directory
/// (later wins).
pub(super) const IGNORE_FILES: [&str; 2] = [".gitignore", ".gitagentignore"];

/// Built-in low-signal patterns (lock files, checksums, license texts),
/// matched like root-level `.gitignore` lines against every path's last
/// component: these exact names...
const DEFAULT_IGNORED_NAMES: &[&str] = &[
    "bun.lock",
    "bun.lockb",
    "Cartfile.resolved",
    "cabal.project.freeze",
    "Cargo.lock",
    "composer.lock",
    "conda-lock.yaml",
    "conda-lock.yml",
    "cpanfile.snapshot",
    "deno.lock",
    "flake.lock",
    "Gemfile.lock",
    "go.sum",
    "mix.lock",
    "npm-shrinkwrap.json",
    "package-lock.json",
    "Package.resolved",
    "packages.lock.json",
    "pdm.lock",
    "Pipfile.lock",
    "pixi.lock",
    "Podfile.lock",
    "poetry.lock",
    "pnpm-lock.yaml",
    "pubspec.lock",
    "renv.lock",
    "shard.lock",
    "stack.yaml.lock",
    "uv.lock",
    "yarn.lock",
    "LICENSE",
    "COPYING",
    "NOTICE",
];

/// ...and the patterns `*.lock`, `*.lockfile`, `*.bazel`, `*.sha256`.
const DEFAULT_IGNORED_SUFFIXES: &[&str] = &[".lock", ".lockfile", ".bazel", ".sha256"];

/// Whether the built-in list ignores `path`.
pub(super) fn default_ignored(path: &[u8]) -> bool {
    let name = path.rsplit(|&byte| byte == b'/').next().unwrap_or(path);
    DEFAULT_IGNORED_NAMES.iter().any(|ignored| ignored.as_bytes() == name)
        || DEFAULT_IGNORED_SUFFIXES.iter().any(|suffix| name.ends_with(suffix.as_bytes()))
}

/// The operating-system path of `root`'s descendant `relative` (bytes,
/// `/`-separated).
fn under(root: &Path, relative: &[u8]) -> PathBuf {
    if relative.is_empty() { root.to_path_buf() } else { root.join(OsStr::from_bytes(relative)) }
}

/// `dir/name` as bytes (`name` alone at the root).
pub(super) fn child(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(dir.len() + 1 + name.len());
    if !dir.is_empty() {
        path.extend_from_slice(dir);
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// Whether `name` is one of the [`IGNORE_FILES`].
pub(super) fn is_ignore_file(name: &[u8]) -> bool {
    IGNORE_FILES.iter().any(|file| file.as_bytes() == name)
}

/// Why discovery passed over a path. The names are the `reason` values of
/// `--debug` `search_skip` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    DotDir,
    DotFile,
    Symlink,
    NonRegular,
    Oversized,
    Binary,
    NonText,
    Unreadable,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DotDir => "dot_dir",
            Self::DotFile => "dot_file",
            Self::Symlink => "symlink",
            Self::NonRegular => "non_regular",
            Self::Oversized => "oversized",
            Self::Binary => "binary",
            Self::NonText => "non_text",
            Self::Unreadable => "unreadable",
        }
    }
}

/// One path passed over by git-agent's own safety rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub path: String,
    pub reason: SkipReason,
}

/// Counts reported as `retrieval.skipped`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkipCounts {
    pub dirs: usize,
    pub binary: usize,
    pub non_text: usize,
    pub oversized: usize,
    pub symlink: usize,
    pub unreadable: usize,
}

impl SkipCounts {
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    pub fn add(&mut self, other: &Self) {
        self.dirs += other.dirs;
        self.binary += other.binary;
        self.non_text += other.non_text;
        self.oversized += other.oversized;
        self.symlink += other.symlink;
        self.unreadable += other.unreadable;
    }

    /// Counts one skip of a file read (binary, non-text, oversized or
    /// unreadable).
    pub fn count(&mut self, reason: SkipReason) {
        match reason {
            SkipReason::Binary => self.binary += 1,
            SkipReason::NonText => self.non_text += 1,
            SkipReason::Oversized => self.oversized += 1,
            SkipReason::Symlink => self.symlink += 1,
            SkipReason::Unreadable => self.unreadable += 1,
            SkipReason::DotDir => self.dirs += 1,
            SkipReason::DotFile | SkipReason::NonRegular => {}
        }
    }
}

/// What identifies one version of a file on disk without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
}

impl FileStat {
    pub fn of(metadata: &fs::Metadata) -> Self {
        Self {
            size: metadata.len(),
            mtime_ns: metadata.mtime().saturating_mul(1_000_000_000).saturating_add(metadata.mtime_nsec()),
            ctime_ns: metadata.ctime().saturating_mul(1_000_000_000).saturating_add(metadata.ctime_nsec()),
            ino: metadata.ino(),
            dev: metadata.dev(),
        }
    }
}

/// A regular file the walk accepted, not yet read.
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// Root-relative, `/`-separated: the path's key (quoted when its
    /// bytes are not UTF-8).
    pub path: String,
    pub stat: FileStat,
    /// The blob of a committed tree's entry (revision mode); `None` on disk.
    pub blob: Option<gix::ObjectId>,
}

/// The outcome of one walk.
#[derive(Debug, Default)]
pub struct Walk {
    /// Accepted files in walk order (lexical, depth first).
    pub files: Vec<FoundFile>,
    pub skipped: SkipCounts,
    pub skips: Vec<Skip>,
    /// Revision mode: blobs of the tree the repository does not have.
    pub absent: Vec<gix::ObjectId>,
}

/// The ignore files of one directory.
#[derive(Debug, Default)]
pub(super) struct Level {
    /// Root-relative directory (bytes), empty for the root.
    dir: Vec<u8>,
    matchers: Vec<Gitignore>,
}

impl Level {
    fn load(root: &Path, dir: &[u8]) -> Self {
        let abs = under(root, dir);
        let texts = IGNORE_FILES.iter().filter_map(|name| fs::read(abs.join(name)).ok()).collect();
        Self::from_texts(root, dir, texts)
    }

    /// The level of `dir` from the bytes of its ignore files, in
    /// [`IGNORE_FILES`] order (a committed tree's blobs, or files on disk).
    /// A byte of a pattern that is not UTF-8 is matched as `?` (any one
    /// byte): the glob engine takes patterns as text, and matches paths
    /// by their bytes.
    pub(super) fn from_texts(root: &Path, dir: &[u8], texts: Vec<Vec<u8>>) -> Self {
        let abs = under(root, dir);
        let mut matchers = Vec::new();
        for bytes in texts {
            let text = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(error) => {
                    let mut text = String::new();
                    for chunk in error.as_bytes().utf8_chunks() {
                        text.push_str(chunk.valid());
                        text.extend(chunk.invalid().iter().map(|_| '?'));
                    }
                    text
                }
            };
            let mut builder = GitignoreBuilder::new(&abs);
            for line in text.lines() {
                // A malformed line is ignored, as Git does.
                let _ = builder.add_line(None, line);
            }
            if let Ok(matcher) = builder.build()
                && !matcher.is_empty()
            {
                matchers.push(matcher);
            }
        }
        Self { dir: dir.to_vec(), matchers }
    }

    /// Matched on the path's bytes: a glob's `*` and `?` match any byte,
    /// so a name that is not UTF-8 is matched as Git matches it.
    fn matched(&self, path: &[u8], is_dir: bool) -> Option<bool> {
        if self.matchers.is_empty() {
            return None;
        }
        let relative = if self.dir.is_empty() { path } else { &path[self.dir.len() + 1..] };
        let relative = Path::new(OsStr::from_bytes(relative));
        for matcher in self.matchers.iter().rev() {
            match matcher.matched(relative, is_dir) {
                Match::None => {}
                Match::Ignore(_) => return Some(true),
                Match::Whitelist(_) => return Some(false),
            }
        }
        None
    }
}

/// `.gitignore`, `.gitagentignore` and the built-in list, loaded lazily per
/// directory for path checks after a walk (which takes the root folder's
/// rules from here and reads the others as it lists their folders).
pub struct IgnoreRules {
    root: PathBuf,
    levels: HashMap<Vec<u8>, Arc<Level>>,
}

impl IgnoreRules {
    pub fn new(root: &Path) -> Self {
        Self { root: root.to_path_buf(), levels: HashMap::new() }
    }

    fn level(&mut self, dir: &[u8]) -> Arc<Level> {
        if let Some(level) = self.levels.get(dir) {
            return Arc::clone(level);
        }
        let level = Arc::new(Level::load(&self.root, dir));
        self.levels.insert(dir.to_vec(), Arc::clone(&level));
        level
    }

    /// Whether discovery would pass over the file `path` because of a dot
    /// component, an ignored ancestor directory or an ignore rule, without
    /// walking (used to re-check index entries outside a visible scope).
    pub fn excludes_file(&mut self, path: &str) -> bool {
        if dot_rule_skips(path, &[]) {
            return true;
        }
        let path = key_bytes(path);
        let mut stack = vec![self.level(b"")];
        let mut end = 0;
        let components: Vec<&[u8]> = path.split(|&byte| byte == b'/').collect();
        for (index, part) in components.iter().enumerate() {
            end += part.len() + usize::from(index > 0);
            let prefix = &path[..end];
            let is_dir = index + 1 < components.len();
            if ignored_with(&stack, prefix, is_dir) {
                return true;
            }
            if is_dir {
                stack.push(self.level(prefix));
            }
        }
        false
    }
}

/// What the selection rules say of one folder or file, before anything
/// else is read of it: the same rules for a checkout ([`walk_with`]) and a
/// committed tree (`revision`).
pub(super) enum Rule {
    /// Go on: enter the folder, or look at the file.
    Keep,
    /// Out of scope, an ignore file or ignored: passed over silently.
    Quiet,
    /// Passed over and reported.
    Skip(SkipReason),
    /// An ignored folder, counted but not listed.
    IgnoredDir,
}

/// The rule for folder `path` (a key; named `name`), below the ignore
/// levels `stack`.
pub(super) fn folder_rule(path: &str, name: &[u8], scope: &[String], stack: &[Arc<Level>]) -> Rule {
    if !path_in_scope(path, scope) && !scope_may_contain_dir(path, scope) {
        Rule::Quiet
    } else if is_dot_name(name) && dot_rule_skips(path, scope) {
        Rule::Skip(SkipReason::DotDir)
    } else if ignored_with(stack, &key_bytes(path), true) {
        Rule::IgnoredDir
    } else {
        Rule::Keep
    }
}

/// The rule for file `path` (a key; named `name`), below the ignore
/// levels `stack`.
pub(super) fn file_rule(path: &str, name: &[u8], scope: &[String], stack: &[Arc<Level>]) -> Rule {
    if !path_in_scope(path, scope) || is_ignore_file(name) {
        Rule::Quiet
    } else if is_dot_name(name) && dot_rule_skips(path, scope) {
        Rule::Skip(SkipReason::DotFile)
    } else if ignored_with(stack, &key_bytes(path), false) {
        Rule::Quiet
    } else {
        Rule::Keep
    }
}

/// Whether `path` is ignored, given the ignore levels of its ancestor
/// directories (`stack`, root first).
pub(super) fn ignored_with(stack: &[Arc<Level>], path: &[u8], is_dir: bool) -> bool {
    for level in stack.iter().rev() {
        if let Some(ignored) = level.matched(path, is_dir) {
            return ignored;
        }
    }
    default_ignored(path)
}

/// Walks `root`, limited to `scope`, applying every rule that needs no
/// file contents. Folders are listed on a few threads, each folder a job
/// of its own (so one large folder anywhere in the tree keeps every
/// thread busy), and the results are joined in walk order: lexical,
/// depth first. Files are stat'ed while their folder is open, so a
/// folder's handle is closed before the next is opened.
pub fn walk(root: &Path, scope: &[String], rules: &mut IgnoreRules) -> Walk {
    walk_with(root, scope, rules, &NoFileWork).walk
}

/// Work done on accepted files by the walk's own threads, as soon as a
/// folder is listed, so reading overlaps listing.
pub trait FileWork: Sync {
    /// Each thread's own state (a snapshot writer, say).
    type State: Send;
    type Output: Send;
    /// The state of thread `thread` (0-based).
    fn state(&self, thread: usize) -> Self::State;
    /// Whether `file` needs the work (decided while its folder is listed).
    fn wants(&self, file: &FoundFile) -> bool;
    fn run(&self, state: &mut Self::State, file: &FoundFile) -> Self::Output;
}

/// No work: a plain walk.
pub struct NoFileWork;

impl FileWork for NoFileWork {
    type State = ();
    type Output = ();
    fn state(&self, _: usize) {}
    fn wants(&self, _: &FoundFile) -> bool {
        false
    }
    fn run(&self, _: &mut (), _: &FoundFile) {}
}

/// How many wanted files one job of [`FileWork`] takes.
const WORK_BATCH: usize = 16;

/// A walk with the outputs of its [`FileWork`].
pub struct WorkedWalk<W: FileWork> {
    pub walk: Walk,
    /// In the order of `walk.files`; `None` for files the work did not want.
    pub outputs: Vec<Option<W::Output>>,
    /// Every thread's state.
    pub states: Vec<W::State>,
}

/// A listed folder and the work outputs of its items.
type Slot<O> = Option<(Listed, Vec<Option<O>>)>;

/// [`walk`], running `work` on the files it wants.
pub fn walk_with<W: FileWork>(root: &Path, scope: &[String], rules: &mut IgnoreRules, work: &W) -> WorkedWalk<W> {
    let root_level = rules.level(b"");
    let jobs = Jobs::new(FolderJob { dir: Vec::new(), stack: Vec::new(), slot: 0 });
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    // `after_job` runs after each job (the first thread uses it to call in
    // the others).
    let worker = |thread: usize, after_job: &mut dyn FnMut()| {
        let mut state = work.state(thread);
        let mut listed = Vec::new();
        let mut outputs = Vec::new();
        while let Some(job) = jobs.take() {
            // Counted as done even if it panics, so the other threads
            // drain the queue and stop instead of waiting for it.
            let _done = JobDone(&jobs);
            match job {
                Job::Folder(folder) => {
                    let (slot, folder) = list_folder(root, scope, &root_level, folder, &jobs);
                    let wanted: Vec<(usize, FoundFile)> = folder
                        .items
                        .iter()
                        .enumerate()
                        .filter_map(|(index, item)| match item {
                            Item::File(file) if work.wants(file) => Some((index, file.clone())),
                            _ => None,
                        })
                        .collect();
                    let mut wanted = wanted.into_iter().peekable();
                    while wanted.peek().is_some() {
                        jobs.add_files(slot, wanted.by_ref().take(WORK_BATCH).collect());
                    }
                    listed.push((slot, folder));
                }
                Job::Files(slot, files) => {
                    for (index, file) in files {
                        outputs.push((slot, index, work.run(&mut state, &file)));
                    }
                }
            }
            after_job();
        }
        (listed, outputs, state)
    };
    let worker = &worker;
    // The calling thread starts alone; the other threads are started only
    // once jobs queue up, so a warm search of a small tree starts none.
    type Done<W> = (Vec<(usize, Listed)>, Vec<(usize, usize, <W as FileWork>::Output)>, <W as FileWork>::State);
    let done: Vec<Done<W>> = std::thread::scope(|threads_scope| {
        let mut handles = Vec::new();
        let mut call_in = || {
            if handles.is_empty() && threads > 1 && jobs.waiting() > 1 {
                handles.extend((1..threads).map(|thread| threads_scope.spawn(move || worker(thread, &mut || {}))));
            }
        };
        let first = worker(0, &mut call_in);
        let mut done = vec![first];
        done.extend(
            handles.into_iter().map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))),
        );
        done
    });
    let mut slots: Vec<Slot<W::Output>> = (0..jobs.slots()).map(|_| None).collect();
    let mut states = Vec::with_capacity(done.len());
    let mut all_outputs = Vec::new();
    for (listed, outputs, state) in done {
        for (slot, folder) in listed {
            let outputs = (0..folder.items.len()).map(|_| None).collect();
            slots[slot] = Some((folder, outputs));
        }
        all_outputs.push(outputs);
        states.push(state);
    }
    for (slot, index, output) in all_outputs.into_iter().flatten() {
        if let Some((_, outputs)) = slots[slot].as_mut() {
            outputs[index] = Some(output);
        }
    }
    let mut out = Walk::default();
    let files = slots.iter().flatten().map(|(folder, _)| folder.files).sum();
    out.files.reserve(files);
    let mut outputs = Vec::with_capacity(files);
    join_folder(&mut slots, 0, &mut out, &mut outputs);
    WorkedWalk { walk: out, outputs, states }
}

/// One folder to list: its root-relative path (bytes), the ignore levels
/// of its ancestors (root first) and the slot its result goes to.
struct FolderJob {
    dir: Vec<u8>,
    stack: Vec<Arc<Level>>,
    slot: usize,
}

enum Job {
    Folder(FolderJob),
    /// Files of the folder in a slot, with their item indexes, to run the
    /// file work on.
    Files(usize, Vec<(usize, FoundFile)>),
}

/// What listing one folder found, in name order.
#[derive(Default)]
struct Listed {
    items: Vec<Item>,
    skipped: SkipCounts,
    files: usize,
}

enum Item {
    File(FoundFile),
    Skip(Skip),
    /// A subfolder, listed into this slot.
    Folder(usize),
}

/// Marks a taken job as done when dropped.
struct JobDone<'a>(&'a Jobs);

impl Drop for JobDone<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// The jobs waiting for the walk's threads.
struct Jobs {
    state: Mutex<JobsState>,
    ready: Condvar,
}

struct JobsState {
    waiting: Vec<Job>,
    /// Jobs waiting or running.
    open: usize,
    slots: usize,
}

impl Jobs {
    fn new(first: FolderJob) -> Self {
        let state = JobsState { waiting: vec![Job::Folder(first)], open: 1, slots: 1 };
        Self { state: Mutex::new(state), ready: Condvar::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JobsState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next job, or `None` once every job has run.
    fn take(&self) -> Option<Job> {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.waiting.pop() {
                return Some(job);
            }
            if state.open == 0 {
                return None;
            }
            state = self.ready.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn push(&self, job: Job) {
        let mut state = self.lock();
        state.open += 1;
        state.waiting.push(job);
        drop(state);
        self.ready.notify_one();
    }

    /// Queues a subfolder and returns its slot.
    fn add_folder(&self, dir: Vec<u8>, stack: Vec<Arc<Level>>) -> usize {
        let slot = {
            let mut state = self.lock();
            state.slots += 1;
            state.slots - 1
        };
        self.push(Job::Folder(FolderJob { dir, stack, slot }));
        slot
    }

    fn add_files(&self, slot: usize, files: Vec<(usize, FoundFile)>) {
        self.push(Job::Files(slot, files));
    }

    /// Marks a taken job as done.
    fn finish(&self) {
        let mut state = self.lock();
        state.open -= 1;
        if state.open == 0 {
            drop(state);
            self.ready.notify_all();
        }
    }

    fn slots(&self) -> usize {
        self.lock().slots
    }

    fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// Appends a listed folder's files, their outputs and its skips to `out`,
/// its subfolders' in their place.
fn join_folder<O>(slots: &mut [Slot<O>], slot: usize, out: &mut Walk, outputs: &mut Vec<Option<O>>) {
    let Some((folder, folder_outputs)) = slots.get_mut(slot).and_then(Option::take) else { return };
    out.skipped.add(&folder.skipped);
    for (item, output) in folder.items.into_iter().zip(folder_outputs) {
        match item {
            Item::File(file) => {
                out.files.push(file);
                outputs.push(output);
            }
            Item::Skip(skip) => out.skips.push(skip),
            Item::Folder(slot) => join_folder(slots, slot, out, outputs),
        }
    }
}

/// The entries of a folder sorted by name (bytes); `None` (with a skip)
/// when the folder cannot be read.
fn read_sorted(root: &Path, dir: &[u8], out: &mut Listed) -> Option<Vec<(OsString, fs::DirEntry)>> {
    let entries = match fs::read_dir(under(root, dir)) {
        Ok(entries) => entries,
        Err(_) => {
            out.skipped.unreadable += 1;
            let path = if dir.is_empty() { ".".to_string() } else { utf8_or_quoted(dir).into_owned() };
            out.items.push(Item::Skip(Skip { path, reason: SkipReason::Unreadable }));
            return None;
        }
    };
    let mut named: Vec<(OsString, fs::DirEntry)> =
        entries.filter_map(Result::ok).map(|entry| (entry.file_name(), entry)).collect();
    named.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Some(named)
}

/// Lists one folder: applies the walk's rules to each entry, stats the
/// files and queues the subfolders to enter.
fn list_folder(root: &Path, scope: &[String], root_level: &Arc<Level>, job: FolderJob, jobs: &Jobs) -> (usize, Listed) {
    let FolderJob { dir, mut stack, slot } = job;
    let mut out = Listed::default();
    let Some(entries) = read_sorted(root, &dir, &mut out) else {
        return (slot, out);
    };
    // The listing tells whether the folder has ignore files to load.
    let level = if dir.is_empty() {
        Arc::clone(root_level)
    } else if entries.iter().any(|(name, _)| is_ignore_file(name.as_bytes())) {
        Arc::new(Level::load(root, &dir))
    } else {
        Arc::new(Level { dir: dir.clone(), matchers: Vec::new() })
    };
    stack.push(level);
    for (name, entry) in entries {
        visit(&dir, name.as_bytes(), entry, scope, &stack, jobs, &mut out);
    }
    (slot, out)
}

/// Applies the walk's rules to one entry of `dir`.
#[allow(clippy::too_many_arguments)]
fn visit(
    dir: &[u8],
    name: &[u8],
    entry: fs::DirEntry,
    scope: &[String],
    stack: &[Arc<Level>],
    jobs: &Jobs,
    out: &mut Listed,
) {
    let bytes = child(dir, name);
    let path = utf8_or_quoted(&bytes).into_owned();
    let skip = |out: &mut Listed, path: String, reason: SkipReason| {
        out.skipped.count(reason);
        out.items.push(Item::Skip(Skip { path, reason }));
    };
    let Ok(file_type) = entry.file_type() else {
        return skip(out, path, SkipReason::Unreadable);
    };
    if file_type.is_dir() {
        match folder_rule(&path, name, scope, stack) {
            Rule::Keep => {}
            Rule::Quiet => return,
            Rule::Skip(reason) => return skip(out, path, reason),
            Rule::IgnoredDir => {
                out.skipped.dirs += 1;
                return;
            }
        }
        let slot = jobs.add_folder(bytes, stack.to_vec());
        out.items.push(Item::Folder(slot));
        return;
    }
    match file_rule(&path, name, scope, stack) {
        Rule::Keep => {}
        Rule::Quiet | Rule::IgnoredDir => return,
        Rule::Skip(reason) => return skip(out, path, reason),
    }
    if file_type.is_symlink() {
        return skip(out, path, SkipReason::Symlink);
    }
    if !file_type.is_file() {
        return skip(out, path, SkipReason::NonRegular);
    }
    match entry.metadata() {
        Ok(metadata) if metadata.len() > MAX_FILE_BYTES => skip(out, path, SkipReason::Oversized),
        Ok(metadata) => {
            out.files += 1;
            out.items.push(Item::File(FoundFile { path, stat: FileStat::of(&metadata), blob: None }));
        }
        Err(_) => skip(out, path, SkipReason::Unreadable),
    }
}

/// Reads a found file (`path` a key) and applies the content checks: at
/// most 1 MiB, no NUL byte near the start, a text type. Returns the text
/// (invalid UTF-8 replaced) or the reason to skip it.
/// `size_hint` (the walk's size) sizes the buffer; the limit holds
/// whatever the file's size is now.
pub fn read_candidate(root: &Path, path: &str, size_hint: u64) -> Result<String, SkipReason> {
    let file = fs::File::open(root.join(key_path(path))).map_err(|_| SkipReason::Unreadable)?;
    let mut data = Vec::with_capacity(size_hint.min(MAX_FILE_BYTES) as usize + 1);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut data).map_err(|_| SkipReason::Unreadable)?;
    check_candidate(path, data)
}

/// The content checks of [`read_candidate`] on bytes already read (a
/// committed blob in revision mode).
pub fn check_candidate(path: &str, data: Vec<u8>) -> Result<String, SkipReason> {
    if data.len() as u64 > MAX_FILE_BYTES {
        return Err(SkipReason::Oversized);
    }
    if crate::textkind::is_binary(&data) {
        return Err(SkipReason::Binary);
    }
    if !crate::textkind::is_indexable_text(path, &data) {
        return Err(SkipReason::NonText);
    }
    Ok(match String::from_utf8(data) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, contents: &[u8]) {
        let full = root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, contents).unwrap();
    }

    fn paths(root: &Path, scope: &[&str]) -> Vec<String> {
        let scope: Vec<String> = scope.iter().map(|s| s.to_string()).collect();
        let walk = walk(root, &scope, &mut IgnoreRules::new(root));
        walk.files
            .into_iter()
            .filter(|file| read_candidate(root, &file.path, file.stat.size).is_ok())
            .map(|file| file.path)
            .collect()
    }

    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn classifies_every_skip_reason() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "keep.txt", b"release notes\n");
        write(root, "config.yaml", b"release: notes\n");
        write(root, "component.tsx", b"export const releaseNotes = true\n");
        write(root, "icon.svg", br#"<svg xmlns="http://www.w3.org/2000/svg"><title>x</title></svg>"#);
        write(root, "manual.pdf", b"%PDF-1.7\nrelease notes\n");
        write(root, "binary.dat", b"release\x00notes\n");
        write(root, "big.txt", &vec![b'a'; MAX_FILE_BYTES as usize + 1]);
        write(root, ".env", b"SECRET=1\n");
        write(root, ".github/workflows/ci.yml", b"on: push\n");
        write(root, "Cargo.lock", b"lock\n");
        write(root, "LICENSE", b"license\n");
        write(root, "sub/go.sum", b"sum\n");
        write(root, "BUILD.bazel", b"x\n");
        write(root, "dist/app.tar.sha256", b"x\n");
        write(root, "web/pnpm-lock.yaml", b"x\n");
        write(root, "x.lockfile", b"x\n");
        std::os::unix::fs::symlink(root.join("keep.txt"), root.join("link.txt")).unwrap();
        nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();

        let walk = walk(root, &[], &mut IgnoreRules::new(root));
        let mut skips = walk.skips.clone();
        let mut accepted = Vec::new();
        let mut counts = walk.skipped;
        for file in &walk.files {
            match read_candidate(root, &file.path, file.stat.size) {
                Ok(_) => accepted.push(file.path.clone()),
                Err(reason) => {
                    counts.count(reason);
                    skips.push(Skip { path: file.path.clone(), reason });
                }
            }
        }
        assert_eq!(accepted, ["component.tsx", "config.yaml", "keep.txt"]);
        skips.sort_by(|a, b| a.path.cmp(&b.path));
        let got: Vec<(&str, &str)> = skips.iter().map(|skip| (skip.path.as_str(), skip.reason.as_str())).collect();
        assert_eq!(
            got,
            [
                (".env", "dot_file"),
                (".github", "dot_dir"),
                ("big.txt", "oversized"),
                ("binary.dat", "binary"),
                ("icon.svg", "non_text"),
                ("link.txt", "symlink"),
                ("manual.pdf", "non_text"),
                ("pipe", "non_regular"),
            ]
        );
        assert_eq!(counts, SkipCounts { dirs: 1, binary: 1, non_text: 2, oversized: 1, symlink: 1, unreadable: 0 });
    }

    #[test]
    fn allowlist_rules_follow_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            ".gitignore",
            b"*\n!.gitignore\n!allowed/\n!allowed/wanted.txt   \n!allowed/space\\ \n!plain\n!plain/wanted.txt\n",
        );
        write(root, "allowed/wanted.txt", b"wanted\n");
        write(root, "allowed/space ", b"wanted\n");
        write(root, "allowed/ignored.txt", b"ignored\n");
        write(root, "ignored/deep.txt", b"ignored\n");
        write(root, "plain/wanted.txt", b"wanted\n");
        write(root, "plain/ignored.txt", b"ignored\n");
        write(root, "plain/plain", b"wanted\n");
        assert_eq!(paths(root, &[]), ["allowed/space ", "allowed/wanted.txt", "plain/plain", "plain/wanted.txt"]);
    }

    #[test]
    fn reincluded_directory_is_walked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", b"restored/\n!restored/\n");
        write(root, "restored/file.txt", b"restored\n");
        write(root, "restored/nested/file.txt", b"restored\n");
        assert_eq!(paths(root, &[]), ["restored/file.txt", "restored/nested/file.txt"]);
    }

    #[test]
    fn deeper_files_and_gitagentignore_take_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // The root ignores Markdown; a deeper .gitignore re-includes it.
        write(root, ".gitignore", b"*.md\n");
        write(root, "docs/.gitignore", b"!keep.md\n");
        write(root, "docs/keep.md", b"kept\n");
        write(root, "docs/drop.md", b"dropped\n");
        // In one directory .gitagentignore wins over .gitignore.
        write(root, "src/.gitignore", b"!gen.go\n");
        write(root, "src/.gitagentignore", b"gen.go\nvendor/\n");
        write(root, "src/gen.go", b"package src\n");
        write(root, "src/main.go", b"package src\n");
        write(root, "src/vendor/dep.go", b"package dep\n");
        // A root .gitagentignore pattern applies from the root's base.
        write(root, ".gitagentignore", b"/fixtures\nbuild/\n");
        write(root, "fixtures/a.txt", b"a\n");
        write(root, "lib/fixtures/b.txt", b"b\n");
        write(root, "lib/build/c.txt", b"c\n");
        // The built-in list sits below every ignore file.
        write(root, "pkg/.gitignore", b"!Cargo.lock\n");
        write(root, "pkg/Cargo.lock", b"lock\n");
        write(root, "Cargo.lock", b"lock\n");
        assert_eq!(paths(root, &[]), ["docs/keep.md", "lib/fixtures/b.txt", "pkg/Cargo.lock", "src/main.go"]);

        let mut rules = IgnoreRules::new(root);
        assert!(rules.excludes_file("src/gen.go"));
        assert!(rules.excludes_file("src/vendor/dep.go"));
        assert!(rules.excludes_file("docs/drop.md"));
        assert!(rules.excludes_file(".env"));
        assert!(!rules.excludes_file("docs/keep.md"));
        assert!(!rules.excludes_file("lib/fixtures/b.txt"));
    }

    #[test]
    fn scope_keeps_root_rules_and_may_enter_dot_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitagentignore", b"*.gen.go\n");
        write(root, "foo/a.go", b"package foo\n");
        write(root, "foo/b.gen.go", b"package foo\n");
        write(root, "bar/c.go", b"package bar\n");
        write(root, ".github/workflows/ci.yml", b"on: push\n");
        write(root, ".github/.gitignore", b"*.tmp\n");
        write(root, ".github/x.tmp", b"tmp\n");
        assert_eq!(paths(root, &["foo"]), ["foo/a.go"]);
        assert_eq!(paths(root, &[".github"]), [".github/workflows/ci.yml"]);
        assert_eq!(paths(root, &[]), ["bar/c.go", "foo/a.go"]);
    }

    /// Every regular file below `dir`, lexical by name at each level,
    /// depth first: the order the walk must keep, whatever its threads do.
    fn reference_order(root: &Path, dir: &str, out: &mut Vec<String>) {
        let mut names: Vec<String> = fs::read_dir(root.join(dir))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for name in names {
            let path = if dir.is_empty() { name } else { format!("{dir}/{name}") };
            if root.join(&path).is_dir() {
                reference_order(root, &path, out);
            } else {
                out.push(path);
            }
        }
    }

    #[test]
    fn walk_order_is_lexical_depth_first_across_threads() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Neighbouring names that sort differently as names and as paths,
        // one deep folder next to many shallow ones, and skips among them.
        for top in ["a", "a-b", "a.b", "a0", "z"] {
            for middle in 0..6 {
                for leaf in ["x", "x-y", "y"] {
                    write(root, &format!("{top}/m{middle}/{leaf}/f.txt"), b"text\n");
                    write(root, &format!("{top}/m{middle}/{leaf}.txt"), b"text\n");
                }
            }
        }
        let mut deep = String::from("deep");
        for level in 0..30 {
            deep.push_str(&format!("/d{level}"));
            write(root, &format!("{deep}/file.txt"), b"text\n");
        }
        write(root, "a/m1/big.txt", &vec![b'a'; MAX_FILE_BYTES as usize + 1]);
        write(root, "z/m2/.hidden", b"x\n");
        let mut expected = Vec::new();
        reference_order(root, "", &mut expected);
        expected.retain(|path| !path.ends_with("big.txt") && !path.ends_with(".hidden"));

        for _ in 0..5 {
            let walk = walk(root, &[], &mut IgnoreRules::new(root));
            let got: Vec<&str> = walk.files.iter().map(|file| file.path.as_str()).collect();
            assert_eq!(got, expected);
            let skips: Vec<(&str, &str)> =
                walk.skips.iter().map(|skip| (skip.path.as_str(), skip.reason.as_str())).collect();
            assert_eq!(skips, [("a/m1/big.txt", "oversized"), ("z/m2/.hidden", "dot_file")]);
            assert_eq!(walk.skipped.oversized, 1);
        }
    }

    /// Names that are not UTF-8 are walked, entered, ignored and read
    /// by their bytes, and found under their keys (quoted as git quotes
    /// them) in byte order.
    #[test]
    fn names_that_are_not_utf8_are_found_entered_and_ignored_by_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bytes = |path: &[u8]| root.join(OsStr::from_bytes(path));
        write(root, "a/b.txt", b"text\n");
        write(root, "a/.env", b"x\n");
        write(root, "z.txt", b"text\n");
        write(root, ".gitignore", b"*.log\nign\xe9/\n");
        fs::create_dir(bytes(b"a/caf\xe9")).unwrap();
        fs::write(bytes(b"a/caf\xe9/inner.txt"), b"inner\n").unwrap();
        fs::write(bytes(b"a/caf\xe9/.gitignore"), b"drop\xff.txt\n").unwrap();
        fs::write(bytes(b"a/caf\xe9/drop\xff.txt"), b"dropped\n").unwrap();
        fs::write(bytes(b"y\xff.txt"), b"text\n").unwrap();
        fs::write(bytes(b"y\xff.log"), b"log\n").unwrap();
        fs::write(bytes(b"\"quoted\".txt"), b"text\n").unwrap();
        fs::create_dir(bytes(b"ign\xe9")).unwrap();
        fs::write(bytes(b"ign\xe9/x.txt"), b"ignored\n").unwrap();
        let walk = walk(root, &[], &mut IgnoreRules::new(root));
        let files: Vec<&str> = walk.files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(files, [r#""\"quoted\".txt""#, "a/b.txt", r#""a/caf\351/inner.txt""#, r#""y\377.txt""#, "z.txt"]);
        let skips: Vec<(&str, &str)> =
            walk.skips.iter().map(|skip| (skip.path.as_str(), skip.reason.as_str())).collect();
        assert_eq!(skips, [("a/.env", "dot_file")]);
        assert_eq!(walk.skipped.unreadable, 0);
        for file in &walk.files {
            assert!(read_candidate(root, &file.path, file.stat.size).is_ok(), "{}", file.path);
        }
        assert_eq!(read_candidate(root, r#""a/caf\351/inner.txt""#, 0).unwrap(), "inner\n");

        let mut rules = IgnoreRules::new(root);
        assert!(rules.excludes_file(r#""a/caf\351/drop\377.txt""#));
        assert!(rules.excludes_file(r#""ign\351/x.txt""#));
        assert!(rules.excludes_file(r#""y\377.log""#));
        assert!(!rules.excludes_file(r#""y\377.txt""#));

        let scoped = super::walk(root, &[r#""a/caf\351""#.to_string()], &mut IgnoreRules::new(root));
        let files: Vec<&str> = scoped.files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(files, [r#""a/caf\351/inner.txt""#]);
    }

    /// File work that reads nothing and panics on one file.
    struct PanicsOn(&'static str);

    impl FileWork for PanicsOn {
        type State = usize;
        type Output = usize;
        fn state(&self, thread: usize) -> usize {
            thread
        }
        fn wants(&self, _: &FoundFile) -> bool {
            true
        }
        fn run(&self, thread: &mut usize, file: &FoundFile) -> usize {
            assert_ne!(file.path, self.0, "injected failure");
            *thread
        }
    }

    #[test]
    fn file_work_runs_on_every_file_in_order_and_a_panic_ends_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for folder in 0..40 {
            for file in 0..20 {
                write(root, &format!("f{folder:02}/n{file:02}.txt"), b"text\n");
            }
        }
        let worked = walk_with(root, &[], &mut IgnoreRules::new(root), &PanicsOn("none"));
        assert_eq!(worked.walk.files.len(), 800);
        assert_eq!(worked.outputs.len(), 800);
        assert!(worked.outputs.iter().all(Option::is_some));
        assert!(!worked.states.is_empty());

        // A panicking job neither hangs the other threads nor is lost.
        let panicked = std::panic::catch_unwind(|| {
            walk_with(root, &[], &mut IgnoreRules::new(root), &PanicsOn("f17/n03.txt"));
        });
        assert!(panicked.is_err());
    }
}

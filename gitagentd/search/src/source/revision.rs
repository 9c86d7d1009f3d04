//! Revision mode: the candidate files of one committed tree instead of the
//! files on disk.
//!
//! A revision is resolved with gix to a commit ([`resolve`]); its tree is
//! walked with every rule of filesystem discovery ([`super::discovery`]):
//! scope, dot paths, `.gitignore` and `.gitagentignore` read from the
//! tree's own blobs (never from a work tree), the built-in list, symbolic
//! links and submodules, and the 1 MiB limit checked from the object
//! header before a blob is read. Blobs are read and checked like files
//! ([`discovery::check_candidate`]). The repository may be bare: nothing
//! here touches a work tree, which is what lets remote mode search a
//! commit of its cached bare repository through the same code.
//!
//! Each commit has its own physical index, `search/revs/<commit>/` (plus a
//! `scope-*` folder for scopes that opt into skipped paths), so a second
//! search of the same commit embeds nothing; other indexes of the same
//! metadata root seed it through the shared vector store.

use super::discovery::{
    self, FileStat, FileWork, FoundFile, IGNORE_FILES, Level, MAX_FILE_BYTES, Rule, Skip, SkipReason, Walk, WorkedWalk,
};
use git_agent_shared::quote::utf8_or_quoted;
use gix::ObjectId;
use gix::objs::tree::EntryKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `source` of revision and remote records.
pub const SOURCE: &str = "revision";

/// Why a revision could not be opened, resolved or walked.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    #[error("--rev requires a Git repository, and {path} is not inside one\nhint: run the command inside a clone")]
    NotARepository { path: PathBuf },
    #[error("cannot open the git repository at {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error(
        "cannot resolve --rev {rev:?} to a commit: {message}\nhint: use a branch, tag, commit or expression `git rev-parse` accepts, such as HEAD~1"
    )]
    Resolve { rev: String, message: String },
    #[error("cannot read {what} of commit {commit}: {message}")]
    Read { commit: String, what: String, message: String },
}

/// The physical index folder of a committed tree: keyed by the commit,
/// plus a `scope-*` folder for scopes that opt into skipped paths.
pub fn index_dir(metadata_dir: &Path, commit: &str, skipped_scope: Option<&[String]>) -> PathBuf {
    let dir = crate::index::store::search_root(metadata_dir).join("revs").join(commit);
    match skipped_scope {
        Some(scope) => dir.join(crate::index::store::scope_cache_name(scope)),
        None => dir,
    }
}

/// Opens the repository containing `start` (a work tree or a bare
/// repository) without reading the user's or system Git configuration.
pub fn open(start: &Path) -> Result<gix::ThreadSafeRepository, RevisionError> {
    let options = gix::open::Options::isolated().strict_config(false);
    let trust = gix::sec::trust::Mapping { full: options.clone(), reduced: options };
    gix::ThreadSafeRepository::discover_opts(start, Default::default(), trust)
        .map_err(|error| RevisionError::Open { path: start.to_path_buf(), message: error.to_string() })
}

/// Resolves `rev` (any expression `git rev-parse` accepts for a commit:
/// names, abbreviated ids, `HEAD~2`, `v1.0^{commit}`, `main@{1}`, ...)
/// to a commit id, peeling tags.
pub fn resolve(repo: &gix::Repository, rev: &str) -> Result<ObjectId, RevisionError> {
    let resolve_error = |message: String| RevisionError::Resolve { rev: rev.to_string(), message };
    if rev.trim().is_empty() {
        return Err(resolve_error("the revision is empty".into()));
    }
    let id = repo
        .rev_parse_single(rev)
        .map_err(|error| resolve_error(gitagent_git::explain_unresolved(repo, rev, &error)))?;
    let object = id.object().map_err(|error| resolve_error(error.to_string()))?;
    let commit = object.peel_to_commit().map_err(|error| resolve_error(error.to_string()))?;
    Ok(commit.id)
}

/// The file in a remote cache's Git folder that says its fetches asked
/// for `blob:limit`: blobs over [`MAX_FILE_BYTES`] may be absent, on
/// purpose ([`super::remote`]).
pub const BLOB_LIMIT_MARKER: &str = "git-agent-blob-limit";

/// One committed tree to search. Cheap to share between threads: each
/// reader thread opens its own thread-local handle.
pub struct TreeSource {
    repo: gix::ThreadSafeRepository,
    pub commit: ObjectId,
    pub tree: ObjectId,
    /// A blob absent from the repository is one its size filter left out
    /// ([`BLOB_LIMIT_MARKER`]): oversized, not unreadable.
    absent_is_oversized: bool,
}

impl std::fmt::Debug for TreeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeSource").field("commit", &self.commit).field("tree", &self.tree).finish()
    }
}

impl TreeSource {
    /// The tree of `commit` in `repo` (bare or not).
    pub fn new(repo: gix::ThreadSafeRepository, commit: ObjectId) -> Result<Self, RevisionError> {
        let local = repo.to_thread_local();
        let read_error = |error: &dyn std::fmt::Display| RevisionError::Read {
            commit: commit.to_string(),
            what: "the tree".into(),
            message: error.to_string(),
        };
        let commit_object = local.find_commit(commit).map_err(|error| read_error(&error))?;
        let tree = commit_object.tree_id().map_err(|error| read_error(&error))?.detach();
        let absent_is_oversized = local.git_dir().join(BLOB_LIMIT_MARKER).is_file();
        Ok(Self { repo, commit, tree, absent_is_oversized })
    }

    /// Why a blob of the tree cannot be had.
    fn absent(&self) -> SkipReason {
        if self.absent_is_oversized { SkipReason::Oversized } else { SkipReason::Unreadable }
    }

    /// A handle for the calling thread.
    pub fn local(&self) -> gix::Repository {
        self.repo.to_thread_local()
    }

    /// Reads a blob found by [`walk_with`] and applies the content checks
    /// of a file on disk.
    pub fn read(&self, repo: &gix::Repository, file: &FoundFile) -> Result<String, SkipReason> {
        let Some(blob) = file.blob else { return Err(SkipReason::Unreadable) };
        if file.stat.size > MAX_FILE_BYTES {
            return Err(SkipReason::Oversized);
        }
        let object = repo.find_object(blob).map_err(|_| self.absent())?;
        discovery::check_candidate(&file.path, object.detach().data)
    }
}

/// The `.gitignore` and `.gitagentignore` blobs of `commit`'s tree, in
/// every folder, that `repo` does not have.
pub(super) fn absent_ignore_blobs(repo: &gix::Repository, commit: gix::ObjectId) -> Result<Vec<gix::ObjectId>, String> {
    let tree = repo
        .find_commit(commit)
        .and_then(|commit| commit.tree_id())
        .map_err(|error| format!("cannot read the tree of {commit}: {error}"))?;
    let mut trees = vec![tree.detach()];
    let mut absent = Vec::new();
    while let Some(id) = trees.pop() {
        let tree = repo.find_tree(id).map_err(|error| format!("cannot read tree {id}: {error}"))?;
        let decoded = tree.decode().map_err(|error| format!("cannot decode tree {id}: {error}"))?;
        for entry in &decoded.entries {
            match entry.mode.kind() {
                EntryKind::Tree => trees.push(entry.oid.to_owned()),
                EntryKind::Blob | EntryKind::BlobExecutable
                    if IGNORE_FILES.iter().any(|name| entry.filename == name.as_bytes())
                        && !repo.has_object(entry.oid) =>
                {
                    absent.push(entry.oid.to_owned());
                }
                _ => {}
            }
        }
    }
    absent.sort();
    absent.dedup();
    Ok(absent)
}

/// The remote a partial clone fetches its missing objects from: the one
/// `extensions.partialClone` names (older Git) or the first with
/// `remote.<name>.promisor`; `None` for a complete repository.
fn promisor_remote(repo: &gix::Repository) -> Option<String> {
    let config = repo.config_snapshot();
    let named = config.string("extensions.partialClone").map(|name| name.to_string()).filter(|name| !name.is_empty());
    named.or_else(|| {
        repo.remote_names()
            .into_iter()
            .map(|name| name.to_string())
            .find(|name| config.boolean(format!("remote.{name}.promisor").as_str()) == Some(true))
    })
}

/// A local partial clone's way to its missing objects: the promisor remote
/// and the invocation's environment, for the system's `git`.
#[derive(Debug, Clone)]
pub struct Promisor {
    pub remote: String,
    pub git_dir: PathBuf,
    pub env: git_agent_shared::Environment,
}

impl TreeSource {
    /// `Some` when the repository is a partial clone
    /// (`git clone --filter=blob:none` or `tree:0`) whose objects a search may have to
    /// fetch; a complete repository costs one configuration lookup.
    pub fn promisor(&self, env: &git_agent_shared::Environment) -> Option<Promisor> {
        let repo = self.local();
        let remote = promisor_remote(&repo)?;
        Some(Promisor { remote, git_dir: repo.git_dir().to_path_buf(), env: env.clone() })
    }

    /// The trees of the searched tree (itself included) the repository
    /// lacks, as far as the trees it has reach: a treeless clone
    /// (`--filter=tree:0`) has only the trees of what it checked out.
    pub fn absent_trees(&self) -> Result<Vec<ObjectId>, RevisionError> {
        let repo = self.local();
        let mut absent = Vec::new();
        let mut pending = vec![self.tree];
        while let Some(id) = pending.pop() {
            let Ok(tree) = repo.find_tree(id) else {
                absent.push(id);
                continue;
            };
            let decoded = tree.decode().map_err(|error| RevisionError::Read {
                commit: self.commit.to_string(),
                what: format!("tree {id}"),
                message: error.to_string(),
            })?;
            pending.extend(
                decoded
                    .entries
                    .iter()
                    .filter(|entry| entry.mode.kind() == EntryKind::Tree)
                    .map(|entry| entry.oid.to_owned()),
            );
        }
        absent.sort();
        absent.dedup();
        Ok(absent)
    }

    /// The tree's `.gitignore` and `.gitagentignore` blobs the repository
    /// lacks, in every folder.
    pub fn absent_ignore_files(&self) -> Result<Vec<ObjectId>, RevisionError> {
        absent_ignore_blobs(&self.local(), self.commit).map_err(|message| RevisionError::Read {
            commit: self.commit.to_string(),
            what: "the tree".into(),
            message,
        })
    }

    /// The blobs the walk of `scope` selects and the repository lacks
    /// (the ignore files must be there: they decide the selection).
    pub fn absent_selected_files(&self, scope: &[String]) -> Result<Vec<ObjectId>, RevisionError> {
        let mut walk = Walk::default();
        walk_tree(&self.local(), self, Path::new("/"), self.tree, b"", scope, &mut Vec::new(), &mut walk)?;
        Ok(walk.absent)
    }
}

impl Promisor {
    /// `git fetch` of `ids` from the promisor remote, the way a partial
    /// clone fetches a missing object (no refs or `FETCH_HEAD` written, no
    /// negotiation, never a prompt), through [`gitagent_runtime::subprocess`]:
    /// cancelled with the search. The error is git's last lines, with
    /// credentials removed.
    pub async fn fetch(
        &self,
        commit: ObjectId,
        what: &str,
        ids: &[ObjectId],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<(), RevisionError> {
        use gitagent_runtime::subprocess::{Helper, Toolchain};
        if ids.is_empty() {
            return Ok(());
        }
        let failed = |message: String| RevisionError::Read {
            commit: commit.to_string(),
            what: what.to_string(),
            message: git_agent_shared::secret::redact_credentials(&format!(
                "git fetch of {} missing object(s) from the promisor remote {:?} failed: {message}\nhint: check that the remote is reachable (`git fetch {}`), or search a revision this clone has",
                ids.len(),
                self.remote,
                self.remote
            )),
        };
        let git = gitagent_runtime::subprocess::find_executable(&self.env, "git")
            .ok_or_else(|| failed("git is not on PATH".into()))?;
        let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
        let mut helper = Helper::new(&git, &self.env, Toolchain::None);
        for (name, value) in gitagent_provider::network::git_network_env(&self.env) {
            helper = helper.env(&name, value);
        }
        for name in ["SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"] {
            if let Some(value) = self.env.get(name) {
                helper = helper.env(name, value);
            }
        }
        let output = helper
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("SSH_ASKPASS_REQUIRE", "never")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .args(["-c", "fetch.negotiationAlgorithm=noop", "fetch", "--no-tags", "--no-write-fetch-head"])
            .args(["--recurse-submodules=no", "--filter=blob:none", "--stdin", &self.remote])
            .stdin(input.into_bytes())
            .discard_stdout()
            .timeout(std::time::Duration::from_secs(600))
            .run(cancel)
            .await
            .map_err(|error| failed(error.to_string()))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = output.stderr_text();
        let lines: Vec<&str> = stderr.lines().filter(|line| !line.trim().is_empty()).collect();
        Err(failed(format!("{}: {}", output.status, lines[lines.len().saturating_sub(3)..].join("; "))))
    }
}

/// The stat a tree entry stands in with: its size, and its blob id in the
/// fields that identify a file version, so a cached file version is reused
/// exactly when the blob is the same. Its time is zero: a blob never
/// changes under a reader.
fn blob_stat(blob: &gix::oid, size: u64) -> FileStat {
    let bytes = blob.as_bytes();
    let word = |at: usize| {
        let mut out = [0u8; 8];
        out.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(out)
    };
    FileStat { size, mtime_ns: 0, ctime_ns: 0, ino: word(0), dev: word(8) }
}

/// One reader thread's outputs (by file index) and final state.
type ThreadDone<W> = (Vec<(usize, <W as FileWork>::Output)>, <W as FileWork>::State);

/// Walks the committed tree of `source` limited to `scope`, applying the
/// rules of [`discovery::walk_with`], then runs `work` on the files it
/// wants on a few threads. Files come in the filesystem walk's order
/// (lexical by name within a folder, depth first).
pub fn walk_with<W: FileWork>(source: &TreeSource, scope: &[String], work: &W) -> Result<WorkedWalk<W>, RevisionError> {
    let repo = source.local();
    let mut walk = Walk::default();
    let root = Path::new("/");
    let mut stack: Vec<Arc<Level>> = Vec::new();
    walk_tree(&repo, source, root, source.tree, b"", scope, &mut stack, &mut walk)?;

    let wanted: Vec<usize> = (0..walk.files.len()).filter(|&index| work.wants(&walk.files[index])).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4).min(wanted.len().max(1));
    let next = AtomicUsize::new(0);
    let files = &walk.files;
    let worker = |thread: usize| {
        let mut state = work.state(thread);
        let mut outputs = Vec::new();
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some(&index) = wanted.get(at) else { break };
            outputs.push((index, work.run(&mut state, &files[index])));
        }
        (outputs, state)
    };
    let worker = &worker;
    let done: Vec<ThreadDone<W>> = std::thread::scope(|scope_threads| {
        let handles: Vec<_> = (1..threads).map(|thread| scope_threads.spawn(move || worker(thread))).collect();
        let mut done = vec![worker(0)];
        done.extend(
            handles.into_iter().map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))),
        );
        done
    });
    let mut outputs: Vec<Option<W::Output>> = (0..walk.files.len()).map(|_| None).collect();
    let mut states = Vec::with_capacity(done.len());
    for (thread_outputs, state) in done {
        for (index, output) in thread_outputs {
            outputs[index] = Some(output);
        }
        states.push(state);
    }
    Ok(WorkedWalk { walk, outputs, states })
}

/// Lists one tree (`dir` root-relative, bytes) into `out`, entering
/// subtrees in name order (by bytes; found files carry their path's key).
#[allow(clippy::too_many_arguments)]
fn walk_tree(
    repo: &gix::Repository,
    source: &TreeSource,
    root: &Path,
    tree_id: ObjectId,
    dir: &[u8],
    scope: &[String],
    stack: &mut Vec<Arc<Level>>,
    out: &mut Walk,
) -> Result<(), RevisionError> {
    let read_error = |what: &str, error: &dyn std::fmt::Display| RevisionError::Read {
        commit: source.commit.to_string(),
        what: what.to_string(),
        message: error.to_string(),
    };
    let tree_name = || format!("the tree of {:?}", utf8_or_quoted(dir));
    let tree = repo.find_tree(tree_id).map_err(|error| read_error(&tree_name(), &error))?;
    let decoded = tree.decode().map_err(|error| read_error(&tree_name(), &error))?;
    let mut entries: Vec<(Vec<u8>, EntryKind, ObjectId)> = decoded
        .entries
        .iter()
        .map(|entry| (entry.filename.to_vec(), entry.mode.kind(), entry.oid.to_owned()))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));

    // This folder's ignore files, from their blobs.
    let mut texts = Vec::new();
    for name in IGNORE_FILES {
        let Some((_, kind, oid)) = entries.iter().find(|(entry, _, _)| entry == name.as_bytes()) else { continue };
        if !matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable) {
            continue;
        }
        let path = utf8_or_quoted(&discovery::child(dir, name.as_bytes())).into_owned();
        let object = repo.find_object(*oid).map_err(|error| read_error(&path, &error))?;
        texts.push(object.detach().data);
    }
    stack.push(Arc::new(Level::from_texts(root, dir, texts)));

    for (name, kind, oid) in entries {
        let bytes = discovery::child(dir, &name);
        let path = utf8_or_quoted(&bytes).into_owned();
        if kind == EntryKind::Tree {
            match discovery::folder_rule(&path, &name, scope, stack) {
                Rule::Keep => {}
                Rule::Quiet => continue,
                Rule::Skip(reason) => {
                    skip(out, path, reason);
                    continue;
                }
                Rule::IgnoredDir => {
                    out.skipped.dirs += 1;
                    continue;
                }
            }
            walk_tree(repo, source, root, oid, &bytes, scope, stack, out)?;
            continue;
        }
        match discovery::file_rule(&path, &name, scope, stack) {
            Rule::Keep => {}
            Rule::Quiet | Rule::IgnoredDir => continue,
            Rule::Skip(reason) => {
                skip(out, path, reason);
                continue;
            }
        }
        match kind {
            EntryKind::Link => skip(out, path, SkipReason::Symlink),
            // A submodule's content is not part of this repository's tree.
            EntryKind::Commit => skip(out, path, SkipReason::NonRegular),
            EntryKind::Blob | EntryKind::BlobExecutable => {
                // The size from the object header: an oversized blob is
                // never read.
                match repo.find_header(oid) {
                    Ok(header) if header.size() > MAX_FILE_BYTES => skip(out, path, SkipReason::Oversized),
                    Ok(header) => {
                        out.files.push(FoundFile { path, stat: blob_stat(&oid, header.size()), blob: Some(oid) })
                    }
                    Err(_) => {
                        out.absent.push(oid);
                        skip(out, path, source.absent())
                    }
                }
            }
            EntryKind::Tree => {}
        }
    }
    stack.pop();
    Ok(())
}

fn skip(out: &mut Walk, path: String, reason: SkipReason) {
    out.skipped.count(reason);
    out.skips.push(Skip { path, reason });
}

#[cfg(test)]
mod tests {
    use super::*;
    use git_agent_tests::git::git_trimmed as git;

    fn write(root: &Path, path: &str, text: &str) {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    fn walked(source: &TreeSource, scope: &[&str]) -> (Vec<String>, Vec<(String, SkipReason)>) {
        let scope: Vec<String> = scope.iter().map(|s| s.to_string()).collect();
        let walk = walk_with(source, &scope, &discovery::NoFileWork).unwrap().walk;
        (
            walk.files.into_iter().map(|file| file.path).collect(),
            walk.skips.into_iter().map(|skip| (skip.path, skip.reason)).collect(),
        )
    }

    /// A committed name that is not UTF-8 is walked under its key (quoted
    /// as git quotes it), its folder entered and its ignore rules applied
    /// by bytes, and its blob read by the tree entry.
    #[test]
    fn names_that_are_not_utf8_are_walked_and_read_under_their_keys() {
        use std::os::unix::ffi::OsStrExt;
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        git(root, &["init", "-q", "-b", "main"]);
        let bytes = |path: &[u8]| root.join(std::ffi::OsStr::from_bytes(path));
        std::fs::create_dir(bytes(b"dir\xff")).unwrap();
        std::fs::write(bytes(b"dir\xff/x.py"), "def retry():\n    return 1\n").unwrap();
        std::fs::write(bytes(b"dir\xff/.gitignore"), b"drop\xe9.py\n").unwrap();
        std::fs::write(bytes(b"dir\xff/drop\xe9.py"), "dropped\n").unwrap();
        std::fs::write(bytes(b"caf\xe9.py"), "print(1)\n").unwrap();
        write(root, "plain.txt", "plain\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "names"]);
        let repo = open(root).unwrap();
        let commit = resolve(&repo.to_thread_local(), "HEAD").unwrap();
        let source = TreeSource::new(repo, commit).unwrap();
        let (files, skips) = walked(&source, &[]);
        assert_eq!(files, [r#""caf\351.py""#, r#""dir\377/x.py""#, "plain.txt"]);
        assert!(skips.is_empty(), "{skips:?}");
        let walk = walk_with(&source, &[], &discovery::NoFileWork).unwrap().walk;
        let local = source.local();
        assert_eq!(source.read(&local, &walk.files[1]).unwrap(), "def retry():\n    return 1\n");
        let (scoped, _) = walked(&source, &[r#""dir\377""#]);
        assert_eq!(scoped, [r#""dir\377/x.py""#]);
    }

    #[test]
    fn the_tree_walk_applies_the_filesystem_rules_with_the_tree_ignore_files() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        git(root, &["init", "-q", "-b", "main"]);
        write(root, ".gitignore", "build/\n*.log\n");
        write(root, "src/.gitagentignore", "gen.rs\n!keep.log\n");
        write(root, "src/main.rs", "fn main() {}\n");
        write(root, "src/gen.rs", "// generated\n");
        write(root, "src/keep.log", "kept\n");
        write(root, "src/z.rs", "fn z() {}\n");
        write(root, ".hidden/x.md", "hidden\n");
        write(root, "Cargo.lock", "lock\n");
        write(root, "big.txt", &"x".repeat(MAX_FILE_BYTES as usize + 1));
        write(root, "a.md", "# A\n");
        std::os::unix::fs::symlink("a.md", root.join("link.md")).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["add", "-f", "src/keep.log"]);
        git(root, &["commit", "-q", "-m", "one"]);
        // A work tree that differs: its ignore files must not matter.
        write(root, ".gitignore", "src/\n");

        let repo = open(root).unwrap();
        let commit = resolve(&repo.to_thread_local(), "HEAD").unwrap();
        let source = TreeSource::new(repo, commit).unwrap();
        let (files, skips) = walked(&source, &[]);
        assert_eq!(files, ["a.md", "src/keep.log", "src/main.rs", "src/z.rs"]);
        assert!(skips.contains(&(".hidden".into(), SkipReason::DotDir)), "{skips:?}");
        assert!(skips.contains(&("big.txt".into(), SkipReason::Oversized)), "{skips:?}");
        assert!(skips.contains(&("link.md".into(), SkipReason::Symlink)), "{skips:?}");

        let (scoped, _) = walked(&source, &["src"]);
        assert_eq!(scoped, ["src/keep.log", "src/main.rs", "src/z.rs"]);
    }

    /// A blob-less partial clone lacks the files of every commit but the
    /// one checked out: searching an older one finds its absent ignore
    /// files, then the absent files they select (not those they ignore),
    /// and fetches them from the promisor remote.
    #[tokio::test]
    async fn a_partial_clone_fetches_the_missing_blobs_of_the_searched_tree() {
        let temp = tempfile::tempdir().unwrap();
        let upstream = temp.path().join("upstream");
        std::fs::create_dir_all(&upstream).unwrap();
        git(&upstream, &["init", "-q", "-b", "main"]);
        git(&upstream, &["config", "uploadpack.allowFilter", "true"]);
        git(&upstream, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
        write(&upstream, ".gitagentignore", "vendor/\n");
        write(&upstream, "src/config.py", "def parse_config(path):\n    return open(path).read()\n");
        write(&upstream, "vendor/lib.py", "def vendored():\n    pass\n");
        git(&upstream, &["add", "-A"]);
        git(&upstream, &["commit", "-q", "-m", "one"]);
        write(&upstream, ".gitagentignore", "build/\n");
        write(&upstream, "src/config.py", "def load_settings(path):\n    return path\n");
        std::fs::remove_dir_all(upstream.join("vendor")).unwrap();
        git(&upstream, &["add", "-A"]);
        git(&upstream, &["commit", "-q", "-m", "two"]);
        let url = format!("file://{}", upstream.display());
        git(temp.path(), &["clone", "-q", "--filter=blob:none", &url, "clone"]);
        git(temp.path(), &["clone", "-q", "--filter=blob:none", &url, "offline"]);
        let clone = temp.path().join("clone");
        let missing = || git(&clone, &["rev-list", "--objects", "--missing=print", "HEAD~1"]).matches('?').count();
        assert_eq!(missing(), 3, "the old ignore file and both old files are not in the clone");
        let env = git_agent_shared::Environment::new(
            [("PATH", std::env::var("PATH").unwrap()), ("HOME", temp.path().display().to_string())]
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect(),
        );
        let cancel = tokio_util::sync::CancellationToken::new();

        let repo = open(&clone).unwrap();
        let commit = resolve(&repo.to_thread_local(), "HEAD~1").unwrap();
        let source = TreeSource::new(repo, commit).unwrap();
        let promisor = source.promisor(&env).expect("a partial clone has a promisor remote");
        assert_eq!(promisor.remote, "origin");
        let ignore_files = source.absent_ignore_files().unwrap();
        assert_eq!(ignore_files.len(), 1);
        promisor.fetch(commit, "the ignore files", &ignore_files, &cancel).await.unwrap();
        let files = source.absent_selected_files(&[]).unwrap();
        assert_eq!(files.len(), 1, "only src/config.py: vendor/ is ignored");
        promisor.fetch(commit, "the files", &files, &cancel).await.unwrap();
        assert_eq!(missing(), 1, "the ignored vendor/lib.py stays on the server");
        let (found, skips) = walked(&source, &[]);
        assert_eq!(found, ["src/config.py"]);
        assert!(skips.is_empty(), "{skips:?}");
        let file = walk_with(&source, &[], &discovery::NoFileWork).unwrap().walk.files.remove(0);
        assert!(source.read(&source.local(), &file).unwrap().contains("parse_config"));
        assert!(
            source.absent_ignore_files().unwrap().is_empty() && source.absent_selected_files(&[]).unwrap().is_empty()
        );

        // A complete repository has no promisor; a failing fetch says why,
        // without the credentials of the remote's URL.
        let complete = open(&upstream).unwrap();
        let head = resolve(&complete.to_thread_local(), "HEAD").unwrap();
        assert!(TreeSource::new(complete, head).unwrap().promisor(&env).is_none());
        std::fs::rename(&upstream, temp.path().join("gone")).unwrap();
        let offline = temp.path().join("offline");
        git(&offline, &["config", "remote.origin.url", &format!("file://user:secret@{}", upstream.display())]);
        let repo = open(&offline).unwrap();
        let first = resolve(&repo.to_thread_local(), "HEAD~1").unwrap();
        let source = TreeSource::new(repo, first).unwrap();
        let absent = source.absent_ignore_files().unwrap();
        let error = source.promisor(&env).unwrap().fetch(first, "the ignore files", &absent, &cancel).await;
        let message = error.map(|()| String::new()).unwrap_or_else(|error| error.to_string());
        assert!(message.contains("promisor remote \"origin\" failed"), "{message}");
        assert!(!message.contains("secret"), "{message}");
    }

    #[test]
    fn revisions_resolve_like_rev_parse() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        git(root, &["init", "-q", "-b", "main"]);
        write(root, "a.md", "one\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        write(root, "a.md", "two\n");
        git(root, &["commit", "-q", "-am", "two"]);
        git(root, &["tag", "-a", "v1", "-m", "tag", "HEAD~1"]);
        let repo = open(root).unwrap().to_thread_local();
        for rev in ["HEAD~1", "v1", "v1^{commit}", "main^", ":/one", "HEAD@{1}"] {
            let object = git(root, &["rev-parse", "--verify", rev]);
            let commit = git(root, &["rev-parse", &format!("{object}^{{commit}}")]);
            assert_eq!(resolve(&repo, rev).unwrap().to_string(), commit, "{rev}");
        }
        let short = git(root, &["rev-parse", "--short", "HEAD"]);
        assert_eq!(resolve(&repo, &short).unwrap().to_string(), git(root, &["rev-parse", "HEAD"]));
        assert!(matches!(resolve(&repo, "nope"), Err(RevisionError::Resolve { .. })));
        assert!(matches!(resolve(&repo, "HEAD^{tree}"), Err(RevisionError::Resolve { .. })));
    }
}

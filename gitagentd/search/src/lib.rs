//! `git-agent search` in filesystem mode, owned by the daemon.
//!
//! The daemon holds, per user, the global index single flight (one index
//! production at a time per metadata root, in this process and, through the
//! `search-index-producer.lock` flock, against any other process), a cache
//! of [`index::live::LiveIndex`] views that stay mapped between searches
//! (dropped when their files change on disk or the cache is full), the
//! query history databases, and the embeddings connection pool.
//!
//! A search: resolve the project and index folder from the caller's
//! directory and environment; take the single flight; bring the index up to
//! date ([`index::refresh`]), embedding what is missing; publish; release
//! the single flight; then embed (or recall) the query, rank
//! ([`rank::query`]) and record the query in the index's history. The
//! folders follow those phases. [`source`]: [`source::discovery`] (with
//! [`textkind`] and [`paths`]), [`source::revision`] and [`source::remote`]
//! choose files; [`chunking`] and `gitagent_golang` cut them. [`index`]:
//! [`index::bodies`] snapshots their text, [`index::embeddings`] talks to
//! the endpoint, [`index::refresh`] brings an index up to date,
//! [`index::store`] owns the on-disk format. [`rank`]: [`rank::ranking`]
//! scores, [`rank::query`] ranks, [`rank::history`] remembers queries.
//! [`report`]: [`report::output`] renders, [`report::progress`] reports.
//!
//! # The search crate in detail
//!
//! gitagentd's `commands/search.rs` validates the forms (search, `--index`, `--ls`, `--ls-remotes`,
//! `--ls-files`) and renders; [`SearchService`] (in `Services`) owns the
//! daemon-wide state: the single flight, the cache of mapped index views (at
//! most 8 and 1 GiB of vectors), the query history databases (at most 8 open),
//! the embeddings connection pool (built on first use, rebuilt after a failed
//! construction).
//!
//! | module | owns |
//! | --- | --- |
//! | `paths` | `--scope` normalization and membership, the dot-path rule and its scope opt-in, `--code` extensions, `--no-tests` rules |
//! | `source::discovery` | the walk (every folder a job on a few threads, files stat'ed while their folder is open, results joined in walk order; a `FileWork` runs on wanted files as soon as their folder is listed): dot paths, `.gitignore`/`.gitagentignore` precedence (deeper folder first, `.gitagentignore` over `.gitignore`, ignored folders never entered, built-in list last), symlinks, non-regular and oversized files; `read_candidate` adds the binary and text checks (`textkind`) |
//! | `source::revision` | `--rev`: gix resolution to a commit, the committed tree as a source (the filesystem rules on tree entries, ignore files from the tree's blobs, sizes from object headers, blobs read on a few threads, each with its own handle; bare repositories too), the per-commit index folder `search/revs/<commit>/` |
//! | `source::remote` | `--remote`: the bare cache `remotes/<sha>/repo.git` and `remote.json`; fetched with gix (an unnamed in-memory remote, so credentials in the URL are never written; SSH through the system OpenSSH in batch mode with strict host keys) on first use, after 15 minutes, with `--reindex` or for an unresolved revision; resolution under the single flight (an expression such as `HEAD~1` on a cold cache after the one main fetch), `remote.json` written after the index is published; the transfer's growing totals (objects, bytes, resolved deltas) come from a small implementation of gix's progress tree and are reported by a thread beside `receive`. A server offering object filters (noted from the v2 handshake) is asked for `blob:limit` (blobs over 1 MiB stay there); the cache's `git-agent-blob-limit` file says so, and `revision::TreeSource` then counts an absent blob as oversized; an ignore file of the searched tree left on the server is fetched by object id into `ignore-blobs.git` (removed on every path) and its pack moved into the cache before the walk; `git-agent-ignore-files-checked` notes the last commit found complete, so its warm searches walk no tree |
//! | `source::filter_transport` | the transport wrapper every fetch goes through: it notes whether the handshake offers object filters and, when asked, adds `filter <spec>` after the delimiter of each protocol v2 `fetch` request (gix 0.90 cannot ask for it) |
//! | `chunking`, `golang`, `syntax` | normalized text into chunks: Go declarations through a small lexer that steps over bodies a 64-byte block at a time (generated Go recognised from its heading alone); the declarations of Rust, Python, JavaScript/JSX, TypeScript/TSX, Java, C, C++, C#, Ruby, PHP, Kotlin, Swift, Scala and shell through tree-sitter (`syntax`: one grammar per `lang-*` cargo feature, all on by default; only the top of the tree and container members are visited, one parser per language per thread, tree-sitter's C allocations through mimalloc; every file parsed whole; a golden test pins the output over fixture files per language), with methods as chunks of their own carrying their class/impl/trait line as context, every function or method a chunk of its own and only tiny non-callable neighbours (constants, fields) merged, long declarations windowed with their signature line; Markdown cut at its headings; else 80-line windows. The exact capped embedding input and its SHA-256; the chunker version (rules + built-in languages) goes into each manifest so an index of another chunker is refreshed, reusing every vector whose input is unchanged; the body checksum a record stores is computed only when the record is written (on a few threads, reading only that chunk's bytes of the snapshot) |
//! | `index::bodies` | chunk body snapshots: unnamed 0600 temporary files, mapped read-only |
//! | `index::spool` | new vectors as their embeddings batches arrive: an unnamed 0600 temporary file read back one vector at a time during publication, so a build never holds every new vector in the heap |
//! | `index::embeddings` | `/v1/embeddings`: batching by inputs and characters, bounded concurrency, split on rejection, retry on transient failure; vectors asked for as base64, number lists read alike, endpoints that reject base64 remembered and asked for numbers |
//! | `index::local_model` | the in-process model of searches with no key (`gitagent-embed`): found or downloaded, loaded once, shared, released when idle; `SearchService::prepare_embeddings` names it in the settings before an index is chosen |
//! | `index::refresh` | bringing a view up to date: one pass that walks and, on the walk's threads, reads and chunks what changed into each thread's snapshot segment (outcomes kept in walk order), handing each new embedding input to the embedder as soon as its file is chunked; resolve vectors (this index, then other complete indexes of the metadata root), publish |
//! | `index::store` | the on-disk format (manifest v3, `vectors.index.json`, shared `vector-store` payload and catalog generations), the publication protocol (new vectors appended a mebibyte at a time, then the payload synced while the catalog generation and the records are written and synced into unpublished temporary files on threads of their own; then renamed in order, the manifest last; a failure removes what was staged), locks (index lock, then the vector-store lock as the lifecycle lock: every reader and writer, never reversed), fault injection |
//! | `index::records` | a snapshot's records in memory: one flat row each (interned paths, sources, blobs and models; hashes as bytes; `c000001` ids as numbers; the derived vector key as a flag), about 160 bytes a record instead of 500, reading back exactly what `vectors.index.json` holds |
//! | `index::live` | `LiveIndex`: an immutable view of one physical index (records, mapped vectors, norms, the first usable record of each input hash as a sorted index) linked to the file versions it was matched against (each `FileContent` keeps its chunks and, once searched, its term statistics), plus a memo of its recent rankings |
//! | `index::cache` | the bounded least-recently-used folder caches of `SearchService` (count and byte budget) |
//! | `index::migrate` | before a search writes: the legacy `<project>/.git-agent/` folder moved home, path-keyed search data merged into the origin-keyed store (published through `store`, recognised on rerun, source removed last) |
//! | `rank::ranking`, `rank::query` | terms (per file: each term hash once, then the chunks it occurs in; each thread memoizes word → stemmed term hash), BM25, cosine (AVX2/FMA when available), the hybrid score (query terms without English function words, symbol terms from the name only (plus the starts and ends of run-together name words, as matches), scored as the cosine of the name's and the query's term sets; BM25 squashed by the query's term count; `Fusion`: lexical weight, optional per-query cosine normalization; `settings::Ranking` from `GIT_AGENT_SEARCH_*`, query framing) and its order; measured with `tests/src/bin/bench-search-quality.rs` on `tests/corpora/` |
//! | `rank::history` | per-index query history in SQLite: cached query embeddings and replay |
//! | `report::output` | the JSON envelope (Go number formatting), brief lines, `--ls`, `--ls-files` tree |
//! | `report::progress` | terminal progress, the `--agent` endpoint, `--debug` events; `Holder`, the search holding the global single flight as its waiters see it (`waiting for the index build of <what>: <progress>`) |
//!
//! A search: resolve the project (`identity`), scope and index folder; take the
//! single flight (an in-process queue per metadata root, then the
//! `search-index-producer.lock` flock); the build pipeline: `index::refresh::prepare`
//! (blocking; its walk threads stream new inputs through a bounded channel;
//! in remote mode a fetch comes first within the same production)
//! beside `index::embeddings::embed_stream` (each complete window sent while the walk
//! goes on, the last partial one when it ends; a failure on either side cancels
//! the other and nothing is published), then the few inputs not streamed, then
//! `index::refresh::finish` (publish when anything differs; beside it, the candidates'
//! term statistics are computed for the first ranking); release
//! the single flight; recall or embed the query (one embedding per exact input
//! even for parallel callers); rank on a blocking thread; replay and history.

pub use gitagent_chunk::{chunking, paths, syntax, textkind};

pub mod index;
pub mod rank;
pub mod report;
pub mod settings;
pub mod source;

use index::{cache, embeddings, live, migrate, refresh, spool, store};
use rank::{history, query};
use report::{output, progress};
use source::{discovery, remote, revision};

use cache::FolderCache;
use embeddings::{EmbeddingError, EmbeddingSettings, EmbeddingsClient};
use git_agent_shared::{Environment, timefmt};
use gitagent_git::identity::{IdentityError, ProjectIdentity};
use history::{History, HistoryError, QueryKey, Replay, StoredFilters};
use live::LiveIndex;
use progress::{Feedback, Field, Update};
use refresh::{RefreshError, RefreshRequest};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Instant, SystemTime};
use store::{CrashPoint, Manifest, StoreError};
use tokio_util::sync::CancellationToken;

/// How many physical indexes the daemon keeps mapped at once.
const CACHED_INDEXES: usize = 8;
/// How many bytes of mapped vectors (and their records) those may use
/// together; the view just used always stays.
const CACHED_INDEX_BYTES: u64 = 1 << 30;
/// How many query history databases stay open.
const CACHED_HISTORIES: usize = 8;

/// Why a search, `--ls` or `--ls-files` failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A `--scope` value was refused (a usage error).
    #[error(transparent)]
    Scope(#[from] paths::ScopeError),
    /// A flag or the environment's embedding settings are wrong; a bad flag
    /// is a usage error.
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error(transparent)]
    MissingHome(#[from] git_agent_shared::environment::MissingHome),
    #[error(transparent)]
    Identity(#[from] IdentityError),
    #[error(transparent)]
    Refresh(#[from] RefreshError),
    #[error(transparent)]
    Remote(#[from] remote::RemoteError),
    #[error(transparent)]
    Revision(#[from] revision::RevisionError),
    #[error(transparent)]
    Migrate(#[from] migrate::MigrateError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embedding(#[from] EmbeddingError),
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("no search index at {dir}\nhint: run `git-agent search --index` first{scope_hint}")]
    NoIndex { dir: PathBuf, scope_hint: String },
    #[error(
        "{path} is a Git directory, not a work tree: search never indexes Git's own files\nhint: {}",
        match work_tree {
            Some(work_tree) => format!("search the work tree instead: git-agent --cwd {} search <query...>", work_tree.display()),
            None => "search a commit of this repository: git-agent search --rev HEAD <query...>".to_string(),
        }
    )]
    GitDirectory { path: PathBuf, work_tree: Option<PathBuf> },
    #[error(
        "refusing to index {root}: it is outside any Git repository and {reason}\nhint: run the search inside a project folder, or narrow it with --scope <paths>"
    )]
    TooLarge { root: PathBuf, reason: String },
    #[error("a search worker failed: {0}")]
    Worker(#[from] gitagent_runtime::blocking::BlockingError),
    /// The local embedding model could not be downloaded or loaded.
    #[error(transparent)]
    LocalModel(Box<dyn std::error::Error + Send + Sync>),
    #[error("the search was cancelled")]
    Cancelled,
    /// A warm-only search found a chunk without a vector (or no chunk at
    /// all); nothing was embedded or published.
    #[error("the search index is not warm")]
    NotWarm,
}

impl SearchError {
    /// Whether the caller's flags are at fault (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::Scope(_)
                | Self::Settings(settings::SettingsError::Flag(_))
                | Self::Remote(remote::RemoteError::Empty)
        )
    }
}

/// Where a search reads and writes.
#[derive(Debug, Clone)]
pub struct Selection {
    pub root: PathBuf,
    pub metadata_dir: PathBuf,
    pub index_dir: PathBuf,
    /// Root-relative, normalized; the caller's directory when it is below
    /// the root and no scope was given.
    pub scope: Vec<String>,
    /// The scope shares the root's physical cache (it opts into no
    /// normally skipped path).
    pub shared_scope: bool,
    pub origin_identity: String,
    /// Revision and remote modes: the committed tree searched instead of
    /// the files under `root`.
    pub revision: Option<RevisionSelection>,
}

/// The committed tree of a revision (or remote) search.
#[derive(Debug, Clone)]
pub struct RevisionSelection {
    pub tree: Arc<revision::TreeSource>,
    /// The revision as the caller wrote it (`HEAD` when remote mode
    /// omits `--rev`).
    pub rev: String,
    /// The commit it resolved to, full hex.
    pub resolved: String,
    /// `revision`, or `remote` for a cached remote repository.
    pub mode: &'static str,
    /// Remote mode: the sanitized URL (never one with credentials).
    pub remote: String,
    /// A local partial clone: where its missing objects come from.
    pub promisor: Option<revision::Promisor>,
}

impl Selection {
    /// The root as text: its key (`git_agent_shared::quote`), quoted when
    /// it is not UTF-8, never a lossy name.
    pub fn root_text(&self) -> String {
        git_agent_shared::quote::os_path_key(&self.root).into_owned()
    }

    /// `filesystem`, `revision` or `remote`: the brief header's and the
    /// manifest's mode.
    pub fn mode(&self) -> &'static str {
        self.revision.as_ref().map_or("filesystem", |revision| revision.mode)
    }

    /// The JSON envelope's `source`.
    pub fn source_out(&self) -> output::SourceOut {
        match &self.revision {
            None => output::SourceOut { mode: "filesystem".into(), root: self.root_text(), ..Default::default() },
            Some(revision) => output::SourceOut {
                mode: revision.mode.into(),
                root: String::new(),
                remote: revision.remote.clone(),
                rev: revision.rev.clone(),
                resolved_rev: revision.resolved.clone(),
            },
        }
    }

    /// The manifest a publication of this selection's index carries.
    fn manifest(&self) -> Manifest {
        let (resolved_rev, remote) = match &self.revision {
            Some(revision) => (revision.resolved.clone(), revision.remote.clone()),
            None => (String::new(), String::new()),
        };
        Manifest {
            mode: self.mode().into(),
            root: if remote.is_empty() { self.root_text() } else { String::new() },
            remote,
            resolved_rev,
            origin_identity: self.origin_identity.clone(),
            ..Manifest::default()
        }
    }
}

/// Resolves the project, scope and index folder for `cwd`.
pub fn select(cwd: &Path, env: &Environment, raw_scopes: &[String]) -> Result<Selection, SearchError> {
    select_source(cwd, env, raw_scopes, None)
}

/// Like [`select`]; with `rev`, the committed tree of that revision of the
/// repository containing `cwd` (revision mode) and its per-commit index.
pub fn select_source(
    cwd: &Path,
    env: &Environment,
    raw_scopes: &[String],
    rev: Option<&str>,
) -> Result<Selection, SearchError> {
    let cwd_clean = git_agent_shared::giturl::clean_os_path(cwd);
    let location = gitagent_git::identity::locate(&cwd_clean);
    if rev.is_none()
        && let gitagent_git::identity::Location::GitDir { git_dir, work_tree } = &location
    {
        return Err(SearchError::GitDirectory { path: git_dir.clone(), work_tree: work_tree.clone() });
    }
    let identity = ProjectIdentity::resolve(cwd)?;
    let metadata_root = git_agent_shared::paths::metadata_root(env)?;
    let metadata_dir = metadata_root.join(identity.id());
    let raw_scope = paths::normalize_scopes(raw_scopes)?;
    let mut scope = raw_scope.clone();
    // The caller's folder below the root, as bytes: scope items are keys.
    let relative = cwd_clean
        .strip_prefix(&identity.root)
        .ok()
        .map(|rel| std::os::unix::ffi::OsStrExt::as_bytes(rel.as_os_str()).to_vec())
        .filter(|rel| !rel.is_empty());
    if let Some(rel) = relative {
        if scope.is_empty() {
            scope = vec![git_agent_shared::quote::utf8_or_quoted(&rel).into_owned()];
        } else {
            scope = scope
                .iter()
                .map(|item| {
                    let joined = [&rel[..], b"/", &git_agent_shared::quote::key_bytes(item)].concat();
                    git_agent_shared::quote::utf8_or_quoted(&git_agent_shared::giturl::clean_path_bytes(&joined))
                        .into_owned()
                })
                .collect();
            scope.sort();
            scope.dedup();
        }
    }
    if rev.is_none() {
        if let Some(missing) = raw_scope
            .iter()
            .find(|item| std::fs::symlink_metadata(cwd_clean.join(git_agent_shared::quote::key_path(item))).is_err())
        {
            return Err(paths::ScopeError::Missing(missing.clone(), cwd_clean).into());
        }
        if location == gitagent_git::identity::Location::Outside {
            guard_unbounded_root(&identity.root, &scope, env)?;
        }
    }
    let skipped = paths::scope_uses_skipped_path(&scope);
    let root_text = git_agent_shared::quote::os_path_key(&identity.root).into_owned();
    let skipped_scope = skipped.then_some(scope.as_slice());
    let (index_dir, revision) = match rev {
        None => (store::filesystem_index_dir(&metadata_dir, &root_text, skipped_scope), None),
        Some(rev) => {
            if location == gitagent_git::identity::Location::Outside {
                return Err(revision::RevisionError::NotARepository { path: cwd_clean }.into());
            }
            let repo = revision::open(&identity.root)?;
            let commit = revision::resolve(&repo.to_thread_local(), rev)?;
            let resolved = commit.to_string();
            let tree = Arc::new(revision::TreeSource::new(repo, commit)?);
            let promisor = tree.promisor(env);
            let selected = RevisionSelection {
                tree,
                rev: rev.to_string(),
                resolved,
                mode: "revision",
                remote: String::new(),
                promisor,
            };
            (revision::index_dir(&metadata_dir, &selected.resolved, skipped_scope), Some(selected))
        }
    };
    Ok(Selection {
        root: identity.root.clone(),
        metadata_dir,
        index_dir,
        shared_scope: !scope.is_empty() && !skipped,
        scope,
        origin_identity: identity.origin.unwrap_or_default(),
        revision,
    })
}

/// The most files a search outside any Git repository indexes without a
/// `--scope`: a folder beyond it is a home folder or a disk, not a project.
const UNBOUNDED_ROOT_FILES: usize = 20_000;

/// Refuses a search outside any Git repository whose root is the
/// filesystem's root, the home folder or one of its ancestors, or that
/// holds more than [`UNBOUNDED_ROOT_FILES`] files (counted under the
/// scope, when one is given, and stopping at the limit): such a search
/// would send everything below it to the embeddings endpoint.
fn guard_unbounded_root(root: &Path, scope: &[String], env: &Environment) -> Result<(), SearchError> {
    let home = env.home().ok();
    if scope.is_empty() {
        let reason = if root.parent().is_none() {
            Some("it is the root of the file system".to_string())
        } else if home.as_deref().is_some_and(|home| home.starts_with(root)) {
            Some(format!("it holds your home folder {}", home.as_deref().unwrap_or(root).display()))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(SearchError::TooLarge { root: root.to_path_buf(), reason });
        }
    }
    let starts: Vec<PathBuf> =
        if scope.is_empty() { vec![root.to_path_buf()] } else { scope.iter().map(|item| root.join(item)).collect() };
    let mut walk = ignore::WalkBuilder::new(&starts[0]);
    for start in &starts[1..] {
        walk.add(start);
    }
    walk.follow_links(false).require_git(false);
    let files = walk
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .take(UNBOUNDED_ROOT_FILES + 1)
        .count();
    if files > UNBOUNDED_ROOT_FILES {
        return Err(SearchError::TooLarge {
            root: root.to_path_buf(),
            reason: format!("holds more than {UNBOUNDED_ROOT_FILES} files"),
        });
    }
    Ok(())
}

/// One search or `--index` run.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub selection: Selection,
    pub code_only: bool,
    pub no_tests: bool,
    pub reindex: bool,
    pub index_only: bool,
    /// Explore's warm-only probe: stop before embedding anything when a
    /// selected chunk has no vector ([`SearchError::NotWarm`]).
    pub warm_only: bool,
    pub query: String,
    pub min_score: f64,
    pub limit: usize,
    pub settings: EmbeddingSettings,
    pub ranking: settings::Ranking,
    pub temp_dir: PathBuf,
    pub started: SystemTime,
    /// Remote mode: the cache to fetch (when needed) and the revision to
    /// resolve under the single flight; `selection` is completed then.
    pub remote: Option<RemoteSource>,
}

/// A held single flight: this daemon's queue slot and the cross-process
/// lock file, with this search named as their holder until it drops.
struct Flight<'a> {
    _file_lock: store::FileLock,
    _guard: tokio::sync::OwnedMutexGuard<()>,
    holders: &'a Mutex<HashMap<PathBuf, Arc<progress::Holder>>>,
    path: PathBuf,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        lock(self.holders).remove(&self.path);
    }
}

/// Remote mode's source before the single flight: the cache and the
/// caller's `--rev` (the remote's `HEAD` when absent).
#[derive(Debug, Clone)]
pub struct RemoteSource {
    pub remote: remote::Remote,
    pub rev: Option<String>,
}

/// Remote mode's selection before the fetch: the remote's metadata root
/// and the scope (relative to the remote repository's root, not the
/// caller's directory). The revision and index folder are filled in by
/// [`SearchService::search`] under the single flight.
pub fn select_remote(
    raw_remote: &str,
    rev: Option<&str>,
    cwd: &Path,
    env: &Environment,
    raw_scopes: &[String],
) -> Result<(Selection, RemoteSource), SearchError> {
    let metadata_root = git_agent_shared::paths::metadata_root(env)?;
    let remote = remote::Remote::new(raw_remote, cwd, &metadata_root, env)?;
    let scope = paths::normalize_scopes(raw_scopes)?;
    let skipped = paths::scope_uses_skipped_path(&scope);
    let selection = Selection {
        root: remote.repo_dir(),
        metadata_dir: remote.metadata_dir().to_path_buf(),
        index_dir: PathBuf::new(),
        shared_scope: !scope.is_empty() && !skipped,
        scope,
        origin_identity: git_agent_shared::giturl::identity(&remote.sanitized, cwd),
        revision: None,
    };
    Ok((selection, RemoteSource { remote, rev: rev.map(str::to_string) }))
}

/// Points `selection` at `commit` of the remote's cached repository.
fn remote_revision(
    mut selection: Selection,
    source: &RemoteSource,
    rev: &str,
    commit: gix::ObjectId,
) -> Result<Selection, SearchError> {
    let repo = revision::open(&source.remote.repo_dir())?;
    let tree = Arc::new(revision::TreeSource::new(repo, commit)?);
    let resolved = commit.to_string();
    let skipped = paths::scope_uses_skipped_path(&selection.scope);
    selection.index_dir =
        revision::index_dir(&selection.metadata_dir, &resolved, skipped.then_some(selection.scope.as_slice()));
    selection.revision = Some(RevisionSelection {
        tree,
        rev: rev.to_string(),
        resolved,
        mode: "remote",
        remote: source.remote.sanitized.clone(),
        promisor: None,
    });
    Ok(selection)
}

/// What the command renders.
#[derive(Debug)]
pub struct SearchOutcome {
    pub hits: Vec<query::Hit>,
    pub replay: Replay,
    pub files: usize,
    pub chunks: usize,
    pub reused: usize,
    pub embedded: usize,
    pub skipped: discovery::SkipCounts,
    /// The selection searched (remote mode resolves its revision during
    /// the search).
    pub selection: Selection,
}

/// Daemon-wide search state. See the module documentation.
pub struct SearchService {
    /// HTTP clients keyed by the callers' network settings.
    clients: gitagent_provider::HttpClients,
    flights: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    /// The search holding each flight (by lock path), for its waiters.
    holders: Mutex<HashMap<PathBuf, Arc<progress::Holder>>>,
    indexes: Mutex<FolderCache<Arc<LiveIndex>>>,
    histories: Mutex<FolderCache<Arc<History>>>,
    query_flights: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
    /// Partial clones' trees found whole (Git folder, commit, scope): their
    /// later searches walk no tree for missing objects (emptied at
    /// [`PROMISED_MEMO_MAX`] entries).
    promised: Mutex<std::collections::HashSet<(PathBuf, gix::ObjectId, Vec<String>)>>,
    /// The local embedding model, loaded on first use.
    local_models: Arc<index::local_model::LocalModels>,
    crash_at: Option<CrashPoint>,
}

/// The most partial-clone trees [`SearchService`] remembers as whole.
const PROMISED_MEMO_MAX: usize = 1024;

impl std::fmt::Debug for SearchService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchService").field("crash_at", &self.crash_at).finish_non_exhaustive()
    }
}

impl Default for SearchService {
    /// Reads only the test-only fault injection switch (test builds) from
    /// the daemon's own environment; everything else comes from each
    /// invocation.
    fn default() -> Self {
        let crash_at = gitagent_runtime::test_hooks::search_crash_at().and_then(|value| CrashPoint::parse(&value));
        Self::new(crash_at)
    }
}

/// How many files' inputs may wait between the walk's threads and the
/// embedder before the walk is held back. Deep enough that the walk runs
/// ahead of a fast embedder instead of parking on every send (with 4
/// windows of room, each walk thread slept a quarter to a half of a cold
/// walk on a full queue); a file's inputs are typically a dozen of 1-2 KB,
/// so the queue holds a few MB, and about 50 MB at worst (48 files of the
/// largest size discovery reads, 1 MiB, with their headers).
const STREAM_FILES_QUEUED: usize = 48;

/// What production leaves for the rest of the build.
struct Produced {
    /// Remote mode: completed with the resolved revision.
    selection: Selection,
    resolved_remote: Option<(Option<RemoteSource>, remote::Resolved)>,
    prepared: refresh::Prepared,
}

/// The progress of index embedding: a debug event and the status line.
/// The walk's end of the embedding stream. The walk drops it when it has
/// found every file: counting ends then, before the stream closes, so the
/// last window (sent on the close) already carries the final total.
struct WalkSink {
    sender: tokio::sync::mpsc::Sender<Vec<(chunking::Hash32, String)>>,
    counting: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for WalkSink {
    fn drop(&mut self) {
        // Runs before the sender field is dropped.
        self.counting.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Reports a completed embeddings batch. While `counting`, the walk is
/// still finding files, so `done.total` is only what it found so far.
fn report_embedding(feedback: &Feedback, done: embeddings::BatchDone, reused: usize, counting: bool) {
    let item = done.elapsed.checked_div(done.done.max(1) as u32).unwrap_or_default();
    let progress = if counting {
        format!("{}/{}+ (still counting)", done.done, done.total)
    } else {
        format!("{}/{} ({:.1}%)", done.done, done.total, done.done as f64 / done.total.max(1) as f64 * 100.0)
    };
    feedback.event(
        "search_embed_progress",
        &[
            ("progress", Field::Str(progress)),
            ("elapsed", Field::Duration(done.elapsed)),
            ("item_elapsed", Field::Duration(item)),
            ("client_elapsed", Field::Duration(done.request)),
        ],
    );
    feedback.update(Update {
        done: done.done,
        total: done.total,
        reused,
        elapsed: done.elapsed,
        counting,
        ..Update::default()
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A partial clone's objects of the searched tree that it lacks, fetched
/// before the build as `git` would fetch them on first use: its trees
/// (a treeless clone has none; a fetched tree brings those below it), the
/// ignore files (they decide the rest), then the files they select, so an
/// ignored file is never fetched. Returns how many objects were fetched.
async fn fetch_promised(
    tree: &Arc<revision::TreeSource>,
    promisor: &revision::Promisor,
    scope: &[String],
    cancel: &CancellationToken,
) -> Result<usize, SearchError> {
    let mut trees_fetched = 0;
    let mut asked: Option<Vec<gix::ObjectId>> = None;
    loop {
        let source = Arc::clone(tree);
        let trees = blocking(move || source.absent_trees()).await??;
        if trees.is_empty() {
            break;
        }
        if asked.as_ref() == Some(&trees) {
            return Err(revision::RevisionError::Read {
                commit: tree.commit.to_string(),
                what: format!("tree {}", trees[0]),
                message: format!("the promisor remote {:?} did not send it", promisor.remote),
            }
            .into());
        }
        promisor.fetch(tree.commit, "the trees of this partial clone", &trees, cancel).await?;
        trees_fetched += trees.len();
        asked = Some(trees);
    }
    let source = Arc::clone(tree);
    let ignore_files = blocking(move || source.absent_ignore_files()).await??;
    promisor.fetch(tree.commit, "the ignore files of this partial clone", &ignore_files, cancel).await?;
    let (source, scope) = (Arc::clone(tree), scope.to_vec());
    let files = blocking(move || source.absent_selected_files(&scope)).await??;
    promisor.fetch(tree.commit, "the files of this partial clone", &files, cancel).await?;
    Ok(trees_fetched + ignore_files.len() + files.len())
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, SearchError> {
    Ok(gitagent_runtime::blocking::run_to_end("search", work).await?)
}

impl SearchService {
    pub fn new(crash_at: Option<CrashPoint>) -> Self {
        Self {
            clients: gitagent_provider::HttpClients::default(),
            flights: Mutex::new(HashMap::new()),
            holders: Mutex::new(HashMap::new()),
            indexes: Mutex::new(FolderCache::new(CACHED_INDEXES, CACHED_INDEX_BYTES)),
            histories: Mutex::new(FolderCache::new(CACHED_HISTORIES, u64::MAX)),
            query_flights: Mutex::new(HashMap::new()),
            promised: Mutex::new(std::collections::HashSet::new()),
            local_models: index::local_model::LocalModels::new(index::local_model::IDLE_RELEASE),
            crash_at,
        }
    }

    /// Makes `settings` ready to embed: with the local backend, the model
    /// is found (downloaded on first use), loaded, and named in `settings`
    /// (its key as the model, its dimensions). Remote settings pass as they
    /// are. Call it before selecting an index: the model decides which.
    pub async fn prepare_embeddings(
        &self,
        settings: &mut EmbeddingSettings,
        feedback: &Feedback,
        cancel: &CancellationToken,
    ) -> Result<(), SearchError> {
        self.local_models.prepare(settings, &self.clients, feedback, cancel).await?;
        feedback.event(
            "search_embeddings",
            &[
                ("backend", Field::Str(settings.backend.name().into())),
                ("model", Field::Str(settings.model.clone())),
                ("dimensions", Field::Int(settings.dimensions as i64)),
            ],
        );
        Ok(())
    }

    /// The test-only fault injection point (`None` outside test builds),
    /// shared with `index gc`.
    pub fn crash_at(&self) -> Option<CrashPoint> {
        self.crash_at
    }

    async fn client(&self, settings: &EmbeddingSettings) -> Result<EmbeddingsClient, SearchError> {
        Ok(EmbeddingsClient::new(&self.clients, settings).await?)
    }

    fn history(&self, metadata_dir: &Path) -> Result<Arc<History>, SearchError> {
        let path = store::search_root(metadata_dir).join("history.sqlite3");
        let mut histories = lock(&self.histories);
        if let Some(history) = histories.get(&path) {
            return Ok(history);
        }
        let history = Arc::new(History::open(&path)?);
        histories.put(&path, Arc::clone(&history), 0);
        Ok(history)
    }

    /// Waits for the global index single flight of the metadata root that
    /// holds `metadata_dir`: first this daemon's own queue, then the
    /// cross-process lock file. While it waits, the search says whose
    /// build it waits for and how far along that is (refreshed every
    /// second); once it holds the flight, `what` (the project or remote
    /// it builds) and its progress are what later waiters see.
    async fn take_flight<'a>(
        &'a self,
        metadata_dir: &Path,
        what: String,
        feedback: &Feedback,
        cancel: &CancellationToken,
    ) -> Result<Flight<'a>, SearchError> {
        const REFRESH: std::time::Duration = std::time::Duration::from_secs(1);
        let path = store::lock_path(&flight_root(metadata_dir).join(store::PRODUCER_LOCK));
        let mutex = Arc::clone(lock(&self.flights).entry(path.clone()).or_default());
        let holder = || lock(&self.holders).get(&path).cloned();
        let announce = |in_process: bool| {
            feedback.update(Update { waiting: true, ..Update::default() });
            let holder = if in_process { holder() } else { None };
            feedback.waiting_behind(holder.as_deref());
        };
        let mut announced = false;
        let guard = match Arc::clone(&mutex).try_lock_owned() {
            Ok(guard) => guard,
            Err(_) => {
                let waiting = mutex.lock_owned();
                tokio::pin!(waiting);
                announced = true;
                loop {
                    announce(true);
                    tokio::select! {
                        guard = &mut waiting => break guard,
                        _ = tokio::time::sleep(REFRESH) => {}
                        _ = cancel.cancelled() => return Err(SearchError::Cancelled),
                    }
                }
            }
        };
        loop {
            if let Some(file_lock) = store::try_lock(&path)? {
                let holder = Arc::new(progress::Holder::new(what));
                feedback.hold(Arc::clone(&holder));
                lock(&self.holders).insert(path.clone(), holder);
                return Ok(Flight { _file_lock: file_lock, _guard: guard, holders: &self.holders, path });
            }
            if !announced {
                announced = true;
                announce(false);
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
                _ = cancel.cancelled() => return Err(SearchError::Cancelled),
            }
        }
    }

    /// Runs a search (or `--index`) to completion.
    pub async fn search(
        &self,
        request: SearchRequest,
        feedback: Arc<Feedback>,
        cancel: CancellationToken,
    ) -> Result<SearchOutcome, SearchError> {
        let started = Instant::now();
        let selection = request.selection.clone();
        let settings = request.settings.clone();
        let client = {
            let feedback = Arc::clone(&feedback);
            self.client(&settings).await?.with_retry_notice(move |line| feedback.warn(&line))
        };
        let what = match &request.remote {
            Some(source) => source.remote.sanitized.clone(),
            None => selection.root_text(),
        };
        let flight = self.take_flight(&selection.metadata_dir, what, &feedback, &cancel).await?;
        feedback.timing_event("sync", started.elapsed());
        // Remote metadata roots have nothing to migrate.
        if request.remote.is_none() {
            self.migrate(&selection, &feedback, &cancel).await?;
        }
        // The build pipeline: production (in remote mode the fetch, then the
        // walk) hands new inputs to the embedder, which sends each complete
        // window while production goes on (the last partial one once the
        // walk ends). A failure of either side cancels the other (the
        // fetch included); nothing is
        // published. New vectors go to a spool file as their windows
        // arrive (see `spool`); a write failure stops using it and is
        // reported below.
        let mut spool = spool::VectorSpool::new();
        let mut spool_error: Option<std::io::Error> = None;
        let build_cancel = cancel.child_token();
        let (sender, receiver) = tokio::sync::mpsc::channel::<Vec<(chunking::Hash32, String)>>(STREAM_FILES_QUEUED);
        // A warm-only search embeds nothing.
        // Until the walk ends, the embedding total is what it has found so
        // far, and progress says so.
        let counting = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let sink = if request.warm_only {
            // The stream ends at once.
            drop(sender);
            None
        } else {
            let walk = WalkSink { sender, counting: Arc::clone(&counting) };
            let sink: refresh::InputSink = Box::new(move |inputs| walk.sender.blocking_send(inputs).is_ok());
            Some(sink)
        };
        let production = async {
            let produced = self.produce(&request, selection, sink, started, &feedback, &build_cancel).await;
            counting.store(false, std::sync::atomic::Ordering::Relaxed);
            feedback.counted();
            if produced.is_err() {
                build_cancel.cancel();
            }
            produced
        };
        let streaming = async {
            let progress = Arc::clone(&feedback);
            let streamed = embeddings::embed_stream(
                &client,
                &settings,
                receiver,
                |keys: Vec<chunking::Hash32>, batch, done| {
                    if keys.is_empty() {
                        // A window was sent: the status line shows the
                        // growing total before anything completes.
                        progress.update(Update {
                            done: done.done,
                            total: done.total,
                            elapsed: done.elapsed,
                            counting: counting.load(std::sync::atomic::Ordering::Relaxed),
                            ..Update::default()
                        });
                        return;
                    }
                    for (hash, vector) in keys.iter().zip(batch) {
                        if spool_error.is_none()
                            && let Err(error) = spool.insert(&request.temp_dir, *hash, &vector)
                        {
                            spool_error = Some(error);
                        }
                    }
                    report_embedding(&progress, done, 0, counting.load(std::sync::atomic::Ordering::Relaxed));
                },
                &build_cancel,
            )
            .await;
            if streamed.is_err() {
                build_cancel.cancel();
            }
            streamed
        };
        let production_started = Instant::now();
        let (produced, streamed) = tokio::join!(production, streaming);
        // The embedding failure is the cause when production stopped for it.
        let streamed = match (produced.as_ref(), streamed) {
            (_, Err(EmbeddingError::Cancelled)) if cancel.is_cancelled() => return Err(SearchError::Cancelled),
            (Err(_), Err(EmbeddingError::Cancelled)) => embeddings::Streamed::default(),
            (_, Err(error)) => return Err(error.into()),
            (_, Ok(streamed)) => streamed,
        };
        let streamed_done = streamed.inputs;
        let Produced { selection, resolved_remote, prepared } = produced?;
        if streamed.windows > 0 {
            // Discovery, chunking and the embedding windows sent meanwhile.
            feedback.timing_event("embed_stream", production_started.elapsed());
        }
        // Nothing to embed and nothing to rank against: either way there
        // are no leads, and the query needs no embeddings call.
        if request.warm_only && (prepared.chunks == 0 || !prepared.missing.is_empty()) {
            return Err(SearchError::NotWarm);
        }
        let candidate_paths = prepared.candidate_paths.clone();
        let (files, chunks, reused, embedded, skipped) =
            (prepared.files, prepared.chunks, prepared.reused, prepared.embedded_chunks, prepared.skipped);

        // What the walk did not stream (inputs the shared store was
        // expected to hold but did not verify) is embedded now.
        let embed_started = Instant::now();
        let rest: Vec<usize> = (0..prepared.missing.len())
            .filter(|&index| !prepared.streamed.contains(&prepared.missing[index].hash))
            .collect();
        if !prepared.missing.is_empty() {
            let sizes: Vec<usize> = rest.iter().map(|&index| prepared.missing[index].input_bytes).collect();
            let hashes: Vec<chunking::Hash32> = rest.iter().map(|&index| prepared.missing[index].hash).collect();
            let batches = embeddings::plan_batches(&sizes, settings.batch_inputs, settings.batch_max_chars);
            feedback.event(
                "search_embed_plan",
                &[
                    ("missing_chunks", Field::Int(prepared.missing.len() as i64)),
                    ("reused_chunks", Field::Int(reused as i64)),
                    ("batches", Field::Int((streamed.windows + batches.len()) as i64)),
                    ("batch_inputs", Field::Int(settings.batch_inputs as i64)),
                    ("batch_max_chars", Field::Int(settings.batch_max_chars as i64)),
                    ("concurrency", Field::Int(settings.concurrency as i64)),
                    // Embedded while the walk still ran.
                    ("streamed_chunks", Field::Int(streamed_done as i64)),
                    ("index_dir", Field::Str(selection.index_dir.display().to_string())),
                ],
            );
            let total = prepared.missing.len();
            feedback.update(Update { done: streamed_done, total, reused, ..Update::default() });
            let progress = Arc::clone(&feedback);
            let result = embeddings::embed_many(
                &client,
                &settings,
                &sizes,
                prepared.input_builder(&rest),
                |range, batch, done| {
                    for (hash, vector) in hashes[range].iter().zip(batch) {
                        if spool_error.is_none()
                            && let Err(error) = spool.insert(&request.temp_dir, *hash, &vector)
                        {
                            spool_error = Some(error);
                        }
                    }
                    let done = embeddings::BatchDone { done: streamed_done + done.done, total, ..done };
                    report_embedding(&progress, done, reused, false);
                },
                &cancel,
            )
            .await;
            feedback.timing_event("embed_index", embed_started.elapsed());
            result?;
        } else {
            feedback.timing_event("embed_index", embed_started.elapsed());
        }
        if let Some(source) = spool_error {
            return Err(RefreshError::Snapshot { dir: request.temp_dir.clone(), source }.into());
        }

        // The query's ranking needs every candidate's term statistics:
        // computed beside publication, which mostly waits on syncs.
        let warming = (!request.index_only && !prepared.unchanged).then(|| prepared.candidate_contents());
        let token = cancel.clone();
        let warming = async move {
            if let Some(contents) = warming {
                let _ = blocking(move || refresh::warm_terms(&contents, &move || token.is_cancelled())).await;
            }
        };
        let reporter = Arc::clone(&feedback);
        let token = cancel.clone();
        let temp_dir = request.temp_dir.clone();
        let publication = blocking(move || {
            let cancelled = move || token.is_cancelled();
            let vectors = spool.finish().map_err(|source| RefreshError::Snapshot { dir: temp_dir, source })?;
            // Freed pages return to the system when the daemon goes idle
            // (`gitagent_runtime::memory`).
            refresh::finish(prepared, vectors, reporter.as_ref(), &cancelled)
        });
        let (live, ()) = tokio::join!(publication, warming);
        let live = live??;
        lock(&self.indexes).put(&selection.index_dir, Arc::clone(&live), live.footprint());
        if let Some((Some(source), resolved)) = resolved_remote {
            // Only now, with the index published, is the fetch recorded.
            blocking(move || remote::publish(&source.remote, &resolved)).await??;
        }
        drop(flight);

        let searched = selection.clone();
        let outcome = |hits, replay| SearchOutcome {
            hits,
            replay,
            files,
            chunks,
            reused,
            embedded,
            skipped,
            selection: searched,
        };
        if request.index_only {
            return Ok(outcome(Vec::new(), Replay::Unset));
        }

        // The query: recalled from history or embedded once per exact
        // capped input, outside the single flight.
        let phase = Instant::now();
        let query_input = query::embedding_input(&request.query, settings.max_input_chars, request.ranking.framing);
        let key = QueryKey {
            index_dir: selection.index_dir.display().to_string(),
            normalized: normalize_query(&request.query),
            query_text_hash: chunking::hex(&Sha256::digest(query_input.as_bytes())),
            model: settings.model.clone(),
            dimensions: settings.dimensions,
            source_mode: selection.mode().into(),
            root: selection.root_text(),
        };
        let history = self.history(&selection.metadata_dir)?;
        let query_vector = {
            let flight_key = format!("{}\0{}\0{}\0{}", key.index_dir, key.normalized, key.query_text_hash, key.model);
            let query_flight = self.query_flight(&flight_key);
            let _guard = tokio::select! {
                guard = query_flight.lock() => guard,
                _ = cancel.cancelled() => return Err(SearchError::Cancelled),
            };
            let lookup = (Arc::clone(&history), key.clone());
            let cached = blocking(move || lookup.0.cached_embedding(&lookup.1)).await??;
            match cached {
                Some(vector) => vector,
                None => {
                    let inputs = [query_input];
                    let mut vectors = client.embed(&settings, &inputs, &cancel).await?;
                    let vector = vectors.pop().unwrap_or_default();
                    let record = (Arc::clone(&history), key.clone(), request.query.clone(), vector.clone());
                    let stored = blocking(move || {
                        record.0.append(history::Entry {
                            key: &record.1,
                            query: &record.2,
                            embedding: &record.3,
                            embedding_only: true,
                            filters: None,
                            result_chunk_ids: &[],
                            created_at: &now_rfc3339(),
                        })
                    })
                    .await?;
                    if let Err(error) = stored {
                        tracing::warn!(%error, "cannot record the query embedding");
                    }
                    vector
                }
            }
        };
        feedback.timing_event("embed_query", phase.elapsed());

        let phase = Instant::now();
        let ranked_live = Arc::clone(&live);
        let (no_tests, min_score, limit, fusion) =
            (request.no_tests, request.min_score, request.limit, request.ranking.fusion);
        let text = request.query.clone();
        let vector = query_vector.clone();
        let (hits, timings) = blocking(move || {
            query::rank_memoized(&query::Query {
                live: &ranked_live,
                candidate_paths: &candidate_paths,
                no_tests,
                text: &text,
                vector: &vector,
                min_score,
                limit,
                fusion,
            })
        })
        .await?;
        let hits: Vec<query::Hit> = hits.as_ref().clone();
        feedback.event(
            "search_score",
            &[
                ("candidates", Field::Int(timings.candidates as i64)),
                ("memo", Field::Str(if timings.memo { "hit" } else { "miss" }.into())),
                ("collect", Field::Duration(timings.collect)),
                ("cosine", Field::Duration(timings.cosine)),
                ("lexical", Field::Duration(timings.lexical)),
                ("select", Field::Duration(timings.select)),
            ],
        );
        feedback.timing_event("score", phase.elapsed());

        let phase = Instant::now();
        let filters =
            StoredFilters { code: request.code_only, no_tests: request.no_tests, scope: selection.scope.clone() };
        let ids: Vec<String> = hits.iter().map(|hit| hit.chunk_id.clone()).collect();
        let query_text = request.query.clone();
        let replay = blocking(move || -> Result<Replay, HistoryError> {
            let replay = history.replay(&key, &filters, &query_vector)?;
            history.append(history::Entry {
                key: &key,
                query: &query_text,
                embedding: &query_vector,
                embedding_only: false,
                filters: Some(&filters),
                result_chunk_ids: &ids,
                created_at: &now_rfc3339(),
            })?;
            Ok(replay)
        })
        .await?;
        let replay = match replay {
            Ok(replay) => replay,
            Err(error) => {
                tracing::warn!(%error, "cannot record the search history");
                feedback.event("search_history_error", &[("error", Field::Str(error.to_string()))]);
                Replay::None
            }
        };
        feedback.timing_event("replay", phase.elapsed());
        Ok(outcome(hits, replay))
    }

    /// Production: in remote mode, the fetch (when needed) and the
    /// revision resolved under the single flight, then the walk that reads
    /// and chunks what changed ([`index::refresh::prepare`]). The walk's new
    /// inputs go to `sink` as they are found.
    async fn produce(
        &self,
        request: &SearchRequest,
        mut selection: Selection,
        sink: Option<refresh::InputSink>,
        started: Instant,
        feedback: &Arc<Feedback>,
        cancel: &CancellationToken,
    ) -> Result<Produced, SearchError> {
        let settings = &request.settings;
        let mut resolved_remote = None;
        if let Some(source) = request.remote.clone() {
            let resolved = self.resolve_remote(&source, request.reindex, request.started, feedback, cancel).await?;
            let commit = resolved.commit;
            let rev = resolved.rev.clone();
            selection = blocking(move || remote_revision(selection, &source, &rev, commit)).await??;
            resolved_remote = Some((request.remote.clone(), resolved));
            feedback.timing_event("fetch", started.elapsed());
        }

        if let Some(selected) = &selection.revision
            && let Some(promisor) = &selected.promisor
        {
            let key = (promisor.git_dir.clone(), selected.tree.commit, selection.scope.clone());
            if !lock(&self.promised).contains(&key) {
                let fetched = fetch_promised(&selected.tree, promisor, &selection.scope, cancel).await?;
                if fetched > 0 {
                    feedback.event("search_promised_fetch", &[("objects", Field::Int(fetched as i64))]);
                }
                let mut promised = lock(&self.promised);
                if promised.len() >= PROMISED_MEMO_MAX {
                    promised.clear();
                }
                promised.insert(key);
            }
        }
        let previous = lock(&self.indexes).get(&selection.index_dir);
        let refresh_request = RefreshRequest {
            root: selection.root.clone(),
            metadata_dir: selection.metadata_dir.clone(),
            index_dir: selection.index_dir.clone(),
            scope: selection.scope.clone(),
            shared_scope: selection.shared_scope,
            code_only: request.code_only,
            reindex: request.reindex,
            started_ns: timefmt::unix_nanos(request.started),
            model: settings.model.clone(),
            dimensions: settings.dimensions,
            max_input_chars: settings.max_input_chars,
            manifest: selection.manifest(),
            temp_dir: request.temp_dir.clone(),
            crash_at: self.crash_at,
            tree: selection.revision.as_ref().map(|revision| Arc::clone(&revision.tree)),
            redactor: settings.redactor.clone(),
        };
        let reporter = Arc::clone(feedback);
        let token = cancel.clone();
        let prepared = blocking(move || {
            let cancelled = move || token.is_cancelled();
            refresh::prepare(refresh_request, previous, reporter.as_ref(), &cancelled, sink)
        })
        .await??;
        Ok(Produced { selection, resolved_remote, prepared })
    }

    /// Brings the remote cache up to date as far as the request needs
    /// and resolves its revision (see [`remote::resolve`]); cancelling
    /// interrupts the transfer.
    async fn resolve_remote(
        &self,
        source: &RemoteSource,
        reindex: bool,
        started: SystemTime,
        feedback: &Arc<Feedback>,
        cancel: &CancellationToken,
    ) -> Result<remote::Resolved, SearchError> {
        let interrupt = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let (interrupt, cancel) = (Arc::clone(&interrupt), cancel.clone());
            tokio::spawn(async move {
                cancel.cancelled().await;
                interrupt.store(true, std::sync::atomic::Ordering::SeqCst);
            })
        };
        let (remote, rev, reporter) = (source.remote.clone(), source.rev.clone(), Arc::clone(feedback));
        let freshness = remote::Freshness { reindex, started };
        let resolving =
            blocking(move || remote::resolve(&remote, rev.as_deref(), freshness, reporter.as_ref(), &interrupt));
        // A transfer checks the interrupt between reads, and a stalled read
        // returns only when bytes arrive or the transport gives up (reqwest:
        // 30 s of silence; git:// and ssh: when the connection ends). So a
        // cancelled search does not wait for it: it returns at once, and
        // the fetch thread stops at its next read without updating refs or
        // writing `remote.json`.
        let resolved = tokio::select! {
            resolved = resolving => resolved,
            _ = cancel.cancelled() => return Err(SearchError::Cancelled),
        };
        watcher.abort();
        if cancel.is_cancelled() {
            return Err(SearchError::Cancelled);
        }
        Ok(resolved??)
    }

    /// The metadata migrations ([`migrate`]) of a local project, under the
    /// single flight and before anything new is written.
    async fn migrate(
        &self,
        selection: &Selection,
        feedback: &Feedback,
        cancel: &CancellationToken,
    ) -> Result<(), SearchError> {
        if selection.mode() == "remote" {
            return Ok(());
        }
        let Some(metadata_root) = selection.metadata_dir.parent().map(Path::to_path_buf) else { return Ok(()) };
        // A migration moves the path-keyed search data away: the handles
        // this daemon keeps on it (query history connections, mapped
        // indexes) must not outlive it, or the next search writes through
        // a connection whose journal is gone.
        let path_dir = migrate::path_keyed_dir(&metadata_root, &selection.root);
        if path_dir != selection.metadata_dir {
            lock(&self.histories).forget_under(&path_dir);
            lock(&self.indexes).forget_under(&path_dir);
        }
        let (root, metadata_dir, crash_at) = (selection.root.clone(), selection.metadata_dir.clone(), self.crash_at);
        let token = cancel.clone();
        let migrated = blocking(move || {
            migrate::run(&root, &metadata_root, &metadata_dir, crash_at, &move || token.is_cancelled())
        })
        .await??;
        if migrated != migrate::Migrated::default() {
            feedback.event(
                "search_migrate",
                &[
                    ("legacy_entries", Field::Int(migrated.legacy_entries as i64)),
                    ("indexes", Field::Int(migrated.indexes as i64)),
                ],
            );
        }
        Ok(())
    }

    fn query_flight(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut flights = lock(&self.query_flights);
        flights.retain(|_, flight| flight.strong_count() > 0);
        if let Some(flight) = flights.get(key).and_then(Weak::upgrade) {
            return flight;
        }
        let flight = Arc::new(tokio::sync::Mutex::new(()));
        flights.insert(key.to_string(), Arc::downgrade(&flight));
        flight
    }
}

impl Feedback {
    fn timing_event(&self, step: &str, duration: std::time::Duration) {
        refresh::Reporter::timing(self, step, duration);
    }
}

/// The metadata root whose one producer lock serializes index production
/// for `metadata_dir`: `~/.git-agent` for a project
/// (`~/.git-agent/<id>`) and for a remote (`~/.git-agent/remotes/<sha>`)
/// alike, so local, revision and remote searches share one flight.
fn flight_root(metadata_dir: &Path) -> &Path {
    let parent = metadata_dir.parent().unwrap_or(metadata_dir);
    match parent.file_name() {
        Some(name) if name == "remotes" => parent.parent().unwrap_or(parent),
        _ => parent,
    }
}

/// Lower case, whitespace runs collapsed.
pub fn normalize_query(query: &str) -> String {
    query.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn now_rfc3339() -> String {
    timefmt::format_rfc3339(jiff::Timestamp::now())
}

/// Every complete index of the project at `cwd`, sorted like the original.
pub fn list_indexes(cwd: &Path, env: &Environment) -> Result<Vec<output::IndexInfo>, SearchError> {
    let selection = select(cwd, env, &[])?;
    Ok(list_indexes_in(&selection.metadata_dir))
}

/// `--ls --remote`: the cached bare repository and every complete index of
/// that remote. Reads metadata only: no fetch.
pub fn list_remote_indexes(
    raw_remote: &str,
    cwd: &Path,
    env: &Environment,
) -> Result<(PathBuf, Vec<output::IndexInfo>), SearchError> {
    let metadata_root = git_agent_shared::paths::metadata_root(env)?;
    let remote = remote::Remote::new(raw_remote, cwd, &metadata_root, env)?;
    Ok((remote.repo_dir(), list_indexes_in(remote.metadata_dir())))
}

/// Every complete index under `metadata_dir`, sorted like the original.
fn list_indexes_in(metadata_dir: &Path) -> Vec<output::IndexInfo> {
    let search_root = store::search_root(metadata_dir);
    let mut indexes = Vec::new();
    for dir in store::complete_index_dirs(metadata_dir) {
        let Ok(_lock) = store::lock_blocking(&store::lock_path(&dir), &|| false) else { continue };
        if let Some(info) = index_info(&dir, &search_root, false) {
            indexes.push(info.0);
        }
    }
    indexes.sort_by(|a, b| {
        (a.mode.as_str(), a.resolved_rev.as_str(), &a.filters, a.dir.as_str()).cmp(&(
            b.mode.as_str(),
            b.resolved_rev.as_str(),
            &b.filters,
            b.dir.as_str(),
        ))
    });
    indexes
}

/// Summary and (when asked for) sorted unique paths of one index.
fn index_info(dir: &Path, search_root: &Path, want_paths: bool) -> Option<(output::IndexInfo, Vec<String>)> {
    let manifest = store::read_manifest(dir)?;
    let created = manifest.created()?;
    let mut paths = Vec::new();
    let (files, chunks) = if want_paths || (manifest.file_count == 0 && manifest.chunk_count == 0) {
        let records = store::read_records(dir)?;
        let mut unique: Vec<String> =
            records.iter().map(|record| record.path.clone()).filter(|path| !path.is_empty()).collect();
        unique.sort();
        unique.dedup();
        let counts = (unique.len(), records.len());
        paths = unique;
        counts
    } else {
        (manifest.file_count.max(0) as usize, manifest.chunk_count.max(0) as usize)
    };
    let filters = dir
        .strip_prefix(search_root)
        .ok()
        .map(|rel| rel.iter().skip(2).map(|part| part.to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    Some((
        output::IndexInfo {
            mode: manifest.mode.clone(),
            root: manifest.root.clone(),
            remote: manifest.remote.clone(),
            resolved_rev: manifest.resolved_rev.clone(),
            embedding_model: manifest.embedding_model.clone(),
            dimensions: manifest.dimensions,
            created_at: timefmt::format_rfc3339(created),
            files,
            chunks,
            filters,
            dir: dir.display().to_string(),
        },
        paths,
    ))
}

/// `--ls-files`: the selected index's paths, filtered by scope and
/// `--no-tests`.
pub fn list_files(
    cwd: &Path,
    env: &Environment,
    raw_scopes: &[String],
    rev: Option<&str>,
    no_tests: bool,
) -> Result<output::IndexFiles, SearchError> {
    let selection = select_source(cwd, env, raw_scopes, rev)?;
    list_selected_files(selection, raw_scopes, no_tests)
}

/// `--ls-files --remote`: the index of the cached remote's revision,
/// resolved in the cache without any network access.
pub fn list_remote_files(
    raw_remote: &str,
    cwd: &Path,
    env: &Environment,
    raw_scopes: &[String],
    rev: Option<&str>,
    no_tests: bool,
) -> Result<output::IndexFiles, SearchError> {
    let (selection, source) = select_remote(raw_remote, rev, cwd, env, raw_scopes)?;
    let commit = remote::resolve_cached(&source.remote, rev)?;
    let selection = remote_revision(selection, &source, rev.unwrap_or("HEAD"), commit)?;
    list_selected_files(selection, raw_scopes, no_tests)
}

fn list_selected_files(
    selection: Selection,
    raw_scopes: &[String],
    no_tests: bool,
) -> Result<output::IndexFiles, SearchError> {
    let search_root = store::search_root(&selection.metadata_dir);
    let found = {
        let _lock = store::lock_blocking(&store::lock_path(&selection.index_dir), &|| false)?;
        index_info(&selection.index_dir, &search_root, true)
    };
    let Some((index, paths)) = found else {
        let scope_hint = if raw_scopes.is_empty() {
            String::new()
        } else {
            format!(" with the same --scope {}", raw_scopes.join(","))
        };
        return Err(SearchError::NoIndex { dir: selection.index_dir, scope_hint });
    };
    let files = paths
        .into_iter()
        .filter(|path| paths::path_in_scope(path, &selection.scope))
        .filter(|path| !no_tests || !paths::is_test_path(path))
        .collect();
    Ok(output::IndexFiles { index, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_history_connections_are_bounded() {
        let temp = tempfile::tempdir().unwrap();
        let service = SearchService::new(None);
        let first = temp.path().join("project-0");
        let kept = service.history(&first).unwrap();
        for project in 1..=CACHED_HISTORIES * 2 {
            service.history(&temp.path().join(format!("project-{project}"))).unwrap();
        }
        let histories = lock(&service.histories);
        assert_eq!(histories.len(), CACHED_HISTORIES);
        assert!(!histories.contains(&store::search_root(&first).join("history.sqlite3")));
        drop(histories);
        // The connection still in use stays usable after it leaves the cache.
        assert_eq!(Arc::strong_count(&kept), 1);
    }
}

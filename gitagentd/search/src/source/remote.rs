//! Remote mode's bare cache: `~/.git-agent/remotes/<sha of the sanitized
//! URL>/repo.git` plus `remote.json` (sanitized URL, last successful fetch,
//! last resolved revision), fetched with gix.
//!
//! A cache is fetched on first use, when its last successful fetch is
//! [`FRESH_FOR`] old or more, with `--reindex`, and when the requested
//! revision does not resolve (fetch, then resolve once more); a fresh cache
//! never touches the network. Before the pack is transferred, a direct
//! revision (`HEAD`, a branch, a tag, a full commit id) is checked against
//! the refs the server advertised, so a misspelt branch fails before any
//! transfer. On a cold cache, an expression such as `HEAD~1` is resolved
//! after the one main fetch. A server that offers object filters keeps
//! the blobs too large to search (`blob:limit`, asked for through
//! [`super::filter_transport`], since gix 0.90 cannot ask for it);
//! [`revision::BLOB_LIMIT_MARKER`] in the cache says so, and the walk of
//! the cache counts such absent blobs as oversized. An ignore file over
//! that size still rules the walk: [`fetch_absent_ignore_files`] fetches
//! the searched tree's missing ones by object id (the one network contact
//! a fresh cache can make).
//!
//! The raw URL (which may carry credentials) is only handed to gix's
//! in-memory, unnamed remote: nothing is written to the repository's
//! configuration, and every stored or printed text carries the sanitized
//! URL ([`git_agent_shared::giturl::sanitize`]); transport error texts are
//! sanitized too. SSH goes through the system's OpenSSH client with batch
//! mode (no prompt: an encrypted key without an agent fails), strict host
//! key checking against the caller's `~/.ssh/known_hosts`, the caller's
//! agent socket and default keys.
//!
//! `remote.json` is written by [`publish`] only once the search built on the
//! fetch has published its index, so a failed attempt leaves the cache
//! stale and the next search fetches again instead of trusting it.
//!
//! While the pack arrives, the transfer's growing totals (objects indexed
//! out of the pack header's count, bytes read, deltas resolved) are read
//! from gix's progress tree ([`TransferProgress`]) and reported from a
//! thread beside gix's `receive`. The index is built from the fetched
//! cache once the fetch is complete.

use super::filter_transport::FilterTransport;
use super::revision;
use git_agent_shared::{Environment, error_chain, giturl, private_fs, timefmt};
use gitagent_provider::{
    self as provider,
    network::{NetworkError, NetworkSettings},
};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

/// How long a successful fetch keeps the cache fresh.
pub const FRESH_FOR: Duration = Duration::from_secs(15 * 60);
const RECORD: &str = "remote.json";
const REPO: &str = "repo.git";
/// The refs a cache mirrors; `HEAD` follows the remote's default branch.
const REFSPECS: [&str; 2] = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];

/// Why a remote could not be prepared. Messages carry the sanitized URL
/// only; transport and lookup texts are sanitized before they are kept,
/// which is why `Fetch` and `Resolve` hold text and not the gix error
/// (whose text may hold the raw URL, and whose causes the renderer would
/// print unsanitized). Opening the cache touches local paths only, so
/// `Open` keeps its cause.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("--remote needs a Git URL or repository path")]
    Empty,
    #[error("cannot use the remote cache at {dir}: {source}")]
    Io { dir: PathBuf, source: std::io::Error },
    /// The cause's message is shown as it is (`{source}`), which ends the
    /// rendered chain there.
    #[error("cannot open the cached repository {dir}: {source}")]
    Open { dir: PathBuf, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("fetch {remote}: {message}")]
    Fetch { remote: String, message: String },
    #[error("resolve --rev {rev:?} for remote {remote}: {message}")]
    Resolve { rev: String, remote: String, message: String },
    #[error("no cached remote repository for {remote}\nhint: run `git-agent search --remote {remote} --index` first")]
    NotCached { remote: String },
    #[error("the fetch was cancelled")]
    Cancelled,
}

/// Why a lookup or edit in the cached repository, or the check of the
/// advertised refs, failed. Its text may name the raw URL: it is
/// sanitized before it is kept in a [`RemoteError`].
#[derive(Debug, thiserror::Error)]
enum CacheError {
    #[error(transparent)]
    Gix(#[from] gix::Error),
    #[error(transparent)]
    RefName(#[from] gix::validate::reference::name::Error),
    #[error("the remote does not advertise {rev:?} (no such branch or tag)")]
    NotAdvertised { rev: String },
}

/// One remote: where its cache lives and how to reach it. The raw URL is
/// kept out of `Debug`.
#[derive(Clone)]
pub struct Remote {
    raw: String,
    pub sanitized: String,
    pub dir: PathBuf,
    ssh_command: String,
    /// The invocation's proxies and CA locations, for HTTP transports.
    network: NetworkSettings,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("sanitized", &self.sanitized).field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// `remote.json`, with the Go implementation's field names.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct RemoteRecord {
    #[serde(default)]
    pub url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_fetched_at: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_resolved_rev: String,
}

impl RemoteRecord {
    fn fetched_at(&self) -> Option<SystemTime> {
        timefmt::parse_rfc3339(&self.last_fetched_at).map(SystemTime::from)
    }
}

/// The folder that holds every remote cache.
pub fn remotes_root(metadata_root: &Path) -> PathBuf {
    metadata_root.join("remotes")
}

impl Remote {
    /// The remote named by `value` (a URL, scp-like `user@host:path`, or a
    /// local path, relative ones resolved against `cwd`), cached under
    /// `metadata_root`.
    pub fn new(value: &str, cwd: &Path, metadata_root: &Path, env: &Environment) -> Result<Self, RemoteError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(RemoteError::Empty);
        }
        let raw = if is_local_path(value) {
            let absolute =
                if value.starts_with('/') { value.to_string() } else { format!("{}/{value}", cwd.display()) };
            giturl::clean_path(&absolute)
        } else {
            value.to_string()
        };
        let sanitized = giturl::sanitize(&raw);
        // `file:///srv/x.git` names the same repository as `/srv/x.git`,
        // and shares its cache (each keeps the spelling the user gave).
        let key = match sanitized.strip_prefix("file://") {
            Some(path) if path.starts_with('/') => giturl::clean_path(path),
            _ => sanitized.clone(),
        };
        let key = hex(&Sha256::digest(key.as_bytes()));
        Ok(Self {
            raw,
            sanitized,
            dir: remotes_root(metadata_root).join(key),
            ssh_command: ssh_command(env),
            network: NetworkSettings::from_env(env),
        })
    }

    /// The cached bare repository.
    pub fn repo_dir(&self) -> PathBuf {
        self.dir.join(REPO)
    }

    /// The remote's own metadata root (indexes live under its `search/`).
    pub fn metadata_dir(&self) -> &Path {
        &self.dir
    }

    /// The URL as the user gave it (may hold credentials): for transports only.
    pub fn raw_url(&self) -> &str {
        &self.raw
    }

    /// The `core.sshCommand` transports of this remote use.
    pub fn ssh_client(&self) -> &str {
        &self.ssh_command
    }

    pub fn record(&self) -> RemoteRecord {
        read_record(&self.dir.join(RECORD)).unwrap_or_default()
    }

    /// The transport options of a connection to `url` from `repo`: for
    /// `http://` and `https://`, gix's defaults with a client configured
    /// from the invocation's proxies and CA locations (reqwest would
    /// otherwise read the daemon's own environment); `None` for other
    /// transports. A bad setting fails here, before any connection.
    pub fn transport_options(
        &self,
        repo: &gix::Repository,
        url: &gix::Url,
    ) -> Result<Option<Box<dyn std::any::Any>>, NetworkError> {
        use gix::protocol::transport::client::blocking_io::http;
        if !matches!(url.scheme, gix::url::Scheme::Http | gix::url::Scheme::Https) {
            return Ok(None);
        }
        // Checked once here so the error is ours, not a failed request's.
        let _checked = provider::network::configure_git_client(&self.network, reqwest::blocking::ClientBuilder::new())?;
        let defaults = repo
            .transport_options(gix::bstr::BStr::new(&url.to_bstring()), None)
            .map_err(|error| NetworkError::Build(self.sanitize_text(&error.to_string()).into()))?;
        let mut options = match defaults.map(|options| options.downcast::<http::Options>()) {
            Some(Ok(options)) => *options,
            _ => http::Options::default(),
        };
        let network = self.network.clone();
        let configure: Box<http::reqwest::ConfigureClientFn> = Box::new(move |builder| {
            provider::network::configure_git_client(&network, builder).map_err(gix::Error::from_error)
        });
        let backend = http::reqwest::Options { configure_client: Some(configure), configure_request: None };
        options.backend = Some(Arc::new(Mutex::new(backend)));
        Ok(Some(Box::new(options)))
    }

    pub fn sanitize_text(&self, text: &str) -> String {
        let mut text = text.replace(&self.raw, &self.sanitized);
        if let Some(at) = self.raw.find('@')
            && let Some(scheme_end) = self.raw.find("://")
            && scheme_end < at
        {
            // gix may print the URL in its own spelling; drop any
            // `user:password@` of it too.
            let userinfo = &self.raw[scheme_end + 3..=at];
            text = text.replace(userinfo, "");
        }
        git_agent_shared::secret::redact_credentials(&text)
    }
}

/// Whether `value` names a local repository rather than a URL or an
/// scp-like address.
fn is_local_path(value: &str) -> bool {
    if value.contains("://") {
        return false;
    }
    if value.starts_with('/') || value.starts_with("./") || value.starts_with("../") || value == "." {
        return true;
    }
    // `host:path` (scp-like) unless a slash comes before the colon.
    match (value.find(':'), value.find('/')) {
        (Some(colon), Some(slash)) => slash < colon,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// What remote mode searches: the resolved commit and how the revision is
/// reported.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub commit: gix::ObjectId,
    /// `HEAD` when `--rev` was omitted, else the caller's revision.
    pub rev: String,
    /// When this search fetched, the time its fetch completed.
    pub fetched_at: Option<SystemTime>,
}

/// How [`resolve`] may use the network.
#[derive(Debug, Clone, Copy)]
pub struct Freshness {
    pub reindex: bool,
    /// When the command started: a `--reindex` waiter whose cache was
    /// fetched after this needs no second fetch.
    pub started: SystemTime,
}

/// Reports a fetch to the caller (`status=fetching` with sanitized detail).
/// `Sync`: while gix receives the pack, the growing totals are reported
/// from a thread beside it ([`report_transfer`]).
pub trait FetchReporter: Sync {
    fn fetching(&self, detail: &str);
}

/// Resolves `rev` (or the remote's `HEAD`) to a commit, fetching when the
/// cache is missing, stale, `--reindex` asks for it, or the revision does
/// not resolve in the cache. Runs under the caller's single flight.
pub fn resolve(
    remote: &Remote,
    rev: Option<&str>,
    freshness: Freshness,
    reporter: &dyn FetchReporter,
    interrupt: &AtomicBool,
) -> Result<Resolved, RemoteError> {
    let rev_text = rev.map(str::trim).filter(|rev| !rev.is_empty()).unwrap_or("HEAD").to_string();
    let record = remote.record();
    let exists = remote.repo_dir().join("HEAD").is_file();
    let last = record.fetched_at();
    let fresh = last.is_some_and(|at| {
        SystemTime::now().duration_since(at).is_ok_and(|age| age < FRESH_FOR)
            && (!freshness.reindex || at >= freshness.started)
    });
    if exists && fresh {
        let repo = open(remote)?;
        if let Ok(commit) = resolve_local(&repo, &rev_text) {
            // Only an ignore file that a filtered fetch left behind makes a
            // fresh cache contact the server.
            fetch_absent_ignore_files(remote, commit, reporter, interrupt)?;
            return Ok(Resolved { commit, rev: rev_text, fetched_at: None });
        }
    }
    if let Err(error) = fetch(remote, &rev_text, reporter, interrupt) {
        // A cache this attempt created, never fetched into, is no cache:
        // each failed attempt would otherwise leave a bare repository.
        // Not after a cancellation: the search that asked is gone and
        // no longer holds the single flight, so the next one may be
        // fetching into this very folder (what stays is reused by the
        // next attempt, or removed by `index gc`).
        if !exists && record.url.is_empty() && !interrupt.load(Ordering::Relaxed) {
            discard_abandoned(&remote.dir);
        }
        return Err(error);
    }
    let fetched_at = SystemTime::now();
    let repo = open(remote)?;
    let commit = resolve_local(&repo, &rev_text).map_err(|error| RemoteError::Resolve {
        rev: rev_text.clone(),
        remote: remote.sanitized.clone(),
        message: remote.sanitize_text(&error.to_string()),
    })?;
    fetch_absent_ignore_files(remote, commit, reporter, interrupt)?;
    Ok(Resolved { commit, rev: rev_text, fetched_at: Some(fetched_at) })
}

/// Resolves `rev` in the cache without any network access (`--ls-files`).
pub fn resolve_cached(remote: &Remote, rev: Option<&str>) -> Result<gix::ObjectId, RemoteError> {
    if !remote.repo_dir().join("HEAD").is_file() {
        return Err(RemoteError::NotCached { remote: remote.sanitized.clone() });
    }
    let rev_text = rev.map(str::trim).filter(|rev| !rev.is_empty()).unwrap_or("HEAD");
    let repo = open(remote)?;
    resolve_local(&repo, rev_text).map_err(|error| RemoteError::Resolve {
        rev: rev_text.to_string(),
        remote: remote.sanitized.clone(),
        message: remote.sanitize_text(&error.to_string()),
    })
}

/// Records a successful search of `resolved`: `remote.json` with the
/// sanitized URL, the fetch time (when this search fetched) and the
/// resolved commit. Called only after the index is published.
pub fn publish(remote: &Remote, resolved: &Resolved) -> Result<(), RemoteError> {
    let mut record = remote.record();
    record.url = remote.sanitized.clone();
    if let Some(at) = resolved.fetched_at {
        record.last_fetched_at = timefmt::format_rfc3339(jiff::Timestamp::try_from(at).unwrap_or_default());
    }
    record.last_resolved_rev = resolved.commit.to_string();
    let io = |source| RemoteError::Io { dir: remote.dir.clone(), source };
    private_fs::ensure_private_dir(&remote.dir).map_err(io)?;
    let mut bytes = serde_json::to_vec_pretty(&record).unwrap_or_default();
    bytes.push(b'\n');
    private_fs::write_atomic(&remote.dir.join(RECORD), &bytes).map_err(io)
}

fn read_record(path: &Path) -> Option<RemoteRecord> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn open(remote: &Remote) -> Result<gix::Repository, RemoteError> {
    open_at(remote, &remote.repo_dir())
}

/// The bare repository at `dir`, configured to reach `remote`.
fn open_at(remote: &Remote, dir: &Path) -> Result<gix::Repository, RemoteError> {
    let opened =
        |source: Box<dyn std::error::Error + Send + Sync>| RemoteError::Open { dir: dir.to_path_buf(), source };
    let options = gix::open::Options::isolated().strict_config(false);
    let mut repo = gix::open_opts(dir, options).map_err(|error| opened(error.into()))?;
    let mut config = repo.config_snapshot_mut();
    let set = config
        .set_value(&gix::config::tree::Core::SSH_COMMAND, remote.ssh_command.as_str())
        .and_then(|_| config.set_value(&gix::config::tree::Core::LOG_ALL_REF_UPDATES, "false"));
    if let Err(error) = set {
        return Err(opened(error.into()));
    }
    config.commit().map_err(|error| opened(error.into()))?;
    Ok(repo)
}

/// Whether the remote cache folder `dir` was abandoned: no fetch ever
/// completed into it (no `remote.json`) and it holds no index.
pub fn is_abandoned(dir: &Path) -> bool {
    !dir.join(RECORD).exists() && !dir.join("search").exists()
}

/// Removes the remote cache folder `dir` when it [`is_abandoned`]. Best
/// effort: what stays is retried by the next attempt or `index gc`.
pub fn discard_abandoned(dir: &Path) {
    if is_abandoned(dir) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The bare repository, created (privately) on first use.
fn open_or_init(remote: &Remote) -> Result<gix::Repository, RemoteError> {
    let dir = remote.repo_dir();
    if !dir.join("HEAD").is_file() {
        let io = |source| RemoteError::Io { dir: remote.dir.clone(), source };
        private_fs::ensure_private_dir(&remote.dir).map_err(io)?;
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io)?;
        }
        gix::init_bare(&dir).map_err(|error| RemoteError::Open { dir: dir.clone(), source: error.into() })?;
    }
    open(remote)
}

/// `rev` to a commit id in `repo`.
fn resolve_local(repo: &gix::Repository, rev: &str) -> Result<gix::ObjectId, CacheError> {
    let id = repo.rev_parse_single(rev)?;
    Ok(id.object()?.peel_to_commit()?.id)
}

/// The transport every fetch goes through: gix's own, wrapped so a filter
/// can be asked for.
type Wrapped = FilterTransport<Box<dyn gix::protocol::transport::client::blocking_io::Transport + Send>>;

/// Connects to `remote` for a fetch into `repo` of every branch and tag
/// (with `filter`, only objects that pass it, when the server offers
/// filters), lists its refs, and hands the prepared fetch to `body` with
/// whether the server offered object filters.
fn with_prepared_fetch<R>(
    remote: &Remote,
    repo: &gix::Repository,
    refspecs: &[&str],
    filter: Option<String>,
    body: impl FnOnce(gix::remote::fetch::Prepare<'_, '_, Wrapped>, bool) -> Result<R, RemoteError>,
) -> Result<R, RemoteError> {
    use gix::remote::Direction;
    let failed = |message: String| RemoteError::Fetch {
        remote: remote.sanitized.clone(),
        message: remote.sanitize_text(&message),
    };
    let url = gix::url::parse(gix::bstr::BStr::new(remote.raw.as_str())).map_err(|error| failed(error.to_string()))?;
    let handle = repo
        .remote_at(url.clone())
        .map_err(|error| failed(error.to_string()))?
        .with_fetch_tags(gix::remote::fetch::Tags::None)
        .with_refspecs(refspecs, Direction::Fetch)
        .map_err(|error| failed(error.to_string()))?;
    let account = url.user().zip(url.password()).map(|(user, password)| (user.to_string(), password.to_string()));
    let transport_options = remote.transport_options(repo, &url).map_err(|error| failed(error.to_string()))?;
    // gix's own `connect`, with the transport wrapped.
    let (connect_url, version) =
        handle.sanitized_url_and_version(Direction::Fetch).map_err(|error| failed(error_chain::render(&error)))?;
    let ssh = match connect_url.scheme {
        gix::url::Scheme::Ssh => repo.ssh_connect_options().map_err(|error| failed(error_chain::render(&error)))?,
        _ => Default::default(),
    };
    use gix::protocol::transport::client::blocking_io::connect;
    let transport = connect::connect(connect_url, connect::Options { version, ssh, trace: false })
        .map_err(|error| failed(error_chain::render(&error)))?;
    let mut transport = FilterTransport::new(transport);
    if let Some(spec) = filter {
        transport = transport.with_filter(spec);
    }
    let filter_offered = transport.filter_offered();
    let mut connection = handle
        .to_connection_with_transport(transport)
        .with_credentials(move |action| credentials(action, account.as_ref()));
    if let Some(options) = transport_options {
        connection = connection.with_transport_options(options);
    }
    let options = gix::remote::ref_map::Options { prefix_from_spec_as_filter_on_remote: false, ..Default::default() };
    let prepare = connection
        .prepare_fetch(gix::progress::Discard, options)
        .map_err(|error| failed(error_chain::render(&error)))?;
    let offered = filter_offered.load(Ordering::Relaxed);
    body(prepare, offered)
}

/// One fetch of every branch and tag; `HEAD` is pointed at the remote's
/// default branch. A direct revision is checked against the advertised
/// refs first; an expression (`HEAD~1`) is resolved by the caller once the
/// fetch is complete.
fn fetch(remote: &Remote, rev: &str, reporter: &dyn FetchReporter, interrupt: &AtomicBool) -> Result<(), RemoteError> {
    install_tls_provider();
    reporter.fetching(&format!("listing refs of {}", remote.sanitized));
    let failed = |message: String| RemoteError::Fetch {
        remote: remote.sanitized.clone(),
        message: remote.sanitize_text(&message),
    };
    let repo = open_or_init(remote)?;
    // What an interrupted ignore-file fetch left (the single flight keeps
    // two fetches of one remote apart).
    let leftover = remote.dir.join(IGNORE_BLOBS);
    if leftover.exists() {
        std::fs::remove_dir_all(&leftover).map_err(|source| RemoteError::Io { dir: remote.dir.clone(), source })?;
    }
    // Blobs too large to search are left on the server when it can filter
    // them out (`blob:limit`: those of at least that many bytes).
    let limit = format!("blob:limit={}", super::discovery::MAX_FILE_BYTES + 1);
    with_prepared_fetch(remote, &repo, &REFSPECS, Some(limit.clone()), |prepare, filter_offered| {
        if filter_offered {
            // Before any blob can be missing: a later walk of the cache
            // takes an absent blob for an oversized one.
            let marker = repo.git_dir().join(revision::BLOB_LIMIT_MARKER);
            private_fs::write_atomic(&marker, format!("{limit}\n").as_bytes())
                .map_err(|source| RemoteError::Io { dir: repo.git_dir().to_path_buf(), source })?;
        }
        let refs = &prepare.ref_map().remote_refs;
        check_advertised(refs, rev).map_err(|error| RemoteError::Resolve {
            rev: rev.to_string(),
            remote: remote.sanitized.clone(),
            message: error.to_string(),
        })?;
        let head = advertised_head(refs);
        reporter.fetching(&format!("receiving objects from {}", remote.sanitized));
        let totals = Arc::new(Totals::default());
        let received = std::thread::scope(|scope| {
            scope.spawn(|| report_transfer(&totals, &remote.sanitized, reporter));
            // Ends the reporting thread however the receive ends (a panic
            // included: the scope would otherwise wait for it forever).
            let _finish = FinishOnDrop(&totals);
            prepare.receive(TransferProgress::new(Arc::clone(&totals)), interrupt)
        });
        received.map_err(|error| {
            if interrupt.load(Ordering::Relaxed) { RemoteError::Cancelled } else { failed(error_chain::render(&error)) }
        })?;
        reporter.fetching(&totals.detail("received", &remote.sanitized));
        if let Some(target) = head {
            point_head(&repo, &target).map_err(|error| failed(error.to_string()))?;
        }
        Ok(())
    })
}

/// The branch the remote's `HEAD` names (`refs/heads/<default>`), when it
/// advertises one (born or not).
fn advertised_head(refs: &[gix::protocol::handshake::Ref]) -> Option<String> {
    refs.iter().find_map(|reference| match reference {
        gix::protocol::handshake::Ref::Symbolic { full_ref_name, target, .. }
        | gix::protocol::handshake::Ref::Unborn { full_ref_name, target }
            if full_ref_name == "HEAD" =>
        {
            Some(target.to_string())
        }
        _ => None,
    })
}

/// Removes a temporary repository beside the cache when dropped, on every
/// path out of the function that made it.
struct Removed<'a>(&'a Path);

impl Drop for Removed<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0);
    }
}

/// The temporary repository of [`fetch_absent_ignore_files`], beside the
/// cache.
const IGNORE_BLOBS: &str = "ignore-blobs.git";

/// In a size-filtered cache: the last commit whose ignore files were all
/// found there, so that its warm searches walk no tree to check again.
const IGNORE_FILES_CHECKED: &str = "git-agent-ignore-files-checked";

/// Fetches the `.gitignore` and `.gitagentignore` blobs of `commit`'s tree
/// that a size-filtered cache ([`revision::BLOB_LIMIT_MARKER`]) left on the
/// server: an ignore file over the search's size limit still decides what
/// is searched, so the walk needs it. They are asked for by object id (a
/// protocol v2 server, the only kind that filters, serves any object) into
/// a temporary repository with nothing to negotiate, whose pack then moves
/// into the cache; the temporary repository is removed on every path.
/// Without the marker, or with every ignore blob present, nothing is
/// fetched. Returns how many blobs were fetched.
fn fetch_absent_ignore_files(
    remote: &Remote,
    commit: gix::ObjectId,
    reporter: &dyn FetchReporter,
    interrupt: &AtomicBool,
) -> Result<usize, RemoteError> {
    // Both checked by path: a warm search opens no repository here.
    let git_dir = remote.repo_dir();
    if !git_dir.join(revision::BLOB_LIMIT_MARKER).is_file() {
        return Ok(0);
    }
    // The commit whose ignore files were last found complete: a warm
    // search of it walks no tree.
    let checked = git_dir.join(IGNORE_FILES_CHECKED);
    let noted = std::fs::read_to_string(&checked).ok();
    if noted.and_then(|text| gix::ObjectId::from_hex(text.trim().as_bytes()).ok()) == Some(commit) {
        return Ok(0);
    }
    let cache = open(remote)?;
    let note_checked = || {
        private_fs::write_atomic(&checked, format!("{commit}\n").as_bytes())
            .map_err(|source| RemoteError::Io { dir: remote.repo_dir(), source })
    };
    let absent = revision::absent_ignore_blobs(&cache, commit).map_err(|message| RemoteError::Open {
        dir: remote.repo_dir(),
        source: remote.sanitize_text(&message).into(),
    })?;
    if absent.is_empty() {
        note_checked()?;
        return Ok(0);
    }
    reporter.fetching(&format!(
        "fetching {} ignore file{} over the size limit from {}",
        absent.len(),
        if absent.len() == 1 { "" } else { "s" },
        remote.sanitized
    ));
    let failed = |message: String| RemoteError::Fetch {
        remote: remote.sanitized.clone(),
        message: remote.sanitize_text(&message),
    };
    let dir = remote.dir.join(IGNORE_BLOBS);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|source| RemoteError::Io { dir: dir.clone(), source })?;
    }
    let _removed = Removed(&dir);
    gix::init_bare(&dir).map_err(|error| RemoteError::Open { dir: dir.clone(), source: error.into() })?;
    let repo = open_at(remote, &dir)?;
    let wanted: Vec<String> = absent.iter().map(|id| id.to_string()).collect();
    let refspecs: Vec<&str> = wanted.iter().map(String::as_str).collect();
    with_prepared_fetch(remote, &repo, &refspecs, None, |prepare, _| {
        prepare.receive(gix::progress::Discard, interrupt).map_err(|error| {
            if interrupt.load(Ordering::Relaxed) { RemoteError::Cancelled } else { failed(error_chain::render(&error)) }
        })?;
        Ok(())
    })?;
    // The index last, so that a reader never finds an index without its
    // pack.
    let packs = dir.join("objects/pack");
    let target = cache.git_dir().join("objects/pack");
    let io = |dir: &Path| {
        let dir = dir.to_path_buf();
        move |source| RemoteError::Io { dir, source }
    };
    std::fs::create_dir_all(&target).map_err(io(&target))?;
    let mut names: Vec<std::ffi::OsString> =
        std::fs::read_dir(&packs).map_err(io(&packs))?.flatten().map(|entry| entry.file_name()).collect();
    names.sort_by_key(|name| Path::new(name).extension().is_some_and(|ext| ext == "idx"));
    for name in names {
        std::fs::rename(packs.join(&name), target.join(&name)).map_err(io(&target))?;
    }
    let missing = revision::absent_ignore_blobs(&open(remote)?, commit).map_err(failed)?;
    if !missing.is_empty() {
        return Err(failed(format!("the server did not send the ignore file blob {}", missing[0])));
    }
    note_checked()?;
    Ok(absent.len())
}

/// How often, at most, growing transfer totals are reported.
const TRANSFER_REPORT_EVERY: Duration = Duration::from_millis(100);

/// What a fetch has transferred so far, read from gix's progress tree:
/// the pack bytes read (`read pack`), the objects indexed (`indexing`, out
/// of the count the pack header announces) and the deltas resolved.
#[derive(Default)]
pub struct Totals {
    bytes: gix::progress::StepShared,
    objects: gix::progress::StepShared,
    expected_objects: AtomicUsize,
    resolved: gix::progress::StepShared,
    signal: Mutex<Signal>,
    wake: Condvar,
}

#[derive(Default)]
struct Signal {
    changed: bool,
    finished: bool,
}

impl Totals {
    /// The counter gix's progress node `id` advances, if it is one
    /// reported; other nodes count on their own.
    fn counter(&self, id: gix::progress::Id) -> Option<gix::progress::StepShared> {
        match &id {
            b"BWRB" => Some(Arc::clone(&self.bytes)),
            b"IWIO" => Some(Arc::clone(&self.objects)),
            b"IWRO" => Some(Arc::clone(&self.resolved)),
            _ => None,
        }
    }

    /// Wakes the reporting thread once per batch of changes.
    fn changed(&self) {
        let mut signal = self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !signal.changed {
            signal.changed = true;
            self.wake.notify_one();
        }
    }

    fn finish(&self) {
        self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).finished = true;
        self.wake.notify_one();
    }

    /// `receiving objects from <url>: 120/4000 objects, 1.2 MiB`, with
    /// the resolved deltas once resolution has started.
    pub fn detail(&self, verb: &str, sanitized: &str) -> String {
        let objects = self.objects.load(Ordering::Relaxed);
        let expected = self.expected_objects.load(Ordering::Relaxed);
        let bytes = self.bytes.load(Ordering::Relaxed);
        let mut text = format!("{verb} objects from {sanitized}: ");
        if expected > 0 {
            text.push_str(&format!("{objects}/{expected} objects, "));
        } else {
            text.push_str(&format!("{objects} objects, "));
        }
        text.push_str(&format_bytes(bytes));
        let resolved = self.resolved.load(Ordering::Relaxed);
        if resolved > 0 {
            text.push_str(&format!(", {resolved} resolved"));
        }
        text
    }
}

fn format_bytes(bytes: usize) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes as f64 >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// Marks the transfer finished when dropped.
pub struct FinishOnDrop<'a>(pub &'a Totals);

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Reports the transfer's totals each time they change, at most every
/// [`TRANSFER_REPORT_EVERY`], until gix's receive returns.
pub fn report_transfer(totals: &Totals, sanitized: &str, reporter: &dyn FetchReporter) {
    let lock = || totals.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        let mut signal = lock();
        while !signal.changed && !signal.finished {
            signal = totals.wake.wait(signal).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if signal.finished {
            return;
        }
        signal.changed = false;
        drop(signal);
        reporter.fetching(&totals.detail("receiving", sanitized));
        // Throttle: the next report waits out the interval unless the
        // transfer ends first.
        let signal = lock();
        let (signal, _) = totals
            .wake
            .wait_timeout_while(signal, TRANSFER_REPORT_EVERY, |signal| !signal.finished)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if signal.finished {
            return;
        }
    }
}

/// One node of gix's progress tree during a fetch. The nodes that count
/// pack bytes, indexed objects and resolved deltas share their counters
/// with [`Totals`]; every change wakes the reporting thread.
pub struct TransferProgress {
    totals: Arc<Totals>,
    id: gix::progress::Id,
    name: Option<String>,
    counter: gix::progress::StepShared,
    max: Option<usize>,
    unit: Option<gix::progress::Unit>,
}

impl TransferProgress {
    pub fn new(totals: Arc<Totals>) -> Self {
        Self::node(totals, gix::progress::UNKNOWN, None)
    }

    fn node(totals: Arc<Totals>, id: gix::progress::Id, name: Option<String>) -> Self {
        let counter = totals.counter(id).unwrap_or_default();
        Self { totals, id, name, counter, max: None, unit: None }
    }

    fn reported(&self) -> bool {
        self.totals.counter(self.id).is_some()
    }
}

impl gix::progress::Count for TransferProgress {
    fn set(&self, step: usize) {
        self.counter.store(step, Ordering::Relaxed);
        if self.reported() {
            self.totals.changed();
        }
    }

    fn step(&self) -> usize {
        self.counter.load(Ordering::Relaxed)
    }

    fn inc_by(&self, step: usize) {
        self.counter.fetch_add(step, Ordering::Relaxed);
        if self.reported() {
            self.totals.changed();
        }
    }

    fn counter(&self) -> gix::progress::StepShared {
        Arc::clone(&self.counter)
    }
}

impl gix::progress::Progress for TransferProgress {
    fn init(&mut self, max: Option<usize>, unit: Option<gix::progress::Unit>) {
        self.max = max;
        self.unit = unit;
        if &self.id == b"IWIO" {
            self.totals.expected_objects.store(max.unwrap_or(0), Ordering::Relaxed);
        }
    }

    fn unit(&self) -> Option<gix::progress::Unit> {
        self.unit.clone()
    }

    fn max(&self) -> Option<usize> {
        self.max
    }

    fn set_max(&mut self, max: Option<usize>) -> Option<usize> {
        std::mem::replace(&mut self.max, max)
    }

    fn set_name(&mut self, name: String) {
        self.name = Some(name);
    }

    fn name(&self) -> Option<String> {
        self.name.clone()
    }

    fn id(&self) -> gix::progress::Id {
        self.id
    }

    fn message(&self, _level: gix::progress::MessageLevel, _message: String) {}
}

impl gix::progress::NestedProgress for TransferProgress {
    type SubProgress = TransferProgress;

    fn add_child(&mut self, name: impl Into<String>) -> Self::SubProgress {
        self.add_child_with_id(name, gix::progress::UNKNOWN)
    }

    fn add_child_with_id(&mut self, name: impl Into<String>, id: gix::progress::Id) -> Self::SubProgress {
        Self::node(Arc::clone(&self.totals), id, Some(name.into()))
    }
}

/// The only credentials a fetch uses: those of the `--remote` URL. No
/// helper runs and nothing is ever prompted for; approvals are not stored.
pub fn credentials(
    action: gix::credentials::helper::Action,
    account: Option<&(String, String)>,
) -> gix::Result<Option<gix::credentials::protocol::Outcome>> {
    use gix::credentials::helper::Action;
    match action {
        Action::Get(context) => match account {
            Some((username, password)) => Ok(Some(gix::credentials::protocol::Outcome {
                identity: gix::sec::identity::Account {
                    username: username.clone(),
                    password: password.clone(),
                    oauth_refresh_token: None,
                },
                next: context.into(),
            })),
            None => Err(gix::Error::from_error(gix::error::message(
                "the server asks for credentials; put them in the --remote URL (git-agent never prompts)",
            ))),
        },
        Action::Store(_) | Action::Erase(_) => Ok(None),
    }
}

/// Fails when `rev` is a direct name (no `~`, `^`, `@`, `:`) that the
/// server did not advertise and that is not a commit id.
fn check_advertised(refs: &[gix::protocol::handshake::Ref], rev: &str) -> Result<(), CacheError> {
    if rev.contains(['~', '^', '@', ':']) || (rev.len() >= 4 && rev.bytes().all(|byte| byte.is_ascii_hexdigit())) {
        return Ok(());
    }
    let name = |reference: &gix::protocol::handshake::Ref| -> String {
        let (full, _, _) = reference.unpack();
        full.to_string()
    };
    let candidates = [
        rev.to_string(),
        format!("refs/heads/{rev}"),
        format!("refs/tags/{rev}"),
        format!("refs/heads/{}", rev.strip_prefix("origin/").unwrap_or(rev)),
    ];
    if refs.iter().any(|reference| candidates.contains(&name(reference))) {
        Ok(())
    } else {
        Err(CacheError::NotAdvertised { rev: rev.to_string() })
    }
}

/// Points the cache's `HEAD` at `target` (`refs/heads/<default>`).
fn point_head(repo: &gix::Repository, target: &str) -> Result<(), CacheError> {
    use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
    let name: gix::refs::FullName = target.try_into()?;
    let edit = RefEdit {
        change: Change::Update {
            log: LogChange { mode: RefLog::AndReference, force_create_reflog: false, message: "remote HEAD".into() },
            expected: PreviousValue::Any,
            new: gix::refs::Target::Symbolic(name),
        },
        name: "HEAD".try_into()?,
        deref: false,
    };
    repo.edit_reference(edit)?;
    Ok(())
}

/// The SSH client gix spawns: the system's OpenSSH in batch mode (never a
/// prompt), strict host key checking against the caller's known_hosts, the
/// caller's agent, then the caller's default keys. Paths come from the
/// invocation, not the daemon's own environment.
fn ssh_command(env: &Environment) -> String {
    let home = env.home().ok();
    let mut command = vec![
        "ssh".to_string(),
        "-o BatchMode=yes".into(),
        "-o StrictHostKeyChecking=yes".into(),
        "-o PasswordAuthentication=no".into(),
        "-o KbdInteractiveAuthentication=no".into(),
    ];
    if let Some(home) = &home {
        let ssh = home.join(".ssh");
        command.push(format!("-o UserKnownHostsFile={}", quote(&ssh.join("known_hosts").display().to_string())));
        for key in ["id_ed25519", "id_ecdsa", "id_rsa", "id_dsa"] {
            let path = ssh.join(key);
            if path.is_file() {
                command.push(format!("-i {}", quote(&path.display().to_string())));
            }
        }
    }
    match env.get("SSH_AUTH_SOCK").filter(|socket| !socket.is_empty()) {
        Some(socket) => command.push(format!("-o IdentityAgent={}", quote(socket))),
        None => command.push("-o IdentityAgent=none".into()),
    }
    command.join(" ")
}

/// Single-quotes `value` for the shell gix runs `core.sshCommand` through.
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// gix's HTTP transport uses the process-wide rustls provider, as every
/// client of the daemon does ([`provider::network::install_tls_provider`]).
pub fn install_tls_provider() {
    provider::network::install_tls_provider();
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `--ls-remotes`: every cached remote with a readable `remote.json`,
/// sorted by URL.
pub fn list(metadata_root: &Path) -> Vec<RemoteInfo> {
    let root = remotes_root(metadata_root);
    let mut remotes: Vec<RemoteInfo> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let dir = entry.path();
            let record = read_record(&dir.join(RECORD))?;
            (!record.url.is_empty()).then(|| RemoteInfo {
                remote: record.url,
                last_fetched_at: record.last_fetched_at,
                last_resolved_rev: record.last_resolved_rev,
                dir: dir.display().to_string(),
            })
        })
        .collect();
    remotes.sort_by(|a, b| a.remote.cmp(&b.remote).then_with(|| a.dir.cmp(&b.dir)));
    remotes
}

/// One `--ls-remotes` entry (the Go implementation's JSON fields).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RemoteInfo {
    pub remote: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub last_fetched_at: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub last_resolved_rev: String,
    pub dir: String,
}

/// `--ls-remotes --format text`.
pub fn format_remotes(remotes: &[RemoteInfo]) -> String {
    if remotes.is_empty() {
        return "no cached remotes\n".into();
    }
    let mut out = String::new();
    for (index, remote) in remotes.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&remote.remote);
        if !remote.last_resolved_rev.is_empty() {
            out.push_str(&format!(" rev={}", &remote.last_resolved_rev[..remote.last_resolved_rev.len().min(12)]));
        }
        if let Some(at) = timefmt::parse_rfc3339(&remote.last_fetched_at) {
            out.push_str(&format!(" fetched={}", timefmt::format_rfc3339_seconds(at)));
        }
        out.push_str(&format!("\n  {}\n", remote.dir));
    }
    out
}

/// `--ls-remotes --format completion`: one sanitized URL a line.
pub fn format_completion(remotes: &[RemoteInfo]) -> String {
    remotes.iter().map(|remote| format!("{}\n", remote.remote)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use git_agent_tests::git::git_trimmed as git;

    struct Quiet;
    impl FetchReporter for Quiet {
        fn fetching(&self, _detail: &str) {}
    }

    /// Keeps every report.
    #[derive(Default)]
    struct Recorded(Mutex<Vec<String>>);
    impl FetchReporter for Recorded {
        fn fetching(&self, detail: &str) {
            self.0.lock().unwrap().push(detail.to_string());
        }
    }
    impl Recorded {
        fn all(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
    }

    fn wait_for(mut condition: impl FnMut() -> bool) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if condition() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn transfer_totals_grow_while_gix_reports_them() {
        use gix::progress::{Count, NestedProgress, Progress};
        let totals = Arc::new(Totals::default());
        let recorded = Recorded::default();
        std::thread::scope(|scope| {
            scope.spawn(|| report_transfer(&totals, "git://example.com/r.git", &recorded));
            let _finish = FinishOnDrop(&totals);
            // The shape gix-pack gives a fetch: a read pack child, then an
            // indexing child initialised with the header's object count.
            let mut root = TransferProgress::new(Arc::clone(&totals));
            let mut pack = root.add_child("receiving pack");
            let read = pack.add_child_with_id("read pack", *b"BWRB");
            let mut indexing = pack.add_child_with_id("indexing", *b"IWIO");
            indexing.init(Some(40), None);
            let unrelated = pack.add_child_with_id("decompressing", *b"IWDB");
            read.inc_by(2048);
            indexing.inc_by(10);
            unrelated.inc_by(1 << 30);
            assert!(wait_for(|| !recorded.all().is_empty()), "the first change is reported");
            read.inc_by(1024 * 1024);
            indexing.inc_by(30);
            let last = "receiving objects from git://example.com/r.git: 40/40 objects, 1.0 MiB";
            assert!(wait_for(|| recorded.all().last().is_some_and(|text| text == last)), "{:?}", recorded.all());
        });
        let reports = recorded.all();
        let objects: Vec<usize> = reports
            .iter()
            .map(|text| text.split(": ").nth(1).unwrap().split('/').next().unwrap().parse().unwrap())
            .collect();
        assert!(objects.windows(2).all(|pair| pair[0] <= pair[1]), "{reports:?}");
        assert!(objects[0] <= 10 && objects.last() == Some(&40), "{reports:?}");
        assert!(!reports.iter().any(|text| text.contains("1024.0 MiB")), "an unreported node leaked: {reports:?}");
    }

    #[test]
    fn a_fetch_reports_its_final_transfer_totals() {
        let temp = tempfile::tempdir().unwrap();
        let work = upstream(temp.path());
        let home = temp.path().join("home");
        let remote = Remote::new(work.to_str().unwrap(), temp.path(), &home.join(".git-agent"), &env(&home)).unwrap();
        let recorded = Recorded::default();
        let freshness = Freshness { reindex: false, started: SystemTime::now() };
        resolve(&remote, None, freshness, &recorded, &AtomicBool::new(false)).unwrap();
        let objects = git(&work, &["rev-list", "--objects", "--all"]).lines().count();
        let reports = recorded.all();
        assert_eq!(reports.first().map(String::as_str), Some(format!("listing refs of {}", remote.sanitized).as_str()));
        let last = reports.last().unwrap();
        let expected = format!("received objects from {}: {objects}/{objects} objects, ", remote.sanitized);
        assert!(last.starts_with(&expected), "{reports:?}");
    }

    fn upstream(dir: &Path) -> PathBuf {
        let work = dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "-q", "-b", "trunk"]);
        std::fs::write(work.join("a.txt"), "one\n").unwrap();
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "one"]);
        std::fs::write(work.join("a.txt"), "two\n").unwrap();
        git(&work, &["commit", "-q", "-am", "two"]);
        git(&work, &["tag", "v1"]);
        work
    }

    fn env(home: &Path) -> Environment {
        Environment::new([("HOME".to_string(), home.display().to_string())].into_iter().collect())
    }

    #[test]
    fn local_paths_and_urls_are_told_apart() {
        assert!(is_local_path("/srv/repo.git"));
        assert!(is_local_path("../repo"));
        assert!(is_local_path("repo"));
        assert!(is_local_path("./a:b"));
        assert!(!is_local_path("git@example.com:org/repo.git"));
        assert!(!is_local_path("https://example.com/repo.git"));
    }

    #[test]
    fn fetch_resolves_head_branches_tags_and_expressions() {
        let temp = tempfile::tempdir().unwrap();
        let work = upstream(temp.path());
        let home = temp.path().join("home");
        let remote = Remote::new(work.to_str().unwrap(), temp.path(), &home.join(".git-agent"), &env(&home)).unwrap();
        let now = SystemTime::now();
        let freshness = Freshness { reindex: false, started: now };
        let interrupt = AtomicBool::new(false);
        let head = resolve(&remote, None, freshness, &Quiet, &interrupt).unwrap();
        assert_eq!(head.commit.to_string(), git(&work, &["rev-parse", "HEAD"]));
        assert_eq!(head.rev, "HEAD");
        assert!(head.fetched_at.is_some());
        // Not fresh until published: the next resolve fetches again.
        publish(&remote, &head).unwrap();
        let again = resolve(&remote, Some("HEAD~1"), freshness, &Quiet, &interrupt).unwrap();
        assert_eq!(again.commit.to_string(), git(&work, &["rev-parse", "HEAD~1"]));
        assert!(again.fetched_at.is_none(), "a fresh cache resolved HEAD~1 without a fetch");
        let tag = resolve(&remote, Some("v1"), freshness, &Quiet, &interrupt).unwrap();
        assert_eq!(tag.commit, head.commit);
        let error = resolve(&remote, Some("nope"), freshness, &Quiet, &interrupt).unwrap_err();
        assert!(error.to_string().contains("does not advertise \"nope\""), "{error}");
        // The bare cache's HEAD follows the remote's default branch.
        let head_file = std::fs::read_to_string(remote.repo_dir().join("HEAD")).unwrap();
        assert_eq!(head_file.trim(), "ref: refs/heads/trunk");
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(remote.dir.join(RECORD)).unwrap()).unwrap();
        assert_eq!(record["url"], work.to_str().unwrap());
        assert_eq!(record["last_resolved_rev"], head.commit.to_string());
    }

    /// The pack files of a bare repository.
    fn packs(repo: &Path) -> usize {
        std::fs::read_dir(repo.join("objects/pack"))
            .map(|entries| {
                entries.flatten().filter(|entry| entry.path().extension().is_some_and(|ext| ext == "pack")).count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn an_expression_on_a_cold_cache_is_resolved_after_the_one_main_fetch() {
        for allow_filter in [true, false] {
            let temp = tempfile::tempdir().unwrap();
            let work = upstream(temp.path());
            git(&work, &["config", "uploadpack.allowFilter", if allow_filter { "true" } else { "false" }]);
            let (remote, freshness, interrupt) = cold_cache_of(temp.path(), &work);
            let reports = Recorded::default();
            let resolved = resolve(&remote, Some("HEAD~1"), freshness, &reports, &interrupt).unwrap();
            assert_eq!(resolved.commit.to_string(), git(&work, &["rev-parse", "HEAD~1"]));
            assert_eq!(resolved.rev, "HEAD~1");
            let listings = reports.all().iter().filter(|line| line.starts_with("listing refs of ")).count();
            assert_eq!(listings, 1, "filter {allow_filter}: {:?}", reports.all());
            // The cache holds the main pack only.
            assert_eq!(packs(&remote.repo_dir()), 1);
        }
    }

    #[test]
    fn a_server_that_filters_keeps_blobs_too_large_to_search_and_the_walk_calls_them_oversized() {
        use crate::source::discovery::{MAX_FILE_BYTES, SkipReason};
        for allow_filter in [true, false] {
            let temp = tempfile::tempdir().unwrap();
            let work = upstream(temp.path());
            std::fs::write(work.join("big.txt"), "x".repeat(MAX_FILE_BYTES as usize + 1)).unwrap();
            std::fs::write(work.join("edge.txt"), "y".repeat(MAX_FILE_BYTES as usize)).unwrap();
            git(&work, &["add", "."]);
            git(&work, &["commit", "-q", "-m", "large files"]);
            git(&work, &["config", "uploadpack.allowFilter", if allow_filter { "true" } else { "false" }]);
            let big = git(&work, &["rev-parse", "HEAD:big.txt"]);
            let edge = git(&work, &["rev-parse", "HEAD:edge.txt"]);
            let (remote, freshness, interrupt) = cold_cache_of(temp.path(), &work);
            let resolved = resolve(&remote, None, freshness, &Quiet, &interrupt).unwrap();
            let repo = revision::open(&remote.repo_dir()).unwrap();
            let local = repo.to_thread_local();
            let has = |id: &str| local.find_header(gix::ObjectId::from_hex(id.as_bytes()).unwrap()).is_ok();
            // The blob of exactly the limit is fetched; one byte more is
            // left on a server that filters.
            assert!(has(&edge));
            assert_eq!(has(&big), !allow_filter, "filter {allow_filter}");
            assert_eq!(remote.repo_dir().join(revision::BLOB_LIMIT_MARKER).is_file(), allow_filter);
            // Either way the walk of the cache calls it oversized, and
            // reads the rest.
            let (files, skips) = walk_cache(&remote, resolved.commit);
            assert_eq!(files, ["a.txt", "edge.txt"], "filter {allow_filter}");
            assert_eq!(skips, [("big.txt".to_string(), SkipReason::Oversized)], "filter {allow_filter}");
        }
    }

    /// A remote for the repository `work`, with its cache under `temp`, and
    /// what a first search resolves it with.
    fn cold_cache_of(temp: &Path, work: &Path) -> (Remote, Freshness, AtomicBool) {
        let home = temp.join("home");
        let remote = Remote::new(work.to_str().unwrap(), temp, &home.join(".git-agent"), &env(&home)).unwrap();
        let freshness = Freshness { reindex: false, started: SystemTime::now() };
        (remote, freshness, AtomicBool::new(false))
    }

    /// The files and skips of the cache's walk of `commit`.
    fn walk_cache(
        remote: &Remote,
        commit: gix::ObjectId,
    ) -> (Vec<String>, Vec<(String, crate::source::discovery::SkipReason)>) {
        let repo = revision::open(&remote.repo_dir()).unwrap();
        let source = revision::TreeSource::new(repo, commit).unwrap();
        let walk = revision::walk_with(&source, &[], &crate::source::discovery::NoFileWork).unwrap().walk;
        let files = walk.files.iter().map(|file| file.path.clone()).collect();
        let skips = walk.skips.iter().map(|skip| (skip.path.clone(), skip.reason)).collect();
        (files, skips)
    }

    #[test]
    fn ignore_files_over_the_size_limit_are_fetched_from_a_server_that_filters() {
        use crate::source::discovery::{MAX_FILE_BYTES, SkipReason};
        for allow_filter in [true, false] {
            let temp = tempfile::tempdir().unwrap();
            let work = upstream(temp.path());
            // Ignore files over the limit, whose last lines decide.
            let padding = "# padding\n".repeat(MAX_FILE_BYTES as usize / 10 + 1);
            std::fs::write(work.join(".gitignore"), format!("{padding}secret.txt\n")).unwrap();
            std::fs::create_dir_all(work.join("sub")).unwrap();
            std::fs::write(work.join("sub/.gitagentignore"), format!("{padding}gen.rs\n")).unwrap();
            std::fs::write(work.join("secret.txt"), "hidden\n").unwrap();
            std::fs::write(work.join("sub/gen.rs"), "fn generated() {}\n").unwrap();
            std::fs::write(work.join("sub/lib.rs"), "fn kept() {}\n").unwrap();
            std::fs::write(work.join("big.txt"), "x".repeat(MAX_FILE_BYTES as usize + 1)).unwrap();
            git(&work, &["add", "-f", "."]);
            git(&work, &["commit", "-q", "-m", "large ignore files"]);
            git(&work, &["config", "uploadpack.allowFilter", if allow_filter { "true" } else { "false" }]);
            let (remote, freshness, interrupt) = cold_cache_of(temp.path(), &work);
            let reporter = Recorded::default();
            let resolved = resolve(&remote, None, freshness, &reporter, &interrupt).unwrap();
            let fetched_ignore_files =
                reporter.all().iter().any(|line| line.starts_with("fetching 2 ignore files over the size limit"));
            assert_eq!(fetched_ignore_files, allow_filter, "filter {allow_filter}: {:?}", reporter.all());
            // The main pack, and the ignore files' own one.
            assert_eq!(packs(&remote.repo_dir()), if allow_filter { 2 } else { 1 });
            assert!(!remote.dir.join(IGNORE_BLOBS).exists());
            let (files, skips) = walk_cache(&remote, resolved.commit);
            assert_eq!(files, ["a.txt", "sub/lib.rs"], "filter {allow_filter}");
            assert_eq!(skips, [("big.txt".to_string(), SkipReason::Oversized)], "filter {allow_filter}");
            // The blob of the data file over the limit stays on the server.
            let big = git(&work, &["rev-parse", "HEAD:big.txt"]);
            let local = revision::open(&remote.repo_dir()).unwrap().to_thread_local();
            assert_eq!(local.has_object(gix::ObjectId::from_hex(big.as_bytes()).unwrap()), !allow_filter);
            // The commit is noted as checked, only in a filtered cache.
            let checked = std::fs::read_to_string(remote.repo_dir().join(IGNORE_FILES_CHECKED)).ok();
            let expected = allow_filter.then(|| format!("{}\n", resolved.commit));
            assert_eq!(checked, expected, "filter {allow_filter}");
            // A fresh cache that has them fetches nothing more.
            publish(&remote, &resolved).unwrap();
            let again = Recorded::default();
            resolve(&remote, None, freshness, &again, &interrupt).unwrap();
            assert!(again.all().is_empty(), "{:?}", again.all());
            assert_eq!(packs(&remote.repo_dir()), if allow_filter { 2 } else { 1 });
            if allow_filter {
                // The noted commit is not checked again: with the ignore
                // files' pack gone, nothing is fetched either.
                let ignore = git(&work, &["rev-parse", "HEAD:.gitignore"]);
                let pack_dir = remote.repo_dir().join("objects/pack");
                for entry in std::fs::read_dir(&pack_dir).unwrap().flatten() {
                    let path = entry.path();
                    if path.extension().is_none_or(|ext| ext != "idx") {
                        continue;
                    }
                    let listed = std::process::Command::new("git")
                        .args(["show-index"])
                        .stdin(std::fs::File::open(&path).unwrap())
                        .output()
                        .unwrap();
                    if String::from_utf8_lossy(&listed.stdout).contains(&ignore) {
                        for ext in ["idx", "pack", "rev"] {
                            let _ = std::fs::remove_file(path.with_extension(ext));
                        }
                    }
                }
                assert_eq!(packs(&remote.repo_dir()), 1);
                let noted = Recorded::default();
                resolve(&remote, None, freshness, &noted, &interrupt).unwrap();
                assert!(noted.all().is_empty(), "{:?}", noted.all());
            }
        }
    }

    #[test]
    fn an_expression_that_does_not_resolve_fails_after_the_main_fetch() {
        let temp = tempfile::tempdir().unwrap();
        let work = upstream(temp.path());
        git(&work, &["config", "uploadpack.allowFilter", "true"]);
        let (remote, freshness, interrupt) = cold_cache_of(temp.path(), &work);
        let error = resolve(&remote, Some("HEAD~7"), freshness, &Quiet, &interrupt).unwrap_err();
        assert!(matches!(error, RemoteError::Resolve { .. }), "{error}");
        // The main fetch ran: the cache now answers what exists.
        let head = resolve(&remote, Some("HEAD~1"), freshness, &Quiet, &interrupt).unwrap();
        assert_eq!(head.commit.to_string(), git(&work, &["rev-parse", "HEAD~1"]));
        assert_eq!(packs(&remote.repo_dir()), 1);
    }

    #[test]
    fn credentials_are_sanitized_from_errors_and_keys() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let raw = "http://user:hunter2secret@127.0.0.1:1/repo.git";
        let remote = Remote::new(raw, temp.path(), &home.join(".git-agent"), &env(&home)).unwrap();
        assert_eq!(remote.sanitized, "http://127.0.0.1:1/repo.git");
        assert!(!format!("{remote:?}").contains("hunter2"));
        let text = remote.sanitize_text(&format!("cannot reach {raw} (user:hunter2secret@127.0.0.1)"));
        assert!(!text.contains("hunter2"), "{text}");
    }

    /// Fetch failures are rendered by the one renderer and sanitized; the
    /// text is what the former walker of causes wrote.
    #[test]
    fn a_refused_fetch_reads_as_before_and_without_credentials() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = closed.local_addr().unwrap();
        drop(closed);
        let raw = format!("http://user:hunter2secret@{address}/repo.git");
        let remote = Remote::new(&raw, temp.path(), &home.join(".git-agent"), &env(&home)).unwrap();
        let freshness = Freshness { reindex: false, started: SystemTime::now() };
        let error = resolve(&remote, None, freshness, &Quiet, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "fetch http://{address}/repo.git: Transport handshake failed: An IO error occurred when talking to the server: \
                 error sending request for url (http://{address}/repo.git/info/refs?service=git-upload-pack): \
                 client error (Connect): tcp connect error: Connection refused (os error 111)"
            )
        );
    }

    #[test]
    fn an_unopenable_cache_keeps_gix_error_and_reads_as_before() {
        use std::error::Error as _;
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let remote = Remote::new("/srv/repo.git", temp.path(), &home.join(".git-agent"), &env(&home)).unwrap();
        let dir = temp.path().join("not-a-repository");
        std::fs::create_dir_all(&dir).unwrap();
        let error = open_at(&remote, &dir).unwrap_err();
        let cause = error.source().and_then(|cause| cause.downcast_ref::<gix::Error>()).expect("gix's error");
        let before = format!("cannot open the cached repository {}: {cause}", dir.display());
        assert_eq!(git_agent_shared::error_chain::render(&error), before);
    }

    #[test]
    fn remotes_list_in_text_json_and_completion() {
        let temp = tempfile::tempdir().unwrap();
        assert_eq!(format_remotes(&list(temp.path())), "no cached remotes\n");
        let info = RemoteInfo {
            remote: "https://example.com/a.git".into(),
            last_fetched_at: "2026-01-02T03:04:05.123456789Z".into(),
            last_resolved_rev: "0123456789abcdef0123456789abcdef01234567".into(),
            dir: "/h/.git-agent/remotes/x".into(),
        };
        assert_eq!(
            format_remotes(std::slice::from_ref(&info)),
            "https://example.com/a.git rev=0123456789ab fetched=2026-01-02T03:04:05Z\n  /h/.git-agent/remotes/x\n"
        );
        assert_eq!(format_completion(&[info]), "https://example.com/a.git\n");
    }
}

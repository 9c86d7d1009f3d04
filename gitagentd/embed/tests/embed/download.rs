//! `download::ensure` against a model server on loopback that serves the
//! tiny model's files the way the hub does (`/{repo}/resolve/{revision}/
//! {file}`, Range requests answered 206), or misbehaves as a test asks:
//! breaks off, stalls, ignores Range, sends other bytes, has no file.

use gitagent_embed::download::{self, DownloadError, DownloadOptions, ModelFile, ModelSpec, Progress};
use gitagent_embed::{LoadOptions, LocalModel};
use gitagent_provider::{ClientKind, NetworkSettings};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

const REPO: &str = "test-org/tiny-bert";
const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";

/// How the server answers requests for one file.
#[derive(Clone, Copy, Debug)]
enum Behaviour {
    /// As the hub: Range requests answered 206.
    Good,
    /// Always 200 with the whole file.
    IgnoresRange,
    /// The first request breaks off after this many bytes; later ones are
    /// good.
    BreaksOnceAfter(usize),
    /// Every request breaks off after this many bytes.
    BreaksAfter(usize),
    /// Sends this many bytes, then nothing, forever.
    StallsAfter(usize),
    /// Other bytes of the same length.
    Corrupt,
    Missing,
}

struct Server {
    base: String,
    files: HashMap<String, Vec<u8>>,
    behaviours: Mutex<HashMap<String, Behaviour>>,
    /// Each request: file and Range header.
    requests: Mutex<Vec<(String, Option<String>)>>,
}

impl Server {
    async fn start(files: &[(String, Vec<u8>)]) -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = Arc::new(Self {
            base: format!("http://{}", listener.local_addr().unwrap()),
            files: files.iter().cloned().collect(),
            behaviours: Mutex::default(),
            requests: Mutex::default(),
        });
        let serving = Arc::clone(&server);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(Arc::clone(&serving).answer(stream));
            }
        });
        server
    }

    fn set(&self, file: &str, behaviour: Behaviour) {
        self.behaviours.lock().unwrap().insert(file.into(), behaviour);
    }

    fn requests_for(&self, file: &str) -> Vec<Option<String>> {
        self.requests.lock().unwrap().iter().filter(|(name, _)| name == file).map(|(_, range)| range.clone()).collect()
    }

    /// Answers the one request of a connection (`Connection: close`), by
    /// hand, so that a reply can break off after exactly the bytes a test
    /// names.
    async fn answer(self: Arc<Self>, mut stream: tokio::net::TcpStream) {
        let mut head = Vec::new();
        let mut buffer = [0; 4096];
        while !head.windows(4).any(|window| window == b"\r\n\r\n") {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(count) => head.extend_from_slice(&buffer[..count]),
            }
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let path = head.split_whitespace().nth(1).unwrap_or_default();
        // Through a proxy the target is absolute.
        let path = path.split_once("://").map_or(path, |(_, rest)| &rest[rest.find('/').unwrap_or(rest.len())..]);
        let name = path.strip_prefix(&format!("/{REPO}/resolve/{REVISION}/")).unwrap_or_default().to_string();
        let range = head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case("range").then(|| value.trim().to_string())
        });
        self.requests.lock().unwrap().push((name.clone(), range.clone()));
        let behaviour = self.behaviours.lock().unwrap().get(&name).copied().unwrap_or(Behaviour::Good);
        let (status, extra, body) = self.reply(&name, behaviour, range);
        let header = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n", body.len());
        let _ = stream.write_all(header.as_bytes()).await;
        let first_request = self.requests_for(&name).len() == 1;
        match behaviour {
            Behaviour::BreaksOnceAfter(after) if first_request => {
                let _ = stream.write_all(&body[..after.min(body.len())]).await;
            }
            Behaviour::BreaksAfter(after) => {
                let _ = stream.write_all(&body[..after.min(body.len())]).await;
            }
            Behaviour::StallsAfter(after) => {
                let _ = stream.write_all(&body[..after.min(body.len())]).await;
                let _ = stream.flush().await;
                // Holds the connection open, sending nothing, until the
                // test's runtime ends.
                std::future::pending::<()>().await;
            }
            _ => {
                let _ = stream.write_all(&body).await;
            }
        }
        let _ = stream.shutdown().await;
    }

    /// The status, extra header lines and body of the reply.
    fn reply(&self, name: &str, behaviour: Behaviour, range: Option<String>) -> (&'static str, String, Vec<u8>) {
        let Some(bytes) = self.files.get(name).filter(|_| !matches!(behaviour, Behaviour::Missing)) else {
            return ("404 Not Found", String::new(), b"Entry not found".to_vec());
        };
        let mut bytes = bytes.clone();
        if let Behaviour::Corrupt = behaviour {
            bytes.iter_mut().for_each(|byte| *byte ^= 0x55);
        }
        match (behaviour, range) {
            (Behaviour::IgnoresRange, _) | (_, None) => ("200 OK", String::new(), bytes),
            (_, Some(range)) => {
                let first: usize = range.trim_start_matches("bytes=").trim_end_matches('-').parse().unwrap();
                if first >= bytes.len() {
                    return ("416 Range Not Satisfiable", String::new(), Vec::new());
                }
                let extra = format!("Content-Range: bytes {first}-{}/{}\r\n", bytes.len() - 1, bytes.len());
                ("206 Partial Content", extra, bytes[first..].to_vec())
            }
        }
    }
}

/// The tiny model's files, as the test serves them.
fn tiny_files() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-bert");
    [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
        "1_Pooling/config.json",
        "sentence_bert_config.json",
    ]
    .into_iter()
    .map(|name| (name.to_string(), std::fs::read(root.join(name)).unwrap()))
    .collect()
}

fn spec_of(files: &[(String, Vec<u8>)]) -> ModelSpec {
    ModelSpec {
        name: "tiny-bert".into(),
        repo: REPO.into(),
        revision: REVISION.into(),
        files: files
            .iter()
            .map(|(path, bytes)| ModelFile {
                path: path.clone(),
                size: bytes.len() as u64,
                sha256: Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect(),
            })
            .collect(),
    }
}

fn client(network: &NetworkSettings) -> reqwest::Client {
    gitagent_provider::network::build_client(network, ClientKind::Embeddings).unwrap()
}

struct Setup {
    server: Arc<Server>,
    spec: ModelSpec,
    cache: tempfile::TempDir,
    http: reqwest::Client,
    options: DownloadOptions,
}

impl Setup {
    async fn new() -> Self {
        let files = tiny_files();
        let server = Server::start(&files).await;
        let options = DownloadOptions { base_url: server.base.clone(), stall_timeout: Duration::from_secs(30) };
        Self {
            spec: spec_of(&files),
            server,
            cache: tempfile::tempdir().unwrap(),
            http: client(&Default::default()),
            options,
        }
    }

    fn models(&self) -> PathBuf {
        self.cache.path().join("git-agent/models")
    }

    async fn ensure(&self) -> Result<PathBuf, DownloadError> {
        self.ensure_with(&|_| {}, &CancellationToken::new()).await
    }

    async fn ensure_with(
        &self,
        progress: &(dyn Fn(Progress<'_>) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<PathBuf, DownloadError> {
        download::ensure(&self.spec, &self.models(), &self.http, &self.options, progress, cancel).await
    }

    /// The model folder and the temporary area: nothing else, nothing
    /// half-published.
    fn listing(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.models())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn partial(&self, file: &str) -> PathBuf {
        self.models().join(".partial").join(self.spec.folder_name()).join(format!("{file}.part"))
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_download_publishes_a_private_folder_the_model_loads_from() {
    let setup = Setup::new().await;
    let reports = Mutex::new(Vec::new());
    let progress =
        |report: Progress<'_>| reports.lock().unwrap().push((report.file.to_string(), report.done, report.total));
    let dir = setup.ensure_with(&progress, &CancellationToken::new()).await.unwrap();
    assert_eq!(dir, setup.models().join(format!("tiny-bert-{REVISION}")));
    assert_eq!(setup.listing(), [".partial".to_string(), format!("tiny-bert-{REVISION}")]);
    for file in &setup.spec.files {
        let path = dir.join(&file.path);
        assert_eq!(std::fs::read(&path).unwrap().len() as u64, file.size);
        assert_eq!(mode(&path), 0o600, "{}", file.path);
    }
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("1_Pooling")), 0o700);
    assert_eq!(mode(&setup.models().join(".partial")), 0o700);
    // Nothing is left in the temporary area but the lock.
    let left: Vec<String> = std::fs::read_dir(setup.models().join(".partial"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [format!("tiny-bert-{REVISION}.lock")]);
    // Progress rose to the whole model.
    let reports = reports.into_inner().unwrap();
    let total = setup.spec.total_size();
    assert!(reports.iter().all(|(_, _, all)| *all == total));
    assert_eq!(reports.last().map(|(_, done, _)| *done), Some(total));
    assert!(reports.windows(2).all(|pair| pair[0].1 <= pair[1].1));
    // The folder is a model; a second call finds it and asks nothing.
    let options = LoadOptions { key: Some(setup.spec.key()), ..LoadOptions::default() };
    let model = LocalModel::load(&dir, &options).unwrap();
    assert_eq!(model.key().to_string(), format!("tiny-bert@{REVISION}"));
    let requests = setup.server.requests.lock().unwrap().len();
    assert_eq!(requests, setup.spec.files.len());
    assert_eq!(setup.ensure().await.unwrap(), dir);
    assert_eq!(setup.server.requests.lock().unwrap().len(), requests);
}

#[tokio::test]
async fn a_broken_download_resumes_where_it_stopped() {
    let setup = Setup::new().await;
    setup.server.set("model.safetensors", Behaviour::BreaksOnceAfter(40_000));
    let error = setup.ensure().await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, DownloadError::Truncated { received: 40_000, .. }), "{error:?}");
    assert!(message.contains("model.safetensors") && message.contains(&setup.server.base), "{message}");
    assert!(message.contains("hint: run the command again to resume"), "{message}");
    // Nothing is published; the bytes received wait in the temporary area.
    assert_eq!(setup.listing(), [".partial"]);
    assert_eq!(std::fs::metadata(setup.partial("model.safetensors")).unwrap().len(), 40_000);
    assert_eq!(mode(&setup.partial("model.safetensors")), 0o600);

    let dir = setup.ensure().await.unwrap();
    assert_eq!(setup.server.requests_for("model.safetensors"), [None, Some("bytes=40000-".to_string())]);
    // Files finished before the break are not fetched again.
    assert_eq!(setup.server.requests_for("config.json").len(), 1);
    let served = &tiny_files()[2].1;
    assert_eq!(&std::fs::read(dir.join("model.safetensors")).unwrap(), served);
}

#[tokio::test]
async fn a_server_that_ignores_range_is_read_from_the_start() {
    let setup = Setup::new().await;
    setup.server.set("model.safetensors", Behaviour::BreaksOnceAfter(30_000));
    setup.ensure().await.unwrap_err();
    setup.server.set("model.safetensors", Behaviour::IgnoresRange);
    let dir = setup.ensure().await.unwrap();
    assert_eq!(setup.server.requests_for("model.safetensors"), [None, Some("bytes=30000-".to_string())]);
    assert_eq!(&std::fs::read(dir.join("model.safetensors")).unwrap(), &tiny_files()[2].1);
}

#[tokio::test]
async fn a_checksum_mismatch_deletes_the_file_and_publishes_nothing() {
    let setup = Setup::new().await;
    setup.server.set("tokenizer.json", Behaviour::Corrupt);
    let error = setup.ensure().await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, DownloadError::Checksum { .. }), "{error:?}");
    assert!(message.contains("tokenizer.json") && message.contains("SHA-256"), "{message}");
    assert!(message.contains(&format!("{}/{REPO}/resolve/{REVISION}/tokenizer.json", setup.server.base)), "{message}");
    assert_eq!(setup.listing(), [".partial"]);
    assert!(!setup.partial("tokenizer.json").exists());
    // The next attempt fetches the file whole again.
    setup.server.set("tokenizer.json", Behaviour::Good);
    setup.ensure().await.unwrap();
    assert_eq!(setup.server.requests_for("tokenizer.json"), [None, None]);
}

#[tokio::test]
async fn a_missing_file_names_the_url_and_status() {
    let setup = Setup::new().await;
    setup.server.set("model.safetensors", Behaviour::Missing);
    let error = setup.ensure().await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("404 Not Found") && message.contains("model.safetensors"), "{message}");
    assert!(message.contains("hint: the server has no such file at the pinned revision"), "{message}");
    assert_eq!(setup.listing(), [".partial"]);
}

#[tokio::test]
async fn a_body_cut_short_every_time_fails_each_time_and_resumes() {
    let setup = Setup::new().await;
    setup.server.set("model.safetensors", Behaviour::BreaksAfter(10_000));
    let first = setup.ensure().await.unwrap_err();
    assert!(matches!(first, DownloadError::Truncated { received: 10_000, .. }), "{first:?}");
    let second = setup.ensure().await.unwrap_err();
    assert!(matches!(second, DownloadError::Truncated { received: 20_000, .. }), "{second:?}");
    assert_eq!(setup.listing(), [".partial"]);
}

#[tokio::test]
async fn a_stalled_server_times_out_and_cancellation_stops_a_download() {
    let mut setup = Setup::new().await;
    setup.server.set("model.safetensors", Behaviour::StallsAfter(5_000));
    setup.options.stall_timeout = Duration::from_millis(200);
    let error = setup.ensure().await.unwrap_err();
    assert!(matches!(error, DownloadError::Stalled { received: 5_000, .. }), "{error:?}");
    assert!(error.to_string().contains("sent nothing for 0.2 s"), "{error}");

    // With a patient client, cancellation is what stops it: as soon as the
    // first bytes of the stalling file arrive.
    setup.options.stall_timeout = Duration::from_secs(3600);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let progress = move |report: Progress<'_>| {
        if report.file == "model.safetensors" && report.file_done > 5_000 {
            trigger.cancel();
        }
    };
    let error = tokio::time::timeout(Duration::from_secs(60), setup.ensure_with(&progress, &cancel))
        .await
        .expect("cancellation ends the download")
        .unwrap_err();
    assert!(matches!(error, DownloadError::Cancelled), "{error:?}");
    assert_eq!(setup.listing(), [".partial"]);
    // What arrived is kept for the next attempt.
    assert_eq!(std::fs::metadata(setup.partial("model.safetensors")).unwrap().len(), 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_downloads_of_one_model_share_the_work() {
    let setup = Setup::new().await;
    let (first, second) = tokio::join!(setup.ensure(), setup.ensure());
    assert_eq!(first.unwrap(), second.unwrap());
    for file in &setup.spec.files {
        assert_eq!(setup.server.requests_for(&file.path).len(), 1, "{}", file.path);
    }
}

#[tokio::test]
async fn a_proxy_that_refuses_is_named() {
    let setup = Setup::new().await;
    // A proxy that answers every request 407.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = [0; 4096];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(
                b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let vars = [("HTTP_PROXY", proxy.as_str()), ("HTTPS_PROXY", proxy.as_str())];
    let env = git_agent_shared::Environment::new(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let http = client(&NetworkSettings::from_env(&env));
    let cancel = CancellationToken::new();
    let models = setup.models();
    // http:// through the proxy: its 407 reply.
    let error = download::ensure(&setup.spec, &models, &http, &setup.options, &|_| {}, &cancel).await.unwrap_err();
    assert!(matches!(error, DownloadError::Proxy { .. }), "{error:?}");
    assert!(error.to_string().contains("407"), "{error}");
    // https:// through the proxy: the tunnel it refuses.
    let options = DownloadOptions { base_url: "https://models.example.test".into(), ..setup.options.clone() };
    let error = download::ensure(&setup.spec, &models, &http, &options, &|_| {}, &cancel).await.unwrap_err();
    assert!(matches!(error, DownloadError::Proxy { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("the proxy refused the download of config.json from https://models.example.test/"),
        "{message}"
    );
    assert!(message.contains("hint: check HTTPS_PROXY"), "{message}");
    assert_eq!(setup.listing(), [".partial"]);
}

#[tokio::test]
async fn no_server_is_a_connection_error() {
    let mut setup = Setup::new().await;
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    setup.options.base_url = format!("http://127.0.0.1:{port}");
    let error = setup.ensure().await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, DownloadError::Connect { .. }), "{error:?}");
    assert!(
        message.starts_with(&format!("cannot reach http://127.0.0.1:{port}/{REPO}/resolve/{REVISION}/config.json")),
        "{message}"
    );
    assert!(message.contains("search.model_dir"), "{message}");
}

#[tokio::test]
async fn a_full_disk_is_named() {
    let setup = Setup::new().await;
    // The first file's partial file is /dev/full: every write fails with
    // ENOSPC.
    let part = setup.partial("config.json");
    std::fs::create_dir_all(part.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/dev/full", &part).unwrap();
    let error = setup.ensure().await.unwrap_err();
    assert!(matches!(error, DownloadError::DiskFull { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with("no space left in") && message.contains("config.json"), "{message}");
    assert!(message.contains("hint: free some space"), "{message}");
    assert_eq!(setup.listing(), [".partial"]);
}

#[test]
fn the_pinned_default_is_all_minilm_l6_v2() {
    let spec = ModelSpec::all_minilm_l6_v2();
    assert_eq!(spec.revision.len(), 40);
    assert_eq!(spec.folder_name(), "all-MiniLM-L6-v2-1110a243fdf4706b3f48f1d95db1a4f5529b4d41");
    assert_eq!(
        spec.url(download::HUB, &spec.files[5]),
        "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/1110a243fdf4706b3f48f1d95db1a4f5529b4d41/model.safetensors"
    );
    assert!(spec.files.iter().all(|file| file.sha256.len() == 64));
    assert_eq!(spec.total_size(), 91_335_827);
}

//! Git servers on 127.0.0.1 for the remote-search tests, each started by
//! the test that uses it and stopped when dropped:
//!
//! - [`HttpGit`]: `git http-backend` behind a small HTTP server (axum),
//!   counting requests, optionally requiring basic-auth credentials, and
//!   able to die in, or hold back the second half of, a pack response (the
//!   answer to a request with `want` lines; ref listings pass);
//! - [`TlsFront`]: `https://` in front of an [`HttpGit`], with a certificate
//!   from its own throw-away CA (rcgen);
//! - [`GitDaemon`]: `git daemon` serving `git://`, connections counted from
//!   its verbose log;
//! - [`SshServer`]: a throw-away `sshd` on a loopback port with its own
//!   host key, a client key and `known_hosts` in the test's HOME. It panics
//!   when `/usr/sbin/sshd` is missing: the test must fail, never skip.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const READY: Duration = Duration::from_secs(20);

/// Creates a bare copy of `work` at `<dir>/<name>` (for serving).
pub fn bare_copy(work: &Path, dir: &Path, name: &str) -> PathBuf {
    let target = dir.join(name);
    let status = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(work)
        .arg(&target)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .expect("run git clone --bare");
    assert!(status.success(), "git clone --bare failed");
    target
}

/// Pushes `work`'s `main` to the bare repository at `bare`.
pub fn push(work: &Path, bare: &Path) {
    let status = Command::new("git")
        .args(["push", "-q", "--force"])
        .arg(bare)
        .arg("main:main")
        .current_dir(work)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .expect("run git push");
    assert!(status.success(), "git push failed");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().expect("a local address").port()
}

fn wait_listening(port: u16, child: &mut Child, what: &str) {
    let ready = crate::wait_until(READY, || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited early: {status}");
        }
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(ready, "{what} did not listen on 127.0.0.1:{port}");
}

struct HttpShared {
    root: PathBuf,
    requests: AtomicUsize,
    /// Requests that want objects (a pack comes back).
    pack_requests: AtomicUsize,
    /// Requests that asked for objects filtered by a `blob:` filter.
    filtered_requests: AtomicUsize,
    /// `user:password` the server demands, when set.
    credentials: Option<String>,
    /// Cut pack responses after this many bytes and drop the connection.
    die_mid_pack: AtomicBool,
    /// Send half of each pack response, then hold it until released.
    hold_mid_pack: AtomicBool,
    /// Pack responses held so far.
    held: AtomicUsize,
    release: tokio::sync::watch::Sender<bool>,
    seen_authorization: Mutex<Vec<String>>,
}

/// `git http-backend` over HTTP on 127.0.0.1. See the module documentation.
pub struct HttpGit {
    shared: Arc<HttpShared>,
    address: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl HttpGit {
    /// Serves every repository under `root`; with `credentials`
    /// (`user:password`) every request must carry them as basic auth.
    pub fn start(root: &Path, credentials: Option<&str>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("start the HTTP git runtime");
        let shared = Arc::new(HttpShared {
            root: root.to_path_buf(),
            requests: AtomicUsize::new(0),
            pack_requests: AtomicUsize::new(0),
            filtered_requests: AtomicUsize::new(0),
            credentials: credentials.map(str::to_string),
            die_mid_pack: AtomicBool::new(false),
            hold_mid_pack: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            release: tokio::sync::watch::Sender::new(false),
            seen_authorization: Mutex::new(Vec::new()),
        });
        let listener =
            runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind the HTTP git server");
        let address = listener.local_addr().expect("an address");
        let app = axum::Router::new().fallback(cgi).with_state(Arc::clone(&shared));
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { shared, address, _runtime: runtime }
    }

    /// `http://127.0.0.1:<port>/<name>`, with `userinfo@` when given.
    pub fn url(&self, name: &str, userinfo: Option<&str>) -> String {
        match userinfo {
            Some(userinfo) => format!("http://{userinfo}@{}/{name}", self.address),
            None => format!("http://{}/{name}", self.address),
        }
    }

    /// The plain HTTP address (for a [`TlsFront`]).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Requests served so far.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Requests that wanted objects.
    pub fn pack_requests(&self) -> usize {
        self.shared.pack_requests.load(Ordering::SeqCst)
    }

    /// Requests whose arguments asked for a `blob:` object filter
    /// (`blob:limit=<bytes>`, `blob:none`).
    pub fn filtered_requests(&self) -> usize {
        self.shared.filtered_requests.load(Ordering::SeqCst)
    }

    pub fn die_mid_pack(&self, enabled: bool) {
        self.shared.die_mid_pack.store(enabled, Ordering::SeqCst);
    }

    /// Makes each pack response send its first half, then wait for
    /// [`Self::release_held`] before the rest.
    pub fn hold_mid_pack(&self, enabled: bool) {
        self.shared.hold_mid_pack.store(enabled, Ordering::SeqCst);
    }

    /// Pack responses that reached their hold (the first half sent).
    pub fn held(&self) -> usize {
        self.shared.held.load(Ordering::SeqCst)
    }

    /// Lets every held pack response finish.
    pub fn release_held(&self) {
        self.shared.release.send_replace(true);
    }

    /// Whether any request carried basic-auth credentials.
    pub fn saw_credentials(&self) -> bool {
        !self.shared.seen_authorization.lock().unwrap().is_empty()
    }
}

async fn cgi(
    State(shared): State<Arc<HttpShared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or("").to_string();
    let authorization = header("authorization");
    if !authorization.is_empty() {
        shared.seen_authorization.lock().unwrap().push(authorization.clone());
    }
    if let Some(credentials) = &shared.credentials {
        let expected = format!("Basic {}", base64(credentials.as_bytes()));
        if authorization != expected {
            return Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .header("WWW-Authenticate", "Basic realm=\"git\"")
                .body(Body::empty())
                .unwrap();
        }
    }
    let root = shared.root.clone();
    let (path, query) = (uri.path().to_string(), uri.query().unwrap_or("").to_string());
    let (content_type, protocol) = (header("content-type"), header("git-protocol"));
    let method = method.to_string();
    // A pack is the answer to a request that wants objects (protocol v2
    // lists refs with a POST to the same path).
    let wants_objects = body.windows(5).any(|window| window == b"want ");
    if wants_objects {
        shared.pack_requests.fetch_add(1, Ordering::SeqCst);
    }
    if body.windows(12).any(|window| window == b"filter blob:") {
        shared.filtered_requests.fetch_add(1, Ordering::SeqCst);
    }
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("git")
            .arg("http-backend")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_PROJECT_ROOT", &root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("PATH_INFO", &path)
            .env("QUERY_STRING", &query)
            .env("REQUEST_METHOD", &method)
            .env("CONTENT_TYPE", &content_type)
            .env("CONTENT_LENGTH", body.len().to_string())
            .env("GIT_PROTOCOL", &protocol)
            .env("REMOTE_ADDR", "127.0.0.1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run git http-backend");
        let mut stdin = child.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&body);
        });
        let output = child.wait_with_output().expect("git http-backend output");
        let _ = writer.join();
        output.stdout
    })
    .await
    .expect("the CGI thread");
    let split = output.windows(4).position(|window| window == b"\r\n\r\n").map(|at| (at, 4));
    let split = split.or_else(|| output.windows(2).position(|window| window == b"\n\n").map(|at| (at, 2)));
    let Some((at, skip)) = split else {
        return Response::builder().status(StatusCode::BAD_GATEWAY).body(Body::empty()).unwrap();
    };
    let mut response = Response::builder();
    let mut status = StatusCode::OK;
    for line in String::from_utf8_lossy(&output[..at]).lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            status = value.split_whitespace().next().and_then(|code| code.parse().ok()).unwrap_or(StatusCode::OK);
        } else {
            response = response.header(name.trim(), value);
        }
    }
    let content = output[at + skip..].to_vec();
    let is_pack = uri.path().ends_with("/git-upload-pack") && wants_objects && content.len() > 64;
    if is_pack && shared.die_mid_pack.load(Ordering::SeqCst) {
        let half = content[..content.len() / 2].to_vec();
        let stream = futures_util::stream::iter(vec![
            Ok::<Bytes, std::io::Error>(Bytes::from(half)),
            Err(std::io::Error::other("the server died mid-pack")),
        ]);
        return response.status(status).body(Body::from_stream(stream)).unwrap();
    }
    if is_pack && shared.hold_mid_pack.load(Ordering::SeqCst) {
        let rest = Bytes::from(content[content.len() / 2..].to_vec());
        let first = futures_util::stream::iter(vec![Ok::<Bytes, std::io::Error>(Bytes::from(
            content[..content.len() / 2].to_vec(),
        ))]);
        let held = Arc::clone(&shared);
        let tail = futures_util::stream::once(async move {
            let mut released = held.release.subscribe();
            held.held.fetch_add(1, Ordering::SeqCst);
            let _ = released.wait_for(|released| *released).await;
            Ok::<Bytes, std::io::Error>(rest)
        });
        return response.status(status).body(Body::from_stream(futures_util::StreamExt::chain(first, tail))).unwrap();
    }
    response.status(status).body(Body::from(content)).unwrap()
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let value =
            chunk.iter().enumerate().fold(0u32, |acc, (index, byte)| acc | u32::from(*byte) << (16 - 8 * index));
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(ALPHABET[(value >> (18 - 6 * index) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `git daemon` on 127.0.0.1 serving every repository under a base path.
pub struct GitDaemon {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl GitDaemon {
    pub fn start(base: &Path) -> Self {
        let port = free_port();
        let log = base.with_extension("daemon.log");
        let log_file = std::fs::File::create(&log).expect("create the git daemon log");
        // `git daemon` would run `git-daemon` as a child of its own, which
        // killing `git` leaves behind, and whose CPU time it does not
        // report: the daemon itself is run instead.
        let exec_path = Command::new("git").arg("--exec-path").output().expect("run git --exec-path");
        let exec_path = PathBuf::from(String::from_utf8_lossy(&exec_path.stdout).trim());
        let mut child = Command::new(exec_path.join("git-daemon"))
            .arg("--reuseaddr")
            .arg("--export-all")
            .arg("--verbose")
            .arg("--log-destination=stderr")
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("run git daemon");
        wait_listening(port, &mut child, "git daemon");
        Self { child, port, log }
    }

    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }

    /// The CPU time of the daemon and of the `upload-pack` processes it has
    /// served so far, once every connection's process has ended (waits
    /// for that, up to a deadline).
    pub fn cpu(&self) -> std::time::Duration {
        let pid = self.child.id();
        let children = format!("/proc/{pid}/task/{pid}/children");
        let idle = crate::wait_until(READY, || {
            std::fs::read_to_string(&children).is_ok_and(|listed| listed.trim().is_empty())
        });
        assert!(idle, "git daemon still serves a connection");
        crate::process_cpu(pid, true)
    }

    /// Service requests (`upload-pack`) served so far.
    pub fn requests(&self) -> usize {
        std::fs::read_to_string(&self.log).unwrap_or_default().matches("Request upload-pack").count()
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A throw-away `sshd` on 127.0.0.1. See the module documentation.
pub struct SshServer {
    child: Child,
    port: u16,
    host_public_key: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

pub const SSHD: &str = "/usr/sbin/sshd";

impl SshServer {
    /// Starts sshd accepting the key pair it writes to
    /// `<home>/.ssh/id_ed25519` for the current user. `known_hosts` is
    /// left to the test ([`SshServer::trust`]).
    pub fn start(home: &Path) -> Self {
        assert!(
            Path::new(SSHD).is_file(),
            "{SSHD} is missing: install openssh-server (the SSH remote tests need a real sshd)"
        );
        let dir = tempfile::Builder::new().prefix("sshd").tempdir_in("/tmp").expect("a folder for sshd");
        let host_key = dir.path().join("host_ed25519");
        keygen(&host_key);
        let ssh_dir = home.join(".ssh");
        std::fs::create_dir_all(&ssh_dir).expect("create ~/.ssh");
        let client_key = ssh_dir.join("id_ed25519");
        if !client_key.is_file() {
            keygen(&client_key);
        }
        let authorized = dir.path().join("authorized_keys");
        std::fs::copy(client_key.with_extension("pub"), &authorized).expect("write authorized_keys");
        let port = free_port();
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\nPidFile none\nUsePAM no\n\
                 StrictModes no\nPermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PubkeyAuthentication yes\nLogLevel VERBOSE\nSetEnv PATH={}\nAcceptEnv GIT_PROTOCOL\n",
                host_key.display(),
                authorized.display(),
                std::env::var("PATH").unwrap_or_default(),
            ),
        )
        .expect("write sshd_config");
        std::fs::create_dir_all("/run/sshd").expect("create sshd's privilege separation folder");
        let log = dir.path().join("sshd.log");
        let log_file = std::fs::File::create(&log).expect("create the sshd log");
        let mut child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("run sshd");
        wait_listening(port, &mut child, "sshd");
        let host_public_key =
            std::fs::read_to_string(host_key.with_extension("pub")).expect("read the host key").trim().to_string();
        Self { child, port, host_public_key, log, _dir: dir }
    }

    /// `ssh://<user>@127.0.0.1:<port><path>`.
    pub fn url(&self, path: &Path) -> String {
        format!("ssh://{}@127.0.0.1:{}{}", user(), self.port, path.display())
    }

    /// Writes this server's host key to `<home>/.ssh/known_hosts`.
    pub fn trust(&self, home: &Path) {
        let line = format!("[127.0.0.1]:{} {}\n", self.port, self.host_public_key);
        std::fs::write(home.join(".ssh").join("known_hosts"), line).expect("write known_hosts");
    }

    /// Sessions that authenticated so far.
    pub fn sessions(&self) -> usize {
        std::fs::read_to_string(&self.log).unwrap_or_default().matches("Accepted publickey").count()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .expect("run ssh-keygen");
    assert!(status.success(), "ssh-keygen failed");
}

fn user() -> String {
    let output = Command::new("id").arg("-un").output().expect("run id -un");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// TLS in front of a plain server on 127.0.0.1: a throw-away CA of its
/// own signs a certificate for `127.0.0.1` and `localhost`; each accepted
/// connection is decrypted and relayed to the backend byte for byte.
pub struct TlsFront {
    address: SocketAddr,
    ca_pem: String,
    _runtime: tokio::runtime::Runtime,
}

impl TlsFront {
    pub fn start(backend: SocketAddr) -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("a CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "git-agent test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("a self-signed CA");
        let server_key = rcgen::KeyPair::generate().expect("a server key");
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("server parameters");
        params.subject_alt_names.push(rcgen::SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
        let certificate = params.signed_by(&server_key, &ca).expect("a server certificate");
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![certificate.der().clone()], key)
            .expect("the server certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("start the TLS front runtime");
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind the TLS front");
        let address = listener.local_addr().expect("an address");
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that refuses the certificate ends here.
                    let Ok(mut tls) = acceptor.accept(stream).await else { return };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self { address, ca_pem: ca.pem(), _runtime: runtime }
    }

    /// `https://127.0.0.1:<port>/<name>`, with `userinfo@` when given.
    pub fn url(&self, name: &str, userinfo: Option<&str>) -> String {
        match userinfo {
            Some(userinfo) => format!("https://{userinfo}@{}/{name}", self.address),
            None => format!("https://{}/{name}", self.address),
        }
    }

    /// The CA certificate (PEM) that signed the server's certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}

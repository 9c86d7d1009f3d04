//! HTTP clients built from the invocation's network settings: its proxy
//! variables (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, either
//! case) and CA locations (`SSL_CERT_FILE`, `SSL_CERT_DIR`). Like every
//! other variable they come from the caller, never from the daemon's own
//! process, so the shell that happened to start the daemon does not decide
//! for everyone. Clients are costly to build and hold connection pools,
//! so [`HttpClients`] keeps the few most recently used, keyed by settings
//! and kind.

use git_agent_shared::Environment;
use git_agent_shared::environment::vars;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// How many clients [`HttpClients`] keeps; the least recently used goes
/// first. A daemon serves few distinct network setups at once.
const CACHED_CLIENTS: usize = 8;

/// A proxy URL and the variable it came from (named in errors; the URL
/// itself may carry credentials and is never printed).
#[derive(Clone, PartialEq, Eq, Hash)]
struct ProxySetting {
    variable: &'static str,
    url: String,
}

/// The network settings of one invocation.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct NetworkSettings {
    http_proxy: Option<ProxySetting>,
    https_proxy: Option<ProxySetting>,
    all_proxy: Option<ProxySetting>,
    no_proxy: Option<String>,
    ca_file: Option<PathBuf>,
    ca_dir: Option<PathBuf>,
}

impl std::fmt::Debug for NetworkSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let proxy = |setting: &Option<ProxySetting>| setting.as_ref().map(|setting| setting.variable);
        f.debug_struct("NetworkSettings")
            .field("http_proxy", &proxy(&self.http_proxy))
            .field("https_proxy", &proxy(&self.https_proxy))
            .field("all_proxy", &proxy(&self.all_proxy))
            .field("no_proxy", &self.no_proxy)
            .field("ca_file", &self.ca_file)
            .field("ca_dir", &self.ca_dir)
            .finish()
    }
}

impl NetworkSettings {
    /// The settings `env` asks for; the lower-case name wins where both
    /// are set, as curl and most tools read them.
    pub fn from_env(env: &Environment) -> Self {
        let proxy = |lower: &'static str, upper: &'static str| {
            [lower, upper].into_iter().find_map(|variable| {
                env.get(variable).map(|url| ProxySetting { variable, url: url.trim().to_string() })
            })
        };
        Self {
            http_proxy: proxy(vars::HTTP_PROXY_LOWER, vars::HTTP_PROXY),
            https_proxy: proxy(vars::HTTPS_PROXY_LOWER, vars::HTTPS_PROXY),
            all_proxy: proxy(vars::ALL_PROXY_LOWER, vars::ALL_PROXY),
            no_proxy: env.get(vars::NO_PROXY_LOWER).or_else(|| env.get(vars::NO_PROXY)).map(str::to_string),
            ca_file: env.absolute_dir(vars::SSL_CERT_FILE),
            ca_dir: env.absolute_dir(vars::SSL_CERT_DIR),
        }
    }
}

/// What a client is for, which decides its timeouts and transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKind {
    /// Responses requests over HTTP/1.1 or negotiated HTTP/2.
    Responses,
    /// Responses requests speaking HTTP/2 without upgrade (h2c), for
    /// local servers that only speak that.
    ResponsesHttp2PriorKnowledge,
    /// `/v1/embeddings` requests of search.
    Embeddings,
}

#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error("{variable} is not a usable proxy URL: {reason}\nhint: set {variable} to http://host:port, or unset it")]
    InvalidProxy { variable: &'static str, reason: String },
    #[error("cannot read the CA certificates at {} ({variable}): {source}\nhint: point {variable} at a readable PEM file or folder, or unset it", path.display())]
    UnreadableCa { variable: &'static str, path: PathBuf, source: std::io::Error },
    #[error("{} ({variable}) holds no usable PEM certificate{}\nhint: point {variable} at PEM CA certificates, or unset it", path.display(), reason.as_deref().map(|reason| format!(": {reason}")).unwrap_or_default())]
    InvalidCa { variable: &'static str, path: PathBuf, reason: Option<String> },
    /// reqwest's error without its URL (or a sanitized gix text). Its
    /// message is shown as it is (`{0}`), which ends the rendered chain
    /// there: reqwest's own causes are not shown.
    #[error("cannot build the HTTP client: {0}")]
    Build(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// NetworkError is also flattened inside gix's transport errors, whose
    /// rendering walks every cause: the cause is written out here.
    #[error("cannot build the HTTP client: the HTTP client builder stopped unexpectedly: {0}")]
    BuilderStopped(#[source] tokio::task::JoinError),
    #[error("the HTTP client cache is poisoned")]
    Poisoned,
}

/// HTTP clients shared by every request of the daemon: the few most
/// recently used (network settings, kind) pairs, built on first use.
#[derive(Debug, Default)]
pub struct HttpClients {
    /// Least recently used first.
    clients: Mutex<VecDeque<((NetworkSettings, ClientKind), reqwest::Client)>>,
}

impl HttpClients {
    /// The client for `network` and `kind`; one that is not cached yet is
    /// built on the blocking pool, since building reads certificate files.
    pub async fn client(&self, network: &NetworkSettings, kind: ClientKind) -> Result<reqwest::Client, NetworkError> {
        if let Some(client) = self.cached(network, kind)? {
            return Ok(client);
        }
        let settings = network.clone();
        let client = tokio::task::spawn_blocking(move || build_client(&settings, kind))
            .await
            .map_err(NetworkError::BuilderStopped)??;
        self.insert(network, kind, client.clone())?;
        Ok(client)
    }

    /// Like [`Self::client`], for callers already on a blocking thread.
    pub fn get(&self, network: &NetworkSettings, kind: ClientKind) -> Result<reqwest::Client, NetworkError> {
        if let Some(client) = self.cached(network, kind)? {
            return Ok(client);
        }
        let client = build_client(network, kind)?;
        self.insert(network, kind, client.clone())?;
        Ok(client)
    }

    /// The cached client, now the most recently used.
    fn cached(&self, network: &NetworkSettings, kind: ClientKind) -> Result<Option<reqwest::Client>, NetworkError> {
        let mut clients = self.clients.lock().map_err(|_| NetworkError::Poisoned)?;
        let Some(index) = clients.iter().position(|((settings, k), _)| *k == kind && settings == network) else {
            return Ok(None);
        };
        let entry = clients.remove(index).ok_or(NetworkError::Poisoned)?;
        let client = entry.1.clone();
        clients.push_back(entry);
        Ok(Some(client))
    }

    /// Caches `client` as the most recently used, evicting the least
    /// recently used beyond the bound; a client another caller cached
    /// meanwhile for the same key is replaced.
    fn insert(&self, network: &NetworkSettings, kind: ClientKind, client: reqwest::Client) -> Result<(), NetworkError> {
        let mut clients = self.clients.lock().map_err(|_| NetworkError::Poisoned)?;
        clients.retain(|((settings, k), _)| !(*k == kind && settings == network));
        if clients.len() >= CACHED_CLIENTS {
            clients.pop_front();
        }
        clients.push_back(((network.clone(), kind), client));
        Ok(())
    }

    /// How many clients are cached.
    pub fn len(&self) -> usize {
        self.clients.lock().map(|clients| clients.len()).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What [`NetworkSettings`] make of a client, for either of the two
/// client builders of the one reqwest the daemon links: the proxies (with
/// `NO_PROXY` applied to each) and, when the caller names CA locations,
/// the roots that replace the system's (as OpenSSL does).
struct ClientNetwork {
    proxies: Vec<reqwest::Proxy>,
    roots: Option<Vec<reqwest::Certificate>>,
}

impl ClientNetwork {
    fn of(network: &NetworkSettings) -> Result<Self, NetworkError> {
        install_tls_provider();
        let no_proxy = network.no_proxy.as_deref().and_then(reqwest::NoProxy::from_string);
        let settings = [
            (&network.http_proxy, Scope::Http),
            (&network.https_proxy, Scope::Https),
            (&network.all_proxy, Scope::All),
        ];
        let mut proxies = Vec::new();
        for (setting, scope) in settings {
            let Some(setting) = setting else { continue };
            let url = proxy_url(setting)?;
            let proxy = match scope {
                Scope::Http => reqwest::Proxy::http(url.as_str()),
                Scope::Https => reqwest::Proxy::https(url.as_str()),
                Scope::All => reqwest::Proxy::all(url.as_str()),
            };
            let proxy = proxy.map_err(|error| NetworkError::InvalidProxy {
                variable: setting.variable,
                reason: error.without_url().to_string(),
            })?;
            proxies.push(proxy.no_proxy(no_proxy.clone()));
        }
        let roots = (network.ca_file.is_some() || network.ca_dir.is_some())
            .then(|| caller_certificates(network, reqwest::Certificate::from_pem_bundle))
            .transpose()?;
        Ok(Self { proxies, roots })
    }
}

/// Applies a [`ClientNetwork`] to a builder of either client: reqwest's own
/// reading of the process environment is switched off, so exactly the
/// invocation's proxies and CAs are used.
macro_rules! with_network {
    ($builder:expr, $network:expr) => {{
        let ClientNetwork { proxies, roots } = $network;
        let mut builder = $builder.no_proxy();
        for proxy in proxies {
            builder = builder.proxy(proxy);
        }
        match roots {
            Some(roots) => builder.tls_certs_only(roots),
            None => builder,
        }
    }};
}

/// A client of `kind` that uses exactly the proxies and CAs of `network`.
pub fn build_client(network: &NetworkSettings, kind: ClientKind) -> Result<reqwest::Client, NetworkError> {
    let mut builder = with_network!(reqwest::Client::builder(), ClientNetwork::of(network)?);
    builder = match kind {
        ClientKind::Responses => builder.connect_timeout(Duration::from_secs(5)),
        ClientKind::ResponsesHttp2PriorKnowledge => {
            builder.connect_timeout(Duration::from_secs(5)).http2_prior_knowledge()
        }
        ClientKind::Embeddings => {
            builder.connect_timeout(Duration::from_secs(30)).pool_idle_timeout(Duration::from_secs(60))
        }
    };
    builder.build().map_err(|error| NetworkError::Build(Box::new(error.without_url())))
}

/// Configures gix's HTTP client (the blocking client of the same reqwest,
/// the `--remote` and index sync transport) exactly as [`build_client`]
/// configures ours: the proxies and CAs of `network`, the invocation's,
/// never those of the daemon's own environment.
pub fn configure_git_client(
    network: &NetworkSettings,
    builder: reqwest::blocking::ClientBuilder,
) -> Result<reqwest::blocking::ClientBuilder, NetworkError> {
    Ok(with_network!(builder, ClientNetwork::of(network)?))
}

/// Every client is rustls with the ring provider (reqwest is built without
/// a bundled one), installed process-wide before the first client is built.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Which requests a proxy variable covers.
#[derive(Clone, Copy)]
enum Scope {
    Http,
    Https,
    All,
}

/// The proxy URL of `setting`, with `http://` assumed when it names no
/// scheme (as curl does); only HTTP proxies are supported.
fn proxy_url(setting: &ProxySetting) -> Result<reqwest::Url, NetworkError> {
    let text = if setting.url.contains("://") { setting.url.clone() } else { format!("http://{}", setting.url) };
    let invalid = |reason: String| NetworkError::InvalidProxy { variable: setting.variable, reason };
    let url = reqwest::Url::parse(&text).map_err(|error| invalid(error.to_string()))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(invalid(format!("the {other} scheme is not supported, only http and https proxies are"))),
    }
}

/// The certificates of `SSL_CERT_FILE` and every PEM file of `SSL_CERT_DIR`,
/// parsed by `parse` (the certificate type of the client they are for).
fn caller_certificates<C, E: std::fmt::Display>(
    network: &NetworkSettings,
    parse: impl Fn(&[u8]) -> Result<Vec<C>, E>,
) -> Result<Vec<C>, NetworkError> {
    let mut certificates = Vec::new();
    if let Some(path) = &network.ca_file {
        let variable = vars::SSL_CERT_FILE;
        let bytes = std::fs::read(path).map_err(|source| NetworkError::UnreadableCa {
            variable,
            path: path.clone(),
            source,
        })?;
        let found = parse(&bytes).map_err(|error| NetworkError::InvalidCa {
            variable,
            path: path.clone(),
            reason: Some(error.to_string()),
        })?;
        if found.is_empty() {
            return Err(NetworkError::InvalidCa { variable, path: path.clone(), reason: None });
        }
        certificates.extend(found);
    }
    if let Some(dir) = &network.ca_dir {
        let variable = vars::SSL_CERT_DIR;
        let unreadable = |source| NetworkError::UnreadableCa { variable, path: dir.clone(), source };
        let before = certificates.len();
        for entry in std::fs::read_dir(dir).map_err(unreadable)? {
            let path = entry.map_err(unreadable)?.path();
            // Hash links, CRLs and other files that are not PEM
            // certificates are skipped, as OpenSSL does.
            let Ok(bytes) = std::fs::read(&path) else { continue };
            certificates.extend(parse(&bytes).unwrap_or_default());
        }
        if certificates.len() == before {
            return Err(NetworkError::InvalidCa { variable, path: dir.clone(), reason: None });
        }
    }
    Ok(certificates)
}

/// The invocation's proxies and CA locations as `git push` (curl) reads
/// them, so a push takes the same route and trusts the same CAs as the
/// fetch before it: the proxy variables in curl's lower-case spelling
/// (curl ignores an upper-case `HTTP_PROXY`), `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` as `GIT_SSL_CAINFO` and `GIT_SSL_CAPATH`.
pub fn git_network_env(env: &Environment) -> Vec<(String, String)> {
    use git_agent_shared::environment::vars;
    let mut out = Vec::new();
    let families = [
        (vars::HTTP_PROXY_LOWER, vars::HTTP_PROXY),
        (vars::HTTPS_PROXY_LOWER, vars::HTTPS_PROXY),
        (vars::ALL_PROXY_LOWER, vars::ALL_PROXY),
        (vars::NO_PROXY_LOWER, vars::NO_PROXY),
    ];
    for (lower, upper) in families {
        if let Some(value) = env.get(lower).or_else(|| env.get(upper)) {
            out.push((lower.to_string(), value.trim().to_string()));
        }
    }
    for (variable, git_name) in [(vars::SSL_CERT_FILE, "GIT_SSL_CAINFO"), (vars::SSL_CERT_DIR, "GIT_SSL_CAPATH")] {
        if let Some(path) = env.absolute_dir(variable) {
            out.push((git_name.to_string(), path.display().to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::new(
            pairs.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect::<BTreeMap<_, _>>(),
        )
    }

    #[test]
    fn settings_come_from_the_invocation_with_lower_case_first() {
        let settings = NetworkSettings::from_env(&env(&[
            ("HTTP_PROXY", "http://upper:1"),
            ("http_proxy", "http://lower:2"),
            ("HTTPS_PROXY", "http://secure:3"),
            ("NO_PROXY", "localhost"),
            ("SSL_CERT_FILE", "/etc/ca.pem"),
            ("SSL_CERT_DIR", "relative/is/ignored"),
        ]));
        assert_eq!(
            settings.http_proxy.as_ref().map(|p| (p.variable, p.url.as_str())),
            Some(("http_proxy", "http://lower:2"))
        );
        assert_eq!(settings.https_proxy.as_ref().map(|p| p.variable), Some("HTTPS_PROXY"));
        assert!(settings.all_proxy.is_none());
        assert_eq!(settings.no_proxy.as_deref(), Some("localhost"));
        assert_eq!(settings.ca_file, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(settings.ca_dir, None);
        assert!(NetworkSettings::from_env(&env(&[])) == NetworkSettings::default());
    }

    #[test]
    fn proxy_credentials_never_print() {
        let settings = NetworkSettings::from_env(&env(&[("HTTPS_PROXY", "http://user:hunter2@proxy:8080")]));
        assert!(!format!("{settings:?}").contains("hunter2"));
        let bad = NetworkSettings::from_env(&env(&[("ALL_PROXY", "socks5://user:hunter2@proxy:1080")]));
        let error = build_client(&bad, ClientKind::Responses).unwrap_err().to_string();
        assert!(error.contains("ALL_PROXY") && error.contains("socks5") && error.contains("hint:"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }

    #[test]
    fn unusable_ca_locations_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let settings = NetworkSettings::from_env(&env(&[("SSL_CERT_FILE", missing.to_str().unwrap())]));
        let error = build_client(&settings, ClientKind::Responses).unwrap_err();
        assert!(matches!(error, NetworkError::UnreadableCa { variable: "SSL_CERT_FILE", .. }), "{error}");
        std::fs::write(dir.path().join("not-a-cert.txt"), "hello").unwrap();
        let settings = NetworkSettings::from_env(&env(&[("SSL_CERT_DIR", dir.path().to_str().unwrap())]));
        let error = build_client(&settings, ClientKind::Embeddings).unwrap_err();
        assert!(matches!(error, NetworkError::InvalidCa { variable: "SSL_CERT_DIR", .. }), "{error}");
    }

    #[tokio::test]
    async fn a_failed_client_construction_is_tried_again_on_the_next_call() {
        let dir = tempfile::tempdir().unwrap();
        let certs = dir.path().join("certs");
        let settings = NetworkSettings::from_env(&env(&[("SSL_CERT_DIR", certs.to_str().unwrap())]));
        let clients = HttpClients::default();
        assert!(clients.client(&settings, ClientKind::Embeddings).await.is_err());
        assert!(clients.is_empty(), "a failure is not cached");
        // The folder appears with a certificate: the same settings now
        // build a client.
        std::fs::create_dir(&certs).unwrap();
        std::fs::write(certs.join("test-ca.pem"), include_str!("testdata/test-ca.pem")).unwrap();
        let retried = clients.client(&settings, ClientKind::Embeddings).await;
        assert!(retried.is_ok(), "{retried:?}");
        assert_eq!(clients.len(), 1);
    }

    #[tokio::test]
    async fn clients_are_built_off_the_runtime_once_per_key() {
        let clients = HttpClients::default();
        let proxied = NetworkSettings::from_env(&env(&[("HTTPS_PROXY", "127.0.0.1:9")]));
        clients.client(&proxied, ClientKind::Embeddings).await.unwrap();
        clients.client(&proxied, ClientKind::Embeddings).await.unwrap();
        assert_eq!(clients.len(), 1, "the second call reused the cached client");
        clients.client(&NetworkSettings::default(), ClientKind::Embeddings).await.unwrap();
        assert_eq!(clients.len(), 2, "other settings get a client of their own");
    }

    #[test]
    fn the_client_cache_keeps_the_most_recently_used_few() {
        let clients = HttpClients::default();
        let proxied = |port: u16| NetworkSettings::from_env(&env(&[("HTTP_PROXY", &format!("127.0.0.1:{port}"))]));
        clients.get(&NetworkSettings::default(), ClientKind::Responses).unwrap();
        for port in 1..=CACHED_CLIENTS as u16 {
            clients.get(&proxied(port), ClientKind::Responses).unwrap();
            // Touching the first keeps it from being the one evicted.
            clients.get(&NetworkSettings::default(), ClientKind::Responses).unwrap();
        }
        assert_eq!(clients.len(), CACHED_CLIENTS);
        let cached = clients.clients.lock().unwrap();
        assert!(cached.iter().any(|((settings, _), _)| *settings == NetworkSettings::default()));
        assert!(!cached.iter().any(|((settings, _), _)| *settings == proxied(1)), "the least recently used left");
        drop(cached);
        clients.get(&NetworkSettings::default(), ClientKind::Embeddings).unwrap();
        assert_eq!(clients.len(), CACHED_CLIENTS, "kinds are keys too, within the same bound");
    }

    #[test]
    fn a_client_build_failure_keeps_reqwest_error_and_reads_as_before() {
        use git_agent_shared::error_chain;
        use std::error::Error as _;
        let reqwest_error = reqwest::Proxy::all("http://[::1").unwrap_err().without_url();
        assert!(reqwest_error.source().is_some(), "reqwest keeps the reason below its message");
        let before = format!("cannot build the HTTP client: {reqwest_error}");
        assert_eq!(before, "cannot build the HTTP client: builder error");
        let error = NetworkError::Build(Box::new(reqwest_error));
        assert!(error.source().is_some_and(|cause| cause.downcast_ref::<reqwest::Error>().is_some()));
        assert_eq!(error_chain::render(&error), before, "reqwest's causes stay unshown");
    }

    /// The provider's transport failures render reqwest's chain with the
    /// one renderer; its text is what the provider's own walker wrote.
    #[tokio::test]
    async fn a_refused_connection_reads_as_before() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/responses", closed.local_addr().unwrap());
        drop(closed);
        // Whichever test of this process runs first, the client needs
        // the TLS provider installed (as every client of the daemon has).
        install_tls_provider();
        let error = reqwest::Client::new().get(&url).send().await.unwrap_err().without_url();
        assert_eq!(
            git_agent_shared::error_chain::render(&error),
            "error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)"
        );
    }
}

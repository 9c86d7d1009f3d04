//! The caller's environment as the client captured it. The daemon resolves
//! every path, credential and default from this value, never from its own
//! process environment, so a command behaves as if the caller ran it.

use crate::secret::{REDACTED, is_credential_name, redact_credentials};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Names of the environment variables the product reads, declared once.
pub mod vars {
    pub const HOME: &str = "HOME";
    pub const PATH: &str = "PATH";
    pub const PWD: &str = "PWD";
    pub const XDG_RUNTIME_DIR: &str = "XDG_RUNTIME_DIR";
    pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
    pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
    /// Where downloaded local embedding models are kept
    /// (`${XDG_CACHE_HOME:-~/.cache}/git-agent/models`).
    pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
    /// Where `search --agent` creates its private progress socket folder
    /// (default `/tmp`).
    pub const TMPDIR: &str = "TMPDIR";
    pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
    pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
    pub const OPENAI_MODEL: &str = "OPENAI_MODEL";
    pub const OPENAI_EMBEDDING_API_KEY: &str = "OPENAI_EMBEDDING_API_KEY";
    pub const OPENAI_EMBEDDING_BASE_URL: &str = "OPENAI_EMBEDDING_BASE_URL";
    pub const OPENAI_EMBEDDING_MODEL: &str = "OPENAI_EMBEDDING_MODEL";
    pub const OPENAI_EMBEDDING_DIMENSIONS: &str = "OPENAI_EMBEDDING_DIMENSIONS";
    pub const OPENAI_EMBEDDING_MAX_INPUT_CHARS: &str = "OPENAI_EMBEDDING_MAX_INPUT_CHARS";
    pub const OPENAI_EMBEDDING_BATCH_INPUTS: &str = "OPENAI_EMBEDDING_BATCH_INPUTS";
    pub const OPENAI_EMBEDDING_BATCH_MAX_CHARS: &str = "OPENAI_EMBEDDING_BATCH_MAX_CHARS";
    pub const OPENAI_EMBEDDING_CONCURRENCY: &str = "OPENAI_EMBEDDING_CONCURRENCY";
    /// Search ranking settings (see gitagentd's search::settings::ranking):
    /// `on`/`off` for framing the query as an implementation-location
    /// search before embedding it, the lexical weight of the hybrid score,
    /// and `raw`/`normalized` for the per-query cosine scaling.
    pub const GIT_AGENT_SEARCH_QUERY_FRAMING: &str = "GIT_AGENT_SEARCH_QUERY_FRAMING";
    pub const GIT_AGENT_SEARCH_LEXICAL_WEIGHT: &str = "GIT_AGENT_SEARCH_LEXICAL_WEIGHT";
    pub const GIT_AGENT_SEARCH_COSINE: &str = "GIT_AGENT_SEARCH_COSINE";
    /// `local` or `remote`: which embeddings search uses, over the
    /// `search.embeddings` configuration key.
    pub const GIT_AGENT_EMBEDDINGS: &str = "GIT_AGENT_EMBEDDINGS";
    /// A folder holding the local model's files (Hugging Face layout), over
    /// the `search.model_dir` configuration key: no download.
    pub const GIT_AGENT_MODEL_DIR: &str = "GIT_AGENT_MODEL_DIR";
    /// A mirror of the Hugging Face hub (same URL layout) the local model
    /// is downloaded from instead of `https://huggingface.co`.
    pub const GIT_AGENT_MODEL_HUB: &str = "GIT_AGENT_MODEL_HUB";
    /// Proxies for the provider and embeddings requests, read from the
    /// invocation in either case (the lower-case name wins).
    pub const HTTP_PROXY: &str = "HTTP_PROXY";
    pub const HTTP_PROXY_LOWER: &str = "http_proxy";
    pub const HTTPS_PROXY: &str = "HTTPS_PROXY";
    pub const HTTPS_PROXY_LOWER: &str = "https_proxy";
    pub const ALL_PROXY: &str = "ALL_PROXY";
    pub const ALL_PROXY_LOWER: &str = "all_proxy";
    pub const NO_PROXY: &str = "NO_PROXY";
    pub const NO_PROXY_LOWER: &str = "no_proxy";
    /// CA certificates that replace the system's for those requests.
    pub const SSL_CERT_FILE: &str = "SSL_CERT_FILE";
    pub const SSL_CERT_DIR: &str = "SSL_CERT_DIR";
    /// Overrides the idle period after which an auto-started daemon exits:
    /// seconds or a Go-style duration (gitagentd `args::parse_idle_timeout`).
    pub const GITAGENTD_IDLE_SECS: &str = "GITAGENTD_IDLE_SECS";
    /// Test-only fault injection, read from the daemon's own environment:
    /// `<step>` makes the daemon kill itself with SIGKILL at that step of
    /// the next search index publication (`invalidate`, `payload`,
    /// `catalog`, `records`), so tests can prove an interrupted write never
    /// leaves a readable snapshot. Unset in normal use.
    pub const GITAGENTD_SEARCH_CRASH_AT: &str = "GITAGENTD_SEARCH_CRASH_AT";
    /// The index file git reads instead of `.git/index`; git names its
    /// temporary index to hooks in it (`git commit -a`, `git commit <paths>`).
    pub const GIT_INDEX_FILE: &str = "GIT_INDEX_FILE";
    pub const USER: &str = "USER";
    pub const LOGNAME: &str = "LOGNAME";
    pub const LANG: &str = "LANG";
    pub const TZ: &str = "TZ";
    /// The Go toolchain's own folders and target, as the caller set them.
    pub const GOPATH: &str = "GOPATH";
    pub const GOROOT: &str = "GOROOT";
    pub const GOCACHE: &str = "GOCACHE";
    pub const GOMODCACHE: &str = "GOMODCACHE";
    pub const GOOS: &str = "GOOS";
    pub const GOARCH: &str = "GOARCH";
    pub const CGO_ENABLED: &str = "CGO_ENABLED";
    /// Pinned for every Go helper (see `gitagentd::subprocess`), never
    /// taken from the caller.
    pub const GOENV: &str = "GOENV";
    pub const GOFLAGS: &str = "GOFLAGS";
    pub const GOTOOLCHAIN: &str = "GOTOOLCHAIN";
    pub const GOPROXY: &str = "GOPROXY";
    /// Where `golangci-lint` keeps its cache; a private temporary folder.
    pub const GOLANGCI_LINT_CACHE: &str = "GOLANGCI_LINT_CACHE";
    /// The Rust toolchain's folders and selection.
    pub const CARGO_HOME: &str = "CARGO_HOME";
    pub const RUSTUP_HOME: &str = "RUSTUP_HOME";
    pub const RUSTUP_TOOLCHAIN: &str = "RUSTUP_TOOLCHAIN";
}

/// Exact names the client forwards besides the prefixed families below.
const FORWARDED_NAMES: &[&str] = &[
    "HOME",
    "PATH",
    "PWD",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "LANG",
    "TZ",
    "TMPDIR",
    "EDITOR",
    "VISUAL",
    "SSH_AUTH_SOCK",
    "GNUPGHOME",
    "GPG_TTY",
    // Language toolchains, for the helper programs the daemon runs.
    vars::GOPATH,
    vars::GOROOT,
    vars::GOCACHE,
    vars::GOMODCACHE,
    vars::GOOS,
    vars::GOARCH,
    vars::CGO_ENABLED,
    vars::CARGO_HOME,
    vars::RUSTUP_HOME,
    vars::RUSTUP_TOOLCHAIN,
    vars::HTTP_PROXY,
    vars::HTTP_PROXY_LOWER,
    vars::HTTPS_PROXY,
    vars::HTTPS_PROXY_LOWER,
    vars::ALL_PROXY,
    vars::ALL_PROXY_LOWER,
    vars::NO_PROXY,
    vars::NO_PROXY_LOWER,
    vars::SSL_CERT_FILE,
    vars::SSL_CERT_DIR,
];

/// Prefixes of variable families the client forwards: XDG base
/// directories, provider settings, Git's own variables and locales.
const FORWARDED_PREFIXES: &[&str] = &["XDG_", "OPENAI_", "GIT_", "LC_", "CODEX_", "CONTEXT7_"];

/// Whether the client forwards the variable `name` to the daemon.
pub fn is_forwarded(name: &str) -> bool {
    FORWARDED_NAMES.contains(&name) || FORWARDED_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// A snapshot of the caller's environment variables. It holds the
/// caller's credentials, so its `Debug` form shows every name but redacts
/// the value of credential variables (and user information in URLs).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = self.vars.iter().map(|(name, value)| {
            let value = if is_credential_name(name) { REDACTED.to_string() } else { redact_credentials(value) };
            (name, value)
        });
        f.debug_struct("Environment").field("vars", &shown.collect::<BTreeMap<_, _>>()).finish()
    }
}

impl Environment {
    pub fn new(vars: BTreeMap<String, String>) -> Self {
        Self { vars }
    }

    /// The forwarded subset of an iterator of variables, such as
    /// `std::env::vars_os()` in the client.
    pub fn capture(all: impl IntoIterator<Item = (String, String)>) -> Self {
        Self::new(all.into_iter().filter(|(name, _)| is_forwarded(name)).collect())
    }

    /// The value of `name` when it is set and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|value| !value.trim().is_empty())
    }

    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    pub fn into_vars(self) -> BTreeMap<String, String> {
        self.vars
    }

    /// The caller's home directory.
    pub fn home(&self) -> Result<PathBuf, MissingHome> {
        self.get(vars::HOME).map(PathBuf::from).ok_or(MissingHome)
    }

    /// An absolute directory from `name`, ignoring relative values as the
    /// XDG base directory specification asks.
    pub fn absolute_dir(&self, name: &str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from).filter(|path| path.is_absolute())
    }
}

/// HOME was not set for the invocation.
#[derive(Debug, thiserror::Error)]
#[error("HOME is not set; git-agent keeps its state under the home directory")]
pub struct MissingHome;

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::new(pairs.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect())
    }

    #[test]
    fn debug_redacts_every_credential() {
        let env = env(&[
            ("OPENAI_API_KEY", "sk-live-abcdef123456"),
            ("OPENAI_EMBEDDING_API_KEY", "embed-secret-value"),
            ("CODEX_ACCESS", "codex-secret-value"),
            ("GITHUB_TOKEN", "ghp_secretvalue"),
            ("OPENAI_BASE_URL", "https://user:pass-secret@proxy.test/v1"),
            ("HOME", "/home/me"),
        ]);
        let shown = format!("{env:?}");
        for secret in ["sk-live", "embed-secret", "codex-secret", "ghp_secret", "pass-secret"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        assert!(shown.contains("OPENAI_API_KEY") && shown.contains("/home/me"), "{shown}");
        assert!(shown.contains("https://proxy.test/v1"), "{shown}");
    }

    #[test]
    fn toolchain_variables_are_forwarded() {
        for name in ["GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"] {
            assert!(is_forwarded(name), "{name}");
        }
        assert!(!is_forwarded("AWS_SECRET_ACCESS_KEY"));
    }
}

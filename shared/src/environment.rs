//! The caller's environment as the client captured it. The daemon resolves
//! every path, credential and default from this value, never from its own
//! process environment, so a command behaves as if the caller ran it.

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
    /// Overrides the idle period, in seconds, after which an auto-started
    /// daemon exits.
    pub const GITAGENTD_IDLE_SECS: &str = "GITAGENTD_IDLE_SECS";
    /// Test-only fault injection, read from the daemon's own environment:
    /// `<step>` makes the daemon kill itself with SIGKILL at that step of
    /// the next search index publication (`invalidate`, `payload`,
    /// `catalog`, `records`), so tests can prove an interrupted write never
    /// leaves a readable snapshot. Unset in normal use.
    pub const GITAGENTD_SEARCH_CRASH_AT: &str = "GITAGENTD_SEARCH_CRASH_AT";
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

/// A snapshot of the caller's environment variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
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

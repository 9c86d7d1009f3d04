//! Provider configuration resolved from the caller's flags and environment,
//! in the spec's order: an explicit flag, then ChatGPT auth from
//! `~/.codex/auth.json`, then `OPENAI_API_KEY` (with `OPENAI_BASE_URL`),
//! then built-in defaults. It reads the invocation's environment only and
//! never the daemon's, and keeps credentials in [`Secret`], which never
//! prints its value.

use super::network::{ClientKind, NetworkSettings};
use git_agent_shared::Environment;
use git_agent_shared::environment::vars;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// The model used when neither `--model` nor `OPENAI_MODEL` names one.
pub const DEFAULT_MODEL: &str = "gpt-5.6-luna";
/// The OpenAI API, for API-key auth without `OPENAI_BASE_URL`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The ChatGPT Codex backend, for ChatGPT auth without `--base-url`.
pub const CHATGPT_BASE_URL: &str = "https://chatgpt.com/backend-api/codex";
/// The command time limit when `--timeout` is absent.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Credentials live in the one secret type both crates share.
pub use git_agent_shared::Secret;

/// How requests authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// ChatGPT sign-in from `~/.codex/auth.json`.
    ChatGpt { access_token: Secret, account_id: String },
    /// An OpenAI-compatible API key (`OPENAI_API_KEY`).
    ApiKey(Secret),
}

/// Everything the adapter needs to reach a Responses endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    pub base_url: String,
    /// The model identifier sent on the wire (already canonicalized).
    pub model: String,
    pub credentials: Credentials,
    /// Per-request time limit.
    pub timeout: Duration,
    /// Speak HTTP/2 without upgrade over cleartext (`http://`) endpoints;
    /// for local servers that only speak h2c. Never set from user input.
    pub http2_prior_knowledge: bool,
    /// The bounds of one response stream.
    pub stream_limits: StreamLimits,
    /// The caller's proxies and CA locations.
    pub network: NetworkSettings,
}

impl ProviderConfig {
    /// The kind of HTTP client requests to this endpoint need.
    pub fn client_kind(&self) -> ClientKind {
        if self.http2_prior_knowledge { ClientKind::ResponsesHttp2PriorKnowledge } else { ClientKind::Responses }
    }
}

/// The bounds of one response stream, so that an endpoint that stalls or
/// never stops talking cannot pin a task (an inspection without
/// `--timeout` waits up to a day) or grow the daemon without bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The most bytes one event-stream line may hold.
    pub max_line_bytes: usize,
    /// The most bytes one event's data may hold; `response.completed`
    /// repeats the whole output, so this is sized for the largest answer.
    pub max_event_bytes: usize,
    /// The most bytes one response body may hold.
    pub max_response_bytes: usize,
    /// The longest silence allowed while waiting for the response
    /// headers and between two chunks of the body.
    pub read_idle: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: 16 << 20,
            max_event_bytes: 16 << 20,
            max_response_bytes: 64 << 20,
            read_idle: Duration::from_secs(300),
        }
    }
}

/// The flag values that take part in resolution.
#[derive(Debug, Clone, Default)]
pub struct ProviderFlags {
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub timeout: Option<Duration>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no provider credentials: {auth_path} does not exist and OPENAI_API_KEY is not set\n\
         hint: sign in with the Codex CLI (ChatGPT auth) or export OPENAI_API_KEY"
    )]
    MissingCredentials { auth_path: PathBuf },
    #[error("cannot read {path}\nhint: fix its permissions or move it away to use OPENAI_API_KEY")]
    UnreadableAuthFile { path: PathBuf, source: std::io::Error },
    #[error("{path} is not valid JSON\nhint: sign in again with the Codex CLI")]
    MalformedAuthFile { path: PathBuf, source: serde_json::Error },
    #[error("{path} has auth_mode \"chatgpt\" but no tokens.{field}\nhint: sign in again with the Codex CLI")]
    IncompleteChatGptAuth { path: PathBuf, field: &'static str },
    #[error("HOME is not set, so ~/.codex/auth.json cannot be found")]
    MissingHome,
    #[error("the base URL {url:?} is not an http(s) URL\nhint: pass --base-url https://host/v1")]
    InvalidBaseUrl { url: String },
}

#[derive(Deserialize)]
struct CodexAuthFile {
    #[serde(default)]
    auth_mode: Option<String>,
    #[serde(default)]
    tokens: Option<CodexTokens>,
}

#[derive(Deserialize)]
struct CodexTokens {
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    account_id: Option<String>,
}

/// Resolves the provider configuration for a message-generation command.
pub fn resolve(env: &Environment, flags: &ProviderFlags) -> Result<ProviderConfig, ConfigError> {
    let home = env.home().map_err(|_| ConfigError::MissingHome)?;
    let auth_path = home.join(".codex").join("auth.json");
    let (credentials, default_base) = match read_chatgpt_auth(&auth_path)? {
        Some(credentials) => (credentials, CHATGPT_BASE_URL.to_string()),
        None => match env.get(vars::OPENAI_API_KEY) {
            Some(key) => (
                Credentials::ApiKey(Secret::new(key.trim())),
                env.get(vars::OPENAI_BASE_URL).unwrap_or(OPENAI_BASE_URL).to_string(),
            ),
            None => return Err(ConfigError::MissingCredentials { auth_path }),
        },
    };
    let base_url = flags.base_url.clone().unwrap_or(default_base).trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ConfigError::InvalidBaseUrl { url: base_url });
    }
    let requested = flags.model.clone().or_else(|| env.get(vars::OPENAI_MODEL).map(str::to_string));
    let requested = requested.as_deref().map(str::trim).unwrap_or(DEFAULT_MODEL).to_string();
    let model = match credentials {
        Credentials::ChatGpt { .. } => canonical_chatgpt_model(&requested),
        Credentials::ApiKey(_) => requested,
    };
    Ok(ProviderConfig {
        base_url,
        model,
        credentials,
        timeout: flags.timeout.unwrap_or(DEFAULT_TIMEOUT),
        http2_prior_knowledge: false,
        stream_limits: StreamLimits::default(),
        network: NetworkSettings::from_env(env),
    })
}

/// The ChatGPT Codex endpoint accepts only the canonical identifier of
/// the public `gpt-5.6` alias.
fn canonical_chatgpt_model(model: &str) -> String {
    if model == "gpt-5.6" { "gpt-5.6-sol".to_string() } else { model.to_string() }
}

fn read_chatgpt_auth(path: &std::path::Path) -> Result<Option<Credentials>, ConfigError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ConfigError::UnreadableAuthFile { path: path.to_path_buf(), source }),
    };
    let file: CodexAuthFile = serde_json::from_slice(&bytes)
        .map_err(|source| ConfigError::MalformedAuthFile { path: path.to_path_buf(), source })?;
    if file.auth_mode.as_deref() != Some("chatgpt") {
        return Ok(None);
    }
    let tokens = file.tokens.unwrap_or(CodexTokens { access_token: None, account_id: None });
    let incomplete = |field| ConfigError::IncompleteChatGptAuth { path: path.to_path_buf(), field };
    let access_token =
        tokens.access_token.filter(|t| !t.trim().is_empty()).ok_or_else(|| incomplete("access_token"))?;
    let account_id = tokens.account_id.filter(|a| !a.trim().is_empty()).ok_or_else(|| incomplete("account_id"))?;
    Ok(Some(Credentials::ChatGpt { access_token: Secret::new(access_token), account_id }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(home: &std::path::Path, pairs: &[(&str, &str)]) -> Environment {
        let mut vars: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        vars.insert("HOME".into(), home.display().to_string());
        Environment::new(vars)
    }

    fn write_auth(home: &std::path::Path, body: &str) {
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        std::fs::write(home.join(".codex/auth.json"), body).unwrap();
    }

    #[test]
    fn api_key_uses_openai_base_url_and_model_env() {
        let home = tempfile::tempdir().unwrap();
        let env = env(
            home.path(),
            &[("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"), ("OPENAI_MODEL", "m1")],
        );
        let config = resolve(&env, &ProviderFlags::default()).unwrap();
        assert_eq!(config.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(config.model, "m1");
        assert_eq!(config.credentials, Credentials::ApiKey(Secret::new("sk-test")));
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn flags_win_over_environment_and_defaults_apply_last() {
        let home = tempfile::tempdir().unwrap();
        let env = env(home.path(), &[("OPENAI_API_KEY", "k"), ("OPENAI_MODEL", "env-model")]);
        let flags = ProviderFlags {
            model: Some("flag-model".into()),
            base_url: Some("https://proxy.test/v1".into()),
            timeout: Some(Duration::from_secs(5)),
        };
        let config = resolve(&env, &flags).unwrap();
        assert_eq!((config.model.as_str(), config.base_url.as_str()), ("flag-model", "https://proxy.test/v1"));
        assert_eq!(config.timeout, Duration::from_secs(5));
        let defaults = resolve(&self::env(home.path(), &[("OPENAI_API_KEY", "k")]), &ProviderFlags::default());
        let defaults = defaults.unwrap();
        assert_eq!((defaults.model.as_str(), defaults.base_url.as_str()), (DEFAULT_MODEL, OPENAI_BASE_URL));
    }

    #[test]
    fn chatgpt_auth_comes_first_and_ignores_openai_base_url() {
        let home = tempfile::tempdir().unwrap();
        write_auth(home.path(), r#"{"auth_mode":"chatgpt","tokens":{"access_token":"tok","account_id":"acct"}}"#);
        let env = env(
            home.path(),
            &[("OPENAI_API_KEY", "k"), ("OPENAI_BASE_URL", "http://elsewhere/v1"), ("OPENAI_MODEL", "gpt-5.6")],
        );
        let config = resolve(&env, &ProviderFlags::default()).unwrap();
        assert_eq!(config.base_url, CHATGPT_BASE_URL);
        assert_eq!(config.model, "gpt-5.6-sol", "the public alias is canonicalized");
        assert!(matches!(config.credentials, Credentials::ChatGpt { ref account_id, .. } if account_id == "acct"));
        let flags = ProviderFlags { base_url: Some("http://local/v1".into()), ..Default::default() };
        assert_eq!(resolve(&env, &flags).unwrap().base_url, "http://local/v1");
        for model in ["gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"] {
            let flags = ProviderFlags { model: Some(model.into()), ..Default::default() };
            assert_eq!(resolve(&env, &flags).unwrap().model, model);
        }
    }

    #[test]
    fn api_key_auth_keeps_the_requested_model() {
        let home = tempfile::tempdir().unwrap();
        let env = env(home.path(), &[("OPENAI_API_KEY", "k"), ("OPENAI_MODEL", "gpt-5.6")]);
        assert_eq!(resolve(&env, &ProviderFlags::default()).unwrap().model, "gpt-5.6");
    }

    #[test]
    fn other_auth_modes_fall_back_to_the_api_key() {
        let home = tempfile::tempdir().unwrap();
        write_auth(home.path(), r#"{"auth_mode":"apikey"}"#);
        let env = env(home.path(), &[("OPENAI_API_KEY", "k")]);
        assert!(matches!(resolve(&env, &ProviderFlags::default()).unwrap().credentials, Credentials::ApiKey(_)));
    }

    #[test]
    fn broken_auth_and_missing_credentials_are_clear_errors() {
        let home = tempfile::tempdir().unwrap();
        let env = env(home.path(), &[]);
        let error = resolve(&env, &ProviderFlags::default()).unwrap_err().to_string();
        assert!(error.contains("OPENAI_API_KEY") && error.contains("hint:"), "{error}");
        write_auth(home.path(), r#"{"auth_mode":"chatgpt","tokens":{"access_token":"tok"}}"#);
        let error = resolve(&env, &ProviderFlags::default()).unwrap_err().to_string();
        assert!(error.contains("tokens.account_id"), "{error}");
        write_auth(home.path(), "{not json");
        assert!(matches!(resolve(&env, &ProviderFlags::default()), Err(ConfigError::MalformedAuthFile { .. })));
    }

    #[test]
    fn secrets_never_print() {
        let credentials = Credentials::ApiKey(Secret::new("sk-very-secret"));
        assert!(!format!("{credentials:?}").contains("sk-very-secret"));
    }
}

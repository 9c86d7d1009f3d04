//! Embedding settings from the caller's flags and environment, in the
//! spec's order: flag, then `OPENAI_EMBEDDING_*`, then the general
//! `OPENAI_*` fallback, then the default. Never the daemon's own
//! environment.
//!
//! Which embeddings: `GIT_AGENT_EMBEDDINGS`, else the `search.embeddings`
//! configuration key, else remote when the caller has an embeddings key
//! and the local model otherwise. The local model is the pinned default
//! (downloaded once into `${XDG_CACHE_HOME:-~/.cache}/git-agent/models`)
//! unless `GIT_AGENT_MODEL_DIR` or `search.model_dir` names a folder.

use super::chunking::DEFAULT_MAX_INPUT_CHARS;
use super::index::embeddings::{Backend, EmbeddingSettings, LocalSource};
use super::rank::ranking::Fusion;
use git_agent_shared::Environment;
use git_agent_shared::config_file::{SEARCH_EMBEDDINGS_KEY, SEARCH_MODEL_DIR_KEY, SearchConfig};
use git_agent_shared::environment::vars;
use git_agent_shared::paths;
use git_agent_shared::timefmt::parse_go_duration;
use gitagent_embed::download::{HUB, ModelSpec};
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_MODEL: &str = "text-embedding-3-small";
pub const DEFAULT_DIMENSIONS: usize = 1024;
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_BATCH_INPUTS: usize = 32;
pub const DEFAULT_BATCH_MAX_CHARS: usize = 700_000;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const MAX_CONCURRENCY: usize = 8;

/// Why the settings cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A flag value is wrong (a usage error).
    #[error("{0}")]
    Flag(String),
    /// The environment is incomplete or wrong.
    #[error("{0}")]
    Environment(String),
}

/// The flags that feed the settings.
#[derive(Debug, Default, Clone)]
pub struct SettingFlags {
    pub model: Option<String>,
    pub dimensions: Option<i64>,
    pub base_url: Option<String>,
    pub timeout: Option<String>,
}

/// Model and dimensions alone (what `--ls-files` and index selection need).
pub fn model_and_dimensions(flags: &SettingFlags, env: &Environment) -> Result<(String, usize), SettingsError> {
    let model = flags
        .model
        .as_deref()
        .map(str::trim)
        .filter(|model| !model.is_empty())
        .or_else(|| env.get(vars::OPENAI_EMBEDDING_MODEL))
        .unwrap_or(DEFAULT_MODEL)
        .to_string();
    let dimensions = match flags.dimensions {
        Some(value) if value >= 1 => usize::try_from(value)
            .map_err(|_| SettingsError::Flag("--embedding-dimensions must be a positive integer".into()))?,
        Some(_) => return Err(SettingsError::Flag("--embedding-dimensions must be a positive integer".into())),
        None => positive_env(env, vars::OPENAI_EMBEDDING_DIMENSIONS)?.unwrap_or(DEFAULT_DIMENSIONS),
    };
    let most = max_dimensions(&model);
    if dimensions > most {
        let source =
            if flags.dimensions.is_some() { "--embedding-dimensions" } else { vars::OPENAI_EMBEDDING_DIMENSIONS };
        let message = format!(
            "{source} {dimensions} is more than {model} allows ({most} at most)\nhint: pass a smaller value, such as the default {DEFAULT_DIMENSIONS}"
        );
        return Err(if flags.dimensions.is_some() {
            SettingsError::Flag(message)
        } else {
            SettingsError::Environment(message)
        });
    }
    Ok((model, dimensions))
}

/// The most dimensions `model` can return: OpenAI's own embedding models
/// publish theirs; any other model gets a bound above every embedding
/// model in use, which still refuses typing slips such as 99999999.
fn max_dimensions(model: &str) -> usize {
    match model {
        "text-embedding-3-small" | "text-embedding-ada-002" => 1536,
        "text-embedding-3-large" => 3072,
        _ => 8192,
    }
}

/// Which embeddings the invocation asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Local,
    Remote,
}

/// `GIT_AGENT_EMBEDDINGS`, else `search.embeddings`, else remote exactly
/// when the caller has an embeddings key.
pub fn choice(env: &Environment, config: &SearchConfig) -> Result<Choice, SettingsError> {
    let (value, from) = match env.get(vars::GIT_AGENT_EMBEDDINGS) {
        Some(value) => (value.trim(), vars::GIT_AGENT_EMBEDDINGS),
        None => (config.embeddings.trim(), SEARCH_EMBEDDINGS_KEY),
    };
    match value {
        "local" => Ok(Choice::Local),
        "remote" => Ok(Choice::Remote),
        "" if env.get(vars::OPENAI_EMBEDDING_API_KEY).is_some() || env.get(vars::OPENAI_API_KEY).is_some() => {
            Ok(Choice::Remote)
        }
        "" => Ok(Choice::Local),
        other => Err(SettingsError::Environment(format!(
            "{from} {other:?} is neither local nor remote\nhint: use local (the built-in model) or remote (an OpenAI-compatible endpoint)"
        ))),
    }
}

/// Everything a search needs to embed: the remote endpoint's settings, or
/// the local model's source (its key and dimensions are filled in once it
/// is loaded).
pub fn resolve(
    flags: &SettingFlags,
    env: &Environment,
    config: &SearchConfig,
    cores: usize,
) -> Result<EmbeddingSettings, SettingsError> {
    match choice(env, config)? {
        Choice::Remote => resolve_remote(flags, env, cores),
        Choice::Local => resolve_local(flags, env, config),
    }
}

/// The local model's settings: one embedder in the daemon (its own
/// threads, bounded to the cores), batches of the model's size.
fn resolve_local(
    flags: &SettingFlags,
    env: &Environment,
    config: &SearchConfig,
) -> Result<EmbeddingSettings, SettingsError> {
    let named = [
        (flags.model.is_some(), "--embedding-model"),
        (flags.dimensions.is_some(), "--embedding-dimensions"),
        (flags.base_url.is_some(), "--base-url"),
    ];
    if let Some((_, flag)) = named.iter().find(|(set, _)| *set) {
        return Err(SettingsError::Flag(format!(
            "{flag} applies to remote embeddings, and this search uses the local model\nhint: set OPENAI_EMBEDDING_API_KEY (or git-agent config {SEARCH_EMBEDDINGS_KEY} remote) to use an endpoint"
        )));
    }
    let folder = match env.get(vars::GIT_AGENT_MODEL_DIR) {
        Some(dir) => Some((dir.trim().to_string(), vars::GIT_AGENT_MODEL_DIR)),
        None => Some((config.model_dir.trim().to_string(), SEARCH_MODEL_DIR_KEY)).filter(|(dir, _)| !dir.is_empty()),
    };
    let source = match folder {
        Some((dir, from)) => {
            let dir = PathBuf::from(dir);
            if !dir.is_absolute() {
                return Err(SettingsError::Environment(format!(
                    "{from} {:?} is not an absolute path\nhint: name the folder holding config.json, tokenizer.json and model.safetensors by its full path",
                    dir.display()
                )));
            }
            LocalSource::Folder(dir)
        }
        None => LocalSource::Pinned {
            spec: pinned_model()?,
            models_dir: paths::models_dir(env).map_err(|error| SettingsError::Environment(error.to_string()))?,
            hub: env.get(vars::GIT_AGENT_MODEL_HUB).unwrap_or(HUB).trim().to_string(),
        },
    };
    Ok(EmbeddingSettings {
        api_key: git_agent_shared::Secret::new(String::new()),
        base_url: String::new(),
        model: String::new(),
        dimensions: 0,
        max_input_chars: positive_env(env, vars::OPENAI_EMBEDDING_MAX_INPUT_CHARS)?.unwrap_or(DEFAULT_MAX_INPUT_CHARS),
        batch_inputs: DEFAULT_BATCH_INPUTS,
        batch_max_chars: DEFAULT_BATCH_MAX_CHARS,
        concurrency: 1,
        timeout: DEFAULT_TIMEOUT,
        network: gitagent_provider::NetworkSettings::from_env(env),
        backend: Backend::Local { source, model: None },
        redactor: gitagent_provider::Redactor::default(),
    })
}

/// The remote endpoint's settings.
fn resolve_remote(flags: &SettingFlags, env: &Environment, cores: usize) -> Result<EmbeddingSettings, SettingsError> {
    let (model, dimensions) = model_and_dimensions(flags, env)?;
    let timeout = match flags.timeout.as_deref() {
        Some(text) => match parse_go_duration(text) {
            Ok(timeout) if !timeout.is_zero() => timeout,
            _ => {
                return Err(SettingsError::Flag(format!(
                    "invalid --timeout {text:?}: expected a positive duration such as 30s or 2m"
                )));
            }
        },
        None => DEFAULT_TIMEOUT,
    };
    let api_key = env.get(vars::OPENAI_EMBEDDING_API_KEY).or_else(|| env.get(vars::OPENAI_API_KEY)).ok_or_else(|| {
        SettingsError::Environment(
            "remote embeddings require OPENAI_EMBEDDING_API_KEY or OPENAI_API_KEY; Codex auth does not support embeddings\nhint: export OPENAI_EMBEDDING_API_KEY=<key> (and OPENAI_EMBEDDING_BASE_URL for another provider), or git-agent config --unset search.embeddings to use the local model"
                .into(),
        )
    })?;
    let base_url = flags
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .or_else(|| env.get(vars::OPENAI_EMBEDDING_BASE_URL))
        .or_else(|| env.get(vars::OPENAI_BASE_URL))
        .unwrap_or(DEFAULT_BASE_URL)
        .trim()
        .to_string();
    if reqwest::Url::parse(&base_url).map(|url| !matches!(url.scheme(), "http" | "https")).unwrap_or(true) {
        return Err(SettingsError::Environment(format!(
            "the embeddings base URL {} is not an http(s) URL\nhint: set OPENAI_EMBEDDING_BASE_URL (or --base-url) to something like https://api.openai.com/v1",
            git_agent_shared::giturl::sanitize(&base_url)
        )));
    }
    Ok(EmbeddingSettings {
        api_key: git_agent_shared::Secret::new(api_key),
        base_url,
        model,
        dimensions,
        max_input_chars: positive_env(env, vars::OPENAI_EMBEDDING_MAX_INPUT_CHARS)?.unwrap_or(DEFAULT_MAX_INPUT_CHARS),
        batch_inputs: positive_env(env, vars::OPENAI_EMBEDDING_BATCH_INPUTS)?.unwrap_or(DEFAULT_BATCH_INPUTS),
        batch_max_chars: positive_env(env, vars::OPENAI_EMBEDDING_BATCH_MAX_CHARS)?.unwrap_or(DEFAULT_BATCH_MAX_CHARS),
        concurrency: positive_env(env, vars::OPENAI_EMBEDDING_CONCURRENCY)?
            .unwrap_or_else(|| cores.clamp(1, MAX_CONCURRENCY)),
        timeout,
        network: gitagent_provider::NetworkSettings::from_env(env),
        backend: Backend::Remote,
        redactor: gitagent_provider::Redactor::default(),
    })
}

/// How a search turns the query and the scores into a ranking, from the
/// caller's `GIT_AGENT_SEARCH_*` variables (defaults measured with
/// bench-search-quality; see README).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking {
    /// Embed the query framed as an implementation-location search.
    pub framing: bool,
    pub fusion: Fusion,
}

impl Default for Ranking {
    fn default() -> Self {
        Self { framing: true, fusion: Fusion::default() }
    }
}

/// The ranking settings of one invocation.
pub fn ranking(env: &Environment) -> Result<Ranking, SettingsError> {
    let mut ranking = Ranking::default();
    if let Some(text) = env.get(vars::GIT_AGENT_SEARCH_QUERY_FRAMING) {
        ranking.framing = match text.trim() {
            "on" => true,
            "off" => false,
            _ => {
                return Err(SettingsError::Environment(format!(
                    "invalid {} {text:?}: expected on or off",
                    vars::GIT_AGENT_SEARCH_QUERY_FRAMING
                )));
            }
        };
    }
    if let Some(text) = env.get(vars::GIT_AGENT_SEARCH_LEXICAL_WEIGHT) {
        ranking.fusion.lexical_weight = match text.trim().parse::<f64>() {
            Ok(weight) if (0.0..=4.0).contains(&weight) => weight,
            _ => {
                return Err(SettingsError::Environment(format!(
                    "invalid {} {text:?}: expected a number from 0 to 4",
                    vars::GIT_AGENT_SEARCH_LEXICAL_WEIGHT
                )));
            }
        };
    }
    if let Some(text) = env.get(vars::GIT_AGENT_SEARCH_COSINE) {
        ranking.fusion.normalize_cosine = match text.trim() {
            "raw" => false,
            "normalized" => true,
            _ => {
                return Err(SettingsError::Environment(format!(
                    "invalid {} {text:?}: expected raw or normalized",
                    vars::GIT_AGENT_SEARCH_COSINE
                )));
            }
        };
    }
    Ok(ranking)
}

/// The embedding input cap alone.
pub fn max_input_chars(env: &Environment) -> Result<usize, SettingsError> {
    Ok(positive_env(env, vars::OPENAI_EMBEDDING_MAX_INPUT_CHARS)?.unwrap_or(DEFAULT_MAX_INPUT_CHARS))
}

fn positive_env(env: &Environment, name: &str) -> Result<Option<usize>, SettingsError> {
    let Some(text) = env.get(name) else { return Ok(None) };
    match text.trim().parse::<i64>() {
        Ok(value) if value >= 1 => Ok(Some(usize::try_from(value).unwrap_or(usize::MAX))),
        Ok(_) => Err(SettingsError::Environment(format!("{name} must be positive, got {text:?}"))),
        Err(_) => Err(SettingsError::Environment(format!("invalid {name} {text:?}: expected a positive integer"))),
    }
}

/// The model a key-less search downloads on first use: all-MiniLM-L6-v2,
/// or in test builds the folder a test names as its stand-in.
fn pinned_model() -> Result<ModelSpec, SettingsError> {
    let Some(dir) = gitagent_runtime::test_hooks::pinned_model() else { return Ok(ModelSpec::all_minilm_l6_v2()) };
    ModelSpec::of_folder("test-model", "test/test-model", "0123456789abcdef0123456789abcdef01234567", &dir)
        .map_err(|error| SettingsError::Environment(format!("the test model folder {}: {error}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
    }

    #[test]
    fn ranking_settings_come_from_the_invocation() {
        assert_eq!(ranking(&env(&[])).unwrap(), Ranking::default());
        let set = ranking(&env(&[
            ("GIT_AGENT_SEARCH_QUERY_FRAMING", "off"),
            ("GIT_AGENT_SEARCH_LEXICAL_WEIGHT", "0.5"),
            ("GIT_AGENT_SEARCH_COSINE", "normalized"),
        ]))
        .unwrap();
        assert_eq!(set, Ranking { framing: false, fusion: Fusion { lexical_weight: 0.5, normalize_cosine: true } });
        for (name, value) in [
            ("GIT_AGENT_SEARCH_QUERY_FRAMING", "maybe"),
            ("GIT_AGENT_SEARCH_LEXICAL_WEIGHT", "-1"),
            ("GIT_AGENT_SEARCH_LEXICAL_WEIGHT", "x"),
            ("GIT_AGENT_SEARCH_COSINE", "cosine"),
        ] {
            let error = ranking(&env(&[(name, value)])).unwrap_err().to_string();
            assert!(error.contains(name) && error.contains(value), "{error}");
        }
    }

    #[test]
    fn dimensions_are_bounded_by_what_the_model_allows() {
        let flags = |dimensions: i64, model: &str| SettingFlags {
            dimensions: Some(dimensions),
            model: Some(model.into()),
            ..SettingFlags::default()
        };
        assert_eq!(model_and_dimensions(&flags(3072, "text-embedding-3-large"), &env(&[])).unwrap().1, 3072);
        assert_eq!(model_and_dimensions(&flags(4096, "qwen3-embedding"), &env(&[])).unwrap().1, 4096);
        for (dimensions, model) in [(1537, "text-embedding-3-small"), (3073, "text-embedding-3-large"), (99999999, "x")]
        {
            let error = model_and_dimensions(&flags(dimensions, model), &env(&[])).unwrap_err().to_string();
            assert!(error.contains(&dimensions.to_string()) && error.contains(model), "{error}");
        }
        let error = model_and_dimensions(&SettingFlags::default(), &env(&[("OPENAI_EMBEDDING_DIMENSIONS", "2000")]))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("OPENAI_EMBEDDING_DIMENSIONS 2000 is more than"), "{error}");
    }

    #[test]
    fn defaults_and_fallbacks() {
        let settings =
            resolve(&SettingFlags::default(), &env(&[("OPENAI_API_KEY", "k")]), &SearchConfig::default(), 12).unwrap();
        assert_eq!(settings.api_key.expose(), "k");
        assert_eq!(settings.base_url, DEFAULT_BASE_URL);
        assert_eq!(settings.model, DEFAULT_MODEL);
        assert_eq!(settings.dimensions, 1024);
        assert_eq!(settings.max_input_chars, 32_000);
        assert_eq!(settings.batch_inputs, 32);
        assert_eq!(settings.batch_max_chars, 700_000);
        assert_eq!(settings.concurrency, 8);
        assert_eq!(settings.timeout, DEFAULT_TIMEOUT);
        assert_eq!(
            resolve(&SettingFlags::default(), &env(&[("OPENAI_API_KEY", "k")]), &SearchConfig::default(), 2)
                .unwrap()
                .concurrency,
            2
        );

        let specific = env(&[
            ("OPENAI_API_KEY", "general"),
            ("OPENAI_EMBEDDING_API_KEY", "embed"),
            ("OPENAI_BASE_URL", "http://general.test/v1"),
            ("OPENAI_EMBEDDING_BASE_URL", "http://embed.test/v1"),
            ("OPENAI_EMBEDDING_MODEL", "m"),
            ("OPENAI_EMBEDDING_DIMENSIONS", "8"),
            ("OPENAI_EMBEDDING_CONCURRENCY", "3"),
        ]);
        let settings = resolve(&SettingFlags::default(), &specific, &SearchConfig::default(), 2).unwrap();
        assert_eq!((settings.api_key.expose(), settings.base_url.as_str()), ("embed", "http://embed.test/v1"));
        assert_eq!((settings.model.as_str(), settings.dimensions, settings.concurrency), ("m", 8, 3));
        let flags = SettingFlags {
            model: Some("flag-model".into()),
            dimensions: Some(4),
            base_url: Some("http://flag.test".into()),
            timeout: Some("5s".into()),
        };
        let settings = resolve(&flags, &specific, &SearchConfig::default(), 2).unwrap();
        assert_eq!((settings.model.as_str(), settings.dimensions), ("flag-model", 4));
        assert_eq!(settings.base_url, "http://flag.test");
        assert_eq!(settings.timeout, Duration::from_secs(5));
    }

    #[test]
    fn errors_are_reported() {
        let remote = SearchConfig { embeddings: "remote".into(), ..SearchConfig::default() };
        assert!(matches!(resolve(&SettingFlags::default(), &env(&[]), &remote, 1), Err(SettingsError::Environment(_))));
        let with_key = env(&[("OPENAI_API_KEY", "k"), ("OPENAI_EMBEDDING_BATCH_INPUTS", "0")]);
        assert!(matches!(
            resolve(&SettingFlags::default(), &with_key, &SearchConfig::default(), 1),
            Err(SettingsError::Environment(_))
        ));
        let flags = SettingFlags { dimensions: Some(0), ..SettingFlags::default() };
        assert!(matches!(
            resolve(&flags, &env(&[("OPENAI_API_KEY", "k")]), &SearchConfig::default(), 1),
            Err(SettingsError::Flag(_))
        ));
        let flags = SettingFlags { timeout: Some("soon".into()), ..SettingFlags::default() };
        assert!(matches!(
            resolve(&flags, &env(&[("OPENAI_API_KEY", "k")]), &SearchConfig::default(), 1),
            Err(SettingsError::Flag(_))
        ));
        let error = resolve(&SettingFlags::default(), &env(&[]), &remote, 1).unwrap_err().to_string();
        assert!(error.contains("OPENAI_EMBEDDING_API_KEY"), "{error}");
    }

    fn is_local(settings: &EmbeddingSettings) -> bool {
        matches!(settings.backend, Backend::Local { .. })
    }

    #[test]
    fn the_local_model_serves_callers_without_a_key_unless_told_otherwise() {
        let none = SearchConfig::default();
        let home = [("HOME", "/home/u")];
        let keyless = resolve(&SettingFlags::default(), &env(&home), &none, 2).unwrap();
        assert!(is_local(&keyless));
        let Backend::Local { source: LocalSource::Pinned { models_dir, hub, spec }, .. } = &keyless.backend else {
            panic!("the pinned model: {:?}", keyless.backend)
        };
        assert_eq!(models_dir, &PathBuf::from("/home/u/.cache/git-agent/models"));
        assert_eq!((hub.as_str(), spec.name.as_str()), (HUB, "all-MiniLM-L6-v2"));
        assert_eq!(keyless.concurrency, 1);

        let keyed = env(&[("HOME", "/home/u"), ("OPENAI_API_KEY", "k")]);
        assert!(!is_local(&resolve(&SettingFlags::default(), &keyed, &none, 2).unwrap()));
        let forced = SearchConfig { embeddings: "local".into(), ..SearchConfig::default() };
        assert!(is_local(&resolve(&SettingFlags::default(), &keyed, &forced, 2).unwrap()));
        let by_env = env(&[("HOME", "/home/u"), ("OPENAI_API_KEY", "k"), ("GIT_AGENT_EMBEDDINGS", "local")]);
        assert!(is_local(&resolve(&SettingFlags::default(), &by_env, &none, 2).unwrap()));

        let folder = SearchConfig { model_dir: "/models/minilm".into(), ..SearchConfig::default() };
        let settings = resolve(&SettingFlags::default(), &env(&home), &folder, 2).unwrap();
        assert!(
            matches!(&settings.backend, Backend::Local { source: LocalSource::Folder(dir), .. } if dir == &PathBuf::from("/models/minilm"))
        );
        let cache = env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/c")]);
        let Backend::Local { source: LocalSource::Pinned { models_dir, .. }, .. } =
            resolve(&SettingFlags::default(), &cache, &none, 2).unwrap().backend
        else {
            panic!("the pinned model")
        };
        assert_eq!(models_dir, PathBuf::from("/c/git-agent/models"));
    }

    #[test]
    fn local_settings_refuse_what_does_not_apply() {
        let none = SearchConfig::default();
        let flags = SettingFlags { model: Some("text-embedding-3-large".into()), ..SettingFlags::default() };
        let error = resolve(&flags, &env(&[("HOME", "/h")]), &none, 1).unwrap_err();
        assert!(matches!(&error, SettingsError::Flag(text) if text.contains("--embedding-model")), "{error}");
        let relative = env(&[("HOME", "/h"), ("GIT_AGENT_MODEL_DIR", "models/x")]);
        let error = resolve(&SettingFlags::default(), &relative, &none, 1).unwrap_err().to_string();
        assert!(error.contains("GIT_AGENT_MODEL_DIR") && error.contains("absolute"), "{error}");
        let wrong = SearchConfig { embeddings: "both".into(), ..SearchConfig::default() };
        let error = resolve(&SettingFlags::default(), &env(&[("HOME", "/h")]), &wrong, 1).unwrap_err().to_string();
        assert!(error.contains("search.embeddings") && error.contains("\"both\""), "{error}");
    }
}

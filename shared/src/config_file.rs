//! The global configuration file behind `git-agent config`:
//! `${XDG_CONFIG_HOME:-~/.config}/git-agent/config.json`, 0600.

use crate::private_fs;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// The shared index repository (the spec's one key).
pub const INDEX_REMOTE_KEY: &str = "index.remote";
/// Which embeddings search uses: `local` or `remote` (unset: remote when
/// an embeddings key is in the caller's environment, local otherwise).
pub const SEARCH_EMBEDDINGS_KEY: &str = "search.embeddings";
/// A folder holding the local model's files, used instead of the download.
pub const SEARCH_MODEL_DIR_KEY: &str = "search.model_dir";
/// A regular expression of secrets (or file paths) the redactor leaves
/// alone: known test fixtures. One value; several are joined with `|`.
pub const REDACT_ALLOW_KEY: &str = "redact.allow";
/// Every key `git-agent config` knows.
pub const KEYS: [&str; 4] = [INDEX_REMOTE_KEY, SEARCH_EMBEDDINGS_KEY, SEARCH_MODEL_DIR_KEY, REDACT_ALLOW_KEY];

/// The file's contents. Field names are the original implementation's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFile {
    #[serde(default, skip_serializing_if = "IndexConfig::is_empty")]
    pub index: IndexConfig,
    #[serde(default, skip_serializing_if = "SearchConfig::is_empty")]
    pub search: SearchConfig,
    #[serde(default, skip_serializing_if = "RedactConfig::is_empty")]
    pub redact: RedactConfig,
}

/// The `redact.*` keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedactConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub allow: String,
}

impl RedactConfig {
    fn is_empty(&self) -> bool {
        self.allow.is_empty()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub remote: String,
}

impl IndexConfig {
    fn is_empty(&self) -> bool {
        self.remote.is_empty()
    }
}

/// The `search.*` keys (this project's own, beside the spec's file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub embeddings: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model_dir: String,
}

impl SearchConfig {
    fn is_empty(&self) -> bool {
        self.embeddings.is_empty() && self.model_dir.is_empty()
    }
}

impl ConfigFile {
    /// The value of `key` (one of [`KEYS`]); empty when unset.
    pub fn get(&self, key: &str) -> Option<&str> {
        match key {
            INDEX_REMOTE_KEY => Some(&self.index.remote),
            SEARCH_EMBEDDINGS_KEY => Some(&self.search.embeddings),
            SEARCH_MODEL_DIR_KEY => Some(&self.search.model_dir),
            REDACT_ALLOW_KEY => Some(&self.redact.allow),
            _ => None,
        }
    }

    /// Sets `key` (one of [`KEYS`]) to `value`; empty unsets it.
    pub fn set(&mut self, key: &str, value: String) {
        match key {
            INDEX_REMOTE_KEY => self.index.remote = value,
            SEARCH_EMBEDDINGS_KEY => self.search.embeddings = value,
            SEARCH_MODEL_DIR_KEY => self.search.model_dir = value,
            REDACT_ALLOW_KEY => self.redact.allow = value,
            _ => {}
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration file {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("the configuration file {path} is not valid JSON: {source}\nhint: fix or remove the file")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot write the configuration file {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

impl ConfigFile {
    /// Loads the file at `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read(path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|source| ConfigError::Parse { path: path.to_path_buf(), source })
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ConfigError::Read { path: path.to_path_buf(), source }),
        }
    }

    /// Writes the file atomically with private permissions.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|source| ConfigError::Write { path: path.to_path_buf(), source: io::Error::other(source) })?;
        bytes.push(b'\n');
        private_fs::write_atomic(path, &bytes).map_err(|source| ConfigError::Write { path: path.to_path_buf(), source })
    }
}

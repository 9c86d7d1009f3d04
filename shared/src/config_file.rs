//! The global configuration file behind `git-agent config`:
//! `${XDG_CONFIG_HOME:-~/.config}/git-agent/config.json`, 0600.

use crate::private_fs;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// The one key `git-agent config` knows.
pub const INDEX_REMOTE_KEY: &str = "index.remote";

/// The file's contents. Field names are the original implementation's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFile {
    #[serde(default, skip_serializing_if = "IndexConfig::is_empty")]
    pub index: IndexConfig,
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

//! Project identity: the one resolver that `project_id`, search metadata
//! and task records share. A repository with an `origin` is identified by
//! the SHA-256 of its normalized origin URL, so every clone of it shares
//! one identity; anything else by the SHA-256 of its cleaned absolute path.

use crate::giturl;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Where a project lives and what identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectIdentity {
    /// The repository's top-level directory, or the starting directory
    /// outside any repository; lexically cleaned, never symlink-resolved.
    pub root: PathBuf,
    /// The normalized identity of the first `origin` URL, when there is one.
    pub origin: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("the directory {path} is not absolute")]
    RelativeStart { path: PathBuf },
    #[error("cannot open the git repository at {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: Box<gix::Error>,
    },
}

impl ProjectIdentity {
    /// Resolves the identity of the project containing `start`, an absolute
    /// directory. The repository is found by looking for `.git` in `start`
    /// and each of its lexical parents.
    pub fn resolve(start: &Path) -> Result<Self, IdentityError> {
        if !start.is_absolute() {
            return Err(IdentityError::RelativeStart { path: start.to_path_buf() });
        }
        let start = PathBuf::from(giturl::clean_path(&start.to_string_lossy()));
        let Some(root) = find_repository_root(&start) else {
            return Ok(Self { root: start, origin: None });
        };
        let origin = first_origin_url(&root)?.map(|url| giturl::identity(&url, &root));
        Ok(Self { root, origin })
    }

    /// The lowercase 64-character identifier used as the project's
    /// metadata directory name.
    pub fn id(&self) -> String {
        match &self.origin {
            Some(origin) => sha256_hex(origin.as_bytes()),
            None => sha256_hex(giturl::clean_path(&self.root.to_string_lossy()).as_bytes()),
        }
    }
}

/// The nearest directory at or above `start` that holds a `.git` entry.
pub fn find_repository_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

fn first_origin_url(root: &Path) -> Result<Option<String>, IdentityError> {
    let repo = gix::open_opts(root, gix::open::Options::isolated().strict_config(false))
        .map_err(|source| IdentityError::Open { path: root.to_path_buf(), source: Box::new(source) })?;
    let config = repo.config_snapshot();
    let urls = config.strings("remote.origin.url").unwrap_or_default();
    Ok(urls.first().map(|url| url.to_string()).filter(|url| !url.trim().is_empty()))
}

/// Lowercase hexadecimal SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    out
}

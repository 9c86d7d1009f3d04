//! Project identity: the one resolver that `project_id`, search metadata
//! and task records share. A repository with an `origin` is identified by
//! the SHA-256 of its normalized origin URL, so every clone of it shares
//! one identity; anything else by the SHA-256 of its cleaned absolute
//! path's bytes (UTF-8 or not).

use git_agent_shared::giturl;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
        Self::resolve_with(start, None)
    }

    /// Like [`ProjectIdentity::resolve`], reusing the origin that `cache`
    /// remembers for the repository while its config file is unchanged.
    pub fn resolve_cached(start: &Path, cache: &IdentityCache) -> Result<Self, IdentityError> {
        Self::resolve_with(start, Some(cache))
    }

    fn resolve_with(start: &Path, cache: Option<&IdentityCache>) -> Result<Self, IdentityError> {
        if !start.is_absolute() {
            return Err(IdentityError::RelativeStart { path: start.to_path_buf() });
        }
        let start = giturl::clean_os_path(start);
        let root = match locate(&start) {
            Location::WorkTree(root) | Location::GitDir { work_tree: Some(root), .. } => root,
            // A bare repository is its own root, identified by its origin
            // like any clone.
            Location::GitDir { git_dir, work_tree: None } => git_dir,
            Location::Outside => return Ok(Self { root: start, origin: None }),
        };
        let stamp = cache.and_then(|_| ConfigStamp::of(&root));
        if let (Some(cache), Some(stamp)) = (cache, &stamp)
            && let Some(origin) = cache.get(&root, stamp)
        {
            return Ok(Self { root, origin });
        }
        let origin = first_origin_url(&root)?.map(|url| giturl::identity(&url, &root));
        if let (Some(cache), Some(stamp)) = (cache, stamp) {
            cache.put(&root, stamp, origin.clone());
        }
        Ok(Self { root, origin })
    }

    /// The lowercase 64-character identifier used as the project's
    /// metadata directory name.
    pub fn id(&self) -> String {
        match &self.origin {
            Some(origin) => sha256_hex(origin.as_bytes()),
            None => {
                use std::os::unix::ffi::OsStrExt;
                sha256_hex(&giturl::clean_path_bytes(self.root.as_os_str().as_bytes()))
            }
        }
    }
}

/// Remembers the origin identity of repositories, keyed by their root and
/// valid while the repository's `.git/config` keeps its inode, size and
/// modification time (Git rewrites it through a lock file and a rename,
/// so every change shows). Linked worktrees and submodules, whose `.git`
/// is a file, are not cached.
#[derive(Debug, Default)]
pub struct IdentityCache {
    entries: Mutex<HashMap<PathBuf, (ConfigStamp, Option<String>)>>,
}

/// The most repositories one cache remembers before starting afresh.
const CACHE_CAPACITY: usize = 1024;

impl IdentityCache {
    fn get(&self, root: &Path, stamp: &ConfigStamp) -> Option<Option<String>> {
        let entries = self.entries.lock().ok()?;
        entries.get(root).filter(|(cached, _)| cached == stamp).map(|(_, origin)| origin.clone())
    }

    fn put(&self, root: &Path, stamp: ConfigStamp, origin: Option<String>) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= CACHE_CAPACITY {
                entries.clear();
            }
            entries.insert(root.to_path_buf(), (stamp, origin));
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ConfigStamp {
    device: u64,
    inode: u64,
    size: u64,
    modified_ns: i128,
}

impl ConfigStamp {
    fn of(root: &Path) -> Option<Self> {
        let git = root.join(".git");
        if !std::fs::symlink_metadata(&git).ok()?.is_dir() {
            return None;
        }
        let meta = std::fs::metadata(git.join("config")).ok()?;
        Some(Self {
            device: meta.dev(),
            inode: meta.ino(),
            size: meta.size(),
            modified_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        })
    }
}

/// The nearest directory at or above `start` that holds a `.git` entry.
pub fn find_repository_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

/// Where a directory sits relative to Git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// In the work tree whose top is this directory.
    WorkTree(PathBuf),
    /// In a Git directory: a bare repository, a work tree's `.git`, or a
    /// folder inside one.
    GitDir {
        git_dir: PathBuf,
        /// The work tree whose `.git` this is; `None` for a bare repository
        /// (or a Git directory stored elsewhere, such as a submodule's).
        work_tree: Option<PathBuf>,
    },
    /// In no repository.
    Outside,
}

/// Where `start` sits: the nearest of a work tree's top (a directory with
/// a `.git` entry) and a Git directory (`HEAD`, `objects/` and `refs/`,
/// as git itself recognises one) at or above it.
pub fn locate(start: &Path) -> Location {
    for dir in start.ancestors() {
        if is_git_dir(dir) {
            let work_tree =
                (dir.file_name() == Some(std::ffi::OsStr::new(".git"))).then(|| dir.parent().map(Path::to_path_buf));
            return Location::GitDir { git_dir: dir.to_path_buf(), work_tree: work_tree.flatten() };
        }
        if dir.join(".git").exists() {
            return Location::WorkTree(dir.to_path_buf());
        }
    }
    Location::Outside
}

/// Why a command that needs a work tree cannot run in `path`, with the
/// fix: a bare repository or a Git directory is named as such, anything
/// else is outside every repository.
pub fn not_a_work_tree(path: &Path) -> String {
    match locate(path) {
        Location::GitDir { git_dir, work_tree: None } => format!(
            "{} is a bare repository: it has no work tree for this command to read\nhint: run the command in a clone with a work tree, or pass --cwd <clone>",
            git_dir.display()
        ),
        Location::GitDir { work_tree: Some(work_tree), .. } => format!(
            "{} is inside the Git directory of {}\nhint: run the command in the work tree: git-agent --cwd {} ...",
            path.display(),
            work_tree.display(),
            work_tree.display()
        ),
        _ => format!(
            "{} is not inside a Git repository\nhint: run the command in a repository or pass --cwd <repository>",
            path.display()
        ),
    }
}

/// Whether `dir` is a Git directory.
pub fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
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

#[cfg(test)]
mod tests {
    use super::*;
    use git_agent_tests::git::git;

    #[test]
    fn locate_tells_work_trees_git_dirs_and_bare_repositories_apart() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join("src")).unwrap();
        git(&work, &["init", "-q"]);
        git(dir.path(), &["init", "-q", "--bare", "bare.git"]);
        let bare = dir.path().join("bare.git");
        assert_eq!(locate(&work.join("src")), Location::WorkTree(work.clone()));
        let dot_git = work.join(".git");
        let inside = Location::GitDir { git_dir: dot_git.clone(), work_tree: Some(work.clone()) };
        assert_eq!(locate(&dot_git), inside);
        assert_eq!(locate(&dot_git.join("refs/heads")), inside);
        assert_eq!(locate(&bare.join("objects")), Location::GitDir { git_dir: bare.clone(), work_tree: None });
        assert_eq!(locate(dir.path()), Location::Outside);
        git(&bare, &["remote", "add", "origin", "https://example.test/a/b.git"]);
        let identity = ProjectIdentity::resolve(&bare.join("refs")).unwrap();
        assert_eq!((identity.root, identity.origin.as_deref()), (bare, Some("example.test/a/b")));
    }

    #[test]
    fn cache_follows_origin_changes() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let cache = IdentityCache::default();
        let plain = ProjectIdentity::resolve_cached(dir.path(), &cache).unwrap();
        assert_eq!(plain.origin, None);
        git(dir.path(), &["remote", "add", "origin", "git@example.test:a/b.git"]);
        let with_origin = ProjectIdentity::resolve_cached(dir.path(), &cache).unwrap();
        assert_eq!(with_origin.origin.as_deref(), Some("example.test/a/b"));
        git(dir.path(), &["remote", "set-url", "origin", "https://example.test/c/d"]);
        let changed = ProjectIdentity::resolve_cached(dir.path(), &cache).unwrap();
        assert_eq!(changed.origin.as_deref(), Some("example.test/c/d"));
        assert_eq!(changed, ProjectIdentity::resolve(dir.path()).unwrap());
    }
}

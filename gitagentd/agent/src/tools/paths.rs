//! Root-confined file access for the repository tools: the one
//! repository-relative path validation ([`clean_relative`]), reads from the
//! worktree, the index or HEAD, and walks that skip symlinks, ignored
//! files and internal folders.
//!
//! Confinement holds after links are followed: a worktree path (a walk's
//! start folder included) is canonicalized and must stay inside the root
//! and outside internal state; a symlink entry of the index or HEAD is
//! never read or walked through, since its target names a place the
//! model must not learn about. Anything else is an error, never a listing.

use super::ToolError;
use gitagent_git::{EntryKind, FileSource, Repository};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// Folders that hold Git's or git-agent's own state; tools never enter them.
const INTERNAL_DIRS: [&str; 3] = [".git", ".git-agent", ".omx"];

/// Whether a path component names internal state; case does not matter,
/// since `.GIT` is `.git` on a case-insensitive file system.
fn is_internal(part: &str) -> bool {
    INTERNAL_DIRS.iter().any(|dir| dir.eq_ignore_ascii_case(part))
}

/// Why a repository-relative path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{path}: absolute paths are refused; use a repository-relative path")]
    Absolute { path: String },
    #[error("{path}: paths may not leave the repository (..)")]
    Parent { path: String },
    #[error("{path}: {part} holds internal state and is refused")]
    Internal { path: String, part: String },
    #[error("{path:?}: a path may not contain a NUL byte")]
    Nul { path: String },
}

impl From<PathError> for ToolError {
    fn from(error: PathError) -> Self {
        ToolError::Recoverable(error.to_string())
    }
}

/// `raw` as a clean repository-relative path (`""` is the root): no
/// absolute path, no `..`, no internal state folder, `.` and empty parts
/// dropped. Every tool and the report validator check paths with this.
pub fn clean_relative(raw: &str) -> Result<String, PathError> {
    let raw = raw.trim();
    if raw.contains('\0') {
        return Err(PathError::Nul { path: raw.to_string() });
    }
    if raw.starts_with('/') || raw.starts_with('\\') || Path::new(raw).is_absolute() {
        return Err(PathError::Absolute { path: raw.to_string() });
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathError::Parent { path: raw.to_string() }),
            part if is_internal(part) => {
                return Err(PathError::Internal { path: raw.to_string(), part: part.to_string() });
            }
            part => parts.push(part),
        }
    }
    Ok(parts.join("/"))
}

/// What a walked entry is. Walks never yield symlinks; anything that is
/// neither a folder nor a regular file keeps its own kind, so no tool
/// mistakes a FIFO or a socket for a file it could read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkedKind {
    Directory,
    File,
    Fifo,
    Socket,
    BlockDevice,
    CharDevice,
    /// A kind the platform reports but none of the above.
    Other,
}

impl WalkedKind {
    fn of(kind: std::fs::FileType) -> Self {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_dir() {
            Self::Directory
        } else if kind.is_file() {
            Self::File
        } else if kind.is_fifo() {
            Self::Fifo
        } else if kind.is_socket() {
            Self::Socket
        } else if kind.is_block_device() {
            Self::BlockDevice
        } else if kind.is_char_device() {
            Self::CharDevice
        } else {
            Self::Other
        }
    }

    /// The name tools report: `directory`, `file`, `fifo`, `socket`,
    /// `block_device`, `char_device` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Directory => "directory",
            Self::File => "file",
            Self::Fifo => "fifo",
            Self::Socket => "socket",
            Self::BlockDevice => "block_device",
            Self::CharDevice => "char_device",
            Self::Other => "other",
        }
    }
}

/// The repository (or, for explore, any folder) as the tools see it.
#[derive(Debug)]
pub struct RepoFiles {
    /// `None` for an ordinary folder: no index, no HEAD.
    repo: Option<Repository>,
    /// The folder every tool path is relative to (canonical).
    root: PathBuf,
    /// Where `root` sits in the repository: `""` at its top, else a clean
    /// repository-relative folder that index and HEAD reads are rebased on.
    base: String,
    default_source: FileSource,
    /// Staged review reads the index only: explicit worktree requests
    /// would leak unstaged edits into the inspection.
    refuse_worktree: bool,
}

impl RepoFiles {
    /// Tools over `repo`; `default_source` applies when a call names none
    /// (the worktree for normal commands, the index for staged review).
    pub fn new(repo: Repository, default_source: FileSource) -> Self {
        // Confinement compares canonical paths, so the root must be one too.
        let root = repo.root().canonicalize().unwrap_or_else(|_| repo.root().to_path_buf());
        Self { repo: Some(repo), root, base: String::new(), default_source, refuse_worktree: false }
    }

    /// Tools for a staged inspection: the index by default, and explicit
    /// worktree requests refused.
    pub fn staged(repo: Repository) -> Self {
        Self { refuse_worktree: true, ..Self::new(repo, FileSource::Index) }
    }

    /// A commit's files (`review --base`/`--commit`): HEAD stands for the
    /// reviewed commit (see `Repository::with_pinned_head`) and is the
    /// default source; the worktree is refused.
    pub fn commit(repo: Repository) -> Self {
        Self { refuse_worktree: true, ..Self::new(repo, FileSource::Head) }
    }

    /// Tools rooted at `root` (explore's exploration root), which may be
    /// a folder below the top of `repo` or, without a repository, an
    /// ordinary folder. Nothing above `root` is reachable: index and HEAD
    /// paths are rebased below it.
    pub fn rooted(root: &Path, repo: Option<Repository>) -> Self {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let base = repo
            .as_ref()
            .and_then(|repo| root.strip_prefix(repo.root()).ok())
            .map(|inside| git_agent_shared::quote::os_path_key(inside).into_owned())
            .unwrap_or_default();
        Self { repo, root, base, default_source: FileSource::Worktree, refuse_worktree: false }
    }

    /// The repository, when the root is inside one.
    pub fn repo(&self) -> Option<&Repository> {
        self.repo.as_ref()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the root sits in the repository (`""` at its top).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// A clean root-relative path as a repository-relative one.
    fn tracked(&self, path: &str) -> String {
        use git_agent_shared::quote::{key_bytes, utf8_or_quoted};
        match (self.base.is_empty(), path.is_empty()) {
            (true, _) => path.to_string(),
            (false, true) => self.base.clone(),
            // Joined by their bytes: either may be a quoted key.
            (false, false) => {
                utf8_or_quoted(&[&key_bytes(&self.base)[..], b"/", &key_bytes(path)].concat()).into_owned()
            }
        }
    }

    /// The source a call reads from.
    pub fn source(&self, requested: Option<&str>) -> Result<FileSource, ToolError> {
        match requested.map(str::trim).filter(|s| !s.is_empty()) {
            None => Ok(self.default_source),
            Some("worktree") if self.refuse_worktree && self.default_source == FileSource::Head => {
                Err(ToolError::Recoverable(
                    "source \"worktree\" is refused: this inspection reads the reviewed commit (head)".into(),
                ))
            }
            Some("worktree") if self.refuse_worktree => Err(ToolError::Recoverable(
                "source \"worktree\" is refused: a staged inspection reads the index (or head)".into(),
            )),
            Some("worktree") => Ok(FileSource::Worktree),
            Some(source @ ("index" | "head")) if self.repo.is_none() => Err(ToolError::Recoverable(format!(
                "source {source:?} is refused: this folder is not in a Git repository; read the worktree"
            ))),
            Some("index") => Ok(FileSource::Index),
            Some("head") => Ok(FileSource::Head),
            Some(other) => Err(ToolError::Recoverable(format!("source {other:?} is not worktree, index or head"))),
        }
    }

    /// `raw` as a clean repository-relative path (`""` is the root).
    pub fn clean(raw: &str) -> Result<String, ToolError> {
        Ok(clean_relative(raw)?)
    }

    /// The whole content of a file.
    pub fn read(&self, source: FileSource, path: &str) -> Result<Vec<u8>, ToolError> {
        let path = Self::clean(path)?;
        if path.is_empty() {
            return Err(ToolError::Recoverable("a file path is required".into()));
        }
        match source {
            FileSource::Worktree => {
                let mut file = self.open_worktree_file(&path)?;
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut bytes)
                    .map_err(|error| ToolError::Recoverable(format!("{path}: {}", io_reason(&error))))?;
                Ok(bytes)
            }
            FileSource::Index | FileSource::Head => {
                let repo = self.tracked_repo(source)?;
                let tracked = self.tracked(&path);
                self.refuse_tracked_symlinks(source, &tracked)?;
                match repo.tracked_content(source, &tracked) {
                    Ok(Some(bytes)) => Ok(bytes),
                    Ok(None) => Err(ToolError::Recoverable(format!("{path}: not a file in {}", source.as_str()))),
                    Err(error) => Err(ToolError::Recoverable(error.to_string())),
                }
            }
        }
    }

    /// A reader over a file; worktree files stream from disk.
    pub fn open(&self, source: FileSource, path: &str) -> Result<Box<dyn std::io::BufRead + Send>, ToolError> {
        match source {
            FileSource::Worktree => {
                let clean = Self::clean(path)?;
                let file = self.open_worktree_file(&clean)?;
                Ok(Box::new(std::io::BufReader::new(file)))
            }
            _ => Ok(Box::new(std::io::Cursor::new(self.read(source, path)?))),
        }
    }

    /// The repository an index or HEAD read goes to.
    fn tracked_repo(&self, source: FileSource) -> Result<&Repository, ToolError> {
        self.repo.as_ref().ok_or_else(|| {
            ToolError::Recoverable(format!(
                "source {:?} is refused: this folder is not in a Git repository",
                source.as_str()
            ))
        })
    }

    /// Where a clean worktree path (a key, `git_agent_shared::quote`) leads
    /// once every link is followed: a canonical path inside the root and
    /// outside internal state.
    pub fn resolve_worktree(&self, path: &str) -> Result<PathBuf, ToolError> {
        let shown = if path.is_empty() { "." } else { path };
        // A quoted path (a search result's key for a name that is not
        // UTF-8) names the file its bytes name.
        let canonical = self
            .root
            .join(git_agent_shared::quote::key_path(path))
            .canonicalize()
            .map_err(|error| ToolError::Recoverable(format!("{shown}: {}", io_reason(&error))))?;
        let Ok(inside) = canonical.strip_prefix(&self.root) else {
            return Err(ToolError::Recoverable(format!("{shown}: a symlink leads outside the repository; refused")));
        };
        if inside.components().any(|part| is_internal(&part.as_os_str().to_string_lossy())) {
            return Err(ToolError::Recoverable(format!("{shown}: resolves into internal state; refused")));
        }
        Ok(canonical)
    }

    /// Opens a worktree file that stays in the repository. The path is
    /// checked, then opened once, and the check is confirmed on the opened
    /// handle ([`Self::confirm_opened`]): a folder or link swapped in
    /// between the check and the open cannot lead the read outside.
    fn open_worktree_file(&self, path: &str) -> Result<std::fs::File, ToolError> {
        use std::os::unix::fs::OpenOptionsExt;
        let canonical = self.resolve_worktree(path)?;
        // No link is followed at the last step, and a FIFO does not block
        // the open (it is refused below as not a regular file).
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
            .open(&canonical)
            .map_err(|error| ToolError::Recoverable(format!("{path}: {}", io_reason(&error))))?;
        self.confirm_opened(&file, path)?;
        Ok(file)
    }

    /// Confirms that `file`, opened for `path`, is a regular file and the
    /// very file `path` resolves to inside the repository now: the same
    /// device and inode. A file opened outside (through a folder swapped
    /// for a link after the check) is a different inode than any file the
    /// checked path leads to, so it is refused before a byte is read.
    fn confirm_opened(&self, file: &std::fs::File, path: &str) -> Result<(), ToolError> {
        use std::os::unix::fs::MetadataExt;
        let opened =
            file.metadata().map_err(|error| ToolError::Recoverable(format!("{path}: {}", io_reason(&error))))?;
        if !opened.is_file() {
            return Err(ToolError::Recoverable(format!("{path}: not a regular file")));
        }
        let named = self.resolve_worktree(path)?;
        let named = std::fs::metadata(named)
            .map_err(|error| ToolError::Recoverable(format!("{path}: {}", io_reason(&error))))?;
        if (opened.dev(), opened.ino()) != (named.dev(), named.ino()) {
            return Err(ToolError::Recoverable(format!(
                "{path}: the file changed while it was opened (a link may lead outside the repository); refused"
            )));
        }
        Ok(())
    }

    /// Refuses a path of the index or HEAD that is, or passes through, a
    /// symlink entry: its blob is the link's target, which may name a
    /// place outside the repository.
    fn refuse_tracked_symlinks(&self, source: FileSource, path: &str) -> Result<(), ToolError> {
        let mut prefix = String::new();
        for part in path.split('/').filter(|part| !part.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            let repo = self.tracked_repo(source)?;
            let entry = match source {
                FileSource::Index => repo.index_entry(&prefix),
                _ => repo.head_entry(&prefix),
            }
            .map_err(|error| ToolError::Recoverable(error.to_string()))?;
            if entry.is_some_and(|entry| entry.kind == EntryKind::Symlink) {
                return Err(ToolError::Recoverable(format!(
                    "{path}: {prefix} is a symlink in {}; symlinks are not followed there, refused",
                    source.as_str()
                )));
            }
        }
        Ok(())
    }

    /// Visits entries under `prefix` in path order with their kind,
    /// skipping symlinks, ignored files and internal folders (worktree), or
    /// the index entries and their folders (index, head). The start folder
    /// itself must resolve inside the repository.
    pub fn walk(
        &self,
        source: FileSource,
        prefix: &str,
        cancel: &CancellationToken,
        mut visit: impl FnMut(&str, WalkedKind) -> ControlFlow<()>,
    ) -> Result<(), ToolError> {
        let prefix = Self::clean(prefix)?;
        match source {
            FileSource::Worktree => {
                let start = self.resolve_worktree(&prefix)?;
                if !start.is_dir() {
                    return Err(ToolError::Recoverable(format!("{prefix}: not a folder in the worktree")));
                }
                let walker = ignore::WalkBuilder::new(&start)
                    .hidden(false)
                    .follow_links(false)
                    .git_global(false)
                    .require_git(false)
                    .filter_entry(|entry| !is_internal(&entry.file_name().to_string_lossy()))
                    .sort_by_file_name(std::cmp::Ord::cmp)
                    .build();
                for entry in walker {
                    if cancel.is_cancelled() {
                        return Err(ToolError::Cancelled);
                    }
                    let Ok(entry) = entry else { continue };
                    let Some(kind) = entry.file_type() else { continue };
                    if kind.is_symlink() || entry.depth() == 0 {
                        continue;
                    }
                    let Ok(relative) = entry.path().strip_prefix(&self.root) else { continue };
                    let relative = git_agent_shared::quote::os_path_key(relative);
                    if visit(&relative, WalkedKind::of(kind)).is_break() {
                        break;
                    }
                }
                Ok(())
            }
            FileSource::Index | FileSource::Head => {
                let repo = self.tracked_repo(source)?;
                let prefix = self.tracked(&prefix);
                self.refuse_tracked_symlinks(source, &prefix)?;
                // Paths leave rebased on the root again. Entries are keys;
                // folders and prefixes are taken from their bytes, so a
                // name that is not UTF-8 is listed under its own key.
                use git_agent_shared::quote::{key_bytes, utf8_or_quoted};
                let base = key_bytes(&self.base).into_owned();
                let strip = if base.is_empty() { 0 } else { base.len() + 1 };
                let prefix = key_bytes(&prefix).into_owned();
                let entries = match source {
                    FileSource::Index => repo.index_entries(),
                    _ => repo.head_entries(),
                }
                .map_err(|error| ToolError::Recoverable(error.to_string()))?;
                let mut paths = std::collections::BTreeMap::new();
                for (path, entry) in entries {
                    let path = key_bytes(&path).into_owned();
                    let below_prefix =
                        prefix.is_empty() || (path.starts_with(&prefix) && path.get(prefix.len()) == Some(&b'/'));
                    if entry.kind == EntryKind::Symlink || !below_prefix {
                        continue;
                    }
                    let mut folder = &path[..];
                    while let Some(slash) = folder.iter().rposition(|&byte| byte == b'/') {
                        let parent = &folder[..slash];
                        if parent.len() <= prefix.len() {
                            break;
                        }
                        paths.insert(parent.to_vec(), true);
                        folder = parent;
                    }
                    paths.insert(path, false);
                }
                for (path, is_dir) in paths {
                    if cancel.is_cancelled() {
                        return Err(ToolError::Cancelled);
                    }
                    let kind = if is_dir { WalkedKind::Directory } else { WalkedKind::File };
                    if visit(&utf8_or_quoted(&path[strip.min(path.len())..]), kind).is_break() {
                        break;
                    }
                }
                Ok(())
            }
        }
    }
}

/// An I/O error's reason without the OS's decoration, and never a path:
/// the error of a followed link must not name where the link points.
fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => error.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opened_file_must_be_the_file_its_checked_path_names() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "inside\n").unwrap();
        std::fs::write(temp.path().join("secret.txt"), "outside\n").unwrap();
        let files = RepoFiles::rooted(&root, None);
        let mut read = String::new();
        std::io::Read::read_to_string(&mut files.open(FileSource::Worktree, "src/lib.rs").unwrap(), &mut read).unwrap();
        assert_eq!(read, "inside\n");

        // What a swap between the check and the open would hand over: a
        // handle on a file outside, for a path that names one inside.
        let outside = std::fs::File::open(temp.path().join("secret.txt")).unwrap();
        let refused = files.confirm_opened(&outside, "src/lib.rs").unwrap_err();
        assert!(refused.to_string().contains("changed while it was opened"), "{refused}");
        // The file the path names passes.
        let inside = std::fs::File::open(root.join("src/lib.rs")).unwrap();
        files.confirm_opened(&inside, "src/lib.rs").unwrap();
    }

    /// A search result's quoted key names the file its bytes name; a
    /// quoted path that leads outside is refused like any other.
    #[test]
    fn a_quoted_path_reads_the_file_its_bytes_name() {
        use std::os::unix::ffi::OsStrExt;
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("repo");
        std::fs::create_dir_all(root.join(std::ffi::OsStr::from_bytes(b"dir\xff"))).unwrap();
        std::fs::write(root.join(std::ffi::OsStr::from_bytes(b"dir\xff/caf\xe9.py")), "inside\n").unwrap();
        std::fs::write(temp.path().join(std::ffi::OsStr::from_bytes(b"out\xff")), "outside\n").unwrap();
        let files = RepoFiles::rooted(&root.canonicalize().unwrap(), None);
        assert_eq!(files.read(FileSource::Worktree, "\"dir\\377/caf\\351.py\"").unwrap(), b"inside\n");
        assert!(files.read(FileSource::Worktree, "\"../out\\377\"").is_err());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let files = RepoFiles::rooted(&root, None);
        let refused = files.read(FileSource::Worktree, "pipe").unwrap_err();
        assert!(refused.to_string().contains("not a regular file"), "{refused}");
    }

    #[test]
    fn cleaning_refuses_escapes_and_internal_state() {
        assert_eq!(RepoFiles::clean("./src//lib.rs").unwrap(), "src/lib.rs");
        assert_eq!(RepoFiles::clean("").unwrap(), "");
        for bad in ["../x", "a/../../x", "a/../b", "/etc/passwd", ".git/config", "a/.git-agent/x", ".omx", "a\0b"] {
            assert!(RepoFiles::clean(bad).is_err(), "{bad:?}");
        }
    }
}

//! Root-confined file access for the repository tools: path cleaning
//! (no absolute paths, no `..`, no internal state folders), reads from the
//! worktree, the index or HEAD, and walks that skip symlinks, ignored
//! files and internal folders. A worktree symlink is followed only when
//! it stays inside the repository.

use super::ToolError;
use crate::git::{FileSource, Repository};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// Folders that hold Git's or git-agent's own state; tools never enter them.
const INTERNAL_DIRS: [&str; 3] = [".git", ".git-agent", ".omx"];

/// The repository as the tools see it.
#[derive(Debug)]
pub struct RepoFiles {
    repo: Repository,
    root: PathBuf,
    default_source: FileSource,
    /// Staged review reads the index only: explicit worktree requests
    /// would leak unstaged edits into the inspection.
    refuse_worktree: bool,
}

impl RepoFiles {
    /// Tools over `repo`; `default_source` applies when a call names none
    /// (the worktree for normal commands, the index for staged review).
    pub fn new(repo: Repository, default_source: FileSource) -> Self {
        let root = repo.root().to_path_buf();
        Self { repo, root, default_source, refuse_worktree: false }
    }

    /// Tools for a staged inspection: the index by default, and explicit
    /// worktree requests refused.
    pub fn staged(repo: Repository) -> Self {
        Self { refuse_worktree: true, ..Self::new(repo, FileSource::Index) }
    }

    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The source a call reads from.
    pub fn source(&self, requested: Option<&str>) -> Result<FileSource, ToolError> {
        match requested.map(str::trim).filter(|s| !s.is_empty()) {
            None => Ok(self.default_source),
            Some("worktree") if self.refuse_worktree => Err(ToolError::Recoverable(
                "source \"worktree\" is refused: a staged inspection reads the index (or head)".into(),
            )),
            Some("worktree") => Ok(FileSource::Worktree),
            Some("index") => Ok(FileSource::Index),
            Some("head") => Ok(FileSource::Head),
            Some(other) => Err(ToolError::Recoverable(format!("source {other:?} is not worktree, index or head"))),
        }
    }

    /// `raw` as a clean repository-relative path (`""` is the root).
    pub fn clean(raw: &str) -> Result<String, ToolError> {
        let raw = raw.trim();
        if raw.starts_with('/') || raw.starts_with('\\') || Path::new(raw).is_absolute() {
            return Err(ToolError::Recoverable(format!(
                "{raw}: absolute paths are refused; use a repository-relative path"
            )));
        }
        let mut parts = Vec::new();
        for part in raw.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    return Err(ToolError::Recoverable(format!("{raw}: paths may not leave the repository (..)")));
                }
                part if INTERNAL_DIRS.contains(&part) => {
                    return Err(ToolError::Recoverable(format!("{raw}: {part} holds internal state and is refused")));
                }
                part => parts.push(part),
            }
        }
        Ok(parts.join("/"))
    }

    /// The whole content of a file.
    pub fn read(&self, source: FileSource, path: &str) -> Result<Vec<u8>, ToolError> {
        let path = Self::clean(path)?;
        if path.is_empty() {
            return Err(ToolError::Recoverable("a file path is required".into()));
        }
        match source {
            FileSource::Worktree => {
                let full = self.worktree_file(&path)?;
                std::fs::read(&full).map_err(|error| ToolError::Recoverable(format!("{path}: {error}")))
            }
            FileSource::Index | FileSource::Head => match self.repo.tracked_content(source, &path) {
                Ok(Some(bytes)) => Ok(bytes),
                Ok(None) => Err(ToolError::Recoverable(format!("{path}: not a file in {}", source.as_str()))),
                Err(error) => Err(ToolError::Recoverable(error.to_string())),
            },
        }
    }

    /// A reader over a file; worktree files stream from disk.
    pub fn open(&self, source: FileSource, path: &str) -> Result<Box<dyn std::io::BufRead + Send>, ToolError> {
        match source {
            FileSource::Worktree => {
                let clean = Self::clean(path)?;
                let full = self.worktree_file(&clean)?;
                let file =
                    std::fs::File::open(full).map_err(|error| ToolError::Recoverable(format!("{clean}: {error}")))?;
                Ok(Box::new(std::io::BufReader::new(file)))
            }
            _ => Ok(Box::new(std::io::Cursor::new(self.read(source, path)?))),
        }
    }

    /// The on-disk path of a worktree file that stays in the repository.
    fn worktree_file(&self, path: &str) -> Result<PathBuf, ToolError> {
        let full = self.root.join(path);
        let canonical = full.canonicalize().map_err(|error| ToolError::Recoverable(format!("{path}: {error}")))?;
        let Ok(inside) = canonical.strip_prefix(&self.root) else {
            return Err(ToolError::Recoverable(format!("{path}: a symlink leads outside the repository; refused")));
        };
        if inside.components().any(|part| INTERNAL_DIRS.iter().any(|dir| part.as_os_str() == *dir)) {
            return Err(ToolError::Recoverable(format!("{path}: resolves into internal state; refused")));
        }
        if !canonical.is_file() {
            return Err(ToolError::Recoverable(format!("{path}: not a regular file")));
        }
        Ok(canonical)
    }

    /// Visits files and folders under `prefix` in path order, skipping
    /// symlinks, ignored files and internal folders (worktree), or the
    /// index entries and their folders (index, head).
    pub fn walk(
        &self,
        source: FileSource,
        prefix: &str,
        cancel: &CancellationToken,
        mut visit: impl FnMut(&str, bool) -> ControlFlow<()>,
    ) -> Result<(), ToolError> {
        let prefix = Self::clean(prefix)?;
        match source {
            FileSource::Worktree => {
                let start = self.root.join(&prefix);
                if !start.is_dir() {
                    return Err(ToolError::Recoverable(format!("{prefix}: not a folder in the worktree")));
                }
                let walker = ignore::WalkBuilder::new(&start)
                    .hidden(false)
                    .follow_links(false)
                    .git_global(false)
                    .require_git(false)
                    .filter_entry(|entry| !INTERNAL_DIRS.iter().any(|dir| entry.file_name() == *dir))
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
                    let relative = relative.to_string_lossy().replace('\\', "/");
                    if visit(&relative, kind.is_dir()).is_break() {
                        break;
                    }
                }
                Ok(())
            }
            FileSource::Index | FileSource::Head => {
                let entries = match source {
                    FileSource::Index => self.repo.index_entries(),
                    _ => self.repo.head_entries(),
                }
                .map_err(|error| ToolError::Recoverable(error.to_string()))?;
                let mut paths = std::collections::BTreeMap::new();
                for (path, _) in entries {
                    if !prefix.is_empty() && !path.starts_with(&format!("{prefix}/")) {
                        continue;
                    }
                    let mut folder = path.as_str();
                    while let Some((parent, _)) = folder.rsplit_once('/') {
                        if parent.len() <= prefix.len() {
                            break;
                        }
                        paths.insert(parent.to_string(), true);
                        folder = parent;
                    }
                    paths.insert(path, false);
                }
                for (path, is_dir) in paths {
                    if cancel.is_cancelled() {
                        return Err(ToolError::Cancelled);
                    }
                    if visit(&path, is_dir).is_break() {
                        break;
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_refuses_escapes_and_internal_state() {
        assert_eq!(RepoFiles::clean("./src//lib.rs").unwrap(), "src/lib.rs");
        assert_eq!(RepoFiles::clean("").unwrap(), "");
        for bad in ["../x", "a/../../x", "/etc/passwd", ".git/config", "a/.git-agent/x", ".omx"] {
            assert!(RepoFiles::clean(bad).is_err(), "{bad}");
        }
    }
}

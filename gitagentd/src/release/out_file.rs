//! `release-note --out <file>`: the target is checked before anything else
//! runs (its folder exists and is writable, it is not a folder, not a
//! special file, not read-only), and the final Markdown replaces it
//! atomically (a temporary file in the same folder, synced, renamed). The
//! folder's own permissions are never changed; an existing file keeps its
//! mode, a new one gets 0644.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of a release-note file that did not exist before.
const NEW_FILE_MODE: u32 = 0o644;

#[derive(Debug, thiserror::Error)]
pub enum OutFileError {
    #[error("--out needs a file path")]
    Empty,
    #[error("--out {path}: the folder {folder} does not exist\nhint: create it first, or choose another path")]
    MissingFolder { path: PathBuf, folder: PathBuf },
    #[error("--out {path}: {folder} is not a folder")]
    NotAFolder { path: PathBuf, folder: PathBuf },
    #[error("--out {path} is a folder\nhint: name a file, such as {path}/RELEASE_NOTES.md", path = .path.display())]
    IsAFolder { path: PathBuf },
    #[error("--out {path} is not a regular file\nhint: choose a regular file path")]
    NotRegular { path: PathBuf },
    #[error("--out {path} is read-only\nhint: make it writable (chmod u+w) or choose another path")]
    ReadOnlyFile { path: PathBuf },
    #[error(
        "--out {path}: the folder {folder} is read-only\nhint: make it writable (chmod u+w) or choose another path"
    )]
    ReadOnlyFolder { path: PathBuf, folder: PathBuf },
    #[error("--out {path} is not writable: {source}\nhint: check its permissions, or choose another path")]
    NotWritable { path: PathBuf, source: io::Error },
    #[error("cannot write the release note to {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// A release-note target that passed the preflight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutFile {
    path: PathBuf,
}

impl OutFile {
    /// Checks that `raw` (relative to `cwd`) can be written.
    pub fn preflight(cwd: &Path, raw: &str) -> Result<Self, OutFileError> {
        if raw.trim().is_empty() {
            return Err(OutFileError::Empty);
        }
        let path = cwd.join(raw);
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => cwd.to_path_buf(),
        };
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => return Err(OutFileError::IsAFolder { path }),
            Ok(meta) if !meta.is_file() => return Err(OutFileError::NotRegular { path }),
            Ok(meta) => {
                if !write_bit_applies(&meta) {
                    return Err(OutFileError::ReadOnlyFile { path });
                }
                fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|source| OutFileError::NotWritable { path: path.clone(), source })?;
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
                return Err(OutFileError::NotAFolder { path, folder });
            }
            Err(source) => return Err(OutFileError::NotWritable { path, source }),
        }
        let folder_meta = match fs::metadata(&folder) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(OutFileError::MissingFolder { path, folder });
            }
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
                return Err(OutFileError::NotAFolder { path, folder });
            }
            Err(source) => return Err(OutFileError::NotWritable { path, source }),
        };
        if !folder_meta.is_dir() {
            return Err(OutFileError::NotAFolder { path, folder });
        }
        if !write_bit_applies(&folder_meta) {
            return Err(OutFileError::ReadOnlyFolder { path, folder });
        }
        // The replacement is a temporary file in the same folder.
        tempfile::Builder::new()
            .prefix(".git-agent-out-")
            .tempfile_in(&folder)
            .map_err(|source| OutFileError::NotWritable { path: path.clone(), source })?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `markdown` and a final newline, atomically.
    pub fn write(&self, markdown: &str) -> Result<(), OutFileError> {
        let failed = |source| OutFileError::Write { path: self.path.clone(), source };
        let folder = self.path.parent().unwrap_or(Path::new("."));
        let mode = fs::metadata(&self.path).map_or(NEW_FILE_MODE, |meta| meta.permissions().mode() & 0o7777);
        let mut temporary = tempfile::Builder::new().prefix(".git-agent-out-").tempfile_in(folder).map_err(failed)?;
        temporary.write_all(markdown.trim_end().as_bytes()).map_err(failed)?;
        temporary.write_all(b"\n").map_err(failed)?;
        temporary.as_file().set_permissions(fs::Permissions::from_mode(mode)).map_err(failed)?;
        temporary.as_file().sync_all().map_err(failed)?;
        temporary.persist(&self.path).map_err(|error| failed(error.error))?;
        fs::File::open(folder).and_then(|dir| dir.sync_all()).map_err(failed)
    }
}

/// Whether the permission bits that apply to this process grant write
/// access: the owner's bit for its own files, else the group's, else
/// everyone's. Checked even for root, so a file or folder marked
/// read-only is never replaced.
fn write_bit_applies(meta: &fs::Metadata) -> bool {
    let mode = meta.mode();
    let (uid, gid) = (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw());
    if meta.uid() == uid {
        mode & 0o200 != 0
    } else if meta.gid() == gid {
        mode & 0o020 != 0
    } else {
        mode & 0o002 != 0 || uid == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_folders_folders_and_read_only_targets_fail_with_hints() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let error = OutFile::preflight(cwd, "no/such/dir/notes.md").unwrap_err().to_string();
        assert!(error.contains("the folder") && error.contains("does not exist"), "{error}");
        assert!(error.contains("hint:"), "{error}");

        let error = OutFile::preflight(cwd, ".").unwrap_err().to_string();
        assert!(error.contains("is a folder"), "{error}");

        fs::write(cwd.join("file"), "x").unwrap();
        let error = OutFile::preflight(cwd, "file/notes.md").unwrap_err().to_string();
        assert!(error.contains("is not a folder"), "{error}");

        fs::write(cwd.join("locked.md"), "old").unwrap();
        fs::set_permissions(cwd.join("locked.md"), fs::Permissions::from_mode(0o444)).unwrap();
        let error = OutFile::preflight(cwd, "locked.md").unwrap_err().to_string();
        assert!(error.contains("is read-only"), "{error}");

        let locked_dir = cwd.join("locked");
        fs::create_dir(&locked_dir).unwrap();
        fs::set_permissions(&locked_dir, fs::Permissions::from_mode(0o555)).unwrap();
        let error = OutFile::preflight(cwd, "locked/notes.md").unwrap_err().to_string();
        assert!(error.contains("the folder") && error.contains("is read-only"), "{error}");
        fs::set_permissions(&locked_dir, fs::Permissions::from_mode(0o755)).unwrap();

        assert!(matches!(OutFile::preflight(cwd, " "), Err(OutFileError::Empty)));
        #[cfg(target_os = "linux")]
        assert!(matches!(OutFile::preflight(cwd, "/dev/null"), Err(OutFileError::NotRegular { .. })));
    }

    #[test]
    fn writes_replace_atomically_and_keep_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutFile::preflight(dir.path(), "notes.md").unwrap();
        assert_eq!(out.path(), dir.path().join("notes.md"));
        out.write("### Bug Fixes\n\n- Fix\n\n").unwrap();
        assert_eq!(fs::read_to_string(out.path()).unwrap(), "### Bug Fixes\n\n- Fix\n");
        assert_eq!(fs::metadata(out.path()).unwrap().permissions().mode() & 0o777, NEW_FILE_MODE);

        fs::set_permissions(out.path(), fs::Permissions::from_mode(0o600)).unwrap();
        OutFile::preflight(dir.path(), "notes.md").unwrap().write("### Security\n").unwrap();
        assert_eq!(fs::read_to_string(out.path()).unwrap(), "### Security\n");
        assert_eq!(fs::metadata(out.path()).unwrap().permissions().mode() & 0o777, 0o600);
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().map(|entry| entry.file_name()).collect();
        assert_eq!(leftovers, ["notes.md"]);
    }
}

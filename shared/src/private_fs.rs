//! Private, atomic durable writes: every file git-agent keeps is written to
//! a temporary file in the target folder, synced, made 0600 and renamed
//! into place, inside folders that are 0700 and owned by the current user.
//! A folder another user owns is refused, never used: its owner could read
//! or replace anything put there (the daemon socket included).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A folder that must be private is not.
#[derive(Debug, thiserror::Error)]
pub enum NotPrivate {
    #[error(
        "{path} is owned by uid {owner}, not by you (uid {expected})\nhint: remove it or point XDG_RUNTIME_DIR/HOME at a folder you own"
    )]
    Owner { path: PathBuf, owner: u32, expected: u32 },
    #[error("{path} has mode {mode:04o}; it must be 0700 (no group or other access)\nhint: chmod 700 {path}")]
    Mode { path: PathBuf, mode: u32 },
    #[error("{path} is not a folder")]
    NotAFolder { path: PathBuf },
    #[error("cannot inspect {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

impl From<NotPrivate> for io::Error {
    fn from(error: NotPrivate) -> Self {
        match error {
            NotPrivate::Io { source, .. } => source,
            other => io::Error::new(io::ErrorKind::PermissionDenied, other),
        }
    }
}

/// The effective uid of this process: the owner every private folder must
/// have.
pub fn current_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Checks that `dir` is a folder owned by `expected_uid` with no group or
/// other permission bits. It changes nothing, so a client can refuse a
/// folder it did not create instead of repairing it.
pub fn verify_private_dir(dir: &Path, expected_uid: u32) -> Result<(), NotPrivate> {
    let metadata = fs::symlink_metadata(dir).map_err(|source| NotPrivate::Io { path: dir.into(), source })?;
    if !metadata.is_dir() {
        return Err(NotPrivate::NotAFolder { path: dir.into() });
    }
    if metadata.uid() != expected_uid {
        return Err(NotPrivate::Owner { path: dir.into(), owner: metadata.uid(), expected: expected_uid });
    }
    let mode = metadata.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(NotPrivate::Mode { path: dir.into(), mode });
    }
    Ok(())
}

/// Creates `dir` and its missing parents with mode 0700, and makes `dir`
/// itself 0700 when it already existed. A `dir` owned by another user is
/// refused with `PermissionDenied`.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let metadata = fs::metadata(dir)?;
    let own = current_uid();
    if metadata.uid() != own {
        return Err(NotPrivate::Owner { path: dir.into(), owner: metadata.uid(), expected: own }.into());
    }
    if metadata.permissions().mode() & 0o777 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Atomically replaces `path` with `bytes`, mode 0600.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |out| out.write_all(bytes))
}

/// The buffer between a streaming writer and its temporary file.
const STREAM_BUFFER: usize = 64 * 1024;

/// Atomically replaces `path` with what `write` streams into it, mode
/// 0600, so a large file (a search index's records) never has to exist
/// whole in memory first. The bytes go through a buffer into a private
/// temporary file in the same folder, which is synced and renamed into
/// place only when `write` and the flush succeed; on any error the
/// temporary file is removed and `path` keeps what it had.
pub fn write_atomic_with<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    stage_with(path, write)?.publish()
}

/// The first half of [`write_atomic_with`]: the bytes `write` streams,
/// written and synced into a private temporary file beside `path`, not yet
/// visible under `path`. Several files can be staged at once (on several
/// threads) and then published in the order their readers need; a staged
/// file dropped unpublished is removed.
pub fn stage_with<F>(path: &Path, write: F) -> io::Result<Staged>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let dir = path.parent().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{} has no parent folder", path.display()))
    })?;
    ensure_private_dir(dir)?;
    let temporary =
        tempfile::Builder::new().prefix(".tmp-").permissions(fs::Permissions::from_mode(0o600)).tempfile_in(dir)?;
    let mut buffered = io::BufWriter::with_capacity(STREAM_BUFFER, temporary);
    write(&mut buffered)?;
    let temporary = buffered.into_inner().map_err(io::IntoInnerError::into_error)?;
    temporary.as_file().sync_all()?;
    Ok(Staged { temporary, path: path.to_path_buf() })
}

/// A synced private temporary file waiting to replace its target
/// ([`stage_with`]). Dropping it removes the temporary file.
#[derive(Debug)]
pub struct Staged {
    temporary: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Staged {
    /// Renames the staged file over its target and syncs the folder.
    pub fn publish(self) -> io::Result<()> {
        let Self { temporary, path } = self;
        temporary.persist(&path).map_err(|error| error.error)?;
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        fs::File::open(dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_file_is_invisible_until_published_and_removed_when_dropped() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("d");
        let target = dir.join("f.json");
        let staged = stage_with(&target, |out| out.write_all(b"one")).unwrap();
        assert!(!target.exists(), "a staged file is not published");
        staged.publish().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"one");
        assert_eq!(fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
        let dropped = stage_with(&target, |out| out.write_all(b"two")).unwrap();
        drop(dropped);
        assert_eq!(fs::read(&target).unwrap(), b"one", "a dropped staged file leaves the target alone");
        let names: Vec<_> = fs::read_dir(&dir).unwrap().flatten().map(|entry| entry.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.json")], "no temporary file is left behind");
    }

    #[test]
    fn a_private_folder_of_the_current_user_passes() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("run");
        ensure_private_dir(&dir).unwrap();
        verify_private_dir(&dir, current_uid()).unwrap();
    }

    #[test]
    fn a_folder_of_another_owner_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("run");
        ensure_private_dir(&dir).unwrap();
        let other = current_uid().wrapping_add(1);
        let error = verify_private_dir(&dir, other).unwrap_err();
        assert!(
            matches!(error, NotPrivate::Owner { owner, expected, .. } if owner == current_uid() && expected == other)
        );
        assert!(error.to_string().contains("not by you"), "{error}");
    }

    #[test]
    fn group_or_other_bits_are_refused() {
        let temp = tempfile::tempdir().unwrap();
        for mode in [0o750, 0o705, 0o777] {
            let dir = temp.path().join(format!("run-{mode:o}"));
            fs::create_dir(&dir).unwrap();
            fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).unwrap();
            let error = verify_private_dir(&dir, current_uid()).unwrap_err();
            assert!(matches!(error, NotPrivate::Mode { mode: got, .. } if got == mode), "{error}");
        }
    }

    #[test]
    fn a_symlink_is_not_a_private_folder() {
        let temp = tempfile::tempdir().unwrap();
        let target = temp.path().join("real");
        ensure_private_dir(&target).unwrap();
        let link = temp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(verify_private_dir(&link, current_uid()), Err(NotPrivate::NotAFolder { .. })));
    }

    #[test]
    fn ensure_refuses_a_folder_owned_by_someone_else() {
        // Only root can hand a folder to another uid; elsewhere the owner
        // check is covered by `a_folder_of_another_owner_is_refused`.
        if current_uid() != 0 {
            return;
        }
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("run");
        fs::create_dir(&dir).unwrap();
        nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        let error = ensure_private_dir(&dir).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("owned by uid 4242"), "{error}");
    }

    #[test]
    fn a_streamed_file_replaces_the_old_one_privately() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("index");
        let path = dir.join("records.json");
        write_atomic(&path, b"old\n").unwrap();
        // More than one buffer's worth, written in small pieces.
        let line = b"0123456789abcdef\n";
        let lines = 2 * STREAM_BUFFER / line.len() + 1;
        write_atomic_with(&path, |out| {
            for _ in 0..lines {
                out.write_all(line)?;
            }
            Ok(())
        })
        .unwrap();
        let written = fs::read(&path).unwrap();
        assert_eq!(written.len(), lines * line.len());
        assert!(written.chunks(line.len()).all(|chunk| chunk == line));
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temporary file is left beside it");
    }

    #[test]
    fn a_failed_stream_leaves_the_old_file_and_no_temporary() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("index");
        let path = dir.join("records.json");
        write_atomic(&path, b"old\n").unwrap();
        let error = write_atomic_with(&path, |out| {
            out.write_all(&vec![b'x'; 3 * STREAM_BUFFER])?;
            Err(io::Error::other("the encoder failed"))
        })
        .unwrap_err();
        assert_eq!(error.to_string(), "the encoder failed");
        assert_eq!(fs::read(&path).unwrap(), b"old\n");
        let names: Vec<_> = fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from("records.json")]);
    }
}

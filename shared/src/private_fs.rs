//! Private, atomic durable writes: every file git-agent keeps is written to
//! a temporary file in the target folder, synced, made 0600 and renamed
//! into place, inside folders that are 0700.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` and its missing parents with mode 0700, and makes `dir`
/// itself 0700 when it already existed.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let metadata = fs::metadata(dir)?;
    if metadata.permissions().mode() & 0o777 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Atomically replaces `path` with `bytes`, mode 0600.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{} has no parent folder", path.display()))
    })?;
    ensure_private_dir(dir)?;
    let mut temporary =
        tempfile::Builder::new().prefix(".tmp-").permissions(fs::Permissions::from_mode(0o600)).tempfile_in(dir)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|error| error.error)?;
    fs::File::open(dir)?.sync_all()
}

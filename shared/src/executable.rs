//! Finding a program on a search path, the one way both binaries do it
//! (`golangci-lint`, `go`, `rustup`, `ctx7`, `skills-mgr`, `gitagentd`).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The first `dir/name` on `path_var` (a `PATH` value) that is an
/// executable regular file. Relative folders are skipped: they would
/// resolve against whatever folder the looking process runs in.
pub fn find_on_path(path_var: Option<impl AsRef<OsStr>>, name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    std::env::split_paths(path_var?.as_ref())
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a regular file with an execute bit set.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_executable_and_skips_relative_folders() {
        let temp = tempfile::tempdir().unwrap();
        let (first, second) = (temp.path().join("a"), temp.path().join("b"));
        for dir in [&first, &second] {
            std::fs::create_dir(dir).unwrap();
        }
        std::fs::write(first.join("tool"), "not executable").unwrap();
        std::fs::write(second.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(second.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths(["relative", first.to_str().unwrap(), second.to_str().unwrap()]).unwrap();
        assert_eq!(find_on_path(Some(&path), "tool"), Some(second.join("tool")));
        assert_eq!(find_on_path(Some(&path), "missing"), None);
        assert_eq!(find_on_path(Some(&path), "../b/tool"), None);
        assert_eq!(find_on_path(None::<&str>, "tool"), None);
    }
}

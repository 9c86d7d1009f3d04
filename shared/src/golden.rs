//! Golden files for tests: rendered output compared byte for byte with a
//! file. `UPDATE_GOLDEN=1 cargo test` rewrites them; review the diff
//! before committing.

use std::path::Path;

/// Compares `actual` with the golden file at `path`.
#[track_caller]
pub fn assert_golden(path: &Path, actual: &str) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the golden folder");
        }
        std::fs::write(path, actual).expect("write the golden file");
        return;
    }
    let expected = std::fs::read_to_string(path)
        .unwrap_or_else(|_| panic!("{} is missing; run with UPDATE_GOLDEN=1 to create it", path.display()));
    if expected != actual {
        let first_difference = expected.lines().zip(actual.lines()).position(|(a, b)| a != b);
        panic!(
            "{} differs (first differing line {:?}); run with UPDATE_GOLDEN=1 to accept\n--- actual ---\n{actual}",
            path.display(),
            first_difference.map(|line| line + 1)
        );
    }
}

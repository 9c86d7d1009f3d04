//! Golden files under this crate's `src/` (see [`git_agent_shared::golden`]).

/// Compares `actual` with the golden file at `relative` (under `src/`).
#[track_caller]
pub(crate) fn assert_golden(relative: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(relative);
    git_agent_shared::golden::assert_golden(&path, actual);
}

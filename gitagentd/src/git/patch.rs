//! Unified patches and line stats of one path between two entries,
//! rendered like `git diff` (headers written here, hunks by gix's
//! `UnifiedDiff` with three lines of context).

use super::{Entry, EntryKind, GitError, Repository};
use gix::diff::blob::unified_diff::{ConsumeBinaryHunk, ContextSize};
use gix::diff::blob::{Algorithm, InternedInput, UnifiedDiff, diff_with_slider_heuristics};

/// The patch of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    pub path: String,
    pub adds: usize,
    pub deletes: usize,
    pub binary: bool,
    /// The patch text; empty when only stats were asked for.
    pub text: String,
}

/// Bytes Git inspects to decide that content is binary.
const BINARY_PROBE: usize = 8000;

fn is_binary(content: &[u8]) -> bool {
    content[..content.len().min(BINARY_PROBE)].contains(&0)
}

fn short(id: Option<&Entry>) -> String {
    id.map_or_else(|| "0000000".to_string(), |entry| entry.id.to_hex_with_len(7).to_string())
}

impl Repository {
    fn side(&self, repo: &gix::Repository, entry: Option<&Entry>) -> Result<Vec<u8>, GitError> {
        match entry {
            None => Ok(Vec::new()),
            Some(entry) if entry.kind == EntryKind::Gitlink => Ok(format!("Subproject commit {}\n", entry.id).into()),
            Some(entry) => self.blob_in(repo, entry.id),
        }
    }

    /// The patch turning `old` into `new` at `path`; `render` false
    /// computes the stats only.
    pub fn file_patch(
        &self,
        path: &str,
        old: Option<&Entry>,
        new: Option<&Entry>,
        render: bool,
    ) -> Result<FilePatch, GitError> {
        self.file_patch_in(&self.local(), path, old, new, render)
    }

    /// [`Self::file_patch`] through an already open handle.
    pub(super) fn file_patch_in(
        &self,
        repo: &gix::Repository,
        path: &str,
        old: Option<&Entry>,
        new: Option<&Entry>,
        render: bool,
    ) -> Result<FilePatch, GitError> {
        let before = self.side(repo, old)?;
        let after = self.side(repo, new)?;
        let binary = is_binary(&before) || is_binary(&after);
        let mut patch = FilePatch { path: path.to_string(), adds: 0, deletes: 0, binary, text: String::new() };
        let mut hunks = String::new();
        if !binary {
            let input = InternedInput::new(before.as_slice(), after.as_slice());
            let diff = diff_with_slider_heuristics(Algorithm::Histogram, &input);
            patch.adds = diff.count_additions() as usize;
            patch.deletes = diff.count_removals() as usize;
            if render {
                let printer = ConsumeBinaryHunk::new(Vec::<u8>::new(), "\n");
                let bytes = UnifiedDiff::new(&diff, &input, printer, ContextSize::symmetrical(3))
                    .consume()
                    .map_err(|error| self.read_error(format!("the diff of {path}"), error))?;
                hunks = String::from_utf8_lossy(&bytes).lines().map(git_hunk_line).collect();
            }
        }
        if render {
            patch.text = render_patch(path, old, new, binary, &hunks);
        }
        Ok(patch)
    }
}

/// A line of rendered hunks, with hunk headers in Git's form: a range of
/// one line omits its length, an empty range starts at the line before.
fn git_hunk_line(line: &str) -> String {
    let header = line.strip_prefix("@@ -").and_then(|rest| rest.strip_suffix(" @@"));
    let Some((before, after)) = header.and_then(|header| header.split_once(" +")) else {
        return format!("{line}\n");
    };
    let range = |range: &str| -> Option<String> {
        let (start, length) = range.split_once(',')?;
        let (start, length): (u64, u64) = (start.parse().ok()?, length.parse().ok()?);
        Some(match length {
            0 => format!("{},0", start.saturating_sub(1)),
            1 => start.to_string(),
            _ => format!("{start},{length}"),
        })
    };
    match (range(before), range(after)) {
        (Some(before), Some(after)) => format!("@@ -{before} +{after} @@\n"),
        _ => format!("{line}\n"),
    }
}

fn render_patch(path: &str, old: Option<&Entry>, new: Option<&Entry>, binary: bool, hunks: &str) -> String {
    let mut text = format!("diff --git a/{path} b/{path}\n");
    match (old, new) {
        (None, Some(new)) => text.push_str(&format!("new file mode {}\n", new.kind.octal())),
        (Some(old), None) => text.push_str(&format!("deleted file mode {}\n", old.kind.octal())),
        (Some(old), Some(new)) if old.kind != new.kind => {
            text.push_str(&format!("old mode {}\nnew mode {}\n", old.kind.octal(), new.kind.octal()));
        }
        _ => {}
    }
    let same_mode = match (old, new) {
        (Some(old), Some(new)) if old.kind == new.kind => format!(" {}", new.kind.octal()),
        _ => String::new(),
    };
    if old.map(|e| e.id) != new.map(|e| e.id) {
        text.push_str(&format!("index {}..{}{same_mode}\n", short(old), short(new)));
    }
    let from = if old.is_some() { format!("a/{path}") } else { "/dev/null".into() };
    let to = if new.is_some() { format!("b/{path}") } else { "/dev/null".into() };
    if binary {
        text.push_str(&format!("Binary files {from} and {to} differ\n"));
    } else if !hunks.is_empty() {
        text.push_str(&format!("--- {from}\n+++ {to}\n"));
        text.push_str(hunks);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_follow_git() {
        assert_eq!(git_hunk_line("@@ -1,0 +1,1 @@"), "@@ -0,0 +1 @@\n");
        assert_eq!(git_hunk_line("@@ -3,4 +3,5 @@"), "@@ -3,4 +3,5 @@\n");
        assert_eq!(git_hunk_line("+@@ -1,0 +1,1 @@"), "+@@ -1,0 +1,1 @@\n", "content lines stay as they are");
    }
}

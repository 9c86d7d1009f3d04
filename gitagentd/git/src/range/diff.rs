//! Tree-to-tree changes with Git's default rename detection (50 %
//! similarity), their line statistics, and bounded patches: either Git's
//! own format, written by the one renderer in [`crate::patch`], or
//! compact excerpts (a `--- path` line and the changed lines only, from
//! the same renderer's hunks without context).

use super::chain_cache::CachedObjects;
use super::{History, HistoryError};
use crate::patch::{self as renderer, Content, Rewrite};
use gix::bstr::BStr;
use gix::diff::tree_with_rewrites::{Action, ChangeRef};
use gix::hash::ObjectId;
use gix::objs::FindExt;
use gix::objs::tree::{EntryKind, EntryMode};
use serde::Serialize;

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeStatus {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
    /// A file became a symbolic link or a submodule, or the reverse.
    TypeChanged,
}

/// One changed path with its line statistics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: ChangeStatus,
    pub additions: u32,
    pub deletions: u32,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// A gitlink: the path is a submodule.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub submodule: bool,
}

/// One side of a change.
#[derive(Debug, Clone, Copy)]
pub(super) struct Side {
    pub id: ObjectId,
    pub kind: EntryKind,
}

/// A change between two trees, before any blob was read.
#[derive(Debug, Clone)]
pub(super) struct RawChange {
    pub path: String,
    pub old_path: Option<String>,
    pub status: ChangeStatus,
    pub old: Option<Side>,
    pub new: Option<Side>,
    /// For renames and copies found by similarity, the similarity in percent.
    pub similarity: Option<u32>,
}

impl RawChange {
    pub fn is_gitlink(&self) -> bool {
        [self.old, self.new].iter().flatten().any(|side| side.kind == EntryKind::Commit)
    }

    /// The change as the patch renderer describes it.
    fn to_patch_change(&self) -> renderer::Change<'_> {
        let side = |side: Option<Side>| side.map(|side| renderer::Side { id: side.id, kind: side.kind });
        renderer::Change {
            path: &self.path,
            old: side(self.old),
            new: side(self.new),
            rewrite: self.old_path.as_deref().map(|from| Rewrite {
                from,
                copy: self.status == ChangeStatus::Copied,
                similarity: self.similarity.unwrap_or(100),
            }),
        }
    }

    pub(super) fn to_file_change(&self, stats: LineStats) -> FileChange {
        FileChange {
            path: self.path.clone(),
            old_path: self.old_path.clone(),
            status: self.status,
            additions: stats.additions,
            deletions: stats.deletions,
            binary: stats.binary,
            submodule: self.is_gitlink(),
        }
    }
}

pub(super) use crate::patch::LineStats;

/// How a file's patch is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PatchStyle {
    /// Git's format with three lines of context.
    Git,
    /// A `--- path` line, hunk headers and the changed lines only.
    Excerpt,
}

/// Text that stops growing at a line or byte limit and remembers that it
/// did.
#[derive(Debug, Clone)]
pub(super) struct BoundedText {
    pub text: String,
    lines: usize,
    max_lines: usize,
    max_bytes: usize,
    pub truncated: bool,
}

impl BoundedText {
    pub fn new(max_lines: usize, max_bytes: usize) -> Self {
        Self { text: String::new(), lines: 0, max_lines, max_bytes, truncated: false }
    }

    /// Appends one line; false (and truncated) when it does not fit.
    pub fn push_line(&mut self, line: &str) -> bool {
        if self.truncated || self.lines >= self.max_lines || self.text.len() + line.len() + 1 > self.max_bytes {
            self.truncated = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.lines += 1;
        true
    }

    pub fn is_full(&self) -> bool {
        self.truncated || self.lines >= self.max_lines || self.text.len() >= self.max_bytes
    }
}

/// Diffs trees and blobs of one repository, reusing its buffers and
/// caches from one call to the next. One per thread.
pub(super) struct TreeDiffer<'h> {
    history: &'h History,
    objects: CachedObjects<'h>,
    resource_cache: gix::diff::blob::Platform,
    state: gix::diff::tree::State,
    old_tree: Vec<u8>,
    new_tree: Vec<u8>,
    old_blob: Vec<u8>,
    new_blob: Vec<u8>,
}

impl<'h> TreeDiffer<'h> {
    /// A differ for a few diffs.
    pub fn new(history: &'h History) -> Result<Self, HistoryError> {
        Self::with_chain_cache(history, 0)
    }

    /// A differ for a long walk, keeping up to `cache_bytes` of delta
    /// bases (see [`super::chain_cache`]).
    pub fn with_chain_cache(history: &'h History, cache_bytes: usize) -> Result<Self, HistoryError> {
        let resource_cache = history
            .repo
            .diff_resource_cache_for_tree_diff()
            .map_err(|error| history.read_error("the diff configuration", error))?;
        Ok(Self {
            history,
            objects: CachedObjects::new(&history.repo, cache_bytes),
            resource_cache,
            state: Default::default(),
            old_tree: Vec::new(),
            new_tree: Vec::new(),
            old_blob: Vec::new(),
            new_blob: Vec::new(),
        })
    }

    /// The changes that turn tree `old` (the empty tree when `None`) into
    /// tree `new`, sorted by path. Trees themselves are not listed; with
    /// `rewrites`, renames and copies are found as `git diff -M` finds them.
    pub fn changes(
        &mut self,
        old: Option<ObjectId>,
        new: ObjectId,
        rewrites: bool,
    ) -> Result<Vec<RawChange>, HistoryError> {
        let Self { history, objects, resource_cache, state, old_tree, new_tree, .. } = self;
        let objects = &*objects;
        let old_iter = match old {
            Some(id) => objects
                .find_tree_iter(&id, old_tree)
                .map_err(|error| history.read_error(format!("tree {id}"), error))?,
            None => gix::objs::TreeRefIter::from_bytes(&[], history.repo.object_hash()),
        };
        let new_iter =
            objects.find_tree_iter(&new, new_tree).map_err(|error| history.read_error(format!("tree {new}"), error))?;
        let options = gix::diff::tree_with_rewrites::Options {
            location: Some(gix::diff::tree::recorder::Location::Path),
            rewrites: rewrites.then(gix::diff::Rewrites::default),
        };
        let mut changes = Vec::new();
        gix::diff::tree_with_rewrites(
            old_iter,
            new_iter,
            resource_cache,
            state,
            objects,
            |change| {
                changes.extend(raw_change(change));
                Ok(Action::Continue(()))
            },
            options,
        )
        .map_err(|error| history.read_error(format!("the changes of tree {new}"), error))?;
        resource_cache.clear_resource_cache_keep_allocation();
        changes.sort_by(|a: &RawChange, b: &RawChange| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// Line statistics of `change`, and when `patch` is given, its patch
    /// appended in `style` as far as the text's limits allow.
    pub fn file_change(
        &mut self,
        change: &RawChange,
        patch: Option<(&mut BoundedText, PatchStyle)>,
    ) -> Result<FileChange, HistoryError> {
        let Self { history, objects, old_blob, new_blob, .. } = self;
        let (old, new) = if change.is_gitlink() {
            *old_blob = side_gitlink(change.old);
            *new_blob = side_gitlink(change.new);
            (old_blob.as_slice(), new_blob.as_slice())
        } else {
            (load_blob(history, objects, change.old, old_blob)?, load_blob(history, objects, change.new, new_blob)?)
        };
        let content = Content::Bytes { old, new };
        let stats = match patch {
            None => renderer::stats(content),
            Some((out, PatchStyle::Git)) => {
                let mut described = change.to_patch_change();
                if let Some(rewrite) = described.rewrite.as_mut() {
                    // Git's own score, not the one rename detection used.
                    rewrite.similarity = renderer::similarity(old, new);
                }
                renderer::write_patch(&described, content, renderer::CONTEXT_LINES, &mut |line| out.push_line(line))
            }
            Some((out, PatchStyle::Excerpt)) => write_excerpt(out, change, content),
        };
        Ok(change.to_file_change(stats))
    }
}

/// A gitlink side's content as Git diffs it; nothing for another kind.
fn side_gitlink(side: Option<Side>) -> Vec<u8> {
    side.filter(|side| side.kind == EntryKind::Commit)
        .map(|side| renderer::gitlink_content(side.id, false))
        .unwrap_or_default()
}

fn load_blob<'b>(
    history: &History,
    objects: &CachedObjects<'_>,
    side: Option<Side>,
    buffer: &'b mut Vec<u8>,
) -> Result<&'b [u8], HistoryError> {
    let Some(side) = side else { return Ok(&[]) };
    let blob =
        objects.find_blob(&side.id, buffer).map_err(|error| history.read_error(format!("blob {}", side.id), error))?;
    Ok(blob.data)
}

fn raw_change(change: ChangeRef<'_>) -> Option<RawChange> {
    // A path's key: quoted as git quotes it when it is not UTF-8.
    let path = |location: &BStr| git_agent_shared::quote::utf8_or_quoted(location).into_owned();
    let side = |id: ObjectId, mode: EntryMode| (!mode.is_tree()).then(|| Side { id, kind: mode.kind() });
    let change = match change {
        ChangeRef::Addition { location, entry_mode, id, .. } => RawChange {
            path: path(location),
            old_path: None,
            status: ChangeStatus::Added,
            old: None,
            new: Some(side(id, entry_mode)?),
            similarity: None,
        },
        ChangeRef::Deletion { location, entry_mode, id, .. } => RawChange {
            path: path(location),
            old_path: None,
            status: ChangeStatus::Deleted,
            old: Some(side(id, entry_mode)?),
            new: None,
            similarity: None,
        },
        ChangeRef::Modification { location, previous_entry_mode, previous_id, entry_mode, id } => {
            let old = side(previous_id, previous_entry_mode);
            let new = side(id, entry_mode);
            let status = match (old, new) {
                (None, None) => return None,
                (None, Some(_)) => ChangeStatus::Added,
                (Some(_), None) => ChangeStatus::Deleted,
                (Some(old), Some(new)) if type_of(old.kind) != type_of(new.kind) => ChangeStatus::TypeChanged,
                (Some(_), Some(_)) => ChangeStatus::Modified,
            };
            RawChange { path: path(location), old_path: None, status, old, new, similarity: None }
        }
        ChangeRef::Rewrite {
            source_location,
            source_entry_mode,
            source_id,
            diff,
            entry_mode,
            id,
            location,
            copy,
            ..
        } => RawChange {
            path: path(location),
            old_path: Some(path(source_location)),
            status: if copy { ChangeStatus::Copied } else { ChangeStatus::Renamed },
            old: Some(side(source_id, source_entry_mode)?),
            new: Some(side(id, entry_mode)?),
            similarity: Some(diff.map_or(100, |stats| (stats.similarity * 100.0).round() as u32)),
        },
    };
    Some(change)
}

/// Blob, symbolic link and submodule are different types; executable or
/// not is a mode change of the same type.
fn type_of(kind: EntryKind) -> u8 {
    match kind {
        EntryKind::Blob | EntryKind::BlobExecutable => 0,
        EntryKind::Link => 1,
        EntryKind::Commit => 2,
        EntryKind::Tree => 3,
    }
}

/// The excerpt of one change: a `--- path` title (`--- old => new` for
/// a rename, `(submodule)` for a gitlink), then the changed lines in hunks
/// without context, or `(binary content changed)`.
fn write_excerpt(out: &mut BoundedText, change: &RawChange, content: Content<'_>) -> LineStats {
    let title = match &change.old_path {
        Some(old) => format!("--- {old} => {}", change.path),
        None if change.is_gitlink() => format!("--- {} (submodule)", change.path),
        None => format!("--- {}", change.path),
    };
    if !out.push_line(&title) {
        return renderer::stats(content);
    }
    let stats = renderer::write_content_hunks(content, 0, &mut |line| out.push_line(line));
    if stats.binary {
        out.push_line("(binary content changed)");
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, every_kind_of_change, numstat_line};
    use super::*;

    fn diff_of(fixture: &Fixture, old: &str, new: &str, style: PatchStyle) -> (Vec<FileChange>, String) {
        let history = fixture.history();
        let tree = |rev: &str| fixture.rev(&format!("{rev}^{{tree}}")).parse::<ObjectId>().unwrap();
        let mut differ = TreeDiffer::new(&history).unwrap();
        let changes = differ.changes(Some(tree(old)), tree(new), true).unwrap();
        let mut text = BoundedText::new(10_000, 1 << 20);
        let files =
            changes.iter().map(|change| differ.file_change(change, Some((&mut text, style))).unwrap()).collect();
        (files, text.text)
    }

    #[test]
    fn statistics_and_patches_match_git() {
        let fixture = Fixture::new();
        fixture.write("keep.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
        fixture.write("gone.txt", "bye\n");
        fixture.write("moved.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
        fixture.write("blob.bin", "\0\u{1}\u{2}");
        fixture.commit_all("base");
        fixture.write("keep.txt", "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\n");
        std::fs::remove_file(fixture.root().join("gone.txt")).unwrap();
        std::fs::remove_file(fixture.root().join("moved.txt")).unwrap();
        fixture.write("dir/moved.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n");
        fixture.write("new.txt", "hello\n");
        fixture.write("blob.bin", "\0\u{1}\u{3}");
        fixture.commit_all("change");

        let (files, patch) = diff_of(&fixture, "HEAD~1", "HEAD", PatchStyle::Git);
        let numstat: Vec<String> = files
            .iter()
            .map(|file| {
                let counts =
                    if file.binary { "-\t-".to_string() } else { format!("{}\t{}", file.additions, file.deletions) };
                match &file.old_path {
                    Some(old) => format!("{counts}\t{old} => {}", file.path),
                    None => format!("{counts}\t{}", file.path),
                }
            })
            .collect();
        let mut expected: Vec<String> =
            fixture.git(&["diff", "--numstat", "-M", "HEAD~1", "HEAD"]).lines().map(str::to_string).collect();
        let mut actual = numstat.clone();
        expected.sort();
        actual.sort();
        assert_eq!(actual, expected);

        let git_patch = fixture.git(&["diff", "-M", "HEAD~1", "HEAD", "--", "keep.txt", "new.txt", "gone.txt"]);
        for needle in git_patch.lines() {
            assert!(patch.contains(needle), "missing {needle:?} in:\n{patch}");
        }
        assert!(patch.contains("rename from moved.txt\nrename to dir/moved.txt\n"), "{patch}");
        assert!(patch.contains("Binary files a/blob.bin and b/blob.bin differ"), "{patch}");
    }

    #[test]
    fn excerpts_show_changed_lines_and_stop_at_their_limit() {
        let fixture = Fixture::new();
        fixture.write("a.txt", "1\n2\n3\n");
        fixture.commit_all("base");
        fixture.write("a.txt", "1\ntwo\n3\nfour\n");
        fixture.write("b.txt", &"x\n".repeat(50));
        fixture.commit_all("change");
        let (_, excerpt) = diff_of(&fixture, "HEAD~1", "HEAD", PatchStyle::Excerpt);
        assert!(
            excerpt.starts_with("--- a.txt\n@@ -2 +2 @@\n-2\n+two\n@@ -3,0 +4 @@\n+four\n--- b.txt\n"),
            "{excerpt}"
        );

        let history = fixture.history();
        let mut differ = TreeDiffer::new(&history).unwrap();
        let tree = |rev: &str| fixture.rev(&format!("{rev}^{{tree}}")).parse::<ObjectId>().unwrap();
        let changes = differ.changes(Some(tree("HEAD~1")), tree("HEAD"), true).unwrap();
        let mut text = BoundedText::new(5, 1 << 20);
        for change in &changes {
            differ.file_change(change, Some((&mut text, PatchStyle::Excerpt))).unwrap();
        }
        assert!(text.truncated);
        assert_eq!(text.text.lines().count(), 5);
    }

    /// Base state of the one-renderer tests: every kind of change Git's
    /// patch format distinguishes, staged on top of it (nothing
    /// committed yet). Gitlinks are recorded without checkouts.
    #[test]
    fn commit_msg_and_release_note_render_the_same_patch_as_git() {
        let fixture = every_kind_of_change();
        let git_patch = fixture.git(&["diff", "--cached", "--no-renames"]);
        let git_numstat: Vec<String> =
            fixture.git(&["diff", "--cached", "--no-renames", "--numstat"]).lines().map(str::to_string).collect();
        for needle in ["\r\n", "\\ No newline at end of file", "Binary files a/blob.bin and b/blob.bin differ"] {
            assert!(git_patch.contains(needle), "the fixture covers {needle:?}:\n{git_patch}");
        }

        // commit-msg: the staged scope.
        let repo = crate::Repository::discover(fixture.root()).unwrap();
        let changes = repo.staged_changes().unwrap();
        let patches: Vec<_> = changes
            .iter()
            .map(|change| repo.file_patch(&change.path, change.old.as_ref(), change.new.as_ref(), true).unwrap())
            .collect();
        let commit_msg: String = patches.iter().map(|patch| patch.text.as_str()).collect();
        assert_eq!(commit_msg, git_patch, "commit-msg");
        let commit_msg_numstat: Vec<String> =
            patches.iter().map(|p| numstat_line(&p.path, p.adds as u64, p.deletes as u64, p.binary)).collect();
        assert_eq!(commit_msg_numstat, git_numstat, "commit-msg counts");

        // release-note and pr-message: the same change, committed.
        fixture.git(&["commit", "-q", "-m", "change"]);
        let history = fixture.history();
        let tree = |rev: &str| fixture.rev(&format!("{rev}^{{tree}}")).parse::<ObjectId>().unwrap();
        let mut differ = TreeDiffer::new(&history).unwrap();
        let changes = differ.changes(Some(tree("HEAD~1")), tree("HEAD"), false).unwrap();
        let mut text = BoundedText::new(10_000, 1 << 20);
        let files: Vec<FileChange> = changes
            .iter()
            .map(|change| differ.file_change(change, Some((&mut text, PatchStyle::Git))).unwrap())
            .collect();
        assert_eq!(text.text, git_patch, "release-note");
        let release_numstat: Vec<String> = files
            .iter()
            .map(|f| numstat_line(&f.path, u64::from(f.additions), u64::from(f.deletions), f.binary))
            .collect();
        assert_eq!(release_numstat, git_numstat, "release-note counts");
        let mut excerpt = BoundedText::new(10_000, 1 << 20);
        let excerpt_files: Vec<FileChange> = changes
            .iter()
            .map(|change| differ.file_change(change, Some((&mut excerpt, PatchStyle::Excerpt))).unwrap())
            .collect();
        assert_eq!(excerpt_files, files, "an excerpt counts the same lines");
    }

    #[test]
    fn renames_and_copies_render_as_git_does() {
        let fixture = Fixture::new();
        let body: String = (1..=20).map(|n| format!("row {n}\n")).collect();
        fixture.write("old/name.txt", &body);
        fixture.write("same.txt", "unchanged content\n");
        fixture.commit_all("base");
        std::fs::remove_file(fixture.root().join("old/name.txt")).unwrap();
        fixture.write("new/name.txt", &body.replace("row 20\n", "row twenty\n"));
        std::fs::rename(fixture.root().join("same.txt"), fixture.root().join("moved.txt")).unwrap();
        fixture.commit_all("rename");
        let (files, patch) = diff_of(&fixture, "HEAD~1", "HEAD", PatchStyle::Git);
        assert_eq!(patch, fixture.git(&["diff", "-M", "HEAD~1", "HEAD"]));
        assert!(patch.contains("similarity index 91%\nrename from old/name.txt\nrename to new/name.txt\n"), "{patch}");
        assert_eq!(files.iter().map(|f| (f.additions, f.deletions)).collect::<Vec<_>>(), [(0, 0), (1, 1)]);
    }
}

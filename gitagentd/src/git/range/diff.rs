//! Tree-to-tree changes with Git's default rename detection (50 %
//! similarity), their line statistics, and bounded patches: either Git's
//! own format (`diff --git` headers, mode and index lines, three lines of
//! context, `Binary files ... differ`, gitlinks as `Subproject commit`
//! lines) or compact excerpts (a `--- path` line and the changed lines
//! only). Blob diffs use the Myers algorithm, as `git diff` does.

use super::chain_cache::CachedObjects;
use super::{History, HistoryError};
use gix::bstr::BStr;
use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, Diff, InternedInput, UnifiedDiff};
use gix::diff::tree_with_rewrites::{Action, ChangeRef};
use gix::hash::ObjectId;
use gix::objs::FindExt;
use gix::objs::tree::{EntryKind, EntryMode};
use serde::Serialize;

/// Bytes inspected to tell binary content apart, as Git does.
const BINARY_PROBE_BYTES: usize = 8000;
/// Blobs larger than this are counted like binary files: no line diff.
const MAX_DIFF_BLOB_BYTES: usize = 8 * 1024 * 1024;

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

/// Added and removed lines of one file; binary files have none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct LineStats {
    pub additions: u32,
    pub deletions: u32,
    pub binary: bool,
}

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
        if change.is_gitlink() {
            let stats = LineStats {
                additions: u32::from(change.new.is_some_and(|side| side.kind == EntryKind::Commit)),
                deletions: u32::from(change.old.is_some_and(|side| side.kind == EntryKind::Commit)),
                binary: false,
            };
            if let Some((out, style)) = patch {
                write_gitlink_patch(out, change, style);
            }
            return Ok(change.to_file_change(stats));
        }
        let Self { history, objects, old_blob, new_blob, .. } = self;
        let old = load_blob(history, objects, change.old, old_blob)?;
        let new = load_blob(history, objects, change.new, new_blob)?;
        let binary = is_binary(old) || is_binary(new);
        let same_content = change.old.map(|side| side.id) == change.new.map(|side| side.id);
        let mut stats = LineStats { binary, ..LineStats::default() };
        let mut writer = patch;
        if let Some((out, style)) = writer.as_mut() {
            write_file_header(out, change, *style, binary || same_content);
        }
        if binary || same_content {
            return Ok(change.to_file_change(stats));
        }
        let input = InternedInput::new(old, new);
        let mut diff = Diff::compute(Algorithm::Myers, &input);
        stats.additions = diff.count_additions();
        stats.deletions = diff.count_removals();
        if let Some((out, style)) = writer
            && !out.is_full()
        {
            diff.postprocess_lines(&input);
            let context = if style == PatchStyle::Git { 3 } else { 0 };
            // The writer stops early once the text is full; that is not an error.
            let _ = UnifiedDiff::new(&diff, &input, HunkWriter { out }, ContextSize::symmetrical(context)).consume();
        }
        Ok(change.to_file_change(stats))
    }
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

fn is_binary(data: &[u8]) -> bool {
    data.len() > MAX_DIFF_BLOB_BYTES || data[..data.len().min(BINARY_PROBE_BYTES)].contains(&0)
}

fn raw_change(change: ChangeRef<'_>) -> Option<RawChange> {
    let path = |location: &BStr| String::from_utf8_lossy(location).into_owned();
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

fn mode_of(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Blob => "100644",
        EntryKind::BlobExecutable => "100755",
        EntryKind::Link => "120000",
        EntryKind::Commit => "160000",
        EntryKind::Tree => "40000",
    }
}

fn short(id: Option<Side>) -> String {
    id.map_or_else(|| "0000000".to_string(), |side| side.id.to_hex_with_len(7).to_string())
}

/// Writes the lines before the hunks: Git's extended header, or the
/// excerpt's `--- path` line.
fn write_file_header(out: &mut BoundedText, change: &RawChange, style: PatchStyle, no_hunks: bool) {
    let old_path = change.old_path.as_deref().unwrap_or(&change.path);
    if style == PatchStyle::Excerpt {
        let title = match &change.old_path {
            Some(old) => format!("--- {old} => {}", change.path),
            None => format!("--- {}", change.path),
        };
        out.push_line(&title);
        if no_hunks && change.old.map(|side| side.id) != change.new.map(|side| side.id) {
            out.push_line("(binary content changed)");
        }
        return;
    }
    let mut lines = vec![format!("diff --git a/{old_path} b/{}", change.path)];
    match (change.old, change.new) {
        (None, Some(new)) => lines.push(format!("new file mode {}", mode_of(new.kind))),
        (Some(old), None) => lines.push(format!("deleted file mode {}", mode_of(old.kind))),
        (Some(old), Some(new)) if old.kind != new.kind => {
            lines.push(format!("old mode {}", mode_of(old.kind)));
            lines.push(format!("new mode {}", mode_of(new.kind)));
        }
        _ => {}
    }
    if let Some(old) = &change.old_path {
        let verb = if change.status == ChangeStatus::Copied { "copy" } else { "rename" };
        lines.push(format!("similarity index {}%", change.similarity.unwrap_or(100)));
        lines.push(format!("{verb} from {old}"));
        lines.push(format!("{verb} to {}", change.path));
    }
    let same_content = change.old.map(|side| side.id) == change.new.map(|side| side.id);
    if !same_content {
        let unchanged_mode = match (change.old, change.new) {
            (Some(old), Some(new)) if old.kind == new.kind => format!(" {}", mode_of(new.kind)),
            _ => String::new(),
        };
        lines.push(format!("index {}..{}{unchanged_mode}", short(change.old), short(change.new)));
        let from = if change.old.is_some() { format!("a/{old_path}") } else { "/dev/null".to_string() };
        let to = if change.new.is_some() { format!("b/{}", change.path) } else { "/dev/null".to_string() };
        if no_hunks {
            lines.push(format!("Binary files {from} and {to} differ"));
        } else {
            lines.push(format!("--- {from}"));
            lines.push(format!("+++ {to}"));
        }
    }
    for line in lines {
        if !out.push_line(&line) {
            return;
        }
    }
}

fn write_gitlink_patch(out: &mut BoundedText, change: &RawChange, style: PatchStyle) {
    let commit = |side: Option<Side>| side.filter(|side| side.kind == EntryKind::Commit);
    let (old, new) = (commit(change.old), commit(change.new));
    if style == PatchStyle::Git {
        write_file_header(out, change, style, false);
        let count = |side: Option<Side>| if side.is_some() { "1" } else { "0,0" };
        let start = |side: Option<Side>| if side.is_some() { "1" } else { "0" };
        let header = format!("@@ -{} +{} @@", range(start(old), count(old)), range(start(new), count(new)));
        out.push_line(&header);
    } else {
        out.push_line(&format!("--- {} (submodule)", change.path));
    }
    if let Some(old) = old {
        out.push_line(&format!("-Subproject commit {}", old.id));
    }
    if let Some(new) = new {
        out.push_line(&format!("+Subproject commit {}", new.id));
    }
}

fn range(start: &str, count: &str) -> String {
    if count == "1" { start.to_string() } else { format!("{start},{}", count.trim_start_matches("0,")) }
}

/// Writes hunks into a [`BoundedText`], stopping when it is full.
struct HunkWriter<'a> {
    out: &'a mut BoundedText,
}

impl ConsumeHunk for HunkWriter<'_> {
    type Out = ();

    fn consume_hunk(&mut self, header: HunkHeader, lines: &[(DiffLineKind, &[u8])]) -> std::io::Result<()> {
        let full = || std::io::Error::other("the patch text is full");
        if !self.out.push_line(&hunk_header(header)) {
            return Err(full());
        }
        let mut line = String::new();
        for (kind, content) in lines {
            line.clear();
            line.push(kind.to_prefix());
            let content = content.strip_suffix(b"\n").unwrap_or(content);
            let content = content.strip_suffix(b"\r").unwrap_or(content);
            line.push_str(&String::from_utf8_lossy(content));
            if !self.out.push_line(&line) {
                return Err(full());
            }
        }
        Ok(())
    }

    fn finish(self) -> Self::Out {}
}

/// `@@ -a,b +c,d @@` as Git writes it: a length of one is left out, and
/// an empty side starts at the line before it.
fn hunk_header(header: HunkHeader) -> String {
    let side = |start: u32, len: u32| match len {
        0 => format!("{},0", start.saturating_sub(1)),
        1 => start.to_string(),
        _ => format!("{start},{len}"),
    };
    format!(
        "@@ -{} +{} @@",
        side(header.before_hunk_start, header.before_hunk_len),
        side(header.after_hunk_start, header.after_hunk_len)
    )
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
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
}

//! The one unified-diff renderer: Git's patch format for one changed
//! path, used by commit-msg (staged and amend scopes), review and
//! simplify (`inspect::patch`) and pr-message and release-note
//! (`git::range::diff`), so the same change gets the same hunks and the
//! same line counts in every command.
//!
//! Blobs are diffed line by line with the Myers algorithm and Git's
//! indent heuristic, as plain `git diff` does. The output follows Git's:
//! `diff --git` line, `new file mode`/`deleted file mode` or
//! `old mode`/`new mode`, rename or copy lines, the `index` line (with the
//! mode when it did not change), `---`/`+++` and hunks with hunk headers
//! in Git's short form, lines kept byte for byte (a `\r` stays), and
//! `\ No newline at end of file` after a last line without one. Binary
//! content (a NUL in the first 8000 bytes) gets `Binary files ... differ`
//! and counts no lines; so does a blob larger than [`MAX_TEXT_BYTES`],
//! everywhere. A gitlink's content is its `Subproject commit <id>` line.

use super::{Entry, EntryKind, GitError, Repository};
use gix::ObjectId;
use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, Diff, InternedInput, UnifiedDiff};
use gix::objs::tree::EntryKind as TreeKind;

/// Lines of context around each change, as `git diff` shows them.
pub const CONTEXT_LINES: u32 = 3;

/// Bytes Git inspects to decide that content is binary.
const BINARY_PROBE: usize = 8000;

/// Blobs larger than this are counted like binary files: no line diff.
pub const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// Whether a side's content gets no line diff: binary as Git decides it,
/// or larger than [`MAX_TEXT_BYTES`].
pub fn is_binary(content: &[u8]) -> bool {
    content.len() > MAX_TEXT_BYTES || content[..content.len().min(BINARY_PROBE)].contains(&0)
}

/// One side of a change: the object and its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    pub id: ObjectId,
    pub kind: TreeKind,
}

impl Side {
    fn octal(self) -> &'static str {
        match self.kind {
            TreeKind::Blob => "100644",
            TreeKind::BlobExecutable => "100755",
            TreeKind::Link => "120000",
            TreeKind::Commit => "160000",
            TreeKind::Tree => "040000",
        }
    }

    fn short(side: Option<Self>) -> String {
        side.map_or_else(|| "0000000".to_string(), |side| side.id.to_hex_with_len(7).to_string())
    }
}

impl From<&Entry> for Side {
    fn from(entry: &Entry) -> Self {
        let kind = match entry.kind {
            EntryKind::Regular => TreeKind::Blob,
            EntryKind::Executable => TreeKind::BlobExecutable,
            EntryKind::Symlink => TreeKind::Link,
            EntryKind::Gitlink => TreeKind::Commit,
        };
        Self { id: entry.id, kind }
    }
}

/// A path found by similarity: renamed or copied from `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite<'a> {
    pub from: &'a str,
    pub copy: bool,
    /// The similarity in percent.
    pub similarity: u32,
}

/// What a file patch's header says about the change.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    /// The path after the change.
    pub path: &'a str,
    pub old: Option<Side>,
    pub new: Option<Side>,
    pub rewrite: Option<Rewrite<'a>>,
}

impl Change<'_> {
    fn old_path(&self) -> &str {
        self.rewrite.map_or(self.path, |rewrite| rewrite.from)
    }

    fn same_content(&self) -> bool {
        self.old.map(|side| side.id) == self.new.map(|side| side.id)
    }
}

/// The content of both sides, as far as it was read.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    Bytes {
        old: &'a [u8],
        new: &'a [u8],
    },
    /// Not read because a side is larger than [`MAX_TEXT_BYTES`]: counted
    /// like binary content.
    TooLarge,
}

/// Added and removed lines of one change; binary content has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    pub additions: u32,
    pub deletions: u32,
    pub binary: bool,
}

/// The content Git diffs for a gitlink: its `Subproject commit` line,
/// `-dirty` when the submodule's checkout has changes.
pub fn gitlink_content(id: ObjectId, dirty: bool) -> Vec<u8> {
    format!("Subproject commit {id}{}\n", if dirty { "-dirty" } else { "" }).into_bytes()
}

/// The sides of `content` that get a line diff: both text, and different.
fn text_sides(content: Content<'_>) -> Option<(&[u8], &[u8])> {
    match content {
        Content::Bytes { old, new } if old != new && !is_binary(old) && !is_binary(new) => Some((old, new)),
        _ => None,
    }
}

/// The similarity of a rename or copy in percent, as `git diff -M`
/// prints it in `similarity index`: the bytes of `old` found again in
/// `new`, counted over chunks that end at a newline or after 64 bytes (a
/// `\r` before a newline ignored in text), against the larger size.
pub fn similarity(old: &[u8], new: &[u8]) -> u32 {
    const MAX_SCORE: u64 = 60_000;
    let max_size = old.len().max(new.len()) as u64;
    if old == new {
        return 100;
    }
    if max_size == 0 {
        return 0;
    }
    let (old_spans, new_spans) = (spans(old), spans(new));
    let copied: u64 = old_spans
        .iter()
        .filter_map(|(hash, old_count)| new_spans.get(hash).map(|new_count| (*old_count).min(*new_count)))
        .sum();
    let score = copied * MAX_SCORE / max_size;
    (score * 100 / MAX_SCORE) as u32
}

/// Bytes per chunk hash, as Git's rename detection counts them.
fn spans(content: &[u8]) -> std::collections::HashMap<u32, u64> {
    const HASH_BASE: u32 = 107_927;
    let text = !content[..content.len().min(BINARY_PROBE)].contains(&0);
    let mut counts = std::collections::HashMap::new();
    let (mut accum1, mut accum2, mut length) = (0u32, 0u32, 0u64);
    for (index, &byte) in content.iter().enumerate() {
        if text && byte == b'\r' && content.get(index + 1) == Some(&b'\n') {
            continue;
        }
        let old1 = accum1;
        accum1 = (accum1 << 7) ^ (accum2 >> 25);
        accum2 = (accum2 << 7) ^ (old1 >> 25);
        accum1 = accum1.wrapping_add(u32::from(byte));
        length += 1;
        if length < 64 && byte != b'\n' {
            continue;
        }
        let hash = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASH_BASE;
        *counts.entry(hash).or_insert(0) += length;
        (accum1, accum2, length) = (0, 0, 0);
    }
    if length > 0 {
        let hash = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASH_BASE;
        *counts.entry(hash).or_insert(0) += length;
    }
    counts
}

/// Line statistics of `content`, without rendering.
pub fn stats(content: Content<'_>) -> LineStats {
    if let Some((old, new)) = text_sides(content) {
        let input = InternedInput::new(old, new);
        let diff = Diff::compute(Algorithm::Myers, &input);
        return LineStats { additions: diff.count_additions(), deletions: diff.count_removals(), binary: false };
    }
    match content {
        Content::Bytes { old, new } if old == new => LineStats::default(),
        _ => LineStats { binary: true, ..LineStats::default() },
    }
}

/// Writes the patch of `change` with `content` as lines (without their
/// newline) to `line`, which answers false to stop early (a full text);
/// `context` lines surround each change. Returns the line statistics,
/// computed whole even when the writing stopped.
pub fn write_patch(
    change: &Change<'_>,
    content: Content<'_>,
    context: u32,
    line: &mut dyn FnMut(&str) -> bool,
) -> LineStats {
    let text = text_sides(content);
    let binary = text.is_none() && stats(content).binary;
    if !write_header(change, binary, text.is_some(), line) {
        return stats(content);
    }
    match text {
        Some((old, new)) => write_hunks(old, new, context, line),
        None => stats(content),
    }
}

/// Writes only the hunks of `content`, each change with `context` lines
/// around it (none for an excerpt); binary or equal content has none.
/// Returns the line statistics, computed whole even when the writing
/// stopped.
pub fn write_content_hunks(content: Content<'_>, context: u32, line: &mut dyn FnMut(&str) -> bool) -> LineStats {
    match text_sides(content) {
        Some((old, new)) => write_hunks(old, new, context, line),
        None => stats(content),
    }
}

/// The patch of `change` as one text ending in a newline.
pub fn patch_text(change: &Change<'_>, content: Content<'_>) -> (String, LineStats) {
    let mut text = String::new();
    let stats = write_patch(change, content, CONTEXT_LINES, &mut |line| {
        text.push_str(line);
        text.push('\n');
        true
    });
    (text, stats)
}

/// Git's extended header. `hunks` tells whether hunks follow (`---` and
/// `+++` are written only then); binary content gets its `Binary files`
/// line instead. False when `line` asked to stop.
fn write_header(change: &Change<'_>, binary: bool, hunks: bool, line: &mut dyn FnMut(&str) -> bool) -> bool {
    let old_path = change.old_path();
    use git_agent_shared::quote::prefixed_key;
    let mut lines = vec![format!("diff --git {} {}", prefixed_key("a/", old_path), prefixed_key("b/", change.path))];
    match (change.old, change.new) {
        (None, Some(new)) => lines.push(format!("new file mode {}", new.octal())),
        (Some(old), None) => lines.push(format!("deleted file mode {}", old.octal())),
        (Some(old), Some(new)) if old.kind != new.kind => {
            lines.push(format!("old mode {}", old.octal()));
            lines.push(format!("new mode {}", new.octal()));
        }
        _ => {}
    }
    if let Some(rewrite) = change.rewrite {
        let verb = if rewrite.copy { "copy" } else { "rename" };
        lines.push(format!("similarity index {}%", rewrite.similarity));
        lines.push(format!("{verb} from {}", rewrite.from));
        lines.push(format!("{verb} to {}", change.path));
    }
    if !change.same_content() {
        let unchanged_mode = match (change.old, change.new) {
            (Some(old), Some(new)) if old.kind == new.kind => format!(" {}", new.octal()),
            _ => String::new(),
        };
        lines.push(format!("index {}..{}{unchanged_mode}", Side::short(change.old), Side::short(change.new)));
    }
    let from = if change.old.is_some() { prefixed_key("a/", old_path) } else { "/dev/null".to_string() };
    let to = if change.new.is_some() { prefixed_key("b/", change.path) } else { "/dev/null".to_string() };
    if binary && !change.same_content() {
        lines.push(format!("Binary files {from} and {to} differ"));
    } else if hunks {
        lines.push(format!("--- {from}"));
        lines.push(format!("+++ {to}"));
    }
    lines.iter().all(|text| line(text))
}

/// The hunks turning text `old` into text `new`, and their statistics.
fn write_hunks(old: &[u8], new: &[u8], context: u32, line: &mut dyn FnMut(&str) -> bool) -> LineStats {
    let input = InternedInput::new(old, new);
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    // Git's indent heuristic: slides hunks to where a reader expects
    // them; the counts stay the same.
    diff.postprocess_lines(&input);
    let stats = LineStats { additions: diff.count_additions(), deletions: diff.count_removals(), binary: false };
    let old_lines: Vec<&[u8]> = input.before.iter().map(|token| input.interner[*token]).collect();
    let writer = HunkWriter { line, buffer: String::new(), old_lines, function: FunctionLine::default() };
    // The writer stops early once `line` is full; that is not an error.
    let _ = UnifiedDiff::new(&diff, &input, writer, ContextSize::symmetrical(context)).consume();
    stats
}

/// The text Git appends to a hunk header: the nearest line above the
/// hunk that starts like a definition (a letter, `_` or `$`), at most
/// 80 bytes, trailing white space removed. Git looks back only to where
/// the previous hunk's search started and otherwise keeps that hunk's
/// line.
#[derive(Default)]
struct FunctionLine {
    text: String,
    /// Where the previous search started (exclusive lower bound).
    searched_from: Option<usize>,
}

impl FunctionLine {
    const MAX_BYTES: usize = 80;

    /// Updates the line for a hunk whose first old line is `first`
    /// (0-based).
    fn update(&mut self, old_lines: &[&[u8]], first: usize) {
        let stop = self.searched_from;
        self.searched_from = first.checked_sub(1);
        let Some(start) = first.checked_sub(1) else { return };
        let mut index = start;
        loop {
            if stop == Some(index) {
                return;
            }
            if let Some(found) = old_lines.get(index).and_then(|line| Self::matching(line)) {
                self.text = found;
                return;
            }
            if index == 0 {
                return;
            }
            index -= 1;
        }
    }

    fn matching(line: &[u8]) -> Option<String> {
        let first = *line.first()?;
        if !(first.is_ascii_alphabetic() || first == b'_' || first == b'$') {
            return None;
        }
        let line = &line[..line.len().min(Self::MAX_BYTES)];
        let end = line.iter().rposition(|byte| !byte.is_ascii_whitespace()).map_or(0, |last| last + 1);
        Some(String::from_utf8_lossy(&line[..end]).into_owned())
    }
}

/// Hands hunks to a line sink in Git's format.
struct HunkWriter<'l, 'f, 'd> {
    line: &'l mut (dyn FnMut(&str) -> bool + 'f),
    buffer: String,
    old_lines: Vec<&'d [u8]>,
    function: FunctionLine,
}

impl HunkWriter<'_, '_, '_> {
    fn emit(&mut self, text: &str) -> std::io::Result<()> {
        if (self.line)(text) { Ok(()) } else { Err(std::io::Error::other("the patch text is full")) }
    }
}

impl ConsumeHunk for HunkWriter<'_, '_, '_> {
    type Out = ();

    fn consume_hunk(&mut self, header: HunkHeader, lines: &[(DiffLineKind, &[u8])]) -> std::io::Result<()> {
        self.function.update(&self.old_lines, header.before_hunk_start.saturating_sub(1) as usize);
        let mut title = hunk_header(header);
        if !self.function.text.is_empty() {
            title.push(' ');
            title.push_str(&self.function.text);
        }
        self.emit(&title)?;
        for (kind, content) in lines {
            let (content, complete) = match content.strip_suffix(b"\n") {
                Some(content) => (content, true),
                None => (*content, false),
            };
            let mut buffer = std::mem::take(&mut self.buffer);
            buffer.clear();
            buffer.push(kind.to_prefix());
            buffer.push_str(&String::from_utf8_lossy(content));
            let written = self.emit(&buffer);
            self.buffer = buffer;
            written?;
            if !complete {
                self.emit("\\ No newline at end of file")?;
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

/// The patch of one path between two index or tree entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    pub path: String,
    pub adds: usize,
    pub deletes: usize,
    pub binary: bool,
    /// The patch text; empty when only stats were asked for.
    pub text: String,
}

impl Repository {
    fn side(&self, repo: &gix::Repository, entry: Option<&Entry>) -> Result<Vec<u8>, GitError> {
        match entry {
            None => Ok(Vec::new()),
            Some(entry) if entry.kind == EntryKind::Gitlink => Ok(gitlink_content(entry.id, false)),
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
        let content = Content::Bytes { old: &before, new: &after };
        let change = Change { path, old: old.map(Side::from), new: new.map(Side::from), rewrite: None };
        let (text, stats) = if render { patch_text(&change, content) } else { (String::new(), stats(content)) };
        Ok(FilePatch {
            path: path.to_string(),
            adds: stats.additions as usize,
            deletes: stats.deletions as usize,
            binary: stats.binary,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(start: u32, len: u32, new_start: u32, new_len: u32) -> String {
        hunk_header(HunkHeader {
            before_hunk_start: start,
            before_hunk_len: len,
            after_hunk_start: new_start,
            after_hunk_len: new_len,
        })
    }

    #[test]
    fn hunk_headers_follow_git() {
        assert_eq!(header(1, 0, 1, 1), "@@ -0,0 +1 @@");
        assert_eq!(header(3, 4, 3, 5), "@@ -3,4 +3,5 @@");
    }

    #[test]
    fn a_full_sink_stops_the_text_but_not_the_counts() {
        let change = Change { path: "a.txt", old: None, new: None, rewrite: None };
        let new = "1\n2\n3\n4\n5\n".repeat(10);
        let mut lines = Vec::new();
        let stats = write_patch(&change, Content::Bytes { old: b"", new: new.as_bytes() }, 3, &mut |line| {
            lines.push(line.to_string());
            lines.len() < 4
        });
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!((stats.additions, stats.deletions, stats.binary), (50, 0, false));
    }

    #[test]
    fn large_or_nul_content_counts_as_binary() {
        assert!(is_binary(b"a\0b"));
        assert!(!is_binary(b"plain\r\n"));
        assert!(is_binary(&vec![b'x'; MAX_TEXT_BYTES + 1]));
        assert_eq!(stats(Content::TooLarge), LineStats { additions: 0, deletions: 0, binary: true });
        assert_eq!(stats(Content::Bytes { old: b"\0", new: b"\0" }), LineStats::default(), "unchanged");
    }
}

//! Chunk body snapshots: the text of every file a search reads is written
//! once to an owner-only temporary file that has no name in the filesystem
//! (created unlinked, mode 0600), then mapped read-only. Embedding inputs,
//! body scoring and excerpts all read from that immutable snapshot, never
//! from the source file again, and the corpus stays out of the heap.
//!
//! The daemon keeps a segment mapped while an index it caches still uses
//! the file versions it holds, so warm searches need not re-read sources;
//! the space is returned to the system as soon as the last reference (a
//! running search or the cached index) goes away, and a crash leaves
//! nothing behind.

use memmap2::Mmap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

/// One mapped, immutable snapshot file.
pub struct BodySegment {
    map: Option<Mmap>,
    _file: File,
}

impl std::fmt::Debug for BodySegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BodySegment({} bytes)", self.map.as_ref().map_or(0, |map| map.len()))
    }
}

impl BodySegment {
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |map| map.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Text of one file inside a segment.
#[derive(Debug, Clone)]
pub struct BodyRef {
    segment: Arc<BodySegment>,
    offset: usize,
    len: usize,
}

impl BodyRef {
    /// The text; empty if the segment cannot hold it (never expected).
    pub fn text(&self) -> &str {
        let bytes = self.segment.map.as_ref().and_then(|map| map.get(self.offset..self.offset + self.len));
        bytes.and_then(|bytes| std::str::from_utf8(bytes).ok()).unwrap_or("")
    }

    /// `len` bytes of the text from `start`; empty if they are out of
    /// range or not whole characters (never expected). Only those bytes
    /// are checked, so reading every chunk of a file costs its length
    /// once, not once per chunk.
    pub fn slice(&self, start: usize, len: usize) -> &str {
        let Some(end) = start.checked_add(len).filter(|&end| end <= self.len) else { return "" };
        let bytes = self.segment.map.as_ref().and_then(|map| map.get(self.offset + start..self.offset + end));
        bytes.and_then(|bytes| std::str::from_utf8(bytes).ok()).unwrap_or("")
    }

    pub fn segment(&self) -> &Arc<BodySegment> {
        &self.segment
    }
}

/// Collects file texts for one new segment.
pub struct BodyWriter {
    out: BufWriter<File>,
    len: usize,
}

impl BodyWriter {
    /// A new unnamed owner-only temporary file in `dir`.
    pub fn new(dir: &Path) -> io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        let file = tempfile::tempfile_in(dir)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(Self { out: BufWriter::with_capacity(1 << 20, file), len: 0 })
    }

    /// Appends `text` and returns where it starts.
    pub fn append(&mut self, text: &str) -> io::Result<(usize, usize)> {
        let offset = self.len;
        self.out.write_all(text.as_bytes())?;
        self.len += text.len();
        Ok((offset, text.len()))
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Flushes and maps the segment.
    pub fn finish(self) -> io::Result<Arc<BodySegment>> {
        let file = self.out.into_inner().map_err(|error| error.into_error())?;
        let map = if self.len == 0 {
            None
        } else {
            // SAFETY: the file has no name and only this process holds it;
            // nothing writes to it after this point.
            Some(unsafe { Mmap::map(&file)? })
        };
        Ok(Arc::new(BodySegment { map, _file: file }))
    }
}

/// A reference to `len` bytes at `offset` of a finished segment.
pub fn body_ref(segment: &Arc<BodySegment>, offset: usize, len: usize) -> BodyRef {
    BodyRef { segment: Arc::clone(segment), offset, len }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn segments_are_unnamed_private_and_readable() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = BodyWriter::new(dir.path()).unwrap();
        let (a, a_len) = writer.append("first file").unwrap();
        let (b, b_len) = writer.append("second é").unwrap();
        let segment = writer.finish().unwrap();
        assert_eq!(body_ref(&segment, a, a_len).text(), "first file");
        assert_eq!(body_ref(&segment, b, b_len).text(), "second é");
        // A slice reads within its file only, and whole characters only.
        let second = body_ref(&segment, b, b_len);
        assert_eq!(second.slice(0, 6), "second");
        assert_eq!(second.slice(7, 2), "é");
        assert_eq!(second.slice(7, 1), "");
        assert_eq!(second.slice(7, 3), "");
        assert_eq!(body_ref(&segment, a, a_len).slice(6, 4), "file");
        // Nothing is visible in the folder.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mode = segment._file.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }
}

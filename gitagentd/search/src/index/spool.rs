//! New vectors on their way to the store. Each embeddings batch is
//! appended, as it arrives, to an owner-only temporary file with no name
//! in the filesystem (like [`super::bodies`]); only an offset per input
//! stays in memory. Publication then copies each vector into the shared
//! payload through one small buffer, so building an index never holds
//! every new vector in the heap: the daemon's peak grows with the mapped
//! payload, not with twice its size.
//!
//! The spool is read with positioned reads, never mapped, so its pages
//! stay in the page cache instead of the daemon's resident set.

use crate::chunking::Hash32;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Where one vector sits in the spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spooled {
    offset: u64,
    values: u32,
}

impl Spooled {
    /// How many `f32` values the vector has.
    pub fn values(self) -> usize {
        self.values as usize
    }
}

/// Collects new vectors, by embedding input.
pub struct VectorSpool {
    out: Option<BufWriter<File>>,
    len: u64,
    by_input: HashMap<Hash32, Spooled>,
}

impl VectorSpool {
    /// An empty spool; its file is created with the first vector.
    pub fn new() -> Self {
        Self { out: None, len: 0, by_input: HashMap::new() }
    }

    /// Appends the vector of `input` (little-endian `f32`s, the payload's
    /// own encoding). A second vector for the same input replaces the first.
    pub fn insert(&mut self, dir: &Path, input: Hash32, vector: &[f32]) -> io::Result<()> {
        let out = match &mut self.out {
            Some(out) => out,
            None => self.out.insert(BufWriter::with_capacity(1 << 20, private_tempfile(dir)?)),
        };
        let values = u32::try_from(vector.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an embedding has too many values"))?;
        for value in vector {
            out.write_all(&value.to_le_bytes())?;
        }
        self.by_input.insert(input, Spooled { offset: self.len, values });
        self.len += u64::from(values) * 4;
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.by_input.is_empty()
    }

    /// Flushes the file; the vectors become readable.
    pub fn finish(self) -> io::Result<NewVectors> {
        let file = self.out.map(|out| out.into_inner().map_err(|error| error.into_error())).transpose()?;
        Ok(NewVectors { file, by_input: self.by_input })
    }
}

impl Default for VectorSpool {
    fn default() -> Self {
        Self::new()
    }
}

/// The finished spool: every new vector, by embedding input.
#[derive(Default)]
pub struct NewVectors {
    file: Option<File>,
    by_input: HashMap<Hash32, Spooled>,
}

impl std::fmt::Debug for NewVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NewVectors({} vectors)", self.by_input.len())
    }
}

impl NewVectors {
    pub fn get(&self, input: &Hash32) -> Option<Spooled> {
        self.by_input.get(input).copied()
    }

    pub fn len(&self) -> usize {
        self.by_input.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_input.is_empty()
    }

    /// Reads the little-endian bytes of `at` into `buf` (replacing its
    /// contents).
    pub fn read_bytes(&self, at: Spooled, buf: &mut Vec<u8>) -> io::Result<()> {
        let file = self.file.as_ref().ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.clear();
        buf.resize(at.values() * 4, 0);
        file.read_exact_at(buf, at.offset)
    }
}

/// An unnamed owner-only temporary file in `dir`.
fn private_tempfile(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::PermissionsExt;
    let file = tempfile::tempfile_in(dir)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_through_an_unnamed_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = VectorSpool::new();
        assert!(spool.is_empty());
        spool.insert(dir.path(), [1; 32], &[1.0, -2.5]).unwrap();
        spool.insert(dir.path(), [2; 32], &[0.25, 3.0, 4.0]).unwrap();
        // Nothing is visible in the folder.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let vectors = spool.finish().unwrap();
        assert_eq!(vectors.len(), 2);
        let mut buf = Vec::new();
        let second = vectors.get(&[2; 32]).unwrap();
        assert_eq!(second.values(), 3);
        vectors.read_bytes(second, &mut buf).unwrap();
        let expected: Vec<u8> = [0.25f32, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(buf, expected);
        vectors.read_bytes(vectors.get(&[1; 32]).unwrap(), &mut buf).unwrap();
        assert_eq!(buf, [1.0f32, -2.5].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        assert_eq!(vectors.get(&[3; 32]), None);
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            vectors.file.as_ref().unwrap().metadata().unwrap().permissions().mode() & 0o777
        };
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }
}

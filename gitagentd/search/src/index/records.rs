//! A snapshot's chunk records as the daemon keeps them in memory. On disk
//! (`vectors.index.json`) a record is [`IndexRecord`]: eight strings, three
//! of them 64-digit hex hashes, so about 500 bytes of heap each once the
//! small strings are allocated. A large index (100,000 chunks) would hold
//! 50 MB that way for as long as the daemon caches its view. Here a record
//! is one flat row of about 160 bytes and no allocation of its own:
//!
//! - paths, sources, blobs and models are interned once per snapshot;
//! - hashes written as 64 lowercase hex digits are kept as their 32 bytes;
//! - a chunk id of the `c000001` form is kept as its number;
//! - a shared vector key equal to the one derived from the record's input
//!   hash, model and dimensions (what publication always writes) is kept
//!   as a flag.
//!
//! Anything else (a hand-edited or foreign file) is kept as text, so a
//! record always reads back exactly as it was written.

use super::store::{IndexRecord, vector_key};
use crate::chunking::{Hash32, hex, parse_hash};
use std::collections::HashMap;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Records {
    rows: Vec<Row>,
    texts: Vec<Box<str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    path: u32,
    source: u32,
    blob: u32,
    model: u32,
    chunk_id: ChunkId,
    start_line: i64,
    end_line: i64,
    size: i64,
    mtime_unix_nano: i64,
    offset: i64,
    dimensions: i64,
    vector_checksum: u32,
    content_hash: HashText,
    input_hash: HashText,
    vector_key: KeyText,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkId {
    /// `c` followed by the number in at least six digits.
    Ordinal(u32),
    Text(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HashText {
    /// 64 lowercase hex digits.
    Digest(Hash32),
    Text(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyText {
    /// The key [`vector_key`] derives from the record's input hash, model
    /// and dimensions.
    Derived,
    Text(u32),
}

/// Collects rows, interning their strings.
#[derive(Default)]
pub struct RecordsBuilder {
    records: Records,
    interned: HashMap<Box<str>, u32>,
}

impl RecordsBuilder {
    pub fn with_capacity(capacity: usize) -> Self {
        let mut builder = Self::default();
        builder.records.rows.reserve_exact(capacity);
        builder
    }

    fn intern(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.interned.get(text) {
            return id;
        }
        let id = u32::try_from(self.records.texts.len()).expect("fewer than 2^32 distinct record strings");
        self.records.texts.push(text.into());
        self.interned.insert(text.into(), id);
        id
    }

    fn hash_text(&mut self, text: &str) -> HashText {
        match parse_hash(text) {
            Some(digest) if hex(&digest) == text => HashText::Digest(digest),
            _ => HashText::Text(self.intern(text)),
        }
    }

    /// Appends `record`. `derived_key` is the key [`vector_key`] gives for
    /// it, when the caller computed it already.
    pub fn push(&mut self, record: &IndexRecord, derived_key: Option<&str>) {
        let chunk_id = match record.chunk_id.strip_prefix('c').and_then(|digits| digits.parse::<u32>().ok()) {
            Some(number) if format!("c{number:06}") == record.chunk_id => ChunkId::Ordinal(number),
            _ => ChunkId::Text(self.intern(&record.chunk_id)),
        };
        let key_is_derived = !record.vector_key.is_empty()
            && match derived_key {
                Some(key) => key == record.vector_key,
                None => {
                    vector_key(&record.embedding_input_hash, &record.embedding_model, record.dimensions)
                        == record.vector_key
                }
            };
        let row = Row {
            path: self.intern(&record.path),
            source: self.intern(&record.source),
            blob: self.intern(&record.blob),
            model: self.intern(&record.embedding_model),
            chunk_id,
            start_line: record.start_line,
            end_line: record.end_line,
            size: record.size,
            mtime_unix_nano: record.mtime_unix_nano,
            offset: record.offset,
            dimensions: record.dimensions,
            vector_checksum: record.vector_checksum,
            content_hash: self.hash_text(&record.content_hash),
            input_hash: self.hash_text(&record.embedding_input_hash),
            vector_key: if key_is_derived { KeyText::Derived } else { KeyText::Text(self.intern(&record.vector_key)) },
        };
        self.records.rows.push(row);
    }

    pub fn finish(mut self) -> Records {
        self.records.rows.shrink_to_fit();
        self.records.texts.shrink_to_fit();
        self.records
    }
}

impl Records {
    pub fn from_index_records(records: &[IndexRecord]) -> Self {
        let mut builder = RecordsBuilder::with_capacity(records.len());
        for record in records {
            builder.push(record, None);
        }
        builder.finish()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Record `index`; panics when out of range, like a slice.
    pub fn get(&self, index: usize) -> Record<'_> {
        Record { texts: &self.texts, row: &self.rows[index] }
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = Record<'_>> + '_ {
        self.rows.iter().map(|row| Record { texts: &self.texts, row })
    }

    /// Every record in its on-disk form.
    pub fn to_index_records(&self) -> Vec<IndexRecord> {
        self.iter().map(|record| record.to_index_record()).collect()
    }

    /// Heap bytes held, for cache accounting and tests.
    pub fn heap_bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<Row>()
            + self.texts.capacity() * std::mem::size_of::<Box<str>>()
            + self.texts.iter().map(|text| text.len()).sum::<usize>()
    }
}

/// One record, read in place.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    texts: &'a [Box<str>],
    row: &'a Row,
}

impl std::fmt::Debug for Record<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_index_record().fmt(f)
    }
}

impl<'a> Record<'a> {
    fn text(&self, id: u32) -> &'a str {
        &self.texts[id as usize]
    }

    fn hash_text(&self, hash: HashText) -> String {
        match hash {
            HashText::Digest(digest) => hex(&digest),
            HashText::Text(id) => self.text(id).to_string(),
        }
    }

    pub fn path(&self) -> &'a str {
        self.text(self.row.path)
    }

    pub fn source(&self) -> &'a str {
        self.text(self.row.source)
    }

    pub fn blob(&self) -> &'a str {
        self.text(self.row.blob)
    }

    pub fn embedding_model(&self) -> &'a str {
        self.text(self.row.model)
    }

    pub fn chunk_id(&self) -> String {
        match self.row.chunk_id {
            ChunkId::Ordinal(number) => format!("c{number:06}"),
            ChunkId::Text(id) => self.text(id).to_string(),
        }
    }

    pub fn start_line(&self) -> i64 {
        self.row.start_line
    }

    pub fn end_line(&self) -> i64 {
        self.row.end_line
    }

    pub fn size(&self) -> i64 {
        self.row.size
    }

    pub fn mtime_unix_nano(&self) -> i64 {
        self.row.mtime_unix_nano
    }

    pub fn dimensions(&self) -> i64 {
        self.row.dimensions
    }

    pub fn vector_checksum(&self) -> u32 {
        self.row.vector_checksum
    }

    /// The embedding input hash, when it is one ([`parse_hash`]).
    pub fn input_hash(&self) -> Option<Hash32> {
        match self.row.input_hash {
            HashText::Digest(digest) => Some(digest),
            HashText::Text(id) => parse_hash(self.text(id)),
        }
    }

    /// `embedding_input_hash` as written.
    pub fn embedding_input_hash(&self) -> String {
        self.hash_text(self.row.input_hash)
    }

    /// The record in its on-disk form.
    pub fn to_index_record(&self) -> IndexRecord {
        let embedding_input_hash = self.embedding_input_hash();
        let vector_key = match self.row.vector_key {
            KeyText::Derived => vector_key(&embedding_input_hash, self.embedding_model(), self.row.dimensions),
            KeyText::Text(id) => self.text(id).to_string(),
        };
        IndexRecord {
            chunk_id: self.chunk_id(),
            path: self.path().to_string(),
            source: self.source().to_string(),
            blob: self.blob().to_string(),
            start_line: self.row.start_line,
            end_line: self.row.end_line,
            content_hash: self.hash_text(self.row.content_hash),
            embedding_input_hash,
            embedding_model: self.embedding_model().to_string(),
            dimensions: self.row.dimensions,
            size: self.row.size,
            mtime_unix_nano: self.row.mtime_unix_nano,
            offset: self.row.offset,
            vector_key,
            vector_checksum: self.row.vector_checksum,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn sample(path: &str, input: &str, ordinal: usize) -> IndexRecord {
        let input_hash = hex(&Sha256::digest(input.as_bytes()));
        IndexRecord {
            chunk_id: format!("c{ordinal:06}"),
            path: path.into(),
            source: "filesystem".into(),
            blob: String::new(),
            start_line: 3,
            end_line: 9,
            content_hash: hex(&Sha256::digest(path.as_bytes())),
            vector_key: vector_key(&input_hash, "model", 4),
            embedding_input_hash: input_hash,
            embedding_model: "model".into(),
            dimensions: 4,
            size: 120,
            mtime_unix_nano: 1_700_000_000_123_456_789,
            offset: 4096,
            vector_checksum: 0xdead_beef,
        }
    }

    #[test]
    fn records_read_back_exactly_as_written() {
        let mut odd = sample("odd.go", "odd", 7);
        // Forms publication never writes: kept as text.
        odd.chunk_id = "chunk-7".into();
        odd.content_hash = "ABCDEF".into();
        odd.embedding_input_hash = hex(&Sha256::digest(b"odd")).to_uppercase();
        odd.vector_key = "not-the-derived-key".into();
        odd.blob = "0123456789abcdef0123456789abcdef01234567".into();
        odd.source = "revision".into();
        let mut local = sample("local.go", "local", 1_234_567);
        local.vector_key.clear();
        let empty = IndexRecord { chunk_id: "c12".into(), ..IndexRecord::default() };
        let originals = vec![sample("a.go", "one", 1), sample("a.go", "two", 2), odd, local, empty];
        let records = Records::from_index_records(&originals);
        assert_eq!(records.to_index_records(), originals);
        assert_eq!(records.get(1).path(), "a.go");
        assert_eq!(records.get(1).chunk_id(), "c000002");
        assert_eq!(records.get(2).chunk_id(), "chunk-7");
        assert_eq!(records.get(3).chunk_id(), "c1234567");
        assert_eq!(records.get(4).chunk_id(), "c12");
        // An uppercase input hash still parses, as it did from the text.
        assert_eq!(records.get(2).input_hash(), Some(Sha256::digest(b"odd").into()));
        assert_eq!(records.get(4).input_hash(), None);
    }

    #[test]
    fn a_large_index_costs_a_small_row_per_record() {
        // The shape of `bench-search large` (6,250 files of 17 chunks),
        // cut to 1,000 files.
        let originals: Vec<IndexRecord> = (0..17_000)
            .map(|index| sample(&format!("pkg/file_{:03}.go", index / 17), &index.to_string(), index + 1))
            .collect();
        let records = Records::from_index_records(&originals);
        let per_record = records.heap_bytes() / records.len();
        assert!(per_record <= 176, "{per_record} bytes per record");
        assert_eq!(records.get(16_999).to_index_record(), originals[16_999]);
    }
}

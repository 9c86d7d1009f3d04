//! The per-revision documents of the sync repository:
//! `indexes/<origin-sha256>/<revision-sha1>/<model-key>.json`.
//!
//! Schema v1 names the file by the first 16 hex characters of the model key
//! and stores complete records with their vectors; schema v2 uses the full
//! 64 characters and stores metadata plus (pack, slot) references. Both are
//! compact JSON followed by a newline, records sorted by identity. Imports
//! validate every field against the selected revision and every reference
//! against the pack it names before a record is trusted.
//!
//! A record of either schema holds the search index's own record
//! ([`IndexRecord`]) as its chunk, so a record is never copied field by
//! field: each schema lists its members once (`ChunkV1`, `ChunkV2`, serde
//! shapes of that type), and those lists are the wire formats.

use super::FormatError;
use super::keys::{self, Digest};
use super::merge;
use super::pack::Pack;
use super::schema::SchemaVersion;
use gitagent_search::index::store::IndexRecord;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// What a synced index must describe to belong to the selected revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The normalized origin identity of the source repository.
    pub origin: String,
    /// The full lowercase commit id.
    pub revision: String,
    pub model: String,
    pub dimensions: i64,
}

impl Target {
    pub fn validate(&self) -> Result<(), FormatError> {
        if self.origin.is_empty() {
            return Err(FormatError::Target("the origin is empty"));
        }
        if self.model.is_empty() {
            return Err(FormatError::Target("the model is empty"));
        }
        if self.dimensions <= 0 || u32::try_from(self.dimensions).is_err() {
            return Err(FormatError::Target("the dimensions are out of range"));
        }
        if !keys::is_lower_hex(&self.revision, 40) {
            return Err(FormatError::Target("the revision is not a full lowercase commit id"));
        }
        Ok(())
    }

    pub fn model_key(&self) -> Digest {
        keys::model_key(&self.model, self.dimensions)
    }

    /// The repository-relative path of this target's document.
    pub fn manifest_path(&self, schema: SchemaVersion) -> Result<String, FormatError> {
        self.validate()?;
        let model_key = keys::hex(&self.model_key());
        let name = match schema {
            SchemaVersion::V1 => &model_key[..16],
            SchemaVersion::V2 => &model_key[..],
        };
        Ok(format!("indexes/{}/{}/{name}.json", keys::hex(&keys::origin_key(&self.origin)), self.revision))
    }

    fn check(
        &self,
        path: &str,
        version: u64,
        expected: SchemaVersion,
        doc: (&str, &str, &str, i64),
    ) -> Result<(), FormatError> {
        let (origin, revision, model, dimensions) = doc;
        let field = if version != expected.number() {
            "version"
        } else if origin != self.origin {
            "origin"
        } else if revision != self.revision {
            "revision"
        } else if model != self.model {
            "model"
        } else if dimensions != self.dimensions {
            "dimensions"
        } else {
            return Ok(());
        };
        Err(FormatError::Mismatch { path: path.to_string(), field })
    }
}

/// One shared vector record: the chunk as the search index records it,
/// plus its vector. The chunk's payload reference (`offset`, `vector_key`,
/// `vector_checksum`) belongs to one machine's store: it stays empty here
/// and neither schema writes or accepts it. Schema v1 stores the record as
/// it is (`ChunkV1`), the vector as JSON numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncRecord {
    #[serde(flatten, with = "ChunkV1")]
    pub chunk: IndexRecord,
    #[serde(with = "wide_vector")]
    pub vector: Vec<f32>,
}

/// A schema-v1 record's chunk members, in the order they are written.
#[derive(Serialize, Deserialize)]
#[serde(remote = "IndexRecord")]
struct ChunkV1 {
    chunk_id: String,
    path: String,
    source: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    blob: String,
    start_line: i64,
    end_line: i64,
    content_hash: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    embedding_input_hash: String,
    embedding_model: String,
    dimensions: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    size: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    mtime_unix_nano: i64,
    #[serde(skip)]
    offset: i64,
    #[serde(skip)]
    vector_key: String,
    #[serde(skip)]
    vector_checksum: u32,
}

/// A vector as schema v1 writes it: each value widened to f64, and read
/// back as f32.
mod wide_vector {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(vector: &[f32], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(vector.iter().map(|value| f64::from(*value)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<f32>, D::Error> {
        let wide = Vec::<f64>::deserialize(deserializer)?;
        if wide.iter().any(|value| !value.is_finite()) {
            return Err(D::Error::custom("a vector holds a non-finite value"));
        }
        Ok(wide.into_iter().map(|value| value as f32).collect())
    }
}

impl SyncRecord {
    /// The record of a local chunk and its vector, the chunk's payload
    /// reference left out.
    pub fn new(chunk: IndexRecord, vector: &[f32]) -> Self {
        SyncRecord { chunk: chunk.without_payload_reference(), vector: vector.to_vec() }
    }

    /// The record identity merges key on (every metadata field).
    pub fn identity(&self) -> String {
        let chunk = &self.chunk;
        format!(
            "{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}",
            chunk.source,
            chunk.path,
            chunk.blob,
            chunk.start_line,
            chunk.end_line,
            chunk.size,
            chunk.mtime_unix_nano,
            chunk.content_hash,
            chunk.embedding_input_hash,
            chunk.embedding_model,
            chunk.dimensions
        )
    }

    /// Whether this record can be shared under `model`/`dimensions`.
    pub fn is_compatible(&self, model: &str, dimensions: i64) -> bool {
        self.chunk.embedding_model == model
            && self.chunk.dimensions == dimensions
            && i64::try_from(self.vector.len()).is_ok_and(|len| len == dimensions)
            && !self.chunk.embedding_input_hash.is_empty()
    }

    pub fn payload(&self) -> Vec<u8> {
        keys::encode_payload(&self.vector)
    }

    pub fn embedding_key(&self) -> Digest {
        keys::embedding_key(&self.chunk.embedding_input_hash, &self.chunk.embedding_model, self.chunk.dimensions)
    }
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// `indexes/<origin>/<revision>/<model-key[..16]>.json` in schema v1.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotV1 {
    pub version: u64,
    pub origin: String,
    pub revision: String,
    pub model: String,
    pub dimensions: i64,
    pub records: Vec<SyncRecord>,
}

/// A schema-v2 record: the chunk (`ChunkV2`) and a reference into the
/// manifest's pack table. The chunk's model and dimensions are the
/// manifest's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RecordV2 {
    #[serde(flatten, with = "ChunkV2")]
    pub chunk: IndexRecord,
    pub pack: u64,
    pub slot: u32,
}

/// A schema-v2 record's chunk members, in the order they are written.
#[derive(Serialize, Deserialize)]
#[serde(remote = "IndexRecord")]
struct ChunkV2 {
    chunk_id: String,
    path: String,
    source: String,
    blob: String,
    start_line: i64,
    end_line: i64,
    content_hash: String,
    embedding_input_hash: String,
    #[serde(skip)]
    embedding_model: String,
    #[serde(skip)]
    dimensions: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    size: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    mtime_unix_nano: i64,
    #[serde(skip)]
    offset: i64,
    #[serde(skip)]
    vector_key: String,
    #[serde(skip)]
    vector_checksum: u32,
}

/// `indexes/<origin>/<revision>/<model-key>.json` in schema v2.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ManifestV2 {
    pub version: u64,
    pub origin: String,
    pub revision: String,
    pub model: String,
    pub dimensions: i64,
    /// Pack digests, strictly sorted; records refer to them by index.
    pub packs: Vec<String>,
    pub records: Vec<RecordV2>,
}

fn malformed(path: &str, reason: impl Into<String>) -> FormatError {
    FormatError::Manifest { path: path.to_string(), reason: reason.into() }
}

fn malformed_json(path: &str, source: serde_json::Error) -> FormatError {
    FormatError::ManifestJson { path: path.to_string(), source }
}

fn compact_json(value: &impl Serialize) -> Vec<u8> {
    // Serializing these plain structs cannot fail (string keys, finite or
    // already-validated values); an error would be a programming mistake.
    let mut out = serde_json::to_vec(value).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Reads a schema-v1 snapshot of `target` at `path` (for error messages).
pub fn decode_v1(bytes: &[u8], path: &str, target: &Target) -> Result<Vec<SyncRecord>, FormatError> {
    let snapshot: SnapshotV1 = serde_json::from_slice(bytes).map_err(|source| malformed_json(path, source))?;
    target.check(
        path,
        snapshot.version,
        SchemaVersion::V1,
        (&snapshot.origin, &snapshot.revision, &snapshot.model, snapshot.dimensions),
    )?;
    for (index, record) in snapshot.records.iter().enumerate() {
        if !record.is_compatible(&target.model, target.dimensions) {
            return Err(malformed(path, format!("record {index} is incompatible with {}", target.model)));
        }
    }
    merge::merge_strict(Vec::new(), snapshot.records, &target.model, target.dimensions)
}

/// The bytes of the schema-v1 snapshot of `records` (merged and sorted first).
pub fn encode_v1(target: &Target, records: &[SyncRecord]) -> Result<Vec<u8>, FormatError> {
    target.validate()?;
    let records = merge::merge_strict(Vec::new(), records.to_vec(), &target.model, target.dimensions)?;
    let snapshot = SnapshotV1 {
        version: 1,
        origin: target.origin.clone(),
        revision: target.revision.clone(),
        model: target.model.clone(),
        dimensions: target.dimensions,
        records,
    };
    Ok(compact_json(&snapshot))
}

/// The target a schema-v1 snapshot or schema-v2 manifest names, read from
/// its header only (importing it validates the rest field by field).
pub fn target_of(bytes: &[u8], path: &str) -> Result<Target, FormatError> {
    #[derive(Deserialize)]
    struct Header {
        origin: String,
        revision: String,
        model: String,
        dimensions: i64,
    }
    let header: Header = serde_json::from_slice(bytes).map_err(|source| malformed_json(path, source))?;
    let target =
        Target { origin: header.origin, revision: header.revision, model: header.model, dimensions: header.dimensions };
    target.validate()?;
    Ok(target)
}

/// Parses a schema-v2 manifest without resolving its references. Each
/// record's chunk takes the manifest's model and dimensions.
pub fn parse_v2(bytes: &[u8], path: &str) -> Result<ManifestV2, FormatError> {
    let mut manifest: ManifestV2 = serde_json::from_slice(bytes).map_err(|source| malformed_json(path, source))?;
    for record in &mut manifest.records {
        record.chunk.embedding_model.clone_from(&manifest.model);
        record.chunk.dimensions = manifest.dimensions;
    }
    Ok(manifest)
}

pub fn encode_v2(manifest: &ManifestV2) -> Vec<u8> {
    compact_json(manifest)
}

/// Reads a schema-v2 manifest of `target` and resolves every record
/// through `load_pack` (given a pack digest, it returns the verified pack
/// stored at `packs/<model-key>/<digest>.pack`).
pub fn decode_v2(
    bytes: &[u8],
    path: &str,
    target: &Target,
    load_pack: &mut dyn FnMut(&Digest) -> Result<Arc<Pack>, FormatError>,
) -> Result<Vec<SyncRecord>, FormatError> {
    let manifest = parse_v2(bytes, path)?;
    resolve_v2(&manifest, path, target, load_pack)
}

/// Validates a parsed manifest field by field and returns its records.
pub fn resolve_v2(
    manifest: &ManifestV2,
    path: &str,
    target: &Target,
    load_pack: &mut dyn FnMut(&Digest) -> Result<Arc<Pack>, FormatError>,
) -> Result<Vec<SyncRecord>, FormatError> {
    target.check(
        path,
        manifest.version,
        SchemaVersion::V2,
        (&manifest.origin, &manifest.revision, &manifest.model, manifest.dimensions),
    )?;
    let model_key = target.model_key();
    let mut digests = Vec::with_capacity(manifest.packs.len());
    for (index, digest) in manifest.packs.iter().enumerate() {
        let parsed = keys::parse_digest(digest)
            .ok_or_else(|| malformed(path, format!("pack {index} is not a lowercase SHA-256")))?;
        if digests.last().is_some_and(|previous| *previous >= parsed) {
            return Err(malformed(path, "the pack table is not strictly sorted"));
        }
        digests.push(parsed);
    }
    let mut packs: Vec<Option<Arc<Pack>>> = vec![None; digests.len()];
    let mut payload_by_key: HashMap<Digest, Digest> = HashMap::new();
    let mut records = Vec::with_capacity(manifest.records.len());
    for (index, found) in manifest.records.iter().enumerate() {
        let table_index = usize::try_from(found.pack)
            .ok()
            .filter(|table_index| *table_index < digests.len())
            .ok_or_else(|| malformed(path, format!("record {index} refers to a pack outside the table")))?;
        if found.chunk.embedding_input_hash.is_empty() {
            return Err(malformed(path, format!("record {index} has no embedding input hash")));
        }
        let pack = match &packs[table_index] {
            Some(pack) => Arc::clone(pack),
            None => {
                let pack = load_pack(&digests[table_index])?;
                if pack.model_key != model_key || i64::from(pack.dimensions) != target.dimensions {
                    return Err(malformed(
                        path,
                        format!("pack {} holds another model or dimensions", keys::hex(&digests[table_index])),
                    ));
                }
                packs[table_index] = Some(Arc::clone(&pack));
                pack
            }
        };
        let entry = pack
            .entries
            .get(found.slot as usize)
            .ok_or_else(|| malformed(path, format!("record {index} refers to a slot outside its pack")))?;
        let embedding_key = keys::embedding_key(&found.chunk.embedding_input_hash, &target.model, target.dimensions);
        if entry.embedding_key != embedding_key {
            return Err(malformed(path, format!("record {index} points at another embedding")));
        }
        if let Some(previous) = payload_by_key.insert(embedding_key, entry.payload_digest)
            && previous != entry.payload_digest
        {
            return Err(FormatError::ConflictingEmbedding { key: keys::hex(&embedding_key) });
        }
        let payload = pack
            .payload(found.slot)
            .ok_or_else(|| malformed(path, format!("record {index} refers to a slot outside its pack")))?;
        let vector = keys::decode_payload(payload).unwrap_or_default();
        records.push(SyncRecord { chunk: found.chunk.clone(), vector });
    }
    if let Some(unused) = packs.iter().position(Option::is_none) {
        return Err(malformed(path, format!("pack {unused} of the table is not referenced")));
    }
    if records.windows(2).any(|pair| pair[0].identity() >= pair[1].identity()) {
        return Err(malformed(path, "the records are not strictly sorted by identity"));
    }
    Ok(records)
}

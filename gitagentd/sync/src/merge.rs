//! The merge rules of concurrent writers.
//!
//! - Records merge by identity ([`SyncRecord::identity`]); the same
//!   identity with a different payload is a conflict, never a silent pick.
//! - Packs merge by path: content addressing makes equal paths equal bytes,
//!   so a differing file at the same path is refused.
//! - When several packs hold the same (embedding, payload), manifests refer
//!   to the smallest (pack digest, slot), so two writers that saw the same
//!   packs write the same manifest.

use super::FormatError;
use super::keys::{self, Digest};
use super::manifest::{ManifestV2, RecordV2, SyncRecord, Target};
use super::pack::{self, Pack, PackItem};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Merges `incoming` into `base` by record identity. Every record must be
/// compatible with `model`/`dimensions`; the result is sorted by identity.
pub fn merge_strict(
    base: Vec<SyncRecord>,
    incoming: Vec<SyncRecord>,
    model: &str,
    dimensions: i64,
) -> Result<Vec<SyncRecord>, FormatError> {
    let mut by_identity: BTreeMap<String, SyncRecord> = BTreeMap::new();
    for record in base.into_iter().chain(incoming) {
        if !record.is_compatible(model, dimensions) {
            return Err(FormatError::Manifest {
                path: record.chunk.path.clone(),
                reason: format!("a record is incompatible with {model} ({dimensions} dimensions)"),
            });
        }
        let identity = record.identity();
        match by_identity.get(&identity) {
            Some(previous) if previous.payload() != record.payload() => {
                return Err(FormatError::ConflictingPayload { identity });
            }
            Some(_) => {}
            None => {
                by_identity.insert(identity, record);
            }
        }
    }
    Ok(by_identity.into_values().collect())
}

/// Where one vector is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PackSlot {
    pub pack: Digest,
    pub slot: u32,
}

/// Every stored (embedding key, payload digest), each at its smallest
/// reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackCatalog {
    slots: HashMap<(Digest, Digest), PackSlot>,
}

impl PackCatalog {
    pub fn add(&mut self, embedding_key: Digest, payload_digest: Digest, slot: PackSlot) {
        self.slots
            .entry((embedding_key, payload_digest))
            .and_modify(|current| *current = (*current).min(slot))
            .or_insert(slot);
    }

    pub fn add_pack(&mut self, digest: Digest, pack: &Pack) {
        for (slot, entry) in (0u32..).zip(&pack.entries) {
            self.add(entry.embedding_key, entry.payload_digest, PackSlot { pack: digest, slot });
        }
    }

    pub fn get(&self, embedding_key: &Digest, payload_digest: &Digest) -> Option<PackSlot> {
        self.slots.get(&(*embedding_key, *payload_digest)).copied()
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// A pack file a writer must add: `packs/<model-key>/<digest>.pack`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPack {
    pub path: String,
    pub digest: Digest,
    pub bytes: Vec<u8>,
}

/// Builds the schema-v2 manifest of `records` for `target`, reusing every
/// vector `catalog` already stores and packing the rest. The catalog is
/// updated with the new packs.
pub fn build_v2(
    target: &Target,
    records: Vec<SyncRecord>,
    catalog: &mut PackCatalog,
) -> Result<(ManifestV2, Vec<NewPack>), FormatError> {
    target.validate()?;
    let records = merge_strict(Vec::new(), records, &target.model, target.dimensions)?;
    let dimensions =
        u32::try_from(target.dimensions).map_err(|_| FormatError::Target("the dimensions are out of range"))?;
    let model_key = target.model_key();
    let mut payload_by_key: HashMap<Digest, Digest> = HashMap::new();
    let mut missing: BTreeMap<(Digest, Digest), PackItem> = BTreeMap::new();
    let mut identities = Vec::with_capacity(records.len());
    for record in &records {
        let embedding_key = record.embedding_key();
        let payload = record.payload();
        let payload_digest = keys::payload_digest(&payload);
        if let Some(previous) = payload_by_key.insert(embedding_key, payload_digest)
            && previous != payload_digest
        {
            return Err(FormatError::ConflictingEmbedding { key: keys::hex(&embedding_key) });
        }
        if catalog.get(&embedding_key, &payload_digest).is_none() {
            missing.entry((embedding_key, payload_digest)).or_insert_with(|| PackItem::new(embedding_key, payload));
        }
        identities.push((embedding_key, payload_digest));
    }
    let mut new_packs = Vec::new();
    for batch in pack::batches(missing.into_values().collect(), dimensions) {
        let bytes = pack::encode(dimensions, &model_key, batch)?;
        let digest = keys::payload_digest(&bytes);
        let decoded = pack::decode(&bytes, Some(&digest), "(new)")?;
        catalog.add_pack(digest, &decoded);
        new_packs.push(NewPack {
            path: format!("packs/{}/{}.pack", keys::hex(&model_key), keys::hex(&digest)),
            digest,
            bytes,
        });
    }
    let slots: Vec<PackSlot> = identities
        .iter()
        .map(|(embedding_key, payload_digest)| {
            catalog.get(embedding_key, payload_digest).ok_or_else(|| FormatError::Manifest {
                path: target.manifest_path(super::schema::SchemaVersion::V2).unwrap_or_default(),
                reason: "a vector is missing from every pack".into(),
            })
        })
        .collect::<Result<_, _>>()?;
    let table: Vec<Digest> = slots.iter().map(|slot| slot.pack).collect::<BTreeSet<_>>().into_iter().collect();
    let index_of: HashMap<Digest, u64> = (0u64..).zip(&table).map(|(index, digest)| (*digest, index)).collect();
    let manifest = ManifestV2 {
        version: 2,
        origin: target.origin.clone(),
        revision: target.revision.clone(),
        model: target.model.clone(),
        dimensions: target.dimensions,
        packs: table.iter().map(keys::hex).collect(),
        records: records
            .into_iter()
            .zip(slots)
            .map(|(record, slot)| RecordV2 { chunk: record.chunk, pack: index_of[&slot.pack], slot: slot.slot })
            .collect(),
    };
    Ok((manifest, new_packs))
}

/// Merges a pack file another writer published at the same path: only the
/// same bytes are acceptable.
pub fn merge_pack_file(path: &str, existing: &[u8], incoming: &[u8]) -> Result<(), FormatError> {
    if existing == incoming { Ok(()) } else { Err(FormatError::PackCollision { path: path.to_string() }) }
}

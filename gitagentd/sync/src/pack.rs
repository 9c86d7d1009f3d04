//! Schema-v2 vector packs: immutable files named by the SHA-256 of their
//! bytes, `packs/<model-key>/<pack-sha256>.pack`.
//!
//! Layout, little-endian throughout:
//! - header (52 bytes): magic `GITAGPK\0`, u32 version (1), u32 dimensions,
//!   u32 entry count, the 32-byte model key;
//! - one 68-byte entry per slot: 32-byte embedding key, 32-byte payload
//!   SHA-256, u32 CRC32 (IEEE) of the payload; entries strictly sorted by
//!   (embedding key, payload digest);
//! - the payloads, slot by slot, `dimensions` f32 values each.
//!
//! Decoding checks every byte it will later trust, so a pack that decodes
//! can be read slot by slot without further checks.

use super::FormatError;
use super::keys::{self, Digest};

pub const MAGIC: &[u8; 8] = b"GITAGPK\0";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 8 + 4 + 4 + 4 + 32;
pub const ENTRY_LEN: usize = 32 + 32 + 4;
/// Writers split larger sets into several packs of about this payload size.
pub const TARGET_PAYLOAD_BYTES: usize = 16 << 20;

/// One vector to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackItem {
    pub embedding_key: Digest,
    pub payload_digest: Digest,
    pub payload: Vec<u8>,
}

impl PackItem {
    pub fn new(embedding_key: Digest, payload: Vec<u8>) -> Self {
        Self { embedding_key, payload_digest: keys::payload_digest(&payload), payload }
    }

    fn order_key(&self) -> (&Digest, &Digest) {
        (&self.embedding_key, &self.payload_digest)
    }
}

/// One slot's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackEntry {
    pub embedding_key: Digest,
    pub payload_digest: Digest,
    pub crc32: u32,
}

/// A decoded, fully verified pack.
#[derive(Debug, Clone)]
pub struct Pack {
    pub dimensions: u32,
    pub model_key: Digest,
    pub entries: Vec<PackEntry>,
    payloads: Vec<u8>,
}

impl Pack {
    /// The canonical payload of `slot`.
    pub fn payload(&self, slot: u32) -> Option<&[u8]> {
        let width = self.dimensions as usize * 4;
        let start = usize::try_from(slot).ok()?.checked_mul(width)?;
        self.payloads.get(start..start.checked_add(width)?)
    }

    /// The slot holding exactly this embedding and payload.
    pub fn find(&self, embedding_key: &Digest, payload_digest: &Digest) -> Option<u32> {
        let index = self
            .entries
            .binary_search_by(|entry| {
                (&entry.embedding_key, &entry.payload_digest).cmp(&(embedding_key, payload_digest))
            })
            .ok()?;
        u32::try_from(index).ok()
    }
}

fn invalid(name: &str, reason: impl Into<String>) -> FormatError {
    FormatError::Pack { name: name.to_string(), reason: reason.into() }
}

/// Encodes one pack; `items` may come in any order, identical identities
/// are refused (a caller deduplicates first).
pub fn encode(dimensions: u32, model_key: &Digest, mut items: Vec<PackItem>) -> Result<Vec<u8>, FormatError> {
    let name = "(new)";
    if dimensions == 0 || items.is_empty() {
        return Err(invalid(name, "a pack needs positive dimensions and at least one vector"));
    }
    let count = u32::try_from(items.len()).map_err(|_| invalid(name, "too many vectors for one pack"))?;
    let width = dimensions as usize * 4;
    items.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    for (index, item) in items.iter().enumerate() {
        if item.payload.len() != width || keys::payload_digest(&item.payload) != item.payload_digest {
            return Err(invalid(name, format!("vector {index} does not match its dimensions or digest")));
        }
        if index > 0 && items[index - 1].order_key() == item.order_key() {
            return Err(invalid(name, "the same vector appears twice"));
        }
    }
    let total = items
        .len()
        .checked_mul(ENTRY_LEN + width)
        .and_then(|body| body.checked_add(HEADER_LEN))
        .ok_or_else(|| invalid(name, "pack size overflows"))?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&dimensions.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(model_key);
    for item in &items {
        out.extend_from_slice(&item.embedding_key);
        out.extend_from_slice(&item.payload_digest);
        out.extend_from_slice(&crc32fast::hash(&item.payload).to_le_bytes());
    }
    for item in &items {
        out.extend_from_slice(&item.payload);
    }
    Ok(out)
}

fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3]])
}

fn digest_at(bytes: &[u8], offset: usize) -> Digest {
    let mut digest = [0u8; 32];
    digest.copy_from_slice(&bytes[offset..offset + 32]);
    digest
}

/// A pack's header and entry table, without its payloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryTable {
    pub model_key: Digest,
    pub entries: Vec<PackEntry>,
}

/// Reads a pack's header and entry table, checking the framing, the size
/// and the entry order but neither the digest nor the payloads: for a pack
/// whose full verification a valid derived catalog already records (the
/// Git object of a pack never changes).
pub fn entry_table(bytes: &[u8], name: &str) -> Result<EntryTable, FormatError> {
    let (_, count, _) = header(bytes, name)?;
    Ok(EntryTable { model_key: digest_at(bytes, 20), entries: entries(bytes, count, name)? })
}

/// Checks the header and overall size; returns (dimensions, entry count,
/// payload width in bytes).
fn header(bytes: &[u8], name: &str) -> Result<(u32, usize, usize), FormatError> {
    if bytes.len() < HEADER_LEN {
        return Err(invalid(name, "the header is truncated"));
    }
    if &bytes[..8] != MAGIC {
        return Err(invalid(name, "the magic is not GITAGPK"));
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(invalid(name, format!("version {version} is not supported")));
    }
    let dimensions = u32_at(bytes, 12);
    let count = u32_at(bytes, 16);
    if dimensions == 0 || count == 0 {
        return Err(invalid(name, "dimensions and count must be positive"));
    }
    let width = dimensions as u64 * 4;
    let body = (bytes.len() - HEADER_LEN) as u64;
    if u64::from(count) * (ENTRY_LEN as u64 + width) != body {
        return Err(invalid(name, "the size does not match its dimensions and count"));
    }
    Ok((dimensions, count as usize, width as usize))
}

/// The strictly sorted entry table of a pack whose header checked out.
fn entries(bytes: &[u8], count: usize, name: &str) -> Result<Vec<PackEntry>, FormatError> {
    let mut entries: Vec<PackEntry> = Vec::with_capacity(count);
    for slot in 0..count {
        let offset = HEADER_LEN + slot * ENTRY_LEN;
        let entry = PackEntry {
            embedding_key: digest_at(bytes, offset),
            payload_digest: digest_at(bytes, offset + 32),
            crc32: u32_at(bytes, offset + 64),
        };
        if let Some(previous) = entries.last()
            && (previous.embedding_key, previous.payload_digest) >= (entry.embedding_key, entry.payload_digest)
        {
            return Err(invalid(name, "the entries are not strictly sorted"));
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// Decodes and verifies a pack. `expected_digest` is the digest its path
/// names; `name` labels errors.
pub fn decode(bytes: &[u8], expected_digest: Option<&Digest>, name: &str) -> Result<Pack, FormatError> {
    let (dimensions, count, width) = header(bytes, name)?;
    if let Some(expected) = expected_digest
        && keys::payload_digest(bytes) != *expected
    {
        return Err(invalid(name, "the content does not match the digest in its name"));
    }
    let entries = entries(bytes, count, name)?;
    let payloads_start = HEADER_LEN + count * ENTRY_LEN;
    for (slot, entry) in entries.iter().enumerate() {
        let payload = &bytes[payloads_start + slot * width..payloads_start + (slot + 1) * width];
        if crc32fast::hash(payload) != entry.crc32 {
            return Err(invalid(name, format!("slot {slot} fails its CRC32")));
        }
        if keys::payload_digest(payload) != entry.payload_digest {
            return Err(invalid(name, format!("slot {slot} does not match its payload digest")));
        }
    }
    Ok(Pack { dimensions, model_key: digest_at(bytes, 20), entries, payloads: bytes[payloads_start..].to_vec() })
}

/// Splits `items` into batches of about [`TARGET_PAYLOAD_BYTES`], in pack
/// order, so equal inputs always produce equal packs.
pub fn batches(mut items: Vec<PackItem>, dimensions: u32) -> Vec<Vec<PackItem>> {
    items.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    let per_pack = (TARGET_PAYLOAD_BYTES / (dimensions.max(1) as usize * 4)).max(1);
    let mut out = Vec::new();
    while !items.is_empty() {
        let rest = items.split_off(per_pack.min(items.len()));
        out.push(std::mem::replace(&mut items, rest));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(input: &str, vector: &[f32]) -> PackItem {
        PackItem::new(keys::embedding_key(input, "m", vector.len() as i64), keys::encode_payload(vector))
    }

    fn sample() -> (Digest, Vec<u8>) {
        let model = keys::model_key("m", 2);
        let bytes = encode(2, &model, vec![item("b", &[3.0, 4.0]), item("a", &[1.0, 2.0])]).unwrap();
        (model, bytes)
    }

    #[test]
    fn round_trip_with_layout() {
        let (model, bytes) = sample();
        assert_eq!(bytes.len(), HEADER_LEN + 2 * ENTRY_LEN + 2 * 8);
        assert_eq!(&bytes[..8], b"GITAGPK\0");
        assert_eq!(&bytes[8..20], &[1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0]);
        let digest = keys::payload_digest(&bytes);
        let pack = decode(&bytes, Some(&digest), "p").unwrap();
        assert_eq!((pack.dimensions, pack.model_key, pack.entries.len()), (2, model, 2));
        let a = item("a", &[1.0, 2.0]);
        let slot = pack.find(&a.embedding_key, &a.payload_digest).unwrap();
        assert_eq!(pack.payload(slot).unwrap(), a.payload.as_slice());
        assert_eq!(pack.entries[slot as usize].crc32, crc32fast::hash(&a.payload));
        assert_eq!(pack.payload(2), None);
        // Sorting makes the bytes independent of the input order.
        let again = encode(2, &model, vec![item("a", &[1.0, 2.0]), item("b", &[3.0, 4.0])]).unwrap();
        assert_eq!(again, bytes);
    }

    #[test]
    fn encode_refuses_bad_items() {
        let model = keys::model_key("m", 2);
        assert!(encode(2, &model, vec![]).is_err());
        assert!(encode(0, &model, vec![item("a", &[1.0, 2.0])]).is_err());
        assert!(encode(3, &model, vec![item("a", &[1.0, 2.0])]).is_err());
        assert!(encode(2, &model, vec![item("a", &[1.0, 2.0]), item("a", &[1.0, 2.0])]).is_err());
        let mut forged = item("a", &[1.0, 2.0]);
        forged.payload_digest[0] ^= 1;
        assert!(encode(2, &model, vec![forged]).is_err());
    }

    #[test]
    fn every_corruption_is_refused() {
        let (_, bytes) = sample();
        let digest = keys::payload_digest(&bytes);
        let reason = |bytes: &[u8], expected: Option<&Digest>| match decode(bytes, expected, "p") {
            Err(FormatError::Pack { reason, .. }) => reason,
            other => panic!("accepted a corrupt pack: {other:?}"),
        };
        assert!(reason(&bytes[..HEADER_LEN - 1], None).contains("truncated"));
        assert!(reason(&bytes[..bytes.len() - 1], None).contains("size"));
        let mut extended = bytes.clone();
        extended.push(0);
        assert!(reason(&extended, None).contains("size"));
        let flip = |offset: usize| {
            let mut copy = bytes.clone();
            copy[offset] ^= 0x01;
            copy
        };
        assert!(reason(&flip(0), None).contains("magic"));
        assert!(reason(&flip(8), None).contains("version"));
        assert!(reason(&flip(12), None).contains("size"));
        assert!(reason(&flip(16), None).contains("size"));
        assert!(reason(&flip(30), Some(&digest)).contains("digest in its name"));
        assert!(reason(&flip(HEADER_LEN + 64), None).contains("CRC32"));
        assert!(reason(&flip(HEADER_LEN + 40), None).contains("payload digest"));
        assert!(reason(&flip(bytes.len() - 1), None).contains("CRC32"));
        // Swapping the two entries and their payloads breaks only the order.
        let mut swapped = bytes.clone();
        let (first, second) = swapped[HEADER_LEN..HEADER_LEN + 2 * ENTRY_LEN].split_at_mut(ENTRY_LEN);
        first.swap_with_slice(second);
        let payloads = HEADER_LEN + 2 * ENTRY_LEN;
        let (first, second) = swapped[payloads..].split_at_mut(8);
        first.swap_with_slice(second);
        assert!(reason(&swapped, None).contains("sorted"));
        let mut zero = bytes.clone();
        zero[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert!(reason(&zero, None).contains("positive"));
        // Every single-bit flip anywhere is refused once the name's digest is checked.
        for offset in 0..bytes.len() {
            for bit in 0..8 {
                let mut copy = bytes.clone();
                copy[offset] ^= 1 << bit;
                assert!(decode(&copy, Some(&digest), "p").is_err(), "flip at {offset}:{bit} accepted");
            }
        }
    }

    #[test]
    fn batches_split_by_payload_size() {
        let dims = (TARGET_PAYLOAD_BYTES / 4 / 2) as u32;
        let one =
            |input: &str| PackItem::new(keys::embedding_key(input, "m", i64::from(dims)), vec![0u8; dims as usize * 4]);
        let split = batches(vec![one("c"), one("a"), one("b")], dims);
        assert_eq!(split.iter().map(Vec::len).collect::<Vec<_>>(), [2, 1]);
        assert!(split[0][0].embedding_key < split[0][1].embedding_key);
        assert_eq!(batches(vec![], 4).len(), 0);
    }
}

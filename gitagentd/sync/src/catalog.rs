//! The derived current-HEAD vector-pack catalog of a schema-v2 sync
//! repository: its binary form (`GITAGCT\0`, version 2) and the checks that
//! tie a decoded catalog to the validated pack tree it claims to describe.
//!
//! The catalog is only a cache of what the immutable packs already say, so
//! the decoder is deliberately unforgiving: any byte that does not describe
//! exactly the current validated tree rejects the whole file and the caller
//! rebuilds it from the packs. This module is pure: it never reads or writes
//! files and never panics on input, whatever the bytes.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The first eight bytes of every catalog.
pub const MAGIC: [u8; 8] = *b"GITAGCT\0";
/// The only version this build writes and reads.
pub const VERSION: u32 = 2;

const HEADER_LEN: usize = 44;
const PACK_ROW_LEN: usize = 36;
const SLOT_ROW_LEN: usize = 72;
const CHECKSUM_LEN: usize = 32;

/// A raw SHA-256 value (pack digest, embedding key or vector digest).
pub type Sha256Bytes = [u8; 32];
/// A raw Git SHA-1 object id.
pub type CommitId = [u8; 20];

/// One slot of a validated pack's entry table: the identity stored in the
/// pack's header for that slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlotIdentity {
    /// SHA-256 embedding identity (model, dimensions, exact final input).
    pub embedding_key: Sha256Bytes,
    /// SHA-256 of the canonical little-endian f32 payload.
    pub vector_digest: Sha256Bytes,
}

/// One regular `.pack` file of the current validated tree, with its entry
/// table in slot order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedPack {
    pub digest: Sha256Bytes,
    pub entries: Vec<SlotIdentity>,
}

/// The validated pack tree at one HEAD: what a catalog must describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackTree {
    pub head: CommitId,
    /// Sorted by digest, no duplicates (see [`PackTree::new`]).
    packs: Vec<ValidatedPack>,
}

impl PackTree {
    /// The tree at `head` holding `packs` in any order; a digest listed twice
    /// keeps its first entry table (a content-addressed path cannot hold two).
    pub fn new(head: CommitId, mut packs: Vec<ValidatedPack>) -> Self {
        packs.sort_by_key(|pack| pack.digest);
        packs.dedup_by(|b, a| a.digest == b.digest);
        Self { head, packs }
    }

    pub fn packs(&self) -> &[ValidatedPack] {
        &self.packs
    }

    /// The catalog of this tree: one pack row per pack, one slot row per
    /// slot, in the canonical order.
    pub fn catalog(&self) -> Catalog {
        let packs =
            self.packs.iter().map(|pack| PackRow { digest: pack.digest, slot_count: slot_count(pack) }).collect();
        let slots = self
            .packs
            .iter()
            .enumerate()
            .flat_map(|(index, pack)| {
                pack.entries.iter().enumerate().map(move |(slot, identity)| SlotRow {
                    identity: *identity,
                    pack: u32::try_from(index).unwrap_or(u32::MAX),
                    slot: u32::try_from(slot).unwrap_or(u32::MAX),
                })
            })
            .collect();
        Catalog { head: self.head, packs, slots }
    }
}

fn slot_count(pack: &ValidatedPack) -> u32 {
    u32::try_from(pack.entries.len()).unwrap_or(u32::MAX)
}

/// A pack-table row: the pack's digest and its declared slot count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackRow {
    pub digest: Sha256Bytes,
    pub slot_count: u32,
}

/// A slot row: one pack slot's identity and where it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRow {
    pub identity: SlotIdentity,
    /// Index into the pack table.
    pub pack: u32,
    pub slot: u32,
}

/// A decoded (or about to be encoded) catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    pub head: CommitId,
    pub packs: Vec<PackRow>,
    pub slots: Vec<SlotRow>,
}

/// Where the canonical selection found one embedding identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selected {
    pub pack: Sha256Bytes,
    pub slot: u32,
    pub vector_digest: Sha256Bytes,
}

/// Why a catalog was rejected. Every variant means "rebuild from the packs".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("pack catalog is truncated: {len} bytes, at least {needed} needed")]
    Truncated { len: usize, needed: usize },
    #[error("pack catalog has a wrong magic")]
    WrongMagic,
    #[error("pack catalog version {0} is not supported (expected 2)")]
    UnknownVersion(u32),
    #[error("pack catalog describes HEAD {found}, not the current HEAD {expected}")]
    WrongHead { found: String, expected: String },
    #[error("pack catalog counts overflow (packs {packs}, entries {entries})")]
    CountOverflow { packs: u32, entries: u64 },
    #[error("pack catalog has {0} trailing bytes")]
    Trailing(usize),
    #[error("pack catalog checksum does not match its contents")]
    Checksum,
    #[error("pack catalog pack rows are duplicated or unsorted at row {0}")]
    UnsortedPacks(usize),
    #[error("pack catalog slot rows are duplicated or unsorted at row {0}")]
    UnsortedSlots(usize),
    #[error("pack catalog slot row {row} names pack-table index {pack} of {packs}")]
    PackIndexOutOfRange { row: usize, pack: u32, packs: usize },
    #[error("pack catalog slot row {row} names slot {slot} of a pack with {count} slots")]
    SlotOutOfRange { row: usize, slot: u32, count: u32 },
    #[error("pack catalog slot rows do not cover every declared slot ({entries} rows, {declared} declared)")]
    IncompleteCoverage { entries: u64, declared: u64 },
    #[error("pack catalog lists pack {0} that is not in the current tree")]
    ExtraPack(String),
    #[error("pack catalog is missing current-tree pack {0}")]
    MissingPack(String),
    #[error("pack catalog declares {found} slots for pack {pack}, the pack has {expected}")]
    SlotCountMismatch { pack: String, found: u32, expected: u32 },
    #[error("pack catalog slot {slot} of pack {pack} does not match the pack's entry table")]
    EntryMismatch { pack: String, slot: u32 },
    #[error("packs disagree on the vector of embedding {0}")]
    ConflictingDigests(String),
}

/// The encoded size of a catalog with these counts, or `None` on overflow.
fn encoded_len(packs: u32, entries: u64) -> Option<usize> {
    let packs = usize::try_from(packs).ok()?.checked_mul(PACK_ROW_LEN)?;
    let entries = usize::try_from(entries).ok()?.checked_mul(SLOT_ROW_LEN)?;
    HEADER_LEN.checked_add(packs)?.checked_add(entries)?.checked_add(CHECKSUM_LEN)
}

/// Encodes `catalog` in the version-2 layout. Callers build the catalog with
/// [`PackTree::catalog`], which yields the canonical row order.
pub fn encode(catalog: &Catalog) -> Vec<u8> {
    let pack_count = u32::try_from(catalog.packs.len()).unwrap_or(u32::MAX);
    let entry_count = catalog.slots.len() as u64;
    let mut out = Vec::with_capacity(encoded_len(pack_count, entry_count).unwrap_or(0));
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&catalog.head);
    out.extend_from_slice(&pack_count.to_le_bytes());
    out.extend_from_slice(&entry_count.to_le_bytes());
    for pack in &catalog.packs {
        out.extend_from_slice(&pack.digest);
        out.extend_from_slice(&pack.slot_count.to_le_bytes());
    }
    for slot in &catalog.slots {
        out.extend_from_slice(&slot.identity.embedding_key);
        out.extend_from_slice(&slot.identity.vector_digest);
        out.extend_from_slice(&slot.pack.to_le_bytes());
        out.extend_from_slice(&slot.slot.to_le_bytes());
    }
    let checksum = Sha256::digest(&out);
    out.extend_from_slice(&checksum);
    out
}

/// Decodes `bytes` and accepts them only when they describe exactly `tree`:
/// the same HEAD, every pack of the tree once, every slot once in order and
/// each slot's identity equal to the pack's validated entry.
pub fn decode(bytes: &[u8], tree: &PackTree) -> Result<Catalog, CatalogError> {
    let catalog = decode_structure(bytes, &tree.head)?;
    verify_against(&catalog, tree)?;
    Ok(catalog)
}

/// The checks that need no pack tree: framing, checksum, ordering, ranges
/// and coverage.
fn decode_structure(bytes: &[u8], expected_head: &CommitId) -> Result<Catalog, CatalogError> {
    if bytes.len() < HEADER_LEN + CHECKSUM_LEN {
        return Err(CatalogError::Truncated { len: bytes.len(), needed: HEADER_LEN + CHECKSUM_LEN });
    }
    let mut reader = Reader { bytes, at: 0 };
    if reader.array::<8>() != MAGIC {
        return Err(CatalogError::WrongMagic);
    }
    let version = u32::from_le_bytes(reader.array());
    if version != VERSION {
        return Err(CatalogError::UnknownVersion(version));
    }
    let head: CommitId = reader.array();
    let pack_count = u32::from_le_bytes(reader.array());
    let entry_count = u64::from_le_bytes(reader.array());
    let needed = encoded_len(pack_count, entry_count)
        .ok_or(CatalogError::CountOverflow { packs: pack_count, entries: entry_count })?;
    if bytes.len() < needed {
        return Err(CatalogError::Truncated { len: bytes.len(), needed });
    }
    if bytes.len() > needed {
        return Err(CatalogError::Trailing(bytes.len() - needed));
    }
    let (body, checksum) = bytes.split_at(needed - CHECKSUM_LEN);
    if Sha256::digest(body).as_slice() != checksum {
        return Err(CatalogError::Checksum);
    }
    if &head != expected_head {
        return Err(CatalogError::WrongHead { found: hex(&head), expected: hex(expected_head) });
    }
    // The lengths were checked above, so every row read below is in bounds.
    let mut packs: Vec<PackRow> = Vec::with_capacity(pack_count as usize);
    for row in 0..pack_count as usize {
        let pack = PackRow { digest: reader.array(), slot_count: u32::from_le_bytes(reader.array()) };
        if packs.last().is_some_and(|previous| previous.digest >= pack.digest) {
            return Err(CatalogError::UnsortedPacks(row));
        }
        packs.push(pack);
    }
    let declared: u64 = packs.iter().map(|pack| u64::from(pack.slot_count)).sum();
    if declared != entry_count {
        return Err(CatalogError::IncompleteCoverage { entries: entry_count, declared });
    }
    // With the total equal to the declared sum, strictly increasing
    // (pack, slot) rows that stay in range cover every slot exactly once.
    let mut slots: Vec<SlotRow> = Vec::with_capacity(needed / SLOT_ROW_LEN);
    for row in 0..entry_count as usize {
        let slot = SlotRow {
            identity: SlotIdentity { embedding_key: reader.array(), vector_digest: reader.array() },
            pack: u32::from_le_bytes(reader.array()),
            slot: u32::from_le_bytes(reader.array()),
        };
        let Some(pack) = packs.get(slot.pack as usize) else {
            return Err(CatalogError::PackIndexOutOfRange { row, pack: slot.pack, packs: packs.len() });
        };
        if slot.slot >= pack.slot_count {
            return Err(CatalogError::SlotOutOfRange { row, slot: slot.slot, count: pack.slot_count });
        }
        if slots.last().is_some_and(|previous| (previous.pack, previous.slot) >= (slot.pack, slot.slot)) {
            return Err(CatalogError::UnsortedSlots(row));
        }
        slots.push(slot);
    }
    Ok(Catalog { head, packs, slots })
}

/// The checks against the validated pack tree: the same pack set, the same
/// slot counts and the same identity in every slot.
fn verify_against(catalog: &Catalog, tree: &PackTree) -> Result<(), CatalogError> {
    let mut expected = tree.packs.iter();
    for row in &catalog.packs {
        let Some(pack) = expected.next() else {
            return Err(CatalogError::ExtraPack(hex(&row.digest)));
        };
        if pack.digest != row.digest {
            return Err(if pack.digest < row.digest {
                CatalogError::MissingPack(hex(&pack.digest))
            } else {
                CatalogError::ExtraPack(hex(&row.digest))
            });
        }
        if slot_count(pack) != row.slot_count || pack.entries.len() > u32::MAX as usize {
            return Err(CatalogError::SlotCountMismatch {
                pack: hex(&pack.digest),
                found: row.slot_count,
                expected: slot_count(pack),
            });
        }
    }
    if let Some(missing) = expected.next() {
        return Err(CatalogError::MissingPack(hex(&missing.digest)));
    }
    for slot in &catalog.slots {
        let pack = &tree.packs[slot.pack as usize];
        if pack.entries.get(slot.slot as usize) != Some(&slot.identity) {
            return Err(CatalogError::EntryMismatch { pack: hex(&pack.digest), slot: slot.slot });
        }
    }
    Ok(())
}

/// The canonical selection over a decoded catalog: each embedding identity
/// resolves to its lexicographically smallest (pack digest, slot) reference;
/// two different vector digests for one identity are a conflict.
pub fn select(catalog: &Catalog) -> Result<BTreeMap<Sha256Bytes, Selected>, CatalogError> {
    let mut selected: BTreeMap<Sha256Bytes, Selected> = BTreeMap::new();
    for row in &catalog.slots {
        let Some(pack) = catalog.packs.get(row.pack as usize) else {
            return Err(CatalogError::PackIndexOutOfRange { row: 0, pack: row.pack, packs: catalog.packs.len() });
        };
        let candidate = Selected { pack: pack.digest, slot: row.slot, vector_digest: row.identity.vector_digest };
        match selected.get_mut(&row.identity.embedding_key) {
            None => {
                selected.insert(row.identity.embedding_key, candidate);
            }
            Some(existing) if existing.vector_digest != candidate.vector_digest => {
                return Err(CatalogError::ConflictingDigests(hex(&row.identity.embedding_key)));
            }
            Some(existing) => {
                if (candidate.pack, candidate.slot) < (existing.pack, existing.slot) {
                    *existing = candidate;
                }
            }
        }
    }
    Ok(selected)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A cursor over bytes whose length the caller has already checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(source) = self.bytes.get(self.at..self.at + N) {
            out.copy_from_slice(source);
        }
        self.at += N;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> Sha256Bytes {
        Sha256::digest([b'k', seed]).into()
    }

    fn vector(seed: u8) -> Sha256Bytes {
        Sha256::digest([b'v', seed]).into()
    }

    fn identity(seed: u8) -> SlotIdentity {
        SlotIdentity { embedding_key: key(seed), vector_digest: vector(seed) }
    }

    fn pack(seed: u8, entries: &[u8]) -> ValidatedPack {
        ValidatedPack {
            digest: Sha256::digest([b'p', seed]).into(),
            entries: entries.iter().map(|&e| identity(e)).collect(),
        }
    }

    const HEAD: CommitId = [7u8; 20];

    /// Three packs, one of them empty, one identity duplicated across packs.
    fn tree() -> PackTree {
        PackTree::new(HEAD, vec![pack(1, &[1, 2, 3]), pack(2, &[3, 4]), pack(3, &[])])
    }

    fn with_checksum(mut body: Vec<u8>) -> Vec<u8> {
        body.truncate(body.len() - CHECKSUM_LEN);
        let checksum = Sha256::digest(&body);
        body.extend_from_slice(&checksum);
        body
    }

    /// Re-encodes a modified catalog with a valid checksum, so each test
    /// reaches the rule it names instead of the checksum.
    fn reencode(edit: impl FnOnce(&mut Catalog)) -> Vec<u8> {
        let mut catalog = tree().catalog();
        edit(&mut catalog);
        encode(&catalog)
    }

    fn rejects(bytes: &[u8]) -> CatalogError {
        match decode(bytes, &tree()) {
            Ok(catalog) => panic!("accepted {catalog:?}"),
            Err(error) => error,
        }
    }

    #[test]
    fn round_trips_the_exact_layout() {
        let tree = tree();
        let bytes = encode(&tree.catalog());
        assert_eq!(bytes.len(), 44 + 3 * 36 + 5 * 72 + 32);
        assert_eq!(&bytes[..8], b"GITAGCT\0");
        assert_eq!(&bytes[8..12], &2u32.to_le_bytes());
        assert_eq!(&bytes[12..32], &HEAD);
        assert_eq!(&bytes[32..36], &3u32.to_le_bytes());
        assert_eq!(&bytes[36..44], &5u64.to_le_bytes());
        let first = &tree.packs()[0];
        assert_eq!(&bytes[44..76], &first.digest);
        assert_eq!(&bytes[76..80], &(first.entries.len() as u32).to_le_bytes());
        let slots = 44 + 3 * 36;
        assert_eq!(&bytes[slots..slots + 32], &first.entries[0].embedding_key);
        assert_eq!(&bytes[slots + 32..slots + 64], &first.entries[0].vector_digest);
        assert_eq!(&bytes[slots + 64..slots + 72], &[0u8; 8]);
        let end = bytes.len() - 32;
        assert_eq!(&bytes[end..], Sha256::digest(&bytes[..end]).as_slice());
        assert_eq!(decode(&bytes, &tree), Ok(tree.catalog()));
    }

    #[test]
    fn empty_tree_round_trips() {
        let tree = PackTree::new(HEAD, Vec::new());
        let bytes = encode(&tree.catalog());
        assert_eq!(bytes.len(), 76);
        assert_eq!(decode(&bytes, &tree).map(|catalog| catalog.slots.len()), Ok(0));
    }

    #[test]
    fn selection_picks_the_smallest_reference_for_duplicates() {
        let tree = tree();
        let catalog = decode(&encode(&tree.catalog()), &tree).expect("valid");
        let selected = select(&catalog).expect("no conflict");
        assert_eq!(selected.len(), 4);
        let holders: Vec<&ValidatedPack> =
            tree.packs().iter().filter(|pack| pack.entries.contains(&identity(3))).collect();
        let smallest = holders.iter().map(|pack| pack.digest).min().expect("two holders");
        assert_eq!(selected[&key(3)].pack, smallest);
    }

    #[test]
    fn selection_rejects_conflicting_digests() {
        let mut conflicting = pack(9, &[1]);
        conflicting.entries[0].vector_digest = vector(42);
        let tree = PackTree::new(HEAD, vec![pack(1, &[1]), conflicting]);
        assert!(matches!(select(&tree.catalog()), Err(CatalogError::ConflictingDigests(_))));
    }

    #[test]
    fn rejects_wrong_magic() {
        let mut bytes = encode(&tree().catalog());
        bytes[0] = b'X';
        assert_eq!(rejects(&with_checksum(bytes)), CatalogError::WrongMagic);
    }

    #[test]
    fn rejects_unknown_and_future_versions() {
        for version in [0u32, 1, 3, u32::MAX] {
            let mut bytes = encode(&tree().catalog());
            bytes[8..12].copy_from_slice(&version.to_le_bytes());
            assert_eq!(rejects(&with_checksum(bytes)), CatalogError::UnknownVersion(version));
        }
    }

    #[test]
    fn rejects_wrong_head() {
        let bytes = encode(&tree().catalog());
        let other = PackTree::new([8u8; 20], tree().packs().to_vec());
        assert!(matches!(decode(&bytes, &other), Err(CatalogError::WrongHead { .. })));
    }

    #[test]
    fn rejects_count_overflow() {
        let mut bytes = encode(&tree().catalog());
        bytes[36..44].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(rejects(&with_checksum(bytes)), CatalogError::CountOverflow { .. }));
        let mut bytes = encode(&tree().catalog());
        bytes[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        bytes[36..44].copy_from_slice(&(u64::MAX / 72).to_le_bytes());
        assert!(matches!(rejects(&with_checksum(bytes)), CatalogError::CountOverflow { .. }));
    }

    #[test]
    fn rejects_truncation_and_trailing_bytes() {
        let bytes = encode(&tree().catalog());
        assert!(matches!(rejects(&bytes[..10]), CatalogError::Truncated { .. }));
        assert!(matches!(rejects(&with_checksum(bytes[..bytes.len() - 72].to_vec())), CatalogError::Truncated { .. }));
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0u8; 32]);
        assert_eq!(rejects(&with_checksum(longer)), CatalogError::Trailing(32));
    }

    #[test]
    fn rejects_checksum_mismatch() {
        let mut bytes = encode(&tree().catalog());
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(rejects(&bytes), CatalogError::Checksum);
        let mut bytes = encode(&tree().catalog());
        bytes[50] ^= 1;
        assert_eq!(rejects(&bytes), CatalogError::Checksum);
    }

    #[test]
    fn rejects_duplicate_and_unsorted_packs() {
        let bytes = reencode(|catalog| catalog.packs.swap(0, 1));
        assert_eq!(rejects(&bytes), CatalogError::UnsortedPacks(1));
        let bytes = reencode(|catalog| catalog.packs[1] = catalog.packs[0]);
        assert_eq!(rejects(&bytes), CatalogError::UnsortedPacks(1));
    }

    #[test]
    fn rejects_duplicate_and_unsorted_slots() {
        let bytes = reencode(|catalog| catalog.slots.swap(0, 1));
        assert_eq!(rejects(&bytes), CatalogError::UnsortedSlots(1));
        let bytes = reencode(|catalog| {
            catalog.slots[1] = catalog.slots[0];
            catalog.slots[2] = catalog.slots[0];
        });
        assert_eq!(rejects(&bytes), CatalogError::UnsortedSlots(1));
    }

    #[test]
    fn rejects_out_of_range_pack_index_and_slot() {
        let bytes = reencode(|catalog| {
            let last = catalog.slots.len() - 1;
            catalog.slots[last].pack = 3;
        });
        assert!(matches!(rejects(&bytes), CatalogError::PackIndexOutOfRange { pack: 3, .. }));
        let bytes = reencode(|catalog| {
            let last = catalog.slots.len() - 1;
            catalog.slots[last].slot = 2;
        });
        assert!(matches!(rejects(&bytes), CatalogError::SlotOutOfRange { slot: 2, .. }));
    }

    #[test]
    fn rejects_incomplete_coverage() {
        let bytes = reencode(|catalog| {
            catalog.slots.pop();
        });
        assert!(matches!(rejects(&bytes), CatalogError::IncompleteCoverage { .. }));
        let bytes = reencode(|catalog| catalog.packs[0].slot_count += 1);
        assert!(matches!(rejects(&bytes), CatalogError::IncompleteCoverage { .. }));
    }

    #[test]
    fn rejects_missing_and_extra_packs() {
        let full = tree();
        let partial = PackTree::new(HEAD, full.packs()[..2].to_vec());
        let bytes = encode(&partial.catalog());
        assert!(matches!(decode(&bytes, &full), Err(CatalogError::MissingPack(_))));
        let bytes = encode(&full.catalog());
        assert!(matches!(decode(&bytes, &partial), Err(CatalogError::ExtraPack(_))));
        let mut replaced = full.packs().to_vec();
        replaced[0].digest = Sha256::digest(b"other").into();
        let replaced = PackTree::new(HEAD, replaced);
        assert!(matches!(decode(&bytes, &replaced), Err(CatalogError::MissingPack(_) | CatalogError::ExtraPack(_))));
    }

    #[test]
    fn rejects_slot_count_and_entry_mismatches() {
        let full = tree();
        let mut grown = full.packs().to_vec();
        grown[2].entries.push(identity(5));
        let grown = PackTree::new(HEAD, grown);
        assert!(matches!(decode(&encode(&full.catalog()), &grown), Err(CatalogError::SlotCountMismatch { .. })));
        let bytes = reencode(|catalog| catalog.slots[0].identity.embedding_key = key(99));
        assert!(matches!(rejects(&bytes), CatalogError::EntryMismatch { slot: 0, .. }));
        let bytes = reencode(|catalog| catalog.slots[3].identity.vector_digest = vector(99));
        assert!(matches!(rejects(&bytes), CatalogError::EntryMismatch { .. }));
    }

    /// Every single-byte change, every truncation and every extension of a
    /// valid catalog is rejected without a panic, with the checksum left as
    /// is and with the checksum recomputed (so the structural rules, not only
    /// the checksum, must catch each change of the body).
    #[test]
    fn no_mutation_is_accepted() {
        let tree = tree();
        let valid = encode(&tree.catalog());
        let body = valid.len() - CHECKSUM_LEN;
        let mut checked = 0usize;
        for at in 0..valid.len() {
            for mask in [0x01u8, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff] {
                let mut mutated = valid.clone();
                mutated[at] ^= mask;
                assert!(decode(&mutated, &tree).is_err(), "flip {mask:#x} at {at} accepted");
                if at < body {
                    let rehashed = with_checksum(mutated);
                    assert!(decode(&rehashed, &tree).is_err(), "rehashed flip {mask:#x} at {at} accepted");
                }
                checked += 1;
            }
        }
        for len in 0..valid.len() {
            assert!(decode(&valid[..len], &tree).is_err(), "truncation to {len} accepted");
            if len >= CHECKSUM_LEN {
                let rehashed = with_checksum(valid[..len].to_vec());
                assert!(decode(&rehashed, &tree).is_err(), "rehashed truncation to {len} accepted");
            }
        }
        for extra in [1usize, 31, 32, 36, 72, 73] {
            for fill in [0x00u8, 0xff] {
                let mut longer = valid.clone();
                longer.extend(std::iter::repeat_n(fill, extra));
                assert!(decode(&longer, &tree).is_err(), "extension by {extra} accepted");
                let mut rehashed = valid[..body].to_vec();
                rehashed.extend(std::iter::repeat_n(fill, extra));
                rehashed.extend_from_slice(&[0u8; CHECKSUM_LEN]);
                assert!(decode(&with_checksum(rehashed), &tree).is_err(), "rehashed extension by {extra} accepted");
            }
        }
        assert_eq!(checked, valid.len() * 9);
        assert_eq!(decode(&valid, &tree), Ok(tree.catalog()));
    }

    /// Arbitrary bytes from a fixed-seed generator never panic the decoder,
    /// including headers whose counts claim huge tables.
    #[test]
    fn random_inputs_never_panic() {
        let tree = tree();
        let valid = encode(&tree.catalog());
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let mut bytes = valid.clone();
            let edits = next() % 8 + 1;
            for _ in 0..edits {
                let at = (next() as usize) % bytes.len();
                bytes[at] = next() as u8;
            }
            let keep = (next() as usize) % (bytes.len() + 1);
            bytes.truncate(keep.max(bytes.len() / 2));
            let rehashed = if bytes.len() >= CHECKSUM_LEN { with_checksum(bytes.clone()) } else { bytes.clone() };
            for candidate in [bytes, rehashed] {
                if candidate != valid {
                    assert!(decode(&candidate, &tree).is_err());
                }
            }
        }
    }
}

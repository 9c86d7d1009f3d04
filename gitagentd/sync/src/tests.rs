//! The formats together: what one writer produces, another reads back;
//! every tampered field is refused.

use super::FormatError;
use super::keys::{self, Digest};
use super::manifest::{self, ManifestV2, SyncRecord, Target};
use super::merge::{self, NewPack, PackCatalog};
use super::pack::{self, Pack};
use super::schema::SchemaVersion;
use super::tree::{self, TreeEntry, TreeRules};
use gitagent_search::index::store::IndexRecord;
use std::collections::HashMap;
use std::sync::Arc;

const MODEL: &str = "text-embedding-3-small";

fn target() -> Target {
    Target {
        origin: "github.com/acme/widgets".into(),
        revision: "0123456789abcdef0123456789abcdef01234567".into(),
        model: MODEL.into(),
        dimensions: 3,
    }
}

fn record(path: &str, input: &str, vector: [f32; 3]) -> SyncRecord {
    SyncRecord {
        chunk: IndexRecord {
            chunk_id: format!("{path}#1"),
            path: path.into(),
            source: "revision".into(),
            blob: "aa".repeat(20),
            start_line: 1,
            end_line: 9,
            content_hash: format!("content-{input}"),
            embedding_input_hash: input.into(),
            embedding_model: MODEL.into(),
            dimensions: 3,
            size: 120,
            ..IndexRecord::default()
        },
        vector: vector.to_vec(),
    }
}

fn records() -> Vec<SyncRecord> {
    vec![record("src/b.rs", "hb", [0.5, 0.25, -1.0]), record("src/a.rs", "ha", [1.0, 2.0, 3.0])]
}

/// Packs as a repository holds them, loaded through the same checks as an import.
#[derive(Default)]
struct Packs(HashMap<Digest, Vec<u8>>);

impl Packs {
    fn add(&mut self, new: &[NewPack]) {
        for pack in new {
            assert_eq!(
                pack.path,
                format!("packs/{}/{}.pack", keys::hex(&target().model_key()), keys::hex(&pack.digest))
            );
            self.0.insert(pack.digest, pack.bytes.clone());
        }
    }

    fn loader(&self) -> impl FnMut(&Digest) -> Result<Arc<Pack>, FormatError> + '_ {
        |digest| {
            let bytes = self
                .0
                .get(digest)
                .ok_or_else(|| FormatError::Pack { name: keys::hex(digest), reason: "missing".into() })?;
            pack::decode(bytes, Some(digest), &keys::hex(digest)).map(Arc::new)
        }
    }

    fn resolve(&self, manifest: &ManifestV2) -> Result<Vec<SyncRecord>, FormatError> {
        let bytes = manifest::encode_v2(manifest);
        manifest::decode_v2(&bytes, "m.json", &target(), &mut self.loader())
    }
}

fn sorted(mut records: Vec<SyncRecord>) -> Vec<SyncRecord> {
    records.sort_by_key(SyncRecord::identity);
    records
}

#[test]
fn manifest_paths_use_the_origin_revision_and_model_keys() {
    let origin = keys::hex(&keys::origin_key("github.com/acme/widgets"));
    let model = keys::hex(&keys::model_key(MODEL, 3));
    let revision = &target().revision;
    assert_eq!(target().manifest_path(SchemaVersion::V2).unwrap(), format!("indexes/{origin}/{revision}/{model}.json"));
    assert_eq!(
        target().manifest_path(SchemaVersion::V1).unwrap(),
        format!("indexes/{origin}/{revision}/{}.json", &model[..16])
    );
    for broken in [
        Target { origin: String::new(), ..target() },
        Target { model: String::new(), ..target() },
        Target { dimensions: 0, ..target() },
        Target { revision: "0123456789ABCDEF0123456789abcdef01234567".into(), ..target() },
        Target { revision: "abc".into(), ..target() },
    ] {
        assert!(matches!(broken.manifest_path(SchemaVersion::V2), Err(FormatError::Target(_))), "{broken:?}");
    }
}

#[test]
fn v1_snapshots_round_trip_and_validate_every_field() {
    let bytes = manifest::encode_v1(&target(), &records()).unwrap();
    assert!(bytes.ends_with(b"}\n") && !bytes.contains(&b' '), "compact JSON and a newline");
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.starts_with("{\"version\":1,\"origin\":\"github.com/acme/widgets\",\"revision\":"), "{text}");
    assert!(
        text.contains(
            "\"embedding_model\":\"text-embedding-3-small\",\"dimensions\":3,\"size\":120,\"vector\":[1.0,2.0,3.0]"
        ),
        "{text}"
    );
    let decoded = manifest::decode_v1(&bytes, "s.json", &target()).unwrap();
    assert_eq!(decoded, sorted(records()));

    for (field, other) in [
        ("origin", Target { origin: "github.com/acme/other".into(), ..target() }),
        ("revision", Target { revision: "1".repeat(40), ..target() }),
        ("model", Target { model: "other".into(), ..target() }),
        ("dimensions", Target { dimensions: 4, ..target() }),
    ] {
        match manifest::decode_v1(&bytes, "s.json", &other) {
            Err(FormatError::Mismatch { field: found, .. }) => assert_eq!(found, field),
            result => panic!("{field}: {result:?}"),
        }
    }
    let edit = |from: &str, to: &str| text.replacen(from, to, 1).into_bytes();
    assert!(matches!(
        manifest::decode_v1(&edit("\"version\":1", "\"version\":2"), "s.json", &target()),
        Err(FormatError::Mismatch { field: "version", .. })
    ));
    for (from, to) in [
        ("\"version\":1,", "\"version\":1,\"extra\":true,"),
        ("\"chunk_id\"", "\"chunk\""),
        ("[1.0,2.0,3.0]", "[1.0,2.0]"),
        ("\"embedding_input_hash\":\"ha\",", ""),
        ("\"dimensions\":3,\"size\"", "\"dimensions\":4,\"size\""),
        ("}\n", "}{}\n"),
    ] {
        assert!(manifest::decode_v1(&edit(from, to), "s.json", &target()).is_err(), "{from} -> {to}");
    }
}

#[test]
fn v1_duplicates_with_conflicting_vectors_fail() {
    let mut conflicting = records();
    conflicting.push(SyncRecord { vector: vec![9.0, 9.0, 9.0], ..conflicting[0].clone() });
    assert!(matches!(manifest::encode_v1(&target(), &conflicting), Err(FormatError::ConflictingPayload { .. })));
    let mut identical = records();
    identical.push(identical[0].clone());
    let bytes = manifest::encode_v1(&target(), &identical).unwrap();
    assert_eq!(manifest::decode_v1(&bytes, "s.json", &target()).unwrap().len(), 2);
}

#[test]
fn v2_manifests_round_trip_through_packs() {
    let mut catalog = PackCatalog::default();
    let mut packs = Packs::default();
    let (manifest, new) = merge::build_v2(&target(), records(), &mut catalog).unwrap();
    assert_eq!(new.len(), 1);
    packs.add(&new);
    assert_eq!(manifest.packs, vec![keys::hex(&new[0].digest)]);
    let text = String::from_utf8(manifest::encode_v2(&manifest)).unwrap();
    assert!(
        text.contains(
            "\"content_hash\":\"content-ha\",\"embedding_input_hash\":\"ha\",\"size\":120,\"pack\":0,\"slot\":"
        ),
        "{text}"
    );
    assert_eq!(packs.resolve(&manifest).unwrap(), sorted(records()));

    // A second writer with one more record reuses the stored vectors and
    // packs only the new one.
    let mut more = records();
    more.push(record("src/c.rs", "hc", [7.0, 8.0, 9.0]));
    let (second, new) = merge::build_v2(&target(), more.clone(), &mut catalog).unwrap();
    assert_eq!(new.len(), 1);
    assert_eq!(pack::decode(&new[0].bytes, None, "p").unwrap().entries.len(), 1);
    packs.add(&new);
    assert_eq!(second.packs.len(), 2);
    assert_eq!(packs.resolve(&second).unwrap(), sorted(more));
}

#[test]
fn identical_payloads_share_one_slot_and_the_smallest_reference() {
    // Two chunks with the same embedding input and vector: one pack entry.
    let mut twin = records()[1].clone();
    twin.chunk.path = "src/twin.rs".into();
    twin.chunk.chunk_id = "src/twin.rs#1".into();
    let mut with_twin = records();
    with_twin.push(twin);
    let (manifest, new) = merge::build_v2(&target(), with_twin, &mut PackCatalog::default()).unwrap();
    assert_eq!(pack::decode(&new[0].bytes, None, "p").unwrap().entries.len(), 2);
    let refs: Vec<_> =
        manifest.records.iter().filter(|r| r.chunk.embedding_input_hash == "ha").map(|r| (r.pack, r.slot)).collect();
    assert_eq!(refs.len(), 2);
    assert_eq!(refs[0], refs[1]);

    // The same vector stored in two packs: manifests pick the smallest digest.
    let model_key = target().model_key();
    let item = |r: &SyncRecord| pack::PackItem::new(r.embedding_key(), r.payload());
    let all = records();
    let first = pack::encode(3, &model_key, vec![item(&all[0])]).unwrap();
    let second = pack::encode(3, &model_key, vec![item(&all[0]), item(&all[1])]).unwrap();
    let mut catalog = PackCatalog::default();
    let mut packs = Packs::default();
    for bytes in [&first, &second] {
        let digest = keys::payload_digest(bytes);
        catalog.add_pack(digest, &pack::decode(bytes, Some(&digest), "p").unwrap());
        packs.0.insert(digest, bytes.clone());
    }
    let smallest = keys::payload_digest(&first).min(keys::payload_digest(&second));
    let (manifest, new) = merge::build_v2(&target(), vec![all[0].clone()], &mut catalog).unwrap();
    assert!(new.is_empty());
    assert_eq!(manifest.packs, vec![keys::hex(&smallest)]);
    assert_eq!(packs.resolve(&manifest).unwrap(), vec![all[0].clone()]);
}

#[test]
fn v2_imports_refuse_every_tampered_field() {
    let mut catalog = PackCatalog::default();
    let mut packs = Packs::default();
    let mut three = records();
    three.push(record("src/c.rs", "hc", [7.0, 8.0, 9.0]));
    let (base, new) = merge::build_v2(&target(), three, &mut catalog).unwrap();
    packs.add(&new);
    // A second pack so the table has two entries to reorder.
    let (extra, new) =
        merge::build_v2(&target(), vec![record("src/d.rs", "hd", [4.0, 4.0, 4.0])], &mut catalog).unwrap();
    packs.add(&new);
    let mut two_packs = base.clone();
    two_packs.packs.push(extra.packs[0].clone());
    two_packs.packs.sort();
    let moved = usize::from(two_packs.packs[0] == extra.packs[0]);
    for record in &mut two_packs.records {
        record.pack = moved as u64;
    }
    let mut last = extra.records[0].clone();
    last.pack = (1 - moved) as u64;
    two_packs.records.push(last);
    two_packs.records.sort_by_key(|r| r.chunk.path.clone());
    assert_eq!(packs.resolve(&two_packs).unwrap().len(), 4, "the untampered two-pack manifest is valid");

    type Edit = fn(&mut ManifestV2);
    let edits: Vec<(&str, Edit)> = vec![
        ("version", |m| m.version = 1),
        ("origin", |m| m.origin.push('x')),
        ("revision", |m| m.revision = "f".repeat(40)),
        ("model", |m| m.model.push('x')),
        ("dimensions", |m| m.dimensions = 4),
        ("uppercase digest", |m| m.packs[0] = m.packs[0].to_uppercase()),
        ("short digest", |m| m.packs[0].truncate(63)),
        ("unsorted packs", |m| {
            m.packs.swap(0, 1);
        }),
        ("unknown pack", |m| m.packs[1] = "f".repeat(64)),
        ("pack out of range", |m| m.records[0].pack = 2),
        ("slot out of range", |m| m.records[0].slot = 99),
        ("no input hash", |m| m.records[0].chunk.embedding_input_hash.clear()),
        ("other embedding", |m| m.records[0].chunk.embedding_input_hash = "zz".into()),
        ("unreferenced pack", |m| {
            let keep = m.records[3].pack;
            m.records.retain(|r| r.pack != keep);
        }),
        ("unsorted records", |m| m.records.swap(0, 1)),
        ("duplicate record", |m| {
            let first = m.records[0].clone();
            m.records.insert(0, first);
        }),
    ];
    for (what, edit) in edits {
        let mut tampered = two_packs.clone();
        edit(&mut tampered);
        assert!(packs.resolve(&tampered).is_err(), "{what} accepted");
    }
    // Unknown members, missing members, negative numbers, trailing values.
    let text = String::from_utf8(manifest::encode_v2(&base)).unwrap();
    for (from, to) in [
        ("\"version\":2,", "\"version\":2,\"extra\":1,"),
        ("\"blob\":", "\"blobs\":"),
        ("\"pack\":0", "\"pack\":-1"),
        ("}\n", "}[]\n"),
    ] {
        let bytes = text.replacen(from, to, 1).into_bytes();
        assert!(manifest::decode_v2(&bytes, "m.json", &target(), &mut packs.loader()).is_err(), "{from} -> {to}");
    }
}

#[test]
fn packs_of_another_model_or_with_forged_slots_are_refused() {
    let (manifest, new) = merge::build_v2(&target(), records(), &mut PackCatalog::default()).unwrap();
    // The same vectors packed under another model key.
    let other_model = keys::model_key("other", 3);
    let items = records().iter().map(|r| pack::PackItem::new(r.embedding_key(), r.payload())).collect();
    let foreign = pack::encode(3, &other_model, items).unwrap();
    let mut packs = Packs::default();
    packs.0.insert(new[0].digest, foreign);
    // The loader checks the digest in the name first.
    assert!(packs.resolve(&manifest).is_err());
    let foreign_digest = keys::payload_digest(&packs.0[&new[0].digest]);
    let bytes = packs.0.remove(&new[0].digest).unwrap();
    packs.0.insert(foreign_digest, bytes);
    let mut renamed = manifest.clone();
    renamed.packs = vec![keys::hex(&foreign_digest)];
    match packs.resolve(&renamed) {
        Err(FormatError::Manifest { reason, .. }) => assert!(reason.contains("another model"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn concurrent_writers_merge_by_identity_and_conflicts_fail() {
    let all = records();
    let machine_a = vec![all[0].clone()];
    let machine_b = vec![all[1].clone(), all[0].clone()];
    let merged = merge::merge_strict(machine_a.clone(), machine_b, MODEL, 3).unwrap();
    assert_eq!(merged, sorted(records()));

    let conflicting = vec![SyncRecord { vector: vec![0.0, 0.0, 1.0], ..all[0].clone() }];
    match merge::merge_strict(machine_a, conflicting, MODEL, 3) {
        Err(FormatError::ConflictingPayload { identity }) => assert_eq!(identity, all[0].identity()),
        other => panic!("{other:?}"),
    }
    // Same embedding input, two vectors, different chunks: one manifest cannot hold both.
    let mut other_chunk = SyncRecord { vector: vec![0.0, 0.0, 1.0], ..all[0].clone() };
    other_chunk.chunk.path = "src/z.rs".into();
    assert!(matches!(
        merge::build_v2(&target(), vec![all[0].clone(), other_chunk], &mut PackCatalog::default()),
        Err(FormatError::ConflictingEmbedding { .. })
    ));
    let mut incompatible = all[1].clone();
    incompatible.chunk.embedding_model = "other".into();
    assert!(merge::merge_strict(vec![], vec![incompatible], MODEL, 3).is_err());

    assert!(merge::merge_pack_file("packs/a/b.pack", b"same", b"same").is_ok());
    assert!(matches!(merge::merge_pack_file("packs/a/b.pack", b"one", b"two"), Err(FormatError::PackCollision { .. })));
}

#[test]
fn tree_paths_are_classified_strictly() {
    let origin = "a".repeat(64);
    let revision = "b".repeat(40);
    let v1 = format!("indexes/{origin}/{revision}/{}.json", "c".repeat(16));
    let v2 = format!("indexes/{origin}/{revision}/{}.json", "c".repeat(64));
    let pack = format!("packs/{}/{}.pack", "d".repeat(64), "e".repeat(64));
    let v1_tree = TreeRules::Strict(SchemaVersion::V1);
    let v2_tree = TreeRules::Strict(SchemaVersion::V2);
    assert_eq!(tree::classify("schema.json", false, v1_tree), Some(TreeEntry::Schema));
    assert!(matches!(tree::classify(&v1, false, v1_tree), Some(TreeEntry::ManifestV1 { .. })));
    assert_eq!(tree::classify(&v1, false, v2_tree), None, "v1 manifests make a v2 tree mixed");
    assert!(matches!(tree::classify(&v1, false, TreeRules::MixedMigration), Some(TreeEntry::ManifestV1 { .. })));
    assert!(matches!(tree::classify(&v2, false, v2_tree), Some(TreeEntry::ManifestV2 { .. })));
    assert_eq!(tree::classify(&v2, false, v1_tree), None);
    assert!(matches!(tree::classify(&pack, false, v2_tree), Some(TreeEntry::Pack { .. })));
    assert_eq!(tree::classify(&pack, false, v1_tree), None);
    assert_eq!(tree::classify("packs", true, v1_tree), None);
    for unsafe_path in [
        "README.md".to_string(),
        "schema.json/x".into(),
        format!("indexes/{}", "A".repeat(64)),
        format!("indexes/{origin}/{}", "b".repeat(39)),
        format!("indexes/{origin}/{revision}/{}.JSON", "c".repeat(64)),
        format!("indexes/{origin}/{revision}/{}.json", "c".repeat(32)),
        format!("indexes/{origin}/{revision}/x/{}.json", "c".repeat(64)),
        format!("packs/{}/{}.pack.tmp", "d".repeat(64), "e".repeat(64)),
        format!("packs/{}/x.pack", "d".repeat(64)),
    ] {
        assert_eq!(tree::classify(&unsafe_path, false, TreeRules::MixedMigration), None, "{unsafe_path}");
    }
    assert_eq!(tree::classify("schema.json", true, v2_tree), None, "a directory named schema.json");
    assert_eq!(tree::classify(&v2, true, v2_tree), None, "a directory named like a manifest");
}

#[test]
fn unsafe_trees_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert!(!tree::has_data(root).unwrap());
    std::fs::create_dir_all(root.join(".git/objects")).unwrap();
    std::fs::write(root.join(".git/whatever"), b"x").unwrap();
    assert!(!tree::has_data(root).unwrap(), ".git alone is no data");
    let rules = TreeRules::Strict(SchemaVersion::V2);
    std::fs::write(root.join("schema.json"), super::schema::bytes(SchemaVersion::V2)).unwrap();
    let manifest = target().manifest_path(SchemaVersion::V2).unwrap();
    std::fs::create_dir_all(root.join(&manifest).parent().unwrap()).unwrap();
    std::fs::write(root.join(&manifest), b"{}").unwrap();
    let files = tree::check(root, rules).unwrap();
    assert_eq!(files.iter().map(|(path, _)| path.as_str()).collect::<Vec<_>>(), [manifest.as_str(), "schema.json"]);

    let stray = root.join("indexes/notes.txt");
    std::fs::write(&stray, b"x").unwrap();
    assert!(matches!(tree::check(root, rules), Err(FormatError::UnsafePath(path)) if path == stray));
    std::fs::remove_file(&stray).unwrap();

    let link = root.join("packs");
    std::os::unix::fs::symlink("/tmp", &link).unwrap();
    assert!(matches!(tree::check(root, rules), Err(FormatError::Symlink(path)) if path == link));
    std::fs::remove_file(&link).unwrap();

    // A socket (short path: socket addresses are limited to ~100 bytes).
    let socket = root.join("s");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert!(matches!(tree::check(root, rules), Err(FormatError::NonRegular(path)) if path == socket));
    std::fs::remove_file(&socket).unwrap();

    let v1 = target().manifest_path(SchemaVersion::V1).unwrap();
    std::fs::write(root.join(&v1), b"{}").unwrap();
    assert!(matches!(tree::check(root, rules), Err(FormatError::UnsafePath(_))), "mixed trees are refused");
    assert_eq!(tree::check(root, TreeRules::MixedMigration).unwrap().len(), 3, "except by migrate");
}

/// The exact bytes both schemas write, so a change to the record types
/// cannot change the wire format unnoticed: an empty blob, a zero size and
/// a set modification time each take their schema's rule.
#[test]
fn both_schemas_write_the_same_bytes_as_before() {
    let mut bare = record("src/c.rs", "hc", [0.5, -2.0, 0.125]);
    bare.chunk.blob.clear();
    bare.chunk.size = 0;
    bare.chunk.mtime_unix_nano = 1_700_000_000_000_000_000;
    let mut all = records();
    all.push(bare);
    let v1 = manifest::encode_v1(&target(), &all).unwrap();
    assert_eq!(String::from_utf8(v1.clone()).unwrap(), include_str!("golden/v1.json"));
    assert_eq!(manifest::decode_v1(&v1, "s.json", &target()).unwrap(), sorted(all.clone()));
    let mut packs = Packs::default();
    let (v2, new) = merge::build_v2(&target(), all.clone(), &mut PackCatalog::default()).unwrap();
    packs.add(&new);
    assert_eq!(String::from_utf8(manifest::encode_v2(&v2)).unwrap(), include_str!("golden/v2.json"));
    assert_eq!(packs.resolve(&v2).unwrap(), sorted(all));
}

/// A record member neither schema names is refused, including the local
/// store's payload reference, which never leaves the machine.
#[test]
fn unknown_record_members_are_refused() {
    let v1 = include_str!("golden/v1.json");
    let v2 = include_str!("golden/v2.json");
    let mut packs = Packs::default();
    let (_, new) = merge::build_v2(&target(), records(), &mut PackCatalog::default()).unwrap();
    packs.add(&new);
    assert!(manifest::decode_v1(v1.as_bytes(), "s.json", &target()).is_ok());
    for member in ["\"extra\":1,", "\"offset\":0,", "\"vector_key\":\"k\",", "\"vector_checksum\":0,", "\"pack\":0,"] {
        let bytes = v1.replacen("\"path\":", &format!("{member}\"path\":"), 1).into_bytes();
        match manifest::decode_v1(&bytes, "s.json", &target()) {
            Err(FormatError::ManifestJson { source, .. }) => {
                assert!(source.to_string().contains("unknown field"), "{member}: {source}")
            }
            result => panic!("v1 accepted {member}: {result:?}"),
        }
    }
    for member in ["\"extra\":1,", "\"offset\":0,", "\"embedding_model\":\"m\",", "\"dimensions\":3,", "\"vector\":[],"]
    {
        let bytes = v2.replacen("\"path\":", &format!("{member}\"path\":"), 1).into_bytes();
        match manifest::decode_v2(&bytes, "m.json", &target(), &mut packs.loader()) {
            Err(FormatError::ManifestJson { source, .. }) => {
                assert!(source.to_string().contains("unknown field"), "{member}: {source}")
            }
            result => panic!("v2 accepted {member}: {result:?}"),
        }
    }
}

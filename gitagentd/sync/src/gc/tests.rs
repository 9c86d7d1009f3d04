use super::*;
use gitagent_search::index::store::{Publication, RecordToWrite, Snapshot, VectorData};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

const DIMS: usize = 4;

fn project(meta_root: &Path, seed: u8) -> PathBuf {
    meta_root.join(hex_id(seed))
}

fn hex_id(seed: u8) -> String {
    Sha256::digest([seed]).iter().map(|byte| format!("{byte:02x}")).collect()
}

fn vector(seed: usize) -> Vec<f32> {
    (0..DIMS).map(|i| (seed * 10 + i) as f32 + 0.5).collect()
}

fn record(path: &str, input: &str) -> IndexRecord {
    let hash: String = Sha256::digest(input.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect();
    IndexRecord {
        chunk_id: format!("c-{input}"),
        path: path.into(),
        source: "filesystem".into(),
        start_line: 1,
        end_line: 2,
        content_hash: hash.clone(),
        embedding_input_hash: hash,
        embedding_model: "m".into(),
        dimensions: DIMS as i64,
        size: 10,
        mtime_unix_nano: 20,
        ..IndexRecord::default()
    }
}

/// Publishes an index of `inputs` (input i has vector(i)) at `search/fs/<name>`.
fn publish_index(root: &Path, name: &str, inputs: &[usize]) -> PathBuf {
    let dir = store::search_root(root).join("fs").join(name);
    let vectors: Vec<Vec<f32>> = inputs.iter().map(|&i| vector(i)).collect();
    let records = inputs
        .iter()
        .zip(&vectors)
        .map(|(&i, values)| RecordToWrite {
            record: record(&format!("f{i}.rs"), &format!("input-{i}")),
            vector: VectorData::Values(values),
            stored: None,
        })
        .collect();
    let manifest = Manifest {
        mode: "filesystem".into(),
        root: format!("/r/{name}"),
        embedding_model: "m".into(),
        dimensions: DIMS as i64,
        created_at: "2026-01-02T03:04:05Z".into(),
        ..Manifest::default()
    };
    store::publish(
        Publication { metadata_dir: root, index_dir: &dir, manifest, records, force_new: false, crash_at: None },
        &|| false,
    )
    .expect("publish");
    dir
}

/// Every vector of a loaded index, by input; `None` for a cache miss.
fn vectors_of(root: &Path, dir: &Path) -> BTreeMap<String, Option<Vec<f32>>> {
    let snapshot: Snapshot = store::load(root, dir, &|| false).expect("load");
    assert!(snapshot.is_complete(), "{} is not complete", dir.display());
    (0..snapshot.records.len())
        .map(|i| (snapshot.records.get(i).embedding_input_hash(), snapshot.vector(i).map(<[f32]>::to_vec)))
        .collect()
}

fn all_present(vectors: &BTreeMap<String, Option<Vec<f32>>>) -> bool {
    vectors.values().all(Option::is_some)
}

/// Path -> (kind, bytes, mtime) of every entry below `dir`.
fn tree_state(dir: &Path) -> BTreeMap<PathBuf, (bool, Vec<u8>, i64, i64)> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let meta = fs::symlink_metadata(&current).unwrap();
        let bytes = if meta.is_file() { fs::read(&current).unwrap() } else { Vec::new() };
        out.insert(current.clone(), (meta.is_dir(), bytes, meta.mtime(), meta.mtime_nsec()));
        if meta.is_dir() {
            for entry in fs::read_dir(&current).unwrap() {
                pending.push(entry.unwrap().path());
            }
        }
    }
    out
}

fn gc(meta_root: &Path, dry_run: bool) -> Result<LocalSummary, GcError> {
    let options = Options { dry_run, ..Options::default() };
    run_local(meta_root, &options, &mut |_| {}, &|| false)
}

fn store_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(store::store_dir(root))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| !name.starts_with(".tmp-"))
        .collect();
    names.sort();
    names
}

/// One project with a kept index, a dropped index (its vectors become
/// unreachable), an incomplete index and a superseded local payload.
fn fixture(meta_root: &Path) -> (PathBuf, PathBuf) {
    let root = project(meta_root, 1);
    let kept = publish_index(&root, "kept", &[0, 1, 2, 3]);
    let dropped = publish_index(&root, "dropped", &[2, 3, 4, 5, 6, 7]);
    fs::remove_file(dropped.join(MANIFEST)).unwrap();
    fs::write(kept.join(EMBEDDINGS_JSON), b"[]").unwrap();
    (root, kept)
}

#[test]
fn summary_line_is_exact() {
    let summary = LocalSummary {
        stores: 2,
        compacted: 1,
        vectors: 3,
        removed_vectors: 4,
        current_bytes: 10,
        projected_bytes: 25,
    };
    assert_eq!(
        summary_line(&summary, None, true),
        "gc local_stores=2 local_compacted=1 local_vectors=3 local_removed_vectors=4 local_current_bytes=10 local_projected_bytes=25 local_saved_bytes=-15 remote_configured=false remote_removed_packs=0 remote_current_bytes=0 remote_projected_bytes=0 remote_saved_bytes=0 dry_run=true\n"
    );
    let shared = SharedSummary { removed_packs: 2, current_bytes: 900, projected_bytes: 400 };
    assert_eq!(
        summary_line(&summary, Some(&shared), false),
        "gc local_stores=2 local_compacted=1 local_vectors=3 local_removed_vectors=4 local_current_bytes=10 local_projected_bytes=25 local_saved_bytes=-15 remote_configured=true remote_removed_packs=2 remote_current_bytes=900 remote_projected_bytes=400 remote_saved_bytes=500 dry_run=false\n"
    );
}

#[test]
fn only_hex_named_folders_are_roots() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    for name in [hex_id(1), hex_id(2).to_uppercase(), "index-sync".into(), hex_id(3)[..63].to_string()] {
        fs::create_dir_all(meta_root.join(name)).unwrap();
    }
    fs::create_dir_all(meta_root.join("remotes").join(hex_id(4))).unwrap();
    fs::write(meta_root.join(hex_id(5)), b"file").unwrap();
    let roots = eligible_roots(meta_root).unwrap();
    assert_eq!(roots, vec![meta_root.join(hex_id(1)), meta_root.join("remotes").join(hex_id(4))]);
    std::os::unix::fs::symlink(meta_root.join(hex_id(1)), meta_root.join(hex_id(6))).unwrap();
    assert!(matches!(eligible_roots(meta_root), Err(GcError::Unsafe { .. })));
}

#[test]
fn dry_run_changes_no_byte_and_no_mtime_and_matches_the_normal_run() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    let (root, kept) = fixture(meta_root);
    // An empty store in a remote root counts as a store.
    let remote_root = meta_root.join("remotes").join(hex_id(9));
    fs::create_dir_all(store::store_dir(&remote_root)).unwrap();
    let before = tree_state(meta_root);
    let dry = gc(meta_root, true).unwrap();
    assert_eq!(tree_state(meta_root), before, "a dry run changed the tree");
    assert_eq!(dry.stores, 2);
    assert_eq!(dry.compacted, 1);
    assert_eq!(dry.vectors, 4);
    assert_eq!(dry.removed_vectors, 4);
    assert!(dry.current_bytes > dry.projected_bytes);

    let expected = vectors_of(&root, &kept);
    let normal = gc(meta_root, false).unwrap();
    assert_eq!(normal, dry, "dry run and normal run disagree");
    assert_eq!(vectors_of(&root, &kept), expected);
    assert!(all_present(&expected));
    let names = store_names(&root);
    assert_eq!(names.len(), 3, "{names:?}");
    let projected: u64 = names.iter().map(|name| fs::metadata(store::store_dir(&root).join(name)).unwrap().len()).sum();
    assert_eq!(projected, normal.projected_bytes);
    assert!(!kept.join(EMBEDDINGS_JSON).exists(), "the superseded payload stays");
    assert!(!store::search_root(&root).join("fs/dropped").exists(), "the incomplete index stays");
}

#[test]
fn a_second_gc_is_a_no_op() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    fixture(meta_root);
    gc(meta_root, false).unwrap();
    let before = tree_state(meta_root);
    let again = gc(meta_root, false).unwrap();
    assert_eq!(again.compacted, 0);
    assert_eq!(again.removed_vectors, 0);
    assert_eq!(again.current_bytes, again.projected_bytes);
    assert_eq!(tree_state(meta_root), before, "a no-op published something");
}

#[test]
fn malformed_metadata_fails_before_any_store_publishes() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    fixture(meta_root);
    // A second root with a malformed completed manifest: whichever root
    // sorts first, neither publishes.
    let other = project(meta_root, 2);
    let bad = publish_index(&other, "bad", &[1]);
    fs::remove_file(bad.join(MANIFEST)).unwrap();
    publish_index(&other, "dropped", &[5, 6]);
    fs::remove_file(store::search_root(&other).join("fs/dropped").join(MANIFEST)).unwrap();
    for (contents, what) in [
        (&b"{\"version\":3,"[..], "torn manifest"),
        (br#"{"version":9,"vector_store":"shared-v1"}"#, "unknown version"),
        (br#"{"version":3,"vector_store":"shared-v1","extra":1}"#, "unknown field"),
        (br#"{"version":3}"#, "shared version without its store"),
    ] {
        fs::write(bad.join(MANIFEST), contents).unwrap();
        let before = tree_state(meta_root);
        let error = gc(meta_root, false).unwrap_err();
        assert!(matches!(error, GcError::Invalid { .. }), "{what}: {error}");
        assert_eq!(tree_state(meta_root), before, "{what}: a store published before preflight completed");
    }
    fs::write(bad.join(RECORDS), b"[{").unwrap();
    let valid = br#"{"version":3,"mode":"filesystem","embedding_model":"m","dimensions":4,"vector_store":"shared-v1"}"#;
    fs::write(bad.join(MANIFEST), valid).unwrap();
    assert!(matches!(gc(meta_root, false), Err(GcError::Invalid { .. })), "malformed records passed preflight");
}

#[test]
fn invalid_shared_references_fail_preflight() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    let (_root, kept) = fixture(meta_root);
    let mut records = store::read_records(&kept).unwrap();
    records[1].vector_checksum ^= 1;
    fs::write(kept.join(RECORDS), serde_json::to_vec(&records).unwrap()).unwrap();
    assert!(matches!(gc(meta_root, true), Err(GcError::Invalid { .. })));
    records[1].vector_checksum ^= 1;
    records[2].vector_key = store::vector_key("other", "m", DIMS as i64);
    fs::write(kept.join(RECORDS), serde_json::to_vec(&records).unwrap()).unwrap();
    assert!(matches!(gc(meta_root, true), Err(GcError::Invalid { .. })));
}

#[test]
fn a_corrupt_live_vector_fails_preflight() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    let (root, _) = fixture(meta_root);
    let payload = store::store_dir(&root).join(store::DEFAULT_PAYLOAD);
    let mut bytes = fs::read(&payload).unwrap();
    bytes[0] ^= 0xff;
    fs::write(&payload, bytes).unwrap();
    assert!(matches!(gc(meta_root, false), Err(GcError::Invalid { .. })));
}

#[test]
fn unsafe_entries_fail_preflight() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    let (root, kept) = fixture(meta_root);
    let link = store::search_root(&root).join("fs/link");
    std::os::unix::fs::symlink(&kept, &link).unwrap();
    assert!(matches!(gc(meta_root, true), Err(GcError::Unsafe { .. })));
    fs::remove_file(&link).unwrap();

    let malformed = store::store_dir(&root).join("catalog-12.json");
    fs::write(&malformed, b"{}").unwrap();
    assert!(matches!(gc(meta_root, true), Err(GcError::Unsafe { .. })));
    fs::remove_file(&malformed).unwrap();

    nix::unistd::mkfifo(&kept.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert!(matches!(gc(meta_root, true), Err(GcError::Unsafe { .. })));
    fs::remove_file(kept.join("pipe")).unwrap();

    let payload_link = store::store_dir(&root).join("vectors-00000000000000000099.f32");
    std::os::unix::fs::symlink("/dev/null", &payload_link).unwrap();
    assert!(matches!(gc(meta_root, true), Err(GcError::Unsafe { .. })));
    fs::remove_file(&payload_link).unwrap();
    gc(meta_root, true).unwrap();
}

#[test]
fn unknown_files_are_preserved_and_not_counted() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    let (root, _) = fixture(meta_root);
    let unknown = store::store_dir(&root).join("notes.txt");
    fs::write(&unknown, b"keep me").unwrap();
    let incomplete = store::search_root(&root).join("fs/dropped");
    fs::write(incomplete.join("README"), b"keep the folder").unwrap();
    let dry = gc(meta_root, true).unwrap();
    let normal = gc(meta_root, false).unwrap();
    assert_eq!(dry, normal);
    assert!(unknown.exists());
    assert!(incomplete.join("README").exists());
    assert!(!incomplete.join(RECORDS).exists());
}

/// Interrupting compaction at every publication boundary leaves a store
/// every index reads completely, and the next gc completes.
#[test]
fn every_interruption_boundary_leaves_a_readable_store() {
    for point in [CrashPoint::GcPayload, CrashPoint::GcRecoveryCatalog, CrashPoint::GcCatalog, CrashPoint::GcRemove] {
        let temp = tempfile::tempdir().unwrap();
        let meta_root = temp.path();
        let (root, kept) = fixture(meta_root);
        let other = publish_index(&root, "other", &[1, 8, 9]);
        let expected = (vectors_of(&root, &kept), vectors_of(&root, &other));
        let options = Options { stop_at: Some(point), ..Options::default() };
        let stopped = run_local(meta_root, &options, &mut |_| {}, &|| false);
        assert!(matches!(stopped, Err(GcError::Cancelled)), "{point:?}: {stopped:?}");
        assert_eq!((vectors_of(&root, &kept), vectors_of(&root, &other)), expected, "{point:?}");
        assert!(all_present(&expected.0) && all_present(&expected.1));
        gc(meta_root, false).unwrap_or_else(|error| panic!("{point:?}: {error}"));
        assert_eq!((vectors_of(&root, &kept), vectors_of(&root, &other)), expected, "{point:?}");
        assert_eq!(gc(meta_root, false).unwrap().compacted, 0, "{point:?}");
        // A writer appends to the compacted store as usual.
        let extra = publish_index(&root, "extra", &[1, 10]);
        assert!(all_present(&vectors_of(&root, &extra)));
    }
}

/// A vector read from the store before gc moved it is still published
/// from its new place.
#[test]
fn a_stored_vector_read_before_gc_publishes_after_it() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path();
    let (root, _) = fixture(meta_root);
    let hashes: Vec<_> = (0..4)
        .map(|i| {
            let input = record("f.rs", &format!("input-{i}")).embedding_input_hash;
            gitagent_search::chunking::parse_hash(&input).unwrap()
        })
        .collect();
    let wanted: HashSet<_> = hashes.iter().copied().collect();
    let before = store::read_shared_vectors(&root, &wanted, "m", DIMS as i64, &|| false).unwrap();
    gc(meta_root, false).unwrap();
    let after = store::read_shared_vectors(&root, &wanted, "m", DIMS as i64, &|| false).unwrap();
    // A vector that gc moved.
    let moved = (0..4).find(|&i| before[&hashes[i]].offset != after[&hashes[i]].offset).expect("gc moved no vector");
    let before = before[&hashes[moved]];
    let dir = store::search_root(&root).join("fs/late");
    let manifest = Manifest {
        mode: "filesystem".into(),
        embedding_model: "m".into(),
        dimensions: DIMS as i64,
        created_at: "2026-01-02T03:04:05Z".into(),
        ..Manifest::default()
    };
    let records = vec![RecordToWrite {
        record: record("f.rs", &format!("input-{moved}")),
        vector: VectorData::Stored(before),
        stored: Some(before),
    }];
    store::publish(
        Publication { metadata_dir: &root, index_dir: &dir, manifest, records, force_new: false, crash_at: None },
        &|| false,
    )
    .expect("a stale stored entry resolves through the current catalog");
    let loaded = vectors_of(&root, &dir);
    assert_eq!(loaded.values().next().unwrap().as_deref(), Some(&vector(moved)[..]));
}

/// A reader that selected the catalog and opened the payload under the
/// lifecycle lock finishes its reads before gc removes the generation.
#[test]
fn a_reader_holding_the_lifecycle_lock_finishes_before_removal() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path().to_path_buf();
    let (root, kept) = fixture(&meta_root);
    let store_dir = store::store_dir(&root);
    let lock = store::lock_blocking(&store::lock_path(&store_dir), &|| false).unwrap();
    let old_files = store_names(&root);
    let (waiting_tx, waiting_rx) = mpsc::channel();
    let gc_root = meta_root.clone();
    let worker = std::thread::spawn(move || {
        let signalled = AtomicBool::new(false);
        let cancelled = || {
            if !signalled.swap(true, Ordering::SeqCst) {
                let _ = waiting_tx.send(());
            }
            false
        };
        run_local(&gc_root, &Options::default(), &mut |_| {}, &cancelled)
    });
    // The gc found the lock held: it is waiting for this reader.
    waiting_rx.recv_timeout(Duration::from_secs(60)).expect("gc never waited for the lock");
    let (catalog, _) = store::load_catalog(&store_dir).unwrap();
    let payload = fs::read(store_dir.join(store::catalog_payload(&catalog).unwrap())).unwrap();
    let records = store::read_records(&kept).unwrap();
    let entries = catalog.entries.unwrap();
    for record in &records {
        let entry = entries[&record.vector_key];
        let bytes = &payload[entry.offset as usize..entry.offset as usize + DIMS * 4];
        assert_eq!(crc32fast::hash(bytes), entry.checksum);
    }
    assert_eq!(store_names(&root), old_files, "gc removed a generation under a reader");
    drop(lock);
    worker.join().unwrap().unwrap();
    assert_ne!(store_names(&root), old_files);
    assert!(all_present(&vectors_of(&root, &kept)));
}

/// Concurrent readers, writers and gc for 30 seconds: every read of a
/// completed index is complete.
#[test]
fn concurrent_searches_writers_and_gc_never_fail_a_read() {
    let temp = tempfile::tempdir().unwrap();
    let meta_root = temp.path().to_path_buf();
    let (root, kept) = fixture(&meta_root);
    let stable = publish_index(&root, "stable", &(0..40).collect::<Vec<_>>());
    let expected_kept = vectors_of(&root, &kept);
    let expected_stable = vectors_of(&root, &stable);
    let deadline = Instant::now() + Duration::from_secs(30);
    let reads = Arc::new(AtomicUsize::new(0));
    let gcs = Arc::new(AtomicUsize::new(0));
    let writes = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for _ in 0..2 {
            let reads = Arc::clone(&reads);
            let (root, kept, stable) = (&root, &kept, &stable);
            let (expected_kept, expected_stable) = (&expected_kept, &expected_stable);
            scope.spawn(move || {
                while Instant::now() < deadline {
                    assert_eq!(&vectors_of(root, kept), expected_kept);
                    assert_eq!(&vectors_of(root, stable), expected_stable);
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        {
            let writes = Arc::clone(&writes);
            let root = &root;
            scope.spawn(move || {
                let mut round = 0usize;
                while Instant::now() < deadline {
                    // Churn: a writer republishes with new and old vectors,
                    // leaving the previous generation unreachable.
                    let inputs: Vec<usize> = (round * 3..round * 3 + 20).collect();
                    let dir = publish_index(root, &format!("churn{}", round % 3), &inputs);
                    assert!(all_present(&vectors_of(root, &dir)));
                    round += 1;
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        {
            let gcs = Arc::clone(&gcs);
            let meta_root = &meta_root;
            scope.spawn(move || {
                while Instant::now() < deadline {
                    gc(meta_root, false).expect("gc");
                    gcs.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let (reads, writes, gcs) =
        (reads.load(Ordering::Relaxed), writes.load(Ordering::Relaxed), gcs.load(Ordering::Relaxed));
    eprintln!("stress: {reads} reads, {writes} writes, {gcs} gc runs");
    assert!(reads > 0 && writes > 0 && gcs > 0);
    gc(&meta_root, false).unwrap();
    assert_eq!(gc(&meta_root, false).unwrap().compacted, 0);
}

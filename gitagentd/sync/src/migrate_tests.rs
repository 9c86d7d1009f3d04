//! `index migrate --to v2` against a bare remote built with the real `git`:
//! a v1 remote (written by normal sync, which keeps v1 repositories v1)
//! migrated by one machine and read by another.

use super::*;
use crate::sync::tests::{World, record, target};
use crate::sync::{Export, Published};
use git_agent_tests::git::git_trimmed;

fn no_progress() -> Progress {
    Arc::new(|_| Ok(()))
}

fn second_target() -> Target {
    Target { revision: "89abcdef0123456789abcdef0123456789abcdef".into(), ..target() }
}

/// Two revisions sharing one vector: 3 records, 2 distinct vectors.
fn exports() -> Vec<Export> {
    vec![
        Export {
            target: target(),
            records: vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0]), record("src/b.rs", "hb", [4.0, 5.0, 6.0])],
        },
        Export { target: second_target(), records: vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])] },
    ]
}

/// The logical size of every file of the remote's `main` tree.
pub fn remote_bytes(world: &World) -> u64 {
    let listing = git_trimmed(&world.remote, &["ls-tree", "-r", "-l", "main"]);
    listing.lines().map(|line| line.split_whitespace().nth(3).unwrap().parse::<u64>().unwrap()).sum()
}

pub fn remote_state(world: &World) -> String {
    git_trimmed(&world.remote, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

/// Commits `writes` and `removals` on top of the remote's `main` from a
/// scratch clone, as another (older) client would.
pub fn push_on_top(world: &World, writes: &[(&str, &[u8])], removals: &[&str]) {
    push_to(&world.root, &world.remote, writes, removals);
}

/// [`push_on_top`] from a scratch folder below `root`.
pub fn push_to(root: &std::path::Path, remote: &std::path::Path, writes: &[(&str, &[u8])], removals: &[&str]) {
    let work = root.join("on-top");
    let _ = std::fs::remove_dir_all(&work);
    git_trimmed(root, &["clone", "-q", remote.to_str().unwrap(), work.to_str().unwrap()]);
    for (path, bytes) in writes {
        let path = work.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    for path in removals {
        git_trimmed(&work, &["rm", "-q", path]);
    }
    git_trimmed(&work, &["add", "-A"]);
    git_trimmed(&work, &["commit", "-q", "-m", "on top"]);
    git_trimmed(&work, &["push", "-q", "origin", "HEAD:main"]);
}

async fn v1_remote(world: &World) {
    let published = world.machine("a").publish(exports(), &CancellationToken::new()).await.unwrap();
    assert_eq!(published, Published { indexes: 2, records: 3, skipped: Vec::new(), pushed: true });
    assert!(world.remote_files("main").iter().any(|path| path.ends_with(".json") && path.len() == 8 + 65 + 41 + 21));
}

#[tokio::test]
async fn a_v1_remote_migrates_to_v2_and_another_machine_imports_it() {
    let world = World::new("main");
    v1_remote(&world).await;
    let cancel = CancellationToken::new();
    let a = world.machine("a");
    let before_bytes = remote_bytes(&world);
    let before = remote_state(&world);

    // The dry run reports the same numbers and changes no ref.
    let phases = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&phases);
    let recording: Progress = Arc::new(move |phase| {
        seen.lock().unwrap().push(phase);
        Ok(())
    });
    let dry = migrate(&a, true, recording, &cancel).await.unwrap();
    assert_eq!(remote_state(&world), before);
    let phases: Vec<MigratePhase> =
        phases.lock().unwrap().iter().filter(|phase| !matches!(phase, MigratePhase::Transfer(_))).cloned().collect();
    assert_eq!(phases[..2], [MigratePhase::Fetching, MigratePhase::Scanning]);
    assert!(matches!(phases.last(), Some(MigratePhase::Building { done: 2, total: 2, .. })), "{phases:?}");

    let done = migrate(&a, false, no_progress(), &cancel).await.unwrap();
    assert_eq!(done, dry, "the dry run plans exactly what the migration does");
    let files = world.remote_files("main");
    let packs = files.iter().filter(|path| path.starts_with("packs/")).count();
    let after_bytes = remote_bytes(&world);
    assert_eq!(
        done,
        MigrationSummary {
            from: 1,
            to: 2,
            indexes: 2,
            records: 3,
            unique_vectors: 2,
            packs,
            current_bytes: before_bytes,
            projected_bytes: after_bytes
        }
    );
    assert_eq!(packs, 1);
    assert_eq!(git_trimmed(&world.remote, &["show", "main:schema.json"]), "{\"version\":2}");
    assert!(
        files.iter().filter(|path| path.starts_with("indexes/")).all(|path| path.len() == 8 + 65 + 41 + 69),
        "only 64-character manifests remain: {files:?}"
    );
    assert_eq!(git_trimmed(&world.remote, &["rev-list", "--count", "main"]), "2", "one migration commit");
    let line = dry.line(true);
    assert_eq!(
        line,
        format!(
            "migration from=1 to=2 indexes=2 records=3 unique_vectors=2 packs=1 current_bytes={before_bytes} projected_bytes={after_bytes} saved_bytes={} dry_run=true\n",
            i128::from(before_bytes) - i128::from(after_bytes)
        )
    );
    assert_eq!(
        done.line(false),
        format!("migrated from=1 to=2 indexes=2 records=3 unique_vectors=2 packs=1 bytes={after_bytes}\n")
    );

    // Machine B reads the v2 records.
    let b = world.machine("b");
    let imported = b.import(second_target(), &cancel).await.unwrap().unwrap();
    assert_eq!(imported, vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]);

    // Again: a no-op that commits nothing.
    let tip = remote_state(&world);
    for dry_run in [true, false] {
        let again = migrate(&b, dry_run, no_progress(), &cancel).await.unwrap();
        assert_eq!(again, MigrationSummary::no_op());
    }
    assert_eq!(remote_state(&world), tip);
    assert_eq!(
        MigrationSummary::no_op().line(false),
        "migrated from=2 to=2 indexes=0 records=0 unique_vectors=0 packs=0 bytes=0\n"
    );
}

#[tokio::test]
async fn a_mixed_tree_is_refused_by_sync_and_repaired_by_migrate_only() {
    let world = World::new("main");
    v1_remote(&world).await;
    let cancel = CancellationToken::new();
    let a = world.machine("a");
    let v1_path = second_target().manifest_path(SchemaVersion::V1).unwrap();
    let v1_bytes = git_trimmed(&world.remote, &["show", &format!("main:{v1_path}")]) + "\n";
    migrate(&a, false, no_progress(), &cancel).await.unwrap();

    // An interrupted migration: the v2 manifest of the second revision is
    // missing and its v1 snapshot is back beside the v2 tree, plus a v1
    // snapshot of a third revision with a new vector.
    let third = Target { revision: "fedcba9876543210fedcba9876543210fedcba98".into(), ..target() };
    let third_bytes = manifest::encode_v1(&third, &[record("src/c.rs", "hc", [7.0, 8.0, 9.0])]).unwrap();
    let third_path = third.manifest_path(SchemaVersion::V1).unwrap();
    let v2_path = second_target().manifest_path(SchemaVersion::V2).unwrap();
    push_on_top(
        &world,
        &[(v1_path.as_str(), v1_bytes.as_bytes()), (third_path.as_str(), &third_bytes)],
        &[v2_path.as_str()],
    );
    let mixed = remote_state(&world);
    let mixed_bytes = remote_bytes(&world);

    // Normal sync refuses the mixed tree.
    let refused = a.publish(vec![Export { target: target(), records: vec![] }], &cancel).await.unwrap_err();
    assert!(refused.to_string().contains("unsafe path"), "{refused}");
    assert_eq!(remote_state(&world), mixed);

    let dry = migrate(&a, true, no_progress(), &cancel).await.unwrap();
    assert_eq!(remote_state(&world), mixed);
    let repaired = migrate(&a, false, no_progress(), &cancel).await.unwrap();
    assert_eq!(repaired, dry);
    let files = world.remote_files("main");
    assert_eq!(
        repaired,
        MigrationSummary {
            from: 2,
            to: 2,
            indexes: 2,
            records: 2,
            unique_vectors: 3,
            packs: files.iter().filter(|path| path.starts_with("packs/")).count(),
            current_bytes: mixed_bytes,
            projected_bytes: remote_bytes(&world),
        }
    );
    assert!(!files.contains(&v1_path) && !files.contains(&third_path), "{files:?}");
    assert!(files.contains(&v2_path), "{files:?}");
    let b = world.machine("b");
    assert_eq!(
        b.import(third.clone(), &cancel).await.unwrap().unwrap(),
        vec![record("src/c.rs", "hc", [7.0, 8.0, 9.0])]
    );
    assert_eq!(b.import(second_target(), &cancel).await.unwrap().unwrap().len(), 1);
    // Sync works again on the repaired tree.
    b.publish(vec![Export { target: third, records: vec![] }], &cancel).await.unwrap();
}

#[tokio::test]
async fn malformed_or_misplaced_snapshots_fail_without_publishing() {
    let world = World::new("main");
    v1_remote(&world).await;
    let cancel = CancellationToken::new();
    let a = world.machine("a");
    let v1_path = target().manifest_path(SchemaVersion::V1).unwrap();
    let good = git_trimmed(&world.remote, &["show", &format!("main:{v1_path}")]) + "\n";

    // A snapshot whose metadata names another revision than its folder.
    let misplaced = v1_path.replace(&target().revision, "1111111111111111111111111111111111111111");
    push_on_top(&world, &[(misplaced.as_str(), good.as_bytes())], &[]);
    let before = remote_state(&world);
    for dry_run in [true, false] {
        let error = migrate(&a, dry_run, no_progress(), &cancel).await.unwrap_err();
        assert!(error.to_string().contains("does not match its path"), "{error}");
        assert!(error.to_string().contains("1111111111111111111111111111111111111111"), "{error}");
    }
    assert_eq!(remote_state(&world), before);

    // A snapshot that is not a snapshot.
    for (bytes, needle) in [
        (&b"{\"version\":1}"[..], "missing field"),
        (b"{\"version\":1,\"origin\":", "EOF"),
        (good.replace("\"records\"", "\"extra\":1,\"records\"").as_bytes(), "unknown field"),
    ] {
        push_on_top(&world, &[(v1_path.as_str(), bytes)], &[misplaced.as_str()]);
        let before = remote_state(&world);
        let error = migrate(&a, false, no_progress(), &cancel).await.unwrap_err();
        assert!(error.to_string().contains("is invalid") && error.to_string().contains(needle), "{error}");
        assert_eq!(remote_state(&world), before);
        push_on_top(&world, &[(misplaced.as_str(), good.as_bytes())], &[]);
    }

    // An unrelated file is an unsafe tree for migrate too.
    push_on_top(&world, &[("notes.txt", b"hello")], &[misplaced.as_str()]);
    let error = migrate(&a, false, no_progress(), &cancel).await.unwrap_err();
    assert!(error.to_string().contains("unsafe path"), "{error}");
}

#[tokio::test]
async fn mixed_tree_recovery_also_reads_a_commit_a_stopped_run_never_pushed() {
    let world = World::new("main");
    v1_remote(&world).await;
    let cancel = CancellationToken::new();
    // Machine B commits on the v1 tip and stops before its push (what the
    // `sync-push` fault point leaves): a third revision, and a record more
    // for the first one.
    let b = world.machine("b");
    let third = Target { revision: "fedcba9876543210fedcba9876543210fedcba98".into(), ..target() };
    let pending = {
        let repo = SyncRepo::open(b.remote.clone(), b.dir.clone()).unwrap();
        let tip = repo.fetch(&AtomicBool::new(false)).unwrap();
        let mut staged = repo.stage(&tip).unwrap();
        staged.export(&third, vec![record("src/c.rs", "hc", [7.0, 8.0, 9.0])]).unwrap();
        staged.export(&target(), vec![record("src/d.rs", "hd", [0.5, 0.5, 0.5])]).unwrap();
        staged.commit("stopped before its push").unwrap().unwrap()
    };
    // Meanwhile machine A migrates the remote: its tip is pure v2, so B's
    // pending v1 snapshots make B's tree a mixed one.
    migrate(&world.machine("a"), false, no_progress(), &cancel).await.unwrap();
    let repaired = migrate(&b, false, no_progress(), &cancel).await.unwrap();
    assert_eq!((repaired.from, repaired.to, repaired.indexes, repaired.records), (2, 2, 2, 4), "{repaired:?}");
    let files = world.remote_files("main");
    assert!(files.iter().all(|path| !path.starts_with("indexes/") || path.len() > 8 + 65 + 41 + 21), "{files:?}");
    let repo = SyncRepo::open(b.remote.clone(), b.dir.clone()).unwrap();
    assert_eq!(repo.pending().unwrap(), None, "the repair's push carried the pending commit {pending}");
    let c = world.machine("c");
    assert_eq!(c.import(third, &cancel).await.unwrap().unwrap(), vec![record("src/c.rs", "hc", [7.0, 8.0, 9.0])]);
    let first = c.import(target(), &cancel).await.unwrap().unwrap();
    assert_eq!(first.len(), 3, "{first:?}");
    assert!(first.contains(&record("src/d.rs", "hd", [0.5, 0.5, 0.5])));

    // Without the pending commit the same v2 remote is a no-op.
    assert_eq!(migrate(&b, false, no_progress(), &cancel).await.unwrap(), MigrationSummary::no_op());
}

/// Progress callback failures abort the migration, transport details
/// included: the callback's own error is returned and nothing is pushed.
#[tokio::test]
async fn a_failing_transfer_progress_aborts_the_migration() {
    let world = World::new("main");
    v1_remote(&world).await;
    let before = remote_state(&world);
    let failing: Progress = Arc::new(|phase| match phase {
        MigratePhase::Transfer(_) => Err(SyncError::Git { dir: "progress".into(), message: "stderr closed".into() }),
        _ => Ok(()),
    });
    for dry_run in [true, false] {
        // A new machine: its fetch receives the whole remote.
        let b = world.machine(if dry_run { "b" } else { "c" });
        let error = migrate(&b, dry_run, Arc::clone(&failing), &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(&error, SyncError::Git { message, .. } if message == "stderr closed"), "{error:?}");
        assert_eq!(remote_state(&world), before, "dry run {dry_run}");
    }
}

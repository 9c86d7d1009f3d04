//! GC-005 against a bare remote built with the real `git`.

use super::*;
use crate::manifest::Target;
use crate::migrate::tests::{push_on_top, push_to, remote_bytes, remote_state};
use crate::sync::Export;
use crate::sync::tests::{World, record, target};
use git_agent_tests::git::git_trimmed;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

fn quiet() -> Progress {
    Arc::new(|_| {})
}

fn revision(n: u8) -> Target {
    Target { revision: format!("{n:x}").repeat(40), ..target() }
}

fn packs(world: &World) -> BTreeSet<String> {
    world.remote_files("main").into_iter().filter(|path| path.starts_with("packs/")).collect()
}

/// A v2 remote holding revision 1 (referenced pack) and the packs of
/// revisions 2 and 3 whose manifests were removed again: returns the packs
/// of 2 and 3 and the saved manifest of revision 3.
async fn remote_with_garbage(world: &World) -> (String, String, (String, Vec<u8>)) {
    world.seed("main", &[("schema.json", b"{\"version\":2}\n")]);
    let a = world.machine("a");
    let cancel = CancellationToken::new();
    let mut new_packs = Vec::new();
    for (n, input, vector) in [(1, "h1", [1.0, 0.0, 0.0]), (2, "h2", [0.0, 1.0, 0.0]), (3, "h3", [0.0, 0.0, 1.0])] {
        let before = packs(world);
        let export = Export { target: revision(n), records: vec![record("src/a.rs", input, vector)] };
        a.publish(vec![export], &cancel).await.unwrap();
        let added: Vec<String> = packs(world).difference(&before).cloned().collect();
        assert_eq!(added.len(), 1);
        new_packs.push(added[0].clone());
    }
    let path = |n| revision(n).manifest_path(SchemaVersion::V2).unwrap();
    let saved = (path(3), (git_trimmed(&world.remote, &["show", &format!("main:{}", path(3))]) + "\n").into_bytes());
    push_on_top(world, &[], &[&path(2), &path(3)]);
    (new_packs[1].clone(), new_packs[2].clone(), saved)
}

/// Path -> (bytes, mtime) below `dir` (folders included), or empty.
fn state(dir: &Path) -> BTreeMap<String, (Vec<u8>, i64, i64)> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&current) else { continue };
        let bytes = if meta.is_file() { std::fs::read(&current).unwrap() } else { Vec::new() };
        out.insert(current.display().to_string(), (bytes, meta.mtime(), meta.mtime_nsec()));
        if meta.is_dir() {
            pending.extend(std::fs::read_dir(&current).unwrap().map(|entry| entry.unwrap().path()));
        }
    }
    out
}

#[tokio::test]
async fn a_concurrent_push_between_plan_and_push_is_replanned() {
    let world = World::new("main");
    let (pack2, pack3, (manifest3, bytes3)) = remote_with_garbage(&world).await;
    let a = world.machine("a");
    let cancel = CancellationToken::new();

    // The dry run plans both removals and changes nothing, locally or remotely.
    let local = state(&a.dir);
    let remote = remote_state(&world);
    let remote_tree = state(&world.remote);
    let dry = run_shared(&a, true, quiet(), &cancel, None).await.unwrap();
    assert_eq!(dry.removed_packs, 2);
    assert_eq!(dry.current_bytes, remote_bytes(&world));
    assert_eq!(state(&a.dir), local, "the dry run touched the sync repository");
    assert_eq!(state(&world.remote), remote_tree, "the dry run touched the remote");
    assert_eq!(remote_state(&world), remote);

    // Machine B starts to use pack 3 again after the plan, before the push.
    let hook_world = world.remote.clone();
    let hook_root = world.root.clone();
    let concurrent: AfterPlan = Arc::new(move |attempt| {
        if attempt == 0 {
            push_to(&hook_root, &hook_world, &[(manifest3.as_str(), &bytes3)], &[]);
        }
    });
    let phases = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&phases);
    let recording: Progress = Arc::new(move |phase| seen.lock().unwrap().push(phase));
    let summary = run_shared(&a, false, recording, &cancel, Some(concurrent)).await.unwrap();
    let concurrent_tip = git_trimmed(&world.remote, &["rev-parse", "main^"]);
    let base_bytes: u64 = {
        let listing = git_trimmed(&world.remote, &["ls-tree", "-r", "-l", &concurrent_tip]);
        listing.lines().map(|line| line.split_whitespace().nth(3).unwrap().parse::<u64>().unwrap()).sum()
    };
    assert_eq!(
        summary,
        SharedSummary { removed_packs: 1, current_bytes: base_bytes, projected_bytes: remote_bytes(&world) },
        "the summary describes the accepted push"
    );
    let left = packs(&world);
    assert!(!left.contains(&pack2), "{left:?}");
    assert!(left.contains(&pack3), "a newly referenced pack was removed: {left:?}");
    assert_eq!(left.len(), 2);
    assert_eq!(
        git_trimmed(&world.remote, &["log", "-1", "--format=%s", &concurrent_tip]),
        "on top",
        "exactly one cleanup commit above the authoritative base"
    );
    assert_eq!(git_trimmed(&world.remote, &["log", "-1", "--format=%s", "main"]), CLEANUP_MESSAGE);
    // History is kept: the removed pack is still reachable from the base.
    git_trimmed(&world.remote, &["cat-file", "-e", &format!("{concurrent_tip}:{pack2}")]);
    let phases = phases.lock().unwrap().clone();
    assert_eq!(phases.iter().filter(|phase| **phase == SharedPhase::Fetching).count(), 2, "{phases:?}");
    let phase_only: Vec<&SharedPhase> =
        phases.iter().filter(|phase| !matches!(phase, SharedPhase::Transfer(_))).collect();
    assert_eq!(phase_only.last(), Some(&&SharedPhase::Pushing), "{phases:?}");

    // Every record is still readable, and a second run is a no-op.
    let b = world.machine("b");
    for n in [1, 3] {
        assert_eq!(b.import(revision(n), &cancel).await.unwrap().unwrap().len(), 1);
    }
    let tip = remote_state(&world);
    let again = run_shared(&b, false, quiet(), &cancel, None).await.unwrap();
    assert_eq!(again.removed_packs, 0);
    assert_eq!(again.current_bytes, again.projected_bytes);
    assert_eq!(remote_state(&world), tip, "a no-op pushes nothing");
}

#[tokio::test]
async fn v1_mixed_and_unsafe_trees_fail_without_cleanup() {
    let world = World::new("main");
    let a = world.machine("a");
    let cancel = CancellationToken::new();
    // A new remote and a v1 remote are not v2.
    for dry_run in [true, false] {
        let error = run_shared(&a, dry_run, quiet(), &cancel, None).await.unwrap_err();
        assert!(matches!(error, SharedError::NotV2(1)), "{error}");
    }
    a.publish(vec![Export { target: revision(1), records: vec![record("a", "h1", [1.0, 0.0, 0.0])] }], &cancel)
        .await
        .unwrap();
    let error = run_shared(&a, false, quiet(), &cancel, None).await.unwrap_err();
    assert!(error.to_string().contains("index migrate --to v2"), "{error}");

    // A mixed tree (a v1 manifest left in a v2 tree) and an unrelated file.
    crate::migrate::migrate(&a, false, Arc::new(|_| Ok(())), &cancel).await.unwrap();
    let v1 = revision(2).manifest_path(SchemaVersion::V1).unwrap();
    let snapshot = crate::manifest::encode_v1(&revision(2), &[record("b", "h2", [0.0, 1.0, 0.0])]).unwrap();
    push_on_top(&world, &[(v1.as_str(), &snapshot)], &[]);
    let tip = remote_state(&world);
    let error = run_shared(&a, false, quiet(), &cancel, None).await.unwrap_err();
    assert!(error.to_string().contains("unsafe path"), "{error}");
    push_on_top(&world, &[("README", b"hi")], &[&v1]);
    let error = run_shared(&a, true, quiet(), &cancel, None).await.unwrap_err();
    assert!(error.to_string().contains("unsafe path"), "{error}");
    assert_ne!(remote_state(&world), tip);
}

#[tokio::test]
async fn a_malformed_manifest_fails_without_cleanup() {
    let world = World::new("main");
    let (pack2, _, _) = remote_with_garbage(&world).await;
    let path = revision(1).manifest_path(SchemaVersion::V2).unwrap();
    push_on_top(&world, &[(path.as_str(), b"{\"version\":2}\n")], &[]);
    let tip = remote_state(&world);
    let error = run_shared(&world.machine("a"), false, quiet(), &CancellationToken::new(), None).await.unwrap_err();
    assert!(error.to_string().contains(&path) && error.to_string().contains("is invalid"), "{error}");
    assert_eq!(remote_state(&world), tip);
    assert!(packs(&world).contains(&pack2));
}

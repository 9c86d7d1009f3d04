//! `git-agent index gc [--dry-run]` (local phase): exact usage errors and
//! summary, dry runs that change no byte and no modification time,
//! compaction that keeps every search result without embedding again, and
//! a daemon killed at every compaction boundary.

use super::index_fixtures::{machine as setup, stop_daemon};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: git-agent index gc [--dry-run]\n";

fn metadata_root(env: &TestEnv) -> PathBuf {
    env.home().join(".git-agent")
}

/// Path -> (bytes, mtime) of everything below `dir` (folders included).
pub(crate) fn tree_state(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, i64, i64)> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let meta = std::fs::symlink_metadata(&current).unwrap();
        let bytes = if meta.is_file() { std::fs::read(&current).unwrap() } else { Vec::new() };
        out.insert(current.clone(), (bytes, meta.mtime(), meta.mtime_nsec()));
        if meta.is_dir() {
            for entry in std::fs::read_dir(&current).unwrap() {
                pending.push(entry.unwrap().path());
            }
        }
    }
    out
}

/// A project whose second version replaces some chunks, leaving their old
/// vectors unreachable once the index is republished.
fn project(env: &TestEnv) -> GitRepo {
    let repo = env.repo("gc");
    repo.write("alpha.go", "package demo\n\nfunc Alpha() int {\n\treturn 1\n}\n");
    repo.write("beta.go", "package demo\n\nfunc Beta() int {\n\treturn 2\n}\n");
    repo.write("notes.md", "# Notes\n\nalpha and beta\n");
    repo
}

fn search(env: &TestEnv, repo: &GitRepo) -> Value {
    let stdout = env.run_in(repo.path(), &["search", "--min-score", "0.01", "alpha"]).success();
    serde_json::from_str(&stdout).unwrap()
}

/// Results without per-run fields.
fn results(output: &Value) -> Value {
    output["results"].clone()
}

fn summary_field(summary: &str, name: &str) -> u64 {
    summary
        .split_whitespace()
        .find_map(|field| field.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("{name} missing in {summary}"))
        .parse()
        .unwrap()
}

#[test]
fn malformed_command_lines_fail_with_the_exact_usage() {
    let env = TestEnv::new();
    let work = env.work();
    for args in [
        &["index", "gc", "--dry-run", "--dry-run"][..],
        &["index", "gc", "--remote", "https://example.invalid/x.git"],
        &["index", "gc", "extra"],
        &["index", "gc", "--force"],
    ] {
        let run = env.run_in(&work, args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}");
        assert_eq!(run.stderr, USAGE, "{args:?}");
    }
}

#[test]
fn an_empty_metadata_root_reports_zero_stores() {
    let env = TestEnv::new();
    let stdout = env.run_in(&env.work(), &["index", "gc", "--dry-run"]).success();
    assert_eq!(
        stdout,
        "gc local_stores=0 local_compacted=0 local_vectors=0 local_removed_vectors=0 local_current_bytes=0 local_projected_bytes=0 local_saved_bytes=0 remote_configured=false remote_removed_packs=0 remote_current_bytes=0 remote_projected_bytes=0 remote_saved_bytes=0 dry_run=true\n"
    );
}

#[test]
fn dry_run_changes_nothing_and_gc_keeps_every_result_without_embedding() {
    let (env, fake) = setup();
    let repo = project(&env);
    search(&env, &repo);
    // New contents: the old chunks' vectors become unreachable.
    repo.write("beta.go", "package demo\n\nfunc Beta() int {\n\treturn 22\n}\n");
    repo.write("notes.md", "# Notes\n\nalpha, beta and more\n");
    let before_gc = search(&env, &repo);
    stop_daemon(&env);

    let tree = tree_state(&metadata_root(&env));
    let dry = env.run_in(repo.path(), &["index", "gc", "--dry-run"]);
    let dry_summary = dry.success();
    assert_eq!(tree_state(&metadata_root(&env)), tree, "a dry run changed bytes or modification times");
    assert!(dry_summary.ends_with(" remote_configured=false remote_removed_packs=0 remote_current_bytes=0 remote_projected_bytes=0 remote_saved_bytes=0 dry_run=true\n"), "{dry_summary}");
    assert_eq!(summary_field(&dry_summary, "local_stores"), 1);
    assert_eq!(summary_field(&dry_summary, "local_compacted"), 1);
    assert!(summary_field(&dry_summary, "local_removed_vectors") >= 2, "{dry_summary}");

    let normal = env.run_in(repo.path(), &["index", "gc"]).success();
    assert_eq!(normal.replace("dry_run=false", "dry_run=true"), dry_summary, "dry run and gc disagree");

    fake.reset();
    let after_gc = search(&env, &repo);
    assert_eq!(results(&after_gc), results(&before_gc));
    assert!(fake.chunk_inputs().is_empty(), "gc made the search embed again: {:?}", fake.chunk_inputs());

    let again = env.run_in(repo.path(), &["index", "gc"]).success();
    assert_eq!(summary_field(&again, "local_compacted"), 0, "{again}");
    assert_eq!(summary_field(&again, "local_removed_vectors"), 0, "{again}");
}

#[test]
fn a_daemon_killed_at_every_compaction_boundary_leaves_a_readable_store() {
    for step in ["gc-payload", "gc-recovery-catalog", "gc-catalog", "gc-remove"] {
        let (env, fake) = setup();
        let repo = project(&env);
        search(&env, &repo);
        repo.write("beta.go", "package demo\n\nfunc Beta() int {\n\treturn 22\n}\n");
        let before = search(&env, &repo);
        stop_daemon(&env);

        let output =
            env.git_agent_in(repo.path(), &["index", "gc"]).env("GITAGENTD_SEARCH_CRASH_AT", step).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{step}: {}", String::from_utf8_lossy(&output.stderr));
        assert!(output.stdout.is_empty(), "{step}");

        fake.reset();
        let after = search(&env, &repo);
        assert_eq!(results(&after), results(&before), "{step}");
        assert!(fake.chunk_inputs().is_empty(), "{step}: the search embedded again");
        let completed = env.run_in(repo.path(), &["index", "gc"]).success();
        assert!(completed.starts_with("gc local_stores=1 "), "{step}: {completed}");
        fake.reset();
        assert_eq!(results(&search(&env, &repo)), results(&before), "{step}");
        assert!(fake.chunk_inputs().is_empty(), "{step}");
    }
}

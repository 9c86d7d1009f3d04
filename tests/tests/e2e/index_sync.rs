//! `git-agent index sync` and searches confirmed against `index.remote`:
//! two machines (two isolated HOMEs) share one bare index remote.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::{GitRepo, TestEnv};
use std::path::Path;
use std::process::Command;

/// One machine: its own HOME, daemon and fake embeddings server.
pub(crate) fn machine() -> (TestEnv, FakeEmbeddings) {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "32");
    (env, fake)
}

pub(crate) fn bare(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    let status = Command::new("git").args(["init", "--bare", "-q", "-b", "main"]).current_dir(path).status().unwrap();
    assert!(status.success());
}

pub(crate) fn git_in(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(dir).env("GIT_CONFIG_NOSYSTEM", "1").output().unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// A clone of `origin` in `env`'s work folder (so both machines share the
/// origin identity).
pub(crate) fn clone(env: &TestEnv, origin: &Path) -> GitRepo {
    let dir = env.work().join("project");
    let status =
        Command::new("git").args(["clone", "-q", origin.to_str().unwrap(), dir.to_str().unwrap()]).status().unwrap();
    assert!(status.success());
    GitRepo::init(env, &dir)
}

#[test]
fn machine_b_searches_a_revision_machine_a_synced_without_embedding_it() {
    let shared = tempfile::tempdir().unwrap();
    let index_remote = shared.path().join("index.git");
    bare(&index_remote);
    // The source project, pushed to a bare origin both machines clone.
    let (a, fake_a) = machine();
    let seed = a.repo("seed");
    seed.write("harbour.go", "package demo\n\n// Harbour docks ships.\nfunc Harbour() int {\n\treturn 1\n}\n");
    seed.write("docs/guide.md", "# Guide\n\nhow ships enter the harbour\n");
    seed.commit_all("one");
    let origin = shared.path().join("origin.git");
    bare(&origin);
    seed.git(&["push", "-q", origin.to_str().unwrap(), "main"]);
    let commit = seed.git(&["rev-parse", "HEAD"]).trim().to_string();

    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    // A's search embeds the revision and publishes it after persisting.
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();
    let embedded_on_a = fake_a.chunk_inputs().len();
    assert!(embedded_on_a > 0);
    let files = git_in(&index_remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(files.lines().any(|path| path.contains(&commit)), "{files}");
    assert!(files.lines().any(|path| path == "schema.json"), "{files}");

    // The explicit export finds the same index and changes nothing.
    let run = a.run_in(project_a.path(), &["index", "sync"]);
    assert_eq!(run.stdout_text(), format!("synced indexes=1 records={embedded_on_a} skipped=0\n"), "{}", run.stderr);
    assert!(run.stderr.contains("index sync: fetching remote\n"), "{}", run.stderr);
    assert!(run.stderr.contains("index sync: syncing indexes 1/1\n"), "{}", run.stderr);

    // Machine B: another HOME, same remote; its revision search embeds nothing.
    let (b, fake_b) = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index"]).success();
    assert_eq!(fake_b.requests(), 0, "machine B embedded: {:?}", fake_b.inputs());
    let stdout =
        b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--min-score", "0.01", "harbour ships"]).success();
    assert!(stdout.contains("harbour.go"), "{stdout}");
    assert!(fake_b.chunk_inputs().is_empty(), "only the query is embedded: {:?}", fake_b.chunk_inputs());
}

#[test]
fn index_sync_needs_index_remote_and_exact_usage() {
    let (env, _fake) = machine();
    let run = env.run_in(&env.work(), &["index", "sync"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("index.remote is not configured"), "{}", run.stderr);
    for (args, usage) in [
        (&["index", "gc", "--dry-run", "--dry-run"][..], "usage: git-agent index gc [--dry-run]\n"),
        (&["index", "gc", "--remote", "x"], "usage: git-agent index gc [--dry-run]\n"),
        (&["index", "migrate", "--to", "v3"], "usage: git-agent index migrate --to v2 [--dry-run]\n"),
        (&["index", "sync", "now"], "usage: git-agent index sync\n"),
    ] {
        let run = env.run_in(&env.work(), args);
        assert_eq!(run.code, Some(2), "{args:?}");
        assert_eq!(run.stderr, usage, "{args:?}");
        assert_eq!(run.stdout_text(), "");
    }
}

#[test]
fn conflicting_payloads_from_another_machine_fail_the_sync() {
    let shared = tempfile::tempdir().unwrap();
    let index_remote = shared.path().join("index.git");
    bare(&index_remote);
    let (a, _fake_a) = machine();
    let seed = a.repo("seed");
    seed.write("harbour.go", "package demo\n\n// Harbour docks ships.\nfunc Harbour() int {\n\treturn 1\n}\n");
    seed.commit_all("one");
    let origin = shared.path().join("origin.git");
    bare(&origin);
    seed.git(&["push", "-q", origin.to_str().unwrap(), "main"]);
    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();

    // Machine B's embeddings differ (another vector for the same input):
    // its local index cannot merge with A's records. B indexes with no
    // remote configured, then syncs.
    let (b, fake_b) = machine();
    fake_b.set_mode(git_agent_tests::fake_embeddings::Mode::Constant);
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index"]).success();
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    let run = b.run_in(project_b.path(), &["index", "sync"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("conflicting vector payloads"), "{}", run.stderr);
    assert_eq!(run.stdout_text(), "");
}

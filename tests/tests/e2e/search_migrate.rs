//! Metadata migrations on first search use: a legacy `<project>/.git-agent/`
//! folder moves into the home metadata folder, path-keyed search data is
//! merged into the origin-keyed store; both survive a daemon killed midway.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::{GitRepo, TestEnv, sha256_hex};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn setup() -> (TestEnv, FakeEmbeddings) {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "32");
    (env, fake)
}

fn search_json(env: &TestEnv, dir: &Path, args: &[&str]) -> Value {
    let stdout = env.run_in(dir, args).success();
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("invalid JSON ({error}):\n{stdout}"))
}

fn stop_daemon(env: &TestEnv) {
    let status = env.gitagentd(&["stop"]).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success());
}

/// A search run by a daemon killed at the migration step `step`.
fn crash_at(env: &TestEnv, repo: &GitRepo, step: &str) {
    stop_daemon(env);
    let output =
        env.git_agent_in(repo.path(), &["search", "--index"]).env("GITAGENTD_SEARCH_CRASH_AT", step).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{step}: {}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stdout.is_empty());
}

fn two_commits(env: &TestEnv, name: &str) -> GitRepo {
    let repo = env.repo(name);
    repo.write("alpha.go", "package demo\n\nfunc Alpha() int {\n\treturn 1\n}\n");
    repo.write("notes.md", "# Notes\n\nfirst notes\n");
    repo.commit_all("one");
    repo.write("notes.md", "# Notes\n\nsecond notes\n");
    repo.commit_all("two");
    repo
}

fn metadata_root(env: &TestEnv) -> PathBuf {
    env.home().join(".git-agent")
}

fn path_keyed(env: &TestEnv, repo: &GitRepo) -> PathBuf {
    metadata_root(env).join(sha256_hex(repo.path().to_str().unwrap().as_bytes()))
}

/// Every `manifest.json` below `dir`.
fn manifests(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else if entry.file_name() == "manifest.json" {
                found.push(entry.path());
            }
        }
    }
    found
}

fn index_dirs(env: &TestEnv, repo: &GitRepo) -> Vec<String> {
    let listed = search_json(env, repo.path(), &["search", "--ls", "--format", "json"]);
    let mut dirs: Vec<String> =
        listed.as_array().unwrap().iter().map(|index| index["dir"].as_str().unwrap().to_string()).collect();
    dirs.sort();
    dirs
}

#[test]
fn path_keyed_search_data_merges_into_the_origin_keyed_store_after_a_crash() {
    let (env, fake) = setup();
    let repo = two_commits(&env, "merge");
    search_json(&env, repo.path(), &["search", "--index"]);
    search_json(&env, repo.path(), &["search", "--index", "--rev", "HEAD~1"]);
    let legacy_search = path_keyed(&env, &repo).join("search");
    assert!(legacy_search.join("fs").is_dir() && legacy_search.join("revs").is_dir());

    // With an origin the project's search store is origin-keyed.
    repo.git(&["remote", "add", "origin", "https://example.test/org/merge.git"]);
    let project_id = env.run_in(repo.path(), &["project_id"]).success();
    let origin_keyed = metadata_root(&env).join(project_id.trim());
    assert_ne!(origin_keyed, path_keyed(&env, &repo));
    crash_at(&env, &repo, "migrate-search");
    assert!(legacy_search.is_dir(), "an interrupted merge keeps its source");
    assert_eq!(manifests(&origin_keyed).len(), 1, "killed after the first index was merged");

    fake.reset();
    search_json(&env, repo.path(), &["search", "--index"]);
    search_json(&env, repo.path(), &["search", "--index", "--rev", "HEAD~1"]);
    assert!(fake.chunk_inputs().is_empty(), "every vector was merged: {:?}", fake.chunk_inputs());
    assert!(!legacy_search.exists(), "the obsolete tree is removed");
    let dirs = index_dirs(&env, &repo);
    assert_eq!(dirs.len(), 2, "merged once, never twice: {dirs:?}");
    assert!(dirs.iter().all(|dir| Path::new(dir).starts_with(&origin_keyed)), "{dirs:?} under {origin_keyed:?}");
}

#[test]
fn a_legacy_project_folder_moves_home_after_a_crash() {
    let (env, fake) = setup();
    let repo = two_commits(&env, "legacy");
    search_json(&env, repo.path(), &["search", "--index"]);
    stop_daemon(&env);
    // The layout an old version kept inside the project.
    let home_dir = path_keyed(&env, &repo);
    let legacy = repo.path().join(".git-agent");
    std::fs::rename(&home_dir, &legacy).unwrap();
    std::fs::create_dir_all(legacy.join("tasks/t1")).unwrap();
    std::fs::write(legacy.join("tasks/t1/record.json"), b"{}").unwrap();
    std::fs::write(legacy.join("notes.txt"), b"legacy notes").unwrap();

    crash_at(&env, &repo, "migrate-legacy");
    assert!(legacy.is_dir(), "the move was interrupted");
    assert!(home_dir.join("notes.txt").is_file(), "the first entry moved whole");
    assert!(!home_dir.join("tasks").exists(), "later entries wait for the rerun");

    fake.reset();
    search_json(&env, repo.path(), &["search", "--index"]);
    assert!(fake.chunk_inputs().is_empty(), "the legacy index was kept: {:?}", fake.chunk_inputs());
    assert!(!legacy.exists());
    assert_eq!(std::fs::read(home_dir.join("notes.txt")).unwrap(), b"legacy notes");
    assert!(home_dir.join("tasks/t1/record.json").is_file());
    assert_eq!(index_dirs(&env, &repo).len(), 1);
}

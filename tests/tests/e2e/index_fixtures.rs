//! The fixtures of the `index.remote` tests (index sync, migrate, gc):
//! machines with isolated HOMEs, a source project both clone from one bare
//! origin, and the bare index remote they share.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::git::{git, git_trimmed};
use git_agent_tests::git_servers::HttpGit;
use git_agent_tests::{GitRepo, TestEnv};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// One machine: its own HOME, daemon and fake embeddings server.
pub(crate) fn machine() -> (TestEnv, FakeEmbeddings) {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "32");
    (env, fake)
}

pub(crate) fn stop_daemon(env: &TestEnv) {
    let status = env.gitagentd(&["stop"]).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success());
}

pub(crate) fn bare(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    git(path, &["init", "--bare", "-q", "-b", "main"]);
}

/// A clone of `origin` in `env`'s work folder (so both machines share the
/// origin identity).
pub(crate) fn clone(env: &TestEnv, origin: &Path) -> GitRepo {
    let dir = env.work().join("project");
    git(&env.work(), &["clone", "-q", origin.to_str().unwrap(), dir.to_str().unwrap()]);
    GitRepo::init(env, &dir)
}

/// A source project pushed to a bare origin under `shared` (both machines
/// clone it, so they share its origin identity) and an empty bare index
/// remote beside it; returns (origin, index remote).
pub(crate) fn shared_project(a: &TestEnv, shared: &Path) -> (PathBuf, PathBuf) {
    let index_remote = shared.join("index.git");
    bare(&index_remote);
    let seed = a.repo("seed");
    seed.write("harbour.go", "package demo\n\n// Harbour docks ships.\nfunc Harbour() int {\n\treturn 1\n}\n");
    seed.write("docs/guide.md", "# Guide\n\nhow ships enter the harbour\n");
    seed.commit_all("one");
    let origin = shared.join("origin.git");
    bare(&origin);
    seed.git(&["push", "-q", origin.to_str().unwrap(), "main"]);
    (origin, index_remote)
}

/// [`shared_project`] with the index remote served over HTTP by `git
/// http-backend` (anonymous pushes accepted; with `credentials`,
/// `user:password`, every request must carry them); returns (origin, index
/// remote folder, server).
pub(crate) fn http_shared_project(
    a: &TestEnv,
    shared: &Path,
    credentials: Option<&str>,
) -> (PathBuf, PathBuf, HttpGit) {
    let (origin, index_remote) = shared_project(a, shared);
    git_trimmed(&index_remote, &["config", "http.receivepack", "true"]);
    (origin, index_remote, HttpGit::start(shared, credentials))
}

/// The file paths of the remote's `main` tree.
pub(crate) fn remote_files(remote: &Path) -> Vec<String> {
    git_trimmed(remote, &["ls-tree", "-r", "--name-only", "main"]).lines().map(str::to_string).collect()
}

/// The logical size of every file of the remote's `main` tree.
pub(crate) fn remote_bytes(remote: &Path) -> u64 {
    let listing = git_trimmed(remote, &["ls-tree", "-r", "-l", "main"]);
    listing.lines().map(|line| line.split_whitespace().nth(3).unwrap().parse::<u64>().unwrap()).sum()
}

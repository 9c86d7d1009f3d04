//! `git-agent search --rev`: a committed tree instead of the files on disk,
//! its per-commit index, reuse from the filesystem index and other
//! revisions, and the single flight for revision builds.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::{GitRepo, TestEnv, wait_until};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

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

/// The paths of the chunk inputs the fake embedded, sorted, with repeats.
fn embedded_paths(fake: &FakeEmbeddings) -> Vec<String> {
    let mut paths: Vec<String> = fake
        .chunk_inputs()
        .iter()
        .map(|input| input.lines().next().unwrap().trim_start_matches("path: ").to_string())
        .collect();
    paths.sort();
    paths
}

fn listed_files(env: &TestEnv, dir: &Path, rev: &str) -> Vec<String> {
    let listing = search_json(env, dir, &["search", "--ls-files", "--rev", rev, "--format", "json"]);
    listing["files"].as_array().unwrap().iter().map(|file| file.as_str().unwrap().to_string()).collect()
}

fn spawn(env: &TestEnv, dir: &Path, args: &[&str]) -> Child {
    env.git_agent_in(dir, args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn head(repo: &GitRepo, rev: &str) -> String {
    repo.git(&["rev-parse", rev]).trim().to_string()
}

#[test]
fn revision_search_reads_only_the_committed_tree() {
    let (env, fake) = setup();
    let repo = env.repo("rev");
    repo.write("kept.go", "package demo\n\n// Kept is committed.\nfunc Kept() int {\n\treturn 1\n}\n");
    repo.write("gone.go", "package demo\n\nfunc Gone() {}\n");
    repo.write("docs/guide_test.md", "# Guide tests\n");
    repo.write("changed.md", "# Changed\n\ncommitted wording about harbours\n");
    repo.write(".gitignore", "forced.md\n");
    repo.write("docs/.gitagentignore", "draft.md\n");
    repo.write("docs/guide.md", "# Guide\n\ncommitted guide\n");
    repo.write("docs/draft.md", "# Draft\n\nignored by the committed .gitagentignore\n");
    repo.write("forced.md", "# Forced\n\nignored by the committed .gitignore\n");
    repo.git(&["add", "-A"]);
    repo.git(&["add", "-f", "forced.md"]);
    repo.git(&["commit", "-q", "-m", "one"]);
    let commit = head(&repo, "HEAD");

    // The work tree differs from HEAD: modified, deleted, untracked and
    // newly ignored files, and changed ignore files.
    repo.write("changed.md", "# Changed\n\nworking-tree wording about lighthouses\n");
    std::fs::remove_file(repo.path().join("gone.go")).unwrap();
    repo.write("untracked.go", "package demo\n\nfunc Untracked() {}\n");
    repo.write(".gitignore", "kept.go\n");
    std::fs::remove_file(repo.path().join("docs/.gitagentignore")).unwrap();

    // No index yet: --ls-files names the per-commit folder.
    let run = env.run_in(repo.path(), &["search", "--ls-files", "--rev", "HEAD"]);
    let stderr = run.failure();
    assert!(stderr.contains(&format!("search/revs/{commit}")), "{stderr}");
    assert!(stderr.contains("git-agent search --index"), "{stderr}");

    let output = search_json(&env, repo.path(), &["search", "--rev", "HEAD", "--min-score", "0.01", "harbours"]);
    assert_eq!(
        output["source"],
        serde_json::json!({"mode": "revision", "rev": "HEAD", "resolved_rev": commit}),
        "{output}"
    );
    assert_eq!(output["retrieval"]["index"], "miss");
    assert_eq!(
        embedded_paths(&fake),
        ["changed.md", "docs/guide.md", "docs/guide_test.md", "gone.go", "gone.go", "kept.go", "kept.go"]
    );
    let inputs = fake.chunk_inputs().join("\n");
    assert!(inputs.contains("harbours") && !inputs.contains("lighthouses"), "{inputs}");
    let ranges: Vec<&str> =
        output["results"].as_array().unwrap().iter().map(|result| result["range"].as_str().unwrap()).collect();
    assert!(ranges.iter().all(|range| !range.starts_with("untracked.go")), "{ranges:?}");

    assert_eq!(
        listed_files(&env, repo.path(), "HEAD"),
        ["changed.md", "docs/guide.md", "docs/guide_test.md", "gone.go", "kept.go"]
    );
    let tree = env
        .run_in(repo.path(), &["search", "--ls-files", "--rev", &commit[..10], "--scope", "docs", "--no-tests"])
        .success();
    assert_eq!(tree, ".\n└── docs/\n    └── guide.md\n");

    // --ls lists the revision index with its short commit.
    let ls = env.run_in(repo.path(), &["search", "--ls"]).success();
    assert!(ls.starts_with(&format!("revision rev={} root=", &commit[..12])), "{ls}");
    assert!(ls.contains(&format!("search/revs/{commit}\n")), "{ls}");
    let listed = search_json(&env, repo.path(), &["search", "--ls", "--format", "json"]);
    assert_eq!(listed[0]["mode"], "revision");
    assert_eq!(listed[0]["resolved_rev"], commit.as_str());
    let run = env.run_in(repo.path(), &["search", "--ls", "--rev", "HEAD"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("search --ls does not accept --rev"), "{}", run.stderr);

    // The records name their blobs.
    let index_dir = PathBuf::from(
        search_json(&env, repo.path(), &["search", "--ls-files", "--rev", "HEAD", "--format", "json"])["index"]["dir"]
            .as_str()
            .unwrap(),
    );
    let records: Vec<Value> =
        serde_json::from_slice(&std::fs::read(index_dir.join("vectors.index.json")).unwrap()).unwrap();
    let kept = records.iter().find(|record| record["path"] == "kept.go").unwrap();
    assert_eq!(kept["source"], "revision");
    assert_eq!(kept["blob"].as_str().unwrap(), head(&repo, "HEAD:kept.go"));

    // A second search of the same commit, even from a new daemon, embeds
    // no chunk.
    fake.reset();
    let status = env.gitagentd(&["stop"]).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success());
    let brief =
        env.run_in(repo.path(), &["search", "--rev", "main", "--format", "brief", "--min-score", "0.01", "harbours"]);
    let stdout = brief.success();
    assert!(stdout.starts_with("# mode=revision index=fresh\n"), "{stdout}");
    assert!(fake.chunk_inputs().is_empty(), "{:?}", fake.chunk_inputs());

    // A revision that does not resolve fails clearly; outside a repository
    // --rev is refused.
    let run = env.run_in(repo.path(), &["search", "--rev", "no-such-branch", "q"]);
    assert!(run.failure().contains("cannot resolve --rev \"no-such-branch\""), "{}", run.failure());
    let outside = env.work().join("plain");
    std::fs::create_dir_all(&outside).unwrap();
    let run = env.run_in(&outside, &["search", "--rev", "HEAD", "q"]);
    assert!(run.failure().contains("--rev requires a Git repository"), "{}", run.failure());
}

fn two_commits(env: &TestEnv) -> GitRepo {
    let repo = env.repo("seed");
    repo.write("alpha.go", "package demo\n\nfunc Alpha() int {\n\treturn 1\n}\n");
    repo.write("beta.go", "package demo\n\nfunc Beta() int {\n\treturn 2\n}\n");
    repo.write("notes.md", "# Notes\n\nfirst notes\n");
    repo.commit_all("one");
    repo.write("notes.md", "# Notes\n\nsecond notes\n");
    repo.commit_all("two");
    repo
}

#[test]
fn revision_indexes_seed_from_the_filesystem_index_and_other_revisions() {
    let (env, fake) = setup();
    let repo = two_commits(&env);
    search_json(&env, repo.path(), &["search", "--index"]);
    assert_eq!(fake.chunk_inputs().len(), 5);

    // HEAD~1 differs from the work tree only in notes.md.
    fake.reset();
    search_json(&env, repo.path(), &["search", "--index", "--rev", "HEAD~1"]);
    assert_eq!(embedded_paths(&fake), ["notes.md"]);
    assert!(fake.chunk_inputs()[0].contains("first notes"));

    // HEAD is fully covered by the filesystem index and HEAD~1.
    fake.reset();
    search_json(&env, repo.path(), &["search", "--index", "--rev", "HEAD"]);
    assert!(fake.chunk_inputs().is_empty(), "{:?}", fake.chunk_inputs());

    // Another model never reuses these vectors.
    fake.reset();
    search_json(&env, repo.path(), &["search", "--index", "--rev", "HEAD~1", "--embedding-model", "other-model"]);
    assert_eq!(fake.chunk_inputs().len(), 5);
}

#[test]
fn parallel_revision_searches_build_once() {
    let (env, fake) = setup();
    let repo = two_commits(&env);
    env.run_in(repo.path(), &["project_id"]).success();
    fake.close_gate();
    let children: Vec<Child> = (0..4)
        .map(|_| spawn(&env, repo.path(), &["search", "--rev", "HEAD~1", "--min-score", "0.01", "notes"]))
        .collect();
    assert!(wait_until(DEADLINE, || fake.held() >= 1 && env.active_commands() == 4), "all four searches are running");
    fake.open_gate();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    assert_eq!(fake.chunk_inputs().len(), 5, "one build: {:?}", fake.chunk_inputs());
}

/// In a blob-less partial clone (`git clone --filter=blob:none`), the
/// files of an older revision were never fetched: `--rev` fetches them
/// from the promisor remote before the build, as `git show` would, the
/// ignore files first and then only the files they select; a second
/// search fetches nothing.
#[test]
fn a_partial_clone_fetches_the_searched_revision_from_its_promisor_remote() {
    let (env, fake) = setup();
    let upstream = env.repo("upstream");
    upstream.git(&["config", "uploadpack.allowFilter", "true"]);
    upstream.git(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    upstream.write(".gitignore", "vendor/\n");
    upstream.write("alpha.go", "package demo\n\n// Alpha counts harbours.\nfunc Alpha() int {\n\treturn 1\n}\n");
    upstream.write("vendor/lib.go", "package lib\n\nfunc Vendored() {}\n");
    upstream.git(&["add", "-f", "vendor/lib.go"]);
    upstream.commit_all("one");
    upstream.write(".gitignore", "build/\n");
    upstream.write("alpha.go", "package demo\n\nfunc Alpha() int {\n\treturn 2\n}\n");
    upstream.git(&["rm", "-q", "-r", "vendor"]);
    upstream.commit_all("two");
    let partial = env.work().join("partial");
    let url = format!("file://{}", upstream.path().display());
    upstream.git(&["clone", "-q", "--filter=blob:none", &url, partial.to_str().unwrap()]);
    let missing = || {
        let listed = std::process::Command::new("git")
            .args(["rev-list", "--objects", "--missing=print", "HEAD~1"])
            .current_dir(&partial)
            .output()
            .unwrap();
        String::from_utf8_lossy(&listed.stdout).matches('?').count()
    };
    assert_eq!(missing(), 3, "the old .gitignore, alpha.go and vendor/lib.go are not in the clone");

    let run = env.run_in(&partial, &["search", "--debug", "--rev", "HEAD~1", "--min-score", "0.01", "harbours"]);
    let output: Value = serde_json::from_str(&run.success()).unwrap();
    assert_eq!(output["source"]["resolved_rev"], head(&upstream, "HEAD~1").as_str());
    let results = output["results"].as_array().unwrap();
    let ranges: Vec<&str> = results.iter().map(|result| result["range"].as_str().unwrap()).collect();
    assert!(ranges.iter().any(|range| range.starts_with("alpha.go:")), "{output}");
    assert!(ranges.iter().all(|range| !range.starts_with("vendor/")), "{output}");
    assert_eq!(output["retrieval"]["skipped"]["unreadable"], 0, "{output}");
    assert!(run.stderr.contains("search_promised_fetch") && run.stderr.contains("objects=2"), "{}", run.stderr);
    assert!(fake.chunk_inputs().iter().any(|input| input.contains("Alpha counts harbours")));
    assert_eq!(missing(), 1, "the ignored vendor/lib.go stays on the server");

    let again = env.run_in(&partial, &["search", "--debug", "--rev", "HEAD~1", "--min-score", "0.01", "harbours"]);
    again.success();
    assert!(!again.stderr.contains("search_promised_fetch"), "{}", again.stderr);

    // A treeless clone (`--filter=tree:0`) lacks the old trees too: the
    // root tree comes first (with the trees below it), then the blobs.
    let treeless = env.work().join("treeless");
    upstream.git(&["clone", "-q", "--filter=tree:0", &url, treeless.to_str().unwrap()]);
    let run = env.run_in(&treeless, &["search", "--debug", "--rev", "HEAD~1", "--min-score", "0.01", "harbours"]);
    let output: Value = serde_json::from_str(&run.success()).unwrap();
    let ranges: Vec<&str> =
        output["results"].as_array().unwrap().iter().map(|result| result["range"].as_str().unwrap()).collect();
    assert!(ranges.iter().any(|range| range.starts_with("alpha.go:")), "{output}");
    assert!(ranges.iter().all(|range| !range.starts_with("vendor/")), "{output}");
    assert!(run.stderr.contains("objects=3"), "the root tree, .gitignore and alpha.go: {}", run.stderr);
}

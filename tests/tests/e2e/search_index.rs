//! The search index as a durable, shared store: interrupted publication,
//! corruption, reuse across indexes, stale entries, filter-preserving
//! writes, and the daemon's single flight under parallel callers.

use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
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
    let run = env.run_in(dir, args);
    let stdout = run.success();
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("invalid JSON ({error}):\n{stdout}"))
}

fn result_paths(output: &Value) -> Vec<String> {
    let mut paths: Vec<String> = output["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["range"].as_str().unwrap().rsplit_once(':').unwrap().0.to_string())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn listed_files(env: &TestEnv, dir: &Path) -> Vec<String> {
    let stdout = env.run_in(dir, &["search", "--ls-files", "--format", "json"]).success();
    let listing: Value = serde_json::from_str(&stdout).unwrap();
    listing["files"].as_array().unwrap().iter().map(|file| file.as_str().unwrap().to_string()).collect()
}

/// The folder of the only index of `repo`'s project.
fn index_dir(env: &TestEnv, repo: &Path) -> PathBuf {
    let stdout = env.run_in(repo, &["search", "--ls", "--format", "json"]).success();
    let listing: Value = serde_json::from_str(&stdout).unwrap();
    PathBuf::from(listing[0]["dir"].as_str().unwrap())
}

fn store_payload(index_dir: &Path) -> PathBuf {
    // <metadata>/search/fs/<root>/ -> <metadata>/search/vector-store/vectors.f32
    index_dir.parent().unwrap().parent().unwrap().join("vector-store/vectors.f32")
}

fn records(index_dir: &Path) -> Vec<Value> {
    serde_json::from_slice::<Vec<Value>>(&std::fs::read(index_dir.join("vectors.index.json")).unwrap()).unwrap()
}

fn stop_daemon(env: &TestEnv) {
    let status = env.gitagentd(&["stop"]).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success());
}

fn project(env: &TestEnv, name: &str) -> GitRepo {
    let repo = env.repo(name);
    repo.write("alpha.go", "package demo\n\nfunc Alpha() int {\n\treturn 1\n}\n");
    repo.write("beta.go", "package demo\n\nfunc Beta() int {\n\treturn 2\n}\n");
    repo.write("notes.md", "# Notes\n\nalpha and beta\n");
    repo
}

/// Chunks of `project`: two per Go file plus one for the notes.
const PROJECT_CHUNKS: usize = 5;

#[test]
fn interrupted_publication_leaves_no_readable_snapshot() {
    for step in ["invalidate", "payload", "catalog", "records"] {
        let (env, fake) = setup();
        let repo = project(&env, "crash");
        search_json(&env, repo.path(), &["search", "--min-score", "0.01", "alpha"]);
        let dir = index_dir(&env, repo.path());
        assert!(dir.join("manifest.json").is_file());
        stop_daemon(&env);

        // A change that needs new vectors, published by a daemon that is
        // killed at `step`.
        repo.write("gamma.go", "package demo\n\nfunc Gamma() int {\n\treturn 3\n}\n");
        let output = env
            .git_agent_in(repo.path(), &["search", "--min-score", "0.01", "alpha"])
            .env("GITAGENTD_SEARCH_CRASH_AT", step)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{step}: {}", String::from_utf8_lossy(&output.stderr));
        assert!(output.stdout.is_empty(), "{step}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("daemon"),
            "{step}: {}",
            String::from_utf8_lossy(&output.stderr)
        );

        // No partial snapshot is readable...
        assert!(!dir.join("manifest.json").exists(), "{step}: the manifest survived");
        assert_eq!(env.run_in(repo.path(), &["search", "--ls"]).success(), "no search indexes\n", "{step}");
        let stderr = env.run_in(repo.path(), &["search", "--ls-files"]).failure().to_string();
        assert!(stderr.contains("no search index at"), "{step}: {stderr}");

        // ...and the next search rebuilds it completely.
        fake.reset();
        let rebuilt = search_json(&env, repo.path(), &["search", "--min-score", "0.01", "alpha"]);
        assert_eq!(rebuilt["retrieval"]["index"], "miss", "{step}");
        assert_eq!(fake.chunk_inputs().len(), PROJECT_CHUNKS + 2, "{step}: every chunk is embedded again");
        assert_eq!(result_paths(&rebuilt), ["alpha.go", "beta.go", "gamma.go", "notes.md"], "{step}");
        assert!(dir.join("manifest.json").is_file(), "{step}");
    }
}

#[test]
fn corrupt_payload_or_checksum_is_a_cache_miss() {
    let (env, fake) = setup();
    let repo = project(&env, "corrupt");
    search_json(&env, repo.path(), &["search", "--index"]);
    let dir = index_dir(&env, repo.path());
    let stored = records(&dir);

    // Flip the bytes of notes.md's stored vector in the shared payload.
    let notes = stored.iter().find(|record| record["path"] == "notes.md").unwrap();
    let offset = notes["offset"].as_u64().unwrap() as usize;
    let payload = store_payload(&dir);
    let mut bytes = std::fs::read(&payload).unwrap();
    for byte in &mut bytes[offset..offset + 8] {
        *byte ^= 0x5a;
    }
    std::fs::write(&payload, &bytes).unwrap();
    fake.reset();
    let output = search_json(&env, repo.path(), &["search", "--min-score", "0.01", "notes"]);
    assert_eq!(output["retrieval"]["index"], "hit");
    let inputs = fake.chunk_inputs();
    assert_eq!(inputs.len(), 1, "only the corrupt vector is embedded again: {inputs:?}");
    assert!(inputs[0].starts_with("path: notes.md\n"));

    // A reference whose checksum no longer matches the catalog is a miss too.
    let mut edited = records(&dir);
    let beta = edited.iter_mut().find(|record| record["path"] == "beta.go" && record["start_line"] == 3).unwrap();
    beta["vector_checksum"] = Value::from(beta["vector_checksum"].as_u64().unwrap() ^ 1);
    std::fs::write(dir.join("vectors.index.json"), serde_json::to_vec(&edited).unwrap()).unwrap();
    fake.reset();
    search_json(&env, repo.path(), &["search", "--min-score", "0.01", "notes"]);
    let inputs = fake.chunk_inputs();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert!(inputs[0].starts_with("path: beta.go\nsymbol: function Beta\n"), "{inputs:?}");

    // A manifest of an unknown version makes the whole index a miss.
    std::fs::write(dir.join("manifest.json"), b"{\"version\":99}\n").unwrap();
    fake.reset();
    let output = search_json(&env, repo.path(), &["search", "--index"]);
    assert_eq!(output["retrieval"]["index"], "miss");
    assert_eq!(fake.chunk_inputs().len(), PROJECT_CHUNKS);
}

#[test]
fn reuse_across_indexes_embeds_only_unmatched_chunks() {
    let (env, fake) = setup();
    // Two clones of one origin share a metadata root but not an index.
    let first = project(&env, "first");
    first.git(&["remote", "add", "origin", "https://example.test/org/shared.git"]);
    let second = project(&env, "second");
    second.git(&["remote", "add", "origin", "git@example.test:org/shared.git"]);
    second.write("delta.go", "package demo\n\nfunc Delta() int {\n\treturn 4\n}\n");
    std::fs::remove_file(second.path().join("notes.md")).unwrap();

    search_json(&env, first.path(), &["search", "--index"]);
    assert_eq!(fake.chunk_inputs().len(), PROJECT_CHUNKS);
    fake.reset();
    let output = search_json(&env, second.path(), &["search", "--index"]);
    let inputs = fake.chunk_inputs();
    assert_eq!(inputs.len(), 2, "only delta.go's chunks are new: {inputs:?}");
    assert!(inputs.iter().all(|input| input.starts_with("path: delta.go\n")), "{inputs:?}");
    assert_eq!(output["retrieval"]["index"], "hit");

    let listing: Value =
        serde_json::from_str(&env.run_in(second.path(), &["search", "--ls", "--format", "json"]).success()).unwrap();
    assert_eq!(listing.as_array().unwrap().len(), 2, "{listing}");
    assert_eq!(listed_files(&env, second.path()), ["alpha.go", "beta.go", "delta.go"]);

    // --reindex does not seed from other indexes.
    fake.reset();
    search_json(&env, second.path(), &["search", "--index", "--reindex"]);
    assert_eq!(fake.chunk_inputs().len(), 6);
}

#[test]
fn deleted_and_newly_ignored_files_disappear() {
    let (env, fake) = setup();
    fake.set_mode(Mode::Constant);
    let repo = project(&env, "stale");
    let first = search_json(&env, repo.path(), &["search", "alpha"]);
    assert_eq!(result_paths(&first), ["alpha.go", "beta.go", "notes.md"]);

    std::fs::remove_file(repo.path().join("beta.go")).unwrap();
    repo.write(".gitignore", "notes.md\n");
    fake.reset();
    let second = search_json(&env, repo.path(), &["search", "alpha"]);
    assert_eq!(result_paths(&second), ["alpha.go"]);
    assert_eq!(fake.chunk_inputs().len(), 0, "removing entries embeds nothing");
    assert_eq!(listed_files(&env, repo.path()), ["alpha.go"]);
    let dir = index_dir(&env, repo.path());
    assert!(records(&dir).iter().all(|record| record["path"] == "alpha.go"));

    // An empty candidate set is persisted too.
    std::fs::remove_file(repo.path().join("alpha.go")).unwrap();
    let empty = search_json(&env, repo.path(), &["search", "alpha"]);
    assert_eq!(empty["results"], serde_json::json!([]));
    assert_eq!(listed_files(&env, repo.path()), Vec::<String>::new());
}

#[test]
fn code_and_visible_scope_writes_preserve_other_entries() {
    let (env, fake) = setup();
    let repo = project(&env, "filters");
    repo.write("sub/inner.go", "package sub\n\nfunc Inner() {}\n");
    search_json(&env, repo.path(), &["search", "--index"]);
    let all = listed_files(&env, repo.path());
    assert_eq!(all, ["alpha.go", "beta.go", "notes.md", "sub/inner.go"]);

    // --code searches code only, shares the cache and keeps notes.md.
    repo.write("gamma.go", "package demo\n\nfunc Gamma() {}\n");
    fake.reset();
    let code = search_json(&env, repo.path(), &["search", "--code", "--min-score", "0.01", "alpha"]);
    assert_eq!(code["retrieval"]["filters"], serde_json::json!({"code": true, "no_tests": false}));
    assert_eq!(result_paths(&code), ["alpha.go", "beta.go", "gamma.go", "sub/inner.go"]);
    assert!(fake.chunk_inputs().iter().all(|input| input.starts_with("path: gamma.go\n")));
    assert_eq!(listed_files(&env, repo.path()), ["alpha.go", "beta.go", "gamma.go", "notes.md", "sub/inner.go"]);
    // The default search reuses every vector --code wrote.
    fake.reset();
    let all = search_json(&env, repo.path(), &["search", "--min-score", "0.01", "alpha"]);
    assert_eq!(all["retrieval"]["index"], "hit");
    assert!(fake.chunk_inputs().is_empty());
    // A changed non-code file is dropped by a --code write, not kept stale.
    repo.write("notes.md", "# Notes\n\nchanged\n");
    search_json(&env, repo.path(), &["search", "--code", "--index"]);
    assert_eq!(listed_files(&env, repo.path()), ["alpha.go", "beta.go", "gamma.go", "sub/inner.go"]);

    // A search from a subdirectory is scoped to it, shares the root's
    // cache, and keeps the entries outside it.
    repo.write("sub/inner.go", "package sub\n\nfunc Inner() int { return 1 }\n");
    fake.reset();
    let scoped = search_json(&env, &repo.path().join("sub"), &["search", "--min-score", "0.01", "inner"]);
    assert_eq!(scoped["retrieval"]["filters"], serde_json::json!({"code": false, "no_tests": false, "scope": ["sub"]}));
    assert_eq!(result_paths(&scoped), ["sub/inner.go"]);
    assert!(fake.chunk_inputs().iter().all(|input| input.starts_with("path: sub/inner.go\n")));
    assert_eq!(listed_files(&env, repo.path()), ["alpha.go", "beta.go", "gamma.go", "sub/inner.go"]);
}

#[test]
fn scope_into_a_dot_path_uses_its_own_cache() {
    let (env, _fake) = setup();
    let repo = project(&env, "dotscope");
    repo.write(".github/workflows/ci.yml", "on: push\njobs: {}\n");
    search_json(&env, repo.path(), &["search", "--index"]);
    assert!(!listed_files(&env, repo.path()).iter().any(|path| path.starts_with(".github")));

    let scoped = search_json(&env, repo.path(), &["search", "--scope", ".github", "--min-score", "0.01", "ci jobs"]);
    assert_eq!(result_paths(&scoped), [".github/workflows/ci.yml"]);
    let listing: Value =
        serde_json::from_str(&env.run_in(repo.path(), &["search", "--ls", "--format", "json"]).success()).unwrap();
    let indexes = listing.as_array().unwrap();
    assert_eq!(indexes.len(), 2);
    let scoped_index = indexes.iter().find(|index| index.get("filters").is_some()).unwrap();
    let filter = scoped_index["filters"][0].as_str().unwrap();
    assert!(filter.starts_with("scope-") && filter.len() == "scope-".len() + 16, "{filter}");
    assert!(scoped_index["dir"].as_str().unwrap().ends_with(&format!("/{filter}")));
    let text = env.run_in(repo.path(), &["search", "--ls"]).success();
    assert!(text.contains(&format!(" filters={filter} files=1 chunks=1 ")), "{text}");
    let files = env.run_in(repo.path(), &["search", "--ls-files", "--scope", ".github"]).success();
    assert_eq!(files, ".\n└── .github/\n    └── workflows/\n        └── ci.yml\n");
}

fn spawn(env: &TestEnv, dir: &Path, args: &[&str]) -> Child {
    env.git_agent_in(dir, args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

#[test]
fn parallel_searches_of_a_missing_index_embed_each_chunk_once() {
    let (env, fake) = setup();
    let repo = project(&env, "parallel");
    // Start the daemon first so every caller shares it.
    env.run_in(repo.path(), &["project_id"]).success();
    fake.close_gate();
    let children: Vec<Child> =
        (0..8).map(|_| spawn(&env, repo.path(), &["search", "--min-score", "0.01", "alpha beta"])).collect();
    assert!(wait_until(DEADLINE, || fake.held() >= 1 && env.active_commands() == 8), "all eight searches are running");
    fake.open_gate();
    let mut outputs = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        outputs.push(serde_json::from_slice::<Value>(&output.stdout).unwrap());
    }
    let inputs = fake.chunk_inputs();
    let mut unique = inputs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(inputs.len(), PROJECT_CHUNKS, "each chunk is embedded exactly once: {inputs:?}");
    assert_eq!(unique.len(), PROJECT_CHUNKS);
    assert_eq!(fake.query_inputs().len(), 1, "the shared query is embedded once");
    assert!(outputs.iter().all(|output| output["results"] == outputs[0]["results"]));
    assert_eq!(outputs.iter().filter(|output| output["retrieval"]["index"] == "miss").count(), 1);
}

#[test]
fn parallel_reindex_rebuilds_once() {
    let (env, fake) = setup();
    let repo = project(&env, "reindex");
    search_json(&env, repo.path(), &["search", "--index"]);
    fake.reset();
    fake.close_gate();
    let children: Vec<Child> = (0..4).map(|_| spawn(&env, repo.path(), &["search", "--index", "--reindex"])).collect();
    assert!(wait_until(DEADLINE, || fake.held() >= 1 && env.active_commands() == 4), "all four are running");
    fake.open_gate();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    assert_eq!(fake.chunk_inputs().len(), PROJECT_CHUNKS, "one rebuild in total");
    // A later --reindex rebuilds again.
    fake.reset();
    search_json(&env, repo.path(), &["search", "--index", "--reindex"]);
    assert_eq!(fake.chunk_inputs().len(), PROJECT_CHUNKS);
}

/// Syntax chunks reach the JSON `symbol` object, the brief summary and the
/// embedding input (a method with its impl as context); an index whose
/// manifest names another chunker (or none, as before it was recorded) is
/// refreshed and republished without embedding any input that is unchanged.
#[test]
fn syntax_chunks_have_symbols_and_another_chunkers_index_is_refreshed_without_embedding() {
    let (env, fake) = setup();
    fake.set_mode(Mode::Constant);
    let repo = env.repo("syntax");
    repo.write(
        "src/lib.rs",
        "use std::path::Path;\n\npub struct Searcher {\n    root: String,\n}\n\nimpl Searcher {\n    /// Whether a path is under the root.\n    pub fn search_path(&self, path: &Path) -> bool {\n        path.starts_with(&self.root)\n    }\n}\n",
    );
    repo.write("alpha.go", "package demo\n\nfunc Alpha() int {\n\treturn 1\n}\n");
    let output = search_json(&env, repo.path(), &["search", "--min-score", "0.01", "search path"]);
    let method = output["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|result| result["range"] == "src/lib.rs:8-11")
        .unwrap_or_else(|| panic!("no method chunk: {output}"));
    assert_eq!(method["symbol"], serde_json::json!({"type": "method", "name": "Searcher::search_path"}));
    assert!(method["scores"]["symbol"].as_f64().unwrap() > 0.0, "{method}");
    let inputs = fake.chunk_inputs();
    assert!(
        inputs.iter().any(|input| input.starts_with(
            "path: src/lib.rs\nsymbol: method Searcher::search_path (searcher search path)\nlanguage: rust\ncontext: impl Searcher {\n\n    /// Whether"
        )),
        "{inputs:?}"
    );
    let brief =
        env.run_in(repo.path(), &["search", "--format", "brief", "--min-score", "0.01", "search path"]).success();
    assert!(brief.contains(" src/lib.rs:8 Searcher::search_path\n"), "{brief}");
    assert!(brief.contains(" src/lib.rs:3 Searcher\n"), "{brief}");

    let dir = index_dir(&env, repo.path());
    let manifest_path = dir.join("manifest.json");
    let manifest: Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let chunker = manifest["chunker"].as_str().unwrap().to_string();
    assert!(chunker.starts_with("syntax-4+"), "{manifest}");
    let built = records(&dir);
    for other in [Some("syntax-0+old"), None] {
        stop_daemon(&env);
        let mut manifest: Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
        match other {
            Some(name) => manifest["chunker"] = name.into(),
            None => {
                manifest.as_object_mut().unwrap().remove("chunker");
            }
        }
        std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
        fake.reset();
        search_json(&env, repo.path(), &["search", "--index"]);
        assert_eq!(fake.chunk_inputs().len(), 0, "unchanged inputs keep their vectors ({other:?})");
        let manifest: Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
        assert_eq!(manifest["chunker"], chunker.as_str(), "republished under this chunker ({other:?})");
        let refreshed = records(&dir);
        let identity = |records: &[Value]| -> Vec<(Value, Value, Value)> {
            records
                .iter()
                .map(|record| {
                    (record["path"].clone(), record["start_line"].clone(), record["embedding_input_hash"].clone())
                })
                .collect()
        };
        assert_eq!(identity(&refreshed), identity(&built));
    }
}

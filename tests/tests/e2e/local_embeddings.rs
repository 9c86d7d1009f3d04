//! Search with no key: the local embedding model. The tests load the tiny
//! BERT-shaped model of the embed crate's fixtures (`search.model_dir` or
//! `GIT_AGENT_MODEL_DIR`); the pinned download is tried against a hub that
//! cannot be reached, which must fail with one clear error and leave
//! nothing behind.

use git_agent_tests::{GitRepo, TestEnv};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The tiny model the embed crate's tests generate (32 dimensions).
pub(crate) fn tiny_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../gitagentd/embed/tests/fixtures/tiny-bert")
}

fn sample_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("sample");
    repo.write("app/flags.go", "package app\n\n// ParseFlags reads the search flags.\nfunc ParseFlags(args []string) string {\n\treturn args[0]\n}\n");
    repo.write("docs/guide.md", "# Search flags\n\nHow search flags are parsed and ranked.\n");
    repo.commit_all("initial");
    repo
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("{error}: {text}"))
}

#[test]
fn search_with_no_key_runs_the_local_model_and_names_it() {
    let mut env = TestEnv::new();
    env.set_env("GIT_AGENT_MODEL_DIR", &tiny_model().display().to_string());
    let repo = sample_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--min-score", "0.001", "--debug", "where are the flags parsed"]);
    let output = json(&run.success());
    let retrieval = &output["retrieval"];
    assert_eq!(retrieval["embedding_backend"], "local", "{output}");
    assert!(retrieval["embedding_model"].as_str().unwrap().starts_with("tiny-bert@sha256-"), "{output}");
    assert_eq!(retrieval["dimensions"], 32);
    assert_eq!(retrieval["index"], "miss");
    assert!(!output["results"].as_array().unwrap().is_empty(), "{output}");
    assert!(run.stderr.contains("search_embeddings backend=local model=tiny-bert@sha256-"), "{}", run.stderr);

    // The second search reuses the index and the loaded model.
    let warm =
        json(&env.run_in(repo.path(), &["search", "--min-score", "0.001", "where are the flags parsed"]).success());
    assert_eq!(warm["retrieval"]["index"], "hit", "{warm}");
    assert_eq!(warm["results"], output["results"], "the same model ranks alike");

    // A flag that only an endpoint understands is refused, naming why.
    let refused = env.run_in(repo.path(), &["search", "--embedding-model", "text-embedding-3-large", "flags"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("--embedding-model applies to remote embeddings"), "{}", refused.stderr);
}

#[test]
fn the_configuration_chooses_the_model_folder_and_the_backend() {
    let env = TestEnv::new();
    let repo = sample_repo(&env);
    let dir = tiny_model().canonicalize().unwrap().display().to_string();
    assert_eq!(env.run_in(repo.path(), &["config", "search.model_dir", &dir]).success(), "");
    assert_eq!(env.run_in(repo.path(), &["config", "search.model_dir"]).success(), format!("{dir}\n"));
    let local = json(&env.run_in(repo.path(), &["search", "--min-score", "0.001", "flags"]).success());
    assert_eq!(local["retrieval"]["embedding_backend"], "local", "{local}");

    // Forced remote without a key: the remote error, with the way back.
    assert_eq!(env.run_in(repo.path(), &["config", "search.embeddings", "remote"]).success(), "");
    let stderr = env.run_in(repo.path(), &["search", "flags"]).failure().to_string();
    assert!(stderr.contains("remote embeddings require OPENAI_EMBEDDING_API_KEY or OPENAI_API_KEY"), "{stderr}");
    assert!(stderr.contains("git-agent config --unset search.embeddings"), "{stderr}");
    assert_eq!(env.run_in(repo.path(), &["config", "--unset", "search.embeddings"]).success(), "");
    env.run_in(repo.path(), &["search", "--min-score", "0.001", "flags"]).success();

    // Values that cannot work are refused when set.
    let wrong = env.run_in(repo.path(), &["config", "search.embeddings", "both"]);
    assert_eq!(wrong.code, Some(2));
    assert!(wrong.stderr.contains("neither local nor remote"), "{}", wrong.stderr);
    let relative = env.run_in(repo.path(), &["config", "search.model_dir", "models/tiny"]);
    assert_eq!(relative.code, Some(2));
    assert!(relative.stderr.contains("not an absolute path"), "{}", relative.stderr);
    let unknown = env.run_in(repo.path(), &["config", "search.model"]);
    assert!(unknown.stderr.contains("index.remote, search.embeddings, search.model_dir"), "{}", unknown.stderr);

    // A folder without a model: one error naming the folder and the file.
    let empty = env.root().join("empty-model");
    std::fs::create_dir_all(&empty).unwrap();
    env.run_in(repo.path(), &["config", "search.model_dir", &empty.display().to_string()]).success();
    let stderr = env.run_in(repo.path(), &["search", "flags"]).failure().to_string();
    assert!(stderr.contains(&empty.join("config.json").display().to_string()), "{stderr}");
}

#[test]
fn an_unreachable_hub_is_one_clear_error_and_leaves_nothing_published() {
    let mut env = TestEnv::new();
    env.set_env("GIT_AGENT_MODEL_HUB", "http://127.0.0.1:9");
    let repo = sample_repo(&env);
    let run = env.run_in(repo.path(), &["search", "flags"]);
    let stderr = run.failure().to_string();
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains("http://127.0.0.1:9/sentence-transformers/all-MiniLM-L6-v2/resolve/"),
        "the error names the URL: {stderr}"
    );
    assert!(stderr.contains("search.model_dir"), "the error names the offline way: {stderr}");
    let models = env.home().join(".cache/git-agent/models");
    let published: Vec<String> = std::fs::read_dir(&models)
        .map(|entries| entries.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(published.iter().all(|name| name.starts_with('.')), "nothing published: {published:?}");
}

#[test]
fn index_sync_shares_a_local_model_index_like_any_other() {
    use super::index_fixtures::{clone, shared_project};
    use git_agent_tests::git::git_trimmed;
    let machine = || {
        let mut env = TestEnv::new();
        env.set_env("GIT_AGENT_MODEL_DIR", &tiny_model().display().to_string());
        env
    };
    let shared = tempfile::tempdir().unwrap();
    let a = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    let built = a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index", "--debug"]);
    built.success();
    assert!(built.stderr.contains("search_embed_plan"), "A embedded the revision: {}", built.stderr);
    let commit = git_trimmed(&origin, &["rev-parse", "main"]);
    let files = git_trimmed(&index_remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(files.lines().any(|path| path.contains(&commit)), "A published its local-model index: {files}");

    // Machine B, another HOME with the same model: it reuses every vector.
    let b = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    let run =
        b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--min-score", "0.001", "--debug", "harbour ships"]);
    let output = json(&run.success());
    assert_eq!(output["retrieval"]["embedding_backend"], "local", "{output}");
    assert_eq!(output["retrieval"]["index"], "hit", "{}", run.stderr);
    assert!(!run.stderr.contains("search_embed_plan"), "B embedded nothing of the revision: {}", run.stderr);
    assert!(!output["results"].as_array().unwrap().is_empty(), "{output}");
}

//! Explore's semantic leads end to end: a warm index gives the model its
//! ranked results as leads (relative to the exploration root) and embeds
//! only the query; a missing vector publishes no leads and embeds and
//! builds nothing in the foreground; with an index remote configured, the
//! leader's deferred index-only synchronization runs beside the
//! conversation and ends before the sessions are persisted.

use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
use git_agent_tests::fake_openai::{FakeOpenAi, Reply, Responder, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};

fn setup() -> (TestEnv, FakeOpenAi, FakeEmbeddings, GitRepo) {
    let fake = FakeOpenAi::start();
    let embeddings = FakeEmbeddings::start();
    embeddings.set_mode(Mode::Constant);
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-explore-retrieval");
    embeddings.configure(&mut env);
    let repo = env.repo("app");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.write("src/more/two.rs", "pub fn two() -> u32 {\n    2\n}\n");
    repo.commit_all("feat: add one and two");
    (env, fake, embeddings, repo)
}

/// A reply answering every item of the request with one finding.
fn answer() -> Reply {
    answer_with("src/lib.rs:1-3")
}

/// The same, with the finding's reference.
fn answer_with(reference: &'static str) -> Reply {
    Reply::Computed(Responder::new(move |body| {
        let text = body["input"].to_string();
        let marker = "\\\"item_id\\\": \\\"";
        let answers: Vec<Value> = text
            .match_indices(marker)
            .map(|(at, _)| {
                let rest = &text[at + marker.len()..];
                let id = &rest[..rest.find('\\').unwrap_or(rest.len())];
                json!({"item_id": id, "items": [{"description": "found", "references": [reference]}]})
            })
            .collect();
        events::text_reply(&json!({ "answers": answers }).to_string(), events::usage(300, 0, 40))
    }))
}

/// The `semantic_results` the request's exploration input carries.
fn leads(body: &Value) -> Option<Value> {
    let user = body["input"].as_array()?.iter().rev().find(|item| item["role"] == "user")?;
    let text = user["content"][0]["text"].as_str()?;
    let frame =
        &text[text.find("<exploration_input>")? + "<exploration_input>".len()..text.find("</exploration_input>")?];
    let input: Value = serde_json::from_str(frame.trim()).ok()?;
    input["items"][0].get("semantic_results").cloned()
}

#[test]
fn missing_vectors_publish_no_leads_and_build_nothing_then_a_warm_index_gives_leads() {
    let (env, fake, embeddings, repo) = setup();
    fake.push(answer());
    let run = env.run_in(repo.path(), &["explore", "--debug", "where", "is", "one?"]);
    run.success();
    assert_eq!(leads(&fake.requests()[0].body), None, "no leads without a warm index");
    assert_eq!(embeddings.requests(), 0, "nothing embedded in the foreground");
    let listed: Value =
        serde_json::from_str(&env.run_in(repo.path(), &["search", "--ls", "--format", "json"]).success()).unwrap();
    assert_eq!(listed, json!([]), "no index was built");
    assert!(run.stderr.contains("explore.phase phase=semantic_search "), "{}", run.stderr);

    env.run_in(repo.path(), &["search", "--index", "--code"]).success();
    embeddings.reset();
    fake.push(answer());
    let run = env.run_in(repo.path(), &["explore", "--debug", "where", "is", "one?"]);
    run.success();
    let found = leads(&fake.requests()[1].body).expect("warm leads in the request");
    let ranges: Vec<&str> = found.as_array().unwrap().iter().filter_map(|lead| lead["range"].as_str()).collect();
    assert!(ranges.contains(&"src/lib.rs:1-3"), "{found}");
    assert!(embeddings.chunk_inputs().is_empty(), "only the query is embedded: {:?}", embeddings.inputs());
    assert_eq!(embeddings.query_inputs().len(), 1);
    for phase in ["semantic_search.sync", "semantic_search.embed_query", "semantic_search.score", "semantic_search"] {
        assert!(run.stderr.contains(&format!("explore.phase phase={phase} ")), "{phase}:\n{}", run.stderr);
    }

    // From a subfolder, leads are relative to it and stay beneath it.
    fake.push(answer_with("two.rs:1-3"));
    env.run_in(&repo.path().join("src/more"), &["explore", "what", "is", "two?"]).success();
    let found = leads(&fake.requests()[2].body).expect("warm leads in the subfolder");
    let ranges: Vec<&str> = found.as_array().unwrap().iter().filter_map(|lead| lead["range"].as_str()).collect();
    assert_eq!(ranges, ["two.rs:1-3"], "{found}");

    // A folder without code has nothing to rank: no leads, no query
    // embedding.
    let notes = env.work().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("todo.md"), "# todo\n").unwrap();
    embeddings.reset();
    fake.push(answer_with("todo.md"));
    env.run_in(&notes, &["explore", "what", "is", "left?"]).success();
    assert_eq!(leads(&fake.requests()[3].body), None);
    assert_eq!(embeddings.requests(), 0);
}

#[test]
fn with_an_index_remote_the_leader_synchronizes_beside_the_conversation() {
    let (env, fake, _embeddings, repo) = setup();
    let shared = tempfile::tempdir().unwrap();
    let remote = bare_index_remote(shared.path());
    repo.git(&["remote", "add", "origin", "https://example.test/app.git"]);
    env.run_in(repo.path(), &["config", "index.remote", remote.to_str().unwrap()]).success();
    env.run_in(repo.path(), &["search", "--index", "--code"]).success();
    fake.push(answer());
    let run = env.run_in(repo.path(), &["explore", "--debug", "where", "is", "one?"]);
    run.success();
    let position = |phase: &str| {
        run.stderr.find(&format!("explore.phase phase={phase} ")).unwrap_or_else(|| panic!("{phase}:\n{}", run.stderr))
    };
    assert!(position("index_sync.sync") < position("index_sync"));
    assert!(position("index_sync") < position("persistence"), "the sync ends before persisting:\n{}", run.stderr);
    assert!(position("batch_collection") < position("index_sync.sync"), "it starts after collection");

    // Without warm leads there is nothing to confirm.
    repo.write("src/new.rs", "pub fn new() {}\n");
    fake.push(answer());
    let run = env.run_in(repo.path(), &["explore", "--debug", "what", "is", "new?"]);
    run.success();
    assert!(!run.stderr.contains("phase=index_sync"), "{}", run.stderr);
}

#[test]
fn a_failed_deferred_sync_fails_the_warm_explore_after_the_provider_answered() {
    let (env, fake, _embeddings, repo) = setup();
    let shared = tempfile::tempdir().unwrap();
    let remote = bare_index_remote(shared.path());
    repo.git(&["remote", "add", "origin", "https://example.test/app.git"]);
    env.run_in(repo.path(), &["config", "index.remote", remote.to_str().unwrap()]).success();
    env.run_in(repo.path(), &["search", "--index", "--code"]).success();
    // The remote breaks after the index was built: its folder is no
    // longer a repository.
    std::fs::remove_dir_all(&remote).unwrap();
    std::fs::write(&remote, "not a repository\n").unwrap();
    fake.push(answer());
    let run = env.run_in(repo.path(), &["explore", "--debug", "where", "is", "one?"]);
    let stderr = run.failure().to_string();
    assert_eq!(run.stdout_text(), "", "no result object on failure");
    assert_eq!(fake.requests().len(), 1, "the provider work completed:\n{stderr}");
    assert!(leads(&fake.requests()[0].body).is_some(), "the warm path ran:\n{stderr}");
    assert!(stderr.contains("index.git"), "the error names the remote:\n{stderr}");
    assert!(!stderr.contains("phase=persistence "), "nothing was persisted:\n{stderr}");
}

/// An empty bare repository on disk to serve as `index.remote`.
fn bare_index_remote(dir: &std::path::Path) -> std::path::PathBuf {
    let remote = dir.join("index.git");
    std::fs::create_dir_all(&remote).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "--bare", "-q", "-b", "main"])
        .current_dir(&remote)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(init.success());
    remote
}

#[test]
fn the_local_model_gives_explore_its_leads() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-explore-local");
    // The language model has a key; the embeddings are local all the same.
    env.set_env("GIT_AGENT_EMBEDDINGS", "local");
    env.set_env("GIT_AGENT_MODEL_DIR", &crate::local_embeddings::tiny_model().display().to_string());
    let repo = env.repo("app");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.commit_all("feat: add one");
    env.run_in(repo.path(), &["search", "--index", "--code"]).success();
    fake.push(answer());
    env.run_in(repo.path(), &["explore", "where", "is", "one?"]).success();
    let found = leads(&fake.requests()[0].body).expect("warm leads from the local model");
    let ranges: Vec<&str> = found.as_array().unwrap().iter().filter_map(|lead| lead["range"].as_str()).collect();
    assert!(ranges.contains(&"src/lib.rs:1-3"), "{found}");
}

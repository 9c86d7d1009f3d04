//! Regressions from a new user's first hour (issue 32): each test is named
//! after the bug it pins and runs the real binaries.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::Value;
use std::path::Path;

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

fn small_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("project");
    repo.write(
        "retry.go",
        "package demo\n\n// Retry runs f again after a failure.\nfunc Retry(f func() error) error {\n\treturn f()\n}\n",
    );
    repo.write("notes.md", "# Notes\n\nHow retries back off.\n");
    repo.commit_all("one");
    repo
}

/// The `path:line-line` ranges of a search's results.
fn ranges(output: &Value) -> Vec<String> {
    output["results"].as_array().unwrap().iter().map(|result| result["range"].as_str().unwrap().to_string()).collect()
}

/// Adding, changing and removing `origin` moves the project to another
/// metadata folder; the daemon's cached handles (query history, mapped
/// indexes) must follow, so the next search works without a restart.
#[test]
fn search_keeps_working_when_the_origin_is_added_changed_or_removed() {
    let (env, _fake) = setup();
    let repo = small_repo(&env);
    let first = search_json(&env, repo.path(), &["search", "retry"]);
    assert!(ranges(&first).iter().any(|range| range.starts_with("retry.go:")), "{first}");
    for step in [
        &["remote", "add", "origin", "https://example.com/x.git"][..],
        &["remote", "set-url", "origin", "https://example.com/y.git"],
        &["remote", "remove", "origin"],
        &["remote", "add", "origin", "https://example.com/x.git"],
    ] {
        repo.git(step);
        for dir in [repo.path().to_path_buf(), repo.path().join("sub-none")] {
            if !dir.exists() {
                continue;
            }
            let run = env.run_in(&dir, &["search", "--format", "brief", "retry"]);
            assert_eq!(run.code, Some(0), "after git {step:?}: {}", run.stderr);
            assert!(run.stdout_text().contains("retry.go"), "after git {step:?}: {}", run.stdout_text());
        }
    }
}

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

/// A bare repository, a work tree's `.git` and any folder inside them are
/// Git directories: a filesystem search there would index Git's own files,
/// the config with its credentialed URLs among them, and send them to the
/// embeddings endpoint.
#[test]
fn search_never_indexes_a_git_directory() {
    let (env, fake) = setup();
    let repo = small_repo(&env);
    repo.git(&["remote", "add", "origin", "https://alice:ghp_secret0123456789@github.com/a/b.git"]);
    let bare = env.work().join("bare.git");
    let clone = std::process::Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(repo.path())
        .arg(&bare)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(clone.success());
    let set_url = std::process::Command::new("git")
        .current_dir(&bare)
        .args(["config", "remote.origin.url", "https://alice:ghp_secret0123456789@github.com/a/b.git"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(set_url.success());

    for (dir, hint) in [
        (bare.clone(), "hint: search a commit of this repository: git-agent search --rev HEAD <query...>"),
        (bare.join("refs"), "hint: search a commit of this repository"),
        (repo.path().join(".git"), "hint: search the work tree instead: git-agent --cwd "),
        (repo.path().join(".git/objects"), "hint: search the work tree instead"),
    ] {
        let run = env.run_in(&dir, &["search", "github", "origin"]);
        assert_eq!(run.code, Some(1), "{}: {}", dir.display(), run.stderr);
        assert!(run.stdout.is_empty());
        assert!(run.stderr.contains("is a Git directory, not a work tree"), "{}", run.stderr);
        assert!(run.stderr.contains(hint), "{}", run.stderr);
    }
    assert!(!fake.inputs().iter().any(|input| input.contains("ghp_secret")), "a credential reached the endpoint");

    // A bare repository's commits are searched with --rev, as a clone's are.
    let found = search_json(&env, &bare, &["search", "--rev", "HEAD", "retry"]);
    assert!(ranges(&found).iter().any(|range| range.starts_with("retry.go:")), "{found}");
    assert!(!ranges(&found).iter().any(|range| range.starts_with("config")), "{found}");
    assert!(!fake.inputs().iter().any(|input| input.contains("ghp_secret")), "a credential reached the endpoint");
}

/// Outside any repository, a search of the home folder (or anything above
/// it) or of a tree of more than 20,000 files is refused with a hint,
/// before anything is embedded.
#[test]
fn search_refuses_to_index_a_home_folder_or_a_huge_tree_outside_git() {
    let (env, fake) = setup();
    std::fs::write(env.home().join("notes.md"), "# Notes\n\nretry\n").unwrap();
    let run = env.run_in(&env.home(), &["search", "retry"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("it is outside any Git repository and it holds your home folder"), "{}", run.stderr);
    assert!(run.stderr.contains("hint: run the search inside a project folder, or narrow it with --scope <paths>"));

    let huge = env.work().join("huge");
    for folder in 0..21 {
        let dir = huge.join(format!("d{folder}"));
        std::fs::create_dir_all(&dir).unwrap();
        for file in 0..1000 {
            std::fs::write(dir.join(format!("f{file}.txt")), "x").unwrap();
        }
    }
    let run = env.run_in(&huge, &["search", "retry"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("holds more than 20000 files"), "{}", run.stderr);
    // A scope narrows what is counted, and what is indexed.
    let scoped = search_json(&env, &huge, &["search", "--scope", "d3", "--index"]);
    assert_eq!(scoped["retrieval"]["filters"]["scope"], serde_json::json!(["d3"]), "{scoped}");
    assert!(fake.inputs().iter().all(|input| !input.contains("d4/")), "only the scope was embedded");
}

/// A `--scope` that names nothing is an error, not an empty result.
#[test]
fn a_missing_scope_is_a_usage_error() {
    let (env, _fake) = setup();
    let repo = small_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--scope", "nope/dir", "retry"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("--scope path \"nope/dir\" does not exist under"), "{}", run.stderr);
}

/// While the walk still finds files, the `--agent` endpoint says so
/// (`counting`) and gives no percentage that would grow with its total;
/// once the total is known, the percentage is of the final total.
#[test]
fn agent_progress_says_it_is_still_counting_instead_of_a_percentage_of_a_growing_total() {
    use std::io::{BufRead, BufReader, Read, Write};
    let (mut env, fake) = setup();
    env.set_env("OPENAI_EMBEDDING_BATCH_INPUTS", "1");
    env.set_env("OPENAI_EMBEDDING_CONCURRENCY", "1");
    let repo = env.repo("many");
    for file in 0..200 {
        repo.write(&format!("src/f{file}.go"), &format!("package src\n\nfunc F{file}() int {{\n\treturn {file}\n}}\n"));
    }
    repo.commit_all("many");
    env.run_in(repo.path(), &["project_id"]).success();
    fake.close_gate();
    let mut child = env
        .git_agent_in(repo.path(), &["search", "--agent", "--index"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let endpoint: Value = serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"));
    let address = std::path::PathBuf::from(endpoint["address"].as_str().unwrap());
    let poll = || -> Value {
        let mut stream = std::os::unix::net::UnixStream::connect(&address).unwrap();
        stream.write_all(b"GET /progress HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap().trim()).unwrap()
    };
    assert!(git_agent_tests::wait_until(std::time::Duration::from_secs(30), || fake.held() >= 1));
    let mut body = poll();
    assert!(
        git_agent_tests::wait_until(std::time::Duration::from_secs(30), || {
            body = poll();
            body["total"].as_u64().unwrap_or(0) >= 1
        }),
        "{body}"
    );
    assert_eq!(body["status"], "indexing", "{body}");
    assert_eq!(body["counting"], true, "the walk is held behind the closed gate: {body}");
    assert_eq!(body["percent"], 0.0, "{body}");
    assert!(body["total"].as_u64().unwrap() < 200, "{body}");
    fake.open_gate();
    assert!(child.wait().unwrap().success());
}

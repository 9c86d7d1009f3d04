//! No secret leaves the machine: a generated corpus of credentials (no
//! real key, built from each kind's pattern at run time) planted in a
//! staged diff, in files the model's tools read, and in search chunks,
//! through the real binaries against the fake provider and the fake
//! embeddings server. Every value is absent from every recorded request
//! and from every file under the isolated `~/.git-agent` and state
//! folders; the stderr line counts them; `redact.allow` and `--no-redact`
//! do what they say.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::fake_openai::{FakeOpenAi, RecordedRequest, Reply, Responder, events};
use git_agent_tests::{GitRepo, TestEnv};
use gitagent_redact::corpus::{self, Plant};
use serde_json::{Value, json};
use std::path::Path;

/// The `.env` file staged or read beside the corpus: withheld whole.
const ENV_FILE: &str = "DATABASE_URL=postgres://app:plainpass@db/app\nFEATURE_FLAG=on\n";
const ENV_VALUES: [&str; 2] = ["plainpass", "FEATURE_FLAG=on"];

fn setup() -> (TestEnv, FakeOpenAi) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    (env, fake)
}

/// Every value the test planted.
fn values(seed: u64) -> Vec<String> {
    corpus::plants(seed).into_iter().map(|plant| plant.value).collect()
}

/// Every file under `dir`, recursively (missing folders hold none).
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return files };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => files.extend(files_under(&path)),
            Ok(kind) if kind.is_file() => files.push(path),
            _ => {}
        }
    }
    files
}

/// Asserts that no value is in any request body or any file the daemon
/// keeps (`~/.git-agent`, the XDG state folder), and returns how many
/// files were searched.
fn assert_absent(env: &TestEnv, requests: &[String], values: &[String]) -> usize {
    let mut kept = Vec::new();
    for file in files_under(&env.home().join(".git-agent")).into_iter().chain(files_under(&env.state_home())) {
        kept.push((file.display().to_string(), std::fs::read(&file).unwrap_or_default()));
    }
    for value in values {
        for (index, body) in requests.iter().enumerate() {
            assert!(!body.contains(value.as_str()), "request {index} holds {value}:\n{body}");
        }
        for (path, bytes) in &kept {
            let found = bytes.windows(value.len()).any(|window| window == value.as_bytes());
            assert!(!found, "{path} holds {value}");
        }
    }
    kept.len()
}

/// The bodies of the recorded requests as text (JSON-escaped values
/// included in their escaped form, and decoded once more for the inner
/// JSON of tool outputs and data frames).
fn bodies(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|request| {
            let mut text = request.body.to_string();
            for inner in request.input_texts() {
                text.push('\n');
                text.push_str(&inner);
            }
            text
        })
        .collect()
}

/// The count of the stderr line, which must name kinds and never values.
fn redacted_count(stderr: &str, plants: &[Plant]) -> usize {
    let line = stderr
        .lines()
        .find(|line| line.starts_with("redacted "))
        .unwrap_or_else(|| panic!("no redaction line in:\n{stderr}"));
    for plant in plants {
        assert!(!line.contains(&plant.value), "the line names a value: {line}");
    }
    line.split_whitespace().nth(1).and_then(|count| count.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

fn staged_repo(env: &TestEnv, seed: u64) -> GitRepo {
    let repo = env.repo("project");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    repo.commit_all("feat: start the project");
    repo.write("config/settings.py", &corpus::source_file(seed));
    repo.write(".env", ENV_FILE);
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    repo.git(&["add", "-A"]);
    repo
}

#[test]
fn commit_msg_sends_no_planted_secret_in_the_diff_or_a_tool_output() {
    let (env, fake) = setup();
    let repo = staged_repo(&env, 1);
    let plants = corpus::plants(1);
    assert!(plants.iter().map(|plant| plant.rule).collect::<std::collections::HashSet<_>>().len() >= 20);
    fake.push(Reply::Events(events::tool_calls(&[("c1", "git_staged_diff", "{}")], events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::text_reply("feat: add the service settings", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit-msg", "--debug"]);
    assert_eq!(run.success(), "feat: add the service settings\n");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let bodies = bodies(&requests);
    let mut planted = values(1);
    planted.extend(ENV_VALUES.map(str::to_string));
    assert_absent(&env, &bodies, &planted);
    for plant in &plants {
        assert!(bodies[0].contains(&format!("[REDACTED:{}]", plant.rule)), "no marker of {}", plant.rule);
    }
    let tool_output = requests[1].body["input"].to_string();
    assert!(tool_output.contains("[REDACTED:aws-access-token]"), "the tool output is redacted too");
    assert!(bodies[0].contains("diff --git a/.env b/.env") && bodies[0].contains("[REDACTED:secret-file]"));
    // Every planted value and the .env file, each counted once however
    // many requests carried it; `--debug` adds where.
    assert_eq!(redacted_count(&run.stderr, &plants), plants.len() + 1, "{}", run.stderr);
    assert!(run.stderr.contains("config/settings.py:5 (aws-access-token)"), "{}", run.stderr);
    assert!(run.stderr.contains("(at .env (secret-file), "), "{}", run.stderr);
}

#[test]
fn the_commit_trace_shows_markers_not_values() {
    let (env, fake) = setup();
    let repo = staged_repo(&env, 2);
    fake.push(Reply::Events(events::tool_calls(&[("c1", "git_staged_diff", "{}")], events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::text_reply("feat: add the service settings", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit"]);
    let stdout = run.stdout_text();
    assert!(stdout.contains("[REDACTED:"), "the trace shows markers:\n{stdout}");
    let mut planted = values(2);
    planted.extend(ENV_VALUES.map(str::to_string));
    for value in &planted {
        assert!(!stdout.contains(value.as_str()), "the trace holds {value}");
    }
    assert_absent(&env, &bodies(&fake.requests()), &planted);
}

/// The item IDs an explore request asks about, from its input frame.
fn item_ids(body: &Value) -> Vec<String> {
    let text = body["input"].to_string();
    let marker = "\\\"item_id\\\": \\\"";
    text.match_indices(marker)
        .map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            rest[..rest.find('\\').unwrap_or(rest.len())].to_string()
        })
        .collect()
}

#[test]
fn explore_tool_reads_are_redacted_in_requests_sessions_and_logs() {
    let (env, fake) = setup();
    let repo = env.repo("app");
    repo.write("config/settings.py", &corpus::source_file(3));
    repo.write(".env.production", ENV_FILE);
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.commit_all("feat: add settings");
    let reads = [
        ("c1", "read_file", r#"{"path":"config/settings.py"}"#),
        ("c2", "read_file", r#"{"path":".env.production"}"#),
        ("c3", "grep", r#"{"pattern":"AKIA|ghp_|FEATURE"}"#),
    ];
    fake.push(Reply::Events(events::tool_calls(&reads, events::usage(1, 0, 1))));
    fake.push(Reply::Computed(Responder::new(|body| {
        let answers: Vec<Value> = item_ids(body)
            .into_iter()
            .map(|id| json!({"item_id": id, "items": [{"description": "The settings hold the service keys.", "references": ["config/settings.py"]}]}))
            .collect();
        events::text_reply(&json!({ "answers": answers }).to_string(), events::usage(1, 0, 1))
    })));
    let run = env.run_in(repo.path(), &["explore", "where", "are", "the", "service", "keys?"]);
    run.success();
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{}", run.stderr);
    let outputs = requests[1].body["input"].to_string();
    assert!(outputs.contains("[REDACTED:secret-file] .env.production: 2 lines"), "{outputs}");
    assert!(outputs.contains("[REDACTED:github-pat]"), "{outputs}");
    let mut planted = values(3);
    planted.extend(ENV_VALUES.map(str::to_string));
    let kept = assert_absent(&env, &bodies(&requests), &planted);
    assert!(kept > 0, "explore keeps its session and log under ~/.git-agent");
    let plants = corpus::plants(3);
    assert_eq!(redacted_count(&run.stderr, &plants), plants.len() + 1, "{}", run.stderr);
}

#[test]
fn search_chunks_are_redacted_before_they_are_embedded_or_stored() {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    fake.keep_inputs(true);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "64");
    let repo = env.repo("sample");
    repo.write("config/settings.py", &corpus::source_file(4));
    repo.write("app/main.py", "def serve_requests(port):\n    return listen_forever(port)\n");
    repo.write(".env", ENV_FILE);
    repo.commit_all("feat: sample");

    let run = env.run_in(repo.path(), &["search", "--format", "json", "AKIA"]);
    let stdout = run.success();
    let mut planted = values(4);
    planted.extend(ENV_VALUES.map(str::to_string));
    let inputs = fake.inputs();
    assert!(!inputs.is_empty());
    let kept = assert_absent(&env, &[stdout.clone(), inputs.join("\n")], &planted);
    assert!(kept > 0, "the index is kept under ~/.git-agent");
    assert!(fake.chunk_inputs().iter().any(|input| input.contains("[REDACTED:aws-access-token]")));
    assert!(run.stderr.starts_with("redacted "), "{}", run.stderr);

    // The file's other chunks are found as before.
    let found = env
        .run_in(repo.path(), &["search", "--format", "json", "--min-score", "0.01", "def main return os getcwd"])
        .success();
    assert!(found.contains("config/settings.py"), "{found}");
    let found = env
        .run_in(
            repo.path(),
            &["search", "--format", "json", "--min-score", "0.01", "def serve_requests port return listen_forever"],
        )
        .success();
    assert!(found.contains("app/main.py"), "{found}");
}

#[test]
fn redact_allow_exempts_what_it_matches_and_is_checked_when_set() {
    let (env, fake) = setup();
    let repo = staged_repo(&env, 5);
    let plants = corpus::plants(5);
    let aws = &plants[0];
    assert_eq!(aws.rule, "aws-access-token");

    let bad = env.run_in(repo.path(), &["config", "redact.allow", "(unclosed"]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("redact.allow \"(unclosed\" is not a valid regular expression"), "{}", bad.stderr);

    env.run_in(repo.path(), &["config", "redact.allow", "^AKIA"]).success();
    assert_eq!(env.run_in(repo.path(), &["config", "redact.allow"]).success(), "^AKIA\n");
    fake.push(Reply::Events(events::text_reply("feat: add the service settings", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    run.success();
    let body = bodies(&fake.requests()).remove(0);
    assert!(body.contains(&aws.value), "the allowed key is sent");
    assert!(!body.contains(&plants[1].value), "the others are not");
    assert_eq!(redacted_count(&run.stderr, &plants), plants.len(), "{}", run.stderr);

    env.run_in(repo.path(), &["config", "--unset", "redact.allow"]).success();
    fake.push(Reply::Events(events::text_reply("feat: add the service settings", events::usage(1, 0, 1))));
    env.run_in(repo.path(), &["commit-msg"]).success();
    assert!(!bodies(&fake.requests()).remove(1).contains(&aws.value));
}

#[test]
fn no_redact_sends_the_text_as_it_is_and_says_so() {
    let (env, fake) = setup();
    let repo = staged_repo(&env, 6);
    fake.push(Reply::Events(events::text_reply("feat: add the service settings", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit-msg", "--no-redact"]);
    assert_eq!(run.success(), "feat: add the service settings\n");
    assert!(
        run.stderr.contains("warning: --no-redact: secrets in this command's requests are sent as they are"),
        "{}",
        run.stderr
    );
    let body = bodies(&fake.requests()).remove(0);
    assert!(body.contains(&corpus::plants(6)[0].value));
    assert!(!body.contains("[REDACTED:"));
}

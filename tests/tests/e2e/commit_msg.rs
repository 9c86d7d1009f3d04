//! `git-agent commit-msg` end to end: the real client and daemon against
//! the fake OpenAI server, in temporary repositories.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, TestEnv, assert_golden};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

fn setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.repo("project");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    repo.write("README.md", "# Project\n");
    repo.commit_all("feat: start the project");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    repo.git(&["add", "src/lib.rs"]);
    repo.write("README.md", "# Project\n\nunstaged note\n");
    (env, fake, repo)
}

#[test]
fn prints_exactly_the_message_and_usage_on_stderr() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::text_reply("fix: return the right answer", events::usage(120, 80, 9))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.success(), "fix: return the right answer\n");
    let usage: Vec<&str> = run.stderr.lines().filter(|line| line.contains("llm.usage")).collect();
    assert_eq!(usage.len(), 1, "{}", run.stderr);
    assert!(
        usage[0].ends_with(
            "INF llm.usage step=1 input_tokens=120 cached_input_tokens=80 cache_write_input_tokens=0 output_tokens=9"
        ),
        "{}",
        usage[0]
    );
    assert!(!run.stderr.contains("sk-e2e-secret-key"));

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-e2e-secret-key"));
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["model"], json!("gpt-5.6-luna"));
    assert_eq!(body["parallel_tool_calls"], json!(true));
    let tools = body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    for expected in [
        "git_staged_paths",
        "git_staged_status",
        "git_staged_stat",
        "git_staged_diff",
        "git_recent_commits",
        "git_head_show",
        "git_diff_against_parent",
        "git_show_file_at_rev",
        "read_file",
        "grep",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    for absent in ["git_staged_diff_for_paths", "git_final_amended_diff", "git_amend_delta"] {
        assert!(!names.contains(&absent), "{absent} is offered only for large diffs or amends: {names:?}");
    }
    for tool in tools {
        assert_eq!(tool["strict"], json!(true));
        assert_eq!(tool["parameters"]["additionalProperties"], json!(false));
    }
    let user = requests[0].input_texts().into_iter().find(|text| text.contains("<prepared_commit_context>")).unwrap();
    assert!(user.contains(r#"-    41\n+    42\n"#), "the staged diff is in the prompt: {user}");
    assert!(!user.contains("unstaged note"), "unstaged work stays out");
    assert!(
        user.contains(r#""staged_paths": [\n    "src/lib.rs"\n  ]"#.replace("\\n", "\n").as_str())
            || user.contains("\"src/lib.rs\"")
    );
}

#[test]
fn nothing_staged_fails_before_any_request() {
    let (env, fake, repo) = setup();
    repo.git(&["reset", "-q"]);
    let run = env.run_in(repo.path(), &["commit-msg"]);
    let stderr = run.failure();
    assert!(stderr.contains("nothing is staged") && stderr.contains("hint:"), "{stderr}");
    assert_eq!(fake.requests().len(), 0);
}

#[test]
fn outside_a_repository_fails_clearly() {
    let (env, fake, _repo) = setup();
    let run = env.run_in(&env.work(), &["commit-msg"]);
    assert!(run.failure().contains("not inside a Git repository"), "{}", run.stderr);
    assert_eq!(fake.requests().len(), 0);
}

#[test]
fn tool_calls_round_trip_with_envelopes_in_provider_order() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::tool_calls(
        &[
            ("call_a", "git_staged_diff", r#"{"max_bytes":null,"max_lines":null}"#),
            ("call_b", "read_file", r#"{"path":"../outside","source":null,"line_start":null,"line_end":null,"with_line_number":null,"max_bytes":null,"max_lines":null}"#),
        ],
        events::usage(50, 0, 5),
    )));
    fake.push(Reply::Events(events::text_reply("fix: answer 42", events::usage(70, 40, 4))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.success(), "fix: answer 42\n");
    assert!(run.stderr.contains("llm.usage step=2 input_tokens=70 cached_input_tokens=40"), "{}", run.stderr);

    let second = &fake.requests()[1].body;
    let input = second["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|item| item["type"].as_str().unwrap_or("")).collect();
    let first_call = kinds.iter().position(|kind| *kind == "function_call").unwrap();
    assert_eq!(
        &kinds[first_call..first_call + 4],
        ["function_call", "function_call", "function_call_output", "function_call_output"]
    );
    assert_eq!(input[first_call + 2]["call_id"], json!("call_a"));
    assert_eq!(input[first_call + 3]["call_id"], json!("call_b"));
    let ok: Value = serde_json::from_str(input[first_call + 2]["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        (ok["ok"].clone(), ok["tool"].clone(), ok["truncated"].clone()),
        (json!(true), json!("git_staged_diff"), json!(false))
    );
    assert!(ok["data"]["diff"].as_str().unwrap().contains("+    42"));
    let failed: Value = serde_json::from_str(input[first_call + 3]["output"].as_str().unwrap()).unwrap();
    assert_eq!(failed["ok"], json!(false), "a refused path is a recoverable failure");
    assert!(failed["error"].as_str().unwrap().contains(".."));
    assert!(input[first_call].get("id").is_none(), "replayed items carry no provider ids");
}

#[test]
fn an_invalid_answer_gets_exactly_one_repair_pass() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::text_reply(
        "Here is the commit message:\n```\nfix: x\n```",
        events::usage(1, 0, 1),
    )));
    fake.push(Reply::Events(events::text_reply("fix: return 42 from answer", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.success(), "fix: return 42 from answer\n");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let repair = requests[1].input_texts().last().cloned().unwrap();
    assert!(repair.contains("code fence") && repair.contains("commentary"), "{repair}");
    assert!(requests[1].body.get("tools").is_none(), "the repair request offers no tools");

    fake.push(Reply::Events(events::text_reply("```bad```", events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::text_reply("```still bad```", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert!(run.failure().contains("failed validation after one repair"), "{}", run.stderr);
    assert_eq!(fake.requests().len(), 4, "no second repair");
}

#[test]
fn the_step_ceiling_forces_a_tool_free_final_answer() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "git_staged_paths", "{}")], events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::text_reply("fix: final under budget", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit-msg", "--max-steps", "1"]);
    assert_eq!(run.success(), "fix: final under budget\n");
    let last = &fake.requests()[1];
    assert!(last.body.get("tools").is_none() && last.body.get("parallel_tool_calls").is_none());
    assert!(
        last.input_texts().iter().any(|text| text.contains("<budget_exhausted>") && text.contains("model-step budget"))
    );
}

#[test]
fn a_repeated_call_forces_finalization() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "git_staged_paths", "{}")], events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::tool_calls(&[("c2", "git_staged_paths", "{ }")], events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::text_reply("fix: done", events::usage(1, 0, 1))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.success(), "fix: done\n");
    let last = &fake.requests()[2];
    let outputs: Vec<String> = last.input_texts();
    assert!(outputs.iter().any(|text| text.contains("not executed")), "the repeated call is answered, not run");
    assert!(outputs.iter().any(|text| text.contains("no progress")));
}

#[test]
fn provider_errors_fail_with_their_message_and_no_stdout() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Status(401, r#"{"error":{"message":"Incorrect API key provided: sk-e2e****"}}"#.into()));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    let stderr = run.failure();
    assert!(stderr.contains("HTTP 401") && stderr.contains("Incorrect API key provided"), "{stderr}");
    assert!(!stderr.contains("sk-e2e-secret-key"));
}

#[test]
fn generation_flags_reach_the_wire_and_the_hint_is_escaped() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::text_reply("fix: x", events::usage(1, 0, 1))));
    let run = env.run_in(
        repo.path(),
        &["commit-msg", "--fast", "--high", "--model", "m-test", "--append-prompt", "mention <T1> & more"],
    );
    run.success();
    let body = &fake.requests()[0].body;
    assert_eq!(body["service_tier"], json!("priority"));
    assert_eq!(body["reasoning"], json!({"effort": "high"}));
    assert_eq!(body["model"], json!("m-test"));
    let user = fake.requests()[0].input_texts().into_iter().find(|t| t.contains("<operator_hint>")).unwrap();
    assert!(user.contains("mention &lt;T1&gt; &amp; more"), "{user}");
    let rejected = env.run_in(repo.path(), &["commit-msg", "--low", "--xhigh"]);
    assert_eq!(rejected.code, Some(2));
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn cancelling_the_client_closes_the_provider_stream_without_a_retry() {
    let (env, fake, repo) = setup();
    fake.push(Reply::EventsThenHang(vec![json!({"type": "response.created"})]));
    let mut child =
        env.git_agent_in(repo.path(), &["commit-msg"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    assert!(fake.wait_for_requests(1, WAIT), "the request reached the provider");
    child.kill().unwrap();
    let _ = child.wait();
    assert!(fake.wait_for_abandoned(1, WAIT), "the daemon dropped the provider stream");
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn the_assembled_request_matches_its_golden_file() {
    let (env, fake, repo) = setup();
    repo.write("AGENTS.md", "Use conventional commits.\n");
    repo.write("src/AGENTS.md", "Library code: no panics.\n");
    repo.write("src/CLAUDE.md", "ignored: the AGENTS family wins\n");
    repo.git(&["add", "AGENTS.md", "src/AGENTS.md", "src/CLAUDE.md"]);
    fake.push(Reply::Events(events::text_reply("docs: add guidance", events::usage(1, 0, 1))));
    env.run_in(repo.path(), &["commit-msg"]).success();
    let body = serde_json::to_string_pretty(&fake.requests()[0].body).unwrap();
    let root = repo.path().canonicalize().unwrap();
    let normalized = body.replace(root.to_str().unwrap(), "<repo>").replace(repo.path().to_str().unwrap(), "<repo>");
    assert_golden("commit-msg-request.json", &format!("{normalized}\n"));
}

#[test]
fn skills_mgr_on_path_adds_its_layer_and_the_skills_read_tool() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    put_on_path(
        &mut env,
        "skills-mgr",
        "#!/bin/sh\nif [ \"$1\" = list ]; then printf '## Skills\\n\\n- rust-style: how we write Rust\\n'; \
         else printf 'skill %s range [%s]\\n' \"$2\" \"$3\"; fi\n",
    );
    fake.configure(&mut env, "k");
    let repo = env.repo("skills");
    repo.write("a.txt", "a\n");
    repo.git(&["add", "a.txt"]);
    fake.push(Reply::Events(events::tool_calls(
        &[("s1", "skills_read", r#"{"locator":"rust-style","range":"1:5"}"#)],
        json!({}),
    )));
    fake.push(Reply::Events(events::text_reply("feat: add a", json!({}))));
    assert_eq!(env.run_in(repo.path(), &["commit-msg"]).success(), "feat: add a\n");
    let first = &fake.requests()[0];
    assert!(first.input_texts().iter().any(|text| text == "## Skills\n\n- rust-style: how we write Rust"));
    let tools: Vec<&str> =
        first.body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"skills_read"));
    let output = fake.requests()[1].input_texts().into_iter().find(|text| text.contains("skills_read")).unwrap();
    let envelope: Value = serde_json::from_str(&output).unwrap();
    assert_eq!(envelope["data"]["stdout"], json!("skill rust-style range [1:5]"));
}

#[test]
fn skills_mgr_gets_no_credentials_and_no_option_shaped_locator() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    let script = put_on_path(
        &mut env,
        "skills-mgr",
        "#!/bin/sh\nprintf '%s\\n' \"$@\" >> \"$0.argv\"\n/usr/bin/env > \"$0.env\"\n\
         if [ \"$1\" = list ]; then printf '## Skills\\n'; else printf 'skill %s\\n' \"$2\"; fi\n",
    );
    env.set_env("CODEX_HOME", "/nonexistent/codex-secret-home");
    env.set_env("OPENAI_EMBEDDING_API_KEY", "embed-secret-key");
    env.set_env("GOPATH", "/nonexistent/go");
    fake.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.repo("skills-env");
    repo.write("a.txt", "a\n");
    repo.git(&["add", "a.txt"]);
    fake.push(Reply::Events(events::tool_calls(
        &[
            ("s1", "skills_read", r#"{"locator":"-x","range":""}"#),
            ("s2", "skills_read", r#"{"locator":"rust-style","range":""}"#),
        ],
        json!({}),
    )));
    fake.push(Reply::Events(events::text_reply("feat: add a", json!({}))));
    assert_eq!(env.run_in(repo.path(), &["commit-msg"]).success(), "feat: add a\n");
    // The option-shaped locator never reached skills-mgr; the other did.
    let argv = std::fs::read_to_string(script.with_extension("argv")).unwrap();
    assert!(!argv.lines().any(|arg| arg == "-x"), "{argv}");
    assert!(argv.lines().any(|arg| arg == "rust-style"), "{argv}");
    let outputs = fake.requests()[1].input_texts().join("\n");
    assert!(outputs.contains("would be read as an option"), "{outputs}");
    // Its environment is the allow-list: no provider variable, no
    // credential, no toolchain variable it does not need.
    let seen = std::fs::read_to_string(script.with_extension("env")).unwrap();
    for line in seen.lines() {
        let name = line.split_once('=').map_or(line, |(name, _)| name);
        assert!(!name.starts_with("OPENAI_") && !name.starts_with("CODEX_") && name != "GOPATH", "{line}");
        assert!(!line.contains("secret"), "{line}");
    }
    assert!(seen.lines().any(|line| line.starts_with("HOME=")), "{seen}");
}

#[test]
fn without_skills_mgr_neither_the_layer_nor_the_tool_exists() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::text_reply("fix: x", json!({}))));
    env.run_in(repo.path(), &["commit-msg"]).success();
    let body = fake.requests()[0].body.to_string();
    assert!(!body.contains("skills_read") && !body.contains("## Skills"));
}

/// Writes an executable `name` with `body` into a folder put first on the
/// daemon-side `PATH` of `env`; returns its path.
fn put_on_path(env: &mut TestEnv, name: &str, body: &str) -> std::path::PathBuf {
    let bin = env.work().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join(name);
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    env.set_env("PATH", &path);
    script
}

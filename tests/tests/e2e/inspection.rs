//! `git-agent review` and `git-agent simplify` with the provider-backed
//! engine: the real client and daemon against the fake OpenAI server.
//! Launch, let the scripted model answer, and read the stored result with
//! `--wait`; the recorded requests show what the engine sent.

use git_agent_tests::fake_openai::{FakeOpenAi, RecordedRequest, Reply, events};
use git_agent_tests::{GitRepo, Run, TestEnv, assert_golden};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const KEY: &str = "sk-e2e-inspection-secret";

fn setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, KEY);
    let repo = env.repo("inspected");
    repo.write("README.md", "hello\n");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    repo.commit_all("initial");
    repo.write("README.md", "hello\nworld\n");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    (env, fake, repo)
}

/// The task id of a successful launch.
#[track_caller]
fn launch(env: &TestEnv, repo: &GitRepo, args: &[&str]) -> String {
    let run = env.run_in(repo.path(), args);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stderr, "");
    let value: Value = serde_json::from_str(&run.stdout_text()).unwrap();
    assert_eq!(value["command"], json!(args[0]));
    value["id"].as_str().unwrap().to_string()
}

/// The durable record of a task.
fn record(env: &TestEnv, repo: &GitRepo, id: &str) -> (PathBuf, Value) {
    let project = env.run_in(repo.path(), &["project_id"]).success();
    let path = env.home().join(".git-agent").join(project.trim()).join("background").join(format!("{id}.json"));
    let value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path, value)
}

/// `--wait` fails with empty stdout; returns stderr.
#[track_caller]
fn wait_failure(env: &TestEnv, repo: &GitRepo, command: &str, id: &str) -> String {
    let run: Run = env.run_in(repo.path(), &[command, "--wait", id]);
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout_text());
    run.failure().to_string()
}

const REVIEW: &str = r#"{"summary":"One readme line is unexplained.","recommendation":"COMMENT","findings":[{"severity":"MEDIUM","aspect":"maintainability","title":"Unexplained line","impact":"Readers cannot tell why it exists.","evidences":[{"title":"The new line","path":"README.md","line_start":2,"line_end":2}],"proposed_fix":"Explain the line."}]}"#;

#[test]
fn review_runs_the_model_and_wait_prints_the_stored_report() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::tool_calls(
        &[("call_diff", "review_diff", r#"{"max_bytes":4096,"max_lines":200}"#)],
        events::usage(100, 0, 10),
    )));
    fake.push(Reply::Events(events::text_reply(REVIEW, events::usage(200, 0, 20))));
    let id = launch(&env, &repo, &["review"]);

    let run = env.run_in(repo.path(), &["review", "--wait", &id]);
    let stdout = run.success();
    assert_eq!(run.stderr, "");
    let (_, stored) = record(&env, &repo, &id);
    assert_eq!(stored["terminal"]["kind"], json!("final"));
    let text = &stored["terminal"]["value"]["text"];
    assert_eq!(stdout, format!("{}\n", serde_json::to_string(text).unwrap()), "exactly the stored report");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let mut expected: Value = serde_json::from_str(REVIEW).unwrap();
    expected["checks"] = json!([]);
    assert_eq!(report, expected);
    assert_eq!(stored["terminal"]["value"]["tool_calls"], json!(1));
    assert_eq!(stored["terminal"]["value"]["repair_calls"], json!(0));
    assert_eq!(env.run_in(repo.path(), &["review", "--wait", &id]).success(), stdout, "repeatable");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let body = &request.body;
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
        assert_eq!(body["model"], json!("gpt-5.6-sol"));
        assert_eq!(body["store"], json!(false));
        assert_eq!(body["reasoning"], json!({"effort": "medium", "summary": "auto"}));
        assert_eq!(body["text"]["format"]["type"], json!("json_schema"));
        assert_eq!(body["text"]["format"]["name"], json!("review"));
        assert_eq!(body["text"]["format"]["strict"], json!(true));
        assert_eq!(body["text"]["format"]["schema"]["additionalProperties"], json!(false));
        let names = request.tool_names();
        for expected in ["review_changes", "review_diff", "review_diff_for_paths", "read_file", "grep", "jq"] {
            assert!(names.contains(&expected.to_string()), "{expected} missing from {names:?}");
        }
        let tools = body["tools"].as_array().unwrap();
        for tool in tools.iter().filter(|tool| tool["type"] == "function") {
            assert_eq!(tool["strict"], json!(true));
        }
        // Hosted search on every normal step: API-key auth caps it at 4.
        assert_eq!(tools.last(), Some(&json!({"type": "web_search"})));
        assert_eq!(body["max_tool_calls"], json!(4));
        assert_eq!(body["include"], json!(["web_search_call.action.sources", "reasoning.encrypted_content"]));
        assert!(body.get("prompt_cache_key").is_none(), "a custom endpoint gets no cache fields");
    }
    let first = requests[0].input_texts();
    assert!(body_text(&requests[0]).contains("reviewing a change"));
    let user = first.iter().find(|text| text.contains("<prepared_review_context>")).unwrap();
    assert!(user.contains("+world") && user.contains("+    42"), "{user}");
    assert!(first.iter().any(|text| text.contains("step: 1 of") && text.contains("tool calls left:")), "{first:?}");
    let second = requests[1].input_texts();
    assert!(second.iter().any(|text| text.contains("step: 2 of")), "{second:?}");
    let output = second.iter().find(|text| text.contains("\"tool\":\"review_diff\"")).unwrap();
    let envelope: Value = serde_json::from_str(output).unwrap();
    assert_eq!(envelope["ok"], json!(true));
    assert!(envelope["data"]["diff"].as_str().unwrap().contains("+world"), "{envelope}");
}

/// Terminal controls in the model's report are removed before it is
/// stored, and `--wait` says so on stderr, through the daemon and from the
/// record alone.
#[test]
fn review_wait_says_when_terminal_controls_were_removed() {
    let (env, fake, repo) = setup();
    let hostile = REVIEW.replace("One readme line", "One \\u001b]0;PWNED\\u0007readme\u{1b}[31m line");
    assert!(hostile.contains("\\u001b") && hostile.contains('\u{1b}'), "{hostile}");
    fake.push(Reply::Events(events::text_reply(&hostile, events::usage(200, 0, 20))));
    let id = launch(&env, &repo, &["review"]);

    let through_daemon = env.run_in(repo.path(), &["review", "--wait", &id]);
    let stdout = through_daemon.success();
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["summary"], json!("One readme line is unexplained."));
    assert_eq!(
        through_daemon.stderr,
        "warning: removed 15 bytes of terminal control sequences from the model's answer\n"
    );
    let (_, stored) = record(&env, &repo, &id);
    assert_eq!(stored["terminal"]["value"]["controls_removed"], json!(15));

    let stop = env.gitagentd(&["stop"]).output().unwrap();
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    let from_record = env.run_in(repo.path(), &["review", "--wait", &id]);
    assert_eq!(from_record.success(), stdout, "the same report without a daemon");
    assert_eq!(from_record.stderr, through_daemon.stderr);
}

/// A secret in the reviewed change never reaches the provider, and `--wait`
/// says what was redacted, through the daemon and from the record alone
/// (the launch itself prints nothing on stderr).
#[test]
fn review_wait_says_which_secrets_were_redacted_from_its_requests() {
    let (env, fake, repo) = setup();
    let key = "AKIAZ4PQ7RXW2MBT6JKE";
    repo.write("README.md", &format!("hello\nworld\naws_access_key_id = {key}\n"));
    fake.push(Reply::Events(events::text_reply(REVIEW, events::usage(200, 0, 20))));
    let id = launch(&env, &repo, &["review"]);

    let through_daemon = env.run_in(repo.path(), &["review", "--wait", &id]);
    through_daemon.success();
    assert_eq!(through_daemon.stderr, "redacted 1 secret before sending: 1 aws-access-token\n");
    let requests = fake.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        let body = request.body.to_string();
        assert!(!body.contains(key), "the key reached the provider: {body}");
        assert!(body.contains("[REDACTED:aws-access-token]"), "{body}");
    }
    let (path, _) = record(&env, &repo, &id);
    assert!(!std::fs::read_to_string(&path).unwrap().contains(key));

    let stop = env.gitagentd(&["stop"]).output().unwrap();
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    let from_record = env.run_in(repo.path(), &["review", "--wait", &id]);
    from_record.success();
    assert_eq!(from_record.stderr, through_daemon.stderr);
}

fn body_text(request: &RecordedRequest) -> String {
    request.body["instructions"].as_str().unwrap_or_default().to_string()
}

#[test]
fn simplify_runs_the_model_on_the_index() {
    let (env, fake, repo) = setup();
    repo.git(&["add", "src/lib.rs"]);
    let report = r#"{"summary":"Nothing to simplify.","opportunities":[{"aspect":"clarity","title":"Inline the constant","body":"The function returns a literal; behaviour is the same either way.","evidences":[{"title":"literal","path":"src/lib.rs","line_start":1,"line_end":3}],"proposed_change":"Keep it as is or use a const."}]}"#;
    fake.push(Reply::Events(events::tool_calls(
        &[(
            "call_read",
            "read_file",
            r#"{"path":"src/lib.rs","source":null,"line_start":null,"line_end":null,"with_line_number":null,"max_bytes":null,"max_lines":null}"#,
        )],
        json!({}),
    )));
    fake.push(Reply::Events(events::text_reply(report, json!({}))));
    let id = launch(&env, &repo, &["simplify", "--staged", "--max-web-searches", "2", "focus", "on", "<answer>"]);
    let stdout = env.run_in(repo.path(), &["simplify", "--wait", &id]).success();
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), serde_json::from_str::<Value>(report).unwrap());

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let body = &requests[0].body;
    assert_eq!(body["model"], json!("gpt-5.6-terra"));
    assert_eq!(body["reasoning"], json!({"effort": "low", "summary": "auto"}));
    assert_eq!(body["text"]["format"]["name"], json!("simplify"));
    assert_eq!(body["max_tool_calls"], json!(2), "--max-web-searches overrides the API-key cap");
    assert!(body["tools"].as_array().unwrap().contains(&json!({"type": "web_search"})));
    assert!(requests[0].tool_names().contains(&"review_diff_for_paths".to_string()));
    let user = requests[0].input_texts().into_iter().find(|text| text.contains("<prepared_review_context>")).unwrap();
    assert!(user.contains("+    42") && !user.contains("+world"), "staged scope only: {user}");
    assert!(user.contains("<operator_hint>\nfocus on &lt;answer&gt;\n</operator_hint>"), "{user}");
    let output = requests[1].input_texts().into_iter().find(|text| text.contains("\"tool\":\"read_file\"")).unwrap();
    assert!(output.contains("\"source\":\"index\""), "{output}");
}

#[test]
fn a_provider_failure_is_a_stored_error_without_credentials_or_endpoint() {
    let (mut env, fake, repo) = setup();
    env.set_env("OPENAI_MODEL", "env-model");
    fake.push(Reply::Status(500, format!(r#"{{"error":{{"message":"upstream exploded near {KEY}"}}}}"#)));
    let id = launch(&env, &repo, &["review", "--model", "flag-model"]);
    let stderr = wait_failure(&env, &repo, "review", &id);
    assert!(stderr.contains("HTTP 500") && stderr.contains("upstream exploded"), "{stderr}");
    let url = fake.url();
    let host = url.trim_start_matches("http://").trim_end_matches("/v1");
    assert!(!stderr.contains(KEY) && !stderr.contains(host), "{stderr}");
    let (path, stored) = record(&env, &repo, &id);
    let text = std::fs::read_to_string(path).unwrap();
    assert!(!text.contains(KEY) && !text.contains(host), "{text}");
    assert_eq!(stored["failure"]["model"], json!("flag-model"));
    assert_eq!(stored["failure"]["mode"], json!("uncommitted"));
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(fake.requests()[0].body["model"], json!("flag-model"), "--model wins over OPENAI_MODEL");
}

#[test]
fn an_invalid_report_gets_exactly_one_repair() {
    let (env, fake, repo) = setup();
    let invalid = r#"{"summary":"Looks wrong.","recommendation":"FIX","findings":[]}"#;
    fake.push(Reply::Events(events::text_reply(invalid, json!({}))));
    fake.push(Reply::Events(events::text_reply(REVIEW, json!({}))));
    let id = launch(&env, &repo, &["review"]);
    let stdout = env.run_in(repo.path(), &["review", "--wait", &id]).success();
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["recommendation"], json!("COMMENT"));
    let (_, stored) = record(&env, &repo, &id);
    assert_eq!(stored["terminal"]["value"]["repair_calls"], json!(1));
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let repair = &requests[1];
    assert_eq!(repair.body["text"]["format"]["strict"], json!(true), "the repair keeps the schema");
    assert!(repair.body.get("tools").is_none(), "the repair is tool-free");
    let last = repair.input_texts().pop().unwrap_or_default();
    assert!(last.contains("failed these checks") && last.contains("recommendation"), "{last}");

    // A second invalid answer fails the task after that one repair.
    fake.push(Reply::Events(events::text_reply(invalid, json!({}))));
    fake.push(Reply::Events(events::text_reply(invalid, json!({}))));
    let id = launch(&env, &repo, &["review"]);
    let stderr = wait_failure(&env, &repo, "review", &id);
    assert!(stderr.contains("failed validation after one repair"), "{stderr}");
    assert_eq!(fake.requests().len(), 4);
}

#[test]
fn drift_before_a_tool_call_is_a_stored_rerun_error() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Held(events::tool_calls(
        &[("call_changes", "review_changes", r#"{"offset":0,"limit":50}"#)],
        json!({}),
    )));
    let id = launch(&env, &repo, &["review"]);
    assert!(fake.wait_for_requests(1, Duration::from_secs(30)), "the first request arrived");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    43\n}\n");
    fake.release();
    let stderr = wait_failure(&env, &repo, "review", &id);
    assert!(stderr.contains("authoritative repository state changed since launch; rerun command"), "{stderr}");
    assert_eq!(fake.requests().len(), 1, "no request follows drift");
    let (_, stored) = record(&env, &repo, &id);
    assert!(stored["failure"]["repository_fingerprint"].is_object(), "{stored}");
}

#[test]
fn the_timeout_bounds_the_whole_inspection() {
    let (env, fake, repo) = setup();
    fake.push(Reply::EventsThenHang(vec![json!({"type": "response.created"})]));
    let started = Instant::now();
    let id = launch(&env, &repo, &["review", "--timeout", "1s"]);
    let stderr = wait_failure(&env, &repo, "review", &id);
    assert!(stderr.contains("--timeout") && stderr.contains("1s"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

/// A PATH holding only `git`, so no documentation tool or host check
/// of this machine changes the request.
fn git_only_path(env: &TestEnv) -> String {
    let bin = env.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let git = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("git"))
        .find(|candidate| candidate.is_file())
        .expect("git on PATH");
    std::os::unix::fs::symlink(git, bin.join("git")).unwrap();
    bin.display().to_string()
}

fn normalize(text: &str, repo: &Path) -> String {
    let root = repo.canonicalize().unwrap();
    text.replace(root.to_str().unwrap(), "<repo>").replace(repo.to_str().unwrap(), "<repo>")
}

#[test]
fn the_first_review_request_matches_its_golden_file() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    let path = git_only_path(&env);
    env.set_env("PATH", &path);
    fake.configure(&mut env, KEY);
    let repo = env.repo("golden");
    repo.write("AGENTS.md", "Review with care.\n");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    repo.commit_all("initial");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    fake.push(Reply::Events(events::text_reply(
        r#"{"summary":"Fine.","recommendation":"APPROVE","findings":[]}"#,
        json!({}),
    )));
    let id = launch(&env, &repo, &["review", "--depth", "thorough", "check the answer"]);
    env.run_in(repo.path(), &["review", "--wait", &id]).success();
    let body = serde_json::to_string_pretty(&fake.requests()[0].body).unwrap();
    assert_golden("review-request.json", &format!("{}\n", normalize(&body, repo.path())));
}

#[test]
fn depth_is_read_trimmed_and_in_any_case() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::text_reply(
        r#"{"summary":"Fine.","recommendation":"APPROVE","findings":[]}"#,
        json!({}),
    )));
    let id = launch(&env, &repo, &["review", "--depth", " THOROUGH "]);
    env.run_in(repo.path(), &["review", "--wait", &id]).success();
    let requests = fake.requests();
    assert_eq!(requests[0].body["reasoning"], json!({"effort": "high", "summary": "auto"}), "thorough's effort");

    let run = env.run_in(repo.path(), &["review", "--depth", "deep"]);
    assert_eq!(run.code, Some(2), "a usage error");
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("--depth") && run.stderr.contains("[possible values: fast, balanced, thorough]"),
        "{}",
        run.stderr
    );
    assert_eq!(fake.requests().len(), 1, "no launch");
}

/// Writes `~/.git-agent/settings.json`.
fn settings(env: &TestEnv, text: &str) {
    let dir = env.home().join(".git-agent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), text).unwrap();
}

#[test]
fn post_inspection_hooks_get_the_payload_and_a_failing_hook_keeps_the_report() {
    let (env, fake, repo) = setup();
    let markdown = env.work().join("report.md");
    let payload = env.work().join("payload.json");
    let after = env.work().join("after-failure");
    let hooks = json!({"hooks": {"post_inspection": [
        format!("printf '%s' {{{{shellquote (format_markdown .)}}}} > '{}'", markdown.display()),
        "",
        format!("cat > '{}'", payload.display()),
        "echo 'webhook unreachable' >&2; exit 7",
        format!("touch '{}'", after.display()),
    ]}});
    settings(&env, &hooks.to_string());
    fake.push(Reply::Events(events::text_reply(REVIEW, events::usage(200, 50, 20))));
    let id = launch(&env, &repo, &["review"]);
    let run = env.run_in(repo.path(), &["review", "--wait", &id]);
    let stdout = run.success();
    assert_eq!(run.stderr, "", "the hook diagnostic is not printed");
    let mut expected: Value = serde_json::from_str(REVIEW).unwrap();
    expected["checks"] = json!([]);
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), expected, "the report is untouched");

    let sent: Value = serde_json::from_str(&std::fs::read_to_string(&payload).unwrap()).unwrap();
    assert_eq!(sent["schema_version"], json!(2));
    assert_eq!(sent["report"], expected, "the exact final report");
    assert_eq!(sent["session"]["id"], json!(id));
    assert_eq!(sent["session"]["title"], json!("review inspected (uncommitted)"));
    assert_eq!(sent["session"]["mode"], json!("uncommitted"));
    assert_eq!(sent["session"]["model"], json!("gpt-5.6-sol"));
    assert_eq!(sent["metrics"]["usage"]["input_tokens"], json!(200));
    assert_eq!(sent["metrics"]["usage"]["cached_input_tokens"], json!(50));
    assert_eq!(sent["metrics"]["usage"]["uncached_input_tokens"], json!(150));
    assert_eq!(sent["metrics"]["branches"], json!([]));
    assert!(sent["session"]["repository"]["head_sha"].as_str().unwrap().len() == 40, "{sent}");
    let text = std::fs::read_to_string(&markdown).unwrap();
    assert!(text.contains("## Findings\n\n### MEDIUM — Unexplained line"), "{text}");
    assert!(text.contains("`README.md:2` — The new line"), "{text}");
    assert!(!after.exists(), "a failing hook stops the sequence");
}

/// A post-inspection hook can run longer than the heartbeat's staleness
/// bound (a webhook, a slow formatter): the record's heartbeat goes on
/// while it runs, so a `--wait` started meanwhile never reads a live task
/// as dead. The hook watches the record for a fresh heartbeat.
#[test]
fn the_heartbeat_goes_on_while_post_inspection_hooks_run() {
    let (env, fake, repo) = setup();
    let seen = env.work().join("heartbeat");
    let records = env.home().join(".git-agent");
    let watch = format!(
        "r=$(ls '{records}'/*/background/*.json); first=$(grep -o '\"updated_at\"[^,]*' \"$r\"); i=0; \
         while [ $i -lt 300 ]; do now=$(grep -o '\"updated_at\"[^,]*' \"$r\"); \
         if [ \"$now\" != \"$first\" ]; then echo refreshed > '{seen}'; exit 0; fi; sleep 0.1; i=$((i+1)); done; \
         echo stale > '{seen}'",
        records = records.display(),
        seen = seen.display()
    );
    settings(&env, &json!({"hooks": {"post_inspection": [watch]}}).to_string());
    fake.push(Reply::Events(events::text_reply(REVIEW, events::usage(200, 50, 20))));
    let id = launch(&env, &repo, &["review"]);
    env.run_in(repo.path(), &["review", "--wait", &id]).success();
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "refreshed\n",
        "the record's heartbeat stopped during the hook"
    );
}

#[test]
fn invalid_settings_fail_the_task_and_dry_runs_never_run_hooks() {
    let (env, _fake, repo) = setup();
    settings(&env, r#"{"hooks":{"post_inspection":["true", 1]}}"#);
    let run = env.run_in(repo.path(), &["review", "--dry-run"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("invalid settings") && run.stderr.contains("settings.json"), "{}", run.stderr);
    settings(&env, r#"{"hooks":{"post_inspection":[]}} {}"#);
    let stderr = env.run_in(repo.path(), &["review", "--dry-run"]).failure().to_string();
    assert!(stderr.contains("multiple JSON values"), "{stderr}");

    let marker = env.work().join("hook-ran");
    settings(&env, &json!({"hooks": {"post_inspection": [format!("touch '{}'", marker.display())]}}).to_string());
    let id = launch(&env, &repo, &["review", "--dry-run"]);
    env.run_in(repo.path(), &["review", "--wait", &id]).success();
    assert!(!marker.exists(), "dry runs never execute hooks");
}

/// A feature branch that merged main once, then changed f.rs; the
/// worktree is dirty on top.
fn feature_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("branched");
    repo.write("a.txt", "a\n");
    repo.commit_all("c1");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("f.rs", "fn f() {}\n");
    repo.commit_all("c2");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("m.txt", "m1\nm2\n");
    repo.commit_all("c3");
    repo.git(&["checkout", "-q", "feature"]);
    repo.git(&["merge", "-q", "--no-ff", "--no-edit", "main"]);
    repo.write("f.rs", "fn f() {}\nfn g() {}\n");
    repo.commit_all("c5");
    repo.write("f.rs", "fn dirty() {}\n");
    repo
}

#[test]
fn review_base_and_commit_inspect_committed_history() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, KEY);
    let repo = feature_repo(&env);
    let report = r#"{"summary":"g is new.","recommendation":"COMMENT","findings":[{"severity":"LOW","aspect":"tests","title":"Untested g","impact":"g may break.","evidences":[{"title":"g","path":"f.rs","line_start":2,"line_end":2}],"proposed_fix":"Test g."}]}"#;
    fake.push(Reply::Events(events::tool_calls(
        &[("call_read", "read_file", r#"{"path":"f.rs"}"#)],
        events::usage(100, 0, 10),
    )));
    fake.push(Reply::Events(events::text_reply(report, events::usage(100, 0, 10))));
    let id = launch(&env, &repo, &["review", "--base", "main"]);
    let stdout = env.run_in(repo.path(), &["review", "--wait", &id]).success();
    let value: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(value["findings"][0]["evidences"][0]["path"], json!("f.rs"), "{stdout}");
    let requests = fake.requests();
    let first = requests[0].input_texts();
    let user = first.iter().find(|text| text.contains("<prepared_review_context>")).unwrap();
    assert!(user.contains("\"mode\": \"base\"") && user.contains("\"requested\": \"main\""), "{user}");
    assert!(user.contains("+fn g() {}"), "{user}");
    assert!(!user.contains("m1") && !user.contains("dirty"), "main's merge and the worktree are out of scope: {user}");
    let second = requests[1].input_texts();
    let output = second.iter().find(|text| text.contains("\"tool\":\"read_file\"")).unwrap();
    assert!(output.contains("fn g() {}") && !output.contains("dirty"), "tools read the reviewed commit: {output}");

    // One commit: the merge against its first parent.
    let simplify = r#"{"summary":"Nothing to simplify.","opportunities":[]}"#;
    fake.push(Reply::Events(events::text_reply(simplify, events::usage(10, 0, 1))));
    let id = launch(&env, &repo, &["simplify", "--commit", "HEAD~1"]);
    env.run_in(repo.path(), &["simplify", "--wait", &id]).success();
    let requests = fake.requests();
    let user = requests
        .last()
        .unwrap()
        .input_texts()
        .into_iter()
        .find(|text| text.contains("<prepared_review_context>"))
        .unwrap();
    assert!(user.contains("\"mode\": \"commit\"") && user.contains("+m2") && !user.contains("fn g"), "{user}");

    for args in [
        &["review", "--base", "main", "--staged"][..],
        &["simplify", "--commit", "HEAD", "--base", "main"],
        &["simplify", "--clippy", "--base", "main"],
    ] {
        let run = env.run_in(repo.path(), args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
    }
    let stderr = env.run_in(repo.path(), &["review", "--commit", "nope"]).failure().to_string();
    assert!(stderr.contains("cannot resolve \"nope\" to a commit"), "{stderr}");
    let help = env.run_in(repo.path(), &["review", "--help-agent"]).success();
    assert!(help.contains("--base <ref>") && help.contains("--commit <rev>"), "{help}");
}

//! `git-agent explore` end to end with the fake provider: the exact
//! stdout object, the request (schema, tools, `--for`, `--fast`),
//! references validated with one repair pass, an ordinary folder (no Git
//! tools, no index or HEAD reads), and a subfolder of a repository as the
//! exploration root (nothing above it visible through any tool, history
//! included).

use git_agent_tests::fake_openai::{FakeOpenAi, RecordedRequest, Reply, Responder, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};

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

/// A reply answering every item of the request with one finding.
fn answer(description: &'static str, references: &'static [&'static str]) -> Reply {
    Reply::Computed(Responder::new(move |body| {
        let answers: Vec<Value> = item_ids(body)
            .into_iter()
            .map(|id| json!({"item_id": id, "items": [{"description": description, "references": references}]}))
            .collect();
        events::text_reply(&json!({ "answers": answers }).to_string(), events::usage(300, 0, 40))
    }))
}

fn setup() -> (TestEnv, FakeOpenAi) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    (env, fake)
}

fn repo_with_lib(env: &TestEnv) -> GitRepo {
    let repo = env.repo("app");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.write("tests/one.rs", "#[test]\nfn one() { assert_eq!(app::one(), 1); }\n");
    repo.commit_all("feat: add one");
    repo
}

/// The text of every tool output a request carries.
fn tool_outputs(request: &RecordedRequest) -> Vec<String> {
    request.body["input"]
        .as_array()
        .map(|items| items.iter().filter_map(|item| item["output"].as_str()).map(str::to_string).collect::<Vec<_>>())
        .unwrap_or_default()
}

#[test]
fn prints_exactly_one_json_object_with_its_id_and_grounded_items() {
    let (env, fake) = setup();
    let repo = repo_with_lib(&env);
    fake.push(answer("one() returns 1 and its test pins it.", &["src/lib.rs:1-3", "tests/one.rs"]));
    let run = env.run_in(repo.path(), &["explore", "where", "is", "one", "defined?"]);
    let stdout = run.success();

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let ids = item_ids(&requests[0].body);
    assert_eq!(ids.len(), 1, "{}", requests[0].body);
    assert_eq!(ids[0].len(), 26, "an opaque base32 ID: {ids:?}");
    assert_eq!(
        stdout,
        format!(
            "{{\"id\":\"{}\",\"items\":[{{\"description\":\"one() returns 1 and its test pins it.\",\"references\":[\"src/lib.rs:1-3\",\"tests/one.rs\"]}}]}}\n",
            ids[0]
        )
    );
    assert!(run.stderr.contains("llm.usage step=1 input_tokens=300"), "{}", run.stderr);
    assert!(!run.stderr.contains("sk-e2e-secret-key"));

    let body = &requests[0].body;
    assert_eq!(body["text"]["format"]["name"], "explore_answers", "{body}");
    assert!(body.get("service_tier").is_none(), "no service tier without --fast: {body}");
    let tools = requests[0].tool_names();
    for tool in [
        "repo_summary",
        "list_files",
        "read_file",
        "inspect_file",
        "jq",
        "grep",
        "find",
        "git_recent_commits",
        "git_head_show",
        "git_diff_against_parent",
        "git_show_file_at_rev",
        "git_log_range",
    ] {
        assert!(tools.contains(&tool.to_string()), "{tool} missing from {tools:?}");
    }
    assert!(!tools.iter().any(|tool| tool.starts_with("git_staged")), "{tools:?}");
    let texts = requests[0].input_texts();
    assert!(texts.iter().any(|text| text.contains("where is one defined?")), "{texts:?}");
    assert!(!texts.iter().any(|text| text.starts_with("Query target:")), "no target without --for: {texts:?}");

    // The disposition is logged, owner-only, without the question.
    let project_id = env.run_in(repo.path(), &["project_id"]).success().trim().to_string();
    let log = env.state_home().join("git-agent").join(&project_id).join("explore.log");
    let text = std::fs::read_to_string(&log).expect("explore.log");
    let workspace = serde_json::to_string(&repo.path().canonicalize().unwrap().display().to_string()).unwrap();
    let expected = format!(
        " mode=unbatched branch=false project_id={project_id} workspace={workspace} batch={id} size=1 item={id} parent= depth=0 query=[redacted]\n",
        id = ids[0]
    );
    assert!(text.lines().count() == 1 && text.ends_with(&expected), "{text}\nexpected …{expected}");
    assert!(!text.contains("where is one"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(log.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn for_adds_the_target_as_its_own_developer_message_and_fast_only_the_service_tier() {
    let (env, fake) = setup();
    let repo = repo_with_lib(&env);
    fake.push(answer("one() is the owner.", &["src/lib.rs"]));
    fake.push(answer("one() is the owner.", &["src/lib.rs"]));
    env.run_in(repo.path(), &["explore", "who", "owns", "one"]).success();
    env.run_in(repo.path(), &["explore", "--fast", "--for", "owner", "who", "owns", "one"]).success();
    let requests = fake.requests();
    let (plain, targeted) = (&requests[0].body, &requests[1].body);
    assert_eq!(targeted["service_tier"], "priority");
    assert_eq!(plain["model"], targeted["model"]);
    assert_eq!(plain["reasoning"], targeted["reasoning"]);
    assert_ne!(plain["instructions"], targeted["instructions"], "--for selects the target-neutral prompt");
    let developer: Vec<&Value> = targeted["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| {
            item["role"] == "developer"
                && item["content"][0]["text"].as_str().is_some_and(|text| text.starts_with("Query target: owner."))
        })
        .collect();
    assert_eq!(developer.len(), 1, "{targeted}");

    let run = env.run_in(repo.path(), &["explore", "--for", "everything", "who", "owns", "one"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("everything"), "{}", run.stderr);
    assert_eq!(fake.requests().len(), 2, "an unknown target fails before any request");
}

#[test]
fn references_are_validated_and_repaired_once() {
    let (env, fake) = setup();
    let repo = repo_with_lib(&env);
    fake.push(answer("one() returns 1.", &["src/missing.rs", "src/lib.rs:1-99", "../outside.rs"]));
    fake.push(answer("one() returns 1.", &["src/lib.rs:1-3"]));
    let run = env.run_in(repo.path(), &["explore", "--debug", "what", "does", "one", "return?"]);
    let stdout = run.success();
    assert!(stdout.contains("\"references\":[\"src/lib.rs:1-3\"]"), "{stdout}");
    assert_eq!(run.stderr.matches("explore.phase phase=validation ").count(), 2, "{}", run.stderr);
    assert_eq!(run.stderr.matches("explore.phase phase=repair ").count(), 1, "{}", run.stderr);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let repair = requests[1].input_texts().last().cloned().unwrap_or_default();
    for expected in ["src/missing.rs", "does not exist", "has 3 lines", "is refused"] {
        assert!(repair.contains(expected), "{expected} missing from the repair prompt:\n{repair}");
    }

    // A second bad answer fails the run with nothing on stdout.
    fake.push(answer("one() returns 1.", &["src/missing.rs"]));
    fake.push(answer("one() returns 1.", &["src/lib.rs:7"]));
    let run = env.run_in(repo.path(), &["explore", "what", "does", "one", "return?"]);
    let stderr = run.failure();
    assert!(stderr.contains("failed validation after one repair"), "{stderr}");
}

#[test]
fn an_ordinary_folder_gets_no_git_tools_and_no_index_or_head_reads() {
    let (env, fake) = setup();
    let plain = env.work().join("plain");
    std::fs::create_dir_all(plain.join("lib")).unwrap();
    std::fs::write(plain.join("lib/util.py"), "def util():\n    return 2\n").unwrap();
    fake.push(Reply::Events(events::tool_calls(
        &[
            ("c1", "list_files", r#"{"path":null,"max_entries":null}"#),
            ("c2", "read_file", r#"{"path":"lib/util.py","source":"head","line_start":null,"line_end":null,"with_line_number":null,"max_bytes":null,"max_lines":null}"#),
            ("c3", "repo_summary", "{}"),
        ],
        events::usage(100, 0, 10),
    )));
    fake.push(answer("util() returns 2.", &["lib/util.py:1-2"]));
    let run = env.run_in(&plain, &["explore", "what", "does", "util", "return?"]);
    let stdout = run.success();
    assert!(stdout.ends_with("\"references\":[\"lib/util.py:1-2\"]}]}\n"), "{stdout}");
    let requests = fake.requests();
    assert!(!requests[0].tool_names().iter().any(|tool| tool.starts_with("git_")), "{:?}", requests[0].tool_names());
    let outputs = tool_outputs(&requests[1]);
    assert!(outputs[0].contains(r#""files":["lib/util.py"]"#), "{}", outputs[0]);
    assert!(outputs[1].contains(r#""ok":false"#) && outputs[1].contains("not in a Git repository"), "{}", outputs[1]);
    assert!(!outputs[2].contains("branch") && outputs[2].contains("root_path"), "{}", outputs[2]);
}

#[test]
fn a_subfolder_root_shows_nothing_above_it_through_any_tool_or_history() {
    let (env, fake) = setup();
    let repo = env.repo("mono");
    repo.write("top.txt", "TOP-SECRET above the root\n");
    repo.write("sub/inner.rs", "pub fn inner() {}\n");
    repo.commit_all("feat: add sub and top");
    repo.write("sub/inner.rs", "pub fn inner() -> u8 { 1 }\n");
    repo.commit_all("feat: inner returns one");
    repo.write("top.txt", "TOP-SECRET changed\n");
    repo.commit_all("chore: touch only the top");
    let sub = repo.path().join("sub");
    let read = |path: &str, source: &str| {
        format!(
            r#"{{"path":"{path}","source":"{source}","line_start":null,"line_end":null,"with_line_number":null,"max_bytes":null,"max_lines":null}}"#
        )
    };
    let calls = [
        ("c1", "list_files", r#"{"path":null,"max_entries":null}"#.to_string()),
        ("c2", "find", r#"{"path":null,"name":null,"type":null,"max_entries":null}"#.to_string()),
        ("c3", "grep", r#"{"pattern":"TOP-SECRET|inner","path":null,"glob":null,"max_matches":null}"#.to_string()),
        ("c4", "read_file", read("../top.txt", "worktree")),
        ("c5", "read_file", read("inner.rs", "head")),
        ("c6", "read_file", read("inner.rs", "index")),
        ("c7", "git_recent_commits", r#"{"limit":null}"#.to_string()),
        ("c8", "git_log_range", r#"{"range":"HEAD~2..HEAD","limit":null}"#.to_string()),
        ("c9", "git_head_show", r#"{"max_bytes":null,"max_lines":null}"#.to_string()),
        ("c10", "git_diff_against_parent", r#"{"max_bytes":null,"max_lines":null}"#.to_string()),
        (
            "c11",
            "git_show_file_at_rev",
            r#"{"rev":"HEAD~1","path":"inner.rs","max_bytes":null,"max_lines":null}"#.to_string(),
        ),
        (
            "c12",
            "git_show_file_at_rev",
            r#"{"rev":"HEAD","path":"../top.txt","max_bytes":null,"max_lines":null}"#.to_string(),
        ),
    ];
    let calls: Vec<(&str, &str, &str)> = calls.iter().map(|(id, name, args)| (*id, *name, args.as_str())).collect();
    fake.push(Reply::Events(events::tool_calls(&calls, events::usage(100, 0, 10))));
    fake.push(answer("inner() returns 1.", &["inner.rs:1"]));
    let run = env.run_in(&sub, &["explore", "what", "does", "inner", "do?"]);
    let stdout = run.success();
    assert!(stdout.contains("\"references\":[\"inner.rs:1\"]"), "{stdout}");

    let outputs = tool_outputs(&fake.requests()[1]);
    assert_eq!(outputs.len(), 12, "{outputs:?}");
    for output in &outputs {
        assert!(!output.contains("TOP-SECRET") && !output.contains("top.txt\""), "leaked above the root: {output}");
        assert!(!output.contains("sub/inner.rs"), "paths are relative to the root: {output}");
        assert!(!output.contains("touch only the top"), "a commit that changed nothing beneath the root: {output}");
    }
    assert!(outputs[0].contains(r#""files":["inner.rs"]"#), "{}", outputs[0]);
    assert!(outputs[3].contains(r#""ok":false"#), "{}", outputs[3]);
    assert!(outputs[4].contains("-> u8 { 1 }") && outputs[5].contains("-> u8 { 1 }"), "{} {}", outputs[4], outputs[5]);
    for listing in [&outputs[6], &outputs[7]] {
        assert!(listing.contains("feat: inner returns one"), "{listing}");
    }
    assert!(outputs[6].contains("feat: add sub and top"), "{}", outputs[6]);
    assert!(!outputs[7].contains("feat: add sub and top"), "outside the range: {}", outputs[7]);
    assert!(
        outputs[8].contains(r#""show":"""#) && outputs[8].contains(r#""changed_beneath_root":false"#),
        "{}",
        outputs[8]
    );
    assert!(outputs[9].contains(r#""diff":"""#), "HEAD changed nothing beneath the root: {}", outputs[9]);
    assert!(outputs[10].contains(r#""path":"inner.rs""#) && outputs[10].contains("-> u8 { 1 }"), "{}", outputs[10]);
    assert!(outputs[11].contains(r#""ok":false"#), "{}", outputs[11]);
}

#[test]
fn history_patches_beneath_the_root_are_rendered_relative_to_it() {
    let (env, fake) = setup();
    let repo = env.repo("mono");
    repo.write("top.txt", "top\n");
    repo.write("sub/inner.rs", "one\n");
    repo.commit_all("feat: start");
    repo.write("top.txt", "TOP-SECRET\n");
    repo.write("sub/inner.rs", "two\n");
    repo.commit_all("feat: both change");
    fake.push(Reply::Events(events::tool_calls(
        &[("c1", "git_head_show", r#"{"max_bytes":null,"max_lines":null}"#)],
        events::usage(100, 0, 10),
    )));
    fake.push(answer("inner changed to two.", &["inner.rs"]));
    env.run_in(&repo.path().join("sub"), &["explore", "what", "changed?"]).success();
    let outputs = tool_outputs(&fake.requests()[1]);
    assert!(outputs[0].contains("feat: both change") && outputs[0].contains("--- a/inner.rs"), "{}", outputs[0]);
    assert!(outputs[0].contains("+two"), "{}", outputs[0]);
    assert!(!outputs[0].contains("TOP-SECRET") && !outputs[0].contains("top.txt"), "{}", outputs[0]);
}

#[test]
fn follow_up_ids_that_name_no_session_fail_before_any_request() {
    let (env, fake) = setup();
    let repo = repo_with_lib(&env);
    let run = env.run_in(repo.path(), &["explore", "--follow-up", "not-an-id", "and", "then?"]);
    assert!(run.failure().contains("invalid explore search ID"), "{}", run.stderr);
    let run = env.run_in(repo.path(), &["explore", "--follow-up", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "and", "then?"]);
    assert!(run.failure().contains("unknown explore search ID"), "{}", run.stderr);
    assert!(fake.requests().is_empty());
}

/// Starts the daemon, then `git-agent explore <question>` in `dir` with
/// extra flags, without waiting.
fn spawn_explore(env: &TestEnv, dir: &std::path::Path, flags: &[&str], question: &str) -> std::process::Child {
    let mut args = vec!["explore"];
    args.extend_from_slice(flags);
    args.push(question);
    env.git_agent_in(dir, &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start git-agent explore")
}

/// An environment whose daemon (already running) seals no batch short of
/// full before it has seen `quorum` explore reservations in all, so the
/// test's concurrent processes meet through their reservations, however
/// slowly they start.
fn batching_setup(quorum: usize) -> (TestEnv, FakeOpenAi) {
    let (mut env, fake) = setup();
    env.set_env("GITAGENTD_TEST_EXPLORE_QUORUM", &quorum.to_string());
    env.run_in(&env.work(), &["project_id"]).success();
    (env, fake)
}

/// The ID and finding text of one process's stdout object.
fn printed(output: &std::process::Output) -> (String, String) {
    assert!(output.status.success(), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text.matches('\n').count(), 1, "{text}");
    let value: Value = serde_json::from_str(&text).expect("one JSON object");
    (value["id"].as_str().unwrap().to_string(), value["items"][0]["description"].as_str().unwrap().to_string())
}

/// A reply answering every item with its own question, read back from
/// the request frame, so each process can prove it got its own answer.
fn echo_questions() -> Reply {
    Reply::Computed(Responder::new(|body| {
        let text = body["input"].to_string();
        let answers: Vec<Value> = item_ids(body)
            .into_iter()
            .map(|id| {
                // The question follows its item ID in the frame.
                let at = text.find(&id).unwrap();
                let marker = "\\\"question\\\": \\\"";
                let rest = &text[at..];
                let start = rest.find(marker).unwrap() + marker.len();
                let question = &rest[start..start + rest[start..].find('\\').unwrap()];
                json!({"item_id": id, "items": [{"description": question, "references": ["src/lib.rs"]}]})
            })
            .collect();
        events::text_reply(&json!({ "answers": answers }).to_string(), events::usage(300, 0, 40))
    }))
}

#[test]
fn five_concurrent_compatible_questions_share_two_conversations() {
    let (env, fake) = batching_setup(5);
    let repo = repo_with_lib(&env);
    fake.push(echo_questions());
    fake.push(echo_questions());
    let children: Vec<_> =
        (0..5).map(|n| spawn_explore(&env, repo.path(), &["--debug"], &format!("question {n}"))).collect();
    let outputs: Vec<_> = children.into_iter().map(|child| child.wait_with_output().unwrap()).collect();
    // Two leaders report the batch work; three followers only wait.
    let reporting =
        |phase: &str| outputs.iter().filter(|output| String::from_utf8_lossy(&output.stderr).contains(phase)).count();
    assert_eq!(reporting("phase=batch_collection "), 2);
    assert_eq!(reporting("phase=provider_request "), 2);
    assert_eq!(reporting("phase=result_wait "), 3);
    assert_eq!(reporting("phase=persistence "), 2);
    assert_eq!(reporting("phase=join_grace "), 2, "each leader reports its batch's grace");
    let mut ids = Vec::new();
    for (n, output) in outputs.iter().enumerate() {
        let (id, description) = printed(output);
        assert_eq!(description, format!("question {n}"), "each process prints only its own item");
        ids.push(id);
    }
    let requests = fake.requests();
    let mut sizes: Vec<usize> = requests.iter().map(|request| item_ids(&request.body).len()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [2, 3], "two provider conversations");
    let mut asked: Vec<String> = requests.iter().flat_map(|request| item_ids(&request.body)).collect();
    asked.sort();
    ids.sort();
    asked.dedup();
    assert_eq!(asked.len(), 5, "distinct IDs");
    assert_eq!(ids, asked);
    let project_id = env.run_in(repo.path(), &["project_id"]).success().trim().to_string();
    let log = std::fs::read_to_string(env.state_home().join("git-agent").join(project_id).join("explore.log")).unwrap();
    assert_eq!(log.matches(" mode=batched ").count(), 5, "{log}");
    assert_eq!(log.matches(" size=3 ").count() + log.matches(" size=2 ").count(), 5, "{log}");
}

#[test]
fn incompatible_questions_never_share_a_batch() {
    // All four are reserved before any batch seals.
    let (env, fake) = batching_setup(4);
    let repo = repo_with_lib(&env);
    let other = env.repo("other");
    other.write("src/lib.rs", "pub fn other() {}\n");
    other.commit_all("feat: other");
    for _ in 0..4 {
        fake.push(echo_questions());
    }
    let children = vec![
        spawn_explore(&env, repo.path(), &[], "plain"),
        spawn_explore(&env, repo.path(), &["--fast"], "fast"),
        spawn_explore(&env, repo.path(), &["--for", "owner"], "owner"),
        spawn_explore(&env, other.path(), &[], "elsewhere"),
    ];
    for (output, expected) in
        children.into_iter().map(|child| child.wait_with_output().unwrap()).zip(["plain", "fast", "owner", "elsewhere"])
    {
        assert_eq!(printed(&output).1, expected);
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|request| item_ids(&request.body).len() == 1), "no shared batch");
}

#[test]
fn a_killed_member_does_not_fail_the_others() {
    let (env, fake) = batching_setup(3);
    let repo = repo_with_lib(&env);
    // The answer must name the batch's IDs, so the held reply only gates
    // the first step (a tool call); the echo answers the second.
    fake.push(Reply::Held(events::tool_calls(
        &[("c1", "list_files", r#"{"path":null,"max_entries":null}"#)],
        events::usage(1, 0, 1),
    )));
    fake.push(echo_questions());
    let mut children: Vec<_> =
        (0..3).map(|n| spawn_explore(&env, repo.path(), &[], &format!("question {n}"))).collect();
    assert!(fake.wait_for_requests(1, std::time::Duration::from_secs(30)), "the batch reached the provider");
    assert_eq!(item_ids(&fake.requests()[0].body).len(), 3);
    let mut killed = children.remove(1);
    killed.kill().unwrap();
    killed.wait().unwrap();
    fake.release();
    for (child, n) in children.into_iter().zip([0, 2]) {
        let output = child.wait_with_output().unwrap();
        assert_eq!(printed(&output).1, format!("question {n}"));
    }
}

#[test]
fn debug_reports_explore_phases_on_stderr_without_changing_stdout() {
    let (env, fake) = setup();
    let repo = repo_with_lib(&env);
    fake.push(Reply::Events(events::tool_calls(
        &[("c1", "list_files", r#"{"path":null,"max_entries":null}"#)],
        events::usage(100, 0, 10),
    )));
    fake.push(answer("one() returns 1.", &["src/lib.rs:1-3"]));
    let run = env.run_in(repo.path(), &["explore", "--debug", "what", "does", "one", "return?"]);
    let stdout = run.success();
    let value: Value = serde_json::from_str(&stdout).expect("stdout stays one JSON object");
    assert_eq!(value["items"][0]["references"][0], "src/lib.rs:1-3");
    for phase in [
        "phase=setup ",
        "phase=reservation ",
        "phase=semantic_search ",
        "phase=join_grace ",
        "phase=batch_join ",
        "phase=batch_collection ",
        "phase=prompt_setup ",
        "phase=provider_request ",
        "phase=tool ",
        "phase=tool_batch ",
        "phase=agent ",
        "phase=validation ",
        "phase=answer_processing ",
        "phase=persistence ",
        "phase=output ",
    ] {
        assert!(run.stderr.contains(&format!("explore.phase {phase}")), "{phase} missing:\n{}", run.stderr);
    }
    assert!(!run.stderr.contains("phase=result_wait"), "the leader does not wait for itself:\n{}", run.stderr);
    assert!(!run.stderr.contains("phase=repair "), "no repair was needed:\n{}", run.stderr);
    let tool = run.stderr.lines().find(|line| line.contains("explore.phase phase=tool ")).unwrap();
    assert!(tool.contains(" step=1") && tool.contains("list_files"), "{tool}");
    fake.push(answer("one() returns 1.", &["src/lib.rs:1-3"]));
    let plain = env.run_in(repo.path(), &["explore", "what", "does", "one", "return?"]);
    plain.success();
    assert!(!plain.stderr.contains("explore.phase"), "{}", plain.stderr);
}

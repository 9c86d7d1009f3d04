//! Request assembly, staged isolation, drift handling, live status and
//! sanitizing, against real temporary repositories.

use super::*;
use crate::inspect::budget::{self, ChangeMetrics};
use crate::inspect::prepare::OperatorHint;
use crate::inspect::tests::Fixture;
use git_agent_shared::Environment;
use git_agent_shared::cli::Depth;
use std::collections::BTreeMap;

pub(super) fn request(fixture: &Fixture, command: TaskCommand, mode: Mode, hint: Option<&str>) -> InspectionRequest {
    let prepared = Arc::new(fixture.prepare(mode).expect("prepare"));
    let tools = budget::standard_tools(mode);
    let budget = budget::plan(command, mode, &ChangeMetrics::from_prepared(&prepared), &tools, Depth::Balanced, None)
        .expect("budget");
    let mut vars = BTreeMap::new();
    vars.insert("HOME".to_string(), fixture.home().display().to_string());
    vars.insert("PATH".to_string(), "/nonexistent".to_string());
    vars.insert("OPENAI_API_KEY".to_string(), "sk-unit-test-secret".to_string());
    vars.insert("OPENAI_BASE_URL".to_string(), "http://127.0.0.1:9/v1".to_string());
    InspectionRequest {
        task_id: "TASKTASKTASKTASKTASKTASKTA".into(),
        command,
        cwd: fixture.repo(),
        prepared,
        budget,
        model: "gpt-5.6-sol".into(),
        reasoning_effort: "medium",
        operator_hint: hint.and_then(OperatorHint::new),
        timeout: None,
        max_web_searches: None,
        priority: false,
        base_url: None,
        guidance_family: None,
        env: Environment::new(vars),
        git_env: fixture.env(),
        prompt_cache_key: crate::inspect::engine::lineage_cache_key(command, "TASKTASKTASKTASKTASKTASKTA"),
        follow_up: None,
    }
}

fn fixture() -> Fixture {
    let fixture = Fixture::new();
    fixture.write("AGENTS.md", "index guidance\n");
    fixture.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    fixture.commit_all("initial");
    fixture.write("src/lib.rs", "pub fn one() -> u32 {\n    2\n}\n");
    fixture
}

fn read_file_args(source: &str) -> String {
    format!(
        r#"{{"path":"src/lib.rs","source":{source},"line_start":null,"line_end":null,"with_line_number":null,"max_bytes":null,"max_lines":null}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staged_assembly_reads_guidance_and_files_from_the_index() {
    let fixture = fixture();
    fixture.write("AGENTS.md", "staged guidance\n");
    fixture.git(&["add", "AGENTS.md", "src/lib.rs"]);
    fixture.write("AGENTS.md", "unstaged guidance\n");
    fixture.write("src/lib.rs", "pub fn one() -> u32 {\n    3\n}\n");
    let request = request(&fixture, TaskCommand::Review, Mode::Staged, Some("look at </operator_hint> one"));
    let drift = DriftSlot::new(CancellationToken::new());
    let task = assemble(&request, &drift, &CancellationToken::new()).await.expect("assemble");

    assert!(task.layers.system.contains("reviewing a change"));
    assert!(task.layers.guidance.contains("staged guidance"), "{}", task.layers.guidance);
    assert!(!task.layers.guidance.contains("unstaged guidance"));
    assert!(task.layers.environment.contains("review") && task.layers.environment.contains("staged"));
    let user = &task.layers.user;
    assert!(user.contains("<prepared_review_context>") && user.contains("+    2"), "{user}");
    assert!(!user.contains("+    3"), "unstaged edits stay out of the prompt");
    assert!(user.contains("<operator_hint>\nlook at &lt;/operator_hint&gt; one\n</operator_hint>"), "{user}");
    assert!(user.find("</prepared_review_context>") < user.find("## Operator hint"));
    assert_eq!(task.limits.max_steps, request.budget.selected_steps);
    assert_eq!(task.limits.max_tool_calls, request.budget.max_tool_calls);
    let format = task.text_format.as_ref().expect("strict text format");
    assert_eq!(format.name, "review");
    assert_eq!(format.schema, report::output_schema(TaskCommand::Review));

    let names = task.tools.names();
    for name in [
        "repo_summary",
        "list_files",
        "read_file",
        "inspect_file",
        "grep",
        "find",
        "jq",
        "review_changes",
        "review_diff",
        "review_diff_for_paths",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert!(!names.iter().any(|name| name.ends_with("_doc") || name.starts_with("context7")), "{names:?}");
    let read = task.tools.get("read_file").expect("read_file");
    let refused = read.call(&read_file_args(r#""worktree""#), CancellationToken::new()).await;
    assert!(
        matches!(&refused, Err(crate::tools::ToolError::Recoverable(message)) if message.contains("refused")),
        "{refused:?}"
    );
    let staged = read.call(&read_file_args("null"), CancellationToken::new()).await.expect("index read");
    assert!(staged.data["content"].as_str().unwrap_or_default().contains("    2"), "{:?}", staged.data);
    let changes = task.tools.get("review_changes").expect("review_changes");
    let page = changes.call(r#"{"offset":0,"limit":10}"#, CancellationToken::new()).await.expect("inventory");
    assert_eq!(page.data["total"], serde_json::json!(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codebase_assembly_has_no_diff_tools_and_no_prepared_context() {
    let fixture = fixture();
    let request = request(&fixture, TaskCommand::Simplify, Mode::Codebase, None);
    let drift = DriftSlot::new(CancellationToken::new());
    let task = assemble(&request, &drift, &CancellationToken::new()).await.expect("assemble");
    assert!(task.layers.system.contains("simplification"));
    assert!(task.layers.user.contains("whole repository") && !task.layers.user.contains("<prepared_review_context>"));
    assert!(task.layers.user.contains("behaviour-preserving"));
    assert!(!task.tools.names().iter().any(|name| name.starts_with("review_")));
    assert_eq!(task.text_format.map(|format| format.name), Some("simplify".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_during_a_batch_is_caught_by_the_batch_guard() {
    let fixture = fixture();
    let uncommitted = request(&fixture, TaskCommand::Review, Mode::Uncommitted, None);
    let stop = CancellationToken::new();
    let drift = DriftSlot::new(stop.clone());
    let task = assemble(&uncommitted, &drift, &CancellationToken::new()).await.expect("assemble");
    let guard = task.tools.batch_guard().expect("diff modes guard every batch").clone();
    guard().await.expect("no drift yet");
    assert!(!stop.is_cancelled());

    // A change made while the calls ran (after their own checks passed).
    fixture.write("src/lib.rs", "changed while the batch ran\n");
    assert_eq!(guard().await, Err(crate::tools::ToolError::Cancelled));
    assert!(stop.is_cancelled());
    let message = drift.take().unwrap_or_default();
    assert!(message.starts_with("authoritative repository state changed since launch; rerun command"), "{message}");

    let codebase = request(&fixture, TaskCommand::Review, Mode::Codebase, None);
    let task = assemble(&codebase, &drift, &CancellationToken::new()).await.expect("assemble");
    assert!(task.tools.batch_guard().is_none(), "codebase mode stays live");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_before_a_tool_call_or_validation_stops_the_loop() {
    let fixture = fixture();
    let request = request(&fixture, TaskCommand::Review, Mode::Uncommitted, None);
    let stop = CancellationToken::new();
    let drift = DriftSlot::new(stop.clone());
    let task = assemble(&request, &drift, &CancellationToken::new()).await.expect("assemble");
    let read = task.tools.get("read_file").expect("read_file");
    read.call(&read_file_args("null"), CancellationToken::new()).await.expect("no drift yet");
    let rules = output_rules(&request, &drift);
    let valid = r#"{"summary":"ok","recommendation":"APPROVE","findings":[]}"#;
    assert_eq!((rules.validate)(valid), Vec::<String>::new());
    let invalid = r#"{"summary":"ok","recommendation":"FIX","findings":[]}"#;
    assert!(!(rules.validate)(invalid).is_empty());
    assert!(!stop.is_cancelled(), "a schema error is repaired, not terminal");

    fixture.write("src/lib.rs", "changed after launch\n");
    let result = read.call(&read_file_args("null"), CancellationToken::new()).await;
    assert_eq!(result, Err(crate::tools::ToolError::Cancelled));
    assert!(stop.is_cancelled());
    let message = drift.take().unwrap_or_default();
    assert!(message.starts_with("authoritative repository state changed since launch; rerun command"), "{message}");
    let errors = (rules.validate)(valid);
    assert!(errors[0].contains("rerun command"), "{errors:?}");
    assert!(drift.take().is_some(), "validation drift is terminal too");
}

#[test]
fn status_publishes_steps_reasoning_titles_and_tool_phases() {
    let phases = Mutex::new(Vec::new());
    let progress = |phase: &str| phases.lock().expect("phases").push(phase.to_string());
    let status = Status::new(&progress);
    status.observe(&Event::new("request").with("step", 1u32));
    status.observe(&Event::new("reasoning_summary.delta").with("delta", "**Checking"));
    status.observe(&Event::new("reasoning_summary.delta").with("delta", " the diff**\n\nMore text"));
    status.observe(&Event::new("reasoning_summary.delta").with("delta", " that changes nothing"));
    status.observe(
        &Event::new("tool-call").with("name", "grep").with("call_id", "c1").with("arguments", "{\"pattern\":\"x\"}"),
    );
    status.observe(
        &Event::new("tool-output")
            .with("name", "grep")
            .with("call_id", "c1")
            .with("truncated", true)
            .with("content", "{}"),
    );
    status.observe(&Event::new("validation"));
    status.observe(&Event::new("budget"));
    let events = status.tool_events();
    assert_eq!(
        *phases.lock().expect("phases"),
        ["step:1", "reasoning: Checking", "reasoning: Checking the diff", "tool:grep", "repairing", "finalizing"]
    );
    assert_eq!(events.len(), 2);
    assert_eq!((events[0].kind.as_str(), events[0].tool.as_str()), ("tool_call", "grep"));
    assert!(events[1].truncated);
}

#[test]
fn sanitizing_removes_keys_endpoints_and_caps_the_text() {
    let mut redactor = Redactor::default();
    redactor.add(&provider::Secret::new("sk-unit-test-secret"));
    let secrets =
        Secrets { redactor, endpoints: vec!["http://127.0.0.1:9/v1".into(), provider::config::OPENAI_BASE_URL.into()] };
    let text = "cannot reach the provider at http://127.0.0.1:9/v1: refused; key sk-unit-test-secret; see https://other.example/x\nhint: retry";
    let clean = secrets.sanitize(text);
    assert_eq!(clean, "cannot reach the provider at [endpoint]: refused; key [redacted]; see [endpoint]\nhint: retry");
    let long = secrets.sanitize(&"line\n".repeat(100));
    assert!(long.lines().count() <= MAX_DIAGNOSTIC_LINES + 1 && long.ends_with("[truncated]"), "{long}");
    assert!(secrets.sanitize(&"x".repeat(10_000)).len() <= MAX_MESSAGE_BYTES + 20);
}

#[test]
fn sanitizing_knows_every_credential_source() {
    let fixture = fixture();
    let mut request = request(&fixture, TaskCommand::Review, Mode::Uncommitted, None);
    let mut vars = request.env.vars().clone();
    vars.insert("OPENAI_EMBEDDING_API_KEY".into(), "embed-unit-test-key".into());
    vars.insert("GITHUB_TOKEN".into(), "ghp-unit-test-token".into());
    request.env = Environment::new(vars);
    let codex = fixture.home().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("auth.json"),
        r#"{"auth_mode":"chatgpt","tokens":{"access_token":"chatgpt-unit-test-token","account_id":"acct"}}"#,
    )
    .unwrap();
    let mut secrets = Secrets::from_request(&request);
    let config = provider::config::resolve(&request.env, &ProviderFlags::default()).unwrap();
    secrets.learn(&config);
    let text = "failed: chatgpt-unit-test-token / sk-unit-test-secret / embed-unit-test-key / ghp-unit-test-token\n\
                KEY=opaque-value-123 Authorization: Bearer other-bearer-value sk-other-unknown-key";
    let clean = secrets.sanitize(text);
    for leaked in ["chatgpt-unit", "sk-unit", "embed-unit", "ghp-unit", "opaque-value", "other-bearer", "sk-other"] {
        assert!(!clean.contains(leaked), "{leaked} leaked: {clean}");
    }
    assert!(clean.contains("KEY=[redacted]") && clean.contains("Bearer [redacted]"), "{clean}");
}

#[test]
fn run_options_ask_for_summaries_and_key_the_cache_by_task() {
    let fixture = fixture();
    let mut request = request(&fixture, TaskCommand::Review, Mode::Uncommitted, None);
    request.priority = true;
    let options = run_options(&request);
    assert_eq!(options.reasoning_summary.as_deref(), Some("auto"));
    assert_eq!(options.reasoning_effort.as_deref(), Some("medium"));
    assert_eq!(options.service_tier.as_deref(), Some("priority"));
    let key = options.prompt_cache_key.unwrap_or_default();
    assert_eq!(key.len(), 64);
    assert_eq!(options.turn_state, None);
    assert_ne!(crate::inspect::engine::lineage_cache_key(TaskCommand::Review, "OTHEROTHEROTHEROTHEROTHERO"), key);
    request.follow_up = Some(crate::inspect::engine::FollowUp {
        history: Vec::new(),
        previous_report: serde_json::json!({}),
        prompt: "again".into(),
        turn_state: Some("sticky".into()),
    });
    assert_eq!(run_options(&request).turn_state.as_deref(), Some("sticky"), "a follow-up replays the turn state");
}

#[test]
fn hosted_search_is_capped_at_four_with_an_api_key_and_uncapped_with_chatgpt() {
    assert_eq!(hosted_search(None, false), HostedSearch { max_calls: Some(4) });
    assert_eq!(hosted_search(None, true), HostedSearch { max_calls: None });
    assert_eq!(hosted_search(Some(7), false), HostedSearch { max_calls: Some(7) });
    assert_eq!(hosted_search(Some(2), true), HostedSearch { max_calls: Some(2) });
}

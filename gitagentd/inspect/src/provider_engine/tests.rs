//! Request assembly, staged isolation, drift handling, live status and
//! sanitizing, against real temporary repositories.

use super::*;
use crate::budget::{self, ChangeMetrics};
use crate::prepare::OperatorHint;
use crate::tests::Fixture;
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
        depth: Depth::Balanced,
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
        prompt_cache_key: crate::engine::lineage_cache_key(command, "TASKTASKTASKTASKTASKTASKTA"),
        follow_up: None,
        redactor: Default::default(),
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
        matches!(&refused, Err(gitagent_agent::tools::ToolError::Recoverable(message)) if message.contains("refused")),
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
    assert_eq!(guard().await, Err(gitagent_agent::tools::ToolError::Cancelled));
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
    assert_eq!(result, Err(gitagent_agent::tools::ToolError::Cancelled));
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
    assert_ne!(crate::engine::lineage_cache_key(TaskCommand::Review, "OTHEROTHEROTHEROTHEROTHERO"), key);
}

#[test]
fn hosted_search_is_capped_at_four_with_an_api_key_and_uncapped_with_chatgpt() {
    assert_eq!(hosted_search(None, false), HostedSearch { max_calls: Some(4) });
    assert_eq!(hosted_search(None, true), HostedSearch { max_calls: None });
    assert_eq!(hosted_search(Some(7), false), HostedSearch { max_calls: Some(7) });
    assert_eq!(hosted_search(Some(2), true), HostedSearch { max_calls: Some(2) });
}

/// Branch fan-out against the fake Responses server: every request is
/// answered by the script of the conversation it belongs to, so children
/// running concurrently get their own answers whatever order they arrive
/// in.
mod fan_out {
    use super::*;
    use crate::engine::EngineFailure;
    use git_agent_tests::fake_openai::{FakeOpenAi, Reply, Responder, events};
    use serde_json::{Value, json};
    use std::collections::HashMap;

    type Script = HashMap<&'static str, Vec<Vec<Value>>>;

    /// The conversation a request belongs to: the `branch_id` of the last
    /// branch result in its input, or `root`.
    fn node_of(body: &Value) -> String {
        body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item["type"] == "function_call_output")
            .filter_map(|item| serde_json::from_str::<Value>(item["output"].as_str()?).ok())
            .filter_map(|output| output["branch_id"].as_str().map(str::to_string))
            .next_back()
            .unwrap_or_else(|| "root".to_string())
    }

    fn tools_of(body: &Value) -> Vec<String> {
        body["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
    }

    /// Starts the fake with `script`; `before` runs when a conversation's
    /// step is answered (to change the repository mid-step).
    fn serve(script: Script, before: impl Fn(&str) + Send + Sync + 'static) -> FakeOpenAi {
        let fake = FakeOpenAi::start();
        let script = Arc::new(Mutex::new(script));
        let responder = Responder::new(move |body: &Value| {
            let node = node_of(body);
            before(&node);
            let mut script = script.lock().unwrap();
            let steps = script.get_mut(node.as_str()).unwrap_or_else(|| panic!("no script for {node}"));
            assert!(!steps.is_empty(), "{node} asked for more steps than scripted");
            steps.remove(0)
        });
        for _ in 0..16 {
            fake.push(Reply::Computed(responder.clone()));
        }
        fake
    }

    fn finding(severity: &str, title: &str) -> Value {
        json!({"severity": severity, "aspect": "correctness", "title": title, "impact": "i",
               "evidences": [{"title": "e", "path": "src/lib.rs", "line_start": 2, "line_end": 2}],
               "proposed_fix": "f"})
    }

    fn report(summary: &str, findings: Vec<Value>) -> Vec<Value> {
        let recommendation = match findings.iter().filter_map(|f| f["severity"].as_str()).next() {
            Some("CRITICAL" | "HIGH") => "FIX",
            Some(_) => "COMMENT",
            None => "APPROVE",
        };
        let text = json!({"summary": summary, "recommendation": recommendation, "findings": findings}).to_string();
        events::text_reply(&text, events::usage(100, 10, 5))
    }

    fn child(scope: &str, model: &str, effort: &str) -> Value {
        json!({"scope": scope, "path_hints": ["src"], "model": model, "reasoning_effort": effort})
    }

    fn branch(children: Vec<Value>) -> String {
        json!({"branches": children}).to_string()
    }

    fn fake_request(fixture: &Fixture, fake: &FakeOpenAi, depth: Depth) -> InspectionRequest {
        let mut request = request(fixture, TaskCommand::Review, Mode::Uncommitted, None);
        let mut vars = request.env.vars().clone();
        vars.insert("OPENAI_BASE_URL".into(), fake.url());
        request.env = Environment::new(vars);
        request.depth = depth;
        request
    }

    async fn inspect(request: &InspectionRequest) -> Result<EngineOutcome, EngineFailure> {
        let engine = ProviderEngine::new(Arc::new(HttpClients::default()));
        let progress = |_: &str| {};
        tokio::time::timeout(Duration::from_secs(60), engine.run(request, &progress, CancellationToken::new()))
            .await
            .expect("the inspection ends")
    }

    fn requests_of(fake: &FakeOpenAi, node: &str) -> Vec<Value> {
        fake.requests().into_iter().map(|r| r.body).filter(|body| node_of(body) == node).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_balanced_review_branches_once_with_ordinary_calls_joined_first_and_merges_its_leaves() {
        let fixture = fixture();
        let calls = [
            ("c1", "read_file", read_file_args("null")),
            (
                "c2",
                "branch",
                branch(vec![
                    child("Parser", "inherit", "inherit"),
                    child("Storage", "inherit", "inherit"),
                    child("Hooks", "gpt-5.6-terra", "high"),
                ]),
            ),
            ("c3", "review_changes", r#"{"offset":0,"limit":10}"#.to_string()),
        ];
        let calls: Vec<(&str, &str, &str)> = calls.iter().map(|(id, name, args)| (*id, *name, args.as_str())).collect();
        let mut script = Script::new();
        script.insert(
            "root",
            vec![
                events::tool_calls(&[("h1", "branch_help", "{}")], events::usage(50, 0, 1)),
                events::tool_calls(&calls, events::usage(60, 0, 2)),
            ],
        );
        script.insert("b1", vec![report("parser ok", vec![finding("LOW", "parser-low")])]);
        script.insert("b2", vec![report("storage broken", vec![finding("HIGH", "storage-high")])]);
        script.insert("b3", vec![report("hooks fine", vec![])]);
        let fake = serve(script, |_| {});
        let request = fake_request(&fixture, &fake, Depth::Balanced);
        let outcome = inspect(&request).await.expect("a merged report");

        let merged: Value = serde_json::from_str(&outcome.report_text).unwrap();
        assert_eq!(merged["summary"], "Parser: parser ok\nStorage: storage broken\nHooks: hooks fine");
        assert_eq!(merged["recommendation"], "FIX");
        let titles: Vec<&str> =
            merged["findings"].as_array().unwrap().iter().map(|f| f["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["storage-high", "parser-low"], "leaf order, then stable severity order");

        let root = requests_of(&fake, "root");
        assert_eq!(root.len(), 2);
        for body in &root {
            let tools = tools_of(body);
            assert!(tools.contains(&"branch".to_string()) && tools.contains(&"branch_help".to_string()), "{tools:?}");
        }
        let help = root[1]["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["call_id"] == "h1" && item["type"] == "function_call_output")
            .unwrap();
        assert!(
            help["output"]
                .as_str()
                .unwrap()
                .contains("\"allowed_reasoning_efforts\":[\"inherit\",\"low\",\"medium\",\"high\",\"xhigh\"]")
        );
        for node in ["b1", "b2", "b3"] {
            let bodies = requests_of(&fake, node);
            assert_eq!(bodies.len(), 1, "{node}");
            let tools = tools_of(&bodies[0]);
            assert!(!tools.iter().any(|name| name.starts_with("branch")), "depth 1 is balanced's limit: {tools:?}");
            let input = bodies[0]["input"].as_array().unwrap();
            let outputs: Vec<&str> = input
                .iter()
                .filter(|item| item["type"] == "function_call_output")
                .map(|item| item["call_id"].as_str().unwrap())
                .collect();
            assert_eq!(outputs, ["h1", "c1", "c3", "c2"], "ordinary outputs in provider order, then the branch result");
            let branch_output = input.iter().rfind(|item| item["type"] == "function_call_output").unwrap();
            let result: Value = serde_json::from_str(branch_output["output"].as_str().unwrap()).unwrap();
            assert_eq!((result["branch_id"].as_str(), result["parent_branch_id"].as_str()), (Some(node), Some("root")));
            assert_eq!(result["depth"], 1);
            assert_eq!(result["sibling_scopes"].as_array().unwrap().len(), 2);
            let prefix = root[1]["input"].as_array().unwrap();
            assert_eq!(&input[..prefix.len()], &prefix[..], "{node} continues the provider-visible conversation");
        }
        let hooks = &requests_of(&fake, "b3")[0];
        assert_eq!(
            (hooks["model"].as_str(), hooks["reasoning"]["effort"].as_str()),
            (Some("gpt-5.6-terra"), Some("high"))
        );
        let parser = &requests_of(&fake, "b1")[0];
        assert_eq!(
            (parser["model"].as_str(), parser["reasoning"]["effort"].as_str()),
            (Some("gpt-5.6-sol"), Some("medium"))
        );

        assert_eq!(outcome.branches_created, 3);
        let metrics = &outcome.metrics;
        let branches: Vec<(&str, &str, &str, u64)> = metrics
            .branches
            .iter()
            .map(|b| (b.id.as_str(), b.parent_id.as_str(), b.model.as_str(), b.usage.input_tokens))
            .collect();
        assert_eq!(
            branches,
            [
                ("b1", "root", "gpt-5.6-sol", 100),
                ("b2", "root", "gpt-5.6-sol", 100),
                ("b3", "root", "gpt-5.6-terra", 100)
            ]
        );
        assert_eq!(metrics.usage.input_tokens, 50 + 60 + 300, "usage over every conversation");
        let count = |name: &str| metrics.tool_calls.iter().find(|t| t.name == name).map_or(0, |t| t.count);
        assert_eq!((count("branch"), count("branch_help"), count("read_file"), count("review_changes")), (1, 1, 1, 1));
        assert_eq!(outcome.tool_calls, 4, "the branch call is one budget unit");
        let scopes: Vec<&str> = outcome.leaves.iter().map(|leaf| leaf.scope.as_str()).collect();
        assert_eq!(scopes, ["Parser", "Storage", "Hooks"]);
        assert_eq!(outcome.leaves[2].model, "gpt-5.6-terra");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_thorough_review_branches_again_at_depth_one_and_never_at_two() {
        let fixture = fixture();
        let mut script = Script::new();
        let two = |a: &str, b: &str| branch(vec![child(a, "inherit", "inherit"), child(b, "inherit", "low")]);
        script.insert("root", vec![events::tool_calls(&[("r1", "branch", &two("Core", "Docs"))], json!({}))]);
        script.insert("b1", vec![events::tool_calls(&[("d1", "branch", &two("Core API", "Core tests"))], json!({}))]);
        script.insert("b2", vec![report("docs fine", vec![])]);
        script.insert("b3", vec![report("api", vec![finding("MEDIUM", "api-medium")])]);
        script.insert("b4", vec![report("tests", vec![])]);
        let fake = serve(script, |_| {});
        let outcome = inspect(&fake_request(&fixture, &fake, Depth::Thorough)).await.expect("a merged report");
        let merged: Value = serde_json::from_str(&outcome.report_text).unwrap();
        assert_eq!(merged["summary"], "Core API: api\nCore tests: tests\nDocs: docs fine", "recursive child order");
        assert_eq!(merged["recommendation"], "COMMENT");
        let tree: Vec<(&str, &str, &str)> = outcome
            .metrics
            .branches
            .iter()
            .map(|b| (b.id.as_str(), b.parent_id.as_str(), b.reasoning_effort.as_str()))
            .collect();
        assert_eq!(
            tree,
            [("b1", "root", "medium"), ("b2", "root", "low"), ("b3", "b1", "medium"), ("b4", "b1", "low")]
        );
        assert!(tools_of(&requests_of(&fake, "b1")[0]).contains(&"branch".to_string()), "depth 1 < thorough's 2");
        for node in ["b3", "b4"] {
            let tools = tools_of(&requests_of(&fake, node)[0]);
            assert!(!tools.iter().any(|name| name.starts_with("branch")), "{node} is at depth 2: {tools:?}");
        }
        assert_eq!(outcome.branches_created, 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_offering_branch_forbid_parallel_tool_calls_and_leaves_keep_them() {
        // Spec: any request with a branch control tool forces
        // `parallel_tool_calls` off; non-branch-capable nodes keep it on.
        let fixture = fixture();
        let mut script = Script::new();
        let two = branch(vec![child("a", "inherit", "inherit"), child("b", "inherit", "inherit")]);
        script.insert(
            "root",
            vec![
                events::tool_calls(&[("h1", "branch_help", "{}")], json!({})),
                events::tool_calls(&[("r1", "branch", &two)], json!({})),
            ],
        );
        script.insert("b1", vec![report("a fine", vec![])]);
        script.insert("b2", vec![report("b fine", vec![])]);
        let fake = serve(script, |_| {});
        inspect(&fake_request(&fixture, &fake, Depth::Fast)).await.expect("a merged report");
        let root = requests_of(&fake, "root");
        assert_eq!(root.len(), 2);
        for body in &root {
            assert!(tools_of(body).contains(&"branch".to_string()));
            assert_eq!(body["parallel_tool_calls"], json!(false), "a request offering branch");
        }
        for node in ["b1", "b2"] {
            let body = &requests_of(&fake, node)[0];
            assert!(!tools_of(body).iter().any(|name| name.starts_with("branch")), "{node} is at the depth limit");
            assert_eq!(body["parallel_tool_calls"], json!(true), "{node} offers no branch tool");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn branching_beyond_the_policy_fails_the_task() {
        let fixture = fixture();
        let mut script = Script::new();
        let three = branch(vec![child("a", "inherit", "inherit"); 3]);
        script.insert("root", vec![events::tool_calls(&[("r1", "branch", &three)], json!({}))]);
        let fake = serve(script, |_| {});
        let failure = inspect(&fake_request(&fixture, &fake, Depth::Fast)).await.unwrap_err();
        assert!(failure.message.contains("requires 2 to 2 children"), "{}", failure.message);
        assert_eq!(fake.requests().len(), 1, "no child starts");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_child_at_the_depth_limit_calling_branch_is_told_it_has_no_such_tool() {
        // A child at the depth limit is not offered `branch`: a call to it
        // is answered like any unknown tool, and the child goes on.
        let fixture = fixture();
        let mut script = Script::new();
        let two = branch(vec![child("a", "inherit", "inherit"), child("b", "inherit", "inherit")]);
        script.insert("root", vec![events::tool_calls(&[("r1", "branch", &two)], json!({}))]);
        script.insert("b1", vec![events::tool_calls(&[("x1", "branch", &two)], json!({})), report("a fine", vec![])]);
        script.insert("b2", vec![report("b fine", vec![])]);
        let fake = serve(script, |_| {});
        let outcome = inspect(&fake_request(&fixture, &fake, Depth::Fast)).await.expect("a merged report");
        assert_eq!(outcome.branches_created, 2);
        let repaired = &requests_of(&fake, "b1")[1];
        let output = repaired["input"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|item| item["type"] == "function_call_output" && item["call_id"] == "x1")
            .and_then(|item| serde_json::from_str::<Value>(item["output"].as_str()?).ok())
            .expect("the repair output");
        assert_eq!(output["ok"], false);
        assert!(output["error"].as_str().unwrap().contains("no tool named \"branch\""), "{output}");
        let counted: Vec<&str> = outcome.metrics.tool_calls.iter().map(|metric| metric.name.as_str()).collect();
        assert_eq!(counted, ["branch"], "only the accepted fan-out counts, not the unknown call");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn drift_during_the_branch_step_fails_the_node_before_fan_out() {
        let fixture = fixture();
        let mut script = Script::new();
        let two = branch(vec![child("a", "inherit", "inherit"), child("b", "inherit", "inherit")]);
        let read = read_file_args("null");
        script
            .insert("root", vec![events::tool_calls(&[("c1", "read_file", &read), ("c2", "branch", &two)], json!({}))]);
        let file = fixture.repo().join("src/lib.rs");
        let fake = serve(script, move |node| {
            if node == "root" {
                std::fs::write(&file, "changed while the model answered\n").unwrap();
            }
        });
        let failure = inspect(&fake_request(&fixture, &fake, Depth::Balanced)).await.unwrap_err();
        assert!(
            failure.message.starts_with("authoritative repository state changed since launch"),
            "{}",
            failure.message
        );
        assert_eq!(fake.requests().len(), 1, "no child starts");
    }
}

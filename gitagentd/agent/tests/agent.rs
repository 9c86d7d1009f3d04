//! The bounded loop against the fake OpenAI server with test tools:
//! concurrency and ordering, ceilings, the context budget, batch
//! validation and the deadline.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use gitagent_agent::tools::{Tool, ToolFuture, ToolOutput, ToolRegistry, schema};
use gitagent_agent::{self as agent, AgentError, AgentTask, BatchError, Layers, Limits, RunContext};
use gitagent_provider::{
    Credentials, HostedSearch, Provider, ProviderConfig, ProviderError, RunOptions, Secret, StreamLimits,
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A tool that waits until `parties` calls are running at once.
struct Rendezvous {
    name: &'static str,
    barrier: Arc<tokio::sync::Barrier>,
    log: Arc<Mutex<Vec<&'static str>>>,
}

impl Tool for Rendezvous {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "test tool"
    }
    fn parameters(&self) -> Value {
        schema::strict::<schema::NoArguments>()
    }
    fn call(&self, _arguments: &str, _cancel: CancellationToken) -> ToolFuture {
        let (barrier, log, name) = (Arc::clone(&self.barrier), Arc::clone(&self.log), self.name);
        Box::pin(async move {
            barrier.wait().await;
            log.lock().unwrap().push(name);
            Ok(ToolOutput::new(json!({ "from": name }), false))
        })
    }
}

fn provider(fake: &FakeOpenAi) -> Provider {
    let config = ProviderConfig {
        base_url: fake.url(),
        model: "m".into(),
        credentials: Credentials::ApiKey(Secret::new("k")),
        timeout: Duration::from_secs(20),
        http2_prior_knowledge: false,
        stream_limits: StreamLimits::default(),
        network: Default::default(),
    };
    Provider::new(config, RunOptions::default()).unwrap()
}

fn task(tools: ToolRegistry, limits: Limits, user: String) -> AgentTask {
    AgentTask {
        layers: Layers { system: "system".into(), user, ..Default::default() },
        tools,
        text_format: None,
        parallel_tool_calls: true,
        limits,
        web_search: None,
        history: Vec::new(),
    }
}

fn rendezvous_tools(parties: usize) -> (ToolRegistry, Arc<Mutex<Vec<&'static str>>>) {
    let barrier = Arc::new(tokio::sync::Barrier::new(parties));
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ToolRegistry::new();
    for name in ["first", "second"] {
        registry.extend([
            Arc::new(Rendezvous { name, barrier: Arc::clone(&barrier), log: Arc::clone(&log) }) as Arc<dyn Tool>
        ]);
    }
    (registry, log)
}

async fn run(fake: &FakeOpenAi, task: &AgentTask, deadline: Option<Instant>) -> Result<agent::Outcome, AgentError> {
    let provider = provider(fake);
    let cancel = CancellationToken::new();
    if let Some(deadline) = deadline {
        let timer = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline.into()).await;
            timer.cancel();
        });
    }
    let trace = |_| {};
    let context = RunContext { provider: &provider, cancel, deadline, trace: &trace, on_text: None };
    agent::run(&context, task, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_runs_concurrently_and_outputs_follow_provider_order() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "second", "{}"), ("c2", "first", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("done", json!({}))));
    let (tools, _log) = rendezvous_tools(2);
    let outcome =
        tokio::time::timeout(Duration::from_secs(20), run(&fake, &task(tools, Limits::default(), "go".into()), None))
            .await
            .expect("both calls must be in flight together, or the rendezvous never completes")
            .unwrap();
    assert_eq!((outcome.text.as_str(), outcome.tool_calls, outcome.steps), ("done", 2, 2));
    let input = fake.requests()[1].body["input"].clone();
    let outputs: Vec<&Value> =
        input.as_array().unwrap().iter().filter(|i| i["type"] == "function_call_output").collect();
    assert_eq!(outputs[0]["call_id"], json!("c1"));
    assert_eq!(outputs[1]["call_id"], json!("c2"));
    assert!(outputs[0]["output"].as_str().unwrap().contains(r#""from":"second""#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_batch_guard_stops_the_loop_after_the_batch_joins() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "second", "{}"), ("c2", "first", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("never requested", json!({}))));
    let (mut tools, log) = rendezvous_tools(2);
    let checked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&checked);
    let ran = Arc::clone(&log);
    tools.guard_batches(Arc::new(move || {
        // The guard sees the batch finished: both calls are logged.
        seen.lock().unwrap().push(ran.lock().unwrap().len());
        Box::pin(async { Err(gitagent_agent::tools::ToolError::Cancelled) })
    }));
    let result =
        tokio::time::timeout(Duration::from_secs(20), run(&fake, &task(tools, Limits::default(), "go".into()), None))
            .await
            .expect("the loop ends");
    assert!(matches!(result, Err(AgentError::Cancelled)), "{result:?}");
    assert_eq!(*checked.lock().unwrap(), vec![2], "one check, after both calls returned");
    assert_eq!(fake.requests().len(), 1, "no request follows a failed batch check");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passing_batch_guard_runs_after_every_batch() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "second", "{}"), ("c2", "first", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("done", json!({}))));
    let (mut tools, _log) = rendezvous_tools(2);
    let checks = Arc::new(Mutex::new(0));
    let count = Arc::clone(&checks);
    tools.guard_batches(Arc::new(move || {
        *count.lock().unwrap() += 1;
        Box::pin(async { Ok(()) })
    }));
    let outcome =
        tokio::time::timeout(Duration::from_secs(20), run(&fake, &task(tools, Limits::default(), "go".into()), None))
            .await
            .expect("the loop ends")
            .unwrap();
    assert_eq!((outcome.text.as_str(), outcome.tool_calls), ("done", 2));
    assert_eq!(*checks.lock().unwrap(), 1);
}

#[tokio::test]
async fn the_tool_call_ceiling_finalizes_without_running_the_batch() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "first", "{}"), ("c2", "second", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("final", json!({}))));
    let (tools, log) = rendezvous_tools(2);
    let limits = Limits { max_tool_calls: 1, ..Limits::default() };
    let outcome = run(&fake, &task(tools, limits, "go".into()), None).await.unwrap();
    assert_eq!((outcome.text.as_str(), outcome.tool_calls), ("final", 0));
    assert!(log.lock().unwrap().is_empty(), "no call of an over-budget batch runs");
    let last = &fake.requests()[1].body;
    assert!(last.get("tools").is_none());
    assert!(last.to_string().contains("tool-call budget reached at 0/1"));
}

#[tokio::test]
async fn provider_reported_tokens_over_the_budget_finalize() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "first", "{}")], events::usage(300_000, 0, 1))));
    fake.push(Reply::Events(events::text_reply("final", json!({}))));
    let (tools, log) = rendezvous_tools(1);
    let outcome = run(&fake, &task(tools, Limits::default(), "go".into()), None).await.unwrap();
    assert_eq!(outcome.text, "final");
    assert!(log.lock().unwrap().is_empty());
    assert!(fake.requests()[1].body.to_string().contains("context budget reached at 300000/217600"));
}

#[tokio::test]
async fn an_initial_request_over_the_budget_is_never_sent() {
    let fake = FakeOpenAi::start();
    let limits = Limits { context_tokens: 1_000, ..Limits::default() };
    let error = run(&fake, &task(ToolRegistry::new(), limits, "x".repeat(8_000)), None).await.unwrap_err();
    assert!(matches!(error, AgentError::ContextTooLarge { limit: 1_000, .. }), "{error}");
    assert_eq!(fake.requests().len(), 0);
}

/// The output the request carries for `call_id`, parsed.
fn call_output(body: &Value, call_id: &str) -> Value {
    let item = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no output for {call_id} in {body}"));
    serde_json::from_str(item["output"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_call_to_a_tool_not_offered_is_repaired_with_the_offered_tools() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "rm_rf", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("done", json!({}))));
    let (tools, log) = rendezvous_tools(1);
    let outcome = run(&fake, &task(tools, Limits::default(), "go".into()), None).await.unwrap();
    assert_eq!((outcome.text.as_str(), outcome.tool_calls), ("done", 1), "it counts as a call");
    assert!(log.lock().unwrap().is_empty());
    let output = call_output(&fake.requests()[1].body, "c1");
    assert_eq!(output["ok"], false);
    let error = output["error"].as_str().unwrap();
    assert!(error.contains("no tool named \"rm_rf\""), "{error}");
    assert!(error.contains("first, second"), "{error}");
}

#[tokio::test]
async fn a_repeated_call_to_a_tool_not_offered_finalizes() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "rm_rf", "{}")], json!({}))));
    fake.push(Reply::Events(events::tool_calls(&[("c2", "rm_rf", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("final", json!({}))));
    let (tools, _) = rendezvous_tools(1);
    let outcome = run(&fake, &task(tools, Limits::default(), "go".into()), None).await.unwrap();
    assert_eq!(outcome.text, "final");
    let last = &fake.requests()[2].body;
    assert!(last.get("tools").is_none());
    assert!(last.to_string().contains("no progress"), "{last}");
}

#[tokio::test]
async fn calls_to_tools_not_offered_count_toward_the_tool_call_ceiling() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "rm_rf", "{}")], json!({}))));
    fake.push(Reply::Events(events::tool_calls(&[("c2", "mv", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("final", json!({}))));
    let (tools, _) = rendezvous_tools(1);
    let limits = Limits { max_tool_calls: 1, ..Limits::default() };
    let outcome = run(&fake, &task(tools, limits, "go".into()), None).await.unwrap();
    assert_eq!((outcome.text.as_str(), outcome.tool_calls), ("final", 1));
    assert!(fake.requests()[2].body.to_string().contains("tool-call budget reached at 1/1"));
}

#[tokio::test]
async fn a_reused_call_id_is_rejected() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("same", "first", "{}"), ("same", "second", "{}")], json!({}))));
    let (tools, _) = rendezvous_tools(2);
    let error = run(&fake, &task(tools, Limits::default(), "go".into()), None).await.unwrap_err();
    assert!(matches!(error, AgentError::InvalidBatch(BatchError::ReusedCallId { ref call_id }) if call_id == "same"));
    assert!(error.to_string().contains("used twice"), "{error}");
}

#[tokio::test]
async fn the_deadline_ends_a_hanging_request() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::EventsThenHang(vec![json!({"type": "response.created"})]));
    let deadline = Instant::now() + Duration::from_millis(300);
    let error =
        run(&fake, &task(ToolRegistry::new(), Limits::default(), "go".into()), Some(deadline)).await.unwrap_err();
    assert!(matches!(error, AgentError::DeadlineExceeded), "{error}");
    assert!(error.to_string().contains("--timeout"));
}

/// A tool that answers at once.
struct Instant0(&'static str);

impl Tool for Instant0 {
    fn name(&self) -> &'static str {
        self.0
    }
    fn description(&self) -> &'static str {
        "test tool"
    }
    fn parameters(&self) -> Value {
        schema::strict::<schema::NoArguments>()
    }
    fn call(&self, _arguments: &str, _cancel: CancellationToken) -> ToolFuture {
        let name = self.0;
        Box::pin(async move { Ok(ToolOutput::new(json!({ "from": name }), false)) })
    }
}

fn searching_task(max_calls: Option<u32>) -> AgentTask {
    let mut registry = ToolRegistry::new();
    registry.extend([Arc::new(Instant0("probe")) as Arc<dyn Tool>]);
    let mut task = task(registry, Limits::default(), "go".into());
    task.web_search = Some(HostedSearch { max_calls });
    task
}

#[tokio::test]
async fn a_rejected_hosted_search_is_disabled_disclosed_and_the_step_repeated_once() {
    let fake = FakeOpenAi::start();
    let rejection =
        r#"{"error":{"message":"Unsupported include: web_search_call.action.sources","param":"include[0]"}}"#;
    fake.push(Reply::Status(400, rejection.into()));
    fake.push(Reply::Events(events::tool_calls(&[("c1", "probe", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("done", json!({}))));
    let outcome = run(&fake, &searching_task(Some(4)), None).await.unwrap();
    assert_eq!(outcome.text, "done");
    assert_eq!(outcome.hosted_search_failure, Some("web_search metadata include rejected"));
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "one repeat, then the run goes on");
    let offers = |index: usize| requests[index].body.to_string().contains(r#"{"type":"web_search"}"#);
    assert!(offers(0) && requests[0].body["max_tool_calls"] == 4);
    assert!(!offers(1) && !offers(2), "disabled for the rest of the run");
    assert!(requests[1].body.get("max_tool_calls").is_none());
    let repeated = requests[1].input_texts();
    assert!(repeated.iter().any(|text| text.contains("step: 1 of")), "the same step is repeated: {repeated:?}");
    assert!(!repeated.iter().any(|text| text.contains("step: 2 of")), "{repeated:?}");
    let disclosure = repeated.last().unwrap();
    assert!(disclosure.contains("Hosted web search is unavailable") && disclosure.contains("summary"), "{disclosure}");
    assert!(requests[2].input_texts().iter().any(|text| text.contains("Hosted web search is unavailable")));
}

#[tokio::test]
async fn other_provider_errors_with_hosted_search_stay_terminal() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Status(429, r#"{"error":{"message":"web_search rate limited, unavailable"}}"#.into()));
    let error = run(&fake, &searching_task(None), None).await.unwrap_err();
    assert!(matches!(error, AgentError::Provider(ProviderError::Http { status: 429, .. })), "{error}");
    assert_eq!(fake.requests().len(), 1, "no repeat");
}

#[tokio::test]
async fn continuations_replay_reasoning_search_message_and_calls_in_provider_order() {
    let fake = FakeOpenAi::start();
    let search = json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
                        "action": {"type": "search", "query": "x", "sources": [{"type": "url", "url": "https://e.example"}]}});
    let output = vec![
        events::reasoning("enc-1"),
        search,
        events::message("looking"),
        events::function_call("c1", "probe", "{}"),
    ];
    fake.push(Reply::Events(vec![events::completed("r1", output, json!({}))]));
    fake.push(Reply::Events(events::text_reply("done", json!({}))));
    let outcome = run(&fake, &searching_task(Some(2)), None).await.unwrap();
    assert_eq!(outcome.tool_calls, 1, "hosted calls use no local budget");
    let input = fake.requests()[1].body["input"].as_array().unwrap().clone();
    let start = input.iter().position(|item| item["type"] == "reasoning").expect("reasoning is replayed");
    let kinds: Vec<&str> = input[start..].iter().map(|item| item["type"].as_str().unwrap_or_default()).collect();
    // Then the next step's budget note.
    assert_eq!(kinds, ["reasoning", "web_search_call", "message", "function_call", "function_call_output", "message"]);
    assert_eq!(input[start]["encrypted_content"], "enc-1");
    let replayed = &input[start + 1];
    assert_eq!(replayed["action"]["sources"][0]["url"], "https://e.example");
    assert!(replayed.get("id").is_none(), "ids are not replayed with store:false");
}

#[tokio::test]
async fn forced_finalization_offers_neither_hosted_nor_local_tools() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "probe", "{}")], json!({}))));
    fake.push(Reply::Events(events::text_reply("final", json!({}))));
    let mut task = searching_task(Some(4));
    task.limits = Limits { max_steps: 1, ..Limits::default() };
    run(&fake, &task, None).await.unwrap();
    let requests = fake.requests();
    assert!(requests[0].body.to_string().contains("web_search"));
    let last = &requests[1].body;
    assert!(last.get("tools").is_none() && last.get("max_tool_calls").is_none(), "{last}");
    assert!(!last["include"].to_string().contains("web_search"), "{last}");
}

fn control() -> gitagent_provider::ToolSpec {
    gitagent_provider::ToolSpec {
        name: "branch".into(),
        description: "terminal control".into(),
        parameters: schema::strict::<schema::NoArguments>(),
    }
}

async fn run_with_control(fake: &FakeOpenAi, task: &AgentTask) -> Result<agent::Node, AgentError> {
    let provider = provider(fake);
    let trace = |_| {};
    let context = RunContext {
        provider: &provider,
        cancel: CancellationToken::new(),
        deadline: None,
        trace: &trace,
        on_text: None,
    };
    let spec = control();
    tokio::time::timeout(Duration::from_secs(20), agent::run_node(&context, task, None, Some(&spec)))
        .await
        .expect("both ordinary calls must be in flight together, or the rendezvous never completes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_calls_beside_a_control_call_run_concurrently_and_join_before_it_is_accepted() {
    let fake = FakeOpenAi::start();
    let calls = [("c1", "second", "{}"), ("c2", "branch", "{}"), ("c3", "first", "{}")];
    fake.push(Reply::Events(events::tool_calls(&calls, json!({"input_tokens": 7}))));
    let (mut tools, log) = rendezvous_tools(2);
    let checked = Arc::new(Mutex::new(Vec::new()));
    let (seen, ran) = (Arc::clone(&checked), Arc::clone(&log));
    tools.guard_batches(Arc::new(move || {
        seen.lock().unwrap().push(ran.lock().unwrap().len());
        Box::pin(async { Ok(()) })
    }));
    let node = run_with_control(&fake, &task(tools, Limits::default(), "go".into())).await.unwrap();
    let agent::Node::Branch(call) = node else { panic!("the control call retires the conversation") };
    assert_eq!((call.call_id.as_str(), call.arguments.as_str()), ("c2", "{}"));
    assert_eq!(*checked.lock().unwrap(), vec![2], "the snapshot check follows the joined calls");
    assert_eq!((call.outcome.tool_calls, call.outcome.steps), (3, 1), "the control call is one budget unit");
    let encoded = gitagent_provider::items_to_json(&call.conversation);
    let outputs: Vec<&str> = encoded
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(outputs, ["c1", "c3"], "ordinary outputs in provider order; the control call has none yet");
    assert!(encoded.iter().any(|item| item["type"] == "function_call" && item["call_id"] == "c2"));
    assert_eq!(fake.requests().len(), 1, "a retired conversation makes no further request");
    assert!(fake.requests()[0].tool_names().contains(&"branch".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_snapshot_check_refuses_a_lone_control_call() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "branch", "{}")], json!({}))));
    let (mut tools, _log) = rendezvous_tools(2);
    tools.guard_batches(Arc::new(|| Box::pin(async { Err(gitagent_agent::tools::ToolError::Cancelled) })));
    let result = run_with_control(&fake, &task(tools, Limits::default(), "go".into())).await;
    assert!(matches!(result, Err(AgentError::Cancelled)), "{result:?}");
}

#[tokio::test]
async fn two_control_calls_in_one_response_are_refused() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "branch", "{}"), ("c2", "branch", "{}")], json!({}))));
    let result = run_with_control(&fake, &task(ToolRegistry::new(), Limits::default(), "go".into())).await;
    assert!(matches!(result, Err(AgentError::InvalidBatch(BatchError::SeveralControlCalls { .. }))), "{result:?}");
}

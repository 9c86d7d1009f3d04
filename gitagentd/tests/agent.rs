//! The bounded loop against the fake OpenAI server with test tools:
//! concurrency and ordering, ceilings, the context budget, batch
//! validation and the deadline.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use gitagentd::agent::{self, AgentError, AgentTask, BatchError, Layers, Limits, RunContext};
use gitagentd::provider::{Credentials, Provider, ProviderConfig, RunOptions, Secret, StreamLimits};
use gitagentd::tools::{Tool, ToolFuture, ToolOutput, ToolRegistry, schema};
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
    let context = RunContext { provider: &provider, cancel, deadline, trace: &trace };
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
        Box::pin(async { Err(gitagentd::tools::ToolError::Cancelled) })
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

#[tokio::test]
async fn calls_to_tools_not_offered_are_rejected() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "rm_rf", "{}")], json!({}))));
    let (tools, _) = rendezvous_tools(1);
    let error = run(&fake, &task(tools, Limits::default(), "go".into()), None).await.unwrap_err();
    assert!(
        matches!(error, AgentError::InvalidBatch(BatchError::UnknownTool { ref name, .. }) if name == "rm_rf"),
        "{error}"
    );
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

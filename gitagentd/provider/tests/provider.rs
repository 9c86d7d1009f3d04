//! The Responses adapter against the fake OpenAI server: the request wire
//! shape, finish states, the one-retry rule and its classification,
//! cancellation, and error unwrapping.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, ResetReply, ResettingServer, events};
use gitagent_provider::{
    Credentials, HostedSearch, Item, ModelRequest, Provider, ProviderConfig, ProviderError, RetryReason, RunOptions,
    Secret, StreamCap, StreamLimits, StreamNotice, TextFormat, ToolSpec,
};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

fn config(url: String) -> ProviderConfig {
    ProviderConfig {
        base_url: url,
        model: "test-model".into(),
        credentials: Credentials::ApiKey(Secret::new("sk-test-key")),
        timeout: Duration::from_secs(20),
        http2_prior_knowledge: false,
        stream_limits: StreamLimits::default(),
        network: Default::default(),
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        instructions: "be terse".into(),
        input: vec![Item::developer("policy"), Item::user("write")],
        tools: vec![ToolSpec {
            name: "repo_summary".into(),
            description: "metadata".into(),
            parameters: json!({"type":"object","properties":{},"required":[],"additionalProperties":false}),
        }],
        parallel_tool_calls: true,
        text_format: None,
        web_search: None,
    }
}

fn quiet(_: StreamNotice) {}

#[tokio::test]
async fn requests_carry_the_documented_wire_fields() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::text_reply("done", events::usage(10, 2, 3))));
    let options = RunOptions {
        reasoning_effort: Some("high".into()),
        service_tier: Some("priority".into()),
        prompt_cache_key: Some("key".into()),
        ..Default::default()
    };
    let provider = Provider::new(config(fake.url()), options).unwrap();
    let mut request = request();
    request.text_format =
        Some(TextFormat { name: "report".into(), description: None, schema: json!({"type":"object"}) });
    let response = provider.respond(&request, &CancellationToken::new(), &quiet).await.unwrap();
    assert_eq!(response.text, "done");
    assert_eq!((response.usage.input_tokens, response.usage.cached_input_tokens), (10, 2));

    let recorded = &fake.requests()[0];
    assert_eq!(recorded.header("authorization"), Some("Bearer sk-test-key"));
    let body = &recorded.body;
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["model"], json!("test-model"));
    assert_eq!(body["instructions"], json!("be terse"));
    assert_eq!(body["parallel_tool_calls"], json!(true));
    assert_eq!(body["reasoning"], json!({"effort": "high"}));
    assert_eq!(body["service_tier"], json!("priority"));
    assert_eq!(body["tools"][0]["strict"], json!(true));
    assert_eq!(body["tools"][0]["type"], json!("function"));
    assert_eq!(body["text"]["format"]["type"], json!("json_schema"));
    assert_eq!(body["text"]["format"]["strict"], json!(true));
    assert_eq!(body["input"][0]["role"], json!("developer"));
    assert_eq!(body["input"][1]["content"][0], json!({"type": "input_text", "text": "write"}));
    assert!(body.get("prompt_cache_key").is_none() && body.get("include").is_none(), "custom endpoints get neither");
}

#[tokio::test]
async fn tool_free_requests_omit_parallel_tool_calls_and_defaults_omit_reasoning() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::text_reply("x", events::usage(1, 0, 1))));
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let request = ModelRequest { tools: Vec::new(), ..request() };
    provider.respond(&request, &CancellationToken::new(), &quiet).await.unwrap();
    let body = &fake.requests()[0].body;
    for absent in ["tools", "parallel_tool_calls", "reasoning", "service_tier", "text"] {
        assert!(body.get(absent).is_none(), "{absent} must be omitted: {body}");
    }
}

#[tokio::test]
async fn chatgpt_auth_sends_its_identity_headers() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::text_reply("x", events::usage(1, 0, 1))));
    let mut config = config(fake.url());
    config.credentials = Credentials::ChatGpt { access_token: Secret::new("tok"), account_id: "acct".into() };
    let provider = Provider::new(config, RunOptions::default()).unwrap();
    provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap();
    let recorded = &fake.requests()[0];
    assert_eq!(recorded.header("authorization"), Some("Bearer tok"));
    assert_eq!(recorded.header("chatgpt-account-id"), Some("acct"));
    assert_eq!(recorded.header("originator"), Some("codex_cli_rs"));
    assert_eq!(recorded.header("user-agent"), Some("codex_cli_rs"));
}

#[tokio::test]
async fn tool_calls_and_replayable_continuation_are_returned_in_order() {
    let fake = FakeOpenAi::start();
    let output = vec![
        events::reasoning("enc"),
        events::function_call("c1", "read_file", r#"{"path":"a"}"#),
        events::function_call("c2", "grep", "{}"),
    ];
    fake.push(Reply::Events(vec![events::completed("r", output, json!({}))]));
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let response = provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap();
    let names: Vec<&str> = response.tool_calls.iter().map(|call| call.name.as_str()).collect();
    assert_eq!(names, ["read_file", "grep"]);
    assert_eq!(response.tool_calls[0].call_id, "c1");
    assert_eq!(response.continuation.len(), 3, "reasoning is replayed before the calls");
    assert_eq!(response.continuation[1].function_call().unwrap().name, "read_file");
}

async fn retried(first: Reply) -> (FakeOpenAi, Result<String, ProviderError>, Vec<StreamNotice>) {
    let fake = FakeOpenAi::start();
    fake.push(first);
    fake.push(Reply::Events(events::text_reply("recovered", events::usage(1, 0, 1))));
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let result = provider
        .respond(&request(), &CancellationToken::new(), &move |notice| sink.lock().unwrap().push(notice))
        .await
        .map(|response| response.text);
    let notices = notices.lock().unwrap().clone();
    (fake, result, notices)
}

fn assert_one_equivalent_retry(fake: &FakeOpenAi, notices: &[StreamNotice]) {
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "exactly one retry");
    assert_eq!(requests[0].body, requests[1].body, "the retry is the same request");
    assert_eq!(requests[0].header("authorization"), requests[1].header("authorization"));
    let retries: Vec<_> = notices.iter().filter(|n| matches!(n, StreamNotice::Retrying { .. })).collect();
    assert_eq!(retries.len(), 1);
}

#[tokio::test]
async fn a_malformed_event_gets_one_equivalent_retry() {
    let (fake, result, notices) = retried(Reply::Raw("data: {\"type\":\n\n".into())).await;
    assert_eq!(result.unwrap(), "recovered");
    assert_one_equivalent_retry(&fake, &notices);
    assert!(matches!(notices[0], StreamNotice::Retrying { reason: RetryReason::MalformedStream, .. }));
}

#[tokio::test]
async fn a_stream_without_completed_gets_one_retry_with_a_fresh_accumulator() {
    let partial = vec![json!({"type":"response.output_text.delta","output_index":0,"content_index":0,
                              "delta":"discarded partial text"})];
    let (fake, result, notices) = retried(Reply::Events(partial)).await;
    assert_eq!(result.unwrap(), "recovered", "nothing of the broken attempt leaks into the retry");
    assert_one_equivalent_retry(&fake, &notices);
}

#[tokio::test]
async fn a_body_cut_mid_stream_gets_one_retry() {
    let (fake, result, notices) = retried(Reply::EventsThenAbort(vec![json!({"type":"response.created"})])).await;
    assert_eq!(result.unwrap(), "recovered");
    assert_one_equivalent_retry(&fake, &notices);
}

#[tokio::test]
async fn the_retry_happens_once_and_its_failure_carries_both() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Raw("data: {\"first\n\n".into()));
    fake.push(Reply::Raw("data: {\"second\n\n".into()));
    fake.push(Reply::Events(events::text_reply("never", json!({}))));
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let error = provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, ProviderError::RetryFailed { .. }), "{text}");
    assert!(text.contains("first") && text.contains("second"), "{text}");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn http_errors_are_terminal_and_unwrapped() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Status(500, r#"{"error":{"message":"unexpected EOF; INTERNAL_ERROR","type":"server"}}"#.into()));
    fake.push(Reply::Events(events::text_reply("never", json!({}))));
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let error = provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap_err();
    assert!(matches!(error, ProviderError::Http { status: 500, .. }), "an error text that collides with retry words");
    assert!(error.to_string().contains("unexpected EOF; INTERNAL_ERROR"));
    assert!(!error.to_string().contains("sk-test-key"));
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn failed_and_incomplete_finish_states_are_terminal() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(vec![json!({"type":"response.failed","response":{"error":{"message":"overloaded"}}})]));
    fake.push(Reply::Events(vec![json!({"type":"response.incomplete",
                                        "response":{"incomplete_details":{"reason":"max_output_tokens"}}})]));
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let failed = provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap_err();
    assert!(failed.to_string().contains("overloaded"));
    let incomplete = provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap_err();
    assert!(incomplete.to_string().contains("max_output_tokens"));
    assert_eq!(fake.requests().len(), 2, "neither was retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_ends_a_hanging_stream_and_closes_it() {
    let fake = Arc::new(FakeOpenAi::start());
    fake.push(Reply::EventsThenHang(vec![json!({"type":"response.created"})]));
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let cancel = CancellationToken::new();
    let waiter = Arc::clone(&fake);
    let trigger = cancel.clone();
    tokio::task::spawn_blocking(move || {
        assert!(waiter.wait_for_requests(1, WAIT));
        trigger.cancel();
    });
    let error = provider.respond(&request(), &cancel, &quiet).await.unwrap_err();
    assert!(matches!(error, ProviderError::Cancelled));
    let waiter = Arc::clone(&fake);
    let closed = tokio::task::spawn_blocking(move || waiter.wait_for_abandoned(1, WAIT)).await.unwrap();
    assert!(closed, "the provider connection was dropped");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn cancellation_prevents_the_retry() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Raw("data: {\n\n".into()));
    fake.push(Reply::Events(events::text_reply("never", json!({}))));
    let provider = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let error = provider
        .respond(&request(), &cancel, &move |notice| {
            if matches!(notice, StreamNotice::Retrying { .. }) {
                trigger.cancel();
            }
        })
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::Cancelled), "{error}");
    assert_eq!(fake.requests().len(), 1);
}

/// Small stream caps, so that tests break them with little traffic.
fn small_limits() -> StreamLimits {
    StreamLimits {
        max_line_bytes: 1024,
        max_event_bytes: 4096,
        max_response_bytes: 64 * 1024,
        read_idle: Duration::from_millis(200),
    }
}

/// The error of one request to a server answering `reply`, under the small
/// caps, and the server to inspect afterwards.
async fn bounded(reply: Reply) -> (FakeOpenAi, ProviderError) {
    let fake = FakeOpenAi::start();
    fake.push(reply);
    fake.push(Reply::Events(events::text_reply("never", json!({}))));
    let mut config = config(fake.url());
    config.stream_limits = small_limits();
    let provider = Provider::new(config, RunOptions::default()).unwrap();
    let error = provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap_err();
    (fake, error)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_stalls_after_its_headers_ends_at_the_read_idle_limit() {
    let (fake, error) = bounded(Reply::EventsThenHang(vec![json!({"type":"response.created"})])).await;
    assert!(matches!(error, ProviderError::Idle { waiting: "streaming the response", .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("sent nothing for 0.2s") && text.contains("hint:"), "{text}");
    assert_eq!(fake.requests().len(), 1, "a stall is not retried");
    let closed = tokio::task::spawn_blocking(move || fake.wait_for_abandoned(1, WAIT)).await.unwrap();
    assert!(closed, "the stalled connection was dropped");
}

#[tokio::test]
async fn a_response_whose_headers_never_come_ends_at_the_read_idle_limit() {
    let (fake, error) = bounded(Reply::Held(events::text_reply("late", json!({})))).await;
    assert!(matches!(error, ProviderError::Idle { waiting: "waiting for the response headers", .. }), "{error}");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn an_over_long_line_is_refused_by_the_line_cap() {
    let line = format!("data: {{\"type\":\"response.created\",\"pad\":\"{}\"}}\n\n", "x".repeat(2000));
    let (fake, error) = bounded(Reply::Raw(line)).await;
    assert!(matches!(error, ProviderError::TooLarge { cap: StreamCap::Line, limit: 1024 }), "{error}");
    let text = error.to_string();
    assert!(text.contains("one event-stream line over the 1024-byte cap"), "{text}");
    assert_eq!(fake.requests().len(), 1, "a cap is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_event_is_refused_by_the_event_cap() {
    let (fake, error) = bounded(Reply::Repeat("data: 0123456789abcdef\n".into())).await;
    assert!(matches!(error, ProviderError::TooLarge { cap: StreamCap::Event, limit: 4096 }), "{error}");
    assert!(error.to_string().contains("one event over the 4096-byte cap"), "{error}");
    let closed = tokio::task::spawn_blocking(move || fake.wait_for_abandoned(1, WAIT)).await.unwrap();
    assert!(closed, "the endless stream was dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_small_events_are_refused_by_the_response_cap() {
    let (fake, error) = bounded(Reply::Repeat("data: {\"type\":\"response.in_progress\"}\n\n".into())).await;
    assert!(matches!(error, ProviderError::TooLarge { cap: StreamCap::Response, limit: 65536 }), "{error}");
    assert!(error.to_string().contains("a whole response over the 65536-byte cap"), "{error}");
    assert_eq!(fake.requests().len(), 1);
    let closed = tokio::task::spawn_blocking(move || fake.wait_for_abandoned(1, WAIT)).await.unwrap();
    assert!(closed, "the endless stream was dropped");
}

#[tokio::test]
async fn a_response_within_the_caps_completes() {
    let fake = FakeOpenAi::start();
    fake.push(Reply::Events(events::text_reply("fits", events::usage(1, 0, 1))));
    let mut config = config(fake.url());
    config.stream_limits = small_limits();
    let provider = Provider::new(config, RunOptions::default()).unwrap();
    let response = provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap();
    assert_eq!(response.text, "fits");
}

async fn against_resets(script: Vec<ResetReply>) -> (ResettingServer, Result<String, ProviderError>) {
    let server = ResettingServer::start(script);
    let mut config = config(server.url());
    config.http2_prior_knowledge = true;
    let provider = Provider::new(config, RunOptions::default()).unwrap();
    let result = provider.respond(&request(), &CancellationToken::new(), &quiet).await.map(|r| r.text);
    (server, result)
}

fn complete() -> ResetReply {
    ResetReply::Events(events::text_reply("after reset", events::usage(1, 0, 1)))
}

#[tokio::test]
async fn peer_resets_with_internal_error_or_refused_stream_are_retried() {
    for code in [0x2, 0x7] {
        let (server, result) = against_resets(vec![ResetReply::Reset(code), complete()]).await;
        assert_eq!(result.unwrap(), "after reset", "code {code:#x}");
        assert_eq!(server.request_count(), 2);
    }
    let (server, result) = against_resets(vec![ResetReply::Reset(0x2), ResetReply::Reset(0x2)]).await;
    assert!(matches!(result, Err(ProviderError::RetryFailed { .. })));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn other_and_unknown_reset_codes_are_terminal() {
    for code in [0x8, 0xb, 0x77] {
        let (server, result) = against_resets(vec![ResetReply::Reset(code), complete()]).await;
        let error = result.unwrap_err();
        assert!(matches!(error, ProviderError::Transport { .. }), "code {code:#x}: {error}");
        assert_eq!(server.request_count(), 1, "code {code:#x} must not be retried");
    }
}

fn offline(base_url: &str, model: &str, credentials: Credentials, key: Option<&str>) -> Provider {
    let mut config = config(base_url.to_string());
    config.model = model.into();
    config.credentials = credentials;
    let options = RunOptions { prompt_cache_key: key.map(str::to_string), ..Default::default() };
    gitagent_provider::network::install_tls_provider();
    Provider::with_client(reqwest::Client::new(), config, options)
}

fn chatgpt_credentials() -> Credentials {
    Credentials::ChatGpt { access_token: Secret::new("tok"), account_id: "acct".into() }
}

/// A stable prefix ending in a marked budget note, then a changing suffix.
fn cached_request() -> ModelRequest {
    let mut request = request();
    request.input = vec![
        Item::developer("policy"),
        Item::user("task"),
        Item::developer("step 1 of 9").with_cache_breakpoint(),
        Item::assistant("thinking"),
    ];
    request
}

#[test]
fn gpt56_on_the_openai_api_gets_explicit_breakpoints_and_explicit_only_mode() {
    let openai = "https://api.openai.com/v1";
    let apikey = || Credentials::ApiKey(Secret::new("k"));
    let body = offline(openai, "gpt-5.6-sol", apikey(), Some("tree-key")).request_body(&cached_request());
    assert_eq!(body["prompt_cache_key"], "tree-key");
    assert_eq!(body["prompt_cache_options"], json!({"mode": "explicit"}));
    let marked: Vec<usize> =
        (0..4).filter(|index| body["input"][index]["content"][0].get("prompt_cache_breakpoint").is_some()).collect();
    assert_eq!(marked, [2], "only the marked input-text block: {body}");
    assert_eq!(body["input"][2]["content"][0]["prompt_cache_breakpoint"], json!({"mode": "explicit"}));

    // Other models on the API: the stable key, provider-default caching.
    let body = offline(openai, "gpt-5.5", apikey(), Some("tree-key")).request_body(&cached_request());
    assert_eq!(body["prompt_cache_key"], "tree-key");
    assert!(!body.to_string().contains("prompt_cache_options") && !body.to_string().contains("breakpoint"), "{body}");

    // The ChatGPT endpoint: the key without breakpoint options.
    let chatgpt = "https://chatgpt.com/backend-api/codex";
    let body = offline(chatgpt, "gpt-5.6-sol", chatgpt_credentials(), Some("tree-key")).request_body(&cached_request());
    assert_eq!(body["prompt_cache_key"], "tree-key");
    assert!(!body.to_string().contains("prompt_cache_options") && !body.to_string().contains("breakpoint"), "{body}");

    // A custom endpoint: no prompt-cache field at all.
    let body =
        offline("http://127.0.0.1:9/v1", "gpt-5.6-sol", apikey(), Some("tree-key")).request_body(&cached_request());
    assert!(!body.to_string().contains("prompt_cache"), "{body}");

    // Without a marked message there is nothing to make explicit.
    let mut unmarked = cached_request();
    unmarked.input[2] = Item::developer("step 1 of 9");
    let body = offline(openai, "gpt-5.6-sol", apikey(), Some("tree-key")).request_body(&unmarked);
    assert!(body.get("prompt_cache_options").is_none(), "{body}");
}

/// A provider that talks to the fake server as if it were the ChatGPT
/// backend: `chatgpt.com` resolves to the fake's loopback address.
fn chatgpt_provider(fake: &FakeOpenAi, options: RunOptions) -> Provider {
    let address = fake.address();
    gitagent_provider::network::install_tls_provider();
    let client = reqwest::Client::builder().resolve("chatgpt.com", address).build().unwrap();
    let mut config = config(format!("http://chatgpt.com:{}/v1", address.port()));
    config.credentials = chatgpt_credentials();
    Provider::with_client(client, config, options)
}

#[tokio::test]
async fn the_chatgpt_endpoint_routes_by_the_key_and_replays_the_turn_state() {
    let fake = FakeOpenAi::start();
    let reply = || events::text_reply("x", events::usage(1, 0, 1));
    fake.push(Reply::EventsWithHeader("x-codex-turn-state".into(), "sticky-1".into(), reply()));
    fake.push(Reply::Events(reply()));
    fake.push(Reply::Events(reply()));
    fake.push(Reply::Events(reply()));
    let options = RunOptions { prompt_cache_key: Some("tree-key".into()), ..Default::default() };
    let first_turn = chatgpt_provider(&fake, options.clone());
    let cancel = CancellationToken::new();
    first_turn.respond(&request(), &cancel, &quiet).await.unwrap();
    first_turn.respond(&request(), &cancel, &quiet).await.unwrap();
    assert_eq!(first_turn.turn_state().as_deref(), Some("sticky-1"));

    // A context-preserving follow-up: same key, seeded turn state, a
    // fresh turn identity. A depth reset: a new key and no turn state.
    let follow_up = RunOptions { turn_state: first_turn.turn_state(), ..options };
    chatgpt_provider(&fake, follow_up).respond(&request(), &cancel, &quiet).await.unwrap();
    let reset = RunOptions { prompt_cache_key: Some("new-key".into()), ..Default::default() };
    chatgpt_provider(&fake, reset).respond(&request(), &cancel, &quiet).await.unwrap();

    let requests = fake.requests();
    let turn_id = |index: usize| {
        let metadata: serde_json::Value =
            serde_json::from_str(requests[index].header("x-codex-turn-metadata").unwrap()).unwrap();
        assert_eq!(metadata["session_id"], requests[index].body["prompt_cache_key"]);
        metadata["turn_id"].as_str().unwrap().to_string()
    };
    assert_eq!(requests[0].header("session-id"), Some("tree-key"));
    assert_eq!(requests[0].header("thread-id"), Some("tree-key"));
    assert_eq!(requests[0].header("x-codex-turn-state"), None, "nothing captured yet");
    assert_eq!(requests[1].header("x-codex-turn-state"), Some("sticky-1"));
    assert_eq!(turn_id(0), turn_id(1), "one turn identity per inspection");
    assert_eq!(requests[2].header("x-codex-turn-state"), Some("sticky-1"));
    assert_eq!(requests[2].header("session-id"), Some("tree-key"));
    assert_ne!(turn_id(2), turn_id(0), "a follow-up starts a fresh turn identity");
    assert_eq!(requests[3].header("x-codex-turn-state"), None);
    assert_eq!(requests[3].header("session-id"), Some("new-key"));
    for request in &requests {
        assert!(request.body.get("prompt_cache_options").is_none(), "{}", request.body);
    }
}

#[tokio::test]
async fn custom_endpoints_get_no_routing_headers_or_turn_state() {
    let fake = FakeOpenAi::start();
    let reply = || events::text_reply("x", events::usage(1, 0, 1));
    fake.push(Reply::EventsWithHeader("x-codex-turn-state".into(), "sticky-1".into(), reply()));
    fake.push(Reply::Events(reply()));
    let mut config = config(fake.url());
    config.credentials = chatgpt_credentials();
    let options = RunOptions { prompt_cache_key: Some("tree-key".into()), ..Default::default() };
    let provider = Provider::new(config, options).unwrap();
    provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap();
    provider.respond(&request(), &CancellationToken::new(), &quiet).await.unwrap();
    assert_eq!(provider.turn_state(), None);
    for request in fake.requests() {
        for header in ["session-id", "thread-id", "x-codex-turn-metadata", "x-codex-turn-state"] {
            assert_eq!(request.header(header), None, "{header}");
        }
        assert!(request.body.get("prompt_cache_key").is_none());
    }
}

#[test]
fn hosted_search_requests_carry_the_tool_its_includes_and_its_cap() {
    let provider = offline("http://127.0.0.1:9/v1", "m", Credentials::ApiKey(Secret::new("k")), None);
    let mut request = request();
    request.web_search = Some(HostedSearch { max_calls: Some(4) });
    let body = provider.request_body(&request);
    assert_eq!(body["tools"].as_array().unwrap().last(), Some(&json!({"type": "web_search"})));
    assert_eq!(body["tools"][0]["name"], "repo_summary", "function tools come first");
    assert_eq!(body["include"], json!(["web_search_call.action.sources", "reasoning.encrypted_content"]));
    assert_eq!(body["max_tool_calls"], 4);
    assert_eq!(body["store"], false);

    request.web_search = Some(HostedSearch { max_calls: None });
    assert!(provider.request_body(&request).get("max_tool_calls").is_none());
    request.web_search = None;
    let body = provider.request_body(&request);
    assert!(!body.to_string().contains("web_search") && body.get("max_tool_calls").is_none(), "{body}");
}

#[tokio::test]
async fn hosted_search_rejections_are_typed_and_other_errors_stay_terminal() {
    let fake = FakeOpenAi::start();
    let unsupported =
        r#"{"error":{"message":"web_search is not supported","param":"tools[1].type","code":"unsupported_value"}}"#;
    fake.push(Reply::Status(400, unsupported.into()));
    fake.push(Reply::Status(401, unsupported.into()));
    fake.push(Reply::Status(400, String::new()));
    fake.push(Reply::Status(400, String::new()));
    fake.push(Reply::Status(400, String::new()));
    let cancel = CancellationToken::new();
    let mut searching = request();
    searching.web_search = Some(HostedSearch { max_calls: Some(4) });
    let api = Provider::new(config(fake.url()), RunOptions::default()).unwrap();
    let error = api.respond(&searching, &cancel, &quiet).await.unwrap_err();
    assert!(matches!(error, ProviderError::HostedSearchRejected { reason: "web_search rejected", .. }), "{error}");
    let error = api.respond(&searching, &cancel, &quiet).await.unwrap_err();
    assert!(matches!(error, ProviderError::Http { status: 401, .. }), "authentication stays terminal: {error}");
    // The empty 400 counts for ChatGPT auth with a positive cap only.
    let error = api.respond(&searching, &cancel, &quiet).await.unwrap_err();
    assert!(matches!(error, ProviderError::Http { status: 400, .. }), "API key: {error}");
    let plan = chatgpt_provider(&fake, RunOptions::default());
    let error = plan.respond(&searching, &cancel, &quiet).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::HostedSearchRejected { reason: "hosted tool call limit rejected", .. }),
        "{error}"
    );
    searching.web_search = Some(HostedSearch { max_calls: None });
    let error = plan.respond(&searching, &cancel, &quiet).await.unwrap_err();
    assert!(matches!(error, ProviderError::Http { status: 400, .. }), "uncapped: {error}");
}

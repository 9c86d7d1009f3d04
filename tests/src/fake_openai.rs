//! A fake OpenAI-compatible Responses server on 127.0.0.1 for tests.
//!
//! Each test scripts the replies ([`Reply`]) the server gives to
//! successive `POST /v1/responses` requests and reads back every request
//! it received, headers and JSON body ([`RecordedRequest`]). It speaks
//! HTTP/1.1 and cleartext HTTP/2 (prior knowledge); on HTTP/2 an aborted
//! body is a stream reset with INTERNAL_ERROR, on HTTP/1.1 a cut
//! connection. [`ResettingServer`] resets HTTP/2 streams with any error
//! code. Waiting helpers block on a condition variable, never on sleeps.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete event stream: these events, then `data: [DONE]`.
    Events(Vec<Value>),
    /// A `text/event-stream` body sent exactly as given.
    Raw(String),
    /// An HTTP error with this body.
    Status(u16, String),
    /// These events, then the body aborts (HTTP/1.1: the connection is
    /// cut; HTTP/2: the stream is reset with INTERNAL_ERROR).
    EventsThenAbort(Vec<Value>),
    /// These events, then the stream stays open until the client leaves;
    /// with no events, a stall right after the response headers.
    EventsThenHang(Vec<Value>),
    /// This text again and again until the client leaves: an endless
    /// line, an endless event or an endless stream of events.
    Repeat(String),
    /// Held until the test calls [`FakeOpenAi::release`], then a complete
    /// event stream; lets a test act between a request and its answer.
    Held(Vec<Value>),
    /// A complete event stream whose response carries this extra header
    /// (name, value), such as the ChatGPT backend's `x-codex-turn-state`.
    EventsWithHeader(String, String, Vec<Value>),
    /// These events are sent at once; the rest of the stream waits until
    /// the test calls [`FakeOpenAi::release`]. Shows what a client does
    /// with a stream under way (the text it shows as it arrives); the
    /// moment the first part was handed to the connection is kept
    /// ([`FakeOpenAi::paused_sent_at`]).
    Paused(Vec<Value>, Vec<Value>),
    /// A complete event stream computed from the request body, for
    /// answers that must echo what the request carried (explore's item
    /// IDs).
    Computed(Responder),
}

/// A function from a request body to the events of its reply.
type RespondFn = dyn Fn(&Value) -> Vec<Value> + Send + Sync;

/// Computes a reply's events from a request body.
#[derive(Clone)]
pub struct Responder(pub Arc<RespondFn>);

impl Responder {
    pub fn new(respond: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static) -> Self {
        Self(Arc::new(respond))
    }
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder")
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// The text of every input message and tool output, in order.
    pub fn input_texts(&self) -> Vec<String> {
        self.body["input"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item["content"][0]["text"].as_str().or_else(|| item["output"].as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The names of the tools the request offers.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| tools.iter().filter_map(|tool| tool["name"].as_str()).map(str::to_string).collect())
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    /// Streams whose client went away before the server finished them.
    abandoned: usize,
    /// When the first part of each paused reply was handed to the
    /// connection, in order.
    paused_sent: Vec<Instant>,
}

#[derive(Default)]
struct Inner {
    shared: Mutex<Shared>,
    changed: Condvar,
    /// Releases one held reply (a stored permit when none waits yet).
    release: tokio::sync::Notify,
}

impl Inner {
    fn update(&self, change: impl FnOnce(&mut Shared)) {
        if let Ok(mut shared) = self.shared.lock() {
            change(&mut shared);
        }
        self.changed.notify_all();
    }

    fn wait(&self, timeout: Duration, done: impl Fn(&Shared) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let Ok(mut shared) = self.shared.lock() else { return false };
        while !done(&shared) {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            shared = match self.changed.wait_timeout(shared, deadline - now) {
                Ok((guard, _)) => guard,
                Err(_) => return false,
            };
        }
        true
    }
}

/// A server running on a thread of its own, with its own runtime, so that
/// sync and async tests alike can use it; it stops when dropped.
struct ServerThread {
    address: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ServerThread {
    fn spawn<F, Fut>(serve: F) -> Self
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()>,
    {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a test server to 127.0.0.1");
        listener.set_nonblocking(true).expect("make the test listener non-blocking");
        let address = listener.local_addr().expect("the test server has an address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("start the test server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("adopt the test listener");
                tokio::select! {
                    () = serve(listener) => {}
                    _ = stopped => {}
                }
            });
        });
        Self { address, stop: Some(stop) }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The running fake server; it stops when dropped.
pub struct FakeOpenAi {
    thread: ServerThread,
    inner: Arc<Inner>,
}

impl FakeOpenAi {
    /// Starts a server on an ephemeral loopback port.
    pub fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let app = axum::Router::new()
            .route("/v1/responses", axum::routing::post(respond))
            .fallback(|| async { (StatusCode::NOT_FOUND, "the fake server serves POST /v1/responses only") })
            .with_state(Arc::clone(&inner));
        let thread = ServerThread::spawn(move |listener| async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { thread, inner }
    }

    /// The base URL to configure (`OPENAI_BASE_URL`), ending in `/v1`.
    /// Points `env`'s provider at this server, authenticated with `api_key`.
    pub fn configure(&self, env: &mut crate::TestEnv, api_key: &str) {
        env.set_env("OPENAI_API_KEY", api_key);
        env.set_env("OPENAI_BASE_URL", &self.url());
    }

    pub fn url(&self) -> String {
        format!("http://{}/v1", self.thread.address)
    }

    /// The loopback address the server listens on, for a client that
    /// resolves another host name (such as `chatgpt.com`) to it.
    pub fn address(&self) -> std::net::SocketAddr {
        self.thread.address
    }

    /// Queues the reply to the next unanswered request. Requests beyond
    /// the script get HTTP 500.
    pub fn push(&self, reply: Reply) {
        self.inner.update(|shared| shared.replies.push_back(reply));
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.shared.lock().map(|shared| shared.requests.clone()).unwrap_or_default()
    }

    /// Waits until at least `count` requests arrived.
    pub fn wait_for_requests(&self, count: usize, timeout: Duration) -> bool {
        self.inner.wait(timeout, |shared| shared.requests.len() >= count)
    }

    /// Lets the one held reply ([`Reply::Held`]) answer.
    pub fn release(&self) {
        self.inner.release.notify_one();
    }

    /// When the first part of each [`Reply::Paused`] was handed to the
    /// connection, in order.
    pub fn paused_sent_at(&self) -> Vec<Instant> {
        self.inner.shared.lock().map(|shared| shared.paused_sent.clone()).unwrap_or_default()
    }

    /// Waits until at least `count` streams were abandoned by their client.
    pub fn wait_for_abandoned(&self, count: usize, timeout: Duration) -> bool {
        self.inner.wait(timeout, |shared| shared.abandoned >= count)
    }
}

async fn respond(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value =
        serde_json::from_slice(&body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into()));
    let request_body = body.clone();
    let headers = headers
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect();
    let mut reply = None;
    inner.update(|shared| {
        shared.requests.push(RecordedRequest { path: "/v1/responses".into(), headers, body });
        reply = shared.replies.pop_front();
    });
    let reply = reply.unwrap_or_else(|| Reply::Status(500, r#"{"error":{"message":"no scripted reply"}}"#.into()));
    match reply {
        Reply::Status(status, body) => Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap_or_default(),
        Reply::Raw(text) => event_stream(Body::from(text)),
        Reply::Events(events) => event_stream(Body::from(sse(&events, true))),
        Reply::EventsWithHeader(name, value, events) => Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .header(name, value)
            .body(Body::from(sse(&events, true)))
            .unwrap_or_default(),
        Reply::Computed(responder) => event_stream(Body::from(sse(&(responder.0)(&request_body), true))),
        Reply::Held(events) => {
            inner.release.notified().await;
            event_stream(Body::from(sse(&events, true)))
        }
        Reply::Paused(first, rest) => {
            let first = Bytes::from(sse(&first, false));
            let rest = Bytes::from(sse(&rest, true));
            let stream = futures_util::stream::unfold(0u8, move |part| {
                let (inner, first, rest) = (Arc::clone(&inner), first.clone(), rest.clone());
                async move {
                    match part {
                        0 => {
                            inner.update(|shared| shared.paused_sent.push(Instant::now()));
                            Some((Ok::<_, std::io::Error>(first), 1))
                        }
                        1 => {
                            inner.release.notified().await;
                            Some((Ok(rest), 2))
                        }
                        _ => None,
                    }
                }
            });
            event_stream(Body::from_stream(stream))
        }
        Reply::EventsThenAbort(events) => {
            // The padding (an SSE comment) overflows the server's write
            // buffer, so the head and the events reach the client before
            // the abort does.
            let padding = format!(": {}\n\n", "x".repeat(1 << 20));
            let chunks: Vec<Result<Bytes, std::io::Error>> =
                vec![Ok(Bytes::from(sse(&events, false) + &padding)), Err(std::io::Error::other("scripted abort"))];
            event_stream(Body::from_stream(futures_util::stream::iter(chunks)))
        }
        Reply::Repeat(text) => {
            let guard = AbandonGuard(inner);
            let chunk = Bytes::from(text);
            let endless = futures_util::stream::unfold(guard, move |guard| {
                let chunk = chunk.clone();
                async move { Some((Ok::<_, std::io::Error>(chunk), guard)) }
            });
            event_stream(Body::from_stream(endless))
        }
        Reply::EventsThenHang(events) => {
            let guard = AbandonGuard(inner);
            let first = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(Bytes::from(sse(&events, false)))]);
            let hang = futures_util::stream::unfold(guard, |guard| async move {
                std::future::pending::<()>().await;
                Some((Ok(Bytes::new()), guard))
            });
            event_stream(Body::from_stream(futures_util::StreamExt::chain(first, hang)))
        }
    }
}

/// Counts a hanging stream as abandoned when the server drops it, which
/// happens when its client goes away.
struct AbandonGuard(Arc<Inner>);

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        self.0.update(|shared| shared.abandoned += 1);
    }
}

fn event_stream(body: Body) -> Response {
    Response::builder().status(200).header("content-type", "text/event-stream").body(body).unwrap_or_default()
}

/// The SSE text of `events`, optionally closed with `data: [DONE]`.
pub fn sse(events: &[Value], done: bool) -> String {
    let mut text: String = events.iter().map(|event| format!("data: {event}\n\n")).collect();
    if done {
        text.push_str("data: [DONE]\n\n");
    }
    text
}

/// Builders of Responses stream events.
pub mod events {
    use serde_json::{Value, json};

    /// The usage object of a completed response.
    pub fn usage(input: u64, cached: u64, output: u64) -> Value {
        json!({
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + output,
        })
    }

    /// `response.completed` with these output items and usage.
    pub fn completed(id: &str, output: Vec<Value>, usage: Value) -> Value {
        json!({
            "type": "response.completed",
            "sequence_number": 99,
            "response": {"id": id, "object": "response", "status": "completed", "output": output, "usage": usage},
        })
    }

    /// An assistant message output item.
    pub fn message(text: &str) -> Value {
        json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]})
    }

    /// A function call output item.
    pub fn function_call(call_id: &str, name: &str, arguments: &str) -> Value {
        json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": name,
               "arguments": arguments, "status": "completed"})
    }

    /// A reasoning output item carrying encrypted content.
    pub fn reasoning(encrypted: &str) -> Value {
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": encrypted})
    }

    /// A full stream answering with `text`: a created event, text
    /// deltas, the finished item, and the completed response.
    pub fn text_reply(text: &str, usage: Value) -> Vec<Value> {
        let middle = text.len() / 2;
        let split = (0..=middle).rev().find(|index| text.is_char_boundary(*index)).unwrap_or(0);
        vec![
            json!({"type": "response.created", "response": {"id": "resp_text", "status": "in_progress"}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "msg_1",
                   "delta": &text[..split]}),
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "msg_1",
                   "delta": &text[split..]}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": message(text)}),
            completed("resp_text", vec![message(text)], usage),
        ]
    }

    /// A stream asking for these calls `(call_id, name, arguments)`.
    pub fn tool_calls(calls: &[(&str, &str, &str)], usage: Value) -> Vec<Value> {
        let items: Vec<Value> = calls.iter().map(|(id, name, args)| function_call(id, name, args)).collect();
        let mut events: Vec<Value> = items
            .iter()
            .enumerate()
            .map(|(index, item)| json!({"type": "response.output_item.done", "output_index": index, "item": item}))
            .collect();
        events.push(completed("resp_tools", items, usage));
        events
    }
}

/// A cleartext HTTP/2 server that answers every request with status 200,
/// one event, and then a stream reset with a chosen error code; or, when
/// scripted, with a complete stream. For retry-classification tests.
pub struct ResettingServer {
    thread: ServerThread,
    inner: Arc<Inner>,
}

/// What [`ResettingServer`] does with one request.
#[derive(Debug, Clone)]
pub enum ResetReply {
    /// Reset the stream with this HTTP/2 error code after one event.
    Reset(u32),
    /// Answer with these events, completely.
    Events(Vec<Value>),
}

impl ResettingServer {
    pub fn start(script: Vec<ResetReply>) -> Self {
        let inner = Arc::new(Inner::default());
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let server_inner = Arc::clone(&inner);
        let thread = ServerThread::spawn(move |listener| async move {
            while let Ok((socket, _)) = listener.accept().await {
                let inner = Arc::clone(&server_inner);
                let script = Arc::clone(&script);
                tokio::spawn(async move {
                    let Ok(mut connection) = h2::server::handshake(socket).await else { return };
                    while let Some(Ok((request, respond))) = connection.accept().await {
                        tokio::spawn(answer_with_reset(Arc::clone(&inner), Arc::clone(&script), request, respond));
                    }
                });
            }
        });
        Self { thread, inner }
    }

    /// The base URL, ending in `/v1`; clients must use HTTP/2 prior knowledge.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.thread.address)
    }

    pub fn request_count(&self) -> usize {
        self.inner.shared.lock().map(|shared| shared.requests.len()).unwrap_or_default()
    }
}

async fn answer_with_reset(
    inner: Arc<Inner>,
    script: Arc<Mutex<VecDeque<ResetReply>>>,
    request: axum::http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let mut body = request.into_body();
    let mut bytes = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    inner.update(|shared| {
        shared.requests.push(RecordedRequest { path: "/v1/responses".into(), headers: BTreeMap::new(), body })
    });
    let reply = script.lock().ok().and_then(|mut s| s.pop_front()).unwrap_or(ResetReply::Reset(2));
    let response = axum::http::Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(())
        .unwrap_or_default();
    let Ok(mut stream) = respond.send_response(response, false) else { return };
    match reply {
        ResetReply::Reset(code) => {
            let first = sse(&[json!({"type": "response.created", "response": {}})], false);
            let _ = stream.send_data(Bytes::from(first), false);
            stream.send_reset(h2::Reason::from(code));
        }
        ResetReply::Events(events) => {
            let _ = stream.send_data(Bytes::from(sse(&events, true)), true);
        }
    }
}

//! The OpenAI Responses adapter: the only module that knows the wire.
//!
//! The agent loop speaks in domain values ([`ModelRequest`], [`Item`],
//! [`ModelResponse`]); this module turns them into a streaming
//! `POST {base}/responses` request (`store: false`, strict function tools,
//! request-scoped `parallel_tool_calls`, reasoning, service tier, text
//! format, include list, prompt-cache fields, ChatGPT routing headers),
//! accumulates the server-sent events into one response within the
//! stream's bounds ([`StreamLimits`]: one line, one event, one response,
//! and the silence allowed between chunks), retries exactly
//! once when a stream breaks in a way an equivalent request can fix, and
//! unwraps provider error bodies into their messages. Credentials stay in
//! [`config::Secret`] and never reach an error, a trace or a log.
//!
//! Every request body is built by [`Provider::request_body`], which passes
//! its instructions and input through the provider's [`Redactor`] (on
//! unless a command turns it off): the last step before the wire, so no
//! new tool or context can send a secret past it.

pub mod config;
mod error_body;
pub mod network;
mod retry;
mod sse;
mod stream;
mod wire;

pub use config::{ConfigError, Credentials, ProviderConfig, ProviderFlags, Secret, StreamLimits};
pub use error_body::readable_error_body;
pub use gitagent_redact::{self as redact, Redactor};
pub use network::{ClientKind, HttpClients, NetworkError, NetworkSettings};
pub use retry::{RetryReason, StreamBreak, retry_reason};

use futures_util::StreamExt;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Who speaks in a message item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Developer,
    User,
    Assistant,
}

/// A function call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCall {
    pub call_id: String,
    pub name: String,
    /// The JSON arguments exactly as the model wrote them.
    pub arguments: String,
}

/// One item of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Message {
        role: Role,
        text: String,
        /// Marks the message as the end of a reusable prefix: sent as an
        /// explicit prompt-cache breakpoint where the endpoint and model
        /// support one (see [`RunOptions::prompt_cache_key`]), ignored
        /// elsewhere. Kept in the history, so forked and continued
        /// conversations resend the same markers.
        cache_breakpoint: bool,
    },
    FunctionCall(FunctionCall),
    FunctionCallOutput {
        call_id: String,
        output: String,
    },
    /// Provider output (reasoning, messages, calls) replayed as it came,
    /// so a continuation is exactly what the model produced.
    Replay(ReplayItem),
}

impl Item {
    pub fn developer(text: impl Into<String>) -> Self {
        Self::Message { role: Role::Developer, text: text.into(), cache_breakpoint: false }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::Message { role: Role::User, text: text.into(), cache_breakpoint: false }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Message { role: Role::Assistant, text: text.into(), cache_breakpoint: false }
    }

    /// This item marked as a prompt-cache breakpoint; only developer and
    /// user messages can carry one, other items are returned unchanged.
    pub fn with_cache_breakpoint(self) -> Self {
        match self {
            Self::Message { role, text, .. } if role != Role::Assistant => {
                Self::Message { role, text, cache_breakpoint: true }
            }
            other => other,
        }
    }

    /// The call this item makes, when it is a function call (replayed or not).
    pub fn function_call(&self) -> Option<FunctionCall> {
        match self {
            Self::FunctionCall(call) => Some(call.clone()),
            Self::Replay(item) => item.function_call(),
            _ => None,
        }
    }
}

/// The items of a conversation as JSON values a task record can keep: the
/// wire shapes, with cache breakpoints kept whatever the endpoint.
pub fn items_to_json(items: &[Item]) -> Vec<serde_json::Value> {
    items.iter().map(|item| wire::encode_item(item, true)).collect()
}

/// Items read back from [`items_to_json`]; `None` when a value is not an
/// item this adapter wrote.
pub fn items_from_json(values: &[serde_json::Value]) -> Option<Vec<Item>> {
    values.iter().map(wire::decode_item).collect()
}

/// The items another model can continue from: a forked conversation keeps
/// messages, function calls and their exact outputs, but drops reasoning
/// and hosted search items, which only the model that produced them reads.
pub fn portable_items(items: &[Item]) -> Vec<Item> {
    items
        .iter()
        .filter(|item| match item {
            Item::Replay(ReplayItem(value)) => !matches!(value["type"].as_str(), Some("reasoning" | "web_search_call")),
            _ => true,
        })
        .cloned()
        .collect()
}

/// An output item of the provider, opaque outside this module.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayItem(serde_json::Value);

impl ReplayItem {
    fn function_call(&self) -> Option<FunctionCall> {
        wire::function_call_of(&self.0)
    }
}

/// A strict function tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A strict JSON schema (`additionalProperties: false`, every
    /// property required).
    pub parameters: serde_json::Value,
}

/// Provider-hosted web search offered beside the function tools. Hosted
/// calls run on the provider's side and never count against the loop's
/// local tool budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostedSearch {
    /// `max_tool_calls` of one response; `None` sends no cap.
    pub max_calls: Option<u32>,
}

/// A strict JSON schema the final text must follow.
#[derive(Debug, Clone, PartialEq)]
pub struct TextFormat {
    pub name: String,
    pub description: Option<String>,
    pub schema: serde_json::Value,
}

/// One model request of the agent loop.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRequest {
    pub instructions: String,
    pub input: Vec<Item>,
    pub tools: Vec<ToolSpec>,
    /// Whether the model may ask for several calls at once; sent only
    /// when the request offers tools.
    pub parallel_tool_calls: bool,
    pub text_format: Option<TextFormat>,
    /// Hosted web search for this request; `None` offers none (forced
    /// finalization, repair, or after the provider rejected it).
    pub web_search: Option<HostedSearch>,
}

/// Options that hold for every request of one command run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// `reasoning.effort`: low, medium, high or xhigh.
    pub reasoning_effort: Option<String>,
    /// `reasoning.summary`, where a task asks for summaries.
    pub reasoning_summary: Option<String>,
    /// `service_tier`: priority for `--fast`.
    pub service_tier: Option<String>,
    /// A stable key that lets the provider reuse cached prompt prefixes
    /// (one per task tree). Sent to the official OpenAI and ChatGPT
    /// endpoints only, never to a custom one. With it, GPT-5.6-family
    /// models on the OpenAI API also get explicit-only cache mode and a
    /// breakpoint on every marked message ([`Item::with_cache_breakpoint`]);
    /// the ChatGPT endpoint gets it as its session and thread routing
    /// identity instead, without breakpoints.
    pub prompt_cache_key: Option<String>,
    /// The `x-codex-turn-state` a previous run of the same cache lineage
    /// captured ([`Provider::turn_state`]), replayed from the first
    /// request on; used on the ChatGPT endpoint only.
    pub turn_state: Option<String>,
}

/// Token counts of one response; zero where the provider gave none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_input_tokens += other.cache_write_input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// One completed model response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    pub id: String,
    /// The finish state the provider reported (`completed`).
    pub status: String,
    /// The final text of the assistant message items, concatenated.
    pub text: String,
    /// Function calls in provider order.
    pub tool_calls: Vec<FunctionCall>,
    /// The output items to append before the call outputs, in provider
    /// order.
    pub continuation: Vec<Item>,
    pub usage: Usage,
}

/// Things worth tracing while a request streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamNotice {
    /// The first attempt broke; an equivalent request follows.
    Retrying { reason: RetryReason, first_failure: String },
    /// A piece of a reasoning summary.
    ReasoningSummary { attempt: u32, delta: String },
    /// A piece of the answer text, as the model writes it (the response's
    /// final text is what counts; this is for showing it live).
    OutputText { attempt: u32, delta: String },
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the provider answered HTTP {status} for model {model}: {message}{hint}")]
    Http { status: u16, model: String, message: String, hint: &'static str },
    #[error("cannot reach the provider at {endpoint}: {message}")]
    Transport { endpoint: String, message: String, brk: Option<StreamBreak> },
    #[error("the provider stream broke: {0}")]
    Stream(StreamBreak),
    #[error("the provider reported a failure for model {model}: {message}")]
    Failed { model: String, message: String },
    #[error("the model {model} stopped before finishing ({reason})\nhint: retry, or ask for less with --append-prompt")]
    Incomplete { model: String, reason: String },
    #[error("the provider stream failed twice: {first}; then, on the one retry: {retry}")]
    RetryFailed { first: Box<ProviderError>, retry: Box<ProviderError> },
    #[error(
        "the provider sent {cap} over the {limit}-byte cap, so the stream was stopped\n\
         hint: check that --base-url or OPENAI_BASE_URL names an OpenAI Responses endpoint"
    )]
    TooLarge { cap: StreamCap, limit: usize },
    #[error(
        "the provider sent nothing for {} while {waiting}, so the request was stopped\n\
         hint: retry later, or check that the endpoint is up",
        git_agent_shared::cli::format_duration(*idle)
    )]
    Idle { idle: std::time::Duration, waiting: &'static str },
    /// The provider refused hosted web search (the tool, its includes or
    /// its call cap); the caller may repeat the request without it.
    #[error("the provider does not support hosted web search for model {model}: {reason}")]
    HostedSearchRejected { model: String, reason: &'static str },
    #[error("the request was cancelled")]
    Cancelled,
    #[error(transparent)]
    Network(#[from] NetworkError),
}

/// Which bound of a response stream a provider broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamCap {
    /// One line of the event stream.
    Line,
    /// The joined data of one event.
    Event,
    /// The whole response body.
    Response,
}

impl std::fmt::Display for StreamCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Line => "one event-stream line",
            Self::Event => "one event",
            Self::Response => "a whole response",
        })
    }
}

impl ProviderError {
    /// Why an equivalent request may succeed, when it may.
    fn retry_reason(&self) -> Option<RetryReason> {
        match self {
            Self::Stream(brk) => retry_reason(brk),
            Self::Transport { brk: Some(brk), .. } => retry_reason(brk),
            _ => None,
        }
    }
}

/// Where a request goes, which decides the optional wire fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndpointKind {
    OpenAi,
    ChatGpt,
    Custom,
}

/// A Responses client for one command run.
pub struct Provider {
    http: reqwest::Client,
    config: ProviderConfig,
    options: RunOptions,
    endpoint: EndpointKind,
    /// The Codex turn identity shared by every request of this run.
    turn_id: String,
    /// The opaque `x-codex-turn-state` the ChatGPT backend hands out for
    /// sticky routing; replayed on later requests.
    turn_state: Mutex<Option<String>>,
    /// What every request body passes through.
    redactor: Redactor,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("config", &self.config).field("options", &self.options).finish()
    }
}

impl Provider {
    /// A provider with a client of its own.
    pub fn new(config: ProviderConfig, options: RunOptions) -> Result<Self, ProviderError> {
        let http = network::build_client(&config.network, config.client_kind())?;
        Ok(Self::with_client(http, config, options))
    }

    /// A provider on the shared client its configuration selects.
    pub async fn shared(
        clients: &HttpClients,
        config: ProviderConfig,
        options: RunOptions,
    ) -> Result<Self, ProviderError> {
        let http = clients.client(&config.network, config.client_kind()).await?;
        Ok(Self::with_client(http, config, options))
    }

    /// A provider on a given client.
    pub fn with_client(http: reqwest::Client, config: ProviderConfig, options: RunOptions) -> Self {
        let endpoint = endpoint_kind(&config);
        let turn_state = Mutex::new(options.turn_state.clone());
        Self { http, config, options, endpoint, turn_id: random_id(), turn_state, redactor: Redactor::default() }
    }

    /// This provider with `redactor` (the command's choices and ledger)
    /// instead of the default one.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// The redactor request bodies pass through; the agent loop uses it on
    /// tool outputs and first items, so traces and records hold the
    /// redacted text too.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// A provider for another conversation of the same inspection (a
    /// branch child, or a continued leaf): the same client, endpoint,
    /// credentials, cache key and turn identity, with its own model and
    /// reasoning effort, seeded with `turn_state` (an immediate child
    /// replays its parent's).
    pub fn fork(&self, model: &str, reasoning_effort: &str, turn_state: Option<String>) -> Self {
        let mut config = self.config.clone();
        config.model = model.to_string();
        let mut options = self.options.clone();
        options.reasoning_effort = Some(reasoning_effort.to_string());
        options.turn_state = turn_state;
        let turn_state = Mutex::new(options.turn_state.clone());
        Self {
            http: self.http.clone(),
            config,
            options,
            endpoint: self.endpoint,
            turn_id: self.turn_id.clone(),
            turn_state,
            redactor: self.redactor.clone(),
        }
    }

    /// Whether requests authenticate with a ChatGPT sign-in (rather than
    /// an API key); hosted search is uncapped by default there.
    pub fn chatgpt_auth(&self) -> bool {
        matches!(self.config.credentials, Credentials::ChatGpt { .. })
    }

    /// The latest `x-codex-turn-state` the ChatGPT endpoint handed out (or
    /// the seeded one), for a record that a context-preserving follow-up
    /// continues from.
    pub fn turn_state(&self) -> Option<String> {
        self.turn_state.lock().ok().and_then(|state| state.clone())
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// The JSON body a request is sent as; the loop uses its size for
    /// the context budget and tests compare it with golden files.
    /// Its instructions and input are redacted here, whatever built them.
    pub fn request_body(&self, request: &ModelRequest) -> serde_json::Value {
        let mut body = wire::encode_request(&self.config.model, &self.options, self.endpoint, request);
        for key in ["instructions", "input"] {
            if let Some(value) = body.get_mut(key) {
                self.redactor.redact_json(value);
            }
        }
        body
    }

    /// Sends `request` and returns the completed response. A broken stream
    /// gets one equivalent retry with a fresh accumulator, unless
    /// `cancel` fired; `notice` hears about retries and reasoning summaries.
    pub async fn respond(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
        notice: &(dyn Fn(StreamNotice) + Send + Sync),
    ) -> Result<ModelResponse, ProviderError> {
        let body = self.request_body(request);
        let first = match self.attempt(&body, 1, cancel, notice).await {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        let Some(reason) = first.retry_reason() else { return Err(first) };
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        notice(StreamNotice::Retrying { reason, first_failure: first.to_string() });
        match self.attempt(&body, 2, cancel, notice).await {
            Ok(response) => Ok(response),
            Err(ProviderError::Cancelled) => Err(ProviderError::Cancelled),
            Err(retry) => Err(ProviderError::RetryFailed { first: Box::new(first), retry: Box::new(retry) }),
        }
    }

    async fn attempt(
        &self,
        body: &serde_json::Value,
        attempt: u32,
        cancel: &CancellationToken,
        notice: &(dyn Fn(StreamNotice) + Send + Sync),
    ) -> Result<ModelResponse, ProviderError> {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
            result = self.stream_once(body, attempt, notice) => result,
        }
    }

    async fn stream_once(
        &self,
        body: &serde_json::Value,
        attempt: u32,
        notice: &(dyn Fn(StreamNotice) + Send + Sync),
    ) -> Result<ModelResponse, ProviderError> {
        let limits = &self.config.stream_limits;
        let idle = |waiting| ProviderError::Idle { idle: limits.read_idle, waiting };
        let url = format!("{}/responses", self.config.base_url);
        let mut request =
            self.http.post(&url).timeout(self.config.timeout).header("accept", "text/event-stream").json(body);
        request = self.authenticate(request);
        let response = tokio::time::timeout(limits.read_idle, request.send())
            .await
            .map_err(|_| idle("waiting for the response headers"))?
            .map_err(|error| self.transport_error(error))?;
        self.remember_turn_state(response.headers());
        let status = response.status();
        if !status.is_success() {
            let text = read_bounded_text(response, limits.read_idle).await;
            if let Some(reason) = wire::hosted_search_rejection(status.as_u16(), &text, body, self.chatgpt_auth()) {
                return Err(ProviderError::HostedSearchRejected { model: self.config.model.clone(), reason });
            }
            return Err(wire::http_error(status.as_u16(), &self.config.model, &text));
        }
        let mut accumulator = stream::Accumulator::new(&self.config.model);
        let mut decoder = sse::SseDecoder::new(limits.max_line_bytes, limits.max_event_bytes);
        let mut received = 0usize;
        let mut chunks = response.bytes_stream();
        loop {
            let next = tokio::time::timeout(limits.read_idle, chunks.next())
                .await
                .map_err(|_| idle("streaming the response"))?;
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|error| self.transport_error(error))?;
            received = received.saturating_add(chunk.len());
            if received > limits.max_response_bytes {
                return Err(ProviderError::TooLarge { cap: StreamCap::Response, limit: limits.max_response_bytes });
            }
            let events = decoder.feed(&chunk).map_err(|sse::CapExceeded(cap)| ProviderError::TooLarge {
                cap,
                limit: match cap {
                    StreamCap::Line => limits.max_line_bytes,
                    StreamCap::Event => limits.max_event_bytes,
                    StreamCap::Response => limits.max_response_bytes,
                },
            })?;
            for data in events {
                match accumulator.apply(&data)? {
                    Some(stream::Streamed::Text(delta)) => notice(StreamNotice::OutputText { attempt, delta }),
                    Some(stream::Streamed::ReasoningSummary(delta)) => {
                        notice(StreamNotice::ReasoningSummary { attempt, delta })
                    }
                    None => {}
                }
                if accumulator.is_finished() {
                    return accumulator.finish();
                }
            }
        }
        accumulator.finish()
    }

    fn authenticate(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.credentials {
            Credentials::ApiKey(key) => request.bearer_auth(key.expose()),
            Credentials::ChatGpt { access_token, account_id } => {
                let mut request = request
                    .bearer_auth(access_token.expose())
                    .header("ChatGPT-Account-ID", account_id)
                    .header("originator", CODEX_CLIENT)
                    .header("User-Agent", CODEX_CLIENT);
                if self.endpoint == EndpointKind::ChatGpt
                    && let Some(key) = &self.options.prompt_cache_key
                {
                    let metadata = serde_json::json!({"session_id": key, "thread_id": key, "turn_id": self.turn_id});
                    request = request
                        .header("session-id", key)
                        .header("thread-id", key)
                        .header("x-codex-turn-metadata", metadata.to_string());
                }
                let state = self.turn_state.lock().ok().and_then(|state| state.clone());
                if self.endpoint == EndpointKind::ChatGpt
                    && let Some(state) = state
                {
                    request = request.header(TURN_STATE_HEADER, state);
                }
                request
            }
        }
    }

    fn remember_turn_state(&self, headers: &reqwest::header::HeaderMap) {
        if self.endpoint != EndpointKind::ChatGpt {
            return;
        }
        let state = headers.get(TURN_STATE_HEADER).and_then(|value| value.to_str().ok()).map(str::trim);
        if let (Some(state), Ok(mut slot)) = (state.filter(|state| !state.is_empty()), self.turn_state.lock()) {
            *slot = Some(state.to_string());
        }
    }

    fn transport_error(&self, error: reqwest::Error) -> ProviderError {
        let brk = retry::classify_transport(&error);
        // reqwest keeps the reason (connect, TLS, timeout) in its causes.
        let message = git_agent_shared::error_chain::render(&error.without_url());
        ProviderError::Transport { endpoint: self.config.base_url.clone(), message, brk }
    }
}

/// The client identity the ChatGPT backend routes Codex traffic by.
const CODEX_CLIENT: &str = "codex_cli_rs";
const TURN_STATE_HEADER: &str = "x-codex-turn-state";

fn endpoint_kind(config: &ProviderConfig) -> EndpointKind {
    let host = reqwest::Url::parse(&config.base_url).ok().and_then(|url| url.host_str().map(str::to_ascii_lowercase));
    match (host.as_deref(), &config.credentials) {
        (Some("api.openai.com"), _) => EndpointKind::OpenAi,
        (Some("chatgpt.com"), Credentials::ChatGpt { .. }) => EndpointKind::ChatGpt,
        _ => EndpointKind::Custom,
    }
}

/// At most 64 KiB of an error body, lossily decoded; what arrived before
/// a silence of `read_idle` when the body stalls.
async fn read_bounded_text(response: reqwest::Response, read_idle: std::time::Duration) -> String {
    const LIMIT: usize = 64 * 1024;
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout(read_idle, chunks.next()).await {
        body.extend_from_slice(&chunk[..chunk.len().min(LIMIT - body.len())]);
        if body.len() >= LIMIT {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// A random identifier (hex), for turn identities and call ids.
pub fn random_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher
        .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    let high = hasher.finish();
    let low = std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!("{high:016x}{low:016x}")
}

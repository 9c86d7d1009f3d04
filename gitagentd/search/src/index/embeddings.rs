//! The embeddings client: `POST <base>/embeddings` (OpenAI-compatible,
//! `encoding_format`, `dimensions`), batched by input count and by total
//! characters, with a bounded number of requests in flight.
//!
//! Vectors are asked for as base64 of little-endian `f32`s: a quarter of
//! the bytes of decimal numbers, decoded without parsing a number per
//! dimension (with an instant endpoint, parsing numbers was a tenth of a
//! cold build's CPU). A reply with number lists is read as well (servers
//! that ignore the field); an endpoint that rejects base64 is asked for
//! numbers from then on.
//!
//! A batch the endpoint rejects as a bad request is split in halves and
//! retried, so one oversized input cannot sink its neighbours; rate limits,
//! server errors and connection failures are retried twice with a short
//! backoff. Anything else fails the search clearly: search has no lexical
//! fallback. The API key goes only into the `Authorization` header; it is
//! never logged or put into an error.
//!
//! Every input of a remote request passes through the settings'
//! redactor first.
//!
//! With the local backend ([`Backend::Local`]) the same calls run the
//! in-process model ([`gitagent_embed::LocalModel`]) on the blocking pool
//! instead, one batch at a time, stopping between batches when the search
//! is cancelled.

use git_agent_shared::{Secret, giturl};
use gitagent_embed::LocalModel;
use gitagent_embed::download::ModelSpec;
use gitagent_provider::{ClientKind, HttpClients, NetworkError};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where a search's vectors come from.
#[derive(Clone, Debug)]
pub enum Backend {
    /// An OpenAI-compatible `/embeddings` endpoint.
    Remote,
    /// The model in this process; `model` is set once it is loaded (see
    /// [`crate::index::local_model`]).
    Local { source: LocalSource, model: Option<Arc<LocalModel>> },
}

impl Backend {
    /// `local` or `remote`, as search's JSON and `--debug` name it.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Remote => "remote",
            Backend::Local { .. } => "local",
        }
    }
}

/// Where the local model's files are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalSource {
    /// A folder the user named (`search.model_dir`, `GIT_AGENT_MODEL_DIR`).
    Folder(PathBuf),
    /// The pinned default model, downloaded once from `hub` into
    /// `models_dir`.
    Pinned { spec: ModelSpec, models_dir: PathBuf, hub: String },
}

/// Resolved embedding configuration for one search.
#[derive(Clone)]
pub struct EmbeddingSettings {
    pub api_key: Secret,
    pub base_url: String,
    pub model: String,
    pub dimensions: usize,
    pub max_input_chars: usize,
    pub batch_inputs: usize,
    pub batch_max_chars: usize,
    pub concurrency: usize,
    pub timeout: Duration,
    /// The caller's proxies and CA locations, which select the client.
    pub network: gitagent_provider::NetworkSettings,
    pub backend: Backend,
    /// What every input passes through before it is sent to a remote
    /// endpoint (chunks are redacted when read, queries here).
    pub redactor: gitagent_provider::Redactor,
}

impl std::fmt::Debug for EmbeddingSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingSettings")
            .field("api_key", &self.api_key)
            .field("base_url", &giturl::sanitize(&self.base_url))
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .field("max_input_chars", &self.max_input_chars)
            .field("batch_inputs", &self.batch_inputs)
            .field("batch_max_chars", &self.batch_max_chars)
            .field("concurrency", &self.concurrency)
            .field("timeout", &self.timeout)
            .field("network", &self.network)
            .field("backend", &self.backend)
            .finish()
    }
}

impl EmbeddingSettings {
    fn endpoint(&self) -> String {
        format!("{}/embeddings", self.base_url.trim_end_matches('/'))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    #[error("the embeddings request to {url} failed: {message}{hint}")]
    Request { url: String, message: String, hint: String },
    #[error("the embeddings endpoint {url} returned an invalid response: {reason}")]
    Response { url: String, reason: String },
    #[error(
        "the embeddings endpoint {url} returned {got}-dimensional vectors, but {want} were requested\nhint: choose dimensions the model supports with --embedding-dimensions or OPENAI_EMBEDDING_DIMENSIONS"
    )]
    Dimensions { url: String, got: usize, want: usize },
    /// The reader or a request task stopped; its error is written out.
    #[error("cannot set up the embeddings client: {0}")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Network(#[from] NetworkError),
    #[error(transparent)]
    Local(#[from] gitagent_embed::EmbedError),
    #[error("the local embedding model stopped unexpectedly")]
    LocalStopped(#[source] gitagent_runtime::blocking::BlockingError),
    #[error("the search was cancelled")]
    Cancelled,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: Vec<std::borrow::Cow<'a, str>>,
    encoding_format: Encoding,
    dimensions: usize,
}

/// How the vectors of a reply are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Encoding {
    Base64,
    Float,
}

/// The endpoints (full URLs, kept in memory only) that rejected
/// `encoding_format: base64`, asked for numbers for the rest of the
/// daemon's life so that no later request pays the refusal again.
static REFUSE_BASE64: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

fn encoding_for(endpoint: &str) -> Encoding {
    let refusing = REFUSE_BASE64.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if refusing.contains(endpoint) { Encoding::Float } else { Encoding::Base64 }
}

/// Whether an error reply to a base64 request blames the encoding.
fn blames_the_encoding(detail: &str) -> bool {
    let detail = detail.to_ascii_lowercase();
    detail.contains("encoding_format") || detail.contains("base64")
}

#[derive(Deserialize)]
struct Reply {
    data: Vec<ReplyItem>,
}

#[derive(Deserialize)]
struct ReplyItem {
    index: usize,
    #[serde(deserialize_with = "vector")]
    embedding: Vec<f32>,
}

/// An embedding as base64 of little-endian `f32`s, or as a list of
/// numbers.
fn vector<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<f32>, D::Error> {
    use serde::de::{Error, SeqAccess, Visitor};

    struct Vector;

    impl<'de> Visitor<'de> for Vector {
        type Value = Vec<f32>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a list of numbers or base64 of little-endian float32 values")
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<Vec<f32>, E> {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|error| E::custom(format!("a base64 embedding does not decode: {error}")))?;
            if bytes.len() % 4 != 0 {
                return Err(E::custom(format!(
                    "a base64 embedding has {} bytes, not a whole number of float32 values",
                    bytes.len()
                )));
            }
            let values: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|value| f32::from_le_bytes([value[0], value[1], value[2], value[3]]))
                .collect();
            if values.iter().any(|value| !value.is_finite()) {
                return Err(E::custom("a base64 embedding holds a value that is not a finite number"));
            }
            Ok(values)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Vec<f32>, A::Error> {
            let mut values = Vec::with_capacity(items.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(value) = items.next_element::<f64>()? {
                values.push(value as f32);
            }
            Ok(values)
        }
    }

    deserializer.deserialize_any(Vector)
}

/// The future of one (possibly split) embeddings request.
type EmbedFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Vec<f32>>, EmbeddingError>> + Send + 'a>>;

/// Shared HTTP connection pool for embeddings requests.
#[derive(Clone)]
pub struct EmbeddingsClient {
    http: reqwest::Client,
    /// Hears one line per retried request, for the user's stderr.
    on_retry: Option<Arc<dyn Fn(String) + Send + Sync>>,
}

/// The outcome of one attempt.
enum Attempt {
    Done(Vec<Vec<f32>>),
    /// The endpoint rejected the input itself: worth splitting.
    Rejected(EmbeddingError),
    /// The endpoint rejected base64 vectors: ask again, for numbers.
    Reencode,
    /// Temporary: worth retrying.
    Transient(EmbeddingError),
    Fatal(EmbeddingError),
}

impl EmbeddingsClient {
    /// A client for the requests of `settings`, from the daemon's cached
    /// HTTP clients (keyed by the caller's network settings).
    pub async fn new(clients: &HttpClients, settings: &EmbeddingSettings) -> Result<Self, EmbeddingError> {
        let http = clients.client(&settings.network, ClientKind::Embeddings).await?;
        Ok(Self { http, on_retry: None })
    }

    /// The client, saying each retry through `on_retry`.
    pub fn with_retry_notice(mut self, on_retry: impl Fn(String) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(Arc::new(on_retry));
        self
    }

    /// Embeds `inputs` in one request (split on rejection), returning one
    /// vector per input in order.
    pub fn embed<'a>(
        &'a self,
        settings: &'a EmbeddingSettings,
        inputs: &'a [String],
        cancel: &'a CancellationToken,
    ) -> EmbedFuture<'a> {
        Box::pin(async move {
            if let Backend::Local { model, .. } = &settings.backend {
                let Some(model) = model else {
                    return Err(EmbeddingError::Client("the local model was not loaded before embedding".into()));
                };
                return embed_locally(Arc::clone(model), inputs.to_vec(), cancel).await;
            }
            let mut retries = 0;
            loop {
                let attempt = tokio::select! {
                    attempt = self.attempt(settings, inputs) => attempt,
                    _ = cancel.cancelled() => return Err(EmbeddingError::Cancelled),
                };
                match attempt {
                    Attempt::Done(vectors) => return Ok(vectors),
                    Attempt::Reencode => continue,
                    Attempt::Rejected(error) if inputs.len() > 1 => {
                        tracing::debug!(%error, inputs = inputs.len(), "embedding batch rejected; splitting");
                        let middle = inputs.len() / 2;
                        let mut left = self.embed(settings, &inputs[..middle], cancel).await?;
                        let right = self.embed(settings, &inputs[middle..], cancel).await?;
                        left.extend(right);
                        return Ok(left);
                    }
                    Attempt::Transient(error) if retries < 2 => {
                        retries += 1;
                        tracing::debug!(%error, retries, "embedding request failed; retrying");
                        if let Some(on_retry) = &self.on_retry {
                            let reason = error.to_string();
                            let reason = reason.lines().next().unwrap_or_default();
                            on_retry(format!(
                                "warning: the embeddings request failed ({reason}); retrying, attempt {} of 3\n",
                                retries + 1
                            ));
                        }
                        let backoff = Duration::from_millis(250 << retries);
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = cancel.cancelled() => return Err(EmbeddingError::Cancelled),
                        }
                    }
                    Attempt::Rejected(error) | Attempt::Transient(error) | Attempt::Fatal(error) => return Err(error),
                }
            }
        })
    }

    async fn attempt(&self, settings: &EmbeddingSettings, inputs: &[String]) -> Attempt {
        let endpoint = settings.endpoint();
        let url = giturl::sanitize(&endpoint);
        let encoding = encoding_for(&endpoint);
        // The last step before the wire: nothing reaches the endpoint
        // unredacted, whoever built the inputs.
        let body = Request {
            model: &settings.model,
            input: inputs.iter().map(|input| settings.redactor.text(input)).collect(),
            encoding_format: encoding,
            dimensions: settings.dimensions,
        };
        let response = self
            .http
            .post(&endpoint)
            .bearer_auth(settings.api_key.expose())
            .timeout(settings.timeout)
            .json(&body)
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                let message = describe_transport_error(&error);
                let error = EmbeddingError::Request {
                    url,
                    message,
                    hint: "\nhint: check OPENAI_EMBEDDING_BASE_URL (or --base-url); search does not fall back to lexical retrieval"
                        .into(),
                };
                return Attempt::Transient(error);
            }
        };
        let status = response.status();
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(error) => {
                return Attempt::Transient(EmbeddingError::Request {
                    url,
                    message: describe_transport_error(&error),
                    hint: String::new(),
                });
            }
        };
        if !status.is_success() {
            let detail = gitagent_provider::readable_error_body(&String::from_utf8_lossy(&bytes));
            if encoding == Encoding::Base64 && matches!(status.as_u16(), 400 | 422) && blames_the_encoding(&detail) {
                tracing::debug!(%url, "the embeddings endpoint rejects base64 vectors; asking for numbers");
                REFUSE_BASE64.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(endpoint);
                return Attempt::Reencode;
            }
            let message = if detail.is_empty() { status.to_string() } else { format!("{status}: {detail}") };
            let hint = match status.as_u16() {
                401 | 403 => {
                    "\nhint: check OPENAI_EMBEDDING_API_KEY (or OPENAI_API_KEY); the account needs embeddings access"
                }
                404 => {
                    "\nhint: check OPENAI_EMBEDDING_BASE_URL and OPENAI_EMBEDDING_MODEL (or --base-url, --embedding-model)"
                }
                429 => {
                    "\nhint: the embeddings account is rate-limited or out of quota; search does not fall back to lexical retrieval"
                }
                _ => "\nhint: search needs embeddings and does not fall back to lexical retrieval",
            };
            let error = EmbeddingError::Request { url, message, hint: hint.into() };
            return match status.as_u16() {
                429 | 500..=599 => Attempt::Transient(error),
                400 | 413 | 422 => Attempt::Rejected(error),
                _ => Attempt::Fatal(error),
            };
        }
        match decode(&bytes, inputs.len(), settings.dimensions, &url) {
            Ok(vectors) => Attempt::Done(vectors),
            Err(error) => Attempt::Fatal(error),
        }
    }
}

/// Runs the local model over `inputs` on the blocking pool.
async fn embed_locally(
    model: Arc<LocalModel>,
    inputs: Vec<String>,
    cancel: &CancellationToken,
) -> Result<Vec<Vec<f32>>, EmbeddingError> {
    let result = gitagent_runtime::blocking::run("the local embedding model", cancel, move |interrupt| {
        model.embed(&inputs, &|| interrupt.is_raised())
    })
    .await
    .map_err(EmbeddingError::LocalStopped)?;
    match result {
        Err(gitagent_embed::EmbedError::Cancelled) => Err(EmbeddingError::Cancelled),
        other => Ok(other?),
    }
}

fn describe_transport_error(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "transport error"
    };
    // reqwest's message includes the URL; strip it so credentials in a
    // base URL never surface.
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(cause) = source {
        detail = cause.to_string();
        source = cause.source();
    }
    if detail.is_empty() { kind.to_string() } else { format!("{kind}: {detail}") }
}

fn decode(bytes: &[u8], expected: usize, dimensions: usize, url: &str) -> Result<Vec<Vec<f32>>, EmbeddingError> {
    let invalid = |reason: String| EmbeddingError::Response { url: url.to_string(), reason };
    let reply: Reply = serde_json::from_slice(bytes).map_err(|error| invalid(error.to_string()))?;
    if reply.data.len() != expected {
        return Err(invalid(format!("{} vectors for {expected} inputs", reply.data.len())));
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for item in reply.data {
        if item.index >= expected {
            return Err(invalid(format!("index {} out of range", item.index)));
        }
        if item.embedding.is_empty() {
            return Err(invalid(format!("index {} is empty", item.index)));
        }
        if item.embedding.len() != dimensions {
            return Err(EmbeddingError::Dimensions {
                url: url.to_string(),
                got: item.embedding.len(),
                want: dimensions,
            });
        }
        vectors[item.index] = Some(item.embedding);
    }
    vectors
        .into_iter()
        .enumerate()
        .map(|(index, vector)| vector.ok_or_else(|| invalid(format!("missing index {index}"))))
        .collect()
}

/// Groups inputs into request batches: at most `max_inputs` inputs and at
/// most `max_chars` bytes each (a single larger input gets its own batch).
pub fn plan_batches(sizes: &[usize], max_inputs: usize, max_chars: usize) -> Vec<std::ops::Range<usize>> {
    let max_inputs = max_inputs.max(1);
    let mut batches = Vec::new();
    let mut start = 0;
    while start < sizes.len() {
        let mut end = start;
        let mut chars = 0;
        while end < sizes.len() && end - start < max_inputs {
            if end > start && chars + sizes[end] > max_chars {
                break;
            }
            chars += sizes[end];
            end += 1;
        }
        batches.push(start..end);
        start = end;
    }
    batches
}

/// Progress of a multi-batch embedding run, reported after each batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchDone {
    pub done: usize,
    pub total: usize,
    pub elapsed: Duration,
    pub request: Duration,
}

/// Embeds many inputs: batches are planned from `sizes`, their inputs built
/// by `build` only when the batch is sent, at most `settings.concurrency`
/// requests run at once, and `on_batch` sees each finished batch (its
/// range and vectors) in completion order. The first failure cancels the
/// rest.
pub async fn embed_many<B, F>(
    client: &EmbeddingsClient,
    settings: &EmbeddingSettings,
    sizes: &[usize],
    build: B,
    mut on_batch: F,
    cancel: &CancellationToken,
) -> Result<(), EmbeddingError>
where
    B: Fn(std::ops::Range<usize>) -> Vec<String> + Send + Sync + 'static,
    F: FnMut(std::ops::Range<usize>, Vec<Vec<f32>>, BatchDone),
{
    let batches = plan_batches(sizes, settings.batch_inputs, settings.batch_max_chars);
    let total = sizes.len();
    let build = Arc::new(build);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(settings.concurrency.max(1)));
    let local_cancel = cancel.child_token();
    let mut tasks = tokio::task::JoinSet::new();
    for range in batches {
        let client = client.clone();
        let settings = settings.clone();
        let build = Arc::clone(&build);
        let semaphore = Arc::clone(&semaphore);
        let cancel = local_cancel.clone();
        tasks.spawn(async move {
            let _permit = tokio::select! {
                permit = semaphore.acquire_owned() => permit.map_err(|_| EmbeddingError::Cancelled)?,
                _ = cancel.cancelled() => return Err(EmbeddingError::Cancelled),
            };
            let started = Instant::now();
            let build_range = range.clone();
            let inputs =
                gitagent_runtime::blocking::run("the embedding input reader", &cancel, move |_| build(build_range))
                    .await
                    .map_err(|error| EmbeddingError::Client(error.into()))?;
            let vectors = client.embed(&settings, &inputs, &cancel).await?;
            Ok::<_, EmbeddingError>((range, vectors, started.elapsed()))
        });
    }
    let started = Instant::now();
    let mut done = 0;
    let mut failure = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok((range, vectors, request))) => {
                if failure.is_some() {
                    continue;
                }
                done += range.len();
                on_batch(range, vectors, BatchDone { done, total, elapsed: started.elapsed(), request });
            }
            Ok(Err(error)) => {
                local_cancel.cancel();
                if failure.is_none() || matches!(failure, Some(EmbeddingError::Cancelled)) {
                    failure = Some(error);
                }
            }
            Err(error) => {
                local_cancel.cancel();
                failure.get_or_insert(EmbeddingError::Client(error.into()));
            }
        }
    }
    if cancel.is_cancelled() {
        return Err(EmbeddingError::Cancelled);
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// One window's outcome: its keys, vectors and request time.
type WindowDone<K> = Result<(Vec<K>, Vec<Vec<f32>>, Duration), EmbeddingError>;

/// Embeds inputs while they are still being produced: `inputs` delivers
/// `(key, text)` pairs, a producer's batch (one file's) at a time; a window
/// is dispatched as soon as it is complete (`batch_inputs` inputs, or the
/// next input would pass `batch_max_chars`), the final partial window only
/// once the channel closes. At most `settings.concurrency` requests run at
/// once, and a complete window waits for its request slot before the next
/// input is taken, so a slow endpoint holds the producer back (bounded
/// memory) instead of piling up windows. `on_batch` sees each finished
/// window (its keys and vectors) in completion order, with the count
/// received so far as the total, and an empty call (no keys) as each
/// window is sent, for progress. The first failure closes the channel (the
/// producer's next send fails) and cancels the requests in flight.
pub async fn embed_stream<K, F>(
    client: &EmbeddingsClient,
    settings: &EmbeddingSettings,
    mut inputs: tokio::sync::mpsc::Receiver<Vec<(K, String)>>,
    mut on_batch: F,
    cancel: &CancellationToken,
) -> Result<Streamed, EmbeddingError>
where
    K: Send + 'static,
    F: FnMut(Vec<K>, Vec<Vec<f32>>, BatchDone),
{
    let max_inputs = settings.batch_inputs.max(1);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(settings.concurrency.max(1)));
    let local_cancel = cancel.child_token();
    let mut tasks: tokio::task::JoinSet<WindowDone<K>> = tokio::task::JoinSet::new();
    // Received, not yet in a window.
    let mut pending: std::collections::VecDeque<(K, String)> = std::collections::VecDeque::new();
    let mut window: Vec<(K, String)> = Vec::new();
    let mut window_chars = 0;
    // An input that did not fit the window before it: it opens the next.
    let mut carry: Option<(K, String)> = None;
    let mut open = true;
    let mut received = 0;
    let mut done = 0;
    let mut windows = 0;
    let started = Instant::now();
    let mut failure: Option<EmbeddingError> = None;
    loop {
        while carry.is_none() && window.len() < max_inputs {
            let Some((key, text)) = pending.pop_front() else { break };
            if !window.is_empty() && window_chars + text.len() > settings.batch_max_chars {
                carry = Some((key, text));
            } else {
                window_chars += text.len();
                window.push((key, text));
            }
        }
        let drained = !open && pending.is_empty();
        let complete = window.len() >= max_inputs || carry.is_some() || (drained && !window.is_empty());
        if complete && failure.is_none() {
            let permit = tokio::select! {
                permit = Arc::clone(&semaphore).acquire_owned() => permit.map_err(|_| EmbeddingError::Cancelled)?,
                _ = cancel.cancelled() => return Err(EmbeddingError::Cancelled),
            };
            let (keys, texts): (Vec<K>, Vec<String>) = std::mem::take(&mut window).into_iter().unzip();
            window_chars = 0;
            if let Some((key, text)) = carry.take() {
                window_chars = text.len();
                window.push((key, text));
            }
            windows += 1;
            // A progress tick (no keys): the count received so far is known.
            on_batch(
                Vec::new(),
                Vec::new(),
                BatchDone { done, total: received, elapsed: started.elapsed(), request: Duration::ZERO },
            );
            let client = client.clone();
            let settings = settings.clone();
            let cancel = local_cancel.clone();
            tasks.spawn(async move {
                let _permit = permit;
                let started = Instant::now();
                let vectors = client.embed(&settings, &texts, &cancel).await?;
                Ok((keys, vectors, started.elapsed()))
            });
            continue;
        }
        if drained && tasks.is_empty() {
            break;
        }
        tokio::select! {
            next = inputs.recv(), if open && pending.is_empty() && carry.is_none() => match next {
                Some(batch) if failure.is_none() => {
                    received += batch.len();
                    pending.extend(batch);
                }
                // After a failure, what the producer had already sent is
                // dropped.
                Some(_) => {}
                None => open = false,
            },
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                let error = match joined {
                    Ok(Ok((keys, vectors, request))) => {
                        if failure.is_none() {
                            done += keys.len();
                            on_batch(keys, vectors, BatchDone { done, total: received, elapsed: started.elapsed(), request });
                        }
                        None
                    }
                    Ok(Err(error)) => Some(error),
                    Err(error) => Some(EmbeddingError::Client(error.into())),
                };
                if let Some(error) = error {
                    local_cancel.cancel();
                    // The producer's next send fails, and it stops.
                    inputs.close();
                    pending.clear();
                    window.clear();
                    carry = None;
                    if failure.is_none() || matches!(failure, Some(EmbeddingError::Cancelled)) {
                        failure = Some(error);
                    }
                }
            }
            _ = cancel.cancelled() => return Err(EmbeddingError::Cancelled),
        }
    }
    if cancel.is_cancelled() {
        return Err(EmbeddingError::Cancelled);
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(Streamed { inputs: done, windows }),
    }
}

/// What [`embed_stream`] embedded: inputs, in how many windows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Streamed {
    pub inputs: usize,
    pub windows: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_inputs_and_characters() {
        assert_eq!(plan_batches(&[1, 1, 1, 1, 1], 2, 100), vec![0..2, 2..4, 4..5]);
        assert_eq!(plan_batches(&[60, 60, 10, 200, 5], 32, 100), vec![0..1, 1..3, 3..4, 4..5]);
        assert!(plan_batches(&[], 32, 100).is_empty());
    }

    #[test]
    fn urls_lose_credentials_in_messages() {
        assert_eq!(giturl::sanitize("https://user:secret@example.test/v1?key=abc#x"), "https://example.test/v1");
    }

    #[test]
    fn debug_output_redacts_the_key() {
        let settings = EmbeddingSettings {
            api_key: Secret::new("sk-secret"),
            base_url: "https://example.test/v1".into(),
            model: "m".into(),
            dimensions: 3,
            max_input_chars: 10,
            batch_inputs: 1,
            batch_max_chars: 10,
            concurrency: 1,
            timeout: Duration::from_secs(1),
            network: Default::default(),
            backend: Backend::Remote,
            redactor: Default::default(),
        };
        assert!(!format!("{settings:?}").contains("sk-secret"));
    }

    #[test]
    fn responses_are_validated() {
        let ok = br#"{"data":[{"index":1,"embedding":[0.5,0.5]},{"index":0,"embedding":[1,0]}],"model":"m"}"#;
        assert_eq!(decode(ok, 2, 2, "u").unwrap(), vec![vec![1.0, 0.0], vec![0.5, 0.5]]);
        assert!(matches!(decode(ok, 3, 2, "u"), Err(EmbeddingError::Response { .. })));
        assert!(matches!(decode(ok, 2, 3, "u"), Err(EmbeddingError::Dimensions { got: 2, want: 3, .. })));
        assert!(matches!(decode(b"{}", 1, 2, "u"), Err(EmbeddingError::Response { .. })));
    }

    /// Base64 of the little-endian `f32`s of `values`.
    fn base64_of(values: &[f32]) -> String {
        use base64::Engine;
        let bytes: Vec<u8> = values.iter().flat_map(|value| value.to_le_bytes()).collect();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn base64_vectors_decode_to_the_same_values_as_numbers() {
        let values = [0.1f32, -0.25, 3.0e-7, 1.0];
        let numbers = format!(
            r#"{{"data":[{{"index":0,"embedding":[{}]}}]}}"#,
            values.iter().map(|value| value.to_string()).collect::<Vec<_>>().join(",")
        );
        let encoded = format!(r#"{{"data":[{{"index":0,"embedding":"{}"}}]}}"#, base64_of(&values));
        assert_eq!(decode(encoded.as_bytes(), 1, 4, "u").unwrap(), vec![values.to_vec()]);
        assert_eq!(decode(numbers.as_bytes(), 1, 4, "u").unwrap(), decode(encoded.as_bytes(), 1, 4, "u").unwrap());
        // A mixed reply (one server answering both ways) is still read.
        let mixed = format!(
            r#"{{"data":[{{"index":1,"embedding":"{}"}},{{"index":0,"embedding":[1,0]}}]}}"#,
            base64_of(&[0.5, 0.5])
        );
        assert_eq!(decode(mixed.as_bytes(), 2, 2, "u").unwrap(), vec![vec![1.0, 0.0], vec![0.5, 0.5]]);
    }

    #[test]
    fn malformed_base64_vectors_are_invalid_responses() {
        let reply = |embedding: &str| format!(r#"{{"data":[{{"index":0,"embedding":"{embedding}"}}]}}"#);
        let reason = |text: String| match decode(text.as_bytes(), 1, 2, "u") {
            Err(EmbeddingError::Response { reason, .. }) => reason,
            other => panic!("expected an invalid response, got {other:?}"),
        };
        assert!(reason(reply("not base64!")).contains("does not decode"));
        // Six bytes: one float and a half.
        assert!(reason(reply("AAAAAAAA")).contains("6 bytes"));
        assert!(reason(reply(&base64_of(&[f32::NAN, 1.0]))).contains("not a finite number"));
        // A wrong count of floats is a dimension mismatch, as with numbers.
        assert!(matches!(
            decode(reply(&base64_of(&[1.0, 0.0, 0.0])).as_bytes(), 1, 2, "u"),
            Err(EmbeddingError::Dimensions { got: 3, want: 2, .. })
        ));
    }

    /// An endpoint on loopback that answers each input with the vector
    /// `[input's number, 0]` in base64, recording each request's inputs.
    async fn numbering_endpoint() -> (String, Arc<Mutex<Vec<Vec<String>>>>) {
        let requests: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let recorded = Arc::clone(&requests);
        let app = axum::Router::new().route(
            "/v1/embeddings",
            axum::routing::post(move |body: String| {
                let recorded = Arc::clone(&recorded);
                async move {
                    let request: serde_json::Value = serde_json::from_str(&body).unwrap();
                    let inputs: Vec<String> =
                        request["input"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
                    let data: Vec<serde_json::Value> = inputs
                        .iter()
                        .enumerate()
                        .map(|(index, input)| {
                            let number: f32 = input.trim_start_matches('x').parse().unwrap();
                            serde_json::json!({"index": index, "embedding": base64_of(&[number, 0.0])})
                        })
                        .collect();
                    recorded.lock().unwrap().push(inputs);
                    serde_json::json!({"data": data}).to_string()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, requests)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streamed_batches_fill_whole_windows_across_files() {
        let (base_url, requests) = numbering_endpoint().await;
        let settings = EmbeddingSettings {
            api_key: Secret::new("k"),
            base_url,
            model: "m".into(),
            dimensions: 2,
            max_input_chars: 100,
            batch_inputs: 4,
            // Room for four inputs of up to 3 characters; an input of 38
            // fits beside none.
            batch_max_chars: 40,
            concurrency: 2,
            timeout: Duration::from_secs(30),
            network: Default::default(),
            backend: Backend::Remote,
            redactor: Default::default(),
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = EmbeddingsClient { http: reqwest::Client::new(), on_retry: None };
        let (sender, receiver) = tokio::sync::mpsc::channel::<Vec<(usize, String)>>(2);
        // Files of 3, 1, 7, 0 and 2 inputs, then one of two long inputs.
        let files: Vec<Vec<usize>> =
            vec![vec![0, 1, 2], vec![3], vec![4, 5, 6, 7, 8, 9, 10], vec![], vec![11, 12], vec![13, 14]];
        let text = |number: usize| if number >= 13 { format!("{number:x>38}") } else { format!("x{number}") };
        tokio::spawn(async move {
            for file in files {
                let inputs = file.into_iter().map(|number| (number, text(number))).collect();
                sender.send(inputs).await.unwrap();
            }
        });
        let mut vectors = std::collections::BTreeMap::new();
        let mut total = 0;
        let streamed = embed_stream(
            &client,
            &settings,
            receiver,
            |keys, batch, done| {
                total = total.max(done.total);
                vectors.extend(keys.into_iter().zip(batch));
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!((streamed.inputs, total), (15, 15));
        // Every input got its own vector back, under its own key.
        assert_eq!(vectors.len(), 15);
        assert!(vectors.iter().all(|(key, vector)| vector == &vec![*key as f32, 0.0]));
        let mut windows: Vec<Vec<String>> = requests.lock().unwrap().clone();
        windows.sort_by_key(|window| window[0].trim_start_matches('x').parse::<usize>().unwrap());
        // 13 short inputs: three whole windows across the files' borders,
        // and one of one, closed by the long input that does not fit
        // beside it; the two long inputs each go alone.
        let numbers: Vec<Vec<usize>> = windows
            .iter()
            .map(|window| window.iter().map(|input| input.trim_start_matches('x').parse().unwrap()).collect())
            .collect();
        assert_eq!(numbers, [vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9, 10, 11], vec![12], vec![13], vec![14]]);
        assert_eq!(streamed.windows, 6);
    }

    #[test]
    fn only_errors_naming_the_encoding_switch_to_numbers() {
        assert!(blames_the_encoding("Unsupported encoding_format: base64"));
        assert!(blames_the_encoding("invalid value for 'encoding_format'"));
        assert!(blames_the_encoding("BASE64 is not supported"));
        assert!(!blames_the_encoding("input is too long"));
        assert!(!blames_the_encoding("400 Bad Request"));
    }
}

//! A fake OpenAI-compatible embeddings endpoint on 127.0.0.1 for the
//! end-to-end tests: `POST /v1/embeddings` answers deterministic vectors
//! (a hashed bag of words, or one constant unit vector), records every
//! input it receives and the bearer token, can fail on demand, and can hold
//! requests at a gate until the test opens it. Vectors go out as the
//! request's `encoding_format` asks (base64 of little-endian `f32`s, or
//! numbers), unless [`Wire`] says to behave like a server that does not
//! know base64.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// How the fake answers.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Hashed bag of words: texts sharing words have related vectors.
    Words,
    /// Every input gets the same unit vector, so every cosine is exactly 1.
    Constant,
    /// Every request fails with this status and error message.
    Fail { status: u16, message: String },
    /// The next `times` requests fail with this status and body (sent as
    /// given), then the fake answers as [`Mode::Words`].
    FailFirst { times: usize, status: u16, body: String },
}

/// How the fake treats a request's `encoding_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Base64 when asked for, numbers otherwise (OpenAI).
    AsAsked,
    /// Numbers whatever is asked (a server that ignores the field).
    Numbers,
    /// A request for base64 fails with 400 naming `encoding_format`.
    RefuseBase64,
}

struct Shared {
    inputs: Mutex<Vec<String>>,
    /// Whether `inputs` keeps what arrives (see [`FakeEmbeddings::keep_inputs`]).
    keep_inputs: std::sync::atomic::AtomicBool,
    /// The `encoding_format` of each request, in arrival order.
    encodings: Mutex<Vec<String>>,
    wire: Mutex<Wire>,
    tokens: Mutex<Vec<String>>,
    requests: Mutex<usize>,
    held: Mutex<usize>,
    mode: Mutex<Mode>,
    gate: watch::Sender<bool>,
}

/// See the module documentation. Dropping it stops the server.
pub struct FakeEmbeddings {
    shared: Arc<Shared>,
    address: std::net::SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl Default for FakeEmbeddings {
    fn default() -> Self {
        Self::start()
    }
}

impl FakeEmbeddings {
    /// Starts a server in word mode with the gate open.
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("start the fake server runtime");
        let (gate, _) = watch::channel(true);
        let shared = Arc::new(Shared {
            inputs: Mutex::new(Vec::new()),
            keep_inputs: std::sync::atomic::AtomicBool::new(true),
            encodings: Mutex::new(Vec::new()),
            wire: Mutex::new(Wire::AsAsked),
            tokens: Mutex::new(Vec::new()),
            requests: Mutex::new(0),
            held: Mutex::new(0),
            mode: Mutex::new(Mode::Words),
            gate,
        });
        let listener =
            runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind the fake embeddings server");
        let address = listener.local_addr().expect("the fake server has an address");
        let app = axum::Router::new().route("/v1/embeddings", post(embeddings)).with_state(Arc::clone(&shared));
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { shared, address, _runtime: runtime }
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Points `env`'s commands at this server with a test key.
    pub fn configure(&self, env: &mut crate::TestEnv) {
        env.set_env("OPENAI_EMBEDDING_BASE_URL", &self.base_url());
        env.set_env("OPENAI_EMBEDDING_API_KEY", "test-embedding-key");
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// With `false`, inputs are counted but not kept ([`Self::inputs`]
    /// stays empty), and in [`Mode::Constant`] not even read: the
    /// benchmarks' "instant" server shares the machine's cores with the
    /// daemon it measures, so it does the least a server must.
    pub fn keep_inputs(&self, keep: bool) {
        self.shared.keep_inputs.store(keep, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn set_wire(&self, wire: Wire) {
        *self.shared.wire.lock().unwrap() = wire;
    }

    /// The `encoding_format` of every request so far (`""` when absent).
    pub fn encodings(&self) -> Vec<String> {
        self.shared.encodings.lock().unwrap().clone()
    }

    /// Every input received so far, in arrival order.
    pub fn inputs(&self) -> Vec<String> {
        self.shared.inputs.lock().unwrap().clone()
    }

    /// Inputs that embed chunks (not framed queries).
    pub fn chunk_inputs(&self) -> Vec<String> {
        self.inputs().into_iter().filter(|input| input.starts_with("path: ")).collect()
    }

    /// Inputs that embed queries.
    pub fn query_inputs(&self) -> Vec<String> {
        self.inputs().into_iter().filter(|input| !input.starts_with("path: ")).collect()
    }

    /// Forgets the inputs received so far.
    pub fn reset(&self) {
        self.shared.inputs.lock().unwrap().clear();
        self.shared.encodings.lock().unwrap().clear();
        *self.shared.requests.lock().unwrap() = 0;
    }

    pub fn requests(&self) -> usize {
        *self.shared.requests.lock().unwrap()
    }

    /// Bearer tokens received, one per request.
    pub fn tokens(&self) -> Vec<String> {
        self.shared.tokens.lock().unwrap().clone()
    }

    /// Holds every request until [`FakeEmbeddings::open_gate`].
    pub fn close_gate(&self) {
        self.shared.gate.send_replace(false);
    }

    pub fn open_gate(&self) {
        self.shared.gate.send_replace(true);
    }

    /// How many requests wait at the closed gate.
    pub fn held(&self) -> usize {
        *self.shared.held.lock().unwrap()
    }

    /// The vector the fake returns for `text` in word mode.
    pub fn words_vector(text: &str, dimensions: usize) -> Vec<f64> {
        let mut vector = vec![0.0; dimensions.max(1)];
        vector[0] = 0.05;
        for word in text.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()) {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in word.to_lowercase().bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            let slot = (hash % vector.len() as u64) as usize;
            vector[slot] += if hash & (1 << 63) == 0 { 1.0 } else { -1.0 };
        }
        let norm = vector.iter().map(|v| v * v).sum::<f64>().sqrt();
        vector.iter().map(|v| v / norm).collect()
    }
}

/// A request read without its inputs' text.
#[derive(serde::Deserialize)]
struct Counted {
    input: Vec<serde::de::IgnoredAny>,
    dimensions: Option<u64>,
    encoding_format: Option<String>,
    model: Value,
}

async fn embeddings(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    let keep = shared.keep_inputs.load(std::sync::atomic::Ordering::Relaxed);
    let counted = !keep && matches!(*shared.mode.lock().unwrap(), Mode::Constant);
    let (inputs, count, dimensions, encoding, model) = if counted {
        let request: Counted = match serde_json::from_str(&body) {
            Ok(request) => request,
            Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
        };
        let dimensions = request.dimensions.unwrap_or(1024) as usize;
        (Vec::new(), request.input.len(), dimensions, request.encoding_format.unwrap_or_default(), request.model)
    } else {
        let request: Value = match serde_json::from_str(&body) {
            Ok(request) => request,
            Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
        };
        let inputs: Vec<String> = request["input"]
            .as_array()
            .map(|items| items.iter().filter_map(|item| item.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let dimensions = request["dimensions"].as_u64().unwrap_or(1024) as usize;
        let encoding = request["encoding_format"].as_str().unwrap_or("").to_string();
        (inputs.clone(), inputs.len(), dimensions, encoding, request["model"].clone())
    };
    let token = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string();
    shared.tokens.lock().unwrap().push(token);
    let mut gate = shared.gate.subscribe();
    if !*gate.borrow() {
        *shared.held.lock().unwrap() += 1;
        let _ = gate.wait_for(|open| *open).await;
        *shared.held.lock().unwrap() -= 1;
    }
    let mode = {
        let mut mode = shared.mode.lock().unwrap();
        let current = mode.clone();
        if let Mode::FailFirst { times, status, body } = &*mode {
            *mode = match times {
                0 | 1 => Mode::Words,
                _ => Mode::FailFirst { times: times - 1, status: *status, body: body.clone() },
            };
        }
        current
    };
    let wire = *shared.wire.lock().unwrap();
    *shared.requests.lock().unwrap() += 1;
    shared.encodings.lock().unwrap().push(encoding.clone());
    if let Mode::Fail { status, message } = mode {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (status, json!({"error": {"message": message, "type": "test"}}).to_string()).into_response();
    }
    if let Mode::FailFirst { times: 1.., status, body } = mode {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (status, body).into_response();
    }
    if wire == Wire::RefuseBase64 && encoding == "base64" {
        let message = "unsupported encoding_format: base64 (use float)";
        return (StatusCode::BAD_REQUEST, json!({"error": {"message": message, "type": "test"}}).to_string())
            .into_response();
    }
    if keep {
        shared.inputs.lock().unwrap().extend(inputs.iter().cloned());
    }
    let base64 = encoding == "base64" && wire == Wire::AsAsked;
    let write = |vector: &[f64]| -> String {
        if base64 {
            use base64::Engine;
            let bytes: Vec<u8> = vector.iter().flat_map(|value| (*value as f32).to_le_bytes()).collect();
            format!("\"{}\"", base64::engine::general_purpose::STANDARD.encode(bytes))
        } else {
            serde_json::to_string(vector).expect("numbers serialize")
        }
    };
    // The reply is written as text, not built as a `Value` tree: a tree
    // costs an allocation per number, and the benchmarks' "instant"
    // server shares the machine's cores with the daemon it measures.
    let constant = matches!(mode, Mode::Constant).then(|| {
        let mut vector = vec![0.0; dimensions.max(1)];
        vector[0] = 1.0;
        write(&vector)
    });
    use std::fmt::Write as _;
    let each = constant.as_ref().map_or(64, |constant| constant.len() + 48);
    let mut reply = String::with_capacity(64 + count * each);
    reply.push_str(r#"{"object":"list","data":["#);
    for index in 0..count {
        if index > 0 {
            reply.push(',');
        }
        let _ = write!(reply, r#"{{"object":"embedding","index":{index},"embedding":"#);
        match &constant {
            Some(constant) => reply.push_str(constant),
            None => {
                let input = inputs.get(index).map_or("", String::as_str);
                reply.push_str(&write(&FakeEmbeddings::words_vector(input, dimensions)));
            }
        }
        reply.push('}');
    }
    let _ = write!(reply, r#"],"model":{model},"usage":{{"prompt_tokens":0,"total_tokens":0}}}}"#);
    ([(axum::http::header::CONTENT_TYPE, "application/json")], reply).into_response()
}

/// Waits until `condition` holds, polling the fake's counters.
pub fn wait_for(timeout: Duration, condition: impl FnMut() -> bool) -> bool {
    crate::wait_until(timeout, condition)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reply of one request for `inputs` at `dimensions`.
    fn reply(fake: &FakeEmbeddings, inputs: &[&str], dimensions: usize) -> Value {
        reply_as(fake, inputs, dimensions, None).1
    }

    /// The status and reply of one request, with `encoding_format` when
    /// given.
    fn reply_as(fake: &FakeEmbeddings, inputs: &[&str], dimensions: usize, encoding: Option<&str>) -> (u16, Value) {
        let mut request = json!({"model": "m-1", "input": inputs, "dimensions": dimensions});
        if let Some(encoding) = encoding {
            request["encoding_format"] = json!(encoding);
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let response = reqwest::Client::new()
                .post(format!("{}/embeddings", fake.base_url()))
                .bearer_auth("k")
                .json(&request)
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.json().await.unwrap())
        })
    }

    #[test]
    fn replies_are_openai_embedding_lists() {
        let fake = FakeEmbeddings::start();
        let inputs = ["alpha beta", "gamma \"quoted\"", ""];
        for mode in [Mode::Words, Mode::Constant] {
            fake.set_mode(mode.clone());
            let reply = reply(&fake, &inputs, 4);
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(index, input)| {
                    let vector = match mode {
                        Mode::Constant => vec![1.0, 0.0, 0.0, 0.0],
                        _ => FakeEmbeddings::words_vector(input, 4),
                    };
                    json!({"object": "embedding", "index": index, "embedding": vector})
                })
                .collect();
            let expected = json!({
                "object": "list",
                "data": data,
                "model": "m-1",
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            });
            assert_eq!(reply, expected, "{mode:?}");
        }
        assert_eq!(fake.inputs().len(), 2 * inputs.len());
        assert_eq!(fake.tokens(), ["k", "k"]);
    }

    #[test]
    fn inputs_counted_but_not_kept_get_the_same_replies() {
        let fake = FakeEmbeddings::start();
        fake.set_mode(Mode::Constant);
        let inputs = ["alpha beta", "gamma \"quoted\" \\ end", ""];
        let kept = reply(&fake, &inputs, 4);
        let kept_base64 = reply_as(&fake, &inputs, 4, Some("base64")).1;
        fake.keep_inputs(false);
        assert_eq!(reply(&fake, &inputs, 4), kept);
        assert_eq!(reply_as(&fake, &inputs, 4, Some("base64")).1, kept_base64);
        assert_eq!(kept["data"].as_array().unwrap().len(), inputs.len());
        // Only the two requests before the switch were kept.
        assert_eq!(fake.inputs().len(), 2 * inputs.len());
        assert_eq!(fake.requests(), 4);
        assert_eq!(fake.encodings(), ["", "base64", "", "base64"]);
    }

    /// The `f32`s of a base64 reply item.
    fn floats(item: &Value) -> Vec<f32> {
        use base64::Engine;
        let text = item["embedding"].as_str().expect("a base64 embedding");
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
        bytes.chunks_exact(4).map(|value| f32::from_le_bytes(value.try_into().unwrap())).collect()
    }

    #[test]
    fn vectors_go_out_as_the_request_and_the_wire_setting_say() {
        let fake = FakeEmbeddings::start();
        let inputs = ["alpha beta", "gamma"];
        let expected: Vec<Vec<f32>> = inputs
            .iter()
            .map(|input| FakeEmbeddings::words_vector(input, 4).iter().map(|value| *value as f32).collect())
            .collect();
        let (status, reply) = reply_as(&fake, &inputs, 4, Some("base64"));
        assert_eq!(status, 200);
        let items = reply["data"].as_array().unwrap();
        assert_eq!(items.iter().map(floats).collect::<Vec<_>>(), expected);
        let (_, reply) = reply_as(&fake, &inputs, 4, Some("float"));
        assert!(reply["data"][0]["embedding"].is_array());

        fake.set_wire(Wire::Numbers);
        let (status, reply) = reply_as(&fake, &inputs, 4, Some("base64"));
        assert_eq!(status, 200);
        assert!(reply["data"][1]["embedding"].is_array());

        fake.set_wire(Wire::RefuseBase64);
        let (status, reply) = reply_as(&fake, &inputs, 4, Some("base64"));
        assert_eq!(status, 400);
        assert!(reply["error"]["message"].as_str().unwrap().contains("encoding_format"));
        let (status, _) = reply_as(&fake, &inputs, 4, None);
        assert_eq!(status, 200);
        assert_eq!(fake.encodings(), ["base64", "float", "base64", "base64", ""]);
        // The refused request embedded nothing.
        assert_eq!(fake.inputs().len(), 4 * inputs.len());
    }
}

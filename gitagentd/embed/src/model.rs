//! A sentence encoder loaded from a folder in the Hugging Face layout, run
//! in process: texts in, unit-length `f32` vectors out.
//!
//! The folder holds `config.json` (a BERT encoder), `tokenizer.json` and
//! `model.safetensors`; sentence-transformers' `modules.json` and
//! `1_Pooling/config.json` choose mean or CLS pooling (mean when absent),
//! `sentence_bert_config.json` the token limit (else the model's position
//! count). Inputs longer than the limit are truncated, as
//! sentence-transformers does.
//!
//! [`LocalModel::embed`] is synchronous and CPU-bound: the daemon calls it
//! on its blocking pool. The work runs on the model's own thread pool of
//! [`Limits::threads`] threads (candle's matrix products and the tokenizer
//! run on the current rayon pool), so concurrent callers share that bound
//! rather than each taking every core. candle's element-wise kernels (on
//! tensors of 64K values or more) use a process-wide pool of candle's own
//! instead, sized once, on first use, to the cores the process may use
//! minus one (or `CANDLE_NUM_THREADS` minus one), whose threads spin
//! briefly and then park: the total stays within the machine's cores, but
//! a [`Limits::threads`] below that bounds only the matrix products. A
//! daemon that wants both bounded sets `CANDLE_NUM_THREADS` before its
//! first thread starts. Inputs are sorted by length and
//! cut into batches that bound the memory of one forward pass; the
//! caller's cancellation is checked between batches. This module never
//! reads the environment and never touches the network.

use crate::bert::{self, Bert, BertConfig};
use candle_core::{DType, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// How much of the machine one model may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Inference threads (at least 1).
    pub threads: usize,
    /// Inputs per forward pass.
    pub max_batch: usize,
    /// The estimated activation memory of one forward pass, in bytes: long
    /// inputs go in smaller batches. One input always fits.
    pub max_batch_bytes: usize,
}

impl Limits {
    /// Every core of this machine (as the process may use them), batches
    /// of up to 32 inputs and 64 MiB.
    pub fn for_this_machine() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Self { threads, max_batch: 32, max_batch_bytes: 64 << 20 }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::for_this_machine()
    }
}

/// What a model is, for the identity of an index built with it: vectors
/// of two models with different keys are never mixed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelKey {
    /// The model's name (`all-MiniLM-L6-v2`).
    pub name: String,
    /// The hub commit of a pinned download, or `sha256-` and the start of
    /// the digest of the files that decide the vectors.
    pub revision: String,
}

impl std::fmt::Display for ModelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.name, self.revision)
    }
}

/// How [`LocalModel::load`] names the model and bounds its work.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub limits: Limits,
    /// The key of a pinned model (its files were checked on download);
    /// `None` derives one from the folder's name and contents.
    pub key: Option<ModelKey>,
}

/// How token states become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the states of the real tokens (padding excluded).
    Mean,
    /// The state of the first token (`[CLS]`).
    Cls,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "cannot read {}\nhint: a local model folder holds config.json, tokenizer.json and model.safetensors in the Hugging Face layout",
        path.display()
    )]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not valid JSON of its kind", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the model in {} is not supported: {reason}", dir.display())]
    Unsupported { dir: PathBuf, reason: String },
    #[error("cannot load the tokenizer {}", path.display())]
    Tokenizer {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },
    #[error("{} does not hold the weights config.json describes", path.display())]
    Weights {
        path: PathBuf,
        #[source]
        source: Box<candle_core::Error>,
    },
    #[error("cannot start the local model's {threads} inference threads")]
    Threads {
        threads: usize,
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    #[error("the local model {key} cannot tokenize an input")]
    Tokenize {
        key: ModelKey,
        #[source]
        source: tokenizers::Error,
    },
    #[error("the local model {key} failed to embed a batch")]
    Inference {
        key: ModelKey,
        #[source]
        source: Box<candle_core::Error>,
    },
    #[error("the embedding was cancelled")]
    Cancelled,
}

/// `modules.json`: the stages of a sentence-transformers model.
#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

/// `1_Pooling/config.json`.
#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

/// `sentence_bert_config.json`.
#[derive(Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

/// A loaded sentence encoder; shared by reference between concurrent
/// callers.
pub struct LocalModel {
    key: ModelKey,
    encoder: Bert,
    tokenizer: tokenizers::Tokenizer,
    pooling: Pooling,
    max_tokens: usize,
    dimensions: usize,
    pad_id: u32,
    /// Attention heads and feed-forward width, for the activation
    /// estimate of [`Self::input_bytes`].
    heads: usize,
    intermediate: usize,
    limits: Limits,
    threads: rayon::ThreadPool,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("key", &self.key)
            .field("pooling", &self.pooling)
            .field("max_tokens", &self.max_tokens)
            .field("dimensions", &self.dimensions)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The files that decide the vectors, read once, hashed for a derived key.
struct Contents {
    digest: Sha256,
}

impl Contents {
    fn read(&mut self, path: &Path) -> Result<Vec<u8>, EmbedError> {
        let bytes = std::fs::read(path).map_err(|source| EmbedError::Read { path: path.into(), source })?;
        let name = path.file_name().map(|name| name.as_encoded_bytes()).unwrap_or_default();
        self.digest.update((name.len() as u64).to_le_bytes());
        self.digest.update(name);
        self.digest.update((bytes.len() as u64).to_le_bytes());
        self.digest.update(&bytes);
        Ok(bytes)
    }

    fn read_optional(&mut self, path: &Path) -> Result<Option<Vec<u8>>, EmbedError> {
        if path.is_file() { self.read(path).map(Some) } else { Ok(None) }
    }
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, bytes: &[u8]) -> Result<T, EmbedError> {
    serde_json::from_slice(bytes).map_err(|source| EmbedError::Json { path: path.into(), source })
}

impl LocalModel {
    /// Loads the model in `dir`. Reads the weights whole (about 90 MB for
    /// all-MiniLM-L6-v2), so call it on a blocking thread.
    pub fn load(dir: &Path, options: &LoadOptions) -> Result<Self, EmbedError> {
        let unsupported = |reason: String| EmbedError::Unsupported { dir: dir.into(), reason };
        let mut contents = Contents { digest: Sha256::new() };
        let config_path = dir.join("config.json");
        let config: BertConfig = parse(&config_path, &contents.read(&config_path)?)?;
        if let Some(reason) = config.unsupported() {
            return Err(unsupported(reason));
        }
        let pooling = Self::read_pooling(dir, &mut contents)?.map_err(unsupported)?;
        let sentence_path = dir.join("sentence_bert_config.json");
        let max_seq_length = match contents.read_optional(&sentence_path)? {
            Some(bytes) => parse::<SentenceConfig>(&sentence_path, &bytes)?.max_seq_length,
            None => None,
        };
        let max_tokens = max_seq_length.unwrap_or(config.max_position_embeddings).min(config.max_position_embeddings);

        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_bytes = contents.read(&tokenizer_path)?;
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|source| EmbedError::Tokenizer { path: tokenizer_path.clone(), source })?;
        // The file's own padding and truncation (all-MiniLM-L6-v2 ships
        // "pad to 128") give way to the model's limit and padding to the
        // longest input of each batch, which this module does itself.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams { max_length: max_tokens, ..Default::default() }))
            .map_err(|source| EmbedError::Tokenizer { path: tokenizer_path.clone(), source })?;

        let weights_path = dir.join("model.safetensors");
        let weights = contents.read(&weights_path)?;
        let encoder = VarBuilder::from_slice_safetensors(&weights, DType::F32, &bert::device())
            .and_then(|vb| Bert::load(vb, &config))
            .map_err(|source| EmbedError::Weights { path: weights_path.clone(), source: Box::new(source) })?;
        drop(weights);

        let key = match &options.key {
            Some(key) => key.clone(),
            None => {
                let digest = contents.digest.finalize();
                let hex: String = digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect();
                let name = dir
                    .canonicalize()
                    .ok()
                    .and_then(|dir| dir.file_name().map(|name| name.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "local-model".into());
                ModelKey { name, revision: format!("sha256-{hex}") }
            }
        };
        let limits = Limits {
            threads: options.limits.threads.max(1),
            max_batch: options.limits.max_batch.max(1),
            max_batch_bytes: options.limits.max_batch_bytes,
        };
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(limits.threads)
            .thread_name(|index| format!("embed-{index}"))
            .build()
            .map_err(|source| EmbedError::Threads { threads: limits.threads, source })?;
        tracing::debug!(%key, dir = %dir.display(), ?pooling, max_tokens, threads = limits.threads, "local model loaded");
        Ok(Self {
            key,
            encoder,
            tokenizer,
            pooling,
            max_tokens,
            dimensions: config.hidden_size,
            pad_id: config.pad_token_id.unwrap_or(0),
            heads: config.num_attention_heads,
            intermediate: config.intermediate_size,
            limits,
            threads,
        })
    }

    /// The pooling `modules.json` and the pooling stage's config ask for:
    /// `Err` names a mode this module does not implement.
    fn read_pooling(dir: &Path, contents: &mut Contents) -> Result<Result<Pooling, String>, EmbedError> {
        let modules_path = dir.join("modules.json");
        let pooling_dir = match contents.read_optional(&modules_path)? {
            Some(bytes) => {
                let modules: Vec<Module> = parse(&modules_path, &bytes)?;
                match modules.iter().find(|module| module.kind.ends_with(".Pooling")) {
                    Some(module) => dir.join(&module.path),
                    None => return Ok(Ok(Pooling::Mean)),
                }
            }
            None => dir.join("1_Pooling"),
        };
        let config_path = pooling_dir.join("config.json");
        let Some(bytes) = contents.read_optional(&config_path)? else {
            return Ok(Ok(Pooling::Mean));
        };
        let config: PoolingConfig = parse(&config_path, &bytes)?;
        Ok(match config {
            PoolingConfig { pooling_mode_max_tokens: true, .. } => Err("max pooling is not supported".into()),
            PoolingConfig { pooling_mode_mean_sqrt_len_tokens: true, .. } => {
                Err("mean-sqrt-len pooling is not supported".into())
            }
            PoolingConfig { pooling_mode_cls_token: true, pooling_mode_mean_tokens: true, .. } => {
                Err("CLS and mean pooling at once is not supported".into())
            }
            PoolingConfig { pooling_mode_cls_token: true, .. } => Ok(Pooling::Cls),
            _ => Ok(Pooling::Mean),
        })
    }

    pub fn key(&self) -> &ModelKey {
        &self.key
    }

    /// The length of every vector.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The tokens an input is cut to, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The token ids the model sees for `text`: special tokens added,
    /// truncated to [`Self::max_tokens`].
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let encoding = self
            .tokenizer
            .encode_fast(text, true)
            .map_err(|source| EmbedError::Tokenize { key: self.key.clone(), source })?;
        Ok(encoding.get_ids().to_vec())
    }

    /// One unit-length vector per text, in order. `cancelled` is asked
    /// between batches; once it says yes the call returns
    /// [`EmbedError::Cancelled`].
    pub fn embed<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.threads.install(|| self.embed_here(texts, cancelled))
    }

    fn embed_here<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if cancelled() {
            return Err(EmbedError::Cancelled);
        }
        let inputs: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        let encodings = self
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|source| EmbedError::Tokenize { key: self.key.clone(), source })?;
        let ids: Vec<&[u32]> = encodings.iter().map(|encoding| encoding.get_ids()).collect();
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in self.plan_batches(&ids) {
            if cancelled() {
                return Err(EmbedError::Cancelled);
            }
            let batch_ids: Vec<&[u32]> = batch.iter().map(|&index| ids[index]).collect();
            let pooled = self
                .embed_batch(&batch_ids)
                .map_err(|source| EmbedError::Inference { key: self.key.clone(), source: Box::new(source) })?;
            for (index, vector) in batch.into_iter().zip(pooled) {
                vectors[index] = vector;
            }
        }
        Ok(vectors)
    }

    /// The inputs' indexes in batches: by ascending length, each batch as
    /// large as [`Limits`] allow for its longest input.
    fn plan_batches(&self, ids: &[&[u32]]) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&index| ids[index].len());
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        for index in order {
            let tokens = ids[index].len();
            let fits = current.len() < self.limits.max_batch
                && (current.len() + 1) * self.input_bytes(tokens) <= self.limits.max_batch_bytes;
            if !fits && !current.is_empty() {
                batches.push(std::mem::take(&mut current));
            }
            current.push(index);
        }
        if !current.is_empty() {
            batches.push(current);
        }
        batches
    }

    /// The activations one input of `tokens` tokens costs in a forward
    /// pass, roughly: attention scores and weights, the feed-forward's
    /// inner states, and a few hidden-state copies.
    fn input_bytes(&self, tokens: usize) -> usize {
        tokens * (2 * self.heads * tokens + 2 * self.intermediate + 8 * self.dimensions) * size_of::<f32>()
    }

    /// Pads `ids` to the longest, runs the encoder and pools.
    fn embed_batch(&self, ids: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let device = bert::device();
        let tokens = ids.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut padded = Vec::with_capacity(ids.len() * tokens);
        let mut mask = Vec::with_capacity(ids.len() * tokens);
        for input in ids {
            padded.extend_from_slice(input);
            padded.resize(padded.len() + tokens - input.len(), self.pad_id);
            mask.extend(std::iter::repeat_n(1u32, input.len()));
            mask.extend(std::iter::repeat_n(0u32, tokens - input.len()));
        }
        let padded = Tensor::from_vec(padded, (ids.len(), tokens), &device)?;
        let mask = Tensor::from_vec(mask, (ids.len(), tokens), &device)?;
        let hidden = self.encoder.forward(&padded, &mask)?;
        bert::pool(&hidden, &mask, self.pooling == Pooling::Cls)?.to_vec2::<f32>()
    }
}

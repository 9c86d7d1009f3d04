//! The BERT encoder on candle: token, position and type embeddings, then
//! `num_hidden_layers` post-norm transformer layers (self-attention with a
//! padding mask, a GELU feed-forward), as transformers' `BertModel`
//! computes them, in f32 on the CPU. It reads `config.json` and the
//! weights and returns the last hidden states; tokenizing, pooling and
//! normalising belong to [`crate::model`].
//!
//! Written on candle-nn's layers rather than taken from
//! candle-transformers' `models::bert`: the whole encoder is this file,
//! and candle-transformers compiles every model it ships (see the crate
//! header for the figures).

use candle_core::{D, DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// The fields of a BERT `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    #[serde(default)]
    pub model_type: Option<String>,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub pad_token_id: Option<u32>,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

fn default_hidden_act() -> String {
    "gelu".into()
}

fn default_type_vocab_size() -> usize {
    2
}

fn default_layer_norm_eps() -> f64 {
    1e-12
}

/// The feed-forward activation of `hidden_act`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// transformers' "gelu": the exact form, with erf.
    GeluErf,
    /// "gelu_new", "gelu_pytorch_tanh", "gelu_fast": the tanh approximation.
    GeluTanh,
    Relu,
}

impl BertConfig {
    /// Why this configuration is not a BERT encoder this module runs, if
    /// it is not.
    pub fn unsupported(&self) -> Option<String> {
        if let Some(kind) = &self.model_type
            && kind != "bert"
        {
            return Some(format!("model_type is {kind:?}; only \"bert\" encoders are supported"));
        }
        if let Some(kind) = &self.position_embedding_type
            && kind != "absolute"
        {
            return Some(format!("position_embedding_type is {kind:?}; only \"absolute\" is supported"));
        }
        if self.activation().is_none() {
            return Some(format!("hidden_act is {:?}; gelu, gelu_new and relu are supported", self.hidden_act));
        }
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Some(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        None
    }

    pub fn activation(&self) -> Option<Activation> {
        match self.hidden_act.as_str() {
            "gelu" => Some(Activation::GeluErf),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Some(Activation::GeluTanh),
            "relu" => Some(Activation::Relu),
            _ => None,
        }
    }
}

struct Embeddings {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    norm: LayerNorm,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_output: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// A loaded encoder.
pub(crate) struct Bert {
    embeddings: Embeddings,
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
    activation: Activation,
}

impl Bert {
    /// The encoder of `config` with the weights `vb` holds, under the
    /// names of transformers' `BertModel` with or without a `bert.`
    /// prefix. The configuration must have passed
    /// [`BertConfig::unsupported`].
    pub fn load(vb: VarBuilder, config: &BertConfig) -> candle_core::Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") { vb.pp("bert") } else { vb };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let norm = |vb: VarBuilder| candle_nn::layer_norm(hidden, eps, vb);
        let e = vb.pp("embeddings");
        let embeddings = Embeddings {
            words: candle_nn::embedding(config.vocab_size, hidden, e.pp("word_embeddings"))?,
            positions: candle_nn::embedding(config.max_position_embeddings, hidden, e.pp("position_embeddings"))?,
            token_types: candle_nn::embedding(config.type_vocab_size, hidden, e.pp("token_type_embeddings"))?,
            norm: norm(e.pp("LayerNorm"))?,
        };
        let layers = (0..config.num_hidden_layers)
            .map(|index| {
                let l = vb.pp(format!("encoder.layer.{index}"));
                let attention = l.pp("attention");
                Ok(Layer {
                    query: candle_nn::linear(hidden, hidden, attention.pp("self.query"))?,
                    key: candle_nn::linear(hidden, hidden, attention.pp("self.key"))?,
                    value: candle_nn::linear(hidden, hidden, attention.pp("self.value"))?,
                    attention_output: candle_nn::linear(hidden, hidden, attention.pp("output.dense"))?,
                    attention_norm: norm(attention.pp("output.LayerNorm"))?,
                    intermediate: candle_nn::linear(hidden, config.intermediate_size, l.pp("intermediate.dense"))?,
                    output: candle_nn::linear(config.intermediate_size, hidden, l.pp("output.dense"))?,
                    output_norm: norm(l.pp("output.LayerNorm"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let activation = config.activation().unwrap_or(Activation::GeluErf);
        let heads = config.num_attention_heads;
        Ok(Self { embeddings, layers, heads, head_size: hidden / heads, activation })
    }

    /// The last hidden states `(batch, tokens, hidden)` of `ids`
    /// `(batch, tokens)`, where `mask` `(batch, tokens)` is 1 for real
    /// tokens and 0 for padding: padding is never attended to.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, tokens) = ids.dims2()?;
        let device = ids.device();
        let positions = Tensor::arange(0u32, tokens as u32, device)?;
        let types = Tensor::zeros((batch, tokens), DType::U32, device)?;
        let e = &self.embeddings;
        let mut x = e
            .words
            .forward(ids)?
            .broadcast_add(&e.positions.forward(&positions)?)?
            .add(&e.token_types.forward(&types)?)?;
        x = e.norm.forward(&x)?;
        // 0 where a key may be attended to, a large negative number where it
        // is padding, broadcast over heads and query positions.
        let bias = ((mask.to_dtype(DType::F32)? - 1.0)? * 1e9)?.reshape((batch, 1, 1, tokens))?;
        let scale = 1.0 / (self.head_size as f64).sqrt();
        for layer in &self.layers {
            x = self.layer(layer, &x, &bias, scale)?;
        }
        Ok(x)
    }

    fn layer(&self, layer: &Layer, x: &Tensor, bias: &Tensor, scale: f64) -> candle_core::Result<Tensor> {
        let (batch, tokens, hidden) = x.dims3()?;
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            t.reshape((batch, tokens, self.heads, self.head_size))?.transpose(1, 2)?.contiguous()
        };
        let query = split(layer.query.forward(x)?)?;
        let key = split(layer.key.forward(x)?)?;
        let value = split(layer.value.forward(x)?)?;
        let scores = (query.matmul(&key.t()?)? * scale)?.broadcast_add(bias)?;
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = weights.matmul(&value)?.transpose(1, 2)?.contiguous()?.reshape((batch, tokens, hidden))?;
        let attended = layer.attention_norm.forward(&(layer.attention_output.forward(&context)? + x)?)?;
        let inner = layer.intermediate.forward(&attended)?;
        let inner = match self.activation {
            Activation::GeluErf => inner.gelu_erf()?,
            Activation::GeluTanh => inner.gelu()?,
            Activation::Relu => inner.relu()?,
        };
        layer.output_norm.forward(&(layer.output.forward(&inner)? + attended)?)
    }
}

/// Mean of the hidden states over the real tokens (`mask` 1), or the
/// first token's state, then scaled to unit length: `(batch, hidden)`.
pub(crate) fn pool(hidden: &Tensor, mask: &Tensor, cls: bool) -> candle_core::Result<Tensor> {
    let pooled = if cls {
        hidden.narrow(1, 0, 1)?.squeeze(1)?
    } else {
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let sum = hidden.broadcast_mul(&mask)?.sum(1)?;
        let count = mask.sum(1)?.maximum(1e-9)?;
        sum.broadcast_div(&count)?
    };
    let norm = pooled.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?.maximum(1e-12)?;
    pooled.broadcast_div(&norm)
}

/// The CPU device (the only one this crate runs on).
pub(crate) fn device() -> Device {
    Device::Cpu
}

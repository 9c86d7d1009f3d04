//! `LocalModel` on the tiny BERT of `tests/fixtures/tiny-bert/`: loading,
//! tokenization, pooling, and vectors equal to a forward pass written
//! plainly below (loops over `f64`s, no candle).

use gitagent_embed::{EmbedError, Limits, LoadOptions, LocalModel, ModelKey, Pooling};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-bert")
}

fn load(dir: &Path) -> LocalModel {
    LocalModel::load(dir, &LoadOptions::default()).expect("the tiny model loads")
}

fn never() -> bool {
    false
}

/// Texts of several lengths: padded in one batch, truncated, empty.
const TEXTS: &[&str] = &[
    "Sorting the files, quickly!",
    "def search_index(path): return None",
    "a",
    "",
    "open the file and read every line, then sort the lines by length and write them to a new file",
    "Ünïcödé and 中文 text",
];

#[test]
fn the_tiny_model_loads_with_its_settings() {
    let model = load(&fixture());
    assert_eq!(model.dimensions(), 32);
    assert_eq!(model.max_tokens(), 24);
    assert_eq!(model.pooling(), Pooling::Mean);
    assert_eq!(model.key().name, "tiny-bert");
    assert!(model.key().revision.starts_with("sha256-"), "{}", model.key());
    // The derived key depends on the contents only: the same files
    // elsewhere give the same key.
    let copy = tempfile::tempdir().unwrap();
    let copied = copy.path().join("tiny-bert");
    copy_dir(&fixture(), &copied);
    assert_eq!(load(&copied).key(), model.key());
    let key = ModelKey { name: "pinned".into(), revision: "abc".into() };
    let options = LoadOptions { key: Some(key.clone()), ..LoadOptions::default() };
    assert_eq!(LocalModel::load(&fixture(), &options).unwrap().key(), &key);
    assert_eq!(key.to_string(), "pinned@abc");
}

#[test]
fn tokenization_gives_the_ids_of_the_reference_tokenizer() {
    let model = load(&fixture());
    // Ids from Hugging Face's Python `tokenizers` on the same file.
    assert_eq!(
        model.token_ids("Sorting the files, quickly!").unwrap(),
        [2, 159, 112, 120, 154, 42, 21, 93, 81, 75, 83, 115, 45, 3]
    );
    assert_eq!(
        model.token_ids("def search_index(path): return None").unwrap(),
        [2, 138, 161, 60, 162, 47, 166, 48, 43, 139, 149, 3]
    );
    assert_eq!(model.token_ids("").unwrap(), [2, 3]);
    // The file asks for truncation at 8 and padding to 8; the model's own
    // limit (24, from sentence_bert_config.json) wins and nothing is
    // padded.
    let long = model.token_ids(TEXTS[4]).unwrap();
    assert_eq!(long.len(), 24);
    assert_eq!((long[0], long[23]), (2, 3));
    assert_eq!(model.token_ids("a").unwrap(), [2, 5, 3]);
}

#[test]
fn vectors_equal_the_plain_forward_pass() {
    let model = load(&fixture());
    let reference = Reference::load(&fixture(), false);
    let vectors = model.embed(TEXTS, &never).unwrap();
    assert_eq!(vectors.len(), TEXTS.len());
    for (text, vector) in TEXTS.iter().zip(&vectors) {
        let expected = reference.embed(&model.token_ids(text).unwrap());
        assert_close(vector, &expected, text);
        let norm: f32 = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text:?} has norm {norm}");
    }
    // Different texts, different vectors.
    assert!(distance(&vectors[0], &vectors[1]) > 0.1);
}

#[test]
fn padding_never_changes_a_vector() {
    let model = load(&fixture());
    let together = model.embed(TEXTS, &never).unwrap();
    for (text, vector) in TEXTS.iter().zip(&together) {
        let alone = model.embed(&[text], &never).unwrap();
        assert_close(vector, &alone[0], text);
    }
    // Batches of one input each (and one thread): the same vectors again.
    let limits = Limits { threads: 1, max_batch: 1, max_batch_bytes: 0 };
    let options = LoadOptions { limits, key: None };
    let single = LocalModel::load(&fixture(), &options).unwrap().embed(TEXTS, &never).unwrap();
    for ((text, a), b) in TEXTS.iter().zip(&together).zip(&single) {
        assert_close(a, b, text);
    }
}

#[test]
fn cls_pooling_takes_the_first_token() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path().join("tiny-cls");
    copy_dir(&fixture(), &dir);
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 32, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let model = load(&dir);
    assert_eq!(model.pooling(), Pooling::Cls);
    assert_ne!(model.key(), load(&fixture()).key(), "the pooling decides the vectors, so the key");
    let reference = Reference::load(&dir, true);
    let vectors = model.embed(TEXTS, &never).unwrap();
    for (text, vector) in TEXTS.iter().zip(&vectors) {
        assert_close(vector, &reference.embed(&model.token_ids(text).unwrap()), text);
    }
}

#[test]
fn cancellation_stops_between_batches() {
    let model = load(&fixture());
    let asked = std::sync::atomic::AtomicUsize::new(0);
    // Yes from the second question on: the first batch runs, the second
    // does not.
    let cancelled = || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 2;
    let options = LoadOptions { limits: Limits { max_batch: 1, ..Limits::default() }, key: None };
    let model_of_ones = LocalModel::load(&fixture(), &options).unwrap();
    assert!(matches!(model_of_ones.embed(TEXTS, &cancelled), Err(EmbedError::Cancelled)));
    assert!(matches!(model.embed(TEXTS, &|| true), Err(EmbedError::Cancelled)));
    assert!(model.embed(&[] as &[&str], &|| true).unwrap().is_empty());
}

#[test]
fn a_broken_folder_is_named_in_the_error() {
    let folder = tempfile::tempdir().unwrap();
    let error = LocalModel::load(folder.path(), &LoadOptions::default()).unwrap_err();
    assert!(matches!(error, EmbedError::Read { .. }), "{error:?}");
    assert!(error.to_string().contains("config.json"), "{error}");
    assert!(error.to_string().contains("hint:"), "{error}");

    let dir = folder.path().join("model");
    copy_dir(&fixture(), &dir);
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    std::fs::write(dir.join("config.json"), config.replace(r#""bert""#, r#""t5""#)).unwrap();
    let error = LocalModel::load(&dir, &LoadOptions::default()).unwrap_err();
    assert!(error.to_string().contains(r#"model_type is "t5""#), "{error}");

    std::fs::write(dir.join("config.json"), config.replace(r#""hidden_size": 32"#, r#""hidden_size": 36"#)).unwrap();
    let error = LocalModel::load(&dir, &LoadOptions::default()).unwrap_err();
    assert!(matches!(error, EmbedError::Unsupported { .. } | EmbedError::Weights { .. }), "{error:?}");

    std::fs::write(dir.join("config.json"), config.replace(r#""hidden_size": 32"#, r#""hidden_size": 16"#)).unwrap();
    let error = LocalModel::load(&dir, &LoadOptions::default()).unwrap_err();
    assert!(matches!(error, EmbedError::Weights { .. }), "{error:?}");
    assert!(error.to_string().contains("model.safetensors"), "{error}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn distance(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>().sqrt()
}

fn assert_close(actual: &[f32], expected: &[f32], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what:?}");
    let worst = actual.iter().zip(expected).map(|(a, e)| (a - e).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "{what:?}: the vectors differ by up to {worst}\n{actual:?}\n{expected:?}");
}

/// BERT written out: the weights as plain arrays, every step a loop.
struct Reference {
    tensors: HashMap<String, Vec<f64>>,
    hidden: usize,
    heads: usize,
    layers: usize,
    intermediate: usize,
    eps: f64,
    cls: bool,
}

impl Reference {
    fn load(dir: &Path, cls: bool) -> Self {
        let config: Value = serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
        let data = &bytes[8 + header_len..];
        let mut tensors = HashMap::new();
        for (name, meta) in header.as_object().unwrap() {
            if meta["dtype"] != "F32" {
                continue;
            }
            let start = meta["data_offsets"][0].as_u64().unwrap() as usize;
            let end = meta["data_offsets"][1].as_u64().unwrap() as usize;
            let values = data[start..end]
                .chunks_exact(4)
                .map(|value| f64::from(f32::from_le_bytes(value.try_into().unwrap())))
                .collect();
            tensors.insert(name.clone(), values);
        }
        let number = |key: &str| config[key].as_u64().unwrap() as usize;
        Self {
            tensors,
            hidden: number("hidden_size"),
            heads: number("num_attention_heads"),
            layers: number("num_hidden_layers"),
            intermediate: number("intermediate_size"),
            eps: config["layer_norm_eps"].as_f64().unwrap(),
            cls,
        }
    }

    fn tensor(&self, name: &str) -> &[f64] {
        &self.tensors[name]
    }

    /// `weight` is `(out, input)`, as torch's Linear stores it.
    fn linear(&self, x: &[Vec<f64>], name: &str, out: usize) -> Vec<Vec<f64>> {
        let weight = self.tensor(&format!("{name}.weight"));
        let bias = self.tensor(&format!("{name}.bias"));
        x.iter()
            .map(|row| {
                (0..out)
                    .map(|o| bias[o] + row.iter().enumerate().map(|(i, v)| v * weight[o * row.len() + i]).sum::<f64>())
                    .collect()
            })
            .collect()
    }

    fn layer_norm(&self, x: &mut [Vec<f64>], name: &str) {
        let gamma = self.tensor(&format!("{name}.weight"));
        let beta = self.tensor(&format!("{name}.bias"));
        for row in x {
            let mean = row.iter().sum::<f64>() / row.len() as f64;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / row.len() as f64;
            for (i, v) in row.iter_mut().enumerate() {
                *v = (*v - mean) / (variance + self.eps).sqrt() * gamma[i] + beta[i];
            }
        }
    }

    /// The vector of one input, alone: no padding at all.
    fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let h = self.hidden;
        let words = self.tensor("embeddings.word_embeddings.weight");
        let positions = self.tensor("embeddings.position_embeddings.weight");
        let types = self.tensor("embeddings.token_type_embeddings.weight");
        let mut x: Vec<Vec<f64>> = ids
            .iter()
            .enumerate()
            .map(|(t, &id)| (0..h).map(|i| words[id as usize * h + i] + positions[t * h + i] + types[i]).collect())
            .collect();
        self.layer_norm(&mut x, "embeddings.LayerNorm");
        let head = h / self.heads;
        for layer in 0..self.layers {
            let p = format!("encoder.layer.{layer}");
            let q = self.linear(&x, &format!("{p}.attention.self.query"), h);
            let k = self.linear(&x, &format!("{p}.attention.self.key"), h);
            let v = self.linear(&x, &format!("{p}.attention.self.value"), h);
            let mut context = vec![vec![0.0; h]; ids.len()];
            for n in 0..self.heads {
                let range = n * head..(n + 1) * head;
                for (t, out) in context.iter_mut().enumerate() {
                    let scores: Vec<f64> = (0..ids.len())
                        .map(|s| range.clone().map(|i| q[t][i] * k[s][i]).sum::<f64>() / (head as f64).sqrt())
                        .collect();
                    let max = scores.iter().copied().fold(f64::MIN, f64::max);
                    let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = exps.iter().sum();
                    for i in range.clone() {
                        out[i] = (0..ids.len()).map(|s| exps[s] / total * v[s][i]).sum();
                    }
                }
            }
            let attended = self.linear(&context, &format!("{p}.attention.output.dense"), h);
            let mut y: Vec<Vec<f64>> =
                x.iter().zip(&attended).map(|(a, b)| a.iter().zip(b).map(|(a, b)| a + b).collect()).collect();
            self.layer_norm(&mut y, &format!("{p}.attention.output.LayerNorm"));
            let mut inner = self.linear(&y, &format!("{p}.intermediate.dense"), self.intermediate);
            for value in inner.iter_mut().flatten() {
                *value = 0.5 * *value * (1.0 + erf(*value / std::f64::consts::SQRT_2));
            }
            let out = self.linear(&inner, &format!("{p}.output.dense"), h);
            x = y.iter().zip(&out).map(|(a, b)| a.iter().zip(b).map(|(a, b)| a + b).collect()).collect();
            self.layer_norm(&mut x, &format!("{p}.output.LayerNorm"));
        }
        let pooled: Vec<f64> = if self.cls {
            x[0].clone()
        } else {
            (0..h).map(|i| x.iter().map(|row| row[i]).sum::<f64>() / ids.len() as f64).collect()
        };
        let norm = pooled.iter().map(|v| v * v).sum::<f64>().sqrt();
        pooled.iter().map(|v| (v / norm) as f32).collect()
    }
}

/// erf by its Taylor series near 0 and its continued fraction beyond,
/// both to about 1e-14.
fn erf(x: f64) -> f64 {
    let a = x.abs();
    let value = if a < 2.5 {
        let mut term = a;
        let mut sum = a;
        let mut n = 0.0;
        while term.abs() > 1e-17 {
            n += 1.0;
            term *= -a * a / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // erfc(a) = exp(-a²)/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + 2/(a + …))))).
        let mut fraction = a;
        for k in (1..60).rev() {
            fraction = a + (k as f64 / 2.0) / fraction;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / fraction
    };
    value.copysign(x)
}

#[test]
fn the_reference_erf_is_right() {
    // Values from tables (Abramowitz and Stegun, table 7.1).
    for (x, expected) in
        [(0.5, 0.520_499_877_8), (1.0, 0.842_700_792_9), (2.0, 0.995_322_265_0), (3.0, 0.999_977_909_5)]
    {
        assert!((erf(x) - expected).abs() < 1e-9, "erf({x}) = {}", erf(x));
        assert!((erf(-x) + expected).abs() < 1e-9);
    }
}

//! The SHA-256 keys that name shared index data. They are derived exactly
//! as the original implementation derives them, so repositories written by
//! either are read by both.

use sha2::{Digest as _, Sha256};

/// A SHA-256 value.
pub type Digest = [u8; 32];

fn sha256(parts: &[&[u8]]) -> Digest {
    let mut hasher = Sha256::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            hasher.update([0]);
        }
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// `packs/<model-key>/` and the manifest file name: SHA-256 of
/// `model NUL dimensions`. Schema v1 names manifests by its first 16 hex
/// characters.
pub fn model_key(model: &str, dimensions: i64) -> Digest {
    sha256(&[model.as_bytes(), dimensions.to_string().as_bytes()])
}

/// The identity of one embedding inside a pack: SHA-256 of
/// `input-hash NUL model NUL dimensions`, the same value as the local
/// store's `vector_key`.
pub fn embedding_key(input_hash: &str, model: &str, dimensions: i64) -> Digest {
    sha256(&[input_hash.as_bytes(), model.as_bytes(), dimensions.to_string().as_bytes()])
}

/// `indexes/<origin-sha256>/`: SHA-256 of the normalized origin identity.
pub fn origin_key(origin_identity: &str) -> Digest {
    sha256(&[origin_identity.as_bytes()])
}

/// The digest of a canonical payload (and of a whole pack file).
pub fn payload_digest(bytes: &[u8]) -> Digest {
    sha256(&[bytes])
}

/// The canonical payload of a vector: its values as little-endian f32.
pub fn encode_payload(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|value| value.to_le_bytes()).collect()
}

/// The vector of a canonical payload; `None` unless whole f32 values.
pub fn decode_payload(bytes: &[u8]) -> Option<Vec<f32>> {
    let chunks = bytes.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return None;
    }
    Some(chunks.map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])).collect())
}

/// Lowercase hexadecimal, the only spelling the repository accepts.
pub fn hex(digest: &Digest) -> String {
    use std::fmt::Write as _;
    digest.iter().fold(String::with_capacity(64), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

/// Whether `value` is exactly `len` lowercase hexadecimal characters.
pub fn is_lower_hex(value: &str, len: usize) -> bool {
    value.len() == len && value.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// A canonical 64-character lowercase digest, or `None`.
pub fn parse_digest(value: &str) -> Option<Digest> {
    if !is_lower_hex(value, 64) {
        return None;
    }
    let mut digest = [0u8; 32];
    for (index, pair) in value.as_bytes().chunks_exact(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        digest[index] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_key_hashes_model_nul_dimensions() {
        // printf 'text-embedding-3-small\0001536' | sha256sum
        assert_eq!(
            hex(&model_key("text-embedding-3-small", 1536)),
            "74695603c2a07044c4c3846b049a3e47093f9bbc8a32cb4e82f2a9adb9d6307d"
        );
    }

    #[test]
    fn embedding_key_matches_the_local_store_key() {
        // printf 'abc\000model\0008' | sha256sum
        let key = hex(&embedding_key("abc", "model", 8));
        assert_eq!(key, "593373a438a43ad60733a937523dea009035cc3b8f580338b3ed576c081e0381");
        assert_eq!(key, gitagent_search::index::store::vector_key("abc", "model", 8));
    }

    #[test]
    fn payloads_are_little_endian_f32() {
        let payload = encode_payload(&[1.0, -2.5]);
        assert_eq!(payload, [0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0]);
        assert_eq!(decode_payload(&payload).unwrap(), vec![1.0, -2.5]);
        assert_eq!(decode_payload(&payload[..7]), None);
    }

    #[test]
    fn digests_parse_only_in_canonical_spelling() {
        let digest = payload_digest(b"x");
        assert_eq!(parse_digest(&hex(&digest)), Some(digest));
        assert_eq!(parse_digest(&hex(&digest).to_uppercase()), None);
        assert_eq!(parse_digest(&hex(&digest)[..63]), None);
        assert!(is_lower_hex("0123456789abcdef", 16));
        assert!(!is_lower_hex("0123456789abcdeg", 16));
    }
}

//! `schema.json`: the mandatory document at the root of the sync
//! repository. It is parsed completely (no unknown member, no trailing
//! value) before any index data is read, committed or pushed, and only the
//! versions this build understands are accepted.

use super::FormatError;
use serde::Deserialize;

/// The layouts of the sync repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SchemaVersion {
    /// Per-revision JSON snapshots holding complete vector records.
    V1,
    /// Content-addressed vector packs plus per-revision manifests.
    V2,
}

impl SchemaVersion {
    pub fn number(self) -> u64 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaDocument {
    version: u64,
}

/// Parses a complete `schema.json`.
pub fn parse(bytes: &[u8]) -> Result<SchemaVersion, FormatError> {
    // `from_slice` refuses trailing values; `deny_unknown_fields` unknown
    // members; a missing or non-integer version fails the typed field.
    let document: SchemaDocument = serde_json::from_slice(bytes).map_err(FormatError::SchemaJson)?;
    match document.version {
        1 => Ok(SchemaVersion::V1),
        2 => Ok(SchemaVersion::V2),
        other => Err(FormatError::SchemaUnsupported(other)),
    }
}

/// The bytes of `schema.json` for `version`, as every writer produces them.
pub fn bytes(version: SchemaVersion) -> Vec<u8> {
    format!("{{\"version\":{}}}\n", version.number()).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_versions_round_trip() {
        for version in [SchemaVersion::V1, SchemaVersion::V2] {
            assert_eq!(parse(&bytes(version)).unwrap(), version);
        }
        assert_eq!(bytes(SchemaVersion::V2), b"{\"version\":2}\n");
        assert_eq!(parse(b" { \"version\" : 1 } ").unwrap(), SchemaVersion::V1);
    }

    #[test]
    fn future_versions_are_refused() {
        for document in [&b"{\"version\":3}"[..], b"{\"version\":0}"] {
            assert!(matches!(parse(document), Err(FormatError::SchemaUnsupported(_))), "{document:?}");
        }
    }

    #[test]
    fn malformed_documents_are_refused() {
        for document in [
            &b""[..],
            b"{}",
            b"[]",
            b"{\"version\":\"2\"}",
            b"{\"version\":2.5}",
            b"{\"version\":-1}",
            b"{\"version\":2,\"packs\":true}",
            b"{\"version\":2}{\"version\":2}",
            b"{\"version\":2,\"version\":2}",
            b"{\"version\":2",
        ] {
            assert!(
                matches!(parse(document), Err(FormatError::SchemaMalformed(_) | FormatError::SchemaJson(_))),
                "{document:?}"
            );
        }
    }
}

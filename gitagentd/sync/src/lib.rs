//! Search indexes shared between machines through the dedicated
//! `index.remote` Git repository (the spec's schema v1 and v2).
//!
//! The formats are pure functions over bytes and paths, so every rule of
//! the repository layout is tested without Git:
//! - [`schema`]: `schema.json`, parsed completely before anything else;
//! - [`keys`]: the SHA-256 keys naming origins, models, embeddings and payloads;
//! - [`pack`]: schema-v2 content-addressed vector packs;
//! - [`manifest`]: schema-v1 snapshots and schema-v2 manifests, validated field by field;
//! - [`merge`]: the merge rules of concurrent writers;
//! - [`tree`]: the allowed paths of the work tree (anything else is an unsafe tree);
//! - [`repo`] and [`sync`]: the dedicated Git repository and one fetch-commit-push round trip;
//! - [`migrate`] and [`validate`]: `index migrate --to v2` and the strict check of a whole v2 tree;
//! - [`gc`]: `index gc`, the local store's and the sync repository's garbage collection.

pub mod catalog;
pub mod confirm;
pub mod gc;
pub mod keys;
pub mod local;
pub mod manifest;
pub mod merge;
pub mod migrate;
pub mod pack;
pub mod repo;
pub mod schema;
pub mod sync;
pub mod tree;
pub mod validate;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

/// Why shared index data was refused. Every variant names what was wrong;
/// none carries vector data or a credential.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("index sync schema.json is malformed: {0}")]
    SchemaMalformed(String),
    #[error("index sync schema.json is malformed: {0}")]
    SchemaJson(#[source] serde_json::Error),
    #[error("index sync schema version {0} is not supported by this git-agent\nhint: upgrade git-agent")]
    SchemaUnsupported(u64),
    #[error("index sync repository has data but no schema.json")]
    SchemaMissing,
    #[error("vector pack {name} is invalid: {reason}")]
    Pack { name: String, reason: String },
    #[error("synced index {path} is invalid: {reason}")]
    Manifest { path: String, reason: String },
    #[error("synced index {path} is invalid: {source}")]
    ManifestJson { path: String, source: serde_json::Error },
    #[error("synced index {path} does not belong to the selected revision: {field} differs")]
    Mismatch { path: String, field: &'static str },
    #[error("index sync target is invalid: {0}")]
    Target(&'static str),
    #[error("synced index record {identity} has conflicting vector payloads")]
    ConflictingPayload { identity: String },
    #[error("synced index contains conflicting payloads for embedding key {key}")]
    ConflictingEmbedding { key: String },
    #[error("content-addressed vector pack {path} already holds different bytes")]
    PackCollision { path: String },
    #[error("index sync repository contains unsafe path {}", .0.display())]
    UnsafePath(PathBuf),
    #[error("index sync repository contains symlink {}", .0.display())]
    Symlink(PathBuf),
    #[error("index sync repository contains non-regular file {}", .0.display())]
    NonRegular(PathBuf),
    #[error("cannot read the index sync repository at {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

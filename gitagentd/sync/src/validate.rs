//! Strict validation of a complete staged schema-v2 tree, shared by
//! `index migrate` (which revalidates the tree it built before publishing
//! it) and the shared phase of `index gc` (which computes pack reachability
//! from it).
//!
//! Every pack must decode under its content address and model directory
//! (the cached derived catalog is never trusted here);
//! every manifest must name exactly the path its metadata derives and
//! resolve every record through the packs (see [`super::manifest::resolve_v2`]).

use super::FormatError;
use super::keys;
use super::manifest::{self, Target};
use super::repo::{Staged, SyncError};
use super::schema::SchemaVersion;
use super::tree::{self, TreeEntry, TreeRules};
use std::collections::{BTreeMap, BTreeSet};

/// What a validated schema-v2 tree holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeReport {
    /// Every pack path with its logical size.
    pub packs: BTreeMap<String, u64>,
    /// The pack paths some manifest refers to.
    pub referenced: BTreeSet<String>,
    /// How many manifests the tree holds.
    pub manifests: usize,
    /// Distinct (embedding, payload) pairs stored by the packs.
    pub unique_vectors: usize,
    /// The logical size of every tracked file (schema, manifests, packs).
    pub bytes: u64,
}

impl TreeReport {
    /// The packs no manifest refers to, by path.
    pub fn unreferenced(&self) -> Vec<(String, u64)> {
        self.packs
            .iter()
            .filter(|(path, _)| !self.referenced.contains(*path))
            .map(|(path, size)| (path.clone(), *size))
            .collect()
    }
}

/// Validates every pack and manifest of `staged` (a schema-v2 tree).
pub fn validate_v2(staged: &mut Staged<'_>) -> Result<TreeReport, SyncError> {
    if staged.schema != SchemaVersion::V2 {
        return Err(FormatError::SchemaMalformed(format!(
            "expected schema version 2, found {}",
            staged.schema.number()
        ))
        .into());
    }
    // Every pack is decoded and verified: strict validation never trusts
    // the cached catalog.
    let mut report = TreeReport { unique_vectors: staged.verify_packs()?.len(), ..TreeReport::default() };
    let files: Vec<(String, gix::ObjectId)> = staged.files().iter().map(|(path, id)| (path.clone(), *id)).collect();
    for (path, id) in files {
        let size = staged.repo().blob_size(id)?;
        report.bytes += size;
        match tree::classify(&path, false, TreeRules::Strict(SchemaVersion::V2)) {
            Some(TreeEntry::Pack { .. }) => {
                report.packs.insert(path, size);
            }
            Some(TreeEntry::ManifestV2 { .. }) => {
                let bytes = staged.read(&path)?.unwrap_or_default();
                let parsed = manifest::parse_v2(&bytes, &path)?;
                let target = target_at(&path, &parsed.origin, &parsed.revision, &parsed.model, parsed.dimensions)?;
                if target.manifest_path(SchemaVersion::V2)? != path {
                    return Err(path_mismatch(&path).into());
                }
                staged.import(&target)?;
                let model_key = keys::hex(&target.model_key());
                report.referenced.extend(parsed.packs.iter().map(|digest| format!("packs/{model_key}/{digest}.pack")));
                report.manifests += 1;
            }
            _ => {}
        }
    }
    Ok(report)
}

/// The target a manifest's metadata describes; invalid metadata is a
/// malformed manifest at `path`.
pub(super) fn target_at(
    path: &str,
    origin: &str,
    revision: &str,
    model: &str,
    dimensions: i64,
) -> Result<Target, FormatError> {
    let target =
        Target { origin: origin.to_string(), revision: revision.to_string(), model: model.to_string(), dimensions };
    target.validate().map_err(|error| FormatError::Manifest { path: path.to_string(), reason: error.to_string() })?;
    Ok(target)
}

/// A manifest stored under another path than its metadata derives.
pub(super) fn path_mismatch(path: &str) -> FormatError {
    FormatError::Manifest { path: path.to_string(), reason: "its metadata does not match its path".into() }
}

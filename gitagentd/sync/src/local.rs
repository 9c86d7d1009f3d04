//! This machine's indexes that `git-agent index sync` exports: every
//! completed revision or cached-remote index whose source origin is
//! identifiable, found under `~/.git-agent/<id>/search/` and
//! `~/.git-agent/remotes/<id>/search/`. Filesystem indexes, the sync
//! repository, cached bare repositories and lock folders are never entered
//! or exported.

use super::keys;
use super::manifest::{SyncRecord, Target};
use super::sync::{Export, ExportSource, Skipped};
use gitagent_search::index::store::{self, Manifest};
use std::path::{Path, PathBuf};

const MANIFEST: &str = "manifest.json";

/// One exportable index.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub target: Target,
    pub metadata_dir: PathBuf,
    pub index_dir: PathBuf,
}

/// What the scan found.
#[derive(Debug, Default)]
pub struct Inventory {
    pub candidates: Vec<Candidate>,
    /// Index folders with a manifest that cannot be exported (malformed,
    /// unknown version, no resolved revision, no identifiable origin).
    pub skipped: Vec<Skipped>,
}

/// Scans `metadata_root` (`~/.git-agent`).
pub fn inventory(metadata_root: &Path) -> Inventory {
    let mut inventory = Inventory::default();
    let mut roots = metadata_roots(metadata_root);
    roots.extend(metadata_roots(&metadata_root.join("remotes")));
    for metadata_dir in roots {
        for index_dir in manifest_dirs(&metadata_dir) {
            let Some(manifest) = store::read_manifest(&index_dir) else {
                let reason = "its manifest is malformed or of an unknown version".to_string();
                inventory.skipped.push(Skipped { index_dir, reason });
                continue;
            };
            if manifest.mode != "revision" && manifest.mode != "remote" {
                continue;
            }
            match target_of(&manifest) {
                Ok(target) => {
                    inventory.candidates.push(Candidate { target, metadata_dir: metadata_dir.clone(), index_dir })
                }
                Err(reason) => inventory.skipped.push(Skipped { index_dir, reason }),
            }
        }
    }
    inventory
}

/// The direct `<64 hex>` folders of `dir` (never symlinks).
fn metadata_roots(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter(|entry| entry.file_name().to_str().is_some_and(|name| keys::is_lower_hex(name, 64)))
        .map(|entry| entry.path())
        .collect();
    out.sort();
    out
}

/// Every folder below `<metadata_dir>/search` holding a `manifest.json`.
fn manifest_dirs(metadata_dir: &Path) -> Vec<PathBuf> {
    let store_dir = store::store_dir(metadata_dir);
    let mut out = Vec::new();
    let mut pending = vec![store::search_root(metadata_dir)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            let name = entry.file_name();
            if is_dir && name != "query-locks" && name != "repo.git" && entry.path() != store_dir {
                pending.push(entry.path());
            }
        }
        if dir.join(MANIFEST).is_file() {
            out.push(dir);
        }
    }
    out.sort();
    out
}

/// The sync target a manifest describes, or why it has none.
fn target_of(manifest: &Manifest) -> Result<Target, String> {
    let origin = if !manifest.origin_identity.is_empty() {
        manifest.origin_identity.clone()
    } else if manifest.mode == "remote" && is_network_url(&manifest.remote) {
        git_agent_shared::giturl::identity(&manifest.remote, Path::new("/"))
    } else if manifest.mode == "remote" {
        return Err("it indexes a local-path remote, which no other machine can name".to_string());
    } else {
        return Err("its repository had no origin when it was indexed, so no other machine can name it".to_string());
    };
    let target = Target {
        origin,
        revision: manifest.resolved_rev.clone(),
        model: manifest.embedding_model.clone(),
        dimensions: manifest.dimensions,
    };
    target.validate().map_err(|error| format!("its manifest does not describe a shareable revision: {error}"))?;
    Ok(target)
}

/// A remote another machine names the same way (not a local path).
fn is_network_url(value: &str) -> bool {
    let value = value.trim();
    if value.is_empty() || value.starts_with('/') || value.starts_with('.') || value.starts_with("file:") {
        return false;
    }
    value.contains("://") || value.split_once(':').is_some_and(|(host, _)| !host.contains('/'))
}

/// Reads a candidate's records with their vectors, or says why the index
/// cannot be exported: incomplete, corrupt, or holding records of another
/// model.
pub fn load(candidate: &Candidate) -> Result<Export, Skipped> {
    let skipped = |reason: String| Skipped { index_dir: candidate.index_dir.clone(), reason };
    let snapshot = store::load(&candidate.metadata_dir, &candidate.index_dir, &|| false)
        .map_err(|error| skipped(format!("it cannot be read: {error}")))?;
    if !snapshot.is_complete() {
        return Err(skipped("it is incomplete (an interrupted build)".to_string()));
    }
    let target = &candidate.target;
    let mut records = Vec::with_capacity(snapshot.records.len());
    for (index, record) in snapshot.records.iter().enumerate() {
        let vector = snapshot
            .vector(index)
            .ok_or_else(|| skipped(format!("the vector of chunk {} is missing or corrupt", record.chunk_id())))?;
        let record = SyncRecord::new(record.to_index_record(), vector);
        if !record.is_compatible(&target.model, target.dimensions) {
            return Err(skipped(format!(
                "chunk {} is not a {} vector of {} dimensions",
                record.chunk.chunk_id, target.model, target.dimensions
            )));
        }
        records.push(record);
    }
    Ok(Export { target: target.clone(), records })
}

/// An inventory as a publication source.
impl ExportSource for Inventory {
    fn count(&self) -> usize {
        self.candidates.len()
    }

    fn load(&self, index: usize) -> Result<Export, Skipped> {
        let candidate = self
            .candidates
            .get(index)
            .ok_or_else(|| Skipped { index_dir: Default::default(), reason: format!("no candidate number {index}") })?;
        load(candidate)
    }
}

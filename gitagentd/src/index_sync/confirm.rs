//! Search confirmed against `index.remote`: before a revision (or remote)
//! search ensures its local index, the remote's records of that revision
//! are imported, so a revision another machine already embedded costs no
//! embedding; after the search has persisted its index, this machine's
//! records are published. Remote failures fail the search: there is no
//! silent local fallback.
//!
//! Only revision indexes are shared: working-tree vectors, query history,
//! absolute roots, locks, temporary files, auth data and cached bare
//! repositories never leave the machine. Selections without an
//! identifiable origin stay local-only.

use super::local::{self, Candidate};
use super::manifest::{SyncRecord, Target};
use super::repo::SyncError;
use super::sync::Endpoint;
use crate::search::store::{self, IndexRecord, Manifest, RecordToWrite, VectorData};
use crate::search::{Selection, revision};
use git_agent_shared::config_file::ConfigFile;
use git_agent_shared::{Environment, giturl, paths, timefmt};
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// The confirmation of one search's revision index.
#[derive(Debug, Clone)]
pub struct Confirmation {
    endpoint: Endpoint,
    candidate: Candidate,
    mode: &'static str,
    remote: String,
}

/// The confirmation a search of `selection` needs: `None` when
/// `index.remote` is unset or the selection is not a shareable revision.
pub async fn prepare(
    env: &Environment,
    selection: &Selection,
    model: &str,
    dimensions: usize,
) -> Result<Option<Confirmation>, SyncError> {
    let Some(revision) = &selection.revision else {
        return Ok(None);
    };
    let config_path = paths::config_file(env).map_err(|error| io_error(Path::new("~"), error))?;
    let path = config_path.clone();
    let config = crate::blocking::run_to_end("the configuration file", move || ConfigFile::load(&path))
        .await
        .map_err(|_| SyncError::Cancelled)?
        .map_err(|error| io_error(&config_path, error))?;
    if config.index.remote.is_empty() {
        return Ok(None);
    }
    let origin = if !selection.origin_identity.is_empty() {
        selection.origin_identity.clone()
    } else if !revision.remote.is_empty() && !revision.remote.starts_with('/') && !revision.remote.starts_with("file:")
    {
        giturl::identity(&revision.remote, Path::new("/"))
    } else {
        return Ok(None);
    };
    let target = Target {
        origin,
        revision: revision.resolved.clone(),
        model: model.to_string(),
        dimensions: i64::try_from(dimensions).unwrap_or(0),
    };
    if target.validate().is_err() {
        return Ok(None);
    }
    let metadata_root = paths::metadata_root(env).map_err(|error| io_error(Path::new("~"), error))?;
    let endpoint = Endpoint::new(&config.index.remote, &metadata_root, env)?;
    let index_dir = revision::index_dir(&selection.metadata_dir, &revision.resolved, None);
    Ok(Some(Confirmation {
        endpoint,
        candidate: Candidate { target, metadata_dir: selection.metadata_dir.clone(), index_dir },
        mode: selection.mode(),
        remote: revision.remote.clone(),
    }))
}

fn io_error(path: &Path, error: impl std::fmt::Display) -> SyncError {
    SyncError::Io { dir: path.to_path_buf(), source: std::io::Error::other(error.to_string()) }
}

impl Confirmation {
    /// Imports the remote's records of the revision as the local revision
    /// index when this machine has none yet; returns the records imported.
    pub async fn import(&self, cancel: &CancellationToken) -> Result<usize, SyncError> {
        let Some(records) = self.endpoint.import(self.candidate.target.clone(), cancel).await? else {
            return Ok(0);
        };
        let this = self.clone();
        let token = cancel.clone();
        crate::blocking::run_to_end("the imported revision index", move || this.publish_locally(records, &token))
            .await
            .map_err(|_| SyncError::Cancelled)?
    }

    fn publish_locally(&self, records: Vec<SyncRecord>, cancel: &CancellationToken) -> Result<usize, SyncError> {
        let index_dir = &self.candidate.index_dir;
        if store::read_manifest(index_dir).is_some() || records.is_empty() {
            return Ok(0);
        }
        let target = &self.candidate.target;
        let manifest = Manifest {
            mode: self.mode.into(),
            remote: self.remote.clone(),
            resolved_rev: target.revision.clone(),
            origin_identity: target.origin.clone(),
            embedding_model: target.model.clone(),
            dimensions: target.dimensions,
            created_at: timefmt::format_rfc3339(jiff::Timestamp::now()),
            ..Manifest::default()
        };
        let to_write = records
            .iter()
            .map(|record| RecordToWrite {
                record: index_record(record),
                vector: VectorData::Values(&record.vector),
                stored: None,
            })
            .collect();
        let publication = store::Publication {
            metadata_dir: &self.candidate.metadata_dir,
            index_dir,
            manifest,
            records: to_write,
            force_new: false,
            crash_at: None,
        };
        store::publish(publication, &|| cancel.is_cancelled()).map_err(|error| SyncError::Io {
            dir: index_dir.clone(),
            source: std::io::Error::other(error.to_string()),
        })?;
        Ok(records.len())
    }

    /// Publishes the local revision index (after the search persisted it).
    pub async fn publish(&self, cancel: &CancellationToken) -> Result<(), SyncError> {
        let candidate = self.candidate.clone();
        let export = crate::blocking::run_to_end("the revision index", move || local::load(&candidate))
            .await
            .map_err(|_| SyncError::Cancelled)?;
        if let Some(export) = export {
            self.endpoint.publish(vec![export], cancel).await?;
        }
        Ok(())
    }
}

/// A shared record as the local store keeps it.
fn index_record(record: &SyncRecord) -> IndexRecord {
    IndexRecord {
        chunk_id: record.chunk_id.clone(),
        path: record.path.clone(),
        source: record.source.clone(),
        blob: record.blob.clone(),
        start_line: record.start_line,
        end_line: record.end_line,
        content_hash: record.content_hash.clone(),
        embedding_input_hash: record.embedding_input_hash.clone(),
        embedding_model: record.embedding_model.clone(),
        dimensions: record.dimensions,
        size: record.size,
        mtime_unix_nano: record.mtime_unix_nano,
        ..IndexRecord::default()
    }
}

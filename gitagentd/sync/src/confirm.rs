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
use super::merge;
use super::repo::SyncError;
use super::sync::Endpoint;
use git_agent_shared::config_file::ConfigFile;
use git_agent_shared::{Environment, giturl, paths, timefmt};
use gitagent_search::Selection;
use gitagent_search::index::store::{self, Manifest, RecordToWrite, VectorData};
use gitagent_search::source::revision;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// The confirmation of one search's revision index.
#[derive(Debug, Clone)]
pub struct Confirmation {
    endpoint: Endpoint,
    candidate: Candidate,
    mode: &'static str,
    remote: String,
    /// The remote's records of the revision as [`Self::import`] read them:
    /// [`Self::publish`] skips the round trip when the local index holds
    /// nothing beyond them (decoding the remote snapshot a second time to
    /// find that out was most of a reusing search's cost).
    imported: Arc<Mutex<Option<Vec<SyncRecord>>>>,
}

/// The configured `index.remote`, or `None` when it is unset.
pub async fn configured_remote(env: &Environment) -> Result<Option<String>, SyncError> {
    let config_path = paths::config_file(env).map_err(|error| io_error(Path::new("~"), error))?;
    let path = config_path.clone();
    let config = gitagent_runtime::blocking::run_to_end("the configuration file", move || ConfigFile::load(&path))
        .await
        .map_err(|_| SyncError::Cancelled)?
        .map_err(|error| io_error(&config_path, error))?;
    Ok(Some(config.index.remote).filter(|remote| !remote.is_empty()))
}

/// The confirmation a search of `selection` that began at `started`
/// needs: `None` when `index.remote` is unset or the selection is not a
/// shareable revision.
pub async fn prepare(
    env: &Environment,
    selection: &Selection,
    model: &str,
    dimensions: usize,
    started: Instant,
) -> Result<Option<Confirmation>, SyncError> {
    let Some(revision) = &selection.revision else {
        return Ok(None);
    };
    let Some(index_remote) = configured_remote(env).await? else {
        return Ok(None);
    };
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
    let endpoint = Endpoint::new(&index_remote, &metadata_root, env)?.reusing_since(started);
    let index_dir = revision::index_dir(&selection.metadata_dir, &revision.resolved, None);
    Ok(Some(Confirmation {
        endpoint,
        candidate: Candidate { target, metadata_dir: selection.metadata_dir.clone(), index_dir },
        mode: selection.mode(),
        remote: revision.remote.clone(),
        imported: Arc::default(),
    }))
}

fn io_error(path: &Path, error: impl std::fmt::Display) -> SyncError {
    SyncError::Io { dir: path.to_path_buf(), source: std::io::Error::other(error.to_string()) }
}

impl Confirmation {
    /// This confirmation with test-only fault injection.
    pub fn with_crash_at(mut self, crash_at: Option<store::CrashPoint>) -> Self {
        self.endpoint.crash_at = crash_at;
        self
    }

    /// Imports the remote's records of the revision into the local
    /// revision index; returns the records the local index gained.
    pub async fn import(&self, cancel: &CancellationToken) -> Result<usize, SyncError> {
        let Some(records) = self.endpoint.import(self.candidate.target.clone(), cancel).await? else {
            return Ok(0);
        };
        let this = self.clone();
        let token = cancel.clone();
        gitagent_runtime::blocking::run_to_end("the imported revision index", move || {
            let gained = this.publish_locally(&records, &token)?;
            *this.imported.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(records);
            Ok(gained)
        })
        .await
        .map_err(|_| SyncError::Cancelled)?
    }

    /// Publishes the imported records as the local revision index: alone
    /// when this machine has no complete index of the revision, merged
    /// (compatible records by identity; conflicting payloads fail) into
    /// the one it has otherwise. Returns the records the local index
    /// gained.
    fn publish_locally(&self, records: &[SyncRecord], cancel: &CancellationToken) -> Result<usize, SyncError> {
        if records.is_empty() {
            return Ok(0);
        }
        let index_dir = &self.candidate.index_dir;
        let target = &self.candidate.target;
        let existing = store::read_manifest(index_dir)
            .and_then(|manifest| local::load(&self.candidate).ok().map(|local| (manifest, local)));
        let (manifest, records, gained) = match existing {
            Some((manifest, local)) => {
                let before = local.records.len();
                let merged = merge::merge_strict(local.records, records.to_vec(), &target.model, target.dimensions)?;
                if merged.len() == before {
                    return Ok(0);
                }
                let gained = merged.len() - before;
                (manifest, merged, gained)
            }
            None => {
                let manifest = Manifest {
                    mode: self.mode.into(),
                    remote: self.remote.clone(),
                    resolved_rev: target.revision.clone(),
                    origin_identity: target.origin.clone(),
                    embedding_model: target.model.clone(),
                    dimensions: target.dimensions,
                    ..Manifest::default()
                };
                let gained = records.len();
                (manifest, records.to_vec(), gained)
            }
        };
        let manifest = Manifest { created_at: timefmt::format_rfc3339(jiff::Timestamp::now()), ..manifest };
        let to_write = records
            .iter()
            .map(|record| RecordToWrite {
                record: record.chunk.clone(),
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
        Ok(gained)
    }

    /// Publishes the local revision index (after the search persisted it),
    /// unless every one of its records is one this search imported: the
    /// remote already holds them, and it never prunes a revision.
    /// Returns whether a publication ran.
    pub async fn publish(&self, cancel: &CancellationToken) -> Result<bool, SyncError> {
        let this = self.clone();
        let export = gitagent_runtime::blocking::run_to_end("the revision index", move || {
            local::load(&this.candidate).ok().filter(|export| !this.already_shared(&export.records))
        })
        .await
        .map_err(|_| SyncError::Cancelled)?;
        let Some(export) = export else {
            return Ok(false);
        };
        self.endpoint.publish(vec![export], cancel).await?;
        Ok(true)
    }

    /// Whether merging `local` into the imported records adds nothing. A
    /// conflict is not decided here: the publication reports it.
    fn already_shared(&self, local: &[SyncRecord]) -> bool {
        let imported = self.imported.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(remote) = imported.as_ref() else {
            return false;
        };
        let target = &self.candidate.target;
        // The merge keeps the imported record of every identity both hold
        // (their payloads being equal), so it grows only by new records.
        merge::merge_strict(remote.clone(), local.to_vec(), &target.model, target.dimensions)
            .is_ok_and(|merged| merged.len() == remote.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::tests::{World, record, target};

    /// A confirmation of `target()` on `endpoint`, its local index under
    /// `metadata_dir`.
    fn confirmation(endpoint: Endpoint, metadata_dir: &Path) -> Confirmation {
        let target = target();
        let index_dir = revision::index_dir(metadata_dir, &target.revision, None);
        Confirmation {
            endpoint,
            candidate: Candidate { target, metadata_dir: metadata_dir.to_path_buf(), index_dir },
            mode: "revision",
            remote: String::new(),
            imported: Arc::default(),
        }
    }

    #[tokio::test]
    async fn a_search_that_added_nothing_to_the_imported_records_publishes_nothing() {
        let world = World::new("main");
        let mut endpoint = world.machine("b");
        // An unreachable remote: any publication attempt fails.
        endpoint.remote = gitagent_search::source::remote::Remote::new(
            "/nonexistent/index.git",
            Path::new("/"),
            &world.root,
            &endpoint.env,
        )
        .unwrap();
        let metadata_dir = world.root.join("b").join(".git-agent").join("a".repeat(64));
        let confirmation = confirmation(endpoint, &metadata_dir);
        let records = vec![record("a.go", "i-a", [1.0, 0.0, 0.0]), record("b.go", "i-b", [0.0, 1.0, 0.0])];
        let cancel = CancellationToken::new();
        assert_eq!(confirmation.publish_locally(&records, &cancel).unwrap(), 2);
        assert_eq!(local::load(&confirmation.candidate).unwrap().records.len(), 2);

        // Every local record was imported: no round trip with the remote.
        *confirmation.imported.lock().unwrap() = Some(records.clone());
        assert!(!confirmation.publish(&cancel).await.unwrap());

        // The local index holds a record the remote lacks: it is published
        // (and here fails, proving the attempt).
        *confirmation.imported.lock().unwrap() = Some(records[..1].to_vec());
        let error = confirmation.publish(&cancel).await.unwrap_err();
        assert!(matches!(error, SyncError::Fetch { .. }), "{error}");
        // Nothing imported (the remote had no records): published too.
        *confirmation.imported.lock().unwrap() = None;
        assert!(confirmation.publish(&cancel).await.is_err());
    }
}

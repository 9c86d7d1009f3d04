//! Metadata migrations, run by a search under the global index single
//! flight before it writes anything:
//!
//! 1. a legacy `<project>/.git-agent/` folder moves into the home metadata
//!    folder: its search data is merged into the project's search store
//!    (step 2's merge), everything else moves entry by entry into
//!    `~/.git-agent/<path-sha>/`;
//! 2. completed search data under the absolute-path key
//!    (`~/.git-agent/<path-sha>/search/`) is merged into the origin-keyed
//!    store of a repository with an origin, and the obsolete tree removed.
//!
//! Both are crash-safe by being idempotent steps in a fixed order. An
//! index is merged by publishing it into the target store (the store's own
//! protocol: the manifest is written last), recognised afterwards by its
//! manifest (same creation time, model and dimensions), so a rerun skips
//! what was merged and redoes what was not; the source tree is removed only
//! after every index is in place. An entry of the legacy folder moves with
//! one rename (a copy to a temporary name then a rename across
//! filesystems), so a rerun moves what is left. Never half-applied: a
//! target index is complete or absent, a moved entry whole or still in the
//! legacy folder.

use super::store::{self, CrashPoint, Manifest, Publication, RecordToWrite, StoreError, VectorData};
use git_agent_shared::private_fs;
use gitagent_git::identity::sha256_hex;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The legacy per-project folder's name.
const LEGACY_DIR: &str = ".git-agent";

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("cannot migrate search metadata: cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io_error<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> MigrateError + 'a {
    move |source| MigrateError::Io { action, path: path.to_path_buf(), source }
}

/// What a run of the migrations did (for `--debug` and tests).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Migrated {
    pub legacy_entries: usize,
    pub indexes: usize,
}

/// The project's path-keyed metadata folder.
pub fn path_keyed_dir(metadata_root: &Path, project_root: &Path) -> PathBuf {
    let clean = git_agent_shared::giturl::clean_path(&project_root.to_string_lossy());
    metadata_root.join(sha256_hex(clean.as_bytes()))
}

/// Runs both migrations for the project at `project_root` whose search
/// store is `metadata_dir` (under `metadata_root`).
pub fn run(
    project_root: &Path,
    metadata_root: &Path,
    metadata_dir: &Path,
    crash_at: Option<CrashPoint>,
    cancelled: &dyn Fn() -> bool,
) -> Result<Migrated, MigrateError> {
    let mut migrated = Migrated::default();
    let path_dir = path_keyed_dir(metadata_root, project_root);
    let legacy = project_root.join(LEGACY_DIR);
    if is_legacy_folder(&legacy, metadata_root) {
        migrated.indexes += merge_search(&legacy, metadata_dir, crash_at, cancelled)?;
        private_fs::ensure_private_dir(&path_dir).map_err(io_error("create", &path_dir))?;
        migrated.legacy_entries += move_entries(&legacy, &path_dir, crash_at)?;
        fs::remove_dir(&legacy).map_err(io_error("remove", &legacy))?;
    }
    if path_dir != metadata_dir {
        migrated.indexes += merge_search(&path_dir, metadata_dir, crash_at, cancelled)?;
    }
    Ok(migrated)
}

/// The part of step 1 that needs no search lock, for project commands
/// other than search (a task launch): every entry of a legacy
/// `<project>/.git-agent/` folder but its `search/` moves into the
/// path-keyed home folder; `search/` waits for the next search, which
/// merges it and removes the legacy folder.
pub fn move_legacy_metadata(project_root: &Path, metadata_root: &Path) -> Result<usize, MigrateError> {
    let legacy = project_root.join(LEGACY_DIR);
    if !is_legacy_folder(&legacy, metadata_root) {
        return Ok(0);
    }
    let path_dir = path_keyed_dir(metadata_root, project_root);
    private_fs::ensure_private_dir(&path_dir).map_err(io_error("create", &path_dir))?;
    let moved = move_entries_except(&legacy, &path_dir, Some("search"), None)?;
    if !legacy.join("search").exists() {
        fs::remove_dir(&legacy).map_err(io_error("remove", &legacy))?;
    }
    Ok(moved)
}

/// A real folder (not a link) that is not the home metadata root itself
/// (a project at `$HOME`) nor inside it.
fn is_legacy_folder(legacy: &Path, metadata_root: &Path) -> bool {
    let Ok(metadata) = fs::symlink_metadata(legacy) else { return false };
    if !metadata.is_dir() {
        return false;
    }
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let (legacy, root) = (canonical(legacy), canonical(metadata_root));
    !(root.starts_with(&legacy) || legacy.starts_with(&root))
}

/// Merges every complete index under `source/search/` into the search
/// store of `target`, then removes `source/search/`. Returns how many
/// indexes were published.
fn merge_search(
    source: &Path,
    target: &Path,
    crash_at: Option<CrashPoint>,
    cancelled: &dyn Fn() -> bool,
) -> Result<usize, MigrateError> {
    let source_root = store::search_root(source);
    if !source_root.is_dir() {
        return Ok(0);
    }
    let target_root = store::search_root(target);
    // A source index whose place in the target is taken goes beside it,
    // where reuse across indexes still finds its vectors.
    let beside = target_root.join(format!("migrated-{}", &sha256_hex(source.to_string_lossy().as_bytes())[..16]));
    let mut published = 0;
    for dir in store::complete_index_dirs(source) {
        let Ok(relative) = dir.strip_prefix(&source_root) else { continue };
        let snapshot = store::load(source, &dir, cancelled)?;
        if !snapshot.is_complete() {
            continue;
        }
        let manifest = &snapshot.manifest;
        let same = |candidate: &Path| store::read_manifest(candidate).is_some_and(|found| is_copy_of(&found, manifest));
        let (primary, secondary) = (target_root.join(relative), beside.join(relative));
        if same(&primary) || same(&secondary) {
            continue;
        }
        let index_dir = if store::read_manifest(&primary).is_some() { secondary } else { primary };
        let records: Vec<RecordToWrite> = snapshot
            .records
            .iter()
            .enumerate()
            .filter_map(|(index, record)| {
                let vector = snapshot.vector(index)?;
                Some(RecordToWrite {
                    record: record.to_index_record().without_payload_reference(),
                    vector: VectorData::Values(vector),
                    stored: None,
                })
            })
            .collect();
        store::publish(
            Publication {
                metadata_dir: target,
                index_dir: &index_dir,
                manifest: manifest.clone(),
                records,
                force_new: false,
                crash_at: None,
            },
            cancelled,
        )?;
        published += 1;
        store::crash_if(crash_at, CrashPoint::MigrateSearch);
    }
    move_history(&source_root, &target_root)?;
    fs::remove_dir_all(&source_root).map_err(io_error("remove", &source_root))?;
    Ok(published)
}

/// Moves the query history database of `source_root` to `target_root`
/// when the target has none. Its write-ahead log is folded into the
/// database first (a checkpoint), so the one file moved holds every query,
/// and no database is ever separated from the log it needs. No connection
/// is open on it: the search service forgets its handles on the source
/// before migrating.
fn move_history(source_root: &Path, target_root: &Path) -> Result<(), MigrateError> {
    let history = source_root.join("history.sqlite3");
    let target = target_root.join("history.sqlite3");
    if !history.is_file() || target.exists() {
        return Ok(());
    }
    let checkpoint = rusqlite::Connection::open(&history)
        .and_then(|connection| connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())));
    if let Err(error) = checkpoint {
        return Err(MigrateError::Io { action: "checkpoint", path: history, source: io::Error::other(error) });
    }
    fs::rename(&history, &target).map_err(io_error("move", &history))
}

/// Whether `found` is the publication of `source` by an earlier run.
fn is_copy_of(found: &Manifest, source: &Manifest) -> bool {
    found.created_at == source.created_at
        && found.embedding_model == source.embedding_model
        && found.dimensions == source.dimensions
        && found.mode == source.mode
}

/// Moves every entry of `from` into `to`: whole when `to` has no entry of
/// that name, merged when both are folders; an entry `to` already has wins
/// (it is what the current version wrote). Returns how many entries moved.
fn move_entries(from: &Path, to: &Path, crash_at: Option<CrashPoint>) -> Result<usize, MigrateError> {
    move_entries_except(from, to, None, crash_at)
}

/// [`move_entries`], leaving the top-level entry `kept` where it is.
fn move_entries_except(
    from: &Path,
    to: &Path,
    kept: Option<&str>,
    crash_at: Option<CrashPoint>,
) -> Result<usize, MigrateError> {
    let mut names: Vec<_> = fs::read_dir(from)
        .map_err(io_error("read", from))?
        .filter_map(|entry| entry.ok().map(|entry| entry.file_name()))
        .filter(|name| kept.is_none_or(|kept| name != kept))
        .collect();
    names.sort();
    let mut moved = 0;
    for name in names {
        let source = from.join(&name);
        let dest = to.join(&name);
        let source_type = fs::symlink_metadata(&source).map_err(io_error("read", &source))?.file_type();
        match fs::symlink_metadata(&dest) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                move_whole(&source, &dest, source_type.is_dir())?;
                moved += 1;
                store::crash_if(crash_at, CrashPoint::MigrateLegacy);
            }
            Ok(dest_metadata) if dest_metadata.is_dir() && source_type.is_dir() => {
                moved += move_entries(&source, &dest, crash_at)?;
                fs::remove_dir(&source).map_err(io_error("remove", &source))?;
            }
            Ok(_) => remove_any(&source, source_type.is_dir())?,
            Err(error) => return Err(io_error("read", &dest)(error)),
        }
    }
    Ok(moved)
}

/// One rename; across filesystems a copy under a temporary name, synced,
/// renamed into place, then the source removed.
fn move_whole(source: &Path, dest: &Path, is_dir: bool) -> Result<(), MigrateError> {
    match fs::rename(source, dest) {
        Ok(()) => return Ok(()),
        Err(error) if error.raw_os_error() == Some(nix::libc::EXDEV) => {}
        Err(error) => return Err(io_error("move", source)(error)),
    }
    let mut temp_name = dest.file_name().unwrap_or_default().to_os_string();
    temp_name.push(".migrating");
    let temp = dest.with_file_name(temp_name);
    if fs::symlink_metadata(&temp).is_ok() {
        remove_any(&temp, temp.is_dir())?;
    }
    copy_tree(source, &temp)?;
    fs::rename(&temp, dest).map_err(io_error("move", &temp))?;
    remove_any(source, is_dir)
}

fn copy_tree(source: &Path, dest: &Path) -> Result<(), MigrateError> {
    let metadata = fs::symlink_metadata(source).map_err(io_error("read", source))?;
    if metadata.is_dir() {
        private_fs::ensure_private_dir(dest).map_err(io_error("create", dest))?;
        for entry in fs::read_dir(source).map_err(io_error("read", source))? {
            let entry = entry.map_err(io_error("read", source))?;
            copy_tree(&entry.path(), &dest.join(entry.file_name()))?;
        }
    } else if metadata.is_file() {
        let bytes = fs::read(source).map_err(io_error("read", source))?;
        private_fs::write_atomic(dest, &bytes).map_err(io_error("write", dest))?;
    }
    Ok(())
}

fn remove_any(path: &Path, is_dir: bool) -> Result<(), MigrateError> {
    if is_dir { fs::remove_dir_all(path) } else { fs::remove_file(path) }.map_err(io_error("remove", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::store::{IndexRecord, load};

    fn manifest(created: &str) -> Manifest {
        Manifest {
            mode: "filesystem".into(),
            root: "/p".into(),
            embedding_model: "m".into(),
            dimensions: 2,
            created_at: created.into(),
            ..Manifest::default()
        }
    }

    fn record(path: &str, input: &str) -> IndexRecord {
        IndexRecord {
            chunk_id: "c000001".into(),
            path: path.into(),
            source: "filesystem".into(),
            start_line: 1,
            end_line: 2,
            content_hash: sha256_hex(input.as_bytes()),
            embedding_input_hash: sha256_hex(input.as_bytes()),
            embedding_model: "m".into(),
            dimensions: 2,
            ..IndexRecord::default()
        }
    }

    fn publish_index(metadata: &Path, relative: &str, created: &str, records: &[(&str, &str, [f32; 2])]) {
        let index_dir = store::search_root(metadata).join(relative);
        let to_write = records
            .iter()
            .map(|(path, input, vector)| RecordToWrite {
                record: record(path, input),
                vector: VectorData::Values(vector),
                stored: None,
            })
            .collect();
        store::publish(
            Publication {
                metadata_dir: metadata,
                index_dir: &index_dir,
                manifest: manifest(created),
                records: to_write,
                force_new: false,
                crash_at: None,
            },
            &|| false,
        )
        .unwrap();
    }

    #[test]
    fn path_keyed_search_data_merges_into_the_origin_keyed_store_once() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("meta");
        let project = home.path().join("project");
        fs::create_dir_all(&project).unwrap();
        let path_dir = path_keyed_dir(&root, &project);
        let origin_dir = root.join("origin-key");
        publish_index(&path_dir, "fs/aaaa", "2026-01-01T00:00:00Z", &[("a.go", "a", [1.0, 2.0])]);
        publish_index(&path_dir, "revs/c1", "2026-01-01T00:00:01Z", &[("b.go", "b", [3.0, 4.0])]);
        fs::write(path_dir.join("tasks.sqlite3"), b"tasks").unwrap();
        // The origin-keyed store already has its own index at fs/aaaa.
        publish_index(&origin_dir, "fs/aaaa", "2026-02-01T00:00:00Z", &[("a.go", "a2", [5.0, 6.0])]);

        let migrated = run(&project, &root, &origin_dir, None, &|| false).unwrap();
        assert_eq!(migrated, Migrated { legacy_entries: 0, indexes: 2 });
        assert!(!store::search_root(&path_dir).exists(), "the obsolete tree is removed");
        assert!(path_dir.join("tasks.sqlite3").is_file(), "non-search metadata stays");
        let kept = load(&origin_dir, &store::search_root(&origin_dir).join("fs/aaaa"), &|| false).unwrap();
        assert_eq!(kept.vector(0), Some([5.0, 6.0].as_slice()), "the target's own index wins its place");
        let revision = load(&origin_dir, &store::search_root(&origin_dir).join("revs/c1"), &|| false).unwrap();
        assert_eq!(revision.records.get(0).path(), "b.go");
        assert_eq!(revision.vector(0), Some([3.0, 4.0].as_slice()));
        let dirs = store::complete_index_dirs(&origin_dir);
        let beside: Vec<_> = dirs.iter().filter(|dir| dir.to_string_lossy().contains("/migrated-")).collect();
        assert_eq!(beside.len(), 1, "{dirs:?}");
        let moved = load(&origin_dir, beside[0], &|| false).unwrap();
        assert_eq!(moved.vector(0), Some([1.0, 2.0].as_slice()));

        // A second run has nothing left to do.
        assert_eq!(run(&project, &root, &origin_dir, None, &|| false).unwrap(), Migrated::default());
        assert_eq!(store::complete_index_dirs(&origin_dir), dirs);
    }

    #[test]
    fn a_rerun_after_an_interruption_skips_what_was_merged() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("meta");
        let project = home.path().join("project");
        fs::create_dir_all(&project).unwrap();
        let path_dir = path_keyed_dir(&root, &project);
        let origin_dir = root.join("origin-key");
        publish_index(&path_dir, "fs/aaaa", "2026-01-01T00:00:00Z", &[("a.go", "a", [1.0, 2.0])]);
        publish_index(&path_dir, "revs/c1", "2026-01-01T00:00:01Z", &[("b.go", "b", [3.0, 4.0])]);
        // As if an earlier run published the first index and died.
        publish_index(&origin_dir, "fs/aaaa", "2026-01-01T00:00:00Z", &[("a.go", "a", [1.0, 2.0])]);
        let migrated = run(&project, &root, &origin_dir, None, &|| false).unwrap();
        assert_eq!(migrated.indexes, 1, "only the index not yet merged is published");
        let dirs = store::complete_index_dirs(&origin_dir);
        assert_eq!(dirs.len(), 2, "{dirs:?}");
        assert!(!store::search_root(&path_dir).exists());
    }

    #[test]
    fn the_legacy_project_folder_moves_home_and_its_search_data_is_merged() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("meta");
        let project = home.path().join("project");
        let legacy = project.join(LEGACY_DIR);
        publish_index(&legacy, "fs/bbbb", "2026-01-01T00:00:00Z", &[("c.go", "c", [7.0, 8.0])]);
        fs::create_dir_all(legacy.join("tasks/one")).unwrap();
        fs::write(legacy.join("tasks/one/record.json"), b"{}").unwrap();
        fs::write(legacy.join("notes.txt"), b"legacy").unwrap();
        let path_dir = path_keyed_dir(&root, &project);
        // The home folder already has a newer notes.txt and a task folder.
        fs::create_dir_all(path_dir.join("tasks/two")).unwrap();
        fs::write(path_dir.join("notes.txt"), b"home").unwrap();
        let origin_dir = root.join("origin-key");

        let migrated = run(&project, &root, &origin_dir, None, &|| false).unwrap();
        assert_eq!(migrated, Migrated { legacy_entries: 1, indexes: 1 });
        assert!(!legacy.exists());
        assert!(path_dir.join("tasks/one/record.json").is_file());
        assert!(path_dir.join("tasks/two").is_dir());
        assert_eq!(fs::read(path_dir.join("notes.txt")).unwrap(), b"home");
        let index = load(&origin_dir, &store::search_root(&origin_dir).join("fs/bbbb"), &|| false).unwrap();
        assert_eq!(index.vector(0), Some([7.0, 8.0].as_slice()));

        // Another project command moves everything but the search data.
        let other = home.path().join("other");
        let other_legacy = other.join(LEGACY_DIR);
        publish_index(&other_legacy, "fs/cccc", "2026-01-01T00:00:00Z", &[("d.go", "d", [1.0, 1.0])]);
        fs::write(other_legacy.join("notes.txt"), b"other").unwrap();
        assert_eq!(move_legacy_metadata(&other, &root).unwrap(), 1);
        assert!(path_keyed_dir(&root, &other).join("notes.txt").is_file());
        assert!(other_legacy.join("search").is_dir(), "search data waits for a search");
        run(&other, &root, &path_keyed_dir(&root, &other), None, &|| false).unwrap();
        assert!(!other_legacy.exists());
        assert_eq!(store::complete_index_dirs(&path_keyed_dir(&root, &other)).len(), 1);

        // A project whose legacy folder is the home metadata root itself is
        // left alone.
        fs::create_dir_all(&root).unwrap();
        let home_project = root.parent().unwrap();
        assert!(!is_legacy_folder(&home_project.join("meta"), &root));
    }
}

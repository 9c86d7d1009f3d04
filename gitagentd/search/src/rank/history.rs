//! Query history per physical index, in SQLite (`search/history.sqlite3`
//! under the project's metadata root, WAL): the cached embedding of each
//! exact capped query input, so a repeated query needs no embeddings call,
//! and the replay record (`hit` for the same query and filters, `similar`
//! for a stored query whose embedding has cosine >= 0.90). History keeps
//! the original query text, never the framed input; it is never exported.

use super::ranking;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Entries kept per index.
const KEEP: i64 = 100;
const SCHEMA_VERSION: i64 = 1;

#[derive(Debug, thiserror::Error)]
#[error("cannot use the search history {path}: {source}")]
pub struct HistoryError {
    path: PathBuf,
    #[source]
    source: rusqlite::Error,
}

/// Which stored queries can stand in for this one.
#[derive(Debug, Clone)]
pub struct QueryKey {
    pub index_dir: String,
    pub normalized: String,
    pub query_text_hash: String,
    pub model: String,
    pub dimensions: usize,
    pub source_mode: String,
    pub root: String,
}

/// The filters a result list was produced with, as stored (JSON).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredFilters {
    pub code: bool,
    pub no_tests: bool,
    #[serde(default)]
    pub scope: Vec<String>,
}

/// `replay` of the search output.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    /// Index-only runs: an empty mode.
    Unset,
    None,
    Hit(String),
    Similar(String),
}

/// One history entry to append.
pub struct Entry<'a> {
    pub key: &'a QueryKey,
    pub query: &'a str,
    pub embedding: &'a [f32],
    pub embedding_only: bool,
    pub filters: Option<&'a StoredFilters>,
    pub result_chunk_ids: &'a [String],
    pub created_at: &'a str,
}

pub struct History {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl History {
    pub fn open(path: &Path) -> Result<Self, HistoryError> {
        let wrap = |source| HistoryError { path: path.to_path_buf(), source };
        if let Some(parent) = path.parent() {
            git_agent_shared::private_fs::ensure_private_dir(parent).map_err(|error| HistoryError {
                path: path.to_path_buf(),
                source: rusqlite::Error::ToSqlConversionFailure(Box::new(error)),
            })?;
        }
        let connection = Connection::open(path).map_err(wrap)?;
        connection.busy_timeout(std::time::Duration::from_secs(10)).map_err(wrap)?;
        connection.pragma_update(None, "journal_mode", "WAL").map_err(wrap)?;
        connection.pragma_update(None, "synchronous", "NORMAL").map_err(wrap)?;
        let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(wrap)?;
        if version < SCHEMA_VERSION {
            connection
                .execute_batch(
                    "CREATE TABLE IF NOT EXISTS query_history (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        index_dir TEXT NOT NULL,
                        query TEXT NOT NULL,
                        normalized TEXT NOT NULL,
                        query_text_hash TEXT NOT NULL,
                        embedding BLOB NOT NULL,
                        embedding_only INTEGER NOT NULL,
                        embedding_model TEXT NOT NULL,
                        dimensions INTEGER NOT NULL,
                        source_mode TEXT NOT NULL,
                        root TEXT NOT NULL,
                        filters TEXT,
                        result_chunk_ids TEXT NOT NULL,
                        created_at TEXT NOT NULL
                    );
                    CREATE INDEX IF NOT EXISTS query_history_index ON query_history(index_dir, id);
                    PRAGMA user_version = 1;",
                )
                .map_err(wrap)?;
        }
        Ok(Self { path: path.to_path_buf(), connection: Mutex::new(connection) })
    }

    fn error(&self, source: rusqlite::Error) -> HistoryError {
        HistoryError { path: self.path.clone(), source }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The latest stored embedding of the same capped query input.
    pub fn cached_embedding(&self, key: &QueryKey) -> Result<Option<Vec<f32>>, HistoryError> {
        let connection = self.lock();
        let blob: Option<Vec<u8>> = connection
            .query_row(
                "SELECT embedding FROM query_history
                 WHERE index_dir = ?1 AND normalized = ?2 AND query_text_hash = ?3 AND embedding_model = ?4
                   AND dimensions = ?5 AND source_mode = ?6 AND root = ?7
                 ORDER BY id DESC LIMIT 1",
                params![
                    key.index_dir,
                    key.normalized,
                    key.query_text_hash,
                    key.model,
                    key.dimensions as i64,
                    key.source_mode,
                    key.root
                ],
                |row| row.get(0),
            )
            .optional()
            .map_err(|error| self.error(error))?;
        Ok(blob.map(|bytes| decode(&bytes)).filter(|vector| vector.len() == key.dimensions && !vector.is_empty()))
    }

    /// How this query relates to earlier result lists of the index.
    pub fn replay(&self, key: &QueryKey, filters: &StoredFilters, vector: &[f32]) -> Result<Replay, HistoryError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare_cached(
                "SELECT query, normalized, query_text_hash, embedding, filters FROM query_history
                 WHERE index_dir = ?1 AND embedding_model = ?2 AND dimensions = ?3 AND source_mode = ?4
                   AND root = ?5 AND embedding_only = 0
                 ORDER BY id",
            )
            .map_err(|error| self.error(error))?;
        let rows = statement
            .query_map(params![key.index_dir, key.model, key.dimensions as i64, key.source_mode, key.root], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Vec<u8>>(3)?,
                    row.get::<_, Option<String>>(4)?,
                ))
            })
            .map_err(|error| self.error(error))?;
        let query_norm = ranking::norm(vector);
        let mut similar = None;
        for row in rows {
            let (query, normalized, hash, embedding, stored_filters) = row.map_err(|error| self.error(error))?;
            let stored: Option<StoredFilters> = stored_filters.and_then(|text| serde_json::from_str(&text).ok());
            let same_filters = match &stored {
                None => !filters.code,
                Some(stored) => stored == filters,
            };
            if !same_filters {
                continue;
            }
            if normalized == key.normalized && hash == key.query_text_hash {
                return Ok(Replay::Hit(query));
            }
            if similar.is_none() {
                let stored_vector = decode(&embedding);
                if ranking::cosine(vector, query_norm, &stored_vector, ranking::norm(&stored_vector)) >= 0.90 {
                    similar = Some(query);
                }
            }
        }
        Ok(similar.map_or(Replay::None, Replay::Similar))
    }

    /// Appends an entry and keeps the newest 100 of its index.
    pub fn append(&self, entry: Entry<'_>) -> Result<(), HistoryError> {
        let mut connection = self.lock();
        let transaction = connection.transaction().map_err(|error| self.error(error))?;
        let filters = entry.filters.map(|filters| serde_json::to_string(filters).unwrap_or_default());
        let ids = serde_json::to_string(entry.result_chunk_ids).unwrap_or_else(|_| "[]".into());
        transaction
            .execute(
                "INSERT INTO query_history (index_dir, query, normalized, query_text_hash, embedding, embedding_only,
                    embedding_model, dimensions, source_mode, root, filters, result_chunk_ids, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    entry.key.index_dir,
                    entry.query,
                    entry.key.normalized,
                    entry.key.query_text_hash,
                    encode(entry.embedding),
                    entry.embedding_only,
                    entry.key.model,
                    entry.embedding.len() as i64,
                    entry.key.source_mode,
                    entry.key.root,
                    filters,
                    ids,
                    entry.created_at,
                ],
            )
            .map_err(|error| self.error(error))?;
        transaction
            .execute(
                "DELETE FROM query_history WHERE index_dir = ?1 AND id NOT IN
                   (SELECT id FROM query_history WHERE index_dir = ?1 ORDER BY id DESC LIMIT ?2)",
                params![entry.key.index_dir, KEEP],
            )
            .map_err(|error| self.error(error))?;
        transaction.commit().map_err(|error| self.error(error))
    }
}

fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|value| value.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(query: &str) -> QueryKey {
        QueryKey {
            index_dir: "/m/search/fs/abc".into(),
            normalized: query.to_lowercase(),
            query_text_hash: format!("hash-{query}"),
            model: "m".into(),
            dimensions: 2,
            source_mode: "filesystem".into(),
            root: "/r".into(),
        }
    }

    #[test]
    fn caches_embeddings_and_replays_by_filters() {
        let temp = tempfile::tempdir().unwrap();
        let history = History::open(&temp.path().join("search/history.sqlite3")).unwrap();
        let plain = StoredFilters { code: false, no_tests: false, scope: vec![] };
        let code = StoredFilters { code: true, ..plain.clone() };
        let first = key("Where");
        assert_eq!(history.cached_embedding(&first).unwrap(), None);
        assert_eq!(history.replay(&first, &plain, &[1.0, 0.0]).unwrap(), Replay::None);
        let entry = |key: &QueryKey, vector: &[f32], filters: Option<&StoredFilters>, only: bool| {
            history
                .append(Entry {
                    key,
                    query: "Where",
                    embedding: vector,
                    embedding_only: only,
                    filters,
                    result_chunk_ids: &[],
                    created_at: "2026-01-02T03:04:05Z",
                })
                .unwrap();
        };
        entry(&first, &[1.0, 0.0], None, true);
        assert_eq!(history.cached_embedding(&first).unwrap(), Some(vec![1.0, 0.0]));
        // Embedding-only entries never replay.
        assert_eq!(history.replay(&first, &plain, &[1.0, 0.0]).unwrap(), Replay::None);
        entry(&first, &[1.0, 0.0], Some(&plain), false);
        assert_eq!(history.replay(&first, &plain, &[1.0, 0.0]).unwrap(), Replay::Hit("Where".into()));
        // Code results are a different history.
        assert_eq!(history.replay(&first, &code, &[1.0, 0.0]).unwrap(), Replay::None);
        // A close query is similar.
        let other = key("Near");
        assert_eq!(history.replay(&other, &plain, &[0.99, 0.05]).unwrap(), Replay::Similar("Where".into()));
        assert_eq!(history.replay(&other, &plain, &[0.0, 1.0]).unwrap(), Replay::None);
        for _ in 0..120 {
            entry(&other, &[0.0, 1.0], None, true);
        }
        let count: i64 = history.lock().query_row("SELECT count(*) FROM query_history", [], |row| row.get(0)).unwrap();
        assert_eq!(count, KEEP);
    }
}

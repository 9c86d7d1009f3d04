//! The per-project listing of tasks: one SQLite (WAL) file under each
//! metadata root, for editors. At most [`OPEN_TABLES`] connections stay
//! open, the least recently used closed first. Every statement runs on the
//! blocking pool; the durable JSON records, not these rows, are the
//! contract.

use super::{TaskError, TaskStatus};
use gitagent_runtime::blocking;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TABLE_FILE: &str = "tasks.sqlite3";

/// How many task tables (one per metadata root) keep an open connection.
pub(super) const OPEN_TABLES: usize = 4;

pub(super) type Table = Arc<Mutex<rusqlite::Connection>>;

/// Why the task table cannot be used. SQLite's errors are shown in their
/// own words (`{source}`), which ends the rendered chain there: their
/// sources repeat the same failure as a code.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("cannot open the task table under {}: {source}", root.display())]
    Open { root: PathBuf, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("cannot list tasks: {0}")]
    List(#[source] rusqlite::Error),
    #[error("the task table lock is poisoned")]
    Poisoned,
}

/// The open task tables, most recently used first.
#[derive(Debug, Default)]
pub(super) struct OpenTables {
    pub(super) entries: VecDeque<(PathBuf, Table)>,
}

impl OpenTables {
    fn get(&mut self, metadata_root: &Path) -> Option<Table> {
        let index = self.entries.iter().position(|(root, _)| root == metadata_root)?;
        let entry = self.entries.remove(index)?;
        let table = Arc::clone(&entry.1);
        self.entries.push_front(entry);
        Some(table)
    }

    /// Adds a table; the least recently used one beyond [`OPEN_TABLES`]
    /// is closed once its last running worker lets go of it.
    fn insert(&mut self, metadata_root: PathBuf, table: Table) {
        self.entries.push_front((metadata_root, table));
        self.entries.truncate(OPEN_TABLES);
    }
}

/// The table under `metadata_root`, opened (and created) on first use.
pub(super) async fn open(tables: &Mutex<OpenTables>, metadata_root: &Path) -> Result<Table, TaskError> {
    if let Some(table) = tables.lock().ok().and_then(|mut tables| tables.get(metadata_root)) {
        return Ok(table);
    }
    let root = metadata_root.to_path_buf();
    let connection = blocking::run_to_end("the task table", move || open_connection(&root))
        .await?
        .map_err(|source| TaskError::failed(TableError::Open { root: metadata_root.to_path_buf(), source }))?;
    let mut tables = tables.lock().map_err(|_| TaskError::failed(TableError::Poisoned))?;
    // A concurrent caller may have opened it meanwhile: keep theirs.
    if let Some(table) = tables.get(metadata_root) {
        return Ok(table);
    }
    let table = Arc::new(Mutex::new(connection));
    tables.insert(metadata_root.to_path_buf(), Arc::clone(&table));
    Ok(table)
}

fn open_connection(metadata_root: &Path) -> Result<rusqlite::Connection, Box<dyn std::error::Error + Send + Sync>> {
    git_agent_shared::private_fs::ensure_private_dir(metadata_root)?;
    let connection = rusqlite::Connection::open(metadata_root.join(TABLE_FILE))?;
    connection.busy_timeout(Duration::from_secs(5))?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS tasks (
            id TEXT PRIMARY KEY,
            command TEXT NOT NULL,
            project_id TEXT NOT NULL,
            record_path TEXT NOT NULL,
            state TEXT NOT NULL,
            phase TEXT NOT NULL,
            pid INTEGER NOT NULL,
            started_ms INTEGER NOT NULL,
            updated_ms INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS tasks_by_project ON tasks (project_id, started_ms);",
    )?;
    // Rows still running belong to a daemon that is gone: no worker of
    // this process exists yet for this table.
    connection.execute(
        "UPDATE tasks SET state = 'failed', phase = 'dead_producer' WHERE state = 'running' AND pid != ?1",
        [i64::from(std::process::id())],
    )?;
    Ok(connection)
}

/// Records a task's status in its table, on the blocking pool.
pub(super) async fn upsert(table: &Table, status: &TaskStatus, record_path: &Path, pid: u32) {
    let table = Arc::clone(table);
    let status = status.clone();
    let record_path = record_path.to_path_buf();
    let stored = blocking::run_to_end("the task table", move || upsert_blocking(&table, &status, &record_path, pid));
    if let Err(error) = stored.await {
        tracing::warn!(%error, "cannot update the task table");
    }
}

fn upsert_blocking(table: &Mutex<rusqlite::Connection>, status: &TaskStatus, record_path: &Path, pid: u32) {
    let Ok(connection) = table.lock() else { return };
    // Every launch and phase change runs this statement: it is prepared once.
    let result = connection.prepare_cached(
        "INSERT INTO tasks (id, command, project_id, record_path, state, phase, pid, started_ms, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT(id) DO UPDATE SET state = excluded.state, phase = excluded.phase, updated_ms = excluded.updated_ms",
    );
    let result = result.and_then(|mut statement| {
        statement.execute(rusqlite::params![
            status.id,
            status.command,
            status.project_id,
            record_path.to_string_lossy(),
            status.state,
            status.phase,
            i64::from(pid),
            status.started_ms,
            status.updated_ms
        ])
    });
    if let Err(error) = result {
        tracing::warn!(%error, id = %status.id, "cannot update the task table");
    }
}

/// The rows of one project, newest first, each with its record's path.
pub(super) fn list_rows(
    table: &Mutex<rusqlite::Connection>,
    project_id: &str,
) -> rusqlite::Result<Vec<(TaskStatus, PathBuf)>> {
    let Ok(connection) = table.lock() else { return Ok(Vec::new()) };
    let mut statement = connection.prepare(
        "SELECT id, command, project_id, state, phase, started_ms, updated_ms, record_path
         FROM tasks WHERE project_id = ?1 ORDER BY started_ms DESC, id",
    )?;
    let rows = statement.query_map([project_id], |row| {
        Ok((
            TaskStatus {
                id: row.get(0)?,
                command: row.get(1)?,
                project_id: row.get(2)?,
                state: row.get(3)?,
                phase: row.get(4)?,
                started_ms: row.get(5)?,
                updated_ms: row.get(6)?,
                message: String::new(),
            },
            PathBuf::from(row.get::<_, String>(7)?),
        ))
    })?;
    rows.collect()
}

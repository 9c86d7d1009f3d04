//! Explore sessions: what a successful explore item leaves behind so that
//! `--follow-up <id>` can continue it. They live in the project's SQLite
//! database of sessions (`~/.git-agent/<project_id>/explore/sessions.sqlite3`,
//! WAL, folders 0700, database files 0600): one row per item with its
//! findings, its parent and follow-up depth, the workspace it explored,
//! the target that chose its system prompt and the active one, and the
//! prompt-cache key of its lineage; the replayable conversation is stored
//! once per batch in `conversations`, which every sibling of the batch
//! names. A session is inserted once and never changed, so simultaneous
//! follow-ups of one parent become independent siblings; concurrent
//! writers meet in immediate transactions behind a busy timeout. Reading
//! refuses what a follow-up must not use: another workspace, a row that
//! lacks provenance, a cache key or a replayable conversation.

use super::answer::Finding;
use git_agent_shared::cli::ExploreTarget;
use git_agent_shared::task_record::{MAX_FOLLOW_UP_DEPTH, TaskId};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema this version writes and reads (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

/// How long a statement waits for another writer before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS conversations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        -- The provider-visible conversation, answers included, as a JSON
        -- array of the provider adapter's record form.
        items TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY,
        parent_id TEXT NOT NULL,
        depth INTEGER NOT NULL,
        workspace TEXT NOT NULL,
        prompt_cache_key TEXT NOT NULL,
        -- NULL is the universal target.
        instruction_target TEXT,
        active_target TEXT,
        -- The item's own findings, as printed (JSON).
        items TEXT NOT NULL,
        conversation INTEGER NOT NULL REFERENCES conversations(id),
        created_ms INTEGER NOT NULL
    );
    PRAGMA user_version = 1;";

/// One item of an exploration chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    /// Empty for an initial search (or a depth reset).
    pub parent_id: String,
    pub depth: u32,
    /// The cleaned absolute exploration root that created it.
    pub workspace: String,
    pub prompt_cache_key: String,
    /// The target whose system prompt the conversation carries; `None`
    /// is the universal prompt.
    pub instruction_target: Option<ExploreTarget>,
    /// The target the last question was asked under.
    pub active_target: Option<ExploreTarget>,
    /// The item's own findings, as printed.
    pub items: Vec<Finding>,
    /// The provider-visible conversation, answers included, in the
    /// provider adapter's record form.
    pub history: Vec<serde_json::Value>,
}

/// Why a session cannot be read, written or followed up.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("invalid explore search ID {id:?}\nhint: pass the \"id\" of an earlier git-agent explore result")]
    InvalidId { id: String },
    #[error(
        "unknown explore search ID {id}: no session of that ID in this project\nhint: run git-agent explore without --follow-up"
    )]
    Unknown { id: String },
    #[error(
        "explore search ID {id} belongs to workspace {parent}, not {current}\nhint: run the follow-up from {parent}, or start a new git-agent explore here"
    )]
    OtherWorkspace { id: String, parent: String, current: String },
    #[error(
        "explore search ID {id} is not follow-up eligible: {reason}\nhint: run git-agent explore without --follow-up"
    )]
    NotEligible { id: String, reason: String },
    #[error("cannot open the explore sessions {path}: {source}")]
    Open { path: PathBuf, source: std::io::Error },
    #[error(
        "the explore sessions {path} were written by a newer git-agent (schema {found}, this one reads {SCHEMA_VERSION})\nhint: upgrade git-agent"
    )]
    NewerSchema { path: PathBuf, found: i64 },
    #[error("cannot use the explore sessions {path}: {source}")]
    Database { path: PathBuf, source: rusqlite::Error },
}

impl SessionError {
    /// Whether the store failed because this user may not write where it
    /// lives (a read-only HOME): a refused permission or a read-only
    /// file system, whether the folder, the file or SQLite found it.
    pub fn is_unwritable(&self) -> bool {
        match self {
            Self::Open { source, .. } => {
                matches!(source.kind(), std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem)
            }
            Self::Database { source: rusqlite::Error::SqliteFailure(failure, _), .. } => matches!(
                failure.code,
                rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::PermissionDenied | rusqlite::ErrorCode::CannotOpen
            ),
            _ => false,
        }
    }
}

/// The sessions of one project.
#[derive(Debug, Clone)]
pub struct SessionStore {
    path: PathBuf,
}

/// A session row as stored, before it is checked.
struct Row {
    session: Session,
    /// Stored text that does not parse, if any.
    malformed: Option<&'static str>,
}

impl SessionStore {
    /// The store under a project's metadata folder (`~/.git-agent/<id>`).
    pub fn new(metadata_dir: &Path) -> Self {
        Self { path: metadata_dir.join("explore").join("sessions.sqlite3") }
    }

    fn database(&self, source: rusqlite::Error) -> SessionError {
        SessionError::Database { path: self.path.clone(), source }
    }

    /// Opens the database, creating it owner-only and migrating its
    /// schema when needed. Blocking.
    fn open(&self) -> Result<Connection, SessionError> {
        let open_error = |source| SessionError::Open { path: self.path.clone(), source };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        for dir in [dir.parent(), Some(dir)].into_iter().flatten() {
            git_agent_shared::private_fs::ensure_private_dir(dir).map_err(open_error)?;
        }
        create_private(&self.path).map_err(open_error)?;
        let mut connection = Connection::open(&self.path).map_err(|error| self.database(error))?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(|error| self.database(error))?;
        connection.pragma_update(None, "journal_mode", "WAL").map_err(|error| self.database(error))?;
        connection.pragma_update(None, "synchronous", "NORMAL").map_err(|error| self.database(error))?;
        connection.pragma_update(None, "foreign_keys", "ON").map_err(|error| self.database(error))?;
        if self.version(&connection)? < SCHEMA_VERSION {
            // Two openers may race to create the schema: the immediate
            // transaction serializes them, and the loser finds it done.
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|error| self.database(error))?;
            if self.version(&transaction)? < SCHEMA_VERSION {
                transaction.execute_batch(SCHEMA).map_err(|error| self.database(error))?;
            }
            transaction.commit().map_err(|error| self.database(error))?;
        }
        Ok(connection)
    }

    /// The schema version, refusing one newer than this build reads.
    fn version(&self, connection: &Connection) -> Result<i64, SessionError> {
        let found: i64 = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|error| self.database(error))?;
        if found > SCHEMA_VERSION {
            return Err(SessionError::NewerSchema { path: self.path.clone(), found });
        }
        Ok(found)
    }

    /// The session `id`, checked for follow-up use from `workspace`.
    /// Blocking.
    pub fn read_for_follow_up(&self, id: &str, workspace: &Path) -> Result<Session, SessionError> {
        if TaskId::parse(id).is_err() {
            return Err(SessionError::InvalidId { id: id.to_string() });
        }
        if !self.path.exists() {
            return Err(SessionError::Unknown { id: id.to_string() });
        }
        let connection = self.open()?;
        let row = connection
            .query_row(
                "SELECT s.id, s.parent_id, s.depth, s.workspace, s.prompt_cache_key, s.instruction_target,
                        s.active_target, s.items, c.items
                 FROM sessions s JOIN conversations c ON c.id = s.conversation
                 WHERE s.id = ?1",
                [id],
                read_row,
            )
            .optional()
            .map_err(|error| self.database(error))?;
        let Some(Row { session, malformed }) = row else {
            return Err(SessionError::Unknown { id: id.to_string() });
        };
        let not_eligible = |reason: &str| SessionError::NotEligible { id: id.to_string(), reason: reason.into() };
        if let Some(reason) = malformed.or_else(|| session.defect()) {
            return Err(not_eligible(reason));
        }
        let current = git_agent_shared::quote::os_path_key(workspace).into_owned();
        if session.workspace != current {
            return Err(SessionError::OtherWorkspace { id: id.to_string(), parent: session.workspace, current });
        }
        Ok(session)
    }

    /// Inserts the sessions of one batch, which share one conversation,
    /// in one transaction. Blocking.
    pub fn create(&self, sessions: &[Session]) -> Result<(), SessionError> {
        let Some(first) = sessions.first() else { return Ok(()) };
        let mut connection = self.open()?;
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| self.database(error))?;
        let mut conversations: Vec<(&[serde_json::Value], i64)> = Vec::new();
        let created_ms = jiff::Timestamp::now().as_millisecond();
        for session in sessions {
            let conversation = match conversations.iter().find(|(history, _)| *history == session.history.as_slice()) {
                Some((_, id)) => *id,
                None => {
                    transaction
                        .execute("INSERT INTO conversations (items) VALUES (?1)", [json(&session.history)])
                        .map_err(|error| self.database(error))?;
                    let id = transaction.last_insert_rowid();
                    conversations.push((&session.history, id));
                    id
                }
            };
            transaction
                .execute(
                    "INSERT INTO sessions (id, parent_id, depth, workspace, prompt_cache_key, instruction_target,
                                           active_target, items, conversation, created_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    params![
                        session.id,
                        session.parent_id,
                        session.depth,
                        session.workspace,
                        session.prompt_cache_key,
                        session.instruction_target.map(ExploreTarget::as_str),
                        session.active_target.map(ExploreTarget::as_str),
                        json(&session.items),
                        conversation,
                        created_ms,
                    ],
                )
                .map_err(|error| self.database(error))?;
        }
        transaction.commit().map_err(|error| self.database(error))?;
        tracing::debug!(sessions = sessions.len(), first = %first.id, "explore sessions stored");
        Ok(())
    }
}

/// Creates `path` as an empty owner-only file when it does not exist yet,
/// and makes an existing one owner-only: SQLite then gives its `-wal` and
/// `-shm` files the same mode.
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?;
    if file.metadata()?.permissions().mode() & 0o777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let mut malformed = None;
    let mut target = |text: Option<String>| -> Option<ExploreTarget> {
        let text = text?;
        let parsed = serde_json::from_value(serde_json::Value::String(text)).ok();
        if parsed.is_none() {
            malformed = Some("it records an unknown query target");
        }
        parsed
    };
    let instruction_target = target(row.get(5)?);
    let active_target = target(row.get(6)?);
    let items: Vec<Finding> = serde_json::from_str(&row.get::<_, String>(7)?).unwrap_or_else(|_| {
        malformed = Some("its findings do not parse");
        Vec::new()
    });
    let history: Vec<serde_json::Value> = serde_json::from_str(&row.get::<_, String>(8)?).unwrap_or_default();
    let depth: i64 = row.get(2)?;
    Ok(Row {
        session: Session {
            id: row.get(0)?,
            parent_id: row.get(1)?,
            depth: u32::try_from(depth).unwrap_or(u32::MAX),
            workspace: row.get(3)?,
            prompt_cache_key: row.get(4)?,
            instruction_target,
            active_target,
            items,
            history,
        },
        malformed,
    })
}

impl Session {
    /// What makes a stored session unusable, if anything.
    fn defect(&self) -> Option<&'static str> {
        if self.workspace.trim().is_empty() {
            return Some("it records no workspace");
        }
        if self.prompt_cache_key.trim().is_empty() {
            return Some("it records no prompt-cache key");
        }
        if self.depth > MAX_FOLLOW_UP_DEPTH || (self.depth == 0) != self.parent_id.is_empty() {
            return Some("its follow-up depth and parent disagree");
        }
        if self.history.is_empty() || gitagent_provider::items_from_json(&self.history).is_none() {
            return Some("it has no replayable conversation");
        }
        if self.items.is_empty() {
            return Some("it has no findings");
        }
        None
    }

    /// Whether a follow-up may still continue this conversation; at the
    /// depth limit a follow-up starts over instead.
    pub fn can_continue(&self) -> bool {
        self.depth < MAX_FOLLOW_UP_DEPTH
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    const ID: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const SIBLING: &str = "BCDEFGHIJKLMNOPQRSTUVWXYZA";

    fn session(depth: u32) -> Session {
        Session {
            id: ID.into(),
            parent_id: if depth == 0 { String::new() } else { "CDEFGHIJKLMNOPQRSTUVWXYZAB".into() },
            depth,
            workspace: "/work/app".into(),
            prompt_cache_key: "key".into(),
            instruction_target: None,
            active_target: Some(ExploreTarget::Owner),
            items: vec![Finding { description: "d".into(), references: vec!["a.rs".into()] }],
            history: gitagent_provider::items_to_json(&[gitagent_provider::Item::user("q")]),
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn sessions_round_trip_owner_only_and_stay_in_their_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(&dir.path().join("project"));
        let sibling = Session { id: SIBLING.into(), ..session(1) };
        store.create(&[session(1), sibling.clone()]).unwrap();
        assert_eq!(store.read_for_follow_up(ID, Path::new("/work/app")).unwrap(), session(1));
        assert_eq!(store.read_for_follow_up(SIBLING, Path::new("/work/app")).unwrap(), sibling);
        let connection = store.open().unwrap();
        let conversations: i64 =
            connection.query_row("SELECT count(*) FROM conversations", [], |row| row.get(0)).unwrap();
        assert_eq!(conversations, 1, "siblings share their batch's conversation");
        let file = dir.path().join("project/explore/sessions.sqlite3");
        for path in [file.clone(), file.with_extension("sqlite3-wal"), file.with_extension("sqlite3-shm")] {
            assert_eq!(mode(&path), 0o600, "{}", path.display());
        }
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        let universal: Option<String> = connection
            .query_row("SELECT instruction_target FROM sessions WHERE id = ?1", [ID], |row| row.get(0))
            .unwrap();
        assert_eq!(universal, None, "the universal target is stored as none");

        let error = store.read_for_follow_up(ID, Path::new("/work/other")).unwrap_err();
        assert!(matches!(error, SessionError::OtherWorkspace { .. }), "{error}");
        let error = store.read_for_follow_up("CDEFGHIJKLMNOPQRSTUVWXYZAB", Path::new("/work/app")).unwrap_err();
        assert!(matches!(error, SessionError::Unknown { .. }), "{error}");
        let error = store.read_for_follow_up("nope", Path::new("/work/app")).unwrap_err();
        assert!(matches!(error, SessionError::InvalidId { .. }), "{error}");
        let error = store.create(&[session(1)]).unwrap_err();
        assert!(matches!(error, SessionError::Database { .. }), "a session is written once: {error}");
    }

    #[test]
    fn an_unknown_id_in_a_project_without_sessions_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let error = store.read_for_follow_up(ID, Path::new("/work/app")).unwrap_err();
        assert!(matches!(error, SessionError::Unknown { .. }), "{error}");
        assert!(!dir.path().join("explore").exists());
    }

    #[test]
    fn incomplete_sessions_are_not_follow_up_eligible() {
        let broken = [
            Session { prompt_cache_key: String::new(), ..session(0) },
            Session { workspace: String::new(), ..session(0) },
            Session { history: Vec::new(), ..session(0) },
            Session { items: Vec::new(), ..session(0) },
            Session { parent_id: String::new(), ..session(2) },
            Session { depth: 4, ..session(1) },
        ];
        for session in broken {
            let dir = tempfile::tempdir().unwrap();
            let store = SessionStore::new(dir.path());
            store.create(std::slice::from_ref(&session)).unwrap();
            let error = store.read_for_follow_up(ID, Path::new("/work/app")).unwrap_err();
            assert!(matches!(error, SessionError::NotEligible { .. }), "{session:?}: {error}");
        }
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        store.create(&[session(0)]).unwrap();
        store.open().unwrap().execute("UPDATE sessions SET active_target = 'sideways'", []).unwrap();
        let error = store.read_for_follow_up(ID, Path::new("/work/app")).unwrap_err();
        assert!(matches!(error, SessionError::NotEligible { .. }), "{error}");
        assert!(session(2).can_continue() && !session(3).can_continue());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        store.create(&[session(0)]).unwrap();
        store.open().unwrap().pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        let error = store.read_for_follow_up(ID, Path::new("/work/app")).unwrap_err();
        assert!(matches!(error, SessionError::NewerSchema { .. }), "{error}");
    }

    #[test]
    fn concurrent_writers_each_store_their_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let ids: Vec<String> = (0..8).map(|_| TaskId::generate().unwrap().to_string()).collect();
        std::thread::scope(|scope| {
            for id in &ids {
                let store = store.clone();
                scope.spawn(move || store.create(&[Session { id: id.clone(), ..session(0) }]).unwrap());
            }
        });
        for id in &ids {
            assert_eq!(store.read_for_follow_up(id, Path::new("/work/app")).unwrap().id, *id);
        }
    }
}

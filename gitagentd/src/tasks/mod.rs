//! The daemon's detached task table; it knows no command. A command
//! creates a task (its id and durable running record), then starts it with
//! its work: a future that outlives the launching client (it holds an
//! activity guard, so idle exit and drain wait for it), publishes phases
//! through its [`TaskContext`], keeps the record's heartbeat fresh while
//! it asks to, and ends in an [`Outcome`]. The table replaces the record
//! with the exact terminal event *before* anyone can observe completion.
//! The [`table`] lists tasks per project for editors; the JSON record
//! stays the durable contract, so `--wait` works without a daemon too.
//!
//! The table stays bounded in a daemon that lives for weeks: a finished
//! task leaves the live table [`LIVE_RETENTION`] after it ended (waiters
//! and watchers then read its durable record), and few SQLite connections
//! stay open. Every SQLite statement and record read or write runs on the
//! blocking pool.

mod table;

use crate::activity::Activity;
use git_agent_shared::environment::vars;
use git_agent_shared::task_record::{
    self, FailureDiagnostic, HEARTBEAT_INTERVAL, Record, TaskCommand, TaskId, TaskState, TerminalEvent, WaitError,
};
use git_agent_shared::{Environment, paths};
use gitagent_runtime::blocking::{self, BlockingError};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use table::{OpenTables, Table};
use tokio::sync::watch;

const POLL: Duration = Duration::from_millis(100);

/// How long a finished task stays in the live table: long enough for a
/// `--wait` or watch that raced with the end to find it there, after which
/// its durable record answers.
pub const LIVE_RETENTION: Duration = Duration::from_secs(60);

/// A task's state as the table and watchers see it. Its JSON form (the
/// socket's HTTP task view) uses the field names of the gRPC `TaskStatus`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskStatus {
    pub id: String,
    pub command: String,
    pub project_id: String,
    /// running, succeeded or failed.
    pub state: String,
    pub phase: String,
    #[serde(rename = "started_unix_millis")]
    pub started_ms: i64,
    #[serde(rename = "updated_unix_millis")]
    pub updated_ms: i64,
    /// The message the work published with a phase, once it has (live
    /// tasks only: the table does not store it).
    pub message: String,
}

impl TaskStatus {
    pub fn is_terminal(&self) -> bool {
        self.state != "running"
    }
}

/// The launch object: what `git-agent review` prints.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Launched {
    pub command: String,
    pub id: String,
    pub pid: u32,
}

/// Why a launch, a wait or a status read failed. A failure keeps its
/// cause until the RPC or HTTP layer renders it with
/// [`git_agent_shared::error_chain::render`] ([`TaskError::render`]).
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The command line is wrong: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The launch or the wait failed: exit 1.
    #[error("{0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The launch or the wait failed, for a reason that is only a message
    /// (the task's recorded failure, a refused command).
    #[error("{0}")]
    Message(String),
    /// No record of the task exists under the metadata root.
    #[error("{0}")]
    NotFound(String),
}

impl TaskError {
    /// A failure caused by `error`, kept whole.
    pub fn failed(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Failed(Box::new(error))
    }

    /// The message a caller reads: the error and its causes.
    pub fn render(&self) -> String {
        git_agent_shared::error_chain::render(self)
    }
}

impl From<BlockingError> for TaskError {
    fn from(error: BlockingError) -> Self {
        Self::failed(error)
    }
}

/// How a task's work ended.
pub type Outcome = Result<Finished, Failure>;

/// A task that succeeded: the value of its terminal `final` event, and the
/// turn its record keeps for a follow-up.
#[derive(Debug)]
pub struct Finished {
    pub value: Map<String, Value>,
    pub turn: Option<Value>,
}

/// A task that failed: its terminal `error` event's message and the
/// record's diagnostic.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub diagnostic: FailureDiagnostic,
}

/// The task table and the live tasks of this daemon.
#[derive(Debug)]
pub struct TaskService {
    live: Mutex<HashMap<String, watch::Receiver<TaskStatus>>>,
    tables: Mutex<OpenTables>,
    /// The daemon's own environment, for editors' calls without one.
    fallback_env: Environment,
}

/// Test builds: a table whose fallback environment is empty.
#[cfg(any(test, feature = "test-hooks"))]
impl Default for TaskService {
    fn default() -> Self {
        Self::new(Environment::default())
    }
}

impl TaskService {
    pub fn new(fallback_env: Environment) -> Self {
        Self { live: Mutex::default(), tables: Mutex::default(), fallback_env }
    }

    /// The number of tasks running in this daemon.
    pub fn running(&self) -> usize {
        self.live.lock().map(|live| live.values().filter(|rx| !rx.borrow().is_terminal()).count()).unwrap_or(0)
    }

    fn is_live(&self, id: &str) -> Option<watch::Receiver<TaskStatus>> {
        self.live.lock().ok()?.get(id).cloned()
    }

    fn env_or_fallback<'a>(&'a self, env: Option<&'a Environment>) -> &'a Environment {
        env.filter(|env| env.get(vars::HOME).is_some()).unwrap_or(&self.fallback_env)
    }

    /// The number of tasks in the live table, finished ones included.
    pub fn live_len(&self) -> usize {
        self.live.lock().map(|live| live.len()).unwrap_or(0)
    }

    /// Drops a finished task from the live table after [`LIVE_RETENTION`].
    fn retire_later(self: &Arc<Self>, id: String) {
        let service = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(LIVE_RETENTION).await;
            if let Ok(mut live) = service.live.lock() {
                live.remove(&id);
            }
        });
    }

    async fn table(&self, metadata_root: &Path) -> Result<Table, TaskError> {
        table::open(&self.tables, metadata_root).await
    }

    /// A new `command` task of the project: its id and its running record,
    /// which nothing has stored or listed yet.
    pub fn create(
        self: &Arc<Self>,
        metadata_root: &Path,
        project_id: &str,
        command: TaskCommand,
    ) -> Result<NewTask, TaskError> {
        let id = TaskId::generate().map_err(TaskError::failed)?;
        let record_path = task_record::record_path(metadata_root, project_id, &id);
        let pid = std::process::id();
        let record = Record::running(&id, command, pid, jiff::Timestamp::now());
        Ok(NewTask {
            service: Arc::clone(self),
            metadata_root: metadata_root.to_path_buf(),
            project_id: project_id.to_string(),
            command,
            id,
            record_path,
            record,
            pid,
        })
    }

    /// Blocks until the task is terminal and returns its report, or the
    /// reason `--wait` fails.
    pub async fn wait(
        &self,
        id: &str,
        command: &str,
        env: Option<&Environment>,
    ) -> Result<task_record::Report, TaskError> {
        let command = TaskCommand::parse(command)
            .ok_or_else(|| TaskError::Usage(format!("invalid background task command {command:?}")))?;
        let id = TaskId::parse(id).map_err(TaskError::failed)?;
        let env = self.env_or_fallback(env);
        let metadata_root = paths::metadata_root(env).map_err(TaskError::failed)?;
        let find_id = id.clone();
        let path = blocking::run_to_end("the task record", move || task_record::find_record(&metadata_root, &find_id))
            .await?
            .map_err(TaskError::failed)?;
        loop {
            let state = self.state_of(&path, &id, command).await.map_err(TaskError::failed)?;
            if let Some(result) = task_record::wait_result(state, command, &id) {
                return result.map_err(TaskError::failed);
            }
            match self.is_live(id.as_str()) {
                Some(mut live) => {
                    let _ = live.wait_for(TaskStatus::is_terminal).await;
                }
                None => tokio::time::sleep(POLL).await,
            }
        }
    }

    async fn state_of(&self, path: &Path, id: &TaskId, command: TaskCommand) -> Result<TaskState, WaitError> {
        let read_path = path.to_path_buf();
        let read_id = id.clone();
        let record = blocking::run_to_end("the task record", move || task_record::read_record(&read_path, &read_id))
            .await
            .map_err(|error| WaitError::NoReport { id: format!("{id} ({error})") })??;
        let own_pid = i64::from(std::process::id());
        let live = self.is_live(id.as_str()).is_some();
        task_record::evaluate(
            &record,
            command,
            |pid| if pid == own_pid { live } else { task_record::process_alive(pid) },
            jiff::Timestamp::now(),
        )
    }

    /// The tasks of one project, newest first.
    pub async fn list(&self, project_id: &str, env: Option<&Environment>) -> Result<Vec<TaskStatus>, TaskError> {
        let env = self.env_or_fallback(env);
        let metadata_root = paths::metadata_root(env).map_err(TaskError::failed)?;
        let table = self.table(&metadata_root).await?;
        let live: HashMap<String, TaskStatus> = self
            .live
            .lock()
            .map(|live| live.iter().map(|(id, rx)| (id.clone(), rx.borrow().clone())).collect())
            .unwrap_or_default();
        let project_id = project_id.to_string();
        blocking::run_to_end("the task table", move || {
            let rows = table::list_rows(&table, &project_id)
                .map_err(|error| TaskError::failed(table::TableError::List(error)))?;
            Ok(rows
                .into_iter()
                .map(|(status, path)| match live.get(&status.id) {
                    Some(live) => live.clone(),
                    None if status.state == "running" => status_from_record(status, &path),
                    None => status,
                })
                .collect())
        })
        .await?
    }
}

/// A row's status corrected by its durable record: a task no live worker
/// runs is finished, or failed with a dead producer.
fn status_from_record(mut status: TaskStatus, path: &Path) -> TaskStatus {
    let Ok(id) = TaskId::parse(&status.id) else { return status };
    let Some(command) = TaskCommand::parse(&status.command) else { return status };
    let record = task_record::read_record(path, &id);
    let state = record.as_ref().ok().and_then(|record| {
        task_record::evaluate(record, command, task_record::process_alive, jiff::Timestamp::now()).ok()
    });
    match state {
        Some(TaskState::Running { .. }) => {}
        Some(TaskState::Succeeded { .. }) => {
            status.state = "succeeded".into();
            status.phase = "done".into();
        }
        Some(TaskState::Failed { .. }) => {
            status.state = "failed".into();
            status.phase = "error".into();
        }
        None => {
            status.state = "failed".into();
            status.phase = "dead_producer".into();
        }
    }
    if let Ok(record) = record {
        status.updated_ms = task_record::unix_millis(&record.updated_at);
    }
    status
}

impl TaskService {
    /// The status of one task now, and a receiver of its changes when this
    /// daemon runs it.
    pub async fn watch(
        &self,
        id: &str,
        command: &str,
        env: Option<&Environment>,
    ) -> Result<(TaskStatus, Option<watch::Receiver<TaskStatus>>), TaskError> {
        let id = TaskId::parse(id).map_err(TaskError::failed)?;
        if let Some(live) = self.is_live(id.as_str()) {
            let current = live.borrow().clone();
            return Ok((current, Some(live)));
        }
        let env = self.env_or_fallback(env);
        let metadata_root = paths::metadata_root(env).map_err(TaskError::failed)?;
        let command = command.to_string();
        let status =
            blocking::run_to_end("the task record", move || stored_status(&metadata_root, &id, &command)).await??;
        Ok((status, None))
    }
}

/// The status of a task this daemon does not run, from its durable record.
fn stored_status(metadata_root: &Path, id: &TaskId, command: &str) -> Result<TaskStatus, TaskError> {
    let path = task_record::find_record(metadata_root, id).map_err(|error| match error {
        task_record::RecordError::Unknown { .. } => TaskError::NotFound(git_agent_shared::error_chain::render(&error)),
        error => TaskError::failed(error),
    })?;
    let record = task_record::read_record(&path, id).map_err(TaskError::failed)?;
    if !command.is_empty() && record.command != command {
        return Err(TaskError::Message(format!("background task {id} belongs to {}, not {command}", record.command)));
    }
    let project_id = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let status = TaskStatus {
        id: id.to_string(),
        command: record.command.clone(),
        project_id,
        state: "running".into(),
        phase: "running".into(),
        started_ms: task_record::unix_millis(&record.started_at),
        updated_ms: task_record::unix_millis(&record.updated_at),
        message: String::new(),
    };
    Ok(status_from_record(status, &path))
}

/// A task created but not started: its durable record may exist, the
/// table does not list it yet.
#[derive(Debug)]
pub struct NewTask {
    service: Arc<TaskService>,
    metadata_root: PathBuf,
    project_id: String,
    command: TaskCommand,
    id: TaskId,
    record_path: PathBuf,
    record: Record,
    pid: u32,
}

impl NewTask {
    pub fn id(&self) -> &TaskId {
        &self.id
    }

    /// Writes the running record durably.
    pub async fn store(&self) -> Result<(), TaskError> {
        write(&self.record_path, &self.record).await
    }

    /// Ends a task that never started: its record becomes the terminal
    /// `error` event (a failed write is ignored), and the launch fails with
    /// `message`.
    pub async fn fail(&self, message: String, diagnostic: Option<FailureDiagnostic>) -> TaskError {
        let completed = self.record.clone().complete(error_event(&message, 1), diagnostic, jiff::Timestamp::now());
        let _ = write(&self.record_path, &completed).await;
        TaskError::Message(message)
    }

    /// Lists the task, makes it live and runs the future `work` builds to
    /// its end, outside the caller; answers once the task runs.
    pub async fn start<F>(
        self,
        activity: &Arc<Activity>,
        work: impl FnOnce(TaskContext) -> F,
    ) -> Result<Launched, TaskError>
    where
        F: Future<Output = Outcome> + Send + 'static,
    {
        let now_ms = jiff::Timestamp::now().as_millisecond();
        let status = TaskStatus {
            id: self.id.to_string(),
            command: self.command.as_str().into(),
            project_id: self.project_id,
            state: "running".into(),
            phase: "running".into(),
            started_ms: now_ms,
            updated_ms: now_ms,
            message: String::new(),
        };
        let table = self.service.table(&self.metadata_root).await?;
        table::upsert(&table, &status, &self.record_path, self.pid).await;
        let (status_tx, status_rx) = watch::channel(status);
        if let Ok(mut live) = self.service.live.lock() {
            live.insert(self.id.to_string(), status_rx);
        }
        let guard = activity.begin();
        let context = TaskContext(Arc::new(Running {
            record: self.record,
            record_path: self.record_path,
            status: status_tx,
            published: AtomicI64::new(0),
        }));
        let running = work(context.clone());
        let (service, task_id) = (self.service, self.id.to_string());
        tokio::spawn(async move {
            // The heartbeat runs for the whole work, the command's checks
            // and hooks after its main step included.
            let outcome = context.keep_alive(running).await;
            context.0.finish(&table, outcome).await;
            drop(guard);
            service.retire_later(task_id);
        });
        Ok(Launched { command: self.command.as_str().into(), id: self.id.to_string(), pid: self.pid })
    }
}

/// What a task's work sees of its task: where it publishes phases and
/// keeps its record alive.
#[derive(Debug, Clone)]
pub struct TaskContext(Arc<Running>);

#[derive(Debug)]
struct Running {
    record: Record,
    record_path: PathBuf,
    status: watch::Sender<TaskStatus>,
    /// The phases published so far: the terminal event's sequence number
    /// follows the events really published.
    published: AtomicI64,
}

impl TaskContext {
    /// Publishes a non-terminal phase (and its message) to watchers.
    pub fn publish(&self, phase: &str, message: Option<String>) {
        self.0.published.fetch_add(1, Ordering::Relaxed);
        self.0.status.send_modify(|status| {
            status.phase = phase.to_string();
            if let Some(message) = message {
                status.message = message;
            }
        });
    }

    /// When the task started, as its record says.
    pub fn started_at(&self) -> &str {
        &self.0.record.started_at
    }

    /// Runs `work`, refreshing the record's heartbeat every
    /// [`HEARTBEAT_INTERVAL`] until it ends.
    async fn keep_alive<T>(&self, work: impl Future<Output = T>) -> T {
        tokio::pin!(work);
        let mut heartbeat = tokio::time::interval(HEARTBEAT_INTERVAL);
        heartbeat.tick().await;
        loop {
            tokio::select! {
                outcome = &mut work => break outcome,
                _ = heartbeat.tick() => {
                    let mut record = self.0.record.clone();
                    record.updated_at = task_record::format_time(jiff::Timestamp::now());
                    let _ = write(&self.0.record_path, &record).await;
                    let now = jiff::Timestamp::now().as_millisecond();
                    self.0.status.send_modify(|status| status.updated_ms = now);
                }
            }
        }
    }
}

impl Running {
    /// Stores the terminal record, then tells waiters and watchers.
    async fn finish(&self, table: &Table, outcome: Outcome) {
        let now = jiff::Timestamp::now();
        let seq = self.published.load(Ordering::Relaxed) + 1;
        let mut record = self.record.clone();
        let (event, diagnostic, state) = match outcome {
            Ok(finished) => {
                let event = TerminalEvent {
                    seq,
                    at: task_record::format_time(now),
                    kind: "final".into(),
                    value: finished.value,
                };
                record.turn = finished.turn;
                (event, None, "succeeded")
            }
            Err(failure) => (error_event(&failure.message, seq), Some(failure.diagnostic), "failed"),
        };
        let completed = record.complete(event, diagnostic, now);
        // Durable first: the terminal record is on disk before any waiter
        // or watcher learns that the task ended.
        if let Err(error) = write(&self.record_path, &completed).await {
            tracing::error!(error = %git_agent_shared::error_chain::Chain(&error), "cannot store the terminal task record");
        }
        let now_ms = now.as_millisecond();
        self.status.send_modify(|status| {
            status.state = state.into();
            status.phase = if state == "succeeded" { "done".into() } else { "error".into() };
            status.updated_ms = now_ms;
        });
        let status = self.status.borrow().clone();
        table::upsert(table, &status, &self.record_path, std::process::id()).await;
    }
}

/// The terminal `error` event, numbered `seq`.
fn error_event(message: &str, seq: i64) -> TerminalEvent {
    let mut value = Map::new();
    value.insert("message".into(), Value::from(message));
    TerminalEvent { seq, at: task_record::format_time(jiff::Timestamp::now()), kind: "error".into(), value }
}

async fn write(path: &Path, record: &Record) -> Result<(), TaskError> {
    let path = path.to_path_buf();
    let record = record.clone();
    blocking::run_to_end("the task record", move || task_record::write_record(&path, &record))
        .await?
        .map_err(TaskError::failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use table::OPEN_TABLES;

    fn status(id: &str, state: &str) -> TaskStatus {
        TaskStatus {
            id: id.into(),
            command: "review".into(),
            project_id: "p".into(),
            state: state.into(),
            phase: state.into(),
            started_ms: 0,
            updated_ms: 0,
            message: String::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_finished_task_leaves_the_live_table_after_the_retention() {
        let service = Arc::new(TaskService::default());
        let (_tx, rx) = watch::channel(status("t1", "succeeded"));
        service.live.lock().unwrap().insert("t1".into(), rx);
        service.retire_later("t1".into());
        tokio::time::sleep(LIVE_RETENTION - Duration::from_secs(1)).await;
        assert_eq!(service.live_len(), 1, "still live within the retention");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(service.live_len(), 0, "gone after the retention");
    }

    #[tokio::test]
    async fn only_the_most_recently_used_task_tables_stay_open() {
        let service = TaskService::default();
        let roots = tempfile::tempdir().unwrap();
        let root = |n: usize| roots.path().join(format!("meta{n}"));
        let first = service.table(&root(0)).await.unwrap();
        let second = Arc::downgrade(&service.table(&root(1)).await.unwrap());
        for n in 2..OPEN_TABLES {
            service.table(&root(n)).await.unwrap();
        }
        // Using the first table again makes the second the least recent.
        assert!(Arc::ptr_eq(&first, &service.table(&root(0)).await.unwrap()));
        service.table(&root(OPEN_TABLES)).await.unwrap();
        let open: Vec<PathBuf> = service.tables.lock().unwrap().entries.iter().map(|(root, _)| root.clone()).collect();
        assert_eq!(open.len(), OPEN_TABLES);
        assert!(open.contains(&root(0)), "{open:?}");
        assert!(!open.contains(&root(1)), "the least recently used table was closed: {open:?}");
        assert!(second.upgrade().is_none(), "the evicted connection was closed");
    }
}

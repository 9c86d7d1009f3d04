//! The daemon's detached task table. A launch validates the command line,
//! creates the task's durable running record, prepares the scope and the
//! budget, and hands the work to a worker that outlives the launching
//! client (it holds an activity guard, so idle exit and drain wait for it).
//! The worker refreshes the record's heartbeat, runs the engine (dry-run
//! fixture or the provider-backed engine), runs host checks, and replaces
//! the record with the exact terminal event *before* anyone can observe
//! completion. The [`table`] lists tasks per project for editors; the
//! JSON record stays the durable contract, so `--wait` works without a
//! daemon too.
//!
//! The table stays bounded in a daemon that lives for weeks: a finished
//! task leaves the live table [`LIVE_RETENTION`] after it ended (waiters
//! and watchers then read its durable record), and few SQLite connections
//! stay open. Every SQLite statement and record read or write runs on the
//! blocking pool.

mod table;

use crate::activity::Activity;
use git_agent_shared::cli::{self, Command, Depth, InspectArgs};
use git_agent_shared::environment::vars;
use git_agent_shared::task_record::{
    self, FailureDiagnostic, HEARTBEAT_INTERVAL, Record, TaskCommand, TaskId, TaskState, TerminalEvent, WaitError,
};
use git_agent_shared::{Environment, paths};
use gitagent_git::identity::ProjectIdentity;
use gitagent_inspect::budget::{self, ChangeMetrics};
use gitagent_inspect::checks;
use gitagent_inspect::engine::{DryRunEngine, EngineOutcome, InspectionEngine, InspectionRequest};
use gitagent_inspect::follow_up::{self, Lineage, ParentTurn, TurnRecord};
use gitagent_inspect::git::GitEnv;
use gitagent_inspect::hooks;
use gitagent_inspect::prepare::{self, Mode, OperatorHint, PrepareError};
use gitagent_inspect::report;
use gitagent_runtime::blocking::{self, BlockingError};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use table::{OpenTables, Table};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const POLL: Duration = Duration::from_millis(100);
/// `review --clippy`'s Cargo target folder, below the project's metadata.
const CLIPPY_TARGET_DIR: &str = "clippy-target";

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
    /// Why a post-inspection hook failed, once one has (live tasks only:
    /// the table does not store it).
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

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The command line is wrong: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The launch or the wait failed: exit 1.
    #[error("{0}")]
    Failed(String),
    /// No record of the task exists under the metadata root.
    #[error("{0}")]
    NotFound(String),
}

impl TaskError {
    fn failed(error: impl std::fmt::Display) -> Self {
        Self::Failed(error.to_string())
    }
}

impl From<BlockingError> for TaskError {
    fn from(error: BlockingError) -> Self {
        Self::failed(error)
    }
}

/// Why a finished inspection's terminal report could not be built.
#[derive(Debug, thiserror::Error)]
enum ReportError {
    #[error("decode validated simplify report: {0}")]
    DecodeSimplify(#[source] serde_json::Error),
    /// Host checks were cancelled or could not run.
    #[error(transparent)]
    Checks(#[from] checks::CheckError),
    #[error(transparent)]
    Drift(#[from] PrepareError),
    #[error(transparent)]
    Plan(#[from] checks::PlanError),
    #[error(transparent)]
    Blocking(#[from] BlockingError),
    /// The review report failed its final validation.
    #[error(transparent)]
    Invalid(#[from] report::FinalReportError),
    #[error("encode the review report: {0}")]
    Encode(#[source] serde_json::Error),
}

/// The task table and the live workers of this daemon.
#[derive(Debug)]
pub struct TaskService {
    live: Mutex<HashMap<String, watch::Receiver<TaskStatus>>>,
    tables: Mutex<OpenTables>,
    engine: Arc<dyn InspectionEngine>,
    /// The daemon's own environment, for editors' calls without one.
    fallback_env: Environment,
}

/// Test builds: a table whose non-dry-run inspections fail as unavailable.
#[cfg(any(test, feature = "test-hooks"))]
impl Default for TaskService {
    fn default() -> Self {
        Self::new(Arc::new(gitagent_inspect::engine::UnavailableEngine), Environment::default())
    }
}

impl TaskService {
    pub fn new(engine: Arc<dyn InspectionEngine>, fallback_env: Environment) -> Self {
        Self { live: Mutex::default(), tables: Mutex::default(), engine, fallback_env }
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

    /// Launches `review` or `simplify` as described by the invocation.
    pub async fn launch(
        self: &Arc<Self>,
        activity: &Arc<Activity>,
        cwd: &Path,
        args: &[String],
        env: &Environment,
    ) -> Result<Launched, TaskError> {
        let (command, args) = match cli::parse_command(args) {
            Ok(Command::Review(args)) => (TaskCommand::Review, args),
            Ok(Command::Simplify(args)) => (TaskCommand::Simplify, args),
            Ok(_) => return Err(TaskError::Usage("only review and simplify launch detached tasks".into())),
            Err(error) => {
                return Err(TaskError::Usage(error.to_string().trim_end().trim_start_matches("error: ").into()));
            }
        };
        if args.wait.is_some() || args.help_agent {
            return Err(TaskError::Usage("--wait and --help-agent launch no task".into()));
        }
        if args.clippy && command != TaskCommand::Review {
            return Err(TaskError::Usage("--clippy applies to review only: simplify runs no static checks".into()));
        }
        let metadata_root = paths::metadata_root(env).map_err(TaskError::failed)?;
        let start = cwd.to_path_buf();
        let identity = blocking::run_to_end("the project identity", move || ProjectIdentity::resolve(&start))
            .await?
            .map_err(TaskError::failed)?;
        let project_id = identity.id();
        let (project_root, root) = (identity.root.clone(), metadata_root.clone());
        blocking::run_to_end("the metadata migration", move || {
            gitagent_search::migrate::move_legacy_metadata(&project_root, &root)
        })
        .await?
        .map_err(TaskError::failed)?;
        // A follow-up's parent is checked before anything is allocated: a
        // refused follow-up launches nothing.
        let parent: Option<ParentTurn> = match &args.follow_up {
            Some(parent_id) => {
                let (root, project, parent_id) = (metadata_root.clone(), project_id.clone(), parent_id.clone());
                let found = blocking::run_to_end("the follow-up parent", move || {
                    follow_up::find_parent(&root, &project, command, &parent_id)
                })
                .await?;
                Some(found.map_err(TaskError::failed)?)
            }
            None => None,
        };
        let (mode, revision) = match &parent {
            Some(parent) => (parent.mode, parent.revision.clone()),
            None if args.codebase => (Mode::Codebase, None),
            None if args.staged => (Mode::Staged, None),
            None if args.base.is_some() => (Mode::Base, args.base.clone()),
            None if args.commit.is_some() => (Mode::Commit, args.commit.clone()),
            None => (Mode::Uncommitted, None),
        };
        let id = TaskId::generate().map_err(TaskError::failed)?;
        let lineage = match &parent {
            Some(parent) => parent.lineage(command, id.as_str()),
            None => Lineage::initial(command, id.as_str()),
        };
        let record_path = task_record::record_path(&metadata_root, &project_id, &id);
        let pid = std::process::id();
        let record = Record::running(&id, command, pid, jiff::Timestamp::now());
        // Preparation happens before the launch object exists: an empty or
        // unreadable scope fails the launch (and the stored record). It runs
        // beside the durable write of the running record; both finish before
        // the launch is answered.
        let git_env = GitEnv::from_environment(env);
        let prepare_cwd = cwd.to_path_buf();
        let prepare_env = git_env.clone();
        let follow_up_launch = parent.is_some();
        let (written, prepared) = tokio::join!(
            write(&record_path, &record),
            blocking::run_to_end("the inspection scope", move || match follow_up_launch {
                true => prepare::prepare_follow_up(&prepare_cwd, mode, revision.as_deref(), &prepare_env),
                false => prepare::prepare_with(&prepare_cwd, mode, revision.as_deref(), &prepare_env),
            })
        );
        written?;

        let failed = |message: String, diagnostic: Option<FailureDiagnostic>| {
            let record_path = record_path.clone();
            let record = record.clone();
            async move {
                let completed = record.complete(error_event(&message, 1), diagnostic, jiff::Timestamp::now());
                let _ = write(&record_path, &completed).await;
                TaskError::Failed(message)
            }
        };

        // The lifecycle settings are read once per task; a broken file
        // fails it before any provider work.
        let settings_root = metadata_root.clone();
        let settings = blocking::run_to_end("the settings file", move || hooks::load_settings(&settings_root)).await;
        let post_inspection = match settings {
            Ok(Ok(settings)) => settings.post_inspection(),
            Ok(Err(error)) => return Err(failed(error.to_string(), None).await),
            Err(error) => return Err(failed(error.to_string(), None).await),
        };
        let prepared = match prepared {
            Ok(Ok(prepared)) => Arc::new(prepared),
            Ok(Err(error)) => {
                let diagnostic = FailureDiagnostic { mode: mode.as_str().into(), ..FailureDiagnostic::default() };
                return Err(failed(error.to_string(), Some(diagnostic)).await);
            }
            Err(error) => return Err(failed(error.to_string(), None).await),
        };
        if let Some(parent) = &parent
            && let Err(error) = parent.check_workspace(&prepared.root)
        {
            return Err(failed(error.to_string(), None).await);
        }
        let depth = parent.as_ref().map_or(args.depth.unwrap_or(Depth::Balanced), |parent| parent.depth);
        let tools = budget::standard_tools(mode);
        let plan = match budget::plan(
            command,
            mode,
            &ChangeMetrics::from_prepared(&prepared),
            &tools,
            depth,
            args.max_steps,
        ) {
            Ok(plan) => plan,
            Err(error) => return Err(failed(format!("plan {command} budget: {error}"), None).await),
        };
        let request = InspectionRequest {
            task_id: id.to_string(),
            command,
            cwd: cwd.to_path_buf(),
            prepared: Arc::clone(&prepared),
            model: match &parent {
                Some(parent) => parent.model().to_string(),
                None => budget::model(command, args.generation.model.as_deref(), env.get(vars::OPENAI_MODEL)),
            },
            reasoning_effort: parent
                .as_ref()
                .and_then(ParentTurn::reasoning_effort)
                .unwrap_or_else(|| budget::reasoning_effort(command, depth, args.generation.reasoning_effort())),
            budget: plan,
            depth,
            operator_hint: match &parent {
                Some(_) => None,
                None => args.operator_hint().as_deref().and_then(OperatorHint::new),
            },
            timeout: args.generation.timeout,
            max_web_searches: args.max_web_searches,
            priority: args.generation.fast,
            base_url: args.generation.base_url.clone(),
            guidance_family: args.generation.guidance_family.clone(),
            env: env.clone(),
            git_env,
            prompt_cache_key: lineage.prompt_cache_key.clone(),
            follow_up: parent.as_ref().map(|parent| parent.follow_up(args.prompt.join(" "), &lineage)),
        };

        let now_ms = jiff::Timestamp::now().as_millisecond();
        let status = TaskStatus {
            id: id.to_string(),
            command: command.as_str().into(),
            project_id: project_id.clone(),
            state: "running".into(),
            phase: "running".into(),
            started_ms: now_ms,
            updated_ms: now_ms,
            message: String::new(),
        };
        let table = self.table(&metadata_root).await?;
        table::upsert(&table, &status, &record_path, pid).await;
        let (status_tx, status_rx) = watch::channel(status);
        if let Ok(mut live) = self.live.lock() {
            live.insert(id.to_string(), status_rx);
        }
        let guard = activity.begin();
        let service = Arc::clone(self);
        let worker = Worker {
            record,
            record_path,
            table,
            status: status_tx,
            dry_run: args.dry_run,
            request,
            args,
            published: Default::default(),
            lineage,
            depth,
            post_inspection,
            clippy_target: metadata_root.join(&project_id).join(CLIPPY_TARGET_DIR),
        };
        let task_id = id.to_string();
        tokio::spawn(async move {
            worker.run(&service).await;
            drop(guard);
            service.retire_later(task_id);
        });
        Ok(Launched { command: command.as_str().into(), id: id.to_string(), pid })
    }

    /// Blocks until the task is terminal and returns its report line, or
    /// the reason `--wait` fails.
    pub async fn wait(&self, id: &str, command: &str, env: Option<&Environment>) -> Result<String, TaskError> {
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
                .map_err(|error| TaskError::Failed(format!("cannot list tasks: {error}")))?;
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
    let state = record.as_ref().map_err(|error| error.to_string()).and_then(|record| {
        task_record::evaluate(record, command, task_record::process_alive, jiff::Timestamp::now())
            .map_err(|error| error.to_string())
    });
    match state {
        Ok(TaskState::Running { .. }) => {}
        Ok(TaskState::Succeeded { .. }) => {
            status.state = "succeeded".into();
            status.phase = "done".into();
        }
        Ok(TaskState::Failed { .. }) => {
            status.state = "failed".into();
            status.phase = "error".into();
        }
        Err(_) => {
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
        task_record::RecordError::Unknown { .. } => TaskError::NotFound(error.to_string()),
        error => TaskError::failed(error),
    })?;
    let record = task_record::read_record(&path, id).map_err(TaskError::failed)?;
    if !command.is_empty() && record.command != command {
        return Err(TaskError::Failed(format!("background task {id} belongs to {}, not {command}", record.command)));
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

/// One running task.
struct Worker {
    record: Record,
    record_path: PathBuf,
    table: Table,
    status: watch::Sender<TaskStatus>,
    dry_run: bool,
    request: InspectionRequest,
    args: InspectArgs,
    /// The phases published so far: the terminal event's sequence number
    /// follows the events really published.
    published: Arc<std::sync::atomic::AtomicI64>,
    /// The follow-up lineage and inspection depth the record's turn keeps.
    lineage: Lineage,
    depth: Depth,
    /// The nonblank post-inspection hooks of `~/.git-agent/settings.json`.
    post_inspection: Vec<String>,
    /// Cargo's target folder for `--clippy`, so the user's `target/` is
    /// never touched.
    clippy_target: PathBuf,
}

impl Worker {
    async fn run(mut self, service: &TaskService) {
        let engine: Arc<dyn InspectionEngine> =
            if self.dry_run { Arc::new(DryRunEngine) } else { Arc::clone(&service.engine) };
        let cancel = CancellationToken::new();
        let deadline = self.args.generation.timeout;
        let status = self.status.clone();
        let counter = Arc::clone(&self.published);
        let progress = move |phase: &str| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            status.send_modify(|status| status.phase = phase.to_string());
        };
        let outcome = {
            let run = engine.run(&self.request, &progress, cancel.clone());
            let timed = async {
                match deadline {
                    Some(deadline) => match tokio::time::timeout(deadline, run).await {
                        Ok(outcome) => outcome,
                        Err(_) => {
                            cancel.cancel();
                            Err(gitagent_inspect::engine::EngineFailure {
                                message: format!(
                                    "the {} inspection exceeded its --timeout of {}\nhint: pass a longer --timeout, or none for no deadline",
                                    self.request.command.as_str(),
                                    git_agent_shared::cli::format_duration(deadline)
                                ),
                                diagnostic: FailureDiagnostic::default(),
                            })
                        }
                    },
                    None => run.await,
                }
            };
            tokio::pin!(timed);
            let mut heartbeat = tokio::time::interval(HEARTBEAT_INTERVAL);
            heartbeat.tick().await;
            loop {
                tokio::select! {
                    outcome = &mut timed => break outcome,
                    _ = heartbeat.tick() => {
                        self.record.updated_at = task_record::format_time(jiff::Timestamp::now());
                        let _ = write(&self.record_path, &self.record).await;
                        let now = jiff::Timestamp::now().as_millisecond();
                        self.status.send_modify(|status| status.updated_ms = now);
                    }
                }
            }
        };
        let terminal = match outcome {
            Ok(outcome) => match self.final_report(&outcome.report_text, &cancel).await {
                Ok(report) => Ok((report, outcome)),
                Err(error) => Err((error.to_string(), FailureDiagnostic::default())),
            },
            Err(failure) => Err((failure.message, failure.diagnostic)),
        };
        if let Ok((report, outcome)) = &terminal
            && !self.dry_run
            && !self.post_inspection.is_empty()
        {
            self.run_hooks(report, outcome, &cancel).await;
        }
        let now = jiff::Timestamp::now();
        let seq = self.published.load(std::sync::atomic::Ordering::Relaxed) + 1;
        let (event, diagnostic, state) = match terminal {
            Ok((report, outcome)) => {
                let mut value = Map::new();
                value.insert("text".into(), report);
                value.insert("tool_calls".into(), Value::from(outcome.tool_calls));
                value.insert("repair_calls".into(), Value::from(outcome.repair_calls));
                let event = TerminalEvent { seq, at: task_record::format_time(now), kind: "final".into(), value };
                self.record.turn = self.turn(outcome);
                (event, None, "succeeded")
            }
            Err((message, mut diagnostic)) => {
                if diagnostic.mode.is_empty() {
                    diagnostic.mode = self.request.prepared.mode.as_str().into();
                    diagnostic.model = self.request.model.clone();
                    diagnostic.max_steps = i64::from(self.request.budget.selected_steps);
                    diagnostic.max_tool_calls = i64::from(self.request.budget.max_tool_calls);
                    diagnostic.repository_fingerprint = self.request.prepared.fingerprint.clone();
                }
                (error_event(&message, seq), Some(diagnostic), "failed")
            }
        };
        let completed = self.record.clone().complete(event, diagnostic, now);
        // Durable first: the terminal record is on disk before any waiter
        // or watcher learns that the task ended.
        if let Err(error) = write(&self.record_path, &completed).await {
            tracing::error!(%error, "cannot store the terminal task record");
        }
        let now_ms = now.as_millisecond();
        self.status.send_modify(|status| {
            status.state = state.into();
            status.phase = if state == "succeeded" { "done".into() } else { "error".into() };
            status.updated_ms = now_ms;
        });
        let status = self.status.borrow().clone();
        table::upsert(&self.table, &status, &self.record_path, std::process::id()).await;
    }

    /// The replayable turn of a provider-backed success (a dry run has no
    /// conversation, so it cannot be followed up).
    fn turn(&self, outcome: EngineOutcome) -> Option<Value> {
        if outcome.leaves.is_empty() || outcome.leaves.iter().any(|leaf| leaf.conversation.is_empty()) {
            return None;
        }
        let prepared = &self.request.prepared;
        // `--base` keeps the ref as given; `--commit` keeps the commit.
        let revision = prepared.range.as_ref().map(|range| match prepared.mode {
            Mode::Commit => range.target_commit.clone(),
            _ => range.requested.clone(),
        });
        let turn = TurnRecord {
            lineage: &self.lineage,
            mode: prepared.mode,
            revision,
            workspace: &prepared.root,
            depth: self.depth,
            leaves: outcome.leaves,
        };
        serde_json::to_value(turn.metadata()).ok()
    }

    /// Runs the post-inspection hooks on the validated report. A failure
    /// is published as status (phase `post_inspection_hook_failed` and
    /// its bounded message); the report is stored unchanged either way.
    async fn run_hooks(&self, report: &Value, outcome: &EngineOutcome, cancel: &CancellationToken) {
        let completed = jiff::Timestamp::now();
        let started = task_record::parse_time(&self.record.started_at).unwrap_or(completed);
        let request = &self.request;
        let mode = request.prepared.mode.as_str();
        let root = request.prepared.root.clone();
        let git_env = request.git_env.clone();
        let summary_root = root.clone();
        let repository =
            blocking::run_to_end("the repository summary", move || hooks::repository_summary(&summary_root, &git_env))
                .await
                .unwrap_or_default();
        let payload = hooks::Payload {
            schema_version: hooks::SCHEMA_VERSION,
            session: hooks::Session {
                id: request.task_id.clone(),
                title: hooks::title(request.command.as_str(), &root, mode),
                command: request.command.as_str().into(),
                mode: mode.into(),
                model: request.model.clone(),
                reasoning_effort: request.reasoning_effort.into(),
                started_at: task_record::format_time(started),
                completed_at: task_record::format_time(completed),
                elapsed_ms: completed.as_millisecond() - started.as_millisecond(),
                tool_calls: outcome.tool_calls,
                repair_calls: outcome.repair_calls,
                repository,
            },
            metrics: outcome.metrics.clone(),
            report: report.clone(),
        };
        self.publish("running_post_inspection_hooks", None);
        match hooks::run_post_inspection(&self.post_inspection, &payload, &request.env, cancel).await {
            Ok(()) => {}
            Err(error) if error.is_cancelled() => {}
            Err(error) => {
                let (message, _) = task_record::limit_text(&error.to_string(), 4096, 40);
                tracing::warn!(id = %request.task_id, %message, "a post-inspection hook failed");
                self.publish("post_inspection_hook_failed", Some(message));
            }
        }
    }

    /// Publishes a non-terminal phase (and its message) to watchers.
    fn publish(&self, phase: &str, message: Option<String>) {
        self.published.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.status.send_modify(|status| {
            status.phase = phase.to_string();
            if let Some(message) = message {
                status.message = message;
            }
        });
    }

    /// The terminal report: the provider fields, plus host checks for a
    /// review.
    async fn final_report(&self, report_text: &str, cancel: &CancellationToken) -> Result<Value, ReportError> {
        let command = self.request.command;
        if command == TaskCommand::Simplify {
            return serde_json::from_str(report_text).map_err(ReportError::DecodeSimplify);
        }
        let mut results = Vec::new();
        let (prepared, git_env) = (Arc::clone(&self.request.prepared), self.request.git_env.clone());
        let path_var = self.request.env.get(vars::PATH).map(str::to_string);
        let plan = blocking::run("the static check plan", cancel, move |_| {
            checks::plan_golangci(&prepared, path_var.as_deref(), &git_env)
        })
        .await??;
        if let Some(plan) = plan {
            self.publish(&format!("running_static_checks {}", checks::GOLANGCI_LINT), None);
            if self.dry_run {
                results.push(checks::synthetic_result(&plan));
            } else {
                results
                    .push(checks::run_golangci(&plan, &self.request.env, cancel).await.map_err(ReportError::Checks)?);
            }
            let prepared = Arc::clone(&self.request.prepared);
            let git_env = self.request.git_env.clone();
            blocking::run("the drift recheck", cancel, move |_| prepare::recheck(&prepared, &git_env)).await??;
        }
        if self.args.clippy {
            let (prepared, git_env) = (Arc::clone(&self.request.prepared), self.request.git_env.clone());
            let path_var = self.request.env.get(vars::PATH).map(str::to_string);
            let target = self.clippy_target.clone();
            let plan = blocking::run("the static check plan", cancel, move |_| {
                checks::plan_clippy(&prepared, path_var.as_deref(), &git_env, &target)
            })
            .await??;
            if let Some(plan) = plan {
                self.publish(&format!("running_static_checks {}", checks::CLIPPY), None);
                if self.dry_run {
                    results.push(checks::synthetic_clippy_result(&plan));
                } else {
                    results.push(checks::run_clippy(&plan, &self.request.env, cancel).await?);
                }
                let prepared = Arc::clone(&self.request.prepared);
                let git_env = self.request.git_env.clone();
                blocking::run("the drift recheck", cancel, move |_| prepare::recheck(&prepared, &git_env)).await??;
            }
        }
        let report = report::final_review_report(report_text, results)?;
        serde_json::to_value(report).map_err(ReportError::Encode)
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

//! `review` and `simplify`: the launch of a detached inspection task. The
//! launch validates the command line, resolves the project, creates the
//! task in the [`crate::tasks`] table, prepares the scope and the budget
//! beside the write of its running record, and starts the inspection: the
//! engine (dry-run fixture or [`Engine`]) under its deadline and the
//! record's heartbeat, the host checks, the post-inspection hooks, and the
//! report or failure the task ends with. It never writes a task record
//! itself: the table does.

use super::{Invocation, Services};
use crate::activity::Activity;
use crate::tasks::{Failure, Finished, Launched, Outcome, TaskContext, TaskError};
use git_agent_shared::cli::{self, Command, Depth, InspectArgs};
use git_agent_shared::environment::vars;
use git_agent_shared::error_chain::render;
use git_agent_shared::paths;
use git_agent_shared::task_record::{self, FailureDiagnostic, TaskCommand};
use gitagent_git::identity::ProjectIdentity;
use gitagent_inspect::budget::{self, ChangeMetrics};
use gitagent_inspect::checks;
use gitagent_inspect::engine::{DryRunEngine, EngineFailure, EngineOutcome, InspectionEngine, InspectionRequest};
use gitagent_inspect::follow_up::{self, Lineage, ParentTurn, TurnRecord};
use gitagent_inspect::git::GitEnv;
use gitagent_inspect::hooks;
use gitagent_inspect::prepare::{self, Mode, OperatorHint, PrepareError, PreparedScope};
use gitagent_inspect::provider_engine::ProviderEngine;
use gitagent_inspect::report;
use gitagent_runtime::blocking::{self, BlockingError};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// `review --clippy`'s Cargo target folder, below the project's metadata.
const CLIPPY_TARGET_DIR: &str = "clippy-target";

/// The engine every inspection that is no dry run runs on.
#[derive(Debug, Clone)]
pub struct Engine(Arc<dyn InspectionEngine>);

impl Engine {
    /// The provider-backed engine, over the daemon's shared HTTP clients.
    pub fn provider(http_clients: Arc<gitagent_provider::HttpClients>) -> Self {
        Self(Arc::new(ProviderEngine::new(http_clients)))
    }
}

/// Test builds: inspections that are no dry run fail as unavailable.
#[cfg(any(test, feature = "test-hooks"))]
impl Default for Engine {
    fn default() -> Self {
        Self(Arc::new(gitagent_inspect::engine::UnavailableEngine))
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

/// Launches `review` or `simplify` as described by the invocation.
pub async fn launch(
    services: &Services,
    activity: &Arc<Activity>,
    invocation: &Invocation,
) -> Result<Launched, TaskError> {
    let (cwd, env) = (&invocation.cwd, &invocation.env);
    let (command, args) = match cli::parse_command(&invocation.args) {
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
    // `--no-redact` or the configured allow regex, for every request of
    // the task.
    let redactor = match cli::parse(&invocation.args) {
        Ok(cli) if cli.no_redact => gitagent_provider::Redactor::disabled(),
        _ => super::redaction::for_environment(env).await.map_err(|error| TaskError::Message(error.to_string()))?,
    };
    let metadata_root = paths::metadata_root(env).map_err(TaskError::failed)?;
    let start = cwd.to_path_buf();
    let identity = blocking::run_to_end("the project identity", move || ProjectIdentity::resolve(&start))
        .await?
        .map_err(TaskError::failed)?;
    let project_id = identity.id();
    let (project_root, root) = (identity.root.clone(), metadata_root.clone());
    blocking::run_to_end("the metadata migration", move || {
        gitagent_search::index::migrate::move_legacy_metadata(&project_root, &root)
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
    let task = services.tasks.create(&metadata_root, &project_id, command)?;
    let id = task.id().clone();
    let lineage = match &parent {
        Some(parent) => parent.lineage(command, id.as_str()),
        None => Lineage::initial(command, id.as_str()),
    };
    // Preparation happens before the launch object exists: an empty or
    // unreadable scope fails the launch (and the stored record). It runs
    // beside the durable write of the running record; both finish before
    // the launch is answered.
    let git_env = GitEnv::from_environment(env);
    let prepare_cwd = cwd.to_path_buf();
    let prepare_env = git_env.clone();
    let follow_up_launch = parent.is_some();
    let (written, prepared) = tokio::join!(
        task.store(),
        blocking::run_to_end("the inspection scope", move || match follow_up_launch {
            true => prepare::prepare_follow_up(&prepare_cwd, mode, revision.as_deref(), &prepare_env),
            false => prepare::prepare_with(&prepare_cwd, mode, revision.as_deref(), &prepare_env),
        })
    );
    written?;

    // The lifecycle settings are read once per task; a broken file
    // fails it before any provider work.
    let settings_root = metadata_root.clone();
    let settings = blocking::run_to_end("the settings file", move || hooks::load_settings(&settings_root)).await;
    let post_inspection = match settings {
        Ok(Ok(settings)) => settings.post_inspection(),
        Ok(Err(error)) => return Err(task.fail(render(&error), None).await),
        Err(error) => return Err(task.fail(render(&error), None).await),
    };
    let prepared = match prepared {
        Ok(Ok(prepared)) => Arc::new(prepared),
        Ok(Err(error)) => {
            let diagnostic = FailureDiagnostic { mode: mode.as_str().into(), ..FailureDiagnostic::default() };
            return Err(task.fail(render(&error), Some(diagnostic)).await);
        }
        Err(error) => return Err(task.fail(render(&error), None).await),
    };
    if let Some(parent) = &parent
        && let Err(error) = parent.check_workspace(&prepared.root)
    {
        return Err(task.fail(render(&error), None).await);
    }
    let depth = parent.as_ref().map_or(args.depth.unwrap_or(Depth::Balanced), |parent| parent.depth);
    let tools = budget::standard_tools(mode);
    let plan =
        match budget::plan(command, mode, &ChangeMetrics::from_prepared(&prepared), &tools, depth, args.max_steps) {
            Ok(plan) => plan,
            Err(error) => return Err(task.fail(format!("plan {command} budget: {}", render(&error)), None).await),
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
        redactor,
    };
    let engine: Arc<dyn InspectionEngine> =
        if args.dry_run { Arc::new(DryRunEngine) } else { Arc::clone(&services.inspection.0) };
    let clippy_target = metadata_root.join(&project_id).join(CLIPPY_TARGET_DIR);
    task.start(activity, move |task| {
        let inspection = Inspection {
            task,
            engine,
            dry_run: args.dry_run,
            request,
            args,
            lineage,
            depth,
            post_inspection,
            clippy_target,
        };
        inspection.run()
    })
    .await
}

/// One running inspection.
struct Inspection {
    task: TaskContext,
    engine: Arc<dyn InspectionEngine>,
    dry_run: bool,
    request: InspectionRequest,
    args: InspectArgs,
    /// The follow-up lineage and inspection depth the record's turn keeps.
    lineage: Lineage,
    depth: Depth,
    /// The nonblank post-inspection hooks of `~/.git-agent/settings.json`.
    post_inspection: Vec<String>,
    /// Cargo's target folder for `--clippy`, so the user's `target/` is
    /// never touched.
    clippy_target: PathBuf,
}

impl Inspection {
    async fn run(self) -> Outcome {
        let cancel = CancellationToken::new();
        let deadline = self.args.generation.timeout;
        let task = self.task.clone();
        let progress = move |phase: &str| task.publish(phase, None);
        let run = self.engine.run(&self.request, &progress, cancel.clone());
        let timed = async {
            match deadline {
                Some(deadline) => match tokio::time::timeout(deadline, run).await {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        cancel.cancel();
                        Err(EngineFailure {
                            message: format!(
                                "the {} inspection exceeded its --timeout of {}\nhint: pass a longer --timeout, or none for no deadline",
                                self.request.command.as_str(),
                                cli::format_duration(deadline)
                            ),
                            diagnostic: FailureDiagnostic::default(),
                        })
                    }
                },
                None => run.await,
            }
        };
        let outcome = timed.await;
        let terminal = match outcome {
            Ok(outcome) => match self.final_report(&outcome.report_text, &cancel).await {
                Ok(report) => Ok((report, outcome)),
                Err(error) => Err((render(&error), FailureDiagnostic::default())),
            },
            Err(failure) => Err((failure.message, failure.diagnostic)),
        };
        if let Ok((report, outcome)) = &terminal
            && !self.dry_run
            && !self.post_inspection.is_empty()
        {
            self.run_hooks(report, outcome, &cancel).await;
        }
        match terminal {
            Ok((report, outcome)) => {
                let mut value = Map::new();
                value.insert("text".into(), report);
                value.insert("tool_calls".into(), Value::from(outcome.tool_calls));
                value.insert("repair_calls".into(), Value::from(outcome.repair_calls));
                if outcome.controls_removed > 0 {
                    value.insert("controls_removed".into(), Value::from(outcome.controls_removed));
                }
                // What was redacted from the task's requests, said by
                // `--wait` (a launch prints nothing on stderr).
                if let Some(line) = self.request.redactor.summary(false) {
                    value.insert("redacted".into(), Value::from(line.trim_end()));
                }
                Ok(Finished { value, turn: self.turn(outcome) })
            }
            Err((message, mut diagnostic)) => {
                if diagnostic.mode.is_empty() {
                    diagnostic.mode = self.request.prepared.mode.as_str().into();
                    diagnostic.model = self.request.model.clone();
                    diagnostic.max_steps = i64::from(self.request.budget.selected_steps);
                    diagnostic.max_tool_calls = i64::from(self.request.budget.max_tool_calls);
                    diagnostic.repository_fingerprint = self.request.prepared.fingerprint.clone();
                }
                Err(Failure { message, diagnostic })
            }
        }
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
        let started = task_record::parse_time(self.task.started_at()).unwrap_or(completed);
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
        self.task.publish("running_post_inspection_hooks", None);
        match hooks::run_post_inspection(&self.post_inspection, &payload, &request.env, cancel).await {
            Ok(()) => {}
            Err(error) if error.is_cancelled() => {}
            Err(error) => {
                let (message, _) = task_record::limit_text(&render(&error), 4096, 40);
                tracing::warn!(id = %request.task_id, %message, "a post-inspection hook failed");
                self.task.publish("post_inspection_hook_failed", Some(message));
            }
        }
    }

    /// The terminal report: the provider fields, plus host checks for a
    /// review.
    async fn final_report(&self, report_text: &str, cancel: &CancellationToken) -> Result<Value, ReportError> {
        let command = self.request.command;
        if command == TaskCommand::Simplify {
            return serde_json::from_str(report_text).map_err(ReportError::DecodeSimplify);
        }
        let mut results = Vec::new();
        let plan = self.plan_check(cancel, checks::plan_golangci).await?;
        if let Some(plan) = plan {
            self.task.publish(&format!("running_static_checks {}", checks::GOLANGCI_LINT), None);
            if self.dry_run {
                results.push(checks::synthetic_result(&plan));
            } else {
                results
                    .push(checks::run_golangci(&plan, &self.request.env, cancel).await.map_err(ReportError::Checks)?);
            }
            self.recheck_drift(cancel).await?;
        }
        if self.args.clippy {
            let target = self.clippy_target.clone();
            let plan = self
                .plan_check(cancel, move |prepared, path_var, git_env| {
                    checks::plan_clippy(prepared, path_var, git_env, &target)
                })
                .await?;
            if let Some(plan) = plan {
                self.task.publish(&format!("running_static_checks {}", checks::CLIPPY), None);
                if self.dry_run {
                    results.push(checks::synthetic_clippy_result(&plan));
                } else {
                    results.push(checks::run_clippy(&plan, &self.request.env, cancel).await?);
                }
                self.recheck_drift(cancel).await?;
            }
        }
        let report = report::final_review_report(report_text, results)?;
        serde_json::to_value(report).map_err(ReportError::Encode)
    }

    /// A static check's plan for the prepared scope, on the blocking pool.
    async fn plan_check<P: Send + 'static>(
        &self,
        cancel: &CancellationToken,
        plan: impl FnOnce(&PreparedScope, Option<&str>, &GitEnv) -> Result<Option<P>, checks::PlanError> + Send + 'static,
    ) -> Result<Option<P>, ReportError> {
        let (prepared, git_env) = (Arc::clone(&self.request.prepared), self.request.git_env.clone());
        let path_var = self.request.env.get(vars::PATH).map(str::to_string);
        let plan =
            blocking::run("the static check plan", cancel, move |_| plan(&prepared, path_var.as_deref(), &git_env));
        Ok(plan.await??)
    }

    /// Fails when the scope changed while a static check ran.
    async fn recheck_drift(&self, cancel: &CancellationToken) -> Result<(), ReportError> {
        let (prepared, git_env) = (Arc::clone(&self.request.prepared), self.request.git_env.clone());
        blocking::run("the drift recheck", cancel, move |_| prepare::recheck(&prepared, &git_env)).await??;
        Ok(())
    }
}

//! The provider-backed inspection engine: `review` and `simplify` on the
//! bounded agent loop.
//!
//! For one prepared scope it resolves the provider from the caller's
//! environment, assembles the seven request layers (our review/simplify
//! system prompt, the read-only tool policy, the environment context, the
//! `skills-mgr list` layer, project guidance for the authoritative paths,
//! the task prompt with the prepared context as data and the escaped
//! operator hint, and the tool registry of [`tools`]), asks for the strict
//! report schema with reasoning summaries, and runs the loop with the
//! budget's step and tool ceilings. The report validator (which rechecks
//! the launch fingerprint first) is the loop's validator, so a report
//! gets exactly one schema repair; drift is never repaired but fails the
//! task with the rerun error.
//!
//! It never writes to a client: live status goes to the `progress`
//! callback (step, reasoning summary titles, tool phases), and every
//! failure message and diagnostic is sanitized (no credential, no
//! endpoint) and capped before the task record stores it.

mod tools;
mod tree;

use super::engine::{EngineFailure, EngineFuture, EngineOutcome, InspectionEngine, InspectionRequest, LeafTurn};
use super::prepare::{Mode, PreparedScope};
use super::report;
use git_agent_shared::environment::vars;
use git_agent_shared::secret::Redactor;
use git_agent_shared::task_record::{
    FailureDiagnostic, FailureToolEvent, MAX_DIAGNOSTIC_LINES, TaskCommand, limit_text,
};
use gitagent_agent::guidance::{self, Family, IndexReader, WorktreeReader};
use gitagent_agent::layers::{self as generation, EnvironmentContext};
use gitagent_agent::skills::SkillsManager;
use gitagent_agent::tools::{RepoFiles, ToolRegistry};
use gitagent_agent::{AgentError, AgentTask, Layers, Limits, OutputRules};
use gitagent_git::Repository;
use gitagent_provider::{self as provider, HostedSearch, HttpClients, Provider, ProviderFlags, RunOptions, TextFormat};
use gitagent_runtime::trace::{Event, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tools::DriftSlot;

/// The per-request transport limit when `--timeout` is absent: an
/// inspection has no deadline by default, so this only bounds a request
/// whose connection went silent.
const NO_DEADLINE_REQUEST_LIMIT: Duration = Duration::from_secs(24 * 60 * 60);
/// The stored error message is capped like a diagnostic payload.
const MAX_MESSAGE_BYTES: usize = 4 * 1024;
/// Tool events kept for a failure diagnostic.
const KEPT_TOOL_EVENTS: usize = 8;

/// Why an inspection produced no report. It becomes text only at the
/// task boundary, where the engine sanitizes it for the record.
#[derive(Debug, thiserror::Error)]
pub enum InspectionError {
    #[error(transparent)]
    Config(#[from] provider::ConfigError),
    #[error(transparent)]
    Provider(#[from] provider::ProviderError),
    #[error(transparent)]
    Family(#[from] gitagent_agent::guidance::UnknownFamily),
    #[error(transparent)]
    Repository(#[from] gitagent_git::GitError),
    #[error("an inspection worker failed: {0}")]
    Worker(#[from] gitagent_runtime::blocking::BlockingError),
    #[error(transparent)]
    Skills(#[from] gitagent_agent::skills::SkillsError),
    #[error(transparent)]
    Prompt(#[from] gitagent_agent::prompt::PromptError),
    /// The authoritative repository state changed (the rerun message).
    #[error("{0}")]
    Drift(String),
    #[error(
        "the {command} inspection exceeded its --timeout of {}\nhint: pass a longer --timeout, or none for no deadline",
        git_agent_shared::cli::format_duration(*timeout)
    )]
    Deadline { command: &'static str, timeout: Duration },
    #[error("the {command} inspection was cancelled")]
    Cancelled { command: &'static str },
    #[error(
        "the first {command} request is estimated at {estimated} tokens, at or over the {limit}-token context budget\nhint: inspect a smaller scope, such as --staged with fewer changes"
    )]
    ContextTooLarge { command: &'static str, estimated: u64, limit: u64 },
    #[error(transparent)]
    Agent(AgentError),
    #[error(transparent)]
    Branch(#[from] super::branch::BranchError),
    #[error(transparent)]
    Merge(#[from] super::branch::MergeError),
}

/// Runs inspections on the agent loop with the daemon's shared HTTP
/// clients.
#[derive(Debug)]
pub struct ProviderEngine {
    http: Arc<HttpClients>,
}

impl ProviderEngine {
    pub fn new(http: Arc<HttpClients>) -> Self {
        Self { http }
    }
}

impl InspectionEngine for ProviderEngine {
    fn run<'a>(
        &'a self,
        request: &'a InspectionRequest,
        progress: &'a (dyn Fn(&str) + Send + Sync),
        cancel: CancellationToken,
    ) -> EngineFuture<'a> {
        Box::pin(async move {
            let status = Status::new(progress);
            let mut secrets = Secrets::from_request(request);
            let result = self.inspect(request, &status, &mut secrets, cancel).await;
            result.map_err(|error| EngineFailure {
                message: secrets.sanitize(&git_agent_shared::error_chain::render(&error)),
                diagnostic: diagnostic(request, status.tool_events(), &secrets),
            })
        })
    }
}

impl ProviderEngine {
    async fn inspect(
        &self,
        request: &InspectionRequest,
        status: &Status<'_>,
        secrets: &mut Secrets,
        cancel: CancellationToken,
    ) -> Result<EngineOutcome, InspectionError> {
        status.phase("preparing");
        let command = request.command;
        let flags = ProviderFlags {
            model: Some(request.model.clone()),
            base_url: request.base_url.clone(),
            timeout: Some(request.timeout.unwrap_or(NO_DEADLINE_REQUEST_LIMIT)),
        };
        // Resolving reads `~/.codex/auth.json`: off the runtime.
        let env = request.env.clone();
        let config = gitagent_runtime::blocking::run("the provider settings", &cancel, move |_| {
            provider::config::resolve(&env, &flags)
        })
        .await??;
        secrets.learn(&config);
        let provider =
            Provider::shared(&self.http, config, run_options(request)).await?.with_redactor(request.redactor.clone());

        let (token, deadline) = match request.timeout {
            Some(timeout) => {
                let (token, deadline) = generation::with_deadline(&cancel, timeout);
                (token, Some(deadline))
            }
            None => (cancel.child_token(), None),
        };
        let drift = DriftSlot::new(token.clone());
        let mut task = assemble(request, &drift, &token).await?;
        task.web_search = Some(hosted_search(request.max_web_searches, provider.chatgpt_auth()));
        let roots = roots(request, &provider, &task)?;
        task.history = Vec::new();

        let metrics = super::metrics::MetricsCollector::default();
        let trace = |event: Event| {
            metrics.observe(&event);
            status.observe(&event);
        };
        let rules = output_rules(request, &drift);
        let policy = super::branch::Policy::of(request.depth);
        let tree = tree::Tree::new(command, policy, &task, &rules, token.clone(), deadline, &trace);
        let result = tree.grow(roots).await;
        let merged = result.and_then(|grown| {
            let leaves: Vec<_> = grown
                .leaves
                .iter()
                .map(|leaf| super::branch::LeafReport { scope: leaf.scope.clone(), text: leaf.text.clone() })
                .collect();
            if leaves.len() > 1 {
                status.phase("aggregating_branches");
            }
            let text = super::branch::merge(command, &leaves).map_err(tree::TreeError::Merge)?;
            if leaves.len() > 1 {
                let errors = (rules.validate)(&text);
                if !errors.is_empty() {
                    return Err(tree::TreeError::Merge(super::branch::MergeError::Invalid(errors)));
                }
            }
            Ok((text, grown))
        });
        token.cancel();
        if let Some(message) = drift.take() {
            return Err(InspectionError::Drift(message));
        }
        let command = command.as_str();
        let (text, grown) = merged.map_err(|error| match error {
            tree::TreeError::Agent(AgentError::DeadlineExceeded) => {
                InspectionError::Deadline { command, timeout: request.timeout.unwrap_or_default() }
            }
            tree::TreeError::Agent(AgentError::Cancelled) => InspectionError::Cancelled { command },
            tree::TreeError::Agent(AgentError::ContextTooLarge { estimated, limit }) => {
                InspectionError::ContextTooLarge { command, estimated, limit }
            }
            tree::TreeError::Agent(other) => InspectionError::Agent(other),
            tree::TreeError::Branch(error) => InspectionError::Branch(error),
            tree::TreeError::Merge(error) => InspectionError::Merge(error),
        })?;
        status.phase("validated");
        let branches = tree.branches();
        Ok(EngineOutcome {
            report_text: text,
            tool_calls: u64::from(grown.tool_calls),
            repair_calls: u64::from(grown.repair_calls),
            controls_removed: grown.controls_removed as u64,
            usage: grown.usage,
            branches_created: branches.len() as u64,
            metrics: metrics.snapshot(&grown.usage, branches),
            leaves: grown
                .leaves
                .into_iter()
                .map(|leaf| LeafTurn {
                    scope: leaf.scope,
                    model: leaf.model,
                    reasoning_effort: leaf.reasoning_effort,
                    turn_state: leaf.turn_state,
                    conversation: provider::items_to_json(&leaf.conversation),
                })
                .collect(),
        })
    }
}

/// The roots of the tree: one fresh conversation, or for a follow-up
/// every leaf of the parent, each continued with the fresh repository
/// context and the previous report with the new prompt.
fn roots(
    request: &InspectionRequest,
    provider: &Provider,
    task: &AgentTask,
) -> Result<Vec<tree::Start>, InspectionError> {
    let Some(follow_up) = &request.follow_up else {
        return Ok(vec![tree::Start {
            id: "root".into(),
            depth: 0,
            scope: String::new(),
            provider: provider.fork(&request.model, request.reasoning_effort, None),
            reasoning_effort: request.reasoning_effort.to_string(),
            history: task.history.clone(),
        }]);
    };
    let many = follow_up.roots.len() > 1;
    follow_up
        .roots
        .iter()
        .enumerate()
        .map(|(index, root)| {
            Ok(tree::Start {
                id: if many { format!("root.{}", index + 1) } else { "root".into() },
                depth: 0,
                scope: root.scope.clone(),
                provider: provider.fork(&root.model, &root.reasoning_effort, root.turn_state.clone()),
                reasoning_effort: root.reasoning_effort.clone(),
                history: follow_up_history(request.command, &request.prepared, follow_up, &root.history)?,
            })
        })
        .collect()
}

/// Hosted web search for every normal step: `--max-web-searches` when
/// given, else a cap of 4 per response with an API key and none with a
/// ChatGPT sign-in (whose backend refuses the cap).
fn hosted_search(max_web_searches: Option<u32>, chatgpt_auth: bool) -> HostedSearch {
    const API_KEY_DEFAULT_CAP: u32 = 4;
    let default = (!chatgpt_auth).then_some(API_KEY_DEFAULT_CAP);
    HostedSearch { max_calls: max_web_searches.or(default) }
}

/// Reasoning summaries, the depth-derived effort, `--fast`, the lineage's
/// prompt-cache key and, for a context-preserving follow-up, the parent's
/// turn state.
fn run_options(request: &InspectionRequest) -> RunOptions {
    RunOptions {
        reasoning_effort: Some(request.reasoning_effort.to_string()),
        reasoning_summary: Some("auto".to_string()),
        service_tier: request.priority.then(|| "priority".to_string()),
        prompt_cache_key: Some(request.prompt_cache_key.clone()),
        // Each conversation's provider is forked with its own turn state.
        turn_state: None,
    }
}

/// The validator of the loop: drift (or an unreadable repository) stops
/// the loop instead of asking for a repair; everything else is the
/// report validator's list.
fn output_rules(request: &InspectionRequest, drift: &DriftSlot) -> OutputRules {
    let (command, prepared, git_env, drift) =
        (request.command, Arc::clone(&request.prepared), request.git_env.clone(), drift.clone());
    OutputRules {
        shape: Box::new(|text: &str| text.trim().to_string()),
        validate: Box::new(move |text: &str| {
            blocking_section(|| {
                if let Err(error) = super::prepare::recheck(&prepared, &git_env) {
                    drift.record(error.to_string());
                    return vec![error.to_string()];
                }
                report::validate_repository(command, text, &prepared, &git_env)
            })
        }),
    }
}

/// Runs repository reads from inside the (synchronous) validator without
/// starving the runtime's other tasks.
fn blocking_section<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// The seven request layers and the tool registry of one inspection.
async fn assemble(
    request: &InspectionRequest,
    drift: &DriftSlot,
    cancel: &CancellationToken,
) -> Result<AgentTask, InspectionError> {
    let prepared = Arc::clone(&request.prepared);
    let family = Family::parse(request.guidance_family.as_deref())?;
    let (repo, guidance, skills, docs) = {
        let prepared = Arc::clone(&prepared);
        let (env, cwd) = (request.env.clone(), request.cwd.clone());
        gitagent_runtime::blocking::run("the guidance reader", cancel, move |_| {
            let repo = Repository::discover(&prepared.root)?;
            let paths = if prepared.mode == Mode::Codebase { Vec::new() } else { prepared.paths.clone() };
            let guidance = match prepared.mode {
                Mode::Staged => guidance::resolve(repo.root(), &paths, family, &IndexReader::new(&repo)),
                Mode::Uncommitted | Mode::Codebase | Mode::Base | Mode::Commit => {
                    guidance::resolve(repo.root(), &paths, family, &WorktreeReader::new(repo.root()))
                }
            };
            // PATH scans: off the runtime too.
            let skills = SkillsManager::discover(&env, &cwd);
            let docs = super::tools::DocCommands::discover(repo.root(), &env);
            Ok::<_, InspectionError>((repo, guidance, skills, docs))
        })
        .await??
    };
    let skills_layer = match &skills {
        Some(manager) => manager.list(cancel).await?.stdout,
        None => String::new(),
    };
    let tools = registry(request, repo, skills.as_ref(), docs, drift);
    let limits = Limits {
        max_steps: request.budget.selected_steps,
        max_tool_calls: request.budget.max_tool_calls,
        ..Limits::default()
    };
    let command = request.command.as_str();
    let environment = generation::environment(&EnvironmentContext {
        cwd: &request.cwd,
        repo_root: &prepared.root,
        command,
        mode: prepared.mode.as_str(),
        family: if guidance.sources.is_empty() { family } else { guidance.family },
        limits,
        stdout_contract: &format!(
            "none: the detached task stores the validated JSON report, which `git-agent {command} --wait <id>` prints"
        ),
    })?;
    let format = report::text_format(request.command);
    Ok(AgentTask {
        layers: Layers {
            system: system_prompt(request.command).to_string(),
            tool_policy: generation::tool_policy(),
            environment,
            skills: skills_layer,
            guidance: guidance.render(),
            task_instructions: Vec::new(),
            user: user_prompt(request.command, &prepared, request.operator_hint.as_ref())?,
        },
        tools,
        text_format: Some(TextFormat {
            name: format["name"].as_str().unwrap_or(command).to_string(),
            description: format["description"].as_str().map(str::to_string),
            schema: report::output_schema(request.command),
        }),
        parallel_tool_calls: true,
        limits,
        web_search: None,
        history: Vec::new(),
    })
}

/// A follow-up's input: the parent's whole conversation, then the freshly
/// prepared repository context, then one user message with the parent's
/// report and the new prompt.
fn follow_up_history(
    command: TaskCommand,
    prepared: &PreparedScope,
    follow_up: &super::engine::FollowUp,
    parent: &[provider::Item],
) -> Result<Vec<provider::Item>, gitagent_agent::prompt::PromptError> {
    let context = match prepared.rendered_prompt_context() {
        Some(json) => json.replace("</prepared_review_context", "<\\/prepared_review_context"),
        None => String::new(),
    };
    let fresh = gitagent_agent::prompt::render(
        "follow-up-context",
        include_str!("prompts/follow-up-context.md.j2"),
        serde_json::json!({"command": command.as_str(), "prepared_context": context}),
    )?;
    let report = serde_json::to_string(&follow_up.previous_report).unwrap_or_default();
    let ask = gitagent_agent::prompt::render(
        "follow-up",
        include_str!("prompts/follow-up.md.j2"),
        serde_json::json!({
            "previous_report": report.replace("</previous_report", "<\\/previous_report"),
            "prompt": follow_up.prompt.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"),
        }),
    )?;
    let mut history = parent.to_vec();
    history.push(provider::Item::user(fresh));
    history.push(provider::Item::user(ask));
    Ok(history)
}

/// Layer 7: repository tools over the scope's source, diff tools in diff
/// modes, documentation and skills tools when present; every tool that
/// does not recheck the fingerprint itself is guarded in diff modes.
fn registry(
    request: &InspectionRequest,
    repo: Repository,
    skills: Option<&SkillsManager>,
    docs: super::tools::DocCommands,
    drift: &DriftSlot,
) -> ToolRegistry {
    let mode = request.prepared.mode;
    let files = Arc::new(match (mode, target_commit(&request.prepared)) {
        (Mode::Staged, _) => RepoFiles::staged(repo),
        // A commit range reads the reviewed commit as "head".
        (Mode::Base | Mode::Commit, Some(commit)) => RepoFiles::commit(repo.with_pinned_head(commit)),
        _ => RepoFiles::new(repo, gitagent_git::FileSource::Worktree),
    });
    let mut shared = gitagent_agent::tools::repository::tools(&files);
    shared.extend(tools::doc_tools(docs));
    shared.extend(gitagent_agent::tools::skills::tools(skills));
    let mut registry = ToolRegistry::new();
    if mode == Mode::Codebase {
        registry.extend(shared);
        return registry;
    }
    registry
        .extend(shared.into_iter().map(|tool| tools::Guarded::wrap(tool, &request.prepared, &request.git_env, drift)));
    registry.extend(tools::diff_tools(&request.prepared, &request.git_env, drift));
    registry.guard_batches(tools::batch_guard(&request.prepared, &request.git_env, drift));
    registry
}

/// The reviewed commit of a commit-range inspection.
fn target_commit(prepared: &PreparedScope) -> Option<gix::ObjectId> {
    let range = prepared.range.as_ref()?;
    gix::ObjectId::from_hex(range.target_commit.as_bytes()).ok()
}

fn system_prompt(command: TaskCommand) -> &'static str {
    match command {
        TaskCommand::Review => include_str!("prompts/system-review.md"),
        TaskCommand::Simplify => include_str!("prompts/system-simplify.md"),
    }
}

/// Layer 6: the mission, the scope, the prepared context as a data frame,
/// then the operator hint as lower-priority escaped data.
pub fn user_prompt(
    command: TaskCommand,
    prepared: &PreparedScope,
    hint: Option<&super::prepare::OperatorHint>,
) -> Result<String, gitagent_agent::prompt::PromptError> {
    let mission = match command {
        TaskCommand::Review => include_str!("prompts/mission-review.md"),
        TaskCommand::Simplify => include_str!("prompts/mission-simplify.md"),
    };
    let (scope, context) = match prepared.rendered_prompt_context() {
        // A closing tag inside repository text must not end the frame.
        Some(json) => (
            include_str!("prompts/scope-diff.md"),
            json.replace("</prepared_review_context", "<\\/prepared_review_context"),
        ),
        None => (include_str!("prompts/scope-codebase.md"), String::new()),
    };
    let prompt = gitagent_agent::prompt::render(
        "inspection-user",
        include_str!("prompts/user.md.j2"),
        serde_json::json!({"mission": mission.trim(), "scope": scope.trim(), "prepared_context": context}),
    )?;
    gitagent_agent::prompt::OperatorHint::append(hint, prompt)
}

/// Live status for task watchers and the tool events a failure
/// diagnostic keeps.
struct Status<'a> {
    progress: &'a (dyn Fn(&str) + Send + Sync),
    state: Mutex<StatusState>,
}

#[derive(Default)]
struct StatusState {
    last_phase: String,
    summary: String,
    seq: i64,
    tool_events: Vec<FailureToolEvent>,
}

impl<'a> Status<'a> {
    fn new(progress: &'a (dyn Fn(&str) + Send + Sync)) -> Self {
        Self { progress, state: Mutex::default() }
    }

    /// Publishes `phase` unless it is the current one.
    fn phase(&self, phase: &str) {
        let Ok(mut state) = self.state.lock() else { return };
        if state.last_phase != phase {
            state.last_phase = phase.to_string();
            drop(state);
            (self.progress)(phase);
        }
    }

    /// Turns one loop trace event into status and diagnostics.
    fn observe(&self, event: &Event) {
        match event.kind.as_str() {
            "request" => {
                if let Ok(mut state) = self.state.lock() {
                    state.summary.clear();
                }
                self.phase(&format!("step:{}", int(event, "step").unwrap_or_default()));
            }
            "reasoning_summary.delta" => {
                let title = {
                    let Ok(mut state) = self.state.lock() else { return };
                    state.summary.push_str(text(event, "delta").unwrap_or_default());
                    summary_title(&state.summary)
                };
                if !title.is_empty() {
                    self.phase(&format!("reasoning: {title}"));
                }
            }
            "tool-call" => {
                let name = text(event, "name").unwrap_or_default();
                self.phase(&format!("tool:{name}"));
                self.remember("tool_call", event, "arguments", false);
            }
            "tool-output" => {
                let truncated = matches!(field(event, "truncated"), Some(Value::Bool(true)));
                self.remember("tool_output", event, "content", truncated);
            }
            "validation" => self.phase("repairing"),
            "budget" => self.phase("finalizing"),
            _ => {}
        }
    }

    fn remember(&self, kind: &str, event: &Event, payload: &str, truncated: bool) {
        let Ok(mut state) = self.state.lock() else { return };
        state.seq += 1;
        let (payload, cut) = limit_text(text(event, payload).unwrap_or_default(), 1024, MAX_DIAGNOSTIC_LINES);
        let record = FailureToolEvent {
            seq: state.seq,
            kind: kind.to_string(),
            tool: text(event, "name").unwrap_or_default().to_string(),
            call_id: text(event, "call_id").unwrap_or_default().to_string(),
            payload,
            truncated: truncated || cut,
        };
        state.tool_events.push(record);
        let excess = state.tool_events.len().saturating_sub(KEPT_TOOL_EVENTS);
        state.tool_events.drain(..excess);
    }

    fn tool_events(&self) -> Vec<FailureToolEvent> {
        self.state.lock().map(|state| state.tool_events.clone()).unwrap_or_default()
    }
}

fn field<'e>(event: &'e Event, key: &str) -> Option<&'e Value> {
    event.fields.iter().find(|(name, _)| name == key).map(|(_, value)| value)
}

fn text<'e>(event: &'e Event, key: &str) -> Option<&'e str> {
    match field(event, key) {
        Some(Value::Text(text)) => Some(text),
        _ => None,
    }
}

fn int(event: &Event, key: &str) -> Option<i64> {
    match field(event, key) {
        Some(Value::Int(value)) => Some(*value),
        _ => None,
    }
}

/// The first line of a reasoning summary without Markdown emphasis, at
/// most 120 characters: summaries open with a bold title.
fn summary_title(summary: &str) -> String {
    let line = summary.trim_start().lines().next().unwrap_or_default();
    let title = line.trim().trim_matches('*').trim();
    title.chars().take(120).collect()
}

/// What must never reach a stored error or diagnostic: every credential
/// of this run (the caller's credential variables: API and embeddings
/// keys, tokens; the ChatGPT access token once read) and its provider
/// endpoints.
struct Secrets {
    redactor: Redactor,
    endpoints: Vec<String>,
}

impl Secrets {
    fn from_request(request: &InspectionRequest) -> Self {
        let mut endpoints: Vec<String> = [request.base_url.as_deref(), request.env.get(vars::OPENAI_BASE_URL)]
            .into_iter()
            .flatten()
            .map(|url| url.trim().trim_end_matches('/').to_string())
            .filter(|url| !url.is_empty())
            .collect();
        endpoints
            .extend([provider::config::OPENAI_BASE_URL.to_string(), provider::config::CHATGPT_BASE_URL.to_string()]);
        Self { redactor: Redactor::from_environment(&request.env), endpoints }
    }

    /// Learns the resolved configuration's endpoint and credential: the
    /// ChatGPT access token comes from `~/.codex/auth.json`, not from the
    /// environment, so only the resolved configuration knows it.
    fn learn(&mut self, config: &provider::ProviderConfig) {
        self.endpoints.push(config.base_url.clone());
        match &config.credentials {
            provider::Credentials::ApiKey(secret) | provider::Credentials::ChatGpt { access_token: secret, .. } => {
                self.redactor.add(secret);
            }
        }
    }

    /// `text` without credentials or endpoints, capped at 4 KiB and 40
    /// lines.
    fn sanitize(&self, text: &str) -> String {
        let mut out = self.redactor.redact(text);
        let mut endpoints = self.endpoints.clone();
        endpoints.sort_by_key(|endpoint| std::cmp::Reverse(endpoint.len()));
        for endpoint in &endpoints {
            out = out.replace(endpoint.as_str(), "[endpoint]");
        }
        // Any other URL is an endpoint too.
        let out: String = out
            .split_inclusive(char::is_whitespace)
            .map(|piece| {
                let word = piece.trim_end();
                if word.contains("://") { format!("[endpoint]{}", &piece[word.len()..]) } else { piece.to_string() }
            })
            .collect();
        limit_text(out.trim_end(), MAX_MESSAGE_BYTES, MAX_DIAGNOSTIC_LINES).0.trim_end().to_string()
    }
}

/// The failure diagnostic: model, mode, budgets, launch fingerprint and
/// the last sanitized tool events.
fn diagnostic(request: &InspectionRequest, events: Vec<FailureToolEvent>, secrets: &Secrets) -> FailureDiagnostic {
    FailureDiagnostic {
        model: request.model.clone(),
        mode: request.prepared.mode.as_str().into(),
        max_steps: i64::from(request.budget.selected_steps),
        max_tool_calls: i64::from(request.budget.max_tool_calls),
        repository_fingerprint: request.prepared.fingerprint.clone(),
        tool_events: events
            .into_iter()
            .map(|mut event| {
                event.payload = secrets.sanitize(&event.payload);
                event
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;

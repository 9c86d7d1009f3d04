//! `git-agent explore`: a synchronous, read-only exploration that answers
//! a question with grounded findings. The cleaned absolute working
//! directory is the exploration root, in a Git repository (even below
//! its top) or an ordinary folder; every path the model sees or returns
//! is relative to it. The agent loop gets the shared repository tools
//! rooted there and, in a repository, the history tools of
//! [`gitagent_agent::tools::history`]; its answer follows a strict schema, and
//! references are checked against the files (one repair pass) before it
//! is accepted. Stdout is exactly one newline-terminated JSON object
//! `{"id", "items"}`; progress (a slow model's wait included, see
//! [`waiting`]) and `llm.usage` go to stderr; a failure writes nothing to
//! stdout.

mod answer;
mod batch;
mod log;
mod phases;
mod retrieval;
mod session;
mod waiting;

use super::generation::{self, EnvironmentContext, Reporter, TraceSink};
use super::{CommandError, Invocation, Output};
use crate::commands::Services;
use answer::Finding;
use git_agent_shared::cli::{ExploreArgs, ExploreTarget};
use git_agent_shared::error_chain;
use git_agent_shared::task_record::TaskId;
use gitagent_agent::guidance::{self, Family, WorktreeReader};
use gitagent_agent::tools::{self, RepoFiles, ToolRegistry};
use gitagent_agent::{self as agent, AgentTask, Layers, Limits, OutputRules, RunContext};
use gitagent_git::{GitError, Repository};
use gitagent_provider::{self as provider, Item, ProviderFlags, RunOptions, TextFormat};
use gitagent_runtime::trace::Event;
use serde::Serialize;
use session::{Session, SessionStore};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const COMMAND: &str = "explore";

/// Explore has no deadline; this only bounds a request whose connection
/// went silent.
const REQUEST_LIMIT: Duration = Duration::from_secs(24 * 60 * 60);

/// The one object explore prints.
#[derive(Debug, Serialize)]
struct ExploreResult<'a> {
    id: &'a str,
    items: &'a [Finding],
}

/// One question of a batch, as the model sees it.
#[derive(Debug, Clone, Serialize)]
struct PromptItem {
    item_id: String,
    question: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    semantic_results: Option<serde_json::Value>,
}

/// The daemon's explore batches.
pub type ExploreBatcher = batch::Batcher<Question>;

pub async fn run(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: ExploreArgs,
) -> Result<(), CommandError> {
    let started = Instant::now();
    let question = args.question.join(" ");
    if question.trim().is_empty() {
        return Err(CommandError::Usage("the question is empty\nhint: git-agent explore <question...>".into()));
    }
    let root = clean_root(&invocation.cwd);
    let files = open_root(&root, cancel).await?;
    let project = Arc::new(project(services, invocation, &root, cancel).await?);
    // A follow-up's parent is checked before any semantic or provider work.
    let followed = match &args.follow_up {
        Some(id) => Some(read_parent(&project, id, &root, cancel).await?),
        None => None,
    };
    // Without --for a follow-up keeps its parent's active target; at the
    // depth limit it starts over as a fresh search under that target.
    let target = args.target.or_else(|| followed.as_ref().and_then(|session| session.active_target));
    let parent = followed.filter(Session::can_continue).map(Arc::new);
    let id = TaskId::generate().map_err(CommandError::failed)?.to_string();
    let reporter = Reporter::new(invocation, output, args.debug);
    let sink = TraceSink::new(invocation, output, &reporter, false);
    let phases = phases::Phases::new(started, sink.clone());
    sink.event(
        Event::new("session")
            .with("command", COMMAND)
            .with("root", git_agent_shared::quote::os_path_key(&root).into_owned())
            .with("git", files.repo().is_some())
            .with("target", target.map_or("universal", ExploreTarget::as_str))
            .with("parent", parent.as_ref().map_or("", |parent| parent.id.as_str())),
    );
    let setup_done = phases.done("setup", started);
    let key = batch::BatchKey {
        workspace: root.clone(),
        service_tier: args.fast.then(|| "priority".to_string()),
        target,
        parent: parent.as_ref().map(|parent| parent.id.clone()),
    };
    // The intent is reserved before retrieval, so an open batch of the
    // key waits for this question while it searches.
    let reservation = services.explore.reserve(key);
    let reserved = phases.done("reservation", setup_done);
    // Fresh searches (a depth reset too) look for warm semantic leads; a
    // context-preserving follow-up has its parent's context instead.
    let mut semantic_results = None;
    if parent.is_none() {
        output.progress("explore: searching");
        let probe = retrieval::probe(services, invocation, output, &phases, &root, &question, cancel).await?;
        phases.done("semantic_search", reserved);
        if let retrieval::Probe::Warm(leads) = probe {
            semantic_results = Some(leads);
        }
    }
    // The batch this question joins waits for compatible questions
    // launched a moment later (the join grace, see `batch`).
    let ready = Instant::now();
    let conversation = Conversation {
        services: Arc::clone(services),
        invocation: invocation.clone(),
        output: output.clone(),
        sink: sink.clone(),
        root,
        files,
        project,
        parent,
        target,
        fast: args.fast,
        debug: args.debug,
        phases: phases.clone(),
        joined: ready,
    };
    let runner: batch::Runner<Question> =
        Box::new(move |questions, collected, cancel| Box::pin(conversation.run(questions, collected, cancel)));
    // Membership ends with this call: when the caller goes away, or once
    // the result is in (which also ends the batch's watch over it).
    let membership = cancel.child_token();
    let _leave = membership.clone().drop_guard();
    let question = Question { text: question, semantic_results };
    let (role, result) = reservation.join(id.clone(), question, membership, runner);
    let reserved = phases.done("batch_join", ready);
    output.progress(match role {
        batch::Role::Leader => "explore: collecting the batch",
        batch::Role::Follower => "explore: waiting for the batch leader",
    });
    let findings = tokio::select! {
        () = cancel.cancelled() => return Err(CommandError::Message("the command was cancelled".into())),
        result = result => result
            .map_err(|_| CommandError::Message("the explore batch ended without a result".into()))?
            .map_err(CommandError::failed)?,
    };
    // The leader reported its own batch work; a follower only waited.
    let answered = match role {
        batch::Role::Follower => phases.done("result_wait", reserved),
        batch::Role::Leader => Instant::now(),
    };
    let mut line = serde_json::to_string(&ExploreResult { id: &id, items: &findings }).map_err(CommandError::failed)?;
    line.push('\n');
    output.stdout(line);
    phases.done("output", answered);
    Ok(())
}

/// One member's question, as the batch carries it.
#[derive(Debug, Clone)]
pub struct Question {
    pub text: String,
    /// Unverified leads of the warm semantic search; `None` when there
    /// were none (a follow-up, or a vector was missing).
    pub semantic_results: Option<serde_json::Value>,
}

/// The project an exploration belongs to: where its sessions live and
/// which `explore.log` records it.
struct Project {
    id: String,
    metadata_dir: PathBuf,
}

async fn project(
    services: &Arc<Services>,
    invocation: &Invocation,
    root: &Path,
    cancel: &CancellationToken,
) -> Result<Project, CommandError> {
    let metadata_root = git_agent_shared::paths::metadata_root(&invocation.env).map_err(CommandError::failed)?;
    let (root, services) = (root.to_path_buf(), Arc::clone(services));
    gitagent_runtime::blocking::run("the project identity", cancel, move |_| {
        let project = gitagent_git::identity::ProjectIdentity::resolve_cached(&root, &services.identities)
            .map_err(CommandError::failed)?;
        let id = project.id();
        Ok(Project { metadata_dir: metadata_root.join(&id), id })
    })
    .await?
}

/// The session a `--follow-up` names, checked against the workspace.
async fn read_parent(
    project: &Arc<Project>,
    id: &str,
    root: &Path,
    cancel: &CancellationToken,
) -> Result<Session, CommandError> {
    let store = SessionStore::new(&project.metadata_dir);
    let (id, root) = (id.to_string(), root.to_path_buf());
    gitagent_runtime::blocking::run("the explore session", cancel, move |_| {
        store.read_for_follow_up(&id, &root).map_err(CommandError::failed)
    })
    .await?
}

/// What the batch task needs to run the conversation of a sealed batch:
/// the leader's invocation (provider settings, stderr) and root, and the
/// parent every member of a follow-up batch shares.
struct Conversation {
    services: Arc<Services>,
    invocation: Invocation,
    output: Output,
    sink: TraceSink,
    root: PathBuf,
    files: Arc<RepoFiles>,
    project: Arc<Project>,
    /// The session a context-preserving follow-up continues.
    parent: Option<Arc<Session>>,
    target: Option<ExploreTarget>,
    fast: bool,
    debug: bool,
    phases: phases::Phases,
    /// When the leader joined: the batch collection starts there.
    joined: Instant,
}

impl Conversation {
    /// Answers the batch's questions in one agent run: findings by item
    /// ID, or one error for every member.
    async fn run(
        self,
        questions: Vec<(String, Question)>,
        collected: batch::Collected,
        cancel: CancellationToken,
    ) -> Result<HashMap<String, Vec<Finding>>, batch::BatchError> {
        // The leader reports the batch's wait for late compatible
        // questions, once nobody reserved was still getting ready.
        self.phases.done("join_grace", collected.grace_since);
        self.answer(questions, &cancel).await.map_err(|error| batch::BatchError::Failed(Arc::new(error)))
    }

    /// Whether the batch's warm leads need the deferred synchronization.
    async fn needs_sync(&self, items: &[PromptItem], cancel: &CancellationToken) -> bool {
        if items.iter().all(|item| item.semantic_results.is_none()) {
            return false;
        }
        let (invocation, root) = (self.invocation.clone(), self.root.clone());
        gitagent_runtime::blocking::run("the index remote setting", cancel, move |_| {
            retrieval::needs_sync(&invocation, &root)
        })
        .await
        .unwrap_or(false)
    }

    async fn answer(
        &self,
        questions: Vec<(String, Question)>,
        cancel: &CancellationToken,
    ) -> Result<HashMap<String, Vec<Finding>>, CommandError> {
        let mut items: Vec<PromptItem> = questions
            .into_iter()
            .map(|(item_id, question)| PromptItem {
                item_id,
                question: question.text,
                semantic_results: question.semantic_results,
            })
            .collect();
        items.sort_by(|a, b| a.item_id.cmp(&b.item_id));
        let collected = self.phases.done("batch_collection", self.joined);
        let parent = self.parent.as_deref();
        record_disposition(&self.project, &self.invocation, &self.output, &self.root, parent, &items, cancel).await;
        let settings = settings(self.fast, self.debug);
        // A follow-up keeps its lineage's key; an initial batch derives one
        // from its first sorted item ID, shared by every sibling.
        let prompt_cache_key = match parent {
            Some(parent) => parent.prompt_cache_key.clone(),
            None => gitagent_git::identity::sha256_hex(format!("explore:{}", items[0].item_id).as_bytes()),
        };
        let provider =
            generation::provider_with_key(&self.services, &self.invocation, &settings, prompt_cache_key.clone())
                .await?;
        // The system prompt stays target-neutral once a lineage has it.
        let instruction_target = parent.and_then(|parent| parent.instruction_target).or(self.target);
        let request = Request { instruction_target, target: self.target, parent, items: &items };
        let task = assemble(&self.root, &self.files, &request, cancel).await?;
        let rules = output_rules(&self.files, &items, &self.phases);
        let prepared = self.phases.done("prompt_setup", collected);
        // With no deadline, a stalled provider must not look like a hang.
        let waiting = waiting::ModelWait::new(self.output.clone(), self.invocation.stderr_is_terminal, self.debug);
        let trace = {
            let (waiting, forward) = (waiting.clone(), self.phases.loop_trace());
            move |event: Event| {
                waiting.observe(&event);
                forward(event);
            }
        };
        let context =
            RunContext { provider: &provider, cancel: cancel.clone(), deadline: None, trace: &trace, on_text: None };
        let agent_run = async {
            let outcome = waiting.around(agent::run(&context, &task, Some(&rules))).await;
            (outcome, self.phases.done("agent", prepared))
        };
        // Warm leads are confirmed by one index-only synchronization
        // beside the conversation; both end before anything persists.
        let (outcome, synced) = if self.needs_sync(&items, cancel).await {
            let sync = async {
                let since = Instant::now();
                let synced = retrieval::deferred_sync(
                    &self.services,
                    &self.invocation,
                    &self.output,
                    &self.phases,
                    &self.root,
                    cancel,
                )
                .await;
                self.phases.done("index_sync", since);
                synced
            };
            tokio::join!(agent_run, sync)
        } else {
            (agent_run.await, Ok(()))
        };
        let (outcome, finished) = outcome;
        let outcome = outcome.map_err(CommandError::failed)?;
        synced?;
        if let Some(line) = git_agent_shared::controls::removed_warning(outcome.controls_removed as u64) {
            self.output.stderr(line);
        }
        self.sink.event(
            Event::new("batch")
                .with("size", items.len())
                .with("steps", outcome.steps)
                .with("tool_calls", outcome.tool_calls)
                .with("repair_calls", outcome.repair_calls),
        );
        let mut answers = answer::parse(&outcome.text).map_err(CommandError::failed)?;
        let processed = self.phases.done("answer_processing", finished);
        let history = provider::items_to_json(&outcome.conversation);
        let mut sessions = Vec::with_capacity(items.len());
        for item in &items {
            let findings = answers.get(&item.item_id).cloned().ok_or_else(|| {
                CommandError::Message(format!("the batch answer has no findings for {}", item.item_id))
            })?;
            sessions.push(Session {
                id: item.item_id.clone(),
                parent_id: parent.map(|parent| parent.id.clone()).unwrap_or_default(),
                depth: parent.map_or(0, |parent| parent.depth + 1),
                workspace: git_agent_shared::quote::os_path_key(&self.root).into_owned(),
                prompt_cache_key: prompt_cache_key.clone(),
                instruction_target,
                active_target: self.target,
                items: findings,
                history: history.clone(),
            });
        }
        let store = SessionStore::new(&self.project.metadata_dir);
        let persisted =
            gitagent_runtime::blocking::run("the explore sessions", cancel, move |_| store.create(&sessions)).await?;
        match persisted {
            Ok(()) => {}
            // A read-only HOME costs the follow-ups, not the answer.
            Err(error) if error.is_unwritable() => self.output.stderr(format!(
                "warning: {}\nhint: the answer's ID cannot be followed up; make {} writable to keep sessions\n",
                error_chain::Chain(&error),
                self.project.metadata_dir.parent().unwrap_or(&self.project.metadata_dir).display()
            )),
            Err(error) => return Err(CommandError::failed(error)),
        }
        self.phases.done("persistence", processed);
        Ok(items.iter().filter_map(|item| answers.remove_entry(&item.item_id)).collect())
    }
}

/// The working directory as the exploration root: absolute, with `.`
/// and `..` parts resolved lexically.
fn clean_root(cwd: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for part in cwd.components() {
        match part {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}

/// The tools' view of `root`: inside its repository when there is one,
/// else an ordinary folder.
async fn open_root(root: &Path, cancel: &CancellationToken) -> Result<Arc<RepoFiles>, CommandError> {
    let root = root.to_path_buf();
    gitagent_runtime::blocking::run("the exploration root", cancel, move |_| {
        if !root.is_dir() {
            return Err(CommandError::Message(format!("{}: not a folder", root.display())));
        }
        let repo = match Repository::discover(&root) {
            Ok(repo) => Some(repo),
            Err(GitError::NotARepository { .. } | GitError::Bare { .. }) => None,
            Err(error) => return Err(CommandError::failed(error)),
        };
        Ok(Arc::new(RepoFiles::rooted(&root, repo)))
    })
    .await?
}

/// Appends the sealed batch to `explore.log`, best effort: a failure is
/// reported on stderr and never changes the result.
async fn record_disposition(
    project: &Arc<Project>,
    invocation: &Invocation,
    output: &Output,
    root: &Path,
    parent: Option<&Session>,
    items: &[PromptItem],
    cancel: &CancellationToken,
) {
    let Ok(state_dir) = git_agent_shared::paths::state_dir(&invocation.env) else { return };
    let ids: Vec<String> = items.iter().map(|item| item.item_id.clone()).collect();
    let (root, project) = (root.to_path_buf(), Arc::clone(project));
    let (parent_id, depth) = parent.map_or((None, 0), |parent| (Some(parent.id.clone()), parent.depth + 1));
    let recorded = gitagent_runtime::blocking::run("the explore log", cancel, move |_| {
        let disposition = log::Disposition {
            project_id: &project.id,
            workspace: &root,
            batch: &ids[0],
            items: &ids,
            parent: parent_id.as_deref(),
            depth,
        };
        log::append(&log::path(&state_dir, &project.id), &disposition)
    })
    .await;
    if let Ok(Err(error)) = recorded {
        output.stderr(format!("warning: {}\n", error_chain::Chain(&error)));
    }
}

/// The provider settings: no deadline, `--fast` as `service_tier` only.
fn settings(fast: bool, debug: bool) -> generation::Generation {
    generation::Generation {
        limits: Limits::default(),
        family: Family::Auto,
        provider_flags: ProviderFlags { model: None, base_url: None, timeout: Some(REQUEST_LIMIT) },
        run_options: RunOptions {
            reasoning_effort: None,
            reasoning_summary: None,
            service_tier: fast.then(|| "priority".to_string()),
            prompt_cache_key: None,
            turn_state: None,
        },
        timeout: REQUEST_LIMIT,
        append_prompt: None,
        debug,
        pprof: None,
    }
}

/// The system prompt: the universal one without `--for`, else the
/// target-neutral one.
fn system_prompt(target: Option<ExploreTarget>) -> &'static str {
    match target {
        None => include_str!("prompts/system.md"),
        Some(_) => include_str!("prompts/system-target.md"),
    }
}

/// The developer instruction of a query target.
fn target_instruction(target: ExploreTarget) -> &'static str {
    match target {
        ExploreTarget::Diagnose => include_str!("prompts/target-diagnose.md"),
        ExploreTarget::Change => include_str!("prompts/target-change.md"),
        ExploreTarget::Behavior => include_str!("prompts/target-behavior.md"),
        ExploreTarget::Owner => include_str!("prompts/target-owner.md"),
    }
}

/// What one exploration asks.
struct Request<'a> {
    /// The target whose system prompt the conversation carries.
    instruction_target: Option<ExploreTarget>,
    /// The target these questions are asked under.
    target: Option<ExploreTarget>,
    /// The session a context-preserving follow-up continues.
    parent: Option<&'a Session>,
    items: &'a [PromptItem],
}

/// The request of one exploration: the prompts, guidance resolved at the
/// root, the rooted tools and the answer schema. A follow-up replays its
/// parent's conversation, adds the one target-change message when the
/// target differs from the parent's active one, then the new questions.
async fn assemble(
    root: &Path,
    files: &Arc<RepoFiles>,
    request: &Request<'_>,
    cancel: &CancellationToken,
) -> Result<AgentTask, CommandError> {
    let mut registry = ToolRegistry::new();
    registry.extend(tools::repository::tools(files));
    registry.extend(tools::history::tools(files));
    let limits = Limits::default();
    let text_format = Some(TextFormat {
        name: "explore_answers".into(),
        description: Some("Grounded findings for every question of an explore batch.".into()),
        schema: answer::schema(),
    });
    let system = system_prompt(request.instruction_target).trim().to_string();
    if let Some(parent) = request.parent {
        let mut history = provider::items_from_json(&parent.history).ok_or_else(|| {
            CommandError::Message(format!("explore search ID {} has no replayable conversation", parent.id))
        })?;
        if let Some(target) = request.target.filter(|target| Some(*target) != parent.active_target) {
            history.push(Item::developer(target_changed(target)));
        }
        let input = serde_json::to_string_pretty(&serde_json::json!({
            "parent": {"search_id": parent.id, "selected_items": parent.items},
            "items": request.items,
        }))
        .map_err(CommandError::failed)?;
        let user = generation::data_frame_prompt(
            "explore-follow-up",
            include_str!("prompts/follow-up.md.j2"),
            "exploration_input",
            &input,
            None,
        )?;
        history.push(Item::user(user));
        return Ok(AgentTask {
            layers: Layers { system, ..Layers::default() },
            tools: registry,
            text_format,
            parallel_tool_calls: true,
            limits,
            web_search: None,
            history,
        });
    }
    let guidance = {
        let root = files.root().to_path_buf();
        gitagent_runtime::blocking::run("the guidance reader", cancel, move |_| {
            guidance::resolve(&root, &[], Family::Auto, &WorktreeReader::new(&root))
        })
        .await?
    };
    let family = if guidance.sources.is_empty() { Family::Auto } else { guidance.family };
    let environment = generation::environment(&EnvironmentContext {
        cwd: root,
        repo_root: root,
        command: COMMAND,
        mode: if files.repo().is_some() { "git" } else { "directory" },
        family,
        limits,
        stdout_contract: "one JSON object built by git-agent from your answers; reply with the schema's JSON only",
    })?;
    let input =
        serde_json::to_string_pretty(&serde_json::json!({ "items": request.items })).map_err(CommandError::failed)?;
    let user = generation::data_frame_prompt(
        "explore-user",
        include_str!("prompts/user.md.j2"),
        "exploration_input",
        &input,
        None,
    )?;
    Ok(AgentTask {
        layers: Layers {
            system,
            tool_policy: generation::tool_policy(),
            environment,
            skills: String::new(),
            guidance: guidance.render(),
            task_instructions: request
                .target
                .map(|target| target_instruction(target).trim().to_string())
                .into_iter()
                .collect(),
            user,
        },
        tools: registry,
        text_format,
        parallel_tool_calls: true,
        limits,
        web_search: None,
        history: Vec::new(),
    })
}

/// The developer message of a follow-up that changes the target: the
/// target's instruction, announced as a change.
fn target_changed(target: ExploreTarget) -> String {
    let instruction = target_instruction(target).trim();
    let guidance = instruction.strip_prefix("Query target: ").unwrap_or(instruction);
    format!("Query target changed: {guidance}")
}

/// The answer must parse, answer exactly the batch's items, and name
/// references that exist beneath the root.
fn output_rules(files: &Arc<RepoFiles>, items: &[PromptItem], phases: &phases::Phases) -> OutputRules {
    let ids: Vec<String> = items.iter().map(|item| item.item_id.clone()).collect();
    let files = Arc::clone(files);
    let phases = phases.clone();
    let validate = move |text: &str| {
        let since = Instant::now();
        // Checking references reads files; the loop calls validators on a
        // runtime worker, so tell the runtime this one is blocking.
        let check = || answer::validate(text, &ids, &files);
        let errors = match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(check),
            _ => check(),
        };
        phases.done("validation", since);
        errors
    };
    OutputRules { shape: Box::new(|text: &str| text.trim().to_string()), validate: Box::new(validate) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_cleaned_lexically() {
        assert_eq!(clean_root(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(clean_root(Path::new("/a/b/")), PathBuf::from("/a/b"));
    }

    #[test]
    fn targets_share_one_system_prompt_and_bring_their_own_instruction() {
        let targets = [ExploreTarget::Diagnose, ExploreTarget::Change, ExploreTarget::Behavior, ExploreTarget::Owner];
        for target in targets {
            assert_eq!(system_prompt(Some(target)), system_prompt(Some(ExploreTarget::Owner)));
            assert!(target_instruction(target).starts_with(&format!("Query target: {}.", target.as_str())));
        }
        assert_ne!(system_prompt(None), system_prompt(Some(ExploreTarget::Owner)));
    }

    #[test]
    fn a_target_change_announces_the_new_target_with_its_guidance() {
        let text = target_changed(ExploreTarget::Diagnose);
        let guidance =
            target_instruction(ExploreTarget::Diagnose).trim().trim_start_matches("Query target: diagnose. ");
        assert!(text.starts_with("Query target changed: diagnose. ") && text.ends_with(guidance), "{text}");
    }
}

//! `git-agent explore`: a synchronous, read-only exploration that answers
//! a question with grounded findings. The cleaned absolute working
//! directory is the exploration root, in a Git repository (even below
//! its top) or an ordinary folder; every path the model sees or returns
//! is relative to it. The agent loop gets the shared repository tools
//! rooted there and, in a repository, the history tools of
//! [`crate::tools::history`]; its answer follows a strict schema, and
//! references are checked against the files (one repair pass) before it
//! is accepted. Stdout is exactly one newline-terminated JSON object
//! `{"id", "items"}`; progress and `llm.usage` go to stderr; a failure
//! writes nothing to stdout.

mod answer;
mod batch;
mod log;
mod phases;

use super::generation::{self, EnvironmentContext, Reporter, TraceSink};
use super::{CommandError, Invocation, Output};
use crate::agent::{self, AgentTask, Layers, Limits, OutputRules, RunContext};
use crate::git::{GitError, Repository};
use crate::guidance::{self, Family, WorktreeReader};
use crate::provider::{ProviderFlags, RunOptions, TextFormat};
use crate::services::Services;
use crate::tools::{self, RepoFiles, ToolRegistry};
use crate::trace::Event;
use answer::Finding;
use git_agent_shared::cli::{ExploreArgs, ExploreTarget};
use git_agent_shared::task_record::TaskId;
use serde::Serialize;
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
    #[serde(skip_serializing_if = "String::is_empty")]
    semantic_results: String,
}

/// The daemon's explore batches; every question is its prompt text.
pub type ExploreBatcher = batch::Batcher<String>;

/// How long a new batch waits for compatible questions before it seals
/// with fewer than three.
const JOIN_GRACE: Duration = Duration::from_millis(100);

/// The join grace. Test builds may stretch it with
/// `GITAGENTD_TEST_EXPLORE_JOIN_GRACE_MS` in the daemon's environment, so
/// concurrent test processes meet deterministically.
fn join_grace() -> Duration {
    #[cfg(feature = "test-hooks")]
    if let Some(millis) = std::env::var("GITAGENTD_TEST_EXPLORE_JOIN_GRACE_MS").ok().and_then(|v| v.parse().ok()) {
        return Duration::from_millis(millis);
    }
    JOIN_GRACE
}

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
    if let Some(id) = &args.follow_up {
        return Err(unknown_session(id));
    }
    let root = clean_root(&invocation.cwd);
    let files = open_root(&root, cancel).await?;
    let id = TaskId::generate().map_err(CommandError::failed)?.to_string();
    let reporter = Reporter::new(invocation, output, args.debug);
    let sink = TraceSink::new(invocation, output, &reporter, false);
    let phases = phases::Phases::new(started, sink.clone());
    sink.event(
        Event::new("session")
            .with("command", COMMAND)
            .with("root", root.display().to_string())
            .with("git", files.repo().is_some())
            .with("target", args.target.map_or("universal", ExploreTarget::as_str)),
    );
    let setup_done = phases.done("setup", started);
    let key = batch::BatchKey {
        workspace: root.clone(),
        service_tier: args.fast.then(|| "priority".to_string()),
        target: args.target,
        parent: None,
    };
    let conversation = Conversation {
        services: Arc::clone(services),
        invocation: invocation.clone(),
        output: output.clone(),
        sink: sink.clone(),
        root,
        files,
        target: args.target,
        fast: args.fast,
        debug: args.debug,
        phases: phases.clone(),
        joined: Instant::now(),
    };
    let runner: batch::Runner<String> =
        Box::new(move |questions, cancel| Box::pin(conversation.run(questions, cancel)));
    // Membership ends with this call: when the caller goes away, or once
    // the result is in (which also ends the batch's watch over it).
    let membership = cancel.child_token();
    let _leave = membership.clone().drop_guard();
    let (role, result) = services.explore.join(key, id.clone(), question, membership, join_grace(), runner);
    let reserved = phases.done("reservation", setup_done);
    output.progress(match role {
        batch::Role::Leader => "explore: collecting the batch",
        batch::Role::Follower => "explore: waiting for the batch leader",
    });
    let findings = tokio::select! {
        () = cancel.cancelled() => return Err(CommandError::Failed("the command was cancelled".into())),
        result = result => result
            .map_err(|_| CommandError::Failed("the explore batch ended without a result".into()))?
            .map_err(CommandError::Failed)?,
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

/// What the batch task needs to run the conversation of a sealed batch:
/// the leader's invocation (provider settings, stderr) and root.
struct Conversation {
    services: Arc<Services>,
    invocation: Invocation,
    output: Output,
    sink: TraceSink,
    root: PathBuf,
    files: Arc<RepoFiles>,
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
        questions: Vec<(String, String)>,
        cancel: CancellationToken,
    ) -> Result<HashMap<String, Vec<Finding>>, String> {
        self.answer(questions, &cancel).await.map_err(|error| error.to_string())
    }

    async fn answer(
        &self,
        questions: Vec<(String, String)>,
        cancel: &CancellationToken,
    ) -> Result<HashMap<String, Vec<Finding>>, CommandError> {
        let mut items: Vec<PromptItem> = questions
            .into_iter()
            .map(|(item_id, question)| PromptItem { item_id, question, semantic_results: String::new() })
            .collect();
        items.sort_by(|a, b| a.item_id.cmp(&b.item_id));
        let collected = self.phases.done("batch_collection", self.joined);
        record_disposition(&self.services, &self.invocation, &self.output, &self.root, &items, cancel).await;
        let settings = settings(self.fast, self.debug);
        // One prompt-cache key per batch, from its first sorted item ID.
        let provider = generation::provider(&self.services, &self.invocation, &settings, &items[0].item_id).await?;
        let task = assemble(&self.root, &self.files, self.target, &items, cancel).await?;
        let rules = output_rules(&self.files, &items);
        let prepared = self.phases.done("prompt_setup", collected);
        let trace = self.phases.loop_trace();
        let context = RunContext { provider: &provider, cancel: cancel.clone(), deadline: None, trace: &trace };
        let outcome = agent::run(&context, &task, Some(&rules)).await.map_err(CommandError::failed)?;
        let finished = self.phases.done("agent", prepared);
        self.sink.event(
            Event::new("batch")
                .with("size", items.len())
                .with("steps", outcome.steps)
                .with("tool_calls", outcome.tool_calls)
                .with("repair_calls", outcome.repair_calls),
        );
        let answers = answer::parse(&outcome.text).map_err(CommandError::Failed)?.into_iter().collect();
        self.phases.done("answer_processing", finished);
        Ok(answers)
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
    crate::blocking::run("the exploration root", cancel, move |_| {
        if !root.is_dir() {
            return Err(CommandError::Failed(format!("{}: not a folder", root.display())));
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
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    root: &Path,
    items: &[PromptItem],
    cancel: &CancellationToken,
) {
    let Ok(state_dir) = git_agent_shared::paths::state_dir(&invocation.env) else { return };
    let ids: Vec<String> = items.iter().map(|item| item.item_id.clone()).collect();
    let (root, services) = (root.to_path_buf(), Arc::clone(services));
    let recorded = crate::blocking::run("the explore log", cancel, move |_| {
        let project = git_agent_shared::identity::ProjectIdentity::resolve_cached(&root, &services.identities)
            .map_err(|error| error.to_string())?;
        let project_id = project.id();
        let disposition = log::Disposition {
            project_id: &project_id,
            workspace: &root,
            batch: &ids[0],
            items: &ids,
            parent: None,
            depth: 0,
        };
        log::append(&log::path(&state_dir, &project_id), &disposition).map_err(|error| error.to_string())
    })
    .await;
    if let Ok(Err(error)) = recorded {
        output.stderr(format!("warning: {error}\n"));
    }
}

/// Why a `--follow-up` ID cannot be used.
fn unknown_session(id: &str) -> CommandError {
    if TaskId::parse(id).is_err() {
        return CommandError::Failed(format!(
            "invalid explore search ID {id:?}\nhint: pass the \"id\" of an earlier git-agent explore result"
        ));
    }
    CommandError::Failed(format!(
        "unknown explore search ID {id}: no session of that ID in this project\nhint: run git-agent explore without --follow-up"
    ))
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

/// The request of one exploration: the prompts, guidance resolved at the
/// root, the rooted tools and the answer schema.
async fn assemble(
    root: &Path,
    files: &Arc<RepoFiles>,
    target: Option<ExploreTarget>,
    items: &[PromptItem],
    cancel: &CancellationToken,
) -> Result<AgentTask, CommandError> {
    let guidance = {
        let root = files.root().to_path_buf();
        crate::blocking::run("the guidance reader", cancel, move |_| {
            guidance::resolve(&root, &[], Family::Auto, &WorktreeReader::new(&root))
        })
        .await?
    };
    let mut registry = ToolRegistry::new();
    registry.extend(tools::repository::tools(files));
    registry.extend(tools::history::tools(files));
    let limits = Limits::default();
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
    let input = serde_json::to_string_pretty(&serde_json::json!({ "items": items })).map_err(CommandError::failed)?;
    let user = generation::data_frame_prompt(
        "explore-user",
        include_str!("prompts/user.md.j2"),
        "exploration_input",
        &input,
        None,
    )?;
    Ok(AgentTask {
        layers: Layers {
            system: system_prompt(target).trim().to_string(),
            tool_policy: generation::tool_policy(),
            environment,
            skills: String::new(),
            guidance: guidance.render(),
            task_instructions: target.map(|target| target_instruction(target).trim().to_string()).into_iter().collect(),
            user,
        },
        tools: registry,
        text_format: Some(TextFormat {
            name: "explore_answers".into(),
            description: Some("Grounded findings for every question of an explore batch.".into()),
            schema: answer::schema(),
        }),
        parallel_tool_calls: true,
        limits,
        web_search: None,
        history: Vec::new(),
    })
}

/// The answer must parse, answer exactly the batch's items, and name
/// references that exist beneath the root.
fn output_rules(files: &Arc<RepoFiles>, items: &[PromptItem]) -> OutputRules {
    let ids: Vec<String> = items.iter().map(|item| item.item_id.clone()).collect();
    let files = Arc::clone(files);
    let validate = move |text: &str| {
        // Checking references reads files; the loop calls validators on a
        // runtime worker, so tell the runtime this one is blocking.
        let check = || answer::validate(text, &ids, &files);
        match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(check),
            _ => check(),
        }
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
    fn follow_up_ids_are_checked_before_any_work() {
        assert!(unknown_session("nope").to_string().contains("invalid explore search ID"));
        let valid = TaskId::generate().unwrap().to_string();
        assert!(unknown_session(&valid).to_string().contains("unknown explore search ID"));
    }
}

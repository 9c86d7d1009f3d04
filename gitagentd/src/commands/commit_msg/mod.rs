//! `git-agent commit-msg` in normal mode: prepares the staged context,
//! resolves guidance for the staged paths, assembles the seven request
//! layers, runs the agent loop with the read-only repository and staged
//! tools, and writes the shaped message, and nothing else, to stdout.
//! An empty staged scope fails before any provider request.

use super::generation::{self, EnvironmentContext, Generation, Reporter};
use super::{CommandError, Invocation, Output};
use crate::agent::{self, AgentError, AgentTask, Layers, OutputRules, RunContext};
use crate::git::{FileSource, Repository, StagedContext, StagedLimits};
use crate::guidance::{self, WorktreeReader};
use crate::message::{self, MessageMode, ValidationContext};
use crate::provider::{self, Provider};
use crate::skills::SkillsManager;
use crate::tools::{self, RepoFiles, ToolRegistry};
use crate::trace::Event;
use git_agent_shared::cli::CommitMsgArgs;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

pub async fn run(
    services: &crate::services::Services,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: CommitMsgArgs,
) -> Result<(), CommandError> {
    let started = Instant::now();
    let settings = Generation::from_args(&args.generation)?;
    let _diagnostics = match &settings.pprof {
        Some(address) => Some(generation::DiagnosticsServer::start(address).await?),
        None => None,
    };
    let reporter = Reporter::new(invocation, output, settings.debug);

    let cwd = invocation.cwd.clone();
    let (repo, staged) = blocking(move || {
        let repo = Repository::discover(&cwd).map_err(CommandError::failed)?;
        let staged = StagedContext::prepare(&repo, StagedLimits::default()).map_err(CommandError::failed)?;
        Ok((repo, staged))
    })
    .await?;
    if staged.is_empty() {
        return Err(CommandError::Failed(
            "nothing is staged: commit-msg describes the staged changes\nhint: stage changes with git add, then run git-agent commit-msg again".into(),
        ));
    }
    let context_done = Instant::now();

    let config = provider::config::resolve(&invocation.env, &settings.provider_flags).map_err(CommandError::failed)?;
    let task = assemble(invocation, &settings, &repo, &staged, cancel).await?;
    let mut run_options = settings.run_options.clone();
    run_options.prompt_cache_key = Some(git_agent_shared::identity::sha256_hex(
        format!("git-agent commit-msg {}", repo.root().display()).as_bytes(),
    ));
    let http = services.http_clients.get(config.http2_prior_knowledge).map_err(CommandError::failed)?;
    let provider = Provider::with_client(http, config, run_options);
    let assembled = Instant::now();

    let (token, deadline) = generation::with_deadline(cancel, settings.timeout);
    let trace_reporter = reporter.clone();
    let trace = move |event: Event| trace_reporter.event(event);
    let context = RunContext { provider: &provider, cancel: token.clone(), deadline: Some(deadline), trace: &trace };
    let rules = OutputRules { shape: Box::new(message::shape), validate: Box::new(validate_normal) };
    let result = agent::run(&context, &task, Some(&rules)).await;
    token.cancel();
    let outcome = result.map_err(|error| match error {
        AgentError::DeadlineExceeded => CommandError::Failed(format!(
            "commit-msg ran out of time after {}\nhint: pass a longer --timeout, such as --timeout 5m",
            humantime(settings.timeout)
        )),
        other => CommandError::failed(other),
    })?;
    let recent: Vec<String> = staged.recent_commits.iter().map(|commit| commit.summary.clone()).collect();
    let text = message::preserve_task_id_suffix(&outcome.text, &recent);
    let errors = validate_normal(&text);
    if !errors.is_empty() {
        return Err(CommandError::Failed(format!("the generated message is invalid: {}", errors.join("; "))));
    }
    let finished = Instant::now();
    output.stdout(format!("{}\n", text.trim()));

    let loop_time = finished - assembled;
    let own_loop = loop_time.saturating_sub(outcome.provider_time).saturating_sub(outcome.tool_time);
    reporter.event(
        Event::new("commit_msg.timing")
            .with("context_ms", generation::millis(context_done - started))
            .with("assembly_ms", generation::millis(assembled - context_done))
            .with("loop_ms", generation::millis(loop_time))
            .with("provider_ms", generation::millis(outcome.provider_time))
            .with("tools_ms", generation::millis(outcome.tool_time))
            .with("bookkeeping_ms", generation::millis(own_loop))
            .with("own_ms", generation::millis((finished - started).saturating_sub(outcome.provider_time)))
            .with("total_ms", generation::millis(finished - started)),
    );
    reporter.event(
        Event::new("final")
            .with("text", text.as_str())
            .with("steps", outcome.steps)
            .with("tool_calls", outcome.tool_calls)
            .with("repair_calls", outcome.repair_calls),
    );
    Ok(())
}

/// The request layers and tools for the prepared staged context.
async fn assemble(
    invocation: &Invocation,
    settings: &Generation,
    repo: &Repository,
    staged: &StagedContext,
    cancel: &CancellationToken,
) -> Result<AgentTask, CommandError> {
    let root = repo.root().to_path_buf();
    let guidance = {
        let root = root.clone();
        let paths = staged.staged_paths.clone();
        let family = settings.family;
        blocking(move || Ok(guidance::resolve(&root, &paths, family, &WorktreeReader::new(&root)))).await?
    };
    let skills = SkillsManager::discover(&invocation.env, &invocation.cwd);
    let skills_layer = match &skills {
        Some(manager) => manager.list(cancel).await.map_err(CommandError::failed)?.stdout,
        None => String::new(),
    };
    let mut tools = ToolRegistry::new();
    let files = Arc::new(RepoFiles::new(repo.clone(), FileSource::Worktree));
    tools.extend(tools::repository::tools(&files));
    tools.extend(tools::commit::tools(repo));
    tools.extend(tools::skills::tools(skills.as_ref()));

    let environment = generation::environment(&EnvironmentContext {
        cwd: &invocation.cwd,
        repo_root: &root,
        command: "commit-msg",
        mode: "normal",
        family: if guidance.sources.is_empty() { settings.family } else { guidance.family },
        limits: settings.limits,
        stdout_contract: "the final commit message only",
    })?;
    Ok(AgentTask {
        layers: Layers {
            system: include_str!("prompts/system.md").trim().to_string(),
            tool_policy: generation::tool_policy(),
            environment,
            skills: skills_layer,
            guidance: guidance.render(),
            user: user_prompt(staged, settings.append_prompt.as_deref())?,
        },
        tools,
        text_format: None,
        parallel_tool_calls: true,
        limits: settings.limits,
    })
}

/// Layer 6: the task prompt with the prepared context framed as data.
/// The commit-message rules of normal mode, as the agent loop's validator.
fn validate_normal(text: &str) -> Vec<String> {
    message::validate(MessageMode::Normal, text, &ValidationContext::default())
        .into_iter()
        .map(|violation| violation.to_string())
        .collect()
}

pub fn user_prompt(staged: &StagedContext, hint: Option<&str>) -> Result<String, CommandError> {
    let json = serde_json::to_string_pretty(staged).map_err(CommandError::failed)?;
    // A closing tag inside repository text must not end the data frame.
    let json = json.replace("</prepared_commit_context", "<\\/prepared_commit_context");
    let prompt = crate::prompt::render(
        "commit-msg-user",
        include_str!("prompts/user.md.j2"),
        serde_json::json!({ "prepared_context": json }),
    )
    .map_err(CommandError::failed)?;
    generation::with_operator_hint(prompt, hint)
}

fn humantime(duration: std::time::Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 && seconds.is_multiple_of(60) {
        format!("{}m", seconds / 60)
    } else {
        format!("{}s", duration.as_secs_f64())
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CommandError> + Send + 'static,
) -> Result<T, CommandError> {
    tokio::task::spawn_blocking(work).await.map_err(CommandError::failed)?
}

//! The commit-message family: `git-agent commit-msg [--amend]` writes the
//! shaped message, and nothing else, to stdout; `git-agent commit
//! [--amend]` streams a human console trace to stdout while it generates,
//! then hands the message to the client, which runs `git commit [--amend]
//! --file -` in the caller's own context. `commit --interactive` also
//! streams the answer's text as the model writes it; the client asks the
//! user before it commits.
//!
//! Normal mode prepares the staged context, amend mode the amend context
//! (both before any provider request); guidance resolves against the
//! staged paths or the final amended paths; the agent loop runs with the
//! read-only repository and commit-message tools; the answer is shaped
//! and validated (one repair pass). A normal submodule-only change is
//! formatted locally without provider, credentials or trace. An empty
//! staged scope fails before any provider request in normal mode.

mod view;

use super::generation::{self, EnvironmentContext, Generation, ProjectContext, Reporter, TraceSink};
use super::{CommandError, Invocation, Output};
use crate::message::{self, MessageMode, ValidationContext};
use git_agent_shared::cli::MessageArgs;
use gitagent_agent::tools::commit::CommitTools;
use gitagent_agent::tools::{self, RepoFiles, ToolRegistry};
use gitagent_agent::{AgentTask, OutputRules};
use gitagent_git::{AmendContext, AmendLimits, FileSource, Repository, StagedContext, StagedLimits, SubmoduleChange};
use gitagent_runtime::trace::Event;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// One run of the family.
#[derive(Debug, Clone)]
pub struct Request {
    pub generation: MessageArgs,
    /// Describe the final amended HEAD commit.
    pub amend: bool,
    /// Create (or amend) the commit instead of printing the message.
    pub commit: bool,
    /// Send the answer's text to the caller as it streams (`commit
    /// --interactive`, which shows it while the model writes).
    pub stream_text: bool,
}

impl Request {
    fn command(&self) -> &'static str {
        if self.commit { "commit" } else { "commit-msg" }
    }

    fn mode(&self) -> &'static str {
        if self.amend { "amend" } else { "normal" }
    }
}

/// The evidence prepared before the first provider request.
enum Prepared {
    Normal(StagedContext),
    Amend(AmendContext),
}

impl Prepared {
    /// The subjects of the recent commits, newest first.
    fn recent_subjects(&self) -> Vec<String> {
        let recent = match self {
            Self::Normal(staged) => &staged.recent_commits,
            Self::Amend(amend) => &amend.recent_commits,
        };
        recent.iter().map(|commit| commit.summary.clone()).collect()
    }

    /// The paths guidance resolves against.
    fn guidance_paths(&self) -> Vec<String> {
        match self {
            Self::Normal(staged) => staged.staged_paths.clone(),
            Self::Amend(amend) => amend.final_paths.clone(),
        }
    }

    /// The staged submodule movements a normal message must carry.
    fn required_submodules(&self) -> Vec<SubmoduleChange> {
        match self {
            Self::Normal(staged) => staged.staged_submodules.clone(),
            Self::Amend(_) => Vec::new(),
        }
    }
}

pub async fn run(
    services: &crate::commands::Services,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    request: Request,
) -> Result<(), CommandError> {
    let started = Instant::now();
    let command = request.command();
    let settings = Generation::from_args(&request.generation)?;
    let _diagnostics = settings.diagnostics().await?;
    let reporter = Reporter::new(invocation, output, settings.debug);

    let cwd = invocation.cwd.clone();
    let amend = request.amend;
    // Under `git commit -a` or `git commit <paths>`, git names the index
    // it is about to commit to its hooks (the prepare-commit-msg hook runs
    // commit-msg); relative to the caller's directory, as git reads it.
    let index_file = invocation.env.get(git_agent_shared::environment::vars::GIT_INDEX_FILE).map(|path| cwd.join(path));
    let (repo, prepared) = blocking(move || {
        let mut repo = Repository::discover(&cwd).map_err(CommandError::failed)?;
        if let Some(path) = index_file {
            repo = repo.with_index_file(path);
        }
        let prepared = if amend {
            Prepared::Amend(AmendContext::prepare(&repo, AmendLimits::default()).map_err(CommandError::failed)?)
        } else {
            Prepared::Normal(StagedContext::prepare(&repo, StagedLimits::default()).map_err(CommandError::failed)?)
        };
        Ok((repo, prepared))
    })
    .await?;
    if let Prepared::Normal(staged) = &prepared {
        if staged.is_empty() {
            return Err(CommandError::Message(format!(
                "nothing is staged: {command} describes the staged changes\nhint: stage changes with git add, then run git-agent {command} again"
            )));
        }
        if staged.is_submodule_only() {
            // Deterministic and local: no provider, no credentials, no trace.
            let text = message::submodule_only_message(&staged.staged_submodules, &prepared.recent_subjects());
            reporter.event(Event::new("final").with("text", text.as_str()).with("local", true));
            deliver(output, &repo, &request, &text);
            return Ok(());
        }
    }
    let context_done = Instant::now();

    let scope = generation::cache_scope(&format!("{command} {}", request.mode()), repo.root());
    let provider = generation::provider(services, invocation, &settings, &scope).await?;
    let sink = TraceSink::new(invocation, output, &reporter, request.commit).streaming_text(request.stream_text);
    sink.event(session_event(&request, &repo, &prepared));
    let task = assemble(invocation, &settings, &request, &repo, &prepared, cancel).await?;
    let assembled = Instant::now();

    let rules = output_rules(&prepared);
    let outcome = generation::run_loop(&provider, &settings, command, &sink, cancel, &task, &rules).await?;
    let text = message::preserve_task_id_suffix(&outcome.text, &prepared.recent_subjects());
    let errors = (rules.validate)(&text);
    if !errors.is_empty() {
        return Err(CommandError::Message(format!("the generated message is invalid: {}", errors.join("; "))));
    }
    let finished = Instant::now();

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
    sink.event(generation::final_event(text.as_str(), &outcome));
    deliver(output, &repo, &request, &text);
    Ok(())
}

/// Prints the message (`commit-msg`) or hands it to the client's `git
/// commit` (`commit`).
fn deliver(output: &Output, repo: &Repository, request: &Request, text: &str) {
    let text = text.trim();
    if request.commit {
        output.git_commit(repo.root().to_path_buf(), format!("{text}\n"), request.amend);
    } else {
        output.stdout(format!("{text}\n"));
    }
}

/// The first trace event: what is being generated, for which scope.
fn session_event(request: &Request, repo: &Repository, prepared: &Prepared) -> Event {
    let event = Event::new("session")
        .with("command", request.command())
        .with("mode", request.mode())
        .with("repo", git_agent_shared::quote::os_path_key(repo.root()).into_owned());
    match prepared {
        Prepared::Normal(staged) => event
            .with("staged_paths", staged.staged_paths.len())
            .with("diff_truncated", staged.diff_truncated)
            .with("submodules", staged.staged_submodules.len()),
        Prepared::Amend(amend) => event
            .with("head", amend.head.sha.as_str())
            .with("original_subject", amend.original_subject())
            .with("final_paths", amend.final_paths.len())
            .with("staged_paths", amend.staged_paths.len()),
    }
}

/// Shaping and validation of the task. A normal message gets the staged
/// submodule section appended when it left summaries out; an amended one
/// must keep the original subject and tell one story.
fn output_rules(prepared: &Prepared) -> OutputRules {
    let submodules = prepared.required_submodules();
    let summaries: Vec<String> = submodules.iter().flat_map(SubmoduleChange::summaries).map(str::to_string).collect();
    let (mode, original) = match prepared {
        Prepared::Normal(_) => (MessageMode::Normal, None),
        Prepared::Amend(amend) => (MessageMode::Amend, Some(amend.original_subject().to_string())),
    };
    let shape = move |raw: &str| {
        let shaped = message::shape(raw);
        if submodules.is_empty() || shaped.is_empty() {
            shaped
        } else {
            message::with_submodule_section(&shaped, &submodules)
        }
    };
    let validate = move |text: &str| {
        let context = ValidationContext { original_subject: original.as_deref(), submodule_summaries: &summaries };
        message::validate(mode, text, &context).into_iter().map(|violation| violation.to_string()).collect()
    };
    OutputRules { shape: Box::new(shape), validate: Box::new(validate) }
}

/// The request layers and tools for the prepared context.
async fn assemble(
    invocation: &Invocation,
    settings: &Generation,
    request: &Request,
    repo: &Repository,
    prepared: &Prepared,
    cancel: &CancellationToken,
) -> Result<AgentTask, CommandError> {
    let root = repo.root().to_path_buf();
    let project =
        ProjectContext::resolve(invocation, &root, prepared.guidance_paths(), settings.family, cancel).await?;
    let choice = match prepared {
        Prepared::Normal(staged) => CommitTools { staged_diff_for_paths: staged.is_large(), amend: false },
        Prepared::Amend(amend) => CommitTools {
            staged_diff_for_paths: amend.amend_delta_truncated || amend.final_diff_truncated,
            amend: true,
        },
    };
    let mut tools = ToolRegistry::new();
    let files = Arc::new(RepoFiles::new(repo.clone(), FileSource::Worktree));
    tools.extend(tools::repository::tools(&files));
    tools.extend(tools::commit::select(repo, choice));
    tools.extend(tools::skills::tools(project.skills.as_ref()));

    let environment = generation::environment(&EnvironmentContext {
        cwd: &invocation.cwd,
        repo_root: &root,
        command: request.command(),
        mode: request.mode(),
        family: project.family(settings.family),
        limits: settings.limits,
        stdout_contract: if request.commit {
            "a human console trace while the message is generated, then Git's commit summary; the message itself goes to git commit"
        } else {
            "the final commit message only"
        },
    })?;
    let system = match prepared {
        Prepared::Normal(_) => include_str!("prompts/system.md"),
        Prepared::Amend(_) => include_str!("prompts/system-amend.md"),
    };
    Ok(generation::task(
        settings,
        project.layers(system, environment, user_prompt(prepared, settings.append_prompt.as_deref())?),
        tools,
        None,
    ))
}

/// Layer 6: the task prompt with the prepared context framed as data.
fn user_prompt(prepared: &Prepared, hint: Option<&str>) -> Result<String, CommandError> {
    let (name, template, frame, data) = match prepared {
        Prepared::Normal(staged) => {
            ("commit-msg-user", include_str!("prompts/user.md.j2"), "prepared_commit_context", view::staged(staged))
        }
        Prepared::Amend(amend) => (
            "commit-msg-amend-user",
            include_str!("prompts/user-amend.md.j2"),
            "prepared_amend_context",
            view::amend(amend),
        ),
    };
    let json = serde_json::to_string_pretty(&data).map_err(CommandError::failed)?;
    generation::data_frame_prompt(name, template, frame, &json, hint)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CommandError> + Send + 'static,
) -> Result<T, CommandError> {
    gitagent_runtime::blocking::run_to_end("the repository reader", work).await?
}

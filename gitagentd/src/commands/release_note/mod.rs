//! `git-agent release-note [--out <file>] <base> <release>` and
//! `git-agent release-note [--out <file>] patch|minor|major`. In order:
//! the range arguments are checked (usage errors exit 2), the `--out`
//! target is checked writable, the repository is opened, both ends are
//! resolved (or the latest version tag found and bumped), the release
//! context is prepared, the model writes the structured document under a
//! strict schema (the prepared context as a data frame, only `repo_summary`
//! and skill tools offered, the release validators as the repair
//! validator), and the Markdown is built locally and printed (or written
//! to the `--out` file atomically while the console trace streams to
//! stdout). Every step before the model runs without one.

use super::generation::{self, EnvironmentContext, Generation, ProjectContext, Reporter, TraceSink};
use super::{CommandError, Invocation, Output};
use crate::commands::Services;
use crate::release::{self, Document, OutFile, RangeRequest, ReleaseContext};
use git_agent_shared::cli::ReleaseNoteArgs;
use gitagent_agent::tools::{self, RepoFiles, ToolRegistry};
use gitagent_agent::{AgentTask, OutputRules};
use gitagent_git::range::{EvidenceLimits, History};
use gitagent_git::{FileSource, Repository};
use gitagent_provider::TextFormat;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const COMMAND: &str = "release-note";
/// A release note reads a whole range: it gets at least this many model
/// steps and this much time, whatever the flags say.
const MIN_STEPS: u32 = 12;
const MIN_TIMEOUT: Duration = Duration::from_secs(4 * 60);

pub async fn run(
    services: &Services,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: ReleaseNoteArgs,
) -> Result<(), CommandError> {
    let request = RangeRequest::from_args(&args.range).map_err(CommandError::usage)?;
    let mut settings = Generation::from_args(&args.generation)?;
    settings.raise_to(MIN_STEPS, MIN_TIMEOUT);
    let out = match args.out.as_deref() {
        Some(raw) => Some(OutFile::preflight(&invocation.cwd, raw).map_err(CommandError::failed)?),
        None => None,
    };
    let _diagnostics = settings.diagnostics().await?;
    let reporter = Reporter::new(invocation, output, settings.debug);
    let started = Instant::now();
    let (root, context) = prepare_context(invocation, cancel, request).await?;
    let prompt_data = context.render_for_prompt();
    if settings.debug {
        let groups = context.submodules.iter().filter(|submodule| submodule.local_history_available).count();
        output.stderr(format!(
            "release-note: prepared {} ({} commits, {} submodule groups, {} candidates, {} prompt bytes) in {:.1?}\n",
            context.range,
            context.parent_commits.len(),
            groups,
            context.candidates.len(),
            prompt_data.len(),
            started.elapsed()
        ));
    }

    let provider =
        generation::provider(services, invocation, &settings, &generation::cache_scope(COMMAND, &root)).await?;
    let sink = TraceSink::new(invocation, output, &reporter, out.is_some());
    sink.event(
        generation::session_event(COMMAND, &root)
            .with("range", context.range.as_str())
            .with("commits", context.parent_commits.len())
            .with("submodules", context.submodules.len())
            .with("candidates", context.candidates.len()),
    );
    let context = Arc::new(context);
    let task = assemble(invocation, &settings, &root, &context, &prompt_data, out.as_ref(), cancel).await?;
    let rules = output_rules(&context);
    let outcome = generation::run_loop(&provider, &settings, COMMAND, &sink, cancel, &task, &rules).await?;
    let markdown = finish(&outcome.text, &context).map_err(|errors| {
        CommandError::Message(format!("the generated release note is invalid: {}", errors.join("; ")))
    })?;
    let mut event = generation::final_event(markdown.as_str(), &outcome);
    if let Some(out) = &out {
        event = event.with("out", out.path().display().to_string());
    }
    sink.event(event);
    match out {
        Some(out) => out.write(&markdown).map_err(CommandError::failed)?,
        None => output.stdout(format!("{markdown}\n")),
    }
    Ok(())
}

/// Opens the repository, resolves the range and prepares its context, off
/// the async runtime; returns the repository root with it.
async fn prepare_context(
    invocation: &Invocation,
    cancel: &CancellationToken,
    request: RangeRequest,
) -> Result<(PathBuf, ReleaseContext), CommandError> {
    let cwd = invocation.cwd.clone();
    gitagent_runtime::blocking::run("the repository reader", cancel, move |interrupt| {
        let history = History::discover(&cwd).map_err(CommandError::failed)?;
        let range = release::resolve_range(&history, &request).map_err(CommandError::failed)?;
        let context =
            release::prepare(&history, &range, EvidenceLimits::default(), interrupt).map_err(CommandError::failed)?;
        Ok((history.root().to_path_buf(), context))
    })
    .await?
}

/// The request layers of the prepared release context (`prompt_data` is
/// its rendering), the strict document schema, and the tools:
/// `repo_summary` plus the skill tools.
async fn assemble(
    invocation: &Invocation,
    settings: &Generation,
    root: &Path,
    context: &ReleaseContext,
    prompt_data: &str,
    out: Option<&OutFile>,
    cancel: &CancellationToken,
) -> Result<AgentTask, CommandError> {
    let project = ProjectContext::resolve(invocation, root, Vec::new(), settings.family, cancel).await?;
    let repo = {
        let root = root.to_path_buf();
        gitagent_runtime::blocking::run_to_end("the repository reader", move || Repository::discover(&root))
            .await?
            .map_err(CommandError::failed)?
    };
    let mut tools = ToolRegistry::new();
    tools.extend([tools::repository::repo_summary(&Arc::new(RepoFiles::new(repo, FileSource::Worktree)))]);
    tools.extend(tools::skills::tools(project.skills.as_ref()));
    let stdout_contract = match out {
        Some(out) => format!(
            "a human console trace while the release note is generated; the Markdown goes to {}",
            out.path().display()
        ),
        None => "the rendered release-note Markdown only".to_string(),
    };
    let environment = generation::environment(&EnvironmentContext {
        cwd: &invocation.cwd,
        repo_root: root,
        command: COMMAND,
        mode: if context.version_bump.is_some() { "version-bump" } else { "range" },
        family: project.family(settings.family),
        limits: settings.limits,
        stdout_contract: &stdout_contract,
    })?;
    let user = generation::data_frame_prompt(
        "release-note-user",
        include_str!("prompts/user.md.j2"),
        "prepared_release_context",
        prompt_data,
        settings.append_prompt.as_deref(),
    )?;
    Ok(generation::task(
        settings,
        project.layers(include_str!("prompts/system.md"), environment, user),
        tools,
        Some(TextFormat {
            name: "release_note".to_string(),
            description: Some("The release note's sections of bullets with their references.".to_string()),
            schema: release::output_schema(),
        }),
    ))
}

/// The answer must be a document that [`finish`] turns into valid
/// Markdown; its errors drive the one repair pass.
fn output_rules(context: &Arc<ReleaseContext>) -> OutputRules {
    let context = Arc::clone(context);
    let shape = |raw: &str| raw.trim().to_string();
    let validate = move |text: &str| finish(text, &context).err().unwrap_or_default();
    OutputRules { shape: Box::new(shape), validate: Box::new(validate) }
}

/// The Markdown of the model's JSON answer, or what is wrong with it.
fn finish(answer: &str, context: &ReleaseContext) -> Result<String, Vec<String>> {
    release::finish(parse_document(answer)?, context)
}

fn parse_document(answer: &str) -> Result<Document, Vec<String>> {
    serde_json::from_str(answer).map_err(|error| {
        vec![format!("the answer is not a JSON document of the response schema ({error}); reply with that JSON only")]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_that_are_not_documents_are_repairable_errors() {
        let errors = parse_document("### New Features\n\n- prose").unwrap_err();
        assert!(errors[0].starts_with("the answer is not a JSON document"), "{errors:?}");
        let errors = parse_document(r#"{"sections":[],"extra":1}"#).unwrap_err();
        assert!(errors[0].contains("unknown field"), "{errors:?}");
        assert_eq!(parse_document(r#"{"sections":[]}"#).unwrap(), Document::default());
    }
}

//! `git-agent release-note [--out <file>] <base> <release>` and
//! `git-agent release-note [--out <file>] patch|minor|major`. In order:
//! the range arguments are checked (usage errors exit 2), the `--out`
//! target is checked writable, the repository is opened, both ends are
//! resolved (or the latest version tag found and bumped), the release
//! context is prepared, the model writes the structured document, and the
//! Markdown is built, validated and printed (or written to the `--out`
//! file atomically). Every step before the model runs without one.

use super::{CommandError, Invocation, Output, blocking};
use crate::git::range::{EvidenceLimits, History};
use crate::release::{self, Document, OutFile, RangeRequest, ReleaseContext};
use git_agent_shared::cli::{MessageArgs, ReleaseNoteArgs};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

pub async fn run(
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: ReleaseNoteArgs,
) -> Result<(), CommandError> {
    let request = RangeRequest::from_args(&args.range).map_err(|error| CommandError::Usage(error.to_string()))?;
    let out = match args.out.as_deref() {
        Some(raw) => Some(OutFile::preflight(&invocation.cwd, raw).map_err(CommandError::failed)?),
        None => None,
    };
    let started = Instant::now();
    let context = prepare_context(invocation, cancel, request).await?;
    if args.generation.shared.debug {
        let groups = context.submodules.iter().filter(|submodule| submodule.local_history_available).count();
        output.stderr(format!(
            "release-note: prepared {} ({} commits, {} submodule groups, {} candidates, {} prompt bytes) in {:.1?}\n",
            context.range,
            context.parent_commits.len(),
            groups,
            context.candidates.len(),
            context.render_for_prompt().len(),
            started.elapsed()
        ));
    }
    let document = generate_document(&context, &args.generation).await?;
    let markdown = release::finish(document, &context).map_err(|errors| {
        let list: Vec<String> = errors.iter().map(|error| format!("- {error}")).collect();
        CommandError::Failed(format!("the generated release note failed validation:\n{}", list.join("\n")))
    })?;
    match out {
        Some(out) => out.write(&markdown).map_err(CommandError::failed)?,
        None => output.stdout(format!("{markdown}\n")),
    }
    Ok(())
}

/// Opens the repository, resolves the range and prepares its context, off
/// the async runtime.
pub(crate) async fn prepare_context(
    invocation: &Invocation,
    cancel: &CancellationToken,
    request: RangeRequest,
) -> Result<ReleaseContext, CommandError> {
    let cwd = invocation.cwd.clone();
    blocking::run(cancel, move |interrupt| {
        let history = History::discover(&cwd).map_err(CommandError::failed)?;
        let range = release::resolve_range(&history, &request).map_err(CommandError::failed)?;
        release::prepare(&history, &range, EvidenceLimits::default(), interrupt).map_err(CommandError::failed)
    })
    .await?
}

/// THE MODEL SEAM of `release-note`: asks the model for the structured
/// document of `context` (the prompt is `context.render_for_prompt()`, the
/// answer follows `release::output_schema()`, only `repo_summary` and
/// skill tools are exposed, one repair pass on validation errors) and
/// returns it. It is not yet connected to the agent loop
/// (`crate::agent`), so it fails clearly instead of pretending.
async fn generate_document(context: &ReleaseContext, _generation: &MessageArgs) -> Result<Document, CommandError> {
    Err(CommandError::Failed(format!(
        "release-note cannot ask the model yet: its generation step is not connected in this build\nhint: the context of {} was prepared ({} commits); write the release note by hand for now",
        context.range,
        context.parent_commits.len()
    )))
}

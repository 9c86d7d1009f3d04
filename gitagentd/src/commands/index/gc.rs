//! `git-agent index gc [--dry-run]`: resolves the metadata root and the
//! optional `index.remote`, runs the local phase of [`crate::index_gc`] on
//! the blocking pool and then, when `index.remote` is set, the shared
//! cleanup ([`gitagent_sync::gc::shared`]); reports progress on stderr and
//! writes the one summary line.

use super::super::{CommandError, Invocation, Output};
use crate::commands::Services;
use git_agent_shared::cli::IndexGcArgs;
use git_agent_shared::config_file::ConfigFile;
use git_agent_shared::paths;
use gitagent_sync::gc::shared::{self, SharedPhase};
use gitagent_sync::gc::{self as index_gc, LocalSummary, Options};
use gitagent_sync::sync::Endpoint;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub async fn run(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: IndexGcArgs,
) -> Result<(), CommandError> {
    let metadata_root = paths::metadata_root(&invocation.env).map_err(CommandError::failed)?;
    let local_root = metadata_root.clone();
    let config_path = paths::config_file(&invocation.env).map_err(CommandError::failed)?;
    let config =
        gitagent_runtime::blocking::run_to_end("the configuration file", move || ConfigFile::load(&config_path))
            .await?
            .map_err(CommandError::failed)?;
    let options = Options { dry_run: args.dry_run, crash_at: services.search.crash_at(), stop_at: None };
    let progress_output = output.clone();
    let interactive = invocation.stderr_is_terminal;
    let summary: LocalSummary = gitagent_runtime::blocking::run("the index gc", cancel, move |interrupt| {
        let mut progress = |line: String| {
            if interactive {
                progress_output.progress(line);
            } else {
                progress_output.stderr(format!("{line}\n"));
            }
        };
        index_gc::run_local(&local_root, &options, &mut progress, &|| interrupt.is_raised())
    })
    .await?
    .map_err(CommandError::failed)?;
    // GC-005 runs only after every local store has published.
    let shared = if config.index.remote.is_empty() {
        None
    } else {
        let endpoint =
            Endpoint::new(&config.index.remote, &metadata_root, &invocation.env).map_err(CommandError::failed)?;
        let progress: shared::Progress = super::progress_reporter(output, invocation.stderr_is_terminal, shared_update);
        let shared =
            shared::run_shared(&endpoint, args.dry_run, progress, cancel, None).await.map_err(CommandError::failed)?;
        Some(shared)
    };
    output.stdout(index_gc::summary_line(&summary, shared.as_ref(), args.dry_run));
    Ok(())
}

/// The progress of gc's shared phase: the same rendering as `index sync`,
/// transport details included.
fn shared_update(phase: SharedPhase) -> super::Update {
    super::Update::Phase(
        match phase {
            SharedPhase::Transfer(detail) => return super::Update::Transfer(detail),
            SharedPhase::Fetching => "index gc: fetching remote",
            SharedPhase::Scanning => "index gc: scanning shared indexes",
            SharedPhase::Pruning => "index gc: pruning shared packs",
            SharedPhase::Pushing => "index gc: pushing remote",
        }
        .to_string(),
    )
}

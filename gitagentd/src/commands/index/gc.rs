//! `git-agent index gc [--dry-run]`: resolves the metadata root and the
//! optional `index.remote`, runs the local phase of [`crate::index_gc`] on
//! the blocking pool, reports progress on stderr and writes the one
//! summary line.

use super::super::{CommandError, Invocation, Output};
use crate::index_gc::{self, LocalSummary, Options};
use crate::services::Services;
use git_agent_shared::cli::IndexGcArgs;
use git_agent_shared::config_file::{ConfigFile, INDEX_REMOTE_KEY};
use git_agent_shared::paths;
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
    let config_path = paths::config_file(&invocation.env).map_err(CommandError::failed)?;
    let config = crate::blocking::run_to_end("the configuration file", move || ConfigFile::load(&config_path))
        .await?
        .map_err(CommandError::failed)?;
    let options = Options { dry_run: args.dry_run, crash_at: services.search.crash_at(), stop_at: None };
    let progress_output = output.clone();
    let interactive = invocation.stderr_is_terminal;
    let summary: LocalSummary = crate::blocking::run("the index gc", cancel, move |interrupt| {
        let mut progress = |line: String| {
            if interactive {
                progress_output.progress(line);
            } else {
                progress_output.stderr(format!("{line}\n"));
            }
        };
        index_gc::run_local(&metadata_root, &options, &mut progress, &|| interrupt.is_raised())
    })
    .await?
    .map_err(CommandError::failed)?;
    if !config.index.remote.is_empty() {
        return Err(CommandError::Failed(format!(
            "index gc: the local phase completed, but cleanup of the shared {INDEX_REMOTE_KEY} repository is not available in this build\nhint: run git-agent config --unset {INDEX_REMOTE_KEY} to collect local indexes only"
        )));
    }
    output.stdout(index_gc::summary_line(&summary, args.dry_run));
    Ok(())
}

//! `git-agent index sync`, `git-agent index migrate --to v2 [--dry-run]` and
//! `git-agent index gc [--dry-run]`: the explicit maintenance of the search
//! indexes shared through `index.remote` (see [`crate::index_sync`]).

mod gc;

use super::{CommandError, Invocation, Output};
use crate::index_sync::local;
use crate::index_sync::sync::{Endpoint, Phase};
use crate::services::Services;
use git_agent_shared::cli::{IndexArgs, IndexCommand};
use git_agent_shared::config_file::{ConfigFile, INDEX_REMOTE_KEY};
use git_agent_shared::paths;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub async fn run(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: IndexArgs,
) -> Result<(), CommandError> {
    match args.command {
        IndexCommand::Gc(args) => gc::run(services, invocation, output, cancel, args).await,
        IndexCommand::Sync => sync(invocation, output, cancel).await,
        IndexCommand::Migrate(_) => {
            let _remote = configured_remote(invocation).await?;
            Err(CommandError::Failed("index migrate is not available in this build yet".into()))
        }
    }
}

/// `git-agent index sync`: export every completed revision and
/// cached-remote index of this machine, one commit, one push.
async fn sync(invocation: &Invocation, output: &Output, cancel: &CancellationToken) -> Result<(), CommandError> {
    let url = configured_remote(invocation).await?;
    let metadata_root = paths::metadata_root(&invocation.env).map_err(CommandError::failed)?;
    let endpoint = Endpoint::new(&url, &metadata_root, &invocation.env).map_err(CommandError::failed)?;
    let progress = progress_reporter(output, invocation.stderr_is_terminal);
    let scan_root = metadata_root.clone();
    let inventory =
        crate::blocking::run_to_end("the local index inventory", move || local::inventory(&scan_root)).await?;
    let skipped = inventory.skipped;
    let published = endpoint.publish_from(Arc::new(inventory), progress, cancel).await.map_err(CommandError::failed)?;
    output.stdout(format!(
        "synced indexes={} records={} skipped={}\n",
        published.indexes,
        published.records,
        published.skipped + skipped
    ));
    Ok(())
}

/// Progress on stderr: one rewritten line on a terminal, one line per
/// update otherwise.
fn progress_reporter(output: &Output, interactive: bool) -> Arc<dyn Fn(Phase) + Send + Sync> {
    let output = output.clone();
    Arc::new(move |phase| {
        let text = match phase {
            Phase::Fetching => "index sync: fetching remote".to_string(),
            Phase::Scanning => "index sync: scanning local indexes".to_string(),
            Phase::Syncing { done, total } => format!("index sync: syncing indexes {done}/{total}"),
            Phase::Pushing => "index sync: pushing remote".to_string(),
        };
        if interactive {
            output.progress(text);
        } else {
            output.stderr(format!("{text}\n"));
        }
    })
}

/// The configured `index.remote`, or the specification's failure when it
/// is unset (sync and migrate need it; gc does not).
async fn configured_remote(invocation: &Invocation) -> Result<String, CommandError> {
    let path = paths::config_file(&invocation.env).map_err(CommandError::failed)?;
    let config = crate::blocking::run_to_end("the configuration file", move || ConfigFile::load(&path))
        .await?
        .map_err(CommandError::failed)?;
    if config.index.remote.is_empty() {
        return Err(CommandError::Failed(format!(
            "{INDEX_REMOTE_KEY} is not configured\nhint: git-agent config {INDEX_REMOTE_KEY} <git-url>"
        )));
    }
    Ok(config.index.remote)
}

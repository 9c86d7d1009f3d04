//! `git-agent index sync`, `git-agent index migrate --to v2 [--dry-run]` and
//! `git-agent index gc [--dry-run]`: the explicit maintenance of the search
//! indexes shared through `index.remote` (see [`crate::index_sync`]).

mod gc;

use super::{CommandError, Invocation, Output};
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
        IndexCommand::Sync | IndexCommand::Migrate(_) => {
            let _remote = configured_remote(invocation).await?;
            Err(CommandError::Failed("sharing indexes through index.remote is not available in this build yet".into()))
        }
    }
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

//! `git-agent index gc [--dry-run]` (owned by the index-gc work; this arm
//! refuses until it lands).

use super::super::{CommandError, Invocation, Output};
use crate::services::Services;
use git_agent_shared::cli::IndexGcArgs;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub async fn run(
    _services: &Arc<Services>,
    _invocation: &Invocation,
    _output: &Output,
    _cancel: &CancellationToken,
    _args: IndexGcArgs,
) -> Result<(), CommandError> {
    Err(CommandError::Usage("usage: git-agent index gc [--dry-run]".into()))
}

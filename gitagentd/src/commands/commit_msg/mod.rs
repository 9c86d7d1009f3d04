//! `git-agent commit-msg`.
use super::{CommandError, Invocation, Output};
use git_agent_shared::cli::CommitMsgArgs;
use tokio_util::sync::CancellationToken;

pub async fn run(
    _invocation: &Invocation,
    _output: &Output,
    _cancel: &CancellationToken,
    _args: CommitMsgArgs,
) -> Result<(), CommandError> {
    Err(CommandError::Failed("not yet".into()))
}

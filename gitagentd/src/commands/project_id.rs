//! `git-agent project_id`: one lowercase 64-character identifier and a
//! newline on stdout.

use super::{CommandError, Invocation, Output};
use git_agent_shared::identity::ProjectIdentity;

pub async fn run(invocation: &Invocation, output: &Output) -> Result<(), CommandError> {
    let cwd = invocation.cwd.clone();
    let identity = tokio::task::spawn_blocking(move || ProjectIdentity::resolve(&cwd))
        .await
        .map_err(CommandError::failed)?
        .map_err(CommandError::failed)?;
    output.stdout(format!("{}\n", identity.id()));
    Ok(())
}

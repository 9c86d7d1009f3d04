//! `git-agent project_id`: one lowercase 64-character identifier and a
//! newline on stdout.

use super::{CommandError, Invocation, Output};
use crate::commands::Services;
use gitagent_git::identity::ProjectIdentity;
use std::sync::Arc;

pub async fn run(services: &Arc<Services>, invocation: &Invocation, output: &Output) -> Result<(), CommandError> {
    // A few stat calls when the repository is known; opening it otherwise.
    let services = Arc::clone(services);
    let cwd = invocation.cwd.clone();
    let identity = gitagent_runtime::blocking::run_to_end("the project identity", move || {
        ProjectIdentity::resolve_cached(&cwd, &services.identities)
    })
    .await?
    .map_err(CommandError::failed)?;
    output.stdout(format!("{}\n", identity.id()));
    Ok(())
}

//! Request layers every command shares (the spec's seven-layer request):
//! the read-only tool policy (layer 2), the environment context (layer
//! 3), and the deadline a command's run is held to.

use crate::Limits;
use crate::guidance::Family;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Layer 2: the read-only tool policy.
pub fn tool_policy() -> String {
    include_str!("prompts/tool-policy.md").trim().to_string()
}

/// Layer 3 inputs.
pub struct EnvironmentContext<'a> {
    pub cwd: &'a std::path::Path,
    pub repo_root: &'a std::path::Path,
    pub command: &'a str,
    pub mode: &'a str,
    pub family: Family,
    pub limits: Limits,
    pub stdout_contract: &'a str,
}

/// Layer 3: the environment context.
pub fn environment(context: &EnvironmentContext<'_>) -> Result<String, crate::prompt::PromptError> {
    crate::prompt::render(
        "environment",
        include_str!("prompts/environment.md.j2"),
        json!({
            // Quoted as git quotes them when they are not UTF-8, never a
            // lossy name of another folder.
            "cwd": git_agent_shared::quote::os_path_key(context.cwd),
            "repo_root": git_agent_shared::quote::os_path_key(context.repo_root),
            "command": context.command,
            "mode": context.mode,
            "guidance_family": context.family.as_str(),
            "max_steps": context.limits.max_steps,
            "max_tool_calls": context.limits.max_tool_calls,
            "stdout_contract": context.stdout_contract,
        }),
    )
}

/// A token that fires when `cancel` does or when `timeout` passes, and
/// the deadline.
pub fn with_deadline(cancel: &CancellationToken, timeout: Duration) -> (CancellationToken, Instant) {
    let token = cancel.child_token();
    let deadline = Instant::now() + timeout;
    let timer = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep_until(deadline.into()) => timer.cancel(),
            () = timer.cancelled() => {}
        }
    });
    (token, deadline)
}

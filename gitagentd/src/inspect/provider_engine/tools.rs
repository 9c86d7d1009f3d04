//! The inspection's tool registry: the shared repository tools (with
//! `jq`) over the scope's source, the diff-mode tools in diff modes, the
//! documentation tools whose executables are on the caller's PATH, and
//! `skills_read` when `skills-mgr` is installed.
//!
//! In diff modes every call first rechecks the launch fingerprint (the
//! diff-mode tools do it themselves; every other tool is wrapped in
//! [`Guarded`]). Drift is terminal: it is recorded in the [`DriftSlot`]
//! and the call reports cancellation, which stops the loop. The registry's
//! batch guard rechecks once more after a concurrent batch has joined.

use crate::inspect::git::GitEnv;
use crate::inspect::prepare::{self, PreparedScope};
use crate::inspect::tools::{self as inspect_tools, DocCommands, ToolDefinition};
use crate::tools::{BatchGuard, Tool, ToolError, ToolFuture, ToolOutput};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Where a terminal drift (or an unreadable repository during a recheck)
/// is kept until the engine turns it into the task's error. Recording it
/// also cancels the loop, so no further request is sent.
#[derive(Clone, Default)]
pub struct DriftSlot {
    message: Arc<Mutex<Option<String>>>,
    stop: CancellationToken,
}

impl DriftSlot {
    /// A slot that cancels `stop` when drift is recorded.
    pub fn new(stop: CancellationToken) -> Self {
        Self { message: Arc::default(), stop }
    }

    pub fn record(&self, message: String) {
        if let Ok(mut slot) = self.message.lock()
            && slot.is_none()
        {
            *slot = Some(message);
        }
        self.stop.cancel();
    }

    pub fn take(&self) -> Option<String> {
        self.message.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// Rechecks the launch fingerprint on the blocking pool.
async fn recheck(prepared: &Arc<PreparedScope>, git_env: &GitEnv, drift: &DriftSlot) -> Result<(), ToolError> {
    let (prepared, git_env) = (Arc::clone(prepared), git_env.clone());
    match tokio::task::spawn_blocking(move || prepare::recheck(&prepared, &git_env)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            drift.record(error.to_string());
            Err(ToolError::Cancelled)
        }
        Err(error) => Err(ToolError::Recoverable(format!("the snapshot check failed: {error}"))),
    }
}

/// The recheck after a batch of calls has joined: drift that happened
/// while the calls ran stops the loop before their outputs are used.
pub fn batch_guard(prepared: &Arc<PreparedScope>, git_env: &GitEnv, drift: &DriftSlot) -> BatchGuard {
    let (prepared, git_env, drift) = (Arc::clone(prepared), git_env.clone(), drift.clone());
    Arc::new(move || {
        let (prepared, git_env, drift) = (Arc::clone(&prepared), git_env.clone(), drift.clone());
        Box::pin(async move {
            recheck(&prepared, &git_env, &drift).await.inspect_err(|error| {
                if let ToolError::Recoverable(message) = error {
                    drift.record(message.clone());
                }
            })
        })
    })
}

/// A tool that rechecks the launch fingerprint before it runs.
pub struct Guarded {
    inner: Arc<dyn Tool>,
    prepared: Arc<PreparedScope>,
    git_env: GitEnv,
    drift: DriftSlot,
}

impl Guarded {
    pub fn wrap(
        inner: Arc<dyn Tool>,
        prepared: &Arc<PreparedScope>,
        git_env: &GitEnv,
        drift: &DriftSlot,
    ) -> Arc<dyn Tool> {
        Arc::new(Self { inner, prepared: Arc::clone(prepared), git_env: git_env.clone(), drift: drift.clone() })
    }
}

impl Tool for Guarded {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn description(&self) -> &'static str {
        self.inner.description()
    }
    fn parameters(&self) -> Value {
        self.inner.parameters()
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let (inner, prepared, git_env, drift) =
            (Arc::clone(&self.inner), Arc::clone(&self.prepared), self.git_env.clone(), self.drift.clone());
        let arguments = arguments.to_string();
        Box::pin(async move {
            recheck(&prepared, &git_env, &drift).await?;
            inner.call(&arguments, cancel).await
        })
    }
}

/// `review_changes`, `review_diff` or `review_diff_for_paths`.
struct DiffTool {
    definition: ToolDefinition,
    prepared: Arc<PreparedScope>,
    git_env: GitEnv,
    drift: DriftSlot,
}

/// The diff-mode tools bound to the prepared scope.
pub fn diff_tools(prepared: &Arc<PreparedScope>, git_env: &GitEnv, drift: &DriftSlot) -> Vec<Arc<dyn Tool>> {
    inspect_tools::diff_tool_definitions()
        .into_iter()
        .map(|definition| {
            Arc::new(DiffTool {
                definition,
                prepared: Arc::clone(prepared),
                git_env: git_env.clone(),
                drift: drift.clone(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

impl Tool for DiffTool {
    fn name(&self) -> &'static str {
        self.definition.name
    }
    fn description(&self) -> &'static str {
        self.definition.description
    }
    fn parameters(&self) -> Value {
        self.definition.schema.clone()
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let (name, prepared, git_env, drift) =
            (self.definition.name, Arc::clone(&self.prepared), self.git_env.clone(), self.drift.clone());
        let arguments = arguments.to_string();
        Box::pin(async move {
            if cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let result = tokio::task::spawn_blocking(move || match name {
                "review_changes" => inspect_tools::review_changes(&prepared, &git_env, &arguments),
                "review_diff" => inspect_tools::review_diff(&prepared, &git_env, &arguments),
                _ => inspect_tools::review_diff_for_paths(&prepared, &git_env, &arguments),
            })
            .await
            .map_err(|error| ToolError::Recoverable(format!("{name} failed: {error}")))?;
            from_envelope(result, &drift)
        })
    }
}

/// One documentation tool (`go_doc`, `rust_doc`, `context7_*`).
struct DocTool {
    definition: ToolDefinition,
    commands: Arc<DocCommands>,
}

/// The documentation tools whose executables were found.
pub fn doc_tools(commands: DocCommands) -> Vec<Arc<dyn Tool>> {
    let commands = Arc::new(commands);
    commands
        .definitions()
        .into_iter()
        .map(|definition| Arc::new(DocTool { definition, commands: Arc::clone(&commands) }) as Arc<dyn Tool>)
        .collect()
}

impl Tool for DocTool {
    fn name(&self) -> &'static str {
        self.definition.name
    }
    fn description(&self) -> &'static str {
        self.definition.description
    }
    fn parameters(&self) -> Value {
        self.definition.schema.clone()
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let (name, commands) = (self.definition.name, Arc::clone(&self.commands));
        let arguments = arguments.to_string();
        Box::pin(async move {
            let result = commands.call(name, &arguments, &cancel).await;
            from_envelope(result, &DriftSlot::default())
        })
    }
}

/// The registry's view of an inspection tool result: the envelope's data
/// and truncation flag, a recoverable error, or a terminal stop.
fn from_envelope(result: Result<Value, inspect_tools::ToolError>, drift: &DriftSlot) -> Result<ToolOutput, ToolError> {
    match result {
        Ok(mut envelope) => {
            let truncated = envelope.get("truncated").and_then(Value::as_bool).unwrap_or(false);
            let data = envelope.get_mut("data").map(Value::take).unwrap_or(Value::Null);
            Ok(ToolOutput { data, truncated })
        }
        Err(inspect_tools::ToolError::Recoverable(message)) => Err(ToolError::Recoverable(message)),
        Err(inspect_tools::ToolError::Drift(error)) => {
            drift.record(error.to_string());
            Err(ToolError::Cancelled)
        }
        Err(inspect_tools::ToolError::Cancelled) => Err(ToolError::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelopes_become_outputs_and_drift_is_terminal() {
        let stop = CancellationToken::new();
        let drift = DriftSlot::new(stop.clone());
        let output = from_envelope(Ok(inspect_tools::envelope("review_diff", json!({"diff": "x"}), true)), &drift);
        assert_eq!(output, Ok(ToolOutput { data: json!({"diff": "x"}), truncated: true }));
        let recoverable = from_envelope(Err(inspect_tools::ToolError::Recoverable("bad".into())), &drift);
        assert_eq!(recoverable, Err(ToolError::Recoverable("bad".into())));
        assert!(!stop.is_cancelled());
        let error = prepare::PrepareError::Drift { mode: "staged", root: "/r".into() };
        let drifted = from_envelope(Err(inspect_tools::ToolError::Drift(error)), &drift);
        assert_eq!(drifted, Err(ToolError::Cancelled));
        assert!(stop.is_cancelled());
        let message = drift.take().unwrap_or_default();
        assert!(message.starts_with("authoritative repository state changed since launch; rerun command"), "{message}");
        assert_eq!(drift.take(), None);
    }
}

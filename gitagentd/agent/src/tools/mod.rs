//! The model's tools: typed, read-only functions with strict JSON schemas
//! and one stable result envelope (`ok`, `tool`, `data` or `error`,
//! `truncated`).
//!
//! A command builds a [`ToolRegistry`] from tool sets ([`repository`],
//! [`commit`], [`skills`], and those later tasks add) and hands it to the
//! agent loop, which only sees the [`Tool`] trait: adding a tool never
//! touches the loop. Most tools are a [`BlockingTool`]: a name, a
//! description, an argument type (the schema comes from it) and a body,
//! each written once. Recoverable failures (a wrong path, a bad pattern)
//! become `ok: false` envelopes the model can correct; cancellation is
//! terminal. Tools never write, never run a shell, and stay inside the
//! repository root.

pub mod commit;
pub mod history;
mod inspect;
mod jq;
mod paths;
pub mod repository;
pub mod schema;
pub mod skills;

pub use paths::{PathError, RepoFiles, clean_relative};

use gitagent_provider::ToolSpec;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a tool found.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub data: Value,
    /// Whether a cap cut the data; the model should ask for less.
    pub truncated: bool,
}

impl ToolOutput {
    pub fn new(data: impl Serialize, truncated: bool) -> Self {
        Self { data: serde_json::to_value(data).unwrap_or(Value::Null), truncated }
    }
}

/// Why a tool produced no data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model can fix this: it goes back as an `ok: false` envelope.
    #[error("{0}")]
    Recoverable(String),
    /// The run was cancelled or hit its deadline: the loop stops.
    #[error("the tool call was cancelled")]
    Cancelled,
}

impl ToolError {
    pub fn recoverable(message: impl std::fmt::Display) -> Self {
        Self::Recoverable(message.to_string())
    }
}

pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

/// A function the model may call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// The strict JSON schema of the arguments.
    fn parameters(&self) -> Value;
    /// Runs the call with the model's JSON `arguments`.
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture;
}

/// A tool declared once: its name and description, the arguments it
/// parses (its strict schema comes from them) and a body that runs on the
/// blocking pool. Every such tool is a [`Tool`]; the ones that differ (an
/// async body, a schema or description that depends on the instance)
/// implement [`Tool`] directly.
pub trait BlockingTool: Clone + Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    type Args: JsonSchema + DeserializeOwned + Send + 'static;
    /// Runs the call on the blocking pool with the parsed arguments.
    fn run(&self, args: Self::Args, cancel: &CancellationToken) -> Result<ToolOutput, ToolError>;
}

impl<T: BlockingTool> Tool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }
    fn parameters(&self) -> Value {
        schema::strict::<T::Args>()
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let tool = self.clone();
        blocking(T::NAME, arguments, cancel, move |args: T::Args, cancel| tool.run(args, cancel))
    }
}

/// A check the loop runs after a batch of tool calls has joined and before
/// their outputs are used; an error stops the loop (the check records why).
pub type BatchGuard = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), ToolError>> + Send>> + Send + Sync>;

/// The tools one request offers, in a stable order, and the optional check
/// that follows each batch.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    batch_guard: Option<BatchGuard>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.iter().map(|tool| tool.name())).finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds tools; a later tool of the same name replaces the earlier one.
    pub fn extend(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) {
        for tool in tools {
            self.tools.retain(|existing| existing.name() != tool.name());
            self.tools.push(tool);
        }
    }

    /// Sets the check the loop runs after every batch joins.
    pub fn guard_batches(&mut self, guard: BatchGuard) {
        self.batch_guard = Some(guard);
    }

    pub fn batch_guard(&self) -> Option<&BatchGuard> {
        self.batch_guard.as_ref()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name).cloned()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The definitions sent to the provider.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                parameters: tool.parameters(),
            })
            .collect()
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    ok: bool,
    tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    truncated: bool,
}

/// The envelope of a successful call.
pub fn success_envelope(tool: &str, output: &ToolOutput) -> String {
    let envelope = Envelope { ok: true, tool, data: Some(&output.data), error: None, truncated: output.truncated };
    serde_json::to_string(&envelope).unwrap_or_default()
}

/// The envelope of a failed call; long messages are capped.
pub fn error_envelope(tool: &str, message: &str) -> String {
    let bounded = git_agent_shared::bounded::bound(message, 4 * 1024, 40);
    let envelope =
        Envelope { ok: false, tool, data: None, error: Some(bounded.text.trim_end()), truncated: bounded.truncated };
    serde_json::to_string(&envelope).unwrap_or_default()
}

/// Parses the model's arguments into `A`; a mismatch is recoverable.
pub fn parse_arguments<A: DeserializeOwned>(tool: &str, arguments: &str) -> Result<A, ToolError> {
    let arguments = arguments.trim().trim_start_matches('\u{feff}');
    let arguments = if arguments.is_empty() { "{}" } else { arguments };
    serde_json::from_str(arguments)
        .map_err(|error| ToolError::Recoverable(format!("invalid arguments for {tool}: {error}")))
}

/// Runs a blocking tool body on the blocking pool with typed arguments.
pub fn blocking<A, F>(tool: &'static str, arguments: &str, cancel: CancellationToken, work: F) -> ToolFuture
where
    A: DeserializeOwned + Send + 'static,
    F: FnOnce(A, &CancellationToken) -> Result<ToolOutput, ToolError> + Send + 'static,
{
    let parsed = parse_arguments::<A>(tool, arguments);
    Box::pin(async move {
        let arguments = parsed?;
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let guard = cancel.clone();
        gitagent_runtime::blocking::run(tool, &cancel, move |_| work(arguments, &guard))
            .await
            .map_err(|error| ToolError::Recoverable(format!("{tool} failed: {error}")))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelopes_have_the_stable_fields() {
        let ok = success_envelope("git_staged_diff", &ToolOutput::new(json!({"diff": ""}), false));
        assert_eq!(ok, r#"{"ok":true,"tool":"git_staged_diff","data":{"diff":""},"truncated":false}"#);
        let failed = error_envelope("read_file", "missing.go: no such file");
        assert_eq!(failed, r#"{"ok":false,"tool":"read_file","error":"missing.go: no such file","truncated":false}"#);
        let long = error_envelope("grep", &"x\n".repeat(100));
        assert!(long.contains("\"truncated\":true"));
    }
}

//! Validation of one response's tool calls before any runs: every call
//! needs an id, ids are never reused, the terminal control function is
//! called at most once, and a call repeating an earlier one (same tool,
//! same arguments up to JSON formatting) stops the loop for lack of
//! progress. A call naming a tool the request does not offer is admitted
//! like a call with bad arguments: it runs as a failed call whose output
//! tells the model which tools exist (see [`unknown_tool_message`]).

use crate::tools::ToolRegistry;
use gitagent_provider::{FunctionCall, Item};
use std::collections::HashSet;

/// Calls and ids the conversation already made.
#[derive(Debug, Default)]
pub(super) struct Seen {
    ids: HashSet<String>,
    signatures: HashSet<String>,
}

impl Seen {
    pub(super) fn remember(&mut self, calls: &[FunctionCall]) {
        for call in calls {
            self.ids.insert(call.call_id.clone());
            self.signatures.insert(signature(call));
        }
    }
}

/// An admitted batch.
#[derive(Debug)]
pub(super) struct Batch {
    pub calls: Vec<FunctionCall>,
    /// The first tool whose call repeats an earlier one, if any.
    pub repeated_tool: Option<String>,
}

/// Why a batch of tool calls was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("a call to {name:?} has no call id")]
    MissingCallId { name: String },
    #[error("the call id {call_id} is used twice")]
    ReusedCallId { call_id: String },
    #[error("one response may call {name:?} at most once")]
    SeveralControlCalls { name: String },
}

/// Admits a response's calls: every call has a fresh id and the terminal
/// `control` function is called at most once. Names the request does not
/// offer are admitted; running them yields a recoverable failure.
pub(super) fn validate(calls: &[FunctionCall], control: Option<&str>, seen: &Seen) -> Result<Batch, BatchError> {
    let mut ids = HashSet::new();
    let mut signatures = HashSet::new();
    let mut repeated_tool = None;
    let mut controls = 0;
    for call in calls {
        if call.call_id.trim().is_empty() {
            return Err(BatchError::MissingCallId { name: call.name.clone() });
        }
        if Some(call.name.as_str()) == control {
            controls += 1;
            if controls > 1 {
                return Err(BatchError::SeveralControlCalls { name: call.name.clone() });
            }
        }
        if seen.ids.contains(&call.call_id) || !ids.insert(call.call_id.clone()) {
            return Err(BatchError::ReusedCallId { call_id: call.call_id.clone() });
        }
        let signature = signature(call);
        if repeated_tool.is_none() && (seen.signatures.contains(&signature) || !signatures.insert(signature)) {
            repeated_tool = Some(call.name.clone());
        }
    }
    Ok(Batch { calls: calls.to_vec(), repeated_tool })
}

/// The failed output of a call to `name`, which the request does not
/// offer: it names the tools the model may call instead.
pub(super) fn unknown_tool_message(name: &str, tools: &ToolRegistry, control: Option<&str>) -> String {
    let mut offered: Vec<&str> = tools.names();
    offered.extend(control);
    if offered.is_empty() {
        return format!("there is no tool named {name:?}: this request offers no tools, answer with text");
    }
    format!("there is no tool named {name:?}; the tools you may call are: {}", offered.join(", "))
}

/// The tool name and its arguments in canonical JSON (sorted keys).
fn signature(call: &FunctionCall) -> String {
    let arguments = serde_json::from_str::<serde_json::Value>(&call.arguments)
        .map(|value| value.to_string())
        .unwrap_or_else(|_| call.arguments.trim().to_string());
    format!("{}\u{0}{arguments}", call.name)
}

/// Function calls of the conversation that have no output yet, in order.
pub(super) fn unanswered(items: &[Item]) -> Vec<(String, String)> {
    let answered: HashSet<&str> = items
        .iter()
        .filter_map(|item| match item {
            Item::FunctionCallOutput { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    items
        .iter()
        .filter_map(Item::function_call)
        .filter(|call| !answered.contains(call.call_id.as_str()))
        .map(|call| (call.call_id, call.name))
        .collect()
}

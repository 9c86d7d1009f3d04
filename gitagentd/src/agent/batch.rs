//! Validation of one response's tool calls before any runs: every call
//! needs an id and an offered tool name, ids are never reused, and a call
//! repeating an earlier one (same tool, same arguments up to JSON
//! formatting) stops the loop for lack of progress.

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
    #[error("{name:?} is not a tool this request offers (call {call_id})")]
    UnknownTool { name: String, call_id: String },
    #[error("the call id {call_id} is used twice")]
    ReusedCallId { call_id: String },
    #[error("one response may call {name:?} at most once")]
    SeveralControlCalls { name: String },
}

/// Admits a response's calls: every call names an offered tool (or the
/// terminal `control` function, at most once) with a fresh id.
pub(super) fn validate(
    calls: &[FunctionCall],
    tools: &ToolRegistry,
    control: Option<&str>,
    seen: &Seen,
) -> Result<Batch, BatchError> {
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
        } else if tools.get(&call.name).is_none() {
            return Err(BatchError::UnknownTool { name: call.name.clone(), call_id: call.call_id.clone() });
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

//! Accumulates the events of one streamed response: output items,
//! function-call argument deltas, text deltas, and the terminal
//! `response.completed` with its usage. A fresh accumulator serves every
//! attempt, so a retried request never mixes with the broken one.

use super::retry::StreamBreak;
use super::wire::{self, StreamEvent, WireResponse};
use super::{ModelResponse, ProviderError, Usage};
use serde_json::Value;
use std::collections::BTreeMap;

/// A piece of text an event carried, as it streams.
#[derive(Debug, PartialEq)]
pub(super) enum Streamed {
    /// Answer text (`response.output_text.delta`).
    Text(String),
    /// Reasoning summary text.
    ReasoningSummary(String),
}

pub(super) struct Accumulator {
    model: String,
    /// Output items by output index, from `output_item.added`/`.done`.
    items: BTreeMap<u64, Value>,
    /// Function-call arguments streamed as deltas, by output index.
    arguments: BTreeMap<u64, String>,
    /// Output text streamed as deltas, by (output index, content index).
    text: BTreeMap<(u64, u64), String>,
    completed: Option<WireResponse>,
}

impl Accumulator {
    pub(super) fn new(model: &str) -> Self {
        Self {
            model: model.to_string(),
            items: BTreeMap::new(),
            arguments: BTreeMap::new(),
            text: BTreeMap::new(),
            completed: None,
        }
    }

    /// Applies one event's data; returns the piece of streamed text worth
    /// passing on (answer text or reasoning summary), if the event carried
    /// one.
    pub(super) fn apply(&mut self, data: &str) -> Result<Option<Streamed>, ProviderError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(None);
        }
        let event: StreamEvent = serde_json::from_str(data).map_err(|_| {
            ProviderError::Stream(StreamBreak::MalformedEvent { snippet: data.chars().take(120).collect() })
        })?;
        match event {
            StreamEvent::OutputItemAdded { output_index, item } => {
                self.items.entry(output_index).or_insert(item);
            }
            StreamEvent::OutputItemDone { output_index, item } => {
                self.items.insert(output_index, item);
            }
            StreamEvent::OutputTextDelta { output_index, content_index, delta } => {
                self.text.entry((output_index, content_index)).or_default().push_str(&delta);
                return Ok(Some(Streamed::Text(delta)));
            }
            StreamEvent::FunctionCallArgumentsDelta { output_index, delta } => {
                self.arguments.entry(output_index).or_default().push_str(&delta);
            }
            StreamEvent::FunctionCallArgumentsDone { output_index, arguments } => {
                self.arguments.insert(output_index, arguments);
            }
            StreamEvent::ReasoningSummaryDelta { delta } => return Ok(Some(Streamed::ReasoningSummary(delta))),
            StreamEvent::Completed { response } => self.completed = Some(response),
            StreamEvent::Incomplete { response } => {
                let reason = response.incomplete_details.and_then(|details| details.reason);
                return Err(ProviderError::Incomplete {
                    model: self.model.clone(),
                    reason: reason.unwrap_or_else(|| "no reason given".into()),
                });
            }
            StreamEvent::Failed { response } => {
                let error = response.error.unwrap_or_default();
                return Err(self.failure(error.message, error.code));
            }
            StreamEvent::Error { code, message } => return Err(self.failure(message, code)),
            StreamEvent::Other => {}
        }
        Ok(None)
    }

    fn failure(&self, message: Option<String>, code: Option<String>) -> ProviderError {
        let message = match (message, code) {
            (Some(message), Some(code)) => format!("{message} ({code})"),
            (Some(message), None) => message,
            (None, Some(code)) => code,
            (None, None) => "no error message".into(),
        };
        ProviderError::Failed { model: self.model.clone(), message }
    }

    pub(super) fn is_finished(&self) -> bool {
        self.completed.is_some()
    }

    /// The response, or the break that kept it from completing.
    pub(super) fn finish(self) -> Result<ModelResponse, ProviderError> {
        let Some(completed) = self.completed else {
            return Err(ProviderError::Stream(StreamBreak::MissingCompleted));
        };
        // Some backends send an empty `output` in `response.completed`;
        // the streamed items are then the whole output.
        let mut output: Vec<(u64, Value)> = if completed.output.is_empty() {
            self.items.into_iter().collect()
        } else {
            (0u64..).zip(completed.output).collect()
        };
        for (index, item) in &mut output {
            let is_call = item.get("type").and_then(Value::as_str) == Some("function_call");
            let missing = item.get("arguments").and_then(Value::as_str).is_none_or(|a| a.trim().is_empty());
            if is_call
                && missing
                && let (Some(streamed), Some(object)) = (self.arguments.get(index), item.as_object_mut())
            {
                object.insert("arguments".into(), Value::String(streamed.clone()));
            }
        }
        let tool_calls =
            output.iter().filter_map(|(_, item)| wire::function_call_of(item)).filter(|c| !c.name.is_empty()).collect();
        let mut text: String = output.iter().filter_map(|(_, item)| wire::message_text(item)).collect();
        if text.is_empty() {
            text = self.text.into_values().collect();
        }
        let continuation = output.into_iter().filter_map(|(_, item)| wire::replay_item(item)).collect();
        let usage = completed.usage.unwrap_or_default();
        let input_details = usage.input_tokens_details.unwrap_or_default();
        Ok(ModelResponse {
            id: completed.id,
            status: completed.status.unwrap_or_else(|| "completed".into()),
            text,
            tool_calls,
            continuation,
            usage: Usage {
                input_tokens: usage.input_tokens,
                cached_input_tokens: input_details.cached_tokens,
                cache_write_input_tokens: input_details.cache_write_tokens,
                output_tokens: usage.output_tokens,
                reasoning_tokens: usage.output_tokens_details.unwrap_or_default().reasoning_tokens,
                total_tokens: usage.total_tokens,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply_all(events: &[Value]) -> Result<ModelResponse, ProviderError> {
        let mut accumulator = Accumulator::new("m");
        for event in events {
            accumulator.apply(&event.to_string())?;
        }
        accumulator.finish()
    }

    #[test]
    fn streamed_calls_are_recovered_when_completed_has_no_output() {
        let response = apply_all(&[
            json!({"type":"response.output_item.added","output_index":0,
                   "item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":""}}),
            json!({"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"path\":"}),
            json!({"type":"response.function_call_arguments.delta","output_index":0,"delta":"\"a.rs\"}"}),
            json!({"type":"response.completed","response":{"id":"r1","status":"completed","output":[],
                   "usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":2}}}),
        ])
        .unwrap();
        assert_eq!(response.tool_calls.len(), 1);
        assert_eq!(response.tool_calls[0].call_id, "call_1");
        assert_eq!(response.tool_calls[0].arguments, r#"{"path":"a.rs"}"#);
        assert_eq!(response.continuation.len(), 1);
        assert_eq!(response.usage.cached_input_tokens, 4);
        assert_eq!(response.usage.cache_write_input_tokens, 0, "absent fields are zero");
    }

    #[test]
    fn text_and_reasoning_summary_deltas_are_passed_on_as_they_stream() {
        let mut accumulator = Accumulator::new("m");
        let text = json!({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"fix: "});
        let summary = json!({"type":"response.reasoning_summary_text.delta","delta":"thinking"});
        let added = json!({"type":"response.output_item.added","output_index":0,"item":{"type":"message"}});
        assert_eq!(accumulator.apply(&text.to_string()).unwrap(), Some(Streamed::Text("fix: ".into())));
        assert_eq!(
            accumulator.apply(&summary.to_string()).unwrap(),
            Some(Streamed::ReasoningSummary("thinking".into()))
        );
        assert_eq!(accumulator.apply(&added.to_string()).unwrap(), None);
    }

    #[test]
    fn completed_text_wins_and_deltas_are_the_fallback() {
        let completed = apply_all(&[
            json!({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"partial"}),
            json!({"type":"response.completed","response":{"id":"r","output":[{"type":"message","role":"assistant",
                   "content":[{"type":"output_text","text":"final"}]}]}}),
        ])
        .unwrap();
        assert_eq!(completed.text, "final");
        let fallback = apply_all(&[
            json!({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"from "}),
            json!({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"deltas"}),
            json!({"type":"response.completed","response":{"id":"r","output":[]}}),
        ])
        .unwrap();
        assert_eq!(fallback.text, "from deltas");
    }

    #[test]
    fn terminal_events_are_typed_failures() {
        let missing = apply_all(&[json!({"type":"response.created","response":{}})]).unwrap_err();
        assert!(matches!(missing, ProviderError::Stream(StreamBreak::MissingCompleted)));
        let failed = apply_all(&[
            json!({"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}),
        ]);
        assert!(failed.unwrap_err().to_string().contains("boom (server_error)"));
        let incomplete = apply_all(&[json!({"type":"response.incomplete",
            "response":{"incomplete_details":{"reason":"max_output_tokens"}}})]);
        assert!(
            matches!(incomplete, Err(ProviderError::Incomplete { ref reason, .. }) if reason == "max_output_tokens")
        );
        let mut accumulator = Accumulator::new("m");
        assert!(matches!(
            accumulator.apply("{\"type\":"),
            Err(ProviderError::Stream(StreamBreak::MalformedEvent { .. }))
        ));
    }
}

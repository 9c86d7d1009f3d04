//! Serde shapes of the Responses API: the request body and the stream
//! events, and the conversions between them and the domain values of
//! [`super`]. Unknown event types and unknown fields are ignored.

use super::{EndpointKind, FunctionCall, Item, ModelRequest, ProviderError, ReplayItem, Role, RunOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Builds the JSON body of one streaming request.
pub(super) fn encode_request(
    model: &str,
    options: &RunOptions,
    endpoint: EndpointKind,
    request: &ModelRequest,
) -> Value {
    let official = endpoint != EndpointKind::Custom;
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": true,
            })
        })
        .collect();
    let mut body = serde_json::Map::new();
    body.insert("model".into(), json!(model));
    body.insert("instructions".into(), json!(request.instructions));
    body.insert("input".into(), Value::Array(request.input.iter().map(encode_item).collect()));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        body.insert("parallel_tool_calls".into(), json!(request.parallel_tool_calls));
    }
    body.insert("store".into(), json!(false));
    body.insert("stream".into(), json!(true));
    if options.reasoning_effort.is_some() || options.reasoning_summary.is_some() {
        let mut reasoning = serde_json::Map::new();
        if let Some(effort) = &options.reasoning_effort {
            reasoning.insert("effort".into(), json!(effort));
        }
        if let Some(summary) = &options.reasoning_summary {
            reasoning.insert("summary".into(), json!(summary));
        }
        body.insert("reasoning".into(), Value::Object(reasoning));
    }
    if let Some(tier) = &options.service_tier {
        body.insert("service_tier".into(), json!(tier));
    }
    if let Some(format) = &request.text_format {
        let mut schema = json!({"type": "json_schema", "name": format.name, "schema": format.schema, "strict": true});
        if let Some(description) = &format.description {
            schema["description"] = json!(description);
        }
        body.insert("text".into(), json!({ "format": schema }));
    }
    if official {
        // With store:false, reasoning can only be carried from one step to
        // the next as encrypted content.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        if let Some(key) = &options.prompt_cache_key {
            body.insert("prompt_cache_key".into(), json!(key));
        }
    }
    Value::Object(body)
}

fn encode_item(item: &Item) -> Value {
    match item {
        Item::Message { role: Role::Assistant, text } => json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }),
        Item::Message { role, text } => json!({
            "type": "message",
            "role": if *role == Role::Developer { "developer" } else { "user" },
            "content": [{"type": "input_text", "text": text}],
        }),
        Item::FunctionCall(call) => json!({
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }),
        Item::FunctionCallOutput { call_id, output } => json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": output,
        }),
        Item::Replay(ReplayItem(value)) => value.clone(),
    }
}

/// Turns a provider output item into a continuation item, or `None` when
/// it cannot be replayed: item ids are dropped (nothing is stored on the
/// provider's side), and reasoning without encrypted content is useless
/// to a stateless request.
pub(super) fn replay_item(mut item: Value) -> Option<Item> {
    let object = item.as_object_mut()?;
    object.remove("id");
    match object.get("type").and_then(Value::as_str)? {
        "reasoning" => {
            let encrypted = object.get("encrypted_content").and_then(Value::as_str).is_some_and(|s| !s.is_empty());
            encrypted.then_some(Item::Replay(ReplayItem(item)))
        }
        "message" | "function_call" => Some(Item::Replay(ReplayItem(item))),
        _ => None,
    }
}

/// The function call an output item makes, if it is one.
pub(super) fn function_call_of(item: &Value) -> Option<FunctionCall> {
    if item.get("type").and_then(Value::as_str) != Some("function_call") {
        return None;
    }
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let mut call_id = text("call_id");
    if call_id.is_empty() {
        call_id = text("id");
    }
    Some(FunctionCall { call_id, name: text("name"), arguments: text("arguments").trim().to_string() })
}

/// The concatenated `output_text` of a message item.
pub(super) fn message_text(item: &Value) -> Option<String> {
    if item.get("type").and_then(Value::as_str) != Some("message") {
        return None;
    }
    let parts = item.get("content")?.as_array()?;
    Some(
        parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
    )
}

/// One stream event; types this adapter does not use become `Other`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum StreamEvent {
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        #[serde(default)]
        output_index: u64,
        item: Value,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        #[serde(default)]
        output_index: u64,
        item: Value,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        #[serde(default)]
        output_index: u64,
        #[serde(default)]
        content_index: u64,
        #[serde(default)]
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        #[serde(default)]
        output_index: u64,
        #[serde(default)]
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        #[serde(default)]
        output_index: u64,
        #[serde(default)]
        arguments: String,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryDelta {
        #[serde(default)]
        delta: String,
    },
    #[serde(rename = "response.completed")]
    Completed { response: WireResponse },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: WireResponse },
    #[serde(rename = "response.failed")]
    Failed { response: WireResponse },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub output: Vec<Value>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<WireError>,
    #[serde(default)]
    pub incomplete_details: Option<WireIncomplete>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub input_tokens_details: Option<WireInputDetails>,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub output_tokens_details: Option<WireOutputDetails>,
    #[serde(default)]
    pub total_tokens: u64,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct WireInputDetails {
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct WireOutputDetails {
    #[serde(default)]
    pub reasoning_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireError {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireIncomplete {
    #[serde(default)]
    pub reason: Option<String>,
}

/// An HTTP error answer, with the provider's message unwrapped from its
/// `{"error": {"message": ...}}` body.
pub(super) fn http_error(status: u16, model: &str, body: &str) -> ProviderError {
    #[derive(Deserialize)]
    struct Envelope {
        error: EnvelopeError,
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum EnvelopeError {
        Object { message: Option<String>, code: Option<Value> },
        Text(String),
    }
    let message = match serde_json::from_str::<Envelope>(body) {
        Ok(Envelope { error: EnvelopeError::Object { message: Some(message), .. } }) => message,
        Ok(Envelope { error: EnvelopeError::Object { code: Some(code), .. } }) => format!("error code {code}"),
        Ok(Envelope { error: EnvelopeError::Text(text) }) => text,
        _ => {
            let text: String = body.trim().chars().take(2000).collect();
            if text.is_empty() { "no error message".to_string() } else { text }
        }
    };
    let hint = match status {
        401 | 403 => "\nhint: check OPENAI_API_KEY, or sign in again with the Codex CLI",
        404 => "\nhint: check the model name (--model, OPENAI_MODEL) and the base URL",
        429 => "\nhint: the provider is rate limiting or out of quota; wait and retry",
        _ => "",
    };
    ProviderError::Http { status, model: model.to_string(), message: message.trim().to_string(), hint }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_unwrapped_to_their_message() {
        let error = http_error(401, "m", r#"{"error":{"message":"Incorrect API key provided","type":"x"}}"#);
        let text = error.to_string();
        assert!(text.contains("HTTP 401") && text.contains("Incorrect API key provided") && text.contains("hint:"));
        assert!(!text.contains("\"type\""), "{text}");
        assert!(http_error(500, "m", "upstream exploded").to_string().contains("upstream exploded"));
        assert!(http_error(400, "m", r#"{"error":"bad thing"}"#).to_string().contains("bad thing"));
    }

    #[test]
    fn unknown_events_are_ignored_not_errors() {
        let event: StreamEvent = serde_json::from_str(r#"{"type":"response.future_thing","x":1}"#).unwrap();
        assert!(matches!(event, StreamEvent::Other));
    }

    #[test]
    fn replay_drops_ids_and_unencrypted_reasoning() {
        let call = replay_item(json!({"type":"function_call","id":"fc_1","call_id":"c","name":"n","arguments":"{}"}));
        let Some(Item::Replay(ReplayItem(value))) = call else { panic!("function calls replay") };
        assert!(value.get("id").is_none());
        assert!(replay_item(json!({"type":"reasoning","id":"rs","summary":[]})).is_none());
        assert!(replay_item(json!({"type":"reasoning","summary":[],"encrypted_content":"e"})).is_some());
        assert!(replay_item(json!({"type":"web_search_call"})).is_none());
    }
}

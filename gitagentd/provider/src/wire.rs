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
    let cache_key = options.prompt_cache_key.as_deref().filter(|_| official);
    let explicit_cache = cache_key.is_some()
        && endpoint == EndpointKind::OpenAi
        && explicit_cache_model(model)
        && request.input.iter().any(is_breakpoint);
    let mut tools: Vec<Value> = request
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
    if request.web_search.is_some() {
        tools.push(json!({"type": "web_search"}));
    }
    let mut body = serde_json::Map::new();
    body.insert("model".into(), json!(model));
    body.insert("instructions".into(), json!(request.instructions));
    let input = request.input.iter().map(|item| encode_item(item, explicit_cache)).collect();
    body.insert("input".into(), Value::Array(input));
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
    // With store:false, reasoning can only be carried from one step to the
    // next as encrypted content; hosted search also asks for its sources.
    if let Some(search) = &request.web_search {
        body.insert("include".into(), json!(["web_search_call.action.sources", "reasoning.encrypted_content"]));
        if let Some(cap) = search.max_calls {
            body.insert("max_tool_calls".into(), json!(cap));
        }
    } else if official {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(key) = cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if explicit_cache {
        body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
    }
    Value::Object(body)
}

/// Whether `model` belongs to the GPT-5.6 family, whose OpenAI API
/// requests take explicit prompt-cache breakpoints.
fn explicit_cache_model(model: &str) -> bool {
    model == "gpt-5.6" || model.starts_with("gpt-5.6-")
}

fn is_breakpoint(item: &Item) -> bool {
    matches!(item, Item::Message { role, text, cache_breakpoint: true } if *role != Role::Assistant && !text.is_empty())
}

pub(super) fn encode_item(item: &Item, explicit_cache: bool) -> Value {
    match item {
        Item::Message { role: Role::Assistant, text, .. } => json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }),
        Item::Message { role, text, .. } => {
            let mut part = json!({"type": "input_text", "text": text});
            if explicit_cache && is_breakpoint(item) {
                part["prompt_cache_breakpoint"] = json!({"mode": "explicit"});
            }
            json!({
                "type": "message",
                "role": if *role == Role::Developer { "developer" } else { "user" },
                "content": [part],
            })
        }
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

/// The item [`encode_item`] (with breakpoints) encoded as `value`:
/// developer and user messages and call outputs get their domain values
/// back; everything else replays exactly as stored, which encodes to the
/// same wire JSON.
pub(super) fn decode_item(value: &Value) -> Option<Item> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let role = match value.get("role").and_then(Value::as_str) {
        Some("developer") => Some(Role::Developer),
        Some("user") => Some(Role::User),
        _ => None,
    };
    match (value.get("type").and_then(Value::as_str)?, role) {
        ("message", Some(role)) => {
            let part = value.get("content")?.get(0)?;
            let text = part.get("text")?.as_str()?.to_string();
            let cache_breakpoint = part.get("prompt_cache_breakpoint").is_some();
            Some(Item::Message { role, text, cache_breakpoint })
        }
        ("function_call_output", _) => {
            Some(Item::FunctionCallOutput { call_id: text("call_id")?, output: text("output")? })
        }
        _ => Some(Item::Replay(ReplayItem(value.clone()))),
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
        "message" | "function_call" | "web_search_call" => Some(Item::Replay(ReplayItem(item))),
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
        _ => super::readable_error_body(body),
    };
    let message = super::error_body::clean(&message);
    let hint = match status {
        401 | 403 => "\nhint: check OPENAI_API_KEY, or sign in again with the Codex CLI",
        404 => "\nhint: check the model name (--model, OPENAI_MODEL) and the base URL",
        429 => "\nhint: the provider is rate limiting or out of quota; wait and retry",
        _ => "",
    };
    ProviderError::Http { status, model: model.to_string(), message: message.trim().to_string(), hint }
}

/// Why a failed request was a rejection of hosted web search, when the
/// request offered it and the answer says so: the tool, one of its
/// includes or its call cap named as unsupported. Authentication,
/// authorization, rate limits and server errors never are. The ChatGPT
/// backend answers an unsupported `max_tool_calls` with an empty HTTP 400,
/// which counts only when a ChatGPT-authenticated request carried a
/// positive cap.
pub(super) fn hosted_search_rejection(
    status: u16,
    body: &str,
    request: &Value,
    chatgpt_auth: bool,
) -> Option<&'static str> {
    if !(400..500).contains(&status) || matches!(status, 401 | 403 | 429) {
        return None;
    }
    let offered =
        request["tools"].as_array().is_some_and(|tools| tools.iter().any(|tool| tool["type"] == "web_search"));
    if !offered {
        return None;
    }
    let capped = request["max_tool_calls"].as_u64().is_some_and(|cap| cap > 0);
    if body.trim().is_empty() {
        return (status == 400 && chatgpt_auth && capped).then_some("hosted tool call limit rejected");
    }
    let error = serde_json::from_str::<Value>(body).ok()?.get("error").cloned()?;
    let field = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or_default().to_ascii_lowercase();
    let (param, code, message) = (field("param"), field("code"), field("message"));
    let tool_param = param == "tools" || param.ends_with(".type");
    let include_param = param == "include" || param.starts_with("include[") || param.starts_with("include.");
    const INCLUDES: [&str; 2] = ["web_search_call.action.sources", "reasoning.encrypted_content"];
    if param.contains("web_search")
        || code.contains("web_search")
        || (tool_param && (rejects(&message, "web_search") || rejects(&message, "web search")))
    {
        Some("web_search rejected")
    } else if INCLUDES.iter().any(|include| param.contains(include) || code.contains(include))
        || (include_param
            && (INCLUDES.iter().any(|include| rejects(&message, include)) || rejects(&message, "web search sources")))
    {
        Some("web_search metadata include rejected")
    } else if param == "max_tool_calls"
        || code.contains("max_tool_calls")
        || (param.is_empty() && rejects(&message, "max_tool_calls"))
    {
        Some("hosted tool call limit rejected")
    } else {
        None
    }
}

/// Whether `message` names `subject` as something refused.
fn rejects(message: &str, subject: &str) -> bool {
    const MARKERS: [&str; 8] = [
        "unsupported",
        "not supported",
        "unknown",
        "unrecognized",
        "invalid",
        "rejected",
        "not allowed",
        "unavailable",
    ];
    message.contains(subject) && MARKERS.iter().any(|marker| message.contains(marker))
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
    fn hosted_search_rejections_are_recognized_narrowly() {
        let capped = json!({"tools": [{"type": "web_search"}], "max_tool_calls": 4});
        let uncapped = json!({"tools": [{"type": "web_search"}]});
        let without = json!({"tools": [{"type": "function", "name": "grep"}], "max_tool_calls": 4});
        let body = |param: &str, code: &str, message: &str| {
            json!({"error": {"param": param, "code": code, "message": message}}).to_string()
        };
        let tool = body("tools[0].type", "unsupported_value", "web_search is not supported");
        assert_eq!(hosted_search_rejection(400, &tool, &capped, false), Some("web_search rejected"));
        assert_eq!(hosted_search_rejection(400, &tool, &without, false), None, "not offered, not recognized");
        for status in [401, 403, 429, 500] {
            assert_eq!(hosted_search_rejection(status, &tool, &capped, false), None, "{status} stays terminal");
        }
        let include = body("include[0]", "", "Unsupported include: web_search_call.action.sources");
        assert_eq!(
            hosted_search_rejection(400, &include, &capped, false),
            Some("web_search metadata include rejected")
        );
        let cap = body("max_tool_calls", "", "unknown parameter");
        assert_eq!(hosted_search_rejection(400, &cap, &capped, false), Some("hosted tool call limit rejected"));
        let unrelated = body("input", "invalid_value", "input is too long");
        assert_eq!(hosted_search_rejection(400, &unrelated, &capped, false), None);
        assert_eq!(hosted_search_rejection(400, "not json", &capped, false), None);

        // The ChatGPT empty 400: only for plan auth with a positive cap.
        assert_eq!(hosted_search_rejection(400, " \n", &capped, true), Some("hosted tool call limit rejected"));
        assert_eq!(hosted_search_rejection(400, "", &uncapped, true), None);
        assert_eq!(hosted_search_rejection(400, "", &capped, false), None);
        assert_eq!(hosted_search_rejection(404, "", &capped, true), None);
    }

    #[test]
    fn stored_items_read_back_to_the_same_wire_json() {
        let items = vec![
            Item::developer("policy"),
            Item::user("task").with_cache_breakpoint(),
            replay_item(json!({"type":"reasoning","summary":[],"encrypted_content":"e"})).unwrap(),
            replay_item(json!({"type":"web_search_call","status":"completed","action":{"type":"search"}})).unwrap(),
            replay_item(json!({"type":"function_call","call_id":"c","name":"n","arguments":"{}"})).unwrap(),
            Item::FunctionCallOutput { call_id: "c".into(), output: "{}".into() },
            Item::assistant("done"),
        ];
        let stored = crate::items_to_json(&items);
        let back = crate::items_from_json(&stored).expect("readable");
        assert_eq!(crate::items_to_json(&back), stored);
        assert!(matches!(back[1], Item::Message { cache_breakpoint: true, .. }));
        assert_eq!(back[4].function_call().map(|call| call.call_id), Some("c".to_string()));
        assert!(crate::items_from_json(&[json!({"role":"user"})]).is_none());
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
        assert!(replay_item(json!({"type":"web_search_call","id":"ws","status":"completed"})).is_some());
        assert!(replay_item(json!({"type":"image_generation_call"})).is_none());
    }
}

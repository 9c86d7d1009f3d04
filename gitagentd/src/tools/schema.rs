//! Builders of strict JSON schemas for tool arguments: objects with
//! `additionalProperties: false` and every property required, as strict
//! function calling demands. An optional argument is required but
//! nullable; `null` means its default.

use serde_json::{Map, Value, json};

/// An object schema with these properties, all required.
pub fn object(properties: &[(&str, Value)]) -> Value {
    let mut map = Map::new();
    for (name, schema) in properties {
        map.insert((*name).to_string(), schema.clone());
    }
    let required: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
    json!({"type": "object", "properties": map, "required": required, "additionalProperties": false})
}

pub fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

pub fn string_array(description: &str) -> Value {
    json!({"type": "array", "description": description, "items": {"type": "string"}})
}

pub fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

pub fn integer(description: &str, minimum: u64, maximum: u64) -> Value {
    json!({"type": "integer", "description": description, "minimum": minimum, "maximum": maximum})
}

pub fn one_of(description: &str, values: &[&str]) -> Value {
    json!({"type": "string", "description": description, "enum": values})
}

/// `schema` that also accepts `null` (meaning the default).
pub fn nullable(schema: Value) -> Value {
    let mut schema = schema;
    if let Some(kind) = schema.get("type").cloned() {
        schema["type"] = json!([kind, "null"]);
    }
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut) {
        values.push(Value::Null);
    }
    schema
}

/// The optional byte and line caps shared by text-returning tools.
pub fn caps() -> [(&'static str, Value); 2] {
    [
        ("max_bytes", nullable(integer("Maximum bytes to return; null for 32768.", 1, 65536))),
        ("max_lines", nullable(integer("Maximum lines to return; null for 800.", 1, 2000))),
    ]
}

/// The byte and line caps to apply.
pub fn resolve_caps(max_bytes: Option<u64>, max_lines: Option<u64>) -> (usize, usize) {
    let bytes = max_bytes.unwrap_or(32 * 1024).clamp(1, 65536);
    let lines = max_lines.unwrap_or(800).clamp(1, 2000);
    (usize::try_from(bytes).unwrap_or(65536), usize::try_from(lines).unwrap_or(2000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_strict_and_require_everything() {
        let schema = object(&[("path", string("p")), ("limit", nullable(integer("l", 1, 10)))]);
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(schema["required"], json!(["path", "limit"]));
        assert_eq!(schema["properties"]["limit"]["type"], json!(["integer", "null"]));
        assert_eq!(schema["properties"]["limit"]["maximum"], json!(10));
    }
}

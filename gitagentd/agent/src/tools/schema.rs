//! Strict JSON schemas for tool arguments, derived from the serde types
//! the tools parse (with `schemars`), so a schema cannot drift from the
//! type: doc comments are the descriptions, `#[schemars(range(..))]` and
//! `length(..)` the bounds. Strict function calling then needs objects with
//! `additionalProperties: false` and every property required; an optional
//! argument stays required but nullable, and `null` means its default.
//! Also the byte and line caps text-returning tools share.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// Keys the Responses API's strict mode does not accept, or that only
/// describe the Rust type (`format: uint64`, the type's `title`).
const UNSUPPORTED_KEYS: [&str; 4] = ["$schema", "title", "format", "default"];

/// The strict schema of the arguments `A` parses. Properties are listed
/// as `required` in the field order of `A`, as serde declares them.
pub fn strict<A: JsonSchema + DeserializeOwned>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    make_strict(&mut schema, serde_field_order::<A>());
    schema
}

/// Turns a generated object schema into a strict one: every property
/// required (in `order`, then any others by name), optional ones nullable,
/// no unknown properties, and no keys strict mode refuses.
fn make_strict(schema: &mut Value, order: &[&str]) {
    strip_unsupported(schema);
    let Some(object) = schema.as_object_mut() else { return };
    object.remove("description");
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let mut properties = match object.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => Map::new(),
    };
    for (name, property) in &mut properties {
        if !required.contains(name) {
            make_nullable(property);
        }
    }
    let mut names: Vec<&str> = order.iter().copied().filter(|name| properties.contains_key(*name)).collect();
    let mut rest: Vec<&str> = properties.keys().map(String::as_str).filter(|name| !names.contains(name)).collect();
    rest.sort_unstable();
    names.extend(rest);
    let names = json!(names);
    object.insert("type".into(), json!("object"));
    object.insert("required".into(), names);
    object.insert("properties".into(), Value::Object(properties));
    object.insert("additionalProperties".into(), json!(false));
}

/// `schema` that also accepts `null`, in its type and in its values.
fn make_nullable(schema: &mut Value) {
    match schema.get_mut("type") {
        Some(Value::Array(types)) if !types.contains(&json!("null")) => types.push(json!("null")),
        Some(kind @ Value::String(_)) => *kind = json!([kind.take(), "null"]),
        _ => {}
    }
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut)
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

fn strip_unsupported(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            for key in UNSUPPORTED_KEYS {
                object.remove(key);
            }
            for (key, value) in object.iter_mut() {
                // Property names are data, not keywords.
                if key == "properties" {
                    value.as_object_mut().into_iter().flat_map(|map| map.values_mut()).for_each(strip_unsupported);
                } else {
                    strip_unsupported(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_unsupported),
        _ => {}
    }
}

/// The field names of `A` in declaration order, renames applied: a
/// derived `Deserialize` hands them to `deserialize_struct`, which this
/// deserializer records and then declines. Empty for non-struct types.
fn serde_field_order<A: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{Error, Visitor, value};

    struct FieldNames(&'static [&'static str]);

    impl<'de> serde::Deserializer<'de> for &mut FieldNames {
        type Error = value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(value::Error::custom("only the field names are wanted"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(value::Error::custom("only the field names are wanted"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut names = FieldNames(&[]);
    let _ = A::deserialize(&mut names);
    names.0
}

/// The arguments of a tool that takes none.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// The schema of a `source` argument: where to read, `null` for the
/// command's default.
pub fn source(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "null"], "enum": ["worktree", "index", "head", null]})
}

/// The arguments of a tool that returns capped text.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapArgs {
    /// Maximum bytes to return; null for 32768.
    #[schemars(range(min = 1, max = 65536))]
    pub max_bytes: Option<u64>,
    /// Maximum lines to return; null for 800.
    #[schemars(range(min = 1, max = 2000))]
    pub max_lines: Option<u64>,
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
    use serde::Deserialize;

    /// Sample arguments.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        /// The path.
        path: String,
        /// A limit; null for 10.
        #[schemars(range(min = 1, max = 10))]
        limit: Option<u64>,
        /// The kind.
        #[serde(rename = "type")]
        #[schemars(extend("enum" = ["a", "b"]))]
        kind: Option<String>,
        /// The offset.
        #[schemars(range(min = 0))]
        offset: i64,
    }

    #[test]
    fn derived_schemas_are_strict_and_keep_the_field_order() {
        let schema = strict::<Sample>();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["path", "limit", "type", "offset"],
                "properties": {
                    "path": {"type": "string", "description": "The path."},
                    "limit": {"type": ["integer", "null"], "description": "A limit; null for 10.", "minimum": 1, "maximum": 10},
                    "type": {"type": ["string", "null"], "description": "The kind.", "enum": ["a", "b", null]},
                    "offset": {"type": "integer", "description": "The offset.", "minimum": 0},
                },
            })
        );
    }

    #[test]
    fn argument_free_tools_get_an_empty_strict_object() {
        assert_eq!(
            strict::<NoArguments>(),
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }
}

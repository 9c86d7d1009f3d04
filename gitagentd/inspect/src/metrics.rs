//! What an inspection consumed, for the post-inspection hook payload
//! (`metrics`, schema version 2): provider usage summed over every
//! completed response (the loop's own total, which counts schema repair
//! and forced finalization), the distinct skills read, and the local tool
//! calls per name.
//!
//! The collector learns tools and skills from the loop's trace events
//! (`tool-call`, `tool-output`), so any conversation that traces through
//! the same sink is counted without further wiring. It keeps counters,
//! tool names and skill names, never arguments or outputs.

use gitagent_runtime::trace::{Event, Value};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Token counters of one or more provider responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UsageMetric {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_input_tokens: u64,
    /// `input_tokens - cached_input_tokens`, never negative.
    pub uncached_input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    pub total_tokens: u64,
}

impl From<&gitagent_provider::Usage> for UsageMetric {
    fn from(usage: &gitagent_provider::Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            cache_write_input_tokens: usage.cache_write_input_tokens,
            uncached_input_tokens: usage.input_tokens.saturating_sub(usage.cached_input_tokens),
            output_tokens: usage.output_tokens,
            reasoning_tokens: usage.reasoning_tokens,
            total_tokens: usage.total_tokens,
        }
    }
}

/// How often one local tool completed (or returned a recoverable error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCallMetric {
    pub name: String,
    pub count: u64,
}

/// One child conversation created by branch fan-out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BranchMetric {
    pub id: String,
    pub parent_id: String,
    pub model: String,
    pub reasoning_effort: String,
    pub usage: UsageMetric,
}

/// The `metrics` object of the hook payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InspectionMetrics {
    pub usage: UsageMetric,
    pub used_skills: Vec<String>,
    pub tool_calls: Vec<ToolCallMetric>,
    pub branches_created: u64,
    pub branches: Vec<BranchMetric>,
}

/// Accumulates [`InspectionMetrics`] from trace events; shared by every
/// conversation of one inspection.
#[derive(Debug, Default)]
pub struct MetricsCollector {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    tools: BTreeMap<String, u64>,
    /// Skill locators of `skills_read` calls not answered yet, by call id.
    pending_skills: HashMap<String, String>,
    skills: Vec<String>,
}

impl MetricsCollector {
    pub fn observe(&self, event: &Event) {
        let Ok(mut state) = self.state.lock() else { return };
        match event.kind.as_str() {
            "tool-call" if text(event, "name") == SKILLS_READ => {
                let locator = serde_json::from_str::<serde_json::Value>(text(event, "arguments"))
                    .ok()
                    .and_then(|arguments| arguments["locator"].as_str().map(str::to_string));
                if let Some(locator) = locator {
                    state.pending_skills.insert(text(event, "call_id").to_string(), locator);
                }
            }
            // An accepted branch call is a local control call.
            kind if kind == super::branch::FANOUT_EVENT => {
                *state.tools.entry(super::branch::BRANCH.to_string()).or_default() += 1;
            }
            "tool-output" => {
                let name = text(event, "name").to_string();
                let locator = state.pending_skills.remove(text(event, "call_id"));
                // A call to a tool the request does not offer is no local
                // model tool call.
                if name.is_empty() || matches!(field(event, "unknown_tool"), Some(Value::Bool(true))) {
                    return;
                }
                *state.tools.entry(name).or_default() += 1;
                if let Some(skill) = locator.as_deref().and_then(skill_name)
                    && succeeded(text(event, "content"))
                    && !state.skills.iter().any(|known| known == skill)
                {
                    state.skills.push(skill.to_string());
                }
            }
            _ => {}
        }
    }

    /// The metrics so far, with `usage` summed over every conversation and
    /// the branch conversations fan-out created.
    pub fn snapshot(&self, usage: &gitagent_provider::Usage, branches: Vec<BranchMetric>) -> InspectionMetrics {
        let usage = UsageMetric::from(usage);
        let branches_created = branches.len() as u64;
        let Ok(state) = self.state.lock() else {
            return InspectionMetrics { usage, branches_created, branches, ..InspectionMetrics::default() };
        };
        InspectionMetrics {
            usage,
            used_skills: state.skills.clone(),
            tool_calls: state
                .tools
                .iter()
                .map(|(name, count)| ToolCallMetric { name: name.clone(), count: *count })
                .collect(),
            branches_created,
            branches,
        }
    }
}

const SKILLS_READ: &str = "skills_read";

/// The skill a locator names: its leading segment (`go/references/x.md`
/// reads skill `go`).
fn skill_name(locator: &str) -> Option<&str> {
    let name = locator.trim().trim_start_matches('/').split('/').next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// Whether a tool output envelope reports success (`"ok": true`).
fn succeeded(envelope: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(envelope).is_ok_and(|value| value["ok"] == serde_json::Value::Bool(true))
}

fn field<'e>(event: &'e Event, key: &str) -> Option<&'e Value> {
    event.fields.iter().find(|(name, _)| name == key).map(|(_, value)| value)
}

fn text<'e>(event: &'e Event, key: &str) -> &'e str {
    match field(event, key) {
        Some(Value::Text(text)) => text,
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, id: &str, arguments: &str) -> Event {
        Event::new("tool-call").with("name", name).with("call_id", id).with("arguments", arguments)
    }

    fn output(name: &str, id: &str, ok: bool) -> Event {
        Event::new("tool-output").with("name", name).with("call_id", id).with("content", format!("{{\"ok\":{ok}}}"))
    }

    #[test]
    fn tools_and_skills_add_up_and_usage_derives_uncached() {
        let collector = MetricsCollector::default();
        collector.observe(&call("skills_read", "c1", r#"{"locator":"go/references/errors.md","range":""}"#));
        collector.observe(&call("read_file", "c2", "{}"));
        collector.observe(&call("skills_read", "c3", r#"{"locator":"missing","range":""}"#));
        collector.observe(&output("skills_read", "c1", true));
        collector.observe(&output("read_file", "c2", false));
        collector.observe(&output("skills_read", "c3", false));
        collector.observe(&call("skills_read", "c4", r#"{"locator":"go","range":""}"#));
        collector.observe(&output("skills_read", "c4", true));
        let usage = gitagent_provider::Usage {
            input_tokens: 150,
            cached_input_tokens: 30,
            cache_write_input_tokens: 4,
            output_tokens: 15,
            reasoning_tokens: 2,
            total_tokens: 165,
        };
        collector.observe(&Event::new("branch.fanout").with("parent", "root"));
        let branch = BranchMetric {
            id: "b1".into(),
            parent_id: "root".into(),
            model: "m".into(),
            reasoning_effort: "low".into(),
            usage: UsageMetric::default(),
        };
        let metrics = collector.snapshot(&usage, vec![branch.clone()]);
        assert_eq!(
            metrics.usage,
            UsageMetric {
                input_tokens: 150,
                cached_input_tokens: 30,
                cache_write_input_tokens: 4,
                uncached_input_tokens: 120,
                output_tokens: 15,
                reasoning_tokens: 2,
                total_tokens: 165,
            }
        );
        assert_eq!(metrics.used_skills, ["go"], "a failed read records nothing, a skill appears once");
        assert_eq!(
            metrics.tool_calls,
            [
                ToolCallMetric { name: "branch".into(), count: 1 },
                ToolCallMetric { name: "read_file".into(), count: 1 },
                ToolCallMetric { name: "skills_read".into(), count: 3 }
            ]
        );
        assert_eq!((metrics.branches_created, metrics.branches), (1, vec![branch]));
    }
}

//! Request assembly in the spec's seven layers:
//!
//! 1. top-level `instructions`: the task's system prompt, then the loop's
//!    own rules and the list of tools;
//! 2. a developer message: the read-only tool policy;
//! 3. a developer message: the environment context;
//! 4. a developer message: `skills-mgr list` output, verbatim (optional);
//! 5. a developer message: the project guidance block (optional);
//! 6. the task's user prompt;
//! 7. the strict function tools.

use super::Limits;
use crate::tools::ToolRegistry;
use gitagent_provider::{HostedSearch, Item, TextFormat};
use serde_json::json;

/// Layers 1-6 as text; an empty optional layer is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    pub system: String,
    pub tool_policy: String,
    pub environment: String,
    pub skills: String,
    pub guidance: String,
    /// Developer messages a task adds after the guidance, before its user
    /// prompt (explore's query target).
    pub task_instructions: Vec<String>,
    pub user: String,
}

impl Layers {
    /// The input items of layers 2-6.
    pub fn items(&self) -> Vec<Item> {
        let mut items: Vec<Item> = [&self.tool_policy, &self.environment, &self.skills, &self.guidance]
            .into_iter()
            .filter(|text| !text.trim().is_empty())
            .map(|text| Item::developer(text.clone()))
            .collect();
        items.extend(self.task_instructions.iter().map(|text| Item::developer(text.clone())));
        items.push(Item::user(self.user.clone()));
        items
    }
}

/// Everything the loop needs for one task.
#[derive(Clone)]
pub struct AgentTask {
    pub layers: Layers,
    /// Layer 7.
    pub tools: ToolRegistry,
    /// A strict JSON schema for the final text, when the task needs one.
    pub text_format: Option<TextFormat>,
    /// Whether the model may batch independent calls.
    pub parallel_tool_calls: bool,
    pub limits: Limits,
    /// Provider-hosted web search on every normal step; `None` for
    /// commands that do not offer it.
    pub web_search: Option<HostedSearch>,
    /// A conversation to continue (a follow-up's replayed input plus its
    /// new messages) instead of layers 2-6; empty for a fresh task.
    pub history: Vec<Item>,
}

/// Layer 1: the system prompt followed by the loop's rules and tools.
pub fn instructions(task: &AgentTask) -> Result<String, crate::prompt::PromptError> {
    let system = task.layers.system.trim();
    let rules = if task.tools.is_empty() && task.web_search.is_none() {
        include_str!("prompts/no-tools.md").trim().to_string()
    } else {
        let tools: Vec<_> = task
            .tools
            .specs()
            .into_iter()
            .map(|spec| json!({"name": spec.name, "description": spec.description}))
            .collect();
        let read_file = task.tools.get("read_file").is_some();
        crate::prompt::render(
            "loop",
            include_str!("prompts/loop.md.j2"),
            json!({"tools": tools, "read_file": read_file, "web_search": task.web_search.is_some()}),
        )?
    };
    Ok(if system.is_empty() { rules } else { format!("{system}\n\n{rules}") })
}

/// The per-step budget note appended before each request.
pub fn budget_status(step: u32, limits: Limits, tools_used: u32) -> Result<String, crate::prompt::PromptError> {
    crate::prompt::render(
        "budget-status",
        include_str!("prompts/budget-status.md.j2"),
        json!({
            "step": step,
            "max_steps": limits.max_steps,
            "tools_left": limits.max_tool_calls.saturating_sub(tools_used),
            "max_tools": limits.max_tool_calls,
        }),
    )
}

//! `skills_read`: reads a skill or one of its reference files through
//! `skills-mgr get`, offered only when `skills-mgr` is on the caller's PATH.

use super::schema;
use super::{Tool, ToolError, ToolFuture, ToolOutput, parse_arguments};
use crate::skills::{SkillsError, SkillsManager};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The skill tools for `manager`; none when `skills-mgr` is absent.
pub fn tools(manager: Option<&SkillsManager>) -> Vec<Arc<dyn Tool>> {
    manager.map(|manager| Arc::new(SkillsRead(manager.clone())) as Arc<dyn Tool>).into_iter().collect()
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Skill name or skill-relative reference locator.
    locator: String,
    /// Inclusive start:end line range, or an empty string for the whole file.
    range: String,
}

struct SkillsRead(SkillsManager);

impl Tool for SkillsRead {
    fn name(&self) -> &'static str {
        "skills_read"
    }
    fn description(&self) -> &'static str {
        "Read an enabled skill or its reference file through skills-mgr; an empty range reads the whole file."
    }
    fn parameters(&self) -> Value {
        schema::strict::<Args>()
    }
    fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
        let manager = self.0.clone();
        let args = parse_arguments::<Args>("skills_read", arguments);
        Box::pin(async move {
            let args = args?;
            match manager.get(&args.locator, &args.range, &cancel).await {
                Ok(output) => {
                    Ok(ToolOutput::new(json!({"stdout": output.stdout, "stderr": output.stderr}), output.truncated))
                }
                Err(SkillsError::Cancelled) => Err(ToolError::Cancelled),
                Err(error) => Err(ToolError::Recoverable(error.to_string())),
            }
        })
    }
}

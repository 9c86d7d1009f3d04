//! Branch fan-out of review and simplify: the policy per inspection depth,
//! the ordinary `branch_help` tool (the model catalog, the
//! difficulty-to-effort mapping and the values allowed for the command),
//! the terminal `branch` function, the structural check of its arguments,
//! the function result each child continues from, and the mechanical
//! merge of validated leaf reports into one report.
//!
//! Scopes are natural-language reporting responsibilities and path hints
//! only speed up discovery: nothing here restricts what a child may read
//! or cite, and the merged report goes through the ordinary validators.

use super::report::{self, Finding, Opportunity, ReviewReport, SimplifyReport};
use git_agent_shared::cli::Depth;
use git_agent_shared::task_record::TaskCommand;
use gitagent_agent::tools::{Tool, ToolFuture, ToolOutput, schema};
use gitagent_provider::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const BRANCH: &str = "branch";
pub const BRANCH_HELP: &str = "branch_help";
/// The trace event of an accepted branch call; metrics count it as one
/// `branch` call.
pub const FANOUT_EVENT: &str = "branch.fanout";
/// What a model may choose instead of a catalog value.
pub const INHERIT: &str = "inherit";
const MODELS: [(&str, &str); 3] = [
    (
        "gpt-5.6-sol",
        "Defect review, correctness, security, reliability, performance, concurrency, lifecycle, and invariant-heavy analysis.",
    ),
    (
        "gpt-5.6-terra",
        "Behavior-preserving simplification, reuse, clarity, efficiency, overengineering, and redundant-state analysis.",
    ),
    ("gpt-5.6-luna", "General or mixed inspection."),
];
const EFFORTS: [(&str, &str); 4] = [
    ("Local, direct, or mechanical.", "low"),
    ("Cross-file, caller/test, ordinary correctness, or structural reuse.", "medium"),
    ("Security, concurrency, lifecycle, data integrity, state machine, or cross-boundary invariant.", "high"),
    ("Exceptional cryptographic or adversarial multi-boundary analysis.", "xhigh"),
];
const MAX_SCOPE_BYTES: usize = 2048;
const MAX_SCOPE_LINES: usize = 20;
const BRANCH_DESCRIPTION: &str = "Fork this large, independently partitionable inspection into child conversations and permanently retire this conversation. Submit all immediate children together. Give each child a distinct natural-language reporting responsibility. Path hints accelerate discovery but never restrict inspection or evidence. Do not branch for repeated opinions, duplicate work, higher effort alone, or work this conversation can finish. Inherit model and effort unless the branch_help catalog and scope difficulty justify an override.";

/// How far and how wide one inspection may branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The deepest zero-based conversation depth.
    pub max_depth: u32,
    /// Immediate children of one branch call.
    pub max_children: usize,
}

impl Policy {
    pub fn of(depth: Depth) -> Self {
        match depth {
            Depth::Fast => Self { max_depth: 1, max_children: 2 },
            Depth::Balanced => Self { max_depth: 1, max_children: 3 },
            Depth::Thorough => Self { max_depth: 2, max_children: 4 },
        }
    }

    /// Whether a conversation at `depth` may still branch.
    pub fn allows(&self, depth: u32) -> bool {
        depth < self.max_depth
    }
}

/// The reasoning efforts a child of `command` may select: simplify never
/// selects `xhigh`.
fn efforts(command: TaskCommand) -> Vec<&'static str> {
    let all = EFFORTS.iter().map(|(_, effort)| *effort);
    match command {
        TaskCommand::Review => all.collect(),
        TaskCommand::Simplify => all.filter(|effort| *effort != "xhigh").collect(),
    }
}

/// `branch_help`: an ordinary, argument-free local tool (one budget unit)
/// whose result is the catalog `branch` accepts.
pub struct BranchHelp(pub TaskCommand);

impl Tool for BranchHelp {
    fn name(&self) -> &'static str {
        BRANCH_HELP
    }
    fn description(&self) -> &'static str {
        "Use before deciding to use `branch`"
    }
    fn parameters(&self) -> Value {
        schema::strict::<schema::NoArguments>()
    }
    fn call(&self, arguments: &str, _cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
        let parsed = gitagent_agent::tools::parse_arguments::<schema::NoArguments>(BRANCH_HELP, arguments);
        let command = self.0;
        Box::pin(async move {
            parsed?;
            Ok(ToolOutput::new(help(command), false))
        })
    }
}

/// The `branch_help` result for `command`.
pub fn help(command: TaskCommand) -> Value {
    let models: Vec<Value> =
        MODELS.iter().map(|(model, jobs)| json!({"model": model, "suitable_jobs": jobs})).collect();
    let mapping: Vec<Value> = EFFORTS
        .iter()
        .map(|(difficulty, effort)| json!({"scope_difficulty": difficulty, "reasoning_effort": effort}))
        .collect();
    let allowed_models: Vec<&str> = std::iter::once(INHERIT).chain(MODELS.iter().map(|(model, _)| *model)).collect();
    let allowed_efforts: Vec<&str> = std::iter::once(INHERIT).chain(efforts(command)).collect();
    json!({
        "models": models,
        "reasoning_effort_mapping": mapping,
        "allowed_models": allowed_models,
        "allowed_reasoning_efforts": allowed_efforts,
    })
}

/// The strict terminal `branch` function of `command` under `policy`.
pub fn spec(command: TaskCommand, policy: Policy) -> ToolSpec {
    let models: Vec<&str> = std::iter::once(INHERIT).chain(MODELS.iter().map(|(model, _)| *model)).collect();
    let efforts: Vec<&str> = std::iter::once(INHERIT).chain(efforts(command)).collect();
    let text = json!({"type": "string", "minLength": 1});
    let child = json!({
        "type": "object",
        "properties": {
            "scope": text,
            "path_hints": {"type": "array", "items": text},
            "model": {"type": "string", "enum": models},
            "reasoning_effort": {"type": "string", "enum": efforts},
        },
        "required": ["model", "path_hints", "reasoning_effort", "scope"],
        "additionalProperties": false,
    });
    ToolSpec {
        name: BRANCH.into(),
        description: BRANCH_DESCRIPTION.into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "branches": {"type": "array", "minItems": 2, "maxItems": policy.max_children, "items": child},
            },
            "required": ["branches"],
            "additionalProperties": false,
        }),
    }
}

/// One requested child, as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requested {
    pub scope: String,
    pub path_hints: Vec<String>,
    pub model: String,
    pub reasoning_effort: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    branches: Vec<Requested>,
}

/// Why a branch call was refused; it fails the calling conversation.
#[derive(Debug, thiserror::Error)]
pub enum BranchError {
    #[error("branch is unavailable at conversation depth {depth}")]
    DepthLimit { depth: u32 },
    /// serde's message is shown as it is (`{0}`), which ends the rendered
    /// chain there.
    #[error("invalid branch call: {0}")]
    Arguments(#[source] serde_json::Error),
    #[error("a branch call requires 2 to {max} children, not {count}")]
    Children { count: usize, max: usize },
    #[error("branches[{index}].scope {problem}")]
    Scope { index: usize, problem: &'static str },
    #[error("branches[{index}].path_hints[{hint}] must be a safe repository-relative path")]
    PathHint { index: usize, hint: usize },
    #[error("branches[{index}].model {model:?} is not in the branch_help catalog")]
    Model { index: usize, model: String },
    #[error("branches[{index}].reasoning_effort {effort:?} is not allowed for {command}")]
    Effort { index: usize, effort: String, command: &'static str },
}

/// Checks a branch call's arguments: the shape, the child count, a
/// nonempty bounded scope, catalog values and safe path hints. Nothing
/// semantic: overlap and coverage are the model's to avoid.
pub fn parse(command: TaskCommand, policy: Policy, depth: u32, arguments: &str) -> Result<Vec<Requested>, BranchError> {
    if !policy.allows(depth) {
        return Err(BranchError::DepthLimit { depth });
    }
    let parsed: Arguments = serde_json::from_str(arguments).map_err(BranchError::Arguments)?;
    let count = parsed.branches.len();
    if !(2..=policy.max_children).contains(&count) {
        return Err(BranchError::Children { count, max: policy.max_children });
    }
    let allowed = efforts(command);
    for (index, child) in parsed.branches.iter().enumerate() {
        if child.scope.trim().is_empty() {
            return Err(BranchError::Scope { index, problem: "is required" });
        }
        if child.scope.len() > MAX_SCOPE_BYTES {
            return Err(BranchError::Scope { index, problem: "exceeds 2048 bytes" });
        }
        if child.scope.lines().count() > MAX_SCOPE_LINES {
            return Err(BranchError::Scope { index, problem: "exceeds 20 lines" });
        }
        if let Some(hint) = child.path_hints.iter().position(|hint| !report::valid_evidence_path(hint)) {
            return Err(BranchError::PathHint { index, hint });
        }
        if child.model != INHERIT && !MODELS.iter().any(|(model, _)| *model == child.model) {
            return Err(BranchError::Model { index, model: child.model.clone() });
        }
        if child.reasoning_effort != INHERIT && !allowed.contains(&child.reasoning_effort.as_str()) {
            return Err(BranchError::Effort {
                index,
                effort: child.reasoning_effort.clone(),
                command: command.as_str(),
            });
        }
    }
    Ok(parsed.branches)
}

/// The function result a child continues from: its identity, its
/// responsibility, its hints and its siblings' responsibilities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChildResult<'a> {
    pub branch_id: &'a str,
    pub parent_branch_id: &'a str,
    pub message: String,
    pub path_hints: &'a [String],
    pub sibling_scopes: Vec<&'a str>,
    pub model: &'a str,
    pub reasoning_effort: &'a str,
    pub depth: u32,
}

/// One validated terminal report and the responsibility it covers (empty
/// for an unbranched root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafReport {
    pub scope: String,
    pub text: String,
}

/// Why the leaves could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("a branch report is not valid JSON: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("the merged branch report is invalid: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// Merges validated leaves mechanically: items concatenated in leaf order
/// (review findings then stably ordered by severity and the recommendation
/// recomputed), summaries labelled with their scopes. A single leaf is
/// returned as it is.
pub fn merge(command: TaskCommand, leaves: &[LeafReport]) -> Result<String, MergeError> {
    if let [only] = leaves {
        return Ok(only.text.clone());
    }
    let summary = |scope: &str, summary: &str| {
        if scope.is_empty() { summary.to_string() } else { format!("{scope}: {summary}") }
    };
    let text = match command {
        TaskCommand::Review => {
            let mut summaries = Vec::new();
            let mut findings: Vec<Finding> = Vec::new();
            for leaf in leaves {
                let report: ReviewReport = serde_json::from_str(&leaf.text)?;
                summaries.push(summary(&leaf.scope, &report.summary));
                findings.extend(report.findings);
            }
            findings.sort_by_key(|finding| std::cmp::Reverse(severity_rank(&finding.severity)));
            let recommendation = recommendation(&findings);
            serde_json::to_string(&ReviewReport { summary: summaries.join("\n"), recommendation, findings })?
        }
        TaskCommand::Simplify => {
            let mut summaries = Vec::new();
            let mut opportunities: Vec<Opportunity> = Vec::new();
            for leaf in leaves {
                let report: SimplifyReport = serde_json::from_str(&leaf.text)?;
                summaries.push(summary(&leaf.scope, &report.summary));
                opportunities.extend(report.opportunities);
            }
            serde_json::to_string(&SimplifyReport { summary: summaries.join("\n"), opportunities })?
        }
    };
    let errors = report::validate_text(command, &text);
    if errors.is_empty() { Ok(text) } else { Err(MergeError::Invalid(errors)) }
}

fn severity_rank(severity: &str) -> u8 {
    match severity {
        "CRITICAL" => 4,
        "HIGH" => 3,
        "MEDIUM" => 2,
        _ => 1,
    }
}

/// FIX with any CRITICAL or HIGH finding, COMMENT with only lower ones,
/// APPROVE with none.
fn recommendation(findings: &[Finding]) -> String {
    let highest = findings.iter().map(|finding| severity_rank(&finding.severity)).max();
    match highest {
        None => "APPROVE",
        Some(rank) if rank >= 3 => "FIX",
        Some(_) => "COMMENT",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(scope: &str, model: &str, effort: &str) -> Value {
        json!({"scope": scope, "path_hints": ["src"], "model": model, "reasoning_effort": effort})
    }

    fn call(children: Vec<Value>) -> String {
        json!({"branches": children}).to_string()
    }

    #[test]
    fn the_policy_follows_the_depth_table() {
        assert_eq!(Policy::of(Depth::Fast), Policy { max_depth: 1, max_children: 2 });
        assert_eq!(Policy::of(Depth::Balanced), Policy { max_depth: 1, max_children: 3 });
        assert_eq!(Policy::of(Depth::Thorough), Policy { max_depth: 2, max_children: 4 });
        assert!(Policy::of(Depth::Thorough).allows(1) && !Policy::of(Depth::Thorough).allows(2));
        assert!(Policy::of(Depth::Balanced).allows(0) && !Policy::of(Depth::Balanced).allows(1));
    }

    #[test]
    fn help_lists_the_catalog_and_the_command_s_allowed_values() {
        let review = help(TaskCommand::Review);
        assert_eq!(review["allowed_models"], json!(["inherit", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"]));
        assert_eq!(review["allowed_reasoning_efforts"], json!(["inherit", "low", "medium", "high", "xhigh"]));
        let simplify = help(TaskCommand::Simplify);
        assert_eq!(simplify["allowed_reasoning_efforts"], json!(["inherit", "low", "medium", "high"]));
        assert_eq!(simplify["reasoning_effort_mapping"].as_array().map(Vec::len), Some(4), "the whole mapping");
        let spec = spec(TaskCommand::Simplify, Policy::of(Depth::Fast));
        assert_eq!(spec.parameters["properties"]["branches"]["maxItems"], json!(2));
        let efforts = &spec.parameters["properties"]["branches"]["items"]["properties"]["reasoning_effort"]["enum"];
        assert_eq!(efforts, &json!(["inherit", "low", "medium", "high"]));
    }

    #[test]
    fn branch_calls_are_checked_structurally() {
        let fast = Policy::of(Depth::Fast);
        let two = call(vec![child("a", "inherit", "inherit"), child("b", "gpt-5.6-sol", "high")]);
        assert_eq!(parse(TaskCommand::Review, fast, 0, &two).map(|children| children.len()).ok(), Some(2));
        assert!(matches!(parse(TaskCommand::Review, fast, 1, &two), Err(BranchError::DepthLimit { depth: 1 })));
        let three = call(vec![child("a", "inherit", "inherit"); 3]);
        assert!(matches!(parse(TaskCommand::Review, fast, 0, &three), Err(BranchError::Children { count: 3, max: 2 })));
        let one = call(vec![child("a", "inherit", "inherit")]);
        assert!(matches!(parse(TaskCommand::Review, fast, 0, &one), Err(BranchError::Children { .. })));
        let blank = call(vec![child(" ", "inherit", "inherit"), child("b", "inherit", "inherit")]);
        assert!(matches!(parse(TaskCommand::Review, fast, 0, &blank), Err(BranchError::Scope { index: 0, .. })));
        let model = call(vec![child("a", "gpt-9", "inherit"), child("b", "inherit", "inherit")]);
        assert!(matches!(parse(TaskCommand::Review, fast, 0, &model), Err(BranchError::Model { .. })));
        let xhigh = call(vec![child("a", "inherit", "xhigh"), child("b", "inherit", "inherit")]);
        assert!(parse(TaskCommand::Review, fast, 0, &xhigh).is_ok());
        assert!(matches!(parse(TaskCommand::Simplify, fast, 0, &xhigh), Err(BranchError::Effort { .. })));
        let mut escaping = child("a", "inherit", "inherit");
        escaping["path_hints"] = json!(["../outside"]);
        let escaping = call(vec![escaping, child("b", "inherit", "inherit")]);
        assert!(matches!(parse(TaskCommand::Review, fast, 0, &escaping), Err(BranchError::PathHint { .. })));
        let unknown = r#"{"branches":[],"extra":1}"#;
        assert!(matches!(parse(TaskCommand::Review, fast, 0, unknown), Err(BranchError::Arguments(_))));
    }

    #[test]
    fn malformed_branch_arguments_keep_serde_error_and_read_as_before() {
        use std::error::Error as _;
        let unknown = r#"{"branches":[],"extra":1}"#;
        let error = parse(TaskCommand::Review, Policy::of(Depth::Fast), 0, unknown).unwrap_err();
        let cause = error.source().and_then(|cause| cause.downcast_ref::<serde_json::Error>()).expect("serde's error");
        let before = format!("invalid branch call: {cause}");
        assert!(before.contains("unknown field `extra`"), "{before}");
        assert_eq!(git_agent_shared::error_chain::render(&error), before);
    }

    fn finding(severity: &str, title: &str) -> Value {
        json!({"severity": severity, "aspect": "correctness", "title": title, "impact": "i",
               "evidences": [{"title": "t", "path": "a.rs", "line_start": 1, "line_end": 1}], "proposed_fix": "f"})
    }

    #[test]
    fn leaves_merge_in_order_with_severity_and_recommendation_recomputed() {
        let first = json!({"summary": "one", "recommendation": "COMMENT",
                           "findings": [finding("MEDIUM", "m1"), finding("LOW", "l1")]});
        let second = json!({"summary": "two", "recommendation": "FIX", "findings": [finding("HIGH", "h2")]});
        let limited = json!({"summary": "could not inspect vendor/", "recommendation": "APPROVE", "findings": []});
        let leaves = [
            LeafReport { scope: "Parser".into(), text: first.to_string() },
            LeafReport { scope: "Storage".into(), text: second.to_string() },
            LeafReport { scope: "Vendor".into(), text: limited.to_string() },
        ];
        let merged: Value = serde_json::from_str(&merge(TaskCommand::Review, &leaves).unwrap()).unwrap();
        assert_eq!(merged["summary"], "Parser: one\nStorage: two\nVendor: could not inspect vendor/");
        assert_eq!(merged["recommendation"], "FIX");
        let titles: Vec<&str> =
            merged["findings"].as_array().unwrap().iter().map(|f| f["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["h2", "m1", "l1"]);

        let simplify = [
            LeafReport { scope: "A".into(), text: r#"{"summary":"a","opportunities":[]}"#.into() },
            LeafReport { scope: "B".into(), text: r#"{"summary":"b","opportunities":[]}"#.into() },
        ];
        assert_eq!(merge(TaskCommand::Simplify, &simplify).unwrap(), r#"{"summary":"A: a\nB: b","opportunities":[]}"#);
        let only = [LeafReport { scope: String::new(), text: "{\"x\":1}".into() }];
        assert_eq!(merge(TaskCommand::Review, &only).unwrap(), "{\"x\":1}", "one leaf stays as it is");
        let mut style = finding("HIGH", "s");
        style["aspect"] = json!("style");
        let broken = [
            LeafReport { scope: "A".into(), text: first.to_string() },
            LeafReport {
                scope: "B".into(),
                text: json!({"summary": "b", "recommendation": "FIX", "findings": [style]}).to_string(),
            },
        ];
        assert!(matches!(merge(TaskCommand::Review, &broken), Err(MergeError::Invalid(_))), "the merge is validated");
    }
}

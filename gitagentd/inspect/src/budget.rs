//! The inspection budget: deterministic lower and upper model-step bounds
//! from the prepared scope and the concrete tool set, the depth-selected
//! step ceiling and local tool-call ceiling, and the depth-derived
//! reasoning and model defaults.
//!
//! ```text
//! Le = Lh + ceil(0.15 * Lg) + 50 * B
//! Fe = Fh + ceil(Fg / 4) + B
//! W  = 2 * ceil(sqrt(Le / 50)) + ceil(sqrt(Fe)) + ceil(log2(1 + max(0, D - 1)))
//! Mlow = 1 + 0.25 * (1 - C)      Mhigh = 1 + 0.75 * (1 - C)
//! lower = base + ceil(0.5 * W * Mlow)      upper = base + ceil(W * Mhigh) + verification
//! ```

use super::prepare::{Mode, PreparedScope};
use git_agent_shared::cli::{Depth, ReasoningEffort};
use git_agent_shared::task_record::TaskCommand;
use gitagent_git::contextpack::ContextPack;
use serde::Serialize;
use std::collections::BTreeSet;

pub const REVIEW_MAX_STEPS: u32 = 60;
pub const REVIEW_MAX_TOOL_CALLS: u32 = 48;
pub const SIMPLIFY_MAX_STEPS: u32 = 45;
pub const SIMPLIFY_MAX_TOOL_CALLS: u32 = 36;
pub const REVIEW_DEFAULT_MODEL: &str = "gpt-5.6-sol";
pub const SIMPLIFY_DEFAULT_MODEL: &str = "gpt-5.6-terra";

/// The plan recorded with the task; its JSON shape is the original's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetPlan {
    pub policy: String,
    pub effective_lines: u64,
    pub effective_files: u64,
    pub scopes: u64,
    pub work_units: u64,
    pub capability_coverage: f64,
    pub lower_steps: u32,
    pub selected_steps: u32,
    pub upper_steps: u32,
    pub max_tool_calls: u32,
    pub hard_step_cap: u32,
    pub hard_tool_call_cap: u32,
    pub automatic: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub codebase_fixed_budget: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("inspection budget requires bounded source reading capability (read_file)")]
    NoSourceReading,
    #[error("codebase inspection budget requires scope discovery capability (list_files)")]
    NoDiscovery,
    #[error("diff inspection budget requires authoritative scope enumeration capability (review_changes)")]
    NoEnumeration,
}

/// The change metrics the formula reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeMetrics {
    /// Added plus deleted lines of every path (generated included).
    pub total_lines: u64,
    /// Added plus deleted lines of files with the generated-code marker.
    pub generated_lines: u64,
    pub binary_files: u64,
    pub files: u64,
    pub generated_files: u64,
    pub paths: Vec<String>,
}

impl ChangeMetrics {
    pub fn from_prepared(prepared: &PreparedScope) -> Self {
        let total_lines = prepared.stats.iter().map(|stat| stat.adds + stat.deletes).sum();
        let binary_files = prepared.stats.iter().filter(|stat| stat.is_binary).count() as u64;
        Self {
            total_lines,
            generated_lines: generated_lines(&prepared.context_pack),
            binary_files,
            files: prepared.paths.len() as u64,
            generated_files: prepared.context_pack.overview.generated_files,
            paths: prepared.paths.clone(),
        }
    }
}

fn generated_lines(pack: &ContextPack) -> u64 {
    let groups: u64 = pack.groups.iter().filter(|group| group.generated).map(|group| group.adds + group.deletes).sum();
    let outliers: u64 = pack.outliers.iter().filter(|file| file.generated).map(|file| file.adds + file.deletes).sum();
    groups + outliers
}

struct Constants {
    step_floor: u32,
    hard_steps: u32,
    tool_floor: u32,
    hard_tools: u32,
    base: u32,
    verification: u32,
}

fn constants(command: TaskCommand) -> Constants {
    match command {
        TaskCommand::Review => Constants {
            step_floor: 8,
            hard_steps: REVIEW_MAX_STEPS,
            tool_floor: 6,
            hard_tools: REVIEW_MAX_TOOL_CALLS,
            base: 6,
            verification: 3,
        },
        TaskCommand::Simplify => Constants {
            step_floor: 6,
            hard_steps: SIMPLIFY_MAX_STEPS,
            tool_floor: 5,
            hard_tools: SIMPLIFY_MAX_TOOL_CALLS,
            base: 5,
            verification: 2,
        },
    }
}

/// Plans the budget of an inspection. `tools` are the names of the
/// registered tools; `explicit_steps` is `--max-steps`.
pub fn plan(
    command: TaskCommand,
    mode: Mode,
    metrics: &ChangeMetrics,
    tools: &BTreeSet<String>,
    depth: Depth,
    explicit_steps: Option<u32>,
) -> Result<BudgetPlan, BudgetError> {
    let c = constants(command);
    let coverage = capability_coverage(mode, tools)?;
    let mut plan = BudgetPlan {
        policy: depth.as_str().to_string(),
        effective_lines: 0,
        effective_files: 0,
        scopes: 0,
        work_units: 0,
        capability_coverage: coverage,
        lower_steps: 0,
        selected_steps: 0,
        upper_steps: 0,
        max_tool_calls: 0,
        hard_step_cap: c.hard_steps,
        hard_tool_call_cap: c.hard_tools,
        automatic: explicit_steps.is_none(),
        codebase_fixed_budget: false,
    };
    if mode == Mode::Codebase {
        plan.lower_steps = c.hard_steps;
        plan.upper_steps = c.hard_steps;
        plan.selected_steps = c.hard_steps;
        plan.max_tool_calls = c.hard_tools;
        plan.codebase_fixed_budget = true;
        if let Some(steps) = explicit_steps {
            plan.policy = "explicit".into();
            plan.selected_steps = steps;
        }
        return Ok(plan);
    }

    let binary = metrics.binary_files;
    let generated_lines = metrics.generated_lines.min(metrics.total_lines);
    let generated_files = metrics.generated_files.min(metrics.files.saturating_sub(binary));
    let handwritten_lines = metrics.total_lines - generated_lines;
    let handwritten_files = metrics.files.saturating_sub(generated_files).saturating_sub(binary);
    let effective_lines = handwritten_lines + (0.15 * generated_lines as f64).ceil() as u64 + 50 * binary;
    let effective_files = handwritten_files + generated_files.div_ceil(4) + binary;
    let scopes = scope_count(&metrics.paths);
    let work_units = 2 * (effective_lines as f64 / 50.0).sqrt().ceil() as u64
        + (effective_files as f64).sqrt().ceil() as u64
        + (1.0 + scopes.saturating_sub(1) as f64).log2().ceil() as u64;
    plan.effective_lines = effective_lines;
    plan.effective_files = effective_files;
    plan.scopes = scopes;
    plan.work_units = work_units;

    let low_multiplier = 1.0 + 0.25 * (1.0 - coverage);
    let high_multiplier = 1.0 + 0.75 * (1.0 - coverage);
    let raw_low = c.base + (0.5 * work_units as f64 * low_multiplier).ceil() as u32;
    let raw_high = c.base + (work_units as f64 * high_multiplier).ceil() as u32 + c.verification;
    plan.lower_steps = raw_low.max(c.step_floor).min(c.hard_steps);
    plan.upper_steps = raw_high.max(plan.lower_steps).min(c.hard_steps);
    plan.selected_steps = match depth {
        Depth::Fast => plan.lower_steps,
        Depth::Balanced => (plan.lower_steps + plan.upper_steps).div_ceil(2),
        Depth::Thorough => plan.upper_steps,
    };
    plan.max_tool_calls = (4 * plan.selected_steps).div_ceil(5).max(c.tool_floor).min(c.hard_tools);
    if let Some(steps) = explicit_steps {
        plan.policy = "explicit".into();
        plan.selected_steps = steps;
        plan.max_tool_calls = c.hard_tools;
    }
    Ok(plan)
}

/// Distinct top-level path scopes; root-level paths form one "." scope.
fn scope_count(paths: &[String]) -> u64 {
    let scopes: BTreeSet<&str> = paths
        .iter()
        .map(|path| path.trim())
        .filter(|path| !path.is_empty())
        .map(|path| path.split_once('/').map_or(".", |(scope, _)| scope))
        .collect();
    scopes.len() as u64
}

/// Coverage C of the registered capabilities: bounded source read 0.30,
/// authoritative change enumeration 0.20, path-bounded diff 0.20, search or
/// structural inspection 0.20, path discovery 0.10; codebase mode has no
/// path-bounded diff and renormalises the other 0.80.
pub fn capability_coverage(mode: Mode, tools: &BTreeSet<String>) -> Result<f64, BudgetError> {
    let has = |names: &[&str]| names.iter().any(|name| tools.contains(*name));
    if !has(&["read_file"]) {
        return Err(BudgetError::NoSourceReading);
    }
    // The order of the additions matches the original so floating-point
    // results are identical.
    let mut coverage = 0.30;
    if has(&["grep", "inspect_file"]) {
        coverage += 0.20;
    }
    if has(&["find", "list_files"]) {
        coverage += 0.10;
    }
    if mode == Mode::Codebase {
        if !has(&["list_files"]) {
            return Err(BudgetError::NoDiscovery);
        }
        coverage += 0.20;
        return Ok(coverage / 0.80);
    }
    if !has(&["review_changes"]) {
        return Err(BudgetError::NoEnumeration);
    }
    coverage += 0.20;
    if has(&["review_diff_for_paths"]) {
        coverage += 0.20;
    }
    Ok(coverage)
}

/// The reasoning effort an inspection uses: the explicit flag, else the
/// command's depth default.
pub fn reasoning_effort(command: TaskCommand, depth: Depth, explicit: Option<ReasoningEffort>) -> &'static str {
    if let Some(effort) = explicit {
        return effort.as_str();
    }
    match (command, depth) {
        (TaskCommand::Review, Depth::Fast) => "low",
        (TaskCommand::Review, Depth::Balanced) => "medium",
        (TaskCommand::Review, Depth::Thorough) => "high",
        (TaskCommand::Simplify, Depth::Thorough) => "medium",
        (TaskCommand::Simplify, _) => "low",
    }
}

/// The model: `--model`, then `OPENAI_MODEL`, then the command default.
pub fn model(command: TaskCommand, flag: Option<&str>, env_model: Option<&str>) -> String {
    flag.or(env_model).map(str::to_string).unwrap_or_else(|| {
        match command {
            TaskCommand::Review => REVIEW_DEFAULT_MODEL,
            TaskCommand::Simplify => SIMPLIFY_DEFAULT_MODEL,
        }
        .to_string()
    })
}

/// The tools a diff-mode or codebase inspection registers when every
/// shared tool is present (documentation tools do not count for coverage).
pub fn standard_tools(mode: Mode) -> BTreeSet<String> {
    let mut names: Vec<&str> = vec!["repo_summary", "list_files", "read_file", "inspect_file", "jq", "grep", "find"];
    if mode != Mode::Codebase {
        names.extend(["review_changes", "review_diff", "review_diff_for_paths"]);
    }
    names.into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(
        total: u64,
        generated: u64,
        binary: u64,
        files: u64,
        generated_files: u64,
        paths: &[&str],
    ) -> ChangeMetrics {
        ChangeMetrics {
            total_lines: total,
            generated_lines: generated,
            binary_files: binary,
            files,
            generated_files,
            paths: paths.iter().map(|path| path.to_string()).collect(),
        }
    }

    /// (command, metrics, depth, explicit) → (Le, Fe, D, W, lower, selected, upper, tools), each
    /// worked out by hand from the formula with full coverage C = 1.
    #[test]
    fn hand_computed_diff_budgets() {
        let tools = standard_tools(Mode::Uncommitted);
        type Case = (TaskCommand, ChangeMetrics, Depth, Option<u32>, [u64; 4], [u32; 4]);
        let cases: Vec<Case> = vec![
            // One root file, 10 lines: Le=10, Fe=1, D=1; W=2*1+1+0=3.
            // review lower=6+ceil(1.5)=8, upper=6+3+3=12, balanced=10, tools=ceil(8)=8.
            (
                TaskCommand::Review,
                metrics(10, 0, 0, 1, 0, &["a.go"]),
                Depth::Balanced,
                None,
                [10, 1, 1, 3],
                [8, 10, 12, 8],
            ),
            (TaskCommand::Review, metrics(10, 0, 0, 1, 0, &["a.go"]), Depth::Fast, None, [10, 1, 1, 3], [8, 8, 12, 7]),
            (
                TaskCommand::Review,
                metrics(10, 0, 0, 1, 0, &["a.go"]),
                Depth::Thorough,
                None,
                [10, 1, 1, 3],
                [8, 12, 12, 10],
            ),
            // 400 handwritten + 1000 generated lines, 1 binary, 3 handwritten + 8 generated files
            // over 3 scopes: Le=400+150+50=600, Fe=3+2+1=6, D=3;
            // W=2*ceil(sqrt 12)=8 + ceil(sqrt 6)=3 + ceil(log2 3)=2 -> 13.
            // review lower=6+ceil(6.5)=13, upper=6+13+3=22, balanced=ceil(35/2)=18, tools=ceil(14.4)=15.
            (
                TaskCommand::Review,
                metrics(1400, 1000, 1, 12, 8, &["a.go", "gen/x.go", "pkg/y.go"]),
                Depth::Balanced,
                None,
                [600, 6, 3, 13],
                [13, 18, 22, 15],
            ),
            // simplify lower=5+7=12, upper=5+13+2=20, thorough=20, tools=16.
            (
                TaskCommand::Simplify,
                metrics(1400, 1000, 1, 12, 8, &["a.go", "gen/x.go", "pkg/y.go"]),
                Depth::Thorough,
                None,
                [600, 6, 3, 13],
                [12, 20, 20, 16],
            ),
            // Huge change: Le=100000, Fe=400, D=1: W=2*45+20+0=110 -> both bounds clamp at 60, tools 48.
            (
                TaskCommand::Review,
                metrics(100_000, 0, 0, 400, 0, &["a"]),
                Depth::Fast,
                None,
                [100_000, 400, 1, 110],
                [60, 60, 60, 48],
            ),
            // simplify clamps at 45 and 36.
            (
                TaskCommand::Simplify,
                metrics(100_000, 0, 0, 400, 0, &["a"]),
                Depth::Balanced,
                None,
                [100_000, 400, 1, 110],
                [45, 45, 45, 36],
            ),
            // Tiny simplify: W=3 -> lower=5+2=7, upper=5+3+2=10; fast=7, tools floor 5 vs ceil(5.6)=6.
            (TaskCommand::Simplify, metrics(1, 0, 0, 1, 0, &["x"]), Depth::Fast, None, [1, 1, 1, 3], [7, 7, 10, 6]),
            // No lines at all: W=0+1+0=1 -> review lower max(6+1,8)=8, upper max(6+1+3,8)=10.
            (TaskCommand::Review, metrics(0, 0, 0, 1, 0, &["x"]), Depth::Balanced, None, [0, 1, 1, 1], [8, 9, 10, 8]),
            // An explicit step count keeps the bounds but selects exactly and keeps the fixed tool ceiling.
            (
                TaskCommand::Review,
                metrics(10, 0, 0, 1, 0, &["a.go"]),
                Depth::Balanced,
                Some(100),
                [10, 1, 1, 3],
                [8, 100, 12, 48],
            ),
            (
                TaskCommand::Simplify,
                metrics(10, 0, 0, 1, 0, &["a.go"]),
                Depth::Balanced,
                Some(2),
                [10, 1, 1, 3],
                [7, 2, 10, 36],
            ),
        ];
        for (command, metrics, depth, explicit, [le, fe, d, w], [lower, selected, upper, tools_ceiling]) in cases {
            let plan = plan(command, Mode::Uncommitted, &metrics, &tools, depth, explicit).unwrap();
            let context = format!("{command} {metrics:?} {depth:?} {explicit:?}: {plan:?}");
            assert_eq!(
                (plan.effective_lines, plan.effective_files, plan.scopes, plan.work_units),
                (le, fe, d, w),
                "{context}"
            );
            assert_eq!(
                (plan.lower_steps, plan.selected_steps, plan.upper_steps, plan.max_tool_calls),
                (lower, selected, upper, tools_ceiling),
                "{context}"
            );
            assert_eq!(plan.automatic, explicit.is_none());
            assert_eq!(plan.policy, if explicit.is_some() { "explicit" } else { depth.as_str() });
        }
    }

    #[test]
    fn partial_coverage_raises_the_multipliers() {
        // Without review_diff_for_paths, grep/inspect_file and find/list_files: C = 0.5.
        let tools: BTreeSet<String> = ["read_file", "review_changes"].iter().map(|name| name.to_string()).collect();
        let metrics = metrics(400, 0, 0, 4, 0, &["a", "b/c"]);
        // Le=400, Fe=4, D=2: W=2*ceil(sqrt 8)=6 + 2 + 1 = 9.
        // Mlow=1.125: lower=6+ceil(5.0625)=12; Mhigh=1.375: upper=6+ceil(12.375)+3=22.
        let plan = plan(TaskCommand::Review, Mode::Staged, &metrics, &tools, Depth::Balanced, None).unwrap();
        assert_eq!(plan.capability_coverage, 0.5);
        assert_eq!((plan.work_units, plan.lower_steps, plan.upper_steps, plan.selected_steps), (9, 12, 22, 17));
        assert_eq!(plan.max_tool_calls, 14);
    }

    #[test]
    fn codebase_budgets_are_fixed() {
        let tools = standard_tools(Mode::Codebase);
        let review =
            plan(TaskCommand::Review, Mode::Codebase, &ChangeMetrics::default(), &tools, Depth::Fast, None).unwrap();
        assert_eq!(
            (review.lower_steps, review.selected_steps, review.upper_steps, review.max_tool_calls),
            (60, 60, 60, 48)
        );
        assert!(review.codebase_fixed_budget);
        assert_eq!(review.capability_coverage, 1.0);
        let simplify =
            plan(TaskCommand::Simplify, Mode::Codebase, &ChangeMetrics::default(), &tools, Depth::Thorough, None)
                .unwrap();
        assert_eq!((simplify.selected_steps, simplify.max_tool_calls), (45, 36));
        let explicit =
            plan(TaskCommand::Review, Mode::Codebase, &ChangeMetrics::default(), &tools, Depth::Balanced, Some(7))
                .unwrap();
        assert_eq!((explicit.selected_steps, explicit.max_tool_calls, explicit.policy.as_str()), (7, 48, "explicit"));
    }

    #[test]
    fn missing_capabilities_fail_planning() {
        let none = BTreeSet::new();
        let metrics = ChangeMetrics::default();
        assert_eq!(
            plan(TaskCommand::Review, Mode::Uncommitted, &metrics, &none, Depth::Fast, None),
            Err(BudgetError::NoSourceReading)
        );
        let read: BTreeSet<String> = ["read_file".to_string()].into();
        assert_eq!(
            plan(TaskCommand::Review, Mode::Uncommitted, &metrics, &read, Depth::Fast, None),
            Err(BudgetError::NoEnumeration)
        );
        assert_eq!(
            plan(TaskCommand::Review, Mode::Codebase, &metrics, &read, Depth::Fast, None),
            Err(BudgetError::NoDiscovery)
        );
    }

    #[test]
    fn depth_derived_reasoning_and_models() {
        use ReasoningEffort::*;
        assert_eq!(reasoning_effort(TaskCommand::Review, Depth::Fast, None), "low");
        assert_eq!(reasoning_effort(TaskCommand::Review, Depth::Balanced, None), "medium");
        assert_eq!(reasoning_effort(TaskCommand::Review, Depth::Thorough, None), "high");
        assert_eq!(reasoning_effort(TaskCommand::Simplify, Depth::Fast, None), "low");
        assert_eq!(reasoning_effort(TaskCommand::Simplify, Depth::Balanced, None), "low");
        assert_eq!(reasoning_effort(TaskCommand::Simplify, Depth::Thorough, None), "medium");
        assert_eq!(reasoning_effort(TaskCommand::Simplify, Depth::Thorough, Some(Xhigh)), "xhigh");
        assert_eq!(model(TaskCommand::Review, None, None), "gpt-5.6-sol");
        assert_eq!(model(TaskCommand::Simplify, None, None), "gpt-5.6-terra");
        assert_eq!(model(TaskCommand::Simplify, None, Some("env-model")), "env-model");
        assert_eq!(model(TaskCommand::Simplify, Some("flag-model"), Some("env-model")), "flag-model");
    }
}

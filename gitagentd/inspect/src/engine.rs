//! The seam between a prepared inspection and whatever produces its
//! report. [`InspectionEngine`] receives the typed request (prepared
//! scope, budget, model, reasoning effort, operator hint, deadline) and
//! returns the provider report text, already validated with
//! [`super::report::validate_repository`], or a failure with bounded
//! diagnostics. The dry-run engine serves `--dry-run`; the provider-backed
//! engine ([`super::provider_engine::ProviderEngine`], the bounded agent
//! loop) serves every other launch; [`UnavailableEngine`] remains for
//! tests and builds without a provider.

use super::budget::BudgetPlan;
use super::git::GitEnv;
use super::prepare::{OperatorHint, PreparedScope};
use git_agent_shared::Environment;
use git_agent_shared::task_record::{FailureDiagnostic, TaskCommand};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Everything an engine needs to run one inspection.
#[derive(Debug, Clone)]
pub struct InspectionRequest {
    pub task_id: String,
    pub command: TaskCommand,
    /// The caller's working directory (after `--cwd`).
    pub cwd: std::path::PathBuf,
    pub prepared: Arc<PreparedScope>,
    pub budget: BudgetPlan,
    /// `--depth` (inherited by a follow-up): the budget and the branch
    /// policy.
    pub depth: git_agent_shared::cli::Depth,
    pub model: String,
    pub reasoning_effort: &'static str,
    pub operator_hint: Option<OperatorHint>,
    /// `--timeout`: the deadline of the provider client and the whole loop.
    pub timeout: Option<Duration>,
    pub max_web_searches: Option<u32>,
    /// `--fast`: service_tier=priority.
    pub priority: bool,
    pub base_url: Option<String>,
    pub guidance_family: Option<String>,
    /// The caller's environment (credentials and provider settings).
    pub env: Environment,
    pub git_env: GitEnv,
    /// The prompt-cache key of the task's lineage: derived from the task
    /// id of its first turn, inherited by context-preserving follow-ups.
    pub prompt_cache_key: String,
    /// The parent turn a `--follow-up` continues.
    pub follow_up: Option<FollowUp>,
    /// What every request of the inspection passes through (`--no-redact`,
    /// `redact.allow`).
    pub redactor: gitagent_provider::Redactor,
}

/// What a follow-up continues from its parent turn.
#[derive(Debug, Clone)]
pub struct FollowUp {
    /// Every terminal leaf of the parent (one for an unbranched parent),
    /// each continued concurrently as a root of the new inspection.
    pub roots: Vec<FollowUpRoot>,
    /// The parent's complete final report (merged, for a branched parent).
    pub previous_report: serde_json::Value,
    /// The new prompt (argv joined with single spaces).
    pub prompt: String,
}

/// One parent leaf a follow-up continues.
#[derive(Debug, Clone)]
pub struct FollowUpRoot {
    /// The leaf's reporting responsibility; empty for an unbranched parent.
    pub scope: String,
    pub model: String,
    pub reasoning_effort: String,
    /// The leaf's complete replayable provider input, its answer included.
    pub history: Vec<gitagent_provider::Item>,
    /// The leaf's `x-codex-turn-state`, for a context-preserving turn.
    pub turn_state: Option<String>,
}

/// The cache key of a lineage that begins with `task_id`.
pub fn lineage_cache_key(command: TaskCommand, task_id: &str) -> String {
    gitagent_git::identity::sha256_hex(format!("git-agent {} {task_id}", command.as_str()).as_bytes())
}

/// A validated provider report and the loop's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOutcome {
    /// The provider report as validated JSON text (without `checks`).
    pub report_text: String,
    pub tool_calls: u64,
    pub repair_calls: u64,
    /// Bytes of terminal control sequences removed from the model's
    /// answers; `--wait` says so on stderr.
    pub controls_removed: u64,
    /// Provider-reported usage summed over every request of the task
    /// (every conversation, schema repair and forced finalization).
    pub usage: gitagent_provider::Usage,
    /// Child conversations created by branch fan-out.
    pub branches_created: u64,
    /// Every terminal conversation a follow-up continues, in leaf order;
    /// empty for a dry run.
    pub leaves: Vec<LeafTurn>,
    /// Usage, skills and tool counts for the post-inspection hooks.
    pub metrics: super::metrics::InspectionMetrics,
}

/// One terminal conversation of a finished inspection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafTurn {
    /// The branch responsibility it reported on; empty for an unbranched
    /// inspection.
    pub scope: String,
    pub model: String,
    pub reasoning_effort: String,
    /// Its last `x-codex-turn-state`, if any.
    pub turn_state: Option<String>,
    /// Its provider-visible conversation, answer included (record JSON,
    /// [`gitagent_provider::items_to_json`]).
    pub conversation: Vec<serde_json::Value>,
}

/// Why an engine produced no report.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineFailure {
    pub message: String,
    pub diagnostic: FailureDiagnostic,
}

pub type EngineFuture<'a> = Pin<Box<dyn Future<Output = Result<EngineOutcome, EngineFailure>> + Send + 'a>>;

/// Produces the report of one inspection. `progress` receives short phase
/// names for task watchers; `cancel` fires when the task must stop.
pub trait InspectionEngine: Send + Sync + std::fmt::Debug {
    fn run<'a>(
        &'a self,
        request: &'a InspectionRequest,
        progress: &'a (dyn Fn(&str) + Send + Sync),
        cancel: CancellationToken,
    ) -> EngineFuture<'a>;
}

/// The fixture report a dry run produces.
pub fn dry_run_report(command: TaskCommand) -> String {
    match command {
        TaskCommand::Review => {
            r#"{"summary":"Deterministic dry-run fixture completed.","recommendation":"APPROVE","findings":[]}"#
                .to_string()
        }
        TaskCommand::Simplify => {
            r#"{"summary":"Deterministic dry-run fixture completed.","opportunities":[]}"#.to_string()
        }
    }
}

/// Fifteen internal steps each waiting an independent random 500-1000 ms
/// (the spec's observable dry run), then the fixture. Each step announces
/// itself as what it is, a dry-run step: no model reasons and no tool runs,
/// so none is reported and the outcome counts no tool call.
#[derive(Debug, Default)]
pub struct DryRunEngine;

/// How many steps a dry run waits through.
pub const DRY_RUN_STEPS: u32 = 15;

/// The phase a dry run publishes at `step` (one-based).
pub fn dry_run_phase(step: u32) -> String {
    format!("dry_run {step}/{DRY_RUN_STEPS}")
}

impl InspectionEngine for DryRunEngine {
    fn run<'a>(
        &'a self,
        request: &'a InspectionRequest,
        progress: &'a (dyn Fn(&str) + Send + Sync),
        cancel: CancellationToken,
    ) -> EngineFuture<'a> {
        Box::pin(async move {
            let mut random = Random::seeded(&request.task_id);
            for step in 1..=DRY_RUN_STEPS {
                progress(&dry_run_phase(step));
                let delay = Duration::from_millis(500 + random.below(501));
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = cancel.cancelled() => {
                        return Err(EngineFailure { message: "the dry run was cancelled".into(), diagnostic: FailureDiagnostic::default() });
                    }
                }
            }
            Ok(EngineOutcome { report_text: dry_run_report(request.command), ..EngineOutcome::default() })
        })
    }
}

/// The engine of a build without the provider-backed agent loop: every
/// non-dry-run inspection fails with a stored error. Test builds only.
#[cfg(any(test, feature = "test-hooks"))]
#[derive(Debug, Default)]
pub struct UnavailableEngine;

#[cfg(any(test, feature = "test-hooks"))]
pub const UNAVAILABLE_MESSAGE: &str = "the provider-backed inspection is not available in this build; use --dry-run to exercise preparation and the detached task";

#[cfg(any(test, feature = "test-hooks"))]
impl InspectionEngine for UnavailableEngine {
    fn run<'a>(
        &'a self,
        request: &'a InspectionRequest,
        _progress: &'a (dyn Fn(&str) + Send + Sync),
        _cancel: CancellationToken,
    ) -> EngineFuture<'a> {
        Box::pin(async move {
            Err(EngineFailure {
                message: UNAVAILABLE_MESSAGE.into(),
                diagnostic: FailureDiagnostic {
                    model: request.model.clone(),
                    mode: request.prepared.mode.as_str().into(),
                    max_steps: i64::from(request.budget.selected_steps),
                    max_tool_calls: i64::from(request.budget.max_tool_calls),
                    repository_fingerprint: request.prepared.fingerprint.clone(),
                    tool_events: Vec::new(),
                },
            })
        })
    }
}

/// A small xorshift generator: independent delays need no cryptography.
struct Random(u64);

impl Random {
    fn seeded(salt: &str) -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write(salt.as_bytes());
        hasher
            .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        Self(hasher.finish() | 1)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_fixtures_are_valid_reports() {
        for command in [TaskCommand::Review, TaskCommand::Simplify] {
            assert!(super::super::report::validate_text(command, &dry_run_report(command)).is_empty());
        }
    }

    #[test]
    fn random_delays_stay_in_range() {
        let mut random = Random::seeded("x");
        for _ in 0..1000 {
            assert!(random.below(501) <= 500);
        }
    }
}

//! The conversation tree of one inspection: every root (one for a fresh
//! inspection, one per terminal leaf of a branched parent for a
//! follow-up) runs on the agent loop; below the depth limit its normal
//! steps offer `branch_help` and the terminal `branch`. An accepted branch
//! retires the calling conversation and starts every child at once, each
//! continuing the provider-visible conversation plus its own `branch`
//! function result, with fresh step and tool ceilings, under the same
//! cancellation and deadline. Every leaf passes the ordinary validators
//! (one repair each); the first failure anywhere cancels the whole tree.
//! There is no queue and no global concurrency setting: the depth policy
//! bounds the tree.

use super::super::branch::{self, BranchError, ChildResult, Policy};
use super::super::metrics::{BranchMetric, UsageMetric};
use git_agent_shared::task_record::TaskCommand;
use gitagent_agent::{self as agent, AgentError, AgentTask, Node, OutputRules, RunContext};
use gitagent_provider::{self as provider, Item, Provider, Usage};
use gitagent_runtime::trace::Event;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why the tree produced no report.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error(transparent)]
    Branch(#[from] BranchError),
    #[error(transparent)]
    Merge(#[from] super::super::branch::MergeError),
}

/// One conversation the tree starts: a root, or a child of a branch call.
pub struct Start {
    pub id: String,
    pub depth: u32,
    /// The reporting responsibility; empty for an unbranched root.
    pub scope: String,
    pub provider: Provider,
    pub reasoning_effort: String,
    /// The input to continue; empty for a fresh root (the task's layers).
    pub history: Vec<Item>,
}

/// One validated terminal conversation.
#[derive(Debug)]
pub struct Leaf {
    pub scope: String,
    pub model: String,
    pub reasoning_effort: String,
    /// The validated report text.
    pub text: String,
    /// Its whole provider-visible conversation, answer included.
    pub conversation: Vec<Item>,
    pub turn_state: Option<String>,
}

/// What a subtree produced: its leaves in recursive child order and the
/// counters of every conversation in it.
#[derive(Debug, Default)]
pub struct Grown {
    pub leaves: Vec<Leaf>,
    pub tool_calls: u32,
    pub repair_calls: u32,
    pub usage: Usage,
    /// Bytes of terminal control sequences removed from the answers.
    pub controls_removed: usize,
}

impl Grown {
    fn absorb(&mut self, other: Grown) {
        self.leaves.extend(other.leaves);
        self.tool_calls += other.tool_calls;
        self.repair_calls += other.repair_calls;
        self.usage.add(&other.usage);
        self.controls_removed += other.controls_removed;
    }
}

/// The shared state of one tree.
pub struct Tree<'a> {
    pub command: TaskCommand,
    pub policy: Policy,
    /// The task every conversation shares (layers, tools without
    /// `branch_help`, output format, ceilings, hosted search).
    pub task: &'a AgentTask,
    pub rules: &'a OutputRules,
    /// Fires on the first failure, a cancellation or the deadline.
    pub cancel: CancellationToken,
    pub deadline: Option<Instant>,
    pub trace: &'a (dyn Fn(Event) + Send + Sync),
    /// Branch conversations in creation order, with their own usage.
    branches: Mutex<Vec<BranchMetric>>,
}

type NodeFuture<'s> = Pin<Box<dyn Future<Output = Result<Grown, TreeError>> + Send + 's>>;

impl<'a> Tree<'a> {
    pub fn new(
        command: TaskCommand,
        policy: Policy,
        task: &'a AgentTask,
        rules: &'a OutputRules,
        cancel: CancellationToken,
        deadline: Option<Instant>,
        trace: &'a (dyn Fn(Event) + Send + Sync),
    ) -> Self {
        Self { command, policy, task, rules, cancel, deadline, trace, branches: Mutex::default() }
    }

    /// Runs every root concurrently; the first failure cancels the others.
    pub async fn grow(&self, roots: Vec<Start>) -> Result<Grown, TreeError> {
        let grown = futures_util::future::try_join_all(roots.into_iter().map(|root| self.node(root))).await;
        let grown = grown.inspect_err(|_| self.cancel.cancel())?;
        let mut all = Grown::default();
        grown.into_iter().for_each(|subtree| all.absorb(subtree));
        Ok(all)
    }

    /// The branch conversations created so far, in creation order.
    pub fn branches(&self) -> Vec<BranchMetric> {
        self.branches.lock().map(|branches| branches.clone()).unwrap_or_default()
    }

    fn node(&self, start: Start) -> NodeFuture<'_> {
        Box::pin(async move {
            let result = self.run_node(start).await;
            if result.is_err() {
                // A required conversation failed: stop its siblings.
                self.cancel.cancel();
            }
            result
        })
    }

    async fn run_node(&self, start: Start) -> Result<Grown, TreeError> {
        let Start { id, depth, scope, provider, reasoning_effort, history } = start;
        let branching = self.policy.allows(depth);
        let mut task = self.task.clone();
        task.history = history;
        let control = if branching {
            task.tools.extend([Arc::new(branch::BranchHelp(self.command)) as Arc<dyn gitagent_agent::tools::Tool>]);
            Some(branch::spec(self.command, self.policy))
        } else {
            None
        };
        let context = RunContext {
            provider: &provider,
            cancel: self.cancel.clone(),
            deadline: self.deadline,
            trace: self.trace,
            on_text: None,
        };
        match agent::run_node(&context, &task, Some(self.rules), control.as_ref()).await? {
            Node::Final(outcome) => {
                self.record_usage(&id, &outcome.usage);
                Ok(Grown {
                    tool_calls: outcome.tool_calls,
                    repair_calls: outcome.repair_calls,
                    usage: outcome.usage,
                    controls_removed: outcome.controls_removed,
                    leaves: vec![Leaf {
                        scope,
                        model: provider.model().to_string(),
                        reasoning_effort,
                        text: outcome.text,
                        conversation: outcome.conversation,
                        turn_state: provider.turn_state(),
                    }],
                })
            }
            Node::Branch(call) => {
                self.record_usage(&id, &call.outcome.usage);
                let requested = branch::parse(self.command, self.policy, depth, &call.arguments)?;
                let children = self.accept(&id, depth, &provider, &reasoning_effort, &requested);
                let scopes: Vec<&str> = requested.iter().map(|child| child.scope.as_str()).collect();
                let starts = children.iter().zip(&requested).enumerate().map(|(index, (child, wanted))| {
                    let result = ChildResult {
                        branch_id: &child.id,
                        parent_branch_id: &id,
                        message: format!("In scope: {}", wanted.scope),
                        path_hints: &wanted.path_hints,
                        sibling_scopes: scopes
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| *i != index)
                            .map(|(_, s)| *s)
                            .collect(),
                        model: &child.model,
                        reasoning_effort: &child.reasoning_effort,
                        depth: depth + 1,
                    };
                    let mut history = if child.model == provider.model() {
                        call.conversation.clone()
                    } else {
                        provider::portable_items(&call.conversation)
                    };
                    let output = serde_json::to_string(&result).unwrap_or_default();
                    history.push(Item::FunctionCallOutput { call_id: call.call_id.clone(), output });
                    Start {
                        id: child.id.clone(),
                        depth: depth + 1,
                        scope: wanted.scope.clone(),
                        provider: provider.fork(&child.model, &child.reasoning_effort, provider.turn_state()),
                        reasoning_effort: child.reasoning_effort.clone(),
                        history,
                    }
                });
                let starts: Vec<Start> = starts.collect();
                let subtrees =
                    futures_util::future::try_join_all(starts.into_iter().map(|start| self.node(start))).await?;
                let mut grown = Grown {
                    leaves: Vec::new(),
                    tool_calls: call.outcome.tool_calls,
                    repair_calls: call.outcome.repair_calls,
                    usage: call.outcome.usage,
                    controls_removed: call.outcome.controls_removed,
                };
                subtrees.into_iter().for_each(|subtree| grown.absorb(subtree));
                Ok(grown)
            }
        }
    }

    /// Allocates the children's identities (`b1`, `b2`, ... across the
    /// tree), resolves inherited models and efforts, and records them.
    fn accept(
        &self,
        parent: &str,
        depth: u32,
        provider: &Provider,
        effort: &str,
        requested: &[branch::Requested],
    ) -> Vec<BranchMetric> {
        let Ok(mut branches) = self.branches.lock() else { return Vec::new() };
        let children: Vec<BranchMetric> = requested
            .iter()
            .enumerate()
            .map(|(index, wanted)| BranchMetric {
                id: format!("b{}", branches.len() + index + 1),
                parent_id: parent.to_string(),
                model: if wanted.model == branch::INHERIT {
                    provider.model().to_string()
                } else {
                    wanted.model.clone()
                },
                reasoning_effort: if wanted.reasoning_effort == branch::INHERIT {
                    effort.to_string()
                } else {
                    wanted.reasoning_effort.clone()
                },
                usage: UsageMetric::default(),
            })
            .collect();
        branches.extend(children.iter().cloned());
        drop(branches);
        (self.trace)(
            Event::new(branch::FANOUT_EVENT)
                .with("parent", parent)
                .with("depth", depth)
                .with("children", children.len()),
        );
        children
    }

    /// Records a finished branch conversation's own usage (each one ends
    /// once); a root's usage only counts in the aggregate.
    fn record_usage(&self, id: &str, usage: &Usage) {
        let Ok(mut branches) = self.branches.lock() else { return };
        if let Some(metric) = branches.iter_mut().find(|metric| metric.id == id) {
            metric.usage = UsageMetric::from(usage);
        }
    }
}

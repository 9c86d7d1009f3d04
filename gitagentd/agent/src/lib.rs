//! The model's side of every command: the bounded agent loop every
//! generation task runs, the tools it offers ([`tools`]), the prompt
//! templates ([`prompt`]), project guidance ([`guidance`]) and skills
//! ([`skills`]).
//!
//! The loop (spec "Agent loop (spec "Agent loop
//! lifecycle", steps 10-19): it sends the assembled request, validates
//! each batch of tool calls before running any, runs admitted calls
//! concurrently and appends their outputs in provider order, turns
//! recoverable tool failures (bad arguments, a tool name the request does
//! not offer) into `ok: false` envelopes, and forces a
//! tool-free final answer when a ceiling (steps, tool calls, context
//! budget, a repeated call) is reached. The final text is shaped and
//! validated by the task, with exactly one repair pass.
//!
//! The loop knows tools only through [`ToolRegistry`] and the provider
//! only through domain values; it never writes to the caller directly but
//! reports through a trace sink.
//!
//! [`run_node`] may also offer one terminal control function (review's
//! `branch`) on normal steps. The loop never runs it: the ordinary calls
//! of the same response run and join first (and the batch guard rechecks
//! the snapshot), then the conversation retires and hands the call back
//! as [`Node::Branch`] for the caller to fan out. A request offering it
//! sends `parallel_tool_calls: false`, whatever the task allows.

mod batch;
pub mod controls;
pub use batch::BatchError;
pub mod guidance;
pub mod layers;
pub mod prompt;
mod request;
pub mod skills;
pub mod tools;

pub use request::{AgentTask, Layers};

use crate::tools::{ToolError, ToolRegistry, error_envelope, success_envelope};
use gitagent_provider::{
    FunctionCall, HostedSearch, Item, ModelRequest, ModelResponse, Provider, ProviderError, StreamNotice, ToolSpec,
    Usage, redact,
};
use gitagent_runtime::trace::Event;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Ceilings of one loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_steps: u32,
    pub max_tool_calls: u32,
    /// Tokens a request may reach before the loop finalizes: 80% of a
    /// 272,000-token window.
    pub context_tokens: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_steps: 30, max_tool_calls: 24, context_tokens: 217_600 }
    }
}

/// Turns a raw answer into the task's artifact.
pub type Shaper = Box<dyn Fn(&str) -> String + Send + Sync>;
/// Lists what is wrong with an artifact; empty when it is valid.
pub type Validator = Box<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// The task's output rules: shaping, then validation.
pub struct OutputRules {
    pub shape: Shaper,
    pub validate: Validator,
}

/// What a finished loop produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The shaped, validated final text.
    pub text: String,
    /// Model requests made (including finalization and repair).
    pub steps: u32,
    pub tool_calls: u32,
    pub repair_calls: u32,
    pub usage: Usage,
    /// The provider-visible conversation that produced the text, its
    /// answer included: what a follow-up replays.
    pub conversation: Vec<Item>,
    /// Why the provider refused hosted web search, when it did; the rest
    /// of the run went without it and the answer was asked to say so.
    pub hosted_search_failure: Option<&'static str>,
    /// Time spent waiting for the provider.
    pub provider_time: Duration,
    /// Time spent running tools.
    pub tool_time: Duration,
    /// Bytes of terminal control sequences removed from the answer
    /// ([`controls`]); the command says so on stderr.
    pub controls_removed: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the command was cancelled")]
    Cancelled,
    #[error("the command ran out of time\nhint: pass a longer --timeout, such as --timeout 5m")]
    DeadlineExceeded,
    #[error(
        "the first request is estimated at {estimated} tokens, at or over the {limit}-token context budget\n\
         hint: stage fewer changes at once"
    )]
    ContextTooLarge { estimated: u64, limit: u64 },
    #[error("the model's tool calls were rejected: {0}")]
    InvalidBatch(#[from] batch::BatchError),
    #[error("the model returned neither text nor tool calls (step {step})")]
    NoOutput { step: u32 },
    #[error("the model asked for tools during the tool-free final request")]
    ToolsWhileFinalizing,
    #[error("the output failed validation after one repair: {}", .errors.join("; "))]
    Invalid { errors: Vec<String> },
    #[error(transparent)]
    Prompt(#[from] crate::prompt::PromptError),
}

/// Where the loop runs: its provider, cancellation and deadline, the
/// sink its trace events go to, and who watches the answer stream.
pub struct RunContext<'a> {
    pub provider: &'a Provider,
    /// Fires when the caller goes away or the deadline passes.
    pub cancel: CancellationToken,
    pub deadline: Option<Instant>,
    pub trace: &'a (dyn Fn(Event) + Send + Sync),
    /// Receives the answer text as it streams, for a caller showing it
    /// live (`commit --interactive`); the outcome's text is what counts.
    pub on_text: Option<&'a (dyn Fn(TextPiece<'_>) + Send + Sync)>,
}

/// A piece of the model's answer as it streams, terminal controls already
/// removed: its model step, the attempt of that step's request (a broken
/// stream is retried once, from the start), and the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextPiece<'a> {
    pub step: u32,
    pub attempt: u32,
    pub text: &'a str,
}

impl RunContext<'_> {
    /// Why the run stopped when its token fired.
    fn stopped(&self) -> AgentError {
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => AgentError::DeadlineExceeded,
            _ => AgentError::Cancelled,
        }
    }
}

/// Why the loop stopped calling tools.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ceiling {
    Steps { used: u32, limit: u32 },
    ToolCalls { used: u32, limit: u32, next_tool: String },
    Context { used: u64, limit: u64 },
    RepeatedCall { tool: String },
}

impl Ceiling {
    fn describe(&self) -> String {
        match self {
            Self::Steps { used, limit } => format!("model-step budget reached at {used}/{limit}"),
            Self::ToolCalls { used, limit, next_tool } => {
                format!("tool-call budget reached at {used}/{limit} before {next_tool:?}")
            }
            Self::Context { used, limit } => format!("context budget reached at {used}/{limit} tokens"),
            Self::RepeatedCall { tool } => format!("no progress: {tool:?} was called again with the same arguments"),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Steps { .. } => "model_steps",
            Self::ToolCalls { .. } => "tool_calls",
            Self::Context { .. } => "context",
            Self::RepeatedCall { .. } => "no_progress",
        }
    }
}

/// The loop's running state.
struct Conversation<'a> {
    ctx: &'a RunContext<'a>,
    task: &'a AgentTask,
    instructions: String,
    items: Vec<Item>,
    outcome: Outcome,
    seen: batch::Seen,
    /// Hosted search for normal steps, until the provider rejects it.
    web_search: Option<HostedSearch>,
    /// The terminal control function normal steps offer, if any.
    control: Option<&'a ToolSpec>,
}

/// How one conversation ended: with a validated answer, or retired by the
/// terminal control call it made.
#[derive(Debug)]
pub enum Node {
    Final(Outcome),
    Branch(ControlCall),
}

/// An accepted terminal control call and the conversation that made it.
#[derive(Debug, Clone)]
pub struct ControlCall {
    pub call_id: String,
    pub arguments: String,
    /// The provider-visible conversation up to the call: its response
    /// (the control call included) and the outputs of the ordinary calls
    /// beside it, in provider order. The control call has no output yet;
    /// each child appends its own.
    pub conversation: Vec<Item>,
    /// The retired conversation's counters: its steps, usage and tool
    /// calls (the control call counts as one).
    pub outcome: Outcome,
}

/// Runs `task` to a final, validated text.
pub async fn run(ctx: &RunContext<'_>, task: &AgentTask, rules: Option<&OutputRules>) -> Result<Outcome, AgentError> {
    match run_node(ctx, task, rules, None).await? {
        Node::Final(outcome) => Ok(outcome),
        // Without a control function no call can retire the conversation.
        Node::Branch(_) => Err(AgentError::NoOutput { step: 0 }),
    }
}

/// Runs `task` like [`run`], offering `control` beside the registry's tools
/// on every normal step (never on forced finalization or repair). A
/// response that calls it ends the conversation with [`Node::Branch`].
pub async fn run_node(
    ctx: &RunContext<'_>,
    task: &AgentTask,
    rules: Option<&OutputRules>,
    control: Option<&ToolSpec>,
) -> Result<Node, AgentError> {
    // What enters the conversation is redacted once, here and in
    // `execute`, so the traces and records made from it hold markers; the
    // provider redacts every request body again before the wire.
    let redactor = ctx.provider.redactor();
    let mut instructions = request::instructions(task)?;
    redactor.redact_string(&mut instructions, redact::Origin::NONE);
    let mut items = if task.history.is_empty() { task.layers.items() } else { task.history.clone() };
    items.iter_mut().for_each(|item| redact_item(redactor, item));
    let mut conversation = Conversation {
        ctx,
        task,
        instructions,
        items,
        outcome: Outcome::default(),
        seen: batch::Seen::default(),
        web_search: task.web_search,
        control,
    };
    let (text, items) = match conversation.run_tools_loop().await? {
        Ended::Answer(text, items) => (text, items),
        Ended::Control(call) => {
            let mut outcome = conversation.outcome;
            outcome.conversation = conversation.items;
            return Ok(Node::Branch(ControlCall {
                call_id: call.call_id,
                arguments: call.arguments,
                conversation: outcome.conversation.clone(),
                outcome,
            }));
        }
    };
    conversation.items = items;
    let text = conversation.without_controls(&text);
    let Some(rules) = rules else {
        conversation.outcome.text = text;
        conversation.outcome.conversation = conversation.items;
        return Ok(Node::Final(conversation.outcome));
    };
    let shaped = (rules.shape)(&text);
    let errors = (rules.validate)(&shaped);
    if errors.is_empty() {
        conversation.outcome.text = shaped;
        conversation.outcome.conversation = conversation.items;
        return Ok(Node::Final(conversation.outcome));
    }
    (ctx.trace)(
        Event::new("validation")
            .with("decision", "repair")
            .with("errors", gitagent_runtime::trace::Value::List(errors.clone())),
    );
    let repair =
        crate::prompt::render("repair", include_str!("prompts/repair.md.j2"), serde_json::json!({ "errors": errors }))?;
    conversation.items.push(Item::user(repair));
    conversation.outcome.repair_calls += 1;
    let response = conversation.request(Vec::new(), false).await?;
    if !response.tool_calls.is_empty() {
        return Err(AgentError::ToolsWhileFinalizing);
    }
    let text = conversation.without_controls(&response.text);
    let shaped = (rules.shape)(&text);
    let errors = (rules.validate)(&shaped);
    if !errors.is_empty() {
        return Err(AgentError::Invalid { errors });
    }
    conversation.items.extend(answer_items(&response));
    conversation.outcome.text = shaped;
    conversation.outcome.conversation = conversation.items;
    Ok(Node::Final(conversation.outcome))
}

/// Redacts the text a conversation item carries (messages and call
/// outputs; what the model produced is sent as it came, and redacted on
/// the wire).
fn redact_item(redactor: &gitagent_provider::Redactor, item: &mut Item) {
    match item {
        Item::Message { text, .. } => {
            redactor.redact_string(text, redact::Origin::NONE);
        }
        Item::FunctionCallOutput { output, .. } => {
            redactor.redact_string(output, redact::Origin::NONE);
        }
        Item::FunctionCall(_) | Item::Replay(_) => {}
    }
}

/// How the tool loop ended.
enum Ended {
    /// A text answer and the conversation including it.
    Answer(String, Vec<Item>),
    /// The terminal control call, after the ordinary calls beside it ran.
    Control(FunctionCall),
}

impl Conversation<'_> {
    /// The answer without terminal control sequences; what was removed is
    /// counted in the outcome and traced.
    fn without_controls(&mut self, text: &str) -> String {
        let (clean, removed) = match self.task.text_format {
            Some(_) => controls::strip_json(text),
            None => controls::strip(text),
        };
        if removed > 0 {
            self.outcome.controls_removed += removed;
            (self.ctx.trace)(Event::new("sanitize").with("removed_bytes", removed));
        }
        clean.into_owned()
    }

    /// Steps until the model answers with text; returns the text and the
    /// conversation including that answer.
    async fn run_tools_loop(&mut self) -> Result<Ended, AgentError> {
        let limits = self.task.limits;
        let tools = &self.task.tools;
        let control = self.control;
        let specs = || {
            let mut specs = tools.specs();
            specs.extend(control.cloned());
            specs
        };
        let control_name = control.map(|spec| spec.name.as_str());
        for step in 1..=limits.max_steps {
            let status = request::budget_status(step, limits, self.outcome.tool_calls)?;
            self.items.push(Item::developer(status).with_cache_breakpoint());
            if step == 1 {
                let estimated = self.estimate(specs());
                if estimated >= limits.context_tokens {
                    return Err(AgentError::ContextTooLarge { estimated, limit: limits.context_tokens });
                }
            }
            let response = self.normal_step(specs()).await?;
            if response.tool_calls.is_empty() {
                if response.text.trim().is_empty() {
                    return Err(AgentError::NoOutput { step: self.outcome.steps });
                }
                let mut items = self.items.clone();
                items.extend(answer_items(&response));
                return Ok(Ended::Answer(response.text, items));
            }
            let batch =
                batch::validate(&response.tool_calls, control_name, &self.seen).map_err(AgentError::InvalidBatch)?;
            self.append_calls(&response);
            if response.usage.input_tokens >= limits.context_tokens {
                let ceiling = Ceiling::Context { used: response.usage.input_tokens, limit: limits.context_tokens };
                return self.finalize(ceiling).await;
            }
            if let Some(tool) = batch.repeated_tool {
                return self.finalize(Ceiling::RepeatedCall { tool }).await;
            }
            if self.outcome.tool_calls + batch.calls.len() as u32 > limits.max_tool_calls {
                let left = limits.max_tool_calls.saturating_sub(self.outcome.tool_calls) as usize;
                let next_tool = batch.calls[left.min(batch.calls.len() - 1)].name.clone();
                let ceiling =
                    Ceiling::ToolCalls { used: self.outcome.tool_calls, limit: limits.max_tool_calls, next_tool };
                return self.finalize(ceiling).await;
            }
            self.seen.remember(&batch.calls);
            let (ordinary, control): (Vec<FunctionCall>, Vec<FunctionCall>) =
                batch.calls.into_iter().partition(|call| Some(call.name.as_str()) != control_name);
            if !ordinary.is_empty() {
                self.execute(&ordinary).await?;
            }
            if let Some(call) = control.into_iter().next() {
                // The snapshot is rechecked before the call is accepted,
                // even when no ordinary call ran beside it.
                if ordinary.is_empty() {
                    self.check_batch().await?;
                }
                self.outcome.tool_calls += 1;
                return Ok(Ended::Control(call));
            }
            let next = self.estimate(specs());
            if next >= limits.context_tokens {
                return self.finalize(Ceiling::Context { used: next, limit: limits.context_tokens }).await;
            }
            if step == limits.max_steps {
                return self.finalize(Ceiling::Steps { used: step, limit: limits.max_steps }).await;
            }
        }
        self.finalize(Ceiling::Steps { used: limits.max_steps, limit: limits.max_steps }).await
    }

    /// The request for the current conversation with `tools`, and hosted
    /// search when `normal` (not a finalization or repair request). A
    /// request offering the terminal control function never allows
    /// parallel tool calls (spec: a branch control tool forces it off).
    fn model_request(&self, tools: Vec<gitagent_provider::ToolSpec>, normal: bool) -> ModelRequest {
        let offers_control = self.control.is_some_and(|control| tools.iter().any(|tool| tool.name == control.name));
        let parallel = self.task.parallel_tool_calls && !tools.is_empty() && !offers_control;
        ModelRequest {
            instructions: self.instructions.clone(),
            input: self.items.clone(),
            tools,
            parallel_tool_calls: parallel,
            text_format: self.task.text_format.clone(),
            web_search: if normal { self.web_search } else { None },
        }
    }

    /// The local token estimate of the next normal request: a quarter of
    /// its encoded size.
    fn estimate(&self, tools: Vec<gitagent_provider::ToolSpec>) -> u64 {
        let body = self.ctx.provider.request_body(&self.model_request(tools, true));
        (body.to_string().len() as u64).div_ceil(4)
    }

    /// A normal step's request. When the provider rejects hosted search,
    /// the rest of the run goes without it, the model is told to disclose
    /// that in its summary, and the step is repeated once; without hosted
    /// search the repeat cannot be rejected for it again.
    async fn normal_step(&mut self, tools: Vec<gitagent_provider::ToolSpec>) -> Result<ModelResponse, AgentError> {
        match self.request(tools.clone(), true).await {
            Err(AgentError::Provider(ProviderError::HostedSearchRejected { reason, .. }))
                if self.web_search.is_some() =>
            {
                (self.ctx.trace)(
                    Event::new("hosted-capability")
                        .with("kind", "web_search")
                        .with("status", "disabled")
                        .with("reason", reason),
                );
                self.web_search = None;
                self.outcome.hosted_search_failure = Some(reason);
                self.items.push(Item::developer(include_str!("prompts/hosted-search-unavailable.md").trim()));
                self.request(tools, true).await
            }
            other => other,
        }
    }

    /// One model request; every request is a step with its usage line.
    async fn request(
        &mut self,
        tools: Vec<gitagent_provider::ToolSpec>,
        normal: bool,
    ) -> Result<ModelResponse, AgentError> {
        let request = self.model_request(tools, normal);
        let step = self.outcome.steps + 1;
        let trace = self.ctx.trace;
        trace(
            Event::new("request")
                .with("step", step)
                .with("model", self.ctx.provider.model())
                .with("input_items", request.input.len())
                .with("tools", request.tools.len())
                .with("web_search", request.web_search.is_some()),
        );
        let on_text = self.ctx.on_text;
        let notice = |notice: StreamNotice| match notice {
            StreamNotice::Retrying { reason, first_failure } => trace(
                Event::new("provider.retry")
                    .with("step", step)
                    .with("reason", reason.as_str())
                    .with("failure", first_failure),
            ),
            StreamNotice::ReasoningSummary { attempt, delta } => {
                trace(Event::new("reasoning_summary.delta").with("attempt", attempt).with("delta", delta))
            }
            StreamNotice::OutputText { attempt, delta } => {
                if let Some(on_text) = on_text {
                    let (text, _) = controls::strip(&delta);
                    if !text.is_empty() {
                        on_text(TextPiece { step, attempt, text: &text });
                    }
                }
            }
        };
        let started = Instant::now();
        let result = self.ctx.provider.respond(&request, &self.ctx.cancel, &notice).await;
        self.outcome.provider_time += started.elapsed();
        self.outcome.steps = step;
        let response = match result {
            Ok(response) => response,
            Err(ProviderError::Cancelled) => return Err(self.ctx.stopped()),
            Err(error) => return Err(error.into()),
        };
        let usage = response.usage;
        self.outcome.usage.add(&usage);
        trace(
            Event::new("llm.usage")
                .with("step", step)
                .with("input_tokens", usage.input_tokens)
                .with("cached_input_tokens", usage.cached_input_tokens)
                .with("cache_write_input_tokens", usage.cache_write_input_tokens)
                .with("output_tokens", usage.output_tokens),
        );
        trace(
            Event::new("response")
                .with("step", step)
                .with("id", response.id.as_str())
                .with("status", response.status.as_str())
                .with("tool_calls", response.tool_calls.len())
                .with("text", response.text.as_str()),
        );
        Ok(response)
    }

    /// Appends the provider's continuation (or, without one, the calls).
    fn append_calls(&mut self, response: &ModelResponse) {
        if response.continuation.iter().any(|item| item.function_call().is_some()) {
            self.items.extend(response.continuation.iter().cloned());
        } else {
            self.items.extend(response.continuation.iter().cloned());
            self.items.extend(response.tool_calls.iter().cloned().map(Item::FunctionCall));
        }
    }

    /// Runs the admitted calls concurrently and appends their outputs in
    /// provider order.
    async fn execute(&mut self, calls: &[FunctionCall]) -> Result<(), AgentError> {
        let trace = self.ctx.trace;
        for call in calls {
            trace(
                Event::new("tool-call")
                    .with("name", call.name.as_str())
                    .with("call_id", call.call_id.as_str())
                    .with("arguments", call.arguments.as_str()),
            );
        }
        let started = Instant::now();
        let control = self.control.map(|spec| spec.name.as_str());
        let futures = calls.iter().map(|call| {
            // A name the request does not offer is repaired like bad
            // arguments: the model learns which tools exist and goes on.
            let tool = (self.task.tools.get(&call.name))
                .ok_or_else(|| batch::unknown_tool_message(&call.name, &self.task.tools, control));
            let cancel = self.ctx.cancel.clone();
            let arguments = call.arguments.clone();
            async move {
                match tool {
                    Ok(tool) => tool.call(&arguments, cancel).await,
                    Err(message) => Err(ToolError::Recoverable(message)),
                }
            }
        });
        let results = tokio::select! {
            biased;
            () = self.ctx.cancel.cancelled() => return Err(self.ctx.stopped()),
            results = futures_util::future::join_all(futures) => results,
        };
        // Whatever the calls read must still describe the state the task
        // is bound to once they have all returned.
        self.check_batch().await?;
        self.outcome.tool_time += started.elapsed();
        for (call, result) in calls.iter().zip(results) {
            let redactor = self.ctx.provider.redactor();
            let (output, truncated) = match result {
                Ok(mut output) => {
                    redactor.redact_json(&mut output.data);
                    (success_envelope(&call.name, &output), output.truncated)
                }
                Err(ToolError::Cancelled) => return Err(self.ctx.stopped()),
                Err(ToolError::Recoverable(message)) => (error_envelope(&call.name, &redactor.text(&message)), false),
            };
            let mut event = Event::new("tool-output")
                .with("name", call.name.as_str())
                .with("call_id", call.call_id.as_str())
                .with("truncated", truncated)
                .with("content", output.as_str());
            if self.task.tools.get(&call.name).is_none() {
                event = event.with("unknown_tool", true);
            }
            trace(event);
            self.outcome.tool_calls += 1;
            self.items.push(Item::FunctionCallOutput { call_id: call.call_id.clone(), output });
        }
        Ok(())
    }

    /// Runs the registry's batch guard, if any: a failure stops the loop.
    async fn check_batch(&self) -> Result<(), AgentError> {
        let Some(guard) = self.task.tools.batch_guard() else { return Ok(()) };
        let checked = tokio::select! {
            biased;
            () = self.ctx.cancel.cancelled() => return Err(self.ctx.stopped()),
            checked = guard() => checked,
        };
        checked.map_err(|_| self.ctx.stopped())
    }

    /// The tool-free final request after a ceiling.
    async fn finalize(&mut self, ceiling: Ceiling) -> Result<Ended, AgentError> {
        let limits = self.task.limits;
        (self.ctx.trace)(
            Event::new("budget")
                .with("kind", ceiling.kind())
                .with("decision", "finalize")
                .with("reason", ceiling.describe()),
        );
        for (call_id, name) in batch::unanswered(&self.items) {
            let output = error_envelope(&name, "not executed: the agent is finalizing without tools");
            self.items.push(Item::FunctionCallOutput { call_id, output });
        }
        let notice = crate::prompt::render(
            "forced-finalization",
            include_str!("prompts/forced-finalization.md.j2"),
            serde_json::json!({
                "reason": ceiling.describe(),
                "max_steps": limits.max_steps,
                "max_tools": limits.max_tool_calls,
            }),
        )?;
        self.items.push(Item::developer(notice).with_cache_breakpoint());
        let response = self.request(Vec::new(), false).await?;
        if !response.tool_calls.is_empty() {
            return Err(AgentError::ToolsWhileFinalizing);
        }
        if response.text.trim().is_empty() {
            return Err(AgentError::NoOutput { step: self.outcome.steps });
        }
        let mut items = self.items.clone();
        items.extend(answer_items(&response));
        Ok(Ended::Answer(response.text, items))
    }
}

/// The items that record a text answer in the conversation.
fn answer_items(response: &ModelResponse) -> Vec<Item> {
    if response.continuation.is_empty() {
        vec![Item::assistant(response.text.clone())]
    } else {
        response.continuation.clone()
    }
}

/// The tool registry's names, for tracing.
pub fn tool_names(tools: &ToolRegistry) -> Vec<String> {
    tools.names().into_iter().map(str::to_string).collect()
}

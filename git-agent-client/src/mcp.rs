//! `git-agent mcp`: a Model Context Protocol server on stdin/stdout for
//! coding agents. Each tool call becomes the same daemon call as the
//! matching command line (`Run`, `LaunchTask`, `WatchTask`, `WaitTask`), so
//! the daemon is started on demand and does all the work; this module only
//! turns tool arguments into a command line and the daemon's reply into a
//! tool result. What the CLI would print on stderr for a failure becomes a
//! tool error (`isError`), hint lines included; the daemon's progress lines
//! become MCP progress notifications when the caller sent a progress token.
//! A stdin line that is not JSON gets JSON-RPC's parse error ([`stdio`]).

mod stdio;

use crate::daemon::{self, DaemonError, Interrupted};
use git_agent_shared::environment::vars;
use gitagent_proto::v1 as pb;
use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

const INSTRUCTIONS: &str = "git-agent tools for the Git repository at the server's working directory (or `cwd`). \
Use `search` to find code by meaning, `explore` for a grounded answer to a codebase question, \
`review`/`simplify` to launch a detached read-only inspection and `task_wait`/`task_status` to follow it.";

/// Serves MCP on stdio until the client closes stdin. `base` is the
/// invocation of `git-agent mcp` itself: its environment and working
/// directory are those of every call.
pub async fn serve(base: pb::Invocation) -> i32 {
    let socket = {
        let env = git_agent_shared::Environment::new(base.env.clone().into_iter().collect());
        match daemon::checked_socket(&env) {
            Ok(socket) => socket,
            Err(error) => {
                eprintln!("error: {}", git_agent_shared::error_chain::Chain(&error));
                return 1;
            }
        }
    };
    let server = McpServer { base, socket };
    let (transport, writer) = stdio::frame(tokio::io::stdin(), tokio::io::stdout());
    let running = match server.serve(transport).await {
        Ok(running) => running,
        Err(error) => {
            let _ = writer.await;
            eprintln!("error: the MCP session did not start: {error}");
            return 1;
        }
    };
    let code = match running.waiting().await {
        Ok(_) => 0,
        Err(error) => {
            eprintln!("error: the MCP session failed: {error}");
            1
        }
    };
    // The session is over and rmcp's side closed: the last messages are
    // written before the process exits.
    let _ = writer.await;
    code
}

struct McpServer {
    base: pb::Invocation,
    socket: PathBuf,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchInput {
    /// What to look for: natural language or identifiers.
    query: String,
    /// Comma-separated paths, relative to cwd, to search within.
    scope: Option<String>,
    /// Maximum number of results, 1..100 (default 20).
    limit: Option<i64>,
    /// Search source-code files only.
    #[serde(default)]
    code: bool,
    /// Exclude test files and test directories.
    #[serde(default)]
    no_tests: bool,
    /// Search the committed tree of this revision instead of the files on disk.
    rev: Option<String>,
    /// Search a remote Git repository (URL or path) instead of the local one.
    remote: Option<String>,
    /// Working directory of the call (default: the server's).
    cwd: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ExploreFor {
    Diagnose,
    Change,
    Behavior,
    Owner,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ExploreInput {
    /// The codebase question, in natural language.
    question: String,
    /// What the answer should prioritize: diagnose (failure cause), change (where and how to edit), behavior (current semantics), owner (authoritative implementation).
    #[serde(rename = "for")]
    target: Option<ExploreFor>,
    /// The `id` of a previous explore result, to continue its session.
    follow_up: Option<String>,
    /// Working directory of the call (default: the server's).
    cwd: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum InspectMode {
    Uncommitted,
    Staged,
    Codebase,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Depth {
    Fast,
    Balanced,
    Thorough,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InspectInput {
    /// What to inspect (default uncommitted: staged, unstaged and untracked changes). Exclusive with base and commit.
    mode: Option<InspectMode>,
    /// Inspect HEAD against its merge base with this ref (a pull request's changes).
    base: Option<String>,
    /// Inspect this one commit against its first parent.
    commit: Option<String>,
    /// Inspection budget (default balanced).
    depth: Option<Depth>,
    /// Focus hint for the inspection.
    prompt: Option<String>,
    /// Working directory of the call (default: the server's).
    cwd: Option<String>,
}

fn default_block() -> bool {
    true
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskWaitInput {
    /// The task id returned by review or simplify.
    id: String,
    /// false: return at once; a task still running is then a tool error naming its phase.
    #[serde(default = "default_block")]
    block: bool,
    /// Working directory of the call (default: the server's).
    cwd: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskStatusInput {
    /// The task id returned by review or simplify.
    id: String,
    /// Working directory of the call (default: the server's).
    cwd: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProjectIdInput {
    /// Working directory of the call (default: the server's).
    cwd: Option<String>,
}

/// A tool call that could not produce its result: the text the CLI would
/// print on stderr.
struct ToolFailure(String);

impl ToolFailure {
    fn error(message: impl std::fmt::Display) -> Self {
        Self(format!("error: {message}"))
    }
}

impl From<DaemonError> for ToolFailure {
    fn from(error: DaemonError) -> Self {
        Self::error(git_agent_shared::error_chain::Chain(&error))
    }
}

type ToolResult = Result<Vec<ContentBlock>, ToolFailure>;

/// The names of [`tools`], in their order.
const TOOL_NAMES: [&str; 7] = ["search", "explore", "review", "simplify", "task_wait", "task_status", "project_id"];

/// A tool's input type gives no valid MCP input schema: a defect of this
/// build, answered to the MCP client as an internal error.
#[derive(Debug, thiserror::Error)]
#[error("the input schema of {type_name} is not a valid MCP input schema: {reason}")]
struct InputSchemaError {
    type_name: &'static str,
    /// rmcp's explanation.
    reason: String,
}

/// The strict MCP input schema of `T`.
fn input_schema<T: JsonSchema + 'static>() -> Result<std::sync::Arc<rmcp::model::JsonObject>, InputSchemaError> {
    schema_for_input::<T>().map_err(|reason| InputSchemaError { type_name: std::any::type_name::<T>(), reason })
}

/// The tools, their descriptions and input schemas.
fn tools() -> Result<Vec<Tool>, InputSchemaError> {
    let read_only = || ToolAnnotations::new().read_only(true);
    Ok(vec![
        Tool::new(
            "search",
            "Semantic code search over the repository (embeddings plus lexical ranking). Returns the search JSON: \
             ranked results with path, line range, score and snippet. The first call in a repository builds the index.",
            input_schema::<SearchInput>()?,
        )
        .annotate(read_only()),
        Tool::new(
            "explore",
            "Answer a codebase question with grounded findings (paths, lines, evidence). Returns one JSON object \
             whose `id` can be passed as follow_up to continue the session.",
            input_schema::<ExploreInput>()?,
        )
        .annotate(read_only()),
        Tool::new(
            "review",
            "Launch a detached, evidence-backed read-only code review. Returns the launch object \
             {command, id, pid} at once; get the report with task_wait.",
            input_schema::<InspectInput>()?,
        ),
        Tool::new(
            "simplify",
            "Launch a detached read-only simplification audit. Returns the launch object {command, id, pid} \
             at once; get the report with task_wait.",
            input_schema::<InspectInput>()?,
        ),
        Tool::new(
            "task_wait",
            "The JSON report of a review or simplify task, waiting until it ends (block=false: fail at once while it runs).",
            input_schema::<TaskWaitInput>()?,
        )
        .annotate(read_only()),
        Tool::new(
            "task_status",
            "The state (running, succeeded, failed) and live phase of a review or simplify task, without waiting.",
            input_schema::<TaskStatusInput>()?,
        )
        .annotate(read_only()),
        Tool::new(
            "project_id",
            "The project identifier of the repository, shared by its search indexes and task records.",
            input_schema::<ProjectIdInput>()?,
        )
        .annotate(read_only()),
    ])
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("git-agent", git_agent_shared::build::VERSION))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = tools().map_err(|error| McpError::internal_error(error.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let progress = request
            .meta
            .as_ref()
            .and_then(|meta| meta.get_progress_token())
            .or_else(|| context.meta.get_progress_token())
            .map(|token| Progress::new(context.peer.clone(), token));
        if !TOOL_NAMES.contains(&request.name.as_ref()) {
            return Err(McpError::invalid_params(format!("unknown tool {:?}", request.name), None));
        }
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let call = Call { server: self, progress, cancel: context.ct.clone() };
        let outcome = call.dispatch(&request.name, arguments).await;
        Ok(match outcome {
            Ok(content) => CallToolResult::success(content),
            Err(ToolFailure(text)) => CallToolResult::error(vec![ContentBlock::text(text)]),
        }
        .into())
    }
}

/// The tool's arguments, or a tool error naming what is wrong with them
/// (a tool error rather than a protocol error, so the model reads it).
fn parse<T: serde::de::DeserializeOwned>(tool: &str, arguments: serde_json::Value) -> Result<T, ToolFailure> {
    serde_json::from_value(arguments).map_err(|error| {
        ToolFailure(format!(
            "error: invalid arguments for {tool}: {error}\nhint: see the tool's input schema (tools/list)"
        ))
    })
}

/// Progress notifications for one call that asked for them.
struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    last: f64,
}

impl Progress {
    fn new(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        Self { peer, token, last: 0.0 }
    }

    /// Reports one progress line. `done/total chunks` lines carry their
    /// counts; other lines repeat the last count, so the value never goes
    /// back.
    async fn report(&mut self, text: &str) {
        let (progress, total) = match chunk_counts(text) {
            Some((done, total)) => (self.last.max(done as f64), total.map(|total| total as f64)),
            None => (self.last, None),
        };
        self.last = progress;
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress).with_message(text);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        // A client that went away ends the session; nothing to do here.
        let _ = self.peer.notify_progress(param).await;
    }
}

/// `12/3400` in `search: building embeddings 12/3400 chunks (...)`; the
/// total is `None` while it is still growing (`12/3400+`: the walk is
/// still finding files).
fn chunk_counts(text: &str) -> Option<(u64, Option<u64>)> {
    // The counts stand before their unit; a fetch line also holds a URL.
    let words: Vec<&str> = text.split_whitespace().collect();
    let counts = words
        .windows(2)
        .rev()
        .find(|pair| pair[0].contains('/') && (pair[1].starts_with("chunks") || pair[1] == "inputs"))
        .map(|pair| pair[0])?;
    let (done, total) = counts.split_once('/')?;
    let total = if total.ends_with('+') { None } else { Some(total.parse().ok()?) };
    Some((done.parse().ok()?, total))
}

/// One tool call in progress.
struct Call<'a> {
    server: &'a McpServer,
    progress: Option<Progress>,
    cancel: CancellationToken,
}

impl Call<'_> {
    async fn dispatch(self, tool: &str, arguments: serde_json::Value) -> ToolResult {
        match tool {
            "search" => self.search(parse(tool, arguments)?).await,
            "explore" => self.explore(parse(tool, arguments)?).await,
            "review" | "simplify" => self.inspect(tool, parse(tool, arguments)?).await,
            "task_wait" => self.task_wait(parse(tool, arguments)?).await,
            "task_status" => self.task_status(parse(tool, arguments)?).await,
            _ => self.project_id(parse(tool, arguments)?).await,
        }
    }

    async fn search(mut self, input: SearchInput) -> ToolResult {
        let mut args = vec!["search".to_string(), "--format".into(), "json".into()];
        push_option(&mut args, "--scope", input.scope);
        push_option(&mut args, "--limit", input.limit.map(|limit| limit.to_string()));
        push_flag(&mut args, "--code", input.code);
        push_flag(&mut args, "--no-tests", input.no_tests);
        push_option(&mut args, "--rev", input.rev);
        push_option(&mut args, "--remote", input.remote);
        args.push("--".into());
        args.push(input.query);
        let invocation = self.server.invocation(args, input.cwd.as_deref())?;
        self.run(invocation).await
    }

    async fn explore(mut self, input: ExploreInput) -> ToolResult {
        let mut args = vec!["explore".to_string()];
        let target = input.target.map(|target| {
            match target {
                ExploreFor::Diagnose => "diagnose",
                ExploreFor::Change => "change",
                ExploreFor::Behavior => "behavior",
                ExploreFor::Owner => "owner",
            }
            .to_string()
        });
        push_option(&mut args, "--for", target);
        push_option(&mut args, "--follow-up", input.follow_up);
        args.push("--".into());
        args.push(input.question);
        let invocation = self.server.invocation(args, input.cwd.as_deref())?;
        self.run(invocation).await
    }

    async fn project_id(mut self, input: ProjectIdInput) -> ToolResult {
        let invocation = self.server.invocation(vec!["project_id".into()], input.cwd.as_deref())?;
        let mut content = self.run(invocation).await?;
        // The CLI's trailing newline is not part of the identifier.
        if let Some(first) = content.first_mut()
            && let Some(text) = first.as_text().map(|text| text.text.trim_end().to_string())
        {
            *first = ContentBlock::text(text);
        }
        Ok(content)
    }

    /// `review` / `simplify`: a detached launch through `LaunchTask`.
    async fn inspect(self, command: &str, input: InspectInput) -> ToolResult {
        let mut args = vec![command.to_string()];
        if let Some(mode) = input.mode {
            args.push(
                match mode {
                    InspectMode::Uncommitted => "--uncommitted",
                    InspectMode::Staged => "--staged",
                    InspectMode::Codebase => "--codebase",
                }
                .into(),
            );
        }
        push_option(&mut args, "--base", input.base);
        push_option(&mut args, "--commit", input.commit);
        let depth = input.depth.map(|depth| {
            match depth {
                Depth::Fast => "fast",
                Depth::Balanced => "balanced",
                Depth::Thorough => "thorough",
            }
            .to_string()
        });
        push_option(&mut args, "--depth", depth);
        if let Some(prompt) = input.prompt {
            args.push("--".into());
            args.push(prompt);
        }
        let invocation = self.server.invocation(args, input.cwd.as_deref())?;
        let request = pb::LaunchTaskRequest { invocation: Some(invocation) };
        let reply = daemon::call(&self.server.socket, |mut client| {
            let request = request.clone();
            async move { client.launch_task(request).await }
        })
        .await?
        .map_err(|status| ToolFailure::error(status.message()))?
        .into_inner();
        let launch = serde_json::json!({"command": reply.command, "id": reply.id, "pid": reply.pid});
        Ok(vec![ContentBlock::text(launch.to_string())])
    }

    async fn task_status(self, input: TaskStatusInput) -> ToolResult {
        let invocation = self.server.invocation(Vec::new(), input.cwd.as_deref())?;
        let (status, _) = self.watch(&input.id, invocation).await?;
        Ok(vec![ContentBlock::text(status_json(&status).to_string())])
    }

    /// The stored report. A running task is waited for (with `waiting`
    /// progress from the task's phases), or with `block: false` is a tool
    /// error naming its phase.
    async fn task_wait(mut self, input: TaskWaitInput) -> ToolResult {
        let invocation = self.server.invocation(Vec::new(), input.cwd.as_deref())?;
        let (status, mut updates) = self.watch(&input.id, invocation.clone()).await?;
        if status.state == "running" {
            if !input.block {
                return Err(ToolFailure::error(format!(
                    "background task {} is still running (phase {})\nhint: call task_wait again later, or without block=false to wait",
                    input.id,
                    if status.phase.is_empty() { "starting" } else { &status.phase }
                )));
            }
            if let Some(progress) = self.progress.as_mut() {
                progress.report(&waiting_text(&status)).await;
                loop {
                    let next = tokio::select! {
                        () = self.cancel.cancelled() => return Err(ToolFailure::error("the call was cancelled")),
                        next = updates.message() => next,
                    };
                    // An ended or broken stream: WaitTask below tells which.
                    let Ok(Some(update)) = next else { break };
                    progress.report(&waiting_text(&update)).await;
                    if update.state != "running" {
                        break;
                    }
                }
            }
        }
        let request =
            pb::TaskRef { id: input.id.clone(), command: status.command.clone(), invocation: Some(invocation) };
        let wait = daemon::call(&self.server.socket, |mut client| {
            let request = request.clone();
            async move { client.wait_task(request).await }
        });
        let outcome = tokio::select! {
            () = self.cancel.cancelled() => return Err(ToolFailure::error("the call was cancelled")),
            outcome = wait => outcome,
        };
        let reply = outcome?.map_err(|status| ToolFailure::error(status.message()))?.into_inner();
        match reply.outcome {
            Some(pb::task_outcome::Outcome::ReportJson(report)) => {
                let mut content = vec![ContentBlock::text(report.trim_end())];
                if !reply.redacted.is_empty() {
                    content.push(ContentBlock::text(reply.redacted.trim_end()));
                }
                if let Some(line) = git_agent_shared::controls::removed_warning(reply.controls_removed) {
                    content.push(ContentBlock::text(line.trim_end()));
                }
                Ok(content)
            }
            Some(pb::task_outcome::Outcome::Error(message)) => Err(ToolFailure::error(message)),
            None => Err(ToolFailure::error("the daemon returned no task outcome")),
        }
    }

    /// The task's current status and the stream of its later changes.
    async fn watch(
        &self,
        id: &str,
        invocation: pb::Invocation,
    ) -> Result<(pb::TaskStatus, tonic::Streaming<pb::TaskStatus>), ToolFailure> {
        let request = pb::TaskRef { id: id.to_string(), command: String::new(), invocation: Some(invocation) };
        let mut stream = daemon::call(&self.server.socket, |mut client| {
            let request = request.clone();
            async move { client.watch_task(request).await }
        })
        .await?
        .map_err(|status| ToolFailure::error(status.message()))?
        .into_inner();
        match stream.message().await {
            Ok(Some(status)) => Ok((status, stream)),
            Ok(None) => Err(ToolFailure::error(format!("the daemon sent no status for background task {id}"))),
            Err(status) => Err(ToolFailure::error(status.message())),
        }
    }

    /// Runs a command line in the daemon: its stdout is the result, its
    /// stderr (warnings) a second block; a non-zero exit is a tool error
    /// carrying what the CLI prints on stderr.
    async fn run(&mut self, invocation: pb::Invocation) -> ToolResult {
        let command = invocation.args.first().cloned().unwrap_or_default();
        let request = pb::RunRequest { invocation: Some(invocation) };
        let mut stream = daemon::call(&self.server.socket, |mut client| {
            let request = request.clone();
            async move { client.run(request).await }
        })
        .await?
        .map_err(|status| ToolFailure::from(DaemonError::Rpc(status.message().to_string())))?
        .into_inner();
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let code = loop {
            // Dropping the stream on cancellation cancels the command.
            let next = tokio::select! {
                () = self.cancel.cancelled() => return Err(ToolFailure::error("the call was cancelled")),
                next = stream.message() => next,
            };
            // The daemon never fails a stream it has started: a broken or
            // unfinished one means it went away, and the tools only read.
            let Ok(Some(event)) = next else {
                return Err(DaemonError::Stopped { command, interrupted: Interrupted::Repeatable }.into());
            };
            let Some(event) = event.event else { continue };
            use pb::run_event::Event;
            match event {
                Event::Stdout(bytes) => stdout.extend_from_slice(&bytes),
                Event::Stderr(bytes) => stderr.extend_from_slice(&bytes),
                Event::Progress(line) if !line.text.is_empty() => {
                    if let Some(progress) = self.progress.as_mut() {
                        progress.report(&line.text).await;
                    }
                }
                Event::Progress(_) | Event::Trace(_) | Event::TextDelta(_) => {}
                Event::Action(_) => {
                    return Err(ToolFailure::error(
                        "the daemon asked for a client action, which the MCP server does not perform",
                    ));
                }
                Event::Exit(exit) => break exit.code,
            }
        };
        let stderr = String::from_utf8_lossy(&stderr).trim_end().to_string();
        if code != 0 {
            return Err(ToolFailure(if stderr.is_empty() {
                format!("error: the command failed with exit code {code}")
            } else {
                stderr
            }));
        }
        let mut content = vec![ContentBlock::text(String::from_utf8_lossy(&stdout).trim_end())];
        if !stderr.is_empty() {
            content.push(ContentBlock::text(stderr));
        }
        Ok(content)
    }
}

fn waiting_text(status: &pb::TaskStatus) -> String {
    let phase = if status.phase.is_empty() { status.state.as_str() } else { status.phase.as_str() };
    format!("{}: waiting ({phase})", status.command)
}

/// The `task_status` object.
fn status_json(status: &pb::TaskStatus) -> serde_json::Value {
    serde_json::json!({
        "id": status.id,
        "command": status.command,
        "project_id": status.project_id,
        "state": status.state,
        "phase": status.phase,
        "message": status.message,
        "started_unix_millis": status.started_unix_millis,
        "updated_unix_millis": status.updated_unix_millis,
    })
}

fn push_option(args: &mut Vec<String>, flag: &str, value: Option<String>) {
    if let Some(value) = value {
        args.push(flag.to_string());
        args.push(value);
    }
}

fn push_flag(args: &mut Vec<String>, flag: &str, set: bool) {
    if set {
        args.push(flag.to_string());
    }
}

impl McpServer {
    /// The invocation of one call: the server's, with `args` (checked by
    /// the shared command-line definition) and, when the call names one,
    /// another working directory (relative to the server's). The daemon sends progress only to a terminal, so the
    /// invocation claims one; the lines become notifications, never bytes.
    fn invocation(&self, args: Vec<String>, cwd: Option<&str>) -> Result<pb::Invocation, ToolFailure> {
        if !args.is_empty() {
            // The command line is checked as the CLI checks it, so a bad
            // combination fails with the CLI's own usage error.
            git_agent_shared::cli::parse_command(&args)
                .map_err(|error| ToolFailure(error.to_string().trim_end().to_string()))?;
        }
        let mut invocation = self.base.clone();
        invocation.args = args;
        invocation.stdout_is_terminal = false;
        invocation.stderr_is_terminal = true;
        if let Some(cwd) = cwd {
            let target = Path::new(std::ffi::OsStr::from_bytes(&self.base.cwd)).join(cwd);
            let resolved = std::fs::canonicalize(&target)
                .and_then(|path| match path.is_dir() {
                    true => Ok(path),
                    false => Err(std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory")),
                })
                .map_err(|source| {
                    ToolFailure::error(format!(
                        "cannot change to the directory {}: {source}\nhint: cwd takes an existing directory, relative to the MCP server's working directory",
                        target.display()
                    ))
                })?;
            invocation.cwd = resolved.as_os_str().as_bytes().to_vec();
            match resolved.to_str() {
                Some(text) => invocation.env.insert(vars::PWD.to_string(), text.to_string()),
                None => invocation.env.remove(vars::PWD),
            };
        }
        Ok(invocation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_schema_is_strict() {
        for tool in tools().unwrap() {
            let schema = serde_json::Value::Object(tool.input_schema.as_ref().clone());
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema["additionalProperties"], false, "{}: {schema}", tool.name);
            assert!(schema["properties"]["cwd"].is_object(), "{}: every tool takes cwd", tool.name);
        }
    }

    #[test]
    fn a_type_without_an_object_schema_is_a_typed_error_naming_it() {
        let error = input_schema::<String>().unwrap_err();
        assert_eq!(error.type_name, "alloc::string::String");
        assert!(error.to_string().starts_with("the input schema of alloc::string::String is not"), "{error}");
    }

    #[test]
    fn tool_names_match_the_tools() {
        let names: Vec<String> = tools().unwrap().into_iter().map(|tool| tool.name.into_owned()).collect();
        assert_eq!(names, TOOL_NAMES);
    }

    #[test]
    fn chunk_counts_come_from_the_progress_line() {
        assert_eq!(chunk_counts("search: building embeddings 12/3400 chunks (0.4%, 1s)"), Some((12, Some(3400))));
        assert_eq!(
            chunk_counts("search: building embeddings 12/3400+ chunks (still finding files, 1s)"),
            Some((12, None))
        );
        assert_eq!(chunk_counts("search: waiting for index worker"), None);
        // A fetch line names its URL before the counts of its inputs.
        let fetch = "search: fetching receiving objects from https://example.test/x.git: 40/90 objects, 1.2 MiB, 12 files chunked, 8/16 inputs embedded";
        assert_eq!(chunk_counts(fetch), Some((8, Some(16))));
        assert_eq!(chunk_counts("search: fetching listing refs of https://example.test/x.git"), None);
    }
}

//! Every `git-agent` command the daemon runs. A command receives the
//! caller's [`Invocation`], writes through [`Output`], and returns an exit
//! code; errors are classified once here into usage errors (exit 2) and
//! failures (exit 1) and printed to the caller's stderr.

mod commit_msg;
mod config;
mod explore;
pub mod generation;
mod index;
mod pr_message;
mod project_id;
mod release_note;
pub(crate) mod search;

pub use explore::ExploreBatcher;

use crate::services::Services;
use git_agent_shared::Environment;
use git_agent_shared::cli::{self, Command};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One command line as the caller ran it.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The caller's working directory, `--cwd` already applied.
    pub cwd: PathBuf,
    /// The arguments after the program name and `--cwd`.
    pub args: Vec<String>,
    pub env: Environment,
    pub stdout_is_terminal: bool,
    pub stderr_is_terminal: bool,
}

/// What a command sends back to the caller, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Progress(String),
    /// Asks the client to run `git commit [--amend] --file -` in the
    /// caller's context with this message.
    GitCommit {
        repository_root: PathBuf,
        message: String,
        amend: bool,
    },
    Exit(i32),
}

/// The caller's side of a running command. Sends never fail loudly: a
/// caller that went away cancels the command through its token instead.
#[derive(Debug, Clone)]
pub struct Output {
    tx: mpsc::UnboundedSender<Event>,
}

impl Output {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    pub fn stdout(&self, bytes: impl Into<Vec<u8>>) {
        let _ = self.tx.send(Event::Stdout(bytes.into()));
    }

    pub fn stderr(&self, bytes: impl Into<Vec<u8>>) {
        let _ = self.tx.send(Event::Stderr(bytes.into()));
    }

    pub fn progress(&self, text: impl Into<String>) {
        let _ = self.tx.send(Event::Progress(text.into()));
    }

    /// Hands the commit itself to the client, so the user's hooks, signing
    /// and terminal apply.
    pub fn git_commit(&self, repository_root: PathBuf, message: String, amend: bool) {
        let _ = self.tx.send(Event::GitCommit { repository_root, message, amend });
    }

    fn exit(&self, code: i32) {
        let _ = self.tx.send(Event::Exit(code));
    }
}

/// Why a command failed, and so how it exits.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The command line was wrong: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The command could not do its work: exit 1.
    #[error("{0}")]
    Failed(String),
}

impl From<gitagent_runtime::blocking::BlockingError> for CommandError {
    fn from(error: gitagent_runtime::blocking::BlockingError) -> Self {
        Self::failed(error)
    }
}

impl CommandError {
    pub fn failed(error: impl std::fmt::Display) -> Self {
        Self::Failed(error.to_string())
    }

    fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) => 2,
            Self::Failed(_) => 1,
        }
    }
}

impl From<gitagent_agent::prompt::PromptError> for CommandError {
    fn from(error: gitagent_agent::prompt::PromptError) -> Self {
        Self::failed(error)
    }
}

/// Runs the invocation to completion and sends its final `Exit` event.
pub async fn run(services: Arc<Services>, invocation: Invocation, output: Output, cancel: CancellationToken) {
    let code = match dispatch(&services, &invocation, &output, &cancel).await {
        Ok(()) => 0,
        Err(error) => {
            output.stderr(format!("error: {error}\n"));
            error.exit_code()
        }
    };
    output.exit(code);
}

async fn dispatch(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
) -> Result<(), CommandError> {
    let command = cli::parse_command(&invocation.args).map_err(|error| {
        CommandError::Usage(
            cli::index_usage(&invocation.args)
                .unwrap_or_else(|| error.to_string().trim_end().trim_start_matches("error: ").to_string()),
        )
    })?;
    match command {
        Command::ProjectId => project_id::run(services, invocation, output).await,
        Command::Config(args) => config::run(invocation, output, args).await,
        Command::Review(_) | Command::Simplify(_) => {
            Err(CommandError::Usage("review and simplify are launched through LaunchTask".into()))
        }
        Command::CommitMsg(args) => {
            let request = commit_msg::Request { amend: args.amend, commit: false, generation: args.generation };
            commit_msg::run(services, invocation, output, cancel, request).await
        }
        Command::Commit(args) => {
            let request = commit_msg::Request { amend: args.amend, commit: true, generation: args.generation };
            commit_msg::run(services, invocation, output, cancel, request).await
        }
        Command::Search(args) => search::run(services, invocation, output, cancel, args).await,
        Command::PrMessage(args) => pr_message::run(services, invocation, output, cancel, args).await,
        Command::ReleaseNote(args) => release_note::run(services, invocation, output, cancel, args).await,
        Command::Explore(args) => explore::run(services, invocation, output, cancel, args).await,
        Command::Index(args) => index::run(services, invocation, output, cancel, args).await,
        Command::Completions { .. } => {
            Err(CommandError::Usage("completions are generated by the git-agent client".into()))
        }
        Command::Mcp => Err(CommandError::Usage("the MCP server runs in the git-agent client".into())),
    }
}

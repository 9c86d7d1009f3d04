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
pub(crate) mod redaction;
mod release_note;
pub(crate) mod review;
pub(crate) mod search;
pub mod services;
pub use services::Services;

pub use explore::ExploreBatcher;

use git_agent_shared::Environment;
use git_agent_shared::cli::{self, Command};
use git_agent_shared::error_chain;
use std::path::PathBuf;
use std::sync::Arc;
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
    /// What the command's requests pass through ([`redaction`]); set by
    /// [`run`] from the command line and the configuration.
    pub redactor: gitagent_provider::Redactor,
}

pub use gitagent_runtime::output::{Event, Output};

/// Why a command failed, and so how it exits. A failure keeps its cause
/// (and the cause's chain) until [`run`] renders it with
/// [`error_chain::render`], the one place a command's error becomes text.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The command line was wrong: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The command could not do its work: exit 1.
    #[error("{0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The command could not do its work, for a reason that is a message
    /// with no underlying error (a refused answer, a cancellation): exit 1.
    #[error("{0}")]
    Message(String),
}

impl From<gitagent_runtime::blocking::BlockingError> for CommandError {
    fn from(error: gitagent_runtime::blocking::BlockingError) -> Self {
        Self::failed(error)
    }
}

impl CommandError {
    /// A failure caused by `error`, kept whole.
    pub fn failed(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Failed(Box::new(error))
    }

    /// A usage error explained by `error` (a refused flag value).
    pub fn usage(error: impl std::error::Error + 'static) -> Self {
        Self::Usage(error_chain::render(&error))
    }

    /// A failure that is only a message.
    pub fn message(message: impl Into<String>) -> Self {
        Self::Message(message.into())
    }

    fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) => 2,
            Self::Failed(_) | Self::Message(_) => 1,
        }
    }
}

impl From<gitagent_agent::prompt::PromptError> for CommandError {
    fn from(error: gitagent_agent::prompt::PromptError) -> Self {
        Self::failed(error)
    }
}

/// Runs the invocation to completion and sends its final `Exit` event,
/// after the line that says what was redacted (or that nothing was).
pub async fn run(services: Arc<Services>, mut invocation: Invocation, output: Output, cancel: CancellationToken) {
    let result = match redaction::resolve(&invocation).await {
        Ok(redactor) => {
            invocation.redactor = redactor;
            dispatch(&services, &invocation, &output, &cancel).await
        }
        Err(error) => Err(error),
    };
    if let Some(line) = invocation.redactor.summary(redaction::debug(&invocation.args)) {
        output.stderr(line);
    }
    let code = match result {
        Ok(()) => 0,
        Err(error) => {
            output.stderr(stderr_text(&error));
            error.exit_code()
        }
    };
    output.exit(code);
}

/// What a failed command writes on the caller's stderr: the error and its
/// chain of causes.
fn stderr_text(error: &CommandError) -> String {
    format!("error: {}\n", error_chain::Chain(error))
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
            let request = commit_msg::Request {
                amend: args.amend,
                commit: false,
                stream_text: false,
                generation: args.generation,
            };
            commit_msg::run(services, invocation, output, cancel, request).await
        }
        Command::Commit(args) => {
            let request = commit_msg::Request {
                amend: args.message.amend,
                commit: true,
                stream_text: args.interactive,
                generation: args.message.generation,
            };
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
        Command::Hook(_) => Err(CommandError::Usage("the hook commands run in the git-agent client".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    fn chain<'a>(
        error: &'a (dyn std::error::Error + 'static),
    ) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
        std::iter::successors(Some(error), |error| (*error).source())
    }

    fn denied() -> std::io::Error {
        std::io::Error::from_raw_os_error(13)
    }

    #[test]
    fn a_search_failure_keeps_its_io_cause_and_reads_as_before() {
        let store = gitagent_search::index::store::StoreError::Io {
            action: "read",
            path: "/meta/index/vectors.f32".into(),
            source: denied(),
        };
        let error = CommandError::from(gitagent_search::SearchError::Store(store));
        assert_eq!(error.exit_code(), 1);
        let cause = error.source().expect("the search error is the cause");
        let search = cause.downcast_ref::<gitagent_search::SearchError>().expect("a SearchError");
        assert!(matches!(search, gitagent_search::SearchError::Store(_)));
        let io = chain(cause)
            .find_map(|error| error.downcast_ref::<std::io::Error>())
            .expect("the io error is in the chain");
        assert_eq!(io.raw_os_error(), Some(13));
        assert_eq!(
            stderr_text(&error),
            "error: cannot read /meta/index/vectors.f32: Permission denied (os error 13)\n"
        );
    }

    #[test]
    fn a_provider_network_failure_keeps_its_cause_and_reads_as_before() {
        let network = gitagent_provider::NetworkError::UnreadableCa {
            variable: "SSL_CERT_FILE",
            path: "/etc/ca.pem".into(),
            source: denied(),
        };
        let error = CommandError::failed(gitagent_agent::AgentError::Provider(network.into()));
        let cause = error.source().expect("the agent error is the cause");
        assert!(cause.downcast_ref::<gitagent_agent::AgentError>().is_some());
        assert!(chain(cause).any(|error| error.downcast_ref::<std::io::Error>().is_some()));
        assert_eq!(
            stderr_text(&error),
            "error: cannot read the CA certificates at /etc/ca.pem (SSL_CERT_FILE): Permission denied (os error 13)\n\
             hint: point SSL_CERT_FILE at a readable PEM file or folder, or unset it\n"
        );
    }

    #[test]
    fn a_malformed_auth_file_keeps_its_json_error_and_reads_as_before() {
        let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let config =
            gitagent_provider::ConfigError::MalformedAuthFile { path: "/home/u/.codex/auth.json".into(), source: json };
        let error = CommandError::failed(config);
        let cause = error.source().expect("the provider's error is the cause");
        assert!(cause.downcast_ref::<gitagent_provider::ConfigError>().is_some());
        assert!(chain(cause).any(|error| error.downcast_ref::<serde_json::Error>().is_some()));
        assert_eq!(
            stderr_text(&error),
            "error: /home/u/.codex/auth.json is not valid JSON: EOF while parsing an object at line 1 column 1\n\
             hint: sign in again with the Codex CLI\n"
        );
    }

    #[test]
    fn a_usage_error_and_a_message_exit_as_before() {
        let usage = CommandError::Usage("search accepts only one of --ls, --ls-remotes, or --ls-files".into());
        assert_eq!(
            (usage.exit_code(), stderr_text(&usage).as_str()),
            (2, "error: search accepts only one of --ls, --ls-remotes, or --ls-files\n")
        );
        let message = CommandError::message("the command was cancelled");
        assert_eq!((message.exit_code(), stderr_text(&message).as_str()), (1, "error: the command was cancelled\n"));
        assert!(message.source().is_none());
    }
}

//! The `gitagentd` command line: serve, status, stop.

use clap::{Args, Parser, Subcommand};

/// The per-user git-agent daemon. `git-agent` starts it on demand; systemd
/// and launchd units are optional.
#[derive(Debug, Parser)]
#[command(name = "gitagentd", version = git_agent_shared::build::VERSION, disable_help_subcommand = true)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub command: Option<DaemonCommand>,
}

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Serve in the foreground (the default).
    Serve(ServeArgs),
    /// Print whether a daemon is running, its pid, build and activity.
    Status,
    /// Ask the running daemon to stop, and wait until it no longer answers.
    Stop,
}

#[derive(Debug, Args, Default, Clone)]
pub struct ServeArgs {
    /// Started on demand by git-agent: exit after the idle period.
    #[arg(long)]
    pub auto: bool,

    /// Exit after this many idle seconds (default 900 when auto-started or
    /// socket-activated, never otherwise).
    #[arg(long, value_name = "seconds")]
    pub idle_timeout: Option<u64>,

    /// Close this inherited descriptor once the socket accepts connections.
    #[arg(long, value_name = "fd", hide = true)]
    pub ready_fd: Option<i32>,

    /// Take the listening socket from launchd (the agent plist passes it).
    #[arg(long)]
    pub launchd: bool,

    /// Report this build identity instead of the compiled one (tests use it
    /// to stand in for a daemon of another build; test builds only).
    #[cfg(feature = "test-hooks")]
    #[arg(long, value_name = "id", hide = true)]
    pub build_id: Option<String>,
}

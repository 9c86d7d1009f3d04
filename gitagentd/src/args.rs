//! The `gitagentd` command line: serve, status, stop.

use clap::{Args, Parser, Subcommand};
use std::time::Duration;

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

    /// Exit after this idle period: seconds (900) or a duration such as 90s,
    /// 15m or 1h (default 900 seconds when auto-started or socket-activated,
    /// never otherwise).
    #[arg(long, value_name = "duration", value_parser = parse_idle_timeout)]
    pub idle_timeout: Option<Duration>,

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

/// Why an idle period was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid idle period {0:?}: write seconds (900) or a duration of at least 1s such as 90s, 15m or 1h")]
pub struct InvalidIdle(String);

/// Reads an idle period as `--idle-timeout` and `GITAGENTD_IDLE_SECS` take
/// it: plain seconds (`900`) or a Go-style duration (`1s`, `15m`, `1h30m`),
/// at least a second (`gitagentd status` reports it in whole seconds, and a
/// daemon that leaves as soon as it is idle serves nobody).
pub fn parse_idle_timeout(text: &str) -> Result<Duration, InvalidIdle> {
    let invalid = || InvalidIdle(text.to_string());
    let trimmed = text.trim();
    let idle = if !trimmed.is_empty() && trimmed.bytes().all(|byte| byte.is_ascii_digit()) {
        trimmed.parse().map(Duration::from_secs).map_err(|_| invalid())?
    } else {
        git_agent_shared::timefmt::parse_go_duration(trimmed).map_err(|_| invalid())?
    };
    if idle < Duration::from_secs(1) {
        return Err(invalid());
    }
    Ok(idle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_periods_are_seconds_or_go_durations_of_a_second_or_more() {
        assert_eq!(parse_idle_timeout("900"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_idle_timeout("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_idle_timeout("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_idle_timeout("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_idle_timeout("1.5s"), Ok(Duration::from_millis(1500)));
        for refused in ["", "abc", "0", "0s", "500ms", "-5", "5 m", "1d", "99999999999999999999999"] {
            assert_eq!(parse_idle_timeout(refused), Err(InvalidIdle(refused.to_string())), "{refused:?}");
        }
    }
}

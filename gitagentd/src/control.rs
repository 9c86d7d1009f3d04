//! `gitagentd status` and `gitagentd stop`: a person's view of the running
//! daemon through the same socket the client uses.

use anyhow::Context;
use git_agent_shared::{Environment, paths};
use gitagent_proto::v1 as pb;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Appends one line to `out`; the text is written with [`emit`] so a closed
/// stdout (`gitagentd status | head -1`) is not a panic.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        let _ = writeln!($out, $($arg)*);
    };
}

fn emit(out: &str) {
    let _ = std::io::stdout().write_all(out.as_bytes());
}

const STOP_WAIT: Duration = Duration::from_secs(30);

pub async fn status(env: &Environment) -> anyhow::Result<ExitCode> {
    let mut out = String::new();
    let socket = paths::socket_path(env)?;
    let Ok(channel) = gitagent_proto::connect(&socket).await else {
        say!(out, "gitagentd is not running (no answer on {})", socket.display());
        emit(&out);
        return Ok(ExitCode::from(3));
    };
    let reply = gitagent_proto::client(channel)
        .status(pb::StatusRequest {})
        .await
        .context("the daemon did not answer the status call")?
        .into_inner();
    say!(out, "gitagentd is running");
    say!(out, "pid: {}", reply.pid);
    say!(out, "version: {}", reply.version);
    say!(out, "build: {}", reply.build);
    say!(out, "socket: {}", reply.socket_path);
    say!(out, "uptime: {}s", reply.uptime_millis / 1000);
    say!(out, "active commands: {}", reply.active_commands);
    say!(out, "running tasks: {}", reply.running_tasks);
    let idle = match reply.idle_timeout_secs {
        0 => "never".to_string(),
        secs => format!("after {secs}s idle"),
    };
    say!(
        out,
        "started: {}",
        if reply.auto_started { "on demand by git-agent" } else { "by hand or a service manager" }
    );
    say!(out, "exits: {idle}");
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

pub async fn stop(env: &Environment) -> anyhow::Result<ExitCode> {
    let mut out = String::new();
    let socket = paths::socket_path(env)?;
    let Ok(channel) = gitagent_proto::connect(&socket).await else {
        say!(out, "gitagentd is not running");
        emit(&out);
        return Ok(ExitCode::SUCCESS);
    };
    let mut client = gitagent_proto::client(channel);
    let pid = client.hello(pb::HelloRequest::default()).await.map(|reply| reply.into_inner().pid).ok();
    client.shutdown(pb::ShutdownRequest {}).await.context("the daemon did not accept the shutdown call")?;
    drop(client);
    // The daemon gives up its address first and then drains; wait until
    // the process itself is gone.
    let deadline = Instant::now() + STOP_WAIT;
    if let Some(pid) = pid {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
        while process_running(pid) {
            if Instant::now() >= deadline {
                anyhow::bail!("gitagentd (pid {pid}) is still draining work after {}s", STOP_WAIT.as_secs());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        say!(out, "gitagentd (pid {pid}) stopped");
    } else {
        say!(out, "gitagentd stopped");
    }
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

/// Whether `pid` names a live process; a zombie waiting to be reaped by
/// its new parent counts as gone.
fn process_running(pid: nix::unistd::Pid) -> bool {
    if nix::sys::signal::kill(pid, None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            !stat.rsplit_once(')').is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
        }
        // No procfs: trust kill(2).
        Err(_) => true,
    }
}

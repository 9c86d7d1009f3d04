//! `gitagentd status` and `gitagentd stop`: a person's view of the running
//! daemon through the same socket the client uses, and through the address
//! lock (which names the holder's pid) when nothing answers there: a daemon
//! whose socket file was removed or replaced still holds the address.

use crate::socket::{self, LockHolder};
use anyhow::Context;
use git_agent_shared::{Environment, paths};
use gitagent_proto::v1 as pb;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
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
/// How long a daemon may take to answer a status or hello call before it is
/// taken for one that does not answer (a stopped or wedged process still
/// accepts connections into its backlog).
const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// The daemon answering on `socket`, if one answers within [`ANSWER_WAIT`].
async fn answering(socket: &Path) -> Option<gitagent_proto::GitAgentClient<tonic::transport::Channel>> {
    let hello = async {
        let channel = gitagent_proto::connect(socket).await.ok()?;
        let mut client = gitagent_proto::client(channel);
        client.hello(pb::HelloRequest::default()).await.ok()?;
        Some(client)
    };
    tokio::time::timeout(ANSWER_WAIT, hello).await.ok().flatten()
}

/// The daemon that holds the address lock without answering on the socket:
/// its pid, once it is known to be alive.
enum Silent {
    /// No live process holds the lock: no daemon runs.
    None,
    /// This live process holds it.
    Daemon(nix::unistd::Pid),
    /// A process holds it without naming itself (a daemon of an older build).
    Unnamed,
}

/// Who holds the address lock at `lock`. A holder that recorded a pid which
/// is gone is a daemon that took the lock a moment ago and has not written
/// its own yet: asked again after a moment.
async fn silent_holder(lock: &Path) -> anyhow::Result<Silent> {
    for _ in 0..100 {
        match socket::lock_holder(lock).with_context(|| format!("cannot read the address lock {}", lock.display()))? {
            LockHolder::Free => return Ok(Silent::None),
            LockHolder::Held { pid: None } => return Ok(Silent::Unnamed),
            LockHolder::Held { pid: Some(pid) } => {
                let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
                if process_running(pid) {
                    return Ok(Silent::Daemon(pid));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(Silent::Unnamed)
}

pub async fn status(env: &Environment) -> anyhow::Result<ExitCode> {
    let mut out = String::new();
    let socket = paths::socket_path(env)?;
    let Some(mut client) = answering(&socket).await else {
        let lock = paths::lock_path(env)?;
        let code = match silent_holder(&lock).await? {
            Silent::None => {
                say!(out, "gitagentd is not running (no answer on {})", socket.display());
                3
            }
            Silent::Daemon(pid) => {
                say!(out, "gitagentd is running but does not answer on {}", socket.display());
                say!(out, "pid: {pid}");
                say!(out, "lock: {}", lock.display());
                say!(out, "hint: `gitagentd stop` stops it; the next git-agent command starts a new one");
                1
            }
            Silent::Unnamed => {
                say!(out, "a process holds {} but does not answer on {}", lock.display(), socket.display());
                say!(out, "hint: find it with `fuser {}` and stop it", lock.display());
                1
            }
        };
        emit(&out);
        return Ok(ExitCode::from(code));
    };
    let reply = tokio::time::timeout(ANSWER_WAIT, client.status(pb::StatusRequest {}))
        .await
        .context("the daemon did not answer the status call")?
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
    let Some(mut client) = answering(&socket).await else {
        let lock = paths::lock_path(env)?;
        match silent_holder(&lock).await? {
            Silent::None => {
                say!(out, "gitagentd is not running");
            }
            Silent::Daemon(pid) => {
                // SIGTERM stops a daemon as a Shutdown call would; SIGCONT
                // lets a stopped one act on it.
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
                wait_gone(pid).await?;
                say!(out, "gitagentd (pid {pid}) did not answer on {}; stopped it with SIGTERM", socket.display());
            }
            Silent::Unnamed => anyhow::bail!(
                "a process holds {} but does not answer on {}\nhint: find it with `fuser {}` and stop it",
                lock.display(),
                socket.display(),
                lock.display()
            ),
        }
        emit(&out);
        return Ok(ExitCode::SUCCESS);
    };
    let pid = client.hello(pb::HelloRequest::default()).await.map(|reply| reply.into_inner().pid).ok();
    client.shutdown(pb::ShutdownRequest {}).await.context("the daemon did not accept the shutdown call")?;
    drop(client);
    // The daemon gives up its address first and then drains; wait until
    // the process itself is gone.
    if let Some(pid) = pid {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
        wait_gone(pid).await?;
        say!(out, "gitagentd (pid {pid}) stopped");
    } else {
        say!(out, "gitagentd stopped");
    }
    emit(&out);
    Ok(ExitCode::SUCCESS)
}

/// Waits until `pid` has exited, for at most [`STOP_WAIT`].
async fn wait_gone(pid: nix::unistd::Pid) -> anyhow::Result<()> {
    let deadline = Instant::now() + STOP_WAIT;
    while process_running(pid) {
        if Instant::now() >= deadline {
            anyhow::bail!(
                "gitagentd (pid {pid}) is still draining work after {}s\nhint: `kill -KILL {pid}` ends it at once",
                STOP_WAIT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
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

//! `gitagentd status` and `gitagentd stop`: a person's view of the running
//! daemon through the same socket the client uses.

use anyhow::Context;
use git_agent_shared::{Environment, paths};
use gitagent_proto::GitAgentClient;
use gitagent_proto::v1 as pb;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const STOP_WAIT: Duration = Duration::from_secs(30);

pub async fn status(env: &Environment) -> anyhow::Result<ExitCode> {
    let socket = paths::socket_path(env)?;
    let Ok(channel) = gitagent_proto::connect(&socket).await else {
        println!("gitagentd is not running (no answer on {})", socket.display());
        return Ok(ExitCode::from(3));
    };
    let reply = GitAgentClient::new(channel)
        .status(pb::StatusRequest {})
        .await
        .context("the daemon did not answer the status call")?
        .into_inner();
    println!("gitagentd is running");
    println!("pid: {}", reply.pid);
    println!("version: {}", reply.version);
    println!("build: {}", reply.build);
    println!("socket: {}", reply.socket_path);
    println!("uptime: {}s", reply.uptime_millis / 1000);
    println!("active commands: {}", reply.active_commands);
    println!("running tasks: {}", reply.running_tasks);
    let idle = match reply.idle_timeout_secs {
        0 => "never".to_string(),
        secs => format!("after {secs}s idle"),
    };
    println!("started: {}", if reply.auto_started { "on demand by git-agent" } else { "by hand or a service manager" });
    println!("exits: {idle}");
    Ok(ExitCode::SUCCESS)
}

pub async fn stop(env: &Environment) -> anyhow::Result<ExitCode> {
    let socket = paths::socket_path(env)?;
    let Ok(channel) = gitagent_proto::connect(&socket).await else {
        println!("gitagentd is not running");
        return Ok(ExitCode::SUCCESS);
    };
    let mut client = GitAgentClient::new(channel);
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
        println!("gitagentd (pid {pid}) stopped");
    } else {
        println!("gitagentd stopped");
    }
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

//! The daemon library. `run` dispatches the daemon's own command line;
//! [`serve`] owns the process lifetime: socket ownership, the RPC server,
//! idle exit and graceful shutdown. Commands live under [`commands`] and
//! never see the wire types, which stay in `rpc`.

mod activity;
pub mod args;
pub mod bounded;
pub mod commands;
mod control;
#[cfg(test)]
mod golden;
pub mod grpc_authority;
pub mod listener;
mod logging;
pub mod memory;
pub mod message;
pub mod release;
mod rpc;
mod socket;
pub mod task_http;
pub mod tasks;

use anyhow::Context;
use args::{DaemonArgs, DaemonCommand, ServeArgs};
use git_agent_shared::Environment;
use git_agent_shared::environment::vars;
use std::process::ExitCode;
use std::time::Duration;

/// The idle period after which an on-demand daemon exits.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(900);

/// The async runtime's worker threads: one per core this process may use
/// (cgroup quotas and CPU affinity included). Blocking work never runs on
/// them (see [`blocking`]), so they only multiplex I/O and bookkeeping.
fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
}

pub fn run(args: DaemonArgs) -> anyhow::Result<ExitCode> {
    // A variable that is not UTF-8 (`PWD` when started from such a
    // folder) is left out rather than failing the start.
    let env = Environment::new(
        std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .thread_keep_alive(memory::BLOCKING_KEEP_ALIVE)
        .on_thread_park(memory::on_worker_park)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match args.command.unwrap_or(DaemonCommand::Serve(ServeArgs::default())) {
        DaemonCommand::Serve(serve_args) => runtime.block_on(serve(serve_args, env)).map(|()| ExitCode::SUCCESS),
        DaemonCommand::Status => runtime.block_on(control::status(&env)),
        DaemonCommand::Stop => runtime.block_on(control::stop(&env)),
    }
}

/// The idle period `GITAGENTD_IDLE_SECS` sets, if any. A value that is no
/// idle period stops the daemon before it takes the socket: whoever set it
/// expects it to apply, and a daemon quietly staying up for the default
/// 15 minutes instead would hide the mistake (the client passes the reason
/// on when it started the daemon).
fn configured_idle(env: &Environment) -> anyhow::Result<Option<Duration>> {
    let Some(value) = env.get(vars::GITAGENTD_IDLE_SECS) else { return Ok(None) };
    args::parse_idle_timeout(value).map(Some).map_err(|error| {
        anyhow::anyhow!("{}: {error}\nhint: fix or unset {}", vars::GITAGENTD_IDLE_SECS, vars::GITAGENTD_IDLE_SECS)
    })
}

/// Serves until shutdown (SIGTERM, SIGINT, a `Shutdown` call) or, when
/// auto-started, the idle period.
pub async fn serve(args: ServeArgs, env: Environment) -> anyhow::Result<()> {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let _log_guard = logging::init(&env);
    let configured_idle = configured_idle(&env).inspect_err(|error| tracing::error!("{error:#}"))?;
    let acquired = if args.launchd {
        socket::from_launchd().await?
    } else if let Some(listener) = socket::from_systemd().await? {
        listener
    } else {
        match socket::acquire(&env).await? {
            Some(owned) => owned,
            None => {
                // Another daemon answers on the socket already.
                tracing::info!("another gitagentd is serving; exiting");
                socket::signal_ready(args.ready_fd);
                return Ok(());
            }
        }
    };
    let idle = args.idle_timeout.or_else(|| {
        let on_demand = args.auto || acquired.activated;
        on_demand.then(|| configured_idle.unwrap_or(DEFAULT_IDLE))
    });
    #[cfg(feature = "test-hooks")]
    let build = args.build_id.unwrap_or_else(|| git_agent_shared::build::build_id().to_string());
    #[cfg(not(feature = "test-hooks"))]
    let build = git_agent_shared::build::build_id().to_string();
    tracing::info!(socket = %acquired.path.display(), build = %build, idle = ?idle, "gitagentd listening");
    rpc::serve(acquired, rpc::ServerOptions { build, idle, auto_started: args.auto, ready_fd: args.ready_fd, env })
        .await
}

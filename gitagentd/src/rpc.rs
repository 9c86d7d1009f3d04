//! The gitagent.v1 server: the only module that knows tonic and the wire
//! types. It converts requests into domain [`Invocation`]s, streams domain
//! [`Event`]s back as `RunEvent`s (the accept loop in [`crate::listener`]
//! refuses peers of another uid and serves HTTP/1.1 task views), and owns
//! shutdown: on SIGTERM, SIGINT, a `Shutdown` call, the idle period or the
//! loss of its socket file it gives up the socket address at once and
//! drains the work in flight.

use crate::activity::Activity;
use crate::commands::Services;
use crate::commands::{self, Event, Invocation, Output};
use crate::socket::{self, Acquired, SocketFile};
use crate::tasks::{TaskError, TaskStatus};
use git_agent_shared::Environment;
use gitagent_proto::PROTOCOL_VERSION;
use gitagent_proto::v1::git_agent_server::{GitAgent, GitAgentServer};
use gitagent_proto::v1::{self as pb, run_event};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

pub struct ServerOptions {
    pub build: String,
    pub idle: Option<Duration>,
    pub auto_started: bool,
    pub ready_fd: Option<i32>,
    /// The daemon's own environment: only a fallback for editors' task
    /// calls that carry no invocation.
    pub env: Environment,
}

struct Daemon {
    build: String,
    started: Instant,
    socket_path: PathBuf,
    options_idle: Option<Duration>,
    auto_started: bool,
    activity: Arc<Activity>,
    services: Arc<Services>,
    shutdown: CancellationToken,
}

pub async fn serve(acquired: Acquired, options: ServerOptions) -> anyhow::Result<()> {
    let Acquired { listener, path, lock, bound, .. } = acquired;
    let lock = Arc::new(Mutex::new(lock));
    let shutdown = CancellationToken::new();
    let daemon = Arc::new(Daemon {
        build: options.build,
        started: Instant::now(),
        socket_path: path.clone(),
        options_idle: options.idle,
        auto_started: options.auto_started,
        activity: Arc::new(Activity::default()),
        services: Arc::new(Services::new(options.env)),
        shutdown: shutdown.clone(),
    });

    // Build the provider HTTP client (it loads the system's root
    // certificates) and compile the redactor's rule set before the first
    // command needs them.
    let warm = Arc::clone(&daemon.services);
    tokio::spawn(gitagent_runtime::blocking::run_to_end("the provider HTTP client", move || {
        let _ = warm.http_clients.get(&Default::default(), gitagent_provider::ClientKind::Responses);
    }));
    tokio::spawn(gitagent_runtime::blocking::run_to_end("the redactor's rule set", gitagent_provider::redact::warm));

    // The accept loop checks each peer's uid and serves each connection,
    // gRPC or an HTTP/1.1 task view, in a task of its own.
    let activity = Arc::clone(&daemon.activity);
    let tasks = Arc::clone(&daemon.services.tasks);
    let routes = tonic::service::Routes::new(
        GitAgentServer::from_arc(daemon)
            .max_decoding_message_size(gitagent_proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(gitagent_proto::MAX_MESSAGE_BYTES),
    )
    .prepare();
    let (draining, mut drained) = tokio::sync::mpsc::channel::<()>(1);
    tokio::spawn(crate::listener::accept(listener, routes, tasks, shutdown.clone(), draining));

    // Release the address as soon as shutdown starts, so a replacement can
    // listen while this process drains.
    let release = {
        let shutdown = shutdown.clone();
        let lock = Arc::clone(&lock);
        let path = path.clone();
        async move {
            shutdown.cancelled().await;
            release_address(&path, &lock, bound);
        }
    };
    tokio::spawn(release);
    tokio::spawn(watch_signals(shutdown.clone()));
    if let Some(bound) = bound {
        // A socket file of a service manager is its to keep; one this
        // process bound is watched, so a daemon nobody can reach any more
        // does not keep the address lock.
        tokio::spawn(socket::watch_bound_socket(path.clone(), bound, shutdown.clone()));
    }
    if let Some(idle) = options.idle {
        let activity = Arc::clone(&activity);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            activity.idle_for(idle).await;
            tracing::info!(?idle, "idle period over; exiting");
            shutdown.cancel();
        });
    }

    let trimmer = tokio::spawn(crate::memory::trim_when_idle(Arc::clone(&activity)));
    socket::signal_ready(options.ready_fd);
    shutdown.cancelled().await;
    // Every connection finishes the calls it has in flight; the accept
    // loop's sender and each connection's clone are then dropped.
    while drained.recv().await.is_some() {}
    // Work that outlives its connection (detached tasks) still holds an
    // activity guard; wait for it before exiting.
    activity.idle_for(Duration::ZERO).await;
    // The release task may not have run yet when serving ends at once
    // (nothing to drain): release here too; a second release is a no-op.
    release_address(&path, &lock, bound);
    trimmer.abort();
    tracing::info!("gitagentd stopped");
    Ok(())
}

/// Gives the address up: removes the socket file this process bound (an
/// inherited one belongs to its service manager, and a file bound at the
/// path since is another daemon's), then unlocks.
fn release_address(path: &Path, lock: &Mutex<Option<nix::fcntl::Flock<std::fs::File>>>, bound: Option<SocketFile>) {
    let Ok(mut held) = lock.lock() else { return };
    if held.is_some() {
        if let Some(bound) = bound {
            bound.remove_if_same(path);
        }
        *held = None;
    }
}

async fn watch_signals(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut interrupt)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = interrupt.recv() => tracing::info!("SIGINT: shutting down"),
        _ = shutdown.cancelled() => return,
    }
    shutdown.cancel();
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::RunEvent, Status>> + Send>>;
type TaskStream = Pin<Box<dyn Stream<Item = Result<pb::TaskStatus, Status>> + Send>>;

impl Daemon {
    fn check_build(&self, client_build: &str) -> Result<(), Status> {
        if client_build == self.build {
            Ok(())
        } else {
            Err(Status::failed_precondition(format!(
                "daemon build {} differs from client build {client_build}",
                self.build
            )))
        }
    }
}

fn invocation_from_wire(wire: Option<pb::Invocation>) -> Result<(Invocation, String), Status> {
    let wire = wire.ok_or_else(|| Status::invalid_argument("the request carries no invocation"))?;
    // The path's bytes, UTF-8 or not.
    let cwd = PathBuf::from(std::ffi::OsString::from_vec(wire.cwd));
    if !cwd.is_absolute() {
        return Err(Status::invalid_argument(format!(
            "the working directory {} is not absolute",
            git_agent_shared::quote::quote_os_path(&cwd)
        )));
    }
    let invocation = Invocation {
        cwd,
        args: wire.args,
        env: Environment::new(wire.env.into_iter().collect()),
        stdout_is_terminal: wire.stdout_is_terminal,
        stderr_is_terminal: wire.stderr_is_terminal,
        redactor: Default::default(),
    };
    Ok((invocation, wire.client_build))
}

fn optional_env(invocation: Option<pb::Invocation>) -> Result<Option<Environment>, Status> {
    Ok(invocation.map(|invocation| Environment::new(invocation.env.into_iter().collect())))
}

fn task_status(error: TaskError) -> Status {
    let message = error.render();
    match error {
        TaskError::Usage(_) => Status::invalid_argument(message),
        TaskError::Failed(_) | TaskError::Message(_) => Status::aborted(message),
        TaskError::NotFound(_) => Status::not_found(message),
    }
}

fn status_to_wire(status: TaskStatus) -> pb::TaskStatus {
    pb::TaskStatus {
        id: status.id,
        command: status.command,
        project_id: status.project_id,
        state: status.state,
        started_unix_millis: status.started_ms,
        updated_unix_millis: status.updated_ms,
        phase: status.phase,
        message: status.message,
    }
}

/// The current status, then every change until the task is terminal.
fn async_stream_of(current: TaskStatus, receiver: Option<tokio::sync::watch::Receiver<TaskStatus>>) -> TaskStream {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        let terminal = current.is_terminal();
        if tx.send(Ok(status_to_wire(current))).await.is_err() || terminal {
            return;
        }
        let Some(mut receiver) = receiver else { return };
        receiver.mark_unchanged();
        while receiver.changed().await.is_ok() {
            let status = receiver.borrow_and_update().clone();
            let terminal = status.is_terminal();
            if tx.send(Ok(status_to_wire(status))).await.is_err() || terminal {
                return;
            }
        }
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}

/// The wire events of one command event: stdout and stderr bytes of any
/// size become a run of messages of at most [`gitagent_proto::OUTPUT_CHUNK_BYTES`]
/// each, which the client writes back to back.
fn events_to_wire(event: Event) -> Vec<pb::RunEvent> {
    let chunked = |bytes: Vec<u8>, wrap: fn(Vec<u8>) -> run_event::Event| -> Vec<pb::RunEvent> {
        if bytes.len() <= gitagent_proto::OUTPUT_CHUNK_BYTES {
            return vec![pb::RunEvent { event: Some(wrap(bytes)) }];
        }
        bytes
            .chunks(gitagent_proto::OUTPUT_CHUNK_BYTES)
            .map(|chunk| pb::RunEvent { event: Some(wrap(chunk.to_vec())) })
            .collect()
    };
    match event {
        Event::Stdout(bytes) => chunked(bytes, run_event::Event::Stdout),
        Event::Stderr(bytes) => chunked(bytes, run_event::Event::Stderr),
        other => vec![event_to_wire(other)],
    }
}

fn event_to_wire(event: Event) -> pb::RunEvent {
    let event = match event {
        Event::Stdout(bytes) => run_event::Event::Stdout(bytes),
        Event::Stderr(bytes) => run_event::Event::Stderr(bytes),
        Event::Progress(text) => run_event::Event::Progress(pb::Progress { text }),
        Event::TextDelta { step, attempt, text } => run_event::Event::TextDelta(pb::TextDelta { text, step, attempt }),
        Event::GitCommit { repository_root, message, amend } => run_event::Event::Action(pb::ClientAction {
            action: Some(pb::client_action::Action::GitCommit(pb::GitCommit {
                repository_root: std::os::unix::ffi::OsStrExt::as_bytes(repository_root.as_os_str()).to_vec(),
                message,
                amend,
            })),
        }),
        Event::Exit(code) => run_event::Event::Exit(pb::Exit { code }),
    };
    pb::RunEvent { event: Some(event) }
}

#[tonic::async_trait]
impl GitAgent for Daemon {
    async fn hello(&self, request: Request<pb::HelloRequest>) -> Result<Response<pb::HelloReply>, Status> {
        let _ = request;
        Ok(Response::new(pb::HelloReply {
            protocol_version: PROTOCOL_VERSION,
            build: self.build.clone(),
            version: git_agent_shared::build::VERSION.to_string(),
            pid: std::process::id(),
        }))
    }

    type RunStream = EventStream;

    async fn run(&self, request: Request<pb::RunRequest>) -> Result<Response<Self::RunStream>, Status> {
        let (invocation, client_build) = invocation_from_wire(request.into_inner().invocation)?;
        self.check_build(&client_build)?;
        let guard = self.activity.begin();
        let cancel = CancellationToken::new();
        let (output, events) = Output::new();
        let worker_cancel = cancel.clone();
        let services = Arc::clone(&self.services);
        tokio::spawn(async move {
            commands::run(services, invocation, output, worker_cancel).await;
            drop(guard);
        });
        // Dropping the reply stream (the client went away) cancels the work.
        let on_drop = cancel.drop_guard();
        let stream = tokio_stream::wrappers::UnboundedReceiverStream::new(events).map(move |event| {
            let _keep = &on_drop;
            tokio_stream::iter(events_to_wire(event).into_iter().map(Ok))
        });
        let stream = futures_util::StreamExt::flatten(stream);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn launch_task(
        &self,
        request: Request<pb::LaunchTaskRequest>,
    ) -> Result<Response<pb::LaunchTaskReply>, Status> {
        let (invocation, client_build) = invocation_from_wire(request.into_inner().invocation)?;
        self.check_build(&client_build)?;
        let launched =
            commands::review::launch(&self.services, &self.activity, &invocation).await.map_err(task_status)?;
        Ok(Response::new(pb::LaunchTaskReply { command: launched.command, id: launched.id, pid: launched.pid }))
    }

    async fn wait_task(&self, request: Request<pb::TaskRef>) -> Result<Response<pb::TaskOutcome>, Status> {
        let task = request.into_inner();
        let env = optional_env(task.invocation)?;
        let (outcome, controls_removed, redacted) =
            match self.services.tasks.wait(&task.id, &task.command, env.as_ref()).await {
                Ok(report) => (
                    pb::task_outcome::Outcome::ReportJson(report.json),
                    report.controls_removed,
                    report.redacted.unwrap_or_default(),
                ),
                Err(TaskError::Usage(message)) => return Err(Status::invalid_argument(message)),
                Err(error) => (pb::task_outcome::Outcome::Error(error.render()), 0, String::new()),
            };
        Ok(Response::new(pb::TaskOutcome { outcome: Some(outcome), controls_removed, redacted }))
    }

    async fn list_tasks(&self, request: Request<pb::ListTasksRequest>) -> Result<Response<pb::ListTasksReply>, Status> {
        let request = request.into_inner();
        let env = optional_env(request.invocation)?;
        let tasks = self.services.tasks.list(&request.project_id, env.as_ref()).await.map_err(task_status)?;
        Ok(Response::new(pb::ListTasksReply { tasks: tasks.into_iter().map(status_to_wire).collect() }))
    }

    type WatchTaskStream = TaskStream;

    async fn watch_task(&self, request: Request<pb::TaskRef>) -> Result<Response<Self::WatchTaskStream>, Status> {
        let task = request.into_inner();
        let env = optional_env(task.invocation)?;
        let (current, receiver) =
            self.services.tasks.watch(&task.id, &task.command, env.as_ref()).await.map_err(|error| match error {
                TaskError::Usage(message) => Status::invalid_argument(message),
                error => Status::not_found(error.render()),
            })?;
        let stream = async_stream_of(current, receiver);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn status(&self, _request: Request<pb::StatusRequest>) -> Result<Response<pb::StatusReply>, Status> {
        Ok(Response::new(pb::StatusReply {
            pid: std::process::id(),
            build: self.build.clone(),
            version: git_agent_shared::build::VERSION.to_string(),
            uptime_millis: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            active_commands: u32::try_from(self.activity.active()).unwrap_or(u32::MAX),
            running_tasks: u32::try_from(self.services.tasks.running()).unwrap_or(u32::MAX),
            socket_path: self.socket_path.display().to_string(),
            auto_started: self.auto_started,
            idle_timeout_secs: self.options_idle.map_or(0, |idle| idle.as_secs()),
        }))
    }

    async fn shutdown(&self, _request: Request<pb::ShutdownRequest>) -> Result<Response<pb::ShutdownReply>, Status> {
        tracing::info!("shutdown requested");
        self.shutdown.cancel();
        Ok(Response::new(pb::ShutdownReply {}))
    }
}

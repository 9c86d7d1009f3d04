//! Reaching the daemon: connect to its socket, start `gitagentd` when
//! nothing answers, replace a daemon of another build, then run the
//! command and render its reply.

use crate::render::Renderer;
use git_agent_shared::task_record::{self, TaskCommand, TaskId};
use git_agent_shared::{Environment, paths, private_fs};
use gitagent_proto::GitAgentClient;
use gitagent_proto::v1 as pb;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::transport::Channel;

const DAEMON_BINARY: &str = "gitagentd";
/// How long a freshly started daemon may take to accept connections.
const START_DEADLINE: Duration = Duration::from_secs(15);
/// How long an old daemon may take to give up the socket address.
const REPLACE_DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(2);

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    MissingHome(#[from] git_agent_shared::environment::MissingHome),
    #[error("cannot encode the launch object")]
    Encode(#[source] serde_json::Error),
    #[error("cannot create a pipe")]
    Pipe(#[source] nix::Error),
    #[error("the daemon of another build on {} did not stop\nhint: run `gitagentd stop`", socket.display())]
    OtherBuildStays { socket: PathBuf },
    #[error(
        "cannot find the {DAEMON_BINARY} executable next to {client} or on PATH\nhint: install both binaries together (packaging/install.sh)"
    )]
    NotFound { client: String },
    #[error("cannot start {path}: {source}")]
    Spawn { path: PathBuf, source: std::io::Error },
    #[error(
        "{DAEMON_BINARY} did not accept connections on {socket}{detail}\nhint: see the daemon logs under ~/.local/state/git-agent/logs"
    )]
    NotReady { socket: PathBuf, detail: String },
    /// The daemon this client started exited without serving; its stderr
    /// says why (it ends with its own `hint:` when there is a fix).
    #[error("{DAEMON_BINARY} exited before it served ({status}){}", reason_lines(.reason))]
    StartFailed { status: std::process::ExitStatus, reason: String },
    #[error("the daemon failed the request: {0}")]
    Rpc(String),
    /// The daemon went away while a command ran (killed, crashed): the
    /// reply stream broke or ended without an exit code.
    #[error("{}", stopped_text(.command, *.interrupted))]
    Stopped { command: String, interrupted: Interrupted },
    #[error("refusing to use the daemon socket folder: {0}")]
    UnsafeSocketFolder(#[from] private_fs::NotPrivate),
    #[error(transparent)]
    ForeignPeer(#[from] gitagent_proto::ForeignPeer),
}

/// What a command the daemon stopped in the middle of has left behind,
/// which decides whether running it again is safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    /// Nothing that a second run would repeat: read-only commands (search,
    /// project_id, commit-msg, pr-message, release-note, explore) and those
    /// that resume or repeat their change (config, index).
    Repeatable,
    /// `commit` before the daemon handed the message over: nothing was
    /// committed.
    BeforeCommit,
    /// `commit` after `git commit` ran here; `true` when it made the commit.
    AfterCommit(bool),
}

impl Interrupted {
    /// For `command`, given whether `git commit` ran for it (and made the
    /// commit).
    pub fn of(command: &git_agent_shared::cli::Command, committed: Option<bool>) -> Self {
        match (command, committed) {
            (_, Some(made)) => Interrupted::AfterCommit(made),
            (git_agent_shared::cli::Command::Commit(_), None) => Interrupted::BeforeCommit,
            _ => Interrupted::Repeatable,
        }
    }
}

fn stopped_text(command: &str, interrupted: Interrupted) -> String {
    match interrupted {
        Interrupted::Repeatable => format!(
            "the daemon stopped before `git-agent {command}` finished\nhint: running it again is safe; it starts a new daemon"
        ),
        Interrupted::BeforeCommit => format!(
            "the daemon stopped before `git-agent {command}` finished; nothing was committed\nhint: running it again is safe; it starts a new daemon"
        ),
        Interrupted::AfterCommit(true) => format!(
            "the daemon stopped after `git commit` ran; the commit is made\nhint: do not run `git-agent {command}` again for it; `git log -1` shows it"
        ),
        Interrupted::AfterCommit(false) => format!(
            "the daemon stopped after `git commit` failed (see above); nothing was committed\nhint: fix the problem, then run `git-agent {command}` again"
        ),
    }
}

fn reason_lines(reason: &str) -> String {
    if reason.trim().is_empty() {
        "\nhint: see the daemon logs under ~/.local/state/git-agent/logs".to_string()
    } else {
        format!(":\n{}", reason.trim_end())
    }
}

/// Refuses a socket folder that another user owns or can enter: whoever
/// controls it controls what answers on the socket. A missing folder is
/// fine (the daemon creates it privately).
fn check_socket_folder(socket: &Path, expected_uid: u32) -> Result<(), DaemonError> {
    let Some(dir) = socket.parent() else { return Ok(()) };
    match private_fs::verify_private_dir(dir, expected_uid) {
        Err(private_fs::NotPrivate::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(()),
        result => Ok(result?),
    }
}

/// The socket of the invocation, once its folder is known to be private.
pub(crate) fn checked_socket(env: &Environment) -> Result<PathBuf, DaemonError> {
    let socket = paths::socket_path(env)?;
    check_socket_folder(&socket, private_fs::current_uid())?;
    Ok(socket)
}

/// Runs the invocation of `command` in the daemon, renders its reply on
/// this process's stdout and stderr, and returns the command's exit code.
pub async fn run(invocation: pb::Invocation, command: &git_agent_shared::cli::Command) -> Result<i32, DaemonError> {
    let mut renderer = Renderer::new(invocation.stdout_is_terminal, invocation.stderr_is_terminal);
    run_with(invocation, command, &mut renderer).await
}

/// What takes in a command's reply: the terminal's [`Renderer`], or a
/// caller that keeps the output (the hook).
pub trait Reply {
    /// Takes one event; returns the exit code when the command ended.
    fn event(&mut self, event: pb::RunEvent) -> Option<i32>;
    /// The stream ended without an exit code.
    fn finish(&mut self);
    /// `Some(made)` once `git commit` ran for a `GitCommit` action.
    fn committed(&self) -> Option<bool>;
}

/// Runs the invocation of `command` in the daemon, hands its reply to
/// `reply`, and returns the command's exit code.
pub async fn run_with(
    invocation: pb::Invocation,
    command: &git_agent_shared::cli::Command,
    reply: &mut dyn Reply,
) -> Result<i32, DaemonError> {
    let env = Environment::new(invocation.env.clone().into_iter().collect());
    let socket = checked_socket(&env)?;
    let request = pb::RunRequest { invocation: Some(invocation) };
    let mut replaced = false;
    loop {
        let channel = connect_or_start(&socket).await?;
        let mut client = gitagent_proto::client(channel);
        match client.run(request.clone()).await {
            Ok(answer) => {
                let mut stream = answer.into_inner();
                // The daemon itself never fails a stream it has started; a
                // broken or unfinished one means it went away.
                while let Ok(Some(event)) = stream.message().await {
                    if let Some(code) = reply.event(event) {
                        return Ok(code);
                    }
                }
                reply.finish();
                let interrupted = Interrupted::of(command, reply.committed());
                return Err(DaemonError::Stopped { command: command.name().to_string(), interrupted });
            }
            Err(status) if status.code() == Code::FailedPrecondition && !replaced => {
                replaced = true;
                replace(&mut client, &socket).await?;
            }
            Err(status) if daemon_went_away(&status) && !replaced => {
                // The daemon went away between connecting and calling (a
                // killed daemon's listener accepts until its last thread
                // exits); nothing ran, so connect again.
                replaced = true;
            }
            Err(status) => return Err(DaemonError::Rpc(status.message().to_string())),
        }
    }
}

/// Makes one call on the daemon, as every command does: the daemon is
/// started when nothing answers, replaced once when it is of another build
/// (FAILED_PRECONDITION), and called again once when the connection broke
/// before it answered. The daemon's own answer, error or not, is returned.
pub(crate) async fn call<T, F, Fut>(socket: &Path, mut call: F) -> Result<Result<T, tonic::Status>, DaemonError>
where
    F: FnMut(GitAgentClient<Channel>) -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let mut replaced = false;
    loop {
        let channel = connect_or_start(socket).await?;
        let mut client = gitagent_proto::client(channel);
        match call(client.clone()).await {
            Err(status) if status.code() == Code::FailedPrecondition && !replaced => {
                replaced = true;
                replace(&mut client, socket).await?;
            }
            Err(status) if daemon_went_away(&status) && !replaced => replaced = true,
            answer => return Ok(answer),
        }
    }
}

/// Launches a detached review or simplification and prints its launch
/// object: `{"command":...,"id":...,"pid":...}` and a newline, nothing on
/// stderr.
pub async fn launch(invocation: pb::Invocation) -> Result<i32, DaemonError> {
    let env = Environment::new(invocation.env.clone().into_iter().collect());
    let socket = checked_socket(&env)?;
    let request = pb::LaunchTaskRequest { invocation: Some(invocation) };
    let mut replaced = false;
    loop {
        let channel = connect_or_start(&socket).await?;
        let mut client = gitagent_proto::client(channel);
        match client.launch_task(request.clone()).await {
            Ok(reply) => {
                let reply = reply.into_inner();
                let launch = LaunchObject { command: reply.command, id: reply.id, pid: reply.pid };
                let mut line = serde_json::to_string(&launch).map_err(DaemonError::Encode)?;
                line.push('\n');
                return Ok(write_stdout(line.as_bytes()));
            }
            Err(status) if status.code() == Code::FailedPrecondition && !replaced => {
                replaced = true;
                replace(&mut client, &socket).await?;
            }
            Err(status) if daemon_went_away(&status) && !replaced => replaced = true,
            Err(status) if status.code() == Code::InvalidArgument => return Ok(fail(status.message(), 2)),
            Err(status) => return Ok(fail(status.message(), 1)),
        }
    }
}

#[derive(serde::Serialize)]
struct LaunchObject {
    command: String,
    id: String,
    pid: u32,
}

fn write_stdout(bytes: &[u8]) -> i32 {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    i32::from(stdout.write_all(bytes).and_then(|()| stdout.flush()).is_err())
}

fn fail(message: &str, code: i32) -> i32 {
    eprintln!("error: {message}");
    code
}

/// `--wait <id>`: the stored report on stdout, through the daemon when one
/// answers, else straight from the durable record (no daemon is started).
pub async fn wait(invocation: pb::Invocation, id: String, command: TaskCommand) -> Result<i32, DaemonError> {
    let env = Environment::new(invocation.env.clone().into_iter().collect());
    let socket = checked_socket(&env)?;
    if let Ok(channel) = gitagent_proto::connect(&socket).await {
        let request =
            pb::TaskRef { id: id.clone(), command: command.as_str().to_string(), invocation: Some(invocation.clone()) };
        match gitagent_proto::client(channel).wait_task(request).await {
            Ok(reply) => {
                let reply = reply.into_inner();
                return Ok(match reply.outcome {
                    Some(pb::task_outcome::Outcome::ReportJson(report)) => {
                        warn_report(&reply.redacted, reply.controls_removed);
                        write_stdout(report.as_bytes())
                    }
                    Some(pb::task_outcome::Outcome::Error(message)) => fail(&message, 1),
                    None => fail("the daemon returned no task outcome", 1),
                });
            }
            Err(status) if status.code() == Code::InvalidArgument => return Ok(fail(status.message(), 2)),
            // The daemon went away or is of another build: read the record.
            Err(_) => {}
        }
    }
    Ok(match wait_locally(&env, &id, command).await {
        Ok(report) => {
            warn_report(report.redacted.as_deref().unwrap_or_default(), report.controls_removed);
            write_stdout(report.json.as_bytes())
        }
        Err(error) => fail(&git_agent_shared::error_chain::render(&error), 1),
    })
}

/// Why `--wait` could not read a task's result without the daemon.
#[derive(Debug, thiserror::Error)]
enum LocalWaitError {
    #[error(transparent)]
    Record(#[from] task_record::RecordError),
    #[error(transparent)]
    Home(#[from] git_agent_shared::environment::MissingHome),
    #[error(transparent)]
    Wait(#[from] task_record::WaitError),
}

/// Says on stderr that the stored report had terminal control sequences
/// removed, when it had.
/// What `--wait` says on stderr beside a report: which secrets were
/// redacted from the task's requests, then any terminal controls removed
/// from the answer.
fn warn_report(redacted: &str, controls_removed: u64) {
    if !redacted.is_empty() {
        eprintln!("{redacted}");
    }
    if let Some(line) = git_agent_shared::controls::removed_warning(controls_removed) {
        eprint!("{line}");
    }
}

async fn wait_locally(
    env: &Environment,
    id: &str,
    command: TaskCommand,
) -> Result<task_record::Report, LocalWaitError> {
    let id = TaskId::parse(id)?;
    let root = paths::metadata_root(env)?;
    let path = task_record::find_record(&root, &id)?;
    loop {
        let record = task_record::read_record(&path, &id)?;
        let state = task_record::evaluate(&record, command, task_record::process_alive, jiff::Timestamp::now())?;
        if let Some(result) = task_record::wait_result(state, command, &id) {
            return Ok(result?);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether a call failed because the connection to the daemon broke,
/// rather than because the daemon answered with an error.
fn daemon_went_away(status: &tonic::Status) -> bool {
    let transport = std::error::Error::source(status).is_some_and(|source| source.is::<tonic::transport::Error>());
    status.code() == Code::Unavailable || transport
}

async fn connect_or_start(socket: &Path) -> Result<Channel, DaemonError> {
    match gitagent_proto::connect(socket).await {
        Ok(channel) => return Ok(channel),
        Err(error) => refuse_foreign_peer(&error)?,
    }
    let mut daemon = start_daemon(socket)?;
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        match gitagent_proto::connect(socket).await {
            Ok(channel) => return Ok(channel),
            Err(error) => {
                refuse_foreign_peer(&error)?;
                // A daemon that found another one serving exits 0 and the
                // other answers soon; one that failed says why at once.
                if let Ok(Some(status)) = daemon.child.try_wait()
                    && !status.success()
                {
                    return Err(DaemonError::StartFailed { status, reason: daemon.stderr() });
                }
                if Instant::now() >= deadline {
                    let status = daemon
                        .child
                        .try_wait()
                        .ok()
                        .flatten()
                        .map(|status| format!(" ({DAEMON_BINARY} {status})"))
                        .unwrap_or_default();
                    let stderr = daemon.stderr();
                    let detail = format!(
                        "{status}: {error}{}",
                        if stderr.trim().is_empty() { String::new() } else { format!("\n{}", stderr.trim_end()) }
                    );
                    return Err(DaemonError::NotReady { socket: socket.to_path_buf(), detail });
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// A daemon this client started, and the file its stderr goes to.
struct Started {
    child: std::process::Child,
    stderr: Option<File>,
}

impl Started {
    /// What the daemon wrote to its stderr so far.
    fn stderr(&self) -> String {
        use std::os::unix::fs::FileExt;
        let Some(file) = &self.stderr else { return String::new() };
        let mut text = Vec::new();
        let mut buffer = [0u8; 4096];
        // The daemon writes through a descriptor sharing this one's offset:
        // read by position, from the start.
        while let Ok(read @ 1..) = file.read_at(&mut buffer, text.len() as u64) {
            text.extend_from_slice(&buffer[..read]);
            if text.len() >= 64 * 1024 {
                break;
            }
        }
        String::from_utf8_lossy(&text).into_owned()
    }
}

/// Fails when connecting failed because the socket is served by another
/// user's process: nothing was sent, and no daemon is started over it.
fn refuse_foreign_peer(error: &tonic::transport::Error) -> Result<(), DaemonError> {
    match gitagent_proto::foreign_peer(error) {
        Some(peer) => Err(peer.clone().into()),
        None => Ok(()),
    }
}

/// Asks a daemon of another build to give up the socket, and waits until
/// it has (or until a daemon of this build answers there).
async fn replace(client: &mut GitAgentClient<Channel>, socket: &Path) -> Result<(), DaemonError> {
    let _ = client.shutdown(pb::ShutdownRequest {}).await;
    let own_build = git_agent_shared::build::build_id();
    let deadline = Instant::now() + REPLACE_DEADLINE;
    while Instant::now() < deadline {
        let Ok(channel) = gitagent_proto::connect(socket).await else { return Ok(()) };
        let hello = gitagent_proto::client(channel).hello(pb::HelloRequest::default()).await;
        match hello {
            Ok(reply) if reply.get_ref().build == own_build => return Ok(()),
            Err(_) => return Ok(()),
            Ok(_) => tokio::time::sleep(POLL).await,
        }
    }
    Err(DaemonError::OtherBuildStays { socket: socket.to_path_buf() })
}

/// Starts `gitagentd serve --auto` detached in its own session and waits
/// until it signals that the socket accepts connections (it closes the
/// pipe we pass it) or exits.
fn start_daemon(socket: &Path) -> Result<Started, DaemonError> {
    let path = locate_daemon()?;
    let (ready_read, ready_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(DaemonError::Pipe)?;
    // The log beside the socket outlives this call; where that folder
    // cannot be created (the daemon will fail on it too), an unnamed
    // temporary file still carries the daemon's reason back here.
    let stderr = open_stderr_log(socket).or_else(|| tempfile::tempfile().ok());
    let child_stderr = stderr.as_ref().and_then(|file| file.try_clone().ok());
    let ready_fd = ready_write.as_raw_fd();
    let mut command = Command::new(&path);
    command
        .args(["serve", "--auto", "--ready-fd", &ready_fd.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(child_stderr.map_or_else(Stdio::null, Stdio::from));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::fcntl(ready_fd, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|source| DaemonError::Spawn { path, source })?;
    drop(command);
    drop(ready_write);
    wait_closed(ready_read);
    Ok(Started { child, stderr })
}

/// Blocks until every writer of the pipe has closed it, or the start
/// deadline passes.
fn wait_closed(read: OwnedFd) {
    let mut file = File::from(read);
    let mut buffer = [0u8; 16];
    let deadline = Instant::now() + START_DEADLINE;
    while Instant::now() < deadline {
        let mut poll = [libc::pollfd { fd: file.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        let remaining = deadline.saturating_duration_since(Instant::now()).as_millis();
        // SAFETY: `poll` is a valid array of one pollfd.
        let ready = unsafe { libc::poll(poll.as_mut_ptr(), 1, i32::try_from(remaining).unwrap_or(i32::MAX)) };
        if ready <= 0 {
            if ready < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        match std::io::Read::read(&mut file, &mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

fn stderr_path(socket: &Path) -> PathBuf {
    socket.with_file_name("gitagentd.stderr")
}

fn open_stderr_log(socket: &Path) -> Option<File> {
    let dir = socket.parent()?;
    git_agent_shared::private_fs::ensure_private_dir(dir).ok()?;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(stderr_path(socket))
        .ok()
}

/// `gitagentd` next to this executable first, then on PATH.
fn locate_daemon() -> Result<PathBuf, DaemonError> {
    let own = std::env::current_exe().ok();
    if let Some(candidate) = own.as_ref().and_then(|exe| exe.parent()).map(|dir| dir.join(DAEMON_BINARY))
        && git_agent_shared::executable::is_executable(&candidate)
    {
        return Ok(candidate);
    }
    if let Some(candidate) = git_agent_shared::executable::find_on_path(std::env::var_os("PATH"), DAEMON_BINARY) {
        return Ok(candidate);
    }
    Err(DaemonError::NotFound {
        client: own.map(|exe| exe.display().to_string()).unwrap_or_else(|| "git-agent".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn an_interrupted_commit_is_safe_to_rerun_only_until_git_commit_made_it() {
        let commit = git_agent_shared::cli::parse_command(&["commit".to_string()]).unwrap();
        let search = git_agent_shared::cli::parse_command(&["search".to_string(), "x".to_string()]).unwrap();
        assert_eq!(Interrupted::of(&search, None), Interrupted::Repeatable);
        assert_eq!(Interrupted::of(&commit, None), Interrupted::BeforeCommit);
        assert_eq!(Interrupted::of(&commit, Some(true)), Interrupted::AfterCommit(true));
        let made = stopped_text("commit", Interrupted::AfterCommit(true));
        assert!(made.contains("the commit is made") && made.contains("hint: do not run"), "{made}");
        let failed = stopped_text("commit", Interrupted::AfterCommit(false));
        assert!(
            failed.contains("nothing was committed") && failed.contains("run `git-agent commit` again"),
            "{failed}"
        );
    }

    #[test]
    fn socket_folder_must_be_private_and_ours() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("run");
        let socket = dir.join("gitagentd.sock");
        let own = private_fs::current_uid();
        check_socket_folder(&socket, own).expect("a missing folder is created privately later");
        private_fs::ensure_private_dir(&dir).unwrap();
        check_socket_folder(&socket, own).unwrap();
        let error = check_socket_folder(&socket, own.wrapping_add(1)).unwrap_err();
        assert!(matches!(error, DaemonError::UnsafeSocketFolder(private_fs::NotPrivate::Owner { .. })), "{error}");
        for mode in [0o770, 0o701, 0o755] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            let error = check_socket_folder(&socket, own).unwrap_err();
            assert!(matches!(error, DaemonError::UnsafeSocketFolder(private_fs::NotPrivate::Mode { .. })), "{error}");
        }
    }
}

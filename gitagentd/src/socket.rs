//! Ownership of the daemon's socket address. One daemon per user: the
//! owner holds an exclusive `flock` on `gitagentd.lock` beside the socket
//! for as long as it listens. A socket file without a lock holder is stale
//! and is replaced. Sockets inherited from systemd (`LISTEN_FDS`) or
//! launchd are used as they are.

use anyhow::{Context, bail};
use git_agent_shared::{Environment, paths, private_fs};
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::net::UnixListener;

/// How long a starting daemon waits for a lock holder that does not answer
/// yet (it is starting, or releasing the address) before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(10);
const LOCK_POLL: Duration = Duration::from_millis(5);

/// A listening socket this process serves on.
pub struct Acquired {
    pub listener: UnixListener,
    pub path: PathBuf,
    /// The address lock, held while listening; `None` when inherited.
    pub lock: Option<Flock<File>>,
    /// Whether a service manager passed the socket in.
    pub activated: bool,
}

/// Takes the socket address, or returns `None` when another daemon
/// already answers on it.
pub async fn acquire(env: &Environment) -> anyhow::Result<Option<Acquired>> {
    let dir = paths::runtime_dir(env)?;
    private_fs::ensure_private_dir(&dir)
        .with_context(|| format!("cannot create the socket folder {}", dir.display()))?;
    let socket_path = paths::socket_path(env)?;
    let lock_path = paths::lock_path(env)?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .with_context(|| format!("cannot open the lock file {}", lock_path.display()))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => {
                match std::fs::remove_file(&socket_path) {
                    Ok(()) => tracing::info!(path = %socket_path.display(), "removed a stale socket"),
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => {
                        return Err(error)
                            .with_context(|| format!("cannot remove the stale socket {}", socket_path.display()));
                    }
                }
                let listener = UnixListener::bind(&socket_path)
                    .with_context(|| format!("cannot listen on {}", socket_path.display()))?;
                return Ok(Some(Acquired { listener, path: socket_path, lock: Some(lock), activated: false }));
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {}
            Err((_, errno)) => bail!("cannot lock {}: {errno}", lock_path.display()),
        }
        if answers(&socket_path).await {
            return Ok(None);
        }
        if Instant::now() >= deadline {
            bail!(
                "another gitagentd holds {} but does not answer on {}\nhint: stop it with `gitagentd stop` or kill it",
                lock_path.display(),
                socket_path.display()
            );
        }
        tokio::time::sleep(LOCK_POLL).await;
    }
}

/// Whether a daemon really serves on `socket`: a dying process's listener
/// still accepts connections into its backlog, so only an answered `Hello`
/// counts.
async fn answers(socket: &std::path::Path) -> bool {
    const HELLO_WAIT: Duration = Duration::from_secs(2);
    let hello = async {
        let channel = gitagent_proto::connect(socket).await.ok()?;
        gitagent_proto::GitAgentClient::new(channel).hello(gitagent_proto::v1::HelloRequest::default()).await.ok()
    };
    matches!(tokio::time::timeout(HELLO_WAIT, hello).await, Ok(Some(_)))
}

/// The first socket passed by systemd, when this process was socket
/// activated (`LISTEN_PID` names it and `LISTEN_FDS` is at least one).
pub fn from_systemd() -> anyhow::Result<Option<Acquired>> {
    let for_us = std::env::var("LISTEN_PID").ok().and_then(|pid| pid.parse::<u32>().ok()) == Some(std::process::id());
    let count = std::env::var("LISTEN_FDS").ok().and_then(|n| n.parse::<i32>().ok()).unwrap_or(0);
    if !for_us || count < 1 {
        return Ok(None);
    }
    const SD_LISTEN_FDS_START: RawFd = 3;
    inherited(SD_LISTEN_FDS_START).map(Some)
}

/// The socket launchd created for the agent's `Listeners` entry.
#[cfg(target_os = "macos")]
pub fn from_launchd() -> anyhow::Result<Acquired> {
    unsafe extern "C" {
        fn launch_activate_socket(
            name: *const libc::c_char,
            fds: *mut *mut libc::c_int,
            cnt: *mut libc::size_t,
        ) -> libc::c_int;
    }
    let name = c"Listeners";
    let mut fds: *mut libc::c_int = std::ptr::null_mut();
    let mut count: libc::size_t = 0;
    // SAFETY: launchd fills `fds` with a malloc'd array of `count` descriptors.
    let status = unsafe { launch_activate_socket(name.as_ptr(), &mut fds, &mut count) };
    if status != 0 || count == 0 || fds.is_null() {
        bail!("launchd passed no socket named Listeners (error {status})");
    }
    // SAFETY: `count` is at least one, so the first element exists.
    let fd = unsafe { *fds };
    // SAFETY: the array was allocated by launchd with malloc and is ours to free.
    unsafe { libc::free(fds.cast()) };
    inherited(fd)
}

#[cfg(not(target_os = "macos"))]
pub fn from_launchd() -> anyhow::Result<Acquired> {
    bail!("--launchd is only available on macOS")
}

fn inherited(fd: RawFd) -> anyhow::Result<Acquired> {
    // SAFETY: the service manager passed this descriptor to us alone.
    let listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
    listener.set_nonblocking(true).context("cannot configure the inherited socket")?;
    let path =
        listener.local_addr().ok().and_then(|address| address.as_pathname().map(PathBuf::from)).unwrap_or_default();
    let listener = UnixListener::from_std(listener).context("cannot use the inherited socket")?;
    Ok(Acquired { listener, path, lock: None, activated: true })
}

/// Tells the client that started us that the socket accepts connections,
/// by closing the descriptor it gave us.
pub fn signal_ready(fd: Option<RawFd>) {
    if let Some(fd) = fd {
        // SAFETY: the descriptor was passed to us for this purpose alone.
        unsafe { libc::close(fd) };
    }
}

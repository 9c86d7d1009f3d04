//! Ownership of the daemon's socket address. One daemon per user: the
//! owner holds an exclusive `flock` on `gitagentd.lock` beside the socket
//! for as long as it listens, and writes its pid into that file, so
//! `gitagentd status` and `stop` find it even when its socket file is gone
//! ([`lock_holder`]). A socket file without a lock holder is stale and is
//! replaced; a daemon whose own socket file is removed or replaced gives
//! the address up ([`watch_bound_socket`]). Sockets inherited from systemd
//! (`LISTEN_FDS`) or launchd are used as they are.

use anyhow::{Context, bail};
use git_agent_shared::{Environment, paths, private_fs};
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

/// How long a starting daemon waits for a lock holder that does not answer
/// yet (it is starting, or releasing the address) before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(10);
const LOCK_POLL: Duration = Duration::from_millis(5);

/// A listening socket this process serves on.
pub struct Acquired {
    pub listener: UnixListener,
    pub path: PathBuf,
    /// The address lock, held while listening.
    pub lock: Option<Flock<File>>,
    /// Whether a service manager passed the socket in.
    pub activated: bool,
    /// The socket file this process bound (device and inode), which it
    /// removes when it gives the address up; `None` when inherited, as the
    /// service manager owns that file.
    pub bound: Option<SocketFile>,
}

/// The identity of a socket file, so a daemon only ever removes the file
/// it created, never one bound at the same path since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketFile {
    dev: u64,
    ino: u64,
}

impl SocketFile {
    fn of(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|meta| Self { dev: meta.dev(), ino: meta.ino() })
    }

    /// Removes `path` when it is still this file.
    pub fn remove_if_same(self, path: &Path) {
        if Self::of(path) == Some(self) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// How often a daemon checks that its socket file is still the one it
/// bound.
const SOCKET_CHECK: Duration = Duration::from_secs(1);

/// Who holds the address lock, as `gitagentd status` and `stop` see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockHolder {
    /// Nobody: no daemon owns the address.
    Free,
    /// A process holds the lock; its pid when it recorded one (a daemon of
    /// an older build did not).
    Held { pid: Option<u32> },
}

/// Who holds the address lock at `lock_path`. Taking a shared lock for a
/// moment tells whether an exclusive holder exists; a daemon starting at
/// that moment retries its own attempt.
pub fn lock_holder(lock_path: &Path) -> std::io::Result<LockHolder> {
    let mut file = match File::open(lock_path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(LockHolder::Free),
        Err(error) => return Err(error),
    };
    let mut recorded = String::new();
    file.read_to_string(&mut recorded)?;
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_probe) => Ok(LockHolder::Free),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(LockHolder::Held { pid: recorded.trim().parse().ok() }),
        Err((_, errno)) => Err(std::io::Error::from(errno)),
    }
}

/// Writes this process's pid into the lock file it now holds.
fn record_holder(lock: &mut Flock<File>, lock_path: &Path) -> anyhow::Result<()> {
    let file: &mut File = lock;
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .with_context(|| format!("cannot record this daemon's pid in {}", lock_path.display()))
}

/// Gives the address up (cancels `shutdown`) once the socket file at
/// `path` is no longer the one this daemon bound: removed, or replaced by
/// another file. Nothing reaches the daemon through that path any more,
/// while the lock it holds keeps every new daemon from binding it; exiting
/// lets the next `git-agent` start one that does.
pub async fn watch_bound_socket(path: PathBuf, bound: SocketFile, shutdown: CancellationToken) {
    let mut ticks = tokio::time::interval(SOCKET_CHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        if SocketFile::of(&path) != Some(bound) {
            tracing::warn!(path = %path.display(), "the socket file was removed or replaced; giving the address up");
            shutdown.cancel();
            return;
        }
    }
}

fn open_lock(lock_path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(lock_path)
        .with_context(|| format!("cannot open the lock file {}", lock_path.display()))
}

/// Whether something accepts connections on `socket` now: a live listener
/// (a service manager's socket, or a daemon's), as opposed to the stale
/// file a killed daemon leaves behind.
fn listened_on(socket: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}

/// Takes the socket address, or returns `None` when another daemon
/// already answers on it.
pub async fn acquire(env: &Environment) -> anyhow::Result<Option<Acquired>> {
    let dir = paths::runtime_dir(env)?;
    if let Err(error) = private_fs::ensure_private_dir(&dir) {
        bail!(
            "cannot create the socket folder {}: {error}\nhint: set XDG_RUNTIME_DIR to a folder of yours that can be written",
            dir.display()
        );
    }
    let socket_path = paths::socket_path(env)?;
    let lock_path = paths::lock_path(env)?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        let file = open_lock(&lock_path)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut lock) => {
                if listened_on(&socket_path) {
                    // A service manager listens there and starts its own
                    // daemon on the first connection: the address is its.
                    tracing::info!(path = %socket_path.display(), "a service manager listens on the socket");
                    return Ok(None);
                }
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
                let bound = SocketFile::of(&socket_path);
                record_holder(&mut lock, &lock_path)?;
                return Ok(Some(Acquired { listener, path: socket_path, lock: Some(lock), activated: false, bound }));
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {}
            Err((_, errno)) => bail!("cannot lock {}: {errno}", lock_path.display()),
        }
        if answers(&socket_path).await {
            return Ok(None);
        }
        if Instant::now() >= deadline {
            let holder = match lock_holder(&lock_path) {
                Ok(LockHolder::Held { pid: Some(pid) }) => format!(" (pid {pid})"),
                _ => String::new(),
            };
            bail!(
                "another gitagentd{holder} holds {} but does not answer on {}\nhint: stop it with `gitagentd stop`",
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
        gitagent_proto::client(channel).hello(gitagent_proto::v1::HelloRequest::default()).await.ok()
    };
    matches!(tokio::time::timeout(HELLO_WAIT, hello).await, Ok(Some(_)))
}

/// The first socket passed by systemd, when this process was socket
/// activated (`LISTEN_PID` names it and `LISTEN_FDS` is at least one),
/// with the address lock taken.
pub async fn from_systemd() -> anyhow::Result<Option<Acquired>> {
    let for_us = std::env::var("LISTEN_PID").ok().and_then(|pid| pid.parse::<u32>().ok()) == Some(std::process::id());
    let count = std::env::var("LISTEN_FDS").ok().and_then(|n| n.parse::<i32>().ok()).unwrap_or(0);
    if !for_us || count < 1 {
        return Ok(None);
    }
    const SD_LISTEN_FDS_START: RawFd = 3;
    let acquired = inherited(SD_LISTEN_FDS_START)?;
    lock_inherited(acquired).await.map(Some)
}

/// Takes the address lock for an inherited socket, beside the socket file
/// as an auto-started daemon would. A holder is given [`LOCK_WAIT`] to let
/// go (an auto-started daemon that found the service manager's socket
/// leaves at once); one that keeps it serves another socket at this
/// address, and serving both would let each unlink the other's.
async fn lock_inherited(mut acquired: Acquired) -> anyhow::Result<Acquired> {
    if acquired.path.as_os_str().is_empty() {
        // An abstract or unnamed socket has no file to fight over.
        return Ok(acquired);
    }
    let lock_path = acquired.path.with_file_name(paths::LOCK_FILE_NAME);
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match Flock::lock(open_lock(&lock_path)?, FlockArg::LockExclusiveNonblock) {
            Ok(mut lock) => {
                record_holder(&mut lock, &lock_path)?;
                acquired.lock = Some(lock);
                return Ok(acquired);
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) if Instant::now() < deadline => {
                tokio::time::sleep(LOCK_POLL).await;
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => bail!(
                "another gitagentd holds {} for {}\nhint: stop it with `gitagentd stop` so the service manager's daemon can serve",
                lock_path.display(),
                acquired.path.display()
            ),
            Err((_, errno)) => bail!("cannot lock {}: {errno}", lock_path.display()),
        }
    }
}

/// The socket launchd created for the agent's `Listeners` entry, with the
/// address lock taken.
#[cfg(target_os = "macos")]
pub async fn from_launchd() -> anyhow::Result<Acquired> {
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
    lock_inherited(inherited(fd)?).await
}

#[cfg(not(target_os = "macos"))]
pub async fn from_launchd() -> anyhow::Result<Acquired> {
    bail!("--launchd is only available on macOS")
}

fn inherited(fd: RawFd) -> anyhow::Result<Acquired> {
    // SAFETY: the service manager passed this descriptor to us alone.
    let listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
    listener.set_nonblocking(true).context("cannot configure the inherited socket")?;
    let path =
        listener.local_addr().ok().and_then(|address| address.as_pathname().map(PathBuf::from)).unwrap_or_default();
    let listener = UnixListener::from_std(listener).context("cannot use the inherited socket")?;
    Ok(Acquired { listener, path, lock: None, activated: true, bound: None })
}

/// Tells the client that started us that the socket accepts connections,
/// by closing the descriptor it gave us.
pub fn signal_ready(fd: Option<RawFd>) {
    if let Some(fd) = fd {
        // SAFETY: the descriptor was passed to us for this purpose alone.
        unsafe { libc::close(fd) };
    }
}

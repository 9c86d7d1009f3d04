//! Shared helpers for the end-to-end tests: an isolated user environment
//! ([`TestEnv`]) that runs the real `git-agent` and `gitagentd` binaries,
//! and temporary Git repositories built with the real `git` ([`GitRepo`]).
//! The crates' own tests build theirs with [`git::Git`], the one isolated
//! `git` runner.
//!
//! The binaries are the ones `cargo test` built next to this test binary
//! (`target/<profile>/`). Every environment has its own HOME,
//! XDG_RUNTIME_DIR, XDG_CONFIG_HOME and XDG_STATE_HOME, so each test talks
//! to its own daemon, which is stopped when the environment is dropped.

pub mod corpus;
pub mod fake_embeddings;
pub mod fake_openai;
pub mod fake_proxy;
pub mod git;
pub mod git_servers;
pub mod soak;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The path of a binary built by this workspace, such as `git-agent`.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    // Test binaries live in target/<profile>/deps, bench binaries in
    // target/<profile>.
    let mut profile_dir = exe.parent().expect("binaries live in a folder");
    let is_test = profile_dir.file_name().is_some_and(|name| name == "deps");
    if is_test {
        profile_dir = profile_dir.parent().expect("deps sits in the profile folder");
    }
    let path = profile_dir.join(name);
    assert!(
        path.is_file(),
        "{} was not built; run `cargo test` at the workspace root so every binary is built",
        path.display()
    );
    assert_fresh(&path);
    // Tests rely on the daemon's test switches; benchmarks measure the
    // release build, which has none.
    if is_test && name == "gitagentd" {
        assert_test_hooks(&path);
    }
    path
}

/// Panics when `gitagentd` was built without its `test-hooks` feature (a
/// `cargo build` alone leaves it out): the tests rely on its switches.
fn assert_test_hooks(daemon: &Path) {
    static CHECKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let has_hooks = *CHECKED.get_or_init(|| {
        // `--build-id` exists only with the feature; `--help` then succeeds.
        Command::new(daemon)
            .args(["serve", "--build-id", "probe", "--help"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    assert!(
        has_hooks,
        "{} was built without the test-hooks feature; run `cargo test` at the workspace root",
        daemon.display()
    );
}

/// Panics when a source file of `binary` is newer than it: a
/// `cargo test -p git-agent-tests` alone does not rebuild the binaries, and
/// a stale one would make the tests check old code. Each binary is judged
/// by the crates it is built from: the client by proto, shared and its own
/// crate; the daemon by those and every crate under gitagentd/.
fn assert_fresh(binary: &Path) {
    static NEWEST: std::sync::OnceLock<[Option<std::time::SystemTime>; 2]> = std::sync::OnceLock::new();
    let [client, daemon] = *NEWEST.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_path_buf();
        let newest = |dirs: &[PathBuf]| dirs.iter().filter_map(|dir| newest_modification(dir)).max();
        let common = ["proto", "shared/src"].map(|dir| root.join(dir));
        let client = newest(&[common.as_slice(), &[root.join("git-agent-client/src")]].concat());
        // The daemon's crates: gitagentd/src and gitagentd/<crate>/src.
        let daemon_crates: Vec<PathBuf> = std::fs::read_dir(root.join("gitagentd"))
            .map(|entries| entries.flatten().map(|entry| entry.path().join("src")).filter(|dir| dir.is_dir()).collect())
            .unwrap_or_default();
        let daemon = newest(&[common.as_slice(), &[root.join("gitagentd/src")], &daemon_crates].concat());
        [client, daemon]
    });
    let newest = if binary.file_name().is_some_and(|name| name == "git-agent") { client } else { client.max(daemon) };
    let built = std::fs::metadata(binary).and_then(|meta| meta.modified()).ok();
    if let (Some(newest), Some(built)) = (newest, built) {
        assert!(
            newest <= built,
            "{} is older than its sources; run `cargo test` at the workspace root (or `cargo build --bins` first)",
            binary.display()
        );
    }
}

fn newest_modification(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let candidate = if path.is_dir() {
            newest_modification(&path)
        } else {
            entry.metadata().and_then(|meta| meta.modified()).ok()
        };
        newest = newest.max(candidate);
    }
    newest
}

/// An isolated user: home, runtime, config and state folders of its own.
pub struct TestEnv {
    root: tempfile::TempDir,
    extra_env: Vec<(String, String)>,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> Self {
        let root = tempfile::Builder::new().prefix("ga").tempdir_in("/tmp").expect("create a temporary folder");
        for dir in ["home", "run", "config", "state", "work"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("create test folders");
        }
        Self { root, extra_env: Vec::new() }
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    pub fn runtime_dir(&self) -> PathBuf {
        self.root.path().join("run")
    }

    pub fn config_home(&self) -> PathBuf {
        self.root.path().join("config")
    }

    pub fn state_home(&self) -> PathBuf {
        self.root.path().join("state")
    }

    /// A scratch folder for repositories and other test files.
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    pub fn socket_path(&self) -> PathBuf {
        self.runtime_dir().join("git-agent").join("gitagentd.sock")
    }

    /// Adds a variable to every command this environment runs.
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.extra_env.push((name.to_string(), value.to_string()));
    }

    /// The isolated environment applied to a command, with nothing
    /// inherited but PATH.
    pub fn apply(&self, command: &mut Command) {
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_RUNTIME_DIR", self.runtime_dir())
            .env("XDG_CONFIG_HOME", self.config_home())
            .env("XDG_STATE_HOME", self.state_home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.test")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.test")
            .env("GIT_AUTHOR_DATE", "2026-01-02T03:04:05Z")
            .env("GIT_COMMITTER_DATE", "2026-01-02T03:04:05Z")
            .env("LANG", "C");
        for (name, value) in &self.extra_env {
            command.env(name, value);
        }
    }

    /// `git-agent <args>` in `dir`.
    pub fn git_agent_in(&self, dir: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(binary("git-agent"));
        self.apply(&mut command);
        command.current_dir(dir).args(args).env("PWD", dir).stdin(Stdio::null());
        command
    }

    /// Runs `git-agent <args>` in `dir` to completion.
    pub fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        Run::from(self.git_agent_in(dir, args).output().expect("run git-agent"))
    }

    /// `gitagentd <args>` with this environment.
    /// `gitagentd status`'s count of commands in flight (0 when no daemon
    /// answers).
    pub fn active_commands(&self) -> usize {
        let output = self.gitagentd(&["status"]).output().expect("run gitagentd status");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|line| line.strip_prefix("active commands: "))
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn gitagentd(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary("gitagentd"));
        self.apply(&mut command);
        command.args(args).stdin(Stdio::null());
        command
    }

    /// The pid of the daemon serving this environment, if one answers.
    pub fn daemon_pid(&self) -> Option<u32> {
        let output = self.gitagentd(&["status"]).output().ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        text.lines().find_map(|line| line.strip_prefix("pid: ")).and_then(|pid| pid.trim().parse().ok())
    }

    /// A temporary Git repository inside this environment.
    pub fn repo(&self, name: &str) -> GitRepo {
        GitRepo::init(self, &self.work().join(name))
    }

    /// The repository `project` with one commit and a staged change of
    /// `src/lib.rs` (41 becomes 42): what a commit message is written for.
    pub fn staged_repo(&self) -> GitRepo {
        let repo = self.repo("project");
        repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
        repo.commit_all("feat: start the project");
        repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
        repo.git(&["add", "src/lib.rs"]);
        repo
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // Stop this environment's daemon so no process outlives the test.
        let _ = self.gitagentd(&["stop"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

/// The outcome of one command.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code(),
            stdout: output.stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Asserts a zero exit and returns stdout as text.
    #[track_caller]
    pub fn success(&self) -> String {
        assert_eq!(self.code, Some(0), "expected success; stderr:\n{}", self.stderr);
        self.stdout_text()
    }

    /// Asserts a non-zero exit with empty stdout and returns stderr.
    #[track_caller]
    pub fn failure(&self) -> &str {
        assert_ne!(self.code, Some(0), "expected failure; stdout:\n{}", self.stdout_text());
        assert!(self.code.is_some(), "killed by a signal; stderr:\n{}", self.stderr);
        assert!(self.stdout.is_empty(), "expected empty stdout, got:\n{}", self.stdout_text());
        &self.stderr
    }
}

/// A Git repository built with the real `git`, with pinned identity and
/// dates so fixtures are reproducible.
pub struct GitRepo {
    path: PathBuf,
    env: Vec<(String, String)>,
}

impl GitRepo {
    pub fn init(test_env: &TestEnv, path: &Path) -> Self {
        std::fs::create_dir_all(path).expect("create the repository folder");
        let mut probe = Command::new("git");
        test_env.apply(&mut probe);
        let env = probe
            .get_envs()
            .filter_map(|(name, value)| Some((name.to_str()?.to_string(), value?.to_str()?.to_string())))
            .collect();
        let repo = Self { path: path.to_path_buf(), env };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Test Author"]);
        repo.git(&["config", "user.email", "author@example.test"]);
        repo.git(&["config", "commit.gpgSign", "false"]);
        repo
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `git <args>` in the repository and returns stdout; panics on
    /// failure with git's stderr.
    #[track_caller]
    pub fn git(&self, args: &[&str]) -> String {
        let output = self.git_command(args).output().expect("run git");
        assert!(output.status.success(), "git {args:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub fn git_command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new("git");
        command.env_clear().envs(self.env.iter().map(|(k, v)| (k, v))).current_dir(&self.path).args(args);
        command
    }

    /// Writes `contents` to `relative`, creating parent folders.
    pub fn write(&self, relative: &str, contents: &str) {
        let path = self.path.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent folders");
        }
        std::fs::write(path, contents).expect("write a file");
    }

    /// Stages everything and commits with `message`.
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }
}

/// The user and system CPU time of every thread of process `pid` so far
/// (read from `/proc`), and with `reaped`, also that of the children it
/// has waited for.
pub fn process_cpu(pid: u32, reaped: bool) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read a /proc stat");
    // The fields after the parenthesized command name: utime, stime,
    // cutime and cstime are the 14th to 17th of the whole line.
    let fields: Vec<&str> = stat.rsplit_once(')').expect("a /proc stat line").1.split_whitespace().collect();
    let field = |index: usize| fields[index].parse::<u64>().expect("a /proc stat time");
    let mut ticks = field(11) + field(12);
    if reaped {
        ticks += field(13) + field(14);
    }
    // SAFETY: sysconf reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / per_second)
}

/// The CPU time of this process's children that it has waited for
/// (and of their waited-for children in turn).
pub fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |value: libc::timeval| Duration::new(value.tv_sec as u64, value.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it
/// held. For waiting on another process, never as a fixed sleep.
pub fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Compares `actual` with the golden file `name` under `tests/golden/`;
/// `UPDATE_GOLDEN=1` rewrites the file first.
pub fn assert_golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write the golden file");
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(expected == actual, "{} differs; rerun with UPDATE_GOLDEN=1 to accept:\n{actual}", path.display());
}

/// Lowercase hexadecimal SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A new pseudo-terminal, `(master, slave)`, both close-on-exec: only the
/// process handed the slave as its output holds the terminal open (a
/// daemon the client starts must not).
pub fn open_terminal() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills in two new descriptors, owned from here on.
    let opened =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [master, slave] {
        // SAFETY: plain fcntl on descriptors we own.
        assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) }, 0);
    }
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// Runs `command` with stdout and stderr on one new pseudo-terminal, so
/// the client renders for a terminal, and returns its exit code and every
/// byte it wrote there in order (the terminal turns `\n` into `\r\n`).
pub fn run_on_terminal(mut command: Command) -> (Option<i32>, String) {
    use std::io::Read;
    let (master, slave) = open_terminal();
    command.stdin(Stdio::null()).stdout(slave.try_clone().expect("dup the terminal")).stderr(slave);
    let mut child = command.spawn().expect("run on a terminal");
    // The parent's copies of the terminal's slave side close here, so the
    // read below ends when the child's do.
    drop(command);
    let mut terminal = std::fs::File::from(master);
    let mut written = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match terminal.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => written.extend_from_slice(&buffer[..read]),
            // Linux reports the slave side's last close as EIO.
            Err(error) if error.raw_os_error() == Some(libc::EIO) => break,
            Err(error) => panic!("read the terminal: {error}"),
        }
    }
    let status = child.wait().expect("wait for the command");
    (status.code(), String::from_utf8_lossy(&written).into_owned())
}

/// A command running with stdin, stdout and stderr on a new
/// pseudo-terminal that is its controlling terminal, driven like a user:
/// keystrokes written to it, the screen's bytes read back as they come.
pub struct Terminal {
    child: std::process::Child,
    input: std::fs::File,
    screen: std::sync::Arc<(std::sync::Mutex<Vec<u8>>, std::sync::Condvar)>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    /// Starts `command` in a session of its own on a new terminal.
    pub fn spawn(mut command: Command) -> Self {
        use std::io::Read;
        use std::os::unix::process::CommandExt;
        let (master, slave) = open_terminal();
        command
            .stdin(slave.try_clone().expect("dup the terminal"))
            .stdout(slave.try_clone().expect("dup the terminal"))
            .stderr(slave);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("run on a terminal");
        // The parent's copies of the slave side close here, so the reader
        // ends when the child's do.
        drop(command);
        let input = std::fs::File::from(master.try_clone().expect("dup the terminal"));
        let screen = std::sync::Arc::new((std::sync::Mutex::new(Vec::new()), std::sync::Condvar::new()));
        let shared = std::sync::Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut terminal = std::fs::File::from(master);
            let mut buffer = [0u8; 4096];
            loop {
                let read = match terminal.read(&mut buffer) {
                    // Linux reports the slave side's last close as EIO.
                    Ok(0) | Err(_) => 0,
                    Ok(read) => read,
                };
                let (bytes, changed) = &*shared;
                if let Ok(mut bytes) = bytes.lock() {
                    bytes.extend_from_slice(&buffer[..read]);
                }
                changed.notify_all();
                if read == 0 {
                    break;
                }
            }
        });
        Self { child, input, screen, reader: Some(reader) }
    }

    /// Everything written to the terminal so far, as text.
    pub fn screen(&self) -> String {
        self.screen.0.lock().map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default()
    }

    /// Waits until the screen shows `text` after `from` bytes; returns the
    /// screen position just past it, or `None` when `timeout` passed.
    pub fn wait_for_after(&self, from: usize, text: &str, timeout: Duration) -> Option<usize> {
        let deadline = Instant::now() + timeout;
        let (bytes, changed) = &*self.screen;
        let mut bytes = bytes.lock().ok()?;
        loop {
            let tail = bytes.get(from..).unwrap_or_default();
            if let Some(at) = tail.windows(text.len().max(1)).position(|window| window == text.as_bytes()) {
                return Some(from + at + text.len());
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            bytes = changed.wait_timeout(bytes, deadline - now).ok()?.0;
        }
    }

    /// Like [`Terminal::wait_for_after`] from the start; panics with the
    /// screen when `text` does not show within 30 s.
    #[track_caller]
    pub fn expect(&self, text: &str) -> usize {
        self.expect_after(0, text)
    }

    /// [`Terminal::expect`] after `from` bytes of the screen.
    #[track_caller]
    pub fn expect_after(&self, from: usize, text: &str) -> usize {
        match self.wait_for_after(from, text, Duration::from_secs(30)) {
            Some(at) => at,
            None => panic!("the terminal never showed {text:?}; it shows:\n{}", self.screen()),
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &[u8]) {
        use std::io::Write;
        self.input.write_all(keys).and_then(|()| self.input.flush()).expect("type on the terminal");
    }

    /// Waits for the command to exit; its exit code and the whole screen.
    pub fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().expect("wait for the command");
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        (status.code(), self.screen())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // A test that failed midway leaves no process behind.
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_of_waited_for_children_is_counted() {
        let before = children_cpu();
        let status = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .status()
            .expect("run sh");
        assert!(status.success());
        assert!(children_cpu() > before, "a child's busy loop shows in getrusage");
        // This process's own time, without and with its reaped children.
        let pid = std::process::id();
        assert!(process_cpu(pid, true) >= process_cpu(pid, false));
    }
}

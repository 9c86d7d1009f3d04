//! Running helper programs (`golangci-lint`, `go doc`, `rustup doc`,
//! `ctx7`, `skills-mgr`): the one place the daemon spawns a process.
//!
//! A helper never inherits the daemon's environment nor receives the
//! caller's whole one: its environment is cleared and rebuilt from the
//! invocation's [`Environment`] through an allow-list (PATH, HOME, user,
//! locale, temporary folder, XDG folders, and the variables of the
//! helper's language toolchain), and a variable that names a credential
//! (`OPENAI_*` keys, `CODEX_*`, `*_TOKEN`, `*_KEY`, `*_SECRET`) is never
//! passed even when a list would allow it. Go helpers run with the
//! toolchain pinned: no toolchain download, no module download, no
//! `go.mod` rewrite. Every run has a timeout, cancellation that kills the
//! helper's whole process group, and stdout and stderr read to their end
//! but kept only up to a cap, with a flag saying what was cut. No helper
//! gets a shell except the user's own post-inspection hooks (`sh -c`,
//! configured in `~/.git-agent/settings.json`); a run gets stdin only
//! when its caller gives bytes for it, and a run with a pipe grace stops
//! waiting for its pipes that long after the program exits, so a
//! background descendant holding them cannot block the caller.

use git_agent_shared::Environment;
use git_agent_shared::environment::vars;
use git_agent_shared::secret::is_credential_name;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// Variables every helper receives when the caller has them.
const BASE_NAMES: &[&str] = &[vars::PATH, vars::HOME, vars::USER, vars::LOGNAME, vars::LANG, vars::TZ, vars::TMPDIR];
/// Variable families every helper receives: XDG base folders and locales.
const BASE_PREFIXES: &[&str] = &["XDG_", "LC_"];
/// The Go toolchain's folders and target, taken from the caller.
const GO_NAMES: &[&str] =
    &[vars::GOPATH, vars::GOROOT, vars::GOCACHE, vars::GOMODCACHE, vars::GOOS, vars::GOARCH, vars::CGO_ENABLED];
/// Set for every Go helper whatever the caller has: the local toolchain
/// only, no network, no change to `go.mod`/`go.sum`, and no `go env -w`
/// file that could undo any of it.
pub const GO_PINNED: &[(&str, &str)] =
    &[(vars::GOENV, "off"), (vars::GOFLAGS, "-mod=readonly"), (vars::GOTOOLCHAIN, "local"), (vars::GOPROXY, "off")];
/// The Rust toolchain's folders and selection, taken from the caller.
const RUST_NAMES: &[&str] = &[vars::CARGO_HOME, vars::RUSTUP_HOME, vars::RUSTUP_TOOLCHAIN];

/// The language toolchain a helper belongs to, which decides the
/// variables it receives beyond the base set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolchain {
    /// No toolchain (`ctx7`, `skills-mgr`).
    None,
    /// `go`, `golangci-lint`: the Go variables, pinned as [`GO_PINNED`].
    Go,
    /// `rustup`, `cargo clippy`: the Rust variables.
    Rust,
}

impl Toolchain {
    fn names(self) -> &'static [&'static str] {
        match self {
            Self::None => &[],
            Self::Go => GO_NAMES,
            Self::Rust => RUST_NAMES,
        }
    }

    fn pinned(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Go => GO_PINNED,
            Self::None | Self::Rust => &[],
        }
    }
}

/// The environment a helper of `toolchain` gets from the invocation's
/// `env`: the allowed variables the caller set, minus anything named like
/// a credential, plus the toolchain's pinned values.
pub fn child_environment(env: &Environment, toolchain: Toolchain) -> Vec<(String, String)> {
    let allowed = |name: &str| {
        (BASE_NAMES.contains(&name)
            || toolchain.names().contains(&name)
            || BASE_PREFIXES.iter().any(|prefix| name.starts_with(prefix)))
            && !is_credential_name(name)
            && !toolchain.pinned().iter().any(|(pinned, _)| *pinned == name)
    };
    let mut out: Vec<(String, String)> = env
        .vars()
        .iter()
        .filter(|(name, _)| allowed(name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    out.extend(toolchain.pinned().iter().map(|(name, value)| (name.to_string(), value.to_string())));
    out
}

/// Finds `name` on the invocation's PATH.
pub fn find_executable(env: &Environment, name: &str) -> Option<PathBuf> {
    git_agent_shared::executable::find_on_path(env.get(vars::PATH), name)
}

/// A model- or user-supplied operand that must reach a helper as a plain
/// argument is shaped wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperandError {
    #[error("{what} is empty")]
    Empty { what: &'static str },
    #[error("{what} {value:?} starts with '-' and would be read as an option")]
    LeadingDash { what: &'static str, value: String },
    #[error("{what} contains a NUL byte")]
    Nul { what: &'static str },
    #[error("{what} {value:?} contains a control character")]
    Control { what: &'static str, value: String },
    #[error("{what} is longer than {max} bytes")]
    TooLong { what: &'static str, max: usize },
}

/// Checks that `value` can only be read as an operand by a helper: not
/// empty, at most `max` bytes, no leading `-`, no NUL and no other
/// control character. Callers still pass `--` before operands where the
/// helper understands it.
pub fn check_operand(what: &'static str, value: &str, max: usize) -> Result<(), OperandError> {
    if value.is_empty() {
        return Err(OperandError::Empty { what });
    }
    if value.len() > max {
        return Err(OperandError::TooLong { what, max });
    }
    if value.contains('\0') {
        return Err(OperandError::Nul { what });
    }
    if value.chars().any(char::is_control) {
        return Err(OperandError::Control { what, value: value.escape_debug().to_string() });
    }
    if value.starts_with('-') {
        return Err(OperandError::LeadingDash { what, value: value.to_string() });
    }
    Ok(())
}

/// Why a helper run did not complete. A helper that ran and exited with
/// any status is not an error here; its caller judges the status.
#[derive(Debug, thiserror::Error)]
pub enum SubprocessError {
    #[error("cannot start {program}: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{program} timed out after {} s", timeout.as_secs())]
    TimedOut { program: String, timeout: Duration },
    #[error("{program} was cancelled")]
    Cancelled { program: String },
    #[error("waiting for {program} failed: {source}")]
    Wait { program: String, source: std::io::Error },
}

/// What a finished helper printed, each stream kept up to the cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Whether either stream was longer than the cap.
    pub truncated: bool,
    /// The program exited but a descendant still held its pipes when the
    /// pipe grace ran out; they were closed.
    pub pipes_held_open: bool,
}

impl Output {
    /// Stdout as trimmed text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_string()
    }

    /// Stderr as trimmed text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_string()
    }
}

/// One helper run being set up: program, arguments, folder, the
/// invocation's environment filtered for its toolchain, limits.
#[derive(Debug)]
pub struct Helper {
    program: PathBuf,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(String, OsString)>,
    timeout: Duration,
    output_limit: usize,
    capture: bool,
    keep_stdout: bool,
    stdin: Option<Vec<u8>>,
    pipe_grace: Option<Duration>,
    stderr_observer: Option<StreamObserver>,
}

/// Hears each piece of a stream as it is read, while the helper runs (a
/// helper's progress, such as `git push --progress` on stderr).
#[derive(Clone)]
pub struct StreamObserver(pub std::sync::Arc<StreamFn>);

/// What a [`StreamObserver`] calls with each piece read.
pub type StreamFn = dyn Fn(&[u8]) + Send + Sync;

impl std::fmt::Debug for StreamObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamObserver")
    }
}

impl Helper {
    /// A run of `program` with `env` filtered for `toolchain`, a 60 s
    /// timeout and 64 KiB kept of each stream until told otherwise.
    pub fn new(program: &Path, env: &Environment, toolchain: Toolchain) -> Self {
        Self {
            program: program.to_path_buf(),
            args: Vec::new(),
            cwd: None,
            env: child_environment(env, toolchain).into_iter().map(|(name, value)| (name, value.into())).collect(),
            timeout: Duration::from_secs(60),
            output_limit: 64 * 1024,
            capture: true,
            keep_stdout: true,
            stdin: None,
            pipe_grace: None,
            stderr_observer: None,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args(mut self, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Self {
        self.args.extend(args.into_iter().map(|arg| arg.as_ref().to_os_string()));
        self
    }

    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    /// Sets one variable the daemon chooses (a private cache folder),
    /// replacing the caller's value if any.
    pub fn env(mut self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.env.retain(|(existing, _)| existing != name);
        self.env.push((name.to_string(), value.as_ref().to_os_string()));
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes;
        self
    }

    /// Discards stdout and stderr (for a helper that writes its result to
    /// a file).
    pub fn discard_output(mut self) -> Self {
        self.capture = false;
        self
    }

    /// Discards stdout only (a hook's stdout is not read).
    pub fn discard_stdout(mut self) -> Self {
        self.keep_stdout = false;
        self
    }

    /// Writes `bytes` to the helper's stdin, then closes it.
    pub fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// Stops waiting for stdin, stdout and stderr `grace` after the
    /// program exits: a background descendant that inherited them cannot
    /// hold the run open (the output then says `pipes_held_open`).
    pub fn pipe_grace(mut self, grace: Duration) -> Self {
        self.pipe_grace = Some(grace);
        self
    }

    /// Hands every piece of stderr to `observer` as it arrives; stderr is
    /// still captured as usual.
    pub fn observe_stderr(mut self, observer: StreamObserver) -> Self {
        self.stderr_observer = Some(observer);
        self
    }

    fn name(&self) -> String {
        self.program.file_name().unwrap_or(self.program.as_os_str()).to_string_lossy().into_owned()
    }

    /// Runs the helper to its end, its timeout, or `cancel`, whichever
    /// comes first; the latter two kill its process group.
    pub async fn run(self, cancel: &CancellationToken) -> Result<Output, SubprocessError> {
        let program = self.name();
        let pipe = |keep: bool| if keep { Stdio::piped() } else { Stdio::null() };
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdin(pipe(self.stdin.is_some()))
            .stdout(pipe(self.capture && self.keep_stdout))
            .stderr(pipe(self.capture))
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        let mut child =
            command.spawn().map_err(|source| SubprocessError::Spawn { program: program.clone(), source })?;
        let group = child.id();
        let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (limit, grace, input) = (self.output_limit, self.pipe_grace, self.stdin);
        let observer = self.stderr_observer;
        let work = async move {
            let mut out = Captured::default();
            let mut err = Captured::default();
            let mut held_open = false;
            let status = {
                let feed = async move {
                    if let (Some(mut pipe), Some(bytes)) = (stdin, input) {
                        // A program that does not read its stdin closes it
                        // by exiting: the broken pipe is not an error.
                        let _ = tokio::io::AsyncWriteExt::write_all(&mut pipe, &bytes).await;
                    }
                };
                let pipes = async {
                    tokio::join!(feed, out.read(stdout, limit), err.read_observed(stderr, limit, observer.as_ref()))
                };
                tokio::pin!(pipes);
                let wait = child.wait();
                tokio::pin!(wait);
                let mut pipes_done = false;
                let status = loop {
                    tokio::select! {
                        status = &mut wait => break status,
                        _ = &mut pipes, if !pipes_done => pipes_done = true,
                    }
                };
                if !pipes_done {
                    match grace {
                        Some(grace) => held_open = tokio::time::timeout(grace, &mut pipes).await.is_err(),
                        None => drop(pipes.await),
                    }
                }
                status
            };
            (out, err, status, held_open)
        };
        let outcome = tokio::select! {
            () = cancel.cancelled() => Err(SubprocessError::Cancelled { program: program.clone() }),
            result = tokio::time::timeout(self.timeout, work) => {
                result.map_err(|_| SubprocessError::TimedOut { program: program.clone(), timeout: self.timeout })
            }
        };
        let (stdout, stderr, status, pipes_held_open) = match outcome {
            Ok(done) => done,
            Err(error) => {
                kill_group(group);
                return Err(error);
            }
        };
        let status = status.map_err(|source| SubprocessError::Wait { program, source })?;
        Ok(Output {
            status,
            truncated: stdout.truncated || stderr.truncated,
            stdout: stdout.kept,
            stderr: stderr.kept,
            pipes_held_open,
        })
    }
}

/// What was read from one pipe so far: kept even when reading stops
/// early (the pipe grace ran out).
#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    truncated: bool,
}

impl Captured {
    async fn read(&mut self, pipe: Option<impl AsyncRead + Unpin>, limit: usize) {
        self.read_observed(pipe, limit, None).await;
    }

    async fn read_observed(
        &mut self,
        pipe: Option<impl AsyncRead + Unpin>,
        limit: usize,
        observer: Option<&StreamObserver>,
    ) {
        let Some(mut pipe) = pipe else { return };
        let mut buffer = [0u8; 8192];
        while let Ok(read) = pipe.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            if let Some(observer) = observer {
                (observer.0)(&buffer[..read]);
            }
            let room = limit.saturating_sub(self.kept.len());
            self.truncated |= read > room;
            self.kept.extend_from_slice(&buffer[..read.min(room)]);
        }
    }
}

/// Kills the process group a helper leads, so its own children (`go
/// list` under `golangci-lint`) stop with it.
fn kill_group(group: Option<u32>) {
    if let Some(pid) = group.and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// Reads `pipe` to its end, keeping at most `limit` bytes; the flag says
/// whether more came. Reading on past the cap keeps the writer from
/// blocking on a full pipe.
pub async fn read_bounded(pipe: Option<impl AsyncRead + Unpin>, limit: usize) -> (Vec<u8>, bool) {
    let mut captured = Captured::default();
    captured.read(pipe, limit).await;
    (captured.kept, captured.truncated)
}

/// Recording helpers and a credential-laden caller environment, for the
/// tests of every module that runs helpers (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use git_agent_shared::Environment;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    /// A fake helper named `name` in `dir/bin` that writes its environment
    /// to `dir/<name>.env` and its arguments, one a line, to
    /// `dir/<name>.argv`, then prints `stdout`. Returns the `bin` folder.
    pub fn recording_helper(dir: &Path, name: &str, stdout: &str) -> PathBuf {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let script = bin.join(name);
        let record = dir.join(name);
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n/usr/bin/env > '{record}.env'\nprintf '%s\\n' \"$@\" > '{record}.argv'\nprintf '%s' '{stdout}'\n",
                record = record.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    /// The variables a recording helper saw.
    pub fn recorded_env(dir: &Path, name: &str) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(dir.join(format!("{name}.env"))).unwrap();
        text.lines().filter_map(|line| line.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The arguments a recording helper got, or `None` when it never ran.
    pub fn recorded_argv(dir: &Path, name: &str) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(dir.join(format!("{name}.argv"))).ok()?;
        Some(text.lines().map(str::to_string).collect())
    }

    /// A caller environment full of credentials next to ordinary
    /// variables, with `bin` first on PATH.
    pub fn caller_env(bin: &Path) -> Environment {
        let pairs = [
            ("PATH", format!("{}:/usr/bin:/bin", bin.display())),
            ("HOME", "/home/caller".into()),
            ("LANG", "C.UTF-8".into()),
            ("LC_ALL", "C.UTF-8".into()),
            ("XDG_CACHE_HOME", "/home/caller/.cache".into()),
            ("TMPDIR", "/tmp".into()),
            ("GOPATH", "/home/caller/go".into()),
            ("GOMODCACHE", "/home/caller/go/pkg/mod".into()),
            ("GOFLAGS", "-mod=mod".into()),
            ("GOPROXY", "https://proxy.golang.org".into()),
            ("GOTOOLCHAIN", "auto".into()),
            ("RUSTUP_HOME", "/home/caller/.rustup".into()),
            ("OPENAI_API_KEY", "sk-caller-secret-1".into()),
            ("OPENAI_BASE_URL", "https://api.test/v1".into()),
            ("OPENAI_EMBEDDING_API_KEY", "embed-secret-2".into()),
            ("CODEX_HOME", "/home/caller/.codex".into()),
            ("CONTEXT7_API_KEY", "ctx7-secret-3".into()),
            ("GIT_ASKPASS", "/usr/bin/askpass".into()),
            ("XDG_ACCESS_TOKEN", "xdg-secret-4".into()),
            ("SSH_AUTH_SOCK", "/tmp/agent.sock".into()),
        ];
        Environment::new(pairs.into_iter().map(|(name, value)| (name.to_string(), value)).collect())
    }

    /// Asserts that no credential and no variable outside the allow-list
    /// reached a helper.
    pub fn assert_no_credentials(seen: &[(String, String)]) {
        for (name, value) in seen {
            assert!(!name.starts_with("OPENAI_") && !name.starts_with("CODEX_"), "{name} reached the helper");
            assert!(!value.contains("secret"), "{name}={value} reached the helper");
            assert!(!matches!(name.as_str(), "GIT_ASKPASS" | "SSH_AUTH_SOCK" | "CONTEXT7_API_KEY"), "{name}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn value<'a>(seen: &'a [(String, String)], name: &str) -> Option<&'a str> {
        seen.iter().find(|(seen, _)| seen == name).map(|(_, value)| value.as_str())
    }

    #[tokio::test]
    async fn a_go_helper_sees_the_allow_list_and_the_pinned_toolchain_only() {
        let dir = tempfile::tempdir().unwrap();
        let bin = recording_helper(dir.path(), "go", "done");
        let env = caller_env(&bin);
        let program = find_executable(&env, "go").unwrap();
        let output = Helper::new(&program, &env, Toolchain::Go)
            .args(["doc", "--", "net/http"])
            .run(&CancellationToken::new())
            .await
            .unwrap();
        assert!(output.status.success());
        assert_eq!(output.stdout_text(), "done");
        let seen = recorded_env(dir.path(), "go");
        assert_no_credentials(&seen);
        for (name, want) in [
            ("GOTOOLCHAIN", "local"),
            ("GOFLAGS", "-mod=readonly"),
            ("GOPROXY", "off"),
            ("GOENV", "off"),
            ("GOPATH", "/home/caller/go"),
            ("GOMODCACHE", "/home/caller/go/pkg/mod"),
            ("HOME", "/home/caller"),
            ("LC_ALL", "C.UTF-8"),
            ("XDG_CACHE_HOME", "/home/caller/.cache"),
        ] {
            assert_eq!(value(&seen, name), Some(want), "{name}");
        }
        assert_eq!(value(&seen, "RUSTUP_HOME"), None, "a Go helper gets no Rust variables");
        assert_eq!(recorded_argv(dir.path(), "go").unwrap(), ["doc", "--", "net/http"]);
    }

    #[tokio::test]
    async fn a_plain_helper_gets_no_toolchain_variables() {
        let dir = tempfile::tempdir().unwrap();
        let bin = recording_helper(dir.path(), "ctx7", "{}");
        let env = caller_env(&bin);
        let program = find_executable(&env, "ctx7").unwrap();
        Helper::new(&program, &env, Toolchain::None).arg("library").run(&CancellationToken::new()).await.unwrap();
        let seen = recorded_env(dir.path(), "ctx7");
        assert_no_credentials(&seen);
        let names: Vec<&str> = seen.iter().map(|(name, _)| name.as_str()).collect();
        for name in names {
            assert!(
                ["PATH", "HOME", "LANG", "LC_ALL", "XDG_CACHE_HOME", "TMPDIR", "PWD", "SHLVL", "_"].contains(&name),
                "{name} reached a plain helper"
            );
        }
    }

    #[test]
    fn credential_names_are_dropped_even_from_allowed_families() {
        let env = caller_env(Path::new("/bin"));
        let child = child_environment(&env, Toolchain::Rust);
        assert!(child.iter().any(|(name, value)| name == "RUSTUP_HOME" && value == "/home/caller/.rustup"));
        assert!(!child.iter().any(|(name, _)| name == "XDG_ACCESS_TOKEN"));
        assert!(!child.iter().any(|(name, _)| name.starts_with("GO")));
    }

    #[tokio::test]
    async fn output_is_capped_and_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("loud");
        std::fs::write(&script, "#!/bin/sh\nhead -c 300000 /dev/zero\nprintf err >&2\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = caller_env(dir.path());
        let output = Helper::new(&script, &env, Toolchain::None)
            .output_limit(1000)
            .run(&CancellationToken::new())
            .await
            .unwrap();
        assert_eq!((output.stdout.len(), output.truncated), (1000, true));
        assert_eq!(output.stderr_text(), "err");
    }

    #[tokio::test]
    async fn timeout_and_cancellation_stop_the_helper() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("slow");
        // The helper's child keeps the pipes open: only killing the group
        // ends the run.
        std::fs::write(&script, "#!/bin/sh\nsleep 30 &\nwait\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = caller_env(dir.path());
        let started = std::time::Instant::now();
        let error = Helper::new(&script, &env, Toolchain::None)
            .timeout(Duration::from_millis(100))
            .run(&CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(error, SubprocessError::TimedOut { .. }), "{error}");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let error = Helper::new(&script, &env, Toolchain::None).run(&cancel).await.unwrap_err();
        assert!(matches!(error, SubprocessError::Cancelled { .. }), "{error}");
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn operands_that_could_be_options_are_refused() {
        assert!(check_operand("locator", "go/references/style.md", 100).is_ok());
        assert!(matches!(check_operand("locator", "-x", 100), Err(OperandError::LeadingDash { .. })));
        assert!(matches!(check_operand("locator", "--help", 100), Err(OperandError::LeadingDash { .. })));
        assert!(matches!(check_operand("locator", "a\0b", 100), Err(OperandError::Nul { .. })));
        assert!(matches!(check_operand("locator", "a\nb", 100), Err(OperandError::Control { .. })));
        assert!(matches!(check_operand("locator", "a\x1b[2J", 100), Err(OperandError::Control { .. })));
        assert!(matches!(check_operand("locator", "", 100), Err(OperandError::Empty { .. })));
        assert!(matches!(check_operand("locator", "abc", 2), Err(OperandError::TooLong { .. })));
    }
}

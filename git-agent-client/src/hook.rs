//! `git-agent hook install | uninstall | status`, and `hook run`, what the
//! installed `prepare-commit-msg` hook executes.
//!
//! The hook lives in the folder `git rev-parse --git-path hooks` names, so
//! `core.hooksPath` and linked worktrees (the common folder's hooks) are
//! honoured. A marker line says the hook is ours: install refuses to
//! replace another program's hook without `--force`, uninstall removes
//! only ours. The hook is written atomically (temporary file, fsync, mode
//! 0755, rename).
//!
//! `hook run` fills the message only when git has none: no source (not
//! `-m`/`-F`, a template, a merge, a squash or a reused commit), no
//! message text in the file, and no rebase, cherry-pick, revert or merge
//! under way. It never stops a commit: whatever goes wrong (no key, no
//! daemon, a provider error, the time limit) leaves the file as git wrote
//! it, says why in one line on stderr, and exits 0. It needs no terminal.

use crate::daemon::{self, Reply};
use git_agent_shared::cli::Command;
use gitagent_proto::v1 as pb;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The hook git runs.
const HOOK_NAME: &str = "prepare-commit-msg";
/// The line that marks a hook as git-agent's.
const MARKER: &str = "# git-agent prepare-commit-msg hook";
/// The git configuration key of the hook's time limit (a duration such as
/// `30s` or `1m`), and its default.
pub const TIMEOUT_KEY: &str = "git-agent.hookTimeout";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The line git puts above the diff of `git commit -v`; nothing below it
/// is part of the message.
const SCISSORS: &str = "------------------------ >8 ------------------------";
/// What in a Git folder says a rebase, cherry-pick, revert or merge is
/// under way.
const SEQUENCE_STATE: &[&str] = &["rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD", "MERGE_HEAD"];

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("cannot run git in {}: {source}", cwd.display())]
    Git { cwd: PathBuf, source: std::io::Error },
    #[error("{} is not in a Git repository{}", cwd.display(), detail(.stderr))]
    NotARepository { cwd: PathBuf, stderr: String },
    #[error(
        "{} was not written by git-agent, so it is left as it is\nhint: `git-agent hook install --force` replaces it; move it elsewhere first to keep it",
        path.display()
    )]
    Foreign { path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot remove {}: {source}", path.display())]
    Remove { path: PathBuf, source: std::io::Error },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
}

fn detail(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() { String::new() } else { format!(": {stderr}") }
}

/// What holds the hook's place in the hooks folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Installed {
    Ours,
    Foreign,
    Absent,
}

/// `hook install [--force]`.
pub fn install(cwd: &Path, force: bool) -> Result<String, HookError> {
    let path = hook_path(cwd)?;
    let state = installed(&path)?;
    if state == Installed::Foreign && !force {
        return Err(HookError::Foreign { path });
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("git-agent"));
    write_executable(&path, &script(&exe))?;
    let verb = if state == Installed::Absent { "installed" } else { "replaced" };
    Ok(format!("{verb} {}\n", path.display()))
}

/// `hook uninstall`.
pub fn uninstall(cwd: &Path) -> Result<String, HookError> {
    let path = hook_path(cwd)?;
    match installed(&path)? {
        Installed::Foreign => Err(HookError::Foreign { path }),
        Installed::Absent => Ok(format!("absent {}\n", path.display())),
        Installed::Ours => {
            std::fs::remove_file(&path).map_err(|source| HookError::Remove { path: path.clone(), source })?;
            Ok(format!("removed {}\n", path.display()))
        }
    }
}

/// `hook status`: `installed`, `foreign` or `absent`, and the hook's path.
pub fn status(cwd: &Path) -> Result<String, HookError> {
    let path = hook_path(cwd)?;
    let word = match installed(&path)? {
        Installed::Ours => "installed",
        Installed::Foreign => "foreign",
        Installed::Absent => "absent",
    };
    Ok(format!("{word} {}\n", path.display()))
}

/// The hook's path: `prepare-commit-msg` in the folder git runs hooks from.
fn hook_path(cwd: &Path) -> Result<PathBuf, HookError> {
    let paths = git_paths(cwd, &["hooks"])?;
    Ok(paths.into_iter().next().unwrap_or_else(|| cwd.join(".git/hooks")).join(HOOK_NAME))
}

/// `git rev-parse --git-path <name>` for each name, absolute.
fn git_paths(cwd: &Path, names: &[&str]) -> Result<Vec<PathBuf>, HookError> {
    let mut command = std::process::Command::new("git");
    command.current_dir(cwd).arg("rev-parse");
    for name in names {
        command.args(["--git-path", name]);
    }
    let output =
        command.stdin(Stdio::null()).output().map_err(|source| HookError::Git { cwd: cwd.to_path_buf(), source })?;
    if !output.status.success() {
        return Err(HookError::NotARepository {
            cwd: cwd.to_path_buf(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output
        .stdout
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| cwd.join(OsStr::from_bytes(line)))
        .collect())
}

fn installed(path: &Path) -> Result<Installed, HookError> {
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Installed::Absent),
        Err(source) => Err(HookError::Read { path: path.to_path_buf(), source }),
        Ok(meta) if !meta.is_file() => Ok(Installed::Foreign),
        Ok(_) => {
            let text = std::fs::read(path).map_err(|source| HookError::Read { path: path.to_path_buf(), source })?;
            let ours = text.split(|byte| *byte == b'\n').any(|line| line == MARKER.as_bytes());
            Ok(if ours { Installed::Ours } else { Installed::Foreign })
        }
    }
}

/// The hook's text. It calls the `git-agent` that installed it (by
/// absolute path), else the one on PATH; a message source given by git
/// ends it before anything runs, and nothing it does fails the commit.
fn script(exe: &Path) -> Vec<u8> {
    let mut quoted = b"'".to_vec();
    for &byte in exe.as_os_str().as_bytes() {
        if byte == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(byte);
        }
    }
    quoted.push(b'\'');
    let mut text = format!(
        "#!/bin/sh\n{MARKER}\n\
         # Written by `git-agent hook install`; `git-agent hook uninstall` removes it.\n\
         # It writes the commit message when git has none, and never stops a commit.\n\
         case \"$2\" in ?*) exit 0 ;; esac\n\
         agent="
    )
    .into_bytes();
    text.extend_from_slice(&quoted);
    text.extend_from_slice(
        b"\n[ -x \"$agent\" ] || agent=$(command -v git-agent) || {\n\
          \techo \"git-agent: not found, so the commit message is left empty\" >&2\n\
          \texit 0\n\
          }\n\
          \"$agent\" hook run \"$@\" || :\n\
          exit 0\n",
    );
    text
}

/// Replaces `path` with `bytes`, mode 0755: a temporary file beside it,
/// synced, then renamed over it, and the folder synced. The file is closed
/// before the rename, so no descriptor open for writing outlives this
/// call (git would fail to run it: ETXTBSY).
fn write_executable(path: &Path, bytes: &[u8]) -> Result<(), HookError> {
    let error = |source| HookError::Write { path: path.to_path_buf(), source };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(error)?;
    let mut temporary = tempfile::Builder::new()
        .prefix(".prepare-commit-msg-")
        .permissions(std::fs::Permissions::from_mode(0o755))
        .tempfile_in(dir)
        .map_err(error)?;
    temporary.write_all(bytes).map_err(error)?;
    temporary.as_file().sync_all().map_err(error)?;
    // The mode asked for at creation passes through the umask.
    temporary.as_file().set_permissions(std::fs::Permissions::from_mode(0o755)).map_err(error)?;
    let file = temporary.persist(path).map_err(|persist| error(persist.error))?;
    drop(file);
    std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(error)
}

/// `hook run <file> [<source> [<commit>]]`; always exits 0.
pub async fn run(invocation: pb::Invocation, file: &Path, source: Option<&str>) -> i32 {
    if source.is_some_and(|source| !source.is_empty()) {
        return 0;
    }
    if let Err(reason) = fill(invocation, file).await {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "git-agent: {reason}; the commit message is left for you to write");
    }
    0
}

/// Why the hook wrote no message (one line), or `Ok` when it wrote one or
/// had nothing to do.
async fn fill(invocation: pb::Invocation, file: &Path) -> Result<(), String> {
    let written = std::fs::read(file).map_err(|error| format!("cannot read {}: {error}", file.display()))?;
    let cwd = PathBuf::from(OsStr::from_bytes(&invocation.cwd));
    if has_message(&String::from_utf8_lossy(&written), &comment_prefix(&cwd)?) {
        return Ok(());
    }
    let state = git_paths(&cwd, SEQUENCE_STATE).map_err(|error| first_line(&error.to_string()))?;
    if state.iter().any(|path| path.exists()) {
        return Ok(());
    }
    let timeout = timeout(&cwd)?;
    let message = tokio::time::timeout(timeout, generate(invocation)).await.map_err(|_| {
        format!("no message within {} ({TIMEOUT_KEY})", git_agent_shared::cli::format_duration(timeout))
    })??;
    let mut text = message.trim_end().as_bytes().to_vec();
    text.push(b'\n');
    text.extend_from_slice(&written);
    std::fs::write(file, text).map_err(|error| format!("cannot write {}: {error}", file.display()))
}

/// Whether git's message file already has text other than lines starting
/// with `comment` (above the scissors line of `commit -v`).
fn has_message(text: &str, comment: &str) -> bool {
    text.lines()
        .take_while(|line| !line.ends_with(SCISSORS))
        .any(|line| !line.trim().is_empty() && !line.starts_with(comment))
}

/// What starts git's comment lines in the message file:
/// `core.commentString`, else `core.commentChar`, else `#` (also for
/// `auto`, which picks `#` for a file that holds only git's comments).
fn comment_prefix(cwd: &Path) -> Result<String, String> {
    for key in ["core.commentString", "core.commentChar"] {
        match git_config(cwd, key)? {
            Some(value) if value != "auto" => return Ok(value),
            _ => {}
        }
    }
    Ok("#".to_string())
}

/// The value of `key` in the repository's git configuration, if set.
fn git_config(cwd: &Path, key: &str) -> Result<Option<String>, String> {
    let output = std::process::Command::new("git")
        .current_dir(cwd)
        .args(["config", "--get", key])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run git config: {error}"))?;
    let value = String::from_utf8_lossy(&output.stdout).trim_end_matches('\n').to_string();
    Ok((output.status.success() && !value.is_empty()).then_some(value))
}

/// The time limit: `git-agent.hookTimeout` when set (and valid), else 30 s.
fn timeout(cwd: &Path) -> Result<Duration, String> {
    let Some(value) = git_config(cwd, TIMEOUT_KEY)? else { return Ok(DEFAULT_TIMEOUT) };
    let value = value.trim();
    git_agent_shared::cli::parse_duration(value)
        .map_err(|error| format!("{TIMEOUT_KEY} is {value:?}, not a duration such as 30s or 2m: {error}"))
}

/// `git-agent commit-msg` through the daemon: its message, or the first
/// line of its error.
async fn generate(mut invocation: pb::Invocation) -> Result<String, String> {
    invocation.args = vec!["commit-msg".to_string()];
    invocation.stdout_is_terminal = false;
    invocation.stderr_is_terminal = false;
    let command = git_agent_shared::cli::parse_command(&invocation.args).map_err(|error| error.to_string())?;
    let mut kept = Kept::default();
    let code = daemon::run_with(invocation, &command, &mut kept)
        .await
        .map_err(|error| first_line(&git_agent_shared::error_chain::render(&error)))?;
    let stdout = String::from_utf8_lossy(&kept.stdout).into_owned();
    if code == 0 && !stdout.trim().is_empty() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&kept.stderr).into_owned();
    let reason = stderr.lines().find_map(|line| line.strip_prefix("error: ")).unwrap_or("no message was generated");
    Err(reason.to_string())
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string()
}

/// The reply of the hook's `commit-msg`, kept rather than shown.
#[derive(Default)]
struct Kept {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Reply for Kept {
    fn event(&mut self, event: pb::RunEvent) -> Option<i32> {
        use pb::run_event::Event;
        match event.event? {
            Event::Stdout(bytes) => self.stdout.extend_from_slice(&bytes),
            Event::Stderr(bytes) => self.stderr.extend_from_slice(&bytes),
            Event::Exit(exit) => return Some(exit.code),
            Event::Progress(_) | Event::Trace(_) | Event::TextDelta(_) | Event::Action(_) => {}
        }
        None
    }

    fn finish(&mut self) {}

    fn committed(&self) -> Option<bool> {
        None
    }
}

/// Runs a hook command in the client; returns its exit code.
pub async fn command(invocation: pb::Invocation, command: &Command) -> i32 {
    let Command::Hook(args) = command else { return 2 };
    let cwd = PathBuf::from(OsStr::from_bytes(&invocation.cwd));
    let result = match &args.command {
        git_agent_shared::cli::HookCommand::Install { force } => install(&cwd, *force),
        git_agent_shared::cli::HookCommand::Uninstall => uninstall(&cwd),
        git_agent_shared::cli::HookCommand::Status => status(&cwd),
        git_agent_shared::cli::HookCommand::Run { file, source, .. } => {
            return run(invocation, &cwd.join(file), source.as_deref()).await;
        }
    };
    match result {
        Ok(line) => {
            let mut stdout = std::io::stdout().lock();
            i32::from(stdout.write_all(line.as_bytes()).and_then(|()| stdout.flush()).is_err())
        }
        Err(error) => {
            eprintln!("error: {}", git_agent_shared::error_chain::Chain(&error));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_comment_lines_are_no_message() {
        assert!(!has_message("\n# Please enter the commit message\n#\n", "#"));
        assert!(!has_message(&format!("\n# comment\n# {SCISSORS}\ndiff --git a/x b/x\n+added\n"), "#"));
        assert!(has_message("fix: typo\n\n# Please enter the commit message\n", "#"));
        assert!(!has_message("", "#"));
        // core.commentChar=';': git's comments start with it, and '#' is text.
        assert!(!has_message("\n; Please enter the commit message\n;\n", ";"));
        assert!(has_message("#42 fix\n; Please enter the commit message\n", ";"));
    }

    #[test]
    fn the_script_quotes_the_executable_and_carries_the_marker() {
        let text = String::from_utf8(script(Path::new("/opt/it's/git-agent"))).unwrap();
        assert!(text.lines().any(|line| line == MARKER), "{text}");
        assert!(text.contains("agent='/opt/it'\\''s/git-agent'\n"), "{text}");
        assert!(text.starts_with("#!/bin/sh\n"));
    }
}

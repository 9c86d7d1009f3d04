//! Work the daemon hands back to the client because it must happen in the
//! caller's own context: `git commit --file -` runs here, with the user's
//! environment, terminal, hooks, `commit.gpgSign` and gpg-agent; and for
//! `commit --interactive`'s edit, `git commit -e`, so the user's own
//! editor setup (`GIT_EDITOR`, `core.editor`) opens the message.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Git stderr kept for the final error message, at most.
const STDERR_KEPT: usize = 16 * 1024;

/// How `git commit` is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitMode {
    /// `--amend`.
    pub amend: bool,
    /// `-e`: the user's editor opens the message first; git's stdin,
    /// stdout and stderr are the terminal's.
    pub edit: bool,
}

impl CommitMode {
    /// The message as it is, no editor.
    pub fn plain(amend: bool) -> Self {
        Self { amend, edit: false }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    #[error("cannot run git commit in {root}: {source}")]
    Spawn { root: String, source: std::io::Error },
    #[error("cannot write the message for the editor to a temporary file: {0}")]
    MessageFile(#[source] std::io::Error),
    #[error(
        "git commit failed ({status}){git_error}\nhint: fix the problem, then commit the generated message yourself, e.g. with `git commit --file -`:\n\n{message}"
    )]
    Failed { status: String, git_error: String, message: String },
}

/// Runs `git commit [--amend] --file -` in `root` with `message` on its
/// standard input. Git's stdout (the commit summary) goes to ours; its
/// stderr is shown as it comes and kept for the error. With
/// [`CommitMode::edit`], `git commit [--amend] -e --file <temporary>`
/// runs on our own standard streams instead, so the editor has the
/// terminal.
pub fn git_commit(root: &Path, message: &str, mode: CommitMode) -> Result<(), CommitError> {
    let mut command = Command::new("git");
    command.current_dir(root).arg("commit");
    if mode.amend {
        command.arg("--amend");
    }
    if mode.edit {
        return git_commit_edited(command, root, message);
    }
    command.args(["--file", "-"]).stdin(Stdio::piped()).stdout(Stdio::inherit()).stderr(Stdio::piped());
    let mut child =
        command.spawn().map_err(|source| CommitError::Spawn { root: root.display().to_string(), source })?;
    let stderr = child.stderr.take();
    let forward = std::thread::spawn(move || forward_stderr(stderr));
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that exits before reading its input closes the pipe; the
        // exit status below reports the failure.
        let _ = stdin.write_all(message.as_bytes());
    }
    let status = child.wait().map_err(|source| CommitError::Spawn { root: root.display().to_string(), source })?;
    let kept = forward.join().unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let kept = kept.trim();
    Err(CommitError::Failed {
        status: status.to_string(),
        git_error: if kept.is_empty() { String::new() } else { format!(":\n{kept}") },
        message: message.trim_end().to_string(),
    })
}

/// `git commit -e --file <temporary>` on this process's own streams.
fn git_commit_edited(mut command: Command, root: &Path, message: &str) -> Result<(), CommitError> {
    // Private (0600) and removed when dropped, after git has finished.
    let mut file =
        tempfile::Builder::new().prefix("git-agent-message-").tempfile().map_err(CommitError::MessageFile)?;
    file.write_all(message.as_bytes()).and_then(|()| file.flush()).map_err(CommitError::MessageFile)?;
    command.arg("-e").arg("--file").arg(file.path());
    let status = command.status().map_err(|source| CommitError::Spawn { root: root.display().to_string(), source })?;
    if status.success() {
        return Ok(());
    }
    Err(CommitError::Failed {
        status: status.to_string(),
        git_error: String::new(),
        message: message.trim_end().to_string(),
    })
}

fn forward_stderr(stderr: Option<std::process::ChildStderr>) -> String {
    let Some(mut stderr) = stderr else { return String::new() };
    let mut kept = Vec::new();
    let mut buffer = [0u8; 4096];
    let mut ours = std::io::stderr();
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let _ = ours.write_all(&buffer[..read]);
                let room = STDERR_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use git_agent_tests::git::git;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        git(dir.path(), &["config", "user.name", "A"]);
        git(dir.path(), &["config", "user.email", "a@example.test"]);
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        git(dir.path(), &["add", "a.txt"]);
        dir
    }

    #[test]
    fn commits_the_message_exactly() {
        let dir = repo();
        git_commit(dir.path(), "feat: add a\n\nBody line.\n", CommitMode::plain(false)).unwrap();
        assert_eq!(git(dir.path(), &["log", "-1", "--format=%B"]), "feat: add a\n\nBody line.\n\n");
    }

    #[test]
    fn a_failing_hook_reports_the_message_and_gits_error() {
        let dir = repo();
        let hook = dir.path().join(".git/hooks/pre-commit");
        // Written by a child process: a writable descriptor of the hook
        // in this process could be inherited by another test's fork at the
        // moment git runs the hook, which then fails with ETXTBSY.
        let source = dir.path().join("hook.sh");
        std::fs::write(&source, "#!/bin/sh\necho 'lint failed: a.txt' >&2\nexit 1\n").unwrap();
        let installed = std::process::Command::new("install").arg("-m").arg("755").arg(&source).arg(&hook).status();
        assert!(installed.is_ok_and(|status| status.success()), "install the hook");
        let error = git_commit(dir.path(), "fix: keep me", CommitMode::plain(false)).unwrap_err().to_string();
        assert!(error.contains("lint failed: a.txt"), "{error}");
        assert!(error.ends_with("fix: keep me"), "{error}");
        assert!(!dir.path().join(".git/refs/heads").read_dir().unwrap().any(|_| true), "nothing was committed");
    }
}

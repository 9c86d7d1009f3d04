//! Work the daemon hands back to the client because it must happen in the
//! caller's own context: `git commit --file -` runs here, with the user's
//! environment, terminal, hooks, `commit.gpgSign` and gpg-agent.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Git stderr kept for the final error message, at most.
const STDERR_KEPT: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    #[error("cannot run git commit in {root}: {source}")]
    Spawn { root: String, source: std::io::Error },
    #[error(
        "git commit failed ({status}){git_error}\nhint: fix the problem, then commit the generated message yourself, e.g. with `git commit --file -`:\n\n{message}"
    )]
    Failed { status: String, git_error: String, message: String },
}

/// Runs `git commit [--amend] --file -` in `root` with `message` on its
/// standard input. Git's stdout (the commit summary) goes to ours; its
/// stderr is shown as it comes and kept for the error.
pub fn git_commit(root: &Path, message: &str, amend: bool) -> Result<(), CommitError> {
    let mut command = Command::new("git");
    command.current_dir(root).arg("commit");
    if amend {
        command.arg("--amend");
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
        git_commit(dir.path(), "feat: add a\n\nBody line.\n", false).unwrap();
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
        let error = git_commit(dir.path(), "fix: keep me", false).unwrap_err().to_string();
        assert!(error.contains("lint failed: a.txt"), "{error}");
        assert!(error.ends_with("fix: keep me"), "{error}");
        assert!(!dir.path().join(".git/refs/heads").read_dir().unwrap().any(|_| true), "nothing was committed");
    }
}

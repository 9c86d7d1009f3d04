//! Delegation to the `skills-mgr` executable, found on the caller's PATH.
//! git-agent never discovers or parses skills itself: `skills-mgr list`
//! output becomes a prompt layer verbatim and `skills-mgr get` answers the
//! `skills_read` tool. The executable runs without a shell, in the
//! command's working directory, with the caller's environment, a 20 s
//! limit and bounded output; cancellation kills it.

use git_agent_shared::Environment;
use git_agent_shared::environment::vars;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

const EXECUTABLE: &str = "skills-mgr";
const TIMEOUT: Duration = Duration::from_secs(20);
const OUTPUT_LIMIT: usize = 64 * 1024;

/// A located `skills-mgr`.
#[derive(Debug, Clone)]
pub struct SkillsManager {
    path: PathBuf,
    cwd: PathBuf,
    env: Environment,
}

/// What one run printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsOutput {
    pub stdout: String,
    pub stderr: String,
    pub truncated: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SkillsError {
    #[error("skills-mgr {args} timed out after {seconds} s")]
    TimedOut { args: String, seconds: u64 },
    #[error("skills-mgr {args} failed: {message}")]
    Failed { args: String, message: String },
    #[error("skills-mgr was cancelled")]
    Cancelled,
}

impl SkillsManager {
    /// Finds `skills-mgr` on the caller's PATH; `None` when absent.
    pub fn discover(env: &Environment, cwd: &Path) -> Option<Self> {
        let search = env.get(vars::PATH)?;
        std::env::split_paths(search)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(EXECUTABLE))
            .find(|candidate| is_executable(candidate))
            .map(|path| Self { path, cwd: cwd.to_path_buf(), env: env.clone() })
    }

    /// `skills-mgr list`, trimmed.
    pub async fn list(&self, cancel: &CancellationToken) -> Result<SkillsOutput, SkillsError> {
        self.run(&["list".to_string()], cancel).await
    }

    /// `skills-mgr get <locator> [start:end]`.
    pub async fn get(
        &self,
        locator: &str,
        range: &str,
        cancel: &CancellationToken,
    ) -> Result<SkillsOutput, SkillsError> {
        let mut args = vec!["get".to_string(), locator.to_string()];
        if !range.trim().is_empty() {
            args.push(range.trim().to_string());
        }
        self.run(&args, cancel).await
    }

    async fn run(&self, args: &[String], cancel: &CancellationToken) -> Result<SkillsOutput, SkillsError> {
        let shown = args.join(" ");
        let failed = |message: String| SkillsError::Failed { args: shown.clone(), message };
        let mut child = tokio::process::Command::new(&self.path)
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(self.env.vars())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| failed(error.to_string()))?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(failed("no output pipes".into()));
        };
        let work = async {
            let (stdout, stderr, status) = tokio::join!(read_bounded(stdout), read_bounded(stderr), child.wait());
            (stdout, stderr, status)
        };
        let ((stdout, out_cut), (stderr, err_cut), status) = tokio::select! {
            () = cancel.cancelled() => return Err(SkillsError::Cancelled),
            () = tokio::time::sleep(TIMEOUT) => return Err(SkillsError::TimedOut { args: shown, seconds: TIMEOUT.as_secs() }),
            result = work => result,
        };
        let output = SkillsOutput {
            stdout: stdout.trim().to_string(),
            stderr: stderr.trim().to_string(),
            truncated: out_cut || err_cut,
        };
        match status {
            Ok(status) if status.success() => Ok(output),
            Ok(status) => Err(failed(if output.stderr.is_empty() { status.to_string() } else { output.stderr })),
            Err(error) => Err(failed(error.to_string())),
        }
    }
}

/// Reads a pipe to its end, keeping at most 64 KiB.
async fn read_bounded(mut pipe: impl tokio::io::AsyncRead + Unpin) -> (String, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buffer = [0u8; 8192];
    while let Ok(read) = pipe.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        let room = OUTPUT_LIMIT.saturating_sub(kept.len());
        truncated |= read > room;
        kept.extend_from_slice(&buffer[..read.min(room)]);
    }
    (String::from_utf8_lossy(&kept).into_owned(), truncated)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

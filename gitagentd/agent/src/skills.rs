//! Delegation to the `skills-mgr` executable, found on the caller's PATH.
//! git-agent never discovers or parses skills itself: `skills-mgr list`
//! output becomes a prompt layer verbatim and `skills-mgr get` answers the
//! `skills_read` tool. The executable runs through [`gitagent_runtime::subprocess`]:
//! no shell, in the command's working directory, with the caller's
//! allow-listed environment (no credentials), a 20 s limit and bounded
//! output; cancellation kills it. The model chooses the locator and range
//! of `get`, so both are checked to be plain operands before anything runs.

use git_agent_shared::Environment;
use gitagent_runtime::subprocess::{self, Helper, OperandError, SubprocessError, Toolchain};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const EXECUTABLE: &str = "skills-mgr";
const TIMEOUT: Duration = Duration::from_secs(20);
const OUTPUT_LIMIT: usize = 64 * 1024;
/// The longest locator or range passed to `skills-mgr get`.
const MAX_OPERAND: usize = 1024;

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
    #[error("refused to run skills-mgr get: {0}")]
    InvalidOperand(#[from] OperandError),
    #[error("refused to run skills-mgr get: range {0:?} is not start:end line numbers")]
    InvalidRange(String),
}

impl SkillsManager {
    /// Finds `skills-mgr` on the caller's PATH; `None` when absent.
    pub fn discover(env: &Environment, cwd: &Path) -> Option<Self> {
        subprocess::find_executable(env, EXECUTABLE).map(|path| Self { path, cwd: cwd.to_path_buf(), env: env.clone() })
    }

    /// `skills-mgr list`, trimmed.
    pub async fn list(&self, cancel: &CancellationToken) -> Result<SkillsOutput, SkillsError> {
        self.run(&["list".to_string()], cancel).await
    }

    /// `skills-mgr get <locator> [start:end]`. The locator and range come
    /// from the model: a locator that could be read as an option (a
    /// leading `-`), a NUL or control character, or a range that is not
    /// `start:end` is refused before anything runs.
    pub async fn get(
        &self,
        locator: &str,
        range: &str,
        cancel: &CancellationToken,
    ) -> Result<SkillsOutput, SkillsError> {
        subprocess::check_operand("skill locator", locator, MAX_OPERAND)?;
        let mut args = vec!["get".to_string(), locator.to_string()];
        let range = range.trim();
        if !range.is_empty() {
            if !range_ok(range) {
                return Err(SkillsError::InvalidRange(range.escape_debug().to_string()));
            }
            args.push(range.to_string());
        }
        self.run(&args, cancel).await
    }

    async fn run(&self, args: &[String], cancel: &CancellationToken) -> Result<SkillsOutput, SkillsError> {
        let shown = args.join(" ");
        let failed = |message: String| SkillsError::Failed { args: shown.clone(), message };
        let run = Helper::new(&self.path, &self.env, Toolchain::None)
            .args(args)
            .current_dir(&self.cwd)
            .timeout(TIMEOUT)
            .output_limit(OUTPUT_LIMIT)
            .run(cancel)
            .await;
        let output = match run {
            Ok(output) => output,
            Err(SubprocessError::Cancelled { .. }) => return Err(SkillsError::Cancelled),
            Err(SubprocessError::TimedOut { .. }) => {
                return Err(SkillsError::TimedOut { args: shown, seconds: TIMEOUT.as_secs() });
            }
            Err(error) => return Err(failed(error.to_string())),
        };
        let result =
            SkillsOutput { stdout: output.stdout_text(), stderr: output.stderr_text(), truncated: output.truncated };
        if output.status.success() {
            Ok(result)
        } else {
            Err(failed(if result.stderr.is_empty() { output.status.to_string() } else { result.stderr }))
        }
    }
}

/// `start:end` line numbers (either side may be left open).
fn range_ok(range: &str) -> bool {
    range.len() <= MAX_OPERAND
        && range.split_once(':').is_some_and(|(start, end)| {
            !(start.is_empty() && end.is_empty()) && start.bytes().chain(end.bytes()).all(|byte| byte.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gitagent_runtime::subprocess::testing::{
        assert_no_credentials, caller_env, recorded_argv, recorded_env, recording_helper,
    };

    fn manager(dir: &Path) -> SkillsManager {
        let bin = recording_helper(dir, EXECUTABLE, "skill text");
        SkillsManager::discover(&caller_env(&bin), dir).expect("skills-mgr is on PATH")
    }

    #[tokio::test]
    async fn get_passes_the_locator_and_range_without_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let manager = manager(dir.path());
        let output = manager.get("go/references/style.md", " 3:8 ", &CancellationToken::new()).await.unwrap();
        assert_eq!(output.stdout, "skill text");
        assert_eq!(recorded_argv(dir.path(), EXECUTABLE).unwrap(), ["get", "go/references/style.md", "3:8"]);
        assert_no_credentials(&recorded_env(dir.path(), EXECUTABLE));
    }

    #[tokio::test]
    async fn option_shaped_or_control_operands_never_reach_skills_mgr() {
        let dir = tempfile::tempdir().unwrap();
        let manager = manager(dir.path());
        let cancel = CancellationToken::new();
        for locator in ["-x", "--help", "go\0x", "go\nrefs", "", "a\u{7f}"] {
            let error = manager.get(locator, "", &cancel).await.unwrap_err();
            assert!(matches!(error, SkillsError::InvalidOperand(_)), "{locator:?}: {error}");
        }
        for range in ["-1:3", "1-3", "a:b", ":", "3:\n8"] {
            let error = manager.get("go", range, &cancel).await.unwrap_err();
            assert!(matches!(error, SkillsError::InvalidRange(_)), "{range:?}: {error}");
        }
        assert_eq!(recorded_argv(dir.path(), EXECUTABLE), None, "skills-mgr must not have run");
    }
}

//! The real `git` for test repositories, isolated from the machine it runs
//! on: no system or global configuration, a HOME the test chooses (none by
//! default), the pinned identity and dates every fixture shares (so commit
//! ids never change), the C locale, no signing, and the `file` transport
//! allowed (local submodules). A failing `git` panics with its stderr.
//!
//! The end-to-end tests' [`crate::GitRepo`] runs `git` in its
//! [`crate::TestEnv`] instead, the environment the binaries under test see.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The HOME of a [`Git`] made by [`Git::default`]: a folder that does not
/// exist, so no user file (`~/.config/git/ignore`, attributes) applies.
const NO_HOME: &str = "/nonexistent";

/// `git` with an isolated environment and HOME at `home`.
#[derive(Debug, Clone)]
pub struct Git {
    home: PathBuf,
}

impl Default for Git {
    fn default() -> Self {
        Self { home: PathBuf::from(NO_HOME) }
    }
}

impl Git {
    /// `git` whose HOME is `home` (for tests that write `--global`
    /// configuration, or hand the same HOME to the code under test).
    pub fn with_home(home: impl Into<PathBuf>) -> Self {
        Self { home: home.into() }
    }

    /// `git <args>` in `dir`, not yet run.
    pub fn command<I, S>(&self, dir: &Path, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new("git");
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.test")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.test")
            .env("GIT_AUTHOR_DATE", "2026-01-02T03:04:05Z")
            .env("GIT_COMMITTER_DATE", "2026-01-02T03:04:05Z")
            .env("LANG", "C")
            .current_dir(dir)
            .args(["-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false", "-c", "protocol.file.allow=always"])
            .args(args);
        command
    }

    /// Runs `git <args>` in `dir` and returns its stdout; panics with git's
    /// stderr when it fails.
    #[track_caller]
    pub fn run(&self, dir: &Path, args: &[&str]) -> String {
        let output = self.command(dir, args).output().expect("run git");
        assert!(
            output.status.success(),
            "git {args:?} in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

/// Runs `git <args>` in `dir` without a HOME and returns its stdout; panics
/// with git's stderr when it fails.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    Git::default().run(dir, args)
}

/// [`git`]'s stdout without its surrounding whitespace (one id, one count,
/// one line).
#[track_caller]
pub fn git_trimmed(dir: &Path, args: &[&str]) -> String {
    git(dir, args).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_reproducible_and_failures_name_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let repo = dir.path().join(name);
            std::fs::create_dir_all(&repo).unwrap();
            git(&repo, &["init", "-q", "-b", "main"]);
            std::fs::write(repo.join("a.txt"), "a\n").unwrap();
            git(&repo, &["add", "a.txt"]);
            git(&repo, &["commit", "-q", "-m", "one"]);
            git_trimmed(&repo, &["rev-parse", "HEAD"])
        };
        assert_eq!(make("first"), make("second"), "pinned identity and dates");
        let repo = dir.path().join("first");
        assert_eq!(
            git(&repo, &["log", "-1", "--format=%an <%ae>|%cn|%cI"]),
            "Test Author <author@example.test>|Test Committer|2026-01-02T03:04:05Z\n"
        );
        let failure = std::panic::catch_unwind(|| git(&repo, &["rev-parse", "no-such-rev"])).unwrap_err();
        let message = failure.downcast_ref::<String>().unwrap();
        assert!(message.contains("no-such-rev"), "{message}");
    }
}

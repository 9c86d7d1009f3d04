//! Test repositories built with the real `git`, reproducibly: no system or
//! user configuration, a private HOME, pinned identities and dates, so the
//! commit ids (and so the golden files) never change.

use super::History;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
}

impl Fixture {
    /// A fresh repository on branch `main`.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new().prefix("history").tempdir().expect("create a temporary folder");
        let home = dir.path().join("home");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&home).expect("create HOME");
        std::fs::create_dir_all(&root).expect("create the repository folder");
        let fixture = Self { _dir: dir, home, root };
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture
    }

    /// Another repository beside this one, such as a remote or a submodule.
    pub fn sibling(&self, name: &str) -> Self {
        let dir = tempfile::Builder::new().prefix("history").tempdir().expect("create a temporary folder");
        let home = dir.path().join("home");
        let root = self.root.parent().expect("the repository has a parent").join(name);
        std::fs::create_dir_all(&home).expect("create HOME");
        std::fs::create_dir_all(&root).expect("create the repository folder");
        let fixture = Self { _dir: dir, home, root };
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn history(&self) -> History {
        History::open(&self.root).expect("open the fixture repository")
    }

    pub fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
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

    /// Runs `git <args>` in `dir` and returns stdout; panics with git's
    /// stderr on failure.
    #[track_caller]
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let output = self.command(dir, args).output().expect("run git");
        assert!(output.status.success(), "git {args:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    #[track_caller]
    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.root, args)
    }

    /// The full id `rev` resolves to.
    #[track_caller]
    pub fn rev(&self, rev: &str) -> String {
        self.git(&["rev-parse", rev]).trim().to_string()
    }

    pub fn write(&self, relative: &str, contents: &str) {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent folders");
        }
        std::fs::write(path, contents).expect("write a file");
    }

    /// Stages everything and commits with `message`.
    #[track_caller]
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
    }

    /// Writes one file and commits it.
    #[track_caller]
    pub fn commit_file(&self, relative: &str, contents: &str, message: &str) {
        self.write(relative, contents);
        self.commit_all(message);
    }
}

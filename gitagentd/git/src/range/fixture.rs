//! Test repositories built with the real `git`, reproducibly: the tests'
//! isolated runner ([`git_agent_tests::git::Git`]: no system or user
//! configuration, pinned identities and dates) with a private HOME, so the
//! commit ids (and so the golden files) never change.

use super::History;
use git_agent_tests::git::Git;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Fixture {
    _dir: tempfile::TempDir,
    git: Git,
    root: PathBuf,
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

impl Fixture {
    /// A fresh repository on branch `main`.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new().prefix("history").tempdir().expect("create a temporary folder");
        let home = dir.path().join("home");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&home).expect("create HOME");
        std::fs::create_dir_all(&root).expect("create the repository folder");
        let fixture = Self { _dir: dir, git: Git::with_home(home), root };
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
        let fixture = Self { _dir: dir, git: Git::with_home(home), root };
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
        self.git.command(dir, args)
    }

    /// Runs `git <args>` in `dir` and returns stdout; panics with git's
    /// stderr on failure.
    #[track_caller]
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        self.git.run(dir, args)
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

/// A staged change of every kind a patch renderer must get right:
/// CRLF, missing final newlines, binary, empty, mode changes, symlinks,
/// deletions, additions and gitlink movements.
pub fn every_kind_of_change() -> Fixture {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let fixture = Fixture::new();
    let numbered: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    fixture.write("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    fixture.write("cr-only.txt", "a\nb\nc\n");
    fixture.write("no-eol-old.txt", "x\ny");
    fixture.write("no-eol-new.txt", "x\ny\n");
    fixture.write("no-eol-both.txt", "p\nq");
    fixture.write("numbered.txt", &numbered);
    fixture.write("code.c", "int a(void)\n{\n\treturn 1;\n}\n\nint c(void)\n{\n\treturn 3;\n}\n");
    fixture.write("blob.bin", "\0ab");
    // Myers counts +4/-2 here, Histogram +5/-3.
    fixture.write("churn.txt", "b\nx\na\na\na\nc\n");
    fixture.write("gone.txt", "bye\nfor now\n");
    fixture.write("script.sh", "echo hi\n");
    fixture.write("tool.sh", "echo one\n");
    fixture.write("target-a", "a\n");
    symlink("target-a", fixture.root().join("link")).unwrap();
    std::fs::create_dir_all(fixture.root().join("vendor/moved")).unwrap();
    std::fs::create_dir_all(fixture.root().join("vendor/removed")).unwrap();
    std::fs::create_dir_all(fixture.root().join("vendor/added")).unwrap();
    fixture.git(&["add", "-A"]);
    let gitlink = |digit: &str, path: &str| format!("160000,{},{path}", digit.repeat(40));
    fixture.git(&["update-index", "--add", "--cacheinfo", &gitlink("1", "vendor/moved")]);
    fixture.git(&["update-index", "--add", "--cacheinfo", &gitlink("3", "vendor/removed")]);
    fixture.git(&["commit", "-q", "-m", "base"]);

    let numbered =
        numbered.replace("line 2\n", "line two\n").replace("line 27\n", "").replace("line 15\n", "line 15\nmiddle\n");
    fixture.write("crlf.txt", "one\r\nTWO\r\nthree\r\n");
    fixture.write("cr-only.txt", "a\r\nb\nc\n");
    fixture.write("no-eol-old.txt", "x\ny\n");
    fixture.write("no-eol-new.txt", "x\nz");
    fixture.write("no-eol-both.txt", "p\nr");
    fixture.write("numbered.txt", &numbered);
    fixture.write(
        "code.c",
        "int a(void)\n{\n\treturn 1;\n}\n\nint b(void)\n{\n\treturn 2;\n}\n\nint c(void)\n{\n\treturn 3;\n}\n",
    );
    fixture.write("blob.bin", "\0ac");
    fixture.write("churn.txt", "a\nb\na\na\nx\nx\na\nb\n");
    std::fs::remove_file(fixture.root().join("gone.txt")).unwrap();
    fixture.write("added.txt", "hello\nworld");
    fixture.write("empty.txt", "");
    let executable = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(fixture.root().join("script.sh"), executable.clone()).unwrap();
    fixture.write("tool.sh", "echo two\n");
    std::fs::set_permissions(fixture.root().join("tool.sh"), executable).unwrap();
    std::fs::remove_file(fixture.root().join("link")).unwrap();
    symlink("target-b", fixture.root().join("link")).unwrap();
    fixture.git(&["add", "-A"]);
    fixture.git(&["update-index", "--cacheinfo", &gitlink("2", "vendor/moved")]);
    fixture.git(&["update-index", "--force-remove", "vendor/removed"]);
    fixture.git(&["update-index", "--add", "--cacheinfo", &gitlink("4", "vendor/added")]);
    fixture
}

/// `git diff --numstat` lines as `adds\tdeletes\tpath`, `-` for binary.
pub fn numstat_line(path: &str, adds: u64, deletes: u64, binary: bool) -> String {
    if binary { format!("-\t-\t{path}") } else { format!("{adds}\t{deletes}\t{path}") }
}

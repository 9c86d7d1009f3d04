//! Scope preparation against real temporary repositories built with the
//! `git` executable (the tests' isolated runner, [`Git`]: pinned identity
//! and dates, no user or system configuration).

use super::git::GitEnv;
use super::prepare::{self, Mode, PrepareError, PreparedScope};
use git_agent_tests::git::Git;
use std::path::{Path, PathBuf};

pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new().prefix("ga-scope").tempdir().expect("temporary folder");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        std::fs::create_dir_all(dir.path().join("repo")).expect("repo");
        let fixture = Self { dir };
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    pub fn env(&self) -> GitEnv {
        GitEnv { home: Some(self.home()), xdg_config_home: None }
    }

    #[track_caller]
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        Git::with_home(self.home()).run(dir, args)
    }

    #[track_caller]
    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.repo(), args)
    }

    pub fn write(&self, relative: &str, contents: &str) {
        write(&self.repo(), relative, contents);
    }

    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    pub fn prepare(&self, mode: Mode) -> Result<PreparedScope, PrepareError> {
        prepare::prepare(&self.repo(), mode, &self.env())
    }

    /// A repository beside the main one, with one commit.
    pub fn side_repo(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(&path).expect("side repo");
        self.git_in(&path, &["init", "-q", "-b", "main"]);
        for (file, contents) in files {
            write(&path, file, contents);
        }
        self.git_in(&path, &["add", "-A"]);
        self.git_in(&path, &["commit", "-q", "-m", &format!("{name} initial")]);
        path
    }
}

pub(crate) fn write(root: &Path, relative: &str, contents: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("parent folders");
    std::fs::write(path, contents).expect("write");
}

fn paths(prepared: &PreparedScope) -> Vec<&str> {
    prepared.paths.iter().map(String::as_str).collect()
}

#[test]
fn uncommitted_covers_staged_unstaged_and_untracked_once() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "one\ntwo\n");
    fixture.write("b.txt", "keep\n");
    fixture.write("gone.txt", "bye\n");
    fixture.commit_all("initial");
    fixture.write("a.txt", "one\nTWO\n");
    fixture.git(&["add", "a.txt"]);
    fixture.write("a.txt", "one\nTWO\nthree\n");
    fixture.write("new/untracked.txt", "fresh\n");
    std::fs::remove_file(fixture.repo().join("gone.txt")).unwrap();
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert_eq!(paths(&prepared), ["a.txt", "gone.txt", "new/untracked.txt"]);
    let a = &prepared.status[0];
    assert_eq!((a.staging.as_str(), a.worktree.as_str()), ("M", "M"));
    assert_eq!((prepared.status[2].staging.as_str(), prepared.status[2].worktree.as_str()), ("?", "?"));
    // The final worktree content against HEAD, once.
    assert_eq!(prepared.diff.matches("diff --git a/a.txt").count(), 1);
    assert!(prepared.diff.contains("-two\n+TWO\n+three\n"), "{}", prepared.diff);
    assert!(prepared.diff.contains("deleted file mode 100644"));
    assert!(prepared.diff.contains("+++ b/new/untracked.txt\n@@ -0,0 +1 @@\n+fresh\n"), "{}", prepared.diff);
    assert!(prepared.diff.contains("+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"), "{}", prepared.diff);
    let stats = prepared.stats_by_path();
    assert_eq!((stats["a.txt"].adds, stats["a.txt"].deletes), (2, 1));
    assert_eq!(prepared.components, [""]);
    assert!(prepared.fingerprint.is_some());
    assert_eq!(prepared.context_pack.overview.files, 3);
}

#[test]
fn staged_mode_reads_the_index_only() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "one\n");
    fixture.commit_all("initial");
    fixture.write("a.txt", "staged\n");
    fixture.git(&["add", "a.txt"]);
    fixture.write("a.txt", "unstaged\n");
    fixture.write("untracked.txt", "x\n");
    let prepared = fixture.prepare(Mode::Staged).unwrap();
    assert_eq!(paths(&prepared), ["a.txt"]);
    assert!(prepared.diff.contains("+staged\n") && !prepared.diff.contains("unstaged"), "{}", prepared.diff);
    let fingerprint = prepared.fingerprint.unwrap();
    assert_eq!(fingerprint.target_tree, fixture.git(&["write-tree"]).trim());
    assert_eq!(fingerprint.base_tree, fixture.git(&["rev-parse", "HEAD^{tree}"]).trim());
}

#[test]
fn uncommitted_target_tree_is_the_tree_git_would_write() {
    let fixture = Fixture::new();
    fixture.write("src/lib.rs", "fn a() {}\n");
    fixture.write("README.md", "readme\n");
    fixture.commit_all("initial");
    fixture.write("src/lib.rs", "fn b() {}\n");
    fixture.write("src/deep/new.rs", "new\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    fixture.git(&["add", "-A"]);
    assert_eq!(prepared.fingerprint.unwrap().target_tree, fixture.git(&["write-tree"]).trim());
}

#[test]
fn target_trees_of_nested_folders_with_neighbouring_names_match_git() {
    let fixture = Fixture::new();
    fixture.write("README.md", "readme\n");
    fixture.commit_all("initial");
    // Names that sort around "a/" ('-' and '.' before '/', '0' after) and
    // folders several levels deep, some holding only folders.
    for path in ["a/x.txt", "a-b/c.txt", "a.b/c.txt", "a0/c.txt", "a/b/c/d/e.txt", "a/b/f.txt", "z/y/x/w.txt"] {
        fixture.write(path, &format!("{path}\n"));
    }
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    fixture.git(&["add", "-A"]);
    assert_eq!(prepared.fingerprint.unwrap().target_tree, fixture.git(&["write-tree"]).trim());
}

#[test]
fn union_entries_walks_both_sides_in_path_order() {
    let blob = |byte: u8| crate::git::Blob {
        mode: gix::objs::tree::EntryKind::Blob.into(),
        id: gix::hash::ObjectId::from_bytes_or_panic(&[byte; 20]),
    };
    let old: crate::git::Flat =
        [("a", 1), ("b", 2), ("d", 4)].into_iter().map(|(path, byte)| (path.to_string(), blob(byte))).collect();
    let new: crate::git::Flat =
        [("b", 2), ("c", 3), ("d", 5)].into_iter().map(|(path, byte)| (path.to_string(), blob(byte))).collect();
    let union: Vec<(&str, Option<u8>, Option<u8>)> = crate::git::union_entries(&old, &new)
        .map(|(path, before, after)| {
            (path.as_str(), before.map(|b| b.id.as_bytes()[0]), after.map(|b| b.id.as_bytes()[0]))
        })
        .collect();
    assert_eq!(union, [("a", Some(1), None), ("b", Some(2), Some(2)), ("c", None, Some(3)), ("d", Some(4), Some(5))]);
}

#[test]
fn empty_scopes_fail_and_codebase_has_no_diff() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "one\n");
    fixture.commit_all("initial");
    for mode in [Mode::Uncommitted, Mode::Staged] {
        let error = fixture.prepare(mode).unwrap_err();
        assert!(matches!(error, PrepareError::EmptyScope { .. }), "{error}");
        assert!(error.to_string().contains(&format!("{} mode requires changed files", mode.as_str())));
    }
    let prepared = fixture.prepare(Mode::Codebase).unwrap();
    assert!(prepared.paths.is_empty() && prepared.diff.is_empty() && prepared.fingerprint.is_none());
    assert_eq!(prepared.components, [""]);
    assert!(prepared.prompt_context().is_none());
}

#[test]
fn ignore_precedence_with_reinclusion() {
    let fixture = Fixture::new();
    fixture.write(".gitignore", "*.log\n!keep.log\nbuild/\n!build/rescued.txt\nout/*\n!out/kept.txt\n");
    fixture.write("tracked/ignored-dir/tracked.txt", "v1\n");
    fixture.commit_all("initial");
    // Global excludes from the caller's HOME and the repository's exclude file.
    write(&fixture.home(), ".config/git/ignore", "*.global\n");
    write(&fixture.repo(), ".git/info/exclude", "*.local\n");
    std::fs::write(
        fixture.repo().join(".gitignore"),
        "*.log\n!keep.log\nbuild/\n!build/rescued.txt\nout/*\n!out/kept.txt\ntracked/ignored-dir/\n",
    )
    .unwrap();
    for file in [
        "debug.log",
        "keep.log",
        "a.global",
        "a.local",
        "build/rescued.txt",
        "build/other.txt",
        "out/kept.txt",
        "out/dropped.txt",
        "plain/deep/file.txt",
        ".git-agent/state.json",
        ".omx/x",
        "nested/.git-agent/y",
    ] {
        fixture.write(file, "x\n");
    }
    fixture.write("tracked/ignored-dir/tracked.txt", "v2\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert_eq!(
        paths(&prepared),
        [".gitignore", "keep.log", "out/kept.txt", "plain/deep/file.txt", "tracked/ignored-dir/tracked.txt"]
    );
}

#[test]
fn a_configured_global_excludes_file_wins_over_the_default() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "x\n");
    fixture.commit_all("initial");
    write(&fixture.home(), ".gitconfig", "[core]\n\texcludesFile = ~/my-ignore\n");
    write(&fixture.home(), "my-ignore", "*.mine\n");
    write(&fixture.home(), ".config/git/ignore", "*.default\n");
    fixture.write("a.mine", "x\n");
    fixture.write("a.default", "x\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert_eq!(paths(&prepared), ["a.default"]);
}

#[test]
fn tracked_files_under_private_dirs_stay_in_scope() {
    let fixture = Fixture::new();
    fixture.write(".omx/tracked.txt", "v1\n");
    fixture.commit_all("initial");
    fixture.write(".omx/tracked.txt", "v2\n");
    fixture.write(".omx/untracked.txt", "v2\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert_eq!(paths(&prepared), [".omx/tracked.txt"]);
}

#[test]
fn drift_after_launch_is_an_explicit_rerun_error() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "one\n");
    fixture.commit_all("initial");
    fixture.write("a.txt", "two\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    prepare::recheck(&prepared, &fixture.env()).unwrap();
    fixture.write("a.txt", "three\n");
    let error = prepare::recheck(&prepared, &fixture.env()).unwrap_err();
    assert!(
        error.to_string().contains("authoritative repository state changed since launch; rerun command"),
        "{error}"
    );
    // A staged snapshot ignores worktree edits but not index edits.
    fixture.git(&["add", "a.txt"]);
    let staged = fixture.prepare(Mode::Staged).unwrap();
    fixture.write("a.txt", "four\n");
    prepare::recheck(&staged, &fixture.env()).unwrap();
    fixture.git(&["add", "a.txt"]);
    assert!(matches!(prepare::recheck(&staged, &fixture.env()), Err(PrepareError::Drift { .. })));
    // Codebase mode stays live: no fingerprint, no drift.
    let codebase = fixture.prepare(Mode::Codebase).unwrap();
    fixture.write("b.txt", "new\n");
    prepare::recheck(&codebase, &fixture.env()).unwrap();
}

/// A superproject with `sub` (which has `sub/inner`) initialized and
/// `lazy` registered in .gitmodules but never initialized.
fn superproject() -> Fixture {
    let fixture = Fixture::new();
    let inner = fixture.side_repo("inner-src", &[("inner.txt", "inner v1\n")]);
    let sub = fixture.side_repo("sub-src", &[("sub.txt", "sub v1\n")]);
    fixture.git_in(
        &sub,
        &["-c", "protocol.file.allow=always", "submodule", "add", "-q", inner.to_str().unwrap(), "inner"],
    );
    fixture.git_in(&sub, &["commit", "-q", "-m", "add inner"]);
    let lazy = fixture.side_repo("lazy-src", &[("lazy.txt", "lazy\n")]);
    fixture.write("top.txt", "top\n");
    fixture.commit_all("initial");
    fixture.git(&["submodule", "add", "-q", sub.to_str().unwrap(), "sub"]);
    fixture.git(&["submodule", "add", "-q", lazy.to_str().unwrap(), "lazy"]);
    fixture.git(&["commit", "-q", "-m", "add submodules"]);
    fixture.git(&["submodule", "update", "-q", "--init", "--recursive", "sub"]);
    fixture.git(&["submodule", "deinit", "-q", "-f", "lazy"]);
    fixture
}

#[test]
fn nested_submodules_expand_with_root_relative_paths() {
    let fixture = superproject();
    write(&fixture.repo(), "sub/sub.txt", "sub v2\n");
    write(&fixture.repo(), "sub/inner/inner.txt", "inner v2\n");
    write(&fixture.repo(), "sub/inner/new.txt", "new\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert_eq!(prepared.components, ["", "sub", "sub/inner"]);
    assert_eq!(paths(&prepared), ["sub", "sub/inner", "sub/sub.txt", "sub/inner/inner.txt", "sub/inner/new.txt"]);
    // Dirty gitlinks, labelled sections with section-relative patch paths.
    assert!(prepared.diff.contains("-dirty\n"), "{}", prepared.diff);
    assert!(prepared.diff.contains("Repository \"sub\" (paths below are relative to \"sub\"):\n"));
    assert!(prepared.diff.contains("Repository \"sub/inner\" (paths below are relative to \"sub/inner\"):\n"));
    assert!(prepared.diff.contains("diff --git a/inner.txt b/inner.txt"), "{}", prepared.diff);
    assert!(prepared.gitlinks.contains("sub"));
    let fingerprint = prepared.fingerprint.clone().unwrap();
    assert!(!fingerprint.dirty_submodules.is_empty() && !fingerprint.nested_repositories.is_empty());
    // A nested edit is drift.
    write(&fixture.repo(), "sub/inner/inner.txt", "inner v3\n");
    assert!(matches!(prepare::recheck(&prepared, &fixture.env()), Err(PrepareError::Drift { .. })));
}

#[test]
fn clean_and_uninitialized_submodules_add_no_scope() {
    let fixture = superproject();
    fixture.write("top.txt", "top v2\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert_eq!(paths(&prepared), ["top.txt"]);
    assert_eq!(prepared.components, ["", "sub", "sub/inner"]);
    let codebase = fixture.prepare(Mode::Codebase).unwrap();
    assert_eq!(codebase.components, ["", "sub", "sub/inner"]);
}

#[test]
fn a_moved_gitlink_summarises_the_commits_it_moved_over() {
    let fixture = superproject();
    let sub = fixture.repo().join("sub");
    write(&sub, "sub.txt", "sub v2\n");
    fixture.git_in(&sub, &["commit", "-q", "-am", "second sub commit"]);
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert_eq!(paths(&prepared), ["sub", "sub/sub.txt"]);
    assert!(prepared.diff.contains("Submodule commits sub ("), "{}", prepared.diff);
    assert!(prepared.diff.contains(" second sub commit\n"));
    assert!(!prepared.diff.contains("-dirty"));
    // The nested section compares the recorded gitlink with the checkout.
    assert!(prepared.diff.contains("-sub v1\n+sub v2\n"), "{}", prepared.diff);
}

#[test]
fn a_gitlink_whose_base_is_missing_compares_with_the_checkout() {
    let fixture = superproject();
    let missing = "1234567890123456789012345678901234567890";
    fixture.git(&["update-index", "--cacheinfo", &format!("160000,{missing},sub")]);
    fixture.git(&["commit", "-q", "-m", "record an unavailable commit"]);
    write(&fixture.repo(), "sub/sub.txt", "dirty\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    assert!(paths(&prepared).contains(&"sub"));
    assert!(paths(&prepared).contains(&"sub/sub.txt"));
    assert!(
        prepared.diff.contains(&format!(
            "Base commit {missing} is unavailable locally; showing checkout-relative dirty changes only."
        )),
        "{}",
        prepared.diff
    );
    assert!(prepared.diff.contains(&format!("-Subproject commit {missing}\n")));
}

#[test]
fn operator_hints_are_escaped_and_bounded() {
    let hint = prepare::OperatorHint::new(" focus on <script> & stuff ").unwrap();
    assert_eq!(hint.escaped, "focus on &lt;script&gt; &amp; stuff");
    assert!(hint.section().unwrap().contains("<operator_hint>\nfocus on &lt;script&gt; &amp; stuff\n</operator_hint>"));
    assert!(prepare::OperatorHint::new("   ").is_none());
    let long = "x".repeat(prepare::MAX_OPERATOR_HINT_BYTES + 10);
    assert!(prepare::OperatorHint::new(&long).unwrap().truncated);
}

#[test]
fn the_previous_head_pack_describes_only_what_head_changed() {
    let fixture = Fixture::new();
    fixture.write("keep/same.txt", "same\n");
    fixture.write("old.txt", "gone\n");
    fixture.write("src/lib.rs", "one\ntwo\n");
    fixture.commit_all("initial");
    fixture.git(&["rm", "-q", "old.txt"]);
    fixture.write("src/lib.rs", "one\nthree\nfour\n");
    fixture.write("src/deep/new.rs", "a\nb\n");
    fixture.commit_all("second");
    fixture.write("keep/same.txt", "dirty\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    let previous = prepared.previous_head_context_pack.as_ref().unwrap();
    assert_eq!(previous.overview.files, 3, "{previous:?}");
    assert_eq!((previous.overview.adds, previous.overview.deletes), (4, 2), "{previous:?}");
    let statuses: Vec<(&str, u64)> =
        previous.overview.statuses.iter().map(|(status, count)| (status.as_str(), *count)).collect();
    assert_eq!(statuses, [("added", 1), ("deleted", 1), ("modified", 1)]);
}

#[test]
fn the_prompt_context_bounds_both_packs_and_keeps_the_diff() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "one\n");
    fixture.commit_all("initial");
    fixture.write("a.txt", "two\n");
    fixture.commit_all("second");
    fixture.write("b.txt", "new\n");
    let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
    let previous = prepared.previous_head_context_pack.as_ref().unwrap();
    assert_eq!(previous.overview.files, 1);
    let rendered = prepared.rendered_prompt_context().unwrap();
    let value: serde_json::Value = serde_json::from_str(&rendered).unwrap();
    assert_eq!(value["mode"], "uncommitted");
    assert!(value["diff"].as_str().unwrap().contains("+new"));
    assert!(value.get("paths").is_none() && value.get("status").is_none());
}

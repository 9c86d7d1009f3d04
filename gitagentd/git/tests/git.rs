//! The gix-backed staged scope compared with the real `git` on temporary
//! repositories.

use git_agent_tests::{GitRepo, TestEnv};
use gitagent_git::{AmendContext, AmendLimits, DiffScope, FileSource, Repository, StagedContext, StagedLimits};

fn fixture(env: &TestEnv) -> GitRepo {
    let repo = env.repo("staged");
    repo.write("keep.txt", "same\n");
    repo.write("edit.txt", "one\ntwo\nthree\n");
    repo.write("gone.txt", "bye\n");
    repo.write("src/lib.rs", "fn a() {}\n");
    repo.commit_all("feat: first");
    repo.write("edit.txt", "one\n2\nthree\nfour\n");
    repo.write("src/new.rs", "pub fn b() {}\n");
    repo.write("bin.dat", "a\0b");
    repo.write("unstaged.txt", "not staged\n");
    repo.git(&["add", "edit.txt", "src/new.rs", "bin.dat"]);
    repo.git(&["rm", "-q", "gone.txt"]);
    repo.write("edit.txt", "worktree only\n");
    repo
}

#[test]
fn staged_scope_matches_git() {
    let env = TestEnv::new();
    let fixture = fixture(&env);
    let repo = Repository::discover(&fixture.path().join("src")).unwrap();
    let context = StagedContext::prepare(&repo, StagedLimits::default()).unwrap();

    let name_status = fixture.git(&["diff", "--cached", "--no-renames", "--name-status"]);
    let expected: Vec<(String, String)> = name_status
        .lines()
        .map(|line| {
            let (status, path) = line.split_once('\t').unwrap();
            (path.to_string(), status.to_string())
        })
        .collect();
    let actual: Vec<(String, String)> =
        context.staged_status.iter().map(|s| (s.path.clone(), s.staging.clone())).collect();
    assert_eq!(actual, expected);
    assert_eq!(context.staged_paths, expected.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>());

    let numstat = fixture.git(&["diff", "--cached", "--no-renames", "--numstat"]);
    for line in numstat.lines() {
        let mut fields = line.split('\t');
        let (adds, deletes, path) = (fields.next().unwrap(), fields.next().unwrap(), fields.next().unwrap());
        let stat = context.staged_stats.iter().find(|s| s.path == path).unwrap();
        if adds == "-" {
            assert!(stat.is_binary, "{path}");
        } else {
            assert_eq!((stat.adds.to_string(), stat.deletes.to_string()), (adds.into(), deletes.into()), "{path}");
        }
    }
    assert!(context.diff.contains("diff --git a/edit.txt b/edit.txt"));
    assert!(context.diff.contains("-two\n+2\n three\n+four\n"), "{}", context.diff);
    assert!(context.diff.contains("new file mode 100644\n") && context.diff.contains("+pub fn b() {}"));
    assert!(context.diff.contains("deleted file mode 100644"));
    assert!(context.diff.contains("Binary files /dev/null and b/bin.dat differ"));
    assert!(!context.diff.contains("worktree only") && !context.diff.contains("unstaged"));
    assert!(!context.diff_truncated);
    assert_eq!(context.recent_commits[0].summary, "feat: first");
    assert_eq!(context.recent_commits[0].date, "2026-01-02T03:04:05Z");
}

#[test]
fn staged_diff_is_capped_with_explicit_truncation() {
    let env = TestEnv::new();
    let fixture = fixture(&env);
    let repo = Repository::discover(fixture.path()).unwrap();
    let limits = StagedLimits { diff_max_bytes: 60, ..StagedLimits::default() };
    let context = StagedContext::prepare(&repo, limits).unwrap();
    assert!(context.diff_truncated);
    assert!(context.diff.ends_with("[truncated]\n") && context.diff.len() <= 60 + "\n[truncated]\n".len());
    let only_new = repo.staged_diff(&["src".into()], 10_000, 100).unwrap();
    assert!(only_new.text.contains("src/new.rs") && !only_new.text.contains("edit.txt"));
}

#[test]
fn index_and_head_sources_differ_from_the_worktree() {
    let env = TestEnv::new();
    let fixture = fixture(&env);
    let repo = Repository::discover(fixture.path()).unwrap();
    let index = repo.tracked_content(FileSource::Index, "edit.txt").unwrap().unwrap();
    let head = repo.tracked_content(FileSource::Head, "edit.txt").unwrap().unwrap();
    assert_eq!(String::from_utf8(index).unwrap(), "one\n2\nthree\nfour\n");
    assert_eq!(String::from_utf8(head).unwrap(), "one\ntwo\nthree\n");
    assert!(repo.tracked_content(FileSource::Head, "src/new.rs").unwrap().is_none());
}

#[test]
fn an_unborn_head_stages_everything_as_added() {
    let env = TestEnv::new();
    let fixture = env.repo("unborn");
    fixture.write("a.txt", "a\n");
    fixture.git(&["add", "a.txt"]);
    let repo = Repository::discover(fixture.path()).unwrap();
    let context = StagedContext::prepare(&repo, StagedLimits::default()).unwrap();
    assert_eq!(context.staged_status[0].staging, "A");
    assert!(context.recent_commits.is_empty());
    assert!(repo.head().branch.as_deref() == Some("main"));
}

#[test]
fn nothing_staged_is_an_empty_context() {
    let env = TestEnv::new();
    let fixture = env.repo("clean");
    fixture.write("a.txt", "a\n");
    fixture.commit_all("init");
    fixture.write("a.txt", "changed but not staged\n");
    let repo = Repository::discover(fixture.path()).unwrap();
    assert!(StagedContext::prepare(&repo, StagedLimits::default()).unwrap().is_empty());
}

#[test]
fn patches_read_like_git_diff_cached() {
    let env = TestEnv::new();
    let fixture = env.repo("patches");
    fixture.write("a.txt", &(1..=20).map(|n| format!("line {n}\n")).collect::<String>());
    fixture.commit_all("init");
    fixture.write(
        "a.txt",
        &(1..=20).map(|n| if n == 10 { "ten\n".into() } else { format!("line {n}\n") }).collect::<String>(),
    );
    fixture.write("new.txt", "one line\n");
    fixture.git(&["add", "-A"]);
    let repo = Repository::discover(fixture.path()).unwrap();
    let ours = repo.staged_diff(&[], 1 << 20, 10_000).unwrap().text;
    let theirs = fixture.git(&["diff", "--cached", "--no-renames", "--no-color"]);
    assert_eq!(ours, theirs, "byte for byte, hunk headers' function lines included");
}

#[test]
fn amend_scopes_match_git() {
    let env = TestEnv::new();
    let fixture = env.repo("scopes");
    fixture.write("a.txt", "a\n");
    fixture.commit_all("feat: a");
    fixture.write("b.txt", "b\n");
    fixture.write("a.txt", "a2\n");
    fixture.commit_all("feat: b");
    fixture.write("c.txt", "c\n");
    fixture.git(&["rm", "-q", "b.txt"]);
    fixture.git(&["add", "c.txt"]);
    let repo = Repository::discover(fixture.path()).unwrap();
    let names = |scope: DiffScope| -> String {
        repo.changes(scope).unwrap().iter().map(|change| format!("{}\t{}\n", change.status(), change.path)).collect()
    };
    assert_eq!(names(DiffScope::HeadCommit), fixture.git(&["diff", "--no-renames", "--name-status", "HEAD~1", "HEAD"]));
    assert_eq!(
        names(DiffScope::Amended),
        fixture.git(&["diff", "--no-renames", "--name-status", "--cached", "HEAD~1"])
    );
    assert_eq!(names(DiffScope::Staged), fixture.git(&["diff", "--no-renames", "--name-status", "--cached"]));
    assert_eq!(
        repo.file_at_revision("HEAD~1", "a.txt").unwrap().unwrap(),
        fixture.git(&["show", "HEAD~1:a.txt"]).into_bytes()
    );
    assert!(repo.file_at_revision("HEAD", "c.txt").unwrap().is_none(), "staged only, not in HEAD");
    let error = repo.file_at_revision("no-such-ref", "a.txt").unwrap_err();
    let cause = std::error::Error::source(&error).and_then(|cause| cause.downcast_ref::<gix::Error>());
    let cause = cause.expect("gix's error is the cause");
    let before = format!(
        "cannot resolve revision \"no-such-ref\" in {}: {cause}\nhint: name a commit such as HEAD, HEAD~1, a branch, a tag or a commit id",
        repo.root().display()
    );
    assert_eq!(git_agent_shared::error_chain::render(&error), before);

    let amend = AmendContext::prepare(&repo, AmendLimits::default()).unwrap();
    assert_eq!(amend.original_subject(), "feat: b");
    assert_eq!(amend.head.parents.len(), 1);
    assert_eq!(amend.final_paths, ["a.txt", "c.txt"], "b.txt was added by HEAD and removed again");
    assert_eq!(amend.staged_paths, ["b.txt", "c.txt"]);
}

#[test]
fn amending_without_a_commit_is_a_clear_error() {
    let env = TestEnv::new();
    let fixture = env.repo("unborn-amend");
    fixture.write("a.txt", "a\n");
    fixture.git(&["add", "a.txt"]);
    let repo = Repository::discover(fixture.path()).unwrap();
    let error = AmendContext::prepare(&repo, AmendLimits::default()).unwrap_err().to_string();
    assert!(error.starts_with("nothing to amend") && error.contains("hint:"), "{error}");
}

/// A name that is not UTF-8 is read from the index, HEAD and a revision by
/// its key (quoted as git quotes it), and the staged diff's header quotes
/// it whole, as `git diff` does.
#[test]
fn keys_of_names_that_are_not_utf8_read_their_entries() {
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    let fixture = env.repo("quoted");
    std::fs::write(fixture.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9.py")), "one\n").unwrap();
    fixture.commit_all("feat: first");
    std::fs::write(fixture.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9.py")), "two\n").unwrap();
    fixture.git(&["add", "-A"]);
    let repo = Repository::discover(fixture.path()).unwrap();
    let key = r#""caf\351.py""#;
    assert_eq!(repo.tracked_content(FileSource::Head, key).unwrap().as_deref(), Some(&b"one\n"[..]));
    assert_eq!(repo.tracked_content(FileSource::Index, key).unwrap().as_deref(), Some(&b"two\n"[..]));
    assert_eq!(repo.file_at_revision("HEAD", key).unwrap().as_deref(), Some(&b"one\n"[..]));
    let context = StagedContext::prepare(&repo, StagedLimits::default()).unwrap();
    let git_header = fixture.git(&["diff", "--cached"]).lines().next().unwrap().to_string();
    assert_eq!(git_header, r#"diff --git "a/caf\351.py" "b/caf\351.py""#);
    assert!(context.diff.starts_with(&git_header), "{}", context.diff);
}

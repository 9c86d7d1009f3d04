//! `git-agent pr-message`: the branch context against a bare `origin`
//! computed through the real binaries, and the errors that come before
//! any model request (no `origin/HEAD`, nothing committed on the branch).
//! Generation itself is not connected to the agent loop yet, so this build does not
//! have yet; it fails there clearly, with nothing on stdout.

use git_agent_tests::{GitRepo, TestEnv};

/// A bare `origin` with two commits on main, and a clone on `feature`.
fn clone_of_bare_origin(env: &TestEnv) -> GitRepo {
    let upstream = env.repo("upstream");
    upstream.write("README.md", "# app\n");
    upstream.commit_all("chore: initial commit");
    upstream.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    upstream.commit_all("feat: add one");
    let bare = env.work().join("origin.git");
    upstream.git(&["clone", "-q", "--bare", ".", bare.to_str().unwrap()]);
    let clone = env.repo("clone");
    clone.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    clone.git(&["fetch", "-q", "origin"]);
    clone.git(&["checkout", "-q", "-b", "feature", "origin/main"]);
    clone
}

#[test]
fn feature_branch_context_is_prepared_before_generation() {
    let env = TestEnv::new();
    let clone = clone_of_bare_origin(&env);
    clone.git(&["remote", "set-head", "origin", "--auto"]);
    clone.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n\npub fn two() -> u32 {\n    2\n}\n");
    clone.commit_all("feat: add two");
    clone.write("docs/two.md", "Two.\n");
    clone.commit_all("docs: describe two");
    let run = env.run_in(clone.path(), &["pr-message", "--debug"]);
    let stderr = run.failure();
    assert!(
        stderr.starts_with("pr-message: prepared origin/HEAD..HEAD against origin/main (2 paths, 2 branch commits,"),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("error: pr-message cannot ask the model yet: its generation step is not connected in this build"),
        "{stderr}"
    );
}

#[test]
fn missing_origin_head_names_the_fix() {
    let env = TestEnv::new();
    let clone = clone_of_bare_origin(&env);
    clone.write("src/new.rs", "pub fn new() {}\n");
    clone.commit_all("feat: something");
    let run = env.run_in(clone.path(), &["pr-message"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert!(stderr.starts_with("error: origin/HEAD is not set in"), "{stderr}");
    assert!(stderr.contains("hint: run `git remote set-head origin --auto`"), "{stderr}");
}

#[test]
fn a_branch_without_committed_changes_fails_clearly() {
    let env = TestEnv::new();
    let clone = clone_of_bare_origin(&env);
    clone.git(&["remote", "set-head", "origin", "--auto"]);
    clone.write("staged.txt", "not committed\n");
    clone.git(&["add", "staged.txt"]);
    let run = env.run_in(clone.path(), &["pr-message"]);
    let stderr = run.failure();
    assert!(
        stderr.starts_with("error: the current branch has no committed changes against origin/HEAD (origin/main)"),
        "{stderr}"
    );
}

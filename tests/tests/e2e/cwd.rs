//! The global `--cwd <directory>` option, case by case from the spec's
//! "Flags" section.

use git_agent_tests::{TestEnv, sha256_hex};

fn id_of(path: &std::path::Path) -> String {
    format!("{}\n", sha256_hex(path.to_str().unwrap().as_bytes()))
}

#[test]
fn relative_cwd_resolves_from_the_callers_directory() {
    let env = TestEnv::new();
    let target = env.work().join("a/b");
    std::fs::create_dir_all(&target).unwrap();
    let stdout = env.run_in(&env.work(), &["--cwd", "a/b", "project_id"]).success();
    assert_eq!(stdout, id_of(&target));
    let stdout = env.run_in(&env.work().join("a"), &["--cwd=b", "project_id"]).success();
    assert_eq!(stdout, id_of(&target));
}

#[test]
fn absolute_cwd_is_used_directly() {
    let env = TestEnv::new();
    let repo = env.repo("abs");
    let elsewhere = env.work().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let stdout = env.run_in(&elsewhere, &["--cwd", repo.path().to_str().unwrap(), "project_id"]).success();
    assert_eq!(stdout, id_of(repo.path()));
}

#[test]
fn cwd_selects_the_repository_for_discovery() {
    let env = TestEnv::new();
    let repo = env.repo("withorigin");
    repo.git(&["remote", "add", "origin", "git@example.test:team/withorigin.git"]);
    std::fs::create_dir_all(repo.path().join("deep/er")).unwrap();
    let stdout = env.run_in(&env.work(), &["--cwd", "withorigin/deep/er", "project_id"]).success();
    assert_eq!(stdout, format!("{}\n", sha256_hex(b"example.test/team/withorigin")));
}

#[test]
fn missing_directory_fails_before_the_command_with_empty_stdout() {
    let env = TestEnv::new();
    let run = env.run_in(&env.work(), &["--cwd", "does-not-exist", "project_id"]);
    let stderr = run.failure();
    assert!(stderr.contains("does-not-exist"), "{stderr}");
}

#[test]
fn a_file_is_not_a_directory() {
    let env = TestEnv::new();
    std::fs::write(env.work().join("file"), "x").unwrap();
    env.run_in(&env.work(), &["--cwd", "file", "project_id"]).failure();
}

#[test]
fn cwd_needs_one_nonempty_value_once_before_the_command() {
    let env = TestEnv::new();
    let dir = env.work();
    for args in [
        &["--cwd"][..],
        &["--cwd", "", "project_id"],
        &["--cwd", ".", "--cwd", ".", "project_id"],
        &["project_id", "--cwd", "."],
        &["--cwd", "."],
    ] {
        let run = env.run_in(&dir, args);
        run.failure();
        assert!(!run.stderr.is_empty(), "{args:?} should explain the failure");
    }
}

//! `git-agent release-note`: usage and `--out` checks before any work,
//! range resolution through the real binaries, and the prepared context
//! reaching the model step (which this build does not have yet: it fails
//! there clearly, with nothing on stdout).

use git_agent_tests::{GitRepo, TestEnv};
use std::os::unix::fs::PermissionsExt;

const NEEDS_RUNTIME: &str = "release-note cannot ask the model yet: its generation step is not connected in this build";

/// One commit tagged `tag` (annotated or not), then a feature commit.
fn tagged_repo(env: &TestEnv, name: &str, tag: &str, annotated: bool) -> GitRepo {
    let repo = env.repo(name);
    repo.write("src/main.rs", "fn main() {}\n");
    repo.commit_all("chore: initial import");
    if annotated {
        repo.git(&["tag", "-a", tag, "-m", "release"]);
    } else {
        repo.git(&["tag", tag]);
    }
    repo.write("src/search.rs", "pub fn search() {}\n");
    repo.commit_all("feat: add search");
    repo
}

#[test]
fn no_version_tag_fails_with_a_hint_and_empty_stdout() {
    let env = TestEnv::new();
    let repo = env.repo("untagged");
    repo.write("a.txt", "a\n");
    repo.commit_all("first");
    let run = env.run_in(repo.path(), &["release-note", "patch"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert!(stderr.starts_with("error: no semantic version tag (vX.Y.Z or X.Y.Z) is reachable from HEAD"), "{stderr}");
    assert!(stderr.contains("hint: tag the last release"), "{stderr}");
}

#[test]
fn out_to_a_missing_folder_fails_before_anything_else() {
    let env = TestEnv::new();
    // Not a repository, and v1/v2 exist nowhere: only the --out check runs.
    let run = env.run_in(&env.work(), &["release-note", "--out", "/nonexistent/dir/x.md", "v1", "v2"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert_eq!(
        stderr,
        "error: --out /nonexistent/dir/x.md: the folder /nonexistent/dir does not exist\nhint: create it first, or choose another path\n"
    );
}

#[test]
fn out_to_a_read_only_file_or_folder_fails_before_the_repository_is_read() {
    let env = TestEnv::new();
    let locked = env.work().join("locked.md");
    std::fs::write(&locked, "old notes\n").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = env.run_in(&env.work(), &["release-note", "--out", "locked.md", "v1", "v2"]);
    assert!(run.failure().contains("is read-only"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&locked).unwrap(), "old notes\n");

    let run = env.run_in(&env.work(), &["release-note", "--out", ".", "patch"]);
    assert!(run.failure().contains("is a folder"), "{}", run.stderr);
}

#[test]
fn usage_errors_exit_2() {
    let env = TestEnv::new();
    let run = env.run_in(&env.work(), &["release-note"]);
    assert!(run.failure().contains("required arguments were not provided"), "{}", run.stderr);
    assert_eq!(run.code, Some(2));

    let run = env.run_in(&env.work(), &["release-note", "a", "b", "c"]);
    assert!(run.failure().contains("unexpected value 'c'"), "{}", run.stderr);
    assert_eq!(run.code, Some(2));

    let run = env.run_in(&env.work(), &["release-note", "micro"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(2));
    assert!(
        stderr.starts_with("error: release-note takes <base> <release> or patch|minor|major; \"micro\""),
        "{stderr}"
    );
}

#[test]
fn bumps_from_either_tag_spelling_resolve_before_generation() {
    let env = TestEnv::new();
    for (tag, annotated) in [("v1.2.3", true), ("1.2.3", false)] {
        let repo = tagged_repo(&env, &format!("bump-{tag}"), tag, annotated);
        for (bump, version) in [("patch", "1.2.4"), ("minor", "1.3.0"), ("major", "2.0.0")] {
            let run = env.run_in(repo.path(), &["release-note", "--debug", bump]);
            let stderr = run.failure();
            assert!(
                stderr.starts_with(&format!(
                    "release-note: prepared {tag}..{version} (1 commits, 0 submodule groups, 1 candidates"
                )),
                "{stderr}"
            );
            assert!(stderr.contains(NEEDS_RUNTIME), "{stderr}");
        }
    }
}

#[test]
fn explicit_ranges_resolve_tags_of_both_kinds_and_write_nothing_on_failure() {
    let env = TestEnv::new();
    let repo = tagged_repo(&env, "explicit", "v1.0.0", true);
    repo.git(&["tag", "v1.1.0"]);
    let out = env.work().join("notes.md");
    let run = env.run_in(repo.path(), &["release-note", "--debug", "--out", out.to_str().unwrap(), "v1.0.0", "v1.1.0"]);
    let stderr = run.failure();
    assert!(stderr.starts_with("release-note: prepared v1.0.0..v1.1.0 (1 commits"), "{stderr}");
    assert!(stderr.contains(NEEDS_RUNTIME), "{stderr}");
    assert!(!out.exists(), "a failed run leaves no file behind");

    let run = env.run_in(repo.path(), &["release-note", "v1.0.0", "v9.9.9"]);
    assert!(run.failure().starts_with("error: unknown revision \"v9.9.9\""), "{}", run.stderr);

    let run = env.run_in(repo.path(), &["release-note", "v1.1.0", "v1.0.0"]);
    assert!(run.failure().contains("hint: v1.0.0 has no commits that v1.1.0 lacks"), "{}", run.stderr);
}

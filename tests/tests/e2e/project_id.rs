//! `git-agent project_id`: the normalized-origin identity and the path
//! fallback.

use git_agent_tests::{TestEnv, sha256_hex};

#[test]
fn clones_of_one_origin_share_an_id() {
    let env = TestEnv::new();
    let spellings = [
        "git@example.test:org/repo.git",
        "ssh://git@example.test/org/repo",
        "https://example.test/org/repo.git",
        "https://user:token@Example.test/org/repo",
    ];
    let expected = format!("{}\n", sha256_hex(b"example.test/org/repo"));
    for (index, url) in spellings.iter().enumerate() {
        let repo = env.repo(&format!("clone{index}"));
        repo.git(&["remote", "add", "origin", url]);
        let stdout = env.run_in(repo.path(), &["project_id"]).success();
        assert_eq!(stdout, expected, "origin {url}");
    }
}

#[test]
fn subdirectories_share_the_repository_id() {
    let env = TestEnv::new();
    let repo = env.repo("nested");
    repo.git(&["remote", "add", "origin", "https://example.test/org/nested.git"]);
    std::fs::create_dir_all(repo.path().join("a/b")).unwrap();
    let top = env.run_in(repo.path(), &["project_id"]).success();
    let nested = env.run_in(&repo.path().join("a/b"), &["project_id"]).success();
    assert_eq!(top, nested);
}

#[test]
fn repository_without_origin_hashes_its_root_path() {
    let env = TestEnv::new();
    let repo = env.repo("plain");
    std::fs::create_dir_all(repo.path().join("sub")).unwrap();
    let expected = format!("{}\n", sha256_hex(repo.path().to_str().unwrap().as_bytes()));
    assert_eq!(env.run_in(repo.path(), &["project_id"]).success(), expected);
    assert_eq!(env.run_in(&repo.path().join("sub"), &["project_id"]).success(), expected);
}

#[test]
fn non_git_directory_hashes_its_cleaned_absolute_path() {
    let env = TestEnv::new();
    let dir = env.work().join("not-a-repo");
    std::fs::create_dir_all(&dir).unwrap();
    let stdout = env.run_in(&dir, &["project_id"]).success();
    assert_eq!(stdout, format!("{}\n", sha256_hex(dir.to_str().unwrap().as_bytes())));
    assert_eq!(stdout.len(), 65);
    assert!(stdout[..64].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
}

#[test]
fn project_id_accepts_no_arguments() {
    let env = TestEnv::new();
    let run = env.run_in(&env.work(), &["project_id", "extra"]);
    let stderr = run.failure();
    assert!(stderr.contains("extra"), "{stderr}");
}

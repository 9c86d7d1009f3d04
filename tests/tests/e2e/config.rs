//! `git-agent config index.remote [<git-url>]` and `--unset`.

use git_agent_tests::TestEnv;
use std::os::unix::fs::PermissionsExt;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn set_get_unset_lifecycle_is_private_and_sanitized() {
    let env = TestEnv::new();
    let dir = env.work();
    let remote = "https://user:s3cr3t-token@example.test/indexes.git?x=1#frag";
    let set = env.run_in(&dir, &["config", "index.remote", remote]);
    assert_eq!(set.success(), "");
    assert_eq!(set.stderr, "");

    let file = env.config_home().join("git-agent/config.json");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["index"]["remote"], remote);

    let get = env.run_in(&dir, &["config", "index.remote"]);
    assert_eq!(get.success(), "https://example.test/indexes.git\n");
    assert!(!get.stderr.contains("s3cr3t"));

    assert_eq!(env.run_in(&dir, &["config", "--unset", "index.remote"]).success(), "");
    let after = env.run_in(&dir, &["config", "index.remote"]);
    let stderr = after.failure();
    assert!(stderr.contains("index.remote is not configured"), "{stderr}");
}

#[test]
fn errors_never_print_the_password() {
    let env = TestEnv::new();
    let dir = env.work();
    env.run_in(&dir, &["config", "index.remote", "https://u:hunter2@example.test/r.git"]).success();
    for args in
        [&["config", "index.remote", "a", "b"][..], &["config", "nope"], &["config", "--unset", "index.remote", "x"]]
    {
        let run = env.run_in(&dir, args);
        assert!(!run.stderr.contains("hunter2"), "{args:?}: {}", run.stderr);
        run.failure();
    }
}

#[test]
fn scp_style_remote_prints_as_given() {
    let env = TestEnv::new();
    let dir = env.work();
    env.run_in(&dir, &["config", "index.remote", "git@example.test:me/indexes.git"]).success();
    assert_eq!(env.run_in(&dir, &["config", "index.remote"]).success(), "git@example.test:me/indexes.git\n");
}

#[test]
fn reading_an_unset_key_fails() {
    let env = TestEnv::new();
    let stderr = env.run_in(&env.work(), &["config", "index.remote"]).failure().to_string();
    assert!(stderr.contains("index.remote is not configured"), "{stderr}");
    assert!(!env.config_home().join("git-agent/config.json").exists());
}

#[test]
fn unknown_keys_fail() {
    let env = TestEnv::new();
    let stderr = env.run_in(&env.work(), &["config", "index.other", "x"]).failure().to_string();
    assert!(stderr.contains("index.other"), "{stderr}");
    let stderr = env.run_in(&env.work(), &["config", "--unset", "user.name"]).failure().to_string();
    assert!(stderr.contains("user.name"), "{stderr}");
}

#[test]
fn empty_values_fail_and_write_nothing() {
    let env = TestEnv::new();
    for value in ["", "   "] {
        let stderr = env.run_in(&env.work(), &["config", "index.remote", value]).failure().to_string();
        assert!(stderr.contains("must not be empty"), "{stderr}");
    }
    assert!(!env.config_home().join("git-agent/config.json").exists());
}

#[test]
fn extra_arguments_fail() {
    let env = TestEnv::new();
    env.run_in(&env.work(), &["config", "index.remote", "https://a.test/x", "extra"]).failure();
    env.run_in(&env.work(), &["config", "--unset", "index.remote", "https://a.test/x"]).failure();
    env.run_in(&env.work(), &["config"]).failure();
    assert!(!env.config_home().join("git-agent/config.json").exists());
}

#[test]
fn corrupt_config_file_is_reported_with_its_path() {
    let env = TestEnv::new();
    let file = env.config_home().join("git-agent/config.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{not json").unwrap();
    let stderr = env.run_in(&env.work(), &["config", "index.remote"]).failure().to_string();
    assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
}

//! `git-agent review` and `git-agent simplify` as detached tasks: the
//! launch object, `--wait` through the daemon and from the durable record,
//! the failure contracts (empty stdout), dry runs and `--help-agent`.

use git_agent_tests::{GitRepo, Run, TestEnv, wait_until};
use serde_json::Value;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(30);

/// A repository with one commit and one uncommitted change.
fn dirty_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("inspected");
    repo.write("README.md", "hello\n");
    repo.commit_all("initial");
    repo.write("README.md", "hello\nworld\n");
    repo.write("src/new.rs", "fn main() {}\n");
    repo
}

/// Checks the launch contract and returns the task id.
#[track_caller]
fn launched(run: &Run, command: &str) -> String {
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stderr, "", "a successful launch writes nothing to stderr");
    let text = run.stdout_text();
    assert!(text.ends_with("}\n") && text.matches('\n').count() == 1, "{text:?}");
    let value: Value = serde_json::from_str(&text).unwrap();
    let object = value.as_object().unwrap();
    assert_eq!(object.keys().collect::<Vec<_>>(), ["command", "id", "pid"], "{text}");
    assert_eq!(object["command"], command);
    assert!(object["pid"].as_u64().unwrap() > 0);
    let id = object["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 26);
    assert!(id.bytes().all(|byte| byte.is_ascii_uppercase() || (b'2'..=b'7').contains(&byte)), "{id}");
    id
}

#[track_caller]
fn check_review_report(text: &str) {
    assert!(text.ends_with('\n') && text.matches('\n').count() == 1, "{text:?}");
    let value: Value = serde_json::from_str(text).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["checks", "findings", "recommendation", "summary"], "{text}");
    assert_eq!(value["recommendation"], "APPROVE");
    assert_eq!(value["findings"], Value::Array(vec![]));
    assert!(!value["summary"].as_str().unwrap().is_empty());
    assert!(value["checks"].is_array());
}

#[test]
fn dry_runs_finish_through_wait_and_survive_a_daemon_restart() {
    let env = TestEnv::new();
    let repo = dirty_repo(&env);
    repo.git(&["add", "src/new.rs"]);
    let started = Instant::now();
    let review = launched(&env.run_in(repo.path(), &["review", "--dry-run"]), "review");
    let simplify = launched(&env.run_in(repo.path(), &["simplify", "--dry-run", "--staged", "focus"]), "simplify");

    // Waiting blocks until the fifteen 500-1000 ms steps are done.
    let report = env.run_in(repo.path(), &["review", "--wait", &review]).success();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(7) && elapsed <= Duration::from_secs(17), "{elapsed:?}");
    check_review_report(&report);
    // The record tells what the dry run did: fifteen steps and no tool call.
    let project = env.run_in(repo.path(), &["project_id"]).success();
    let path = env.home().join(".git-agent").join(project.trim()).join("background").join(format!("{review}.json"));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(stored["terminal"]["value"]["tool_calls"], 0, "a dry run calls no tool");
    assert_eq!(stored["terminal"]["seq"], 16, "fifteen dry-run phases, then the terminal event");
    let run = env.run_in(repo.path(), &["review", "--wait", &review]);
    assert_eq!(run.success(), report, "--wait is repeatable");
    assert_eq!(run.stderr, "");

    let simplified = env.run_in(repo.path(), &["simplify", "--wait", &simplify]);
    let text = simplified.success();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["opportunities"], Value::Array(vec![]));

    // The record survives the daemon: stop it, wait from the record...
    let stop = env.gitagentd(&["stop"]).output().unwrap();
    assert!(stop.status.success());
    assert_eq!(env.daemon_pid(), None);
    let from_record = env.run_in(env.work().as_path(), &["review", "--wait", &review]);
    assert_eq!(from_record.success(), report);
    assert_eq!(env.daemon_pid(), None, "--wait starts no daemon");
    // ... and through a new daemon.
    env.run_in(env.work().as_path(), &["project_id"]).success();
    assert!(env.daemon_pid().is_some());
    assert_eq!(env.run_in(env.work().as_path(), &["review", "--wait", &review]).success(), report);
}

#[test]
fn a_killed_daemon_leaves_a_dead_producer() {
    let env = TestEnv::new();
    let repo = dirty_repo(&env);
    let id = launched(&env.run_in(repo.path(), &["review", "--dry-run"]), "review");
    let pid = env.daemon_pid().unwrap();
    // SAFETY: plain kill(2) on the daemon this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    assert!(wait_until(DEADLINE, || env.daemon_pid() != Some(pid)));
    let run = env.run_in(repo.path(), &["review", "--wait", &id]);
    let stderr = run.failure();
    assert!(stderr.contains(&format!("producer PID {pid} is not running")), "{stderr}");
    // A new daemon gives the same answer.
    env.run_in(repo.path(), &["project_id"]).success();
    let stderr = env.run_in(repo.path(), &["review", "--wait", &id]).failure().to_string();
    assert!(stderr.contains("is not running"), "{stderr}");
}

#[test]
fn wait_failures_keep_stdout_empty() {
    let env = TestEnv::new();
    let repo = dirty_repo(&env);
    // Without provider credentials a real inspection fails as a task.
    let id = launched(&env.run_in(repo.path(), &["review", "--fast", "--depth", "fast"]), "review");
    let stderr = env.run_in(repo.path(), &["review", "--wait", &id]).failure().to_string();
    assert!(stderr.contains("failed: no provider credentials"), "{stderr}");
    let stderr = env.run_in(repo.path(), &["simplify", "--wait", &id]).failure().to_string();
    assert!(stderr.contains(&format!("background task {id} belongs to review, not simplify")), "{stderr}");
    let stderr = env.run_in(repo.path(), &["review", "--wait", "DEFGHIJKLMNOPQRSTUVWXYZABC"]).failure().to_string();
    assert!(stderr.contains("unknown background task DEFGHIJKLMNOPQRSTUVWXYZABC"), "{stderr}");
    let stderr = env.run_in(repo.path(), &["review", "--wait", "../escape"]).failure().to_string();
    assert!(stderr.contains("invalid background task ID"), "{stderr}");

    // A corrupt record.
    let project = env.run_in(repo.path(), &["project_id"]).success();
    let corrupt = "CORRUPTCORRUPTCORRUPTCORRU";
    let dir = env.home().join(".git-agent").join(project.trim()).join("background");
    std::fs::write(dir.join(format!("{corrupt}.json")), "{\"version\":4,").unwrap();
    let stderr = env.run_in(repo.path(), &["review", "--wait", corrupt]).failure().to_string();
    assert!(stderr.contains("is corrupt"), "{stderr}");
    // Without a daemon, the record reader says the same.
    env.gitagentd(&["stop"]).output().unwrap();
    let stderr = env.run_in(repo.path(), &["review", "--wait", corrupt]).failure().to_string();
    assert!(stderr.contains("is corrupt"), "{stderr}");
    let stderr = env.run_in(repo.path(), &["review", "--wait", &id]).failure().to_string();
    assert!(stderr.contains("no provider credentials"), "{stderr}");
}

/// `--wait` prints the stored report text byte for byte, whatever key
/// order and spacing its writer used: a report stored as a JSON value (the
/// original's records) and one stored as a JSON string, through the daemon
/// and from the record alone.
#[test]
fn wait_prints_a_hand_written_report_byte_for_byte() {
    let env = TestEnv::new();
    let repo = dirty_repo(&env);
    let project = env.run_in(repo.path(), &["project_id"]).success();
    let dir = env.home().join(".git-agent").join(project.trim()).join("background");
    std::fs::create_dir_all(&dir).unwrap();
    let object = "{\"summary\" : \"Fine.\",  \"recommendation\":\"APPROVE\",\n \"findings\":[ ],\"checks\":[]}";
    let text = r#"{ "findings": [], "summary": "Also fine.", "recommendation": "APPROVE" }"#;
    let cases = [
        ("OBJECTOBJECTOBJECTOBJECTAB", 1, object.to_string(), object),
        ("STRINGSTRINGSTRINGSTRINGAB", 3, serde_json::to_string(text).unwrap(), text),
    ];
    for (id, version, stored, _) in &cases {
        let record = format!(
            r#"{{"version":{version},"id":"{id}","command":"review","pid":1,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:06Z","terminal":{{"seq":3,"at":"2026-01-02T03:04:06Z","kind":"final","value":{{"text": {stored},"tool_calls":2}}}}}}"#
        );
        std::fs::write(dir.join(format!("{id}.json")), record).unwrap();
    }
    for (id, _, _, printed) in &cases {
        let run = env.run_in(repo.path(), &["review", "--wait", id]);
        assert_eq!(run.success(), format!("{printed}\n"), "through the daemon");
        assert_eq!(run.stderr, "");
    }
    env.gitagentd(&["stop"]).output().unwrap();
    for (id, _, _, printed) in &cases {
        assert_eq!(
            env.run_in(repo.path(), &["review", "--wait", id]).success(),
            format!("{printed}\n"),
            "from the record"
        );
    }
}

#[test]
fn launch_failures_and_usage_errors() {
    let env = TestEnv::new();
    let repo = env.repo("clean");
    repo.write("a.txt", "a\n");
    repo.commit_all("initial");
    let stderr = env.run_in(repo.path(), &["review"]).failure().to_string();
    assert!(stderr.contains("uncommitted mode requires changed files"), "{stderr}");
    let stderr = env.run_in(repo.path(), &["simplify", "--staged", "--dry-run"]).failure().to_string();
    assert!(stderr.contains("staged mode requires changed files"), "{stderr}");
    for args in [
        &["review", "--wait", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "--staged"][..],
        &["review", "--depth", "fast", "--max-steps", "3"],
        &["simplify", "--codebase", "--staged"],
        &["review", "--low", "--high"],
    ] {
        let run = env.run_in(repo.path(), args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    // Codebase mode needs no change.
    let id = launched(&env.run_in(repo.path(), &["review", "--codebase"]), "review");
    assert!(env.run_in(repo.path(), &["review", "--wait", &id]).failure().contains("no provider credentials"));
}

#[test]
fn help_agent_launches_nothing() {
    let env = TestEnv::new();
    let repo = dirty_repo(&env);
    for command in ["review", "simplify"] {
        let run = env.run_in(repo.path(), &[command, "--help-agent"]);
        let help = run.success();
        assert!(help.starts_with(&format!("Usage: git-agent {command} [--codebase|--uncommitted|--staged]")), "{help}");
        assert!(help.contains("--low | --medium | --high | --xhigh"));
        assert!(!help.contains("--dry-run") && !help.contains("--wait"));
    }
    assert_eq!(env.daemon_pid(), None, "no daemon was needed");
    assert!(!env.home().join(".git-agent").exists(), "no task record was created");
}

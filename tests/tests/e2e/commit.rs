//! `git-agent commit [--amend]` end to end: the human console trace on
//! stdout while generating, then Git's own commit summary; the commit's
//! message is the shaped output; a failing hook fails the command with the
//! generated message in the error; an amend keeps the original author.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, TestEnv};

fn setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.staged_repo();
    (env, fake, repo)
}

fn reply(fake: &FakeOpenAi, text: &str) {
    fake.push(Reply::Events(events::text_reply(text, events::usage(3, 0, 2))));
}

#[test]
fn commit_streams_the_trace_then_prints_gits_summary_last() {
    let (env, fake, repo) = setup();
    reply(&fake, "fix: return the right answer\n\nThe answer\nwas off by one.");
    let run = env.run_in(repo.path(), &["commit"]);
    let stdout = run.success();
    let shaped = "fix: return the right answer\n\nThe answer was off by one.";
    assert_eq!(repo.git(&["log", "-1", "--format=%B"]).trim_end(), shaped, "the commit carries the shaped message");

    let lines: Vec<&str> = stdout.lines().collect();
    let summary = lines.iter().position(|line| line.starts_with("[main ")).expect("git's summary is printed");
    assert!(lines[summary].ends_with("] fix: return the right answer"), "{stdout}");
    assert!(lines[summary + 1..].iter().all(|line| line.starts_with(' ')), "the summary comes last: {stdout}");
    let trace = &lines[..summary];
    for kind in ["session", "request", "response", "final"] {
        assert!(trace.iter().any(|line| line.contains(&format!(" INF {kind}"))), "{kind} missing: {stdout}");
    }
    assert!(trace.iter().all(|line| !line.contains('\x1b')), "no colour off a terminal");
    assert!(!stdout.contains("sk-e2e-secret-key") && !run.stderr.contains("sk-e2e-secret-key"));
    assert!(run.stderr.contains("llm.usage"), "usage stays on stderr: {}", run.stderr);
}

#[test]
fn a_failing_pre_commit_hook_fails_with_the_generated_message() {
    let (env, fake, repo) = setup();
    let hook = repo.path().join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho 'lint failed: src/lib.rs' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    reply(&fake, "fix: return the right answer");
    let head = repo.git(&["rev-parse", "HEAD"]);
    let run = env.run_in(repo.path(), &["commit"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("lint failed: src/lib.rs"), "git's error: {}", run.stderr);
    assert!(run.stderr.contains("fix: return the right answer"), "the generated message: {}", run.stderr);
    assert!(run.stdout_text().contains(" INF final"), "the trace stays on stdout");
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head, "nothing was committed");
}

#[test]
fn commit_amend_keeps_the_author_and_the_subject() {
    let (env, fake, repo) = setup();
    repo.git(&["commit", "-q", "--author", "Original Author <original@example.test>", "-m", "fix: answer 42"]);
    repo.write("src/lib.rs", "/// The answer.\npub fn answer() -> u32 {\n    42\n}\n");
    repo.git(&["add", "src/lib.rs"]);
    reply(&fake, "fix: answer 42\n\nDocument the function while returning 42.");
    let stdout = env.run_in(repo.path(), &["commit", "--amend"]).success();
    assert!(stdout.lines().any(|line| line.starts_with("[main ") && line.ends_with("] fix: answer 42")), "{stdout}");
    assert_eq!(repo.git(&["log", "-1", "--format=%an|%cn"]).trim(), "Original Author|Test Committer");
    assert_eq!(
        repo.git(&["log", "-1", "--format=%B"]).trim_end(),
        "fix: answer 42\n\nDocument the function while returning 42."
    );
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]).trim(), "2", "amended, not added");
    assert!(repo.git(&["show", "HEAD", "--format="]).contains("+/// The answer."));
}

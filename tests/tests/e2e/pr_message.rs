//! `git-agent pr-message` end to end: a clone of a bare `origin` with a
//! feature branch, the real binaries and the fake provider: stdout is the
//! shaped message only, the request carries the prepared branch context
//! and no tool but the skill tools, one repair pass; and the errors that
//! come before any model request (no `origin/HEAD`, nothing committed on
//! the branch).

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, TestEnv};
use std::os::unix::fs::PermissionsExt;

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

/// A clone whose `feature` branch has two commits on top of `origin/HEAD`,
/// and a fake provider configured for it.
fn feature_branch() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    let clone = clone_of_bare_origin(&env);
    clone.git(&["remote", "set-head", "origin", "--auto"]);
    clone.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n\npub fn two() -> u32 {\n    2\n}\n");
    clone.commit_all("feat: add two (T42)");
    clone.write("docs/two.md", "Two.\n");
    clone.commit_all("docs: describe two");
    clone.write("uncommitted.txt", "staged, not part of the branch\n");
    clone.git(&["add", "uncommitted.txt"]);
    (env, fake, clone)
}

#[test]
fn prints_only_the_shaped_message_from_the_prepared_branch_context() {
    let (env, fake, clone) = feature_branch();
    let answer = "feat: add two\n\nAdd two() next to one() and document it\nfor callers of the second step.";
    fake.push(Reply::Events(events::text_reply(answer, events::usage(200, 0, 30))));
    let run = env.run_in(clone.path(), &["pr-message", "--debug"]);
    assert_eq!(
        run.success(),
        "feat: add two (T42)\n\nAdd two() next to one() and document it for callers of the second step.\n",
        "reflowed, with the task id of the branch commit of that subject restored"
    );
    assert!(
        run.stderr
            .starts_with("pr-message: prepared origin/HEAD..HEAD against origin/main (2 paths, 2 branch commits,"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("llm.usage step=1 input_tokens=200"), "{}", run.stderr);
    assert!(!run.stderr.contains("sk-e2e-secret-key"));

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].body.get("tools").is_none(), "no repository tools without skills-mgr: {}", requests[0].body);
    assert!(requests[0].body.get("text").and_then(|text| text.get("format")).is_none());
    let texts = requests[0].input_texts();
    let user = texts.iter().find(|text| text.contains("<prepared_pr_context>")).expect("the prepared context frame");
    for expected in [
        r#""range": "origin/HEAD..HEAD""#,
        r#""base_branch": "origin/main""#,
        r#""src/lib.rs""#,
        r#""docs/two.md""#,
        r#""summary": "feat: add two (T42)""#,
        r#""summary": "feat: add one""#,
        "+pub fn two() -> u32 {",
    ] {
        assert!(user.contains(expected), "{expected} missing from the prompt:\n{user}");
    }
    assert!(!user.contains("uncommitted.txt"), "staged work is not part of the branch");
    assert!(texts.iter().any(|text| text.contains("<command>pr-message</command>")));
}

#[test]
fn only_skill_tools_are_offered() {
    let (mut env, fake, clone) = feature_branch();
    let bin = env.work().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("skills-mgr");
    std::fs::write(&script, "#!/bin/sh\nprintf '## Skills\\n\\n- style: how we write messages\\n'\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.set_env("PATH", &format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()));
    fake.push(Reply::Events(events::text_reply("feat: add two", events::usage(1, 0, 1))));
    assert_eq!(env.run_in(clone.path(), &["pr-message"]).success(), "feat: add two (T42)\n");
    let request = &fake.requests()[0];
    assert_eq!(request.tool_names(), ["skills_read"]);
    assert!(request.input_texts().iter().any(|text| text.contains("- style: how we write messages")));
}

#[test]
fn an_invalid_answer_is_repaired_once() {
    let (env, fake, clone) = feature_branch();
    fake.push(Reply::Events(events::text_reply("Here is the message:\n```\nfeat: x\n```", events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::text_reply("feat: add the two helper", events::usage(1, 0, 1))));
    let run = env.run_in(clone.path(), &["pr-message"]);
    assert_eq!(run.success(), "feat: add the two helper\n");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let repair = requests[1].input_texts().last().cloned().unwrap_or_default();
    assert!(repair.contains("code fence"), "{repair}");
}

#[test]
fn an_answer_invalid_twice_fails_with_nothing_on_stdout() {
    let (env, fake, clone) = feature_branch();
    fake.push(Reply::Events(events::text_reply("```feat: x```", events::usage(1, 0, 1))));
    fake.push(Reply::Events(events::text_reply("Sure! ```feat: x```", events::usage(1, 0, 1))));
    let run = env.run_in(clone.path(), &["pr-message"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert!(stderr.contains("failed validation after one repair"), "{stderr}");
    assert_eq!(fake.requests().len(), 2, "exactly one repair pass");
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

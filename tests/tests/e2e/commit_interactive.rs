//! `git-agent commit --interactive` in a real pseudo-terminal: the message
//! shows while the provider is still streaming it, then one keystroke
//! accepts (the commit `commit` would make), edits (`git commit -e`, the
//! user's `GIT_EDITOR`), regenerates (with a hint joined to the prompt) or
//! quits (nothing changes). Off a terminal it is a usage error.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, Terminal, TestEnv};

fn setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-interactive-key");
    let repo = env.staged_repo();
    (env, fake, repo)
}

fn reply(fake: &FakeOpenAi, text: &str) {
    fake.push(Reply::Events(events::text_reply(text, events::usage(3, 0, 2))));
}

/// A reply whose first half streams at once and whose second half waits
/// for [`FakeOpenAi::release`].
fn paused_reply(fake: &FakeOpenAi, text: &str) {
    let mut all = events::text_reply(text, events::usage(3, 0, 2));
    let rest = all.split_off(3);
    fake.push(Reply::Paused(all, rest));
}

fn start(env: &TestEnv, repo: &GitRepo, args: &[&str], editor: &str) -> Terminal {
    let mut command = env.git_agent_in(repo.path(), args);
    command.env("GIT_EDITOR", editor).env("TERM", "dumb").env("NO_COLOR", "1");
    Terminal::spawn(command)
}

const PROMPT: &str = "[a]ccept, [e]dit, [r]egenerate, [q]uit: ";

fn last_message(repo: &GitRepo) -> String {
    repo.git(&["log", "-1", "--format=%B"]).trim_end().to_string()
}

#[test]
fn the_message_streams_then_accept_commits_it_with_the_trace_and_gits_summary() {
    let (env, fake, repo) = setup();
    paused_reply(&fake, "fix: return the right answer");
    let mut terminal = start(&env, &repo, &["commit", "--interactive"], "false");
    // The first half is on screen while the provider still holds the rest.
    let streamed = terminal.expect("  fix: return t");
    assert!(!terminal.screen().contains(PROMPT));
    fake.release();
    let prompt = terminal.expect_after(streamed, PROMPT);
    let screen = terminal.screen();
    assert!(screen.contains("  fix: return the right answer\r\n"), "the streamed text, whole: {screen}");
    assert!(screen.contains(" INF session") && screen.contains(" INF final"), "the trace: {screen}");
    assert!(screen[..prompt].contains("\r\n    fix: return the right answer\r\n\r\n"), "the message, shown: {screen}");
    terminal.send(b"a");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen[prompt..].contains("accept\r\n[main "), "git's summary after the answer: {screen}");
    assert_eq!(last_message(&repo), "fix: return the right answer");
    assert!(!screen.contains("sk-e2e-interactive-key"));
}

#[test]
fn edit_opens_the_users_editor_through_git_commit() {
    let (env, fake, repo) = setup();
    reply(&fake, "fix: return the right answer");
    let editor = "f() { sed -i '1s/$/ (edited)/' \"$1\"; }; f";
    let mut terminal = start(&env, &repo, &["commit", "-i"], editor);
    terminal.expect(PROMPT);
    terminal.send(b"e");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(last_message(&repo), "fix: return the right answer (edited)");
}

#[test]
fn regenerate_asks_again_with_the_hint_joined_to_the_prompt() {
    let (env, fake, repo) = setup();
    reply(&fake, "fix: change the answer");
    reply(&fake, "fix: return 42 instead of 41");
    let mut terminal = start(&env, &repo, &["commit", "-i", "--append-prompt", "mention numbers"], "false");
    let first = terminal.expect(PROMPT);
    terminal.send(b"r");
    let hint = terminal.expect_after(first, "Hint for the model (Enter for none): ");
    terminal.send(b"say which numbers\r");
    let second = terminal.expect_after(hint, PROMPT);
    assert!(terminal.screen()[hint..second].contains("  fix: return 42 instead of 41"), "{}", terminal.screen());
    terminal.send(b"a");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(last_message(&repo), "fix: return 42 instead of 41");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let user = requests[1].input_texts().join("\n");
    assert!(user.contains("<operator_hint>\nmention numbers\nsay which numbers\n</operator_hint>"), "{user}");
    assert!(!requests[0].input_texts().join("\n").contains("say which numbers"));
}

#[test]
fn quit_leaves_the_index_and_the_work_tree_as_they_were() {
    let (env, fake, repo) = setup();
    repo.write("untracked.txt", "u\n");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    43\n}\n");
    let before = (
        repo.git(&["rev-parse", "HEAD"]),
        repo.git(&["status", "--porcelain=v2", "--untracked-files=all"]),
        std::fs::read(repo.path().join(".git/index")).unwrap(),
        std::fs::read(repo.path().join("src/lib.rs")).unwrap(),
    );
    reply(&fake, "fix: return the right answer");
    let mut terminal = start(&env, &repo, &["commit", "-i"], "false");
    terminal.expect(PROMPT);
    terminal.send(b"q");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(1), "{screen}");
    assert!(screen.contains("quit\r\nNothing was committed."), "{screen}");
    let after = (
        repo.git(&["rev-parse", "HEAD"]),
        repo.git(&["status", "--porcelain=v2", "--untracked-files=all"]),
        std::fs::read(repo.path().join(".git/index")).unwrap(),
        std::fs::read(repo.path().join("src/lib.rs")).unwrap(),
    );
    assert!(before == after, "HEAD, status, index and files are unchanged");
}

#[test]
fn a_failing_hook_fails_the_interactive_commit_as_it_fails_commit() {
    let (env, fake, repo) = setup();
    let source = env.work().join("pre-commit");
    std::fs::write(&source, "#!/bin/sh\necho 'lint failed: src/lib.rs' >&2\nexit 1\n").unwrap();
    let hook = repo.path().join(".git/hooks/pre-commit");
    let installed = std::process::Command::new("install").arg("-m").arg("755").arg(&source).arg(&hook).status();
    assert!(installed.is_ok_and(|status| status.success()));
    reply(&fake, "fix: return the right answer");
    let mut terminal = start(&env, &repo, &["commit", "-i"], "false");
    terminal.expect(PROMPT);
    terminal.send(b"a");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(1), "{screen}");
    assert!(screen.contains("lint failed: src/lib.rs") && screen.contains("git commit failed"), "{screen}");
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]).trim(), "1");
}

#[test]
fn off_a_terminal_interactive_is_a_usage_error() {
    let (env, fake, repo) = setup();
    let run = env.run_in(repo.path(), &["commit", "--interactive"]);
    assert_eq!(run.code, Some(2));
    let stderr = run.failure();
    assert!(stderr.contains("--interactive needs a terminal, and neither stdin nor stdout is a terminal"), "{stderr}");
    assert!(fake.requests().is_empty());
}

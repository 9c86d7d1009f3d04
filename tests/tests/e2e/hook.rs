//! `git-agent hook install | uninstall | status` and the hook itself, end to
//! end: real `git commit` runs with the hook installed, against the fake
//! provider, with no terminal (as a GUI client runs hooks: stdin is
//! /dev/null, stdout and stderr are pipes). `GIT_EDITOR` copies the
//! message file git would show the user, so the test sees what the editor
//! would.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, Run, TestEnv, binary};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

struct Setup {
    env: TestEnv,
    fake: FakeOpenAi,
    repo: GitRepo,
}

fn setup() -> Setup {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-hook-key");
    let repo = env.staged_repo();
    Setup { env, fake, repo }
}

fn reply(fake: &FakeOpenAi, text: &str) {
    fake.push(Reply::Events(events::text_reply(text, events::usage(3, 0, 2))));
}

/// Where the editor leaves its copy of the message file.
fn capture_path(repo: &GitRepo) -> PathBuf {
    repo.path().parent().unwrap().join(format!("{}-editor.txt", repo.path().file_name().unwrap().to_string_lossy()))
}

/// `git <args>` in `dir` with an editor that copies the message file
/// (and changes nothing), no terminal; extra environment from `env`.
fn git_commit_in(repo: &GitRepo, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let capture = capture_path(repo);
    let _ = std::fs::remove_file(&capture);
    let mut command = repo.git_command(args);
    command
        .current_dir(dir)
        .env("GIT_EDITOR", format!("f() {{ cp \"$1\" '{}'; }}; f", capture.display()))
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run git")
}

fn git_commit(repo: &GitRepo, args: &[&str]) -> Output {
    git_commit_in(repo, repo.path(), args, &[])
}

fn editor_saw(repo: &GitRepo) -> String {
    std::fs::read_to_string(capture_path(repo)).unwrap_or_default()
}

fn last_message(repo: &GitRepo) -> String {
    repo.git(&["log", "-1", "--format=%B"]).trim_end().to_string()
}

fn install(setup: &Setup, dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["hook", "install"];
    args.extend_from_slice(extra);
    setup.env.run_in(dir, &args)
}

/// Writes another program's hook from a child process, so no descriptor of
/// this (multi-threaded) test process is open for writing on it when git
/// runs it (ETXTBSY).
fn write_foreign_hook(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = std::process::Command::new("sh")
        .args(["-c", "printf '#!/bin/sh\\necho foreign-hook-ran >&2\\n' > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn stderr_text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn plain_git_commit_opens_the_editor_with_the_generated_message_above_gits_comments() {
    let setup = setup();
    let repo = &setup.repo;
    let line = install(&setup, repo.path(), &[]).success();
    let hook = repo.path().join(".git/hooks/prepare-commit-msg");
    assert_eq!(line, format!("installed {}\n", hook.display()));
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&hook).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(setup.env.run_in(repo.path(), &["hook", "status"]).success(), format!("installed {}\n", hook.display()));

    reply(&setup.fake, "fix: return the right answer\n\nThe answer\nwas off by one.");
    let output = git_commit(repo, &["commit"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let shown = editor_saw(repo);
    assert!(
        shown.starts_with(
            "fix: return the right answer\n\nThe answer was off by one.\n\n# Please enter the commit message"
        ),
        "the generated message, then git's comment lines: {shown:?}"
    );
    assert_eq!(last_message(repo), "fix: return the right answer\n\nThe answer was off by one.");
    assert_eq!(setup.fake.requests().len(), 1);
    assert!(!stderr_text(&output).contains("git-agent"), "quiet on success: {}", stderr_text(&output));
}

#[test]
fn the_comment_character_git_is_configured_with_marks_its_comment_lines() {
    let setup = setup();
    let repo = &setup.repo;
    repo.git(&["config", "core.commentChar", ";"]);
    install(&setup, repo.path(), &[]).success();
    reply(&setup.fake, "fix: return the right answer");
    let output = git_commit(repo, &["commit"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let shown = editor_saw(repo);
    assert!(
        shown.starts_with("fix: return the right answer\n\n; Please enter the commit message"),
        "git's ';' lines are comments, so the message is written above them: {shown:?}"
    );
    assert_eq!(setup.fake.requests().len(), 1);
}

#[test]
fn the_hook_stays_out_when_git_has_a_message() {
    let setup = setup();
    let repo = &setup.repo;
    install(&setup, repo.path(), &[]).success();

    // -m and -F (source "message").
    assert!(git_commit(repo, &["commit", "-q", "-m", "feat: typed by hand"]).status.success());
    assert_eq!(last_message(repo), "feat: typed by hand");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    43\n}\n");
    repo.write("../message.txt", "fix: from a file\n");
    repo.git(&["add", "src/lib.rs"]);
    assert!(git_commit(repo, &["commit", "-q", "-F", "../message.txt"]).status.success());
    assert_eq!(last_message(repo), "fix: from a file");

    // amend (source "commit"), -c.
    let output = git_commit(repo, &["commit", "-q", "--amend"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert!(editor_saw(repo).starts_with("fix: from a file\n"), "{}", editor_saw(repo));
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    44\n}\n");
    repo.git(&["add", "src/lib.rs"]);
    assert!(git_commit(repo, &["commit", "-q", "-c", "HEAD"]).status.success());
    assert_eq!(last_message(repo), "fix: from a file");

    // A template (source "template").
    repo.write("../template.txt", "chore: from the template\n");
    repo.git(&["config", "commit.template", "../template.txt"]);
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    45\n}\n");
    repo.git(&["add", "src/lib.rs"]);
    let output = git_commit(repo, &["commit", "-q"]);
    assert!(!output.status.success(), "an unchanged template aborts the commit, as git does");
    assert!(editor_saw(repo).starts_with("chore: from the template\n"), "{}", editor_saw(repo));
    repo.git(&["config", "--unset", "commit.template"]);
    repo.git(&["commit", "-q", "--no-verify", "-m", "chore: 45"]);

    // A merge and a squash.
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.write("side.txt", "side\n");
    repo.commit_all("feat: side");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("main.txt", "main\n");
    repo.commit_all("feat: main");
    let output = git_commit(repo, &["merge", "-q", "--no-ff", "--edit", "side"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert!(editor_saw(repo).starts_with("Merge branch 'side'"), "{}", editor_saw(repo));
    repo.git(&["checkout", "-q", "-b", "squashed", "HEAD~1"]);
    repo.git(&["merge", "-q", "--squash", "side"]);
    let output = git_commit(repo, &["commit", "-q"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert!(editor_saw(repo).starts_with("Squashed commit of the following"), "{}", editor_saw(repo));

    assert!(setup.fake.requests().is_empty(), "no request was made");
}

#[test]
fn the_hook_stays_out_of_rebase_and_cherry_pick_sequences() {
    let setup = setup();
    let repo = &setup.repo;
    repo.git(&["commit", "-q", "-m", "fix: 42"]);
    install(&setup, repo.path(), &[]).success();

    // A cherry-pick stopped on a conflict: the user resolves and commits.
    repo.git(&["checkout", "-q", "-b", "other", "HEAD~1"]);
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    40\n}\n");
    repo.commit_all("fix: 40");
    let picked = repo.git_command(["cherry-pick", "main"]).output().unwrap();
    assert!(!picked.status.success(), "the cherry-pick conflicts");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    repo.git(&["add", "src/lib.rs"]);
    let output = git_commit(repo, &["commit", "-q"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert_eq!(last_message(repo), "fix: 42");
    assert!(!repo.path().join(".git/CHERRY_PICK_HEAD").exists());

    // A rebase stopped at an `edit`: a new commit made there is the user's.
    let rebase = repo
        .git_command(["rebase", "-q", "-i", "HEAD~1"])
        .env("GIT_SEQUENCE_EDITOR", "sed -i 's/^pick/edit/'")
        .output()
        .unwrap();
    assert!(rebase.status.success(), "{}", stderr_text(&rebase));
    assert!(repo.path().join(".git/rebase-merge").exists(), "the rebase stopped");
    repo.write("new.txt", "new\n");
    repo.git(&["add", "new.txt"]);
    let output = git_commit(repo, &["commit", "-q"]);
    assert!(!output.status.success(), "git aborts on the empty message, as without the hook");
    assert!(!editor_saw(repo).lines().any(|line| !line.starts_with('#') && !line.is_empty()), "{}", editor_saw(repo));
    repo.git(&["rebase", "--abort"]);

    assert!(setup.fake.requests().is_empty(), "no request was made");
}

/// Every failure leaves git's message file as it was, says why in one line
/// on stderr, and lets git go on: here git aborts on the empty message, as
/// it would without the hook.
#[track_caller]
fn assert_left_empty(repo: &GitRepo, output: &Output, reason: &str) {
    let stderr = stderr_text(output);
    let ours: Vec<&str> = stderr.lines().filter(|line| line.starts_with("git-agent: ")).collect();
    assert_eq!(ours.len(), 1, "one line from the hook: {stderr}");
    assert!(ours[0].contains(reason) && ours[0].ends_with("the commit message is left for you to write"), "{stderr}");
    assert!(stderr.contains("Aborting commit due to empty commit message"), "{stderr}");
    let shown = editor_saw(repo);
    assert!(shown.starts_with("\n# Please enter the commit message"), "git's own file: {shown:?}");
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]).trim(), "1");
    assert!(!stderr.contains("sk-e2e-hook-key"));
}

#[test]
fn a_missing_key_or_a_provider_error_leaves_the_message_empty() {
    let setup = setup();
    let repo = &setup.repo;
    install(&setup, repo.path(), &[]).success();

    let output = git_commit_in(repo, repo.path(), &["commit"], &[("OPENAI_API_KEY", "")]);
    assert_left_empty(repo, &output, "no provider credentials");
    assert!(setup.fake.requests().is_empty());

    for _ in 0..2 {
        setup.fake.push(Reply::Status(500, r#"{"error":{"message":"the model is overloaded"}}"#.into()));
    }
    let output = git_commit(repo, &["commit"]);
    assert_left_empty(repo, &output, "the model is overloaded");
}

#[test]
fn a_daemon_that_cannot_start_leaves_the_message_empty() {
    let setup = setup();
    let repo = &setup.repo;
    // A git-agent with no gitagentd beside it or on PATH.
    let alone = setup.env.root().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let copied = std::process::Command::new("cp").arg(binary("git-agent")).arg(&alone).status().unwrap();
    assert!(copied.success());
    let mut command = std::process::Command::new(alone.join("git-agent"));
    setup.env.apply(&mut command);
    command.env("PATH", "/usr/bin:/bin").env("PWD", repo.path()).current_dir(repo.path()).stdin(Stdio::null());
    let installed = Run::from(command.args(["hook", "install"]).output().unwrap());
    installed.success();

    let output = git_commit_in(repo, repo.path(), &["commit"], &[("PATH", "/usr/bin:/bin")]);
    assert_left_empty(repo, &output, "gitagentd");
}

#[test]
fn a_slow_provider_is_given_up_after_the_configured_time() {
    let setup = setup();
    let repo = &setup.repo;
    install(&setup, repo.path(), &[]).success();
    repo.git(&["config", "git-agent.hookTimeout", "1s"]);
    setup.fake.push(Reply::Held(events::text_reply("fix: too late", events::usage(3, 0, 2))));
    let started = std::time::Instant::now();
    let output = git_commit(repo, &["commit"]);
    assert_left_empty(repo, &output, "no message within 1s (git-agent.hookTimeout)");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn core_hooks_path_and_linked_worktrees_are_honoured() {
    let setup = setup();
    let repo = &setup.repo;
    repo.git(&["config", "core.hooksPath", ".githooks"]);
    std::fs::create_dir_all(repo.path().join("src/deep")).unwrap();
    let hook = repo.path().join(".githooks/prepare-commit-msg");
    let line = install(&setup, &repo.path().join("src/deep"), &[]).success();
    assert_eq!(
        line,
        format!("installed {}\n", repo.path().join("src/deep/../../.githooks/prepare-commit-msg").display())
    );
    assert!(hook.is_file() && !repo.path().join(".git/hooks/prepare-commit-msg").exists());
    reply(&setup.fake, "fix: return 42");
    let output = git_commit(repo, &["commit"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert_eq!(last_message(repo), "fix: return 42");
    assert!(setup.env.run_in(repo.path(), &["hook", "uninstall"]).success().starts_with("removed "));
    assert!(!hook.exists());

    // A linked worktree's hooks are the common folder's.
    repo.git(&["config", "--unset", "core.hooksPath"]);
    let worktree = setup.env.work().join("linked");
    repo.git(&["worktree", "add", "-q", worktree.to_str().unwrap()]);
    install(&setup, &worktree, &[]).success();
    assert!(repo.path().join(".git/hooks/prepare-commit-msg").is_file());
    let status = setup.env.run_in(repo.path(), &["hook", "status"]).success();
    assert!(status.starts_with("installed "), "{status}");
    std::fs::write(worktree.join("w.txt"), "w\n").unwrap();
    repo.git_command(["add", "w.txt"]).current_dir(&worktree).output().unwrap();
    reply(&setup.fake, "feat: add w");
    let output = git_commit_in(repo, &worktree, &["commit"], &[]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let subject = repo.git_command(["log", "-1", "--format=%s"]).current_dir(&worktree).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&subject.stdout).trim(), "feat: add w");
}

#[test]
fn a_foreign_hook_is_never_replaced_or_removed_without_force() {
    let setup = setup();
    let repo = &setup.repo;
    let hook = repo.path().join(".git/hooks/prepare-commit-msg");
    write_foreign_hook(&hook);
    let foreign = std::fs::read(&hook).unwrap();

    let run = install(&setup, repo.path(), &[]);
    let stderr = run.failure();
    assert!(stderr.contains("was not written by git-agent") && stderr.contains("--force"), "{stderr}");
    assert_eq!(setup.env.run_in(repo.path(), &["hook", "status"]).success(), format!("foreign {}\n", hook.display()));
    let run = setup.env.run_in(repo.path(), &["hook", "uninstall"]);
    assert!(run.failure().contains("was not written by git-agent"));
    assert_eq!(std::fs::read(&hook).unwrap(), foreign, "left as it was");
    let output = git_commit(repo, &["commit", "-q", "-m", "fix: by hand"]);
    assert!(stderr_text(&output).contains("foreign-hook-ran"), "the foreign hook still runs");

    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    43\n}\n");
    repo.git(&["add", "src/lib.rs"]);
    assert_eq!(install(&setup, repo.path(), &["--force"]).success(), format!("replaced {}\n", hook.display()));
    reply(&setup.fake, "fix: return 43");
    let output = git_commit(repo, &["commit"]);
    assert!(output.status.success() && !stderr_text(&output).contains("foreign-hook-ran"), "{}", stderr_text(&output));
    assert_eq!(last_message(repo), "fix: return 43");
    assert_eq!(
        setup.env.run_in(repo.path(), &["hook", "uninstall"]).success(),
        format!("removed {}\n", hook.display())
    );
    assert_eq!(setup.env.run_in(repo.path(), &["hook", "status"]).success(), format!("absent {}\n", hook.display()));
}

#[test]
fn hook_commands_outside_a_repository_fail_clearly() {
    let env = TestEnv::new();
    let run = env.run_in(&env.work(), &["hook", "install"]);
    assert_eq!(run.code, Some(1));
    assert!(run.failure().contains("is not in a Git repository"), "{}", run.stderr);
}

/// `git commit -a` commits a temporary index git names to the hook in
/// `GIT_INDEX_FILE`; the message describes that index, not `.git/index`
/// (which has nothing staged here).
#[test]
fn commit_all_describes_the_index_git_is_about_to_commit() {
    let setup = setup();
    let repo = setup.env.repo("all");
    repo.write("a.txt", "a\n");
    repo.write("b.txt", "b\n");
    repo.commit_all("feat: a and b");
    repo.write("a.txt", "a changed\n");
    repo.write("b.txt", "b changed\n");
    install(&setup, repo.path(), &[]).success();
    reply(&setup.fake, "fix: change a and b");
    let output = git_commit(&repo, &["commit", "-a"]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert_eq!(last_message(&repo), "fix: change a and b");
    let prompt = setup.fake.requests()[0].input_texts().join("\n");
    assert!(prompt.contains("a.txt") && prompt.contains("b changed"), "{prompt}");
}

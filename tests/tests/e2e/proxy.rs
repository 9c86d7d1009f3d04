//! Proxy settings come from the invocation: a request goes through the
//! proxy the caller's `HTTP_PROXY` names, not through one the daemon's
//! own environment names, and not when the caller's `NO_PROXY` matches.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::fake_proxy::FakeProxy;
use git_agent_tests::{GitRepo, TestEnv, wait_until};
use std::process::Stdio;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(20);

/// `commit-msg` in `repo` with `extra` variables in the caller's
/// environment only; returns its message.
fn commit_msg(env: &TestEnv, fake: &FakeOpenAi, repo: &GitRepo, extra: &[(&str, &str)]) -> String {
    fake.push(Reply::Events(events::text_reply("fix: return the right answer", events::usage(1, 0, 1))));
    let mut command = env.git_agent_in(repo.path(), &["commit-msg"]);
    command.envs(extra.iter().copied());
    let output = command.output().expect("run git-agent");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_callers_proxy_variables_decide_and_the_daemons_do_not() {
    let fake = FakeOpenAi::start();
    let proxy = FakeProxy::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-proxy-test");
    let repo = env.staged_repo();
    // The daemon's own environment names the proxy; the callers' decide.
    let mut daemon = env
        .gitagentd(&["serve"])
        .env("HTTP_PROXY", proxy.url())
        .env("http_proxy", proxy.url())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start gitagentd");
    assert!(wait_until(DEADLINE, || env.daemon_pid() == Some(daemon.id())));
    let responses = format!("{}/responses", fake.url());

    assert_eq!(commit_msg(&env, &fake, &repo, &[]), "fix: return the right answer\n");
    assert!(proxy.targets().is_empty(), "the daemon's own HTTP_PROXY was used: {:?}", proxy.targets());

    commit_msg(&env, &fake, &repo, &[("HTTP_PROXY", &proxy.url())]);
    assert_eq!(proxy.targets(), [responses], "the caller's HTTP_PROXY carried the request");

    commit_msg(&env, &fake, &repo, &[("HTTP_PROXY", &proxy.url()), ("NO_PROXY", "127.0.0.1")]);
    assert_eq!(proxy.targets().len(), 1, "NO_PROXY=127.0.0.1 bypasses the proxy: {:?}", proxy.targets());
    assert_eq!(fake.requests().len(), 3, "every request reached the provider");

    let stop = env.gitagentd(&["stop"]).output().expect("run gitagentd stop");
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    let _ = daemon.wait();
}

#[test]
fn an_unusable_proxy_variable_is_a_clear_error() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-proxy-test");
    let repo = env.staged_repo();
    env.set_env("ALL_PROXY", "socks5://user:hunter2@127.0.0.1:1");
    let run = env.run_in(repo.path(), &["commit-msg"]);
    let stderr = run.failure();
    assert!(stderr.contains("ALL_PROXY") && stderr.contains("socks5") && stderr.contains("hint:"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(fake.requests().is_empty());
}

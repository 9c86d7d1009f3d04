//! Benchmark: the two commit workflows a person feels, with a provider that
//! answers at once (the fake OpenAI server) and a warm daemon.
//!
//! - hook: the time from starting `git commit` to the editor opening, in a
//!   repository with the prepare-commit-msg hook installed and in one
//!   without, alternated run by run. The editor records the moment it
//!   starts and exits 1, so git aborts and the next run has the same
//!   staged change.
//! - interactive: the time from the fake provider handing the first half
//!   of the message to its connection to that text showing on
//!   `git-agent commit --interactive`'s pseudo-terminal (each run then
//!   quits without committing).
//!
//!     cargo build --release --bins --features git-agent-tests/bench && target/release/bench-commit-flow [runs]

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, Terminal, TestEnv};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const MESSAGE: &str = "refactor: widen item results";

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(30);
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "bench-key");
    let hooked = staged(&env, "hooked");
    let plain = staged(&env, "plain");
    let installed = env.git_agent_in(hooked.path(), &["hook", "install"]).output().expect("run git-agent");
    assert!(installed.status.success(), "{}", String::from_utf8_lossy(&installed.stderr));

    let stamp = env.work().join("editor-started");
    let (mut with_hook, mut without) = (Vec::new(), Vec::new());
    for run in 0..runs + 3 {
        fake.push(Reply::Events(events::text_reply(MESSAGE, events::usage(10, 0, 5))));
        let hook_time = time_to_editor(&hooked, &stamp);
        let plain_time = time_to_editor(&plain, &stamp);
        if run >= 3 {
            // The first runs start the daemon and warm the page cache.
            with_hook.push(hook_time);
            without.push(plain_time);
        }
    }
    assert_eq!(fake.requests().len(), runs + 3, "every hooked commit asked the provider");
    let differences: Vec<Duration> =
        with_hook.iter().zip(&without).map(|(hook, plain)| hook.saturating_sub(*plain)).collect();
    println!("git commit to the editor, {runs} alternated pairs (ms: median, p90, min, max)");
    println!("  with the hook     {}", summary(&with_hook));
    println!("  without the hook  {}", summary(&without));
    println!("  added by the hook {}", summary(&differences));

    let mut latencies = Vec::new();
    for _ in 0..runs {
        latencies.push(first_token_latency(&env, &fake, &plain));
    }
    println!("commit --interactive, provider's first text to the screen, {runs} runs (ms: median, p90, min, max)");
    println!("  {}", summary(&latencies));
}

/// A repository with one commit and a staged one-line change.
fn staged(env: &TestEnv, name: &str) -> GitRepo {
    let repo = env.repo(name);
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    repo.commit_all("feat: start the project");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    repo.git(&["add", "src/lib.rs"]);
    repo
}

/// Starts `git commit` in `repo` and returns how long until its editor
/// started (the editor writes the time and exits 1: nothing is committed).
fn time_to_editor(repo: &GitRepo, stamp: &Path) -> Duration {
    let _ = std::fs::remove_file(stamp);
    let editor = format!("f() {{ date +%s%N > '{}'; exit 1; }}; f", stamp.display());
    let started = SystemTime::now();
    let output =
        repo.git_command(["commit"]).env("GIT_EDITOR", editor).stdin(Stdio::null()).output().expect("run git commit");
    assert!(!output.status.success(), "the editor aborts the commit");
    let text = std::fs::read_to_string(stamp).expect("the editor ran");
    let nanos: u64 = text.trim().parse().expect("date +%s%N");
    let opened = UNIX_EPOCH + Duration::from_nanos(nanos);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("git-agent:"), "the hook failed: {stderr}");
    opened.duration_since(started).unwrap_or_default()
}

/// One `commit --interactive`: from the fake provider sending the first
/// half of the message to it showing on the terminal.
fn first_token_latency(env: &TestEnv, fake: &FakeOpenAi, repo: &GitRepo) -> Duration {
    let mut all = events::text_reply(MESSAGE, events::usage(10, 0, 5));
    let rest = all.split_off(3);
    let first_half = all[2]["delta"].as_str().expect("the first delta").to_string();
    fake.push(Reply::Paused(all, rest));
    let mut command = env.git_agent_in(repo.path(), &["commit", "-i"]);
    command.env("NO_COLOR", "1").env("TERM", "dumb");
    let mut terminal = Terminal::spawn(command);
    terminal.expect(&format!("  {first_half}"));
    let shown = Instant::now();
    let sent = *fake.paused_sent_at().last().expect("the first half was sent");
    fake.release();
    terminal.expect("[q]uit: ");
    terminal.send(b"q");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(1), "{screen}");
    shown.duration_since(sent)
}

fn summary(times: &[Duration]) -> String {
    let mut ms: Vec<f64> = times.iter().map(|time| time.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    format!("{:.1}, {:.1}, {:.1}, {:.1}", at(0.5), at(0.9), ms[0], ms[ms.len() - 1])
}

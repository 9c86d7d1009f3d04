//! Benchmark: context preparation of `git-agent commit-msg` for a large
//! staged change, side by side with Git on the same repository.
//!
//! The benchmark builds its own repository: 5,000 files of 25 lines in 50
//! folders, committed, then every line of every file rewritten and staged
//! (250,000 changed lines: 125,000 added, 125,000 removed). Each run
//! measures
//!
//! - git-agent: from spawning `git-agent commit-msg` to the moment the
//!   fake provider receives the first request (a condition variable wakes
//!   the benchmark; no polling), with the daemon already running;
//! - Git: `git diff --cached --stat` plus `git diff --cached`, run one
//!   after the other, output read through pipes.
//!
//! The two alternate; medians are printed with their ratio, and the
//! daemon's peak resident memory (VmHWM) after all runs.
//!
//!     cargo build --release --bins && target/release/bench-commit-context [runs]

use git_agent_tests::TestEnv;
use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use std::process::Stdio;
use std::time::{Duration, Instant};

const FILES: usize = 5_000;
const FOLDERS: usize = 50;
const LINES: usize = 25;

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(5);
    // BENCH_NO_REDACT=1: the same runs without the redactor, for its cost.
    let mut args = vec!["commit-msg", "--debug"];
    if std::env::var_os("BENCH_NO_REDACT").is_some() {
        args.push("--no-redact");
    }
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "bench-key");
    let repo = env.repo("bench");
    let write_all = |version: &str| {
        for file in 0..FILES {
            let body: String = (0..LINES)
                .map(|line| format!("let value_{file}_{line} = compute_{version}({line}, {file}); // line {line}\n"))
                .collect();
            repo.write(&format!("module_{:02}/file_{file:05}.rs", file % FOLDERS), &body);
        }
    };
    write_all("before");
    repo.commit_all("feat: add the modules");
    write_all("after");
    repo.git(&["add", "-A"]);
    let numstat = repo.git(&["diff", "--cached", "--numstat"]);
    let files = numstat.lines().count();
    let changed: usize = numstat
        .lines()
        .map(|line| line.split('\t').take(2).filter_map(|n| n.parse::<usize>().ok()).sum::<usize>())
        .sum();
    assert!(files >= 5_000 && changed >= 200_000, "the staged change is large enough");

    let mut ours = Vec::new();
    let mut contexts = Vec::new();
    let mut theirs = Vec::new();
    for run in 0..=runs {
        fake.push(Reply::Events(events::text_reply("refactor: compute values after", events::usage(10, 0, 5))));
        let before = fake.requests().len();
        let started = Instant::now();
        let child = env
            .git_agent_in(repo.path(), &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run git-agent");
        assert!(fake.wait_for_requests(before + 1, Duration::from_secs(300)), "the first request arrives");
        let to_request = started.elapsed();
        let output = child.wait_with_output().expect("git-agent finishes");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let context_ms = timing_field(&String::from_utf8_lossy(&output.stderr), "context_ms");

        let started = Instant::now();
        let stat = repo.git_command(["diff", "--cached", "--stat"]).output().expect("run git diff --stat");
        let diff = repo.git_command(["diff", "--cached"]).output().expect("run git diff");
        let git_time = started.elapsed();
        assert!(stat.status.success() && diff.status.success());
        if run == 0 {
            continue; // warm-up: daemon start, page cache
        }
        ours.push(to_request);
        contexts.push(context_ms);
        theirs.push(git_time);
    }
    let ours = median(ours);
    let theirs = median(theirs);
    contexts.sort_by(f64::total_cmp);
    let pid = env.daemon_pid().expect("the daemon is running");
    let hwm = vm_hwm(pid).expect("the daemon's /proc status has a VmHWM line");
    println!("staged change: {files} files, {changed} changed lines (added + removed); {runs} runs after 1 warm-up");
    println!("{:<58} {:>10}", "measure (median)", "ms");
    println!("{:<58} {:>10.1}", "git-agent commit-msg: start to first provider request", ms(ours));
    println!("{:<58} {:>10.1}", "  of which context preparation in the daemon", contexts[contexts.len() / 2]);
    println!("{:<58} {:>10.1}", "git diff --cached --stat + git diff --cached", ms(theirs));
    println!("{:<58} {:>10.2}", "ratio git-agent / git (goal <= 1.5)", ours.as_secs_f64() / theirs.as_secs_f64());
    println!("daemon peak resident memory (VmHWM): {hwm}");
}

/// A numeric field of the `commit_msg.timing` event on stderr. A missing
/// event or field stops the benchmark instead of printing a made-up figure.
fn timing_field(stderr: &str, key: &str) -> f64 {
    let value = stderr
        .lines()
        .skip_while(|line| !line.contains("commit_msg.timing"))
        .flat_map(|line| line.split_whitespace())
        .find_map(|field| field.strip_prefix(&format!("{key}=")).map(|v| v.trim_matches('"').to_string()))
        .unwrap_or_else(|| panic!("the daemon's --debug output has no commit_msg.timing event with {key}:\n{stderr}"));
    value.parse().unwrap_or_else(|_| panic!("commit_msg.timing {key}={value:?} is not a number"))
}

fn vm_hwm(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix("VmHWM:")).map(|value| value.trim().to_string())
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_fields_are_read_and_a_missing_one_stops_the_benchmark() {
        let stderr = "debug commit_msg.timing\n  context_ms=12.5 total_ms=\"40\"\n";
        assert_eq!(timing_field(stderr, "context_ms"), 12.5);
        assert_eq!(timing_field(stderr, "total_ms"), 40.0);
        assert!(std::panic::catch_unwind(|| timing_field(stderr, "assembly_ms")).is_err());
        assert!(std::panic::catch_unwind(|| timing_field("no event here", "context_ms")).is_err());
    }
}

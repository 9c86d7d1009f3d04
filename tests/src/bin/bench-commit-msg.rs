//! Benchmark: the runtime overhead of `git-agent commit-msg` when the
//! provider answers instantly (the fake OpenAI server), in a repository
//! with a 2,000-line staged change. Each run uses `--debug`, whose
//! `commit_msg.timing` event splits the daemon's time into context
//! preparation, request assembly and loop bookkeeping; the wall time of
//! the whole command (client, RPC, daemon) is measured around it.
//!
//!     cargo build --release --bins && target/release/bench-commit-msg [runs]

use git_agent_tests::TestEnv;
use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(30);
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "bench-key");
    let repo = env.repo("bench");
    for file in 0..20 {
        let body: String = (0..100).map(|line| format!("fn item_{file}_{line}() -> u32 {{ {line} }}\n")).collect();
        repo.write(&format!("src/module_{file}.rs"), &body);
    }
    repo.commit_all("feat: initial modules");
    // Half the lines of every file change: 1,000 removed and 1,000 added.
    for file in 0..20 {
        let body: String = (0..100)
            .map(|line| match line % 2 {
                0 => format!("fn item_{file}_{line}() -> u64 {{ {line} * 2 }}\n"),
                _ => format!("fn item_{file}_{line}() -> u32 {{ {line} }}\n"),
            })
            .collect();
        repo.write(&format!("src/module_{file}.rs"), &body);
    }
    repo.git(&["add", "-A"]);
    let staged = repo.git(&["diff", "--cached", "--numstat"]);
    let changed: usize = staged
        .lines()
        .map(|line| line.split('\t').take(2).filter_map(|n| n.parse::<usize>().ok()).sum::<usize>())
        .sum();

    let mut walls = Vec::new();
    let mut phases: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in 0..runs + 3 {
        fake.push(Reply::Events(events::text_reply("refactor: widen item results", events::usage(10, 0, 5))));
        let started = Instant::now();
        let output = env.git_agent_in(repo.path(), &["commit-msg", "--debug"]).output().expect("run git-agent");
        let wall = started.elapsed();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        if run < 3 {
            continue; // warm-up: daemon start, page cache
        }
        walls.push(wall);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The event's fields follow its header line, indented.
        let timing: Vec<&str> = stderr
            .lines()
            .skip_while(|line| !line.contains("commit_msg.timing"))
            .enumerate()
            .take_while(|(index, line)| *index == 0 || line.starts_with("  "))
            .map(|(_, line)| line)
            .collect();
        assert!(!timing.is_empty(), "--debug prints commit_msg.timing");
        for field in timing.iter().flat_map(|line| line.split_whitespace()) {
            if let Some((key, value)) = field.split_once('=')
                && let Ok(value) = value.trim_matches('"').parse::<f64>()
            {
                phases.entry(key.to_string()).or_default().push(value);
            }
        }
    }
    println!("staged change: {changed} changed lines (added + removed) in 20 files; {runs} runs after 3 warm-up runs");
    println!("{:<34} {:>10}", "phase (median)", "ms");
    for (key, label) in [
        ("context_ms", "context preparation (gix)"),
        ("assembly_ms", "request assembly"),
        ("bookkeeping_ms", "loop bookkeeping"),
        ("tools_ms", "tool execution"),
        ("provider_ms", "provider wait (fake, instant)"),
        ("own_ms", "daemon time without provider"),
        ("total_ms", "daemon total"),
    ] {
        let mut values = phases.remove(key).unwrap_or_default();
        assert_eq!(values.len(), runs, "every run's commit_msg.timing event has {key}");
        values.sort_by(f64::total_cmp);
        let median = values[values.len() / 2];
        println!("{label:<34} {median:>10.3}");
    }
    walls.sort();
    let wall = walls[walls.len() / 2];
    println!("{:<34} {:>10.3}", "wall time, whole command", ms(wall));
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

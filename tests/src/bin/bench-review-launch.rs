//! Benchmark: 20 concurrent `git-agent review --dry-run` launches in one
//! repository against a warm daemon. Reports the launch latency (process
//! start to the launch JSON), checks that every id is distinct and every
//! `--wait` result is a valid report, and prints the daemon's memory (with
//! the tasks running, just after, and once idle).
//! Ten launches one after another come first, for a single caller's view.
//!
//!     cargo build --release --bins && target/release/bench-review-launch [launches]

use git_agent_tests::TestEnv;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Launches measured one after another before the concurrent burst.
const SEQUENTIAL: usize = 10;

fn main() {
    let launches: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(20);
    let env = TestEnv::new();
    let repo = env.repo("bench");
    repo.write("README.md", "bench\n");
    repo.commit_all("initial");
    repo.write("README.md", "bench\nchanged\n");
    repo.write("src/lib.rs", "pub fn f() {}\n");
    // Warm the daemon.
    env.run_in(repo.path(), &["project_id"]).success();

    // One launch at a time first: what a single caller sees.
    let mut sequential: Vec<Duration> = (0..SEQUENTIAL)
        .map(|_| {
            let spawned = Instant::now();
            let output = env.git_agent_in(repo.path(), &["review", "--dry-run"]).output().expect("launch");
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            spawned.elapsed()
        })
        .collect();
    sequential.sort();

    let started = Instant::now();
    let children: Vec<_> = (0..launches)
        .map(|_| {
            let spawned = Instant::now();
            let child = env
                .git_agent_in(repo.path(), &["review", "--dry-run"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start git-agent");
            (spawned, child)
        })
        .collect();
    let mut latencies = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    let waiters: Vec<_> = children
        .into_iter()
        .map(|(spawned, child)| {
            std::thread::spawn(move || (child.wait_with_output().expect("launch"), spawned.elapsed()))
        })
        .collect();
    for waiter in waiters {
        let (output, latency) = waiter.join().expect("launch thread");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(output.stderr.is_empty());
        let launch: serde_json::Value = serde_json::from_slice(&output.stdout).expect("launch JSON");
        ids.insert(launch["id"].as_str().expect("id").to_string());
        latencies.push(latency);
    }
    assert_eq!(ids.len(), launches, "every id is distinct");
    let pid = env.daemon_pid().expect("the daemon is running");
    let rss_running = rss(pid);

    let mut valid = 0;
    for id in &ids {
        let run = env.run_in(repo.path(), &["review", "--wait", id]);
        let report: serde_json::Value = serde_json::from_slice(&run.stdout).expect("report JSON");
        if run.code == Some(0) && report["recommendation"] == "APPROVE" && report["checks"].is_array() {
            valid += 1;
        }
    }
    let total = started.elapsed();
    latencies.sort();
    println!(
        "sequential launches: {SEQUENTIAL}, latency median {:.1} ms, p90 {:.1} ms",
        ms(sequential[SEQUENTIAL / 2]),
        ms(sequential[SEQUENTIAL * 9 / 10])
    );
    println!("concurrent review --dry-run launches: {launches} (warm daemon)");
    println!("distinct ids: {}", ids.len());
    println!("valid --wait reports: {valid}/{launches}");
    println!(
        "launch latency (process start -> launch JSON): median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        ms(latencies[latencies.len() / 2]),
        ms(latencies[latencies.len() * 9 / 10]),
        ms(latencies[latencies.len() - 1])
    );
    println!("all tasks done after {:.1} s", total.as_secs_f64());
    println!("gitagentd resident memory with {launches} tasks running: {rss_running}");
    println!("gitagentd resident memory after they finished: {}", rss(pid));
    let idle = git_agent_tests::soak::settled_footprint(pid);
    println!("gitagentd idle resident memory: {} kB ({:.1} MiB)", idle.resident_kib, idle.resident_kib as f64 / 1024.0);
    println!("  by mapping: {}", git_agent_tests::soak::resident_breakdown(pid));
    println!("gitagentd idle memory: {}", git_agent_tests::soak::PrivateMemory::of(pid));
}

fn rss(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read the daemon's /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .map(|value| value.trim().to_string())
        .expect("the daemon's /proc status has a VmRSS line")
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

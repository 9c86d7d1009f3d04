//! Benchmark: `git-agent project_id` against a warm daemon, side by side
//! with `git rev-parse --show-toplevel` in the same repository, and the
//! daemon's resident memory right after and once it has settled idle.
//!
//!     cargo build --release --bins && target/release/bench-project-id [calls]

use git_agent_tests::TestEnv;
use git_agent_tests::soak::{Footprint, settled_footprint};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let calls: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(300);
    let env = TestEnv::new();
    let repo = env.repo("bench");
    repo.git(&["remote", "add", "origin", "git@example.test:org/bench.git"]);
    repo.write("README.md", "bench\n");
    repo.commit_all("initial");

    let mut agent = env.git_agent_in(repo.path(), &["project_id"]);
    agent.stdout(Stdio::null()).stderr(Stdio::null());
    let mut git = repo.git_command(["rev-parse", "--show-toplevel"]);
    git.stdout(Stdio::null()).stderr(Stdio::null());

    for _ in 0..20 {
        time(&mut agent);
        time(&mut git);
    }
    let mut agent_times = Vec::with_capacity(calls);
    let mut git_times = Vec::with_capacity(calls);
    for _ in 0..calls {
        agent_times.push(time(&mut agent));
        git_times.push(time(&mut git));
    }
    let agent_median = median(&mut agent_times);
    let git_median = median(&mut git_times);
    println!("calls per command: {calls} (interleaved, after 20 warm-up calls)");
    println!("git-agent project_id         median {:>8.3} ms  p90 {:>8.3} ms", ms(agent_median), ms(p90(&agent_times)));
    println!("git rev-parse --show-toplevel median {:>8.3} ms  p90 {:>8.3} ms", ms(git_median), ms(p90(&git_times)));
    println!("ratio (git-agent / git): {:.2}x", agent_median.as_secs_f64() / git_median.as_secs_f64());
    let pid = env.daemon_pid().expect("the daemon is running");
    println!("gitagentd resident memory right after the calls: {} kB", Footprint::of(pid).resident_kib);
    let idle = settled_footprint(pid);
    println!("gitagentd idle resident memory: {} kB ({:.1} MiB)", idle.resident_kib, idle.resident_kib as f64 / 1024.0);
    println!("  by mapping: {}", git_agent_tests::soak::resident_breakdown(pid));
    println!("gitagentd idle memory: {}", git_agent_tests::soak::PrivateMemory::of(pid));
}

fn time(command: &mut Command) -> Duration {
    let start = Instant::now();
    let status = command.status().expect("run the command");
    let elapsed = start.elapsed();
    assert!(status.success(), "{command:?} failed");
    elapsed
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn p90(sorted: &[Duration]) -> Duration {
    sorted[sorted.len() * 9 / 10]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

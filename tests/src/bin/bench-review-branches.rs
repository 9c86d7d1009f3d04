//! Benchmark of review's branch fan-out and of `review --base` launches.
//!
//! (a) A review whose root conversation branches into 3 children, against
//! the fake Responses server answering instantly: launch-to-report wall
//! time (process start of the launch to the end of `--wait`), the daemon's
//! memory, and the fan-out time per child: from the moment the fake
//! answers the root's `branch` call to each child's first request, which
//! is the daemon's own work (reading the stream, the snapshot recheck,
//! forking the conversation, building and sending the child request).
//! (b) Launch latency of `review --base main --dry-run` on a repository of
//! 30,000 files, beside `git diff --stat main...HEAD` in the same run.
//!
//!     cargo build --release --bins && target/release/bench-review-branches [rounds]

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, Responder, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FILES: usize = 30_000;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(10);
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-bench-branches");
    branches(&env, &fake, rounds);
    base_launch(&env, rounds);
}

/// The conversation a request belongs to: the `branch_id` of the last
/// branch result in its input, or `root`.
fn node_of(body: &Value) -> String {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .filter_map(|item| serde_json::from_str::<Value>(item["output"].as_str()?).ok())
        .filter_map(|output| output["branch_id"].as_str().map(str::to_string))
        .next_back()
        .unwrap_or_else(|| "root".to_string())
}

fn branches(env: &TestEnv, fake: &FakeOpenAi, rounds: usize) {
    let repo = env.repo("branches");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.commit_all("initial");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    2\n}\n");
    let children: Vec<Value> = ["Parser", "Storage", "Hooks"]
        .iter()
        .map(|scope| json!({"scope": scope, "path_hints": ["src"], "model": "inherit", "reasoning_effort": "inherit"}))
        .collect();
    let call = json!({ "branches": children }).to_string();
    let report = r#"{"summary":"fine","recommendation":"APPROVE","findings":[]}"#;
    // When each conversation's request arrived at the fake.
    let arrivals: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let seen = Arc::clone(&arrivals);
    let responder = Responder::new(move |body: &Value| {
        let node = node_of(body);
        seen.lock().unwrap().push((node.clone(), Instant::now()));
        if node == "root" {
            events::tool_calls(&[("r1", "branch", call.as_str())], json!({}))
        } else {
            events::text_reply(report, json!({}))
        }
    });
    env.run_in(repo.path(), &["project_id"]).success();
    let mut walls = Vec::new();
    let mut per_child = Vec::new();
    for round in 0..=rounds {
        arrivals.lock().unwrap().clear();
        for _ in 0..4 {
            fake.push(Reply::Computed(responder.clone()));
        }
        let started = Instant::now();
        let launched = env.run_in(repo.path(), &["review", "--depth", "balanced"]).success();
        let id = serde_json::from_str::<Value>(&launched).unwrap()["id"].as_str().unwrap().to_string();
        let printed = env.run_in(repo.path(), &["review", "--wait", &id]).success();
        let wall = started.elapsed();
        let report: Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(report["summary"], "Parser: fine\nStorage: fine\nHooks: fine", "a merged report");
        let arrivals = arrivals.lock().unwrap().clone();
        assert_eq!(arrivals.len(), 4, "one root and three children");
        let root = arrivals.iter().find(|(node, _)| node == "root").unwrap().1;
        let children: Vec<Duration> =
            arrivals.iter().filter(|(node, _)| node != "root").map(|(_, at)| at.duration_since(root)).collect();
        if round > 0 {
            // The first round warms the daemon's clients and caches.
            walls.push(wall);
            per_child.push(*children.iter().max().unwrap() / 3);
        }
    }
    walls.sort();
    per_child.sort();
    let pid = env.daemon_pid().expect("the daemon is running");
    println!("(a) review with 3 branches, instant fake provider, {rounds} rounds after one warm-up");
    println!(
        "launch-to-report wall time: median {:.1} ms, p90 {:.1} ms",
        ms(walls[walls.len() / 2]),
        ms(walls[walls.len() * 9 / 10])
    );
    println!(
        "fan-out daemon time per child (branch answer -> last child request, / 3): median {:.2} ms, max {:.2} ms (goal < 20 ms)",
        ms(per_child[per_child.len() / 2]),
        ms(per_child[per_child.len() - 1])
    );
    println!("gitagentd memory: {}, {}", status_line(pid, "VmRSS"), status_line(pid, "VmHWM"));
}

fn base_launch(env: &TestEnv, rounds: usize) {
    let repo = env.repo("large");
    big_tree(&repo);
    repo.git(&["branch", "-M", "main"]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    for index in 0..5 {
        repo.write(&format!("src/d{index}/f{index}.rs"), &format!("pub fn changed_{index}() {{}}\n"));
    }
    repo.commit_all("feature");
    let mut launches = Vec::new();
    let mut diffs = Vec::new();
    for round in 0..=rounds {
        let started = Instant::now();
        env.run_in(repo.path(), &["review", "--base", "main", "--dry-run"]).success();
        let launch = started.elapsed();
        let started = Instant::now();
        let diff =
            Command::new("git").args(["diff", "--stat", "main...HEAD"]).current_dir(repo.path()).output().unwrap();
        assert!(diff.status.success());
        let git = started.elapsed();
        if round > 0 {
            launches.push(launch);
            diffs.push(git);
        }
    }
    launches.sort();
    diffs.sort();
    println!("(b) review --base main --dry-run on {FILES} files, {rounds} rounds after one warm-up");
    println!(
        "launch latency (process start -> launch JSON): median {:.1} ms, p90 {:.1} ms (goal < 200 ms)",
        ms(launches[launches.len() / 2]),
        ms(launches[launches.len() * 9 / 10])
    );
    println!(
        "git diff --stat main...HEAD: median {:.1} ms, p90 {:.1} ms",
        ms(diffs[diffs.len() / 2]),
        ms(diffs[diffs.len() * 9 / 10])
    );
}

/// Commits 30,000 small files in 300 folders on the current branch.
fn big_tree(repo: &GitRepo) {
    for index in 0..FILES {
        let folder = index % 300;
        repo.write(&format!("src/d{folder}/f{index}.rs"), &format!("pub fn f{index}() -> usize {{ {index} }}\n"));
    }
    repo.commit_all("30,000 files");
}

fn status_line(pid: u32, name: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read the daemon's /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .map(|value| format!("{name} {}", value.trim()))
        .unwrap_or_else(|| format!("{name} unknown"))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

//! Benchmarks of `git-agent explore` against an instant fake provider
//! (and an instant fake embeddings server) on loopback:
//!
//! - `batch`: 9 concurrent `git-agent explore --debug` processes with
//!   compatible questions; prints how many provider conversations they
//!   made (the goal is exactly 3) and the daemon-side time per item that
//!   is not provider time, from each process's `explore.phase` events:
//!   command elapsed at `output` minus provider requests minus the join
//!   grace its batch's leader reported (printed with the grace too).
//! - `warm`: a warm 3,400-chunk index (200 Go files of 16 functions, plus
//!   their package headers), then the wall time from starting
//!   `git-agent explore` to the fake provider receiving its first request,
//!   with the process's phases up to that request.
//!
//!     cargo build --release --bins && target/release/bench-explore [batch|warm]
//!
//! Without an argument it runs both.

use git_agent_tests::TestEnv;
use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
use git_agent_tests::fake_openai::{FakeOpenAi, Reply, Responder, events};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    match which.as_str() {
        "batch" => batch(),
        "warm" => warm(),
        "all" => {
            batch();
            warm();
        }
        other => {
            eprintln!("usage: bench-explore [batch|warm] (got {other:?})");
            std::process::exit(2);
        }
    }
}

/// A reply answering every item of the request at once.
fn answer() -> Reply {
    Reply::Computed(Responder::new(|body| {
        let text = body["input"].to_string();
        let marker = "\\\"item_id\\\": \\\"";
        let answers: Vec<Value> = text
            .match_indices(marker)
            .map(|(at, _)| {
                let rest = &text[at + marker.len()..];
                let id = &rest[..rest.find('\\').unwrap_or(rest.len())];
                json!({"item_id": id, "items": [{"description": "found", "references": ["README.md"]}]})
            })
            .collect();
        events::text_reply(&json!({ "answers": answers }).to_string(), events::usage(300, 0, 40))
    }))
}

fn spawn(env: &TestEnv, dir: &Path, question: &str) -> Child {
    env.git_agent_in(dir, &["explore", "--debug", question])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start git-agent explore")
}

/// The `explore.phase` events of one process: (phase, duration_ms, elapsed_ms).
fn phases(stderr: &str) -> Vec<(String, u64, u64)> {
    stderr
        .lines()
        .filter_map(|line| line.split_once(" explore.phase ").map(|(_, rest)| rest))
        .map(|rest| {
            let field = |name: &str| {
                rest.split_whitespace()
                    .find_map(|part| part.strip_prefix(&format!("{name}=")))
                    .unwrap_or_default()
                    .to_string()
            };
            (field("phase"), field("duration_ms").parse().unwrap_or(0), field("elapsed_ms").parse().unwrap_or(0))
        })
        .collect()
}

fn duration_of(phases: &[(String, u64, u64)], phase: &str) -> u64 {
    phases.iter().filter(|(name, _, _)| name == phase).map(|(_, duration, _)| duration).sum()
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn batch() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-bench-explore");
    let repo = env.repo("app");
    repo.write("README.md", "# app\n");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.commit_all("feat: one");
    // Start the daemon, then one explore to warm it up.
    env.run_in(repo.path(), &["project_id"]).success();
    fake.push(answer());
    env.run_in(repo.path(), &["explore", "warm", "up"]).success();
    let before = fake.requests().len();
    for _ in 0..9 {
        fake.push(answer());
    }
    let started = Instant::now();
    let children: Vec<Child> = (0..9).map(|n| spawn(&env, repo.path(), &format!("question {n}"))).collect();
    let outputs: Vec<_> = children.into_iter().map(|child| child.wait_with_output().unwrap()).collect();
    let wall = started.elapsed();
    let mut ids = Vec::new();
    let (mut overhead, mut with_grace, mut provider) = (Vec::new(), Vec::new(), Vec::new());
    // A follower spends its batch's provider time in result_wait: charge
    // every item its batch leader's provider time.
    let all: Vec<Vec<(String, u64, u64)>> =
        outputs.iter().map(|output| phases(&String::from_utf8_lossy(&output.stderr))).collect();
    let leader_provider: Vec<u64> = all
        .iter()
        .filter(|phases| phases.iter().any(|(name, _, _)| name == "provider_request"))
        .map(|phases| duration_of(phases, "provider_request"))
        .collect();
    let batch_provider = leader_provider.iter().copied().max().unwrap_or(0);
    // Likewise the batch's join grace, which only its leader reports.
    let batch_grace = all.iter().map(|phases| duration_of(phases, "join_grace")).max().unwrap_or(0);
    for (output, phases) in outputs.iter().zip(&all) {
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let value: Value = serde_json::from_slice(&output.stdout).unwrap();
        ids.push(value["id"].as_str().unwrap().to_string());
        let elapsed = phases.iter().find(|(name, _, _)| name == "output").map_or(0, |(_, _, elapsed)| *elapsed);
        let own_provider = duration_of(phases, "provider_request");
        let spent_on_provider = if own_provider > 0 { own_provider } else { batch_provider };
        let own_grace = duration_of(phases, "join_grace");
        let leads = phases.iter().any(|(name, _, _)| name == "batch_collection");
        let grace = if leads { own_grace } else { batch_grace };
        with_grace.push(elapsed.saturating_sub(spent_on_provider));
        overhead.push(elapsed.saturating_sub(spent_on_provider + grace));
        provider.push(spent_on_provider);
    }
    // The work the daemon did for the 9 items, waits left out: every
    // process's own phases but the join grace, the batch collection, the
    // result wait and the provider requests (semantic_search includes
    // queueing for the index single flight).
    const WORK: [&str; 8] = [
        "setup",
        "reservation",
        "semantic_search",
        "batch_join",
        "prompt_setup",
        "answer_processing",
        "persistence",
        "output",
    ];
    let work: u64 = all.iter().map(|phases| WORK.iter().map(|phase| duration_of(phases, phase)).sum::<u64>()).sum();
    let searching: Vec<u64> = all.iter().map(|phases| duration_of(phases, "semantic_search")).collect();
    ids.sort();
    ids.dedup();
    let conversations = fake.requests().len() - before;
    let mut sizes: Vec<usize> = fake.requests()[before..]
        .iter()
        .map(|request| request.body["input"].to_string().matches("\\\"item_id\\\": \\\"").count())
        .collect();
    sizes.sort_unstable();
    println!("== batch: 9 concurrent git-agent explore processes, instant fake provider");
    println!(
        "provider conversations: {conversations} (goal: exactly 3), batch sizes {sizes:?}, distinct IDs {}",
        ids.len()
    );
    println!("wall time of all 9: {:.0} ms", wall.as_secs_f64() * 1000.0);
    println!(
        "daemon-side overhead per item (elapsed at output - provider - join grace): median {} ms (goal < 30 ms), all {:?}",
        median(overhead.clone()),
        {
            let mut sorted = overhead;
            sorted.sort_unstable();
            sorted
        }
    );
    println!(
        "daemon work per item without waits (sum of every process's own work phases / 9): {:.1} ms; semantic_search per process: median {} ms",
        work as f64 / 9.0,
        median(searching)
    );
    println!(
        "per item including the join grace: median {} ms (leaders' graces {:?} ms); provider time per batch: median {} ms",
        median(with_grace),
        all.iter()
            .filter(|phases| phases.iter().any(|(name, _, _)| name == "batch_collection"))
            .map(|phases| duration_of(phases, "join_grace"))
            .collect::<Vec<_>>(),
        median(provider)
    );
    println!();
}

fn warm() {
    let fake = FakeOpenAi::start();
    let embeddings = FakeEmbeddings::start();
    embeddings.set_mode(Mode::Constant);
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-bench-explore");
    embeddings.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "1024");
    env.set_env("OPENAI_EMBEDDING_MODEL", "benchmark-model");
    let root = env.work().join("corpus");
    for file in 0..200 {
        let mut content = String::from("package benchmark\n\n");
        for function in 0..16 {
            let _ = writeln!(
                content,
                "func SearchOwner{file:03}_{function:03}() string {{ return \"semantic search owner {file:03} {function:03}\" }}\n"
            );
        }
        let path = root.join("pkg").join(format!("file_{file:03}.go"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        let past = std::time::SystemTime::now() - Duration::from_secs(3600);
        let handle = std::fs::File::options().write(true).open(&path).unwrap();
        handle.set_times(std::fs::FileTimes::new().set_modified(past).set_accessed(past)).unwrap();
    }
    std::fs::write(root.join("README.md"), "# corpus\n").unwrap();
    env.run_in(&root, &["search", "--index", "--code"]).success();
    let listing: Value =
        serde_json::from_str(&env.run_in(&root, &["search", "--ls", "--format", "json"]).success()).unwrap();
    let chunks = listing[0]["chunks"].as_u64().unwrap_or(0);
    const QUESTION: &str = "where is the semantic search owner implemented";
    let runs = 20;
    let mut waits = Vec::with_capacity(runs);
    let mut before_grace = Vec::new();
    let mut last_phases = Vec::new();
    for run in 0..=runs {
        fake.push(answer());
        let seen = fake.requests().len();
        let started = Instant::now();
        let child = spawn(&env, &root, QUESTION);
        assert!(fake.wait_for_requests(seen + 1, Duration::from_secs(60)), "no provider request");
        let waited = started.elapsed();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        let request = &fake.requests()[seen];
        assert!(request.body["input"].to_string().contains("semantic_results"), "no warm leads");
        // The first run primes the query embedding and the daemon's view.
        if run == 0 {
            continue;
        }
        let phases = phases(&stderr);
        let grace = duration_of(&phases, "join_grace");
        waits.push(waited.as_micros() as u64);
        before_grace.push((waited.as_millis() as u64).saturating_sub(grace));
        last_phases = phases;
    }
    let median_us = median(waits.clone());
    println!("== warm: {chunks} chunks indexed (--code), 1024 dimensions, query recalled from history");
    println!(
        "start of git-agent explore to the first provider request, {runs} runs: median {:.1} ms (goal < 50 ms), min {:.1} ms, max {:.1} ms",
        median_us as f64 / 1000.0,
        *waits.iter().min().unwrap() as f64 / 1000.0,
        *waits.iter().max().unwrap() as f64 / 1000.0
    );
    println!("the same without the join grace: median {} ms", median(before_grace));
    let shown: Vec<String> = last_phases
        .iter()
        .take_while(|(name, _, _)| name != "provider_request")
        .map(|(name, duration, _)| format!("{name}={duration}"))
        .collect();
    println!("phases of the last run before its first request (ms): {}", shown.join(" "));
    println!();
}

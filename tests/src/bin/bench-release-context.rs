//! Benchmark: release-note context preparation for a range of 2,000
//! commits touching 20,000 files, side by side with `git log --stat` over
//! the same range of the same repository, interleaved in one run.
//!
//!     cargo build --release --bins && target/release/bench-release-context [runs]
//!
//! The repository is built with `git fast-import`: a tagged base commit
//! with 20,000 files of 40 lines in 200 folders, then 2,000 commits that
//! each rewrite two lines and append one in 10 files nobody else touches,
//! with conventional subjects and a body. It is measured twice: as
//! fast-import packed it (deltas kept by `git repack -ad`), and after
//! `git repack -adf` (Git's own delta chains). Each run measures
//! `git-agent release-note --debug v1.0.0 HEAD` from its spawn to the
//! moment the fake provider receives the first request (a condition
//! variable wakes the benchmark; no polling), with the daemon already
//! running; the scripted answer then lets the run finish. The daemon's own
//! `--debug` line gives the preparation time inside it.

use git_agent_tests::TestEnv;
use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FILES: usize = 20_000;
const COMMITS: usize = 2_000;
const FILES_PER_COMMIT: usize = FILES / COMMITS;
const LINES_PER_FILE: usize = 40;

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(5);
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "bench-key");
    let repo = env.repo("bench");
    repo.git(&["remote", "add", "origin", "git@example.test:org/bench.git"]);

    let started = Instant::now();
    let stream = fast_import_stream();
    let mut import = repo.git_command(["fast-import", "--quiet"]);
    import.stdin(Stdio::piped());
    let mut child = import.spawn().expect("start git fast-import");
    child.stdin.take().expect("fast-import's stdin").write_all(&stream).expect("feed git fast-import");
    assert!(child.wait().expect("wait for git fast-import").success(), "git fast-import failed");
    repo.git(&["repack", "-adq"]);
    repo.git(&["reset", "-q", "--hard", "main"]);
    println!(
        "repository: {COMMITS} commits over {FILES} files ({} MiB of fast-import stream), built in {:.1?}",
        stream.len() / (1024 * 1024),
        started.elapsed()
    );
    let stat = repo.git(&["diff", "--shortstat", "v1.0.0", "HEAD"]);
    println!("range v1.0.0..HEAD: {}", stat.trim());

    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let answer = serde_json::json!({"sections": [{"heading": "Improvements", "bullets": [
        {"label": null, "summary": "Batches behave as described", "refs": [{"type": "commit", "value": head}], "children": []}
    ]}]})
    .to_string();
    let bench = Bench { env: &env, repo: &repo, fake: &fake, answer: &answer };
    bench.measure(runs, "the fast-import pack, repacked with its deltas kept (git repack -ad)");
    repo.git(&["repack", "-adfq"]);
    bench.measure(runs, "after git repack -adf (delta chains chosen by Git, newest objects whole)");
}

struct Bench<'a> {
    env: &'a TestEnv,
    repo: &'a git_agent_tests::GitRepo,
    fake: &'a FakeOpenAi,
    /// A valid model answer for the range.
    answer: &'a str,
}

impl Bench<'_> {
    fn measure(&self, runs: usize, pack: &str) {
        let mut git = self.repo.git_command(["log", "--stat", "v1.0.0..HEAD"]);
        git.stdout(Stdio::piped()).stderr(Stdio::piped());

        // Warm-up: page cache, and the daemon started.
        let _ = self.run_agent();
        let _ = run_git(&mut git);
        let (mut agent_times, mut daemon_times, mut git_times) = (Vec::new(), Vec::new(), Vec::new());
        let mut last_debug = String::new();
        for _ in 0..runs {
            let (wall, debug) = self.run_agent();
            agent_times.push(wall);
            daemon_times.push(prepared_in(&debug));
            last_debug = debug;
            git_times.push(run_git(&mut git));
        }
        let (agent, daemon, git) = (median(&mut agent_times), median(&mut daemon_times), median(&mut git_times));
        println!();
        println!("pack: {pack}");
        println!("runs per command: {runs} (interleaved, after one warm-up run each)");
        println!("daemon: {last_debug}");
        println!(
            "git-agent release-note (to the 1st request) median {:>9.1} ms  min {:>9.1} ms",
            ms(agent),
            ms(agent_times[0])
        );
        println!(
            "  of which preparation inside the daemon    median {:>9.1} ms  min {:>9.1} ms",
            ms(daemon),
            ms(daemon_times[0])
        );
        println!(
            "git log --stat v1.0.0..HEAD                 median {:>9.1} ms  min {:>9.1} ms",
            ms(git),
            ms(git_times[0])
        );
        println!("ratio (git-agent / git log --stat): {:.2}x", agent.as_secs_f64() / git.as_secs_f64());
    }

    /// Runs the release note; returns the time from its spawn to the first
    /// provider request, and the daemon's `--debug` line.
    fn run_agent(&self) -> (Duration, String) {
        self.fake.push(Reply::Events(events::text_reply(self.answer, events::usage(10, 0, 5))));
        let before = self.fake.requests().len();
        let started = Instant::now();
        let child = self
            .env
            .git_agent_in(self.repo.path(), &["release-note", "--debug", "v1.0.0", "HEAD"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run git-agent");
        assert!(self.fake.wait_for_requests(before + 1, Duration::from_secs(600)), "the first request arrives");
        let to_request = started.elapsed();
        let output = child.wait_with_output().expect("git-agent finishes");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).starts_with("### Improvements"),
            "git-agent release-note failed:\n{stderr}"
        );
        let prepared = stderr.lines().find(|line| line.contains("prepared") && line.contains(" in "));
        let prepared =
            prepared.unwrap_or_else(|| panic!("the daemon's --debug output has no `prepared ... in` line:\n{stderr}"));
        (to_request, prepared.to_string())
    }
}

fn run_git(command: &mut Command) -> Duration {
    let started = Instant::now();
    let output = command.output().expect("run git log");
    let elapsed = started.elapsed();
    assert!(output.status.success(), "git log failed: {}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stdout.len() > COMMITS * 100, "git log printed too little");
    elapsed
}

/// The `in 1.2s` of the daemon's `release-note: prepared ...` line; a
/// line without a readable duration stops the benchmark.
fn prepared_in(debug: &str) -> Duration {
    let text = debug.rsplit_once(" in ").map(|(_, text)| text.trim());
    let parsed = text.and_then(|text| {
        let (number, scale) = if let Some(value) = text.strip_suffix("ms") {
            (value, 1e-3)
        } else if let Some(value) = text.strip_suffix("µs") {
            (value, 1e-6)
        } else if let Some(value) = text.strip_suffix("ns") {
            (value, 1e-9)
        } else {
            (text.strip_suffix('s')?, 1.0)
        };
        Some(Duration::from_secs_f64(number.parse::<f64>().ok()? * scale))
    });
    parsed.unwrap_or_else(|| panic!("no preparation time in the daemon's line {debug:?}"))
}

/// The content of file `file` after `version` commits touched it.
fn content(file: usize, version: usize) -> String {
    let mut text = String::with_capacity(LINES_PER_FILE * 48 + 64);
    for line in 0..LINES_PER_FILE {
        let value = if version > 0 && (line == 7 || line == 23) { version * 1000 + line } else { line };
        let _ = writeln!(text, "pub const ITEM_{file}_{line}: usize = {value}; // stable text");
    }
    for extra in 0..version {
        let _ = writeln!(text, "pub const EXTRA_{file}_{extra}: usize = {extra};");
    }
    text
}

fn path(file: usize) -> String {
    format!("src/area{:03}/module_{file:05}.rs", file % 200)
}

fn push_data(stream: &mut Vec<u8>, data: &str) {
    let _ = write!(stream, "data {}\n{data}\n", data.len());
}

fn fast_import_stream() -> Vec<u8> {
    let mut stream = Vec::with_capacity(64 * 1024 * 1024);
    let mut mark = 1;
    let when = 1_767_323_045u64; // 2026-01-02T03:04:05Z
    let _ = writeln!(stream, "commit refs/heads/main\nmark :{mark}");
    let _ = writeln!(stream, "author Bench <bench@example.test> {when} +0000");
    let _ = writeln!(stream, "committer Bench <bench@example.test> {when} +0000");
    push_data(&mut stream, "chore: initial import");
    for file in 0..FILES {
        let _ = writeln!(stream, "M 100644 inline {}", path(file));
        push_data(&mut stream, &content(file, 0));
    }
    let _ = writeln!(stream, "\nreset refs/tags/v1.0.0\nfrom :{mark}\n");
    let kinds = ["feat", "fix", "perf", "refactor", "docs"];
    for commit in 0..COMMITS {
        mark += 1;
        let time = when + 60 * (commit as u64 + 1);
        let kind = kinds[commit % kinds.len()];
        let _ = writeln!(stream, "commit refs/heads/main\nmark :{mark}");
        let _ = writeln!(stream, "author Bench <bench@example.test> {time} +0000");
        let _ = writeln!(stream, "committer Bench <bench@example.test> {time} +0000");
        push_data(
            &mut stream,
            &format!(
                "{kind}(area{:03}): change batch {commit}\n\nRewrites two values and adds one constant in ten modules\nof area {:03} so that the batch {commit} behaves as described.\n",
                commit % 200,
                commit % 200
            ),
        );
        let _ = writeln!(stream, "from :{}", mark - 1);
        for offset in 0..FILES_PER_COMMIT {
            let file = commit * FILES_PER_COMMIT + offset;
            let _ = writeln!(stream, "M 100644 inline {}", path(file));
            push_data(&mut stream, &content(file, 1));
        }
        stream.push(b'\n');
    }
    stream
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preparation_times_are_read_and_a_missing_one_stops_the_benchmark() {
        assert_eq!(prepared_in("release-note: prepared 2000 commits in 1.5s"), Duration::from_millis(1500));
        assert_eq!(prepared_in("release-note: prepared 2000 commits in 250ms"), Duration::from_millis(250));
        assert!(std::panic::catch_unwind(|| prepared_in("release-note: prepared 2000 commits")).is_err());
        assert!(std::panic::catch_unwind(|| prepared_in("release-note: prepared in soon")).is_err());
    }
}

//! Cross-machine reuse through `index.remote`: machine A (its own HOME,
//! daemon and instant fake embeddings server) indexes a 3,400-chunk
//! revision (200 Go files of 16 functions plus their package headers) and
//! publishes it to a bare index remote; then, in each round, a fresh
//! machine B (a new HOME, a clone of the same origin, `index.remote` set)
//! runs its first search, timed from process start to results, beside the
//! same first search on a fresh machine with no remote configured. Both
//! machines' daemons are started before the timed command.
//!
//! It prints both medians and the embedding calls each made (goal: none on
//! B); it fails when B embedded a chunk, when the baseline did not embed
//! the revision, when a search found nothing, or when A's index never
//! reached the remote.
//!
//!     cargo build --release --bins && target/release/bench-index-sync [rounds] [dimensions]

use git_agent_tests::TestEnv;
use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
use git_agent_tests::git::{git, git_trimmed};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const QUERY: &str = "where is the semantic search owner implemented";
const FILES: usize = 200;
const FUNCTIONS: usize = 16;

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(3, |value| value.parse().expect("rounds: a positive number"));
    let dimensions: usize = args.next().map_or(256, |value| value.parse().expect("dimensions: a positive number"));
    assert!(rounds > 0 && dimensions > 0, "rounds and dimensions must be positive");
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let origin = scratch.path().join("origin.git");
    let index_remote = scratch.path().join("index.git");
    bare(&origin);
    bare(&index_remote);
    write_corpus(&scratch.path().join("seed"), &origin);

    // Machine A embeds the revision and publishes it.
    let (a, fake_a) = machine(dimensions);
    let project_a = clone(&a, &origin);
    a.run_in(&project_a, &["config", "index.remote", index_remote.to_str().unwrap()]).success();
    a.run_in(&project_a, &["search", "--rev", "HEAD", "--index"]).success();
    let chunks = fake_a.chunk_inputs().len();
    assert!(chunks >= 3_000, "machine A embedded only {chunks} chunks");
    let commit = git_trimmed(&origin, &["rev-parse", "main"]);
    let shared = git_trimmed(&index_remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(shared.lines().any(|path| path.contains(&commit)), "A's index is not on the remote:\n{shared}");
    println!(
        "== index.remote cross-machine reuse: {FILES} Go files, {chunks} chunks, {dimensions} dimensions, \
         instant embeddings, {rounds} rounds"
    );
    println!("machine A: embedded {chunks} chunks and published revision {}", &commit[..12]);

    let (mut synced, mut local) = (Vec::new(), Vec::new());
    let (mut synced_calls, mut local_calls, mut local_chunks) = (0, 0, 0);
    for _ in 0..rounds {
        let (b, fake_b) = machine(dimensions);
        let project_b = clone(&b, &origin);
        b.run_in(&project_b, &["config", "index.remote", index_remote.to_str().unwrap()]).success();
        let (elapsed, results) = first_search(&b, &project_b);
        assert!(fake_b.chunk_inputs().is_empty(), "machine B embedded {} chunks", fake_b.chunk_inputs().len());
        assert!(results > 0, "machine B's search found nothing");
        synced.push(elapsed);
        synced_calls += fake_b.requests();

        let (c, fake_c) = machine(dimensions);
        let project_c = clone(&c, &origin);
        c.run_in(&project_c, &["project_id"]).success();
        let (elapsed, results) = first_search(&c, &project_c);
        let embedded = fake_c.chunk_inputs().len();
        assert!(embedded >= chunks, "the baseline embedded only {embedded} of {chunks} chunks");
        assert!(results > 0, "the baseline search found nothing");
        local.push(elapsed);
        local_calls += fake_c.requests();
        local_chunks += embedded;
    }
    let (synced_ms, local_ms) = (median_ms(synced), median_ms(local));
    println!("machine B, first search with index.remote (synced by A): median {synced_ms:.1} ms");
    println!("fresh machine, first search without a remote:          median {local_ms:.1} ms");
    println!(
        "embedding requests per first search: B {} (query only), no remote {} ({} chunks)",
        synced_calls / rounds,
        local_calls / rounds,
        local_chunks / rounds
    );
    println!(
        "embeddings saved on B: {} chunks per first search (goal: zero chunk embeddings on B)",
        local_chunks / rounds
    );
}

/// One machine: its own HOME, daemon and instant embeddings server.
fn machine(dimensions: usize) -> (TestEnv, FakeEmbeddings) {
    let fake = FakeEmbeddings::start();
    fake.set_mode(Mode::Constant);
    let mut env = TestEnv::new();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", &dimensions.to_string());
    env.set_env("OPENAI_EMBEDDING_MODEL", "benchmark-model");
    (env, fake)
}

/// The machine's first `git-agent search` in its clone: wall time and
/// the number of results.
fn first_search(env: &TestEnv, project: &Path) -> (Duration, usize) {
    let started = Instant::now();
    let stdout = env.run_in(project, &["search", "--min-score", "0.01", "--limit", "5", QUERY]).success();
    let elapsed = started.elapsed();
    let value: Value = serde_json::from_str(&stdout).expect("search JSON");
    (elapsed, value["results"].as_array().map_or(0, Vec::len))
}

fn median_ms(mut values: Vec<Duration>) -> f64 {
    values.sort_unstable();
    values[values.len() / 2].as_secs_f64() * 1000.0
}

fn bare(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    git(path, &["init", "--bare", "-q", "-b", "main"]);
}

fn clone(env: &TestEnv, origin: &Path) -> PathBuf {
    let dir = env.work().join("project");
    git(&env.work(), &["clone", "-q", origin.to_str().unwrap(), dir.to_str().unwrap()]);
    dir
}

/// The 3,400-chunk revision, committed and pushed to `origin`.
fn write_corpus(dir: &Path, origin: &Path) {
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    for file in 0..FILES {
        let mut content = String::from("package benchmark\n\n");
        for function in 0..FUNCTIONS {
            let _ = writeln!(
                content,
                "func SearchOwner{file:03}_{function:03}() string {{ return \"semantic search owner {file:03} {function:03}\" }}\n"
            );
        }
        std::fs::write(dir.join("pkg").join(format!("file_{file:03}.go")), content).unwrap();
    }
    std::fs::write(dir.join("README.md"), "# corpus\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "corpus"]);
    git(dir, &["push", "-q", origin.to_str().unwrap(), "main"]);
}

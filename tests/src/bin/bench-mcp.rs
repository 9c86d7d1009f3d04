//! Benchmark of `git-agent mcp`'s `tools/call search` on a warm index,
//! against an instant fake embeddings server on loopback: the corpus of
//! `bench-search warm` (200 Go files with 16 one-line functions each,
//! 3,400 chunks, 1,024 dimensions), indexed and the query primed. It
//! prints, side by side, the median wall time of
//!
//! - one `tools/call search` in a running MCP session (request written to
//!   the server's stdin until its response line is read),
//! - one `git-agent search --format json` process (process per call),
//! - the daemon's own time for the search (`search_index total=` of
//!   `--debug` runs),
//!
//! and the MCP overhead on top of the daemon's time (goal under 10 ms).
//!
//!     cargo build --release --bins && target/release/bench-mcp [runs]

use git_agent_tests::TestEnv;
use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const QUERY: &str = "where is the semantic search owner implemented";
const FILES: usize = 200;

fn main() {
    let runs: usize = match std::env::args().nth(1).map(|runs| runs.parse()) {
        None => 50,
        Some(Ok(runs)) if runs > 0 => runs,
        Some(_) => {
            eprintln!("usage: bench-mcp [runs]");
            std::process::exit(2);
        }
    };
    let fake = FakeEmbeddings::start();
    fake.set_mode(Mode::Constant);
    let mut env = TestEnv::new();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "1024");
    env.set_env("OPENAI_EMBEDDING_MODEL", "benchmark-model");
    let root = env.work().join("corpus");
    write_corpus(&root);
    let (_, stdout, _) = run(&env, &root, &["search", "--index"]);
    let index: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(index["retrieval"]["index"], "miss");
    let listing: Value = serde_json::from_str(&run(&env, &root, &["search", "--ls", "--format", "json"]).1).unwrap();
    let chunks = listing[0]["chunks"].as_u64().expect("`search --ls` reports the index's chunk count");
    for _ in 0..3 {
        run(&env, &root, &["search", "--format", "json", QUERY]);
    }
    let requests = fake.requests();

    let mut processes = Vec::with_capacity(runs);
    let mut daemon = Vec::with_capacity(runs);
    let mut expected = Value::Null;
    for _ in 0..runs {
        let (elapsed, stdout, _) = run(&env, &root, &["search", "--format", "json", QUERY]);
        let output: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(output["retrieval"]["index"], "hit");
        expected = output["results"].clone();
        processes.push(elapsed);
        let (_, _, debug) = run(&env, &root, &["search", "--format", "json", "--debug", QUERY]);
        daemon.push(search_total(&debug));
    }

    let mut session = Session::start(&env, &root);
    let arguments = json!({"query": QUERY});
    for _ in 0..3 {
        session.search(&arguments);
    }
    let mut calls = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let output = session.search(&arguments);
        calls.push(started.elapsed());
        assert_eq!(output["retrieval"]["index"], "hit");
        assert_eq!(output["results"], expected, "MCP and CLI return the same results");
    }
    drop(session);
    assert_eq!(fake.requests(), requests, "warm searches made embeddings calls");

    let (mcp, process, daemon) = (median(&mut calls), median(&mut processes), median(&mut daemon));
    println!("== tools/call search on a warm index: {FILES} files x 16 functions, {chunks} chunks, 1024 dimensions");
    println!("{runs} runs each, medians:");
    println!("  MCP tools/call search (one session):        {:8.2} ms", ms(mcp));
    println!("  git-agent search --format json (process):   {:8.2} ms", ms(process));
    println!("  daemon search time (search_index total):    {:8.2} ms", ms(daemon));
    println!(
        "MCP overhead on top of the daemon's search: {:.2} ms (goal < 10 ms); process per call: {:.2} ms",
        ms(mcp.saturating_sub(daemon)),
        ms(process.saturating_sub(daemon))
    );
}

fn write_corpus(root: &Path) {
    for file in 0..FILES {
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
        // Files changed within the last seconds are re-read by every
        // search; these are old.
        let past = std::time::SystemTime::now() - Duration::from_secs(3600);
        let handle = std::fs::File::options().write(true).open(&path).unwrap();
        handle.set_times(std::fs::FileTimes::new().set_modified(past).set_accessed(past)).unwrap();
    }
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

/// The `total=` of the daemon's `search_index` debug event.
fn search_total(debug: &str) -> Duration {
    // The event's fields follow on indented continuation lines.
    let value = debug
        .split_once(" INF search_index")
        .and_then(|(_, fields)| fields.split_whitespace().find_map(|field| field.strip_prefix("total=")))
        .unwrap_or_else(|| panic!("the daemon's --debug output has no search_index total:\n{debug}"));
    git_agent_shared::timefmt::parse_go_duration(value)
        .unwrap_or_else(|error| panic!("the search_index total {value:?}: {error}"))
}

/// A `git-agent mcp` process, initialized.
struct Session {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(env: &TestEnv, dir: &Path) -> Self {
        let mut child = env
            .git_agent_in(dir, &["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start git-agent mcp");
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let stdin = child.stdin.take();
        let mut session = Self { child, stdin, stdout, next_id: 0 };
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}});
        session.request("initialize", params);
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").and_then(|()| stdin.flush()).expect("write to git-agent mcp");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read from git-agent mcp");
            assert!(read > 0, "git-agent mcp closed its stdout");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// One `tools/call search`; the search JSON it returned.
    fn search(&mut self, arguments: &Value) -> Value {
        let response = self.request("tools/call", json!({"name": "search", "arguments": arguments}));
        let result = &response["result"];
        assert_eq!(result["isError"], false, "{response}");
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text content")).expect("search JSON")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

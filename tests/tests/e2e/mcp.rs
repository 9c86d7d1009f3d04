//! `git-agent mcp` end to end: a Model Context Protocol session over the
//! real client's stdin/stdout, spoken here as JSON-RPC lines, against the
//! real daemon and the fake embeddings and model servers.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// One `git-agent mcp` process and what it wrote so far.
struct McpSession {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    /// Notifications received while waiting for responses, in order.
    notifications: Vec<Value>,
    /// Responses read while waiting for something else.
    responses: Vec<Value>,
    stderr_path: std::path::PathBuf,
}

impl McpSession {
    /// Starts `git-agent mcp` in `dir` and completes the initialization.
    fn start(env: &TestEnv, dir: &Path) -> Self {
        let stderr_path = env.root().join(format!("mcp-{}.stderr", std::process::id()));
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut child = env
            .git_agent_in(dir, &["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .expect("start git-agent mcp");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut session =
            Self { child, stdin, lines, next_id: 0, notifications: Vec::new(), responses: Vec::new(), stderr_path };
        let initialized = session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}),
        );
        assert_eq!(initialized["result"]["serverInfo"]["name"], "git-agent", "{initialized}");
        assert_eq!(initialized["result"]["protocolVersion"], "2025-06-18", "{initialized}");
        assert!(initialized["result"]["capabilities"]["tools"].is_object(), "{initialized}");
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    /// Writes `line` and a newline to the server's stdin as they are.
    fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line).and_then(|()| stdin.write_all(b"\n")).and_then(|()| stdin.flush()).expect("write");
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").and_then(|()| stdin.flush()).expect("write to git-agent mcp");
    }

    /// Sends a request and returns its id without waiting.
    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// The response to request `id`; notifications on the way are kept.
    fn response(&mut self, id: u64) -> Value {
        loop {
            if let Some(index) = self.responses.iter().position(|message| message["id"] == json!(id)) {
                return self.responses.remove(index);
            }
            self.read_message(&format!("a response to request {id}"));
        }
    }

    /// Reads until a progress notification for `token` has arrived.
    fn wait_for_progress(&mut self, token: &str) {
        while self.progress(token).is_empty() {
            self.read_message(&format!("progress for {token}"));
        }
    }

    /// Reads one message into `responses` or `notifications`. Every stdout
    /// line must be a JSON-RPC 2.0 message.
    fn read_message(&mut self, awaited: &str) {
        let line = self.lines.recv_timeout(DEADLINE).unwrap_or_else(|error| {
            panic!("no {awaited} ({error}); stderr: {}", std::fs::read_to_string(&self.stderr_path).unwrap_or_default())
        });
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|error| panic!("not JSON on stdout ({error}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if message.get("id").is_some() && message.get("method").is_none() {
            self.responses.push(message);
        } else if message.get("id").is_none() {
            self.notifications.push(message);
        } else {
            panic!("unexpected request from the server: {line}");
        }
    }

    /// `tools/call`; returns the result (a protocol error fails the test).
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        response.get("result").cloned().unwrap_or_else(|| panic!("protocol error for {name}: {response}"))
    }

    /// `tools/call` with a progress token.
    fn call_with_progress(&mut self, name: &str, arguments: Value, token: &str) -> Value {
        let id = self.send_call_with_progress(name, arguments, token);
        let response = self.response(id);
        response.get("result").cloned().unwrap_or_else(|| panic!("protocol error for {name}: {response}"))
    }

    fn send_call_with_progress(&mut self, name: &str, arguments: Value, token: &str) -> u64 {
        self.send_request(
            "tools/call",
            json!({"name": name, "arguments": arguments, "_meta": {"progressToken": token}}),
        )
    }

    /// The progress notifications sent for `token`.
    fn progress(&self, token: &str) -> Vec<Value> {
        self.notifications
            .iter()
            .filter(|message| message["method"] == "notifications/progress")
            .map(|message| message["params"].clone())
            .filter(|params| params["progressToken"] == token)
            .collect()
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        // Closing stdin ends the session; the process exits on its own.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a successful tool result.
#[track_caller]
fn success_text(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}")).to_string()
}

/// The text of a tool error.
#[track_caller]
fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}")).to_string()
}

fn sample_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("sample");
    repo.write(
        "app/search.go",
        "package app\n\n// ParseFlags reads the search flags.\nfunc ParseFlags(args []string) string {\n\treturn args[0]\n}\n\nfunc Unrelated() int {\n\treturn 42\n}\n",
    );
    repo.write("docs/guide.md", "# Search flags\n\nHow search flags are parsed and ranked.\n");
    repo.write("README.md", "# Sample\n");
    repo
}

#[test]
fn tools_are_listed_with_strict_schemas_and_search_reports_its_index_build() {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "64");
    let repo = sample_repo(&env);
    // The server runs outside the repository; calls name it with `cwd`.
    let mut session = McpSession::start(&env, &env.work());

    let listed = session.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search", "explore", "review", "simplify", "task_wait", "task_status", "project_id"]);
    for tool in tools {
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{tool}");
        assert_eq!(schema["additionalProperties"], false, "{tool}");
        assert!(schema["properties"]["cwd"].is_object(), "{tool}");
        assert!(!tool["description"].as_str().unwrap().is_empty(), "{tool}");
    }
    let required =
        |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap()["inputSchema"]["required"].clone();
    assert_eq!(required("search"), json!(["query"]));
    assert_eq!(required("explore"), json!(["question"]));
    assert_eq!(required("task_wait"), json!(["id"]));
    assert_eq!(required("task_status"), json!(["id"]));
    let search_properties = tools[0]["inputSchema"]["properties"].as_object().unwrap();
    let mut search_fields: Vec<&str> = search_properties.keys().map(String::as_str).collect();
    search_fields.sort();
    assert_eq!(search_fields, ["code", "cwd", "limit", "no_tests", "query", "remote", "rev", "scope"]);

    // The first search builds the index and reports it as progress.
    let root = repo.path().display().to_string();
    let arguments = json!({"query": "where are search flags parsed", "cwd": root, "limit": 3});
    let result = session.call_with_progress("search", arguments, "build");
    let text = success_text(&result);
    let output: Value = serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}"));
    assert_eq!(output["query"], "where are search flags parsed");
    assert_eq!(output["source"]["root"], json!(root));
    assert_eq!(output["retrieval"]["index"], "miss", "{text}");
    let progress = session.progress("build");
    assert!(!progress.is_empty(), "progress notifications during the index build: {:?}", session.notifications);
    assert!(
        progress.iter().any(|params| params["message"].as_str().unwrap().starts_with("search: building embeddings 0/")
            && params["total"].as_f64().unwrap() >= 1.0),
        "{progress:?}"
    );
    let values: Vec<f64> = progress.iter().map(|params| params["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|pair| pair[0] <= pair[1]), "progress never goes back: {values:?}");

    // The same search through the CLI gives the same results, now from the
    // warm index; without a token no progress is sent.
    let cli = env.run_in(repo.path(), &["search", "--format", "json", "--limit", "3", "where are search flags parsed"]);
    let cli_output: Value = serde_json::from_str(&cli.success()).unwrap();
    let before = session.notifications.len();
    let warm = session.call("search", json!({"query": "where are search flags parsed", "cwd": root, "limit": 3}));
    let warm: Value = serde_json::from_str(&success_text(&warm)).unwrap();
    assert_eq!(warm["retrieval"]["index"], "hit");
    assert_eq!(warm["results"], cli_output["results"]);
    assert_eq!(warm["results"].as_array().unwrap().len(), 3);
    assert_eq!(session.notifications.len(), before);

    // Bad arguments are tool errors naming what is wrong.
    let unknown = error_text(&session.call("search", json!({"query": "flags", "cwd": root, "bogus": 1})));
    assert!(unknown.starts_with("error: invalid arguments for search: unknown field `bogus`"), "{unknown}");
    let missing = error_text(&session.call("search", json!({"cwd": root})));
    assert!(missing.contains("missing field `query`"), "{missing}");
    // A value only the daemon checks fails with the CLI's own message.
    let cli_failure = env.run_in(repo.path(), &["search", "--limit", "1000", "flags"]);
    let expected = cli_failure.failure().trim_end().to_string();
    let range = error_text(&session.call("search", json!({"query": "flags", "cwd": root, "limit": 1000})));
    assert_eq!(range, expected);
    let missing_dir = error_text(&session.call("project_id", json!({"cwd": "no-such-folder"})));
    assert!(missing_dir.starts_with("error: cannot change to the directory "), "{missing_dir}");
    assert!(missing_dir.contains("\nhint: cwd takes an existing directory"), "{missing_dir}");

    // `cwd` relative to the server's directory; project_id as the CLI prints it.
    let project = success_text(&session.call("project_id", json!({"cwd": "sample"})));
    assert_eq!(format!("{project}\n"), env.run_in(repo.path(), &["project_id"]).success());
    // An unknown tool is a protocol error.
    let unknown_tool = session.request("tools/call", json!({"name": "no_such_tool", "arguments": {}}));
    assert!(unknown_tool["error"]["message"].as_str().unwrap().contains("no_such_tool"), "{unknown_tool}");
}

const REVIEW: &str = r#"{"summary":"One readme line is unexplained.","recommendation":"COMMENT","findings":[{"severity":"MEDIUM","aspect":"maintainability","title":"Unexplained line","impact":"Readers cannot tell why it exists.","evidences":[{"title":"The new line","path":"README.md","line_start":2,"line_end":2}],"proposed_fix":"Explain the line."}]}"#;

#[test]
fn review_launches_a_task_that_task_status_and_task_wait_follow() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-mcp-secret");
    let repo = env.repo("inspected");
    repo.write("README.md", "hello\n");
    repo.commit_all("initial");
    repo.write("README.md", "hello\nworld\n");
    // The model's first answer is held, so the task is seen running.
    fake.push(Reply::Held(events::tool_calls(
        &[("call_diff", "review_diff", r#"{"max_bytes":4096,"max_lines":200}"#)],
        events::usage(100, 0, 10),
    )));
    fake.push(Reply::Events(events::text_reply(REVIEW, events::usage(200, 0, 20))));
    let mut session = McpSession::start(&env, repo.path());

    let launch = success_text(&session.call("review", json!({"mode": "uncommitted", "prompt": "readme"})));
    let launch: Value = serde_json::from_str(&launch).unwrap();
    assert_eq!(launch["command"], "review");
    assert!(launch["pid"].as_u64().unwrap() > 0, "{launch}");
    let id = launch["id"].as_str().unwrap().to_string();
    assert!(fake.wait_for_requests(1, DEADLINE), "the task reached the model");

    let status = success_text(&session.call("task_status", json!({"id": id})));
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["id"], json!(id));
    assert_eq!(status["command"], "review");
    assert_eq!(status["state"], "running", "{status}");
    assert!(!status["phase"].as_str().unwrap().is_empty(), "{status}");
    let running = error_text(&session.call("task_wait", json!({"id": id, "block": false})));
    assert!(running.starts_with(&format!("error: background task {id} is still running (phase ")), "{running}");

    // A blocking wait reports the task's phases, then returns the report.
    let waiting = session.send_call_with_progress("task_wait", json!({"id": id}), "wait");
    session.wait_for_progress("wait");
    fake.release();
    let response = session.response(waiting);
    let report = success_text(&response["result"]);
    let cli = env.run_in(repo.path(), &["review", "--wait", &id]).success();
    assert_eq!(format!("{report}\n"), cli, "the report the CLI prints");
    let mut expected: Value = serde_json::from_str(REVIEW).unwrap();
    expected["checks"] = json!([]);
    assert_eq!(serde_json::from_str::<Value>(&report).unwrap(), expected);
    let progress = session.progress("wait");
    assert!(
        progress.iter().any(|params| params["message"].as_str().unwrap().starts_with("review: waiting (")),
        "{progress:?}"
    );
    let done = success_text(&session.call("task_status", json!({"id": id})));
    assert_eq!(serde_json::from_str::<Value>(&done).unwrap()["state"], "succeeded");

    // A launch failure is a tool error with the CLI's message.
    let conflict = error_text(&session.call("simplify", json!({"mode": "staged", "commit": "HEAD"})));
    let cli = env.run_in(repo.path(), &["simplify", "--staged", "--commit", "HEAD"]);
    assert_eq!(conflict, cli.failure().trim_end());
    let unknown = error_text(&session.call("task_wait", json!({"id": "not-a-task-id"})));
    assert!(unknown.starts_with("error: "), "{unknown}");
}

/// A report that had terminal controls removed comes back from
/// `task_wait` clean, with the CLI's warning line as a second text block.
#[test]
fn task_wait_says_when_terminal_controls_were_removed() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-mcp-secret");
    let repo = env.repo("inspected");
    repo.write("README.md", "hello\n");
    repo.commit_all("initial");
    repo.write("README.md", "hello\nworld\n");
    let hostile = REVIEW.replace("One readme line", "One readme\u{1b}[31m line");
    fake.push(Reply::Events(events::text_reply(&hostile, events::usage(200, 0, 20))));
    let mut session = McpSession::start(&env, repo.path());
    let launch = success_text(&session.call("review", json!({"mode": "uncommitted"})));
    let id = serde_json::from_str::<Value>(&launch).unwrap()["id"].as_str().unwrap().to_string();

    let result = session.call("task_wait", json!({"id": id}));
    let report: Value = serde_json::from_str(&success_text(&result)).unwrap();
    assert_eq!(report["summary"], "One readme line is unexplained.");
    assert_eq!(
        result["content"][1]["text"], "warning: removed 5 bytes of terminal control sequences from the model's answer",
        "{result}"
    );
}

/// An index build reports how many chunks are done as it goes: the
/// notifications' `progress` grows past 0, and `total` is sent only once
/// the walk has found every file (issue 32: progress stayed at 0.0).
#[test]
fn search_progress_grows_as_chunks_are_embedded() {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "16");
    env.set_env("OPENAI_EMBEDDING_BATCH_INPUTS", "2");
    env.set_env("OPENAI_EMBEDDING_CONCURRENCY", "1");
    let repo = env.repo("many");
    for file in 0..60 {
        repo.write(&format!("src/f{file}.go"), &format!("package src\n\nfunc F{file}() int {{\n\treturn {file}\n}}\n"));
    }
    repo.commit_all("many");
    let mut session = McpSession::start(&env, &env.work());
    let root = repo.path().display().to_string();
    let result = session.call_with_progress("search", json!({"query": "F1", "cwd": root, "limit": 3}), "grow");
    success_text(&result);
    let progress = session.progress("grow");
    let values: Vec<f64> = progress.iter().map(|params| params["progress"].as_f64().unwrap()).collect();
    assert!(values.iter().any(|value| *value > 0.0), "progress never left 0: {progress:?}");
    assert!(values.windows(2).all(|pair| pair[0] <= pair[1]), "progress never goes back: {values:?}");
    for params in &progress {
        if let Some(total) = params["total"].as_f64() {
            assert!(!params["message"].as_str().unwrap().contains('+'), "a growing total is not sent: {params}");
            assert!(total >= params["progress"].as_f64().unwrap(), "{params}");
        }
    }
}

/// A stdin line that is not JSON gets JSON-RPC's parse error (-32700, id
/// null) instead of silence, and the session goes on.
#[test]
fn a_line_that_is_not_json_is_answered_with_a_parse_error_and_the_session_goes_on() {
    let env = TestEnv::new();
    let mut session = McpSession::start(&env, &env.work());
    session.send_raw(b"this is not json");
    session.send_raw(br#"{"jsonrpc": "2.0", "id": 41, "method": "tools/list""#);
    session.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": \"\xff\"}");
    let listed = session.request("tools/list", json!({}));
    assert!(listed["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{listed}");
    // Each line is answered before the next one is read, so the errors were
    // written before the tools/list response.
    let errors: Vec<&Value> = session.responses.iter().filter(|message| message["id"].is_null()).collect();
    assert_eq!(errors.len(), 3, "{:?}", session.responses);
    for error in errors {
        assert_eq!(error["error"]["code"], -32700, "{error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("parse error: the line is not"), "{error}");
    }
    assert!(session.responses.iter().all(|message| message["id"] != json!(41)), "{:?}", session.responses);
}

/// The MCP `cwd` gets the CLI's guard: a relative `cwd` that climbs to
/// the root of the file system is refused before anything is read or
/// sent, like `/` itself.
#[test]
fn a_cwd_that_climbs_to_the_root_is_refused() {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "32");
    let dir = env.root().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let climb = vec![".."; dir.components().count()].join("/");
    let mut session = McpSession::start(&env, &dir);
    for cwd in [climb.as_str(), "/"] {
        let refused = error_text(&session.call("search", json!({"query": "dpkg status", "cwd": cwd})));
        assert!(refused.contains("it is the root of the file system"), "{cwd}: {refused}");
    }
    assert_eq!(fake.requests(), 0, "nothing was sent to the embeddings server");
}

#[test]
fn the_search_tool_needs_no_key() {
    // Coding agents start MCP servers with a minimal environment: no
    // embeddings key, and here a model folder instead of a download.
    let mut env = TestEnv::new();
    env.set_env("GIT_AGENT_MODEL_DIR", &crate::local_embeddings::tiny_model().display().to_string());
    let repo = sample_repo(&env);
    let mut session = McpSession::start(&env, &env.work());
    let root = repo.path().display().to_string();
    let result = session.call("search", json!({"query": "where are search flags parsed", "cwd": root, "limit": 3}));
    let output: Value = serde_json::from_str(&success_text(&result)).unwrap();
    assert_eq!(output["retrieval"]["embedding_backend"], "local", "{output}");
    assert_eq!(output["retrieval"]["dimensions"], 32, "{output}");
}

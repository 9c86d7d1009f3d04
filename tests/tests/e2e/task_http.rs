//! The daemon socket's plain HTTP/1.1 task view, as an editor extension
//! without a gRPC stack uses it: a raw Unix stream writes the request
//! bytes and reads the JSON (or the server-sent events) back, while a
//! real review runs against the fake OpenAI server.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

const READ_WAIT: Duration = Duration::from_secs(60);

const REVIEW: &str = r#"{"summary":"One readme line is unexplained.","recommendation":"COMMENT","findings":[{"severity":"MEDIUM","aspect":"maintainability","title":"Unexplained line","impact":"Readers cannot tell why it exists.","evidences":[{"title":"The new line","path":"README.md","line_start":2,"line_end":2}],"proposed_fix":"Explain the line."}]}"#;

/// A parsed HTTP/1.1 response.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|error| panic!("{error}: {:?}", self.body))
    }
}

fn request_bytes(method: &str, path: &str) -> Vec<u8> {
    format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").into_bytes()
}

fn connect(socket: &Path) -> UnixStream {
    let stream = UnixStream::connect(socket).expect("connect to the daemon socket");
    stream.set_read_timeout(Some(READ_WAIT)).unwrap();
    stream
}

/// Decodes a `Transfer-Encoding: chunked` body.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|pair| pair == b"\r\n").expect("a chunk size line");
        let size_text = std::str::from_utf8(&raw[..line_end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).expect("a hex chunk size");
        raw = &raw[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[..size]);
        assert_eq!(&raw[size..size + 2], b"\r\n", "a chunk ends with CRLF");
        raw = &raw[size + 2..];
    }
}

fn parse(raw: &[u8]) -> Response {
    let head_end = raw.windows(4).position(|window| window == b"\r\n\r\n").expect("a complete response head");
    let head = std::str::from_utf8(&raw[..head_end]).unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status = status_line[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_string(), value.trim().to_string())
        })
        .collect();
    let rest = &raw[head_end + 4..];
    let chunked = headers
        .iter()
        .any(|(name, value)| name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    Response { status, headers, body: String::from_utf8(body).unwrap() }
}

/// Sends one request and reads the whole response.
fn request(socket: &Path, method: &str, path: &str) -> Response {
    let mut stream = connect(socket);
    stream.write_all(&request_bytes(method, path)).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    parse(&raw)
}

fn get(socket: &Path, path: &str) -> Response {
    request(socket, "GET", path)
}

/// Reads from `stream` into `raw` until `until` holds of what arrived.
fn read_until(stream: &mut UnixStream, raw: &mut Vec<u8>, until: impl Fn(&[u8]) -> bool) {
    let deadline = Instant::now() + READ_WAIT;
    let mut buffer = [0u8; 4096];
    while !until(raw) {
        assert!(Instant::now() < deadline, "timed out; so far: {}", String::from_utf8_lossy(raw));
        let read = stream.read(&mut buffer).expect("read the event stream");
        assert!(read > 0, "the stream ended early: {}", String::from_utf8_lossy(raw));
        raw.extend_from_slice(&buffer[..read]);
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
}

/// The `status` events of an event-stream body, in order.
fn status_events(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter(|event| !event.is_empty())
        .map(|event| {
            let mut lines = event.lines();
            assert_eq!(lines.next(), Some("event: status"), "{event:?}");
            let data = lines.next().and_then(|line| line.strip_prefix("data: ")).expect("a data line");
            assert_eq!(lines.next(), None, "{event:?}");
            serde_json::from_str(data).unwrap()
        })
        .collect()
}

fn setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-task-http");
    let repo = env.repo("viewed");
    repo.write("README.md", "hello\n");
    repo.commit_all("initial");
    repo.write("README.md", "hello\nworld\n");
    (env, fake, repo)
}

fn launch_review(env: &TestEnv, repo: &GitRepo) -> String {
    let run = env.run_in(repo.path(), &["review"]);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let launched: Value = serde_json::from_str(&run.stdout_text()).unwrap();
    launched["id"].as_str().unwrap().to_string()
}

#[test]
fn the_task_view_lists_shows_and_streams_a_review_to_its_end() {
    let (env, fake, repo) = setup();
    fake.push(Reply::Events(events::tool_calls(
        &[("call_diff", "review_diff", r#"{"max_bytes":4096,"max_lines":200}"#)],
        events::usage(100, 0, 10),
    )));
    fake.push(Reply::Held(events::text_reply(REVIEW, events::usage(200, 0, 20))));
    let id = launch_review(&env, &repo);
    let project = env.run_in(repo.path(), &["project_id"]).success().trim().to_string();
    let socket = env.socket_path();
    // The model's second answer is held: the task is running now.
    assert!(fake.wait_for_requests(2, READ_WAIT), "the review never asked the model twice");

    let list = get(&socket, &format!("/v1/tasks?project_id={project}"));
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.header("content-type"), Some("application/json"));
    let tasks = list.json()["tasks"].as_array().unwrap().clone();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0];
    assert_eq!(task["id"], json!(id));
    assert_eq!(task["command"], json!("review"));
    assert_eq!(task["project_id"], json!(project));
    assert_eq!(task["state"], json!("running"));
    let started = task["started_unix_millis"].as_i64().unwrap();
    assert!(started > 1_700_000_000_000, "{task}");
    assert!(task["updated_unix_millis"].as_i64().unwrap() >= started);

    let one = get(&socket, &format!("/v1/tasks/{id}"));
    assert_eq!(one.status, 200, "{}", one.body);
    let one = one.json();
    assert_eq!(one["id"], json!(id));
    assert_eq!(one["state"], json!("running"));
    let mut keys: Vec<&str> = one.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["command", "id", "message", "phase", "project_id", "started_unix_millis", "state", "updated_unix_millis"]
    );

    // The event stream: the running state arrives while the model is
    // held, the terminal state once it answers, and then the stream ends.
    let mut stream = connect(&socket);
    stream.write_all(&request_bytes("GET", &format!("/v1/tasks/{id}/events"))).unwrap();
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, |raw| contains(raw, "\"state\":\"running\""));
    assert!(!contains(&raw, "\"state\":\"succeeded\""), "the task ended before the release");
    fake.release();
    stream.read_to_end(&mut raw).expect("read the event stream to its end");
    let response = parse(&raw);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let statuses = status_events(&response.body);
    assert!(statuses.len() >= 2, "{statuses:?}");
    assert_eq!(statuses[0]["state"], json!("running"));
    let last = statuses.last().unwrap();
    assert_eq!(last["state"], json!("succeeded"), "{statuses:?}");
    assert_eq!(last["id"], json!(id));
    for status in &statuses[..statuses.len() - 1] {
        assert_eq!(status["state"], json!("running"), "only the last event is terminal: {statuses:?}");
    }

    // The finished task: the one-task view and the list agree, and its
    // event stream is the terminal state alone.
    let report = env.run_in(repo.path(), &["review", "--wait", &id]).success();
    assert!(report.contains("One readme line is unexplained."), "{report}");
    assert_eq!(get(&socket, &format!("/v1/tasks/{id}")).json()["state"], json!("succeeded"));
    let listed = get(&socket, &format!("/v1/tasks?project_id={project}")).json();
    assert_eq!(listed["tasks"][0]["state"], json!("succeeded"));
    let ended = get(&socket, &format!("/v1/tasks/{id}/events"));
    let statuses = status_events(&ended.body);
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_eq!(statuses[0]["state"], json!("succeeded"));
}

#[test]
fn the_task_view_answers_bad_requests_with_json_errors() {
    let env = TestEnv::new();
    let project = env.run_in(&env.work(), &["project_id"]).success().trim().to_string();
    let socket = env.socket_path();

    let empty = get(&socket, &format!("/v1/tasks?project_id={project}"));
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert_eq!(empty.json(), json!({"tasks": []}));

    let unknown = get(&socket, "/v1/tasks/AAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert!(unknown.json()["error"].as_str().unwrap().contains("unknown background task"), "{}", unknown.body);
    assert_eq!(get(&socket, "/v1/tasks/AAAAAAAAAAAAAAAAAAAAAAAAAAAA/events").status, 404);

    let malformed = get(&socket, "/v1/tasks/not-an-id");
    assert_eq!(malformed.status, 400, "{}", malformed.body);
    assert!(malformed.json()["error"].as_str().unwrap().contains("invalid background task ID"), "{}", malformed.body);

    for (path, expected) in [
        ("/v1/tasks", "project_id is required"),
        ("/v1/tasks?project_id=abc", "invalid project_id"),
        ("/v1/tasks?project=abc", "unknown query parameter"),
    ] {
        let response = get(&socket, path);
        assert_eq!(response.status, 400, "{path}: {}", response.body);
        assert_eq!(response.header("content-type"), Some("application/json"));
        let message = response.json()["error"].as_str().unwrap().to_string();
        assert!(message.contains(expected), "{path}: {message}");
    }

    let nowhere = get(&socket, "/v2/things");
    assert_eq!(nowhere.status, 404);
    assert!(nowhere.json()["error"].is_string());

    let posted = request(&socket, "POST", &format!("/v1/tasks?project_id={project}"));
    assert_eq!(posted.status, 405, "{}", posted.body);
    assert_eq!(posted.header("allow"), Some("GET"));
    assert!(posted.json()["error"].as_str().unwrap().contains("read-only"));
    assert_eq!(request(&socket, "DELETE", "/v1/tasks/AAAAAAAAAAAAAAAAAAAAAAAAAAAA").status, 405);

    // gRPC on the same socket still works.
    env.run_in(&env.work(), &["project_id"]).success();
}

/// A connection made with another effective uid (one thread switches its
/// own credentials through the raw system call, which unlike libc's
/// wrapper leaves the other threads alone) gets no answer at all.
#[test]
fn the_task_view_refuses_another_user() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("only root can connect as another user; this check runs in CI, which runs as root");
        return;
    }
    let env = TestEnv::new();
    let project = env.run_in(&env.work(), &["project_id"]).success().trim().to_string();
    let socket = env.socket_path();
    // Open the folders and the socket to everyone, so only the daemon's
    // peer-credential check stands between another user and the daemon.
    for path in [env.root().to_path_buf(), env.runtime_dir(), socket.parent().unwrap().to_path_buf()] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = format!("/v1/tasks?project_id={project}");

    let foreign_socket = socket.clone();
    let foreign_path = path.clone();
    let answer = std::thread::spawn(move || {
        const NOBODY: libc::uid_t = 65534;
        const UNCHANGED: libc::uid_t = libc::uid_t::MAX;
        // SAFETY: setresuid changes only this thread's credentials here.
        let changed = unsafe { libc::syscall(libc::SYS_setresuid, UNCHANGED, NOBODY, UNCHANGED) };
        assert_eq!(changed, 0, "cannot switch this thread to uid {NOBODY}");
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::syscall(libc::SYS_geteuid) }, i64::from(NOBODY));
        let mut stream = connect(&foreign_socket);
        let _ = stream.write_all(&request_bytes("GET", &foreign_path));
        let mut raw = Vec::new();
        match stream.read_to_end(&mut raw) {
            Ok(_) => raw,
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => raw,
            Err(error) => panic!("reading the refused connection: {error}"),
        }
    })
    .join()
    .unwrap();
    assert!(answer.is_empty(), "another user got an answer: {}", String::from_utf8_lossy(&answer));
    // The owner is still served.
    assert_eq!(get(&socket, &path).status, 200);
}

//! How a running search reports itself on the caller's stderr:
//!
//! - transient progress lines (waiting for the index worker, building or
//!   updating embeddings) when stderr is a terminal and neither `--debug`
//!   nor `--agent` is set; the client clears them before stdout;
//! - `--agent`: a private HTTP endpoint on a Unix socket serving
//!   `GET /progress` JSON, started only when the search has to wait or
//!   embed, announced by one endpoint JSON line on stderr, stopped when the
//!   command ends;
//! - `--debug`: console diagnostic events (`search_skip`, `search_timing`,
//!   `search_cpu`, `search_embed_plan`, `search_embed_progress`,
//!   `search_index`).
//!
//! Updates are serialized behind one lock, so they never interleave.

use crate::index::refresh::Reporter;
use crate::source::discovery::SkipReason;
use git_agent_shared::timefmt;
use gitagent_runtime::output::Output;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// A value of a diagnostic field.
pub enum Field {
    Str(String),
    Int(i64),
    Duration(Duration),
}

/// The progress JSON served by `--agent`.
#[derive(Debug, Clone, serde::Serialize)]
struct Snapshot {
    status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    detail: String,
    done: usize,
    total: usize,
    reused: usize,
    /// The walk is still finding files: `total` is what it found so far,
    /// and `percent` stays 0 until the total is known.
    counting: bool,
    percent: f64,
    elapsed_ms: u128,
    updated_at: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    error: String,
}

impl Snapshot {
    fn new(status: &str) -> Self {
        Self {
            status: status.into(),
            detail: String::new(),
            done: 0,
            total: 0,
            reused: 0,
            counting: false,
            percent: 0.0,
            elapsed_ms: 0,
            updated_at: now_text(),
            error: String::new(),
        }
    }
}

fn now_text() -> String {
    timefmt::format_rfc3339(jiff::Timestamp::now())
}

/// The `--agent` endpoint while it runs.
struct AgentServer {
    snapshot: Arc<Mutex<Snapshot>>,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

enum Agent {
    Off,
    NotStarted { temp_dir: PathBuf },
    Running(AgentServer),
    Failed,
}

struct State {
    agent: Agent,
    progress_shown: bool,
    /// The last build update, so the end of counting can be told with the
    /// counts it had.
    last: Option<Update>,
    /// The single flight this search holds, whose waiters read its
    /// progress.
    holding: Option<Arc<Holder>>,
    /// The waiting line already written to a stderr that is no terminal.
    waiting_said: bool,
}

/// Hears a search step's name and duration.
pub type TimingObserver = Box<dyn Fn(&str, Duration) + Send + Sync>;

/// See the module documentation.
pub struct Feedback {
    output: Output,
    debug: bool,
    /// Hears every step timing (explore turns them into its phases).
    timings: Option<TimingObserver>,
    terminal: bool,
    runtime: tokio::runtime::Handle,
    state: Mutex<State>,
}

/// The search that holds a single flight, as the searches waiting behind
/// it see it: what it builds and its last progress.
#[derive(Debug, Default)]
pub struct Holder {
    /// The project folder or sanitized remote URL being indexed.
    pub what: String,
    last: Mutex<Option<Update>>,
}

impl Holder {
    pub fn new(what: String) -> Self {
        Self { what, last: Mutex::new(None) }
    }

    /// What a waiting search says: whose build it waits for and how far
    /// along that build is.
    pub fn waiting_text(holder: Option<&Holder>) -> String {
        let Some(holder) = holder else {
            return "search: waiting for another process's index build".to_string();
        };
        let last = *lock(&holder.last);
        let progress = match last {
            Some(update) if update.total > 0 && update.counting => {
                format!(", {}/{}+ chunks embedded so far", update.done, update.total)
            }
            Some(update) if update.total > 0 => format!(", {}/{} chunks embedded", update.done, update.total),
            _ => String::new(),
        };
        format!("search: waiting for the index build of {}{progress}", holder.what)
    }
}

/// One progress update.
#[derive(Debug, Clone, Copy, Default)]
pub struct Update {
    pub waiting: bool,
    pub done: usize,
    pub total: usize,
    pub reused: usize,
    pub elapsed: Duration,
    /// The walk is still finding files, so `total` can still grow.
    pub counting: bool,
}

impl Feedback {
    pub fn new(output: Output, debug: bool, agent: bool, stderr_is_terminal: bool, temp_dir: &Path) -> Self {
        let agent = if agent { Agent::NotStarted { temp_dir: temp_dir.to_path_buf() } } else { Agent::Off };
        let terminal = stderr_is_terminal && !debug && matches!(agent, Agent::Off);
        Self {
            output,
            debug,
            timings: None,
            terminal,
            runtime: tokio::runtime::Handle::current(),
            state: Mutex::new(State { agent, progress_shown: false, last: None, holding: None, waiting_said: false }),
        }
    }

    /// This reporter, with `observer` hearing every step timing.
    pub fn with_timings(mut self, observer: TimingObserver) -> Self {
        self.timings = Some(observer);
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reports progress to the terminal or the `--agent` endpoint.
    pub fn update(&self, update: Update) {
        let mut state = self.state();
        if !update.waiting {
            state.last = Some(update);
            if let Some(holder) = &state.holding {
                *lock(&holder.last) = Some(update);
            }
        }
        if self.terminal {
            let text = terminal_text(&update);
            if text.is_empty() {
                if state.progress_shown {
                    self.output.progress("");
                    state.progress_shown = false;
                }
            } else {
                self.output.progress(text);
                state.progress_shown = true;
            }
        }
        self.ensure_agent(&mut state);
        if let Agent::Running(server) = &state.agent {
            let mut snapshot = lock(&server.snapshot);
            let mut status = if update.waiting { "waiting".to_string() } else { "indexing".to_string() };
            let mut percent = if update.total > 0 && !update.counting {
                update.done as f64 / update.total as f64 * 100.0
            } else {
                0.0
            };
            if status == "indexing" && update.total > 0 && update.done >= update.total && !update.counting {
                status = "done".into();
                percent = 100.0;
            }
            *snapshot = Snapshot {
                status,
                done: update.done,
                total: update.total,
                reused: update.reused,
                counting: update.counting,
                percent,
                elapsed_ms: update.elapsed.as_millis(),
                ..Snapshot::new("")
            };
        }
    }

    /// This search holds the single flight: its progress is `holder`'s.
    pub fn hold(&self, holder: Arc<Holder>) {
        self.state().holding = Some(holder);
    }

    /// This search waits behind `holder` (`None`: another process): the
    /// line says whose build and how far along it is, rewritten on a
    /// terminal and served by `--agent` (as the status detail); on a
    /// stderr that is no terminal, said once.
    pub fn waiting_behind(&self, holder: Option<&Holder>) {
        let text = Holder::waiting_text(holder);
        let mut state = self.state();
        if self.debug {
            if !state.waiting_said {
                state.waiting_said = true;
                self.output.stderr(render_event(SystemTime::now(), "search_wait", &[("detail", Field::Str(text))]));
            }
            return;
        }
        if self.terminal {
            self.output.progress(text);
            state.progress_shown = true;
            return;
        }
        if matches!(state.agent, Agent::Off) {
            if !state.waiting_said {
                state.waiting_said = true;
                self.output.stderr(format!("{text}\n"));
            }
            return;
        }
        self.ensure_agent(&mut state);
        if let Agent::Running(server) = &state.agent {
            let mut snapshot = lock(&server.snapshot);
            *snapshot =
                Snapshot { detail: text.trim_start_matches("search: ").to_string(), ..Snapshot::new("waiting") };
        }
    }

    /// The walk found every file: the last update's total is final, and
    /// progress shows it with its percentage from now on.
    pub fn counted(&self) {
        let last = self.state().last.filter(|last| last.counting);
        if let Some(last) = last {
            self.update(Update { counting: false, ..last });
        }
    }

    /// Reports a remote network operation (`status=fetching`) with its
    /// sanitized detail: rewritten in place on a terminal, served by the
    /// `--agent` endpoint (started now if need be), and a `search_fetch`
    /// event under `--debug`.
    pub fn fetching(&self, detail: &str) {
        let mut state = self.state();
        self.show_fetch(&mut state, detail);
    }

    /// One fetch report: the `search_fetch` event, the terminal line, the
    /// endpoint's `fetching` status.
    fn show_fetch(&self, state: &mut State, detail: &str) {
        if self.debug {
            let fields = [("detail", Field::Str(detail.to_string()))];
            self.output.stderr(render_event(SystemTime::now(), "search_fetch", &fields));
        }
        if self.terminal {
            self.output.progress(format!("search: fetching {detail}"));
            state.progress_shown = true;
        }
        self.ensure_agent(state);
        if let Agent::Running(server) = &state.agent {
            *lock(&server.snapshot) = Snapshot { detail: detail.to_string(), ..Snapshot::new("fetching") };
        }
    }

    /// Ends the reporting: clears terminal progress and marks the endpoint
    /// complete or failed.
    pub fn finish(&self, error: Option<&str>) {
        let mut state = self.state();
        if state.progress_shown {
            self.output.progress("");
            state.progress_shown = false;
        }
        if let Agent::Running(server) = &state.agent {
            let mut snapshot = lock(&server.snapshot);
            match error {
                Some(error) => {
                    snapshot.status = "error".into();
                    snapshot.error = error.to_string();
                }
                None if snapshot.status != "done" && snapshot.status != "error" => snapshot.status = "complete".into(),
                None => {}
            }
            snapshot.updated_at = now_text();
        }
    }

    /// One warning line on stderr, below any progress line (cleared first;
    /// the next update redraws it).
    pub fn warn(&self, line: &str) {
        let mut state = self.state();
        if state.progress_shown {
            self.output.progress("");
            state.progress_shown = false;
        }
        self.output.stderr(line.to_string());
    }

    /// Writes one console diagnostic event when `--debug` is on.
    pub fn event(&self, kind: &str, fields: &[(&str, Field)]) {
        if !self.debug {
            return;
        }
        let _state = self.state();
        self.output.stderr(render_event(SystemTime::now(), kind, fields));
    }

    pub fn debug(&self) -> bool {
        self.debug
    }

    /// Starts the `--agent` endpoint on the first report that needs it; a
    /// failure is one warning, and progress goes on without the endpoint.
    fn ensure_agent(&self, state: &mut State) {
        if let Agent::NotStarted { temp_dir } = &state.agent {
            state.agent = match self.start_agent(&temp_dir.clone()) {
                Ok(server) => Agent::Running(server),
                Err(error) => {
                    self.output.stderr(format!("warning: cannot start the progress endpoint: {error}\n"));
                    Agent::Failed
                }
            };
        }
    }

    fn start_agent(&self, temp_dir: &Path) -> std::io::Result<AgentServer> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new().prefix("git-agent-").tempdir_in(temp_dir)?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let address = dir.path().join("http.sock");
        let listener = std::os::unix::net::UnixListener::bind(&address)?;
        std::fs::set_permissions(&address, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        let snapshot = Arc::new(Mutex::new(Snapshot::new("waiting")));
        let stop = CancellationToken::new();
        let served = Arc::clone(&snapshot);
        let stopped = stop.clone();
        let _guard = self.runtime.enter();
        let listener = tokio::net::UnixListener::from_std(listener)?;
        let handler: gitagent_runtime::http::Handler = Arc::new(move |method, path| match (method, path) {
            (&gitagent_runtime::http::Method::GET, "/progress") => {
                gitagent_runtime::http::Answer::ok("application/json", super::output::to_json_line(&*lock(&served)))
            }
            _ => gitagent_runtime::http::Answer::not_found("not found; see GET /progress\n"),
        });
        self.runtime.spawn(gitagent_runtime::http::serve(listener, handler, stopped));
        let endpoint = serde_json::json!({
            "network": "unix",
            "address": address.display().to_string(),
            "url": "http://localhost/progress",
        });
        self.output.stderr(format!("{endpoint}\n"));
        Ok(AgentServer { snapshot, stop, _dir: dir })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn terminal_text(update: &Update) -> String {
    if update.waiting {
        return "search: waiting for index worker".into();
    }
    if update.total == 0 || (update.done >= update.total && !update.counting) {
        return String::new();
    }
    let action = if update.reused > 0 { "updating" } else { "building" };
    if update.counting {
        // The total grows as the walk finds files: no percentage yet.
        return format!(
            "search: {action} embeddings {}/{}+ chunks (still finding files, {})",
            update.done,
            update.total,
            timefmt::format_go_duration_ms(update.elapsed)
        );
    }
    if update.done == 0 {
        if update.reused > 0 {
            return format!("search: {action} embeddings 0/{} chunks ({} reused)", update.total, update.reused);
        }
        return format!("search: {action} embeddings 0/{} chunks", update.total);
    }
    let percent = update.done as f64 / update.total as f64 * 100.0;
    format!(
        "search: {action} embeddings {}/{} chunks ({percent:.1}%, {})",
        update.done,
        update.total,
        timefmt::format_go_duration_ms(update.elapsed)
    )
}

/// The console diagnostic line(s) of one event, in the one console form
/// of trace events ([`gitagent_runtime::trace::render_event`]).
pub fn render_event(at: SystemTime, kind: &str, fields: &[(&str, Field)]) -> String {
    let mut event = gitagent_runtime::trace::Event::new(kind);
    for (key, value) in fields {
        event = match value {
            Field::Str(text) => event.with(*key, text.as_str()),
            Field::Int(number) => event.with(*key, *number),
            Field::Duration(duration) => event.with(*key, timefmt::format_go_duration_ms(*duration)),
        };
    }
    let at = jiff::Timestamp::try_from(at).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    gitagent_runtime::trace::render_event(&timefmt::format_clock(at), &event, false)
}

impl crate::source::remote::FetchReporter for Feedback {
    fn fetching(&self, detail: &str) {
        Feedback::fetching(self, detail);
    }
}

impl Reporter for Feedback {
    fn skip(&self, path: &str, reason: SkipReason) {
        self.event("search_skip", &[("path", Field::Str(path.into())), ("reason", Field::Str(reason.as_str().into()))]);
    }

    fn timing(&self, step: &str, duration: Duration) {
        if let Some(observer) = &self.timings {
            observer(step, duration);
        }
        self.event("search_timing", &[("step", Field::Str(step.into())), ("duration", Field::Duration(duration))]);
    }

    fn cpu(&self, step: &str, cpu: Duration) {
        self.event("search_cpu", &[("step", Field::Str(step.into())), ("cpu", Field::Duration(cpu))]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_render_inline_or_wrapped() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(3 * 3600 + 4 * 60 + 5);
        assert_eq!(
            render_event(
                at,
                "search_skip",
                &[("path", Field::Str(".env".into())), ("reason", Field::Str("dot_file".into()))]
            ),
            "03:04:05 INF search_skip path=.env reason=dot_file\n"
        );
        assert_eq!(
            render_event(
                at,
                "x",
                &[("path", Field::Str("a b".into())), ("took", Field::Duration(Duration::from_millis(1500)))]
            ),
            "03:04:05 INF x path=\"a b\" took=1.5s\n"
        );
        let many: Vec<(&str, Field)> =
            ["a", "b", "c", "d", "e", "f", "g"].iter().map(|k| (*k, Field::Int(1))).collect();
        assert_eq!(render_event(at, "many", &many), "03:04:05 INF many\n  a=1 b=1 c=1 d=1 e=1 f=1 g=1\n");
    }

    /// Progress lines and debug events of one search's feedback.
    fn drain(events: &mut tokio::sync::mpsc::UnboundedReceiver<gitagent_runtime::output::Event>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(event) = events.try_recv() {
            match event {
                gitagent_runtime::output::Event::Progress(text) => out.push(text),
                gitagent_runtime::output::Event::Stderr(bytes) => out.push(String::from_utf8(bytes).unwrap()),
                _ => {}
            }
        }
        out
    }

    #[tokio::test]
    async fn fetch_reports_show_the_transfer_and_the_build_follows() {
        let temp = tempfile::tempdir().unwrap();
        let (output, mut events) = Output::new();
        let terminal = Feedback::new(output, false, false, true, temp.path());
        terminal.fetching("receiving objects from https://h/r.git: 10/40 objects, 1.0 KiB");
        terminal.fetching("received objects from https://h/r.git: 40/40 objects, 4.0 KiB, 12 resolved");
        terminal.update(Update { done: 2, total: 5, elapsed: Duration::from_millis(20), ..Update::default() });
        assert_eq!(
            drain(&mut events),
            [
                "search: fetching receiving objects from https://h/r.git: 10/40 objects, 1.0 KiB",
                "search: fetching received objects from https://h/r.git: 40/40 objects, 4.0 KiB, 12 resolved",
                "search: building embeddings 2/5 chunks (40.0%, 20ms)",
            ]
        );

        let (output, mut events) = Output::new();
        let debug = Feedback::new(output, true, false, false, temp.path());
        debug.fetching("receiving objects from https://h/r.git: 1/4 objects, 1.0 KiB");
        let lines = drain(&mut events);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("search_fetch detail=\"receiving objects from https://h/r.git: 1/4 objects, 1.0 KiB\"\n")
        );
    }

    #[test]
    fn terminal_lines() {
        assert_eq!(terminal_text(&Update { waiting: true, ..Update::default() }), "search: waiting for index worker");
        assert_eq!(terminal_text(&Update { total: 4, ..Update::default() }), "search: building embeddings 0/4 chunks");
        assert_eq!(
            terminal_text(&Update { total: 4, reused: 2, ..Update::default() }),
            "search: updating embeddings 0/4 chunks (2 reused)"
        );
        assert_eq!(
            terminal_text(&Update { done: 1, total: 4, elapsed: Duration::from_millis(20), ..Update::default() }),
            "search: building embeddings 1/4 chunks (25.0%, 20ms)"
        );
        assert_eq!(terminal_text(&Update { done: 4, total: 4, ..Update::default() }), "");
        // While the walk still finds files the total is a floor, with no
        // percentage that would grow with it.
        assert_eq!(
            terminal_text(&Update {
                done: 4,
                total: 4,
                counting: true,
                elapsed: Duration::from_millis(20),
                ..Update::default()
            }),
            "search: building embeddings 4/4+ chunks (still finding files, 20ms)"
        );
    }
}

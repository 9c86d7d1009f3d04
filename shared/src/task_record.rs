//! The durable record of one detached review or simplification task:
//! `~/.git-agent/<project-id>/background/<task-id>.json`, 0600 in a 0700
//! folder, written atomically. The record is the contract that outlives the
//! daemon: `--wait` reads it through the daemon when one answers and
//! directly when none does, so both sides share this module.
//!
//! The format is the spec's (versions 1 to 3; version 3 is written, so a
//! reader that follows the spec accepts it) and reads version 4 too, which
//! earlier builds of this project and the original implementation wrote:
//! a running record with a heartbeat, then the exact terminal `final` or
//! `error` event, plus bounded failure diagnostics for errors. The spec's
//! version 3 `turn` holds only `mode` and `parent_id`; the rest of a turn's
//! replay state (what `--follow-up` needs) goes in the final event's open
//! `value`, under [`TURN_KEY`] ([`Record::turn_metadata`] finds it in
//! either place). This module never contacts a daemon and never
//! reads the process environment.

use crate::private_fs;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The record version this build writes: the spec's newest.
pub const RECORD_VERSION: u32 = 3;
/// The newest record version this build reads: version 4 records were
/// written by earlier builds (and the original implementation), with the
/// whole replay state in `turn`.
pub const MAX_READ_VERSION: u32 = 4;
/// The key of a final event's `value` that holds a version 3 record's
/// whole turn metadata ([`TurnMetadata`]).
pub const TURN_KEY: &str = "turn";
/// The keys of a version 3 `turn` (spec: the turn's mode and parent ID).
const SPEC_TURN_KEYS: [&str; 2] = ["parent_id", "mode"];
/// How often a running task refreshes `updated_at`.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);
/// A running record not refreshed for this long has a dead producer.
pub const HEARTBEAT_STALE_AFTER: Duration = Duration::from_secs(30);
/// The largest record a reader accepts.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;
/// Caps of one failure-diagnostic payload.
pub const MAX_DIAGNOSTIC_BYTES: usize = 4 << 10;
pub const MAX_DIAGNOSTIC_LINES: usize = 40;
/// How many tool events a failure diagnostic keeps.
pub const MAX_DIAGNOSTIC_EVENTS: usize = 8;

const BACKGROUND_DIR: &str = "background";

/// The two commands that run as detached tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskCommand {
    Review,
    Simplify,
}

impl TaskCommand {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskCommand::Review => "review",
            TaskCommand::Simplify => "simplify",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "review" => Some(TaskCommand::Review),
            "simplify" => Some(TaskCommand::Simplify),
            _ => None,
        }
    }
}

impl fmt::Display for TaskCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A globally unique task identifier: 26 characters of RFC 4648 base32
/// (A-Z, 2-7), 130 random bits. Readers accept 20 to 128 such characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(String);

impl TaskId {
    /// A fresh identifier from the operating system's random source.
    pub fn generate() -> Result<Self, RecordError> {
        let mut bytes = [0u8; 17];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut random| random.read_exact(&mut bytes))
            .map_err(|source| RecordError::Random { source })?;
        const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        let mut bits = 0u32;
        let mut held = 0u32;
        let mut id = String::with_capacity(26);
        for byte in bytes {
            bits = (bits << 8) | u32::from(byte);
            held += 8;
            while held >= 5 && id.len() < 26 {
                held -= 5;
                id.push(char::from(ALPHABET[((bits >> held) & 31) as usize]));
            }
            bits &= (1 << held) - 1;
        }
        Ok(Self(id))
    }

    /// Validates an identifier typed by a user or read from disk.
    pub fn parse(text: &str) -> Result<Self, RecordError> {
        let valid = (20..=128).contains(&text.len())
            && text.bytes().all(|byte| byte.is_ascii_uppercase() || (b'2'..=b'7').contains(&byte));
        if valid { Ok(Self(text.to_string())) } else { Err(RecordError::InvalidId { id: text.to_string() }) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One task record, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub version: u32,
    pub id: String,
    pub command: String,
    pub pid: i64,
    pub started_at: String,
    pub updated_at: String,
    /// Follow-up turn metadata (version 3 and later), kept as written: the
    /// spec's `mode` and `parent_id` in version 3 records this build
    /// writes, the whole [`TurnMetadata`] in version 4 records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureDiagnostic>,
    /// The final event's `value.text` exactly as the file holds it (its
    /// JSON bytes), filled by [`read_record`]; `--wait` prints it.
    #[serde(skip)]
    pub stored_text: Option<Box<str>>,
}

/// Context-preserving follow-ups a lineage allows before the next one
/// resets it (new cache key, no parent, no inherited turn state).
pub const MAX_FOLLOW_UP_DEPTH: u32 = 3;

/// The `turn` of a successful provider-backed inspection: what a
/// `--follow-up` needs to continue it (the original implementation's
/// shape). The replay tree keeps the common input prefix once and each
/// terminal leaf's own suffix; an unbranched turn has one leaf.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnMetadata {
    /// The parent of a context-preserving follow-up; empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent_id: String,
    pub mode: String,
    /// What a `base` or `commit` turn compares: the `--base` ref as given
    /// (a follow-up reviews the branch as it is then), or the resolved
    /// commit of `--commit`; empty for the other modes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// The repository work tree the turn inspected.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workspace: String,
    /// fast, balanced or thorough.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub review_depth: String,
    /// Follow-ups since the lineage began (0 to [`MAX_FOLLOW_UP_DEPTH`]).
    #[serde(default)]
    pub depth: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt_cache_key: String,
    /// The provider input every leaf shares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaves: Vec<TurnLeaf>,
}

/// One terminal conversation of a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnLeaf {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scope: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning_effort: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub turn_state: String,
    /// This leaf's input after the common prefix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input: Vec<Value>,
}

impl TurnMetadata {
    /// Whether the turn carries everything a follow-up needs: records
    /// written before follow-ups existed (or by dry runs) do not.
    pub fn follow_up_eligible(&self) -> bool {
        !self.workspace.is_empty()
            && !self.review_depth.is_empty()
            && !self.prompt_cache_key.is_empty()
            && !self.leaves.is_empty()
            && self.depth <= MAX_FOLLOW_UP_DEPTH
    }
}

/// The exact terminal trace event: `final` (its `value.text` is the
/// report) or `error` (its `value.message` says why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerminalEvent {
    #[serde(default)]
    pub seq: i64,
    pub at: String,
    pub kind: String,
    #[serde(default)]
    pub value: Map<String, Value>,
}

/// Bounded context about a failed task: never credentials, endpoints, full
/// requests or unbounded repository content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureDiagnostic {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_steps: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_tool_calls: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_fingerprint: Option<RepositoryFingerprint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_events: Vec<FailureToolEvent>,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// The launch fingerprint of a diff-mode inspection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepositoryFingerprint {
    pub base_tree: String,
    pub target_tree: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dirty_submodules: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nested_repositories: String,
}

/// A sanitized summary of one tool call or tool output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureToolEvent {
    pub seq: i64,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub call_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub payload: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl FailureDiagnostic {
    /// Applies the caps: at most eight tool events, each payload within
    /// 4 KiB and 40 lines, identities within 256 bytes.
    pub fn bounded(mut self) -> Self {
        self.model = limit_text(&self.model, 256, 1).0;
        self.mode = limit_text(&self.mode, 256, 1).0;
        let skip = self.tool_events.len().saturating_sub(MAX_DIAGNOSTIC_EVENTS);
        self.tool_events.drain(..skip);
        for event in &mut self.tool_events {
            event.tool = limit_text(&event.tool, 256, 1).0;
            event.call_id = limit_text(&event.call_id, 256, 1).0;
            let (payload, truncated) = limit_text(&event.payload, MAX_DIAGNOSTIC_BYTES, MAX_DIAGNOSTIC_LINES);
            event.payload = payload;
            event.truncated |= truncated;
        }
        self
    }
}

/// Cuts `text` to `max_lines` lines and `max_bytes` bytes (on a character
/// boundary) and marks a cut with a final `[truncated]` line; a zero cap
/// means no cap. A tuple view of [`crate::bounded::bound`].
pub fn limit_text(text: &str, max_bytes: usize, max_lines: usize) -> (String, bool) {
    let uncapped = |cap: usize| if cap == 0 { usize::MAX } else { cap };
    let bounded = crate::bounded::bound(text, uncapped(max_bytes), uncapped(max_lines));
    (bounded.text, bounded.truncated)
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read random bytes for a task id: {source}")]
    Random { source: std::io::Error },
    #[error("invalid background task ID {id:?}\nhint: task ids are the \"id\" field of the launch output")]
    InvalidId { id: String },
    #[error(
        "unknown background task {id}\nhint: task ids are the \"id\" field of the launch output; records live under ~/.git-agent/<project-id>/background/"
    )]
    Unknown { id: String },
    #[error("background task {id} exists in multiple project stores: {first} and {second}")]
    Ambiguous { id: String, first: PathBuf, second: PathBuf },
    #[error("cannot read background task {id} at {path}: {source}")]
    Io { id: String, path: PathBuf, source: std::io::Error },
    #[error("background task {id} record at {path} is corrupt: {reason}")]
    Corrupt { id: String, path: PathBuf, reason: String },
    #[error("background task {id} record at {path} is corrupt")]
    Malformed { id: String, path: PathBuf, source: serde_json::Error },
    #[error("cannot write background task {id} record at {path}: {source}")]
    Write { id: String, path: PathBuf, source: std::io::Error },
    #[error("cannot encode background task {id} record: {source}")]
    Encode { id: String, source: serde_json::Error },
}

/// Where the records of one project live.
pub fn background_dir(metadata_root: &Path, project_id: &str) -> PathBuf {
    metadata_root.join(project_id).join(BACKGROUND_DIR)
}

/// The record file of `id` in `project_id`.
pub fn record_path(metadata_root: &Path, project_id: &str, id: &TaskId) -> PathBuf {
    background_dir(metadata_root, project_id).join(format!("{id}.json"))
}

/// Finds the record of `id` across every project's store under the
/// metadata root (task ids are globally unique).
pub fn find_record(metadata_root: &Path, id: &TaskId) -> Result<PathBuf, RecordError> {
    let unknown = || RecordError::Unknown { id: id.to_string() };
    let entries = match std::fs::read_dir(metadata_root) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(unknown()),
        Err(source) => return Err(RecordError::Io { id: id.to_string(), path: metadata_root.to_path_buf(), source }),
    };
    let file_name = format!("{id}.json");
    let mut found: Option<PathBuf> = None;
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let candidate = entry.path().join(BACKGROUND_DIR).join(&file_name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(_) => {
                if let Some(first) = found {
                    return Err(RecordError::Ambiguous { id: id.to_string(), first, second: candidate });
                }
                found = Some(candidate);
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(RecordError::Io { id: id.to_string(), path: candidate, source }),
        }
    }
    found.ok_or_else(unknown)
}

/// Reads and validates the record of `id` at `path`.
pub fn read_record(path: &Path, id: &TaskId) -> Result<Record, RecordError> {
    let io = |source| RecordError::Io { id: id.to_string(), path: path.to_path_buf(), source };
    let corrupt = |reason: String| RecordError::Corrupt { id: id.to_string(), path: path.to_path_buf(), reason };
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(RecordError::Unknown { id: id.to_string() });
        }
        Err(error) => return Err(io(error)),
    };
    if !metadata.is_file() {
        return Err(corrupt("the record is not a regular file".into()));
    }
    if metadata.len() > MAX_RECORD_BYTES {
        return Err(corrupt(format!("the record exceeds {MAX_RECORD_BYTES} bytes")));
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let record: Record = serde_json::from_slice(&bytes).map_err(|source| RecordError::Malformed {
        id: id.to_string(),
        path: path.to_path_buf(),
        source,
    })?;
    validate(&record, id, path)?;
    let mut record = record;
    if record.terminal.as_ref().is_some_and(|terminal| terminal.kind == "final") {
        record.stored_text = stored_text(&bytes).map_err(|source| RecordError::Malformed {
            id: id.to_string(),
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(record)
}

/// The bytes of `terminal.value.text` in a record file, as written.
fn stored_text(bytes: &[u8]) -> Result<Option<Box<str>>, serde_json::Error> {
    #[derive(Deserialize)]
    struct Outer<'a> {
        #[serde(borrow)]
        terminal: Option<Terminal<'a>>,
    }
    #[derive(Deserialize)]
    struct Terminal<'a> {
        #[serde(borrow)]
        value: Option<Text<'a>>,
    }
    #[derive(Deserialize)]
    struct Text<'a> {
        #[serde(borrow)]
        text: Option<&'a serde_json::value::RawValue>,
    }
    let outer: Outer<'_> = serde_json::from_slice(bytes)?;
    Ok(outer.terminal.and_then(|terminal| terminal.value?.text).map(|text| text.get().into()))
}

/// The record's invariants; a broken one makes the record corrupt.
fn validate(record: &Record, id: &TaskId, path: &Path) -> Result<(), RecordError> {
    let corrupt = |reason: String| RecordError::Corrupt { id: id.to_string(), path: path.to_path_buf(), reason };
    if !(1..=MAX_READ_VERSION).contains(&record.version) {
        return Err(corrupt(format!("unsupported record version {}", record.version)));
    }
    if record.id != id.as_str() {
        return Err(corrupt(format!("the record names task {:?}", record.id)));
    }
    if TaskCommand::parse(&record.command).is_none() {
        return Err(corrupt(format!("invalid command {:?}", record.command)));
    }
    let started = parse_time(&record.started_at).ok_or_else(|| corrupt("invalid started_at".into()))?;
    let updated = parse_time(&record.updated_at).ok_or_else(|| corrupt("invalid updated_at".into()))?;
    if record.pid <= 0 || updated < started {
        return Err(corrupt("invalid producer metadata".into()));
    }
    if let Some(terminal) = &record.terminal
        && terminal.kind != "final"
        && terminal.kind != "error"
    {
        return Err(corrupt(format!("invalid terminal event kind {:?}", terminal.kind)));
    }
    if record.version == 1 && record.failure.is_some() {
        return Err(corrupt("a version 1 record carries failure diagnostics".into()));
    }
    if record.version < 3 && record.turn.is_some() {
        return Err(corrupt("a legacy record carries turn metadata".into()));
    }
    if record.failure.is_some() && record.terminal.as_ref().is_none_or(|terminal| terminal.kind != "error") {
        return Err(corrupt("diagnostics without a terminal error".into()));
    }
    if let Some(failure) = &record.failure
        && (failure.tool_events.len() > MAX_DIAGNOSTIC_EVENTS
            || failure.tool_events.iter().any(|event| event.payload.len() > MAX_DIAGNOSTIC_BYTES + 256))
    {
        return Err(corrupt("failure diagnostics exceed their limits".into()));
    }
    Ok(())
}

/// Atomically replaces the record at `path` (0600, in a 0700 folder).
pub fn write_record(path: &Path, record: &Record) -> Result<(), RecordError> {
    let mut bytes =
        serde_json::to_vec(record).map_err(|source| RecordError::Encode { id: record.id.clone(), source })?;
    bytes.push(b'\n');
    private_fs::write_atomic(path, &bytes).map_err(|source| RecordError::Write {
        id: record.id.clone(),
        path: path.to_path_buf(),
        source,
    })
}

impl Record {
    /// A running record for a task that starts now.
    pub fn running(id: &TaskId, command: TaskCommand, pid: u32, now: jiff::Timestamp) -> Self {
        let now = format_time(now);
        Self {
            version: RECORD_VERSION,
            id: id.to_string(),
            command: command.as_str().to_string(),
            pid: i64::from(pid),
            started_at: now.clone(),
            updated_at: now,
            turn: None,
            terminal: None,
            failure: None,
            stored_text: None,
        }
    }

    /// The record with its exact terminal event (and, for an error, its
    /// bounded diagnostics). A final event keeps the whole turn metadata
    /// set in `turn` under [`TURN_KEY`] of its value, and `turn` keeps
    /// the spec's keys; a failed task has no turn.
    pub fn complete(
        mut self,
        mut terminal: TerminalEvent,
        failure: Option<FailureDiagnostic>,
        now: jiff::Timestamp,
    ) -> Self {
        self.version = RECORD_VERSION;
        self.updated_at = format_time(now);
        self.failure = if terminal.kind == "error" { failure.map(FailureDiagnostic::bounded) } else { None };
        self.turn = match self.turn.take() {
            Some(Value::Object(turn)) if terminal.kind == "final" => {
                let spec: Map<String, Value> = SPEC_TURN_KEYS
                    .iter()
                    .filter_map(|key| {
                        turn.get(*key).filter(|value| *value != "").map(|value| (key.to_string(), value.clone()))
                    })
                    .collect();
                terminal.value.insert(TURN_KEY.into(), Value::Object(turn));
                Some(Value::Object(spec))
            }
            _ => None,
        };
        self.terminal = Some(terminal);
        self
    }

    /// The turn metadata a follow-up reads: the final event's
    /// [`TURN_KEY`] in a version 3 record this build wrote, `turn` in a
    /// version 4 record (or one of the spec's version 3 records, which
    /// holds no more than the mode and parent).
    pub fn turn_metadata(&self) -> Option<&Value> {
        let in_value = self
            .terminal
            .as_ref()
            .filter(|terminal| terminal.kind == "final")
            .and_then(|terminal| terminal.value.get(TURN_KEY))
            .filter(|turn| turn.is_object());
        in_value.or(self.turn.as_ref())
    }
}

/// What a reader makes of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    /// The producer is still working; wait more.
    Running { pid: i64 },
    /// The stored report.
    Succeeded(Report),
    /// The task failed; the message says why.
    Failed { message: String },
}

/// A finished task's stored report, as `--wait` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The stored report text followed by a newline: a report stored as a
    /// JSON value (what this project and the original write) byte for
    /// byte as the record holds it, a report stored as a JSON string its
    /// contents.
    pub json: String,
    /// Bytes of terminal control sequences removed from the model's
    /// answer before it was stored (the final event's `controls_removed`;
    /// records of other writers have none).
    pub controls_removed: u64,
    /// The line saying which secrets were redacted from the task's
    /// requests (or that redaction was off), without its newline (the
    /// final event's `redacted`; records of other writers have none).
    pub redacted: Option<String>,
}

/// Why a `--wait` cannot print a report.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("background task {id} belongs to {actual}, not {expected}\nhint: git-agent {actual} --wait {id}")]
    OtherCommand { id: String, actual: String, expected: TaskCommand },
    #[error("background {command} task {id} failed: {message}")]
    Failed { command: TaskCommand, id: String, message: String },
    #[error(
        "background {command} task {id} producer PID {pid} is not running\nhint: the daemon that ran the task stopped before it finished; launch the task again"
    )]
    DeadProducer { command: TaskCommand, id: String, pid: i64 },
    #[error(
        "background {command} task {id} producer heartbeat is stale\nhint: the daemon that ran the task stopped before it finished; launch the task again"
    )]
    StaleHeartbeat { command: TaskCommand, id: String },
    #[error("background task {id} final event has no report text")]
    NoReport { id: String },
    #[error("background task {id} final event's report text is not JSON")]
    ReportNotJson { id: String },
}

/// Interprets a validated record for `expected`. `producer_alive` says
/// whether the record's pid still runs the task; `now` is compared with the
/// heartbeat.
pub fn evaluate(
    record: &Record,
    expected: TaskCommand,
    producer_alive: impl FnOnce(i64) -> bool,
    now: jiff::Timestamp,
) -> Result<TaskState, WaitError> {
    if record.command != expected.as_str() {
        return Err(WaitError::OtherCommand { id: record.id.clone(), actual: record.command.clone(), expected });
    }
    if let Some(terminal) = &record.terminal {
        return match terminal.kind.as_str() {
            "final" => {
                let mut json = match terminal.value.get("text") {
                    None | Some(Value::Null) => return Err(WaitError::NoReport { id: record.id.clone() }),
                    // A report stored as text is that text, when it is JSON.
                    Some(Value::String(text)) => {
                        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
                            return Err(WaitError::ReportNotJson { id: record.id.clone() });
                        }
                        text.clone()
                    }
                    // A report stored as a JSON value is its stored bytes (a
                    // record built in memory has none: its serialization is
                    // what a write stores).
                    Some(value) => record.stored_text.as_deref().map_or_else(|| value.to_string(), str::to_string),
                };
                json.push('\n');
                let controls_removed = terminal.value.get("controls_removed").and_then(Value::as_u64).unwrap_or(0);
                let redacted = terminal.value.get("redacted").and_then(Value::as_str).map(str::to_string);
                Ok(TaskState::Succeeded(Report { json, controls_removed, redacted }))
            }
            _ => {
                let message = terminal
                    .value
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|message| !message.is_empty())
                    .unwrap_or("producer reported an error")
                    .to_string();
                Ok(TaskState::Failed { message })
            }
        };
    }
    if !producer_alive(record.pid) {
        return Err(WaitError::DeadProducer { command: expected, id: record.id.clone(), pid: record.pid });
    }
    let stale = parse_time(&record.updated_at)
        .map(|updated| now.duration_since(updated).as_secs_f64() > HEARTBEAT_STALE_AFTER.as_secs_f64())
        .unwrap_or(true);
    if stale {
        return Err(WaitError::StaleHeartbeat { command: expected, id: record.id.clone() });
    }
    Ok(TaskState::Running { pid: record.pid })
}

/// Turns a terminal state into the `--wait` result: the report line, or
/// the stored failure as an error.
pub fn wait_result(state: TaskState, command: TaskCommand, id: &TaskId) -> Option<Result<Report, WaitError>> {
    match state {
        TaskState::Running { .. } => None,
        TaskState::Succeeded(report) => Some(Ok(report)),
        TaskState::Failed { message } => Some(Err(WaitError::Failed { command, id: id.to_string(), message })),
    }
}

/// Whether `pid` names a live process that is not a zombie.
pub fn process_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 only checks for existence and permission.
    let exists =
        unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            !stat.rsplit_once(')').is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
        }
        Err(_) => true,
    }
}

/// Record times are RFC 3339 in UTC with nanoseconds when present, as the
/// original writes them ([`crate::timefmt`]).
pub use crate::timefmt::{format_rfc3339 as format_time, parse_rfc3339 as parse_time, unix_millis};

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> TaskId {
        TaskId::parse("CDEFGHIJKLMNOPQRSTUVWXYZAB").unwrap()
    }

    fn now() -> jiff::Timestamp {
        "2026-01-02T03:04:05.123456789Z".parse().unwrap()
    }

    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let first = TaskId::generate().unwrap();
        let second = TaskId::generate().unwrap();
        assert_eq!(first.as_str().len(), 26);
        assert_ne!(first, second);
        assert!(TaskId::parse(first.as_str()).is_ok());
    }

    #[test]
    fn malformed_ids_are_rejected() {
        for bad in ["../escape", "short", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXY1", ""] {
            assert!(matches!(TaskId::parse(bad), Err(RecordError::InvalidId { .. })), "{bad}");
        }
    }

    #[test]
    fn records_round_trip_privately_and_find_across_projects() {
        let root = tempfile::tempdir().unwrap();
        let path = record_path(root.path(), "project", &id());
        let record = Record::running(&id(), TaskCommand::Review, 42, now());
        write_record(&path, &record).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(find_record(root.path(), &id()).unwrap(), path);
        assert_eq!(read_record(&path, &id()).unwrap(), record);
        let other = TaskId::parse("DEFGHIJKLMNOPQRSTUVWXYZABC").unwrap();
        assert!(matches!(find_record(root.path(), &other), Err(RecordError::Unknown { .. })));
    }

    #[test]
    fn original_version_one_and_two_records_are_read() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("record.json");
        let v1 = r#"{"version":1,"id":"CDEFGHIJKLMNOPQRSTUVWXYZAB","command":"review","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:06+01:00","terminal":{"seq":4,"at":"2026-01-02T03:04:06Z","kind":"final","value":{"text":{"summary":"ok","recommendation":"APPROVE","findings":[]}}}}"#;
        std::fs::write(&path, v1).unwrap();
        let record = read_record(&path, &id()).unwrap_err();
        // updated_at (02:04:06Z) is before started_at: corrupt.
        assert!(matches!(record, RecordError::Corrupt { .. }));
        std::fs::write(&path, v1.replace("+01:00", "Z")).unwrap();
        let record = read_record(&path, &id()).unwrap();
        let state = evaluate(&record, TaskCommand::Review, |_| false, now()).unwrap();
        assert_eq!(
            state,
            TaskState::Succeeded(Report {
                json: "{\"summary\":\"ok\",\"recommendation\":\"APPROVE\",\"findings\":[]}\n".into(),
                controls_removed: 0,
                redacted: None
            })
        );
        let v2 = r#"{"version":2,"id":"CDEFGHIJKLMNOPQRSTUVWXYZAB","command":"simplify","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z","terminal":{"seq":9,"at":"2026-01-02T03:04:06Z","kind":"error","value":{"message":"provider failed"}},"failure":{"model":"m","mode":"staged","max_steps":9,"max_tool_calls":7,"repository_fingerprint":{"base_tree":"a","target_tree":"b"},"tool_events":[{"seq":3,"kind":"tool-call","tool":"read_file","payload":"{}"}]}}"#;
        std::fs::write(&path, v2).unwrap();
        let record = read_record(&path, &id()).unwrap();
        let state = evaluate(&record, TaskCommand::Simplify, |_| true, now()).unwrap();
        assert_eq!(state, TaskState::Failed { message: "provider failed".into() });
    }

    #[test]
    fn wait_prints_the_stored_report_text_byte_for_byte() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("record.json");
        let head = r#"{"version":3,"id":"CDEFGHIJKLMNOPQRSTUVWXYZAB","command":"review","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z","terminal":{"seq":4,"at":"2026-01-02T03:04:06Z","kind":"final","value":"#;
        let report = |value: &str| {
            std::fs::write(&path, format!("{head}{value}}}}}\n")).unwrap();
            let record = read_record(&path, &id()).unwrap();
            evaluate(&record, TaskCommand::Review, |_| false, now()).map(|state| match state {
                TaskState::Succeeded(report) => (report.json, report.controls_removed),
                other => panic!("{other:?}"),
            })
        };
        // A report stored as a JSON value: its bytes, in the writer's key
        // order and spacing, whatever serde would write.
        let object = "{\"summary\" : \"ok \\u00e9\",\n  \"recommendation\":\"APPROVE\", \"findings\":[ ], \"n\": 1.50}";
        assert_eq!(
            report(&format!(r#"{{ "text" :  {object} , "controls_removed": 3}}"#)).unwrap(),
            (format!("{object}\n"), 3)
        );
        // A report stored as a JSON string: the text it holds.
        let text = r#"{"summary": "ok",  "findings": [], "recommendation": "APPROVE"}"#;
        let stored = serde_json::to_string(text).unwrap();
        assert_eq!(report(&format!(r#"{{"text":{stored}}}"#)).unwrap(), (format!("{text}\n"), 0));
        assert!(matches!(report(r#"{"text":"not json"}"#), Err(WaitError::ReportNotJson { .. })));
        assert!(matches!(report(r#"{"text":null}"#), Err(WaitError::NoReport { .. })));
        assert!(matches!(report(r#"{"other":1}"#), Err(WaitError::NoReport { .. })));
    }

    /// A reader that follows the spec: versions 1 to 3, no unknown field
    /// anywhere but in an event's open `value`, a version 3 `turn` of mode
    /// and parent ID only.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct SpecRecord {
        version: u32,
        id: String,
        command: String,
        pid: i64,
        started_at: String,
        updated_at: String,
        turn: Option<SpecTurn>,
        terminal: Option<SpecEvent>,
        failure: Option<FailureDiagnostic>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct SpecTurn {
        #[serde(default)]
        parent_id: String,
        mode: String,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct SpecEvent {
        seq: i64,
        at: String,
        kind: String,
        value: Map<String, Value>,
    }

    fn spec_reader_accepts(path: &Path) -> SpecRecord {
        let record: SpecRecord = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert!((1..=3).contains(&record.version), "{}", record.version);
        record
    }

    fn full_turn() -> Value {
        serde_json::json!({"parent_id": "DEFGHIJKLMNOPQRSTUVWXYZABC", "mode": "base", "revision": "main",
            "workspace": "/work/repo", "review_depth": "fast", "depth": 1, "prompt_cache_key": "key",
            "input": [{"type": "message", "role": "user", "content": "task"}],
            "leaves": [{"model": "m", "turn_state": "s"}]})
    }

    #[test]
    fn records_are_written_as_the_specs_version_three_with_the_whole_turn_in_the_final_value() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("record.json");
        let mut record = Record::running(&id(), TaskCommand::Review, 42, now());
        write_record(&path, &record).unwrap();
        assert_eq!(spec_reader_accepts(&path).version, 3, "a running record");
        record.turn = Some(full_turn());
        let text = serde_json::json!({"summary": "ok", "recommendation": "APPROVE", "findings": []});
        let value =
            [("text".to_string(), text), ("controls_removed".to_string(), Value::from(2))].into_iter().collect();
        let terminal = TerminalEvent { seq: 3, at: format_time(now()), kind: "final".into(), value };
        write_record(&path, &record.complete(terminal, None, now())).unwrap();
        let spec = spec_reader_accepts(&path);
        let turn = spec.turn.unwrap();
        assert_eq!((turn.mode.as_str(), turn.parent_id.as_str()), ("base", "DEFGHIJKLMNOPQRSTUVWXYZABC"));
        let read = read_record(&path, &id()).unwrap();
        assert_eq!(read.turn_metadata(), Some(&full_turn()), "a follow-up finds the whole turn");
        let state = evaluate(&read, TaskCommand::Review, |_| false, now()).unwrap();
        let TaskState::Succeeded(report) = state else { panic!("{state:?}") };
        assert_eq!(report.json, "{\"findings\":[],\"recommendation\":\"APPROVE\",\"summary\":\"ok\"}\n");
        assert_eq!(report.controls_removed, 2);

        // A failed task: the spec's version 2 diagnostics, no turn.
        let mut record = Record::running(&id(), TaskCommand::Simplify, 42, now());
        record.turn = Some(full_turn());
        let value = [("message".to_string(), Value::from("boom"))].into_iter().collect();
        let terminal = TerminalEvent { seq: 3, at: format_time(now()), kind: "error".into(), value };
        let failure = FailureDiagnostic {
            model: "m".into(),
            mode: "staged".into(),
            max_steps: 9,
            max_tool_calls: 7,
            repository_fingerprint: Some(RepositoryFingerprint {
                base_tree: "a".into(),
                target_tree: "b".into(),
                ..Default::default()
            }),
            tool_events: vec![FailureToolEvent { seq: 2, kind: "tool-call".into(), ..Default::default() }],
        };
        write_record(&path, &record.complete(terminal, Some(failure), now())).unwrap();
        let spec = spec_reader_accepts(&path);
        assert!(spec.turn.is_none() && spec.failure.is_some());
        assert_eq!(read_record(&path, &id()).unwrap().turn_metadata(), None);
    }

    #[test]
    fn every_version_this_project_or_the_original_wrote_is_read() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("record.json");
        let head = |version: u32| {
            format!(
                r#"{{"version":{version},"id":"CDEFGHIJKLMNOPQRSTUVWXYZAB","command":"review","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z""#
            )
        };
        let terminal = r#""terminal":{"seq":4,"at":"2026-01-02T03:04:06Z","kind":"final","value":{"text":{"summary":"ok","recommendation":"APPROVE","findings":[]},"tool_calls":1,"repair_calls":0}}"#;
        // The spec's version 3 (the original before version 4): a turn of
        // mode and parent only.
        let spec_turn = r#""turn":{"parent_id":"DEFGHIJKLMNOPQRSTUVWXYZABC","mode":"staged"}"#;
        // Version 4: earlier builds of this project (with `revision`) and
        // the original, the whole replay state in `turn`.
        let full = full_turn().to_string();
        let cases = [
            (format!("{},{terminal}}}", head(1)), None),
            (format!("{},{spec_turn},{terminal}}}", head(3)), Some(serde_json::from_str(&spec_turn[7..]).unwrap())),
            (format!("{},\"turn\":{full},{terminal}}}", head(4)), Some(full_turn())),
            (format!("{},\"turn\":{full}}}", head(4)), Some(full_turn())),
        ];
        for (text, turn) in cases {
            std::fs::write(&path, &text).unwrap();
            let record = read_record(&path, &id()).unwrap_or_else(|error| panic!("{text}: {error}"));
            assert_eq!(record.turn_metadata(), turn.as_ref(), "{text}");
            let state = evaluate(&record, TaskCommand::Review, |_| true, now()).unwrap();
            assert!(matches!(state, TaskState::Succeeded(_) | TaskState::Running { .. }), "{text}");
        }
        std::fs::write(&path, format!("{}}}", head(5))).unwrap();
        assert!(matches!(read_record(&path, &id()), Err(RecordError::Corrupt { .. })), "version 5");
    }

    #[test]
    fn corrupt_records_are_errors() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("record.json");
        for text in [
            "not json",
            "{}",
            r#"{"version":9,"id":"CDEFGHIJKLMNOPQRSTUVWXYZAB","command":"review","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}"#,
            r#"{"version":4,"id":"CDEFGHIJKLMNOPQRSTUVWXYZAB","command":"commit","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}"#,
            r#"{"version":4,"id":"CDEFGHIJKLMNOPQRSTUVWXYZAB","command":"review","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z","extra":1}"#,
            r#"{"version":4,"id":"OTHERGHIJKLMNOPQRSTUVWXYZ","command":"review","pid":7,"started_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}"#,
        ] {
            std::fs::write(&path, text).unwrap();
            assert!(
                matches!(read_record(&path, &id()), Err(RecordError::Corrupt { .. } | RecordError::Malformed { .. })),
                "{text}"
            );
        }
    }

    #[test]
    fn running_records_need_a_live_fresh_producer() {
        let record = Record::running(&id(), TaskCommand::Review, 42, now());
        assert_eq!(evaluate(&record, TaskCommand::Review, |_| true, now()).unwrap(), TaskState::Running { pid: 42 });
        assert!(matches!(
            evaluate(&record, TaskCommand::Review, |_| false, now()),
            Err(WaitError::DeadProducer { pid: 42, .. })
        ));
        let later = now().checked_add(jiff::SignedDuration::from_secs(31)).unwrap();
        assert!(matches!(
            evaluate(&record, TaskCommand::Review, |_| true, later),
            Err(WaitError::StaleHeartbeat { .. })
        ));
        assert!(matches!(
            evaluate(&record, TaskCommand::Simplify, |_| true, now()),
            Err(WaitError::OtherCommand { .. })
        ));
    }

    #[test]
    fn completion_bounds_failure_diagnostics() {
        let record = Record::running(&id(), TaskCommand::Review, 42, now());
        let failure = FailureDiagnostic {
            tool_events: (0..12)
                .map(|seq| FailureToolEvent {
                    seq,
                    kind: "tool-output".into(),
                    payload: "line\n".repeat(100),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let terminal = TerminalEvent {
            seq: 1,
            at: format_time(now()),
            kind: "error".into(),
            value: [("message".to_string(), Value::from("boom"))].into_iter().collect(),
        };
        let record = record.complete(terminal, Some(failure), now());
        let failure = record.failure.as_ref().unwrap();
        assert_eq!(failure.tool_events.len(), MAX_DIAGNOSTIC_EVENTS);
        assert_eq!(failure.tool_events[0].seq, 4);
        for event in &failure.tool_events {
            assert!(event.truncated);
            assert!(event.payload.lines().count() <= MAX_DIAGNOSTIC_LINES + 1);
        }
    }

    #[test]
    fn limit_text_marks_cuts() {
        assert_eq!(limit_text("a\nb\n", 100, 2), ("a\nb\n".into(), false));
        assert_eq!(limit_text("a\nb\nc\n", 100, 2), ("a\nb\n[truncated]\n".into(), true));
        assert_eq!(limit_text("héllo", 2, 0), ("h\n[truncated]\n".into(), true));
    }

    #[test]
    fn own_process_is_alive() {
        assert!(process_alive(i64::from(std::process::id())));
        assert!(!process_alive(0));
        assert!(!process_alive(-5));
    }
}

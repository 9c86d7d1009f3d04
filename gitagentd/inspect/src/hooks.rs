//! The user's inspection lifecycle settings (`~/.git-agent/settings.json`,
//! strict v1) and the post-inspection hooks they configure.
//!
//! After a non-dry-run inspection has a validated report (and review its
//! static checks), each nonblank `hooks.post_inspection` entry is parsed
//! as a Go `text/template` (missing keys are errors; functions
//! `format_markdown`, `json`, `shellquote`), rendered with the payload,
//! and run with `sh -c` through [`gitagent_runtime::subprocess`] (the allow-listed
//! environment, no credential), one after the other. Each hook gets the
//! same compact JSON payload on stdin (schema version 2); its stdout is
//! discarded and up to 4096 bytes of its stderr explain a failure. The
//! first failure stops the sequence; earlier hooks are not undone. A
//! hook's pipes are closed one second after its shell exits, so a
//! background descendant that keeps them cannot hold the task open.
//!
//! Nothing here touches the report: the caller publishes a failure as
//! task status and stores the report unchanged.

use super::metrics::InspectionMetrics;
use git_agent_shared::Environment;
use gitagent_runtime::subprocess::{Helper, SubprocessError, Toolchain};
use gtmpl::{FuncError, Value as TemplateValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The settings file below the metadata root.
pub const SETTINGS_FILE: &str = "settings.json";
/// The payload's `schema_version`.
pub const SCHEMA_VERSION: u32 = 2;
/// How long a hook's pipes stay open after its shell exits.
pub const PIPE_GRACE: Duration = Duration::from_secs(1);
/// Bytes of a failed hook's trimmed stderr kept in its error.
const MAX_STDERR: usize = 4096;
/// A hook that runs this long is stopped (its process group killed).
const HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// The v1 settings: a strict object with optional `hooks`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    #[serde(default)]
    hooks: Option<HookSettings>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookSettings {
    #[serde(default)]
    post_inspection: Option<Vec<String>>,
}

impl Settings {
    /// The nonblank post-inspection hook templates, in order.
    pub fn post_inspection(&self) -> Vec<String> {
        let hooks = self.hooks.as_ref().and_then(|hooks| hooks.post_inspection.as_ref());
        hooks.into_iter().flatten().filter(|source| !source.trim().is_empty()).cloned().collect()
    }
}

/// Why the settings file cannot be used; it fails the task.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {path}: {source}\nhint: check the file's permissions")]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "invalid settings {path}: {source}\nhint: the v1 schema is {{\"hooks\":{{\"post_inspection\":[\"<shell command template>\"]}}}}"
    )]
    Invalid { path: PathBuf, source: SettingsSyntaxError },
}

/// What is wrong with the bytes of a settings file.
#[derive(Debug, thiserror::Error)]
pub enum SettingsSyntaxError {
    /// Malformed JSON, an unknown field or a value of the wrong type.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("the file holds no JSON value")]
    Empty,
    #[error("multiple JSON values")]
    MultipleValues,
}

/// Reads `<metadata root>/settings.json`; a missing file configures
/// nothing. Unknown fields, malformed JSON, more than one JSON value and
/// non-string hook entries are errors.
pub fn load_settings(metadata_root: &Path) -> Result<Settings, SettingsError> {
    let path = metadata_root.join(SETTINGS_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
        Err(source) => return Err(SettingsError::Read { path, source }),
    };
    parse_settings(&bytes).map_err(|source| SettingsError::Invalid { path, source })
}

fn parse_settings(bytes: &[u8]) -> Result<Settings, SettingsSyntaxError> {
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<Settings>();
    let settings = values.next().ok_or(SettingsSyntaxError::Empty)??;
    let rest = &bytes[values.byte_offset()..];
    if rest.iter().any(|byte| !byte.is_ascii_whitespace()) {
        return Err(SettingsSyntaxError::MultipleValues);
    }
    Ok(settings)
}

/// The stdin and template data of every hook.
#[derive(Debug, Clone, Serialize)]
pub struct Payload {
    pub schema_version: u32,
    pub session: Session,
    pub metrics: InspectionMetrics,
    /// The exact final report.
    pub report: Value,
}

/// The inspection the payload describes.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    pub id: String,
    /// `<command> <repository-directory> (<mode>)`.
    pub title: String,
    pub command: String,
    pub mode: String,
    pub model: String,
    pub reasoning_effort: String,
    /// UTC, RFC 3339.
    pub started_at: String,
    pub completed_at: String,
    pub elapsed_ms: i64,
    pub tool_calls: u64,
    pub repair_calls: u64,
    pub repository: RepositorySummary,
}

/// The repository the inspection ran in. Remote URLs carry no
/// credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RepositorySummary {
    pub root_path: String,
    pub work_path: String,
    pub branch: String,
    pub head_sha: String,
    pub is_detached: bool,
    pub remotes: BTreeMap<String, Vec<String>>,
}

/// The session title: `<command> <repository-directory> (<mode>)`.
pub fn title(command: &str, root: &Path, mode: &str) -> String {
    let name = root
        .file_name()
        .map(|name| git_agent_shared::quote::os_path_key(name.as_ref()).into_owned())
        .unwrap_or_default();
    format!("{command} {name} ({mode})")
}

/// Branch, HEAD and remotes of the repository at `root` (best effort:
/// what cannot be read stays empty).
pub fn repository_summary(root: &Path, git_env: &super::git::GitEnv) -> RepositorySummary {
    let path = git_agent_shared::quote::os_path_key(root).into_owned();
    let mut summary = RepositorySummary { root_path: path.clone(), work_path: path, ..Default::default() };
    let Ok(repo) = super::git::open(root, git_env) else { return summary };
    summary.head_sha = super::git::head_commit(&repo).map(|id| id.to_string()).unwrap_or_default();
    match repo.head_name() {
        Ok(Some(name)) => summary.branch = name.shorten().to_string(),
        _ => summary.is_detached = true,
    }
    for name in repo.remote_names() {
        let name: &gix::bstr::BStr = name.as_ref();
        let Ok(remote) = repo.find_remote(name) else { continue };
        let urls = [gix::remote::Direction::Fetch, gix::remote::Direction::Push]
            .into_iter()
            .filter_map(|direction| remote.url(direction).map(|url| url.to_bstring().to_string()))
            .map(|url| git_agent_shared::giturl::sanitize(&url))
            .fold(Vec::new(), |mut urls, url| {
                if !urls.contains(&url) {
                    urls.push(url);
                }
                urls
            });
        summary.remotes.insert(name.to_string(), urls);
    }
    summary
}

/// Why a hook stopped the sequence. The message is bounded: at most
/// [`MAX_STDERR`] bytes of the hook's own stderr.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("encode post-inspection hook payload: {0}")]
    Encode(#[source] serde_json::Error),
    /// gtmpl's message is shown as it is (`{source}`), which ends the
    /// rendered chain there.
    #[error("post-inspection hook {index}: parse shell template: {source}")]
    Parse { index: usize, source: Box<gtmpl::error::ParseError> },
    #[error("post-inspection hook {index}: render shell template: {source}")]
    Render { index: usize, source: Box<gtmpl::error::ExecError> },
    #[error("post-inspection hook {index}: {source}")]
    Run { index: usize, source: SubprocessError },
    #[error("post-inspection hook {index}: sh exited with {status}{}", stderr_suffix(.stderr))]
    Exit { index: usize, status: String, stderr: String },
    #[error(
        "post-inspection hook {index}: a background process kept the hook's pipes open {} s after sh exited; they were closed{}",
        PIPE_GRACE.as_secs(),
        stderr_suffix(.stderr)
    )]
    PipesHeldOpen { index: usize, stderr: String },
}

impl HookError {
    /// Cancellation of the task (not a hook failure to publish).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, HookError::Run { source: SubprocessError::Cancelled { .. }, .. })
    }
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() { String::new() } else { format!(": {stderr}") }
}

/// Runs `hooks` (nonblank templates) in order with `payload`; the first
/// failure stops the sequence.
pub async fn run_post_inspection(
    hooks: &[String],
    payload: &Payload,
    env: &Environment,
    cancel: &CancellationToken,
) -> Result<(), HookError> {
    let data = serde_json::to_value(payload).map_err(HookError::Encode)?;
    let stdin = serde_json::to_vec(payload).map_err(HookError::Encode)?;
    let shell = gitagent_runtime::subprocess::find_executable(env, "sh").unwrap_or_else(|| PathBuf::from("/bin/sh"));
    for (position, source) in hooks.iter().enumerate() {
        let index = position + 1;
        let script = render(source, &data, index)?;
        let output = Helper::new(&shell, env, Toolchain::None)
            .arg("-c")
            .arg(&script)
            .stdin(stdin.clone())
            .discard_stdout()
            .output_limit(MAX_STDERR)
            .pipe_grace(PIPE_GRACE)
            .timeout(HOOK_TIMEOUT)
            .run(cancel)
            .await
            .map_err(|source| HookError::Run { index, source })?;
        let stderr = bounded_stderr(&output.stderr);
        if !output.status.success() {
            return Err(HookError::Exit { index, status: output.status.to_string(), stderr });
        }
        if output.pipes_held_open {
            return Err(HookError::PipesHeldOpen { index, stderr });
        }
    }
    Ok(())
}

fn bounded_stderr(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_STDERR)]);
    text.trim().to_string()
}

/// Renders one hook template with `data` (the payload as JSON), the way
/// Go's `text/template` with `missingkey=error` would: payload fields by
/// their Go names (`.Session.Title`, `.Metrics.Usage.InputTokens`,
/// `.Report`), report and repository entries by their JSON keys
/// (`.Report.summary`).
pub fn render(source: &str, data: &Value, index: usize) -> Result<String, HookError> {
    let mut template = gtmpl::Template::default();
    template.add_funcs(&[
        ("format_markdown", template_format_markdown as gtmpl::Func),
        ("json", template_json as gtmpl::Func),
        ("shellquote", template_shellquote as gtmpl::Func),
    ]);
    template.parse(source).map_err(|source| HookError::Parse { index, source: Box::new(source) })?;
    let context = gtmpl::Context::from(to_template(data, true));
    template.render(&context).map_err(|source| HookError::Render { index, source: Box::new(source) })
}

/// The payload's own keys (not the report's) as Go exports them.
const GO_NAMES: &[(&str, &str)] = &[
    ("schema_version", "SchemaVersion"),
    ("session", "Session"),
    ("metrics", "Metrics"),
    ("report", "Report"),
    ("id", "ID"),
    ("title", "Title"),
    ("command", "Command"),
    ("mode", "Mode"),
    ("model", "Model"),
    ("reasoning_effort", "ReasoningEffort"),
    ("started_at", "StartedAt"),
    ("completed_at", "CompletedAt"),
    ("elapsed_ms", "ElapsedMS"),
    ("tool_calls", "ToolCalls"),
    ("repair_calls", "RepairCalls"),
    ("repository", "Repository"),
    ("usage", "Usage"),
    ("used_skills", "UsedSkills"),
    ("branches_created", "BranchesCreated"),
    ("branches", "Branches"),
    ("name", "Name"),
    ("count", "Count"),
    ("parent_id", "ParentID"),
    ("input_tokens", "InputTokens"),
    ("cached_input_tokens", "CachedInputTokens"),
    ("cache_write_input_tokens", "CacheWriteInputTokens"),
    ("uncached_input_tokens", "UncachedInputTokens"),
    ("output_tokens", "OutputTokens"),
    ("reasoning_tokens", "ReasoningTokens"),
    ("total_tokens", "TotalTokens"),
];

/// JSON as template data. Objects become strict objects (a missing key is
/// an error, as with `missingkey=error`); payload keys take their Go
/// names, while the report and repository summary keep their JSON keys.
fn to_template(value: &Value, go_names: bool) -> TemplateValue {
    match value {
        Value::Null => TemplateValue::Nil,
        Value::Bool(value) => TemplateValue::Bool(*value),
        Value::Number(number) => match (number.as_u64(), number.as_i64(), number.as_f64()) {
            (Some(value), _, _) => TemplateValue::from(value),
            (None, Some(value), _) => TemplateValue::from(value),
            (None, None, Some(value)) => TemplateValue::from(value),
            (None, None, None) => TemplateValue::Nil,
        },
        Value::String(text) => TemplateValue::String(text.clone()),
        Value::Array(items) => TemplateValue::Array(items.iter().map(|item| to_template(item, go_names)).collect()),
        Value::Object(map) => TemplateValue::Object(
            map.iter()
                .map(|(key, item)| {
                    let renamed = go_names.then(|| GO_NAMES.iter().find(|(json, _)| json == key)).flatten();
                    let nested = go_names && key != "report" && key != "repository";
                    (renamed.map_or_else(|| key.clone(), |(_, go)| go.to_string()), to_template(item, nested))
                })
                .collect::<HashMap<_, _>>(),
        ),
    }
}

/// Template data back to JSON: payload keys return to their JSON names.
fn from_template(value: &TemplateValue) -> Value {
    match value {
        TemplateValue::NoValue | TemplateValue::Nil | TemplateValue::Function(_) => Value::Null,
        TemplateValue::Bool(value) => Value::Bool(*value),
        TemplateValue::String(text) => Value::String(text.clone()),
        TemplateValue::Number(number) => {
            if let Some(value) = number.as_u64() {
                Value::from(value)
            } else if let Some(value) = number.as_i64() {
                Value::from(value)
            } else {
                number.as_f64().map_or(Value::Null, Value::from)
            }
        }
        TemplateValue::Array(items) => Value::Array(items.iter().map(from_template).collect()),
        TemplateValue::Object(map) | TemplateValue::Map(map) => {
            let mut object: Vec<(String, Value)> = map
                .iter()
                .map(|(key, item)| {
                    let json = GO_NAMES.iter().find(|(_, go)| go == key).map_or(key.as_str(), |(json, _)| json);
                    (json.to_string(), from_template(item))
                })
                .collect();
            object.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(object.into_iter().collect())
        }
    }
}

fn one_argument<'a>(name: &str, args: &'a [TemplateValue]) -> Result<&'a TemplateValue, FuncError> {
    match args {
        [value] => Ok(value),
        _ => Err(FuncError::ExactlyXArgs(name.to_string(), 1)),
    }
}

fn template_json(args: &[TemplateValue]) -> Result<TemplateValue, FuncError> {
    let value = from_template(one_argument("json", args)?);
    serde_json::to_string(&value).map(TemplateValue::String).map_err(|error| FuncError::Generic(error.to_string()))
}

fn template_shellquote(args: &[TemplateValue]) -> Result<TemplateValue, FuncError> {
    let text = match one_argument("shellquote", args)? {
        TemplateValue::String(text) => text.clone(),
        other => other.to_string(),
    };
    Ok(TemplateValue::String(shell_quote(&text)))
}

fn template_format_markdown(args: &[TemplateValue]) -> Result<TemplateValue, FuncError> {
    Ok(TemplateValue::String(format_markdown(&from_template(one_argument("format_markdown", args)?))))
}

/// One POSIX-shell argument: single quotes, each `'` written as `'"'"'`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\"'\"'"))
}

/// The payload as Markdown: session, usage (aggregate and per branch),
/// skills, tool calls, the findings or opportunities with evidence and
/// proposed changes, and the checks. Every dynamic text is escaped.
pub fn format_markdown(payload: &Value) -> String {
    let mut out = String::new();
    let session = &payload["session"];
    field_line(&mut out, "Session ID", &text_of(&session["id"]));
    field_line(&mut out, "Command", &text_of(&session["command"]));
    field_line(&mut out, "Mode", &text_of(&session["mode"]));
    field_line(&mut out, "Model", &text_of(&session["model"]));
    field_line(&mut out, "Reasoning effort", &text_of(&session["reasoning_effort"]));
    let elapsed = session["elapsed_ms"].as_u64().unwrap_or(0);
    field_line(&mut out, "Elapsed", &git_agent_shared::cli::format_duration(Duration::from_millis(elapsed)));

    let metrics = &payload["metrics"];
    out.push_str("\n## Usage\n\n");
    usage_lines(&mut out, &metrics["usage"]);
    out.push_str("\n## Used skills\n");
    list_or_none(&mut out, metrics["used_skills"].as_array(), |out, skill| {
        out.push_str(&format!("- {}\n", escape(&text_of(skill))));
    });
    out.push_str("\n## Tool calls\n");
    list_or_none(&mut out, metrics["tool_calls"].as_array(), |out, tool| {
        out.push_str(&format!("- {}: {}\n", escape(&text_of(&tool["name"])), tool["count"].as_u64().unwrap_or(0)));
    });
    out.push_str(&format!("\n## Branches ({})\n", metrics["branches_created"].as_u64().unwrap_or(0)));
    let branches = metrics["branches"].as_array().filter(|branches| !branches.is_empty());
    match branches {
        None => out.push_str("\nNone\n"),
        Some(branches) => {
            for branch in branches {
                out.push_str(&format!("\n### Branch {}\n\n", code(&text_of(&branch["id"]))));
                field_line(&mut out, "Parent", &text_of(&branch["parent_id"]));
                field_line(&mut out, "Model", &text_of(&branch["model"]));
                field_line(&mut out, "Reasoning effort", &text_of(&branch["reasoning_effort"]));
                usage_lines(&mut out, &branch["usage"]);
            }
        }
    }

    let Some(report) = payload["report"].as_object() else {
        out.push_str("\n## Report\n\nUnavailable\n");
        return out;
    };
    let summary = report.get("summary").map(text_of).unwrap_or_default();
    if !summary.is_empty() {
        out.push_str(&format!("\n## Summary\n\n{}\n", escape(&summary)));
    }
    let recommendation = report.get("recommendation").map(text_of).unwrap_or_default();
    if !recommendation.is_empty() {
        out.push('\n');
        field_line(&mut out, "Recommendation", &recommendation);
    }
    if let Some(findings) = report.get("findings") {
        items(&mut out, "Findings", findings, |out, item| {
            out.push_str(&format!(
                "\n### {} — {}\n\n",
                escape(&text_of(&item["severity"])),
                escape(&text_of(&item["title"]))
            ));
            field_line(out, "Aspect", &text_of(&item["aspect"]));
            paragraph(out, "Impact", &text_of(&item["impact"]));
            evidence(out, &item["evidences"]);
            paragraph(out, "Proposed fix", &text_of(&item["proposed_fix"]));
        });
    } else if let Some(opportunities) = report.get("opportunities") {
        items(&mut out, "Opportunities", opportunities, |out, item| {
            out.push_str(&format!(
                "\n### {} — {}\n\n",
                escape(&text_of(&item["aspect"])),
                escape(&text_of(&item["title"]))
            ));
            paragraph(out, "Details", &text_of(&item["body"]));
            evidence(out, &item["evidences"]);
            paragraph(out, "Proposed change", &text_of(&item["proposed_change"]));
        });
    } else {
        out.push_str("\n## Report items\n\nNo findings or opportunities field.\n");
    }
    checks(&mut out, report.get("checks"));
    out
}

fn usage_lines(out: &mut String, usage: &Value) {
    let count = |key: &str| usage[key].as_u64().unwrap_or(0);
    out.push_str(&format!("- **Input tokens:** {}\n", count("input_tokens")));
    out.push_str(&format!("  - Cached: {}\n", count("cached_input_tokens")));
    out.push_str(&format!("  - Cache write: {}\n", count("cache_write_input_tokens")));
    out.push_str(&format!("  - Uncached: {}\n", count("uncached_input_tokens")));
    out.push_str(&format!("- **Output tokens:** {}\n", count("output_tokens")));
    out.push_str(&format!("  - Reasoning: {}\n", count("reasoning_tokens")));
    out.push_str(&format!("- **Total tokens:** {}\n", count("total_tokens")));
}

fn list_or_none(out: &mut String, list: Option<&Vec<Value>>, mut line: impl FnMut(&mut String, &Value)) {
    match list.filter(|list| !list.is_empty()) {
        None => out.push_str("\nNone\n"),
        Some(list) => {
            out.push('\n');
            for item in list {
                line(out, item);
            }
        }
    }
}

fn items(out: &mut String, heading: &str, value: &Value, mut item: impl FnMut(&mut String, &Value)) {
    out.push_str(&format!("\n## {heading}\n"));
    let Some(list) = value.as_array() else {
        out.push_str("\nUnavailable\n");
        return;
    };
    if list.is_empty() {
        out.push_str("\nNone\n");
    }
    for entry in list {
        if entry.is_object() {
            item(out, entry);
        } else {
            out.push_str(&format!("\n### Unavailable {}\n", heading.to_lowercase().trim_end_matches('s')));
        }
    }
}

fn evidence(out: &mut String, value: &Value) {
    out.push_str("\n**Evidence**\n\n");
    let list = value.as_array().filter(|list| !list.is_empty());
    let Some(list) = list else {
        out.push_str("- Unavailable\n");
        return;
    };
    for entry in list {
        if !entry.is_object() {
            out.push_str("- Unavailable\n");
            continue;
        }
        let mut location = text_of(&entry["path"]);
        let (start, end) = (text_of(&entry["line_start"]), text_of(&entry["line_end"]));
        if !start.is_empty() {
            location.push_str(&format!(":{start}"));
            if !end.is_empty() && end != start {
                location.push_str(&format!("-{end}"));
            }
        }
        out.push_str(&format!("- {} — {}\n", code(&location), escape(&text_of(&entry["title"]))));
    }
}

fn checks(out: &mut String, value: Option<&Value>) {
    let Some(list) = value.and_then(Value::as_array).filter(|list| !list.is_empty()) else { return };
    out.push_str("\n## Checks\n");
    for check in list {
        if !check.is_object() {
            out.push_str("\n### Unavailable check\n");
            continue;
        }
        out.push_str(&format!("\n### {} — {}\n", escape(&text_of(&check["name"])), escape(&text_of(&check["status"]))));
        let reason = text_of(&check["reason"]);
        if !reason.is_empty() {
            paragraph(out, "Reason", &reason);
        }
        let error = text_of(&check["error"]);
        if !error.is_empty() {
            paragraph(out, "Error", &error);
        }
        for diagnostic in check["diagnostics"].as_array().into_iter().flatten() {
            if !diagnostic.is_object() {
                out.push_str("\n- Unavailable diagnostic\n");
                continue;
            }
            let mut location = text_of(&diagnostic["path"]);
            for key in ["line", "column"] {
                let part = text_of(&diagnostic[key]);
                if !part.is_empty() {
                    location.push_str(&format!(":{part}"));
                }
            }
            out.push_str(&format!(
                "\n- {} {} — {}\n",
                code(&location),
                code(&text_of(&diagnostic["code"])),
                escape(&text_of(&diagnostic["message"]))
            ));
        }
        if let Some(omitted) = check["omitted"].as_i64().filter(|omitted| *omitted > 0) {
            out.push_str(&format!("\n- **Additional diagnostics omitted:** {omitted}\n"));
        }
    }
}

fn field_line(out: &mut String, label: &str, value: &str) {
    let value = if value.is_empty() { "Unavailable" } else { value };
    out.push_str(&format!("- **{label}:** {}\n", escape(value)));
}

fn paragraph(out: &mut String, label: &str, value: &str) {
    let value = if value.is_empty() { "Unavailable" } else { value };
    out.push_str(&format!("\n**{label}**\n\n{}\n", escape(value)));
}

/// A JSON scalar as text (strings unquoted); empty for null, objects and
/// arrays.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        Value::Bool(value) => value.to_string(),
        _ => String::new(),
    }
}

/// An inline code span that no backtick inside can close.
fn code(value: &str) -> String {
    let value = value.replace("\r\n", " ").replace(['\r', '\n'], " ");
    let mut longest = 0;
    let mut current = 0;
    for character in value.chars() {
        if character == '`' {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let padded = value.starts_with('`') || value.ends_with('`') || value.starts_with(' ') || value.ends_with(' ');
    if padded { format!("{fence} {value} {fence}") } else { format!("{fence}{value}{fence}") }
}

/// Text whose Markdown syntax is escaped, line by line, without leading
/// indentation (which would start a code block).
fn escape(value: &str) -> String {
    value
        .split('\n')
        .map(|line| {
            let mut escaped = String::with_capacity(line.len());
            for character in line.trim_start_matches([' ', '\t']).chars() {
                if "\\`*_[]<>#|-+!~=.)".contains(character) {
                    escaped.push('\\');
                }
                escaped.push(character);
            }
            escaped
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;

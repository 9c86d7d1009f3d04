//! The shared read-only repository tools: `repo_summary`, `list_files`,
//! `read_file`, `inspect_file`, `grep`, `find` and `jq`.

use super::paths::{RepoFiles, WalkedKind};
use super::schema::{self, NoArguments};
use super::{BlockingTool, Tool, ToolError, ToolOutput};
use gitagent_git::FileSource;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::BufRead;
use std::ops::ControlFlow;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Every shared repository tool over `files`.
pub fn tools(files: &Arc<RepoFiles>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(RepoSummary(Arc::clone(files))),
        Arc::new(ListFiles(Arc::clone(files))),
        Arc::new(ReadFile(Arc::clone(files))),
        Arc::new(super::inspect::InspectFile(Arc::clone(files))),
        Arc::new(Grep(Arc::clone(files))),
        Arc::new(Find(Arc::clone(files))),
        Arc::new(super::jq::Jq(Arc::clone(files))),
    ]
}

/// `repo_summary` alone, for tasks that offer no other repository tool.
pub fn repo_summary(files: &Arc<RepoFiles>) -> Arc<dyn Tool> {
    Arc::new(RepoSummary(Arc::clone(files)))
}

fn entries_cap(requested: Option<u64>, default: usize) -> usize {
    requested.map_or(default, |n| usize::try_from(n.clamp(1, 1000)).unwrap_or(1000))
}

#[derive(Clone)]
struct RepoSummary(Arc<RepoFiles>);

impl BlockingTool for RepoSummary {
    const NAME: &'static str = "repo_summary";
    const DESCRIPTION: &'static str = "Repository metadata: root path, branch, HEAD commit, detached state, remotes.";
    type Args = NoArguments;

    fn run(&self, _: NoArguments, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let root_path = git_agent_shared::quote::os_path_key(self.0.root()).into_owned();
        // An ordinary folder has no Git metadata to report.
        let Some(repo) = self.0.repo() else {
            return Ok(ToolOutput::new(json!({ "root_path": root_path }), false));
        };
        let head = repo.head();
        let remotes: serde_json::Map<String, Value> =
            repo.remotes().into_iter().map(|(name, urls)| (name, json!(urls))).collect();
        Ok(ToolOutput::new(
            json!({
                "root_path": root_path,
                "branch": head.branch,
                "head_sha": head.sha,
                "is_detached": head.detached,
                "remotes": remotes,
            }),
            false,
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Repository-relative folder; null or empty for the root.
    path: Option<String>,
    /// Maximum files to return; null for 200.
    #[schemars(range(min = 1, max = 1000))]
    max_entries: Option<u64>,
}

#[derive(Clone)]
struct ListFiles(Arc<RepoFiles>);

impl BlockingTool for ListFiles {
    const NAME: &'static str = "list_files";
    const DESCRIPTION: &'static str =
        "List repository files under a folder (ignored files, symlinks and internal folders skipped).";
    type Args = ListArgs;

    fn run(&self, args: ListArgs, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let files = &self.0;
        let cap = entries_cap(args.max_entries, 200);
        let mut found = Vec::new();
        let mut truncated = false;
        let source = files.source(None)?;
        files.walk(source, args.path.as_deref().unwrap_or(""), cancel, |path, kind| {
            if kind != WalkedKind::File {
                return ControlFlow::Continue(());
            }
            if found.len() == cap {
                truncated = true;
                return ControlFlow::Break(());
            }
            found.push(path.to_string());
            ControlFlow::Continue(())
        })?;
        Ok(ToolOutput::new(json!({ "files": found }), truncated))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// Repository-relative file path, copied from prepared context or tool output.
    path: String,
    /// Where to read: worktree, index or head; null for the command's default.
    #[schemars(schema_with = "schema::source")]
    source: Option<String>,
    /// First line (1-based, inclusive); null for 1.
    #[schemars(range(min = 1, max = 10_000_000))]
    line_start: Option<u64>,
    /// Last line (inclusive); null for the end.
    #[schemars(range(min = 1, max = 10_000_000))]
    line_end: Option<u64>,
    /// Prefix lines with their numbers like `nl -ba`.
    with_line_number: Option<bool>,
    /// Maximum bytes to return; null for 32768.
    #[schemars(range(min = 1, max = 65536))]
    max_bytes: Option<u64>,
    /// Maximum lines to return; null for 800.
    #[schemars(range(min = 1, max = 2000))]
    max_lines: Option<u64>,
}

#[derive(Clone)]
struct ReadFile(Arc<RepoFiles>);

impl BlockingTool for ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str =
        "Read a UTF-8 repository file, optionally an inclusive line range, with byte and line caps.";
    type Args = ReadArgs;

    fn run(&self, args: ReadArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        read_file(&self.0, args)
    }
}

fn read_file(files: &RepoFiles, args: ReadArgs) -> Result<ToolOutput, ToolError> {
    let source = files.source(args.source.as_deref())?;
    let start = args.line_start.unwrap_or(1).max(1);
    let end = args.line_end;
    if end.is_some_and(|end| end < start) {
        return Err(ToolError::Recoverable(format!("line_end {end:?} is before line_start {start}")));
    }
    let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
    let numbered = args.with_line_number.unwrap_or(false);
    let mut reader = files.open(source, &args.path)?;
    let mut content = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut last = 0u64;
    let mut kept = 0usize;
    let mut truncated = false;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|error| ToolError::recoverable(format!("{}: {error}", args.path)))?;
        if read == 0 {
            break;
        }
        number += 1;
        if number < start {
            continue;
        }
        if end.is_some_and(|end| number > end) {
            break;
        }
        if line.contains(&0) {
            return Err(ToolError::Recoverable(format!("{}: binary content, not text", args.path)));
        }
        let text =
            std::str::from_utf8(&line).map_err(|_| ToolError::Recoverable(format!("{}: not UTF-8 text", args.path)))?;
        let rendered = if numbered { format!("{number:>6}\t{text}") } else { text.to_string() };
        if kept == max_lines || content.len() + rendered.len() > max_bytes {
            let room = max_bytes.saturating_sub(content.len());
            if kept < max_lines && room > 0 {
                content.push_str(&rendered[..git_agent_shared::bounded::floor_char_boundary(&rendered, room)]);
                last = number;
            }
            truncated = true;
            break;
        }
        content.push_str(&rendered);
        kept += 1;
        last = number;
    }
    if number < start && !(start == 1 && number == 0) {
        return Err(ToolError::Recoverable(format!("line_start {start} is past the end ({number} lines)")));
    }
    Ok(ToolOutput::new(
        json!({"path": args.path, "source": source.as_str(), "line_start": start, "line_end": last, "content": content}),
        truncated,
    ))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// Regular expression (RE2 syntax, no backreferences).
    pattern: String,
    /// Repository-relative folder to search; null for the root.
    path: Option<String>,
    /// Glob on the path or file name, such as *.rs; null for all.
    glob: Option<String>,
    /// Maximum matches; null for 100.
    #[schemars(range(min = 1, max = 1000))]
    max_matches: Option<u64>,
}

#[derive(Clone)]
struct Grep(Arc<RepoFiles>);

/// Files larger than this are searched only up to it.
const GREP_FILE_LIMIT: usize = 2 * 1024 * 1024;

impl BlockingTool for Grep {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str =
        "Search repository text files with a linear-time (RE2-style) regular expression and an optional glob.";
    type Args = GrepArgs;

    fn run(&self, args: GrepArgs, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
        grep(&self.0, args, cancel)
    }
}

fn grep(files: &RepoFiles, args: GrepArgs, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
    let pattern = regex::RegexBuilder::new(&args.pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|error| ToolError::Recoverable(format!("invalid pattern: {error}")))?;
    let glob = safe_glob(args.glob.as_deref())?;
    let cap = entries_cap(args.max_matches, 100);
    let source = files.source(None)?;
    let mut candidates = Vec::new();
    files.walk(source, args.path.as_deref().unwrap_or(""), cancel, |path, kind| {
        if kind == WalkedKind::File && glob.as_ref().is_none_or(|glob| glob_matches(glob, path)) {
            candidates.push(path.to_string());
        }
        ControlFlow::Continue(())
    })?;
    let mut matches = Vec::new();
    let mut truncated = false;
    'files: for path in candidates {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(bytes) = files.read(source, &path) else { continue };
        if bytes.len() > GREP_FILE_LIMIT {
            truncated = true;
        }
        let bytes = &bytes[..bytes.len().min(GREP_FILE_LIMIT)];
        if bytes[..bytes.len().min(8000)].contains(&0) {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        for (index, line) in text.lines().enumerate() {
            if pattern.is_match(line) {
                if matches.len() == cap {
                    truncated = true;
                    break 'files;
                }
                let cut = git_agent_shared::bounded::floor_char_boundary(line, 1000);
                matches.push(json!({"path": path, "line": index + 1, "text": &line[..cut]}));
            }
        }
    }
    Ok(ToolOutput::new(json!({ "matches": matches }), truncated))
}

/// A glob that cannot reach outside the repository.
fn safe_glob(raw: Option<&str>) -> Result<Option<globset::GlobMatcher>, ToolError> {
    let Some(raw) = raw.map(str::trim).filter(|raw| !raw.is_empty()) else { return Ok(None) };
    if raw.starts_with('/') || raw.split('/').any(|part| part == "..") {
        return Err(ToolError::Recoverable(format!("glob {raw:?} must stay inside the repository")));
    }
    let glob = globset::GlobBuilder::new(raw)
        .literal_separator(true)
        .build()
        .map_err(|error| ToolError::Recoverable(format!("invalid glob: {error}")))?;
    Ok(Some(glob.compile_matcher()))
}

/// A glob matches the whole relative path or the file name.
fn glob_matches(glob: &globset::GlobMatcher, path: &str) -> bool {
    glob.is_match(path) || glob.is_match(path.rsplit('/').next().unwrap_or(path))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    /// Repository-relative folder to search; null for the root.
    path: Option<String>,
    /// Glob on the path or name, such as *_test.go; null for all.
    name: Option<String>,
    /// Entry type; null for any.
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["any", "file", "directory"]))]
    kind: Option<String>,
    /// Maximum entries; null for 200.
    #[schemars(range(min = 1, max = 1000))]
    max_entries: Option<u64>,
}

#[derive(Clone)]
struct Find(Arc<RepoFiles>);

impl BlockingTool for Find {
    const NAME: &'static str = "find";
    const DESCRIPTION: &'static str = "Find repository files or folders whose path or name matches a glob.";
    type Args = FindArgs;

    fn run(&self, args: FindArgs, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let files = &self.0;
        let glob = safe_glob(args.name.as_deref())?;
        let kind = args.kind.unwrap_or_else(|| "any".into());
        let cap = entries_cap(args.max_entries, 200);
        let mut entries = Vec::new();
        let mut truncated = false;
        let source = files.source(None)?;
        files.walk(source, args.path.as_deref().unwrap_or(""), cancel, |path, walked| {
            // A FIFO, socket or device is reported as what it is (only
            // with type any), never as a file.
            let this = walked.as_str();
            if (kind == "any" || kind == this) && glob.as_ref().is_none_or(|glob| glob_matches(glob, path)) {
                if entries.len() == cap {
                    truncated = true;
                    return ControlFlow::Break(());
                }
                entries.push(json!({"path": path, "type": this}));
            }
            ControlFlow::Continue(())
        })?;
        Ok(ToolOutput::new(json!({ "entries": entries }), truncated))
    }
}

/// Reads at most `limit` bytes of a source; whether more existed.
pub(super) fn read_prefix(
    files: &RepoFiles,
    source: FileSource,
    path: &str,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<(Vec<u8>, u64, u64, bool), ToolError> {
    let mut reader = files.open(source, path)?;
    let mut kept = Vec::new();
    let mut size = 0u64;
    let mut lines = 0u64;
    let mut last = b'\n';
    let mut buffer = [0u8; 32 * 1024];
    loop {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let read = std::io::Read::read(&mut reader, &mut buffer)
            .map_err(|error| ToolError::recoverable(format!("{path}: {error}")))?;
        if read == 0 {
            break;
        }
        let chunk = &buffer[..read];
        size += read as u64;
        lines += chunk.iter().filter(|byte| **byte == b'\n').count() as u64;
        last = chunk[read - 1];
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..read.min(room)]);
    }
    if size > 0 && last != b'\n' {
        lines += 1;
    }
    Ok((kept, size, lines, size > limit as u64))
}

//! Host checks that run once after a validated review: the
//! `golangci-lint` check, present only when the caller's PATH has
//! `golangci-lint` and the authoritative scope selects at least one Go
//! package, and the opt-in `clippy` check (`review --clippy`: `cargo
//! clippy` compiles the repository, build scripts and procedural macros
//! included), present only when a changed `.rs` file belongs to a Cargo
//! package. An inapplicable check is absent from `checks`, never
//! "skipped". Package selection follows the spec: existing regular `.go`
//! paths select the nearest module (without leaving their repository
//! component) and their exact package directory; each selected package is
//! one `./pkg` pattern; diagnostics outside the changed paths are dropped.
//! A staged review lints the verified, materialized index snapshot (a
//! private temporary folder), never the worktree; a commit-range review
//! (`--base`, `--commit`) lints the reviewed commit materialized the same
//! way. Codebase module
//! discovery applies each component's ignore rules (its `.gitignore`
//! files, `info/exclude` and the caller's global excludes file) before it
//! enters a folder, and an unreadable folder that is not ignored is a
//! planning error.

use super::git::GitEnv;
use super::prepare::{Mode, PreparedScope};
use git_agent_shared::environment::vars;
use gitagent_runtime::subprocess::{Helper, SubprocessError, Toolchain};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const GOLANGCI_LINT: &str = "golangci-lint";
pub const MAX_DIAGNOSTICS: usize = 100;
const MAX_MESSAGE: usize = 512;
const MAX_CODE: usize = 128;
const MAX_ERROR: usize = 1024;
const MAX_OUTPUT_BYTES: u64 = 16 << 20;
const CHECK_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Diagnostic {
    pub path: String,
    pub line: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub column: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    pub message: String,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// One check's result: pass, findings, skipped or error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckResult {
    pub name: String,
    pub status: String,
    pub diagnostics: Vec<Diagnostic>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

fn single_line(text: &str, limit: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.len() <= limit {
        return joined;
    }
    let mut end = limit;
    while !joined.is_char_boundary(end) {
        end -= 1;
    }
    joined[..end].trim().to_string()
}

/// Why a stored check result breaks its invariants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidCheck {
    #[error("invalid checker name {0:?}")]
    Name(String),
    #[error("check {0:?} diagnostics must be strictly ordered, unique and at most {MAX_DIAGNOSTICS}")]
    Diagnostics(String),
    #[error("check {name:?} has an invalid {status:?} result")]
    Result { name: String, status: String },
}

impl CheckResult {
    /// A pass or findings result from raw diagnostics: normalized, sorted,
    /// unique, at most 100 kept and the rest counted as omitted.
    pub fn from_diagnostics(name: &str, diagnostics: Vec<Diagnostic>) -> Self {
        let mut set = BTreeSet::new();
        for diagnostic in diagnostics {
            let message = single_line(&diagnostic.message, MAX_MESSAGE);
            if diagnostic.line < 1 || message.is_empty() {
                continue;
            }
            set.insert(Diagnostic {
                path: diagnostic.path,
                line: diagnostic.line,
                column: diagnostic.column.max(0),
                code: single_line(&diagnostic.code, MAX_CODE),
                message,
            });
        }
        let mut diagnostics: Vec<Diagnostic> = set.into_iter().collect();
        let omitted = diagnostics.len().saturating_sub(MAX_DIAGNOSTICS) as i64;
        diagnostics.truncate(MAX_DIAGNOSTICS);
        let status = if diagnostics.is_empty() && omitted == 0 { "pass" } else { "findings" };
        Self {
            name: name.into(),
            status: status.into(),
            diagnostics,
            omitted,
            reason: String::new(),
            error: String::new(),
        }
    }

    pub fn error(name: &str, message: &str) -> Self {
        let mut error = single_line(message, MAX_ERROR);
        if error.is_empty() {
            error = "static check failed".into();
        }
        Self {
            name: name.into(),
            status: "error".into(),
            diagnostics: Vec::new(),
            omitted: 0,
            reason: String::new(),
            error,
        }
    }

    /// A check that could not run, with the reason.
    pub fn skipped(name: &str, reason: &str) -> Self {
        let mut reason = single_line(reason, MAX_ERROR);
        if reason.is_empty() {
            reason = "static check skipped".into();
        }
        Self {
            name: name.into(),
            status: "skipped".into(),
            diagnostics: Vec::new(),
            omitted: 0,
            reason,
            error: String::new(),
        }
    }

    /// The invariants of a stored result.
    pub fn validate(&self) -> Result<(), InvalidCheck> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"._-".contains(&byte));
        if !name_ok {
            return Err(InvalidCheck::Name(self.name.clone()));
        }
        if self.diagnostics.len() > MAX_DIAGNOSTICS || self.diagnostics.windows(2).any(|pair| pair[0] >= pair[1]) {
            return Err(InvalidCheck::Diagnostics(self.name.clone()));
        }
        let ok = match self.status.as_str() {
            "pass" => {
                self.diagnostics.is_empty() && self.omitted == 0 && self.reason.is_empty() && self.error.is_empty()
            }
            "findings" => {
                (!self.diagnostics.is_empty() || self.omitted > 0) && self.reason.is_empty() && self.error.is_empty()
            }
            "skipped" => {
                self.diagnostics.is_empty() && self.omitted == 0 && !self.reason.is_empty() && self.error.is_empty()
            }
            "error" => {
                self.diagnostics.is_empty() && self.omitted == 0 && self.reason.is_empty() && !self.error.is_empty()
            }
            _ => false,
        };
        if ok { Ok(()) } else { Err(InvalidCheck::Result { name: self.name.clone(), status: self.status.clone() }) }
    }
}

/// One `golangci-lint run` invocation: a module and one package pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Invocation {
    pub module_root: PathBuf,
    pub target: String,
}

/// The planned golangci-lint check; `None` when it does not apply.
#[derive(Debug, Clone)]
pub struct GolangciPlan {
    pub executable: PathBuf,
    /// The checker workspace: the repository, or the index snapshot.
    pub root: PathBuf,
    pub invocations: Vec<Invocation>,
    /// Root-relative changed paths that may carry diagnostics (empty in
    /// codebase mode, where every path may).
    pub scope: BTreeSet<String>,
    /// The materialized index snapshot of a staged review, removed when
    /// the plan is dropped.
    pub snapshot: Option<std::sync::Arc<tempfile::TempDir>>,
}

/// A check could not be planned: the review fails (as the spec's
/// planning errors do) instead of reporting a partial check.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "plan check \"{GOLANGCI_LINT}\": cannot read {source}\nhint: fix the folder's permissions, or ignore it in .gitignore"
    )]
    Access { source: ignore::Error },
    /// The cause's message is shown as it is (`{0}`), which ends the
    /// rendered chain there.
    #[error("plan static checks: materialize the checked snapshot: {0}")]
    Snapshot(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Drift(#[from] super::prepare::PrepareError),
}

/// Plans the golangci-lint check for a prepared scope. Blocking: it walks
/// folders and may write the index snapshot.
pub fn plan_golangci(
    prepared: &PreparedScope,
    path_var: Option<&str>,
    git_env: &GitEnv,
) -> Result<Option<GolangciPlan>, PlanError> {
    let Some(executable) = git_agent_shared::executable::find_on_path(path_var, GOLANGCI_LINT) else {
        return Ok(None);
    };
    let Ok(repository) = std::fs::canonicalize(&prepared.root) else { return Ok(None) };
    let mut root = repository.clone();
    let mut snapshot = None;
    if matches!(prepared.mode, Mode::Staged | Mode::Base | Mode::Commit) {
        if !prepared.paths.iter().any(|path| path.ends_with(".go")) {
            return Ok(None);
        }
        let (dir, snapshot_root) = materialize(prepared, git_env)?;
        root = snapshot_root;
        snapshot = Some(std::sync::Arc::new(dir));
    }
    let mut invocations = BTreeSet::new();
    if prepared.mode == Mode::Codebase {
        for module in codebase_modules(&root, &prepared.components, git_env)? {
            invocations.insert(Invocation { module_root: module, target: "./...".into() });
        }
    } else {
        for path in &prepared.paths {
            if let Some(invocation) = changed_package(&root, &prepared.components, path) {
                invocations.insert(invocation);
            }
        }
    }
    if invocations.is_empty() {
        return Ok(None);
    }
    let scope =
        if prepared.mode == Mode::Codebase { BTreeSet::new() } else { prepared.paths.iter().cloned().collect() };
    Ok(Some(GolangciPlan { executable, root, invocations: invocations.into_iter().collect(), scope, snapshot }))
}

/// The verified index (or reviewed commit) written to a private
/// temporary folder, and that folder's canonical path.
fn materialize(prepared: &PreparedScope, git_env: &GitEnv) -> Result<(tempfile::TempDir, PathBuf), PlanError> {
    let workspace = super::prepare::verified_workspace(prepared, git_env)?
        .ok_or_else(|| PlanError::Snapshot("the scope has no repository snapshot".into()))?;
    let dir = tempfile::Builder::new()
        .prefix("git-agent-index-")
        .tempdir()
        .map_err(|error| PlanError::Snapshot(error.into()))?;
    super::scope::materialize_index(&workspace, git_env, dir.path())
        .map_err(|error| PlanError::Snapshot(error.into()))?;
    let root = std::fs::canonicalize(dir.path()).map_err(|error| PlanError::Snapshot(error.into()))?;
    Ok((dir, root))
}

fn changed_package(root: &Path, components: &[String], path: &str) -> Option<Invocation> {
    if !path.ends_with(".go") || !super::report::valid_evidence_path(path) {
        return None;
    }
    let absolute = root.join(path);
    let metadata = std::fs::symlink_metadata(&absolute).ok()?;
    if !metadata.is_file() || std::fs::canonicalize(&absolute).ok()? != absolute {
        return None;
    }
    let component = components
        .iter()
        .filter(|prefix| prefix.is_empty() || path.starts_with(&format!("{prefix}/")))
        .max_by_key(|prefix| prefix.len())
        .map_or_else(|| root.to_path_buf(), |prefix| root.join(prefix));
    let package_dir = absolute.parent()?.to_path_buf();
    let mut dir = package_dir.clone();
    let module_root = loop {
        let go_mod = dir.join("go.mod");
        if std::fs::symlink_metadata(&go_mod).is_ok_and(|meta| meta.is_file()) {
            break dir;
        }
        if dir == component || !dir.starts_with(&component) {
            return None;
        }
        dir = dir.parent()?.to_path_buf();
    };
    let relative = package_dir.strip_prefix(&module_root).ok()?;
    let target =
        if relative.as_os_str().is_empty() { ".".to_string() } else { format!("./{}", relative.to_string_lossy()) };
    if target.split('/').any(|part| part == ".." || part == "...") || target.contains('\0') {
        return None;
    }
    Some(Invocation { module_root, target })
}

/// Every `go.mod` below `root`, outside `.git`, `vendor` and private
/// runtime state, with each component's ignore rules (including the
/// caller's global excludes file) applied before a folder is entered.
fn codebase_modules(root: &Path, components: &[String], git_env: &GitEnv) -> Result<Vec<PathBuf>, PlanError> {
    // The global excludes file, matched relative to each component's root;
    // the deepest component owning a path decides.
    let mut excludes: Vec<(PathBuf, ignore::gitignore::Gitignore)> = Vec::new();
    for prefix in components.iter().map(String::as_str).chain(std::iter::once("")) {
        let component = if prefix.is_empty() { root.to_path_buf() } else { root.join(prefix) };
        if excludes.iter().any(|(known, _)| known == &component) {
            continue;
        }
        if let Some(file) = git_env.global_excludes_file(&component) {
            let mut builder = ignore::gitignore::GitignoreBuilder::new(&component);
            builder.add(file);
            if let Ok(matcher) = builder.build() {
                excludes.push((component, matcher));
            }
        }
    }
    excludes.sort_by_key(|(component, _)| std::cmp::Reverse(component.components().count()));
    let mut modules = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            let name = entry.file_name().to_string_lossy();
            if entry.depth() > 0 && matches!(name.as_ref(), ".git" | "vendor" | ".git-agent" | ".omx") {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            let path = entry.path();
            let owner = excludes.iter().find(|(component, _)| path.starts_with(component));
            !owner.is_some_and(|(component, matcher)| {
                path != component.as_path() && matcher.matched_path_or_any_parents(path, is_dir).is_ignore()
            })
        })
        .build();
    for entry in walker {
        let entry = entry.map_err(|source| PlanError::Access { source })?;
        if entry.file_name() == "go.mod"
            && entry.file_type().is_some_and(|kind| kind.is_file())
            && let Some(parent) = entry.path().parent()
        {
            modules.push(parent.to_path_buf());
        }
    }
    modules.sort();
    modules.dedup();
    Ok(modules)
}

#[derive(Deserialize)]
struct LintOutput {
    #[serde(rename = "Issues")]
    issues: Option<Vec<LintIssue>>,
    #[serde(rename = "Report", default)]
    report: Option<LintReport>,
}

#[derive(Deserialize)]
struct LintIssue {
    #[serde(rename = "FromLinter", default)]
    from_linter: String,
    #[serde(rename = "Text", default)]
    text: String,
    #[serde(rename = "Pos", default)]
    pos: Option<LintPos>,
}

#[derive(Deserialize, Default)]
struct LintPos {
    #[serde(rename = "Filename", default)]
    filename: String,
    #[serde(rename = "Line", default)]
    line: i64,
    #[serde(rename = "Column", default)]
    column: i64,
}

#[derive(Deserialize, Default)]
struct LintReport {
    #[serde(rename = "Error", default)]
    error: String,
}

/// The static checks stopped before they finished.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("the inspection was cancelled during static checks")]
    Cancelled,
}

/// Runs the planned check through [`gitagent_runtime::subprocess`]: fixed argv, no
/// shell, the invocation's allow-listed environment with the Go toolchain
/// pinned (local toolchain, no module download, read-only `go.mod`), a
/// private temporary folder for results and cache. Failures of the
/// checker become an error result; only cancellation is an `Err`.
pub async fn run_golangci(
    plan: &GolangciPlan,
    env: &git_agent_shared::Environment,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<CheckResult, CheckError> {
    let temp = match tempfile::Builder::new().prefix("git-agent-golangci-").tempdir() {
        Ok(temp) => temp,
        Err(error) => {
            return Ok(CheckResult::error(GOLANGCI_LINT, &format!("create private checker directory: {error}")));
        }
    };
    let mut diagnostics = Vec::new();
    for (index, invocation) in plan.invocations.iter().enumerate() {
        let result_path = temp.path().join(format!("result-{index}.json"));
        let run = Helper::new(&plan.executable, env, Toolchain::Go)
            .arg("run")
            .args(["--fix=false", "--issues-exit-code=1", "--path-mode=abs", "--show-stats=false"])
            .arg(format!("--output.json.path={}", result_path.display()))
            .arg("--output.text.path=/dev/null")
            // The package pattern is built by the planner (`./pkg`), never
            // a leading `-`; `--` keeps it an operand all the same.
            .arg("--")
            .arg(&invocation.target)
            .current_dir(&invocation.module_root)
            .env(vars::GOLANGCI_LINT_CACHE, temp.path().join("cache"))
            .timeout(CHECK_TIMEOUT)
            .discard_output()
            .run(cancel)
            .await;
        let code = match run {
            Ok(output) => output.status.code(),
            Err(SubprocessError::Cancelled { .. }) => return Err(CheckError::Cancelled),
            Err(SubprocessError::TimedOut { .. }) => {
                return Ok(CheckResult::error(GOLANGCI_LINT, "golangci-lint timed out"));
            }
            Err(error) => return Ok(CheckResult::error(GOLANGCI_LINT, &error.to_string())),
        };
        if !matches!(code, Some(0 | 1)) {
            return Ok(CheckResult::error(GOLANGCI_LINT, &format!("golangci-lint exited with code {code:?}")));
        }
        let bytes = match std::fs::metadata(&result_path) {
            Ok(meta) if meta.len() > MAX_OUTPUT_BYTES => {
                return Ok(CheckResult::error(GOLANGCI_LINT, "golangci-lint JSON result exceeds 16 MiB"));
            }
            Ok(_) => std::fs::read(&result_path).unwrap_or_default(),
            Err(_) => return Ok(CheckResult::error(GOLANGCI_LINT, "golangci-lint did not produce a JSON result")),
        };
        let output: LintOutput = match serde_json::from_slice(&bytes) {
            Ok(output) => output,
            Err(error) => {
                return Ok(CheckResult::error(GOLANGCI_LINT, &format!("decode golangci-lint JSON result: {error}")));
            }
        };
        if let Some(report) = &output.report
            && !report.error.trim().is_empty()
        {
            return Ok(CheckResult::error(
                GOLANGCI_LINT,
                &format!("golangci-lint reported an analysis error: {}", report.error),
            ));
        }
        let Some(issues) = output.issues else {
            return Ok(CheckResult::error(GOLANGCI_LINT, "golangci-lint JSON result has no issues array"));
        };
        if (code == Some(0)) != issues.is_empty() {
            return Ok(CheckResult::error(GOLANGCI_LINT, "golangci-lint exit status and issues disagree"));
        }
        diagnostics.extend(issues.into_iter().filter_map(|issue| normalize(plan, invocation, issue)));
    }
    Ok(CheckResult::from_diagnostics(GOLANGCI_LINT, diagnostics))
}

fn normalize(plan: &GolangciPlan, invocation: &Invocation, issue: LintIssue) -> Option<Diagnostic> {
    let pos = issue.pos?;
    let mut path = PathBuf::from(pos.filename.trim());
    if path.as_os_str().is_empty() || pos.line < 1 || issue.text.trim().is_empty() {
        return None;
    }
    if !path.is_absolute() {
        path = invocation.module_root.join(path);
    }
    if !path.starts_with(&invocation.module_root) || std::fs::canonicalize(&path).ok()? != path {
        return None;
    }
    let relative = path.strip_prefix(&plan.root).ok()?.to_string_lossy().into_owned();
    if !relative.ends_with(".go") || (!plan.scope.is_empty() && !plan.scope.contains(&relative)) {
        return None;
    }
    Some(Diagnostic {
        path: relative,
        line: pos.line,
        column: pos.column.max(0),
        code: issue.from_linter,
        message: issue.text,
    })
}

/// The opt-in Rust check (`review --clippy`).
pub const CLIPPY: &str = "clippy";
/// `cargo clippy` stdout kept for parsing.
const MAX_CLIPPY_OUTPUT: usize = 16 << 20;

/// One `cargo clippy` run: a Cargo workspace (or lone package) and the
/// packages of the changed `.rs` files in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClippyInvocation {
    /// The folder whose `Cargo.toml` cargo starts from.
    pub manifest_dir: PathBuf,
    pub packages: BTreeSet<String>,
}

/// The planned clippy check; `None` when no Rust target applies.
#[derive(Debug, Clone)]
pub struct ClippyPlan {
    pub cargo: PathBuf,
    /// The checker workspace: the repository, or the materialized snapshot.
    pub root: PathBuf,
    pub invocations: Vec<ClippyInvocation>,
    /// Root-relative changed paths that may carry diagnostics.
    pub scope: BTreeSet<String>,
    /// The target lines each changed `.rs` path added or rewrote
    /// (inclusive ranges): a diagnostic must start on one of them, so an
    /// unchanged line of a changed file adds nothing to the report.
    pub lines: BTreeMap<String, Vec<(i64, i64)>>,
    /// Cargo's target folder, private, under the metadata root.
    pub target_dir: PathBuf,
    pub snapshot: Option<std::sync::Arc<tempfile::TempDir>>,
}

/// Plans the clippy check: each existing regular changed `.rs` file
/// selects its nearest package (`Cargo.toml` with a `[package]` table,
/// without leaving its repository component) and, when an enclosing
/// `Cargo.toml` has a `[workspace]` table, runs from that workspace. Staged
/// and commit-range reviews read the materialized snapshot. Codebase
/// mode has no changed files and no clippy check.
pub fn plan_clippy(
    prepared: &PreparedScope,
    path_var: Option<&str>,
    git_env: &GitEnv,
    target_dir: &Path,
) -> Result<Option<ClippyPlan>, PlanError> {
    if prepared.mode == Mode::Codebase || !prepared.paths.iter().any(|path| path.ends_with(".rs")) {
        return Ok(None);
    }
    let Some(cargo) = git_agent_shared::executable::find_on_path(path_var, "cargo") else { return Ok(None) };
    let Ok(mut root) = std::fs::canonicalize(&prepared.root) else { return Ok(None) };
    let mut snapshot = None;
    if matches!(prepared.mode, Mode::Staged | Mode::Base | Mode::Commit) {
        let (dir, snapshot_root) = materialize(prepared, git_env)?;
        root = snapshot_root;
        snapshot = Some(std::sync::Arc::new(dir));
    }
    let mut invocations: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for path in prepared.paths.iter().filter(|path| path.ends_with(".rs")) {
        if let Some((manifest_dir, package)) = changed_crate(&root, &prepared.components, path) {
            invocations.entry(manifest_dir).or_default().insert(package);
        }
    }
    if invocations.is_empty() {
        return Ok(None);
    }
    Ok(Some(ClippyPlan {
        cargo,
        root,
        invocations: invocations
            .into_iter()
            .map(|(manifest_dir, packages)| ClippyInvocation { manifest_dir, packages })
            .collect(),
        scope: prepared.paths.iter().cloned().collect(),
        lines: prepared
            .paths
            .iter()
            .filter(|path| path.ends_with(".rs"))
            .map(|path| (path.clone(), changed_lines(prepared, git_env, path)))
            .collect(),
        target_dir: target_dir.to_path_buf(),
        snapshot,
    }))
}

/// The target lines `path` added or rewrote against the base: the new
/// side of its zero-context hunks.
fn changed_lines(prepared: &PreparedScope, git_env: &GitEnv, path: &str) -> Vec<(i64, i64)> {
    use super::report::{Source, read_source};
    let target = match prepared.mode {
        Mode::Staged => Source::Index,
        Mode::Base | Mode::Commit => Source::Target,
        Mode::Uncommitted | Mode::Codebase => Source::Worktree,
    };
    let Some(new) = read_source(prepared, git_env, target, path) else { return Vec::new() };
    let old = read_source(prepared, git_env, Source::Head, path).unwrap_or_default();
    let mut ranges = Vec::new();
    let content = gitagent_git::patch::Content::Bytes { old: &old, new: &new };
    gitagent_git::patch::write_content_hunks(content, 0, &mut |line| {
        ranges.extend(hunk_target(line));
        true
    });
    ranges
}

/// The inclusive target range of a hunk header (`@@ -a,b +c,d @@`); none
/// for a header that only deletes (`d` = 0) or a line that is no header.
fn hunk_target(line: &str) -> Option<(i64, i64)> {
    let rest = line.strip_prefix("@@ -")?;
    let target = rest.split_whitespace().nth(1)?.strip_prefix('+')?;
    let (start, count) = match target.split_once(',') {
        Some((start, count)) => (start.parse::<i64>().ok()?, count.parse::<i64>().ok()?),
        None => (target.parse::<i64>().ok()?, 1),
    };
    (count > 0).then_some((start, start + count - 1))
}

/// The package owning a changed `.rs` file and the folder cargo runs in.
fn changed_crate(root: &Path, components: &[String], path: &str) -> Option<(PathBuf, String)> {
    if !super::report::valid_evidence_path(path) {
        return None;
    }
    let absolute = root.join(path);
    let metadata = std::fs::symlink_metadata(&absolute).ok()?;
    if !metadata.is_file() || std::fs::canonicalize(&absolute).ok()? != absolute {
        return None;
    }
    let component = component_root(root, components, path);
    let mut dir = absolute.parent()?.to_path_buf();
    let mut package = None;
    let mut workspace = None;
    loop {
        let manifest = dir.join("Cargo.toml");
        if std::fs::symlink_metadata(&manifest).is_ok_and(|meta| meta.is_file()) {
            let text = std::fs::read_to_string(&manifest).ok()?;
            if package.is_none() {
                package = package_name(&text).map(|name| (dir.clone(), name));
            }
            if package.is_some() && has_table(&text, "workspace") {
                workspace = Some(dir.clone());
                break;
            }
        }
        if dir == component || !dir.starts_with(&component) {
            break;
        }
        dir = dir.parent()?.to_path_buf();
    }
    let (package_dir, name) = package?;
    Some((workspace.unwrap_or(package_dir), name))
}

fn component_root(root: &Path, components: &[String], path: &str) -> PathBuf {
    components
        .iter()
        .filter(|prefix| prefix.is_empty() || path.starts_with(&format!("{prefix}/")))
        .max_by_key(|prefix| prefix.len())
        .map_or_else(|| root.to_path_buf(), |prefix| root.join(prefix))
}

/// Whether a manifest has the top-level table `[name]`.
fn has_table(manifest: &str, name: &str) -> bool {
    manifest.lines().any(|line| line.trim() == format!("[{name}]"))
}

/// `name` of the `[package]` table, when the manifest has one.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if key.trim() == "name" {
            let name = value.trim().trim_matches('"').trim_matches('\'');
            let valid = !name.is_empty()
                && !name.starts_with('-')
                && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
            return valid.then(|| name.to_string());
        }
    }
    None
}

#[derive(Deserialize)]
struct CargoMessage {
    #[serde(default)]
    reason: String,
    #[serde(default)]
    message: Option<CompilerMessage>,
}

#[derive(Deserialize)]
struct CompilerMessage {
    #[serde(default)]
    message: String,
    #[serde(default)]
    level: String,
    #[serde(default)]
    code: Option<CompilerCode>,
    #[serde(default)]
    spans: Vec<CompilerSpan>,
}

#[derive(Deserialize)]
struct CompilerCode {
    #[serde(default)]
    code: String,
}

#[derive(Deserialize)]
struct CompilerSpan {
    #[serde(default)]
    file_name: String,
    #[serde(default)]
    line_start: i64,
    #[serde(default)]
    column_start: i64,
    #[serde(default)]
    is_primary: bool,
}

/// Runs `cargo clippy --message-format=json --offline` per invocation
/// through [`gitagent_runtime::subprocess`] (the Rust toolchain's allow-listed
/// environment, no credential), with the plan's private target folder.
/// Missing offline dependencies make the check `skipped` with the reason;
/// other failures are an error result; only cancellation is an `Err`.
pub async fn run_clippy(
    plan: &ClippyPlan,
    env: &git_agent_shared::Environment,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<CheckResult, CheckError> {
    if let Err(error) = git_agent_shared::private_fs::ensure_private_dir(&plan.target_dir) {
        return Ok(CheckResult::error(CLIPPY, &format!("create the clippy target folder: {error}")));
    }
    let mut diagnostics = Vec::new();
    for invocation in &plan.invocations {
        let mut helper = Helper::new(&plan.cargo, env, Toolchain::Rust)
            // `--locked`: cargo never writes a Cargo.lock into the repository.
            .args(["clippy", "--message-format=json", "--offline", "--locked", "--all-targets", "--quiet"])
            .arg("--target-dir")
            .arg(&plan.target_dir);
        for package in &invocation.packages {
            helper = helper.arg("--package").arg(package);
        }
        let run = helper
            .current_dir(&invocation.manifest_dir)
            .timeout(CHECK_TIMEOUT)
            .output_limit(MAX_CLIPPY_OUTPUT)
            .run(cancel)
            .await;
        let output = match run {
            Ok(output) => output,
            Err(SubprocessError::Cancelled { .. }) => return Err(CheckError::Cancelled),
            Err(SubprocessError::TimedOut { .. }) => return Ok(CheckResult::error(CLIPPY, "cargo clippy timed out")),
            Err(error) => return Ok(CheckResult::error(CLIPPY, &error.to_string())),
        };
        if output.truncated {
            return Ok(CheckResult::error(CLIPPY, "cargo clippy output exceeds 16 MiB"));
        }
        let mut errors = 0;
        for line in output.stdout.split(|&byte| byte == b'\n').filter(|line| !line.is_empty()) {
            let Ok(message) = serde_json::from_slice::<CargoMessage>(line) else { continue };
            let Some(compiler) = message.message.filter(|_| message.reason == "compiler-message") else { continue };
            if compiler.level == "error" {
                errors += 1;
            }
            diagnostics.extend(normalize_clippy(plan, invocation, compiler));
        }
        if !output.status.success() && errors == 0 {
            let stderr = output.stderr_text();
            if stderr.contains("--locked") {
                return Ok(CheckResult::skipped(
                    CLIPPY,
                    "Cargo.lock is missing or out of date; clippy runs with --locked and never writes one",
                ));
            }
            if offline_unavailable(&stderr) {
                let first = stderr.lines().find(|line| line.contains("error")).unwrap_or_default();
                return Ok(CheckResult::skipped(
                    CLIPPY,
                    &format!("dependencies are not available offline: {}", first.trim_start_matches("error: ")),
                ));
            }
            return Ok(CheckResult::error(
                CLIPPY,
                &format!("cargo clippy exited with {}: {}", output.status, stderr.lines().last().unwrap_or_default()),
            ));
        }
    }
    Ok(CheckResult::from_diagnostics(CLIPPY, diagnostics))
}

/// Whether cargo failed because a dependency would have to be downloaded.
fn offline_unavailable(stderr: &str) -> bool {
    ["--offline", "offline mode", "failed to download", "no matching package named", "failed to load source"]
        .iter()
        .any(|needle| stderr.contains(needle))
}

fn normalize_clippy(plan: &ClippyPlan, invocation: &ClippyInvocation, message: CompilerMessage) -> Option<Diagnostic> {
    if !matches!(message.level.as_str(), "warning" | "error") || message.message.trim().is_empty() {
        return None;
    }
    let span = message.spans.iter().find(|span| span.is_primary)?;
    let mut path = PathBuf::from(span.file_name.trim());
    if path.as_os_str().is_empty() || span.line_start < 1 {
        return None;
    }
    if !path.is_absolute() {
        path = invocation.manifest_dir.join(path);
    }
    if !path.starts_with(&plan.root) || std::fs::canonicalize(&path).ok()? != path {
        return None;
    }
    let relative = path.strip_prefix(&plan.root).ok()?.to_string_lossy().into_owned();
    if !relative.ends_with(".rs") || !plan.scope.contains(&relative) {
        return None;
    }
    let changed = plan.lines.get(&relative)?;
    if !changed.iter().any(|(start, end)| (*start..=*end).contains(&span.line_start)) {
        return None;
    }
    Some(Diagnostic {
        path: relative,
        line: span.line_start,
        column: span.column_start.max(0),
        code: message.code.map(|code| code.code).unwrap_or_default(),
        message: message.message,
    })
}

/// The dry-run stand-in for a planned check: one deterministic diagnostic
/// on the first changed Go path.
pub fn synthetic_result(plan: &GolangciPlan) -> CheckResult {
    let path = plan.scope.iter().find(|path| path.ends_with(".go")).cloned().unwrap_or_else(|| "dry-run.go".into());
    CheckResult::from_diagnostics(
        GOLANGCI_LINT,
        vec![Diagnostic {
            path,
            line: 1,
            column: 0,
            code: "dry-run".into(),
            message: format!("{GOLANGCI_LINT} deterministic dry-run diagnostic"),
        }],
    )
}

/// The dry-run stand-in for a planned clippy check.
pub fn synthetic_clippy_result(plan: &ClippyPlan) -> CheckResult {
    let path = plan.scope.iter().find(|path| path.ends_with(".rs")).cloned().unwrap_or_else(|| "dry-run.rs".into());
    CheckResult::from_diagnostics(
        CLIPPY,
        vec![Diagnostic {
            path,
            line: 1,
            column: 0,
            code: "dry-run".into(),
            message: format!("{CLIPPY} deterministic dry-run diagnostic"),
        }],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::GitError;
    use crate::tests::Fixture;

    fn fake_linter(dir: &Path) -> String {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let script = bin.join(GOLANGCI_LINT);
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin.display().to_string()
    }

    #[test]
    fn a_snapshot_failure_keeps_its_cause_and_reads_as_before() {
        use std::error::Error as _;
        let denied = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let worktree = GitError::Worktree { path: "/r/a.go".into(), source: denied };
        let before = format!("plan static checks: materialize the checked snapshot: {worktree}");
        let error = PlanError::Snapshot(worktree.into());
        assert!(error.source().is_some_and(|cause| cause.downcast_ref::<GitError>().is_some()));
        assert_eq!(git_agent_shared::error_chain::render(&error), before);
        assert!(
            before.ends_with(": permission denied\nhint: check the file's permissions, or ignore it in .gitignore")
        );
    }

    #[test]
    fn golangci_selects_changed_packages_only_when_on_path() {
        let fixture = Fixture::new();
        fixture.write("go.mod", "module example.test/m\n");
        fixture.write("pkg/a.go", "package pkg\n");
        fixture.write("pkg/a_test.go", "package pkg\n");
        fixture.write("main.go", "package main\n");
        fixture.write("tools/go.mod", "module example.test/tools\n");
        fixture.write("tools/t.go", "package tools\n");
        fixture.write("README.md", "x\n");
        fixture.commit_all("initial");
        fixture.write("pkg/a.go", "package pkg\n\nfunc A() {}\n");
        fixture.write("pkg/a_test.go", "package pkg\n\n// test\n");
        fixture.write("tools/t.go", "package tools\n// changed\n");
        fixture.write("README.md", "y\n");
        std::fs::remove_file(fixture.repo().join("main.go")).unwrap();
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        let git_env = GitEnv::default();
        assert!(
            plan_golangci(&prepared, Some("/nonexistent"), &git_env).unwrap().is_none(),
            "absent without the executable"
        );
        let path = fake_linter(fixture.dir.path());
        let plan = plan_golangci(&prepared, Some(&path), &git_env).unwrap().unwrap();
        let root = std::fs::canonicalize(fixture.repo()).unwrap();
        assert_eq!(
            plan.invocations,
            [
                Invocation { module_root: root.clone(), target: "./pkg".into() },
                Invocation { module_root: root.join("tools"), target: ".".into() },
            ]
        );
        let synthetic = synthetic_result(&plan);
        assert_eq!(synthetic.status, "findings");
        assert_eq!(synthetic.diagnostics[0].path, "main.go");
        synthetic.validate().unwrap();
        // No Go target in scope: the check is absent.
        let fixture = Fixture::new();
        fixture.write("README.md", "x\n");
        fixture.commit_all("initial");
        fixture.write("README.md", "y\n");
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        assert!(plan_golangci(&prepared, Some(&path), &git_env).unwrap().is_none());
    }

    #[tokio::test]
    async fn golangci_runs_pinned_with_the_allow_listed_environment() {
        use gitagent_runtime::subprocess::testing::{assert_no_credentials, caller_env, recorded_argv, recorded_env};
        let fixture = Fixture::new();
        fixture.write("go.mod", "module example.test/m\n");
        fixture.write("pkg/a.go", "package pkg\n");
        fixture.commit_all("initial");
        fixture.write("pkg/a.go", "package pkg\n\nfunc A() {}\n");
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        let record = fixture.dir.path().join("record");
        std::fs::create_dir(&record).unwrap();
        let bin = fixture.dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let script = bin.join(GOLANGCI_LINT);
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n/usr/bin/env > '{dir}/{GOLANGCI_LINT}.env'\nprintf '%s\\n' \"$@\" > '{dir}/{GOLANGCI_LINT}.argv'\n\
                 for arg in \"$@\"; do case \"$arg\" in --output.json.path=*) printf '{{\"Issues\":[]}}' > \"${{arg#--output.json.path=}}\";; esac; done\n",
                dir = record.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = caller_env(&bin);
        let plan = plan_golangci(&prepared, env.get("PATH"), &GitEnv::default()).unwrap().unwrap();
        let result = run_golangci(&plan, &env, &tokio_util::sync::CancellationToken::new()).await.unwrap();
        assert_eq!(result.status, "pass", "{result:?}");
        let seen = recorded_env(&record, GOLANGCI_LINT);
        assert_no_credentials(&seen);
        for (name, value) in
            [("GOTOOLCHAIN", "local"), ("GOFLAGS", "-mod=readonly"), ("GOPROXY", "off"), ("GOPATH", "/home/caller/go")]
        {
            assert!(seen.iter().any(|(n, v)| n == name && v == value), "{name}={value} missing: {seen:?}");
        }
        assert!(seen.iter().any(|(name, _)| name == "GOLANGCI_LINT_CACHE"));
        let argv = recorded_argv(&record, GOLANGCI_LINT).unwrap();
        assert_eq!(argv[0], "run");
        assert_eq!(argv[argv.len() - 2..], ["--", "./pkg"]);
    }

    #[test]
    fn staged_review_lints_the_materialized_index_snapshot() {
        let fixture = Fixture::new();
        fixture.write("go.mod", "module example.test/m\n");
        fixture.write("pkg/a.go", "package pkg\n");
        fixture.write("pkg/b.go", "package pkg\n");
        fixture.commit_all("initial");
        fixture.write("pkg/a.go", "package pkg\n\nfunc Staged() {}\n");
        fixture.git(&["add", "pkg/a.go"]);
        // The worktree differs from the index: it must not be linted.
        fixture.write("pkg/a.go", "package pkg\n\nfunc Unstaged() {}\n");
        std::fs::remove_file(fixture.repo().join("pkg/b.go")).unwrap();
        let prepared = fixture.prepare(Mode::Staged).unwrap();
        let path = fake_linter(fixture.dir.path());
        let plan = plan_golangci(&prepared, Some(&path), &fixture.env()).unwrap().unwrap();
        let repository = std::fs::canonicalize(fixture.repo()).unwrap();
        assert_ne!(plan.root, repository, "the checker workspace is a snapshot");
        assert_eq!(plan.invocations, [Invocation { module_root: plan.root.clone(), target: "./pkg".into() }]);
        let read = |path: &str| std::fs::read_to_string(plan.root.join(path)).unwrap();
        assert_eq!(read("pkg/a.go"), "package pkg\n\nfunc Staged() {}\n");
        assert_eq!(read("pkg/b.go"), "package pkg\n", "an unstaged deletion stays in the snapshot");
        assert_eq!(read("go.mod"), "module example.test/m\n");
        let snapshot = plan.root.clone();
        drop(plan);
        assert!(!snapshot.exists(), "the snapshot is removed with its plan");
        // Drift since launch fails the plan.
        fixture.git(&["add", "pkg/a.go"]);
        assert!(matches!(plan_golangci(&prepared, Some(&path), &fixture.env()), Err(PlanError::Drift(_))));
    }

    #[test]
    fn codebase_module_discovery_honours_the_global_excludes_file() {
        let fixture = Fixture::new();
        fixture.write("kept/go.mod", "module example.test/kept\n");
        fixture.write("kept/k.go", "package kept\n");
        fixture.write(".gitignore", "local-ignored/\n");
        fixture.commit_all("initial");
        fixture.write("globally-ignored/go.mod", "module example.test/global\n");
        fixture.write("local-ignored/go.mod", "module example.test/local\n");
        let excludes = fixture.home().join(".config/git/ignore");
        std::fs::create_dir_all(excludes.parent().unwrap()).unwrap();
        std::fs::write(&excludes, "globally-ignored/\n").unwrap();
        let prepared = fixture.prepare(Mode::Codebase).unwrap();
        let path = fake_linter(fixture.dir.path());
        let root = std::fs::canonicalize(fixture.repo()).unwrap();
        let plan = plan_golangci(&prepared, Some(&path), &fixture.env()).unwrap().unwrap();
        assert_eq!(plan.invocations, [Invocation { module_root: root.join("kept"), target: "./...".into() }]);
        // Without the caller's excludes file the module is discovered.
        let plan = plan_golangci(&prepared, Some(&path), &GitEnv::default()).unwrap().unwrap();
        assert_eq!(plan.invocations.len(), 2, "{:?}", plan.invocations);
    }

    #[test]
    fn codebase_module_discovery_fails_on_an_unreadable_folder_unless_it_is_ignored() {
        let fixture = Fixture::new();
        fixture.write("kept/go.mod", "module example.test/kept\n");
        fixture.write("kept/k.go", "package kept\n");
        fixture.commit_all("initial");
        // A folder whose path is longer than PATH_MAX: no process can list
        // it by path, root included (tests may run as root, which reads
        // any mode). `mkdir -p` creates it one component at a time.
        let component = "d".repeat(250);
        let deep = vec![component.as_str(); 18].join("/");
        let made = std::process::Command::new("mkdir")
            .args(["-p", &deep])
            .current_dir(fixture.repo().join("kept"))
            .status()
            .expect("run mkdir");
        assert!(made.success(), "mkdir -p {deep}");
        let path = fake_linter(fixture.dir.path());
        let prepared = fixture.prepare(Mode::Codebase).unwrap();
        let error = plan_golangci(&prepared, Some(&path), &fixture.env()).unwrap_err();
        let PlanError::Access { source } = &error else { panic!("{error}") };
        assert!(source.to_string().contains("too long"), "{error}");
        let before = format!(
            "plan check \"{GOLANGCI_LINT}\": cannot read {source}\nhint: fix the folder's permissions, or ignore it in .gitignore"
        );
        assert_eq!(git_agent_shared::error_chain::render(&error), before);

        let excludes = fixture.home().join(".config/git/ignore");
        std::fs::create_dir_all(excludes.parent().unwrap()).unwrap();
        std::fs::write(&excludes, format!("kept/{component}/\n")).unwrap();
        let plan = plan_golangci(&prepared, Some(&path), &fixture.env()).unwrap().unwrap();
        let root = std::fs::canonicalize(fixture.repo()).unwrap();
        assert_eq!(plan.invocations, [Invocation { module_root: root.join("kept"), target: "./...".into() }]);
    }

    /// The caller's environment as far as cargo needs it.
    fn rust_env() -> git_agent_shared::Environment {
        let mut vars = std::collections::BTreeMap::new();
        for name in ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"] {
            if let Ok(value) = std::env::var(name) {
                vars.insert(name.to_string(), value);
            }
        }
        vars.insert("OPENAI_API_KEY".into(), "sk-clippy-secret".into());
        git_agent_shared::Environment::new(vars)
    }

    fn tiny_crate(fixture: &Fixture, manifest_extra: &str) {
        fixture.write(
            "Cargo.toml",
            &format!("[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n{manifest_extra}"),
        );
        fixture.write("src/lib.rs", "pub mod changed;\n\npub fn old() -> i32 {\n    return 1;\n}\n");
        fixture.write("src/changed.rs", "pub fn a() -> i32 {\n    1\n}\n");
        fixture.write("README.md", "tiny\n");
    }

    #[tokio::test]
    async fn clippy_findings_are_limited_to_changed_lines() {
        let fixture = Fixture::new();
        tiny_crate(&fixture, "");
        fixture.write("Cargo.lock", "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"tiny\"\nversion = \"0.1.0\"\n");
        fixture.write("src/changed.rs", "pub fn a() -> i32 {\n    1\n}\n\npub fn b() -> i32 {\n    return 3;\n}\n");
        fixture.commit_all("initial");
        // Line 2 changes; `b`'s needless return on line 6 stays as it was.
        fixture.write(
            "src/changed.rs",
            "pub fn a() -> i32 {\n    return 2;\n}\n\npub fn b() -> i32 {\n    return 3;\n}\n",
        );
        fixture.write("README.md", "changed\n");
        let env = rust_env();
        let target = fixture.dir.path().join("clippy-target");
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        let plan = plan_clippy(&prepared, env.get("PATH"), &fixture.env(), &target).unwrap().unwrap();
        let root = std::fs::canonicalize(fixture.repo()).unwrap();
        assert_eq!(
            plan.invocations,
            [ClippyInvocation { manifest_dir: root.clone(), packages: ["tiny".into()].into() }]
        );
        let result = run_clippy(&plan, &env, &tokio_util::sync::CancellationToken::new()).await.unwrap();
        assert_eq!(result.status, "findings", "{result:?}");
        assert_eq!(
            result.diagnostics.iter().map(|d| (d.path.as_str(), d.line, d.code.as_str())).collect::<Vec<_>>(),
            [("src/changed.rs", 2, "clippy::needless_return")],
            "the unchanged lib.rs and the unchanged line 6 have the same lint but are not in scope: {result:?}"
        );
        assert_eq!(plan.lines["src/changed.rs"], [(2, 2)]);
        result.validate().unwrap();
        assert!(target.is_dir() && !root.join("target").exists(), "cargo builds in the private target folder only");
        let status = fixture.git(&["status", "--porcelain"]);
        assert_eq!(status.lines().count(), 2, "cargo wrote nothing into the repository: {status}");

        // Not a Rust change: no check.
        fixture.git(&["checkout", "--", "src/changed.rs"]);
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        assert!(plan_clippy(&prepared, env.get("PATH"), &fixture.env(), &target).unwrap().is_none());
    }

    #[tokio::test]
    async fn clippy_is_skipped_when_dependencies_are_not_available_offline() {
        let fixture = Fixture::new();
        tiny_crate(&fixture, "\n[dependencies]\ngit-agent-surely-absent-crate = \"1\"\n");
        fixture.write(
            "Cargo.lock",
            "version = 4\n\n[[package]]\nname = \"git-agent-surely-absent-crate\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"0000000000000000000000000000000000000000000000000000000000000000\"\n\n[[package]]\nname = \"tiny\"\nversion = \"0.1.0\"\ndependencies = [\n \"git-agent-surely-absent-crate\",\n]\n",
        );
        fixture.commit_all("initial");
        fixture.write("src/changed.rs", "pub fn a() -> i32 {\n    return 2;\n}\n");
        let env = rust_env();
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        let target = fixture.dir.path().join("clippy-target");
        let plan = plan_clippy(&prepared, env.get("PATH"), &fixture.env(), &target).unwrap().unwrap();
        let result = run_clippy(&plan, &env, &tokio_util::sync::CancellationToken::new()).await.unwrap();
        assert_eq!(result.status, "skipped", "{result:?}");
        assert!(result.reason.starts_with("dependencies are not available offline"), "{result:?}");
        result.validate().unwrap();
    }

    #[test]
    fn clippy_plans_workspace_members_from_the_workspace_root() {
        let fixture = Fixture::new();
        fixture.write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n");
        fixture.write("crates/one/Cargo.toml", "[package]\nname = \"one\"\nversion = \"0.1.0\"\n");
        fixture.write("crates/one/src/lib.rs", "\n");
        fixture.write("crates/two/Cargo.toml", "[package]\nname = 'two-b'\nversion = \"0.1.0\"\n");
        fixture.write("crates/two/src/lib.rs", "\n");
        fixture.commit_all("initial");
        fixture.write("crates/one/src/lib.rs", "// one\n");
        fixture.write("crates/two/src/lib.rs", "// two\n");
        let prepared = fixture.prepare(Mode::Staged);
        assert!(prepared.is_err(), "nothing staged");
        let prepared = fixture.prepare(Mode::Uncommitted).unwrap();
        let target = fixture.dir.path().join("t");
        let plan = plan_clippy(&prepared, rust_env().get("PATH"), &fixture.env(), &target).unwrap().unwrap();
        let root = std::fs::canonicalize(fixture.repo()).unwrap();
        assert_eq!(
            plan.invocations,
            [ClippyInvocation { manifest_dir: root, packages: ["one".to_string(), "two-b".to_string()].into() }]
        );
        let codebase = fixture.prepare(Mode::Codebase).unwrap();
        assert!(plan_clippy(&codebase, rust_env().get("PATH"), &fixture.env(), &target).unwrap().is_none());
    }

    #[test]
    fn hunk_headers_give_the_changed_target_lines() {
        assert_eq!(hunk_target("@@ -1,2 +3,4 @@ fn x"), Some((3, 6)));
        assert_eq!(hunk_target("@@ -5 +7 @@"), Some((7, 7)));
        assert_eq!(hunk_target("@@ -5,2 +4,0 @@"), None, "a pure deletion changes no target line");
        assert_eq!(hunk_target("+added line"), None);
    }

    #[test]
    fn results_normalize_and_validate() {
        let many: Vec<Diagnostic> = (1..=105)
            .map(|line| Diagnostic {
                path: "a.go".into(),
                line,
                column: 0,
                code: "x".into(),
                message: "m  \n m".into(),
            })
            .collect();
        let result = CheckResult::from_diagnostics("golangci-lint", many);
        assert_eq!((result.status.as_str(), result.diagnostics.len(), result.omitted), ("findings", 100, 5));
        assert_eq!(result.diagnostics[0].message, "m m");
        result.validate().unwrap();
        assert_eq!(CheckResult::from_diagnostics("golangci-lint", vec![]).status, "pass");
        CheckResult::error("golangci-lint", "boom").validate().unwrap();
        assert!(CheckResult::error("Bad Name", "boom").validate().is_err());
    }
}

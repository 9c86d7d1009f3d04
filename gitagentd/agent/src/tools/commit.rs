//! The commit-message tools: the staged scope (paths, status, stats), the
//! staged diff whole or for chosen paths, recent commits, the HEAD commit
//! (`git_head_show`, `git_diff_against_parent`), files at a revision, and
//! in amend mode the final amended diff and the staged amend delta. Which
//! of them a request offers is the task's [`CommitTools`] choice. The
//! revision tools are explore's ([`super::history`]) over the whole
//! repository.

use super::history::{DiffAgainstParent, HeadShow, Root, ShowFileAtRev, git_error};
use super::schema::{self, NoArguments};
use super::{BlockingTool, Tool, ToolError, ToolOutput};
use gitagent_git::{DiffScope, Repository};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Inventory tools list at most this many paths.
const MAX_ENTRIES: usize = 2000;

/// Which commit-message tools a request offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitTools {
    /// `git_staged_diff_for_paths`: offered when the prepared diff is
    /// large or capped.
    pub staged_diff_for_paths: bool,
    /// `git_final_amended_diff` and `git_amend_delta`.
    pub amend: bool,
}

impl Default for CommitTools {
    fn default() -> Self {
        Self { staged_diff_for_paths: true, amend: false }
    }
}

/// Every commit-message tool over `repo`.
pub fn tools(repo: &Repository) -> Vec<Arc<dyn Tool>> {
    select(repo, CommitTools { staged_diff_for_paths: true, amend: true })
}

/// The commit-message tools `choice` selects, in a stable order.
pub fn select(repo: &Repository, choice: CommitTools) -> Vec<Arc<dyn Tool>> {
    let repo = Arc::new(repo.clone());
    let mut out: Vec<Arc<dyn Tool>> = vec![
        Arc::new(StagedPaths(Arc::clone(&repo))),
        Arc::new(StagedStatus(Arc::clone(&repo))),
        Arc::new(StagedStat(Arc::clone(&repo))),
        Arc::new(StagedDiff(Arc::clone(&repo))),
    ];
    if choice.staged_diff_for_paths {
        out.push(Arc::new(StagedDiffForPaths(Arc::clone(&repo))));
    }
    out.push(Arc::new(RecentCommits(Arc::clone(&repo))));
    out.push(Arc::new(HeadShow(Root::Repository(Arc::clone(&repo)))));
    out.push(Arc::new(DiffAgainstParent(Root::Repository(Arc::clone(&repo)))));
    if choice.amend {
        out.push(Arc::new(FinalAmendedDiff(Arc::clone(&repo))));
        out.push(Arc::new(AmendDelta(Arc::clone(&repo))));
    }
    out.push(Arc::new(ShowFileAtRev(Root::Repository(repo))));
    out
}

/// At most [`MAX_ENTRIES`] items, and whether some were left out.
fn capped<T>(mut items: Vec<T>) -> (Vec<T>, bool) {
    let truncated = items.len() > MAX_ENTRIES;
    items.truncate(MAX_ENTRIES);
    (items, truncated)
}

#[derive(Clone)]
struct StagedPaths(Arc<Repository>);

impl BlockingTool for StagedPaths {
    const NAME: &'static str = "git_staged_paths";
    const DESCRIPTION: &'static str = "Paths with staged changes (at most 2000).";
    type Args = NoArguments;

    fn run(&self, _: NoArguments, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let paths: Vec<String> = self.0.staged_changes().map_err(git_error)?.into_iter().map(|c| c.path).collect();
        let (paths, truncated) = capped(paths);
        Ok(ToolOutput::new(json!({ "paths": paths }), truncated))
    }
}

#[derive(Clone)]
struct StagedStatus(Arc<Repository>);

impl BlockingTool for StagedStatus {
    const NAME: &'static str = "git_staged_status";
    const DESCRIPTION: &'static str =
        "Index status letter (A, M, D, T) of every staged path versus HEAD (at most 2000).";
    type Args = NoArguments;

    fn run(&self, _: NoArguments, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let status: Vec<Value> = self
            .0
            .staged_changes()
            .map_err(git_error)?
            .iter()
            .map(|change| json!({"path": change.path, "staging": change.status()}))
            .collect();
        let (status, truncated) = capped(status);
        Ok(ToolOutput::new(json!({ "status": status }), truncated))
    }
}

#[derive(Clone)]
struct StagedStat(Arc<Repository>);

impl BlockingTool for StagedStat {
    const NAME: &'static str = "git_staged_stat";
    const DESCRIPTION: &'static str = "Added and deleted lines of every staged path (at most 2000).";
    type Args = NoArguments;

    fn run(&self, _: NoArguments, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let changes = self.0.staged_changes().map_err(git_error)?;
        let (changes, truncated) = capped(changes);
        let stats: Vec<Value> = self
            .0
            .patches(&changes, 0)
            .map_err(git_error)?
            .iter()
            .map(|patch| json!({"path": patch.path, "adds": patch.adds, "deletes": patch.deletes, "is_binary": patch.binary}))
            .collect();
        Ok(ToolOutput::new(json!({ "stats": stats }), truncated))
    }
}

/// The diff of a whole scope, capped: what the three scope-diff tools
/// return.
fn scope_diff(repo: &Repository, scope: DiffScope, args: schema::CapArgs) -> Result<ToolOutput, ToolError> {
    let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
    let diff = repo.diff(scope, &[], max_bytes, max_lines).map_err(git_error)?;
    Ok(ToolOutput::new(json!({ "diff": diff.text }), diff.truncated))
}

#[derive(Clone)]
struct StagedDiff(Arc<Repository>);

impl BlockingTool for StagedDiff {
    const NAME: &'static str = "git_staged_diff";
    const DESCRIPTION: &'static str = "The staged diff versus HEAD, capped.";
    type Args = schema::CapArgs;

    fn run(&self, args: schema::CapArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        scope_diff(&self.0, DiffScope::Staged, args)
    }
}

#[derive(Clone)]
struct FinalAmendedDiff(Arc<Repository>);

impl BlockingTool for FinalAmendedDiff {
    const NAME: &'static str = "git_final_amended_diff";
    const DESCRIPTION: &'static str = "Authoritative in amend mode: the final amended commit (staged changes overlaid on HEAD) versus HEAD's first parent, capped.";
    type Args = schema::CapArgs;

    fn run(&self, args: schema::CapArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        scope_diff(&self.0, DiffScope::Amended, args)
    }
}

#[derive(Clone)]
struct AmendDelta(Arc<Repository>);

impl BlockingTool for AmendDelta {
    const NAME: &'static str = "git_amend_delta";
    const DESCRIPTION: &'static str = "Diagnostic only in amend mode: the staged changes versus HEAD, capped.";
    type Args = schema::CapArgs;

    fn run(&self, args: schema::CapArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        scope_diff(&self.0, DiffScope::Staged, args)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PathsArgs {
    /// Repository-relative staged paths or folders.
    paths: Vec<String>,
    /// Maximum bytes to return; null for 32768.
    #[schemars(range(min = 1, max = 65536))]
    max_bytes: Option<u64>,
    /// Maximum lines to return; null for 800.
    #[schemars(range(min = 1, max = 2000))]
    max_lines: Option<u64>,
}

#[derive(Clone)]
struct StagedDiffForPaths(Arc<Repository>);

impl BlockingTool for StagedDiffForPaths {
    const NAME: &'static str = "git_staged_diff_for_paths";
    const DESCRIPTION: &'static str = "The staged diff versus HEAD for chosen staged paths or folders, capped; for clusters the prepared diff cut off.";
    type Args = PathsArgs;

    fn run(&self, args: PathsArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        if args.paths.is_empty() {
            return Err(ToolError::Recoverable("paths must name at least one staged path".into()));
        }
        let paths = args.paths.iter().map(|path| super::RepoFiles::clean(path)).collect::<Result<Vec<_>, _>>()?;
        let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
        let diff = self.0.staged_diff(&paths, max_bytes, max_lines).map_err(git_error)?;
        Ok(ToolOutput::new(json!({ "paths": paths, "diff": diff.text }), diff.truncated))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CommitsArgs {
    /// Maximum commits; null for 10.
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u64>,
    /// Maximum bytes of commit data; null for 32768.
    #[schemars(range(min = 1, max = 65536))]
    max_bytes: Option<u64>,
}

#[derive(Clone)]
struct RecentCommits(Arc<Repository>);

impl BlockingTool for RecentCommits {
    const NAME: &'static str = "git_recent_commits";
    const DESCRIPTION: &'static str =
        "Recent commits from HEAD (sha, summary, author, date), newest first; style reference only.";
    type Args = CommitsArgs;

    fn run(&self, args: CommitsArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let limit = usize::try_from(args.limit.unwrap_or(10).clamp(1, 100)).unwrap_or(10);
        let (max_bytes, _) = schema::resolve_caps(args.max_bytes, None);
        let all = self.0.recent_commits(limit + 1).map_err(git_error)?;
        let mut truncated = all.len() > limit;
        let mut commits = Vec::new();
        let mut bytes = 0;
        for commit in all.into_iter().take(limit) {
            let size = serde_json::to_string(&commit).map(|text| text.len()).unwrap_or(0);
            if bytes + size > max_bytes {
                truncated = true;
                break;
            }
            bytes += size;
            commits.push(commit);
        }
        Ok(ToolOutput::new(json!({ "commits": commits }), truncated))
    }
}

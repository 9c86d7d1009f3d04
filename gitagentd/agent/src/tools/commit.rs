//! The commit-message tools: the staged scope (paths, status, stats), the
//! staged diff whole or for chosen paths, recent commits, the HEAD commit
//! (`git_head_show`, `git_diff_against_parent`), files at a revision, and
//! in amend mode the final amended diff and the staged amend delta. Which
//! of them a request offers is the task's [`CommitTools`] choice. The
//! revision tools are explore's ([`super::history`]) over the whole
//! repository.

use super::history::{DiffAgainstParent, HeadShow, Root, ShowFileAtRev, git_error};
use super::schema::{self, NoArguments};
use super::{Tool, ToolError, ToolFuture, ToolOutput, blocking};
use gitagent_git::{DiffScope, Repository};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

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
        Arc::new(ScopeDiff { repo: Arc::clone(&repo), kind: DiffTool::Staged }),
    ];
    if choice.staged_diff_for_paths {
        out.push(Arc::new(StagedDiffForPaths(Arc::clone(&repo))));
    }
    out.push(Arc::new(RecentCommits(Arc::clone(&repo))));
    out.push(Arc::new(HeadShow(Root::Repository(Arc::clone(&repo)))));
    out.push(Arc::new(DiffAgainstParent(Root::Repository(Arc::clone(&repo)))));
    if choice.amend {
        out.push(Arc::new(ScopeDiff { repo: Arc::clone(&repo), kind: DiffTool::FinalAmended }));
        out.push(Arc::new(ScopeDiff { repo: Arc::clone(&repo), kind: DiffTool::AmendDelta }));
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

macro_rules! staged_inventory_tool {
    ($type:ident, $name:literal, $description:literal, |$repo:ident| $body:expr) => {
        struct $type(Arc<Repository>);

        impl Tool for $type {
            fn name(&self) -> &'static str {
                $name
            }
            fn description(&self) -> &'static str {
                $description
            }
            fn parameters(&self) -> Value {
                schema::strict::<NoArguments>()
            }
            fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
                let $repo = Arc::clone(&self.0);
                blocking($name, arguments, cancel, move |_: NoArguments, _| $body)
            }
        }
    };
}

staged_inventory_tool!(StagedPaths, "git_staged_paths", "Paths with staged changes (at most 2000).", |repo| {
    let paths: Vec<String> = repo.staged_changes().map_err(git_error)?.into_iter().map(|c| c.path).collect();
    let (paths, truncated) = capped(paths);
    Ok(ToolOutput::new(json!({ "paths": paths }), truncated))
});

staged_inventory_tool!(
    StagedStatus,
    "git_staged_status",
    "Index status letter (A, M, D, T) of every staged path versus HEAD (at most 2000).",
    |repo| {
        let status: Vec<Value> = repo
            .staged_changes()
            .map_err(git_error)?
            .iter()
            .map(|change| json!({"path": change.path, "staging": change.status()}))
            .collect();
        let (status, truncated) = capped(status);
        Ok(ToolOutput::new(json!({ "status": status }), truncated))
    }
);

staged_inventory_tool!(
    StagedStat,
    "git_staged_stat",
    "Added and deleted lines of every staged path (at most 2000).",
    |repo| {
        let changes = repo.staged_changes().map_err(git_error)?;
        let (changes, truncated) = capped(changes);
        let stats: Vec<Value> = repo
            .patches(&changes, 0)
            .map_err(git_error)?
            .iter()
            .map(|patch| json!({"path": patch.path, "adds": patch.adds, "deletes": patch.deletes, "is_binary": patch.binary}))
            .collect();
        Ok(ToolOutput::new(json!({ "stats": stats }), truncated))
    }
);

/// The whole-scope diff tools.
#[derive(Debug, Clone, Copy)]
enum DiffTool {
    Staged,
    FinalAmended,
    AmendDelta,
}

impl DiffTool {
    fn name(self) -> &'static str {
        match self {
            Self::Staged => "git_staged_diff",
            Self::FinalAmended => "git_final_amended_diff",
            Self::AmendDelta => "git_amend_delta",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Self::Staged => "The staged diff versus HEAD, capped.",
            Self::FinalAmended => {
                "Authoritative in amend mode: the final amended commit (staged changes overlaid on HEAD) versus HEAD's first parent, capped."
            }
            Self::AmendDelta => "Diagnostic only in amend mode: the staged changes versus HEAD, capped.",
        }
    }

    fn scope(self) -> DiffScope {
        match self {
            Self::Staged | Self::AmendDelta => DiffScope::Staged,
            Self::FinalAmended => DiffScope::Amended,
        }
    }
}

struct ScopeDiff {
    repo: Arc<Repository>,
    kind: DiffTool,
}

impl Tool for ScopeDiff {
    fn name(&self) -> &'static str {
        self.kind.name()
    }
    fn description(&self) -> &'static str {
        self.kind.description()
    }
    fn parameters(&self) -> Value {
        schema::strict::<schema::CapArgs>()
    }
    fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
        let repo = Arc::clone(&self.repo);
        let kind = self.kind;
        blocking(kind.name(), arguments, cancel, move |args: schema::CapArgs, _| {
            let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
            let diff = repo.diff(kind.scope(), &[], max_bytes, max_lines).map_err(git_error)?;
            Ok(ToolOutput::new(json!({ "diff": diff.text }), diff.truncated))
        })
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

struct StagedDiffForPaths(Arc<Repository>);

impl Tool for StagedDiffForPaths {
    fn name(&self) -> &'static str {
        "git_staged_diff_for_paths"
    }
    fn description(&self) -> &'static str {
        "The staged diff versus HEAD for chosen staged paths or folders, capped; for clusters the prepared diff cut off."
    }
    fn parameters(&self) -> Value {
        schema::strict::<PathsArgs>()
    }
    fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
        let repo = Arc::clone(&self.0);
        blocking("git_staged_diff_for_paths", arguments, cancel, move |args: PathsArgs, _| {
            if args.paths.is_empty() {
                return Err(ToolError::Recoverable("paths must name at least one staged path".into()));
            }
            let paths = args.paths.iter().map(|path| super::RepoFiles::clean(path)).collect::<Result<Vec<_>, _>>()?;
            let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
            let diff = repo.staged_diff(&paths, max_bytes, max_lines).map_err(git_error)?;
            Ok(ToolOutput::new(json!({ "paths": paths, "diff": diff.text }), diff.truncated))
        })
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

struct RecentCommits(Arc<Repository>);

impl Tool for RecentCommits {
    fn name(&self) -> &'static str {
        "git_recent_commits"
    }
    fn description(&self) -> &'static str {
        "Recent commits from HEAD (sha, summary, author, date), newest first; style reference only."
    }
    fn parameters(&self) -> Value {
        schema::strict::<CommitsArgs>()
    }
    fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
        let repo = Arc::clone(&self.0);
        blocking("git_recent_commits", arguments, cancel, move |args: CommitsArgs, _| {
            let limit = usize::try_from(args.limit.unwrap_or(10).clamp(1, 100)).unwrap_or(10);
            let (max_bytes, _) = schema::resolve_caps(args.max_bytes, None);
            let all = repo.recent_commits(limit + 1).map_err(git_error)?;
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
        })
    }
}

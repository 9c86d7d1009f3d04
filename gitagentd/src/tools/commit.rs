//! The commit-message tools of normal mode: the staged scope (paths,
//! status, stats), the staged diff whole or for chosen paths, and recent
//! commits. Amend and submodule tools join this set in later work.

use super::schema::{self, nullable};
use super::{Tool, ToolError, ToolFuture, ToolOutput, blocking};
use crate::git::Repository;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The six staged-scope tools over `repo`.
pub fn tools(repo: &Repository) -> Vec<Arc<dyn Tool>> {
    let repo = Arc::new(repo.clone());
    vec![
        Arc::new(StagedPaths(Arc::clone(&repo))),
        Arc::new(StagedStatus(Arc::clone(&repo))),
        Arc::new(StagedStat(Arc::clone(&repo))),
        Arc::new(StagedDiff(Arc::clone(&repo))),
        Arc::new(StagedDiffForPaths(Arc::clone(&repo))),
        Arc::new(RecentCommits(repo)),
    ]
}

fn git_error(error: crate::git::GitError) -> ToolError {
    ToolError::Recoverable(error.to_string())
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
                schema::object(&[])
            }
            fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
                let $repo = Arc::clone(&self.0);
                blocking($name, arguments, cancel, move |_: Value, _| $body)
            }
        }
    };
}

staged_inventory_tool!(StagedPaths, "git_staged_paths", "Paths with staged changes.", |repo| {
    let paths: Vec<String> = repo.staged_changes().map_err(git_error)?.into_iter().map(|c| c.path).collect();
    Ok(ToolOutput::new(json!({ "paths": paths }), false))
});

staged_inventory_tool!(
    StagedStatus,
    "git_staged_status",
    "Index status letter (A, M, D, T) of every staged path versus HEAD.",
    |repo| {
        let status: Vec<Value> = repo
            .staged_changes()
            .map_err(git_error)?
            .iter()
            .map(|change| json!({"path": change.path, "staging": change.status()}))
            .collect();
        Ok(ToolOutput::new(json!({ "status": status }), false))
    }
);

staged_inventory_tool!(StagedStat, "git_staged_stat", "Added and deleted lines of every staged path.", |repo| {
    let changes = repo.staged_changes().map_err(git_error)?;
    let stats: Vec<Value> = repo
        .staged_patches(&changes, 0)
        .map_err(git_error)?
        .iter()
        .map(|patch| json!({"path": patch.path, "adds": patch.adds, "deletes": patch.deletes, "is_binary": patch.binary}))
        .collect();
    Ok(ToolOutput::new(json!({ "stats": stats }), false))
});

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CapArgs {
    max_bytes: Option<u64>,
    max_lines: Option<u64>,
}

struct StagedDiff(Arc<Repository>);

impl Tool for StagedDiff {
    fn name(&self) -> &'static str {
        "git_staged_diff"
    }
    fn description(&self) -> &'static str {
        "The staged diff versus HEAD, capped."
    }
    fn parameters(&self) -> Value {
        schema::object(&schema::caps())
    }
    fn call(&self, arguments: &str, cancel: tokio_util::sync::CancellationToken) -> ToolFuture {
        let repo = Arc::clone(&self.0);
        blocking("git_staged_diff", arguments, cancel, move |args: CapArgs, _| {
            let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
            let diff = repo.staged_diff(&[], max_bytes, max_lines).map_err(git_error)?;
            Ok(ToolOutput::new(json!({ "diff": diff.text }), diff.truncated))
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathsArgs {
    paths: Vec<String>,
    max_bytes: Option<u64>,
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
        let [bytes, lines] = schema::caps();
        schema::object(&[("paths", schema::string_array("Repository-relative staged paths or folders.")), bytes, lines])
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitsArgs {
    limit: Option<u64>,
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
        schema::object(&[
            ("limit", nullable(schema::integer("Maximum commits; null for 10.", 1, 100))),
            ("max_bytes", nullable(schema::integer("Maximum bytes of commit data; null for 32768.", 1, 65536))),
        ])
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

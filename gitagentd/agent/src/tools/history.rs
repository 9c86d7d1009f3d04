//! The Git history tools of `git-agent explore`, confined to the
//! exploration root: `git_recent_commits` and `git_log_range` list only
//! commits that change paths beneath it, `git_head_show` shows HEAD only
//! when HEAD changed something there, and every patch and file read is
//! limited to paths beneath the root and renders them relative to it.
//! Nothing above the root (paths, patches, file content) ever reaches the
//! model through them. They exist only when the root is inside a Git
//! repository.
//!
//! The revision tools (`git_head_show`, `git_diff_against_parent`,
//! `git_show_file_at_rev`) take a [`Root`]: commit-msg offers the same
//! ones over the whole repository (see [`super::commit`]). Their wording
//! depends on the root, so they implement [`Tool`] directly; the others
//! are [`BlockingTool`]s.

use super::paths::RepoFiles;
use super::schema;
use super::{BlockingTool, Tool, ToolError, ToolFuture, ToolOutput, blocking};
use gitagent_git::{DiffScope, GitError, Repository};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The history tools over `files`; none when its root is not in a
/// repository.
pub fn tools(files: &Arc<RepoFiles>) -> Vec<Arc<dyn Tool>> {
    if files.repo().is_none() {
        return Vec::new();
    }
    vec![
        Arc::new(RecentCommits(Arc::clone(files))),
        Arc::new(LogRange(Arc::clone(files))),
        Arc::new(HeadShow(Root::Folder(Arc::clone(files)))),
        Arc::new(DiffAgainstParent(Root::Folder(Arc::clone(files)))),
        Arc::new(ShowFileAtRev(Root::Folder(Arc::clone(files)))),
    ]
}

pub(super) fn git_error(error: GitError) -> ToolError {
    ToolError::Recoverable(error.to_string())
}

fn repo(files: &RepoFiles) -> Result<&Repository, ToolError> {
    files.repo().ok_or_else(|| ToolError::Recoverable("this folder is not in a Git repository".into()))
}

/// A revision the model named: no option-like or empty text.
fn revision(raw: &str) -> Result<&str, ToolError> {
    let rev = raw.trim();
    if rev.is_empty() || rev.starts_with('-') || rev.contains(char::is_whitespace) {
        return Err(ToolError::Recoverable(format!(
            "revision {rev:?} must name a commit, such as HEAD, HEAD~1, a branch, a tag or an id"
        )));
    }
    Ok(rev)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CommitsArgs {
    /// Maximum commits; null for 10.
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RangeArgs {
    /// A revision range: A..B (in B, not in A), A.. (A..HEAD), or one revision (its history).
    range: String,
    /// Maximum commits; null for 20.
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u64>,
}

fn limit(requested: Option<u64>, default: u64) -> usize {
    usize::try_from(requested.unwrap_or(default).clamp(1, 100)).unwrap_or(10)
}

#[derive(Clone)]
struct RecentCommits(Arc<RepoFiles>);

impl BlockingTool for RecentCommits {
    const NAME: &'static str = "git_recent_commits";
    const DESCRIPTION: &'static str = "Recent commits from HEAD that change files beneath the exploration root (sha, summary, author, date), newest first.";
    type Args = CommitsArgs;

    fn run(&self, args: CommitsArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let repo = repo(&self.0)?;
        if repo.head().sha.is_none() {
            return Ok(ToolOutput::new(json!({ "commits": [] }), false));
        }
        let found = repo.commits_touching(&["HEAD"], &[], self.0.base(), limit(args.limit, 10)).map_err(git_error)?;
        Ok(ToolOutput::new(json!({ "commits": found.commits }), found.truncated))
    }
}

#[derive(Clone)]
struct LogRange(Arc<RepoFiles>);

impl BlockingTool for LogRange {
    const NAME: &'static str = "git_log_range";
    const DESCRIPTION: &'static str = "Commits of a revision range (A..B, A.., or one revision) that change files beneath the exploration root, newest first.";
    type Args = RangeArgs;

    fn run(&self, args: RangeArgs, _: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let repo = repo(&self.0)?;
        let range = args.range.trim();
        if range.contains("...") {
            return Err(ToolError::Recoverable("symmetric ranges (A...B) are not supported; use A..B".into()));
        }
        let (hidden, tip) = match range.split_once("..") {
            Some((from, to)) => {
                let from = if from.is_empty() { "HEAD" } else { revision(from)? };
                let to = if to.is_empty() { "HEAD" } else { revision(to)? };
                (vec![from], to)
            }
            None => (Vec::new(), revision(range)?),
        };
        let found = repo.commits_touching(&[tip], &hidden, self.0.base(), limit(args.limit, 20)).map_err(git_error)?;
        Ok(ToolOutput::new(json!({ "range": range, "commits": found.commits }), found.truncated))
    }
}

/// Where the revision tools read: the whole repository (commit-msg; paths
/// repository-relative) or a folder of it (explore; paths relative to the
/// folder, nothing above it visible).
#[derive(Clone)]
pub enum Root {
    Repository(Arc<Repository>),
    Folder(Arc<RepoFiles>),
}

impl Root {
    fn repo(&self) -> Result<&Repository, ToolError> {
        match self {
            Self::Repository(repo) => Ok(repo),
            Self::Folder(files) => repo(files),
        }
    }

    /// The folder's place in the repository (`""` at its top).
    fn base(&self) -> &str {
        match self {
            Self::Repository(_) => "",
            Self::Folder(files) => files.base(),
        }
    }

    /// The HEAD commit's patch versus its first parent: the whole diff for
    /// the repository, the paths beneath a folder rendered relative to it.
    fn head_patch(
        &self,
        max_bytes: usize,
        max_lines: usize,
    ) -> Result<git_agent_shared::bounded::BoundedText, ToolError> {
        let repo = self.repo()?;
        let Self::Folder(files) = self else {
            return repo.diff(DiffScope::HeadCommit, &[], max_bytes, max_lines).map_err(git_error);
        };
        let base = files.base();
        let mut text = String::new();
        for change in repo.changes(DiffScope::HeadCommit).map_err(git_error)? {
            let Some(relative) = beneath(base, &change.path) else { continue };
            let patch = repo.file_patch(relative, change.old.as_ref(), change.new.as_ref(), true).map_err(git_error)?;
            text.push_str(&patch.text);
            if text.len() > max_bytes {
                break;
            }
        }
        Ok(git_agent_shared::bounded::bound(&text, max_bytes, max_lines))
    }
}

/// `path` relative to `base`, when it lies beneath it.
fn beneath<'a>(base: &str, path: &'a str) -> Option<&'a str> {
    if base.is_empty() {
        return Some(path);
    }
    path.strip_prefix(base)?.strip_prefix('/')
}

/// `git_head_show`: the HEAD commit like `git show`.
pub struct HeadShow(pub Root);

impl Tool for HeadShow {
    fn name(&self) -> &'static str {
        "git_head_show"
    }
    fn description(&self) -> &'static str {
        match self.0 {
            Root::Repository(_) => {
                "The HEAD commit like git show: id, parents, author, date, full message, then its patch versus the first parent; capped."
            }
            Root::Folder(_) => {
                "The HEAD commit like git show (id, parents, author, date, message, patch beneath the exploration root), capped; empty when HEAD changed nothing beneath the root."
            }
        }
    }
    fn parameters(&self) -> Value {
        schema::strict::<schema::CapArgs>()
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let root = self.0.clone();
        blocking(self.name(), arguments, cancel, move |args: schema::CapArgs, _| {
            let repo = root.repo()?;
            let folder = matches!(root, Root::Folder(_));
            if folder && !repo.head_touches(root.base()).map_err(git_error)? {
                return Ok(ToolOutput::new(json!({ "show": "", "changed_beneath_root": false }), false));
            }
            let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
            let head = repo.head_details().map_err(git_error)?;
            let diff = root.head_patch(max_bytes, max_lines)?;
            let message: String = head.message.lines().map(|line| format!("    {line}\n")).collect();
            let parents = if head.parents.is_empty() { "(root commit)".to_string() } else { head.parents.join(" ") };
            let show = format!(
                "commit {}\nParents: {parents}\nAuthor: {} <{}>\nDate:   {}\n\n{message}\n{}",
                head.sha, head.author, head.author_email, head.date, diff.text
            );
            let bounded = git_agent_shared::bounded::bound(&show, max_bytes, max_lines);
            let truncated = bounded.truncated || diff.truncated;
            let output = if folder {
                json!({ "show": bounded.text, "changed_beneath_root": true })
            } else {
                json!({ "show": bounded.text })
            };
            Ok(ToolOutput::new(output, truncated))
        })
    }
}

/// `git_diff_against_parent`: the HEAD commit's diff versus its first
/// parent.
pub struct DiffAgainstParent(pub Root);

impl Tool for DiffAgainstParent {
    fn name(&self) -> &'static str {
        "git_diff_against_parent"
    }
    fn description(&self) -> &'static str {
        match self.0 {
            Root::Repository(_) => {
                "The HEAD commit's diff versus its first parent (the empty tree for a root commit), capped."
            }
            Root::Folder(_) => {
                "The HEAD commit's diff versus its first parent for paths beneath the exploration root, capped."
            }
        }
    }
    fn parameters(&self) -> Value {
        schema::strict::<schema::CapArgs>()
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let root = self.0.clone();
        blocking(self.name(), arguments, cancel, move |args: schema::CapArgs, _| {
            let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
            let diff = root.head_patch(max_bytes, max_lines)?;
            Ok(ToolOutput::new(json!({ "diff": diff.text }), diff.truncated))
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RevisionArgs {
    /// Commit-ish revision to read from.
    rev: String,
    /// File path: repository-relative, or relative to the exploration root.
    path: String,
    /// Maximum bytes to return; null for 32768.
    #[schemars(range(min = 1, max = 65536))]
    max_bytes: Option<u64>,
    /// Maximum lines to return; null for 800.
    #[schemars(range(min = 1, max = 2000))]
    max_lines: Option<u64>,
}

/// `git_show_file_at_rev`: a file's content at a commit-ish.
pub struct ShowFileAtRev(pub Root);

impl Tool for ShowFileAtRev {
    fn name(&self) -> &'static str {
        "git_show_file_at_rev"
    }
    fn description(&self) -> &'static str {
        match self.0 {
            Root::Repository(_) => {
                "A file's content at a commit-ish (HEAD, HEAD~1, a branch, a tag, a commit id), capped."
            }
            Root::Folder(_) => {
                "A file's content (path relative to the exploration root) at a commit-ish (HEAD, HEAD~1, a branch, a tag, an id), capped."
            }
        }
    }
    fn parameters(&self) -> Value {
        let mut parameters = schema::strict::<RevisionArgs>();
        // One argument type, worded for where the paths start.
        parameters["properties"]["path"]["description"] = json!(match self.0 {
            Root::Repository(_) => "Repository-relative file path.",
            Root::Folder(_) => "File path relative to the exploration root.",
        });
        parameters
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let root = self.0.clone();
        blocking(self.name(), arguments, cancel, move |args: RevisionArgs, _| {
            let repo = root.repo()?;
            let rev = revision(&args.rev)?;
            let path = RepoFiles::clean(&args.path)?;
            if path.is_empty() {
                return Err(ToolError::Recoverable("a file path is required".into()));
            }
            let tracked = if root.base().is_empty() { path.clone() } else { format!("{}/{path}", root.base()) };
            let (max_bytes, max_lines) = schema::resolve_caps(args.max_bytes, args.max_lines);
            let content = repo.file_at_revision(rev, &tracked).map_err(git_error)?.ok_or_else(|| {
                ToolError::Recoverable(format!("{path} is not a file at {rev}; list the commit's paths first"))
            })?;
            if content[..content.len().min(8000)].contains(&0) {
                return Ok(ToolOutput::new(json!({ "path": path, "rev": rev, "binary": true, "content": "" }), false));
            }
            let bounded = git_agent_shared::bounded::bound(&String::from_utf8_lossy(&content), max_bytes, max_lines);
            Ok(ToolOutput::new(json!({ "path": path, "rev": rev, "content": bounded.text }), bounded.truncated))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_beneath_the_base_are_made_relative_and_others_dropped() {
        assert_eq!(beneath("", "a/b.rs"), Some("a/b.rs"));
        assert_eq!(beneath("sub", "sub/b.rs"), Some("b.rs"));
        assert_eq!(beneath("sub", "subway/b.rs"), None);
        assert_eq!(beneath("sub", "top.rs"), None);
        assert_eq!(beneath("sub", "sub"), None);
    }

    #[test]
    fn revisions_refuse_options_and_blanks() {
        assert!(revision("HEAD~1").is_ok());
        for bad in ["", "  ", "--all", "a b"] {
            assert!(revision(bad).is_err(), "{bad:?}");
        }
    }
}

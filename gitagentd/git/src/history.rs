//! Commit history: recent commits as style references, the details of
//! the HEAD commit an amend rewrites, and the commits between two ids
//! (submodule movements).

use super::{GitError, Repository};
use serde::Serialize;

/// One commit, summarized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitInfo {
    pub sha: String,
    /// The first line of the message.
    pub summary: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub author: String,
    /// The author date, RFC 3339 in the commit's own offset.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub date: String,
}

/// The commit an amend rewrites, in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitDetails {
    pub sha: String,
    pub parents: Vec<String>,
    pub summary: String,
    pub author: String,
    pub author_email: String,
    /// The author date, RFC 3339 in the commit's own offset.
    pub date: String,
    pub committer: String,
    /// The whole message, trimmed.
    #[serde(skip)]
    pub message: String,
}

impl Repository {
    /// Up to `limit` commits reachable from HEAD, newest first; none when
    /// HEAD is unborn.
    pub fn recent_commits(&self, limit: usize) -> Result<Vec<CommitInfo>, GitError> {
        let repo = self.local();
        let Ok(head) = repo.head_id() else { return Ok(Vec::new()) };
        let walk = repo
            .rev_walk([head.detach()])
            .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
            .all()
            .map_err(|error| self.read_error("the commit history", error))?;
        let mut commits = Vec::new();
        for info in walk.take(limit) {
            let info = info.map_err(|error| self.read_error("the commit history", error))?;
            let commit = info.object().map_err(|error| self.read_error(format!("commit {}", info.id), error))?;
            commits.push(commit_info(&commit));
        }
        Ok(commits)
    }

    /// The HEAD commit in full; an unborn HEAD is an error, since there is
    /// nothing to amend.
    pub fn head_details(&self) -> Result<CommitDetails, GitError> {
        let repo = self.local();
        let commit = match repo.head_commit() {
            Ok(commit) => commit,
            Err(_) if repo.head().map(|head| head.is_unborn()).unwrap_or(false) => {
                return Err(GitError::NoHeadCommit { path: self.root.clone() });
            }
            Err(error) => return Err(self.read_error("HEAD", error)),
        };
        let info = commit_info(&commit);
        let (author_email, committer) = match (commit.author(), commit.committer()) {
            (Ok(author), Ok(committer)) => (author.email.to_string(), committer.name.to_string()),
            _ => (String::new(), String::new()),
        };
        Ok(CommitDetails {
            sha: info.sha,
            parents: commit.parent_ids().map(|id| id.to_string()).collect(),
            summary: info.summary,
            author: info.author,
            author_email,
            date: info.date,
            committer,
            message: commit.message_raw_sloppy().to_string().trim().to_string(),
        })
    }
}

/// How many commits a path-limited walk looks at before it stops: a root
/// that history rarely touches must not make one tool call read all of it.
const MAX_SCANNED_COMMITS: usize = 20_000;

/// Commits that change paths beneath a folder, and whether the walk
/// stopped before history ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathCommits {
    pub commits: Vec<CommitInfo>,
    pub truncated: bool,
}

impl Repository {
    /// Up to `limit` commits reachable from `tips` and not from `hidden`
    /// (revisions such as `HEAD`, `v1.0`, an id), newest first, that
    /// change something beneath `base` (a clean repository-relative
    /// folder, `""` for the whole tree) versus their first parent.
    pub fn commits_touching(
        &self,
        tips: &[&str],
        hidden: &[&str],
        base: &str,
        limit: usize,
    ) -> Result<PathCommits, GitError> {
        let repo = self.local();
        let resolve = |rev: &&str| {
            repo.rev_parse_single(*rev).and_then(|id| Ok(id.object()?.peel_to_commit()?.id)).map_err(|error| {
                GitError::Revision {
                    path: self.root.clone(),
                    rev: rev.to_string(),
                    source: super::unresolved(&repo, rev, error),
                }
            })
        };
        let tips = tips.iter().map(resolve).collect::<Result<Vec<_>, _>>()?;
        let hidden = hidden.iter().map(resolve).collect::<Result<Vec<_>, _>>()?;
        let walk = repo
            .rev_walk(tips)
            .with_hidden(hidden)
            .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
            .all()
            .map_err(|error| self.read_error("the commit history", error))?;
        let mut commits = Vec::new();
        for (scanned, info) in walk.enumerate() {
            if commits.len() > limit || scanned == MAX_SCANNED_COMMITS {
                return Ok(PathCommits { commits: truncate(commits, limit), truncated: true });
            }
            let info = info.map_err(|error| self.read_error("the commit history", error))?;
            let commit = info.object().map_err(|error| self.read_error(format!("commit {}", info.id), error))?;
            if self.commit_touches(&repo, &commit, base)? {
                commits.push(commit_info(&commit));
            }
        }
        let truncated = commits.len() > limit;
        Ok(PathCommits { commits: truncate(commits, limit), truncated })
    }

    /// Whether the HEAD commit changes something beneath `base`; false
    /// when HEAD is unborn.
    pub fn head_touches(&self, base: &str) -> Result<bool, GitError> {
        let repo = self.local();
        let Ok(commit) = repo.head_commit() else { return Ok(false) };
        self.commit_touches(&repo, &commit, base)
    }

    /// Whether `commit` changes the tree beneath `base` versus its first
    /// parent (a root commit: whether it has anything there).
    fn commit_touches(&self, repo: &gix::Repository, commit: &gix::Commit<'_>, base: &str) -> Result<bool, GitError> {
        let here = self.subtree_id(commit, base)?;
        let parent = match commit.parent_ids().next() {
            Some(parent) => {
                let parent = repo
                    .find_commit(parent.detach())
                    .map_err(|error| self.read_error(format!("commit {parent}"), error))?;
                self.subtree_id(&parent, base)?
            }
            None => None,
        };
        Ok(here != parent)
    }

    /// The id of the tree or blob at `base` in `commit` (its root tree for
    /// `""`).
    fn subtree_id(&self, commit: &gix::Commit<'_>, base: &str) -> Result<Option<gix::ObjectId>, GitError> {
        let what = || format!("the tree of commit {}", commit.id);
        let tree = commit.tree().map_err(|error| self.read_error(what(), error))?;
        if base.is_empty() {
            return Ok(Some(tree.id));
        }
        let entry = tree.lookup_entry_by_path(base).map_err(|error| self.read_error(what(), error))?;
        Ok(entry.map(|entry| entry.object_id()))
    }
}

fn truncate(mut commits: Vec<CommitInfo>, limit: usize) -> Vec<CommitInfo> {
    commits.truncate(limit);
    commits
}

/// The commits reachable from `new` but not from `old` in `repo`, newest
/// first, at most `limit`; an error when the objects are not available.
pub(super) fn commits_between(
    repo: &gix::Repository,
    old: gix::ObjectId,
    new: gix::ObjectId,
    limit: usize,
) -> Result<Vec<CommitInfo>, GitError> {
    let error = |error: Box<dyn std::error::Error + Send + Sync>| GitError::Read {
        path: repo.git_dir().to_path_buf(),
        what: format!("the commits between {} and {}", old.to_hex_with_len(7), new.to_hex_with_len(7)),
        source: error,
    };
    let walk = repo.rev_walk([new]).with_hidden([old]).all().map_err(|e| error(e.into()))?;
    let mut commits = Vec::new();
    for info in walk.take(limit) {
        let info = info.map_err(|e| error(e.into()))?;
        let commit = info.object().map_err(|e| error(e.into()))?;
        commits.push(commit_info(&commit));
    }
    Ok(commits)
}

fn commit_info(commit: &gix::Commit<'_>) -> CommitInfo {
    let message = commit.message_raw_sloppy().to_string();
    let summary = message.trim().lines().next().unwrap_or_default().trim().to_string();
    let (author, date) = match commit.author() {
        Ok(signature) => {
            let date = signature.time().map(rfc3339).unwrap_or_default();
            (signature.name.to_string().trim().to_string(), date)
        }
        Err(_) => (String::new(), String::new()),
    };
    CommitInfo { sha: commit.id.to_string(), summary, author, date }
}

/// `2026-01-02T03:04:05Z`, or with a `+hh:mm` offset.
fn rfc3339(time: gix::date::Time) -> String {
    git_agent_shared::timefmt::format_rfc3339_in_offset(time.seconds, time.offset).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_in_their_own_offset() {
        assert_eq!(rfc3339(gix::date::Time { seconds: 1_767_323_045, offset: 0 }), "2026-01-02T03:04:05Z");
        assert_eq!(rfc3339(gix::date::Time { seconds: 1_767_323_045, offset: -5 * 3600 }), "2026-01-01T22:04:05-05:00");
    }
}

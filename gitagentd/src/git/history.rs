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

/// The commits reachable from `new` but not from `old` in `repo`, newest
/// first, at most `limit`; an error when the objects are not available.
pub(super) fn commits_between(
    repo: &gix::Repository,
    old: gix::ObjectId,
    new: gix::ObjectId,
    limit: usize,
) -> Result<Vec<CommitInfo>, GitError> {
    let error = |error: &dyn std::fmt::Display| GitError::Read {
        path: repo.git_dir().to_path_buf(),
        what: format!("the commits between {} and {}", old.to_hex_with_len(7), new.to_hex_with_len(7)),
        message: error.to_string(),
    };
    let walk = repo.rev_walk([new]).with_hidden([old]).all().map_err(|e| error(&e))?;
    let mut commits = Vec::new();
    for info in walk.take(limit) {
        let info = info.map_err(|e| error(&e))?;
        let commit = info.object().map_err(|e| error(&e))?;
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

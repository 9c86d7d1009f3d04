//! Commit history: recent commits as style references.

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
            let message = commit.message_raw_sloppy().to_string();
            let summary = message.trim().lines().next().unwrap_or_default().trim().to_string();
            let (author, date) = match commit.author() {
                Ok(signature) => {
                    let date = signature.time().map(rfc3339).unwrap_or_default();
                    (signature.name.to_string().trim().to_string(), date)
                }
                Err(_) => (String::new(), String::new()),
            };
            commits.push(CommitInfo { sha: info.id.to_string(), summary, author, date });
        }
        Ok(commits)
    }
}

/// `2026-01-02T03:04:05Z`, or with a `+hh:mm` offset.
fn rfc3339(time: gix::date::Time) -> String {
    let Ok(timestamp) = jiff::Timestamp::from_second(time.seconds) else { return String::new() };
    let Ok(offset) = jiff::tz::Offset::from_seconds(time.offset) else { return String::new() };
    let civil = offset.to_datetime(timestamp);
    let zone = if time.offset == 0 {
        "Z".to_string()
    } else {
        let sign = if time.offset < 0 { '-' } else { '+' };
        let minutes = time.offset.unsigned_abs() / 60;
        format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
    };
    format!("{}{zone}", civil.strftime("%Y-%m-%dT%H:%M:%S"))
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

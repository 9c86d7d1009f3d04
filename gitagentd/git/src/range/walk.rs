//! Commit walks: the commits of a range (`base..tip`, like
//! `git rev-list`), oldest first, and short logs newest first.

use super::{CommitSummary, History, HistoryError, summarize};
use gix::hash::ObjectId;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;

impl History {
    /// The commits reachable from `tip` but not from `hidden`, oldest
    /// first (the reverse of `git rev-list hidden..tip`).
    pub fn range_commits(&self, hidden: Option<ObjectId>, tip: ObjectId) -> Result<Vec<ObjectId>, HistoryError> {
        let mut ids = self.walk(hidden, tip, None, false)?;
        ids.reverse();
        Ok(ids)
    }

    /// Up to `limit` commits reachable from `tip` but not from `hidden`,
    /// newest first, with the number left out.
    pub fn log(
        &self,
        hidden: Option<ObjectId>,
        tip: ObjectId,
        limit: usize,
        first_parent: bool,
    ) -> Result<(Vec<CommitSummary>, usize), HistoryError> {
        let ids = self.walk(hidden, tip, None, first_parent)?;
        let omitted = ids.len().saturating_sub(limit);
        let summaries = ids.into_iter().take(limit).map(|id| self.commit_summary(id)).collect::<Result<_, _>>()?;
        Ok((summaries, omitted))
    }

    /// Up to `limit` commits from `tip`, newest first, following first
    /// parents only: the recent mainline history whose style a squash
    /// message should match.
    pub fn recent_commits(&self, tip: ObjectId, limit: usize) -> Result<Vec<CommitSummary>, HistoryError> {
        let ids = self.walk(None, tip, Some(limit), true)?;
        ids.into_iter().map(|id| self.commit_summary(id)).collect()
    }

    fn walk(
        &self,
        hidden: Option<ObjectId>,
        tip: ObjectId,
        limit: Option<usize>,
        first_parent: bool,
    ) -> Result<Vec<ObjectId>, HistoryError> {
        let what = || match hidden {
            Some(hidden) => format!("the commits of {hidden}..{tip}"),
            None => format!("the history of {tip}"),
        };
        let mut platform =
            self.repo.rev_walk([tip]).sorting(Sorting::ByCommitTime(CommitTimeOrder::NewestFirst)).with_hidden(hidden);
        if first_parent {
            platform = platform.first_parent_only();
        }
        let walk = platform.all().map_err(|error| self.read_error(what(), error))?;
        let mut ids = Vec::new();
        for info in walk {
            if limit.is_some_and(|limit| ids.len() >= limit) {
                break;
            }
            ids.push(info.map_err(|error| self.read_error(what(), error))?.id);
        }
        Ok(ids)
    }

    /// The summary and full message of `id`.
    pub(super) fn commit_message(&self, id: ObjectId) -> Result<(CommitSummary, String, Vec<ObjectId>), HistoryError> {
        let commit = self.repo.find_commit(id).map_err(|error| self.read_error(format!("commit {id}"), error))?;
        let decoded = commit.decode().map_err(|error| self.read_error(format!("commit {id}"), error))?;
        let parents = decoded.parents().collect();
        let (summary, message) = summarize(id, &decoded);
        Ok((summary, message, parents))
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;

    #[test]
    fn ranges_match_rev_list_and_come_oldest_first() {
        let fixture = Fixture::new();
        fixture.commit_file("a.txt", "1\n", "base");
        let base = fixture.rev("HEAD");
        fixture.git(&["checkout", "-q", "-b", "topic"]);
        fixture.commit_file("b.txt", "1\n", "topic one");
        fixture.commit_file("b.txt", "2\n", "topic two");
        fixture.git(&["checkout", "-q", "main"]);
        fixture.commit_file("a.txt", "2\n", "main one");
        fixture.git(&["merge", "-q", "--no-ff", "-m", "merge topic", "topic"]);
        let history = fixture.history();
        let head = history.head().unwrap();
        let base_id = base.parse().unwrap();

        let range: Vec<String> =
            history.range_commits(Some(base_id), head).unwrap().iter().map(ToString::to_string).collect();
        let mut expected: Vec<String> =
            fixture.git(&["rev-list", &format!("{base}..HEAD")]).lines().map(str::to_string).collect();
        assert_eq!(range.last(), expected.first(), "the merge comes last");
        let mut sorted = range.clone();
        sorted.sort();
        expected.sort();
        assert_eq!(sorted, expected);
        assert!(history.range_commits(Some(head), head).unwrap().is_empty());

        let (log, omitted) = history.log(Some(base_id), head, 2, false).unwrap();
        assert_eq!((log.len(), omitted), (2, 2));
        assert_eq!(log[0].summary, "merge topic");
        let recent = history.recent_commits(head, 10).unwrap();
        let subjects: Vec<&str> = recent.iter().map(|commit| commit.summary.as_str()).collect();
        assert_eq!(subjects, ["merge topic", "main one", "base"]);
        assert_eq!(recent[0].author, "Test Author");
        assert_eq!(recent[0].date, "2026-01-02T03:04:05+00:00");
    }
}

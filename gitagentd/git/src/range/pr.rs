//! The prepared context of `pr-message`: the branch's committed changes
//! against `origin/HEAD`, measured from their merge base (what a squash
//! merge would land), computed before any model request. The diff of the
//! merge base against HEAD is the authoritative scope; the branch commits
//! are supporting evidence; the recent mainline commits show the style.
//! Staged and unstaged work is not part of it.

use super::diff::{BoundedText, PatchStyle, TreeDiffer};
use super::{CommitSummary, FileChange, History, HistoryError};
use serde::Serialize;

/// The bounds of the prepared context.
#[derive(Debug, Clone, Copy)]
pub struct PrLimits {
    pub diff_max_bytes: usize,
    pub diff_max_lines: usize,
    pub branch_commits: usize,
    pub recent_commits: usize,
}

impl Default for PrLimits {
    fn default() -> Self {
        Self { diff_max_bytes: 48 * 1024, diff_max_lines: 1200, branch_commits: 50, recent_commits: 10 }
    }
}

/// Everything the squash message is written from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrContext {
    /// `origin/HEAD..HEAD`.
    pub range: String,
    pub base_ref: String,
    /// The branch `origin/HEAD` points to, such as `origin/main`.
    pub base_branch: String,
    /// The commit `origin/HEAD` points to.
    pub base: CommitSummary,
    /// Where the branch left the base; the diff starts here.
    pub merge_base: String,
    pub head_sha: String,
    /// The checked-out branch; absent on a detached HEAD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    pub changed_paths: Vec<String>,
    pub stats: Vec<FileChange>,
    /// The branch's own commits, newest first.
    pub branch_commits: Vec<CommitSummary>,
    #[serde(skip_serializing_if = "is_zero")]
    pub branch_commits_omitted: usize,
    /// The latest mainline commits of the base, newest first, for style.
    pub recent_commits: Vec<CommitSummary>,
    /// The unified diff of the merge base against HEAD, bounded.
    pub diff: String,
    pub diff_truncated: bool,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

impl History {
    /// Prepares the pull-request context of the checked-out branch.
    pub fn prepare_pr_context(&self, limits: PrLimits) -> Result<PrContext, HistoryError> {
        let head = self.head()?;
        let (base_branch, base) = self.origin_head()?;
        let merge_base = self.merge_base(head, base)?.ok_or_else(|| HistoryError::NoMergeBase {
            head: head.to_string(),
            base: base_branch.clone(),
            root: self.root.clone(),
        })?;
        let (from_tree, to_tree) = (self.tree_of(merge_base)?, self.tree_of(head)?);
        if from_tree == to_tree {
            return Err(HistoryError::NoBranchChanges { base: format!("origin/HEAD ({base_branch})") });
        }
        let mut differ = TreeDiffer::new(self)?;
        let changes = differ.changes(Some(from_tree), to_tree, true)?;
        let mut diff = BoundedText::new(limits.diff_max_lines, limits.diff_max_bytes);
        let mut stats = Vec::with_capacity(changes.len());
        for change in &changes {
            let file = if diff.is_full() {
                // Files past the limit still count in the statistics.
                diff.truncated = true;
                differ.file_change(change, None)?
            } else {
                differ.file_change(change, Some((&mut diff, PatchStyle::Git)))?
            };
            stats.push(file);
        }
        let (branch_commits, branch_commits_omitted) = self.log(Some(base), head, limits.branch_commits, false)?;
        Ok(PrContext {
            range: "origin/HEAD..HEAD".to_string(),
            base_ref: "origin/HEAD".to_string(),
            base_branch,
            base: self.commit_summary(base)?,
            merge_base: merge_base.to_string(),
            head_sha: head.to_string(),
            branch: self.branch(),
            changed_paths: stats.iter().map(|file| file.path.clone()).collect(),
            stats,
            branch_commits,
            branch_commits_omitted,
            recent_commits: self.recent_commits(base, limits.recent_commits)?,
            diff: diff.text,
            diff_truncated: diff.truncated,
        })
    }
}

impl PrContext {
    /// The context as the model reads it: indented JSON, stable field
    /// order. A truncated diff says so in `diff_truncated`.
    pub fn render_for_prompt(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| format!("{{\"range\": {:?}}}", self.range))
    }

    /// The branch commit subjects, newest first (for task-ID suffixes).
    pub fn branch_subjects(&self) -> Vec<String> {
        self.branch_commits.iter().map(|commit| commit.summary.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;

    /// A bare `origin` with one commit on main, and a clone with a
    /// feature branch.
    fn clone_with_origin() -> (Fixture, Fixture) {
        let upstream = Fixture::new();
        upstream.commit_file("README.md", "# app\n", "chore: initial commit");
        upstream.commit_file("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n", "feat(core): add one (T12)");
        let bare = upstream.root().parent().unwrap().join("origin.git");
        upstream.git(&["clone", "-q", "--bare", ".", bare.to_str().unwrap()]);
        let clone = upstream.sibling("clone");
        clone.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
        clone.git(&["fetch", "-q", "origin"]);
        clone.git(&["checkout", "-q", "-b", "feature", "origin/main"]);
        (upstream, clone)
    }

    #[test]
    fn missing_origin_and_missing_origin_head_are_clear_errors() {
        let plain = Fixture::new();
        plain.commit_file("a.txt", "a\n", "first");
        let error = plain.history().prepare_pr_context(PrLimits::default()).unwrap_err().to_string();
        assert!(error.contains("has no origin remote"), "{error}");

        let (_upstream, clone) = clone_with_origin();
        let error = clone.history().prepare_pr_context(PrLimits::default()).unwrap_err().to_string();
        assert!(error.starts_with("origin/HEAD is not set"), "{error}");
        assert!(error.contains("git remote set-head origin --auto"), "{error}");
    }

    #[test]
    fn a_branch_without_changes_is_a_clear_error() {
        let (_upstream, clone) = clone_with_origin();
        clone.git(&["remote", "set-head", "origin", "--auto"]);
        let error = clone.history().prepare_pr_context(PrLimits::default()).unwrap_err().to_string();
        assert!(error.starts_with("the current branch has no committed changes against origin/HEAD (origin/main)"));
        // Staged work is not committed work.
        clone.write("new.txt", "x\n");
        clone.git(&["add", "new.txt"]);
        assert!(matches!(
            clone.history().prepare_pr_context(PrLimits::default()),
            Err(HistoryError::NoBranchChanges { .. })
        ));
    }

    #[test]
    fn feature_branch_context_is_measured_from_the_merge_base() {
        let (upstream, clone) = clone_with_origin();
        clone.git(&["remote", "set-head", "origin", "--auto"]);
        clone.commit_file(
            "src/lib.rs",
            "pub fn one() -> u32 {\n    1\n}\n\npub fn two() -> u32 {\n    2\n}\n",
            "feat: add two",
        );
        clone.commit_file("docs/two.md", "Two.\n", "docs: describe two");
        // The mainline moves on after the branch left it.
        upstream.commit_file("CHANGELOG.md", "x\n", "chore: changelog");
        upstream.git(&["push", "-q", clone.git(&["remote", "get-url", "origin"]).trim(), "main"]);
        clone.git(&["fetch", "-q", "origin"]);

        let context = clone.history().prepare_pr_context(PrLimits::default()).unwrap();
        assert_eq!(context.base_branch, "origin/main");
        assert_eq!(context.branch.as_deref(), Some("feature"));
        assert_eq!(context.changed_paths, ["docs/two.md", "src/lib.rs"]);
        assert_eq!((context.stats[1].additions, context.stats[1].deletions), (4, 0));
        let subjects: Vec<&str> = context.branch_commits.iter().map(|commit| commit.summary.as_str()).collect();
        assert_eq!(subjects, ["docs: describe two", "feat: add two"]);
        assert_eq!(context.recent_commits[0].summary, "chore: changelog");
        assert!(!context.diff.contains("CHANGELOG"), "{}", context.diff);
        assert!(context.diff.contains("diff --git a/src/lib.rs b/src/lib.rs\n"));
        assert!(!context.diff_truncated);
        assert_eq!(context.merge_base, upstream.rev("HEAD~1"));

        git_agent_shared::golden::assert_golden(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/range/golden/pr_context.json"),
            &context.render_for_prompt(),
        );

        let tight = PrLimits { diff_max_lines: 8, ..PrLimits::default() };
        let bounded = clone.history().prepare_pr_context(tight).unwrap();
        assert!(bounded.diff_truncated);
        assert_eq!(bounded.diff.lines().count(), 8);
        assert_eq!(bounded.stats, context.stats);
    }
}

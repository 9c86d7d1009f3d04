//! Changed paths between two states of the repository ([`DiffScope`]:
//! the staged changes, the HEAD commit versus its first parent, the final
//! amended result versus HEAD's first parent), their line stats and
//! unified patches, and the precomputed [`StagedContext`] a normal
//! commit-message request starts from. Renames appear as a deletion plus
//! an addition.

use super::history::CommitInfo;
use super::patch::FilePatch;
use super::submodule::SubmoduleChange;
use super::{Entry, EntryKind, GitError, Repository};
use crate::contextpack::{self, ContextPack, FileFact};
use git_agent_shared::bounded::{self, BoundedText};
use serde::Serialize;
use std::collections::BTreeMap;

/// One changed path: its entry before (`old`) and after (`new`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub old: Option<Entry>,
    pub new: Option<Entry>,
}

impl Change {
    /// `A`dded, `D`eleted, `T`ype changed or `M`odified.
    pub fn status(&self) -> &'static str {
        match (&self.old, &self.new) {
            (None, _) => "A",
            (_, None) => "D",
            (Some(old), Some(new)) if old.kind != new.kind => "T",
            _ => "M",
        }
    }

    /// Whether either side is a submodule commit.
    pub fn is_gitlink(&self) -> bool {
        [self.old, self.new].iter().flatten().any(|entry| entry.kind == EntryKind::Gitlink)
    }
}

/// Which two states a comparison spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffScope {
    /// The index versus HEAD: what the next commit would add.
    Staged,
    /// HEAD versus its first parent (the empty tree for a root commit).
    HeadCommit,
    /// The index versus HEAD's first parent: the commit an amend would
    /// produce, as one change.
    Amended,
}

/// A path and its status letter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathStatus {
    pub path: String,
    pub staging: String,
}

/// Added and deleted lines of one path; binary files count none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileStat {
    pub path: String,
    pub adds: usize,
    pub deletes: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_binary: bool,
}

impl From<&FilePatch> for FileStat {
    fn from(patch: &FilePatch) -> Self {
        Self { path: patch.path.clone(), adds: patch.adds, deletes: patch.deletes, is_binary: patch.binary }
    }
}

/// Below this many stats-only patches, worker threads cost more than
/// they save.
const PARALLEL_MIN_FILES: usize = 64;

impl Repository {
    /// Every changed path of `scope`, sorted by path.
    pub fn changes(&self, scope: DiffScope) -> Result<Vec<Change>, GitError> {
        let (old, new) = match scope {
            DiffScope::Staged => (self.head_entries()?, self.index_entries()?),
            DiffScope::HeadCommit => (self.head_parent_entries()?, self.head_entries()?),
            DiffScope::Amended => (self.head_parent_entries()?, self.index_entries()?),
        };
        Ok(compare(old, new))
    }

    /// Every staged change, sorted by path.
    pub fn staged_changes(&self) -> Result<Vec<Change>, GitError> {
        self.changes(DiffScope::Staged)
    }

    /// Patches of `changes`; stats for all of them, text only while the
    /// rendered total stays under `render_budget` bytes. Stats beyond the
    /// rendered prefix are computed on several threads.
    pub fn patches(&self, changes: &[Change], render_budget: usize) -> Result<Vec<FilePatch>, GitError> {
        let repo = self.local();
        let mut rendered = 0;
        let mut patches = Vec::with_capacity(changes.len());
        let mut next = 0;
        while next < changes.len() && rendered <= render_budget {
            let change = &changes[next];
            let patch = self.file_patch_in(&repo, &change.path, change.old.as_ref(), change.new.as_ref(), true)?;
            rendered += patch.text.len();
            patches.push(patch);
            next += 1;
        }
        patches.extend(self.stats_only(&changes[next..])?);
        Ok(patches)
    }

    fn stats_only(&self, changes: &[Change]) -> Result<Vec<FilePatch>, GitError> {
        let one_part = |part: &[Change]| -> Result<Vec<FilePatch>, GitError> {
            let repo = self.local();
            part.iter()
                .map(|change| self.file_patch_in(&repo, &change.path, change.old.as_ref(), change.new.as_ref(), false))
                .collect()
        };
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(8);
        if threads < 2 || changes.len() < PARALLEL_MIN_FILES {
            return one_part(changes);
        }
        let size = changes.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let workers: Vec<_> = changes.chunks(size).map(|part| scope.spawn(move || one_part(part))).collect();
            let mut out = Vec::with_capacity(changes.len());
            for worker in workers {
                let part = worker.join().map_err(|_| self.read_error("the diff", "a diff worker stopped"))?;
                out.extend(part?);
            }
            Ok(out)
        })
    }

    /// The diff of `scope` for `paths` (everything when empty), capped.
    pub fn diff(
        &self,
        scope: DiffScope,
        paths: &[String],
        max_bytes: usize,
        max_lines: usize,
    ) -> Result<BoundedText, GitError> {
        let changes: Vec<Change> = self
            .changes(scope)?
            .into_iter()
            .filter(|change| paths.is_empty() || paths.iter().any(|path| covers(path, &change.path)))
            .collect();
        let patches = self.patches(&changes, max_bytes)?;
        Ok(bounded::bound(&join(&patches), max_bytes, max_lines))
    }

    /// The staged diff of `paths` (all staged paths when empty), capped.
    pub fn staged_diff(&self, paths: &[String], max_bytes: usize, max_lines: usize) -> Result<BoundedText, GitError> {
        self.diff(DiffScope::Staged, paths, max_bytes, max_lines)
    }

    /// The diff of exactly `selected` among `changes`, capped.
    fn diff_of(&self, changes: &[Change], selected: &[String], max_bytes: usize, max_lines: usize) -> BoundedDiff {
        let selected: std::collections::HashSet<&str> = selected.iter().map(String::as_str).collect();
        let chosen: Vec<Change> =
            changes.iter().filter(|change| selected.contains(change.path.as_str())).cloned().collect();
        match self.patches(&chosen, max_bytes) {
            Ok(patches) => bounded::bound(&join(&patches), max_bytes, max_lines).into(),
            Err(error) => BoundedDiff { text: format!("[unavailable: {error}]\n"), truncated: true },
        }
    }

    /// Where HEAD stands.
    pub fn head_state(&self) -> HeadState {
        let info = self.head();
        let repo = self.local();
        let root_commit = repo.head_commit().is_ok_and(|commit| commit.parent_ids().next().is_none());
        HeadState {
            unborn: info.sha.is_none(),
            branch: info.branch,
            sha: info.sha,
            detached: info.detached,
            root_commit,
        }
    }

    /// The first bytes of the index version of `path`, to recognise
    /// generated files.
    fn index_prefix(&self, repo: &gix::Repository, change: &Change) -> String {
        match change.new {
            Some(entry) if entry.kind != EntryKind::Gitlink => {
                let bytes = self.blob_in(repo, entry.id).unwrap_or_default();
                String::from_utf8_lossy(&bytes[..bytes.len().min(HEADER_BYTES)]).into_owned()
            }
            _ => String::new(),
        }
    }
}

/// Bytes of a Go file read to find its generated-code marker.
const HEADER_BYTES: usize = 8 * 1024;

/// The changes turning `old` into `new`, sorted by path.
fn compare(old: Vec<(String, Entry)>, new: Vec<(String, Entry)>) -> Vec<Change> {
    let mut old: BTreeMap<String, Entry> = old.into_iter().collect();
    let mut changes = Vec::new();
    for (path, entry) in new {
        match old.remove(&path) {
            Some(before) if before == entry => {}
            before => changes.push(Change { path, old: before, new: Some(entry) }),
        }
    }
    changes.extend(old.into_iter().map(|(path, before)| Change { path, old: Some(before), new: None }));
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// Whether the requested `path` names `changed` itself or a folder of it.
fn covers(path: &str, changed: &str) -> bool {
    let path = path.trim_end_matches('/');
    path.is_empty() || path == "." || changed == path || changed.starts_with(&format!("{path}/"))
}

pub(super) fn join(patches: &[FilePatch]) -> String {
    patches.iter().map(|patch| patch.text.as_str()).collect()
}

/// A capped diff as prepared context carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct BoundedDiff {
    pub text: String,
    pub truncated: bool,
}

impl From<BoundedText> for BoundedDiff {
    fn from(bounded: BoundedText) -> Self {
        Self { text: bounded.text, truncated: bounded.truncated }
    }
}

/// A scope's paths, stats and capped diff, computed together.
pub(super) struct ScopeEvidence {
    pub changes: Vec<Change>,
    pub patches: Vec<FilePatch>,
    pub diff: BoundedDiff,
}

impl ScopeEvidence {
    pub fn collect(repo: &Repository, scope: DiffScope, max_bytes: usize, max_lines: usize) -> Result<Self, GitError> {
        let changes = repo.changes(scope)?;
        let patches = repo.patches(&changes, max_bytes)?;
        let diff = bounded::bound(&join(&patches), max_bytes, max_lines).into();
        Ok(Self { changes, patches, diff })
    }

    pub fn paths(&self) -> Vec<String> {
        self.changes.iter().map(|change| change.path.clone()).collect()
    }

    pub fn statuses(&self) -> Vec<PathStatus> {
        self.changes
            .iter()
            .map(|change| PathStatus { path: change.path.clone(), staging: change.status().into() })
            .collect()
    }

    pub fn stats(&self) -> Vec<FileStat> {
        self.patches.iter().map(FileStat::from).collect()
    }

    /// The generated-heavy context pack of these changes, and which paths
    /// carry a generated-code marker.
    pub fn context_pack(&self, repo: &Repository) -> (ContextPack, Vec<bool>) {
        let handle = repo.local();
        let facts: Vec<FileFact> = self
            .changes
            .iter()
            .zip(&self.patches)
            .map(|(change, patch)| FileFact {
                path: change.path.clone(),
                status: change.status().into(),
                adds: patch.adds as u64,
                deletes: patch.deletes as u64,
                header: if change.path.ends_with(".go") { repo.index_prefix(&handle, change) } else { String::new() },
            })
            .collect();
        let generated = facts.iter().map(|fact| contextpack::is_go_generated(&fact.path, &fact.header)).collect();
        (contextpack::build(&facts), generated)
    }
}

/// Where HEAD stands when the context is prepared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HeadState {
    /// The branch HEAD is on; none when detached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub detached: bool,
    /// No commit yet: this will be the first one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unborn: bool,
    /// HEAD has no parent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub root_commit: bool,
}

/// Caps of the prepared staged context.
#[derive(Debug, Clone, Copy)]
pub struct StagedLimits {
    pub diff_max_bytes: usize,
    pub diff_max_lines: usize,
    pub recent_commits: usize,
    pub previous_max_bytes: usize,
    pub previous_max_lines: usize,
    pub focus_max_bytes: usize,
    pub focus_max_lines: usize,
    /// At most this many high-churn paths get a focus diff.
    pub focus_paths: usize,
}

impl Default for StagedLimits {
    fn default() -> Self {
        Self {
            diff_max_bytes: 48 * 1024,
            diff_max_lines: 1200,
            recent_commits: 10,
            previous_max_bytes: 24 * 1024,
            previous_max_lines: 700,
            focus_max_bytes: 64 * 1024,
            focus_max_lines: 1600,
            focus_paths: 5,
        }
    }
}

/// The staged evidence prepared before the first model request: the
/// authoritative scope (paths, status, stats, submodule movements), its
/// context pack, recent commits as style reference, the previous HEAD
/// commit as contrast, and the staged diff, capped with explicit
/// truncation. A truncated diff adds a focus diff of the high-churn paths
/// it cut; a generated-heavy change adds the raw diff of its handwritten
/// files (`outlier_diff`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StagedContext {
    pub mode: &'static str,
    pub head: HeadState,
    pub staged_paths: Vec<String>,
    pub staged_status: Vec<PathStatus>,
    pub staged_stats: Vec<FileStat>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub staged_submodules: Vec<SubmoduleChange>,
    pub context_pack: ContextPack,
    pub recent_commits: Vec<CommitInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub previous_head_paths: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub previous_head_stats: Vec<FileStat>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub previous_head_diff: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub previous_head_diff_truncated: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub focus_diff: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub focus_diff_paths: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub focus_diff_truncated: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub outlier_diff: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outlier_diff_paths: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub outlier_diff_truncated: bool,
    pub diff: String,
    pub diff_truncated: bool,
}

impl StagedContext {
    /// Reads the staged scope of `repo`. An empty scope yields an empty
    /// context; the caller decides whether that is an error. The previous
    /// HEAD commit is read on a thread of its own meanwhile.
    pub fn prepare(repo: &Repository, limits: StagedLimits) -> Result<Self, GitError> {
        let head = repo.head_state();
        let (staged, previous) = std::thread::scope(|scope| {
            let previous = (!head.unborn).then(|| {
                scope.spawn(|| {
                    ScopeEvidence::collect(
                        repo,
                        DiffScope::HeadCommit,
                        limits.previous_max_bytes,
                        limits.previous_max_lines,
                    )
                })
            });
            let staged = ScopeEvidence::collect(repo, DiffScope::Staged, limits.diff_max_bytes, limits.diff_max_lines);
            let previous = match previous {
                Some(worker) => Some(worker.join().map_err(|_| repo.read_error("HEAD", "the reader stopped"))?),
                None => None,
            };
            Ok::<_, GitError>((staged, previous))
        })?;
        let staged = staged?;
        // The previous commit is contrast only: without it the request
        // still stands.
        let previous = previous.and_then(Result::ok);
        let mut context = Self {
            mode: "normal",
            head,
            staged_paths: staged.paths(),
            staged_status: staged.statuses(),
            staged_stats: staged.stats(),
            staged_submodules: Vec::new(),
            context_pack: ContextPack::default(),
            recent_commits: Vec::new(),
            previous_head_paths: Vec::new(),
            previous_head_stats: Vec::new(),
            previous_head_diff: String::new(),
            previous_head_diff_truncated: false,
            focus_diff: String::new(),
            focus_diff_paths: Vec::new(),
            focus_diff_truncated: false,
            outlier_diff: String::new(),
            outlier_diff_paths: Vec::new(),
            outlier_diff_truncated: false,
            diff: staged.diff.text.clone(),
            diff_truncated: staged.diff.truncated,
        };
        if staged.changes.is_empty() {
            return Ok(context);
        }
        context.staged_submodules = repo.submodule_changes(&staged.changes);
        context.recent_commits = repo.recent_commits(limits.recent_commits).unwrap_or_default();
        if let Some(previous) = previous {
            context.previous_head_paths = previous.paths();
            context.previous_head_stats = previous.stats();
            context.previous_head_diff = previous.diff.text;
            context.previous_head_diff_truncated = previous.diff.truncated;
        }
        let (pack, generated) = staged.context_pack(repo);
        if contextpack::is_large_generated_heavy(&pack) {
            let handwritten: Vec<String> = staged
                .changes
                .iter()
                .zip(&generated)
                .filter(|(_, generated)| !**generated)
                .map(|(change, _)| change.path.clone())
                .collect();
            if !handwritten.is_empty() {
                let diff = repo.diff_of(&staged.changes, &handwritten, limits.diff_max_bytes, limits.diff_max_lines);
                context.outlier_diff = diff.text;
                context.outlier_diff_truncated = diff.truncated;
                context.outlier_diff_paths = handwritten;
            }
        } else if staged.diff.truncated {
            let paths = focus_paths(&pack, &staged.diff.text, limits.focus_paths);
            if !paths.is_empty() {
                let diff = repo.diff_of(&staged.changes, &paths, limits.focus_max_bytes, limits.focus_max_lines);
                context.focus_diff = diff.text;
                context.focus_diff_truncated = diff.truncated;
                context.focus_diff_paths = paths;
            }
        }
        context.context_pack = pack;
        Ok(context)
    }

    pub fn is_empty(&self) -> bool {
        self.staged_paths.is_empty()
    }

    /// Whether the staged change is large enough to compact in a request:
    /// generated-heavy, with the handwritten files' diff kept raw.
    pub fn is_generated_heavy(&self) -> bool {
        contextpack::is_large_generated_heavy(&self.context_pack)
    }

    /// Whether the prepared diff leaves parts of the change unseen, so the
    /// model needs the path-filtered staged diff.
    pub fn is_large(&self) -> bool {
        self.diff_truncated || self.is_generated_heavy() || !self.focus_diff.is_empty()
    }

    /// Whether every staged path is a submodule gitlink.
    pub fn is_submodule_only(&self) -> bool {
        !self.staged_submodules.is_empty()
            && self.staged_paths.iter().all(|path| self.staged_submodules.iter().any(|sub| sub.path == *path))
    }
}

/// The high-churn paths a truncated diff never reached: the top
/// churn and samples of every group and the outliers, most changed lines
/// first, skipping paths the visible diff shows; the busiest path when the
/// diff mentions them all.
pub fn focus_paths(pack: &ContextPack, diff: &str, limit: usize) -> Vec<String> {
    let mut candidates: Vec<&contextpack::FileSummary> = Vec::new();
    let files = pack.groups.iter().flat_map(|group| group.top_churn.iter().chain(&group.samples)).chain(&pack.outliers);
    for file in files {
        if !file.path.is_empty() && !candidates.iter().any(|known| known.path == file.path) {
            candidates.push(file);
        }
    }
    candidates.sort_by(|a, b| (b.adds + b.deletes).cmp(&(a.adds + a.deletes)).then_with(|| a.path.cmp(&b.path)));
    let mut paths: Vec<String> = candidates
        .iter()
        .filter(|file| !mentions(diff, &file.path))
        .take(limit)
        .map(|file| file.path.clone())
        .collect();
    if paths.is_empty()
        && limit > 0
        && let Some(first) = candidates.first()
    {
        paths.push(first.path.clone());
    }
    paths
}

/// Whether the visible diff reached `path` (its file header is there,
/// even when the cut fell inside its hunks).
fn mentions(diff: &str, path: &str) -> bool {
    diff.contains(&format!("diff --git a/{path} b/{path}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contextpack::FileFact;

    fn fact(path: &str, adds: u64) -> FileFact {
        FileFact { path: path.into(), status: "M".into(), adds, deletes: 0, header: String::new() }
    }

    #[test]
    fn focus_paths_prefer_churn_the_diff_did_not_show() {
        let pack = contextpack::build(&[fact("a/one.rs", 10), fact("b/two.rs", 900), fact("c/three.rs", 500)]);
        // The cut diff reached two.rs only.
        let diff = "diff --git a/b/two.rs b/b/two.rs\n+x\n[truncated]\n";
        assert_eq!(focus_paths(&pack, diff, 5), vec!["c/three.rs".to_string(), "a/one.rs".to_string()]);
        assert_eq!(focus_paths(&pack, diff, 1), vec!["c/three.rs".to_string()]);
        let everything = "diff --git a/a/one.rs b/a/one.rs\ndiff --git a/b/two.rs b/b/two.rs\ndiff --git a/c/three.rs b/c/three.rs\ndiff --git a/z b/z\n";
        assert_eq!(focus_paths(&pack, everything, 5), vec!["b/two.rs".to_string()], "the busiest path at least");
    }

    #[test]
    fn scopes_compare_entries_by_path() {
        let id = |n: u8| gix::ObjectId::from_bytes_or_panic(&[n; 20]);
        let entry = |n| Entry { kind: EntryKind::Regular, id: id(n) };
        let old = vec![("a".to_string(), entry(1)), ("b".to_string(), entry(2))];
        let new = vec![("b".to_string(), entry(3)), ("c".to_string(), entry(4)), ("a".to_string(), entry(1))];
        let changes = compare(old, new);
        let summary: Vec<(&str, &str)> = changes.iter().map(|c| (c.path.as_str(), c.status())).collect();
        assert_eq!(summary, vec![("b", "M"), ("c", "A")]);
    }
}

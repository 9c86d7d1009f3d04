//! Per-commit evidence for release notes: each commit's full message, its
//! changed paths with line statistics against its first parent, and a
//! bounded patch excerpt. Long ranges are split across threads, each with
//! its own repository handle and caches; the result keeps the range's
//! order.

use super::diff::{BoundedText, PatchStyle, TreeDiffer};
use super::{CommitSummary, FileChange, History, HistoryError, Interrupt};
use gix::hash::ObjectId;
use serde::Serialize;

/// Threads never outnumber this, whatever the machine has.
const MAX_THREADS: usize = 4;
/// A thread is worth starting for at least this many commits.
const COMMITS_PER_THREAD: usize = 64;

/// The bounds of each commit's patch excerpt.
#[derive(Debug, Clone, Copy)]
pub struct EvidenceLimits {
    pub excerpt_max_files: usize,
    pub excerpt_max_lines: usize,
    pub excerpt_max_bytes: usize,
}

impl Default for EvidenceLimits {
    fn default() -> Self {
        Self { excerpt_max_files: 5, excerpt_max_lines: 40, excerpt_max_bytes: 6 * 1024 }
    }
}

/// What one commit changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitEvidence {
    #[serde(flatten)]
    pub commit: CommitSummary,
    /// The full message, trimmed; callers clamp it.
    pub message: String,
    /// More than one parent: the files are the changes against the first
    /// parent, without line statistics or excerpt (the merged commits
    /// carry those).
    pub merge: bool,
    pub files: Vec<FileChange>,
    pub patch_excerpt: String,
    pub patch_excerpt_truncated: bool,
    /// Why the files could not be read, when they could not.
    pub evidence_error: Option<String>,
}

impl History {
    /// The evidence of every commit in `ids`, in the same order.
    pub fn commit_evidence(
        &self,
        ids: &[ObjectId],
        limits: EvidenceLimits,
        interrupt: &Interrupt,
    ) -> Result<Vec<CommitEvidence>, HistoryError> {
        let available = std::thread::available_parallelism().map_or(1, usize::from);
        let threads = available.min(MAX_THREADS).min(ids.len().div_ceil(COMMITS_PER_THREAD)).max(1);
        if threads == 1 {
            let mut differ = TreeDiffer::new(self)?;
            return ids.iter().map(|id| evidence_of(self, &mut differ, *id, limits, interrupt)).collect();
        }
        let shared = self.repo.clone().into_sync();
        let root = self.root.clone();
        let results: Vec<Result<Vec<(usize, CommitEvidence)>, HistoryError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|worker| {
                    let shared = &shared;
                    let root = root.clone();
                    scope.spawn(move || {
                        let mut repo = shared.to_thread_local();
                        repo.object_cache_size_if_unset(super::OBJECT_CACHE_BYTES);
                        let history = History { repo, root };
                        let mut differ = TreeDiffer::new(&history)?;
                        // Interleaved so that every thread gets commits of
                        // every size along the range.
                        (worker..ids.len())
                            .step_by(threads)
                            .map(|index| {
                                evidence_of(&history, &mut differ, ids[index], limits, interrupt)
                                    .map(|evidence| (index, evidence))
                            })
                            .collect()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| {
                    worker.join().unwrap_or_else(|_| {
                        Err(HistoryError::Read {
                            root: root.clone(),
                            what: "the commits of the range".into(),
                            message: "a reader thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let mut slots: Vec<Option<CommitEvidence>> = vec![None; ids.len()];
        for result in results {
            for (index, evidence) in result? {
                slots[index] = Some(evidence);
            }
        }
        Ok(slots.into_iter().flatten().collect())
    }
}

fn evidence_of(
    history: &History,
    differ: &mut TreeDiffer<'_>,
    id: ObjectId,
    limits: EvidenceLimits,
    interrupt: &Interrupt,
) -> Result<CommitEvidence, HistoryError> {
    interrupt.check()?;
    let (commit, message, parents) = history.commit_message(id)?;
    let mut evidence = CommitEvidence {
        commit,
        message,
        merge: parents.len() > 1,
        files: Vec::new(),
        patch_excerpt: String::new(),
        patch_excerpt_truncated: false,
        evidence_error: None,
    };
    if let Err(error) = fill_files(history, differ, id, parents.first().copied(), limits, &mut evidence) {
        evidence.evidence_error = Some(error.to_string());
    }
    Ok(evidence)
}

fn fill_files(
    history: &History,
    differ: &mut TreeDiffer<'_>,
    id: ObjectId,
    first_parent: Option<ObjectId>,
    limits: EvidenceLimits,
    evidence: &mut CommitEvidence,
) -> Result<(), HistoryError> {
    let tree = history.tree_of(id)?;
    let parent_tree = first_parent.map(|parent| history.tree_of(parent)).transpose()?;
    let changes = differ.changes(parent_tree, tree, true)?;
    if evidence.merge {
        evidence.files = changes.iter().map(|change| change.to_file_change(Default::default())).collect();
        return Ok(());
    }
    let mut excerpt = BoundedText::new(limits.excerpt_max_lines, limits.excerpt_max_bytes);
    let mut excerpt_files = 0;
    for change in &changes {
        let wants_excerpt = excerpt_files < limits.excerpt_max_files && !excerpt.is_full();
        let file = if wants_excerpt {
            excerpt_files += 1;
            differ.file_change(change, Some((&mut excerpt, PatchStyle::Excerpt)))?
        } else {
            differ.file_change(change, None)?
        };
        evidence.files.push(file);
    }
    evidence.patch_excerpt_truncated = excerpt.truncated || excerpt_files < changes.len();
    evidence.patch_excerpt = excerpt.text;
    Ok(())
}

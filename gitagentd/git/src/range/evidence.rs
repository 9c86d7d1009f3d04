//! Per-commit evidence for release notes: each commit's full message, its
//! changed paths with line statistics against its first parent, and a
//! bounded patch excerpt. Long ranges are split across threads, each with
//! its own repository handle and caches; the result keeps the range's
//! order.
//!
//! Each thread reads its commits newest first, as `git log` does, through
//! a [`super::chain_cache`] that keeps every delta base it resolves: the
//! trees and blobs of neighbouring commits sit in the same delta chains,
//! so each object of a chain is inflated once per thread instead of once
//! per read.

use super::diff::{BoundedText, PatchStyle, TreeDiffer};
use super::{CommitSummary, FileChange, History, HistoryError, Interrupt};
use gix::hash::ObjectId;
use serde::Serialize;

/// Threads never outnumber this, whatever the machine has.
const MAX_THREADS: usize = 4;
/// A thread is worth starting for at least this many commits.
const COMMITS_PER_THREAD: usize = 64;
/// Delta bases each thread keeps while it walks (see `chain_cache`).
const CHAIN_CACHE_BYTES: usize = 64 * 1024 * 1024;

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
            let mut differ = TreeDiffer::with_chain_cache(self, CHAIN_CACHE_BYTES)?;
            let mut evidence = ids
                .iter()
                .rev()
                .map(|id| evidence_of(self, &mut differ, *id, limits, interrupt))
                .collect::<Result<Vec<_>, _>>()?;
            evidence.reverse();
            return Ok(evidence);
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
                        super::prepare_handle(&mut repo);
                        // The chain cache keeps the objects this thread
                        // reads; a second copy in an object cache only
                        // costs memory.
                        repo.object_cache_size(0);
                        let history = History { repo, root };
                        let mut differ = TreeDiffer::with_chain_cache(&history, CHAIN_CACHE_BYTES)?;
                        // Neighbouring commits share most trees and blob
                        // bases, so each thread takes one contiguous run
                        // and finds its parents in its own caches.
                        let run = ids.len().div_ceil(threads);
                        let start = (worker * run).min(ids.len());
                        let end = (start + run).min(ids.len());
                        (start..end)
                            .rev()
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
                            source: "a reader thread panicked".into(),
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
    super::check(interrupt)?;
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

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use std::io::Write;
    use std::process::Stdio;

    /// 150 commits through `git fast-import` (packed, with delta chains),
    /// each growing one of three files and touching a fourth.
    fn packed_history() -> Fixture {
        let fixture = Fixture::new();
        let mut stream = String::new();
        for commit in 0..150u32 {
            let file = commit % 3;
            let lines: String = (0..=commit).map(|line| format!("line {line} of {file}\n")).collect();
            let touched = format!("touched by {commit}\n");
            let message = format!("change {commit}");
            let time = 1_767_323_045 + u64::from(commit) * 60;
            stream.push_str(&format!(
                "commit refs/heads/main\nauthor A <a@example.test> {time} +0000\ncommitter A <a@example.test> {time} +0000\ndata {}\n{message}\n",
                message.len()
            ));
            stream.push_str(&format!("M 100644 inline src/file{file}.txt\ndata {}\n{lines}\n", lines.len()));
            stream.push_str(&format!("M 100644 inline notes.txt\ndata {}\n{touched}\n", touched.len()));
        }
        let mut import = fixture.command(fixture.root(), &["fast-import", "--quiet"]);
        let mut child = import.stdin(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stream.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
        fixture
    }

    /// `additions deletions path` per commit, oldest first, as Git counts.
    fn git_numstat(fixture: &Fixture) -> Vec<Vec<String>> {
        let log = fixture.git(&["log", "--reverse", "--numstat", "--format=%x00"]);
        log.split('\0')
            .skip(1)
            .map(|commit| commit.lines().filter(|line| !line.is_empty()).map(str::to_string).collect())
            .collect()
    }

    fn our_numstat(fixture: &Fixture) -> Vec<Vec<String>> {
        let history = fixture.history();
        let ids = history.range_commits(None, history.head().unwrap()).unwrap();
        let evidence = history.commit_evidence(&ids, EvidenceLimits::default(), &Interrupt::default()).unwrap();
        evidence
            .iter()
            .map(|commit| {
                commit
                    .files
                    .iter()
                    .map(|file| format!("{}\t{}\t{}", file.additions, file.deletions, file.path))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn long_ranges_match_git_numstat_in_fast_import_and_repacked_packs() {
        let fixture = packed_history();
        let expected = git_numstat(&fixture);
        assert_eq!(expected.len(), 150);
        assert_eq!(our_numstat(&fixture), expected, "fast-import pack");
        fixture.git(&["repack", "-adfq", "--depth=50", "--window=50"]);
        assert_eq!(our_numstat(&fixture), expected, "repacked with long delta chains");
    }

    #[test]
    fn an_interrupt_stops_the_walk() {
        let fixture = packed_history();
        let history = fixture.history();
        let ids = history.range_commits(None, history.head().unwrap()).unwrap();
        let interrupt = Interrupt::default();
        interrupt.raise();
        assert!(matches!(
            history.commit_evidence(&ids, EvidenceLimits::default(), &interrupt),
            Err(HistoryError::Interrupted)
        ));
    }
}

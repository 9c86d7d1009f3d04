//! The prepared release-note context, computed before the first model
//! request: the resolved range, the parent repository's commits (oldest
//! first) with their clamped messages, changed paths, diffstats, patch
//! excerpts, operator signals and include/omit policy, the submodule
//! gitlinks that moved with their local history groups, the candidate
//! items, and the repository's web address for commit and compare links.
//!
//! It is also the source of what is built locally after generation: the
//! `### Full Changelog` (parent commits, then submodule groups), the link
//! owners the validator checks, and whether the range touched code.
//! [`ReleaseContext::render_for_prompt`] is its one deterministic
//! rendering for the model, bounded by a byte budget.

use super::candidates::{self, Candidate};
use super::classify::{self, PathKind, Policy, Signal};
use super::document::{ChangelogEntry, SubmoduleGroup, short_sha};
use super::range::{ReleaseRange, VersionBump};
use super::validate::LinkOwners;
use gitagent_git::range::{
    CommitEvidence, EvidenceLimits, FileChange, History, HistoryError, Interrupt, ResolvedRevision, SubmoduleHistory,
    commit_url, compare_url, resolve_submodule_url, web_url,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// Each commit message keeps at most this many lines...
pub const MESSAGE_MAX_LINES: usize = 10;
/// ...and, independently, at most this many words.
pub const MESSAGE_MAX_WORDS: usize = 1000;
/// Commits keep their full detail in the prompt until their JSON reaches
/// this size; later ones are listed in a compact form.
pub const PROMPT_DETAIL_BUDGET_BYTES: usize = 192 * 1024;
/// At most this many candidates reach the prompt.
pub const PROMPT_MAX_CANDIDATES: usize = 200;
/// At most this many commits are listed compactly; any further ones are
/// only counted (the full changelog still lists every commit).
pub const PROMPT_MAX_COMPACT_COMMITS: usize = 400;

/// How the omit/include policy works, for the model; the per-commit
/// `release_note_policy` says which way each commit went.
const POLICY_HINTS: &[&str] = &[
    "candidates are the commits whose release_note_policy includes them; write narrative bullets from them",
    "commits whose release_note_policy.include is false get no narrative bullet; they stay in the full changelog",
    "a submodule pointer update is described through the submodule's own commits, never as a bare pointer bump",
    "commits the policy omits are listed compactly: subject, diffstat, signals and policy only",
    "the full changelog (parent commits first, then submodule groups) is built locally; do not write it",
];

/// Why the context could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("the range {range} has no commits\nhint: {hint}")]
    EmptyRange { range: String, hint: String },
}

/// One changed file with what kind of file it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreparedFile {
    #[serde(flatten)]
    pub change: FileChange,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<PathKind>,
}

impl std::ops::Deref for PreparedFile {
    type Target = FileChange;
    fn deref(&self) -> &FileChange {
        &self.change
    }
}

/// Totals of one commit's changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diffstat {
    pub files_changed: usize,
    pub additions: u64,
    pub deletions: u64,
    /// Files per kind, for the kinds present.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<PathKind, usize>,
}

impl Diffstat {
    fn of(files: &[PreparedFile]) -> Self {
        let mut stat = Self { files_changed: files.len(), ..Self::default() };
        for file in files {
            stat.additions += u64::from(file.additions);
            stat.deletions += u64::from(file.deletions);
            for kind in &file.kinds {
                *stat.by_kind.entry(*kind).or_default() += 1;
            }
        }
        stat
    }

    /// `3 files, +20 -4`.
    pub fn describe(&self) -> String {
        let files = if self.files_changed == 1 { "file" } else { "files" };
        format!("{} {files}, +{} -{}", self.files_changed, self.additions, self.deletions)
    }
}

/// One commit as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreparedCommit {
    pub sha: String,
    pub summary: String,
    pub author: String,
    pub date: String,
    /// The full message, clamped to 10 lines and 1,000 words.
    pub message: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub message_clamped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub merge: bool,
    pub files: Vec<PreparedFile>,
    pub diffstat: Diffstat,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub patch_excerpt: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub patch_excerpt_truncated: bool,
    pub signals: Vec<Signal>,
    pub release_note_policy: Policy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_error: Option<String>,
}

impl PreparedCommit {
    fn from_evidence(evidence: CommitEvidence, web: Option<&str>) -> Self {
        let files: Vec<PreparedFile> = evidence
            .files
            .into_iter()
            .map(|change| PreparedFile { kinds: classify::path_kinds(&change.path, change.submodule), change })
            .collect();
        let signals = classify::signals(files.iter().map(|file| (file.path.as_str(), file.kinds.as_slice())));
        let policy = if evidence.merge {
            Policy { include: false, reason: Some("merge commit; the merged commits carry the evidence") }
        } else {
            classify::policy(&evidence.commit.summary, &signals, !files.is_empty())
        };
        let (message, message_clamped) = clamp_message(&evidence.message);
        Self {
            url: web.map(|web| commit_url(web, &evidence.commit.sha)),
            sha: evidence.commit.sha,
            summary: evidence.commit.summary,
            author: evidence.commit.author,
            date: evidence.commit.date,
            message,
            message_clamped,
            merge: evidence.merge,
            diffstat: Diffstat::of(&files),
            files,
            patch_excerpt: evidence.patch_excerpt,
            patch_excerpt_truncated: evidence.patch_excerpt_truncated,
            signals,
            release_note_policy: policy,
            evidence_error: evidence.evidence_error,
        }
    }
}

/// How a gitlink changed across the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Movement {
    Moved,
    Added,
    Removed,
}

/// A submodule whose gitlink changed, with its own history when it is
/// available locally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreparedSubmodule {
    pub path: String,
    pub movement: Movement,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_sha: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_sha: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare_url: Option<String>,
    /// The heading of its group in the full changelog.
    pub group_heading: String,
    pub local_history_available: bool,
    /// Why the history is not available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_note: Option<String>,
    /// Serialized by the prompt rendering, which bounds it.
    #[serde(skip)]
    pub commits: Vec<PreparedCommit>,
}

/// Where links may point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepositoryLinks {
    /// `repository`, or `parent-with-submodules` when the release has a
    /// `.gitmodules`.
    pub kind: &'static str,
    /// The parent repository's web address, from its origin remote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare_url: Option<String>,
}

/// Everything the release note is written from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseContext {
    pub range: String,
    pub base: ResolvedRevision,
    pub release: ResolvedRevision,
    pub release_ref: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_bump: Option<VersionBump>,
    pub repository: RepositoryLinks,
    /// The range touched more than documentation, so the note needs a
    /// full changelog.
    pub code_touched: bool,
    /// The signals of all parent commits together.
    pub signals: Vec<Signal>,
    pub recommended_sections: Vec<&'static str>,
    pub policy_hints: &'static [&'static str],
    /// The three lists are serialized by the prompt rendering, which
    /// bounds them.
    #[serde(skip)]
    pub parent_commits: Vec<PreparedCommit>,
    #[serde(skip)]
    pub submodules: Vec<PreparedSubmodule>,
    #[serde(skip)]
    pub candidates: Vec<Candidate>,
}

/// Prepares the context of `range`. Raising `interrupt` stops it between
/// commits.
pub fn prepare(
    history: &History,
    range: &ReleaseRange,
    limits: EvidenceLimits,
    interrupt: &Interrupt,
) -> Result<ReleaseContext, PrepareError> {
    let display = range.display();
    let ids = history.range_commits(Some(range.base.id), range.release.id)?;
    if ids.is_empty() {
        let hint = if range.bump.is_some() {
            format!("HEAD is {}; there is nothing to release since that tag", range.base.spec)
        } else {
            format!(
                "{} has no commits that {} lacks; pass the older revision first: git-agent release-note <base> <release>",
                range.release_ref, range.base.spec
            )
        };
        return Err(PrepareError::EmptyRange { range: display, hint });
    }
    let web = history.origin_url().and_then(|url| web_url(&url));
    let parent_commits: Vec<PreparedCommit> = history
        .commit_evidence(&ids, limits, interrupt)?
        .into_iter()
        .map(|evidence| PreparedCommit::from_evidence(evidence, web.as_deref()))
        .collect();
    let submodules = prepare_submodules(history, range, web.as_deref(), limits, interrupt)?;
    let has_gitmodules = !history.submodule_entries(range.release.id)?.is_empty();

    let mut candidates: Vec<Candidate> = parent_commits
        .iter()
        .filter(|commit| commit.release_note_policy.include)
        .map(|commit| candidates::candidate(commit, None))
        .collect();
    for submodule in &submodules {
        candidates.extend(
            submodule
                .commits
                .iter()
                .filter(|commit| commit.release_note_policy.include)
                .map(|commit| candidates::candidate(commit, Some(&submodule.path))),
        );
    }
    let all_files = parent_commits.iter().flat_map(|commit| commit.files.iter());
    let signals = classify::signals(all_files.map(|file| (file.path.as_str(), file.kinds.as_slice())));
    let code_touched = !submodules.is_empty()
        || parent_commits.iter().flat_map(|commit| &commit.files).any(|file| !file.kinds.contains(&PathKind::Docs));
    let recommended_sections = super::SECTION_HEADINGS
        .iter()
        .copied()
        .filter(|heading| candidates.iter().any(|candidate| candidate.section == *heading))
        .collect();
    let compare_release = if range.bump.is_some() { range.release.sha.as_str() } else { range.release_ref.as_str() };
    Ok(ReleaseContext {
        range: display,
        base: range.base.clone(),
        release: range.release.clone(),
        release_ref: range.release_ref.clone(),
        version_bump: range.bump.clone(),
        repository: RepositoryLinks {
            kind: if has_gitmodules || !submodules.is_empty() { "parent-with-submodules" } else { "repository" },
            compare_url: web.as_deref().map(|web| compare_url(web, &range.base.spec, compare_release)),
            web_url: web,
        },
        code_touched,
        signals,
        recommended_sections,
        policy_hints: POLICY_HINTS,
        parent_commits,
        submodules,
        candidates,
    })
}

fn prepare_submodules(
    history: &History,
    range: &ReleaseRange,
    parent_web: Option<&str>,
    limits: EvidenceLimits,
    interrupt: &Interrupt,
) -> Result<Vec<PreparedSubmodule>, HistoryError> {
    let moves = history.gitlink_moves(range.base.id, range.release.id)?;
    if moves.is_empty() {
        return Ok(Vec::new());
    }
    let mut entries = history.submodule_entries(range.base.id)?;
    entries.extend(history.submodule_entries(range.release.id)?);
    let mut prepared = Vec::with_capacity(moves.len());
    for moved in moves {
        let entry = entries.get(&moved.path);
        let mut repository_url =
            entry.and_then(|entry| entry.url.as_deref()).and_then(|url| resolve_submodule_url(url, parent_web));
        let movement = match (moved.old, moved.new) {
            (Some(_), Some(_)) => Movement::Moved,
            (None, _) => Movement::Added,
            (_, None) => Movement::Removed,
        };
        let (mut local_history_available, mut history_note, mut commits) = (false, None, Vec::new());
        if let (Some(old), Some(new)) = (moved.old, moved.new) {
            let name = entry.map(|entry| entry.name.as_str());
            match history.submodule_history(&moved.path, name, old, new, limits, interrupt)? {
                SubmoduleHistory::Available { origin_url, commits: evidence } => {
                    local_history_available = true;
                    if repository_url.is_none() {
                        repository_url = origin_url.as_deref().and_then(web_url);
                    }
                    commits = evidence
                        .into_iter()
                        .map(|evidence| PreparedCommit::from_evidence(evidence, repository_url.as_deref()))
                        .collect();
                }
                SubmoduleHistory::Missing { reason } => history_note = Some(reason),
            }
        }
        let (old, new) = (moved.old.map(|id| id.to_string()), moved.new.map(|id| id.to_string()));
        let compare = match (&repository_url, &old, &new) {
            (Some(web), Some(old), Some(new)) => Some(compare_url(web, old, new)),
            _ => None,
        };
        prepared.push(PreparedSubmodule {
            group_heading: group_heading(&moved.path, old.as_deref(), new.as_deref(), compare.as_deref()),
            path: moved.path,
            movement,
            base_sha: old,
            release_sha: new,
            repository_url,
            compare_url: compare,
            local_history_available,
            history_note,
            commits,
        });
    }
    Ok(prepared)
}

/// `**lib** (abc1234...def5678)`, the commits linked to the comparison
/// when the submodule has a web address.
fn group_heading(path: &str, old: Option<&str>, new: Option<&str>, compare: Option<&str>) -> String {
    let span = match (old, new) {
        (Some(old), Some(new)) => format!("{}...{}", short_sha(old), short_sha(new)),
        (None, Some(new)) => format!("added at {}", short_sha(new)),
        (Some(old), None) => format!("removed, was {}", short_sha(old)),
        (None, None) => String::new(),
    };
    match compare {
        Some(url) => format!("**{path}** ([{span}]({url}))"),
        None => format!("**{path}** ({span})"),
    }
}

/// Clamps a message to [`MESSAGE_MAX_LINES`] lines and, independently,
/// [`MESSAGE_MAX_WORDS`] words; says whether anything was cut.
pub fn clamp_message(message: &str) -> (String, bool) {
    let normalized = message.replace("\r\n", "\n").replace('\r', "\n");
    let normalized = normalized.trim();
    let lines: Vec<&str> = normalized.lines().collect();
    let mut clamped = lines.len() > MESSAGE_MAX_LINES;
    let mut words_left = MESSAGE_MAX_WORDS;
    let mut out: Vec<String> = Vec::new();
    for line in lines.iter().take(MESSAGE_MAX_LINES) {
        if words_left == 0 {
            clamped = true;
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() > words_left {
            out.push(words[..words_left].join(" "));
            words_left = 0;
            clamped = true;
            continue;
        }
        words_left -= words.len();
        out.push(line.trim_end().to_string());
    }
    (out.join("\n").trim().to_string(), clamped)
}

impl ReleaseContext {
    /// The parent commits, then the submodule groups that moved and whose
    /// history is available, for the `### Full Changelog`.
    pub fn changelog(&self) -> (Vec<ChangelogEntry>, Vec<SubmoduleGroup>) {
        let entry = |commit: &PreparedCommit| ChangelogEntry {
            sha: commit.sha.clone(),
            summary: commit.summary.clone(),
            url: commit.url.clone(),
        };
        let parent = self.parent_commits.iter().map(entry).collect();
        let groups = self
            .submodules
            .iter()
            .filter(|submodule| submodule.local_history_available && !submodule.commits.is_empty())
            .map(|submodule| SubmoduleGroup {
                path: submodule.path.clone(),
                heading: submodule.group_heading.clone(),
                entries: submodule.commits.iter().map(entry).collect(),
            })
            .collect();
        (parent, groups)
    }

    /// Which repository each commit link must point into.
    pub fn link_owners(&self) -> LinkOwners {
        LinkOwners {
            parent: self.repository.web_url.clone(),
            submodules: self
                .submodules
                .iter()
                .filter_map(|submodule| Some((submodule.path.clone(), submodule.repository_url.clone()?)))
                .collect(),
        }
    }

    /// Every commit of the context with its link, parent commits first.
    pub fn commits(&self) -> impl Iterator<Item = &PreparedCommit> {
        self.parent_commits.iter().chain(self.submodules.iter().flat_map(|submodule| &submodule.commits))
    }

    /// The context as the model reads it: indented JSON in a stable field
    /// order. Commits the policy keeps come in full detail, in range order,
    /// until their JSON reaches [`PROMPT_DETAIL_BUDGET_BYTES`]; the rest,
    /// and every commit the policy omits, are listed compactly (subject,
    /// diffstat, signals, policy), at most [`PROMPT_MAX_COMPACT_COMMITS`]
    /// of them; `prompt_limits` says what the limits left out.
    pub fn render_for_prompt(&self) -> String {
        self.render_within(PROMPT_DETAIL_BUDGET_BYTES, PROMPT_MAX_COMPACT_COMMITS, PROMPT_MAX_CANDIDATES)
    }

    pub(super) fn render_within(
        &self,
        detail_budget_bytes: usize,
        max_compact: usize,
        max_candidates: usize,
    ) -> String {
        let mut budget = Budget {
            detail_bytes_left: detail_budget_bytes,
            compact_left: max_compact,
            compacted_for_budget: 0,
            omitted_commits: 0,
        };
        let parent_commits: Vec<CommitView<'_>> =
            self.parent_commits.iter().filter_map(|commit| CommitView::new(commit, &mut budget)).collect();
        let submodules: Vec<SubmoduleView<'_>> = self
            .submodules
            .iter()
            .map(|submodule| SubmoduleView {
                submodule,
                commits: submodule.commits.iter().filter_map(|commit| CommitView::new(commit, &mut budget)).collect(),
            })
            .collect();
        let candidates = &self.candidates[..self.candidates.len().min(max_candidates)];
        let omitted_candidates = self.candidates.len() - candidates.len();
        let limited = budget.compacted_for_budget > 0 || budget.omitted_commits > 0 || omitted_candidates > 0;
        let prompt_limits = limited.then_some(PromptLimits {
            detail_budget_bytes,
            compacted_for_budget: budget.compacted_for_budget,
            omitted_commits: budget.omitted_commits,
            omitted_candidates,
        });
        let view = PromptView { context: self, parent_commits, submodules, candidates, prompt_limits };
        serde_json::to_string_pretty(&view).unwrap_or_else(|_| format!("{{\"range\": {:?}}}", self.range))
    }
}

/// What is left of the prompt's room for commits, and what it cost.
struct Budget {
    detail_bytes_left: usize,
    compact_left: usize,
    compacted_for_budget: usize,
    omitted_commits: usize,
}

#[derive(Serialize)]
struct PromptView<'a> {
    #[serde(flatten)]
    context: &'a ReleaseContext,
    parent_commits: Vec<CommitView<'a>>,
    submodules: Vec<SubmoduleView<'a>>,
    candidates: &'a [Candidate],
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_limits: Option<PromptLimits>,
}

#[derive(Serialize)]
struct PromptLimits {
    detail_budget_bytes: usize,
    /// Commits the policy keeps that are listed compactly for lack of room.
    compacted_for_budget: usize,
    /// Commits not listed at all (they are in the full changelog).
    omitted_commits: usize,
    omitted_candidates: usize,
}

#[derive(Serialize)]
#[serde(untagged)]
enum CommitView<'a> {
    Full(&'a PreparedCommit),
    Compact(CompactCommit<'a>),
}

/// A commit without its files, message body and excerpt.
#[derive(Serialize)]
struct CompactCommit<'a> {
    sha: &'a str,
    summary: &'a str,
    diffstat: String,
    signals: &'a [Signal],
    release_note_policy: &'a Policy,
}

impl<'a> CommitView<'a> {
    /// Full detail while the detail budget lasts and the policy keeps the
    /// commit; compact while compact room lasts; else `None`.
    fn new(commit: &'a PreparedCommit, budget: &mut Budget) -> Option<Self> {
        if commit.release_note_policy.include {
            let size = serde_json::to_string(commit).map_or(usize::MAX, |json| json.len());
            if size <= budget.detail_bytes_left {
                budget.detail_bytes_left -= size;
                return Some(Self::Full(commit));
            }
            budget.detail_bytes_left = 0;
            budget.compacted_for_budget += 1;
        }
        if budget.compact_left == 0 {
            budget.omitted_commits += 1;
            return None;
        }
        budget.compact_left -= 1;
        Some(Self::Compact(CompactCommit::of(commit)))
    }
}

impl<'a> CompactCommit<'a> {
    fn of(commit: &'a PreparedCommit) -> Self {
        Self {
            sha: &commit.sha,
            summary: &commit.summary,
            diffstat: commit.diffstat.describe(),
            signals: &commit.signals,
            release_note_policy: &commit.release_note_policy,
        }
    }
}

#[derive(Serialize)]
struct SubmoduleView<'a> {
    #[serde(flatten)]
    submodule: &'a PreparedSubmodule,
    commits: Vec<CommitView<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_clamp_to_ten_lines_and_a_thousand_words_independently() {
        let long_lines: String = (1..=14).map(|n| format!("line {n}\n")).collect();
        let (clamped, cut) = clamp_message(&long_lines);
        assert!(cut);
        assert_eq!(clamped.lines().count(), 10);
        assert!(clamped.ends_with("line 10"));

        let wordy = format!("subject\n\n{}", "word ".repeat(1500));
        let (clamped, cut) = clamp_message(&wordy);
        assert!(cut);
        assert_eq!(clamped.split_whitespace().count(), 1000);
        assert_eq!(clamped.lines().count(), 3);

        let (short, cut) = clamp_message("fix: x\r\n\r\nbody\r\n");
        assert_eq!((short.as_str(), cut), ("fix: x\n\nbody", false));
    }

    #[test]
    fn group_headings_link_to_the_comparison_when_known() {
        let old = "1111111aaaaaaa";
        let new = "2222222bbbbbbb";
        assert_eq!(group_heading("lib", Some(old), Some(new), None), "**lib** (1111111...2222222)");
        assert_eq!(
            group_heading("lib", Some(old), Some(new), Some("https://h/o/lib/compare/a...b")),
            "**lib** ([1111111...2222222](https://h/o/lib/compare/a...b))"
        );
        assert_eq!(group_heading("lib", None, Some(new), None), "**lib** (added at 2222222)");
    }
}

//! Preparation of an inspection before any provider is involved: the
//! authoritative scope (paths, status, line statistics), the
//! generated-heavy context pack, the bounded current diff, a best-effort
//! previous-HEAD pack for contrast, and the launch fingerprint, plus the
//! recheck that fails with an explicit rerun error on drift. It also
//! renders the prepared context and the escaped operator hint as prompt
//! data for the agent loop.

use super::git::{self, GitEnv, GitError};
use super::patch::{self, FileStat};
use super::scope::{self, Change, Target, Workspace};
use git_agent_shared::task_record::RepositoryFingerprint;
use gitagent_git::contextpack::{self, ContextPack, FileFact};
use gitagent_git::patch as renderer;
use gix::hash::ObjectId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The prepared diff's caps.
pub const PREPARED_DIFF_MAX_BYTES: usize = 48 * 1024;
pub const PREPARED_DIFF_MAX_LINES: usize = 1200;
/// Entries of each context-pack list shown in the prompt.
pub const MAX_PROMPT_PACK_ENTRIES: usize = 128;
/// Bytes of an operator hint kept in the prompt.
pub use gitagent_agent::prompt::{MAX_OPERATOR_HINT_BYTES, OperatorHint};
const HEADER_BYTES: usize = 8 * 1024;

/// What an inspection covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Uncommitted,
    Staged,
    Codebase,
    /// `--base <ref>`: HEAD against its merge base with `<ref>`.
    Base,
    /// `--commit <rev>`: one commit against its first parent.
    Commit,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Uncommitted => "uncommitted",
            Mode::Staged => "staged",
            Mode::Codebase => "codebase",
            Mode::Base => "base",
            Mode::Commit => "commit",
        }
    }

    /// Whether the scope is a range of two commits.
    pub fn is_commit_range(self) -> bool {
        matches!(self, Mode::Base | Mode::Commit)
    }

    fn target(self) -> Option<Target> {
        match self {
            Mode::Uncommitted => Some(Target::Worktree),
            Mode::Staged => Some(Target::Index),
            Mode::Base | Mode::Commit => Some(Target::Tree),
            Mode::Codebase => None,
        }
    }
}

/// Status letters of one changed path (Git's porcelain letters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathChange {
    pub path: String,
    pub staging: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub worktree: String,
}

/// Everything prepared before the first provider request.
#[derive(Debug, Clone, Serialize)]
pub struct PreparedScope {
    pub mode: Mode,
    #[serde(skip)]
    pub root: PathBuf,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<PathChange>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stats: Vec<FileStat>,
    pub context_pack: ContextPack,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_head_context_pack: Option<ContextPack>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub diff_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<RepositoryFingerprint>,
    /// Changed gitlinks: their evidence is one synthetic line.
    #[serde(skip)]
    pub gitlinks: BTreeSet<String>,
    /// The two commits of `--base`/`--commit`, resolved once at launch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<CommitRange>,
}

/// The commits a commit-range inspection compares, resolved at launch:
/// the review is pinned to them even if `<ref>` moves later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitRange {
    /// What the caller asked for (`main`, `HEAD~2`).
    pub requested: String,
    /// The base commit (the merge base, or the first parent); absent for a
    /// root commit, whose base is the empty tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// The commit under review (HEAD for `--base`).
    pub target_commit: String,
}

impl CommitRange {
    fn ids(&self) -> Result<(Option<ObjectId>, ObjectId), GitError> {
        let parse = |hex: &str| {
            ObjectId::from_hex(hex.as_bytes()).map_err(|error| GitError::Revision {
                path: PathBuf::new(),
                spec: hex.to_string(),
                source: error.into(),
            })
        };
        let base = self.base_commit.as_deref().map(parse).transpose()?;
        Ok((base, parse(&self.target_commit)?))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(
        "{mode} mode requires changed files; {root} has none\nhint: make changes first, or use --codebase to audit the whole repository"
    )]
    EmptyScope { mode: &'static str, root: PathBuf },
    #[error(
        "authoritative repository state changed since launch; rerun command\nhint: the worktree, index, HEAD or a dirty submodule of {root} changed while the {mode} inspection ran"
    )]
    Drift { mode: &'static str, root: PathBuf },
    #[error(
        "{mode} mode found no changes for {requested:?} in {root}\nhint: pick a {mode} with changes, or use --codebase"
    )]
    EmptyRange { mode: &'static str, requested: String, root: PathBuf },
}

/// Prepares the scope of an inspection started in `cwd`.
pub fn prepare(cwd: &Path, mode: Mode, git_env: &GitEnv) -> Result<PreparedScope, PrepareError> {
    prepare_scope(cwd, mode, None, git_env, false)
}

/// Prepares the scope of an inspection started in `cwd`; `revision` is
/// the `<ref>` of `--base` or the `<rev>` of `--commit`.
pub fn prepare_with(
    cwd: &Path,
    mode: Mode,
    revision: Option<&str>,
    git_env: &GitEnv,
) -> Result<PreparedScope, PrepareError> {
    prepare_scope(cwd, mode, revision, git_env, false)
}

/// [`prepare_with`] for a `--follow-up`, where an empty diff is a valid
/// scope: the parent's findings may all be fixed.
pub fn prepare_follow_up(
    cwd: &Path,
    mode: Mode,
    revision: Option<&str>,
    git_env: &GitEnv,
) -> Result<PreparedScope, PrepareError> {
    prepare_scope(cwd, mode, revision, git_env, true)
}

fn prepare_scope(
    cwd: &Path,
    mode: Mode,
    revision: Option<&str>,
    git_env: &GitEnv,
    allow_empty: bool,
) -> Result<PreparedScope, PrepareError> {
    let root = git::discover_root(cwd)?;
    let Some(target) = mode.target() else {
        let components = scope::component_prefixes(&root, git_env)?;
        return Ok(PreparedScope {
            mode,
            root,
            paths: Vec::new(),
            components,
            status: Vec::new(),
            stats: Vec::new(),
            context_pack: ContextPack::default(),
            previous_head_context_pack: None,
            diff: String::new(),
            diff_truncated: false,
            fingerprint: None,
            gitlinks: BTreeSet::new(),
            range: None,
        });
    };
    let repo = git::open(&root, git_env)?;
    let range = match mode {
        Mode::Base | Mode::Commit => Some(resolve_range(&repo, mode, revision.unwrap_or("HEAD"))?),
        _ => None,
    };
    let workspace = match &range {
        Some(range) => {
            let (base, target) = range.ids()?;
            scope::collect_commits(&root, base, target, git_env)?
        }
        None => scope::collect_in(repo.clone(), target, git_env)?,
    };
    let changes = workspace.changes();
    if changes.is_empty() && !allow_empty {
        return Err(match &range {
            Some(range) => PrepareError::EmptyRange { mode: mode.as_str(), requested: range.requested.clone(), root },
            None => PrepareError::EmptyScope { mode: mode.as_str(), root },
        });
    }
    let rendered =
        patch::render(&workspace, &changes, None, git_env, PREPARED_DIFF_MAX_BYTES, PREPARED_DIFF_MAX_LINES)?;
    let paths: Vec<String> = changes.iter().map(Change::full_path).collect();
    let status: Vec<PathChange> = changes.iter().map(|change| status_of(&workspace, change)).collect();
    let stats: Vec<FileStat> = paths
        .iter()
        .map(|path| {
            rendered.stats.get(path).cloned().unwrap_or_else(|| FileStat { path: path.clone(), ..FileStat::default() })
        })
        .collect();
    let facts: Vec<FileFact> = changes
        .iter()
        .zip(&status)
        .zip(&stats)
        .map(|((change, status), stat)| FileFact {
            path: change.full_path(),
            status: status_name(mode, status).to_string(),
            adds: stat.adds,
            deletes: stat.deletes,
            header: go_header(&workspace, change, git_env),
        })
        .collect();
    let gitlinks = changes.iter().filter(|change| change.is_gitlink()).map(Change::full_path).collect();
    Ok(PreparedScope {
        mode,
        paths,
        components: workspace.component_prefixes(),
        status,
        stats,
        context_pack: contextpack::build(&facts),
        // The previous commit is contrast for a worktree change; a commit
        // range already is history.
        previous_head_context_pack: if range.is_some() { None } else { previous_head_pack(&repo) },
        diff: rendered.text,
        diff_truncated: rendered.truncated,
        fingerprint: Some(workspace.fingerprint()),
        gitlinks,
        range,
        root,
    })
}

/// Resolves `--base <ref>` (HEAD against its merge base with the ref) or
/// `--commit <rev>` (the commit against its first parent).
fn resolve_range(repo: &gix::Repository, mode: Mode, requested: &str) -> Result<CommitRange, GitError> {
    let commit = git::resolve_commit(repo, requested)?;
    let (base, target) = if mode == Mode::Base {
        let head = git::resolve_commit(repo, "HEAD")?;
        (Some(git::merge_base(repo, commit, head, requested)?), head)
    } else {
        (git::first_parent(repo, commit)?, commit)
    };
    Ok(CommitRange {
        requested: requested.to_string(),
        base_commit: base.map(|id| id.to_string()),
        target_commit: target.to_string(),
    })
}

/// The current workspace of a diff-mode inspection (`None` in codebase
/// mode), not yet compared with the launch fingerprint. A commit range is
/// pinned to its launch commits; for `--base`, HEAD must still be the
/// commit under review.
pub fn current_workspace(prepared: &PreparedScope, git_env: &GitEnv) -> Result<Option<Workspace>, PrepareError> {
    let Some(target) = prepared.mode.target() else { return Ok(None) };
    let Some(range) = &prepared.range else {
        return Ok(Some(scope::collect(&prepared.root, target, git_env)?));
    };
    let (base, commit) = range.ids()?;
    if prepared.mode == Mode::Base {
        let repo = git::open(&prepared.root, git_env)?;
        if git::head_commit(&repo) != Some(commit) {
            return Err(PrepareError::Drift { mode: prepared.mode.as_str(), root: prepared.root.clone() });
        }
    }
    Ok(Some(scope::collect_commits(&prepared.root, base, commit, git_env)?))
}

/// Collects the current workspace of a diff-mode inspection and fails when
/// it no longer matches the launch fingerprint.
pub fn verified_workspace(prepared: &PreparedScope, git_env: &GitEnv) -> Result<Option<Workspace>, PrepareError> {
    let Some(expected) = prepared.fingerprint.as_ref() else { return Ok(None) };
    let Some(workspace) = current_workspace(prepared, git_env)? else { return Ok(None) };
    if &workspace.fingerprint() != expected {
        return Err(PrepareError::Drift { mode: prepared.mode.as_str(), root: prepared.root.clone() });
    }
    Ok(Some(workspace))
}

/// Rechecks the launch fingerprint (a no-op in codebase mode).
pub fn recheck(prepared: &PreparedScope, git_env: &GitEnv) -> Result<(), PrepareError> {
    verified_workspace(prepared, git_env).map(drop)
}

fn letter(old: Option<&git::Blob>, new: Option<&git::Blob>) -> &'static str {
    match (old, new) {
        (None, Some(_)) => "A",
        (Some(_), None) => "D",
        (Some(old), Some(new)) if old != new => "M",
        _ => " ",
    }
}

fn status_of(workspace: &Workspace, change: &Change) -> PathChange {
    let path = change.full_path();
    let Some(component) = workspace.components.iter().find(|component| component.prefix == change.prefix) else {
        return PathChange { path, staging: " ".into(), worktree: String::new() };
    };
    let file = change.path.as_str();
    if workspace.target != Target::Worktree {
        return PathChange {
            path,
            staging: letter(component.base.get(file), component.index.get(file)).into(),
            worktree: String::new(),
        };
    }
    if component.untracked.contains(file) {
        return PathChange { path, staging: "?".into(), worktree: "?".into() };
    }
    let staging = letter(component.base.get(file), component.index.get(file));
    let mut worktree = letter(component.index.get(file), component.target.get(file));
    if change.dirty && worktree == " " {
        worktree = "M";
    }
    PathChange { path, staging: staging.into(), worktree: worktree.into() }
}

fn status_name(mode: Mode, status: &PathChange) -> &'static str {
    let mut letter = status.staging.as_str();
    if mode == Mode::Uncommitted && !status.worktree.is_empty() && status.worktree != " " {
        letter = status.worktree.as_str();
    }
    if letter.is_empty() || letter == " " {
        letter = status.staging.as_str();
    }
    match letter {
        "A" | "?" => "added",
        "D" => "deleted",
        "R" => "renamed",
        "C" => "copied",
        "M" => "modified",
        "U" => "unmerged",
        _ => "changed",
    }
}

/// The first bytes of a changed Go file (its new side, or its old side
/// when deleted), to recognise generated code.
fn go_header(workspace: &Workspace, change: &Change, git_env: &GitEnv) -> String {
    if !change.path.ends_with(".go") {
        return String::new();
    }
    let Some(component) = workspace.components.iter().find(|component| component.prefix == change.prefix) else {
        return String::new();
    };
    let bytes = match (change.new, change.old) {
        (Some(_), _) if component.from_worktree.contains(&change.path) => {
            read_prefix(&component.root.join(git_agent_shared::quote::key_path(&change.path))).unwrap_or_default()
        }
        (Some(blob), _) | (None, Some(blob)) => git::open(&component.root, git_env)
            .ok()
            .and_then(|repo| git::blob_bytes(&repo, blob.id).ok())
            .unwrap_or_default(),
        (None, None) => Vec::new(),
    };
    let end = bytes.len().min(HEADER_BYTES);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn read_prefix(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut buffer = vec![0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(read) => filled += read,
        }
    }
    buffer.truncate(filled);
    Some(buffer)
}

/// HEAD against its first parent, for contrast only; `None` when there is
/// no parent or anything fails.
fn previous_head_pack(repo: &gix::Repository) -> Option<ContextPack> {
    let head = repo.head_commit().ok()?;
    let parent = head.parent_ids().next()?.detach();
    let head_tree = head.tree().ok()?;
    let parent_tree = repo.find_tree(git::commit_tree(repo, parent)?).ok()?;
    // Only the entries that differ: unchanged folders are never read.
    let options = gix::diff::Options::default().with_rewrites(None);
    let mut entries: Vec<(String, Option<git::Blob>, Option<git::Blob>)> = repo
        .diff_tree_to_tree(&parent_tree, &head_tree, options)
        .ok()?
        .into_iter()
        .filter_map(|change| {
            use gix::object::tree::diff::ChangeDetached as Change;
            let blob = |mode: gix::objs::tree::EntryMode, id| (!mode.is_tree()).then_some(git::Blob { mode, id });
            let (location, old, new) = match change {
                Change::Addition { location, entry_mode, id, .. } => (location, None, blob(entry_mode, id)),
                Change::Deletion { location, entry_mode, id, .. } => (location, blob(entry_mode, id), None),
                Change::Modification { location, previous_entry_mode, previous_id, entry_mode, id } => {
                    (location, blob(previous_entry_mode, previous_id), blob(entry_mode, id))
                }
                Change::Rewrite { .. } => return None,
            };
            (old.is_some() || new.is_some())
                .then(|| (git_agent_shared::quote::utf8_or_quoted(location.as_slice()).into_owned(), old, new))
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut facts = Vec::new();
    for (path, old, new) in &entries {
        let (old, new) = (old.as_ref(), new.as_ref());
        if old == new {
            continue;
        }
        let (adds, deletes) = line_counts(repo, old, new);
        let header = match new {
            Some(blob) if path.ends_with(".go") && !blob.is_gitlink() => git::blob_bytes(repo, blob.id)
                .map(|bytes| String::from_utf8_lossy(&bytes[..bytes.len().min(HEADER_BYTES)]).into_owned())
                .unwrap_or_default(),
            _ => String::new(),
        };
        let status = match (old, new) {
            (None, Some(_)) => "added",
            (Some(_), None) => "deleted",
            _ => "modified",
        };
        facts.push(FileFact { path: path.clone(), status: status.into(), adds, deletes, header });
    }
    Some(contextpack::build(&facts))
}

fn line_counts(repo: &gix::Repository, old: Option<&git::Blob>, new: Option<&git::Blob>) -> (u64, u64) {
    let load = |blob: Option<&git::Blob>| match blob {
        None => Some(Vec::new()),
        Some(blob) if blob.is_gitlink() => Some(renderer::gitlink_content(blob.id, false)),
        Some(blob) => git::blob_bytes(repo, blob.id).ok(),
    };
    let (Some(before), Some(after)) = (load(old), load(new)) else { return (0, 0) };
    let stats = renderer::stats(renderer::Content::Bytes { old: &before, new: &after });
    (u64::from(stats.additions), u64::from(stats.deletions))
}

/// The prepared context as the initial prompt shows it: bounded views of
/// both packs plus the bounded current diff, never the complete raw path,
/// status or stat lists.
#[derive(Debug, Clone, Serialize)]
pub struct PromptContext {
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<CommitRange>,
    pub context_pack: ContextPack,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub context_pack_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_head_context_pack: Option<ContextPack>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub previous_head_context_pack_truncated: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub diff_truncated: bool,
}

impl PreparedScope {
    /// The bounded prompt view of this scope (`None` in codebase mode,
    /// which has no packed diff).
    pub fn prompt_context(&self) -> Option<PromptContext> {
        if self.mode == Mode::Codebase {
            return None;
        }
        let (context_pack, context_pack_truncated) = bound_pack(&self.context_pack);
        let (previous, previous_truncated) = match &self.previous_head_context_pack {
            Some(pack) => {
                let (pack, truncated) = bound_pack(pack);
                (Some(pack), truncated)
            }
            None => (None, false),
        };
        Some(PromptContext {
            mode: self.mode,
            range: self.range.clone(),
            context_pack,
            context_pack_truncated,
            previous_head_context_pack: previous,
            previous_head_context_pack_truncated: previous_truncated,
            diff: self.diff.clone(),
            diff_truncated: self.diff_truncated,
        })
    }

    /// The prompt view rendered as indented JSON.
    pub fn rendered_prompt_context(&self) -> Option<String> {
        self.prompt_context().and_then(|context| serde_json::to_string_pretty(&context).ok())
    }

    /// Root-relative path → statistics, for inventories.
    pub fn stats_by_path(&self) -> BTreeMap<&str, &FileStat> {
        self.stats.iter().map(|stat| (stat.path.as_str(), stat)).collect()
    }
}

fn bound_pack(pack: &ContextPack) -> (ContextPack, bool) {
    let mut bounded = pack.clone();
    let truncated = bounded.groups.len() > MAX_PROMPT_PACK_ENTRIES || bounded.outliers.len() > MAX_PROMPT_PACK_ENTRIES;
    bounded.groups.truncate(MAX_PROMPT_PACK_ENTRIES);
    bounded.outliers.truncate(MAX_PROMPT_PACK_ENTRIES);
    (bounded, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gitagent_git::range::fixture::{every_kind_of_change, numstat_line};

    /// review --staged renders the same patch and counts as git (and as
    /// commit-msg and release-note, whose own tests compare the same
    /// fixture with git).
    #[test]
    fn review_renders_the_staged_patch_as_git() {
        let fixture = every_kind_of_change();
        let git_patch = fixture.git(&["diff", "--cached", "--no-renames"]);
        let git_numstat: Vec<String> =
            fixture.git(&["diff", "--cached", "--no-renames", "--numstat"]).lines().map(str::to_string).collect();
        let git_env = GitEnv { home: None, xdg_config_home: None };
        let prepared = prepare(fixture.root(), Mode::Staged, &git_env).unwrap();
        assert_eq!(prepared.diff, git_patch, "review");
        let review_numstat: Vec<String> =
            prepared.stats.iter().map(|s| numstat_line(&s.path, s.adds, s.deletes, s.is_binary)).collect();
        assert_eq!(review_numstat, git_numstat, "review counts");
    }
}

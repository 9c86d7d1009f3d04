//! Submodule gitlink movements among staged changes, with the submodule
//! commits each movement spans when that history is available locally
//! (the submodule's checkout, else its clone under `.git/modules/`). A
//! movement whose submodule history is local also lists the movements of
//! that submodule's own submodules between the two recorded commits
//! (`webui`, then `webui/wiki`), recursively. A missing checkout or
//! missing objects are recorded, never an error.

use super::history::{CommitInfo, commits_between};
use super::staged::Change;
use super::{EntryKind, GitError, Repository};
use gix::ObjectId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// At most this many submodule commits are listed per movement.
pub const MAX_SUBMODULE_COMMITS: usize = 50;

/// Submodules nested deeper than this below the superproject are not
/// followed (a bound, since two repositories may record each other).
const MAX_NESTING: usize = 8;

/// One staged gitlink change, or the movement of a submodule nested in a
/// moved one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubmoduleChange {
    /// The path from the superproject's root (`webui/wiki` for `wiki`
    /// inside the `webui` submodule).
    pub path: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub old_sha: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub new_sha: String,
    pub local_history_available: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub availability_error: String,
    /// The commits the gitlink moved over, newest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<CommitInfo>,
    /// For a nested submodule, the path of the moved submodule that
    /// records it; `None` for a gitlink staged in the superproject.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nested_in: Option<String>,
}

impl SubmoduleChange {
    /// The commit summaries a message about this movement must carry.
    pub fn summaries(&self) -> impl Iterator<Item = &str> {
        self.commits.iter().map(|commit| commit.summary.trim()).filter(|summary| !summary.is_empty())
    }
}

/// Why a submodule's history cannot be read here.
#[derive(Debug, thiserror::Error)]
pub enum SubmoduleError {
    #[error(
        "the submodule checkout {path} is missing; run git submodule update --init --recursive to make its history available"
    )]
    Missing { path: String },
    #[error("cannot open the submodule at {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: Box<gix::Error>,
    },
    #[error("the submodule history of {path} is not available locally: {source}")]
    History {
        path: String,
        #[source]
        source: GitError,
    },
}

/// A gitlink that differs between two states, before its history is read.
struct Movement {
    old: Option<ObjectId>,
    new: Option<ObjectId>,
}

/// Where a repository's nested submodules live: their checkouts under
/// the work tree, their clones under `<git dir>/modules/`.
struct Host {
    work_dir: Option<PathBuf>,
    git_dir: PathBuf,
}

impl Host {
    fn of(repo: &gix::Repository) -> Self {
        Self { work_dir: repo.workdir().map(Path::to_path_buf), git_dir: repo.git_dir().to_path_buf() }
    }

    /// The submodule at `path`: its checkout, else its clone inside the
    /// host's Git folder. `shown` names it in errors.
    fn open(&self, path: &str, shown: &str) -> Result<gix::Repository, SubmoduleError> {
        let options = gix::open::Options::isolated().strict_config(false);
        let open = |at: &Path| {
            gix::open_opts(at, options.clone())
                .map_err(|source| SubmoduleError::Open { path: shown.to_string(), source: Box::new(source) })
        };
        if let Some(checkout) = self.work_dir.as_ref().map(|root| root.join(path))
            && checkout.join(".git").exists()
        {
            return open(&checkout);
        }
        let module = self.git_dir.join("modules").join(path);
        if module.is_dir() {
            return open(&module);
        }
        Err(SubmoduleError::Missing { path: shown.to_string() })
    }
}

impl Repository {
    /// The gitlink changes among `changes`, each followed by the nested
    /// submodule movements it carries, with the submodule commits they
    /// span where the history is local.
    pub fn submodule_changes(&self, changes: &[Change]) -> Vec<SubmoduleChange> {
        let host = Host::of(&self.local());
        let gitlink = |entry: Option<super::Entry>| entry.filter(|entry| entry.kind == EntryKind::Gitlink);
        let mut out = Vec::new();
        for change in changes.iter().filter(|change| change.is_gitlink()) {
            let movement = Movement {
                old: gitlink(change.old).map(|entry| entry.id),
                new: gitlink(change.new).map(|entry| entry.id),
            };
            collect(&host, &change.path, "", None, &movement, 0, &mut out);
        }
        out
    }
}

/// Appends the movement of the submodule at `path` in `host` (shown as
/// `prefix` + `path`), then those of its own submodules.
fn collect(
    host: &Host,
    path: &str,
    prefix: &str,
    nested_in: Option<&str>,
    movement: &Movement,
    depth: usize,
    out: &mut Vec<SubmoduleChange>,
) {
    let shown = format!("{prefix}{path}");
    let hex = |id: Option<ObjectId>| id.map(|id| id.to_string()).unwrap_or_default();
    let mut change = SubmoduleChange {
        path: shown.clone(),
        old_sha: hex(movement.old),
        new_sha: hex(movement.new),
        local_history_available: false,
        availability_error: String::new(),
        commits: Vec::new(),
        nested_in: nested_in.map(str::to_string),
    };
    let (Some(old), Some(new)) = (movement.old, movement.new) else {
        out.push(change);
        return;
    };
    let history = host.open(path, &shown).and_then(|repo| {
        let commits = commits_between(&repo, old, new, MAX_SUBMODULE_COMMITS)
            .map_err(|source| SubmoduleError::History { path: shown.clone(), source })?;
        Ok((repo, commits))
    });
    let repo = match history {
        Ok((repo, commits)) => {
            change.local_history_available = true;
            change.commits = commits;
            out.push(change);
            repo
        }
        Err(error) => {
            change.availability_error = error.to_string();
            out.push(change);
            return;
        }
    };
    if depth + 1 >= MAX_NESTING {
        return;
    }
    // Objects read fine for the walk above; trees that do not read leave
    // the nested movements out rather than failing the message.
    let (Some(before), Some(after)) = (gitlinks_at(&repo, old), gitlinks_at(&repo, new)) else { return };
    let host = Host::of(&repo);
    let prefix = format!("{shown}/");
    let mut paths: Vec<&String> = before.keys().chain(after.keys()).collect();
    paths.sort_unstable();
    paths.dedup();
    for nested in paths {
        let movement = Movement { old: before.get(nested).copied(), new: after.get(nested).copied() };
        if movement.old != movement.new {
            collect(&host, nested, &prefix, Some(&shown), &movement, depth + 1, out);
        }
    }
}

/// Every gitlink recorded in `commit`'s tree, by path.
fn gitlinks_at(repo: &gix::Repository, commit: ObjectId) -> Option<BTreeMap<String, ObjectId>> {
    let tree = repo.find_commit(commit).ok()?.tree().ok()?;
    let mut recorder = gix::traverse::tree::Recorder::default();
    tree.traverse().breadthfirst(&mut recorder).ok()?;
    Some(
        recorder
            .records
            .into_iter()
            .filter(|entry| entry.mode.is_commit())
            .map(|entry| (entry.filepath.to_string(), entry.oid))
            .collect(),
    )
}

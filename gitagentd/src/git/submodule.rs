//! Submodule gitlink movements among staged changes, with the submodule
//! commits each movement spans when that history is available locally
//! (the submodule's checkout, else its clone under `.git/modules/`). A
//! missing checkout or missing objects are recorded, never an error.

use super::history::{CommitInfo, commits_between};
use super::staged::Change;
use super::{EntryKind, Repository};
use serde::Serialize;
use std::path::PathBuf;

/// At most this many submodule commits are listed per movement.
pub const MAX_SUBMODULE_COMMITS: usize = 50;

/// One staged gitlink change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubmoduleChange {
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
}

impl SubmoduleChange {
    /// The commit summaries a message about this movement must carry.
    pub fn summaries(&self) -> impl Iterator<Item = &str> {
        self.commits.iter().map(|commit| commit.summary.trim()).filter(|summary| !summary.is_empty())
    }
}

impl Repository {
    /// The gitlink changes among `changes`, with the submodule commits
    /// they span where the history is local.
    pub fn submodule_changes(&self, changes: &[Change]) -> Vec<SubmoduleChange> {
        changes.iter().filter(|change| change.is_gitlink()).map(|change| self.submodule_change(change)).collect()
    }

    fn submodule_change(&self, change: &Change) -> SubmoduleChange {
        let gitlink = |entry: Option<super::Entry>| entry.filter(|entry| entry.kind == EntryKind::Gitlink);
        let (old, new) = (gitlink(change.old), gitlink(change.new));
        let mut out = SubmoduleChange {
            path: change.path.clone(),
            old_sha: old.map(|entry| entry.id.to_string()).unwrap_or_default(),
            new_sha: new.map(|entry| entry.id.to_string()).unwrap_or_default(),
            local_history_available: false,
            availability_error: String::new(),
            commits: Vec::new(),
        };
        let (Some(old), Some(new)) = (old, new) else { return out };
        let repo = match self.open_submodule(&change.path) {
            Ok(repo) => repo,
            Err(error) => {
                out.availability_error = error;
                return out;
            }
        };
        match commits_between(&repo, old.id, new.id, MAX_SUBMODULE_COMMITS) {
            Ok(commits) => {
                out.local_history_available = true;
                out.commits = commits;
            }
            Err(error) => {
                out.availability_error = format!(
                    "the submodule history between {} and {} is not available locally: {error}",
                    short(&out.old_sha),
                    short(&out.new_sha)
                );
            }
        }
        out
    }

    /// The submodule's repository: its checkout, else its clone inside the
    /// superproject's Git folder.
    fn open_submodule(&self, path: &str) -> Result<gix::Repository, String> {
        let options = gix::open::Options::isolated().strict_config(false);
        let checkout = self.root.join(path);
        if checkout.join(".git").exists() {
            return gix::open_opts(&checkout, options)
                .map_err(|error| format!("cannot open the submodule at {path}: {error}"));
        }
        let module: PathBuf = self.local().git_dir().join("modules").join(path);
        if module.is_dir() {
            return gix::open_opts(&module, options)
                .map_err(|error| format!("cannot open the submodule clone of {path}: {error}"));
        }
        Err(format!(
            "the submodule checkout {path} is missing; run git submodule update --init {path} to make its history available"
        ))
    }
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

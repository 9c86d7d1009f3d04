//! Submodules across a range: which gitlinks moved, were added or were
//! removed between two commits, where each submodule's repository is
//! (`.gitmodules` at the release, or the base), and whether its own
//! history between the two recorded commits is available locally (a
//! checked-out submodule, or its clone under `.git/modules/`).

use super::diff::TreeDiffer;
use super::{EvidenceLimits, History, HistoryError, Interrupt};
use gix::bstr::ByteSlice;
use gix::hash::ObjectId;
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// A gitlink that differs between two commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitlinkMove {
    pub path: String,
    /// The submodule commit at the base; `None` when it was added.
    pub old: Option<ObjectId>,
    /// The submodule commit at the release; `None` when it was removed.
    pub new: Option<ObjectId>,
}

/// A submodule's own commits between the two recorded commits.
#[derive(Debug)]
pub enum SubmoduleHistory {
    /// Both commits are in a local clone: the commits in between, oldest
    /// first, with their evidence.
    Available { origin_url: Option<String>, commits: Vec<super::CommitEvidence> },
    /// The history cannot be read here, and why.
    Missing { reason: String },
}

/// What `.gitmodules` says about one submodule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubmoduleEntry {
    pub name: String,
    pub url: Option<String>,
}

impl History {
    /// The gitlinks that differ between commit `base` and commit `release`,
    /// by path.
    pub fn gitlink_moves(&self, base: ObjectId, release: ObjectId) -> Result<Vec<GitlinkMove>, HistoryError> {
        let (base_tree, release_tree) = (self.tree_of(base)?, self.tree_of(release)?);
        let mut differ = TreeDiffer::new(self)?;
        let changes = differ.changes(Some(base_tree), release_tree, false)?;
        let commit_of = |side: Option<super::diff::Side>| {
            side.filter(|side| side.kind == gix::objs::tree::EntryKind::Commit).map(|side| side.id)
        };
        Ok(changes
            .iter()
            .filter(|change| change.is_gitlink())
            .map(|change| GitlinkMove {
                path: change.path.clone(),
                old: commit_of(change.old),
                new: commit_of(change.new),
            })
            .filter(|moved| moved.old != moved.new)
            .collect())
    }

    /// The `.gitmodules` entries of `commit`'s tree, by submodule path.
    pub fn submodule_entries(&self, commit: ObjectId) -> Result<BTreeMap<String, SubmoduleEntry>, HistoryError> {
        let tree = self.tree_of(commit)?;
        let tree = self.repo.find_tree(tree).map_err(|error| self.read_error(format!("tree {tree}"), error))?;
        let Some(entry) =
            tree.find_entry(".gitmodules").filter(|entry| entry.mode().is_blob()).map(|entry| entry.object_id())
        else {
            return Ok(BTreeMap::new());
        };
        let blob = self.repo.find_blob(entry).map_err(|error| self.read_error(".gitmodules", error))?;
        Ok(parse_gitmodules(&blob.data))
    }

    /// The history of the submodule at `path` between `old` and `new`,
    /// read from its checkout or from `.git/modules/<name>`.
    pub fn submodule_history(
        &self,
        path: &str,
        name: Option<&str>,
        old: ObjectId,
        new: ObjectId,
        limits: EvidenceLimits,
        interrupt: &Interrupt,
    ) -> Result<SubmoduleHistory, HistoryError> {
        let Some(repository) = self.open_submodule(path, name) else {
            return Ok(SubmoduleHistory::Missing {
                reason: format!(
                    "the submodule {path} is not checked out and has no clone under .git/modules; run `git submodule update --init {path}` for its history"
                ),
            });
        };
        for (which, id) in [("base", old), ("release", new)] {
            if !repository.has_object(id) {
                return Ok(SubmoduleHistory::Missing {
                    reason: format!(
                        "the {which} commit {id} of submodule {path} is not in its local clone; run `git -C {path} fetch` for its history"
                    ),
                });
            }
        }
        let ids = repository.range_commits(Some(old), new)?;
        let commits = repository.commit_evidence(&ids, limits, interrupt)?;
        let origin_url = repository.origin_url();
        Ok(SubmoduleHistory::Available { origin_url, commits })
    }

    /// The submodule's own repository: its checkout, else its clone in
    /// the parent's `modules` folder. Paths that leave the repository are
    /// refused.
    fn open_submodule(&self, path: &str, name: Option<&str>) -> Option<History> {
        let inside = |relative: &str| {
            let relative = Path::new(relative);
            !relative.as_os_str().is_empty() && relative.components().all(|part| matches!(part, Component::Normal(_)))
        };
        if !inside(path) {
            return None;
        }
        let checkout = self.repo.workdir().map(|root| root.join(path));
        if let Some(checkout) = checkout.filter(|dir| dir.join(".git").exists())
            && let Ok(history) = History::open(&checkout)
        {
            return Some(history);
        }
        let modules = self.repo.common_dir().join("modules");
        [name, Some(path)]
            .into_iter()
            .flatten()
            .filter(|relative| inside(relative))
            .map(|relative| modules.join(relative))
            .find(|dir| dir.join("HEAD").is_file())
            .and_then(|dir| History::open(&dir).ok())
    }

    /// The fetch URL of the `origin` remote, if configured.
    pub fn origin_url(&self) -> Option<String> {
        let config = self.repo.config_snapshot();
        let url = config.string("remote.origin.url")?;
        let url = url.to_str_lossy().trim().to_string();
        (!url.is_empty()).then_some(url)
    }
}

/// `submodule.<name>.path` and `.url` from a `.gitmodules` file.
fn parse_gitmodules(data: &[u8]) -> BTreeMap<String, SubmoduleEntry> {
    let Ok(file) = gix::config::File::try_from(data.to_str_lossy().as_ref()) else { return BTreeMap::new() };
    let mut entries = BTreeMap::new();
    for section in file.sections_by_name("submodule").into_iter().flatten() {
        let Some(name) = section.header().subsection_name() else { continue };
        let Some(path) = section.value("path") else { continue };
        let url = section.value("url").map(|url| url.to_str_lossy().trim().to_string()).filter(|url| !url.is_empty());
        entries.insert(
            path.to_str_lossy().trim().to_string(),
            SubmoduleEntry { name: name.to_str_lossy().into_owned(), url },
        );
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitmodules_map_paths_to_names_and_urls() {
        let entries = parse_gitmodules(
            b"[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ../lib.git\n[submodule \"broken\"]\n\turl = x\n",
        );
        assert_eq!(entries.len(), 1);
        assert_eq!(entries["vendor/lib"], SubmoduleEntry { name: "lib".into(), url: Some("../lib.git".into()) });
    }
}

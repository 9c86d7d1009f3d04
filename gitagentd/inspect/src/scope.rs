//! The authoritative scope of a diff-mode inspection: every repository
//! component (the top-level repository and its initialized, registered
//! submodules, recursively), its base tree and its target state, the
//! changed paths between them, and the launch fingerprint.
//!
//! - uncommitted: the final worktree (staged, unstaged and untracked files
//!   under Git's ignore rules) against HEAD; a submodule is compared
//!   against the gitlink its superproject records (or its own HEAD when
//!   that commit is not available locally);
//! - staged: each component's index against its base;
//! - a commit range (`--base`, `--commit`): one commit's tree against
//!   another's, in the top-level repository only (gitlinks are ordinary
//!   changed entries).
//!
//! Untracked `.git-agent/` and `.omx/` runtime state is never in scope.

use super::git::{self, Blob, Flat, GitEnv, GitError};
use git_agent_shared::task_record::RepositoryFingerprint;
use gix::hash::ObjectId;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// Untracked directories that hold git-agent's and other agents' runtime
/// state; tracked files under these names stay in scope.
const PRIVATE_DIRS: &[&str] = &[".git-agent", ".omx"];

/// Which state an inspection compares against its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Final worktree content: staged, unstaged and untracked.
    Worktree,
    /// The index.
    Index,
    /// A commit's tree (commit-range modes).
    Tree,
}

/// One repository of the workspace.
#[derive(Debug, Clone)]
pub struct Component {
    /// The path of this repository below the invocation root ("" for the
    /// top level).
    pub prefix: String,
    pub root: PathBuf,
    pub base_tree: ObjectId,
    /// The gitlink the superproject records in its base, for submodules.
    pub expected_base: Option<ObjectId>,
    /// The expected base commit is not in this clone: the base is the
    /// submodule's own HEAD instead.
    pub base_unavailable: bool,
    pub base: Flat,
    pub target: Flat,
    /// Index entries, for status letters.
    pub index: Flat,
    /// Paths whose target content comes from the worktree.
    pub from_worktree: BTreeSet<String>,
    /// Untracked paths.
    pub untracked: BTreeSet<String>,
    pub target_tree: ObjectId,
    /// Dirty initialized submodules: path → (HEAD commit, dirty state).
    pub dirty_submodules: BTreeMap<String, (Option<ObjectId>, ObjectId)>,
}

/// The whole workspace at one moment.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub target: Target,
    pub components: Vec<Component>,
}

/// A changed path of one component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The component's prefix.
    pub prefix: String,
    /// The path relative to the component.
    pub path: String,
    pub old: Option<Blob>,
    pub new: Option<Blob>,
    /// A submodule whose worktree is dirty at this gitlink.
    pub dirty: bool,
}

impl Change {
    /// The path relative to the invocation root.
    pub fn full_path(&self) -> String {
        prefixed(&self.prefix, &self.path)
    }

    pub fn is_gitlink(&self) -> bool {
        self.old.is_some_and(|blob| blob.is_gitlink()) || self.new.is_some_and(|blob| blob.is_gitlink())
    }
}

pub fn prefixed(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}/{path}"),
    }
}

/// The workspace of a commit range in the repository at `root`: the tree
/// of `target` against the tree of `base` (the empty tree for a root
/// commit).
pub fn collect_commits(
    root: &Path,
    base: Option<ObjectId>,
    target: ObjectId,
    git_env: &GitEnv,
) -> Result<Workspace, GitError> {
    let repo = git::open(root, git_env)?;
    let tree_of = |commit: ObjectId| {
        git::commit_tree(&repo, commit).ok_or_else(|| GitError::read(&repo, format!("commit {commit}"), "not a commit"))
    };
    let base_tree = match base {
        Some(commit) => tree_of(commit)?,
        None => ObjectId::empty_tree(repo.object_hash()),
    };
    let target_tree = tree_of(target)?;
    let target_entries = git::flatten_tree(&repo, target_tree)?;
    let component = Component {
        prefix: String::new(),
        root: git::workdir(&repo),
        base_tree,
        expected_base: None,
        base_unavailable: false,
        base: git::flatten_tree(&repo, base_tree)?,
        index: target_entries.clone(),
        target: target_entries,
        from_worktree: BTreeSet::new(),
        untracked: BTreeSet::new(),
        target_tree,
        dirty_submodules: BTreeMap::new(),
    };
    Ok(Workspace { target: Target::Tree, components: vec![component] })
}

/// Collects the workspace of the repository at `root`.
pub fn collect(root: &Path, target: Target, git_env: &GitEnv) -> Result<Workspace, GitError> {
    collect_in(git::open(root, git_env)?, target, git_env)
}

/// Collects the workspace of `repo`, opened with [`git::open`].
pub fn collect_in(repo: gix::Repository, target: Target, git_env: &GitEnv) -> Result<Workspace, GitError> {
    let base_tree = git::head_tree(&repo)?;
    let mut components = Vec::new();
    let mut visited = HashSet::new();
    collect_component(repo, String::new(), base_tree, None, false, target, git_env, &mut visited, &mut components)?;
    Ok(Workspace { target, components })
}

#[allow(clippy::too_many_arguments)]
fn collect_component(
    repo: gix::Repository,
    prefix: String,
    base_tree: ObjectId,
    expected_base: Option<ObjectId>,
    base_unavailable: bool,
    target_kind: Target,
    git_env: &GitEnv,
    visited: &mut HashSet<PathBuf>,
    out: &mut Vec<Component>,
) -> Result<(), GitError> {
    let root = git::workdir(&repo);
    let canonical = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
    if !visited.insert(canonical) {
        return Ok(());
    }
    let base = git::flatten_tree(&repo, base_tree)?;
    let index = read_index(&repo)?;
    let mut target = index.clone();
    let mut from_worktree = BTreeSet::new();
    let mut untracked = BTreeSet::new();
    if target_kind == Target::Worktree {
        apply_worktree(&repo, &root, &mut target, &mut from_worktree, &mut untracked)?;
    }

    // Expand initialized, registered submodules first: their state decides
    // this component's gitlinks and dirty-submodule state.
    let position = out.len();
    out.push(Component {
        prefix: prefix.clone(),
        root: root.clone(),
        base_tree,
        expected_base,
        base_unavailable,
        base: Flat::new(),
        target: Flat::new(),
        index: Flat::new(),
        from_worktree: BTreeSet::new(),
        untracked: BTreeSet::new(),
        target_tree: base_tree,
        dirty_submodules: BTreeMap::new(),
    });
    let mut dirty_submodules = BTreeMap::new();
    for submodule in initialized_submodules(&repo, &root, &base, &index) {
        let Ok(sub_repo) = git::open(&submodule.root, git_env) else { continue };
        let sub_head = git::head_commit(&sub_repo);
        let (sub_base, unavailable) = match submodule.expected.and_then(|commit| git::commit_tree(&sub_repo, commit)) {
            Some(tree) => (tree, false),
            None => (git::head_tree(&sub_repo)?, submodule.expected.is_some()),
        };
        let sub_prefix = prefixed(&prefix, &submodule.path);
        let child_index = out.len();
        collect_component(
            sub_repo,
            sub_prefix,
            sub_base,
            submodule.expected,
            unavailable,
            target_kind,
            git_env,
            visited,
            out,
        )?;
        if target_kind == Target::Worktree {
            if let Some(head) = sub_head
                && let Some(entry) = target.get_mut(&submodule.path)
                && entry.is_gitlink()
            {
                entry.id = head;
            }
            if let Some(child) = out.get(child_index) {
                let sub_repo_head_tree = child_head_tree(child, git_env);
                let index_tree = git::open(&child.root, git_env).map(|repo| git::tree_id(&repo, &child.index)).ok();
                let dirty = Some(child.target_tree) != sub_repo_head_tree || index_tree != sub_repo_head_tree;
                if dirty {
                    dirty_submodules.insert(submodule.path.clone(), (sub_head, child.target_tree));
                }
            }
        }
    }
    let target_tree = git::tree_id(&repo, &target);
    out[position] = Component {
        prefix,
        root,
        base_tree,
        expected_base,
        base_unavailable,
        base,
        target,
        index,
        from_worktree,
        untracked,
        target_tree,
        dirty_submodules,
    };
    Ok(())
}

fn child_head_tree(child: &Component, git_env: &GitEnv) -> Option<ObjectId> {
    let repo = git::open(&child.root, git_env).ok()?;
    git::head_tree(&repo).ok()
}

fn read_index(repo: &gix::Repository) -> Result<Flat, GitError> {
    let index = repo.index_or_empty().map_err(|error| GitError::read(repo, "the index", error))?;
    let mut flat = Flat::new();
    for entry in index.entries() {
        if entry.stage_raw() != 0 {
            continue;
        }
        let Some(mode) = entry.mode.to_tree_entry_mode() else { continue };
        let path = git_agent_shared::quote::utf8_or_quoted(entry.path(&index)).into_owned();
        flat.insert(path, Blob { mode, id: entry.id });
    }
    Ok(flat)
}

fn is_private_untracked(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts.iter().any(|part| PRIVATE_DIRS.contains(part))
}

/// Applies the worktree to `target`: modified, deleted and conflicted index
/// entries take the worktree's content, and untracked files (ignore rules
/// applied before descending) are added.
fn apply_worktree(
    repo: &gix::Repository,
    root: &Path,
    target: &mut Flat,
    from_worktree: &mut BTreeSet<String>,
    untracked: &mut BTreeSet<String>,
) -> Result<(), GitError> {
    use gix::status::index_worktree::Item;
    use gix::status::plumbing::index_as_worktree::{Change as EntryChange, EntryStatus};
    let status = repo
        .status(gix::progress::Discard)
        .map_err(|error| GitError::read(repo, "the worktree status", error))?
        .untracked_files(gix::status::UntrackedFiles::Files)
        .index_worktree_submodules(None)
        .index_worktree_rewrites(None)
        .into_index_worktree_iter(Vec::<gix::bstr::BString>::new())
        .map_err(|error| GitError::read(repo, "the worktree status", error))?;
    let mut reread = BTreeSet::new();
    for item in status {
        let item = item.map_err(|error| GitError::read(repo, "the worktree status", error))?;
        match item {
            Item::Modification { rela_path, status, entry, .. } => {
                let path = git_agent_shared::quote::utf8_or_quoted(&rela_path).into_owned();
                if entry.mode.is_submodule() {
                    continue;
                }
                match status {
                    EntryStatus::NeedsUpdate(_) => {}
                    EntryStatus::Change(EntryChange::Removed) => {
                        target.remove(&path);
                        from_worktree.insert(path);
                    }
                    EntryStatus::Change(EntryChange::SubmoduleModification(_)) => {}
                    EntryStatus::Change(_) | EntryStatus::Conflict { .. } | EntryStatus::IntentToAdd => {
                        reread.insert(path);
                    }
                }
            }
            Item::DirectoryContents { entry, .. } => {
                if entry.status != gix::dir::entry::Status::Untracked {
                    continue;
                }
                let is_file =
                    matches!(entry.disk_kind, Some(gix::dir::entry::Kind::File | gix::dir::entry::Kind::Symlink));
                let path = git_agent_shared::quote::utf8_or_quoted(&entry.rela_path).into_owned();
                if !is_file || is_private_untracked(&path) {
                    continue;
                }
                untracked.insert(path.clone());
                reread.insert(path);
            }
            Item::Rewrite { .. } => {}
        }
    }
    for path in reread {
        match git::worktree_blob(repo, root, &path)? {
            Some(blob) => {
                target.insert(path.clone(), blob);
            }
            None => {
                target.remove(&path);
            }
        }
        from_worktree.insert(path);
    }
    Ok(())
}

struct InitializedSubmodule {
    path: String,
    root: PathBuf,
    expected: Option<ObjectId>,
}

/// Initialized, registered submodules of `repo` with a clean local path: a
/// gitlink in the base or the index, a `submodule.<name>` section in the
/// repository's configuration, a checkout that is a repository of its own,
/// and no symbolic link leading outside the superproject.
fn initialized_submodules(repo: &gix::Repository, root: &Path, base: &Flat, index: &Flat) -> Vec<InitializedSubmodule> {
    let Ok(Some(submodules)) = repo.submodules() else { return Vec::new() };
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut out = Vec::new();
    for submodule in submodules {
        let Ok(path) = submodule.path() else { continue };
        let path = git_agent_shared::quote::utf8_or_quoted(path.as_ref()).into_owned();
        if !is_clean_nested_path(&path) {
            continue;
        }
        let gitlink = |flat: &Flat| flat.get(&path).is_some_and(Blob::is_gitlink);
        if !gitlink(base) && !gitlink(index) {
            continue;
        }
        let Ok(state) = submodule.state() else { continue };
        if !state.superproject_configuration || !state.repository_exists {
            continue;
        }
        let Ok(resolved) = std::fs::canonicalize(root.join(git_agent_shared::quote::key_path(&path))) else { continue };
        if resolved == canonical_root || !resolved.starts_with(&canonical_root) {
            continue;
        }
        // The checkout must be a repository whose own root is this path.
        if !root.join(&path).join(".git").exists() {
            continue;
        }
        let expected = base.get(&path).filter(|blob| blob.is_gitlink()).map(|blob| blob.id);
        out.push(InitializedSubmodule {
            path,
            root: root.join(resolved.strip_prefix(&canonical_root).unwrap_or(Path::new(""))),
            expected,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn is_clean_nested_path(path: &str) -> bool {
    gitagent_agent::tools::clean_relative(path).is_ok_and(|clean| !clean.is_empty() && clean == path)
}

impl Workspace {
    /// Every changed path of every component, in component order, each
    /// component's paths sorted.
    pub fn changes(&self) -> Vec<Change> {
        let mut changes = Vec::new();
        for component in &self.components {
            for (path, old, new) in git::union_entries(&component.base, &component.target) {
                let (old, new) = (old.copied(), new.copied());
                let dirty = !component.dirty_submodules.is_empty() && component.dirty_submodules.contains_key(path);
                if old != new || dirty {
                    changes.push(Change { prefix: component.prefix.clone(), path: path.clone(), old, new, dirty });
                }
            }
        }
        changes
    }

    /// The prefixes of every component, the top level ("") first.
    pub fn component_prefixes(&self) -> Vec<String> {
        self.components.iter().map(|component| component.prefix.clone()).collect()
    }

    /// The launch fingerprint: the top level's base and target trees and
    /// dirty submodules, plus a digest of every nested component.
    pub fn fingerprint(&self) -> RepositoryFingerprint {
        let Some(top) = self.components.first() else { return RepositoryFingerprint::default() };
        let mut fingerprint = component_fingerprint(top, self.target);
        if self.components.len() > 1 {
            let mut hasher = Sha256::new();
            for component in &self.components[1..] {
                let nested = component_fingerprint(component, self.target);
                hash_field(&mut hasher, &component.prefix);
                hash_field(&mut hasher, &component.expected_base.map(|id| id.to_string()).unwrap_or_default());
                hash_field(&mut hasher, &nested.base_tree);
                hash_field(&mut hasher, &nested.target_tree);
                hash_field(&mut hasher, &nested.dirty_submodules);
                hash_field(&mut hasher, if component.base_unavailable { "true" } else { "false" });
            }
            fingerprint.nested_repositories = hex(&hasher.finalize());
        }
        fingerprint
    }

    /// The component that owns `path` (relative to the invocation root)
    /// and the path relative to it.
    pub fn owner<'a>(&'a self, path: &'a str) -> (&'a Component, &'a str) {
        let mut best = (&self.components[0], path);
        for component in &self.components[1..] {
            if let Some(rest) = path.strip_prefix(component.prefix.as_str()).and_then(|rest| rest.strip_prefix('/'))
                && component.prefix.len() > best.0.prefix.len()
            {
                best = (component, rest);
            }
        }
        best
    }
}

fn component_fingerprint(component: &Component, target: Target) -> RepositoryFingerprint {
    let dirty_submodules = if target == Target::Worktree && !component.dirty_submodules.is_empty() {
        let mut hasher = Sha256::new();
        for (path, (head, state)) in &component.dirty_submodules {
            hash_field(&mut hasher, path);
            hash_field(&mut hasher, &component.base.get(path).map(|blob| blob.id.to_string()).unwrap_or_default());
            hash_field(&mut hasher, &head.map(|id| id.to_string()).unwrap_or_default());
            hash_field(&mut hasher, &state.to_string());
        }
        hex(&hasher.finalize())
    } else {
        String::new()
    };
    RepositoryFingerprint {
        base_tree: component.base_tree.to_string(),
        target_tree: component.target_tree.to_string(),
        dirty_submodules,
        nested_repositories: String::new(),
    }
}

fn hash_field(hasher: &mut Sha256, value: &str) {
    hasher.update(format!("{}:", value.len()).as_bytes());
    hasher.update(value.as_bytes());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Every repository component below `root` for a codebase inspection: the
/// top level and its initialized, registered submodules, recursively.
pub fn component_prefixes(root: &Path, git_env: &GitEnv) -> Result<Vec<String>, GitError> {
    let repo = git::open(root, git_env)?;
    let mut out = Vec::new();
    let mut visited = HashSet::new();
    walk_prefixes(repo, String::new(), git_env, &mut visited, &mut out)?;
    out.sort();
    Ok(out)
}

fn walk_prefixes(
    repo: gix::Repository,
    prefix: String,
    git_env: &GitEnv,
    visited: &mut HashSet<PathBuf>,
    out: &mut Vec<String>,
) -> Result<(), GitError> {
    let root = git::workdir(&repo);
    if !visited.insert(std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone())) {
        return Ok(());
    }
    out.push(prefix.clone());
    let base = git::flatten_tree(&repo, git::head_tree(&repo)?)?;
    let index = read_index(&repo)?;
    for submodule in initialized_submodules(&repo, &root, &base, &index) {
        if let Ok(sub) = git::open(&submodule.root, git_env) {
            walk_prefixes(sub, prefixed(&prefix, &submodule.path), git_env, visited, out)?;
        }
    }
    Ok(())
}

/// Writes the index of every component of `workspace` below `dest` (each
/// submodule under its prefix): regular and executable files only, never
/// symbolic links or gitlinks, and only clean relative paths. This is the
/// materialized index snapshot a staged review's static checks read.
pub fn materialize_index(workspace: &Workspace, git_env: &GitEnv, dest: &Path) -> Result<(), GitError> {
    use gix::objs::tree::EntryKind;
    use std::os::unix::fs::PermissionsExt;
    for component in &workspace.components {
        let repo = git::open(&component.root, git_env)?;
        for (path, blob) in &component.index {
            let executable = match blob.mode.kind() {
                EntryKind::Blob => false,
                EntryKind::BlobExecutable => true,
                EntryKind::Link | EntryKind::Commit | EntryKind::Tree => continue,
            };
            let full = prefixed(&component.prefix, path);
            if !is_clean_nested_path(&full) {
                continue;
            }
            let target = dest.join(&full);
            let write = |target: &Path| -> std::io::Result<()> {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(target, git::blob_bytes(&repo, blob.id).map_err(std::io::Error::other)?)?;
                let mode = if executable { 0o700 } else { 0o600 };
                std::fs::set_permissions(target, std::fs::Permissions::from_mode(mode))
            };
            write(&target).map_err(|source| GitError::Worktree { path: target.clone(), source })?;
        }
    }
    Ok(())
}

//! The gix layer of the inspections: opening repositories as the caller
//! would see them (their global excludes file, never the daemon's), reading
//! trees and blobs, hashing worktree content and building tree ids in
//! memory. Nothing here writes to a repository: tree ids are computed,
//! never stored.

use git_agent_shared::Environment;
use git_agent_shared::environment::vars;
use gix::bstr::{BStr, BString, ByteSlice};
use gix::hash::ObjectId;
use gix::objs::tree::{EntryKind, EntryMode};
use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Bound;
use std::path::{Path, PathBuf};

/// A file larger than this is hashed but never loaded for a diff (the
/// renderer counts it like binary content).
pub const MAX_DIFF_FILE_BYTES: u64 = gitagent_git::patch::MAX_TEXT_BYTES as u64;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{}", gitagent_git::identity::not_a_work_tree(path))]
    NotARepository { path: PathBuf },
    /// gix's message is shown as it is (`{source}`), which ends the
    /// rendered chain there.
    #[error("cannot open the git repository at {path}: {source}")]
    Open { path: PathBuf, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("cannot read {what} in the repository at {path}: {source}")]
    Read { path: PathBuf, what: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("cannot read {path}: {source}\nhint: check the file's permissions, or ignore it in .gitignore")]
    Worktree { path: PathBuf, source: std::io::Error },
    #[error(
        "cannot resolve {spec:?} to a commit in {path}: {source}\nhint: name a branch, tag or commit, such as main or HEAD~1"
    )]
    Revision { path: PathBuf, spec: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("{spec:?} and HEAD have no common ancestor in {path}\nhint: pass a base that shares history with HEAD")]
    NoMergeBase { path: PathBuf, spec: String },
}

impl GitError {
    pub fn read(
        repo: &gix::Repository,
        what: impl Into<String>,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        GitError::Read { path: workdir(repo), what: what.into(), source: error.into() }
    }
}

/// The caller's locations that Git's user-level configuration depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitEnv {
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
}

impl GitEnv {
    pub fn from_environment(env: &Environment) -> Self {
        Self { home: env.absolute_dir(vars::HOME), xdg_config_home: env.absolute_dir(vars::XDG_CONFIG_HOME) }
    }

    fn xdg_git_dir(&self) -> Option<PathBuf> {
        self.xdg_config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|home| home.join(".config")))
            .map(|base| base.join("git"))
    }

    /// The caller's global excludes file: `core.excludesFile` from the
    /// user-level configuration, else `$XDG_CONFIG_HOME/git/ignore`.
    pub fn global_excludes_file(&self, repository_root: &Path) -> Option<PathBuf> {
        let mut configured: Option<BString> = None;
        let candidates =
            [self.xdg_git_dir().map(|dir| dir.join("config")), self.home.as_ref().map(|h| h.join(".gitconfig"))];
        for path in candidates.into_iter().flatten() {
            let Ok(file) = gix::config::File::from_path_no_includes(path, gix::config::Source::User) else { continue };
            if let Some(value) = file.string("core.excludesFile") {
                configured = Some(value);
            }
        }
        match configured {
            Some(value) => {
                let value = value.to_str_lossy().into_owned();
                if value.trim().is_empty() {
                    return None;
                }
                Some(self.expand(&value, repository_root))
            }
            None => self.xdg_git_dir().map(|dir| dir.join("ignore")),
        }
    }

    fn expand(&self, value: &str, repository_root: &Path) -> PathBuf {
        if let Some(rest) = value.strip_prefix("~/")
            && let Some(home) = &self.home
        {
            return home.join(rest);
        }
        let path = PathBuf::from(value);
        if path.is_absolute() { path } else { repository_root.join(path) }
    }
}

/// Opens the repository whose worktree root is `root`, with the caller's
/// global excludes file and without the daemon's own environment.
pub fn open(root: &Path, git_env: &GitEnv) -> Result<gix::Repository, GitError> {
    let options = gix::open::Options::isolated().strict_config(false);
    let failed =
        |error: Box<dyn std::error::Error + Send + Sync>| GitError::Open { path: root.to_path_buf(), source: error };
    let mut repo = gix::open_opts(root, options).map_err(|error| failed(error.into()))?;
    let has_local = repo.config_snapshot().trusted_path("core.excludesFile").ok().flatten().is_some();
    if !has_local && let Some(excludes) = git_env.global_excludes_file(root) {
        let mut config = repo.config_snapshot_mut();
        let value = BString::from(excludes.to_string_lossy().into_owned());
        config.set_raw_value("core.excludesFile", value.as_bstr()).map_err(|error| failed(error.into()))?;
        config.commit().map_err(|error| failed(error.into()))?;
    }
    Ok(repo)
}

/// The worktree root of the repository containing `start`.
pub fn discover_root(start: &Path) -> Result<PathBuf, GitError> {
    gitagent_git::identity::find_repository_root(start)
        .ok_or_else(|| GitError::NotARepository { path: start.to_path_buf() })
}

pub fn workdir(repo: &gix::Repository) -> PathBuf {
    repo.workdir().map(Path::to_path_buf).unwrap_or_else(|| repo.git_dir().to_path_buf())
}

/// One entry of a flattened tree or index: what a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub mode: EntryMode,
    pub id: ObjectId,
}

impl Blob {
    pub fn is_gitlink(&self) -> bool {
        self.mode.is_commit()
    }

    pub fn mode_octal(&self) -> &'static str {
        match self.mode.kind() {
            EntryKind::Tree => "040000",
            EntryKind::Blob => "100644",
            EntryKind::BlobExecutable => "100755",
            EntryKind::Link => "120000",
            EntryKind::Commit => "160000",
        }
    }
}

/// path → blob for every non-tree entry below `tree`.
pub type Flat = BTreeMap<String, Blob>;

/// Every path of `old` or `new` in order, with its entry on each side: a
/// merge of the two sorted maps, without building their union.
pub fn union_entries<'a>(
    old: &'a Flat,
    new: &'a Flat,
) -> impl Iterator<Item = (&'a String, Option<&'a Blob>, Option<&'a Blob>)> + 'a {
    let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
    std::iter::from_fn(move || match (old.peek(), new.peek()) {
        (Some((a, _)), Some((b, _))) => match a.cmp(b) {
            std::cmp::Ordering::Less => old.next().map(|(path, blob)| (path, Some(blob), None)),
            std::cmp::Ordering::Greater => new.next().map(|(path, blob)| (path, None, Some(blob))),
            std::cmp::Ordering::Equal => {
                let (path, before) = old.next()?;
                let (_, after) = new.next()?;
                Some((path, Some(before), Some(after)))
            }
        },
        (Some(_), None) => old.next().map(|(path, blob)| (path, Some(blob), None)),
        (None, Some(_)) => new.next().map(|(path, blob)| (path, None, Some(blob))),
        (None, None) => None,
    })
}

/// The tree id of HEAD, or the empty tree on an unborn branch.
pub fn head_tree(repo: &gix::Repository) -> Result<ObjectId, GitError> {
    match repo.head_tree_id_or_empty() {
        Ok(id) => Ok(id.detach()),
        Err(error) => Err(GitError::read(repo, "HEAD", error)),
    }
}

/// The tree of commit `commit`, when the object database has it.
pub fn commit_tree(repo: &gix::Repository, commit: ObjectId) -> Option<ObjectId> {
    let object = repo.try_find_object(commit).ok()??;
    let commit = object.try_into_commit().ok()?;
    commit.tree_id().ok().map(gix::Id::detach)
}

/// The commit `spec` names (a branch, tag, `HEAD~2`, an id), peeled to
/// a commit.
pub fn resolve_commit(repo: &gix::Repository, spec: &str) -> Result<ObjectId, GitError> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| GitError::Revision {
        path: workdir(repo),
        spec: spec.to_string(),
        source,
    };
    // gix's error, unless an unborn HEAD or a shallow clone explains the
    // failure better.
    let id = repo.rev_parse_single(spec).map_err(|error| failed(gitagent_git::unresolved(repo, spec, error)))?;
    let object = id.object().map_err(|error| failed(error.into()))?;
    let commit = object.peel_to_commit().map_err(|error| failed(error.into()))?;
    Ok(commit.id)
}

/// The best common ancestor of `one` and `two`.
pub fn merge_base(repo: &gix::Repository, one: ObjectId, two: ObjectId, spec: &str) -> Result<ObjectId, GitError> {
    match repo.merge_base(one, two) {
        Ok(Some(id)) => Ok(id.detach()),
        Ok(None) => Err(GitError::NoMergeBase { path: workdir(repo), spec: spec.to_string() }),
        Err(error) => Err(GitError::read(repo, format!("the merge base of {spec} and HEAD"), error)),
    }
}

/// The first parent of `commit`, `None` for a root commit.
pub fn first_parent(repo: &gix::Repository, commit: ObjectId) -> Result<Option<ObjectId>, GitError> {
    let commit = repo.find_commit(commit).map_err(|error| GitError::read(repo, format!("commit {commit}"), error))?;
    Ok(commit.parent_ids().next().map(gix::Id::detach))
}

/// The commit HEAD points at, if any.
pub fn head_commit(repo: &gix::Repository) -> Option<ObjectId> {
    repo.head_id().ok().map(gix::Id::detach)
}

/// Every non-tree entry below `tree`, keyed by slash-separated path (its
/// key, `git_agent_shared::quote`).
pub fn flatten_tree(repo: &gix::Repository, tree: ObjectId) -> Result<Flat, GitError> {
    let mut flat = Flat::new();
    if tree == ObjectId::empty_tree(repo.object_hash()) {
        return Ok(flat);
    }
    let mut pending = vec![(Vec::new(), tree)];
    while let Some((prefix, id)) = pending.pop() {
        let object = repo.find_object(id).map_err(|error| GitError::read(repo, format!("tree {id}"), error))?;
        let tree = object.try_into_tree().map_err(|error| GitError::read(repo, format!("tree {id}"), error))?;
        let decoded = tree.decode().map_err(|error| GitError::read(repo, format!("tree {id}"), error))?;
        for entry in &decoded.entries {
            let path = join(&prefix, entry.filename);
            if entry.mode.is_tree() {
                pending.push((path, entry.oid.to_owned()));
            } else {
                let key = git_agent_shared::quote::utf8_or_quoted(&path).into_owned();
                flat.insert(key, Blob { mode: entry.mode, id: entry.oid.to_owned() });
            }
        }
    }
    Ok(flat)
}

/// `prefix/name` as bytes (`name` alone at the root).
fn join(prefix: &[u8], name: &BStr) -> Vec<u8> {
    if prefix.is_empty() { name.to_vec() } else { [prefix, b"/", name.as_ref()].concat() }
}

/// The content of blob `id`.
pub fn blob_bytes(repo: &gix::Repository, id: ObjectId) -> Result<Vec<u8>, GitError> {
    let object = repo.find_object(id).map_err(|error| GitError::read(repo, format!("blob {id}"), error))?;
    Ok(object.detach().data)
}

/// The id `content` would have as a blob.
pub fn blob_id(repo: &gix::Repository, content: &[u8]) -> ObjectId {
    gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, content)
        .unwrap_or_else(|_| ObjectId::null(repo.object_hash()))
}

/// A worktree file as a blob: its mode and the id of its content (the
/// link target for a symbolic link). Returns `None` for what Git does not
/// track (directories, sockets, missing paths).
pub fn worktree_blob(repo: &gix::Repository, root: &Path, relative: &str) -> Result<Option<Blob>, GitError> {
    let path = root.join(git_agent_shared::quote::key_path(relative));
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(GitError::Worktree { path, source }),
    };
    if metadata.file_type().is_symlink() {
        let target = std::fs::read_link(&path).map_err(|source| GitError::Worktree { path: path.clone(), source })?;
        let bytes = target.as_os_str().as_encoded_bytes();
        return Ok(Some(Blob { mode: EntryKind::Link.into(), id: blob_id(repo, bytes) }));
    }
    if !metadata.is_file() {
        return Ok(None);
    }
    use std::os::unix::fs::PermissionsExt;
    let executable = metadata.permissions().mode() & 0o111 != 0;
    let mode = if executable { EntryKind::BlobExecutable } else { EntryKind::Blob };
    let id = hash_file(repo, &path, metadata.len())?;
    Ok(Some(Blob { mode: mode.into(), id }))
}

fn hash_file(repo: &gix::Repository, path: &Path, size: u64) -> Result<ObjectId, GitError> {
    let mut file =
        std::fs::File::open(path).map_err(|source| GitError::Worktree { path: path.to_path_buf(), source })?;
    let mut hasher = gix::hash::hasher(repo.object_hash());
    hasher.update(&gix::objs::encode::loose_header(gix::objs::Kind::Blob, size));
    let mut buffer = vec![0u8; 64 * 1024];
    let mut read_total = 0u64;
    loop {
        let read = file.read(&mut buffer).map_err(|source| GitError::Worktree { path: path.to_path_buf(), source })?;
        if read == 0 {
            break;
        }
        read_total += read as u64;
        hasher.update(&buffer[..read]);
    }
    if read_total != size {
        // The file changed while it was read; hash what is there now.
        let content = std::fs::read(path).map_err(|source| GitError::Worktree { path: path.to_path_buf(), source })?;
        return Ok(blob_id(repo, &content));
    }
    Ok(hasher.try_finalize().unwrap_or_else(|_| ObjectId::null(repo.object_hash())))
}

/// What a side of a diff holds, loaded for display: `None` when the file
/// is too large to show.
pub fn worktree_bytes(root: &Path, relative: &str, blob: &Blob) -> Result<Option<Vec<u8>>, GitError> {
    let path = root.join(git_agent_shared::quote::key_path(relative));
    if blob.mode.is_link() {
        let target = std::fs::read_link(&path).map_err(|source| GitError::Worktree { path, source })?;
        return Ok(Some(target.as_os_str().as_encoded_bytes().to_vec()));
    }
    let metadata =
        std::fs::symlink_metadata(&path).map_err(|source| GitError::Worktree { path: path.clone(), source })?;
    if metadata.len() > MAX_DIFF_FILE_BYTES {
        return Ok(None);
    }
    std::fs::read(&path).map(Some).map_err(|source| GitError::Worktree { path, source })
}

/// The id of the tree that holds exactly `entries`, computed in memory.
pub fn tree_id(repo: &gix::Repository, entries: &Flat) -> ObjectId {
    let hash = repo.object_hash();
    // Group paths by directory, deepest first, so each tree's subtrees are
    // known before it is hashed.
    let mut dirs: BTreeMap<String, Vec<gix::objs::tree::Entry>> = BTreeMap::new();
    dirs.entry(String::new()).or_default();
    for (path, blob) in entries {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        dirs.entry(dir.to_string()).or_default().push(gix::objs::tree::Entry {
            mode: blob.mode,
            filename: name.into(),
            oid: blob.id,
        });
        let mut parent = dir;
        while !parent.is_empty() {
            let grand = parent.rsplit_once('/').map_or("", |(grand, _)| grand);
            dirs.entry(grand.to_string()).or_default();
            parent = grand;
        }
    }
    let mut order: Vec<String> = dirs.keys().cloned().collect();
    order.sort_by_key(|dir| std::cmp::Reverse(if dir.is_empty() { 0 } else { dir.matches('/').count() + 1 }));
    let mut ids: BTreeMap<String, ObjectId> = BTreeMap::new();
    for dir in order {
        let mut tree_entries = dirs.remove(&dir).unwrap_or_default();
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        // Deeper folders are hashed first and leave `ids` once their parent
        // is, so the folders below this one form one sorted run there.
        let children: Vec<String> = ids
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(child, _)| child.starts_with(prefix.as_str()))
            .filter(|(child, _)| is_direct_child(&prefix, child))
            .map(|(child, _)| child.clone())
            .collect();
        for child in children {
            let Some(id) = ids.remove(&child) else { continue };
            let name = &child[prefix.len()..];
            tree_entries.push(gix::objs::tree::Entry { mode: EntryKind::Tree.into(), filename: name.into(), oid: id });
        }
        tree_entries.sort();
        let tree = gix::objs::Tree { entries: tree_entries };
        let mut bytes = Vec::new();
        let id = match gix::objs::WriteTo::write_to(&tree, &mut bytes) {
            Ok(()) => {
                gix::objs::compute_hash(hash, gix::objs::Kind::Tree, &bytes).unwrap_or_else(|_| ObjectId::null(hash))
            }
            Err(_) => ObjectId::null(hash),
        };
        ids.insert(dir, id);
    }
    ids.remove("").unwrap_or_else(|| ObjectId::empty_tree(hash))
}

fn is_direct_child(prefix: &str, child: &str) -> bool {
    !child.is_empty() && child.starts_with(prefix) && !child[prefix.len()..].contains('/') && child.len() > prefix.len()
}

/// The summaries of the commits in `new` that are not in `old`, newest
/// first, at most `limit`; `None` when the history is not available.
pub fn commit_summaries(
    repo: &gix::Repository,
    old: ObjectId,
    new: ObjectId,
    limit: usize,
) -> Option<Vec<(String, String)>> {
    let walk = repo.rev_walk([new]).with_hidden([old]).all().ok()?;
    let mut out = Vec::new();
    for info in walk.take(limit) {
        let info = info.ok()?;
        let commit = info.object().ok()?;
        let summary =
            commit.message().ok().map(|message| message.summary().to_str_lossy().into_owned()).unwrap_or_default();
        out.push((info.id.to_hex_with_len(7).to_string(), summary));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::Fixture;
    use git_agent_shared::error_chain;
    use std::error::Error as _;

    #[test]
    fn an_unopenable_repository_keeps_gix_error_and_reads_as_before() {
        let fixture = Fixture::new();
        let plain = fixture.dir.path().join("home");
        let error = open(&plain, &fixture.env()).unwrap_err();
        let cause = error.source().expect("gix's error is the cause");
        let gix_error = cause.downcast_ref::<gix::Error>().expect("a gix open error");
        let before = format!("cannot open the git repository at {}: {gix_error}", plain.display());
        assert_eq!(error.to_string(), before);
        assert_eq!(error_chain::render(&error), before);
    }

    #[test]
    fn an_unknown_revision_keeps_gix_error_and_an_unborn_head_its_explanation() {
        let fixture = Fixture::new();
        let repo = open(&fixture.repo(), &fixture.env()).unwrap();
        let error = resolve_commit(&repo, "main").unwrap_err();
        assert!(error.source().is_some_and(|cause| cause.to_string() == "the repository has no commit yet"));
        fixture.write("a.txt", "a\n");
        fixture.commit_all("initial");
        let repo = open(&fixture.repo(), &fixture.env()).unwrap();
        let error = resolve_commit(&repo, "no-such-branch").unwrap_err();
        let cause = error.source().expect("gix's error is the cause");
        let gix_error = cause.downcast_ref::<gix::Error>().expect("a gix rev-parse error");
        let before = format!(
            "cannot resolve \"no-such-branch\" to a commit in {}: {gix_error}\nhint: name a branch, tag or commit, such as main or HEAD~1",
            workdir(&repo).display()
        );
        assert_eq!(error_chain::render(&error), before);
        let missing = ObjectId::from_hex(b"0123456789012345678901234567890123456789").unwrap();
        let error = blob_bytes(&repo, missing).unwrap_err();
        assert!(error.source().is_some_and(|cause| cause.downcast_ref::<gix::Error>().is_some()));
        assert_eq!(error_chain::render(&error), error.to_string());
        assert!(error.to_string().starts_with(&format!("cannot read blob {missing} in the repository at ")));
    }
}

//! The dedicated sync repository: `~/.git-agent/index-sync/<sha256 of the
//! remote's identity>/`, owned entirely by git-agent.
//!
//! Every operation starts from the remote's current tip: fetch (gix, the
//! transports and credentials rules of `search --remote`), stage the tip's
//! tree, apply this machine's additions, commit once on top of the tip, push.
//! A push rejected as non-fast-forward means another machine pushed first:
//! fetch again and replay the same additions on the new tip (pull with
//! rebase semantics; the merge rules of [`super::merge`] decide
//! compatibility), then push again.
//!
//! The repository is worked on through Git objects only (trees are read and
//! built in the object database, never checked out), so the tree that is
//! validated is exactly the tree that is committed and pushed. An empty
//! remote is initialized on `main`; any other default branch the remote's
//! `HEAD` names is kept. `commit.gpgSign=false` is persisted in this
//! repository's own config before the first commit.
//!
//! Push is the one place the Git executable is used for sync: gix 0.90 has
//! no push. `git push --porcelain` runs through [`crate::subprocess`] with
//! the invocation's filtered environment, `GIT_TERMINAL_PROMPT=0`, no
//! credential helper, and the same batch-mode SSH command as fetches.

use super::FormatError;
use super::catalog;
use super::keys::{self, Digest};
use super::manifest::{self, SyncRecord, Target};
use super::merge::{self, PackCatalog, PackSlot};
use super::pack::{self, Pack};
use super::schema::{self, SchemaVersion};
use super::tree::{self, TreeEntry, TreeRules};
use git_agent_shared::{Environment, error_chain, giturl, private_fs};
use gitagent_search::source::remote::{self, Remote};
use gix::ObjectId;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The branch an empty remote is initialized on.
pub const DEFAULT_BRANCH: &str = "main";
const TRACKING_PREFIX: &str = "refs/remotes/origin/";
/// This machine's last commit until a push (or a replay) carried it to
/// the remote: a run that stopped between commit and push leaves it set.
const PENDING_REF: &str = "refs/git-agent/pending";
const COMMITTER_NAME: &str = "git-agent";
const COMMITTER_EMAIL: &str = "git-agent@localhost";

/// Why the sync repository could not be used. Texts carry the sanitized
/// URL only.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("cannot use the index sync repository at {}: {source}", dir.display())]
    Io { dir: PathBuf, source: std::io::Error },
    /// A message from git, its URLs sanitized.
    #[error("index sync repository {}: {message}", dir.display())]
    Git { dir: PathBuf, message: String },
    /// gix's error on the local sync repository, written out (`{source}`).
    #[error("index sync repository {}: {source}", dir.display())]
    Repository { dir: PathBuf, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("fetch index.remote {remote}: {message}")]
    Fetch { remote: String, message: String },
    #[error("push index.remote {remote}: {message}")]
    Push { remote: String, message: String },
    #[error("push index.remote {remote}: another machine pushed first")]
    Rejected { remote: String },
    #[error("push index.remote {remote}: still rejected after {attempts} attempts\nhint: run the command again")]
    Contended { remote: String, attempts: usize },
    #[error("the index sync was cancelled")]
    Cancelled,
    #[error("git is not on PATH; index.remote pushes need it")]
    GitMissing,
    #[error("the remote's index schema changed to v{0} while syncing\nhint: run the command again")]
    SchemaChanged(u64),
}

/// `~/.git-agent/index-sync/<sha256(identity of the remote)>`.
pub fn sync_dir(metadata_root: &Path, remote_url: &str) -> PathBuf {
    let identity = giturl::identity(remote_url, Path::new("/"));
    metadata_root.join("index-sync").join(keys::hex(&keys::origin_key(&identity)))
}

/// One opened sync repository.
pub struct SyncRepo {
    remote: Remote,
    dir: PathBuf,
    repo: gix::Repository,
}

impl std::fmt::Debug for SyncRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncRepo").field("remote", &self.remote).field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// The remote's state after a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTip {
    pub branch: String,
    /// `None` for an empty remote (or an unborn default branch).
    pub commit: Option<ObjectId>,
}

impl SyncRepo {
    /// Opens (creating on first use) the sync repository of `remote` at `dir`.
    pub fn open(remote: Remote, dir: PathBuf) -> Result<Self, SyncError> {
        let io = |source| SyncError::Io { dir: dir.clone(), source };
        if let Some(parent) = dir.parent() {
            private_fs::ensure_private_dir(parent).map_err(io)?;
        }
        private_fs::ensure_private_dir(&dir).map_err(io)?;
        let git = |source: Box<dyn std::error::Error + Send + Sync>| SyncError::Repository { dir: dir.clone(), source };
        if !dir.join(".git").join("HEAD").is_file() {
            gix::init(&dir).map_err(|error| git(error.into()))?;
        }
        persist_unsigned_commits(&dir.join(".git").join("config")).map_err(io)?;
        let options = gix::open::Options::isolated().strict_config(false);
        let mut repo = gix::open_opts(&dir, options).map_err(|error| git(error.into()))?;
        let mut config = repo.config_snapshot_mut();
        // Ref updates need no reflog and no identity from the user's
        // configuration (which an isolated open does not read anyway).
        config
            .set_value(&gix::config::tree::Core::SSH_COMMAND, remote.ssh_client())
            .and_then(|_| config.set_value(&gix::config::tree::Core::LOG_ALL_REF_UPDATES, "false"))
            .and_then(|_| config.set_value(&gix::config::tree::User::NAME, COMMITTER_NAME))
            .and_then(|_| config.set_value(&gix::config::tree::User::EMAIL, COMMITTER_EMAIL))
            .map_err(|error| git(error.into()))?;
        config.commit().map_err(|error| git(error.into()))?;
        Ok(Self { remote, dir, repo })
    }

    /// Opens the sync repository at `dir` only if it exists, for reading:
    /// nothing on disk is created or rewritten (a dry run leaves every byte
    /// and mtime as it was).
    pub fn open_existing_read_only(remote: Remote, dir: PathBuf) -> Result<Option<Self>, SyncError> {
        if !dir.join(".git").join("HEAD").is_file() {
            return Ok(None);
        }
        let options = gix::open::Options::isolated().strict_config(false);
        let repo = gix::open_opts(&dir, options)
            .map_err(|source| SyncError::Repository { dir: dir.clone(), source: source.into() })?;
        Ok(Some(Self { remote, dir, repo }))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn git_error(&self, message: impl std::fmt::Display) -> SyncError {
        SyncError::Git { dir: self.dir.clone(), message: self.remote.sanitize_text(&message.to_string()) }
    }

    /// Fetches every branch into `refs/remotes/origin/*` and reports the
    /// remote's default branch and its tip.
    pub fn fetch(&self, interrupt: &AtomicBool) -> Result<RemoteTip, SyncError> {
        self.fetch_reporting(interrupt, &NoTransferReport)
    }

    /// [`Self::fetch`], reporting the growing transfer totals to `reporter`
    /// with the sanitized URL (the renderer of `search --remote`).
    pub fn fetch_reporting(
        &self,
        interrupt: &AtomicBool,
        reporter: &dyn remote::FetchReporter,
    ) -> Result<RemoteTip, SyncError> {
        use gix::remote::Direction;
        remote::install_tls_provider();
        let failed = |message: String| SyncError::Fetch {
            remote: self.remote.sanitized.clone(),
            message: self.remote.sanitize_text(&message),
        };
        let url = gix::url::parse(gix::bstr::BStr::new(self.remote.raw_url())).map_err(|e| failed(e.to_string()))?;
        let handle = self
            .repo
            .remote_at(url.clone())
            .map_err(|error| failed(error.to_string()))?
            .with_fetch_tags(gix::remote::fetch::Tags::None)
            .with_refspecs(["+refs/heads/*:refs/remotes/origin/*"], Direction::Fetch)
            .map_err(|error| failed(error.to_string()))?;
        let account = url.user().zip(url.password()).map(|(user, password)| (user.to_string(), password.to_string()));
        // The invocation's proxies and CA locations, never the daemon's own
        // environment (the same client `search --remote` configures).
        let transport_options =
            self.remote.transport_options(&self.repo, &url).map_err(|error| failed(error.to_string()))?;
        let mut connection = handle
            .connect(Direction::Fetch)
            .map_err(|error| failed(error_chain::render(&error)))?
            .with_credentials(move |action| remote::credentials(action, account.as_ref()));
        if let Some(options) = transport_options {
            connection = connection.with_transport_options(options);
        }
        let options =
            gix::remote::ref_map::Options { prefix_from_spec_as_filter_on_remote: false, ..Default::default() };
        let prepare = connection
            .prepare_fetch(gix::progress::Discard, options)
            .map_err(|error| failed(error_chain::render(&error)))?;
        let refs = &prepare.ref_map().remote_refs;
        let branch = default_branch(refs);
        let has_branches = refs.iter().any(|reference| {
            let (name, _, _) = reference.unpack();
            name.starts_with(b"refs/heads/")
        });
        if has_branches {
            let sanitized = self.remote.sanitized.as_str();
            let totals = Arc::new(remote::Totals::default());
            let received = std::thread::scope(|scope| {
                scope.spawn(|| remote::report_transfer(&totals, sanitized, reporter));
                // Ends the reporting thread however the receive ends.
                let _finish = remote::FinishOnDrop(&totals);
                prepare.receive(remote::TransferProgress::new(Arc::clone(&totals)), interrupt)
            });
            received.map_err(|error| {
                if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                    SyncError::Cancelled
                } else {
                    failed(error_chain::render(&error))
                }
            })?;
            reporter.fetching(&totals.detail("received", sanitized));
        }
        let commit = self.tracking_tip(&branch)?;
        Ok(RemoteTip { branch, commit })
    }

    fn tracking_tip(&self, branch: &str) -> Result<Option<ObjectId>, SyncError> {
        let name = format!("{TRACKING_PREFIX}{branch}");
        let reference = self.repo.try_find_reference(name.as_str()).map_err(|error| self.git_error(error))?;
        match reference {
            Some(mut reference) => Ok(Some(reference.peel_to_id().map_err(|error| self.git_error(error))?.detach())),
            None => Ok(None),
        }
    }

    /// The tree of `tip` (empty for a new remote), validated.
    pub fn stage(&self, tip: &RemoteTip) -> Result<Staged<'_>, SyncError> {
        let (files, schema) = self.files_and_schema(tip.commit)?;
        let mut staged = Staged::from_files(self, tip, schema.unwrap_or(SchemaVersion::V1), files)?;
        staged.changed = schema.is_none();
        staged.tip_tree = true;
        Ok(staged)
    }

    /// Every blob of `commit`'s tree (none without a commit) and the schema
    /// its `schema.json` declares: `None` for an empty tree, which is how a
    /// new remote starts; a non-empty tree without `schema.json` fails.
    pub fn files_and_schema(
        &self,
        commit: Option<ObjectId>,
    ) -> Result<(BTreeMap<String, ObjectId>, Option<SchemaVersion>), SyncError> {
        let files = match commit {
            Some(commit) => self.tree_files(commit)?,
            None => BTreeMap::new(),
        };
        let schema = match files.get("schema.json") {
            Some(id) => Some(schema::parse(&self.blob(*id)?)?),
            None if files.is_empty() => None,
            None => return Err(FormatError::SchemaMissing.into()),
        };
        Ok((files, schema))
    }

    /// Every blob of `commit`'s tree by path; symlinks, submodules and
    /// executable files refuse the tree.
    pub fn tree_files(&self, commit: ObjectId) -> Result<BTreeMap<String, ObjectId>, SyncError> {
        let commit = self.repo.find_commit(commit).map_err(|error| self.git_error(error))?;
        let tree = commit.tree().map_err(|error| self.git_error(error))?;
        let mut recorder = gix::traverse::tree::Recorder::default();
        tree.traverse().breadthfirst(&mut recorder).map_err(|error| self.git_error(error))?;
        let mut files = BTreeMap::new();
        for entry in recorder.records {
            let path = entry.filepath.to_string();
            let shown = self.dir.join(&path);
            match entry.mode.kind() {
                gix::object::tree::EntryKind::Tree => continue,
                gix::object::tree::EntryKind::Blob => {}
                gix::object::tree::EntryKind::Link => return Err(FormatError::Symlink(shown).into()),
                _ => return Err(FormatError::NonRegular(shown).into()),
            }
            files.insert(path, entry.oid);
        }
        Ok(files)
    }

    pub fn blob(&self, id: ObjectId) -> Result<Vec<u8>, SyncError> {
        let object = self.repo.find_blob(id).map_err(|error| self.git_error(error))?;
        Ok(object.data.clone())
    }

    /// The logical size of a blob, read from its object header.
    pub fn blob_size(&self, id: ObjectId) -> Result<u64, SyncError> {
        Ok(self.repo.find_header(id).map_err(|error| self.git_error(error))?.size())
    }

    /// Points the local branch (and `HEAD`) at `commit` and, after a
    /// successful push, the tracking ref too; an unpushed commit is
    /// recorded as pending, a pushed one clears it.
    fn set_branch(&self, branch: &str, commit: ObjectId, pushed: bool) -> Result<(), SyncError> {
        use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
        let mut names = vec![format!("refs/heads/{branch}")];
        if pushed {
            names.push(format!("{TRACKING_PREFIX}{branch}"));
        } else {
            names.push(PENDING_REF.to_string());
        }
        let mut edits = Vec::new();
        for name in names {
            edits.push(RefEdit {
                change: Change::Update {
                    log: LogChange {
                        mode: RefLog::AndReference,
                        force_create_reflog: false,
                        message: "index sync".into(),
                    },
                    expected: PreviousValue::Any,
                    new: gix::refs::Target::Object(commit),
                },
                name: name.as_str().try_into().map_err(|error| self.git_error(error))?,
                deref: false,
            });
        }
        let head: gix::refs::FullName =
            format!("refs/heads/{branch}").as_str().try_into().map_err(|error| self.git_error(error))?;
        edits.push(RefEdit {
            change: Change::Update {
                log: LogChange { mode: RefLog::AndReference, force_create_reflog: false, message: "index sync".into() },
                expected: PreviousValue::Any,
                new: gix::refs::Target::Symbolic(head),
            },
            name: "HEAD".try_into().map_err(|error| self.git_error(error))?,
            deref: false,
        });
        self.repo.edit_references(edits).map_err(|error| self.git_error(error))?;
        if pushed {
            self.clear_pending()?;
        }
        Ok(())
    }

    /// Where the derived current-HEAD pack catalog is cached: below
    /// `.git`, never committed.
    pub fn catalog_path(&self) -> PathBuf {
        self.dir.join(".git").join("git-agent").join("pack-catalog")
    }

    /// Caches the catalog of the tree of `head` holding `packs` (each
    /// fully verified, or read from a catalog that was), replacing the
    /// previous HEAD's; atomic and private. A failure only costs the next
    /// run a rebuild, so it is logged, not returned.
    pub fn cache_catalog(&self, head: ObjectId, packs: &[catalog::ValidatedPack]) {
        let Some(head) = commit_bytes(head) else { return };
        let path = self.catalog_path();
        remove_abandoned_temporaries(&path);
        let bytes = catalog::encode(&catalog::PackTree::new(head, packs.to_vec()).catalog());
        if let Err(error) = private_fs::write_atomic(&path, &bytes) {
            tracing::warn!(dir = %self.dir.display(), %error, "cannot cache the index sync pack catalog");
        }
    }

    /// Records a successful push of `commit` to `branch`.
    pub fn pushed(&self, branch: &str, commit: ObjectId) -> Result<(), SyncError> {
        self.set_branch(branch, commit, true)
    }

    /// The commit this machine made but never pushed, if any.
    pub fn pending(&self) -> Result<Option<ObjectId>, SyncError> {
        let reference = self.repo.try_find_reference(PENDING_REF).map_err(|error| self.git_error(error))?;
        match reference {
            Some(mut reference) => Ok(Some(reference.peel_to_id().map_err(|error| self.git_error(error))?.detach())),
            None => Ok(None),
        }
    }

    /// Forgets the pending commit (its additions reached the remote).
    pub fn clear_pending(&self) -> Result<(), SyncError> {
        use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
        if self.pending()?.is_none() {
            return Ok(());
        }
        let edit = RefEdit {
            change: Change::Delete { expected: PreviousValue::Any, log: RefLog::AndReference },
            name: PENDING_REF.try_into().map_err(|error| self.git_error(error))?,
            deref: false,
        };
        self.repo.edit_reference(edit).map_err(|error| self.git_error(error))?;
        Ok(())
    }

    /// The files of `commit`'s first parent (none for a root commit): the
    /// tree a commit of this machine was made on.
    pub fn parent_files(&self, commit: ObjectId) -> Result<BTreeMap<String, ObjectId>, SyncError> {
        let parent = self
            .repo
            .find_commit(commit)
            .map_err(|error| self.git_error(error))?
            .parent_ids()
            .next()
            .map(|id| id.detach());
        match parent {
            Some(parent) => self.tree_files(parent),
            None => Ok(BTreeMap::new()),
        }
    }

    /// The indexes the pending `commit` added or changed relative to the
    /// tip it was made on, with their records (validated as an import):
    /// what a replay applies to the remote's current tip.
    pub fn pending_exports(&self, branch: &str, commit: ObjectId) -> Result<Vec<(Target, Vec<SyncRecord>)>, SyncError> {
        let before = self.parent_files(commit)?;
        let mut staged = self.stage(&RemoteTip { branch: branch.to_string(), commit: Some(commit) })?;
        let changed: Vec<String> = staged
            .files
            .iter()
            .filter(|(path, id)| path.starts_with("indexes/") && before.get(*path) != Some(*id))
            .map(|(path, _)| path.clone())
            .collect();
        let mut exports = Vec::with_capacity(changed.len());
        for path in changed {
            let Some(bytes) = staged.read(&path)? else { continue };
            let target = manifest::target_of(&bytes, &path)?;
            if let Some(records) = staged.import(&target)? {
                exports.push((target, records));
            }
        }
        Ok(exports)
    }
}

/// Removes the temporary files an interrupted catalog write left beside
/// `catalog` (the folder holds nothing else git-agent does not own; the
/// sync repository lock keeps writers apart).
fn remove_abandoned_temporaries(catalog: &Path) {
    let Some(dir) = catalog.parent() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        if is_file && entry.file_name().to_string_lossy().starts_with(".tmp-") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A catalog row set of one verified pack.
fn validated_pack(digest: Digest, entries: &[pack::PackEntry]) -> catalog::ValidatedPack {
    let entries = entries
        .iter()
        .map(|entry| catalog::SlotIdentity { embedding_key: entry.embedding_key, vector_digest: entry.payload_digest })
        .collect();
    catalog::ValidatedPack { digest, entries }
}

/// A SHA-1 commit id as the catalog stores it (`None` for another hash).
fn commit_bytes(id: ObjectId) -> Option<catalog::CommitId> {
    id.as_bytes().try_into().ok()
}

/// The remote's default branch: the target `HEAD` advertises, else `main`.
fn default_branch(refs: &[gix::protocol::handshake::Ref]) -> String {
    refs.iter()
        .find_map(|reference| match reference {
            gix::protocol::handshake::Ref::Symbolic { full_ref_name, target, .. }
            | gix::protocol::handshake::Ref::Unborn { full_ref_name, target }
                if full_ref_name == "HEAD" =>
            {
                target.to_string().strip_prefix("refs/heads/").map(str::to_string)
            }
            _ => None,
        })
        .unwrap_or_else(|| DEFAULT_BRANCH.to_string())
}

/// Writes `commit.gpgSign=false` into the sync repository's own config,
/// so a signing setup elsewhere never applies to generated commits.
fn persist_unsigned_commits(config_path: &Path) -> std::io::Result<()> {
    let mut file = gix::config::File::from_path_no_includes(config_path.to_path_buf(), gix::config::Source::Local)
        .map_err(std::io::Error::other)?;
    let current = file.raw_value("commit.gpgSign").ok().map(|value| value.to_string());
    if current.as_deref() == Some("false") {
        return Ok(());
    }
    file.set_raw_value("commit.gpgSign", "false").map_err(std::io::Error::other)?;
    let mut bytes = Vec::new();
    file.write_to(&mut bytes)?;
    private_fs::write_atomic(config_path, &bytes)
}

/// The remote tip's tree plus this machine's additions, not yet committed.
pub struct Staged<'repo> {
    repo: &'repo SyncRepo,
    base: RemoteTip,
    pub schema: SchemaVersion,
    files: BTreeMap<String, ObjectId>,
    changed: bool,
    /// Whether `files` started as exactly the tree of `base` (only then
    /// may the derived catalog cached for that commit describe it).
    tip_tree: bool,
    catalog: Option<PackCatalog>,
    /// Every pack of the staged tree with its entry table, once the
    /// catalog is known: what the catalog cached for the next commit
    /// describes.
    tree_packs: Option<Vec<catalog::ValidatedPack>>,
    packs: HashMap<Digest, Arc<Pack>>,
    /// Packs fully decoded and verified by this staging (tests count them).
    decoded_packs: usize,
}

impl<'repo> Staged<'repo> {
    /// Stages `files` (a tree of `schema`) on top of `base`; every path must
    /// be one the schema allows.
    pub fn from_files(
        repo: &'repo SyncRepo,
        base: &RemoteTip,
        schema: SchemaVersion,
        files: BTreeMap<String, ObjectId>,
    ) -> Result<Self, SyncError> {
        let staged = Staged {
            repo,
            base: base.clone(),
            schema,
            files,
            changed: false,
            tip_tree: false,
            catalog: None,
            tree_packs: None,
            packs: HashMap::new(),
            decoded_packs: 0,
        };
        staged.check()?;
        Ok(staged)
    }

    pub fn repo(&self) -> &'repo SyncRepo {
        self.repo
    }

    /// Every file of the staged tree and its blob.
    pub fn files(&self) -> &BTreeMap<String, ObjectId> {
        &self.files
    }

    /// Drops `path` from the staged tree.
    pub fn remove(&mut self, path: &str) {
        if self.files.remove(path).is_some() {
            self.changed = true;
            // The catalog describes the packs of the tree; rebuild it.
            self.catalog = None;
            self.tree_packs = None;
        }
    }

    /// Every path must be one the schema allows.
    fn check(&self) -> Result<(), SyncError> {
        let rules = TreeRules::Strict(self.schema);
        for path in self.files.keys() {
            // Directories are implied by the files; checking each prefix as
            // a directory keeps `a/b` from hiding under an allowed file name.
            let mut prefix = String::new();
            for component in path.split('/').collect::<Vec<_>>().split_last().map(|(_, dirs)| dirs).unwrap_or(&[]) {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(component);
                if tree::classify(&prefix, true, rules).is_none() {
                    return Err(FormatError::UnsafePath(self.repo.dir.join(&prefix)).into());
                }
            }
            if tree::classify(path, false, rules).is_none() {
                return Err(FormatError::UnsafePath(self.repo.dir.join(path)).into());
            }
        }
        Ok(())
    }

    pub fn branch(&self) -> &str {
        &self.base.branch
    }

    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, SyncError> {
        self.files.get(path).map(|id| self.repo.blob(*id)).transpose()
    }

    pub fn write(&mut self, path: String, bytes: &[u8]) -> Result<(), SyncError> {
        let id = self.repo.repo.write_blob(bytes).map_err(|error| self.repo.git_error(error))?.detach();
        if self.files.insert(path, id) != Some(id) {
            self.changed = true;
        }
        Ok(())
    }

    fn pack(&mut self, model_key: &Digest, digest: &Digest) -> Result<Arc<Pack>, SyncError> {
        if let Some(pack) = self.packs.get(digest) {
            return Ok(Arc::clone(pack));
        }
        let path = format!("packs/{}/{}.pack", keys::hex(model_key), keys::hex(digest));
        let bytes = self.read(&path)?.ok_or_else(|| FormatError::Pack {
            name: path.clone(),
            reason: "a manifest refers to it but the tree does not hold it".into(),
        })?;
        let pack = Arc::new(pack::decode(&bytes, Some(digest), &path)?);
        self.decoded_packs += 1;
        self.packs.insert(*digest, Arc::clone(&pack));
        Ok(pack)
    }

    /// How many packs this staging fully decoded and verified.
    #[cfg(test)]
    pub fn decoded_packs(&self) -> usize {
        self.decoded_packs
    }

    /// The (model key, digest) of every pack file of the tree.
    fn pack_files(&self) -> Vec<(Digest, Digest)> {
        self.files
            .keys()
            .filter_map(|path| match tree::classify(path, false, TreeRules::Strict(self.schema)) {
                Some(TreeEntry::Pack { model_key, digest }) => {
                    Some((keys::parse_digest(&model_key)?, keys::parse_digest(&digest)?))
                }
                _ => None,
            })
            .collect()
    }

    /// Every stored vector of the tree (schema v2), built once per
    /// staging: from the derived catalog cached for the tip when it
    /// describes this tree exactly, else from every pack, fully verified
    /// (and then cached for the tip).
    pub fn catalog(&mut self) -> Result<&mut PackCatalog, SyncError> {
        if self.catalog.is_none() {
            let catalog = match self.cached_catalog() {
                Some(catalog) => catalog,
                None => self.verify_packs()?,
            };
            self.catalog = Some(catalog);
        }
        Ok(self.catalog.get_or_insert_with(PackCatalog::default))
    }

    /// Decodes and verifies every pack of the tree (strict validation never
    /// trusts the cache) and returns their catalog. An unchanged tip tree's
    /// catalog is cached for the next run.
    pub fn verify_packs(&mut self) -> Result<PackCatalog, SyncError> {
        let mut catalog = PackCatalog::default();
        let mut validated = Vec::new();
        for (model_key, digest) in self.pack_files() {
            let pack = self.pack(&model_key, &digest)?;
            if pack.model_key != model_key {
                return Err(FormatError::Pack {
                    name: format!("packs/{}/{}.pack", keys::hex(&model_key), keys::hex(&digest)),
                    reason: "its model key does not match its directory".into(),
                }
                .into());
            }
            catalog.add_pack(digest, &pack);
            validated.push(validated_pack(digest, &pack.entries));
        }
        if self.tip_tree
            && !self.changed
            && let Some(head) = self.base.commit
        {
            self.repo.cache_catalog(head, &validated);
        }
        self.tree_packs = Some(validated);
        Ok(catalog)
    }

    /// The catalog cached for the tip, when this is still the tip's tree
    /// and the cache describes it exactly; `None` (rebuild) when it is
    /// missing, stale (another HEAD) or invalid in any way. The packs'
    /// entry tables are read to check it; their payloads were verified
    /// before the catalog was written.
    fn cached_catalog(&mut self) -> Option<PackCatalog> {
        if !self.tip_tree || self.changed || self.schema != SchemaVersion::V2 {
            return None;
        }
        let head = self.base.commit?;
        let bytes = std::fs::read(self.repo.catalog_path()).ok()?;
        let mut validated = Vec::new();
        for (model_key, digest) in self.pack_files() {
            let path = format!("packs/{}/{}.pack", keys::hex(&model_key), keys::hex(&digest));
            let table = pack::entry_table(&self.read(&path).ok()??, &path).ok()?;
            if table.model_key != model_key {
                return None;
            }
            validated.push(validated_pack(digest, &table.entries));
        }
        let tree = catalog::PackTree::new(commit_bytes(head)?, validated);
        let decoded = catalog::decode(&bytes, &tree).ok()?;
        let mut out = PackCatalog::default();
        for row in &decoded.slots {
            let pack = decoded.packs.get(row.pack as usize)?.digest;
            out.add(row.identity.embedding_key, row.identity.vector_digest, PackSlot { pack, slot: row.slot });
        }
        self.tree_packs = Some(tree.packs().to_vec());
        Some(out)
    }

    /// The shared records of `target`, validated, or `None` when the
    /// remote has none.
    pub fn import(&mut self, target: &Target) -> Result<Option<Vec<SyncRecord>>, SyncError> {
        let path = target.manifest_path(self.schema)?;
        let Some(bytes) = self.read(&path)? else {
            return Ok(None);
        };
        let records = match self.schema {
            SchemaVersion::V1 => manifest::decode_v1(&bytes, &path, target)?,
            SchemaVersion::V2 => {
                let model_key = target.model_key();
                let mut failure = None;
                let parsed = manifest::parse_v2(&bytes, &path)?;
                // Load every referenced pack first, so the resolver's
                // callback only reads the cache.
                for digest in &parsed.packs {
                    if let Some(digest) = keys::parse_digest(digest)
                        && let Err(error) = self.pack(&model_key, &digest)
                    {
                        failure = Some(error);
                        break;
                    }
                }
                if let Some(error) = failure {
                    return Err(error);
                }
                let packs = &self.packs;
                manifest::resolve_v2(&parsed, &path, target, &mut |digest| {
                    packs.get(digest).cloned().ok_or_else(|| FormatError::Pack {
                        name: keys::hex(digest),
                        reason: "a manifest refers to it but the tree does not hold it".into(),
                    })
                })?
            }
        };
        Ok(Some(records))
    }

    /// Adds `records` of `target` (merged with what the remote holds) and
    /// returns how many records the index now shares.
    pub fn export(&mut self, target: &Target, records: Vec<SyncRecord>) -> Result<usize, SyncError> {
        let existing = self.import(target)?.unwrap_or_default();
        let merged = merge::merge_strict(existing.clone(), records, &target.model, target.dimensions)?;
        let count = merged.len();
        if merged == existing {
            return Ok(count);
        }
        let path = target.manifest_path(self.schema)?;
        match self.schema {
            SchemaVersion::V1 => {
                let bytes = manifest::encode_v1(target, &merged)?;
                self.write(path, &bytes)?;
            }
            SchemaVersion::V2 => {
                let (manifest, new_packs) = merge::build_v2(target, merged, self.catalog()?)?;
                for new in new_packs {
                    if let Some(existing) = self.read(&new.path)? {
                        merge::merge_pack_file(&new.path, &existing, &new.bytes)?;
                        continue;
                    }
                    if let Some(packs) = &mut self.tree_packs
                        && let Some(digest) = new.path.rsplit('/').next().and_then(|name| name.strip_suffix(".pack"))
                        && let Some(digest) = keys::parse_digest(digest)
                    {
                        let table = pack::entry_table(&new.bytes, &new.path)?;
                        packs.push(validated_pack(digest, &table.entries));
                    }
                    self.write(new.path, &new.bytes)?;
                }
                self.write(path, &manifest::encode_v2(&manifest))?;
            }
        }
        Ok(count)
    }

    /// Commits the staged tree on top of the remote tip; `None` when
    /// nothing changed.
    pub fn commit(mut self, message: &str) -> Result<Option<ObjectId>, SyncError> {
        if !self.changed {
            return Ok(None);
        }
        if !self.files.contains_key("schema.json") {
            let bytes = schema::bytes(self.schema);
            self.write("schema.json".into(), &bytes)?;
        }
        self.check()?;
        let repo = &self.repo.repo;
        let git = |error: &dyn std::fmt::Display| self.repo.git_error(error);
        let mut editor = repo.edit_tree(ObjectId::empty_tree(repo.object_hash())).map_err(|e| git(&e))?;
        for (path, id) in &self.files {
            editor.upsert(path.as_str(), gix::object::tree::EntryKind::Blob, *id).map_err(|e| git(&e))?;
        }
        let tree = editor.write().map_err(|e| git(&e))?.detach();
        let signature = gix::actor::Signature {
            name: COMMITTER_NAME.into(),
            email: COMMITTER_EMAIL.into(),
            time: gix::date::Time::now_utc(),
        };
        let commit = gix::objs::Commit {
            message: message.into(),
            tree,
            author: signature.clone(),
            committer: signature,
            encoding: None,
            parents: self.base.commit.into_iter().collect(),
            extra_headers: Vec::new(),
        };
        let id = repo.write_object(&commit).map_err(|e| git(&e))?.detach();
        self.repo.set_branch(&self.base.branch, id, false)?;
        // The packs of the new tree are known: the next run, starting from
        // this commit once it is pushed, reads their catalog.
        if let Some(packs) = &self.tree_packs {
            self.repo.cache_catalog(id, packs);
        }
        Ok(Some(id))
    }
}

/// How a push ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    Pushed,
    /// Another machine pushed first (non-fast-forward).
    Rejected,
}

/// Whether a `git push --porcelain` status line says another machine's
/// push won: a non-fast-forward (`[rejected]`), or the server failing to
/// update the ref because a concurrent push updated (or created) it first.
/// Other server-side refusals (hooks, permissions) are errors.
fn lost_race(line: &str) -> bool {
    line.starts_with('!')
        && (line.contains("[rejected]")
            || (line.contains("[remote rejected]")
                && (line.contains("(failed to update ref)") || line.contains("(failed to lock)"))))
}

/// A fetch whose transfer nobody watches.
struct NoTransferReport;

impl remote::FetchReporter for NoTransferReport {
    fn fetching(&self, _detail: &str) {}
}

/// Hears sanitized transport progress details (fetch or push).
pub type TransferObserver = Arc<dyn Fn(String) + Send + Sync>;

/// Pushes `commit` to `branch` of the remote with `git push --porcelain`.
pub async fn push(
    repo_dir: &Path,
    remote: &Remote,
    env: &Environment,
    branch: &str,
    commit: ObjectId,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<PushOutcome, SyncError> {
    push_reporting(repo_dir, remote, env, branch, commit, Arc::new(|_| {}), cancel).await
}

/// [`push`], with `git push --progress` read while it runs: each of its
/// counting, compressing and writing updates reaches `observer` as a
/// detail naming the sanitized URL ([`push_progress_detail`]).
pub async fn push_reporting(
    repo_dir: &Path,
    remote: &Remote,
    env: &Environment,
    branch: &str,
    commit: ObjectId,
    observer: TransferObserver,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<PushOutcome, SyncError> {
    use gitagent_runtime::subprocess::{Helper, StreamObserver, Toolchain};
    let git = gitagent_runtime::subprocess::find_executable(env, "git").ok_or(SyncError::GitMissing)?;
    let failed =
        |message: String| SyncError::Push { remote: remote.sanitized.clone(), message: remote.sanitize_text(&message) };
    let refspec = format!("{commit}:refs/heads/{branch}");
    let mut helper = Helper::new(&git, env, Toolchain::None);
    for (name, value) in gitagent_provider::network::git_network_env(env) {
        helper = helper.env(&name, value);
    }
    let output = helper
        .current_dir(repo_dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "")
        .env("SSH_ASKPASS", "")
        .env("GIT_SSH_COMMAND", remote.ssh_client())
        .args(["-c", "credential.helper=", "-c", "core.hooksPath=/dev/null", "push", "--porcelain", "--no-verify"])
        .arg("--progress")
        .arg(remote.raw_url())
        .observe_stderr(StreamObserver(push_progress_reader(remote.sanitized.clone(), observer)))
        .arg(&refspec)
        .timeout(std::time::Duration::from_secs(600))
        .run(cancel)
        .await
        .map_err(|error| failed(error.to_string()))?;
    let stdout = output.stdout_text();
    if output.status.success() {
        return Ok(PushOutcome::Pushed);
    }
    if stdout.lines().any(lost_race) {
        return Ok(PushOutcome::Rejected);
    }
    let detail =
        [push_messages(&output.stderr_text()), stdout].into_iter().filter(|text| !text.is_empty()).collect::<Vec<_>>();
    Err(failed(detail.join("\n")))
}

/// A failed push's stderr without its progress updates (`\r`-separated
/// counters), which say nothing about the failure.
fn push_messages(stderr: &str) -> String {
    stderr
        .split(['\r', '\n'])
        .filter(|line| !line.trim().is_empty() && push_progress_detail(line, "").is_none())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Splits `git push --progress` stderr into its `\r`- or `\n`-ended
/// updates and hands each new detail to `observer`.
fn push_progress_reader(sanitized: String, observer: TransferObserver) -> Arc<gitagent_runtime::subprocess::StreamFn> {
    let state = std::sync::Mutex::new((Vec::<u8>::new(), String::new()));
    Arc::new(move |bytes: &[u8]| {
        let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (pending, last) = &mut *state;
        pending.extend_from_slice(bytes);
        while let Some(end) = pending.iter().position(|byte| *byte == b'\r' || *byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..end]);
            if let Some(detail) = push_progress_detail(&line, &sanitized)
                && detail != *last
            {
                last.clone_from(&detail);
                observer(detail);
            }
        }
    })
}

/// One `git push --progress` update as a transport detail: `Writing
/// objects:  40% (2/5), 1.20 KiB | 1.20 MiB/s` becomes `writing objects to
/// <sanitized URL>: 2/5 objects`. Only git's own counters are read (never
/// `remote:` lines, whose text the server chooses), so nothing but the
/// sanitized URL and numbers reaches the caller.
fn push_progress_detail(line: &str, sanitized: &str) -> Option<String> {
    const STAGES: [&str; 4] = ["Enumerating objects", "Counting objects", "Compressing objects", "Writing objects"];
    let (stage, rest) = line.trim().split_once(':')?;
    if !STAGES.contains(&stage) {
        return None;
    }
    let rest = rest.trim();
    let is_count = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    let counts = match rest.split_once('(').and_then(|(_, inner)| inner.split_once(')')) {
        Some((inner, _)) => {
            let (done, total) = inner.split_once('/')?;
            if !is_count(done) || !is_count(total) {
                return None;
            }
            format!("{done}/{total}")
        }
        None => {
            let count = rest.split(',').next().unwrap_or("").trim();
            if !is_count(count) {
                return None;
            }
            count.to_string()
        }
    };
    Some(format!("{} to {sanitized}: {counts} objects", stage.to_lowercase()))
}

#[cfg(test)]
mod push_status_tests {
    use super::lost_race;

    #[test]
    fn push_progress_becomes_sanitized_details() {
        let url = "https://git.example.com/index.git";
        let detail = |line| super::push_progress_detail(line, url);
        assert_eq!(detail("Enumerating objects: 5, done."), Some(format!("enumerating objects to {url}: 5 objects")));
        assert_eq!(
            detail("Counting objects: 100% (5/5), done."),
            Some(format!("counting objects to {url}: 5/5 objects"))
        );
        assert_eq!(
            detail("Writing objects:  40% (2/5), 1.20 KiB | 1.20 MiB/s"),
            Some(format!("writing objects to {url}: 2/5 objects"))
        );
        for other in ["remote: Writing objects: 1 (1/1)", "Total 5 (delta 0), reused 0", "To https://u:p@h/x", ""] {
            assert_eq!(detail(other), None, "{other:?}");
        }
        assert_eq!(detail("Writing objects: 40% (a/5)"), None);

        // Updates split across reads and separated by `\r` arrive once each.
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&seen);
        let reader =
            super::push_progress_reader(url.into(), std::sync::Arc::new(move |d| sink.lock().unwrap().push(d)));
        reader(b"Writing objects:  50% (1/2)\rWriting obj");
        reader(b"ects:  50% (1/2)\rWriting objects: 100% (2/2), done.\nTotal 2 (delta 0)\n");
        assert_eq!(
            *seen.lock().unwrap(),
            vec![format!("writing objects to {url}: 1/2 objects"), format!("writing objects to {url}: 2/2 objects")]
        );
        assert_eq!(
            super::push_messages("Writing objects: 100% (2/2)\rerror: failed to push\n"),
            "error: failed to push"
        );
    }

    #[test]
    fn a_push_gets_the_callers_proxies_and_ca_in_gits_spelling() {
        let env = git_agent_shared::Environment::new(
            [
                ("HTTP_PROXY", "http://127.0.0.1:3128"),
                ("https_proxy", "http://127.0.0.1:3129"),
                ("NO_PROXY", "example.com"),
                ("SSL_CERT_FILE", "/etc/ca.pem"),
                ("SSL_CERT_DIR", "relative/ignored"),
            ]
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .into(),
        );
        let mut got = gitagent_provider::network::git_network_env(&env);
        got.sort();
        let want = [
            ("GIT_SSL_CAINFO", "/etc/ca.pem"),
            ("http_proxy", "http://127.0.0.1:3128"),
            ("https_proxy", "http://127.0.0.1:3129"),
            ("no_proxy", "example.com"),
        ];
        assert_eq!(got, want.map(|(name, value)| (name.to_string(), value.to_string())));
    }

    #[test]
    fn a_lost_race_is_retried_and_a_refusal_is_not() {
        assert!(lost_race("!\tabc:refs/heads/main\t[rejected] (fetch first)"));
        assert!(lost_race("!\tabc:refs/heads/main\t[remote rejected] (failed to update ref)"));
        assert!(lost_race("!\tabc:refs/heads/main\t[remote rejected] (failed to lock)"));
        assert!(!lost_race("!\tabc:refs/heads/main\t[remote rejected] (pre-receive hook declined)"));
        assert!(!lost_race("*\tabc:refs/heads/main\t[new branch]"));
    }
}

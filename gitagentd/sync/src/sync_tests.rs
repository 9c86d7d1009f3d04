//! Two machines (two metadata roots) against one bare remote built with
//! the real `git`.

use super::*;
use crate::FormatError;
use crate::manifest::SyncRecord;
use crate::schema::SchemaVersion;
use git_agent_tests::git::git_trimmed;
use gitagent_search::index::store::IndexRecord;

pub const MODEL: &str = "text-embedding-3-small";

pub struct World {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub remote: PathBuf,
}

impl World {
    /// An empty bare remote whose default branch is `branch`.
    pub fn new(branch: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let remote = root.join("remote.git");
        std::fs::create_dir_all(&remote).unwrap();
        git_trimmed(&remote, &["init", "--bare", "-q", "-b", branch]);
        Self { _tmp: tmp, root, remote }
    }

    /// Machine `name`: its own home and metadata root.
    pub fn machine(&self, name: &str) -> Endpoint {
        let home = self.root.join(name);
        std::fs::create_dir_all(&home).unwrap();
        let env = Environment::new(
            [
                ("HOME".to_string(), home.display().to_string()),
                ("PATH".to_string(), std::env::var("PATH").unwrap_or_default()),
            ]
            .into_iter()
            .collect(),
        );
        Endpoint::new(self.remote.to_str().unwrap(), &home.join(".git-agent"), &env).unwrap()
    }

    /// Commits `files` to `branch` of the remote from a scratch clone.
    pub fn seed(&self, branch: &str, files: &[(&str, &[u8])]) {
        let work = self.root.join("seed");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        git_trimmed(&work, &["init", "-q", "-b", branch]);
        for (path, bytes) in files {
            let path = work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        git_trimmed(&work, &["add", "-A"]);
        git_trimmed(&work, &["commit", "-q", "-m", "seed"]);
        git_trimmed(&work, &["push", "-q", self.remote.to_str().unwrap(), &format!("HEAD:refs/heads/{branch}")]);
    }

    pub fn remote_files(&self, branch: &str) -> Vec<String> {
        let listing = git_trimmed(&self.remote, &["ls-tree", "-r", "--name-only", branch]);
        listing.lines().map(str::to_string).collect()
    }
}

pub fn target() -> Target {
    Target {
        origin: "github.com/acme/widgets".into(),
        revision: "0123456789abcdef0123456789abcdef01234567".into(),
        model: MODEL.into(),
        dimensions: 3,
    }
}

pub fn record(path: &str, input: &str, vector: [f32; 3]) -> SyncRecord {
    SyncRecord {
        chunk: IndexRecord {
            chunk_id: format!("{path}#1"),
            path: path.into(),
            source: "revision".into(),
            blob: "ab".repeat(20),
            start_line: 1,
            end_line: 4,
            content_hash: format!("c-{input}"),
            embedding_input_hash: input.into(),
            embedding_model: MODEL.into(),
            dimensions: 3,
            size: 10,
            ..IndexRecord::default()
        },
        vector: vector.to_vec(),
    }
}

pub fn export(records: Vec<SyncRecord>) -> Vec<Export> {
    vec![Export { target: target(), records }]
}

#[tokio::test]
async fn an_empty_remote_is_initialized_on_main_and_shared() {
    let world = World::new("main");
    let cancel = CancellationToken::new();
    let a = world.machine("a");
    let published = a.publish(export(vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]), &cancel).await.unwrap();
    assert_eq!(published, Published { indexes: 1, records: 1, skipped: Vec::new(), pushed: true });
    let manifest = target().manifest_path(SchemaVersion::V1).unwrap();
    assert_eq!(world.remote_files("main"), vec![manifest, "schema.json".to_string()]);
    assert_eq!(git_trimmed(&world.remote, &["show", "main:schema.json"]), "{\"version\":1}");
    assert_eq!(
        git_trimmed(&world.remote, &["log", "-1", "--format=%an <%ae>|%G?", "main"]),
        "git-agent <git-agent@localhost>|N"
    );
    assert_eq!(git_trimmed(&a.dir, &["config", "--local", "commit.gpgSign"]), "false");

    // Publishing the same records again changes nothing and pushes nothing.
    let again = a.publish(export(vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]), &cancel).await.unwrap();
    assert!(!again.pushed);
    assert_eq!(git_trimmed(&world.remote, &["rev-list", "--count", "main"]), "1");

    let b = world.machine("b");
    let imported = b.import(target(), &cancel).await.unwrap().unwrap();
    assert_eq!(imported, vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]);
    let other = Target { revision: "f".repeat(40), ..target() };
    assert_eq!(b.import(other, &cancel).await.unwrap(), None);
}

#[tokio::test]
async fn another_default_branch_is_kept() {
    let world = World::new("trunk");
    let cancel = CancellationToken::new();
    world.machine("a").publish(export(vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]), &cancel).await.unwrap();
    assert_eq!(git_trimmed(&world.remote, &["for-each-ref", "--format=%(refname)"]), "refs/heads/trunk");
    // A remote whose default branch already has history keeps it too.
    world.machine("b").publish(export(vec![record("src/b.rs", "hb", [3.0, 2.0, 1.0])]), &cancel).await.unwrap();
    assert_eq!(git_trimmed(&world.remote, &["rev-list", "--count", "trunk"]), "2");
}

#[tokio::test]
async fn a_rejected_push_is_replayed_on_the_new_tip() {
    let world = World::new("main");
    let cancel = CancellationToken::new();
    let (a, b) = (world.machine("a"), world.machine("b"));
    a.publish(export(vec![record("src/base.rs", "h0", [0.0, 0.0, 1.0])]), &cancel).await.unwrap();

    // A prepares a commit on the current tip, then B pushes first.
    let interrupt = AtomicBool::new(false);
    let repo = SyncRepo::open(a.remote.clone(), a.dir.clone()).unwrap();
    let tip = repo.fetch(&interrupt).unwrap();
    let mut staged = repo.stage(&tip).unwrap();
    staged.export(&target(), vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]).unwrap();
    let stale = staged.commit("stale").unwrap().unwrap();
    b.publish(export(vec![record("src/b.rs", "hb", [3.0, 2.0, 1.0])]), &cancel).await.unwrap();
    let outcome = repo::push(&a.dir, &a.remote, &a.env, &tip.branch, stale, &cancel).await.unwrap();
    assert_eq!(outcome, PushOutcome::Rejected);

    // The normal path refetches, replays A's records on B's commit, pushes.
    let published = a.publish(export(vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]), &cancel).await.unwrap();
    assert!(published.pushed);
    assert_eq!(git_trimmed(&world.remote, &["rev-list", "--count", "main"]), "3", "linear history, no merge commit");
    let shared = world.machine("c").import(target(), &cancel).await.unwrap().unwrap();
    let paths: Vec<&str> = shared.iter().map(|r| r.chunk.path.as_str()).collect();
    assert_eq!(paths, ["src/a.rs", "src/b.rs", "src/base.rs"]);
}

#[tokio::test]
async fn conflicting_payloads_fail_reconciliation() {
    let world = World::new("main");
    let cancel = CancellationToken::new();
    world.machine("a").publish(export(vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]), &cancel).await.unwrap();
    let error =
        world.machine("b").publish(export(vec![record("src/a.rs", "ha", [9.0, 9.0, 9.0])]), &cancel).await.unwrap_err();
    assert!(matches!(error, SyncError::Format(FormatError::ConflictingPayload { .. })), "{error}");
    assert_eq!(git_trimmed(&world.remote, &["rev-list", "--count", "main"]), "1", "nothing was pushed");
}

#[tokio::test]
async fn schema_v2_remotes_get_packs_and_manifests() {
    let world = World::new("main");
    world.seed("main", &[("schema.json", b"{\"version\":2}\n")]);
    let cancel = CancellationToken::new();
    let records = vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0]), record("src/b.rs", "hb", [3.0, 2.0, 1.0])];
    world.machine("a").publish(export(records.clone()), &cancel).await.unwrap();
    let files = world.remote_files("main");
    assert!(files.contains(&target().manifest_path(SchemaVersion::V2).unwrap()), "{files:?}");
    let model_key = crate::keys::hex(&target().model_key());
    assert_eq!(files.iter().filter(|path| path.starts_with(&format!("packs/{model_key}/"))).count(), 1);
    assert_eq!(world.machine("b").import(target(), &cancel).await.unwrap().unwrap(), records);
}

#[tokio::test]
async fn unsafe_and_unknown_trees_are_refused() {
    let cancel = CancellationToken::new();
    let world = World::new("main");
    world.seed("main", &[("schema.json", b"{\"version\":1}\n"), ("README.md", b"hello")]);
    let error = world.machine("a").import(target(), &cancel).await.unwrap_err();
    assert!(matches!(error, SyncError::Format(FormatError::UnsafePath(_))), "{error}");

    let world = World::new("main");
    world.seed("main", &[("schema.json", b"{\"version\":3}\n")]);
    let error = world.machine("a").publish(export(vec![]), &cancel).await.unwrap_err();
    assert!(matches!(error, SyncError::Format(FormatError::SchemaUnsupported(3))), "{error}");

    let world = World::new("main");
    world.seed("main", &[("indexes/x.json", b"{}")]);
    let error = world.machine("a").import(target(), &cancel).await.unwrap_err();
    assert!(matches!(error, SyncError::Format(FormatError::SchemaMissing)), "{error}");
}

#[tokio::test]
async fn the_pack_catalog_cached_for_the_tip_is_read_instead_of_every_pack_and_rebuilt_when_bad() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new("main");
    world.seed("main", &[("schema.json", b"{\"version\":2}\n")]);
    let cancel = CancellationToken::new();
    let (a, b) = (world.machine("a"), world.machine("b"));
    let second = Target { revision: "89abcdef0123456789abcdef0123456789abcdef".into(), ..target() };
    a.publish(export(vec![record("src/a.rs", "ha", [1.0, 2.0, 3.0])]), &cancel).await.unwrap();
    let records = vec![record("src/b.rs", "hb", [4.0, 5.0, 6.0])];
    a.publish(vec![Export { target: second, records }], &cancel).await.unwrap();

    let repo = SyncRepo::open(a.remote.clone(), a.dir.clone()).unwrap();
    let interrupt = AtomicBool::new(false);
    // What every pack, fully verified, says.
    let from_packs = |tip: &RemoteTip| {
        let mut staged = repo.stage(tip).unwrap();
        let catalog = staged.verify_packs().unwrap();
        (catalog, staged.decoded_packs())
    };
    // What a run's staging uses, and how many packs it decoded for it.
    let used = |tip: &RemoteTip| {
        let mut staged = repo.stage(tip).unwrap();
        let catalog = staged.catalog().unwrap().clone();
        (catalog, staged.decoded_packs())
    };
    let tip = repo.fetch(&interrupt).unwrap();
    let (expected, packs) = from_packs(&tip);
    assert!(packs >= 2 && expected.len() == 2, "{packs} packs, {} vectors", expected.len());
    // The last publication cached the catalog of the commit it pushed.
    let path = repo.catalog_path();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(used(&tip), (expected.clone(), 0), "the cached catalog is read, no pack is decoded");

    // Corrupt (a flipped byte, garbage, an empty file): rebuilt from the
    // packs, identical, and cached again.
    let valid = std::fs::read(&path).unwrap();
    let mut flipped = valid.clone();
    flipped[60] ^= 1;
    for bad in [flipped, b"not a catalog".to_vec(), Vec::new()] {
        std::fs::write(&path, &bad).unwrap();
        assert_eq!(used(&tip), (expected.clone(), packs), "a bad catalog is never trusted");
        assert_eq!(std::fs::read(&path).unwrap(), valid, "the rebuilt catalog is cached");
        assert_eq!(used(&tip), (expected.clone(), 0));
    }
    std::fs::remove_file(&path).unwrap();
    let abandoned = path.with_file_name(".tmp-interrupted");
    std::fs::write(&abandoned, b"half a catalog").unwrap();
    assert_eq!(used(&tip), (expected.clone(), packs), "a missing catalog is rebuilt");
    assert!(!abandoned.exists(), "an interrupted write's temporary file is removed");

    // Stale: another machine moved the tip; the catalog of the old HEAD is
    // not used for the new tree.
    let third = Target { revision: "fedcba9876543210fedcba9876543210fedcba98".into(), ..target() };
    b.publish(vec![Export { target: third, records: vec![record("src/c.rs", "hc", [7.0, 8.0, 9.0])] }], &cancel)
        .await
        .unwrap();
    let moved = repo.fetch(&interrupt).unwrap();
    assert_ne!(moved.commit, tip.commit);
    let (expected, packs) = from_packs(&moved);
    std::fs::write(&path, &valid).unwrap();
    assert_eq!(used(&moved), (expected.clone(), packs), "a stale catalog is rebuilt");
    assert_eq!(expected.len(), 3);
    assert_eq!(used(&moved), (expected, 0));
}

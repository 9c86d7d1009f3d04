//! `git-agent index migrate --to v2 [--dry-run]` with the real binaries:
//! machine A's v1 index remote becomes v2, machine B (another HOME) then
//! searches the revision without one embedding call.

use super::index_fixtures::{
    bare, clone, http_shared_project, machine, remote_bytes, remote_files, shared_project, stop_daemon,
};
use super::index_gc::tree_state;
use git_agent_tests::git::git_trimmed;

#[test]
fn a_v1_remote_migrates_to_v2_and_another_machine_searches_it_without_embedding() {
    let shared = tempfile::tempdir().unwrap();
    let (a, fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    // A new remote starts at schema v1: A's search publishes a v1 snapshot.
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();
    let records = fake_a.chunk_inputs().len();
    assert_eq!(git_trimmed(&index_remote, &["show", "main:schema.json"]), "{\"version\":1}");
    let v1_bytes = remote_bytes(&index_remote);

    // The dry run: exact summary, phases on stderr, no byte or mtime changed
    // on this machine or on the remote.
    stop_daemon(&a);
    let local_before = tree_state(&a.home().join(".git-agent"));
    let remote_before = tree_state(&index_remote);
    let dry = a.run_in(project_a.path(), &["index", "migrate", "--to", "v2", "--dry-run"]);
    let dry_stdout = dry.success();
    assert_eq!(tree_state(&a.home().join(".git-agent")), local_before, "the dry run changed local state");
    assert_eq!(tree_state(&index_remote), remote_before, "the dry run changed the remote");
    for phase in [
        "index migrate: fetching remote\n",
        "index migrate: scanning v1 snapshots\n",
        "index migrate: building indexes 0/1\n",
        "index migrate: building indexes 1/1 (100.0%, ",
    ] {
        assert!(dry.stderr.contains(phase), "{phase:?} missing: {}", dry.stderr);
    }
    assert!(!dry.stderr.contains("pushing"), "{}", dry.stderr);

    let run = a.run_in(project_a.path(), &["index", "migrate", "--to", "v2"]);
    let stdout = run.success();
    assert!(run.stderr.contains("index migrate: installing schema v2\n"), "{}", run.stderr);
    assert!(run.stderr.contains("index migrate: pushing remote\n"), "{}", run.stderr);
    let v2_bytes = remote_bytes(&index_remote);
    let files = remote_files(&index_remote);
    let packs = files.iter().filter(|path| path.starts_with("packs/") && path.ends_with(".pack")).count();
    assert_eq!(packs, 1, "{files:?}");
    assert_eq!(git_trimmed(&index_remote, &["show", "main:schema.json"]), "{\"version\":2}");
    // Every chunk of the project has its own input: one vector per record.
    assert_eq!(
        stdout,
        format!("migrated from=1 to=2 indexes=1 records={records} unique_vectors={records} packs=1 bytes={v2_bytes}\n")
    );
    assert_eq!(
        dry_stdout,
        format!(
            "migration from=1 to=2 indexes=1 records={records} unique_vectors={records} packs=1 current_bytes={v1_bytes} projected_bytes={v2_bytes} saved_bytes={} dry_run=true\n",
            i128::from(v1_bytes) - i128::from(v2_bytes)
        )
    );

    // Machine B imports the v2 records and embeds no chunk.
    let (b, fake_b) = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index"]).success();
    assert_eq!(fake_b.requests(), 0, "machine B embedded: {:?}", fake_b.inputs());
    let found =
        b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--min-score", "0.01", "harbour ships"]).success();
    assert!(found.contains("harbour.go"), "{found}");

    // Migrating a v2 remote again is a no-op that pushes nothing.
    let tip = git_trimmed(&index_remote, &["rev-parse", "main"]);
    for (args, expected) in [
        (
            &["index", "migrate", "--to", "v2"][..],
            "migrated from=2 to=2 indexes=0 records=0 unique_vectors=0 packs=0 bytes=0\n",
        ),
        (
            &["index", "migrate", "--to", "v2", "--dry-run"],
            "migration from=2 to=2 indexes=0 records=0 unique_vectors=0 packs=0 current_bytes=0 projected_bytes=0 saved_bytes=0 dry_run=true\n",
        ),
    ] {
        let run = b.run_in(project_b.path(), args);
        assert_eq!(run.success(), expected, "{args:?}");
        assert!(!run.stderr.contains("pushing"), "{}", run.stderr);
    }
    assert_eq!(git_trimmed(&index_remote, &["rev-parse", "main"]), tip);
}

#[test]
fn a_malformed_snapshot_fails_the_migration_with_its_path_and_publishes_nothing() {
    let shared = tempfile::tempdir().unwrap();
    let index_remote = shared.path().join("index.git");
    bare(&index_remote);
    // A v1 remote holding one snapshot that is not valid JSON.
    let scratch = shared.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    git_trimmed(&scratch, &["init", "-q", "-b", "main"]);
    let manifest = format!("indexes/{}/{}/0123456789abcdef.json", "a".repeat(64), "b".repeat(40));
    std::fs::create_dir_all(scratch.join(&manifest).parent().unwrap()).unwrap();
    std::fs::write(scratch.join(&manifest), "{\"version\":1,").unwrap();
    std::fs::write(scratch.join("schema.json"), "{\"version\":1}\n").unwrap();
    git_trimmed(&scratch, &["add", "-A"]);
    git_trimmed(&scratch, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "v1"]);
    git_trimmed(&scratch, &["push", "-q", index_remote.to_str().unwrap(), "main"]);
    let tip = git_trimmed(&index_remote, &["rev-parse", "main"]);

    let (env, _fake) = machine();
    env.run_in(&env.work(), &["config", "index.remote", index_remote.to_str().unwrap()]).success();
    for args in [&["index", "migrate", "--to", "v2"][..], &["index", "migrate", "--to", "v2", "--dry-run"]] {
        let run = env.run_in(&env.work(), args);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout_text(), "", "{args:?}");
        assert!(run.stderr.contains(&manifest) && run.stderr.contains("is invalid"), "{args:?}: {}", run.stderr);
    }
    assert_eq!(git_trimmed(&index_remote, &["rev-parse", "main"]), tip);
}

/// GC-005 through the real binaries: a pack no manifest refers to is
/// removed from index.remote; the dry run changes no byte or mtime on this
/// machine or on the remote and reports the same summary.
#[test]
fn index_gc_prunes_unreferenced_shared_packs_and_its_dry_run_changes_nothing() {
    let shared = tempfile::tempdir().unwrap();
    let index_remote = shared.path().join("index.git");
    bare(&index_remote);
    let (a, _fake) = machine();
    let project = a.repo("project");
    project.write("harbour.go", "package demo\n\n// Harbour docks ships.\nfunc Harbour() int {\n\treturn 1\n}\n");
    project.commit_all("one");
    project.git(&["remote", "add", "origin", "https://example.invalid/acme/harbour.git"]);
    a.run_in(project.path(), &["config", "index.remote", index_remote.to_str().unwrap()]).success();
    a.run_in(project.path(), &["search", "--rev", "HEAD", "--index"]).success();
    a.run_in(project.path(), &["index", "migrate", "--to", "v2"]).success();
    // Another client drops the only manifest: its pack becomes garbage.
    let files = remote_files(&index_remote);
    let manifest = files.iter().find(|path| path.starts_with("indexes/")).unwrap().clone();
    let pack = files.iter().find(|path| path.starts_with("packs/")).unwrap().clone();
    let scratch = shared.path().join("scratch");
    git_trimmed(shared.path(), &["clone", "-q", index_remote.to_str().unwrap(), scratch.to_str().unwrap()]);
    git_trimmed(&scratch, &["rm", "-q", &manifest]);
    git_trimmed(&scratch, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "drop"]);
    git_trimmed(&scratch, &["push", "-q", "origin", "HEAD:main"]);
    let current = remote_bytes(&index_remote);
    let pack_size = git_trimmed(&index_remote, &["cat-file", "-s", &format!("main:{pack}")]).parse::<u64>().unwrap();

    stop_daemon(&a);
    let local_before = tree_state(&a.home().join(".git-agent"));
    let remote_before = tree_state(&index_remote);
    let dry = a.run_in(project.path(), &["index", "gc", "--dry-run"]);
    let dry_stdout = dry.success();
    assert_eq!(tree_state(&a.home().join(".git-agent")), local_before, "the dry run changed local state");
    assert_eq!(tree_state(&index_remote), remote_before, "the dry run changed the remote");
    let remote_part = format!(
        " remote_configured=true remote_removed_packs=1 remote_current_bytes={current} remote_projected_bytes={} remote_saved_bytes={pack_size} dry_run=true\n",
        current - pack_size
    );
    assert!(dry_stdout.ends_with(&remote_part), "{dry_stdout}");
    for phase in
        ["index gc: fetching remote\n", "index gc: scanning shared indexes\n", "index gc: pruning shared packs\n"]
    {
        assert!(dry.stderr.contains(phase), "{phase:?}: {}", dry.stderr);
    }
    assert!(!dry.stderr.contains("pushing"), "{}", dry.stderr);

    let run = a.run_in(project.path(), &["index", "gc"]);
    assert_eq!(run.success().replace("dry_run=false", "dry_run=true"), dry_stdout);
    assert!(run.stderr.contains("index gc: pushing remote\n"), "{}", run.stderr);
    assert!(!remote_files(&index_remote).contains(&pack));
    assert_eq!(remote_bytes(&index_remote), current - pack_size);
    let again = a.run_in(project.path(), &["index", "gc"]).success();
    assert!(again.contains(" remote_configured=true remote_removed_packs=0 "), "{again}");
}

/// A search stopped by the `sync-push` fault point leaves its commit in the
/// sync repository unpushed; the migration reads it beside the fetched tip
/// and its push carries that index to the remote too.
#[test]
fn the_migration_carries_an_index_a_stopped_run_committed_but_never_pushed() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let project = clone(&a, &origin);
    project.write("anchor.go", "package demo\n\n// Anchor holds a ship in place.\nfunc Anchor() {}\n");
    project.commit_all("two");
    let (first, second) = (project.git(&["rev-parse", "HEAD~1"]), project.git(&["rev-parse", "HEAD"]));
    a.run_in(project.path(), &["config", "index.remote", index_remote.to_str().unwrap()]).success();
    a.run_in(project.path(), &["search", "--rev", "HEAD~1", "--index"]).success();
    stop_daemon(&a);
    let output = a
        .git_agent_in(project.path(), &["search", "--rev", "HEAD", "--index"])
        .env("GITAGENTD_SEARCH_CRASH_AT", "sync-push")
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let files = remote_files(&index_remote).join("\n");
    assert!(files.contains(first.trim()) && !files.contains(second.trim()), "{files}");

    // The preview counts the pending commit as the real run will, and
    // leaves this machine's sync repository and the remote untouched.
    let sync_dir = a.home().join(".git-agent").join("index-sync");
    let (local_before, remote_before) = (tree_state(&sync_dir), tree_state(&index_remote));
    let preview = a.run_in(project.path(), &["index", "migrate", "--to", "v2", "--dry-run"]).success();
    assert!(preview.starts_with("migration from=1 to=2 indexes=2 "), "{preview}");
    assert!(tree_state(&sync_dir) == local_before, "the dry run changed the sync repository");
    assert!(tree_state(&index_remote) == remote_before, "the dry run changed the remote");

    let stdout = a.run_in(project.path(), &["index", "migrate", "--to", "v2"]).success();
    assert!(stdout.starts_with("migrated from=1 to=2 indexes=2 "), "{stdout}");
    let files = remote_files(&index_remote).join("\n");
    assert_eq!(git_trimmed(&index_remote, &["show", "main:schema.json"]), "{\"version\":2}");
    assert!(files.contains(first.trim()) && files.contains(second.trim()), "{files}");
}

/// The terminal transcript of `args`: the progress part (every update
/// rewriting one line) and the stdout that follows the last clear.
fn on_terminal(env: &git_agent_tests::TestEnv, dir: &std::path::Path, args: &[&str]) -> (String, String) {
    let (code, terminal) = git_agent_tests::run_on_terminal(env.git_agent_in(dir, args));
    assert_eq!(code, Some(0), "{args:?}: {terminal:?}");
    let (progress, stdout) = terminal.rsplit_once("\r\x1b[2K").expect("progress was shown");
    assert!(!progress.contains('\n'), "{args:?}: a progress update ended a line: {terminal:?}");
    assert!(stdout.ends_with("\r\n") && stdout.matches('\n').count() == 1, "{args:?}: {terminal:?}");
    (progress.to_string(), stdout.to_string())
}

/// Migrate and gc's shared phase report fetch and push transport details
/// as index sync does: a bracketed suffix with the sanitized URL, one line
/// per update when redirected, one rewritten line on a terminal; the
/// password in index.remote never shows.
#[test]
fn migrate_and_gc_progress_show_sanitized_transport_details_and_never_the_credential() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake) = machine();
    let secret = "migrate-S3cret-word";
    let (origin, index_remote, server) = http_shared_project(&a, shared.path(), Some(&format!("writer:{secret}")));
    let url = server.url("index.git", Some(&format!("writer:{secret}")));
    let sanitized = server.url("index.git", None);
    assert!(!sanitized.contains(secret));
    let project = clone(&a, &origin);
    a.run_in(project.path(), &["config", "index.remote", &url]).success();
    a.run_in(project.path(), &["search", "--rev", "HEAD", "--index"]).success();

    // The dry run fetches into a new repository on a terminal.
    let (progress, stdout) = on_terminal(&a, project.path(), &["index", "migrate", "--to", "v2", "--dry-run"]);
    assert!(stdout.starts_with("migration from=1 to=2 indexes=1 "), "{stdout:?}");
    let fetched = format!("\r\x1b[2Kindex migrate: fetching remote [received objects from {sanitized}: ");
    assert!(progress.contains(&fetched), "{fetched:?} missing: {progress:?}");
    assert!(!progress.contains(secret) && !stdout.contains(secret), "the password leaked: {progress:?}");

    // The migration pushes; redirected, every update is its own line.
    let run = a.run_in(project.path(), &["index", "migrate", "--to", "v2"]);
    let stdout = run.success();
    assert!(stdout.starts_with("migrated from=1 to=2 indexes=1 "), "{stdout}");
    for line in [
        "index migrate: fetching remote\n".to_string(),
        "index migrate: pushing remote\n".to_string(),
        format!("index migrate: pushing remote [writing objects to {sanitized}: "),
    ] {
        assert!(run.stderr.contains(&line), "{line:?} missing:\n{}", run.stderr);
    }
    assert!(!run.stderr.contains('\x1b') && !run.stderr.contains('\r'), "{:?}", run.stderr);
    assert!(!run.stderr.contains(secret) && !stdout.contains(secret), "the password leaked:\n{}", run.stderr);
    assert_eq!(git_trimmed(&index_remote, &["show", "main:schema.json"]), "{\"version\":2}");

    // Another client drops the only manifest: gc has a pack to prune.
    let files = remote_files(&index_remote);
    let manifest = files.iter().find(|path| path.starts_with("indexes/")).unwrap().clone();
    let scratch = shared.path().join("scratch");
    git_trimmed(shared.path(), &["clone", "-q", index_remote.to_str().unwrap(), scratch.to_str().unwrap()]);
    git_trimmed(&scratch, &["rm", "-q", &manifest]);
    git_trimmed(&scratch, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "drop"]);
    git_trimmed(&scratch, &["push", "-q", "origin", "HEAD:main"]);

    let dry = a.run_in(project.path(), &["index", "gc", "--dry-run"]);
    let dry_stdout = dry.success();
    assert!(dry_stdout.contains(" remote_removed_packs=1 "), "{dry_stdout}");
    for line in [
        "index gc: fetching remote\n".to_string(),
        format!("index gc: fetching remote [received objects from {sanitized}: "),
    ] {
        assert!(dry.stderr.contains(&line), "{line:?} missing:\n{}", dry.stderr);
    }
    assert!(!dry.stderr.contains('\x1b') && !dry.stderr.contains('\r'), "{:?}", dry.stderr);
    assert!(!dry.stderr.contains(secret) && !dry_stdout.contains(secret), "the password leaked:\n{}", dry.stderr);

    let (progress, stdout) = on_terminal(&a, project.path(), &["index", "gc"]);
    assert!(stdout.contains(" remote_removed_packs=1 ") && stdout.ends_with("dry_run=false\r\n"), "{stdout:?}");
    for update in [
        format!("\r\x1b[2Kindex gc: fetching remote [received objects from {sanitized}: "),
        format!("\r\x1b[2Kindex gc: pushing remote [writing objects to {sanitized}: "),
    ] {
        assert!(progress.contains(&update), "{update:?} missing: {progress:?}");
    }
    assert!(!progress.contains(secret) && !stdout.contains(secret), "the password leaked: {progress:?}");
    assert!(!remote_files(&index_remote).iter().any(|path| path.starts_with("packs/")));
}

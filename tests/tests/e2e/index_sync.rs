//! `git-agent index sync` and searches confirmed against `index.remote`:
//! two machines (two isolated HOMEs) share one bare index remote.

use super::index_fixtures::{clone, http_shared_project, machine, remote_files, shared_project};
use git_agent_tests::git::git_trimmed;
use git_agent_tests::{GitRepo, TestEnv};
use std::path::Path;
use std::process::Command;

#[test]
fn machine_b_searches_a_revision_machine_a_synced_without_embedding_it() {
    let shared = tempfile::tempdir().unwrap();
    let (a, fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let commit = git_trimmed(&origin, &["rev-parse", "main"]);

    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    // A's search embeds the revision and publishes it after persisting.
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();
    let embedded_on_a = fake_a.chunk_inputs().len();
    assert!(embedded_on_a > 0);
    let files = git_trimmed(&index_remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(files.lines().any(|path| path.contains(&commit)), "{files}");
    assert!(files.lines().any(|path| path == "schema.json"), "{files}");

    // The explicit export finds the same index and changes nothing.
    let run = a.run_in(project_a.path(), &["index", "sync"]);
    assert_eq!(run.stdout_text(), format!("synced indexes=1 records={embedded_on_a} skipped=0\n"), "{}", run.stderr);
    assert!(run.stderr.contains("index sync: fetching remote\n"), "{}", run.stderr);
    assert!(run.stderr.contains("index sync: syncing indexes 1/1\n"), "{}", run.stderr);

    // Machine B: another HOME, same remote; its revision search embeds nothing.
    let (b, fake_b) = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index"]).success();
    assert_eq!(fake_b.requests(), 0, "machine B embedded: {:?}", fake_b.inputs());
    let stdout =
        b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--min-score", "0.01", "harbour ships"]).success();
    assert!(stdout.contains("harbour.go"), "{stdout}");
    assert!(fake_b.chunk_inputs().is_empty(), "only the query is embedded: {:?}", fake_b.chunk_inputs());
}

#[test]
fn index_sync_needs_index_remote_and_exact_usage() {
    let (env, _fake) = machine();
    let run = env.run_in(&env.work(), &["index", "sync"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("index.remote is not configured"), "{}", run.stderr);
    for (args, usage) in [
        (&["index", "gc", "--dry-run", "--dry-run"][..], "usage: git-agent index gc [--dry-run]\n"),
        (&["index", "gc", "--remote", "x"], "usage: git-agent index gc [--dry-run]\n"),
        (&["index", "migrate", "--to", "v3"], "usage: git-agent index migrate --to v2 [--dry-run]\n"),
        (&["index", "sync", "now"], "usage: git-agent index sync\n"),
    ] {
        let run = env.run_in(&env.work(), args);
        assert_eq!(run.code, Some(2), "{args:?}");
        assert_eq!(run.stderr, usage, "{args:?}");
        assert_eq!(run.stdout_text(), "");
    }
}

#[test]
fn conflicting_payloads_from_another_machine_fail_the_sync() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();

    // Machine B's embeddings differ (another vector for the same input):
    // its local index cannot merge with A's records. B indexes with no
    // remote configured, then syncs.
    let (b, fake_b) = machine();
    fake_b.set_mode(git_agent_tests::fake_embeddings::Mode::Constant);
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index"]).success();
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    let run = b.run_in(project_b.path(), &["index", "sync"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("conflicting vector payloads"), "{}", run.stderr);
    assert_eq!(run.stdout_text(), "");
}

/// Every blob of the index remote's `main` tree, by path.
fn remote_blobs(index_remote: &Path) -> Vec<(String, Vec<u8>)> {
    let listing = git_trimmed(index_remote, &["ls-tree", "-r", "main"]);
    listing
        .lines()
        .map(|line| {
            let (meta, path) = line.split_once('\t').unwrap();
            let id = meta.split_whitespace().nth(2).unwrap();
            let output = Command::new("git").args(["cat-file", "blob", id]).current_dir(index_remote).output().unwrap();
            assert!(output.status.success());
            (path.to_string(), output.stdout)
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
}

#[test]
fn a_filesystem_search_shares_the_committed_head_revision_and_never_the_dirty_tree() {
    let shared = tempfile::tempdir().unwrap();
    let (a, fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    // Dirty working tree: an untracked file and an unstaged edit.
    project_a
        .write("lighthouse_secret.go", "package demo\n\n// Lighthouse keeps a private lantern.\nfunc Lantern() {}\n");
    project_a.write("docs/guide.md", "# Guide\n\nhow ships enter the harbour\n\nunstaged beacon paragraph\n");
    let stdout = a.run_in(project_a.path(), &["search", "--min-score", "0.01", "lantern"]).success();
    assert!(stdout.contains("lighthouse_secret.go"), "the working tree is searched: {stdout}");
    assert!(fake_a.chunk_inputs().iter().any(|input| input.contains("Lantern")), "A embedded its dirty file");

    let commit = git_trimmed(&origin, &["rev-parse", "main"]);
    let blobs = remote_blobs(&index_remote);
    assert!(blobs.iter().any(|(path, _)| path.contains(&commit)), "HEAD's revision index is published");
    for (path, bytes) in &blobs {
        for private in [
            "lighthouse_secret",
            "Lantern",
            "unstaged beacon",
            project_a.path().to_str().unwrap(),
            a.home().to_str().unwrap(),
            "lantern",
        ] {
            assert!(!contains(bytes, private) && !path.contains(private), "{path} holds {private:?}");
        }
    }

    // Machine B's filesystem search of the same clean HEAD embeds nothing
    // but the query.
    let (b, fake_b) = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    let stdout = b.run_in(project_b.path(), &["search", "--min-score", "0.01", "harbour ships"]).success();
    assert!(stdout.contains("harbour.go"), "{stdout}");
    assert!(fake_b.chunk_inputs().is_empty(), "machine B embedded: {:?}", fake_b.chunk_inputs());
}

#[test]
fn a_search_merges_the_remote_records_into_an_existing_local_revision_index() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();

    // Machine B already has a partial index of the revision (only docs/),
    // built before index.remote was configured.
    let (b, fake_b) = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index", "--scope", "docs"]).success();
    let before = fake_b.chunk_inputs();
    assert!(!before.is_empty() && before.iter().all(|input| !input.contains("harbour.go")), "{before:?}");
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index"]).success();
    assert_eq!(fake_b.chunk_inputs(), before, "the remote's harbour.go records were merged, not embedded");
    let stdout = b
        .run_in(project_b.path(), &["search", "--rev", "HEAD", "--format", "brief", "--min-score", "0.01", "harbour"])
        .success();
    assert!(stdout.contains("harbour.go"), "{stdout}");
    assert!(stdout.contains("docs/guide.md"), "B's own records are kept: {stdout}");
}

/// The daemon's open descriptors on `path`.
fn open_descriptors(pid: u32, path: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    entries.flatten().filter(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == path)).count()
}

#[test]
fn overlapping_searches_share_one_confirmation_and_sequential_ones_fetch_again() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", index_remote.to_str().unwrap()]).success();
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();

    // Machine B reads the same index remote through `git daemon`, which
    // counts the fetches it serves.
    let daemon = git_agent_tests::git_servers::GitDaemon::start(shared.path());
    let (b, fake_b) = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["config", "index.remote", &daemon.url("index.git")]).success();
    let search = ["search", "--rev", "HEAD", "--index"];
    b.run_in(project_b.path(), &search).success();
    assert_eq!(daemon.requests(), 1, "one fetch confirms an import and its publication");
    b.run_in(project_b.path(), &search).success();
    assert_eq!(daemon.requests(), 2, "a sequential search never reuses an earlier confirmation");
    assert_eq!(fake_b.requests(), 0);

    // Two overlapping searches, both blocked behind the sync repository
    // lock (held here) before either observes the remote.
    let sync_root = b.home().join(".git-agent").join("index-sync");
    let lock_path = std::fs::read_dir(&sync_root)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|extension| extension == "lock"))
        .expect("the sync repository lock file");
    let lock = std::fs::File::open(&lock_path).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) }, 0);
    let pid = b.daemon_pid().expect("machine B's daemon");
    let spawn = || {
        b.git_agent_in(project_b.path(), &search)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn(), spawn());
    let waiting =
        git_agent_tests::wait_until(std::time::Duration::from_secs(30), || open_descriptors(pid, &lock_path) >= 2);
    assert!(waiting, "both searches wait on the sync repository lock");
    drop(lock);
    for child in [first, second] {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    assert_eq!(daemon.requests(), 3, "the overlapping searches fetched once in total");
}

#[test]
fn a_commit_a_stopped_run_never_pushed_is_replayed_first_by_the_next_search() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let project_a = clone(&a, &origin);
    project_a.write("anchor.go", "package demo\n\n// Anchor holds a ship in place.\nfunc Anchor() {}\n");
    project_a.commit_all("two");
    let first = project_a.git(&["rev-parse", "HEAD~1"]).trim().to_string();
    let second = project_a.git(&["rev-parse", "HEAD"]).trim().to_string();
    a.run_in(project_a.path(), &["config", "index.remote", index_remote.to_str().unwrap()]).success();

    // The daemon dies after committing HEAD~1's index in the sync
    // repository, before pushing it.
    let _ = a.gitagentd(&["stop"]).output();
    let output = a
        .git_agent_in(project_a.path(), &["search", "--rev", "HEAD~1", "--index"])
        .env("GITAGENTD_SEARCH_CRASH_AT", "sync-push")
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let heads = git_trimmed(&index_remote, &["for-each-ref", "refs/heads"]);
    assert_eq!(heads, "", "nothing reached the remote");

    // The next search, of another revision, first pushes the pending
    // commit, then publishes its own index.
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();
    let log = git_trimmed(&index_remote, &["log", "--reverse", "--format=%H", "main"]);
    let commits: Vec<&str> = log.lines().collect();
    assert_eq!(commits.len(), 2, "{log}");
    let replayed = git_trimmed(&index_remote, &["ls-tree", "-r", "--name-only", commits[0]]);
    assert!(replayed.contains(&first) && !replayed.contains(&second), "{replayed}");
    let current = git_trimmed(&index_remote, &["ls-tree", "-r", "--name-only", commits[1]]);
    assert!(current.contains(&first) && current.contains(&second), "{current}");
}

#[test]
fn concurrent_and_diverged_pushes_from_two_machines_reconcile() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let remote_arg = index_remote.to_str().unwrap();
    let (b, _fake_b) = machine();
    let (project_a, project_b) = (clone(&a, &origin), clone(&b, &origin));
    project_a.write("anchor.go", "package demo\n\n// Anchor holds a ship.\nfunc Anchor() {}\n");
    project_a.commit_all("a two");
    project_b.write("mast.go", "package demo\n\n// Mast carries the sails.\nfunc Mast() {}\n");
    project_b.commit_all("b two");
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    let revision = |project: &GitRepo, rev: &str| project.git(&["rev-parse", rev]).trim().to_string();
    let shared_files = || git_trimmed(&index_remote, &["ls-tree", "-r", "--name-only", "main"]);

    // Both machines publish at the same time; both succeed.
    let index = ["search", "--rev", "HEAD", "--index"];
    let spawn = |env: &TestEnv, project: &GitRepo| {
        env.git_agent_in(project.path(), &index)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (run_a, run_b) = (spawn(&a, &project_a), spawn(&b, &project_b));
    for child in [run_a, run_b] {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let files = shared_files();
    for rev in [revision(&project_a, "HEAD"), revision(&project_b, "HEAD")] {
        assert!(files.contains(&rev), "{rev} missing:\n{files}");
    }

    // A commits on the tip it saw and stops before pushing; B pushes
    // meanwhile; A's next search replays its commit on B's tip.
    let _ = a.gitagentd(&["stop"]).output();
    let output = a
        .git_agent_in(project_a.path(), &["search", "--rev", "HEAD~1", "--index"])
        .env("GITAGENTD_SEARCH_CRASH_AT", "sync-push")
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    project_b.write("keel.go", "package demo\n\n// Keel keeps the ship upright.\nfunc Keel() {}\n");
    project_b.commit_all("b three");
    b.run_in(project_b.path(), &index).success();
    a.run_in(project_a.path(), &index).success();
    let files = shared_files();
    for rev in [
        revision(&project_a, "HEAD~1"),
        revision(&project_a, "HEAD"),
        revision(&project_b, "HEAD~1"),
        revision(&project_b, "HEAD"),
    ] {
        assert!(files.contains(&rev), "{rev} missing:\n{files}");
    }
    assert_eq!(git_trimmed(&index_remote, &["rev-list", "--merges", "main"]), "", "linear history");
}

#[test]
fn index_sync_progress_shows_sanitized_transport_details_and_never_the_credential() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let secret = "sync-S3cret-word";
    let (origin, index_remote, server) = http_shared_project(&a, shared.path(), Some(&format!("writer:{secret}")));
    let url = server.url("index.git", Some(&format!("writer:{secret}")));
    let sanitized = server.url("index.git", None);
    // A publishes HEAD; B has indexed another revision locally, then syncs:
    // its fetch receives A's objects and its push writes its own.
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", &url]).success();
    a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index"]).success();
    let (b, _fake_b) = machine();
    let project_b = clone(&b, &origin);
    project_b.write("anchor.go", "package demo\n\n// Anchor holds a ship in place.\nfunc Anchor() {}\n");
    project_b.commit_all("b two");
    b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--index"]).success();
    b.run_in(project_b.path(), &["config", "index.remote", &url]).success();

    let run = b.run_in(project_b.path(), &["index", "sync"]);
    let stdout = run.success();
    assert!(stdout.starts_with("synced indexes=1 records="), "{stdout}");
    // Redirected stderr: one plain line per update, no ANSI sequences.
    for line in [
        "index sync: fetching remote\n".to_string(),
        format!("index sync: fetching remote [received objects from {sanitized}: "),
        "index sync: pushing remote\n".to_string(),
        format!("index sync: pushing remote [writing objects to {sanitized}: "),
    ] {
        assert!(run.stderr.contains(&line), "{line:?} missing:\n{}", run.stderr);
    }
    assert!(!run.stderr.contains('\x1b') && !run.stderr.contains('\r'), "{:?}", run.stderr);
    assert!(!run.stderr.contains(secret) && !stdout.contains(secret), "the password leaked:\n{}", run.stderr);
    let revision = project_b.git(&["rev-parse", "HEAD"]).trim().to_string();
    assert!(remote_files(&index_remote).iter().any(|path| path.contains(&revision)));
}

#[test]
fn index_sync_progress_on_a_terminal_is_one_rewritten_line_cleared_before_stdout() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let secret = "tty-S3cret-word";
    let (origin, _index_remote, server) = http_shared_project(&a, shared.path(), Some(&format!("writer:{secret}")));
    let url = server.url("index.git", Some(&format!("writer:{secret}")));
    let sanitized = server.url("index.git", None);
    let project = clone(&a, &origin);
    a.run_in(project.path(), &["search", "--rev", "HEAD", "--index"]).success();
    a.run_in(project.path(), &["config", "index.remote", &url]).success();

    let (code, terminal) = git_agent_tests::run_on_terminal(a.git_agent_in(project.path(), &["index", "sync"]));
    assert_eq!(code, Some(0), "{terminal:?}");
    // Every update rewrites the one line (`\r`, erase line); the last is
    // erased before the summary, which is the only text ending a line.
    let (progress, summary) = terminal.rsplit_once("\r\x1b[2K").expect("progress was shown");
    assert!(summary.starts_with("synced indexes=1 records="), "{terminal:?}");
    assert!(summary.ends_with(" skipped=0\r\n") && summary.matches('\n').count() == 1, "{terminal:?}");
    assert!(!progress.contains('\n'), "a progress update ended a line: {terminal:?}");
    for update in [
        "\r\x1b[2Kindex sync: fetching remote".to_string(),
        format!("\r\x1b[2Kindex sync: pushing remote [writing objects to {sanitized}: "),
    ] {
        assert!(progress.contains(&update), "{update:?} missing: {terminal:?}");
    }
    assert!(!terminal.contains(secret), "the password leaked: {terminal:?}");
}

#[test]
fn index_remote_fetches_and_pushes_go_through_the_callers_proxy() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let (origin, index_remote, server) = http_shared_project(&a, shared.path(), None);
    let url = server.url("index.git", None);
    let proxy = git_agent_tests::fake_proxy::FakeProxy::start();
    let project = clone(&a, &origin);
    // The daemon starts here, without the proxy in its own environment.
    a.run_in(project.path(), &["config", "index.remote", &url]).success();
    let output = a
        .git_agent_in(project.path(), &["search", "--rev", "HEAD", "--index"])
        .env("HTTP_PROXY", proxy.url())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let targets = proxy.targets();
    for service in ["git-upload-pack", "git-receive-pack"] {
        let via_proxy = targets.iter().any(|target| target.starts_with(&format!("{url}/info/refs?service={service}")));
        assert!(via_proxy, "{service} did not go through the caller's HTTP_PROXY: {targets:?}");
    }
    let commit = git_trimmed(&origin, &["rev-parse", "main"]);
    assert!(remote_files(&index_remote).iter().any(|path| path.contains(&commit)));
}

#[test]
fn an_https_index_remote_trusts_the_callers_ca_only() {
    let shared = tempfile::tempdir().unwrap();
    let (a, _fake_a) = machine();
    let (origin, index_remote, server) = http_shared_project(&a, shared.path(), None);
    let front = git_agent_tests::git_servers::TlsFront::start(server.address());
    let url = front.url("index.git", None);
    let ca = a.root().join("index-ca.pem");
    std::fs::write(&ca, front.ca_pem()).unwrap();
    let project = clone(&a, &origin);
    a.run_in(project.path(), &["config", "index.remote", &url]).success();
    let search = ["search", "--rev", "HEAD", "--index"];
    let refused = a.run_in(project.path(), &search);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(refused.stderr.to_lowercase().contains("certificate"), "{}", refused.stderr);

    // With the caller's CA the fetch (gix) and the push (git) both trust it.
    let output = a.git_agent_in(project.path(), &search).env("SSL_CERT_FILE", &ca).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let commit = git_trimmed(&origin, &["rev-parse", "main"]);
    assert!(remote_files(&index_remote).iter().any(|path| path.contains(&commit)));
}

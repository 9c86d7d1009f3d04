//! `git-agent search --remote`: the bare cache fetched from servers the
//! tests start on 127.0.0.1 (`file://`, `git://` through `git daemon`,
//! `http://` through `git http-backend`, `ssh://` through a throw-away
//! `sshd`), freshness measured by counting the servers' requests, failure
//! injection, credentials never written, and the listings.

use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
use git_agent_tests::git_servers::{GitDaemon, HttpGit, SshServer, TlsFront, bare_copy, push};
use git_agent_tests::{GitRepo, Run, TestEnv, wait_until};
use std::process::{Child, Stdio};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(30);

fn spawn(env: &TestEnv, args: &[&str]) -> Child {
    env.git_agent_in(&env.work(), args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}
use serde_json::Value;
use std::path::{Path, PathBuf};

fn setup() -> (TestEnv, FakeEmbeddings) {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "64");
    (env, fake)
}

/// An upstream work tree whose HEAD has `src/flags.go`, and a bare copy
/// of it under `<served>/upstream.git`.
fn upstream(env: &TestEnv) -> (GitRepo, PathBuf, PathBuf) {
    let repo = env.repo("upstream");
    repo.write("src/old.go", "package src\n\n// OldThing is gone at HEAD.\nfunc OldThing() int {\n\treturn 1\n}\n");
    repo.commit_all("first");
    repo.write(
        "src/flags.go",
        "package src\n\n// ParseFlags reads the search flags.\nfunc ParseFlags(args []string) int {\n\treturn len(args)\n}\n",
    );
    std::fs::remove_file(repo.path().join("src/old.go")).unwrap();
    repo.write("README.md", "# Upstream\n");
    repo.commit_all("second");
    let served = env.root().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let bare = bare_copy(repo.path(), &served, "upstream.git");
    (repo, served, bare)
}

fn search(env: &TestEnv, args: &[&str]) -> Run {
    env.run_in(&env.work(), args)
}

fn json(run: &Run) -> Value {
    let stdout = run.success();
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("invalid JSON ({error}):\n{stdout}"))
}

fn paths(output: &Value) -> Vec<String> {
    output["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["range"].as_str().unwrap().split(':').next().unwrap().to_string())
        .collect()
}

fn remotes_dir(env: &TestEnv) -> PathBuf {
    env.home().join(".git-agent").join("remotes")
}

/// The only cached remote's folder.
fn remote_dir(env: &TestEnv) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(remotes_dir(env)).unwrap().flatten().map(|entry| entry.path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// Moves the last successful fetch 20 minutes into the past.
fn age(env: &TestEnv) {
    let path = remote_dir(env).join("remote.json");
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let aged = std::time::SystemTime::now() - std::time::Duration::from_secs(20 * 60);
    let seconds = aged.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let text = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{seconds}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    record["last_fetched_at"] = Value::String(String::from_utf8_lossy(&text.stdout).trim().to_string());
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
}

/// Every complete index manifest under the remote caches.
fn manifests(env: &TestEnv) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|name| name == "repo.git") {
                    continue;
                }
                walk(&path, found);
            } else if path.file_name().is_some_and(|name| name == "manifest.json") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&remotes_dir(env), &mut found);
    found
}

fn head(repo: &GitRepo) -> String {
    repo.git(&["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn file_remote_searches_the_committed_head_and_reports_it() {
    let (env, _fake) = setup();
    let (repo, _served, bare) = upstream(&env);
    let url = format!("file://{}", bare.display());
    let output = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "search flags"]));
    assert_eq!(output["source"]["mode"], "remote");
    assert_eq!(output["source"]["remote"], url.as_str());
    assert_eq!(output["source"]["rev"], "HEAD");
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    let found = paths(&output);
    assert!(found.contains(&"src/flags.go".to_string()), "{found:?}");
    assert!(!found.iter().any(|path| path == "src/old.go"), "{found:?}");
    // --rev HEAD~1 of the same cache finds the first commit's file.
    let older =
        json(&search(&env, &["search", "--remote", &url, "--rev", "HEAD~1", "--min-score", "0.01", "old thing"]));
    assert_eq!(older["source"]["rev"], "HEAD~1");
    assert!(paths(&older).contains(&"src/old.go".to_string()), "{older}");
    // Brief header.
    let brief = search(&env, &["search", "--remote", &url, "--format", "brief", "search flags"]).success();
    assert!(brief.starts_with("# mode=remote index=fresh\n"), "{brief}");
    let repo_dir = remote_dir(&env).join("repo.git");
    assert!(repo_dir.join("HEAD").is_file());
    assert!(!repo_dir.join("index").exists(), "the cache is bare, without a work tree");
}

#[test]
fn git_daemon_freshness_counts_network_contact() {
    let (env, _fake) = setup();
    let (repo, served, bare) = upstream(&env);
    let daemon = GitDaemon::start(&served);
    let url = daemon.url("upstream.git");
    let first = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(first["source"]["resolved_rev"], head(&repo).as_str());
    let after_first = daemon.requests();
    assert!(after_first >= 1, "the first search fetched");

    // Within 15 minutes: no contact at all.
    search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]).success();
    assert_eq!(daemon.requests(), after_first, "a fresh cache touched the network");

    // A new upstream commit is not seen while fresh...
    repo.write("src/extra.go", "package src\n\n// ExtraThing was pushed later.\nfunc ExtraThing() {}\n");
    repo.commit_all("third");
    push(repo.path(), &bare);
    let fresh = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_ne!(fresh["source"]["resolved_rev"], head(&repo).as_str());
    assert_eq!(daemon.requests(), after_first);

    // ...a revision the cache does not have fetches once, then resolves.
    let pushed = head(&repo);
    let exact = json(&search(&env, &["search", "--remote", &url, "--rev", &pushed, "--min-score", "0.01", "extra"]));
    assert_eq!(exact["source"]["resolved_rev"], pushed.as_str());
    let after_unknown = daemon.requests();
    assert!(after_unknown > after_first, "the unknown revision fetched");

    // After aging, HEAD is fetched again and picks up the pushed commit.
    repo.write("src/latest.go", "package src\n\nfunc Latest() {}\n");
    repo.commit_all("fourth");
    push(repo.path(), &bare);
    age(&env);
    let aged = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(aged["source"]["resolved_rev"], head(&repo).as_str());
    assert!(daemon.requests() > after_unknown, "an aged cache fetched");

    // A revision that does not exist anywhere fails clearly.
    let missing = search(&env, &["search", "--remote", &url, "--rev", "no-such-branch", "flags"]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.failure().contains("no-such-branch"), "{}", missing.stderr);
}

/// A server without object filters (Git's default): an expression such
/// as `HEAD~1` on a cold cache resolves after the one main fetch: exactly
/// one connection and one pack, never a repeated transfer.
#[test]
fn an_expression_on_a_cold_cache_fetches_once() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let daemon = GitDaemon::start(&served);
    let url = daemon.url("upstream.git");
    let older = json(&search(&env, &["search", "--remote", &url, "--rev", "HEAD~1", "--min-score", "0.01", "old"]));
    assert_eq!(older["source"]["resolved_rev"], repo.git(&["rev-parse", "HEAD~1"]).trim());
    assert_eq!(daemon.requests(), 1, "one connection for the advertisement and the pack");
    assert_one_pack_and_no_temporary_storage(&env);
}

/// Makes the served repository `bare` offer object filters.
fn allow_filters(bare: &Path) {
    let configured = std::process::Command::new("git")
        .args(["--git-dir", bare.to_str().unwrap(), "config", "uploadpack.allowFilter", "true"])
        .status()
        .unwrap();
    assert!(configured.success());
}

/// The cache holds one pack, and nothing but the cache, its record and
/// its indexes is left in the remote's folder.
fn assert_one_pack_and_no_temporary_storage(env: &TestEnv) {
    let packs: Vec<PathBuf> = std::fs::read_dir(remote_dir(env).join("repo.git/objects/pack"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "pack"))
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");
    let leftovers: Vec<String> = std::fs::read_dir(remote_dir(env))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        leftovers.iter().all(|name| ["repo.git", "remote.json", "search"].contains(&name.as_str())),
        "temporary storage left behind: {leftovers:?}"
    );
}

/// A server that offers object filters: `HEAD~1` on a cold cache is
/// resolved after the one main fetch, as on a server without them; that
/// fetch asks for the size filter, and the cache holds its pack only.
#[test]
fn an_expression_on_a_filtering_server_is_resolved_after_the_one_filtered_fetch() {
    let (upstream_env, _upstream_fake) = setup();
    let (repo, served, bare) = upstream(&upstream_env);
    allow_filters(&bare);
    let http = HttpGit::start(&served, None);
    let daemon = GitDaemon::start(&served);
    for url in [http.url("upstream.git", None), daemon.url("upstream.git")] {
        let (env, _fake) = setup();
        let args = ["search", "--remote", url.as_str(), "--rev", "HEAD~1", "--min-score", "0.01", "old"];
        let output = json(&search(&env, &args));
        assert_eq!(output["source"]["rev"], "HEAD~1");
        assert_eq!(output["source"]["resolved_rev"], repo.git(&["rev-parse", "HEAD~1"]).trim());
        let found = paths(&output);
        assert!(!found.is_empty() && found.iter().all(|path| path == "src/old.go"), "{url}: {found:?}");
        assert_one_pack_and_no_temporary_storage(&env);
    }
    // One pack request over HTTP, with the filter; one connection to the
    // daemon.
    assert_eq!((http.pack_requests(), http.filtered_requests()), (1, 1));
    assert_eq!(daemon.requests(), 1);
}

/// A server that offers object filters keeps the blobs too large to
/// search (`blob:limit`): the cold search and a later one from the fresh
/// cache both count the absent blob as oversized, and a blob of exactly
/// the limit is searched.
#[test]
fn a_filtering_server_keeps_blobs_too_large_to_search() {
    let (env, _fake) = setup();
    let (repo, served, _) = upstream(&env);
    repo.write("big.txt", &"x".repeat((1 << 20) + 1));
    repo.write("edge.txt", &format!("ParseFlags edge {}\n", "y".repeat((1 << 20) - 17)));
    repo.commit_all("large files");
    let bare = bare_copy(repo.path(), &served, "large.git");
    allow_filters(&bare);
    let http = HttpGit::start(&served, None);
    let url = http.url("large.git", None);
    let args = ["search", "--remote", url.as_str(), "--min-score", "0.01", "edge"];
    let cold = json(&search(&env, &args));
    assert_eq!(cold["retrieval"]["skipped"]["oversized"], 1, "{cold}");
    assert_eq!(cold["retrieval"]["skipped"]["unreadable"], 0, "{cold}");
    assert!(paths(&cold).contains(&"edge.txt".to_string()), "{cold}");
    assert_eq!(http.pack_requests(), 1);
    let requests = http.requests();
    // From the fresh cache: no network, the same classification.
    let warm = json(&search(&env, &["search", "--remote", url.as_str(), "--min-score", "0.01", "big"]));
    assert_eq!(http.requests(), requests, "a fresh cache touched the network");
    assert_eq!(warm["retrieval"]["skipped"]["oversized"], 1, "{warm}");
    assert_eq!(warm["retrieval"]["skipped"]["unreadable"], 0, "{warm}");
    let missing = std::process::Command::new("git")
        .args(["--git-dir", remote_dir(&env).join("repo.git").to_str().unwrap(), "cat-file", "-e"])
        .arg(repo.git(&["rev-parse", "HEAD:big.txt"]).trim())
        .status()
        .unwrap();
    assert!(!missing.success(), "the blob over the limit was fetched");
}

#[test]
fn an_ignore_file_over_the_size_limit_is_fetched_from_a_filtering_server() {
    let (env, _fake) = setup();
    let (repo, served, _) = upstream(&env);
    // Its last line decides, and the filtered pack leaves it out.
    repo.write(".gitignore", &format!("{}secret.rs\n", "# padding\n".repeat((1 << 20) / 10 + 1)));
    repo.write("secret.rs", "fn parse_secret_flags() {}\n");
    repo.git(&["add", "-f", "secret.rs"]);
    repo.commit_all("a large ignore file");
    let bare = bare_copy(repo.path(), &served, "ignores.git");
    allow_filters(&bare);
    let http = HttpGit::start(&served, None);
    let url = http.url("ignores.git", None);
    let args = ["search", "--remote", url.as_str(), "--debug", "--min-score", "0.01", "flags"];
    let cold = search(&env, &args);
    let output = json(&cold);
    assert!(cold.stderr.contains("fetching 1 ignore file over the size limit from"), "{}", cold.stderr);
    let found = paths(&output);
    assert!(!found.is_empty(), "{output}");
    assert!(!found.contains(&"secret.rs".to_string()), "{output}");
    // The main pack, then the ignore file's blob by id.
    assert_eq!(http.pack_requests(), 2);
    assert_eq!(output["retrieval"]["skipped"]["unreadable"].as_u64().unwrap_or(0), 0, "{output}");
    let requests = http.requests();
    let warm = json(&search(&env, &["search", "--remote", url.as_str(), "--min-score", "0.01", "secret"]));
    assert_eq!(http.requests(), requests, "a fresh cache touched the network");
    assert!(!paths(&warm).contains(&"secret.rs".to_string()), "{warm}");
    assert!(!remote_dir(&env).join("ignore-blobs.git").exists());
}

#[test]
fn http_credentials_are_used_but_never_written() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let secret = "s3cr3t-Pa55word";
    let server = HttpGit::start(&served, Some(&format!("reader:{secret}")));
    let url = server.url("upstream.git", Some(&format!("reader:{secret}")));
    let run = search(&env, &["search", "--remote", &url, "--debug", "--min-score", "0.01", "flags"]);
    let output = json(&run);
    assert!(server.saw_credentials());
    // --debug reports the fetch with the sanitized URL, and the transfer's
    // final totals: every object of the served repository.
    assert!(run.stderr.contains("search_fetch"), "{}", run.stderr);
    assert!(run.stderr.contains(&server.url("upstream.git", None)), "{}", run.stderr);
    let objects = repo.git(&["rev-list", "--objects", "--all"]).lines().count();
    let received = format!("received objects from {}: {objects}/{objects} objects, ", server.url("upstream.git", None));
    assert!(run.stderr.contains(&received), "no {received:?} in:\n{}", run.stderr);
    let sanitized = server.url("upstream.git", None);
    assert_eq!(output["source"]["remote"], sanitized.as_str());
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    let listed = search(&env, &["search", "--ls-remotes", "--format", "completion"]).success();
    assert_eq!(listed, format!("{sanitized}\n"));
    let ls = search(&env, &["search", "--ls", "--remote", &url]);
    let mut texts = vec![run.stdout_text(), run.stderr.clone(), listed, ls.stdout_text(), ls.stderr.clone()];
    // Without credentials the server refuses: the failure names the
    // sanitized URL only.
    age(&env);
    let refused = search(&env, &["search", "--remote", &sanitized, "flags"]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    texts.push(refused.stderr.clone());
    for text in &texts {
        assert!(!text.contains(secret), "the password leaked: {text}");
    }
    let mut files = Vec::new();
    collect_files(&env.home(), &mut files);
    collect_files(&env.state_home(), &mut files);
    assert!(files.iter().any(|path| path.ends_with("remote.json")));
    for path in files {
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            !bytes.windows(secret.len()).any(|window| window == secret.as_bytes()),
            "the password was written to {}",
            path.display()
        );
    }
}

fn collect_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            collect_files(&path, found);
        } else if kind.is_file() {
            found.push(path);
        }
    }
}

#[test]
fn http_server_dying_mid_pack_publishes_nothing_and_the_next_search_is_clean() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    server.die_mid_pack(true);
    let failed = search(&env, &["search", "--remote", &url, "flags"]);
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    assert!(failed.failure().contains(&url), "{}", failed.stderr);
    // A first fetch that failed leaves no cache at all.
    let left: Vec<_> = std::fs::read_dir(remotes_dir(&env)).map(|dirs| dirs.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "a failed first fetch left {left:?}");
    server.die_mid_pack(false);
    let output = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    assert_eq!(manifests(&env).len(), 1);
}

#[test]
fn embeddings_failing_mid_build_publish_nothing() {
    let (env, fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    fake.set_mode(Mode::Fail { status: 400, message: "bad input".into() });
    let failed = search(&env, &["search", "--remote", &url, "flags"]);
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    assert!(!remote_dir(&env).join("remote.json").exists());
    assert!(manifests(&env).is_empty());
    fake.set_mode(Mode::Words);
    let output = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    assert!(remote_dir(&env).join("remote.json").is_file());
}

#[test]
fn ssh_remote_verifies_the_host_key() {
    let (env, _fake) = setup();
    let (repo, _served, bare) = upstream(&env);
    let sshd = SshServer::start(&env.home());
    let url = sshd.url(&bare);
    // No known_hosts entry: refused, never accepted blindly.
    let unknown = search(&env, &["search", "--remote", &url, "flags"]);
    assert_eq!(unknown.code, Some(1), "{}", unknown.stderr);
    assert!(unknown.failure().contains("fetch "), "{}", unknown.stderr);
    assert_eq!(sshd.sessions(), 0, "a session authenticated against an unknown host key");
    sshd.trust(&env.home());
    let output = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str(), "{}", sshd.log());
    let sessions = sshd.sessions();
    assert!(sessions >= 1);
    // An encrypted key without an agent fails (batch mode), never prompts.
    let key = env.home().join(".ssh/id_ed25519");
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-p", "-P", "", "-N", "a passphrase", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(status.success());
    let encrypted = search(&env, &["search", "--remote", &url, "--reindex", "flags"]);
    assert_eq!(encrypted.code, Some(1), "{}", encrypted.stderr);
    assert!(
        encrypted.failure().contains(&format!("fetch {}", url.replace(&format!("{}@", whoami()), ""))),
        "{}",
        encrypted.stderr
    );
    assert_eq!(sshd.sessions(), sessions, "an encrypted key without an agent authenticated");
}

/// Over SSH too (the server accepts `GIT_PROTOCOL`, so it speaks protocol
/// v2): `HEAD~1` on a cold cache of a server offering filters is resolved
/// after the one main fetch, in one session.
#[test]
fn ssh_remote_resolves_an_expression_after_the_one_fetch() {
    let (env, _fake) = setup();
    let (repo, _served, bare) = upstream(&env);
    allow_filters(&bare);
    let sshd = SshServer::start(&env.home());
    sshd.trust(&env.home());
    let url = sshd.url(&bare);
    let args = ["search", "--remote", url.as_str(), "--rev", "HEAD~1", "--min-score", "0.01", "old"];
    let output = json(&search(&env, &args));
    assert_eq!(output["source"]["resolved_rev"], repo.git(&["rev-parse", "HEAD~1"]).trim(), "{}", sshd.log());
    assert!(paths(&output).iter().all(|path| path == "src/old.go"), "{output}");
    assert_eq!(sshd.sessions(), 1, "one session: {}", sshd.log());
    assert_one_pack_and_no_temporary_storage(&env);
}

fn whoami() -> String {
    let output = std::process::Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn concurrent_searches_of_one_missing_remote_fetch_and_build_once() {
    let (env, fake) = setup();
    let (_repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    // One fetch of a fresh cache, measured in another home.
    let (other, _other_fake) = setup();
    search(&other, &["search", "--remote", &url, "--index"]).success();
    let one_fetch = server.requests();
    let baseline_inputs = fake.chunk_inputs().len();
    assert_eq!(baseline_inputs, 0);

    let children: Vec<_> = (0..3)
        .map(|_| {
            env.git_agent_in(&env.work(), &["search", "--remote", &url, "--index"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    assert_eq!(server.requests(), one_fetch * 2, "three concurrent searches fetched more than once");
    let embedded = fake.chunk_inputs();
    let mut unique = embedded.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(embedded.len(), unique.len(), "a chunk was embedded twice");
}

#[test]
fn listings_read_metadata_only() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    assert_eq!(search(&env, &["search", "--ls-remotes"]).success(), "no cached remotes\n");
    assert_eq!(search(&env, &["search", "--ls-remotes", "--format", "completion"]).success(), "");
    let daemon = GitDaemon::start(&served);
    let url = daemon.url("upstream.git");
    // --ls --remote before any fetch: the repository path, no indexes.
    let dir_text = search(&env, &["search", "--ls", "--remote", &url]).success();
    assert!(dir_text.starts_with("remote repo="), "{dir_text}");
    assert!(dir_text.ends_with("/repo.git\nno search indexes\n"), "{dir_text}");
    // --ls-files before any fetch fails and names what to run.
    let missing = search(&env, &["search", "--ls-files", "--remote", &url]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.failure().contains("git-agent search --remote"), "{}", missing.stderr);
    assert_eq!(daemon.requests(), 0);

    search(&env, &["search", "--remote", &url, "--index"]).success();
    let requests = daemon.requests();
    let remotes: Value =
        serde_json::from_str(&search(&env, &["search", "--ls-remotes", "--format", "json"]).success()).unwrap();
    assert_eq!(remotes[0]["remote"], url.as_str());
    assert_eq!(remotes[0]["last_resolved_rev"], head(&repo).as_str());
    assert!(remotes[0]["last_fetched_at"].as_str().is_some_and(|at| at.ends_with('Z')));
    assert_eq!(remotes[0]["dir"], remote_dir(&env).display().to_string().as_str());
    let text = search(&env, &["search", "--ls-remotes"]).success();
    assert!(text.starts_with(&format!("{url} rev={} fetched=", &head(&repo)[..12])), "{text}");
    let ls = search(&env, &["search", "--ls", "--remote", &url]).success();
    let mut lines = ls.lines();
    assert_eq!(lines.next().unwrap(), format!("remote repo={}", remote_dir(&env).join("repo.git").display()));
    assert!(lines.next().unwrap().starts_with(&format!("remote rev={} remote={url} ", &head(&repo)[..12])), "{ls}");
    let ls_json: Value =
        serde_json::from_str(&search(&env, &["search", "--ls", "--remote", &url, "--format", "json"]).success())
            .unwrap();
    assert_eq!(ls_json[0]["mode"], "remote");
    let files = search(&env, &["search", "--ls-files", "--remote", &url]).success();
    assert!(files.contains("flags.go"), "{files}");
    let files_json: Value =
        serde_json::from_str(&search(&env, &["search", "--ls-files", "--remote", &url, "--format", "json"]).success())
            .unwrap();
    assert_eq!(files_json["files"], serde_json::json!(["README.md", "src/flags.go"]));
    assert_eq!(daemon.requests(), requests, "a listing touched the network");
    let usage = search(&env, &["search", "--ls-remotes", "--remote", &url]);
    assert_eq!(usage.code, Some(2));
    assert!(usage.failure().contains("search --ls-remotes does not accept --remote"));
}

#[test]
fn concurrent_reindex_of_one_remote_fetches_and_rebuilds_once() {
    let (env, fake) = setup();
    let (_repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    search(&env, &["search", "--remote", &url, "--index"]).success();
    let one_fetch = server.requests();
    let chunks = fake.chunk_inputs().len();
    assert!(chunks > 0);
    fake.reset();
    fake.close_gate();
    let children: Vec<Child> =
        (0..3).map(|_| spawn(&env, &["search", "--remote", &url, "--index", "--reindex"])).collect();
    assert!(wait_until(DEADLINE, || fake.held() >= 1 && env.active_commands() == 3), "all three are running");
    fake.open_gate();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let concurrent = server.requests() - one_fetch;
    assert_eq!(fake.chunk_inputs().len(), chunks, "one rebuild in total");
    // One sequential --reindex: the cost of one re-fetch of this cache.
    search(&env, &["search", "--remote", &url, "--index", "--reindex"]).success();
    let refetch = server.requests() - one_fetch - concurrent;
    assert!(refetch > 0, "--reindex fetches");
    assert_eq!(concurrent, refetch, "the three concurrent --reindex runs fetched more than once");
}

#[test]
fn a_cancelled_remote_search_publishes_nothing() {
    let (env, fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    fake.close_gate();
    let mut child = spawn(&env, &["search", "--remote", &url, "flags"]);
    assert!(wait_until(DEADLINE, || fake.held() >= 1), "the search reached the embeddings");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wait_until(DEADLINE, || env.active_commands() == 0), "the daemon cancelled the search");
    fake.open_gate();
    assert!(!remote_dir(&env).join("remote.json").exists(), "remote.json published by a cancelled search");
    assert!(manifests(&env).is_empty(), "an index published by a cancelled search");
    let output = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    assert_eq!(manifests(&env).len(), 1);
}

#[test]
fn a_search_cancelled_mid_pack_publishes_nothing() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    server.hold_mid_pack(true);
    let mut child = spawn(&env, &["search", "--remote", &url, "flags"]);
    assert!(wait_until(DEADLINE, || server.held() >= 1), "the fetch reached the middle of the pack");
    child.kill().unwrap();
    child.wait().unwrap();
    // The stalled transfer would give up only after 30 s of silence: the
    // search ends well before, without waiting for it.
    let cancelled = std::time::Instant::now();
    assert!(wait_until(DEADLINE, || env.active_commands() == 0), "the daemon cancelled the stalled fetch");
    assert!(cancelled.elapsed() < Duration::from_secs(15), "cancelling waited {:?}", cancelled.elapsed());
    server.release_held();
    server.hold_mid_pack(false);
    assert!(!remote_dir(&env).join("remote.json").exists(), "remote.json published by a cancelled fetch");
    assert!(manifests(&env).is_empty(), "an index published by a cancelled fetch");
    let output = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    assert_eq!(manifests(&env).len(), 1);
}

#[test]
fn agent_progress_reports_the_fetch() {
    let (env, _fake) = setup();
    let (_repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    let run = search(&env, &["search", "--remote", &url, "--agent", "flags"]);
    run.success();
    let endpoint: Value = serde_json::from_str(run.stderr.lines().next().unwrap()).unwrap();
    assert_eq!(endpoint["url"], "http://localhost/progress");
    // A fresh cache with a complete index neither fetches nor embeds: no endpoint.
    let warm = search(&env, &["search", "--remote", &url, "--agent", "flags"]);
    warm.success();
    assert!(warm.stderr.is_empty(), "{}", warm.stderr);
}

#[test]
fn an_embedding_failure_while_production_is_open_cancels_it_and_publishes_nothing() {
    let (mut env, fake) = setup();
    // One input a window, so the first chunked file completes a window;
    // the daemon then keeps producing until the build is cancelled.
    env.set_env("OPENAI_EMBEDDING_BATCH_INPUTS", "1");
    env.set_env("GITAGENTD_TEST_HOLD_PRODUCTION", "1");
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    fake.set_mode(Mode::Fail { status: 400, message: "bad input".into() });
    let started = std::time::Instant::now();
    let failed = search(&env, &["search", "--remote", &url, "flags"]);
    // Production stops for the failed window instead of running out its
    // hold (60 s): the failure reached it while it was open.
    assert!(started.elapsed() < DEADLINE, "the failed window did not stop production ({:?})", started.elapsed());
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    assert!(failed.failure().contains("bad input"), "the embedding failure is the reported cause: {}", failed.stderr);
    assert!(!remote_dir(&env).join("remote.json").exists(), "remote.json published after a failed build");
    assert!(manifests(&env).is_empty(), "an index published after a failed build");
    fake.set_mode(Mode::Words);
    let output = json(&search(&env, &["search", "--remote", &url, "--min-score", "0.01", "flags"]));
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    assert_eq!(manifests(&env).len(), 1);
}

/// Writes `pem` to a file under the test's root and returns its path.
fn ca_file(env: &TestEnv, name: &str, pem: &str) -> String {
    let path = env.root().join(name);
    std::fs::write(&path, pem).unwrap();
    path.display().to_string()
}

#[test]
fn https_remote_trusts_the_callers_ca_and_never_writes_credentials() {
    let (mut env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let secret = "tls-S3cret-word";
    let server = HttpGit::start(&served, Some(&format!("reader:{secret}")));
    let front = TlsFront::start(server.address());
    let url = front.url("upstream.git", Some(&format!("reader:{secret}")));
    let sanitized = front.url("upstream.git", None);
    // The daemon's own environment names no CA: only the invocation's
    // SSL_CERT_FILE lets the fetch trust the server.
    env.set_env("SSL_CERT_FILE", &ca_file(&env, "ca.pem", front.ca_pem()));
    let run = search(&env, &["search", "--remote", &url, "--debug", "--min-score", "0.01", "flags"]);
    let output = json(&run);
    assert!(server.saw_credentials());
    assert_eq!(output["source"]["remote"], sanitized.as_str());
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    assert!(paths(&output).contains(&"src/flags.go".to_string()), "{output}");
    let ls = search(&env, &["search", "--ls", "--remote", &url]);
    let texts = [run.stdout_text(), run.stderr.clone(), ls.stdout_text(), ls.stderr.clone()];
    for text in &texts {
        assert!(!text.contains(secret), "the password leaked: {text}");
    }
    // Every file under HOME and the state folder, the daemon's log included.
    assert_not_written(&env, secret);
    assert!(remote_dir(&env).join("remote.json").is_file());
}

fn assert_not_written(env: &TestEnv, secret: &str) {
    let mut files = Vec::new();
    collect_files(&env.home(), &mut files);
    collect_files(&env.state_home(), &mut files);
    assert!(files.iter().any(|path| path.starts_with(env.state_home().join("git-agent/logs"))), "no daemon log");
    for path in files {
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            !bytes.windows(secret.len()).any(|window| window == secret.as_bytes()),
            "the password was written to {}",
            path.display()
        );
    }
}

#[test]
fn https_remote_with_an_unknown_ca_fails_clearly() {
    let (mut env, _fake) = setup();
    let (_repo, served, _bare) = upstream(&env);
    let secret = "tls-Unknown-ca-pw";
    let server = HttpGit::start(&served, Some(&format!("reader:{secret}")));
    let front = TlsFront::start(server.address());
    // Another throw-away CA: it did not sign the server's certificate.
    let other = TlsFront::start(server.address());
    env.set_env("SSL_CERT_FILE", &ca_file(&env, "other-ca.pem", other.ca_pem()));
    let url = front.url("upstream.git", Some(&format!("reader:{secret}")));
    let failed = search(&env, &["search", "--remote", &url, "flags"]);
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    let message = failed.failure();
    assert!(message.contains(&front.url("upstream.git", None)), "{message}");
    assert!(message.to_lowercase().contains("certificate"), "the failure does not name the certificate: {message}");
    assert!(!message.contains(secret), "the password leaked: {message}");
    assert_not_written(&env, secret);
    assert_eq!(server.requests(), 0, "a request passed the refused TLS handshake");
    assert!(manifests(&env).is_empty());
}

#[test]
fn http_remote_fetches_through_the_callers_proxy() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let url = server.url("upstream.git", None);
    let proxy = git_agent_tests::fake_proxy::FakeProxy::start();
    let output = env
        .git_agent_in(&env.work(), &["search", "--remote", &url, "--min-score", "0.01", "flags"])
        .env("HTTP_PROXY", proxy.url())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    let targets = proxy.targets();
    assert!(
        targets.iter().any(|target| target.starts_with(&format!("{url}/info/refs"))),
        "the fetch did not go through the caller's HTTP_PROXY: {targets:?}"
    );
}

#[test]
fn https_remote_trusts_the_ca_folder_of_the_invocation_only() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let front = TlsFront::start(server.address());
    let url = front.url("upstream.git", None);
    let certs = env.root().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::write(certs.join("test-ca.pem"), front.ca_pem()).unwrap();
    // The daemon starts from an invocation without any CA setting.
    search(&env, &["search", "--ls-remotes"]).success();
    let output = env
        .git_agent_in(&env.work(), &["search", "--remote", &url, "--min-score", "0.01", "flags"])
        .env("SSL_CERT_DIR", &certs)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    assert!(paths(&output).contains(&"src/flags.go".to_string()), "{output}");
    // The same daemon, asked without the setting, does not trust the server:
    // the folder came from the invocation, not from anything the daemon kept.
    let failed = search(&env, &["search", "--remote", &url, "--reindex", "flags"]);
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    let message = failed.failure();
    assert!(message.to_lowercase().contains("certificate"), "the failure does not name the certificate: {message}");
}

#[test]
fn https_remote_tunnels_through_the_callers_proxy_with_connect() {
    let (env, _fake) = setup();
    let (repo, served, _bare) = upstream(&env);
    let server = HttpGit::start(&served, None);
    let front = TlsFront::start(server.address());
    let url = front.url("upstream.git", None);
    let ca = ca_file(&env, "ca.pem", front.ca_pem());
    let proxy = git_agent_tests::fake_proxy::FakeProxy::start();
    // The daemon starts from an invocation without any proxy setting.
    search(&env, &["search", "--ls-remotes"]).success();
    let output = env
        .git_agent_in(&env.work(), &["search", "--remote", &url, "--min-score", "0.01", "flags"])
        .env("HTTPS_PROXY", proxy.url())
        .env("SSL_CERT_FILE", &ca)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output["source"]["resolved_rev"], head(&repo).as_str());
    let authority = url.trim_start_matches("https://").split('/').next().unwrap().to_string();
    let targets = proxy.targets();
    assert!(
        targets.contains(&format!("CONNECT {authority}")),
        "the https fetch did not tunnel through the caller's HTTPS_PROXY: {targets:?}"
    );
    assert!(targets.iter().all(|target| target.starts_with("CONNECT ")), "{targets:?}");
    assert!(server.requests() > 0, "no request reached the server through the tunnel");
}

/// Every `--debug` event of `kind`, its wrapped field lines joined to
/// its first line.
fn events_of(stderr: &str, kind: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let mut events = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if line.starts_with(' ') || !line.split_whitespace().any(|word| word == kind) {
            continue;
        }
        let mut event = line.to_string();
        for next in &lines[index + 1..] {
            if !next.starts_with("  ") {
                break;
            }
            event.push(' ');
            event.push_str(next.trim());
        }
        events.push(event);
    }
    events
}

/// A cold search's fetch about to be held mid-pack: the upstream of
/// [`many_files_upstream`] served over HTTP behind `reader:<secret>`.
struct HeldFetch {
    env: TestEnv,
    fake: FakeEmbeddings,
    _repo: GitRepo,
    server: HttpGit,
    /// With the credentials.
    url: String,
    /// Without them, as every output must show it.
    sanitized: String,
    secret: &'static str,
}

fn held_fetch(secret: &'static str) -> HeldFetch {
    let (env, fake) = setup();
    let (repo, served) = many_files_upstream(&env);
    let server = HttpGit::start(&served, Some(&format!("reader:{secret}")));
    let url = server.url("many.git", Some(&format!("reader:{secret}")));
    let sanitized = server.url("many.git", None);
    server.hold_mid_pack(true);
    HeldFetch { env, fake, _repo: repo, server, url, sanitized, secret }
}

/// An upstream whose pack is large enough to be held mid-way by the
/// server (it holds the second half): sixty Go files of barely
/// compressible text and a file the tree's `.gitignore` excludes.
fn many_files_upstream(env: &TestEnv) -> (GitRepo, PathBuf) {
    let repo = env.repo("many");
    repo.write(".gitignore", "*.skip\n");
    repo.write("notes.skip", "IgnoredByTheTree never reaches the embeddings\n");
    repo.write("README.md", "# Many\n\nSearch flags are parsed in pkg.\n");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for file in 0..60 {
        let body: String = (0..120)
            .map(|line| {
                let words: Vec<String> = (0..6)
                    .map(|_| {
                        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                        format!("{:x}", seed >> 16)
                    })
                    .collect();
                format!("\t// step {line} of handler {file}: {}\n", words.join(" "))
            })
            .collect();
        repo.write(
            &format!("pkg/handler{file:02}.go"),
            &format!("package pkg\n\n// Handler{file} parses search flags ({file}).\nfunc Handler{file}() int {{\n{body}\treturn {file}\n}}\n"),
        );
    }
    repo.commit_all("many");
    let served = env.root().join("served");
    std::fs::create_dir_all(&served).unwrap();
    bare_copy(repo.path(), &served, "many.git");
    (repo, served)
}

/// Every `search_fetch` event's detail, in order.
fn fetch_events(stderr: &str) -> Vec<String> {
    events_of(stderr, "search_fetch")
        .into_iter()
        .map(|event| {
            let detail = event.split("detail=").nth(1).unwrap();
            let detail = match detail.strip_prefix('"') {
                Some(quoted) => quoted.split('"').next().unwrap(),
                None => detail.split_whitespace().next().unwrap(),
            };
            detail.to_string()
        })
        .collect()
}

/// The object count of a `receiving objects from <url>: 12/40 objects, ...`
/// detail.
fn objects_received(detail: &str) -> Option<usize> {
    let counts = detail.strip_prefix("receiving objects from ").or(detail.strip_prefix("received objects from "))?;
    counts.split(": ").nth(1)?.split(['/', ' ']).next()?.parse().ok()
}

/// The fetch's `--debug` reports, proven against the server's own hold:
/// with the pack's second half held back, a report already counts the
/// objects received so far; the reports grow to the complete pack and
/// carry the sanitized URL only. The build after the fetch embeds every
/// selected file once and nothing of the ignored file.
#[test]
fn fetch_reports_grow_while_the_pack_arrives() {
    use std::io::{BufRead, BufReader};
    let HeldFetch { env, fake, _repo, server, url, sanitized, secret } = held_fetch("reports-S3cret");
    let args = ["search", "--debug", "--remote", url.as_str(), "--min-score", "0.01", "search flags"];
    let mut child = spawn(&env, &args);
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let (stderr, pipe) = (std::sync::Arc::clone(&stderr), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut stderr = stderr.lock().unwrap();
                stderr.push_str(&line);
                stderr.push('\n');
            }
        })
    };
    let receiving = format!("receiving objects from {sanitized}: ");
    assert!(wait_until(DEADLINE, || server.held() >= 1), "the fetch reached the middle of the pack");
    // The event: a report of the objects received while the rest of the
    // pack is still held by the server.
    assert!(
        wait_until(DEADLINE, || stderr.lock().unwrap().contains(&receiving)),
        "no transfer report while the pack was held: {}",
        stderr.lock().unwrap()
    );
    assert_eq!(server.held(), 1, "the pack is still held");
    server.release_held();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let stderr = stderr.lock().unwrap().clone();
    assert!(output.status.success(), "{stderr}");

    // Nothing embedded twice, nothing of the ignored file.
    let inputs = fake.chunk_inputs();
    let mut unique = inputs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), inputs.len(), "an input was embedded twice");
    assert!(!inputs.iter().any(|input| input.contains("IgnoredByTheTree")), "the ignored file was embedded");
    assert!(inputs.iter().any(|input| input.contains("Handler59")), "every selected file is embedded");

    // Growing, sanitized fetch reports.
    assert!(!stderr.contains(secret), "the password leaked: {stderr}");
    let events = fetch_events(&stderr);
    let receiving: Vec<&String> = events.iter().filter(|detail| objects_received(detail).is_some()).collect();
    assert!(receiving.iter().all(|detail| detail.contains(&sanitized)), "{events:?}");
    let objects: Vec<usize> = receiving.iter().map(|detail| objects_received(detail).unwrap()).collect();
    assert!(objects.windows(2).all(|pair| pair[0] <= pair[1]), "{events:?}");
    assert!(receiving.last().unwrap().starts_with("received objects"), "{events:?}");
    assert!(objects[0] < *objects.last().unwrap(), "no report before the pack was complete: {events:?}");
}

/// `--agent` serves the fetch with its sanitized detail and growing
/// totals while the pack arrives.
#[test]
fn agent_progress_serves_the_fetch_while_the_pack_arrives() {
    use std::io::{BufRead, BufReader, Read, Write};
    let HeldFetch { env, fake: _fake, _repo, server, url, sanitized, secret } = held_fetch("agent-S3cret");
    let mut child = spawn(&env, &["search", "--agent", "--remote", &url, "flags"]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let endpoint: Value = serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"));
    let address = PathBuf::from(endpoint["address"].as_str().unwrap());
    let progress = || -> Value {
        let mut stream = std::os::unix::net::UnixStream::connect(&address).unwrap();
        stream.write_all(b"GET /progress HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap().trim()).unwrap()
    };
    assert!(wait_until(DEADLINE, || server.held() >= 1), "the fetch reached the middle of the pack");
    let receiving = format!("receiving objects from {sanitized}: ");
    let mut seen = Vec::new();
    let served_while_held = wait_until(DEADLINE, || {
        let body = progress();
        let ready = body["status"] == "fetching"
            && body["detail"].as_str().is_some_and(|detail| detail.starts_with(&receiving));
        seen.push(body);
        ready
    });
    assert!(
        served_while_held,
        "no fetching status with the transfer's totals: {:?}",
        &seen[seen.len().saturating_sub(3)..]
    );
    assert_eq!(server.held(), 1, "the pack is still held");
    // The totals only grow.
    let objects: Vec<usize> = seen
        .iter()
        .filter(|body| body["status"] == "fetching")
        .filter_map(|body| body["detail"].as_str().and_then(objects_received))
        .collect();
    assert!(objects.windows(2).all(|pair| pair[0] <= pair[1]), "{seen:?}");
    server.release_held();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{rest}");
    for text in [line.as_str(), rest.as_str(), &serde_json::to_string(&seen).unwrap()] {
        assert!(!text.contains(secret), "the password leaked: {text}");
    }
}

/// On an interactive stderr the fetch is one transient line, rewritten in
/// place with the growing transfer totals, carrying the sanitized URL
/// only, and cleared before stdout.
#[test]
fn terminal_progress_rewrites_the_fetch_line_and_clears_it() {
    use std::io::Read;
    let HeldFetch { env, fake: _fake, _repo, server, url, sanitized, secret } = held_fetch("terminal-S3cret");
    // stderr on a pseudo-terminal, stdout on a pipe.
    let (master, slave) = git_agent_tests::open_terminal();
    let child = env
        .git_agent_in(&env.work(), &["search", "--remote", &url, "--min-score", "0.01", "flags"])
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let terminal = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let terminal = std::sync::Arc::clone(&terminal);
        std::thread::spawn(move || {
            let mut file = std::fs::File::from(master);
            let mut buffer = [0u8; 4096];
            // Reading the master fails with EIO once the last slave closes.
            while let Ok(read) = file.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                terminal.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        })
    };
    let shown = || String::from_utf8_lossy(&terminal.lock().unwrap()).into_owned();
    let fetching = format!("search: fetching receiving objects from {sanitized}: ");
    // The event: a fetch line counting the objects received while the
    // pack is still held.
    assert!(wait_until(DEADLINE, || shown().contains(&fetching)), "no fetch line with totals: {:?}", shown());
    assert_eq!(server.held(), 1, "the pack is still held");
    server.release_held();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    assert!(output.status.success(), "{:?}", shown());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.starts_with("{\"query\":\"flags\""), "stdout holds the JSON only: {stdout}");
    let terminal = shown();
    assert!(!terminal.contains(secret), "the password leaked: {terminal:?}");
    let lines: Vec<&str> = terminal.split("\r\x1b[2K").filter(|line| !line.is_empty()).collect();
    let counted =
        |line: &&str| line.starts_with(&fetching) && objects_received(&line["search: fetching ".len()..]).is_some();
    assert!(lines.iter().any(counted), "{lines:?}");
    assert!(terminal.ends_with("\r\x1b[2K"), "the progress line is cleared: {terminal:?}");
}

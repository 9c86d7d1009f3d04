//! Regressions from a new user's first hour (issue 32): each test is named
//! after the bug it pins and runs the real binaries.

use git_agent_tests::fake_embeddings::FakeEmbeddings;
use git_agent_tests::fake_openai::{FakeOpenAi, Reply, Responder, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn setup() -> (TestEnv, FakeEmbeddings) {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "32");
    (env, fake)
}

fn search_json(env: &TestEnv, dir: &Path, args: &[&str]) -> Value {
    let stdout = env.run_in(dir, args).success();
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("invalid JSON ({error}):\n{stdout}"))
}

fn small_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("project");
    repo.write(
        "retry.go",
        "package demo\n\n// Retry runs f again after a failure.\nfunc Retry(f func() error) error {\n\treturn f()\n}\n",
    );
    repo.write("notes.md", "# Notes\n\nHow retries back off.\n");
    repo.commit_all("one");
    repo
}

/// The `path:line-line` ranges of a search's results.
fn ranges(output: &Value) -> Vec<String> {
    output["results"].as_array().unwrap().iter().map(|result| result["range"].as_str().unwrap().to_string()).collect()
}

/// Adding, changing and removing `origin` moves the project to another
/// metadata folder; the daemon's cached handles (query history, mapped
/// indexes) must follow, so the next search works without a restart.
#[test]
fn search_keeps_working_when_the_origin_is_added_changed_or_removed() {
    let (env, _fake) = setup();
    let repo = small_repo(&env);
    let first = search_json(&env, repo.path(), &["search", "retry"]);
    assert!(ranges(&first).iter().any(|range| range.starts_with("retry.go:")), "{first}");
    for step in [
        &["remote", "add", "origin", "https://example.com/x.git"][..],
        &["remote", "set-url", "origin", "https://example.com/y.git"],
        &["remote", "remove", "origin"],
        &["remote", "add", "origin", "https://example.com/x.git"],
    ] {
        repo.git(step);
        for dir in [repo.path().to_path_buf(), repo.path().join("sub-none")] {
            if !dir.exists() {
                continue;
            }
            let run = env.run_in(&dir, &["search", "--format", "brief", "retry"]);
            assert_eq!(run.code, Some(0), "after git {step:?}: {}", run.stderr);
            assert!(run.stdout_text().contains("retry.go"), "after git {step:?}: {}", run.stdout_text());
        }
    }
}

/// A bare repository, a work tree's `.git` and any folder inside them are
/// Git directories: a filesystem search there would index Git's own files,
/// the config with its credentialed URLs among them, and send them to the
/// embeddings endpoint.
#[test]
fn search_never_indexes_a_git_directory() {
    let (env, fake) = setup();
    let repo = small_repo(&env);
    repo.git(&["remote", "add", "origin", "https://alice:ghp_secret0123456789@github.com/a/b.git"]);
    let bare = env.work().join("bare.git");
    let clone = std::process::Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(repo.path())
        .arg(&bare)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(clone.success());
    let set_url = std::process::Command::new("git")
        .current_dir(&bare)
        .args(["config", "remote.origin.url", "https://alice:ghp_secret0123456789@github.com/a/b.git"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(set_url.success());

    for (dir, hint) in [
        (bare.clone(), "hint: search a commit of this repository: git-agent search --rev HEAD <query...>"),
        (bare.join("refs"), "hint: search a commit of this repository"),
        (repo.path().join(".git"), "hint: search the work tree instead: git-agent --cwd "),
        (repo.path().join(".git/objects"), "hint: search the work tree instead"),
    ] {
        let run = env.run_in(&dir, &["search", "github", "origin"]);
        assert_eq!(run.code, Some(1), "{}: {}", dir.display(), run.stderr);
        assert!(run.stdout.is_empty());
        assert!(run.stderr.contains("is a Git directory, not a work tree"), "{}", run.stderr);
        assert!(run.stderr.contains(hint), "{}", run.stderr);
    }
    assert!(!fake.inputs().iter().any(|input| input.contains("ghp_secret")), "a credential reached the endpoint");

    // A bare repository's commits are searched with --rev, as a clone's are.
    let found = search_json(&env, &bare, &["search", "--rev", "HEAD", "retry"]);
    assert!(ranges(&found).iter().any(|range| range.starts_with("retry.go:")), "{found}");
    assert!(!ranges(&found).iter().any(|range| range.starts_with("config")), "{found}");
    assert!(!fake.inputs().iter().any(|input| input.contains("ghp_secret")), "a credential reached the endpoint");
}

/// Outside any repository, a search of the home folder (or anything above
/// it) or of a tree of more than 20,000 files is refused with a hint,
/// before anything is embedded.
#[test]
fn search_refuses_to_index_a_home_folder_or_a_huge_tree_outside_git() {
    let (env, fake) = setup();
    std::fs::write(env.home().join("notes.md"), "# Notes\n\nretry\n").unwrap();
    let run = env.run_in(&env.home(), &["search", "retry"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("it is outside any Git repository and it holds your home folder"), "{}", run.stderr);
    assert!(run.stderr.contains("hint: run the search inside a project folder, or narrow it with --scope <paths>"));

    let huge = env.work().join("huge");
    for folder in 0..21 {
        let dir = huge.join(format!("d{folder}"));
        std::fs::create_dir_all(&dir).unwrap();
        for file in 0..1000 {
            std::fs::write(dir.join(format!("f{file}.txt")), "x").unwrap();
        }
    }
    let run = env.run_in(&huge, &["search", "retry"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("holds more than 20000 files"), "{}", run.stderr);
    // A scope narrows what is counted, and what is indexed.
    let scoped = search_json(&env, &huge, &["search", "--scope", "d3", "--index"]);
    assert_eq!(scoped["retrieval"]["filters"]["scope"], serde_json::json!(["d3"]), "{scoped}");
    assert!(fake.inputs().iter().all(|input| !input.contains("d4/")), "only the scope was embedded");
}

/// A `--scope` that names nothing is an error, not an empty result.
#[test]
fn a_missing_scope_is_a_usage_error() {
    let (env, _fake) = setup();
    let repo = small_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--scope", "nope/dir", "retry"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("--scope path \"nope/dir\" does not exist under"), "{}", run.stderr);
}

/// While the walk still finds files, the `--agent` endpoint says so
/// (`counting`) and gives no percentage that would grow with its total;
/// once the total is known, the percentage is of the final total.
#[test]
fn agent_progress_says_it_is_still_counting_instead_of_a_percentage_of_a_growing_total() {
    use std::io::{BufRead, BufReader, Read, Write};
    let (mut env, fake) = setup();
    env.set_env("OPENAI_EMBEDDING_BATCH_INPUTS", "1");
    env.set_env("OPENAI_EMBEDDING_CONCURRENCY", "1");
    let repo = env.repo("many");
    for file in 0..200 {
        repo.write(&format!("src/f{file}.go"), &format!("package src\n\nfunc F{file}() int {{\n\treturn {file}\n}}\n"));
    }
    repo.commit_all("many");
    env.run_in(repo.path(), &["project_id"]).success();
    fake.close_gate();
    let mut child = env
        .git_agent_in(repo.path(), &["search", "--agent", "--index"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let endpoint: Value = serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"));
    let address = std::path::PathBuf::from(endpoint["address"].as_str().unwrap());
    let poll = || -> Value {
        let mut stream = std::os::unix::net::UnixStream::connect(&address).unwrap();
        stream.write_all(b"GET /progress HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap().trim()).unwrap()
    };
    assert!(git_agent_tests::wait_until(std::time::Duration::from_secs(30), || fake.held() >= 1));
    let mut body = poll();
    assert!(
        git_agent_tests::wait_until(std::time::Duration::from_secs(30), || {
            body = poll();
            body["total"].as_u64().unwrap_or(0) >= 1
        }),
        "{body}"
    );
    assert_eq!(body["status"], "indexing", "{body}");
    assert_eq!(body["counting"], true, "the walk is held behind the closed gate: {body}");
    assert_eq!(body["percent"], 0.0, "{body}");
    assert!(body["total"].as_u64().unwrap() < 200, "{body}");
    fake.open_gate();
    assert!(child.wait().unwrap().success());
}

/// Writes a file whose name is `name`'s bytes (not UTF-8) under `dir`.
fn write_bytes_name(dir: &Path, name: &[u8], contents: &str) {
    std::fs::write(dir.join(std::ffi::OsStr::from_bytes(name)), contents).unwrap();
}

/// A name that is not UTF-8 is indexed and found under its key, quoted as
/// git quotes it (`"caf\351.py"`), in filesystem and revision mode alike:
/// its folder is entered, the file read by its bytes, and a second search
/// sees it unchanged and embeds nothing. No lossy name reaches the output
/// or the endpoint.
#[test]
fn names_that_are_not_utf8_are_indexed_and_found_under_their_quoted_names() {
    let (env, fake) = setup();
    let repo = small_repo(&env);
    write_bytes_name(repo.path(), b"caf\xe9.py", "def backoff_jitter():\n    return 1\n");
    std::fs::create_dir(repo.path().join(std::ffi::OsStr::from_bytes(b"dir\xff"))).unwrap();
    write_bytes_name(repo.path(), b"dir\xff/x.py", "def zeppelin_mooring():\n    return 2\n");
    write_bytes_name(repo.path(), b"dir\xff/.gitignore", "*.log\n");
    write_bytes_name(repo.path(), b"dir\xff/skip\xfe.log", "zeppelin mooring log\n");
    repo.commit_all("names that are not UTF-8");

    let output = search_json(&env, repo.path(), &["search", "--limit", "20", "backoff jitter zeppelin mooring"]);
    let found = ranges(&output);
    assert!(found.iter().any(|range| range.starts_with("\"caf\\351.py\":")), "{output}");
    assert!(found.iter().any(|range| range.starts_with("\"dir\\377/x.py\":")), "{output}");
    assert!(!found.iter().any(|range| range.contains("log")), "{output}");
    assert!(
        output["retrieval"]["skipped"]["unreadable"].is_null() || output["retrieval"]["skipped"]["unreadable"] == 0
    );
    let results = output["results"].as_array().unwrap();
    let cafe = results.iter().find(|result| result["range"].as_str().unwrap().starts_with("\"caf")).unwrap();
    assert!(cafe["excerpt"].as_str().unwrap().contains("backoff_jitter"), "{cafe}");
    assert!(
        fake.chunk_inputs().iter().any(|input| input.starts_with("path: \"caf\\351.py\"")),
        "{:?}",
        fake.chunk_inputs()
    );
    assert!(!fake.inputs().iter().any(|input| input.contains('\u{fffd}')), "a lossy name reached the endpoint");

    // The second search finds every file unchanged: nothing is embedded.
    fake.reset();
    let run =
        env.run_in(repo.path(), &["search", "--format", "brief", "--limit", "20", "backoff jitter zeppelin mooring"]);
    let brief = run.success();
    assert!(brief.contains("\"caf\\351.py\":1"), "{brief}");
    assert!(brief.contains("\"dir\\377/x.py\":1"), "{brief}");
    assert!(fake.chunk_inputs().is_empty(), "a second search embedded {:?}", fake.chunk_inputs());

    let revision = search_json(
        &env,
        repo.path(),
        &["search", "--rev", "HEAD", "--limit", "20", "backoff jitter zeppelin mooring"],
    );
    let found = ranges(&revision);
    assert!(found.iter().any(|range| range.starts_with("\"caf\\351.py\":")), "{revision}");
    assert!(found.iter().any(|range| range.starts_with("\"dir\\377/x.py\":")), "{revision}");
    assert!(!found.iter().any(|range| range.contains("log")), "{revision}");
    for range in ranges(&output).iter().chain(&found) {
        assert!(!range.contains('\u{fffd}'), "{range}");
    }
    let listed = env.run_in(repo.path(), &["search", "--ls-files", "--rev", "HEAD"]).success();
    assert!(listed.contains("\"caf\\351.py\"") && listed.contains("\"dir\\377\"/"), "{listed}");
    assert!(!listed.contains('\u{fffd}'), "{listed}");
}

/// A working directory that is not UTF-8 (a folder of a repository, or a
/// repository whose root is such a folder) is sent as its bytes: search
/// there finds what is below it, under keys quoted as git quotes them, and
/// a second search embeds nothing.
#[test]
fn search_works_in_a_working_directory_that_is_not_utf8() {
    let (env, fake) = setup();
    let repo = small_repo(&env);
    let odd = repo.path().join(std::ffi::OsStr::from_bytes(b"d\xff"));
    std::fs::create_dir(&odd).unwrap();
    write_bytes_name(&odd, b"caf\xe9.py", "def backoff_jitter():\n    return 1\n");
    repo.write("outside.py", "def backoff_jitter_outside():\n    return 2\n");
    repo.commit_all("a folder that is not UTF-8");

    let output = search_json(&env, &odd, &["search", "backoff jitter"]);
    let found = ranges(&output);
    assert_eq!(found.first().map(String::as_str), Some("\"d\\377/caf\\351.py\":1-2"), "{output}");
    assert!(
        !found.iter().any(|range| range.starts_with("outside.py")),
        "the caller's folder scopes the search: {output}"
    );
    fake.reset();
    let again = search_json(&env, &odd, &["search", "--rev", "HEAD", "backoff jitter"]);
    assert!(ranges(&again).iter().any(|range| range.starts_with("\"d\\377/caf")), "{again}");

    // A repository whose root is not UTF-8.
    let root = env.work().join(std::ffi::OsStr::from_bytes(b"r\xe9po"));
    let odd_repo = GitRepo::init(&env, &root);
    odd_repo.write("lib.py", "def zeppelin_mooring():\n    return 3\n");
    odd_repo.commit_all("one");
    let output = search_json(&env, &root, &["search", "zeppelin mooring"]);
    assert!(ranges(&output).iter().any(|range| range.starts_with("lib.py:")), "{output}");
    assert_eq!(output["source"]["root"], git_agent_shared::quote::os_path_key(&root).into_owned(), "{output}");
    fake.reset();
    let output = search_json(&env, &root, &["search", "zeppelin mooring"]);
    assert!(ranges(&output).iter().any(|range| range.starts_with("lib.py:")), "{output}");
    assert!(fake.chunk_inputs().is_empty(), "a second search embedded {:?}", fake.chunk_inputs());
    assert!(!env.run_in(&root, &["project_id"]).success().trim().is_empty());
}

/// Review launches from a working directory that is not UTF-8, in a folder
/// of a repository and in a repository whose root is such a folder, and
/// its report is read back there.
#[test]
fn review_launches_in_a_working_directory_that_is_not_utf8() {
    let openai = FakeOpenAi::start();
    let mut env = TestEnv::new();
    openai.configure(&mut env, "sk-e2e-secret-key");
    let report = r#"{"summary":"Looks fine.","recommendation":"APPROVE","findings":[]}"#;
    let root = env.work().join(std::ffi::OsStr::from_bytes(b"r\xe9po"));
    let repo = GitRepo::init(&env, &root);
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    std::fs::create_dir(root.join(std::ffi::OsStr::from_bytes(b"d\xff"))).unwrap();
    write_bytes_name(&root, b"d\xff/caf\xe9.rs", "pub fn cafe() {}\n");
    repo.commit_all("initial");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    write_bytes_name(&root, b"d\xff/caf\xe9.rs", "pub fn cafe() -> u8 { 1 }\n");
    for dir in [root.clone(), root.join(std::ffi::OsStr::from_bytes(b"d\xff"))] {
        openai.push(Reply::Events(events::text_reply(report, json!({}))));
        let run = env.run_in(&dir, &["review"]);
        assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
        let launched: Value = serde_json::from_str(&run.stdout_text()).unwrap();
        let id = launched["id"].as_str().unwrap().to_string();
        let printed: Value = serde_json::from_str(&env.run_in(&dir, &["review", "--wait", &id]).success()).unwrap();
        assert_eq!(printed["summary"], "Looks fine.", "{printed}");
    }
    // The model sees the folder and the changed file quoted as git quotes
    // them (the prepared context is JSON inside the prompt, so its
    // backslashes are doubled there), never a lossy name.
    let body = &openai.requests()[0].body;
    let texts: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["content"].as_array().unwrap())
        .filter_map(|content| content["text"].as_str())
        .collect();
    let prompt = texts.join("\n");
    assert!(prompt.contains("r\\351po\"</repo_root>"), "{prompt}");
    assert!(prompt.contains("\"modified\": 2"), "the file is changed, not deleted: {prompt}");
    assert!(prompt.contains("diff --git \\\"a/d\\\\377/caf\\\\351.rs\\\""), "{prompt}");
    assert!(!prompt.contains('\u{fffd}'), "{prompt}");
}

#[test]
fn commit_msg_shows_a_name_that_is_not_utf8_as_git_does() {
    use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
    let openai = FakeOpenAi::start();
    let mut env = TestEnv::new();
    openai.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.repo("project");
    repo.write("README.md", "# Project\n");
    repo.commit_all("docs: start");
    write_bytes_name(repo.path(), b"caf\xe9.py", "print(1)\n");
    repo.git(&["add", "-A"]);
    openai.push(Reply::Events(events::text_reply("feat: add the cafe script", events::usage(10, 0, 5))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.success(), "feat: add the cafe script\n");
    let body = &openai.requests()[0].body;
    let prompt: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["content"].as_array().unwrap())
        .filter_map(|content| content["text"].as_str())
        .collect();
    let prompt = prompt.join("\n");
    // The name reaches the model quoted as git quotes it (in the prepared
    // JSON, so its quotes and backslash are escaped once more), the patch
    // header quoted whole as git writes it, never with a U+FFFD.
    assert!(prompt.contains(r#""path": "\"caf\\351.py\"""#), "{prompt}");
    assert!(prompt.contains(r#"diff --git \"a/caf\\351.py\" \"b/caf\\351.py\""#), "{prompt}");
    assert!(!prompt.contains('\u{fffd}'), "{prompt}");
}

/// The bytes of every file below `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&current) else { continue };
        if meta.is_dir() {
            pending.extend(std::fs::read_dir(&current).unwrap().map(|entry| entry.unwrap().path()));
        } else {
            use std::os::unix::fs::MetadataExt;
            total += meta.blocks() * 512;
        }
    }
    total
}

/// `index gc` never grows the store: a store with nothing to reclaim is
/// left as it is, and the saved bytes it prints are what the disk shows.
#[test]
fn index_gc_never_grows_the_store() {
    let (env, _fake) = setup();
    let repo = env.repo("gc");
    for file in 0..40 {
        repo.write(&format!("src/f{file}.go"), &format!("package src\n\nfunc F{file}() int {{\n\treturn {file}\n}}\n"));
    }
    repo.commit_all("many");
    env.run_in(repo.path(), &["search", "--index"]).success();
    env.run_in(repo.path(), &["search", "--rev", "HEAD", "--index"]).success();
    repo.write("src/f1.go", "package src\n\nfunc F1() int {\n\treturn 100\n}\n");
    env.run_in(repo.path(), &["search", "--index"]).success();
    let root = env.home().join(".git-agent");
    for round in 0..2 {
        let before = disk_bytes(&root);
        let summary = env.run_in(repo.path(), &["index", "gc"]).success();
        let after = disk_bytes(&root);
        let saved: i64 = summary
            .split_whitespace()
            .find_map(|field| field.strip_prefix("local_saved_bytes="))
            .unwrap()
            .parse()
            .unwrap();
        assert!(saved >= 0, "round {round}: {summary}");
        assert!(after <= before, "round {round}: the store grew from {before} to {after} bytes: {summary}");
    }
}

/// `config index.remote` refuses a value no machine could fetch from, and
/// leaves the configuration as it was.
#[test]
fn config_refuses_an_index_remote_that_is_not_a_git_remote() {
    let env = TestEnv::new();
    let work = env.work();
    env.run_in(&work, &["config", "index.remote", "https://git.example.com/team/indexes.git"]).success();
    for bad in ["not a url at all", "relative/indexes.git"] {
        let run = env.run_in(&work, &["config", "index.remote", bad]);
        assert_eq!(run.code, Some(2), "{bad}: {}", run.stderr);
        assert!(run.stderr.contains("is not a Git remote"), "{}", run.stderr);
        assert!(run.stderr.contains("\nhint: use a URL such as"), "{}", run.stderr);
    }
    let kept = env.run_in(&work, &["config", "index.remote"]).success();
    assert_eq!(kept, "https://git.example.com/team/indexes.git\n");
}

/// With `index.remote` unreachable, a search fails (the spec wants no
/// silent local fallback), naming the remote and telling an offline user
/// how to search anyway.
#[test]
fn an_unreachable_index_remote_is_named_with_a_way_to_search_offline() {
    let (env, _fake) = setup();
    let repo = small_repo(&env);
    repo.git(&["remote", "add", "origin", "https://example.com/x.git"]);
    let missing = env.work().join("gone/indexes.git");
    env.run_in(repo.path(), &["config", "index.remote", missing.to_str().unwrap()]).success();
    let run = env.run_in(repo.path(), &["search", "retry"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains(&format!("index.remote {}", missing.display())), "{}", run.stderr);
    assert!(
        run.stderr.contains("hint: to search without it, run git-agent config --unset index.remote"),
        "{}",
        run.stderr
    );
}

/// A failed first `--remote` fetch leaves no cache behind, `index gc`
/// removes the ones earlier versions left, and `/path` and `file:///path`
/// share one cache.
#[test]
fn failed_remote_attempts_leave_no_cache_and_file_urls_share_the_path_cache() {
    let (env, _fake) = setup();
    let remotes = env.home().join(".git-agent/remotes");
    let count = || std::fs::read_dir(&remotes).map(|entries| entries.count()).unwrap_or(0);
    let missing = env.work().join("nonexistent");
    for remote in [missing.to_str().unwrap(), "ext::sh -c false"] {
        let run = env.run_in(&env.work(), &["search", "--remote", remote, "retry"]);
        assert_eq!(run.code, Some(1), "{remote}: {}", run.stderr);
        assert_eq!(count(), 0, "{remote} left a cache behind");
    }
    // What an earlier version left: a bare repository, never fetched into.
    let leftover = remotes.join("a".repeat(64)).join("repo.git");
    let init = std::process::Command::new("git").args(["init", "-q", "--bare"]).arg(&leftover).status().unwrap();
    assert!(init.success());
    let dry = env.run_in(&env.work(), &["index", "gc", "--dry-run"]);
    dry.success();
    assert!(dry.stderr.contains("would remove 1 abandoned remote cache"), "{}", dry.stderr);
    assert_eq!(count(), 1, "a dry run removes nothing");
    let gc = env.run_in(&env.work(), &["index", "gc"]);
    gc.success();
    assert!(gc.stderr.contains("removed 1 abandoned remote cache"), "{}", gc.stderr);
    assert_eq!(count(), 0);

    let repo = small_repo(&env);
    let path = repo.path().to_str().unwrap().to_string();
    search_json(&env, &env.work(), &["search", "--remote", &path, "retry"]);
    search_json(&env, &env.work(), &["search", "--remote", &format!("file://{path}"), "retry"]);
    assert_eq!(count(), 1, "/path and file:///path share one cache");
}

/// Revisions that name nothing, and repositories without a work tree, are
/// said in the user's words, not gix's.
#[test]
fn unresolvable_revisions_and_bare_repositories_are_explained() {
    let (env, _fake) = setup();
    let empty = env.repo("empty");
    let run = env.run_in(empty.path(), &["search", "--rev", "HEAD", "retry"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("the repository has no commit yet"), "{}", run.stderr);
    assert!(!run.stderr.contains("rev-spec is malformed"), "{}", run.stderr);

    let repo = small_repo(&env);
    for round in 0..3 {
        repo.write("notes.md", &format!("# Notes\n\nround {round}\n"));
        repo.commit_all(&format!("round {round}"));
    }
    let shallow = env.work().join("shallow");
    let clone = std::process::Command::new("git")
        .args(["clone", "-q", "--depth", "2"])
        .arg(format!("file://{}", repo.path().display()))
        .arg(&shallow)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(clone.success());
    let run = env.run_in(&shallow, &["search", "--rev", "HEAD~3", "retry"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("HEAD~3 reaches past the history of this shallow clone"), "{}", run.stderr);
    assert!(!run.stderr.contains("delegate.traverse"), "{}", run.stderr);

    let bare = env.work().join("bare.git");
    let init = std::process::Command::new("git").args(["init", "-q", "--bare"]).arg(&bare).status().unwrap();
    assert!(init.success());
    let run = env.run_in(&bare, &["commit-msg"]);
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("is a bare repository: it has no work tree"), "{}", run.stderr);
}

/// `index sync` says on stderr which indexes it skipped and why; its
/// stdout summary stays the spec's one line.
#[test]
fn index_sync_says_which_indexes_it_skipped_and_why() {
    let (env, _fake) = setup();
    let repo = small_repo(&env);
    // A revision index of a repository without origin: no other machine
    // could name it.
    env.run_in(repo.path(), &["search", "--rev", "HEAD", "--index"]).success();
    let remote = env.work().join("indexes.git");
    let init = std::process::Command::new("git").args(["init", "-q", "--bare"]).arg(&remote).status().unwrap();
    assert!(init.success());
    env.run_in(repo.path(), &["config", "index.remote", remote.to_str().unwrap()]).success();
    let run = env.run_in(repo.path(), &["index", "sync"]);
    assert_eq!(run.stdout_text(), "synced indexes=0 records=0 skipped=1\n", "{}", run.stderr);
    let line = run.stderr.lines().find(|line| line.starts_with("index sync: skipped ")).unwrap_or_default();
    assert!(
        line.ends_with(": its repository had no origin when it was indexed, so no other machine can name it"),
        "{}",
        run.stderr
    );
}

/// A search waiting behind another project's index build says whose build
/// it waits for, even when stderr is no terminal, and still gets its own
/// results once that build is done.
#[test]
fn a_waiting_search_says_whose_build_it_waits_for() {
    let (env, fake) = setup();
    let first = small_repo(&env);
    let second = env.repo("second");
    second.write("backoff.go", "package other\n\n// Backoff waits before a retry.\nfunc Backoff() {}\n");
    second.commit_all("one");
    env.run_in(first.path(), &["project_id"]).success();
    fake.close_gate();
    let mut building = env.git_agent_in(first.path(), &["search", "--index"]);
    let holder = std::thread::spawn(move || building.output());
    let held = git_agent_tests::wait_until(std::time::Duration::from_secs(30), || fake.held() >= 1);
    if !held {
        fake.open_gate();
        panic!("the first search never reached the embeddings server");
    }
    let (waiter, stderr, reader) =
        spawn_reading_stderr(&env, second.path(), &["search", "--format", "brief", "backoff"]);
    // The waiter's notice is written while the build it waits for is held.
    let expected = format!("search: waiting for the index build of {}", first.path().display());
    let noticed = git_agent_tests::wait_until(std::time::Duration::from_secs(30), || {
        stderr.lock().unwrap().lines().any(|line| line.starts_with(&expected))
    });
    fake.open_gate();
    let output = waiter.wait_with_output().unwrap();
    reader.join().unwrap();
    let stderr = stderr.lock().unwrap().clone();
    assert!(noticed, "no waiting notice while the first build was held: {stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("backoff.go"));
    assert!(holder.join().unwrap().unwrap().status.success());
}

/// Escape sequences and other terminal controls in a model answer never
/// reach the terminal or Git history; stderr says they were removed.
#[test]
fn terminal_controls_from_the_model_are_removed_from_messages_and_commits() {
    use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
    let hostile = "fix: \x1b[31mred\x1b[0m title \x1b]0;PWNED\x07 end\n\nBody\x08 with\x7f a bell\x07.";
    let clean = "fix: red title  end\n\nBody with a bell.";
    let openai = FakeOpenAi::start();
    let mut env = TestEnv::new();
    openai.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.staged_repo();

    openai.push(Reply::Events(events::text_reply(hostile, events::usage(10, 0, 5))));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.success(), format!("{clean}\n"));
    assert!(run.stderr.contains("warning: removed") && run.stderr.contains("terminal control"), "{}", run.stderr);
    assert!(!run.stderr.contains('\x1b') && !run.stderr.contains('\x07'), "{}", run.stderr);

    openai.push(Reply::Events(events::text_reply(hostile, events::usage(10, 0, 5))));
    let run = env.run_in(repo.path(), &["commit"]);
    let stdout = run.success();
    assert!(!stdout.contains('\x1b') && !stdout.contains('\x07'), "the trace stays clean: {stdout:?}");
    assert!(run.stderr.contains("warning: removed"), "{}", run.stderr);
    assert_eq!(repo.git(&["log", "-1", "--format=%B"]).trim_end(), clean);
}

/// A provider's error text is redacted in the foreground as in the task
/// record, and an HTML error page is shown as its status and title.
#[test]
fn provider_errors_are_redacted_and_html_pages_shown_by_title() {
    use git_agent_tests::fake_openai::{FakeOpenAi, Reply};
    let openai = FakeOpenAi::start();
    let mut env = TestEnv::new();
    openai.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.staged_repo();

    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test-1234567890abcdef. Find your key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error"}}"#;
    openai.push(Reply::Status(401, body.into()));
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("HTTP 401") && run.stderr.contains("Incorrect API key provided: [redacted]"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("sk-test-1234567890abcdef"), "{}", run.stderr);

    let page = format!(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "<center>nginx</center>".repeat(100)
    );
    for _ in 0..3 {
        openai.push(Reply::Status(502, page.clone()));
    }
    let run = env.run_in(repo.path(), &["commit-msg"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("HTTP 502") && run.stderr.contains("an HTML page titled \"502 Bad Gateway\""),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("<center>"), "{}", run.stderr);
}

/// Embedding dimensions no model allows are refused at once, and a
/// retried embeddings request is said on stderr.
#[test]
fn embedding_dimensions_are_bounded_and_retries_are_said() {
    let (env, fake) = setup();
    let repo = small_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--embedding-dimensions", "99999999", "retry"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--embedding-dimensions 99999999 is more than text-embedding-3-small allows (1536 at most)"),
        "{}",
        run.stderr
    );
    assert_eq!(fake.requests(), 0, "nothing was sent");

    let body = r#"{"error":{"message":"the server is overloaded","type":"server_error"}}"#;
    fake.set_mode(git_agent_tests::fake_embeddings::Mode::FailFirst { times: 1, status: 503, body: body.into() });
    let run = env.run_in(repo.path(), &["search", "--format", "brief", "retry"]);
    let stdout = run.success();
    assert!(stdout.contains("retry.go"), "{stdout}");
    assert!(
        run.stderr.contains("warning: the embeddings request failed (")
            && run.stderr.contains("the server is overloaded")
            && run.stderr.contains("retrying, attempt 2 of 3"),
        "{}",
        run.stderr
    );
}

/// An explore answer for every item its request asks about.
fn explore_answer(description: &'static str, references: &'static [&'static str]) -> Reply {
    Reply::Computed(Responder::new(move |body| {
        let text = body["input"].to_string();
        let marker = "\\\"item_id\\\": \\\"";
        let answers: Vec<Value> = text
            .match_indices(marker)
            .map(|(at, _)| {
                let rest = &text[at + marker.len()..];
                let id = &rest[..rest.find('\\').unwrap_or(rest.len())];
                json!({"item_id": id, "items": [{"description": description, "references": references}]})
            })
            .collect();
        events::text_reply(&json!({ "answers": answers }).to_string(), events::usage(300, 0, 40))
    }))
}

fn explore_setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.repo("app");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.commit_all("feat: add one");
    (env, fake, repo)
}

/// A model naming a tool that does not exist is told so, with the tools
/// it may call, and the command goes on instead of failing at once.
#[test]
fn a_call_to_an_unknown_tool_is_repaired_not_fatal() {
    let (env, fake, repo) = explore_setup();
    fake.push(Reply::Events(events::tool_calls(&[("c1", "open_file", r#"{"path":"src/lib.rs"}"#)], json!({}))));
    fake.push(explore_answer("one() returns 1.", &["src/lib.rs:1-3"]));
    let stdout = env.run_in(repo.path(), &["explore", "what", "does", "one", "return?"]).success();
    let value: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(value["items"][0]["references"][0], "src/lib.rs:1-3");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let output = requests[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == "c1")
        .and_then(|item| serde_json::from_str::<Value>(item["output"].as_str()?).ok())
        .expect("the second request answers the unknown call");
    assert_eq!(output["ok"], false);
    let error = output["error"].as_str().unwrap();
    assert!(error.contains("no tool named \"open_file\""), "{error}");
    for tool in ["read_file", "list_files", "grep"] {
        assert!(error.contains(tool), "{tool} not listed: {error}");
    }
}

/// The release-note validation error names each problem once, even when
/// the model repeats a bad ref in a bullet.
#[test]
fn release_note_validation_lists_each_problem_once() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.repo("app");
    repo.write("src/main.rs", "fn main() {}\n");
    repo.commit_all("chore: initial import");
    repo.git(&["tag", "v1.0.0"]);
    repo.write("src/main.rs", "fn main() {\n    std::process::exit(0);\n}\n");
    repo.commit_all("fix: exit cleanly");
    repo.git(&["tag", "v1.1.0"]);
    let bad = json!({"sections": [{"heading": "Bug Fixes", "bullets": [{"label": null, "summary": "Exit cleanly",
        "refs": [{"type": "commit", "value": "deadbeef"}, {"type": "commit", "value": "deadbeef"}], "children": []}]}]})
    .to_string();
    for _ in 0..2 {
        fake.push(Reply::Events(events::text_reply(&bad, events::usage(300, 0, 40))));
    }
    let run = env.run_in(repo.path(), &["release-note", "v1.0.0", "v1.1.0"]);
    let stderr = run.failure();
    let error = stderr.lines().find(|line| line.starts_with("error:")).unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(error.matches("refers to commit deadbeef").count(), 1, "{error}");
    assert_eq!(error.matches("repeats the ref").count(), 1, "{error}");
    let repair = fake.requests()[1].input_texts().last().cloned().unwrap_or_default();
    assert_eq!(repair.matches("refers to commit deadbeef").count(), 1, "{repair}");
}

/// Starts `git-agent <args>` in `dir` with stdout piped and stderr read by
/// a thread into the returned buffer as it arrives.
fn spawn_reading_stderr(
    env: &TestEnv,
    dir: &Path,
    args: &[&str],
) -> (std::process::Child, std::sync::Arc<std::sync::Mutex<String>>, std::thread::JoinHandle<()>) {
    let mut child = env
        .git_agent_in(dir, args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start git-agent");
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let pipe = child.stderr.take().unwrap();
    let reader = {
        let stderr = std::sync::Arc::clone(&stderr);
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut text = stderr.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        })
    };
    (child, stderr, reader)
}

/// Explore has no deadline: while the provider stalls it says it is
/// waiting for the model (once, stderr being no terminal), and the answer
/// still comes once the provider does.
#[test]
fn explore_says_it_is_waiting_for_a_stalled_model() {
    let (env, fake, repo) = explore_setup();
    fake.push(Reply::Held(events::tool_calls(
        &[("c1", "list_files", r#"{"path":null,"max_entries":null}"#)],
        events::usage(1, 0, 1),
    )));
    fake.push(explore_answer("one() returns 1.", &["src/lib.rs:1-3"]));
    let (child, stderr, reader) =
        spawn_reading_stderr(&env, repo.path(), &["explore", "what", "does", "one", "return?"]);
    let waiting = "explore: waiting for the model (";
    let noticed = git_agent_tests::wait_until(std::time::Duration::from_secs(60), || {
        stderr.lock().unwrap().lines().any(|line| line.starts_with(waiting))
    });
    fake.release();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let stderr = stderr.lock().unwrap().clone();
    assert!(noticed, "no waiting line while the model stalled:\n{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches(waiting).count(), 1, "said once off a terminal:\n{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let value: Value = serde_json::from_str(&stdout).expect("stdout stays one JSON object");
    assert_eq!(stdout.matches('\n').count(), 1, "{stdout}");
    assert_eq!(value["items"][0]["references"][0], "src/lib.rs:1-3");
}

/// Makes `dir` unwritable for the rest of the test, root included: mode
/// 0500, and for root (whom modes do not stop) the immutable attribute.
/// Dropping it restores both so the temporary folder can be removed.
struct ReadOnlyDir(std::path::PathBuf);

impl ReadOnlyDir {
    /// `None` when the folder stays writable here (root on a file system
    /// without the immutable attribute).
    fn new(dir: &Path) -> Option<Self> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500)).unwrap();
        let guard = Self(dir.to_path_buf());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let _ = std::process::Command::new("chattr").arg("+i").arg(dir).status();
        }
        let probe = dir.join(".write-probe");
        if std::fs::create_dir(&probe).is_ok() {
            let _ = std::fs::remove_dir(&probe);
            return None;
        }
        Some(guard)
    }
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ =
            std::process::Command::new("chattr").arg("-i").arg(&self.0).stderr(std::process::Stdio::null()).status();
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o700));
    }
}

/// On a HOME where `~/.git-agent` cannot be created, explore skips its
/// optional warm search (saying so in one line) and still answers.
#[test]
fn explore_answers_on_a_read_only_home() {
    let (env, fake, repo) = explore_setup();
    let _read_only = ReadOnlyDir::new(&env.home())
        .expect("HOME stays writable here (root on a file system without the immutable attribute)");
    fake.push(explore_answer("one() returns 1.", &["src/lib.rs:1-3"]));
    let run = env.run_in(repo.path(), &["explore", "what", "does", "one", "return?"]);
    let stdout = run.success();
    let value: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(value["items"][0]["references"][0], "src/lib.rs:1-3");
    assert_eq!(stdout.matches('\n').count(), 1, "{stdout}");
    let skipped: Vec<&str> =
        run.stderr.lines().filter(|line| line.starts_with("warning: explore goes without semantic leads")).collect();
    assert_eq!(skipped.len(), 1, "{}", run.stderr);
    assert!(skipped[0].contains(".git-agent"), "the note names the folder: {}", run.stderr);
    // The session could not be kept: said, not fatal.
    assert!(run.stderr.contains("warning: cannot open the explore sessions"), "{}", run.stderr);
    assert!(run.stderr.contains("cannot be followed up"), "{}", run.stderr);
}

/// `commit` in a repository whose root is not UTF-8: the client runs `git
/// commit` in the very folder the daemon names (sent as bytes).
#[test]
fn commit_works_in_a_repository_whose_root_is_not_utf8() {
    let openai = FakeOpenAi::start();
    let mut env = TestEnv::new();
    openai.configure(&mut env, "sk-e2e-secret-key");
    let root = env.work().join(std::ffi::OsStr::from_bytes(b"r\xe9po"));
    let repo = GitRepo::init(&env, &root);
    repo.write("README.md", "# Project\n");
    repo.commit_all("docs: start");
    repo.write("README.md", "# Project\n\nMore.\n");
    repo.git(&["add", "-A"]);
    openai.push(Reply::Events(events::text_reply("docs: say more", events::usage(10, 0, 5))));
    let run = env.run_in(&root, &["commit"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]).trim(), "docs: say more");
}

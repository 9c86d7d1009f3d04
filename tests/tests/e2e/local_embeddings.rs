//! Search with no key: the local embedding model. The tests load the tiny
//! BERT-shaped model of the embed crate's fixtures (`search.model_dir` or
//! `GIT_AGENT_MODEL_DIR`); the pinned download is tried against a hub that
//! cannot be reached, which must fail with one clear error and leave
//! nothing behind.

use git_agent_tests::{GitRepo, TestEnv};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The tiny model the embed crate's tests generate (32 dimensions).
pub(crate) fn tiny_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../gitagentd/embed/tests/fixtures/tiny-bert")
}

fn sample_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("sample");
    repo.write("app/flags.go", "package app\n\n// ParseFlags reads the search flags.\nfunc ParseFlags(args []string) string {\n\treturn args[0]\n}\n");
    repo.write("docs/guide.md", "# Search flags\n\nHow search flags are parsed and ranked.\n");
    repo.commit_all("initial");
    repo
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("{error}: {text}"))
}

#[test]
fn search_with_no_key_runs_the_local_model_and_names_it() {
    let mut env = TestEnv::new();
    env.set_env("GIT_AGENT_MODEL_DIR", &tiny_model().display().to_string());
    let repo = sample_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--min-score", "0.001", "--debug", "where are the flags parsed"]);
    let output = json(&run.success());
    let retrieval = &output["retrieval"];
    assert_eq!(retrieval["embedding_backend"], "local", "{output}");
    assert!(retrieval["embedding_model"].as_str().unwrap().starts_with("tiny-bert@sha256-"), "{output}");
    assert_eq!(retrieval["dimensions"], 32);
    assert_eq!(retrieval["index"], "miss");
    assert!(!output["results"].as_array().unwrap().is_empty(), "{output}");
    assert!(run.stderr.contains("search_embeddings backend=local model=tiny-bert@sha256-"), "{}", run.stderr);

    // The second search reuses the index and the loaded model.
    let warm =
        json(&env.run_in(repo.path(), &["search", "--min-score", "0.001", "where are the flags parsed"]).success());
    assert_eq!(warm["retrieval"]["index"], "hit", "{warm}");
    assert_eq!(warm["results"], output["results"], "the same model ranks alike");

    // A flag that only an endpoint understands is refused, naming why.
    let refused = env.run_in(repo.path(), &["search", "--embedding-model", "text-embedding-3-large", "flags"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("--embedding-model applies to remote embeddings"), "{}", refused.stderr);
}

#[test]
fn the_configuration_chooses_the_model_folder_and_the_backend() {
    let env = TestEnv::new();
    let repo = sample_repo(&env);
    let dir = tiny_model().canonicalize().unwrap().display().to_string();
    assert_eq!(env.run_in(repo.path(), &["config", "search.model_dir", &dir]).success(), "");
    assert_eq!(env.run_in(repo.path(), &["config", "search.model_dir"]).success(), format!("{dir}\n"));
    let local = json(&env.run_in(repo.path(), &["search", "--min-score", "0.001", "flags"]).success());
    assert_eq!(local["retrieval"]["embedding_backend"], "local", "{local}");

    // Forced remote without a key: the remote error, with the way back.
    assert_eq!(env.run_in(repo.path(), &["config", "search.embeddings", "remote"]).success(), "");
    let stderr = env.run_in(repo.path(), &["search", "flags"]).failure().to_string();
    assert!(stderr.contains("remote embeddings require OPENAI_EMBEDDING_API_KEY or OPENAI_API_KEY"), "{stderr}");
    assert!(stderr.contains("git-agent config --unset search.embeddings"), "{stderr}");
    assert_eq!(env.run_in(repo.path(), &["config", "--unset", "search.embeddings"]).success(), "");
    env.run_in(repo.path(), &["search", "--min-score", "0.001", "flags"]).success();

    // Values that cannot work are refused when set.
    let wrong = env.run_in(repo.path(), &["config", "search.embeddings", "both"]);
    assert_eq!(wrong.code, Some(2));
    assert!(wrong.stderr.contains("neither local nor remote"), "{}", wrong.stderr);
    let relative = env.run_in(repo.path(), &["config", "search.model_dir", "models/tiny"]);
    assert_eq!(relative.code, Some(2));
    assert!(relative.stderr.contains("not an absolute path"), "{}", relative.stderr);
    let unknown = env.run_in(repo.path(), &["config", "search.model"]);
    assert!(unknown.stderr.contains("index.remote, search.embeddings, search.model_dir"), "{}", unknown.stderr);

    // A folder without a model: one error naming the folder and the file.
    let empty = env.root().join("empty-model");
    std::fs::create_dir_all(&empty).unwrap();
    env.run_in(repo.path(), &["config", "search.model_dir", &empty.display().to_string()]).success();
    let stderr = env.run_in(repo.path(), &["search", "flags"]).failure().to_string();
    assert!(stderr.contains(&empty.join("config.json").display().to_string()), "{stderr}");
}

#[test]
fn an_unreachable_hub_is_one_clear_error_and_leaves_nothing_published() {
    let mut env = TestEnv::new();
    env.set_env("GIT_AGENT_MODEL_HUB", "http://127.0.0.1:9");
    let repo = sample_repo(&env);
    let run = env.run_in(repo.path(), &["search", "flags"]);
    let stderr = run.failure().to_string();
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains("http://127.0.0.1:9/sentence-transformers/all-MiniLM-L6-v2/resolve/"),
        "the error names the URL: {stderr}"
    );
    assert!(stderr.contains("search.model_dir"), "the error names the offline way: {stderr}");
    let models = env.home().join(".cache/git-agent/models");
    let published: Vec<String> = std::fs::read_dir(&models)
        .map(|entries| entries.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(published.iter().all(|name| name.starts_with('.')), "nothing published: {published:?}");
}

#[test]
fn index_sync_shares_a_local_model_index_like_any_other() {
    use super::index_fixtures::{clone, shared_project};
    use git_agent_tests::git::git_trimmed;
    let machine = || {
        let mut env = TestEnv::new();
        env.set_env("GIT_AGENT_MODEL_DIR", &tiny_model().display().to_string());
        env
    };
    let shared = tempfile::tempdir().unwrap();
    let a = machine();
    let (origin, index_remote) = shared_project(&a, shared.path());
    let remote_arg = index_remote.to_str().unwrap();
    let project_a = clone(&a, &origin);
    a.run_in(project_a.path(), &["config", "index.remote", remote_arg]).success();
    let built = a.run_in(project_a.path(), &["search", "--rev", "HEAD", "--index", "--debug"]);
    built.success();
    assert!(built.stderr.contains("search_embed_plan"), "A embedded the revision: {}", built.stderr);
    let commit = git_trimmed(&origin, &["rev-parse", "main"]);
    let files = git_trimmed(&index_remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(files.lines().any(|path| path.contains(&commit)), "A published its local-model index: {files}");

    // Machine B, another HOME with the same model: it reuses every vector.
    let b = machine();
    let project_b = clone(&b, &origin);
    b.run_in(project_b.path(), &["config", "index.remote", remote_arg]).success();
    let run =
        b.run_in(project_b.path(), &["search", "--rev", "HEAD", "--min-score", "0.001", "--debug", "harbour ships"]);
    let output = json(&run.success());
    assert_eq!(output["retrieval"]["embedding_backend"], "local", "{output}");
    assert_eq!(output["retrieval"]["index"], "hit", "{}", run.stderr);
    assert!(!run.stderr.contains("search_embed_plan"), "B embedded nothing of the revision: {}", run.stderr);
    assert!(!output["results"].as_array().unwrap().is_empty(), "{output}");
}

/// Serves the files of `dir` over HTTP/1.1 on loopback as the hub lays
/// them out (`/<repo>/resolve/<revision>/<path>`), one request per
/// connection; returns the base URL and the paths requested so far.
fn serve_as_hub(dir: PathBuf, prefix: &'static str) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requested = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&requested);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // The headers, up to the blank line.
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|read| read > 2) {
                header.clear();
            }
            let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_string();
            log.lock().unwrap().push(path.clone());
            let body = path.strip_prefix(prefix).and_then(|file| std::fs::read(dir.join(file)).ok());
            let head = match &body {
                Some(body) => format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len()),
                None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
            };
            let _ = stream.write_all(head.as_bytes());
            if let Some(body) = body {
                let _ = stream.write_all(&body);
            }
        }
    });
    (base, requested)
}

/// The first search with no key and no model folder downloads the pinned
/// model from the hub (here a loopback server, with the tiny model standing
/// in through the daemon's test switch), reports its progress, publishes it
/// privately under XDG_CACHE_HOME, and later searches download nothing.
#[test]
fn the_first_search_downloads_the_pinned_model_once_and_publishes_it_privately() {
    use std::os::unix::fs::PermissionsExt;
    const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";
    let (hub, requested) =
        serve_as_hub(tiny_model(), "/test/test-model/resolve/0123456789abcdef0123456789abcdef01234567/");
    let mut env = TestEnv::new();
    let cache = env.root().join("cache");
    env.set_env("GITAGENTD_TEST_PINNED_MODEL", &tiny_model().canonicalize().unwrap().display().to_string());
    env.set_env("GIT_AGENT_MODEL_HUB", &hub);
    env.set_env("XDG_CACHE_HOME", &cache.display().to_string());
    let repo = sample_repo(&env);

    let run = env.run_in(repo.path(), &["search", "--debug", "--min-score", "0.001", "where are the flags parsed"]);
    let output = json(&run.success());
    assert_eq!(output["retrieval"]["embedding_backend"], "local", "{output}");
    assert_eq!(output["retrieval"]["embedding_model"], format!("test-model@{REVISION}"), "{output}");
    assert!(!output["results"].as_array().unwrap().is_empty(), "{output}");
    // The progress a terminal shows as `search: fetching …` lines.
    assert!(
        run.stderr.lines().any(|line| line.contains("search_fetch")
            && line.contains("the local embedding model test-model: model.safetensors")),
        "{}",
        run.stderr
    );
    let fetched = requested.lock().unwrap().clone();
    for file in ["config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json"] {
        assert!(fetched.iter().any(|path| path.ends_with(&format!("/{file}"))), "{file} not fetched: {fetched:?}");
    }

    let models = cache.join("git-agent/models");
    let published = models.join(format!("test-model-{REVISION}"));
    for file in ["config.json", "model.safetensors", "1_Pooling/config.json"] {
        let expected = std::fs::read(tiny_model().join(file)).unwrap();
        assert_eq!(std::fs::read(published.join(file)).unwrap(), expected, "{file} published whole");
        let mode = std::fs::metadata(published.join(file)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}");
    }
    assert_eq!(std::fs::metadata(&published).unwrap().permissions().mode() & 0o777, 0o700);
    let leftovers: Vec<String> = std::fs::read_dir(&models)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(leftovers, [format!("test-model-{REVISION}")], "one published folder");

    // A fresh daemon finds the published model: nothing is fetched again.
    super::index_fixtures::stop_daemon(&env);
    let again = json(&env.run_in(repo.path(), &["search", "--min-score", "0.001", "flags"]).success());
    assert_eq!(again["retrieval"]["embedding_backend"], "local", "{again}");
    assert_eq!(requested.lock().unwrap().len(), fetched.len(), "the second run downloaded nothing");
}

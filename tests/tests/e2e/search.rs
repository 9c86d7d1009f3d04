//! `git-agent search` end to end: the real client and daemon against a
//! fake embeddings endpoint on loopback.

use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode};
use git_agent_tests::{GitRepo, Run, TestEnv};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// An environment wired to a fresh fake server, with small vectors.
fn setup() -> (TestEnv, FakeEmbeddings) {
    let mut env = TestEnv::new();
    let fake = FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "64");
    (env, fake)
}

fn json(run: &Run) -> Value {
    let stdout = run.success();
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("invalid JSON ({error}):\n{stdout}"))
}

fn ranges(output: &Value) -> Vec<String> {
    output["results"].as_array().unwrap().iter().map(|result| result["range"].as_str().unwrap().to_string()).collect()
}

/// The metadata folder of the project rooted at `root` (no origin).
fn metadata_dir(env: &TestEnv, repo: &Path) -> PathBuf {
    let id = env.run_in(repo, &["project_id"]).success();
    env.home().join(".git-agent").join(id.trim())
}

/// Replaces every JSON number outside strings with `#`, so a whole
/// document can be compared byte for byte with a template.
fn mask_numbers(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(ch) = chars.next() {
        if in_string {
            out.push(ch);
            if ch == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if ch == '"' {
                in_string = false;
            }
            continue;
        }
        if ch == '"' {
            in_string = true;
            out.push(ch);
        } else if ch == '-' || ch.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')) {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(ch);
        }
    }
    out
}

fn sample_repo(env: &TestEnv) -> GitRepo {
    let repo = env.repo("sample");
    repo.write(
        "app/search.go",
        "package app\n\nimport \"strings\"\n\n// ParseFlags reads the search flags.\nfunc ParseFlags(args []string) string {\n\treturn strings.Join(args, \" \")\n}\n\nfunc Unrelated() int {\n\treturn 42\n}\n",
    );
    repo.write("docs/guide.md", "# Guide\n\nHow search flags are parsed and ranked.\n");
    repo.write("README.md", "# Sample\n");
    repo
}

#[test]
fn json_output_is_field_for_field_compatible() {
    let (env, fake) = setup();
    let repo = sample_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--min-score", "0.01", "where are search flags parsed"]);
    let stdout = run.success();
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    let root = repo.path().display().to_string();
    let output: Value = serde_json::from_str(&stdout).unwrap();
    let results = output["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{stdout}");
    for result in results {
        assert_eq!(result["scores"]["rank"], result["relatedness"]);
        let relatedness = result["relatedness"].as_f64().unwrap();
        assert!((0.01..=1.0).contains(&relatedness));
    }
    // The document byte for byte, numbers masked.
    let mut expected = format!(
        "{{\"query\":\"where are search flags parsed\",\"source\":{{\"mode\":\"filesystem\",\"root\":\"{root}\"}},\"min_score\":#,\"retrieval\":{{\"mode\":\"embeddings\",\"embedding_model\":\"text-embedding-3-small\",\"index\":\"miss\",\"dimensions\":#,\"skipped\":{{\"dirs\":#,\"binary\":#,\"non_text\":#,\"oversized\":#,\"symlink\":#,\"unreadable\":#}}}},\"results\":["
    );
    let mut parts = Vec::new();
    for result in results {
        let symbol = match &result["symbol"] {
            Value::Null => "null".to_string(),
            symbol => format!(
                "{{\"type\":\"{}\",\"name\":\"{}\"}}",
                symbol["type"].as_str().unwrap(),
                symbol["name"].as_str().unwrap()
            ),
        };
        parts.push(format!(
            "{{\"relatedness\":#,\"range\":\"{}\",\"symbol\":{symbol},\"scores\":{{\"cosine\":#,\"vector_relatedness\":#,\"text\":#,\"path\":#,\"symbol\":#,\"lexical\":#,\"rank\":#}},\"excerpt\":{}}}",
            result["range"].as_str().unwrap(),
            serde_json::to_string(result["excerpt"].as_str().unwrap()).unwrap()
        ));
    }
    expected.push_str(&parts.join(","));
    expected.push_str("],\"replay\":{\"mode\":\"none\",\"from\":null}}\n");
    assert_eq!(mask_numbers(&stdout), expected);
    assert!(stdout.contains("\"min_score\":0.01,"), "{stdout}");
    assert!(stdout.contains("\"dimensions\":64,"), "{stdout}");
    // The skipped `.git` folder counts as a skipped directory, as in the
    // original implementation.
    assert_eq!(output["retrieval"]["skipped"]["dirs"], 1);

    let mut got = ranges(&output);
    got.sort();
    assert_eq!(
        got,
        ["README.md:1-1", "app/search.go:1-5", "app/search.go:10-12", "app/search.go:6-8", "docs/guide.md:1-3"]
    );
    let parse = results.iter().find(|result| result["range"] == "app/search.go:6-8").unwrap();
    assert_eq!(parse["symbol"], serde_json::json!({"type": "function", "name": "ParseFlags"}));
    assert_eq!(
        parse["excerpt"],
        "6: func ParseFlags(args []string) string {\n7: \treturn strings.Join(args, \" \")\n8: }"
    );
    assert_eq!(fake.chunk_inputs().len(), 5);
    assert_eq!(fake.query_inputs(), ["implementation entrypoint for where are search flags parsed"]);
    assert!(fake.tokens().iter().all(|token| token == "test-embedding-key"));

    // The same query again: the index is warm, the query embedding comes
    // from history, and the result list is a replay hit.
    fake.reset();
    let second = json(&env.run_in(repo.path(), &["search", "--min-score", "0.01", "where are search flags parsed"]));
    assert_eq!(second["retrieval"]["index"], "hit");
    assert_eq!(second["replay"], serde_json::json!({"mode": "hit", "from": "where are search flags parsed"}));
    assert_eq!(second["results"], output["results"]);
    assert_eq!(fake.requests(), 0, "a warm repeated query needs no embeddings call");
}

#[test]
fn index_only_output_is_exact() {
    let (env, fake) = setup();
    let repo = sample_repo(&env);
    let stdout = env.run_in(repo.path(), &["search", "--index"]).success();
    let root = repo.path().display().to_string();
    assert_eq!(
        stdout,
        format!(
            "{{\"query\":\"\",\"source\":{{\"mode\":\"filesystem\",\"root\":\"{root}\"}},\"min_score\":0.7,\"retrieval\":{{\"mode\":\"embeddings\",\"embedding_model\":\"text-embedding-3-small\",\"index\":\"miss\",\"dimensions\":64,\"skipped\":{{\"dirs\":1,\"binary\":0,\"non_text\":0,\"oversized\":0,\"symlink\":0,\"unreadable\":0}}}},\"results\":[],\"replay\":{{\"mode\":\"\",\"from\":null}}}}\n"
        )
    );
    assert_eq!(fake.query_inputs().len(), 0, "--index embeds no query");
    assert_eq!(
        env.run_in(repo.path(), &["search", "--index", "--format", "brief"]).success(),
        "# mode=filesystem index=fresh\n"
    );
}

#[test]
fn brief_format_is_exact() {
    let (env, fake) = setup();
    fake.set_mode(Mode::Constant);
    let repo = env.repo("brief");
    repo.write("a.go", "package a\n\nfunc Alpha() int {\n\treturn 1\n}\n\nfunc Beta() int {\n\treturn 2\n}\n");
    repo.write("notes.md", "Alpha notes\nmore\n");
    repo.write("b.go", "package b\n");
    let stdout = env.run_in(repo.path(), &["search", "--format", "brief", "alpha"]).success();
    // Every cosine is 1, so every rank is 1.00 and ties sort by range
    // size, path and line; a.go's package chunk (a.go:1-2) is left out
    // because a.go has symbol results.
    assert_eq!(
        stdout,
        "# mode=filesystem index=built\n1.00 b.go:1 package b\n1.00 notes.md:1 Alpha notes\n1.00 a.go:3 Alpha\n1.00 a.go:7 Beta\n"
    );
    let again = env.run_in(repo.path(), &["search", "--format", "brief", "alpha"]).success();
    assert!(again.starts_with("# mode=filesystem index=fresh\n"), "{again}");
    repo.write("c.md", "gamma\n");
    let refreshed = env.run_in(repo.path(), &["search", "--agent", "alpha"]);
    assert!(refreshed.success().starts_with("# mode=filesystem index=refreshed\n"), "--agent defaults to brief");
    let empty = env.repo("empty");
    assert_eq!(
        env.run_in(empty.path(), &["search", "--format", "brief", "x"]).success(),
        "# mode=filesystem index=empty\n"
    );
}

#[test]
fn flag_validation_errors_are_usage_errors() {
    let (env, fake) = setup();
    let repo = sample_repo(&env);
    let cases: &[(&[&str], &str)] = &[
        (&["search", "--min-score", "0", "q"], "--min-score must be finite, > 0, and <= 1"),
        (&["search", "--min-score", "1.5", "q"], "--min-score must be finite, > 0, and <= 1"),
        (&["search", "--min-score", "-0.5", "q"], "--min-score must be finite, > 0, and <= 1"),
        (&["search", "--min-score", "NaN", "q"], "--min-score must be finite, > 0, and <= 1"),
        (&["search", "--min-score", "inf", "q"], "--min-score must be finite, > 0, and <= 1"),
        (&["search", "--limit", "0", "q"], "--limit must be between 1 and 100"),
        (&["search", "--limit", "101", "q"], "--limit must be between 1 and 100"),
        (&["search", "--limit", "-3", "q"], "--limit must be between 1 and 100"),
        (&["search", "--format", "xml", "q"], "--format must be json or brief"),
        (&["search", "--index", "q"], "search --index does not accept a query"),
        (&["search"], "search requires a query"),
        (&["search", "--ls", "--limit", "3"], "search --ls does not accept --limit"),
        (&["search", "--ls-files", "--format", "text"], "--format must be tree or json with --ls-files"),
        (&["search", "--ls", "--ls-files"], "only one of --ls or --ls-files"),
        (&["search", "--scope", "/abs", "q"], "must be relative"),
        (&["search", "--embedding-dimensions", "0", "q"], "--embedding-dimensions must be a positive integer"),
    ];
    for (args, message) in cases {
        let run = env.run_in(repo.path(), args);
        let stderr = run.failure();
        assert_eq!(run.code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let run = env.run_in(repo.path(), &["search", "--limit", "abc", "q"]);
    assert_eq!(run.code, Some(2));
    assert_eq!(fake.requests(), 0, "validation failures call no endpoint");
}

#[test]
fn embeddings_failures_fail_clearly_without_fallback() {
    let (env, fake) = setup();
    let repo = sample_repo(&env);
    fake.set_mode(Mode::Fail { status: 401, message: "invalid api key".into() });
    let run = env.run_in(repo.path(), &["search", "where"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert!(stderr.contains("the embeddings request to"), "{stderr}");
    assert!(stderr.contains("401"), "{stderr}");
    assert!(stderr.contains("invalid api key"), "{stderr}");
    assert!(stderr.contains("hint: check OPENAI_EMBEDDING_API_KEY"), "{stderr}");
    assert!(!stderr.contains("test-embedding-key"), "the key never appears: {stderr}");
    // Nothing was published.
    let listing = env.run_in(repo.path(), &["search", "--ls"]).success();
    assert_eq!(listing, "no search indexes\n");

    // A server that cannot be reached.
    let mut unreachable = TestEnv::new();
    unreachable.set_env("OPENAI_EMBEDDING_API_KEY", "k");
    unreachable.set_env("OPENAI_EMBEDDING_BASE_URL", "http://127.0.0.1:9/v1");
    let repo = sample_repo(&unreachable);
    let run = unreachable.run_in(repo.path(), &["search", "where"]);
    let stderr = run.failure();
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(stderr.contains("does not fall back to lexical retrieval"), "{stderr}");

    // No key at all.
    let bare = TestEnv::new();
    let repo = sample_repo(&bare);
    let stderr = bare.run_in(repo.path(), &["search", "where"]).failure().to_string();
    assert!(stderr.contains("search requires OPENAI_EMBEDDING_API_KEY or OPENAI_API_KEY"), "{stderr}");
}

#[test]
fn ls_and_ls_files_list_indexes_and_files() {
    let (env, _fake) = setup();
    let repo = sample_repo(&env);
    repo.write("app/search_test.go", "package app\n\nfunc TestParse() {}\n");
    // Before any index: --ls says so, --ls-files points at the folder.
    assert_eq!(env.run_in(repo.path(), &["search", "--ls"]).success(), "no search indexes\n");
    assert_eq!(env.run_in(repo.path(), &["search", "--ls", "--format", "json"]).success(), "[]\n");
    let meta = metadata_dir(&env, repo.path());
    let run = env.run_in(repo.path(), &["search", "--ls-files"]);
    let stderr = run.failure();
    assert!(stderr.contains(&format!("no search index at {}", meta.join("search/fs").display())), "{stderr}");
    assert!(stderr.contains("hint: run `git-agent search --index` first"), "{stderr}");

    env.run_in(repo.path(), &["search", "--index"]).success();
    let text = env.run_in(repo.path(), &["search", "--ls"]).success();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let root = repo.path().display().to_string();
    assert!(
        lines[0].starts_with(&format!(
            "filesystem root={root} files=4 chunks=7 model=text-embedding-3-small dims=64 created="
        )),
        "{text}"
    );
    assert!(lines[0].ends_with('Z'), "{text}");
    assert!(lines[1].starts_with(&format!("  {}", meta.join("search/fs").display())), "{text}");

    let listed: Value =
        serde_json::from_str(&env.run_in(repo.path(), &["search", "--ls", "--format", "json"]).success()).unwrap();
    let index = &listed[0];
    let keys: Vec<&str> = index.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected_keys = ["mode", "root", "embedding_model", "dimensions", "created_at", "files", "chunks", "dir"];
    expected_keys.sort();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort();
    assert_eq!(sorted_keys, expected_keys);
    assert_eq!(index["files"], 4);
    assert_eq!(index["chunks"], 7);

    let tree = env.run_in(repo.path(), &["search", "--ls-files"]).success();
    assert_eq!(
        tree,
        ".\n├── README.md\n├── app/\n│   ├── search.go\n│   └── search_test.go\n└── docs/\n    └── guide.md\n"
    );
    let no_tests = env.run_in(repo.path(), &["search", "--ls-files", "--no-tests"]).success();
    assert_eq!(no_tests, ".\n├── README.md\n├── app/\n│   └── search.go\n└── docs/\n    └── guide.md\n");
    let scoped = env.run_in(repo.path(), &["search", "--ls-files", "--scope", "docs", "--format", "json"]).success();
    let scoped: Value = serde_json::from_str(&scoped).unwrap();
    assert_eq!(scoped["files"], serde_json::json!(["docs/guide.md"]));
    assert_eq!(scoped["index"]["dir"], index["dir"]);
    // From a subdirectory the listing is limited to it.
    let from_app = env.run_in(&repo.path().join("app"), &["search", "--ls-files", "--format", "json"]).success();
    let from_app: Value = serde_json::from_str(&from_app).unwrap();
    assert_eq!(from_app["files"], serde_json::json!(["app/search.go", "app/search_test.go"]));
}

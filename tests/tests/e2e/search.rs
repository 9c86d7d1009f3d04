//! `git-agent search` end to end: the real client and daemon against a
//! fake embeddings endpoint on loopback.

use git_agent_tests::fake_embeddings::{FakeEmbeddings, Mode, Wire};
use git_agent_tests::{GitRepo, Run, TestEnv, wait_until};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(30);

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
    assert_eq!(fake.query_inputs(), ["where is the code for where are search flags parsed"]);
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
        (&["search", "--ls", "--ls-files"], "only one of --ls, --ls-remotes, or --ls-files"),
        (
            &["search", "--ls-remotes", "--format", "tree"],
            "--format must be text, json, or completion with --ls-remotes",
        ),
        (&["search", "--ls-remotes", "--rev", "HEAD"], "search --ls-remotes does not accept --rev"),
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

    // Remote embeddings asked for, with no key at all.
    let mut bare = TestEnv::new();
    bare.set_env("GIT_AGENT_EMBEDDINGS", "remote");
    let repo = sample_repo(&bare);
    let stderr = bare.run_in(repo.path(), &["search", "where"]).failure().to_string();
    assert!(stderr.contains("remote embeddings require OPENAI_EMBEDDING_API_KEY or OPENAI_API_KEY"), "{stderr}");
}

#[test]
fn vectors_travel_as_base64_and_any_server_answer_is_read_alike() {
    let (env, fake) = setup();
    let repo = sample_repo(&env);
    let asked = json(&env.run_in(repo.path(), &["search", "--min-score", "0.01", "where are search flags parsed"]));
    assert!(fake.encodings().iter().all(|encoding| encoding == "base64"), "{:?}", fake.encodings());
    assert!(fake.requests() >= 2, "the chunks and the query were embedded");

    // A server that ignores the field and answers numbers: the same
    // scores to the last digit.
    let (env, fake) = setup();
    fake.set_wire(Wire::Numbers);
    let repo = sample_repo(&env);
    let numbers = json(&env.run_in(repo.path(), &["search", "--min-score", "0.01", "where are search flags parsed"]));
    assert_eq!(numbers["results"], asked["results"]);
    assert!(fake.encodings().iter().all(|encoding| encoding == "base64"));

    // A server that rejects base64: asked again for numbers, and the
    // daemon remembers, so the next search never asks for base64.
    let (env, fake) = setup();
    fake.set_wire(Wire::RefuseBase64);
    let repo = sample_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--min-score", "0.01", "where are search flags parsed"]);
    let refused = json(&run);
    assert_eq!(refused["results"], asked["results"]);
    let encodings = fake.encodings();
    assert_eq!(encodings[0], "base64", "{encodings:?}");
    assert!(encodings.iter().filter(|encoding| *encoding == "float").count() >= 2, "{encodings:?}");
    fake.reset();
    let again = json(&env.run_in(repo.path(), &["search", "--min-score", "0.01", "how are flags parsed"]));
    assert!(!again["results"].as_array().unwrap().is_empty());
    assert_eq!(fake.encodings(), ["float"], "only the new query was embedded, as numbers");
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

#[test]
fn discovery_reports_each_safety_skip_and_honours_ignore_files() {
    let (env, fake) = setup();
    fake.set_mode(Mode::Constant);
    let repo = env.repo("discovery");
    repo.write("keep.txt", "release notes\n");
    repo.write("src/main.go", "package main\n\nfunc main() {}\n");
    repo.write(".env", "SECRET=1\n");
    repo.write(".github/workflows/ci.yml", "on: push\n");
    repo.write("Cargo.lock", "lock\n");
    repo.write("LICENSE", "license\n");
    repo.write("deep/pnpm-lock.yaml", "lock\n");
    repo.write("icon.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n");
    repo.write("manual.pdf", "%PDF-1.7\nrelease notes\n");
    std::fs::write(repo.path().join("binary.dat"), b"release\x00notes\n").unwrap();
    std::fs::write(repo.path().join("big.txt"), vec![b'a'; (1 << 20) + 1]).unwrap();
    std::os::unix::fs::symlink(repo.path().join("keep.txt"), repo.path().join("link.txt")).unwrap();
    // .gitignore with Git's precedence, .gitagentignore with a per-folder
    // base; ignored folders (build/, pkg/gen/) count as skipped folders.
    repo.write(".gitignore", "*.log\nbuild/\n");
    repo.write("app.log", "log\n");
    repo.write("build/out.txt", "out\n");
    repo.write("pkg/.gitagentignore", "/gen\n*.tmp\n");
    repo.write("pkg/gen/types.go", "package gen\n");
    repo.write("pkg/sub/gen/kept.go", "package gen\n");
    repo.write("pkg/x.tmp", "tmp\n");
    repo.write("other/x.tmp", "tmp\n");
    repo.write("other/.gitignore", "!keep.log\n");
    repo.write("other/keep.log", "kept\n");

    let run = env.run_in(repo.path(), &["search", "--debug", "--index"]);
    let stdout = run.success();
    assert!(stdout.starts_with("{\"query\":\"\""), "{stdout}");
    let mut skips: Vec<String> = run
        .stderr
        .lines()
        .filter(|line| line.contains(" INF search_skip "))
        .map(|line| line.split_once(" INF search_skip ").unwrap().1.to_string())
        .collect();
    skips.sort();
    assert_eq!(
        skips,
        [
            "path=.env reason=dot_file",
            "path=.git reason=dot_dir",
            "path=.github reason=dot_dir",
            "path=big.txt reason=oversized",
            "path=binary.dat reason=binary",
            "path=icon.svg reason=non_text",
            "path=link.txt reason=symlink",
            "path=manual.pdf reason=non_text",
        ],
        "{}",
        run.stderr
    );
    let output: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        output["retrieval"]["skipped"],
        serde_json::json!({"dirs": 4, "binary": 1, "non_text": 2, "oversized": 1, "symlink": 1, "unreadable": 0})
    );
    let listed: Value =
        serde_json::from_str(&env.run_in(repo.path(), &["search", "--ls-files", "--format", "json"]).success())
            .unwrap();
    assert_eq!(
        listed["files"],
        serde_json::json!(["keep.txt", "other/keep.log", "other/x.tmp", "pkg/sub/gen/kept.go", "src/main.go"])
    );
    // --code narrows the candidates to source files.
    let code = env.run_in(repo.path(), &["search", "--code", "--format", "brief", "main"]).success();
    assert_eq!(
        code,
        "# mode=filesystem index=fresh\n1.00 pkg/sub/gen/kept.go:1 package gen\n1.00 src/main.go:3 main\n"
    );
}

#[test]
fn no_tests_filters_results_and_listings_but_not_the_index() {
    let (env, fake) = setup();
    fake.set_mode(Mode::Constant);
    let repo = env.repo("tests");
    let tests = [
        "main_test.go",
        "button.test.ts",
        "button.spec.ts",
        "test.js",
        "spec.ts",
        "tests/helper.go",
        "test/helper.py",
        "__tests__/view.ts",
        "spec/model.rb",
        "WidgetTest.java",
        "TestWidget.java",
        "widget-unittest.cc",
        "integration_tests/flow.py",
    ];
    let kept = ["contest.rs", "latest.py", "main.go", "testdata/sample.json", "testimonial.ts", "testing/widget.go"];
    for path in tests.iter().chain(kept.iter()) {
        repo.write(path, "alpha\n");
    }
    let output: Value =
        serde_json::from_str(&env.run_in(repo.path(), &["search", "--no-tests", "--limit", "100", "alpha"]).success())
            .unwrap();
    assert_eq!(output["retrieval"]["filters"], serde_json::json!({"code": false, "no_tests": true}));
    let mut got: Vec<String> = ranges(&output).iter().map(|range| range.trim_end_matches(":1-1").to_string()).collect();
    got.sort();
    assert_eq!(got, kept);
    let listed: Value = serde_json::from_str(
        &env.run_in(repo.path(), &["search", "--ls-files", "--no-tests", "--format", "json"]).success(),
    )
    .unwrap();
    assert_eq!(listed["files"], serde_json::json!(kept));
    // The index itself keeps the test files.
    let all: Value =
        serde_json::from_str(&env.run_in(repo.path(), &["search", "--ls-files", "--format", "json"]).success())
            .unwrap();
    assert_eq!(all["files"].as_array().unwrap().len(), tests.len() + kept.len());
}

#[test]
fn debug_events_describe_indexing() {
    let (env, _fake) = setup();
    let repo = sample_repo(&env);
    let run = env.run_in(repo.path(), &["search", "--debug", "flags"]);
    let stdout = run.success();
    assert!(stdout.starts_with('{'));
    for event in [
        " INF search_timing step=discover duration=",
        " INF search_timing step=embed_index duration=",
        " INF search_timing step=persist duration=",
        " INF search_timing step=score duration=",
        " INF search_embed_plan",
        "missing_chunks=5 reused_chunks=0 batches=1 batch_inputs=32 batch_max_chars=700000",
        " INF search_embed_progress progress=\"5/5 (100.0%)\" elapsed=",
        " INF search_index",
        " INF search_cpu step=read cpu=",
        " INF search_cpu step=chunk cpu=",
        " INF search_cpu step=segment cpu=",
        " INF search_cpu step=persist cpu=",
    ] {
        assert!(run.stderr.contains(event), "missing {event:?} in:\n{}", run.stderr);
    }
    // A warm search has nothing to embed and reports no plan.
    let warm = env.run_in(repo.path(), &["search", "--debug", "flags"]);
    warm.success();
    assert!(!warm.stderr.contains("search_embed_plan"), "{}", warm.stderr);
}

#[test]
fn agent_progress_is_served_only_while_work_is_needed() {
    use std::io::{BufRead, BufReader, Read, Write};
    let (env, fake) = setup();
    let repo = sample_repo(&env);
    env.run_in(repo.path(), &["project_id"]).success();
    fake.close_gate();
    let mut child = env
        .git_agent_in(repo.path(), &["search", "--agent", "--min-score", "0.01", "flags"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let endpoint: Value = serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"));
    assert_eq!(endpoint["network"], "unix");
    assert_eq!(endpoint["url"], "http://localhost/progress");
    let address = PathBuf::from(endpoint["address"].as_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(address.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(wait_until(DEADLINE, || fake.held() >= 1));
    let mut stream = std::os::unix::net::UnixStream::connect(&address).unwrap();
    stream.write_all(b"GET /progress HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.to_ascii_lowercase().contains("content-type: application/json"), "{response}");
    let body: Value = serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap().trim()).unwrap();
    assert_eq!(body["status"], "indexing", "{body}");
    assert_eq!(body["total"], 5);
    assert_eq!(body["done"], 0);
    assert_eq!(body["reused"], 0);
    for key in ["percent", "elapsed_ms", "updated_at"] {
        assert!(body.get(key).is_some(), "{key} in {body}");
    }
    fake.open_gate();
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    assert!(stdout.starts_with("# mode=filesystem index=built\n"), "{stdout}");
    assert!(!address.exists(), "the endpoint is removed when the command ends");

    // A cache hit needs no work: no endpoint, nothing on stderr.
    let warm = env.run_in(repo.path(), &["search", "--agent", "flags"]);
    warm.success();
    assert_eq!(warm.stderr, "");
}

#[test]
fn terminal_progress_is_transient_and_cleared() {
    use std::io::Read;
    let (env, _fake) = setup();
    let repo = sample_repo(&env);
    // stderr on a pseudo-terminal, stdout on a pipe.
    let (master, slave) = git_agent_tests::open_terminal();
    let child = env
        .git_agent_in(repo.path(), &["search", "--min-score", "0.01", "flags"])
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut file = std::fs::File::from(master);
        let mut bytes = Vec::new();
        let mut buffer = [0u8; 4096];
        // Reading the master fails with EIO once the last slave closes.
        while let Ok(read) = file.read(&mut buffer) {
            if read == 0 {
                break;
            }
            bytes.extend_from_slice(&buffer[..read]);
        }
        bytes
    });
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.starts_with("{\"query\":\"flags\""), "stdout holds the JSON only: {stdout}");
    let terminal = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    assert!(terminal.contains("\r\x1b[2Ksearch: building embeddings 0/5 chunks"), "{terminal:?}");
    assert!(terminal.ends_with("\r\x1b[2K"), "the progress line is cleared: {terminal:?}");
}

/// Open descriptors of a process.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|entries| entries.count()).unwrap_or_else(|error| {
        panic!("cannot list the descriptors of pid {pid}: {error}");
    })
}

#[test]
fn searching_many_projects_keeps_the_daemons_open_files_bounded() {
    let (env, _fake) = setup();
    let search = |index: usize| {
        let repo = env.repo(&format!("project-{index:02}"));
        repo.write(
            "main.go",
            &format!("package main\n\n// Run starts project {index}.\nfunc Run() int {{\n\treturn {index}\n}}\n"),
        );
        json(&env.run_in(repo.path(), &["search", "--min-score", "0.01", "where does the project start"]));
    };
    // More projects than the daemon keeps views and query histories for,
    // so the caches are full before the first count.
    for index in 0..10 {
        search(index);
    }
    let pid = env.daemon_pid().expect("the daemon is running");
    let after_ten = open_fds(pid);
    for index in 10..30 {
        search(index);
    }
    let after_thirty = open_fds(pid);
    assert!(
        after_thirty <= after_ten + 2,
        "the daemon's open descriptors grew from {after_ten} to {after_thirty} over 20 more projects"
    );
}

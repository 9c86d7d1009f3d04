//! The repository and staged tools on temporary repositories: caps and
//! truncation metadata, root confinement (`..`, absolute paths, internal
//! folders, escaping symlinks), and worktree versus index versus HEAD.

use git_agent_tests::{GitRepo, TestEnv};
use gitagent_agent::tools::{self, RepoFiles, ToolError, ToolOutput, ToolRegistry};
use gitagent_git::{FileSource, Repository};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

struct Fixture {
    _env: TestEnv,
    repo: GitRepo,
    registry: ToolRegistry,
}

fn fixture() -> Fixture {
    let env = TestEnv::new();
    let repo = env.repo("tools");
    repo.write("src/lib.rs", &(1..=50).map(|n| format!("line {n}\n")).collect::<String>());
    repo.write("src/main.go", "package main\n\ntype Server struct{}\n\nfunc (s *Server) Run() {}\n\nfunc main() {}\n");
    repo.write("docs/guide.md", "# Guide\n\n## Install\n");
    repo.write("data.json", r#"{"name":"x","items":[1,2,3],"nested":{"big":"abcdefghijklmnopqrstuvwxyz"}}"#);
    repo.write(".gitignore", "target/\n");
    repo.write("target/ignored.rs", "line ignored\n");
    repo.commit_all("init");
    repo.write("src/lib.rs", "staged version\n");
    repo.git(&["add", "src/lib.rs"]);
    repo.write("src/lib.rs", "worktree version\n");
    let outside = env.work().join("secret.txt");
    std::fs::write(&outside, "outside the repository\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.path().join("escape.txt")).unwrap();
    std::os::unix::fs::symlink("docs/guide.md", repo.path().join("inside.md")).unwrap();
    let git = Repository::discover(repo.path()).unwrap();
    let files = Arc::new(RepoFiles::new(git.clone(), FileSource::Worktree));
    let mut registry = ToolRegistry::new();
    registry.extend(tools::repository::tools(&files));
    registry.extend(tools::commit::tools(&git));
    Fixture { _env: env, repo, registry }
}

async fn call(fixture: &Fixture, name: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
    let tool = fixture.registry.get(name).unwrap();
    tool.call(&arguments.to_string(), CancellationToken::new()).await
}

fn refused(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Recoverable(message)) => message,
        other => panic!("expected a recoverable refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn read_file_reads_each_source_and_caps_while_streaming() {
    let fixture = fixture();
    for (source, expected) in [("worktree", "worktree version\n"), ("index", "staged version\n"), ("head", "line 1\n")]
    {
        let output =
            call(&fixture, "read_file", json!({"path": "src/lib.rs", "source": source, "max_lines": 1})).await.unwrap();
        assert_eq!(output.data["content"], json!(expected), "{source}");
        assert_eq!(output.data["source"], json!(source));
    }
    let range = call(
        &fixture,
        "read_file",
        json!({"path": "src/lib.rs", "source": "head", "line_start": 9, "line_end": 11, "with_line_number": true}),
    )
    .await
    .unwrap();
    assert_eq!(range.data["content"], json!("     9\tline 9\n    10\tline 10\n    11\tline 11\n"));
    assert_eq!((range.data["line_start"].clone(), range.data["line_end"].clone()), (json!(9), json!(11)));
    assert!(!range.truncated);
    let capped =
        call(&fixture, "read_file", json!({"path": "src/lib.rs", "source": "head", "max_lines": 5})).await.unwrap();
    assert!(capped.truncated);
    assert_eq!(capped.data["line_end"], json!(5));
    let bytes =
        call(&fixture, "read_file", json!({"path": "src/lib.rs", "source": "head", "max_bytes": 10})).await.unwrap();
    assert!(bytes.truncated && bytes.data["content"].as_str().unwrap().len() <= 10);
    let past = call(&fixture, "read_file", json!({"path": "src/lib.rs", "source": "head", "line_start": 99})).await;
    assert!(refused(past).contains("past the end"));
}

#[tokio::test]
async fn paths_that_leave_the_repository_are_refused() {
    let fixture = fixture();
    for path in ["../secret.txt", "/etc/passwd", ".git/config", "src/../../x", "escape.txt"] {
        let message = refused(call(&fixture, "read_file", json!({"path": path})).await);
        assert!(!message.is_empty(), "{path}");
    }
    let inside = call(&fixture, "read_file", json!({"path": "inside.md"})).await.unwrap();
    assert_eq!(inside.data["content"], json!("# Guide\n\n## Install\n"), "a symlink inside the repository is fine");
    assert!(refused(call(&fixture, "list_files", json!({"path": "../"})).await).contains(".."));
    assert!(refused(call(&fixture, "grep", json!({"pattern": "x", "glob": "../*"})).await).contains("inside"));
}

#[tokio::test]
async fn walks_skip_symlinks_ignored_files_and_internal_state_and_report_caps() {
    let fixture = fixture();
    let all = call(&fixture, "list_files", json!({})).await.unwrap();
    let files: Vec<&str> = all.data["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(files, [".gitignore", "data.json", "docs/guide.md", "src/lib.rs", "src/main.go"]);
    assert!(!all.truncated);
    let capped = call(&fixture, "list_files", json!({"max_entries": 2})).await.unwrap();
    assert_eq!(capped.data["files"].as_array().unwrap().len(), 2);
    assert!(capped.truncated);
    let found = call(&fixture, "find", json!({"name": "*.go", "type": "file"})).await.unwrap();
    assert_eq!(found.data["entries"], json!([{"path": "src/main.go", "type": "file"}]));
    let folders = call(&fixture, "find", json!({"type": "directory"})).await.unwrap();
    assert_eq!(
        folders.data["entries"],
        json!([{"path": "docs", "type": "directory"}, {"path": "src", "type": "directory"}])
    );
}

/// A FIFO or a socket in the tree is reported as what it is by `find`,
/// never as a file, and `list_files` and `grep` leave it alone (reading a
/// FIFO would block).
#[tokio::test]
async fn find_reports_fifos_and_sockets_as_such_and_other_walks_skip_them() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn pipe() {}\n").unwrap();
    let made = std::process::Command::new("mkfifo").arg(root.join("src/pipe")).status().unwrap();
    assert!(made.success(), "mkfifo");
    let _socket = std::os::unix::net::UnixListener::bind(root.join("src/ctl.sock")).unwrap();
    let files = Arc::new(RepoFiles::rooted(&root, None));
    let mut registry = ToolRegistry::new();
    registry.extend(tools::repository::tools(&files));
    let call = |name: &'static str, arguments: Value| {
        let tool = registry.get(name).unwrap();
        async move { tool.call(&arguments.to_string(), CancellationToken::new()).await.unwrap() }
    };
    let all = call("find", json!({"path": "src"})).await;
    assert_eq!(
        all.data["entries"],
        json!([
            {"path": "src/ctl.sock", "type": "socket"},
            {"path": "src/lib.rs", "type": "file"},
            {"path": "src/pipe", "type": "fifo"},
        ])
    );
    let only_files = call("find", json!({"type": "file"})).await;
    assert_eq!(only_files.data["entries"], json!([{"path": "src/lib.rs", "type": "file"}]));
    let listed = call("list_files", json!({})).await;
    assert_eq!(listed.data["files"], json!(["src/lib.rs"]));
    let hits = call("grep", json!({"pattern": "pipe"})).await;
    assert_eq!(hits.data["matches"], json!([{"path": "src/lib.rs", "line": 1, "text": "pub fn pipe() {}"}]));
}

#[tokio::test]
async fn grep_is_bounded_and_rejects_bad_patterns() {
    let fixture = fixture();
    let hits = call(&fixture, "grep", json!({"pattern": "^line", "glob": "*.rs"})).await.unwrap();
    assert_eq!(hits.data["matches"], json!([]), "the worktree lib.rs changed and target/ is ignored");
    let hits = call(&fixture, "grep", json!({"pattern": "func", "path": "src", "max_matches": 1})).await.unwrap();
    assert_eq!(hits.data["matches"], json!([{"path": "src/main.go", "line": 5, "text": "func (s *Server) Run() {}"}]));
    assert!(hits.truncated);
    assert!(refused(call(&fixture, "grep", json!({"pattern": "(unclosed"})).await).contains("invalid pattern"));
    assert!(refused(call(&fixture, "grep", json!({"pattern": "a", "extra": 1})).await).contains("invalid arguments"));
}

#[tokio::test]
async fn inspect_file_and_jq_report_sizes_outlines_and_previews() {
    let fixture = fixture();
    let go = call(&fixture, "inspect_file", json!({"path": "src/main.go"})).await.unwrap();
    assert_eq!(go.data["outline_kind"], json!("code"));
    assert_eq!(go.data["lines"], json!(7));
    assert_eq!(go.data["outline"][1], json!({"kind": "method", "name": "Server.Run", "line": 5}));
    let plain = call(&fixture, "inspect_file", json!({"path": ".gitignore"})).await.unwrap();
    assert_eq!((plain.data["outline_kind"].clone(), plain.data["outline"].clone()), (json!("none"), json!([])));
    let value = call(&fixture, "jq", json!({"path": "data.json", "pointer": "/items/1"})).await.unwrap();
    assert_eq!(value.data["value"], json!(2));
    let preview = call(&fixture, "jq", json!({"path": "data.json", "pointer": "", "max_bytes": 20})).await.unwrap();
    assert!(preview.truncated && preview.data.get("value").is_none());
    assert!(preview.data["value_preview"].as_str().unwrap().ends_with("[truncated]\n"));
    assert!(preview.data["value_bytes"].as_u64().unwrap() > 20);
    assert!(
        refused(call(&fixture, "jq", json!({"path": "data.json", "pointer": "/nope"})).await)
            .contains("names nothing: the document is an object")
    );
}

#[tokio::test]
async fn staged_tools_see_the_index_not_the_worktree() {
    let fixture = fixture();
    let paths = call(&fixture, "git_staged_paths", json!({})).await.unwrap();
    assert_eq!(paths.data, json!({"paths": ["src/lib.rs"]}));
    let status = call(&fixture, "git_staged_status", json!({})).await.unwrap();
    assert_eq!(status.data, json!({"status": [{"path": "src/lib.rs", "staging": "M"}]}));
    let stat = call(&fixture, "git_staged_stat", json!({})).await.unwrap();
    assert_eq!(stat.data["stats"][0]["deletes"], json!(50));
    let diff = call(&fixture, "git_staged_diff", json!({"max_lines": 8})).await.unwrap();
    assert!(diff.truncated && diff.data["diff"].as_str().unwrap().ends_with("[truncated]\n"));
    assert!(!diff.data["diff"].as_str().unwrap().contains("worktree version"));
    let scoped = call(&fixture, "git_staged_diff_for_paths", json!({"paths": ["docs"]})).await.unwrap();
    assert_eq!(scoped.data["diff"], json!(""));
    assert!(refused(call(&fixture, "git_staged_diff_for_paths", json!({"paths": []})).await).contains("at least one"));
    let commits = call(&fixture, "git_recent_commits", json!({"limit": 1})).await.unwrap();
    assert_eq!(commits.data["commits"][0]["summary"], json!("init"));
    assert!(!commits.truncated, "only one commit exists");
    fixture.repo.git(&["commit", "-q", "-m", "second"]);
    let commits = call(&fixture, "git_recent_commits", json!({"limit": 1})).await.unwrap();
    assert!(commits.truncated, "more commits exist than the limit");
}

#[tokio::test]
async fn head_revision_and_amend_tools_read_commits_not_the_worktree() {
    let fixture = fixture();
    let show = call(&fixture, "git_head_show", json!({"max_bytes": null, "max_lines": null})).await.unwrap();
    let text = show.data["show"].as_str().unwrap();
    assert!(text.contains("Parents: (root commit)") && text.contains("    init\n"), "{text}");
    assert!(text.contains("+line 50"), "the root commit's patch versus the empty tree");
    let parent = call(&fixture, "git_diff_against_parent", json!({"max_bytes": null, "max_lines": 4})).await.unwrap();
    assert!(parent.truncated);
    let file = call(
        &fixture,
        "git_show_file_at_rev",
        json!({"rev": "HEAD", "path": "src/lib.rs", "max_bytes": null, "max_lines": 2}),
    )
    .await
    .unwrap();
    assert_eq!(file.data["content"], json!("line 1\nline 2\n[truncated]\n"));
    let refused_rev = refused(
        call(
            &fixture,
            "git_show_file_at_rev",
            json!({"rev": "--all", "path": "x", "max_bytes": null, "max_lines": null}),
        )
        .await,
    );
    assert!(refused_rev.contains("must name a commit"), "{refused_rev}");
    let outside = refused(
        call(
            &fixture,
            "git_show_file_at_rev",
            json!({"rev": "HEAD", "path": "../x", "max_bytes": null, "max_lines": null}),
        )
        .await,
    );
    assert!(outside.contains(".."), "{outside}");
    let amended =
        call(&fixture, "git_final_amended_diff", json!({"max_bytes": null, "max_lines": null})).await.unwrap();
    let amended = amended.data["diff"].as_str().unwrap();
    assert!(
        amended.contains("+staged version") && amended.contains("new file mode"),
        "HEAD is a root commit: {amended}"
    );
    let delta = call(&fixture, "git_amend_delta", json!({"max_bytes": null, "max_lines": null})).await.unwrap();
    assert!(delta.data["diff"].as_str().unwrap().contains("-line 1\n"));
}

/// commit-msg and explore share one implementation of the revision tools:
/// over the whole repository paths are repository-relative, over a folder
/// they are relative to it and nothing above it is visible.
#[tokio::test]
async fn revision_tools_read_the_same_commit_from_the_repository_or_a_folder() {
    let fixture = fixture();
    let git = Repository::discover(fixture.repo.path()).unwrap();
    let folder = Arc::new(RepoFiles::rooted(&fixture.repo.path().join("src"), Some(git)));
    let mut explore = ToolRegistry::new();
    explore.extend(tools::history::tools(&folder));
    let read = |path: &str| json!({"rev": "HEAD", "path": path, "max_bytes": null, "max_lines": 1}).to_string();
    let whole =
        call(&fixture, "git_show_file_at_rev", serde_json::from_str(&read("src/lib.rs")).unwrap()).await.unwrap();
    let tool = explore.get("git_show_file_at_rev").unwrap();
    let beneath = tool.call(&read("lib.rs"), CancellationToken::new()).await.unwrap();
    assert_eq!(whole.data["content"], json!("line 1\n[truncated]\n"));
    assert_eq!(beneath.data["content"], whole.data["content"]);
    assert_eq!(beneath.data["path"], json!("lib.rs"));
    let above = refused(tool.call(&read("../data.json"), CancellationToken::new()).await);
    assert!(above.contains(".."), "{above}");
    let caps = json!({"max_bytes": null, "max_lines": null}).to_string();
    let show = explore.get("git_head_show").unwrap().call(&caps, CancellationToken::new()).await.unwrap();
    let text = show.data["show"].as_str().unwrap();
    assert!(text.contains("+++ b/lib.rs") && !text.contains("data.json"), "only the folder, relative to it: {text}");
    assert_eq!(show.data["changed_beneath_root"], json!(true));
    let whole_show = call(&fixture, "git_head_show", json!({"max_bytes": null, "max_lines": null})).await.unwrap();
    assert!(whole_show.data["show"].as_str().unwrap().contains("+++ b/data.json"));
    assert!(whole_show.data.get("changed_beneath_root").is_none());
    let path_doc = |registry: &ToolRegistry| {
        let spec = registry.specs().into_iter().find(|spec| spec.name == "git_show_file_at_rev").unwrap();
        spec.parameters["properties"]["path"]["description"].clone()
    };
    assert_eq!(path_doc(&fixture.registry), json!("Repository-relative file path."));
    assert_eq!(path_doc(&explore), json!("File path relative to the exploration root."));
}

/// Committed links out of the repository: the index and HEAD hold their
/// targets as blobs, which no tool may return or walk through.
#[tokio::test]
async fn committed_symlinks_are_not_read_from_the_index_head_or_a_revision() {
    let fixture = fixture();
    let outside = fixture.repo.path().parent().unwrap().join("zqx-outside-name");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("inner.txt"), "zqx outside bytes\n").unwrap();
    std::os::unix::fs::symlink(&outside, fixture.repo.path().join("escape-dir")).unwrap();
    fixture.repo.git(&["add", "escape.txt", "escape-dir"]);
    fixture.repo.git(&["commit", "-q", "-m", "links"]);
    let mut envelopes = Vec::new();
    for source in ["index", "head"] {
        for path in ["escape.txt", "escape-dir", "escape-dir/inner.txt"] {
            let read = json!({"path": path, "source": source, "line_start": null, "line_end": null,
                "with_line_number": null, "max_bytes": null, "max_lines": null});
            envelopes.push(refused(call(&fixture, "read_file", read).await));
            envelopes.push(refused(call(&fixture, "inspect_file", json!({"path": path, "source": source})).await));
        }
    }
    let show = json!({"rev": "HEAD", "path": "escape.txt", "max_bytes": null, "max_lines": null});
    envelopes.push(refused(call(&fixture, "git_show_file_at_rev", show).await));
    for envelope in &envelopes {
        assert!(!envelope.contains("zqx") && !envelope.contains("secret.txt"), "{envelope}");
    }
    let git = Repository::discover(fixture.repo.path()).unwrap();
    let index = Arc::new(RepoFiles::new(git, FileSource::Index));
    let listed = tools::repository::tools(&index).into_iter().find(|tool| tool.name() == "list_files").unwrap();
    let all = listed.call(r#"{"path":null,"max_entries":null}"#, CancellationToken::new()).await.unwrap();
    assert!(!all.data.to_string().contains("escape"), "symlink entries are skipped: {}", all.data);
    let through = listed.call(r#"{"path":"escape-dir","max_entries":null}"#, CancellationToken::new()).await;
    assert!(refused(through).contains("symlink"), "a walk through a tracked link is an error, not an empty listing");
}

#[test]
fn every_schema_is_strict() {
    let fixture = fixture();
    for spec in fixture.registry.specs() {
        let schema = &spec.parameters;
        assert_eq!(schema["type"], json!("object"), "{}", spec.name);
        assert_eq!(schema["additionalProperties"], json!(false), "{}", spec.name);
        let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        let required: Vec<&str> = schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(properties.len(), required.len(), "{}: strict mode requires every property", spec.name);
        for (name, property) in schema["properties"].as_object().unwrap() {
            if property["type"].to_string().contains("integer") {
                assert!(
                    property.get("minimum").is_some() && property.get("maximum").is_some(),
                    "{}.{name} bounds",
                    spec.name
                );
            }
        }
    }
}

//! `git-agent release-note` end to end: usage and `--out` checks before
//! any work, range resolution through the real binaries, and generation
//! against the fake provider: the strict document schema and the prepared
//! context on the wire, only `repo_summary` and skill tools offered, the
//! Markdown built locally (stdout, or the `--out` file with the console
//! trace on stdout), one repair pass.

use git_agent_tests::fake_openai::{FakeOpenAi, RecordedRequest, Reply, events};
use git_agent_tests::{GitRepo, TestEnv, assert_golden};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

/// An environment whose provider is a fresh fake server.
fn with_fake() -> (TestEnv, FakeOpenAi) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    (env, fake)
}

/// A model answer: one bullet per `(section, label, summary, sha)`.
fn answer(bullets: &[(&str, Option<&str>, &str, &str)]) -> String {
    let mut sections: Vec<(String, Vec<Value>)> = Vec::new();
    for (heading, label, summary, sha) in bullets {
        let bullet =
            json!({"label": label, "summary": summary, "refs": [{"type": "commit", "value": sha}], "children": []});
        match sections.iter_mut().find(|(existing, _)| existing == heading) {
            Some((_, list)) => list.push(bullet),
            None => sections.push((heading.to_string(), vec![bullet])),
        }
    }
    let sections: Vec<Value> =
        sections.into_iter().map(|(heading, bullets)| json!({"heading": heading, "bullets": bullets})).collect();
    json!({ "sections": sections }).to_string()
}

fn reply(text: &str) -> Reply {
    Reply::Events(events::text_reply(text, events::usage(300, 0, 40)))
}

/// A repository with a GitHub `origin`, tagged `v1.0.0`, then a feature
/// and a fix tagged `v1.1.0`; returns it with the two commit ids.
fn release_repo(env: &TestEnv) -> (GitRepo, String, String) {
    let repo = env.repo("app");
    repo.git(&["remote", "add", "origin", "git@github.com:acme/app.git"]);
    repo.write("src/main.rs", "fn main() {}\n");
    repo.commit_all("chore: initial import");
    repo.git(&["tag", "-a", "v1.0.0", "-m", "release 1.0.0"]);
    repo.write("src/search.rs", "pub fn search(limit: usize) -> usize {\n    limit.min(100)\n}\n");
    repo.commit_all("feat(search): cap results at 100 (#12)");
    let feature = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("src/main.rs", "fn main() {\n    std::process::exit(0);\n}\n");
    repo.commit_all("fix: exit cleanly");
    let fix = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.git(&["tag", "v1.1.0"]);
    (repo, feature, fix)
}

fn scripted_answer(feature: &str, fix: &str) -> String {
    answer(&[
        ("New Features", Some("Search"), "Search returns at most 100 results", &feature[..12]),
        ("Bug Fixes", None, "The process exits with status 0 when it finishes", &fix[..7]),
    ])
}

/// The request body with the repository path replaced.
fn normalized(request: &RecordedRequest, repo: &GitRepo) -> String {
    let body = serde_json::to_string_pretty(&request.body).unwrap();
    let root = repo.path().canonicalize().unwrap();
    body.replace(root.to_str().unwrap(), "<repo>").replace(repo.path().to_str().unwrap(), "<repo>")
}

#[test]
fn the_scripted_document_is_rendered_locally_on_stdout() {
    let (env, fake) = with_fake();
    let (repo, feature, fix) = release_repo(&env);
    fake.push(reply(&scripted_answer(&feature, &fix)));
    let run = env.run_in(repo.path(), &["release-note", "v1.0.0", "v1.1.0"]);
    let stdout = run.success();
    assert_golden("release-note.md", &stdout);
    assert!(stdout.contains(&format!("https://github.com/acme/app/commit/{feature}")), "{stdout}");
    assert!(run.stderr.contains("llm.usage step=1 input_tokens=300"), "{}", run.stderr);
    assert!(!run.stderr.contains("sk-e2e-secret-key"));

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.tool_names(), ["repo_summary"], "no tool but repo_summary without skills-mgr");
    let format = &request.body["text"]["format"];
    assert_eq!(
        (&format["type"], &format["strict"], &format["name"]),
        (&json!("json_schema"), &json!(true), &json!("release_note"))
    );
    assert_eq!(format["schema"]["additionalProperties"], json!(false));
    assert_eq!(format["schema"]["required"], json!(["sections"]));
    let user = request
        .input_texts()
        .into_iter()
        .find(|text| text.contains("<prepared_release_context>"))
        .expect("the prepared context frame");
    for expected in [
        r#""range": "v1.0.0..v1.1.0""#,
        r#""candidates": ["#,
        r#""draft_fact": "#,
        r#""patch_excerpt": "#,
        r#""signals": ["#,
        r#""policy_hints": ["#,
        "feat(search): cap results at 100 (#12)",
        "+    limit.min(100)",
    ] {
        assert!(user.contains(expected), "{expected} missing from the prompt:\n{user}");
    }
    assert_golden("release-note-request.json", &format!("{}\n", normalized(request, &repo)));
}

#[test]
fn out_streams_the_trace_and_writes_the_markdown_to_the_file() {
    let (env, fake) = with_fake();
    let (repo, feature, fix) = release_repo(&env);
    fake.push(reply(&scripted_answer(&feature, &fix)));
    let run = env.run_in(repo.path(), &["release-note", "--out", "notes/RELEASE.md", "v1.0.0", "v1.1.0"]);
    let out = repo.path().join("notes/RELEASE.md");
    assert!(run.failure().contains("the folder"), "the folder must exist: {}", run.stderr);
    assert!(fake.requests().is_empty(), "the --out check comes before any request");

    std::fs::create_dir(repo.path().join("notes")).unwrap();
    let run = env.run_in(repo.path(), &["release-note", "--out", "notes/RELEASE.md", "v1.0.0", "v1.1.0"]);
    let stdout = run.success();
    let written = std::fs::read_to_string(&out).unwrap();
    assert_golden("release-note.md", &written);
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o644, "a new file is 0644");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.first().is_some_and(|line| line.contains(" INF session command=release-note ")), "{stdout}");
    assert!(lines.iter().any(|line| line.contains(" INF request step=1 ")), "{stdout}");
    assert!(lines.iter().any(|line| line.ends_with(" INF final")), "{stdout}");
    assert!(!stdout.contains("llm.usage"), "usage stays on stderr: {stdout}");
    assert!(run.stderr.contains("llm.usage"), "{}", run.stderr);
    assert!(!stdout.starts_with("###"), "the Markdown goes to the file, not stdout");
    assert!(!stdout.contains("sk-e2e-secret-key"));
}

#[test]
fn skill_tools_join_repo_summary_and_tool_calls_run() {
    let (mut env, fake) = with_fake();
    let bin = env.work().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("skills-mgr");
    std::fs::write(&script, "#!/bin/sh\nprintf '## Skills\\n\\n- notes: release style\\n'\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.set_env("PATH", &format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()));
    let (repo, feature, fix) = release_repo(&env);
    fake.push(Reply::Events(events::tool_calls(&[("c1", "repo_summary", "{}")], events::usage(1, 0, 1))));
    fake.push(reply(&scripted_answer(&feature, &fix)));
    env.run_in(repo.path(), &["release-note", "v1.0.0", "v1.1.0"]).success();
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let mut names = requests[0].tool_names();
    names.sort();
    assert_eq!(names, ["repo_summary", "skills_read"]);
    let output = requests[1].input_texts().into_iter().find(|text| text.contains("\"repo_summary\"")).unwrap();
    let envelope: Value = serde_json::from_str(&output).unwrap();
    assert_eq!(envelope["ok"], json!(true));
    assert!(envelope["data"]["remotes"]["origin"].to_string().contains("acme/app"), "{envelope}");
}

#[test]
fn an_invalid_document_is_repaired_once() {
    let (env, fake) = with_fake();
    let (repo, feature, fix) = release_repo(&env);
    let outside = answer(&[("New Features", None, "Search returns at most 100 results", "deadbeefdeadbeef")]);
    fake.push(reply(&outside));
    fake.push(reply(&scripted_answer(&feature, &fix)));
    let run = env.run_in(repo.path(), &["release-note", "v1.0.0", "v1.1.0"]);
    assert_golden("release-note.md", &run.success());
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let repair = requests[1].input_texts().last().cloned().unwrap_or_default();
    assert!(repair.contains("deadbeefdeadbeef") && repair.contains("is not in v1.0.0..v1.1.0"), "{repair}");
    assert!(requests[1].body.get("tools").is_none(), "the repair request offers no tools");
    assert_eq!(requests[1].body["text"]["format"], requests[0].body["text"]["format"], "the schema still applies");
}

#[test]
fn an_answer_invalid_twice_fails_with_no_markdown_anywhere() {
    let (env, fake) = with_fake();
    let (repo, _, _) = release_repo(&env);
    fake.push(reply("### New Features\n\n- prose instead of JSON"));
    fake.push(reply(&answer(&[("Misc", None, "Something", "deadbeef")])));
    let run = env.run_in(repo.path(), &["release-note", "v1.0.0", "v1.1.0"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert!(stderr.contains("failed validation after one repair"), "{stderr}");
    assert_eq!(fake.requests().len(), 2);

    fake.push(reply("not json"));
    fake.push(reply("still not json"));
    let out = env.work().join("notes.md");
    let run = env.run_in(repo.path(), &["release-note", "--out", out.to_str().unwrap(), "v1.0.0", "v1.1.0"]);
    assert_eq!(run.code, Some(1));
    assert!(!out.exists(), "a failed run leaves no file behind");
    assert!(!run.stdout_text().contains("###"), "only trace lines: {}", run.stdout_text());
}

/// One commit tagged `tag` (annotated or not), then a feature commit.
fn tagged_repo(env: &TestEnv, name: &str, tag: &str, annotated: bool) -> GitRepo {
    let repo = env.repo(name);
    repo.write("src/main.rs", "fn main() {}\n");
    repo.commit_all("chore: initial import");
    if annotated {
        repo.git(&["tag", "-a", tag, "-m", "release"]);
    } else {
        repo.git(&["tag", tag]);
    }
    repo.write("src/search.rs", "pub fn search() {}\n");
    repo.commit_all("feat: add search");
    repo
}

#[test]
fn no_version_tag_fails_with_a_hint_and_empty_stdout() {
    let env = TestEnv::new();
    let repo = env.repo("untagged");
    repo.write("a.txt", "a\n");
    repo.commit_all("first");
    let run = env.run_in(repo.path(), &["release-note", "patch"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert!(stderr.starts_with("error: no semantic version tag (vX.Y.Z or X.Y.Z) is reachable from HEAD"), "{stderr}");
    assert!(stderr.contains("hint: tag the last release"), "{stderr}");
}

#[test]
fn out_to_a_missing_folder_fails_before_anything_else() {
    let env = TestEnv::new();
    // Not a repository, and v1/v2 exist nowhere: only the --out check runs.
    let run = env.run_in(&env.work(), &["release-note", "--out", "/nonexistent/dir/x.md", "v1", "v2"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(1));
    assert_eq!(
        stderr,
        "error: --out /nonexistent/dir/x.md: the folder /nonexistent/dir does not exist\nhint: create it first, or choose another path\n"
    );
}

#[test]
fn out_to_an_unwritable_path_fails_before_any_request() {
    let (env, fake) = with_fake();
    let (repo, feature, fix) = release_repo(&env);
    fake.push(reply(&scripted_answer(&feature, &fix)));
    let locked = repo.path().join("locked.md");
    std::fs::write(&locked, "old notes\n").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = env.run_in(repo.path(), &["release-note", "--out", "locked.md", "v1.0.0", "v1.1.0"]);
    assert!(run.failure().contains("is read-only"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&locked).unwrap(), "old notes\n");

    let run = env.run_in(repo.path(), &["release-note", "--out", ".", "patch"]);
    assert!(run.failure().contains("is a folder"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(fake.requests().is_empty(), "no request reached the provider");
}

#[test]
fn usage_errors_exit_2() {
    let env = TestEnv::new();
    let run = env.run_in(&env.work(), &["release-note"]);
    assert!(run.failure().contains("required arguments were not provided"), "{}", run.stderr);
    assert_eq!(run.code, Some(2));

    let run = env.run_in(&env.work(), &["release-note", "a", "b", "c"]);
    assert!(run.failure().contains("unexpected value 'c'"), "{}", run.stderr);
    assert_eq!(run.code, Some(2));

    let run = env.run_in(&env.work(), &["release-note", "micro"]);
    let stderr = run.failure();
    assert_eq!(run.code, Some(2));
    assert!(
        stderr.starts_with("error: release-note takes <base> <release> or patch|minor|major; \"micro\""),
        "{stderr}"
    );
}

#[test]
fn bumps_from_either_tag_spelling_resolve_before_generation() {
    let (env, fake) = with_fake();
    for (tag, annotated) in [("v1.2.3", true), ("1.2.3", false)] {
        let repo = tagged_repo(&env, &format!("bump-{tag}"), tag, annotated);
        let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
        for (bump, version) in [("patch", "1.2.4"), ("minor", "1.3.0"), ("major", "2.0.0")] {
            fake.push(reply(&answer(&[("New Features", None, "Add search", &head)])));
            let run = env.run_in(repo.path(), &["release-note", "--debug", bump]);
            let stdout = run.success();
            assert!(
                run.stderr.starts_with(&format!(
                    "release-note: prepared {tag}..{version} (1 commits, 0 submodule groups, 1 candidates"
                )),
                "{}",
                run.stderr
            );
            assert!(stdout.starts_with("### New Features\n\n- Add search ("), "{stdout}");
            assert!(stdout.contains("### Full Changelog"), "{stdout}");
            let user = fake.requests().last().unwrap().input_texts().join("\n");
            assert!(user.contains(&format!("\"version\": \"{version}\"")), "{user}");
            assert!(user.contains("<mode>version-bump</mode>"), "{user}");
        }
    }
}

#[test]
fn explicit_ranges_resolve_tags_of_both_kinds() {
    let (env, fake) = with_fake();
    let repo = tagged_repo(&env, "explicit", "v1.0.0", true);
    repo.git(&["tag", "v1.1.0"]);
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    fake.push(reply(&answer(&[("New Features", None, "Add search", &head)])));
    let out = env.work().join("notes.md");
    let run = env.run_in(repo.path(), &["release-note", "--debug", "--out", out.to_str().unwrap(), "v1.0.0", "v1.1.0"]);
    run.success();
    assert!(run.stderr.starts_with("release-note: prepared v1.0.0..v1.1.0 (1 commits"), "{}", run.stderr);
    assert!(std::fs::read_to_string(&out).unwrap().starts_with("### New Features\n"));

    let run = env.run_in(repo.path(), &["release-note", "v1.0.0", "v9.9.9"]);
    assert!(run.failure().starts_with("error: unknown revision \"v9.9.9\""), "{}", run.stderr);

    let run = env.run_in(repo.path(), &["release-note", "v1.1.0", "v1.0.0"]);
    assert!(run.failure().contains("hint: v1.0.0 has no commits that v1.1.0 lacks"), "{}", run.stderr);
}

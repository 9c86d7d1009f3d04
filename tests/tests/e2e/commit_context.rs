//! The prepared context of the commit-message family in temporary
//! repositories: scoped guidance, detached HEAD, root and unborn commits,
//! amend with a narrower staged delta, submodule movements with and
//! without local history, the local submodule-only message (no provider,
//! no credentials), generated-heavy compaction with a handwritten outlier,
//! truncation with a focus diff, and the golden amend request.

use git_agent_tests::fake_openai::{FakeOpenAi, RecordedRequest, Reply, events};
use git_agent_tests::{GitRepo, TestEnv, assert_golden};
use serde_json::{Value, json};

fn env_with(fake: &FakeOpenAi) -> TestEnv {
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    env
}

/// The JSON data frame `<frame>` of the request's user prompt.
fn frame(request: &RecordedRequest, frame: &str) -> Value {
    let open = format!("<{frame}>\n");
    let close = format!("\n</{frame}>");
    let user =
        request.input_texts().into_iter().find(|text| text.contains(&open)).expect("the data frame is in the request");
    let start = user.find(&open).unwrap() + open.len();
    let end = user.rfind(&close).unwrap();
    serde_json::from_str(&user[start..end]).expect("the frame is JSON")
}

fn prepared(request: &RecordedRequest) -> Value {
    frame(request, "prepared_commit_context")
}

fn reply(fake: &FakeOpenAi, text: &str) {
    fake.push(Reply::Events(events::text_reply(text, events::usage(1, 0, 1))));
}

#[test]
fn nested_guidance_follows_the_staged_paths_and_ignores_claude_files() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = env.repo("nested");
    repo.write("app/AGENTS.md", "App rule: name the module.\n");
    repo.write("app/core/deep/AGENTS.md", "Deep rule: mention invariants.\n");
    repo.write("app/core/deep/CLAUDE.md", "Claude rule: must be ignored.\n");
    repo.write("other/AGENTS.md", "Other rule: not on the staged path.\n");
    repo.write("app/core/deep/x.rs", "fn x() {}\n");
    repo.commit_all("feat: start");
    repo.write("app/core/deep/x.rs", "fn x() -> u8 { 1 }\n");
    repo.git(&["add", "-A"]);
    reply(&fake, "fix(deep): return one from x");
    assert_eq!(env.run_in(&repo.path().join("other"), &["commit-msg"]).success(), "fix(deep): return one from x\n");
    let guidance = fake.requests()[0].input_texts().into_iter().find(|text| text.contains("App rule")).unwrap();
    let (app, deep) = (guidance.find("App rule").unwrap(), guidance.find("Deep rule").unwrap());
    assert!(app < deep, "root-to-leaf order: {guidance}");
    assert!(!guidance.contains("Claude rule") && !guidance.contains("Other rule"), "{guidance}");
}

#[test]
fn detached_head_is_described_and_works() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = env.repo("detached");
    repo.write("a.txt", "a\n");
    repo.commit_all("feat: a");
    repo.write("a.txt", "b\n");
    repo.commit_all("fix: b");
    repo.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    repo.write("a.txt", "c\n");
    repo.git(&["add", "a.txt"]);
    reply(&fake, "fix: c");
    assert_eq!(env.run_in(repo.path(), &["commit-msg"]).success(), "fix: c\n");
    let context = prepared(&fake.requests()[0]);
    assert_eq!(context["head"]["detached"], json!(true));
    assert!(context["head"].get("branch").is_none(), "{}", context["head"]);
    assert_eq!(context["recent_commits"][0]["summary"], json!("feat: a"));
}

#[test]
fn root_and_unborn_heads_have_no_parent_to_compare() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = env.repo("root");
    repo.write("first.txt", "first\n");
    repo.git(&["add", "first.txt"]);
    reply(&fake, "feat: first file");
    assert_eq!(env.run_in(repo.path(), &["commit-msg"]).success(), "feat: first file\n");
    let unborn = prepared(&fake.requests()[0]);
    assert_eq!(unborn["head"]["unborn"], json!(true));
    assert!(unborn.get("previous_head_paths").is_none() && unborn["recent_commits"] == json!([]));

    repo.commit_all("feat: first file");
    repo.write("second.txt", "second\n");
    repo.git(&["add", "second.txt"]);
    reply(&fake, "feat: second file");
    assert_eq!(env.run_in(repo.path(), &["commit-msg"]).success(), "feat: second file\n");
    let root = prepared(&fake.requests()[1]);
    assert_eq!(root["head"]["root_commit"], json!(true));
    assert_eq!(root["previous_head_paths"], json!(["first.txt"]), "the root commit compares with the empty tree");
    assert!(root["previous_head_diff"].as_str().unwrap().contains("+first"));
    assert_eq!(root["staged_paths"], json!(["second.txt"]));
}

fn amend_fixture(env: &TestEnv) -> GitRepo {
    let repo = env.repo("amend");
    repo.write("README.md", "# Search\n");
    repo.commit_all("feat: start");
    repo.write("src/index.rs", "pub fn build() -> Vec<u32> {\n    Vec::new()\n}\n");
    repo.write("src/query.rs", "pub fn parse(q: &str) -> Vec<&str> {\n    q.split(' ').collect()\n}\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "feat(search): add the index and query parser\n\nThe index starts empty."]);
    repo.write("src/query.rs", "pub fn parse(q: &str) -> Vec<&str> {\n    q.split_whitespace().collect()\n}\n");
    repo.git(&["add", "src/query.rs"]);
    repo
}

#[test]
fn amend_keeps_the_original_subject_over_a_narrower_staged_delta() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = amend_fixture(&env);
    reply(&fake, "fix(search): split queries on any whitespace");
    reply(
        &fake,
        "feat(search): add the index and query parser\n\nThe index starts empty and queries split on any whitespace.",
    );
    let run = env.run_in(repo.path(), &["commit-msg", "--amend"]);
    assert_eq!(
        run.success(),
        "feat(search): add the index and query parser\n\nThe index starts empty and queries split on any whitespace.\n"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one repair pass");
    let first = &requests[0];
    let context = frame(first, "prepared_amend_context");
    assert_eq!(context["mode"], json!("amend"));
    assert_eq!(
        context["original_head_message"],
        json!("feat(search): add the index and query parser\n\nThe index starts empty.")
    );
    assert_eq!(context["head"]["summary"], json!("feat(search): add the index and query parser"));
    assert_eq!(context["final_paths"], json!(["src/index.rs", "src/query.rs"]), "the final commit, not the delta");
    assert_eq!(context["staged_paths"], json!(["src/query.rs"]));
    let final_diff = context["final_diff"].as_str().unwrap();
    assert!(final_diff.contains("+    q.split_whitespace().collect()") && final_diff.contains("+pub fn build()"));
    assert!(!final_diff.contains("split(' ')"), "the final diff overlays the staged change on HEAD");
    assert!(context["amend_delta"].as_str().unwrap().contains("-    q.split(' ').collect()"));
    assert!(context["head_diff"].as_str().unwrap().contains("+    q.split(' ').collect()"));
    let names = first.tool_names();
    for tool in [
        "git_head_show",
        "git_diff_against_parent",
        "git_final_amended_diff",
        "git_amend_delta",
        "git_show_file_at_rev",
    ] {
        assert!(names.iter().any(|name| name == tool), "{tool} missing: {names:?}");
    }
    let repair = requests[1].input_texts().last().cloned().unwrap();
    assert!(repair.contains("original HEAD subject"), "{repair}");
}

#[test]
fn amend_rejects_delta_phrasing_after_the_repair_too() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = amend_fixture(&env);
    reply(&fake, "feat(search): add the index and query parser\n\nAlso splits on whitespace.");
    reply(&fake, "feat(search): add the index and query parser\n\nThis amend splits on whitespace.");
    let run = env.run_in(repo.path(), &["commit-msg", "--amend"]);
    assert!(run.failure().contains("narrates a delta"), "{}", run.stderr);
}

#[test]
fn the_amend_request_matches_its_golden_file() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = amend_fixture(&env);
    reply(&fake, "feat(search): add the index and query parser");
    env.run_in(repo.path(), &["commit-msg", "--amend"]).success();
    let body = serde_json::to_string_pretty(&fake.requests()[0].body).unwrap();
    let root = repo.path().canonicalize().unwrap();
    let normalized = body.replace(root.to_str().unwrap(), "<repo>").replace(repo.path().to_str().unwrap(), "<repo>");
    assert_golden("commit-msg-amend-request.json", &format!("{normalized}\n"));
}

/// A repository with submodule `lib` (a clone of a local repository)
/// whose checkout moved two commits ahead; nothing staged yet.
fn submodule_fixture(env: &TestEnv) -> (GitRepo, Vec<String>) {
    let lib = env.repo("lib-origin");
    lib.write("lib.txt", "v1\n");
    lib.commit_all("Start the lib");
    let repo = env.repo("super");
    repo.write("README.md", "# Super\n");
    repo.commit_all("feat: start");
    repo.git(&["-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib-origin", "lib"]);
    repo.git(&["commit", "-q", "-m", "feat: add the lib submodule"]);
    let mut shas = Vec::new();
    for (content, message) in [("v2\n", "Add retry to fetch"), ("v3\n", "Bound the cache")] {
        std::fs::write(repo.path().join("lib/lib.txt"), content).unwrap();
        repo.git(&["-C", "lib", "commit", "-q", "-am", message]);
        shas.push(repo.git(&["-C", "lib", "rev-parse", "--short=7", "HEAD"]).trim().to_string());
    }
    shas.reverse();
    (repo, shas)
}

#[test]
fn a_moved_submodule_with_history_carries_its_commit_summaries() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let (repo, shas) = submodule_fixture(&env);
    repo.write("README.md", "# Super\n\nUses lib.\n");
    repo.git(&["add", "lib", "README.md"]);
    reply(&fake, "chore: update the lib and the readme");
    let message = env.run_in(repo.path(), &["commit-msg"]).success();
    assert_eq!(
        message,
        format!(
            "chore: update the lib and the readme\n\nlib\n  - {}: Bound the cache\n  - {}: Add retry to fetch\n",
            shas[0], shas[1]
        ),
        "the missing summaries are appended"
    );
    let context = prepared(&fake.requests()[0]);
    let sub = &context["staged_submodules"][0];
    assert_eq!(sub["path"], json!("lib"));
    assert_eq!(sub["local_history_available"], json!(true));
    let summaries: Vec<&str> =
        sub["commits"].as_array().unwrap().iter().map(|c| c["summary"].as_str().unwrap()).collect();
    assert_eq!(summaries, ["Bound the cache", "Add retry to fetch"]);
}

#[test]
fn a_moved_submodule_without_checkout_says_its_history_is_missing() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = env.repo("gone");
    repo.write("a.txt", "a\n");
    repo.git(&["add", "a.txt"]);
    repo.git(&["update-index", "--add", "--cacheinfo", &format!("160000,{},vendor/gone", "1".repeat(40))]);
    repo.git(&["commit", "-q", "-m", "feat: start"]);
    repo.git(&["update-index", "--cacheinfo", &format!("160000,{},vendor/gone", "2".repeat(40))]);
    repo.write("a.txt", "b\n");
    repo.git(&["add", "a.txt"]);
    reply(&fake, "chore: move vendor/gone and update a");
    let message = env.run_in(repo.path(), &["commit-msg"]).success();
    assert_eq!(message, "chore: move vendor/gone and update a\n", "no summaries to require");
    let sub = &prepared(&fake.requests()[0])["staged_submodules"][0];
    assert_eq!(sub["local_history_available"], json!(false));
    assert_eq!(sub["new_sha"], json!("2".repeat(40)));
    assert!(sub["availability_error"].as_str().unwrap().contains("checkout vendor/gone is missing"), "{sub}");
}

#[test]
fn a_submodule_only_change_is_formatted_locally_without_credentials() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    // A request would reach the fake server; there is no API key at all.
    env.set_env("OPENAI_BASE_URL", &fake.url());
    let (repo, shas) = submodule_fixture(&env);
    repo.git(&["add", "lib"]);
    let expected = format!(
        "chore(deps): update lib submodule\n\nlib\n  - {}: Bound the cache\n  - {}: Add retry to fetch\n",
        shas[0], shas[1]
    );
    assert_eq!(env.run_in(repo.path(), &["commit-msg"]).success(), expected);

    let run = env.run_in(repo.path(), &["commit"]);
    let stdout = run.success();
    assert!(!stdout.contains(" INF "), "no trace for a local message: {stdout}");
    assert!(stdout.starts_with("[main "), "git's summary: {stdout}");
    assert_eq!(repo.git(&["log", "-1", "--format=%B"]).trim_end(), expected.trim_end());
    assert!(fake.requests().is_empty(), "no request reached the provider");
}

/// Superproject `super` with submodule `webui`, which has its own
/// submodule `wiki`; `webui`'s checkout moved one commit ahead, the commit
/// that moved `wiki` one commit ahead (checked out recursively), and
/// nothing is staged yet. Returns the short ids of the `webui` and `wiki`
/// commits the movements span.
fn nested_submodule_fixture(env: &TestEnv) -> (GitRepo, String, String) {
    let file_ok = ["-c", "protocol.file.allow=always"];
    let wiki = env.repo("wiki-src");
    wiki.write("docs.md", "wildcards\n");
    wiki.commit_all("docs(godoxy): document wildcard route aliases");
    let wiki_base = wiki.git(&["rev-parse", "HEAD"]).trim().to_string();
    wiki.write("docs.md", "wildcards\nlabels\n");
    wiki.commit_all("docs(godoxy): document Docker label shortcuts");
    let wiki_release = wiki.git(&["rev-parse", "--short=7", "HEAD"]).trim().to_string();

    let webui = env.repo("webui-src");
    webui.git(&[&file_ok[..], &["submodule", "add", "-q", "../wiki-src", "wiki"]].concat());
    webui.git(&["-C", "wiki", "checkout", "-q", &wiki_base]);
    webui.commit_all("feat: add wiki submodule");
    let webui_base = webui.git(&["rev-parse", "HEAD"]).trim().to_string();
    webui.git(&["-C", "wiki", "checkout", "-q", "main"]);
    webui.commit_all("chore(deps): update wiki submodule");
    let webui_release = webui.git(&["rev-parse", "HEAD"]).trim().to_string();

    let repo = env.repo("super");
    repo.write("README.md", "# Super\n");
    repo.commit_all("feat: start");
    repo.git(&[&file_ok[..], &["submodule", "add", "-q", "../webui-src", "webui"]].concat());
    repo.git(&["-C", "webui", "checkout", "-q", &webui_base]);
    repo.git(&[&file_ok[..], &["-C", "webui", "submodule", "update", "-q", "--init", "--recursive"]].concat());
    repo.commit_all("feat: add webui submodule");
    repo.git(&["-C", "webui", "checkout", "-q", &webui_release]);
    repo.git(&[&file_ok[..], &["-C", "webui", "submodule", "update", "-q", "--init", "--recursive"]].concat());
    (repo, webui_release[..7].to_string(), wiki_release)
}

#[test]
fn a_nested_submodule_that_moved_gets_its_own_section() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let (repo, webui, wiki) = nested_submodule_fixture(&env);
    repo.write("README.md", "webui docs\n");
    repo.git(&["add", "webui", "README.md"]);
    reply(&fake, "chore: update webui and docs");
    let message = env.run_in(repo.path(), &["commit-msg"]).success();
    assert_eq!(
        message,
        format!(
            "chore: update webui and docs\n\nwebui\n  - {webui}: chore(deps): update wiki submodule\n\n\
             webui/wiki\n  - {wiki}: docs(godoxy): document Docker label shortcuts\n"
        ),
        "a section for webui, then one for webui/wiki"
    );
    let context = prepared(&fake.requests()[0]);
    let paths: Vec<&str> =
        context["staged_submodules"].as_array().unwrap().iter().map(|sub| sub["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["webui", "webui/wiki"]);
    assert_eq!(context["staged_submodules"][1]["nested_in"], json!("webui"));
}

#[test]
fn a_nested_submodule_is_in_the_local_submodule_only_message() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    env.set_env("OPENAI_BASE_URL", &fake.url());
    let (repo, webui, wiki) = nested_submodule_fixture(&env);
    repo.git(&["add", "webui"]);
    let expected = format!(
        "chore(deps): update webui submodule\n\nwebui\n  - {webui}: chore(deps): update wiki submodule\n\n\
         webui/wiki\n  - {wiki}: docs(godoxy): document Docker label shortcuts\n"
    );
    assert_eq!(env.run_in(repo.path(), &["commit-msg"]).success(), expected);
    assert!(fake.requests().is_empty(), "formatted without the model");
}

#[test]
fn a_generated_heavy_change_keeps_the_handwritten_outlier_raw() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = env.repo("generated");
    let header = "// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage gen\n";
    for n in 0..120 {
        repo.write(&format!("gen/f{n:03}.pb.go"), &format!("{header}\nconst F{n} = 1\n"));
    }
    repo.write("cmd/main.go", "package main\n\nfunc main() {}\n");
    repo.commit_all("feat: start");
    for n in 0..120 {
        repo.write(&format!("gen/f{n:03}.pb.go"), &format!("{header}\nconst F{n} = 2\nconst G{n} = 3\n"));
    }
    repo.write("cmd/main.go", "package main\n\nfunc main() { println(\"handwritten outlier\") }\n");
    repo.git(&["add", "-A"]);
    reply(&fake, "feat: regenerate the protos and greet from main");
    env.run_in(repo.path(), &["commit-msg"]).success();
    let request = &fake.requests()[0];
    let context = prepared(request);
    assert!(context.get("diff").is_none() && context["diff_omitted"].is_string(), "the generated diff is compacted");
    assert_eq!(context["context_pack"]["overview"]["generated_files"], json!(120));
    assert_eq!(context["staged_summary"]["paths"], json!(121));
    assert_eq!(context["outlier_diff_paths"], json!(["cmd/main.go"]));
    assert!(context["outlier_diff"].as_str().unwrap().contains("+func main() { println(\"handwritten outlier\") }"));
    assert!(request.tool_names().iter().any(|name| name == "git_staged_diff_for_paths"));
}

#[test]
fn a_truncated_diff_adds_a_focus_diff_of_the_paths_it_never_reached() {
    let fake = FakeOpenAi::start();
    let env = env_with(&fake);
    let repo = env.repo("large");
    repo.write("keep.txt", "keep\n");
    repo.commit_all("feat: start");
    let lines = |prefix: &str, count: usize| (0..count).map(|n| format!("{prefix} {n}\n")).collect::<String>();
    repo.write("a_big.txt", &lines("big", 1300));
    repo.write("b_medium.txt", &lines("medium", 200));
    repo.write("c_small.txt", &lines("small", 20));
    repo.git(&["add", "-A"]);
    reply(&fake, "feat: add the data files");
    env.run_in(repo.path(), &["commit-msg"]).success();
    let request = &fake.requests()[0];
    let context = prepared(request);
    assert_eq!(context["diff_truncated"], json!(true));
    assert!(context["diff"].as_str().unwrap().ends_with("[truncated]\n"), "the cut is stated in the diff");
    assert!(!context["diff"].as_str().unwrap().contains("b_medium.txt"));
    assert_eq!(context["focus_diff_paths"], json!(["b_medium.txt", "c_small.txt"]));
    let focus = context["focus_diff"].as_str().unwrap();
    assert!(focus.contains("diff --git a/b_medium.txt b/b_medium.txt") && focus.contains("+small 19"), "{focus}");
    assert!(request.tool_names().iter().any(|name| name == "git_staged_diff_for_paths"));
}

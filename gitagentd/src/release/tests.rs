//! Release-note preparation on real repositories built with `git`: ranges
//! with tags of both kinds, submodules whose gitlink moved (history
//! available and missing), documentation-only ranges, the prompt budget,
//! and golden files of the rendered context and of the final Markdown for
//! a scripted model answer (see [`crate::golden`]).

use super::*;
use gitagent_git::range::fixture::Fixture;
use gitagent_git::range::{EvidenceLimits, Interrupt};

fn golden(name: &str, actual: &str) {
    crate::golden::assert_golden(&format!("release/golden/{name}"), actual);
}

/// `acme/app` with the submodule `vendor/lib` (`../lib.git`), tagged
/// v1.0.0, then six commits: a feature, a fix, tests only, docs, a
/// dependency bump, and a submodule update over two library commits.
struct App {
    app: Fixture,
    lib: Fixture,
}

fn app_with_submodule() -> App {
    let app = Fixture::new();
    let lib = app.sibling("lib.git");
    lib.commit_file("src/lib.rs", "pub fn parse() {}\n", "chore: start the parser");

    app.write("README.md", "# app\n");
    app.write("src/main.rs", "fn main() {}\n");
    app.git(&["submodule", "add", "-q", "../lib.git", "vendor/lib"]);
    app.commit_all("chore: initial import");
    app.git(&["tag", "-a", "v1.0.0", "-m", "first release"]);
    app.git(&["remote", "add", "origin", "git@github.com:acme/app.git"]);

    app.write("src/search/rank.rs", "pub fn rank(age: u64) -> u64 {\n    u64::MAX - age\n}\n");
    app.write("tests/rank_test.rs", "#[test]\nfn ranks() {}\n");
    app.commit_all(
        "feat(search): rank results by recency (#12)\n\nResults now sort newest first, so fresh documents\nsurface without a query change.\n\nSigned-off-by: Test Author <author@example.test>",
    );
    app.write("src/index.rs", "pub fn open() -> Option<()> {\n    None\n}\n");
    app.commit_all("fix: handle an empty index\n\nOpening an index with no segments returned an error.\n\nFixes #7");
    app.write("tests/tie_test.rs", "#[test]\nfn ties() {}\n");
    app.commit_all("test: cover ranking ties");
    app.write("docs/ranking.md", "# Ranking\n\nNewest first.\n");
    app.commit_all("docs: describe ranking");
    app.write("Cargo.lock", "# lock\n");
    app.commit_all("chore(deps): refresh the lockfile");

    lib.commit_file("src/table.rs", "pub fn table() {}\n", "feat: parse tables");
    lib.commit_file("src/lib.rs", "pub fn parse() {}\npub mod table;\n", "fix(parser): keep trailing blank lines");
    let lib_head = lib.rev("HEAD");
    let checkout = app.root().join("vendor/lib");
    app.git_in(&checkout, &["fetch", "-q", "origin"]);
    app.git_in(&checkout, &["checkout", "-q", &lib_head]);
    app.git(&["add", "vendor/lib"]);
    app.commit_all("chore: update vendor/lib");
    App { app, lib }
}

fn context_of(fixture: &Fixture, request: RangeRequest) -> Result<ReleaseContext, PrepareError> {
    let history = fixture.history();
    let range = resolve_range(&history, &request)?;
    prepare(&history, &range, EvidenceLimits::default(), &Interrupt::default())
}

fn bump(bump: &str) -> RangeRequest {
    RangeRequest::Bump(bump.parse().unwrap())
}

#[test]
fn context_of_a_range_with_a_moved_submodule() {
    let App { app, lib } = app_with_submodule();
    let context = context_of(&app, bump("patch")).unwrap();
    assert_eq!(context.range, "v1.0.0..1.0.1");
    let subjects: Vec<&str> = context.parent_commits.iter().map(|commit| commit.summary.as_str()).collect();
    assert_eq!(
        subjects,
        [
            "feat(search): rank results by recency (#12)",
            "fix: handle an empty index",
            "test: cover ranking ties",
            "docs: describe ranking",
            "chore(deps): refresh the lockfile",
            "chore: update vendor/lib"
        ]
    );
    let included: Vec<bool> = context.parent_commits.iter().map(|c| c.release_note_policy.include).collect();
    assert_eq!(included, [true, true, false, true, false, false]);
    assert!(context.code_touched);
    assert_eq!(context.repository.web_url.as_deref(), Some("https://github.com/acme/app"));
    assert_eq!(context.repository.kind, "parent-with-submodules");
    let head = app.rev("HEAD");
    assert_eq!(
        context.repository.compare_url.as_deref(),
        Some(format!("https://github.com/acme/app/compare/v1.0.0...{head}").as_str())
    );
    let feature = &context.parent_commits[0];
    assert_eq!(feature.url.as_deref(), Some(format!("https://github.com/acme/app/commit/{}", feature.sha).as_str()));
    assert_eq!(feature.diffstat.describe(), "2 files, +5 -0");
    assert!(feature.patch_excerpt.starts_with("--- src/search/rank.rs\n@@ -0,0 +1,3 @@\n+pub fn rank"));

    let [submodule] = context.submodules.as_slice() else { panic!("one submodule: {:?}", context.submodules) };
    assert_eq!(submodule.movement, Movement::Moved);
    assert!(submodule.local_history_available);
    assert_eq!(submodule.repository_url.as_deref(), Some("https://github.com/acme/lib"));
    let lib_subjects: Vec<&str> = submodule.commits.iter().map(|commit| commit.summary.as_str()).collect();
    assert_eq!(lib_subjects, ["feat: parse tables", "fix(parser): keep trailing blank lines"]);
    assert_eq!(submodule.release_sha.as_deref(), Some(lib.rev("HEAD").as_str()));

    let sections: Vec<(&str, Option<&str>)> =
        context.candidates.iter().map(|c| (c.section, c.submodule.as_deref())).collect();
    assert_eq!(
        sections,
        [
            ("New Features", None),
            ("Bug Fixes", None),
            ("Improvements", None),
            ("New Features", Some("vendor/lib")),
            ("Bug Fixes", Some("vendor/lib"))
        ]
    );
    assert_eq!(context.recommended_sections, ["New Features", "Improvements", "Bug Fixes"]);
    let owners = context.link_owners();
    assert_eq!(owners.parent.as_deref(), Some("https://github.com/acme/app"));
    assert_eq!(owners.submodules.get("vendor/lib").map(String::as_str), Some("https://github.com/acme/lib"));

    let (parent, groups) = context.changelog();
    assert_eq!(parent.len(), 6);
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].entries.len(), 2);
}

#[test]
fn golden_release_context() {
    let App { app, .. } = app_with_submodule();
    let context = context_of(&app, bump("minor")).unwrap();
    golden("release_context.json", &context.render_for_prompt());
}

/// The model's answer, as the provider would return it.
const SCRIPTED_ANSWER: &str = r#"{
  "sections": [
    {"heading": "Bug Fixes", "bullets": [
      {"label": null, "summary": "Opening an empty index no longer fails", "refs": [{"type": "commit", "value": "COMMIT_FIX"}, {"type": "issue", "value": "7"}], "children": []}
    ]},
    {"heading": "New Features", "bullets": [
      {"label": "Search", "summary": "Results sort newest first", "refs": [{"type": "commit", "value": "COMMIT_FEAT"}, {"type": "pr", "value": "12"}], "children": [
        {"summary": "The parser library reads tables", "refs": [{"type": "commit", "value": "COMMIT_LIB"}]}
      ]}
    ]}
  ]
}"#;

#[test]
fn golden_markdown_for_a_scripted_answer() {
    let App { app, .. } = app_with_submodule();
    let context = context_of(&app, bump("patch")).unwrap();
    let short = |sha: &str| sha[..10].to_string();
    let answer = SCRIPTED_ANSWER
        .replace("COMMIT_FIX", &short(&context.parent_commits[1].sha))
        .replace("COMMIT_FEAT", &short(&context.parent_commits[0].sha))
        .replace("COMMIT_LIB", &short(&context.submodules[0].commits[0].sha));
    let document: Document = serde_json::from_str(&answer).unwrap();
    let markdown = finish(document, &context).unwrap();
    assert!(markdown.starts_with("### New Features\n"), "sections follow the standard order:\n{markdown}");
    golden("release_note.md", &markdown);
}

#[test]
fn finishing_rejects_commits_outside_the_range() {
    let App { app, .. } = app_with_submodule();
    let context = context_of(&app, bump("patch")).unwrap();
    let document: Document = serde_json::from_str(
        r#"{"sections": [{"heading": "Improvements", "bullets": [{"label": null, "summary": "Something", "refs": [{"type": "commit", "value": "abcdef0"}], "children": []}]}]}"#,
    )
    .unwrap();
    let errors = finish(document, &context).unwrap_err();
    assert!(errors[0].contains("refers to commit abcdef0, which is not in v1.0.0..1.0.1"), "{errors:?}");
}

/// Every problem of a document is listed once: a ref repeated in one
/// bullet, the same bad ref under the same summary in two sections, and a
/// value that is no sha at all are not reported again as missing commits.
#[test]
fn finishing_lists_each_problem_once() {
    let App { app, .. } = app_with_submodule();
    let context = context_of(&app, bump("patch")).unwrap();
    let document: Document = serde_json::from_str(
        r#"{"sections": [
            {"heading": "Improvements", "bullets": [{"label": null, "summary": "Something",
              "refs": [{"type": "commit", "value": "abcdef0"}, {"type": "commit", "value": "abcdef0"}], "children": []}]},
            {"heading": "Bug Fixes", "bullets": [{"label": null, "summary": "Something",
              "refs": [{"type": "commit", "value": "abcdef0"}, {"type": "commit", "value": "v1.0.1-fix"}], "children": []}]}
        ]}"#,
    )
    .unwrap();
    let errors = finish(document, &context).unwrap_err();
    let outside = errors.iter().filter(|error| error.contains("refers to commit abcdef0")).count();
    assert_eq!(outside, 1, "{errors:#?}");
    assert_eq!(
        errors.iter().filter(|error| error.contains("repeats the ref commit:abcdef0")).count(),
        1,
        "{errors:#?}"
    );
    assert_eq!(errors.iter().filter(|error| error.contains("v1.0.1-fix")).count(), 1, "{errors:#?}");
    assert_eq!(errors.len(), 3, "{errors:#?}");
}

#[test]
fn submodule_history_missing_locally() {
    let App { app, .. } = app_with_submodule();
    // No checkout and no clone under .git/modules.
    std::fs::remove_dir_all(app.root().join("vendor/lib")).unwrap();
    std::fs::remove_dir_all(app.root().join(".git/modules")).unwrap();
    let context = context_of(&app, bump("patch")).unwrap();
    let submodule = &context.submodules[0];
    assert!(!submodule.local_history_available);
    assert!(submodule.commits.is_empty());
    let note = submodule.history_note.as_deref().unwrap();
    assert!(note.contains("git submodule update --init vendor/lib"), "{note}");
    assert!(context.changelog().1.is_empty(), "no group without history");
    assert!(context.code_touched, "a moved gitlink is a code change");
    assert!(context.candidates.iter().all(|candidate| candidate.submodule.is_none()));
}

#[test]
fn submodule_commit_missing_from_the_local_clone() {
    let App { app, .. } = app_with_submodule();
    let unknown = "1234567890123456789012345678901234567890";
    app.git(&["update-index", "--cacheinfo", &format!("160000,{unknown},vendor/lib")]);
    app.git(&["commit", "-q", "-m", "chore: point vendor/lib at an unfetched commit"]);
    let context = context_of(&app, bump("patch")).unwrap();
    let submodule = &context.submodules[0];
    assert_eq!(submodule.release_sha.as_deref(), Some(unknown));
    assert!(!submodule.local_history_available);
    assert!(submodule.history_note.as_deref().unwrap().contains("is not in its local clone"));
}

#[test]
fn documentation_only_range() {
    let fixture = Fixture::new();
    fixture.commit_file("src/main.rs", "fn main() {}\n", "feat: start");
    fixture.git(&["tag", "0.1.0"]);
    fixture.write("README.md", "# app\n\nRun it.\n");
    fixture.write("docs/setup.md", "Install it.\n");
    fixture.commit_all("docs: explain setup");
    let context = context_of(&fixture, bump("patch")).unwrap();
    assert_eq!(context.range, "0.1.0..0.1.1");
    assert!(!context.code_touched, "documentation alone needs no full changelog");
    assert_eq!(context.signals, [Signal::Docs, Signal::DocsOnly]);
    assert_eq!(context.repository.web_url, None);
    assert_eq!(context.parent_commits[0].url, None);
    assert_eq!(context.candidates.len(), 1);
    assert_eq!(context.candidates[0].label.as_deref(), Some("Docs"));
    let document: Document = serde_json::from_str(&format!(
        r#"{{"sections": [{{"heading": "Improvements", "bullets": [{{"label": "Docs", "summary": "Setup is documented", "refs": [{{"type": "commit", "value": "{}"}}], "children": []}}]}}]}}"#,
        context.parent_commits[0].sha
    ))
    .unwrap();
    let markdown = finish(document, &context).unwrap();
    let sha = &context.parent_commits[0].sha[..7];
    assert_eq!(
        markdown,
        format!(
            "### Improvements\n\n- **Docs**: Setup is documented ({sha})\n\n### Full Changelog\n\n- {sha} docs: explain setup"
        )
    );
}

#[test]
fn empty_ranges_are_clear_errors() {
    let fixture = Fixture::new();
    fixture.commit_file("a.txt", "1\n", "one");
    fixture.git(&["tag", "v1.0.0"]);
    let error = context_of(&fixture, bump("patch")).unwrap_err().to_string();
    assert!(error.starts_with("the range v1.0.0..1.0.1 has no commits"), "{error}");
    fixture.commit_file("a.txt", "2\n", "two");
    let reversed = RangeRequest::Explicit { base: "HEAD".into(), release: "v1.0.0".into() };
    let error = context_of(&fixture, reversed).unwrap_err().to_string();
    assert!(error.contains("pass the older revision first"), "{error}");
}

#[test]
fn the_prompt_budget_compacts_later_commits() {
    let App { app, .. } = app_with_submodule();
    let context = context_of(&app, bump("patch")).unwrap();
    let full = context.render_for_prompt();
    assert!(!full.contains("prompt_limits"));
    let tight = context.render_within(1, 400, 2);
    let value: serde_json::Value = serde_json::from_str(&tight).unwrap();
    assert_eq!(value["prompt_limits"]["compacted_for_budget"], 5);
    assert_eq!(value["prompt_limits"]["omitted_commits"], 0);
    assert_eq!(value["prompt_limits"]["omitted_candidates"], 3);
    assert_eq!(value["candidates"].as_array().unwrap().len(), 2);
    let first = &value["parent_commits"][0];
    assert_eq!(first["diffstat"], "2 files, +5 -0");
    assert!(first.get("files").is_none());
    assert!(value["submodules"][0]["commits"][1].get("patch_excerpt").is_none());

    let tighter: serde_json::Value = serde_json::from_str(&context.render_within(1, 3, 2)).unwrap();
    assert_eq!(tighter["prompt_limits"]["omitted_commits"], 5);
    assert_eq!(tighter["parent_commits"].as_array().unwrap().len(), 3);
    assert!(tighter["submodules"][0]["commits"].as_array().unwrap().is_empty());
}

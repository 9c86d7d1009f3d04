//! One change, one set of line counts: commit-msg, review and
//! release-note diff the same blobs with the same renderer, so the same
//! change gets the same `+`/`-` counts in each, and they are Git's
//! (`git diff --numstat`, Myers), CRLF lines and a missing final newline
//! included.

use git_agent_tests::fake_openai::{FakeOpenAi, RecordedRequest, Reply, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The JSON data frame `<frame>` of a request's input.
fn frame(request: &RecordedRequest, frame: &str) -> Value {
    let open = format!("<{frame}>\n");
    let close = format!("\n</{frame}>");
    let text = request.input_texts().into_iter().find(|text| text.contains(&open)).expect("the data frame");
    let start = text.find(&open).unwrap() + open.len();
    let end = text.rfind(&close).unwrap();
    serde_json::from_str(&text[start..end]).expect("the frame is JSON")
}

/// Every `{path, <adds>, <deletes>}` object anywhere in `value`, by path.
fn counts_by_path(value: &Value, adds: &str, deletes: &str, out: &mut BTreeMap<String, (u64, u64)>) {
    match value {
        Value::Object(map) => {
            if let (Some(Value::String(path)), Some(a), Some(d)) = (map.get("path"), map.get(adds), map.get(deletes)) {
                out.insert(path.clone(), (a.as_u64().unwrap(), d.as_u64().unwrap()));
            }
            map.values().for_each(|child| counts_by_path(child, adds, deletes, out));
        }
        Value::Array(items) => items.iter().for_each(|child| counts_by_path(child, adds, deletes, out)),
        _ => {}
    }
}

fn numstat(repo: &GitRepo, args: &[&str]) -> BTreeMap<String, (u64, u64)> {
    let mut command = vec!["diff", "--numstat"];
    command.extend_from_slice(args);
    repo.git(&command)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            (fields[2].to_string(), (fields[0].parse().unwrap(), fields[1].parse().unwrap()))
        })
        .collect()
}

#[test]
fn commit_msg_review_and_release_note_count_the_same_lines_as_git() {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.repo("counts");
    // Myers counts +4/-2 for churn.txt, Histogram +5/-3.
    repo.write("churn.txt", "b\nx\na\na\na\nc\n");
    repo.write("crlf.txt", "one\r\ntwo\r\n");
    repo.write("tail.txt", "x\ny");
    repo.commit_all("chore: initial import");
    repo.git(&["tag", "-a", "v1.0.0", "-m", "release 1.0.0"]);
    repo.write("churn.txt", "a\nb\na\na\nx\nx\na\nb\n");
    repo.write("crlf.txt", "one\r\nTWO\r\nthree\r\n");
    repo.write("tail.txt", "x\nz\n");
    repo.git(&["add", "-A"]);
    let git = numstat(&repo, &["--cached"]);
    assert_eq!(git["churn.txt"], (4, 2), "the fixture tells the algorithms apart");
    let total = git.values().fold((0, 0), |(a, d), (adds, deletes)| (a + adds, d + deletes));

    fake.push(Reply::Events(events::text_reply("fix: update the counted files", json!({}))));
    env.run_in(repo.path(), &["commit-msg"]).success();
    let commit_context = frame(&fake.requests()[0], "prepared_commit_context");
    let mut commit_msg = BTreeMap::new();
    counts_by_path(&commit_context["staged_stats"], "adds", "deletes", &mut commit_msg);
    assert_eq!(commit_msg, git, "commit-msg");
    let overview = &commit_context["context_pack"]["overview"];
    assert_eq!((overview["adds"].as_u64().unwrap(), overview["deletes"].as_u64().unwrap()), total);

    fake.push(Reply::Events(events::text_reply(
        r#"{"summary":"Fine.","recommendation":"APPROVE","findings":[]}"#,
        json!({}),
    )));
    let launched = env.run_in(repo.path(), &["review", "--staged"]).success();
    let id = serde_json::from_str::<Value>(&launched).unwrap()["id"].as_str().unwrap().to_string();
    env.run_in(repo.path(), &["review", "--wait", &id]).success();
    let review_context = frame(&fake.requests()[1], "prepared_review_context");
    let overview = &review_context["context_pack"]["overview"];
    assert_eq!((overview["adds"].as_u64().unwrap(), overview["deletes"].as_u64().unwrap()), total, "review");

    repo.git(&["commit", "-q", "-m", "fix: update the counted files"]);
    repo.git(&["tag", "v1.1.0"]);
    let sha = repo.git(&["rev-parse", "--short=7", "HEAD"]).trim().to_string();
    let document = json!({"sections": [{"heading": "Bug Fixes", "bullets": [
        {"label": null, "summary": "The counted files are updated", "refs": [{"type": "commit", "value": sha}], "children": []}
    ]}]});
    fake.push(Reply::Events(events::text_reply(&document.to_string(), json!({}))));
    env.run_in(repo.path(), &["release-note", "v1.0.0", "v1.1.0"]);
    let release_context = frame(&fake.requests()[2], "prepared_release_context");
    let mut release_note = BTreeMap::new();
    counts_by_path(&release_context, "additions", "deletions", &mut release_note);
    assert_eq!(release_note, git, "release-note");
}

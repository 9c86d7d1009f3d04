//! `review|simplify --follow-up <turn-id> <prompt...>`: the real client and
//! daemon against the fake OpenAI server. A follow-up replays the parent's
//! whole conversation, adds fresh repository context and the previous
//! report with the new prompt, keeps the lineage's cache key for three
//! turns and then resets it; parents stay immutable, so follow-ups of one
//! parent are siblings; other commands, workspaces and turn-less records
//! are refused.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, Responder, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const KEY: &str = "sk-e2e-follow-up-secret";
const REPORT: &str = r#"{"summary":"Looks fine.","recommendation":"APPROVE","findings":[]}"#;

fn setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, KEY);
    let repo = env.repo("followed");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    repo.commit_all("initial");
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    (env, fake, repo)
}

/// Launches, lets the fake answer with `report`, waits; returns the id.
#[track_caller]
fn finished(env: &TestEnv, fake: &FakeOpenAi, repo: &GitRepo, args: &[&str], report: &str) -> String {
    fake.push(Reply::Events(events::text_reply(report, json!({}))));
    let run = env.run_in(repo.path(), args);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stderr, "");
    let launched: Value = serde_json::from_str(&run.stdout_text()).unwrap();
    let id = launched["id"].as_str().unwrap().to_string();
    let printed = env.run_in(repo.path(), &[args[0], "--wait", &id]).success();
    let printed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(printed["summary"], serde_json::from_str::<Value>(report).unwrap()["summary"]);
    id
}

fn turn(env: &TestEnv, repo: &GitRepo, id: &str) -> Value {
    let project = env.run_in(repo.path(), &["project_id"]).success();
    let path = env.home().join(".git-agent").join(project.trim()).join("background").join(format!("{id}.json"));
    let record: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // Version 3 (the spec's): `turn` has the mode and parent only; the
    // whole turn is in the final event's value.
    assert_eq!(record["version"], 3);
    let turn = record["terminal"]["value"]["turn"].clone();
    let spec_turn: Vec<&String> = record["turn"].as_object().unwrap().keys().collect();
    assert!(spec_turn.iter().all(|key| *key == "mode" || *key == "parent_id"), "{spec_turn:?}");
    assert_eq!((&record["turn"]["mode"], record["turn"].get("parent_id")), (&turn["mode"], turn.get("parent_id")));
    turn
}

fn report(summary: &str) -> String {
    format!(r#"{{"summary":"{summary}","recommendation":"APPROVE","findings":[]}}"#)
}

#[test]
fn three_follow_ups_keep_the_lineage_then_the_fourth_resets_it() {
    let (env, fake, repo) = setup();
    repo.git(&["add", "src/lib.rs"]);
    let root = finished(&env, &fake, &repo, &["review", "--staged", "--depth", "fast"], &report("root"));
    let mut ids = vec![root];
    for turn_number in 1..=4 {
        let prompt = format!("look again <{turn_number}>");
        let parent = ids.last().unwrap().clone();
        let args = ["review", "--follow-up", &parent, &prompt];
        ids.push(finished(&env, &fake, &repo, &args, &report(&format!("turn {turn_number}"))));
    }
    let turns: Vec<Value> = ids.iter().map(|id| turn(&env, &repo, id)).collect();
    let depths: Vec<u64> = turns.iter().map(|turn| turn["depth"].as_u64().unwrap_or(0)).collect();
    assert_eq!(depths, [0, 1, 2, 3, 0]);
    let parents: Vec<&str> = turns.iter().map(|turn| turn["parent_id"].as_str().unwrap_or("")).collect();
    assert_eq!(parents, ["", ids[0].as_str(), ids[1].as_str(), ids[2].as_str(), ""]);
    let keys: Vec<&str> = turns.iter().map(|turn| turn["prompt_cache_key"].as_str().unwrap()).collect();
    assert!(keys[..4].iter().all(|key| *key == keys[0]), "{keys:?}");
    assert_ne!(keys[4], keys[0], "a depth reset starts a new cache key");
    for turn in &turns {
        assert_eq!(turn["mode"], "staged", "the mode is inherited");
        assert_eq!(turn["review_depth"], "fast", "the depth is inherited");
        assert_eq!(turn["workspace"], json!(repo.path().canonicalize().unwrap().display().to_string()));
    }

    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    for index in 1..5 {
        assert_eq!(requests[index].body["reasoning"]["effort"], "low", "fast review's effort is inherited");
        let before = requests[index - 1].body["input"].as_array().unwrap();
        let input = requests[index].body["input"].as_array().unwrap();
        // The parent's request input, then its answer, then the new turn.
        assert_eq!(&input[..before.len()], &before[..], "turn {index} replays its parent's input");
        assert_eq!(input[before.len()]["role"], "assistant");
        let texts: Vec<&str> =
            input[before.len() + 1..].iter().filter_map(|item| item["content"][0]["text"].as_str()).collect();
        assert!(texts[0].contains("<prepared_review_context>") && texts[0].contains("+    42"), "{texts:?}");
        assert!(texts[1].contains("<previous_report>"), "{texts:?}");
        let previous = if index == 1 { "root".to_string() } else { format!("turn {}", index - 1) };
        assert!(texts[1].contains(&format!("\"summary\":\"{previous}\"")), "{texts:?}");
        assert!(texts[1].contains(&format!("look again &lt;{index}&gt;")), "the prompt is escaped data: {texts:?}");
        assert!(texts[2].contains("step: 1 of"), "{texts:?}");
    }
}

#[test]
fn follow_ups_of_one_parent_are_independent_siblings() {
    let (env, fake, repo) = setup();
    let parent = finished(&env, &fake, &repo, &["simplify"], r#"{"summary":"root","opportunities":[]}"#);
    let reply = r#"{"summary":"child","opportunities":[]}"#;
    fake.push(Reply::Events(events::text_reply(reply, json!({}))));
    fake.push(Reply::Events(events::text_reply(reply, json!({}))));
    let launch = |prompt: &str| {
        let stdout = env.run_in(repo.path(), &["simplify", "--follow-up", &parent, prompt]).success();
        serde_json::from_str::<Value>(&stdout).unwrap()["id"].as_str().unwrap().to_string()
    };
    let (first, second) = (launch("first"), launch("second"));
    assert_ne!(first, second);
    for id in [&first, &second] {
        env.run_in(repo.path(), &["simplify", "--wait", id]).success();
        let turn = turn(&env, &repo, id);
        assert_eq!((turn["parent_id"].as_str(), turn["depth"].as_u64()), (Some(parent.as_str()), Some(1)));
    }
    assert_eq!(turn(&env, &repo, &parent)["depth"], json!(0), "the parent is unchanged");
}

#[test]
fn follow_ups_are_refused_for_other_commands_workspaces_and_turnless_records() {
    let (env, fake, repo) = setup();
    let review = finished(&env, &fake, &repo, &["review"], REPORT);

    let other_command = env.run_in(repo.path(), &["simplify", "--follow-up", &review, "more"]);
    let stderr = other_command.failure();
    assert_eq!(other_command.code, Some(1));
    assert!(stderr.contains("created by `git-agent review`"), "{stderr}");

    let elsewhere = env.repo("elsewhere");
    elsewhere.write("a.txt", "a\n");
    elsewhere.commit_all("initial");
    elsewhere.write("a.txt", "b\n");
    let stderr = env.run_in(elsewhere.path(), &["review", "--follow-up", &review, "more"]).failure().to_string();
    assert!(stderr.contains("another workspace"), "{stderr}");

    // A dry run stores no replayable turn; neither do older records.
    let run = env.run_in(repo.path(), &["review", "--dry-run"]);
    let dry: Value = serde_json::from_str(&run.success()).unwrap();
    let dry = dry["id"].as_str().unwrap();
    env.run_in(repo.path(), &["review", "--wait", dry]).success();
    let stderr = env.run_in(repo.path(), &["review", "--follow-up", dry, "more"]).failure().to_string();
    assert!(stderr.contains("not follow-up eligible"), "{stderr}");

    let usage = env.run_in(repo.path(), &["review", "--follow-up", &review, "--staged", "more"]);
    assert_eq!(usage.code, Some(2), "{}", usage.stderr);
    let usage = env.run_in(repo.path(), &["review", "--follow-up", &review]);
    assert_eq!(usage.code, Some(2), "the prompt is required: {}", usage.stderr);
    assert_eq!(fake.requests().len(), 1, "no refused follow-up reached the provider");
}

#[test]
fn a_follow_up_after_every_change_is_gone_inspects_the_empty_scope() {
    let (env, fake, repo) = setup();
    let parent = finished(&env, &fake, &repo, &["review"], REPORT);
    repo.git(&["checkout", "--", "src/lib.rs"]);
    let child = finished(&env, &fake, &repo, &["review", "--follow-up", &parent, "is", "it", "fixed?"], REPORT);
    let printed: Value =
        serde_json::from_str(&env.run_in(repo.path(), &["review", "--wait", &child]).success()).unwrap();
    assert_eq!(printed["checks"], json!([]));
    let last = fake.requests().pop().unwrap();
    let texts = last.input_texts();
    assert!(texts.iter().any(|text| text.contains("is it fixed?")), "argv joined with spaces: {texts:?}");
}

/// The branch a request continues: the `branch_id` of the last branch
/// result in its input, or `root`.
fn node_of(body: &Value) -> String {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .filter_map(|item| serde_json::from_str::<Value>(item["output"].as_str()?).ok())
        .filter_map(|output| output["branch_id"].as_str().map(str::to_string))
        .next_back()
        .unwrap_or_else(|| "root".to_string())
}

/// Answers every request from the script of the conversation it
/// continues, whatever order concurrent conversations arrive in.
fn scripted(fake: &FakeOpenAi, script: HashMap<&'static str, Vec<Vec<Value>>>, requests: usize) {
    let script = Arc::new(Mutex::new(script));
    let responder = Responder::new(move |body: &Value| {
        let node = node_of(body);
        let mut script = script.lock().unwrap();
        let steps = script.get_mut(node.as_str()).unwrap_or_else(|| panic!("no script for {node}"));
        steps.remove(0)
    });
    for _ in 0..requests {
        fake.push(Reply::Computed(responder.clone()));
    }
}

#[test]
fn a_branched_parent_is_continued_leaf_by_leaf_and_aggregated() {
    let (env, fake, repo) = setup();
    let branch = json!({"branches": [
        {"scope": "Arithmetic", "path_hints": ["src"], "model": "inherit", "reasoning_effort": "inherit"},
        {"scope": "Docs", "path_hints": [], "model": "gpt-5.6-luna", "reasoning_effort": "low"},
    ]})
    .to_string();
    let mut script = HashMap::new();
    script.insert("root", vec![events::tool_calls(&[("r1", "branch", &branch)], json!({}))]);
    script.insert(
        "b1",
        vec![
            events::text_reply(&report("math first"), json!({})),
            events::text_reply(&report("math again"), json!({})),
        ],
    );
    script.insert(
        "b2",
        vec![
            events::text_reply(&report("docs first"), json!({})),
            events::text_reply(&report("docs again"), json!({})),
        ],
    );
    scripted(&fake, script, 5);
    let launch = |args: &[&str]| {
        let stdout = env.run_in(repo.path(), args).success();
        let id = serde_json::from_str::<Value>(&stdout).unwrap()["id"].as_str().unwrap().to_string();
        let printed: Value =
            serde_json::from_str(&env.run_in(repo.path(), &["review", "--wait", &id]).success()).unwrap();
        (id, printed)
    };
    let (parent, printed) = launch(&["review", "--depth", "fast"]);
    assert_eq!(printed["summary"], "Arithmetic: math first\nDocs: docs first");
    let parent_turn = turn(&env, &repo, &parent);
    let scopes: Vec<&str> =
        parent_turn["leaves"].as_array().unwrap().iter().map(|l| l["scope"].as_str().unwrap()).collect();
    assert_eq!(scopes, ["Arithmetic", "Docs"]);
    assert_eq!(parent_turn["leaves"][1]["model"], "gpt-5.6-luna");

    let (child, printed) = launch(&["review", "--follow-up", &parent, "check", "again"]);
    assert_eq!(printed["summary"], "Arithmetic: math again\nDocs: docs again", "every leaf continued, then merged");
    let child_turn = turn(&env, &repo, &child);
    assert_eq!((child_turn["parent_id"].as_str(), child_turn["depth"].as_u64()), (Some(parent.as_str()), Some(1)));
    assert_eq!(child_turn["leaves"].as_array().unwrap().len(), 2);

    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    let initial: HashMap<String, &Value> = requests[..3].iter().map(|r| (node_of(&r.body), &r.body)).collect();
    for request in &requests[3..] {
        let node = node_of(&request.body);
        let leaf = initial[&node];
        let input = request.body["input"].as_array().unwrap();
        let before = leaf["input"].as_array().unwrap();
        assert_eq!(&input[..before.len()], &before[..], "{node} continues its own leaf, not a sibling's");
        let texts = request.input_texts();
        assert!(texts.iter().any(|t| t.contains("Arithmetic: math first") && t.contains("check again")), "{texts:?}");
        assert!(request.tool_names().contains(&"branch".to_string()), "a continued leaf may branch again");
        assert_eq!(request.body["model"], leaf["model"]);
    }
}

#[test]
fn a_follow_up_of_a_base_review_prepares_the_branch_as_it_is_then() {
    let (env, fake, repo) = setup();
    repo.git(&["checkout", "--", "src/lib.rs"]);
    repo.git(&["branch", "-M", "main"]);
    repo.git(&["checkout", "-b", "feature"]);
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    43\n}\n");
    repo.commit_all("feature: 43");
    let parent = finished(&env, &fake, &repo, &["review", "--base", "main"], &report("base"));
    let parent_turn = turn(&env, &repo, &parent);
    assert_eq!((parent_turn["mode"].as_str(), parent_turn["revision"].as_str()), (Some("base"), Some("main")));

    repo.write("src/extra.rs", "pub fn extra() {}\n");
    repo.commit_all("feature: extra");
    let child = finished(&env, &fake, &repo, &["review", "--follow-up", &parent, "and", "now?"], &report("again"));
    let child_turn = turn(&env, &repo, &child);
    assert_eq!((child_turn["mode"].as_str(), child_turn["revision"].as_str()), (Some("base"), Some("main")));
    let last = fake.requests().pop().unwrap();
    let texts = last.input_texts();
    let fresh = texts.iter().rev().find(|t| t.contains("<prepared_review_context>")).unwrap();
    assert!(fresh.contains("src/extra.rs") && fresh.contains("+    43"), "the branch against main now: {fresh}");

    let commit = finished(&env, &fake, &repo, &["review", "--commit", "HEAD~1"], &report("commit"));
    let commit_turn = turn(&env, &repo, &commit);
    let reviewed = repo.git(&["rev-parse", "HEAD~1"]);
    assert_eq!(commit_turn["revision"].as_str(), Some(reviewed.trim()), "--commit keeps the resolved commit");
    repo.write("src/later.rs", "pub fn later() {}\n");
    repo.commit_all("later");
    finished(&env, &fake, &repo, &["review", "--follow-up", &commit, "again"], &report("commit again"));
    let last = fake.requests().pop().unwrap();
    let fresh = last.input_texts().into_iter().rev().find(|t| t.contains("<prepared_review_context>")).unwrap();
    assert!(fresh.contains("+    43") && !fresh.contains("later.rs"), "the same commit: {fresh}");
}

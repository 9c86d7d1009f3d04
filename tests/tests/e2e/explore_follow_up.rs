//! `git-agent explore --follow-up <id>`: sessions persisted per project,
//! the replayed conversation (every request an exact prefix of the next,
//! within a run and across follow-ups), one cache key per lineage, three
//! context-preserving follow-ups then the depth-three reset, the target
//! inheritance and its one change message, refusal of another
//! workspace's ID before any request, and concurrent siblings.

use git_agent_tests::fake_openai::{FakeOpenAi, RecordedRequest, Reply, Responder, events};
use git_agent_tests::{GitRepo, TestEnv};
use serde_json::{Value, json};
use std::path::Path;

fn setup() -> (TestEnv, FakeOpenAi, GitRepo) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-explore-follow-up");
    let repo = env.repo("app");
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.commit_all("feat: add one");
    (env, fake, repo)
}

/// The item IDs the last user message of a request asks about (a
/// follow-up replays earlier questions before it).
fn asked_ids(body: &Value) -> Vec<String> {
    let last_user = body["input"]
        .as_array()
        .and_then(|items| items.iter().rev().find(|item| item["role"] == "user"))
        .and_then(|item| item["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_string();
    let marker = "\"item_id\": \"";
    last_user
        .match_indices(marker)
        .map(|(at, _)| {
            let rest = &last_user[at + marker.len()..];
            rest[..rest.find('"').unwrap_or(rest.len())].to_string()
        })
        .collect()
}

/// A reply answering every asked item with one finding naming `label`.
fn answer(label: &'static str) -> Reply {
    Reply::Computed(Responder::new(move |body| {
        let answers: Vec<Value> = asked_ids(body)
            .into_iter()
            .map(|id| json!({"item_id": id, "items": [{"description": label, "references": ["src/lib.rs:1-3"]}]}))
            .collect();
        events::text_reply(&json!({ "answers": answers }).to_string(), events::usage(300, 0, 40))
    }))
}

/// Runs explore in `dir` and returns the printed ID.
#[track_caller]
fn explore(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["explore"];
    all.extend_from_slice(args);
    let stdout = env.run_in(dir, &all).success();
    let value: Value = serde_json::from_str(&stdout).expect("one JSON object");
    value["id"].as_str().unwrap().to_string()
}

fn project_dir(env: &TestEnv, repo: &GitRepo) -> std::path::PathBuf {
    let project = env.run_in(repo.path(), &["project_id"]).success();
    env.home().join(".git-agent").join(project.trim())
}

/// The stored session `id`, read from the project's sessions database,
/// as a JSON object of its columns (findings and history parsed).
fn session(env: &TestEnv, repo: &GitRepo, id: &str) -> Value {
    let path = project_dir(env, repo).join("explore/sessions.sqlite3");
    let connection = rusqlite::Connection::open(path).expect("the sessions database");
    connection
        .query_row(
            "SELECT s.parent_id, s.depth, s.workspace, s.prompt_cache_key, s.instruction_target, s.active_target,
                    s.items, c.items
             FROM sessions s JOIN conversations c ON c.id = s.conversation WHERE s.id = ?1",
            [id],
            |row| {
                let parsed = |text: String| serde_json::from_str::<Value>(&text).unwrap();
                Ok(json!({
                    "parent_id": row.get::<_, String>(0)?,
                    "depth": row.get::<_, i64>(1)?,
                    "workspace": row.get::<_, String>(2)?,
                    "prompt_cache_key": row.get::<_, String>(3)?,
                    "instruction_target": row.get::<_, Option<String>>(4)?,
                    "active_target": row.get::<_, Option<String>>(5)?,
                    "items": parsed(row.get(6)?),
                    "history": parsed(row.get(7)?),
                }))
            },
        )
        .expect("the session row")
}

fn input(request: &RecordedRequest) -> &Vec<Value> {
    request.body["input"].as_array().expect("an input array")
}

#[track_caller]
fn assert_prefix(earlier: &RecordedRequest, later: &RecordedRequest) {
    let (earlier, later) = (input(earlier), input(later));
    assert!(
        later.len() > earlier.len() && later[..earlier.len()] == earlier[..],
        "not an exact prefix:\n{}\n---\n{}",
        Value::Array(earlier.clone()),
        Value::Array(later.clone())
    );
}

fn texts(request: &RecordedRequest) -> Vec<String> {
    request.input_texts()
}

#[test]
fn three_follow_ups_continue_the_conversation_then_the_fourth_starts_over() {
    let (env, fake, repo) = setup();
    // The first run takes a tool step, so its two requests show the prefix
    // property within one run.
    fake.push(Reply::Events(events::tool_calls(
        &[("c1", "list_files", r#"{"path":null,"max_entries":null}"#)],
        events::usage(100, 0, 10),
    )));
    fake.push(answer("root"));
    let mut ids = vec![explore(&env, repo.path(), &["where", "is", "one?"])];
    for turn in 1..=4 {
        fake.push(answer("turn"));
        let parent = ids.last().unwrap().clone();
        let question = format!("and follow-up {turn}?");
        ids.push(explore(&env, repo.path(), &["--follow-up", &parent, &question]));
    }
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 5, "{ids:?}");

    let sessions: Vec<Value> = ids.iter().map(|id| session(&env, &repo, id)).collect();
    let depths: Vec<u64> = sessions.iter().map(|session| session["depth"].as_u64().unwrap()).collect();
    assert_eq!(depths, [0, 1, 2, 3, 0]);
    let parents: Vec<&str> = sessions.iter().map(|session| session["parent_id"].as_str().unwrap_or("")).collect();
    assert_eq!(parents, ["", &ids[0], &ids[1], &ids[2], ""]);
    let keys: Vec<&str> = sessions.iter().map(|session| session["prompt_cache_key"].as_str().unwrap()).collect();
    assert!(keys[..4].iter().all(|key| *key == keys[0]), "one key per lineage: {keys:?}");
    assert_ne!(keys[4], keys[0], "the reset starts a new key");
    let workspace = repo.path().canonicalize().unwrap().display().to_string();
    for session in &sessions {
        assert_eq!(session["workspace"], json!(workspace));
        assert_eq!(session["items"][0]["references"][0], "src/lib.rs:1-3");
        assert!(!session["history"].as_array().unwrap().is_empty());
    }

    let requests = fake.requests();
    assert_eq!(requests.len(), 6);
    // Within the first run and across three follow-ups, each request is
    // an exact prefix of the next; instructions never change.
    for pair in requests[..5].windows(2) {
        assert_prefix(&pair[0], &pair[1]);
    }
    for request in &requests {
        assert_eq!(request.body["instructions"], requests[0].body["instructions"]);
        assert!(request.body.get("prompt_cache_key").is_none(), "no cache fields for a custom endpoint");
        assert!(request.body.get("prompt_cache_options").is_none());
    }
    let follow_up = texts(&requests[2]);
    assert!(follow_up.iter().any(|text| text.contains("where is one?")), "the parent's question is replayed");
    assert!(follow_up.iter().any(|text| text.contains("and follow-up 1?")), "{follow_up:?}");
    assert!(follow_up.iter().any(|text| text.contains(&format!("\"search_id\": \"{}\"", ids[0]))), "{follow_up:?}");
    // The reset is a fresh search: nothing of the exhausted chain.
    let reset = texts(&requests[5]);
    assert!(reset.iter().all(|text| !text.contains("where is one?") && !text.contains("follow-up 3")), "{reset:?}");
    assert!(reset.iter().any(|text| text.contains("and follow-up 4?")));

    let log = std::fs::read_to_string(
        env.state_home().join("git-agent").join(project_dir(&env, &repo).file_name().unwrap()).join("explore.log"),
    )
    .unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 5, "{log}");
    for (n, line) in lines.iter().enumerate() {
        let branch = if (1..=3).contains(&n) { " branch=true " } else { " branch=false " };
        assert!(line.contains(branch), "{line}");
        let (parent, depth) = match n {
            1..=3 => (ids[n - 1].as_str(), n),
            _ => ("", 0),
        };
        assert!(line.contains(&format!(" parent={parent} depth={depth} ")), "{line}");
    }
}

#[test]
fn follow_ups_inherit_the_target_and_announce_a_change_once() {
    let (env, fake, repo) = setup();
    fake.push(answer("owner"));
    let owner = explore(&env, repo.path(), &["--for", "owner", "who", "owns", "one?"]);
    fake.push(answer("same"));
    let same = explore(&env, repo.path(), &["--follow-up", &owner, "--for", "owner", "and", "callers?"]);
    fake.push(answer("inherited"));
    let inherited = explore(&env, repo.path(), &["--follow-up", &owner, "what", "else?"]);
    fake.push(answer("changed"));
    let changed = explore(&env, repo.path(), &["--follow-up", &owner, "--for", "diagnose", "why", "slow?"]);
    let active = |id: &str| session(&env, &repo, id)["active_target"].clone();
    assert_eq!(active(&same), "owner");
    assert_eq!(active(&inherited), "owner", "without --for the parent's target is kept");
    assert_eq!(active(&changed), "diagnose");
    assert_eq!(session(&env, &repo, &changed)["instruction_target"], "owner");

    let requests = fake.requests();
    let announcements = |request: &RecordedRequest| {
        texts(request).iter().filter(|text| text.starts_with("Query target changed:")).cloned().collect::<Vec<_>>()
    };
    assert!(announcements(&requests[1]).is_empty() && announcements(&requests[2]).is_empty());
    let changes = announcements(&requests[3]);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(changes[0].starts_with("Query target changed: diagnose."), "{changes:?}");
    let items = input(&requests[3]);
    let at = items.iter().position(|item| item["content"][0]["text"] == json!(changes[0])).unwrap();
    assert_eq!(items[at]["role"], "developer");
    assert_eq!(at + 2, items.len() - 1, "the change precedes the new question (and the step's budget note)");
    for request in &requests[1..] {
        assert_eq!(request.body["instructions"], requests[0].body["instructions"], "already target-neutral");
        assert_prefix(&requests[0], request);
    }

    // A universal parent followed up with --for switches to the
    // target-neutral prompt, keeping the history and the key.
    fake.push(answer("universal"));
    let universal = explore(&env, repo.path(), &["where", "is", "one?"]);
    fake.push(answer("targeted"));
    let targeted = explore(&env, repo.path(), &["--follow-up", &universal, "--for", "change", "how", "to", "change?"]);
    let requests = fake.requests();
    assert_ne!(requests[5].body["instructions"], requests[4].body["instructions"]);
    assert_eq!(requests[5].body["instructions"], requests[0].body["instructions"]);
    assert_prefix(&requests[4], &requests[5]);
    let (parent, child) = (session(&env, &repo, &universal), session(&env, &repo, &targeted));
    assert_eq!(parent["prompt_cache_key"], child["prompt_cache_key"]);
    assert!(parent["instruction_target"].is_null(), "the universal target is stored as none: {parent}");
    assert_eq!(child["instruction_target"], "change");
}

#[test]
fn another_workspaces_id_and_unknown_ids_fail_before_any_request() {
    let (env, fake, repo) = setup();
    fake.push(answer("root"));
    let id = explore(&env, repo.path(), &["where", "is", "one?"]);
    // A subfolder is another workspace of the same project.
    let run = env.run_in(&repo.path().join("src"), &["explore", "--follow-up", &id, "and", "then?"]);
    let stderr = run.failure();
    assert!(stderr.contains(&format!("explore search ID {id} belongs to workspace")), "{stderr}");
    assert!(run.stdout.is_empty());
    let run = env.run_in(repo.path(), &["explore", "--follow-up", "not-an-id", "and", "then?"]);
    assert!(run.failure().contains("invalid explore search ID"), "{}", run.stderr);
    let run = env.run_in(repo.path(), &["explore", "--follow-up", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "and", "then?"]);
    assert!(run.failure().contains("unknown explore search ID"), "{}", run.stderr);
    assert_eq!(fake.requests().len(), 1, "no request after the first explore");
}

#[test]
fn concurrent_follow_ups_of_one_parent_batch_as_distinct_siblings() {
    let (mut env, fake, repo) = setup();
    fake.push(answer("root"));
    let parent = explore(&env, repo.path(), &["where", "is", "one?"]);
    // A new daemon (sessions outlive it) that seals no batch short of full
    // before both siblings have reserved their intents.
    let stop = env.gitagentd(&["stop"]).output().unwrap();
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    env.set_env("GITAGENTD_TEST_EXPLORE_QUORUM", "2");
    fake.push(answer("sibling"));
    let children: Vec<_> = ["first sibling?", "second sibling?"]
        .iter()
        .map(|question| {
            env.git_agent_in(repo.path(), &["explore", "--follow-up", &parent, question])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start git-agent explore")
        })
        .collect();
    let mut ids: Vec<String> = children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            let value: Value = serde_json::from_slice(&output.stdout).unwrap();
            value["id"].as_str().unwrap().to_string()
        })
        .collect();
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "the siblings share one conversation");
    let mut asked = asked_ids(&requests[1].body);
    asked.sort();
    ids.sort();
    assert_eq!(asked, ids);
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        let sibling = session(&env, &repo, id);
        assert_eq!((sibling["parent_id"].as_str(), sibling["depth"].as_u64()), (Some(parent.as_str()), Some(1)));
    }
    // The parent is unchanged and each sibling can be followed up itself.
    assert_eq!(session(&env, &repo, &parent)["depth"], 0);
    fake.push(answer("grandchild"));
    let grandchild = explore(&env, repo.path(), &["--follow-up", &ids[0], "deeper?"]);
    assert_eq!(session(&env, &repo, &grandchild)["depth"], 2);
}

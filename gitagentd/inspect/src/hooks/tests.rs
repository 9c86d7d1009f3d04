use super::*;
use crate::metrics::{ToolCallMetric, UsageMetric};
use serde_json::json;
use std::time::Instant;

fn payload() -> Payload {
    Payload {
        schema_version: SCHEMA_VERSION,
        session: Session {
            id: "TASKID".into(),
            title: "review O'Brien (uncommitted)".into(),
            command: "review".into(),
            mode: "uncommitted".into(),
            model: "gpt-5.6-sol".into(),
            reasoning_effort: "medium".into(),
            started_at: "2026-12-01T17:00:00Z".into(),
            completed_at: "2026-12-01T17:00:01.25Z".into(),
            elapsed_ms: 1250,
            tool_calls: 3,
            repair_calls: 0,
            repository: RepositorySummary::default(),
        },
        metrics: InspectionMetrics {
            usage: UsageMetric {
                input_tokens: 12,
                cached_input_tokens: 5,
                uncached_input_tokens: 7,
                ..Default::default()
            },
            used_skills: vec!["go".into()],
            tool_calls: vec![ToolCallMetric { name: "read_file".into(), count: 3 }],
            branches_created: 0,
            branches: Vec::new(),
        },
        report: json!({
            "summary": "Found *one* issue.\n# Fake heading",
            "recommendation": "COMMENT",
            "findings": [{
                "severity": "MEDIUM", "aspect": "tests", "title": "Protect [metrics]",
                "impact": "x", "proposed_fix": "Add a test.",
                "evidences": [{"title": "Handler", "path": "main`tick.go", "line_start": 4, "line_end": 6}]
            }],
            "checks": [{"name": "golangci-lint", "status": "findings", "omitted": 2,
                "diagnostics": [{"path": "a.go", "line": 3, "column": 1, "code": "vet", "message": "x *y*"}]}]
        }),
    }
}

fn data() -> Value {
    serde_json::to_value(payload()).unwrap()
}

fn settings(text: &str) -> Result<Vec<String>, String> {
    parse_settings(text.as_bytes()).map(|settings| settings.post_inspection()).map_err(|error| error.to_string())
}

#[test]
fn settings_are_strict_v1() {
    assert_eq!(settings(r#"{"hooks":{"post_inspection":["notify","  ",""]}}"#).unwrap(), ["notify"]);
    assert_eq!(settings("{}").unwrap(), Vec::<String>::new());
    assert_eq!(settings(r#"{"hooks":{}}"#).unwrap(), Vec::<String>::new());
    assert_eq!(settings(r#"{"hooks":{"post_inspection":[]}}"#).unwrap(), Vec::<String>::new());
    let unknown = settings(r#"{"hooks":{"post_inspection":[]},"future":true}"#).unwrap_err();
    assert!(unknown.contains("unknown field `future`"), "{unknown}");
    let nested = settings(r#"{"hooks":{"pre_inspection":[]}}"#).unwrap_err();
    assert!(nested.contains("unknown field `pre_inspection`"), "{nested}");
    assert_eq!(settings("{} {}").unwrap_err(), "multiple JSON values");
    assert_eq!(settings(r#"{"hooks":{}}[]"#).unwrap_err(), "multiple JSON values");
    let entry = settings(r#"{"hooks":{"post_inspection":["ok", 3]}}"#).unwrap_err();
    assert!(entry.contains("invalid type: integer `3`, expected a string"), "{entry}");
    assert!(settings(r#"{"hooks":"#).is_err(), "malformed JSON");
    assert!(settings("").is_err(), "an empty file is malformed");
}

#[test]
fn settings_errors_keep_their_kind() {
    assert!(matches!(parse_settings(b"{} {}"), Err(SettingsSyntaxError::MultipleValues)));
    assert!(matches!(parse_settings(b"  \n"), Err(SettingsSyntaxError::Empty)));
    assert_eq!(parse_settings(b"").unwrap_err().to_string(), "the file holds no JSON value");
    let Err(SettingsSyntaxError::Json(error)) = parse_settings(br#"{"hooks":"#) else {
        panic!("malformed JSON is a JSON error")
    };
    assert!(error.is_eof(), "{error}");
}

#[test]
fn a_missing_settings_file_configures_nothing_and_a_bad_one_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(load_settings(dir.path()).unwrap(), Settings::default());
    std::fs::write(dir.path().join(SETTINGS_FILE), r#"{"hook":{}}"#).unwrap();
    let error = load_settings(dir.path()).unwrap_err().to_string();
    assert!(error.starts_with(&format!("invalid settings {}", dir.path().join(SETTINGS_FILE).display())), "{error}");
    assert!(error.contains("unknown field `hook`") && error.contains("hint: the v1 schema"), "{error}");
}

#[test]
fn templates_use_go_names_functions_and_missing_keys_fail() {
    let data = data();
    let quoted = render("echo {{shellquote .Session.Title}}", &data, 1).unwrap();
    assert_eq!(quoted, r#"echo 'review O'"'"'Brien (uncommitted)'"#);
    let report = render("{{json .Report}}", &data, 1).unwrap();
    let parsed: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(parsed, data["report"], "json of the report is the exact report");
    let whole: Value = serde_json::from_str(&render("{{json .}}", &data, 1).unwrap()).unwrap();
    assert_eq!(whole, data, "json of the payload has the JSON field names");
    assert_eq!(
        render("{{.Metrics.Usage.UncachedInputTokens}} {{.SchemaVersion}} {{.Report.recommendation}}", &data, 1)
            .unwrap(),
        "7 2 COMMENT"
    );
    assert_eq!(render("{{range .Metrics.ToolCalls}}{{.Name}}={{.Count}}{{end}}", &data, 1).unwrap(), "read_file=3");
    let markdown = render("{{format_markdown .}}", &data, 1).unwrap();
    assert_eq!(markdown, format_markdown(&data));
    let quoted_json = render("{{shellquote (json .Report.recommendation)}}", &data, 1).unwrap();
    assert_eq!(quoted_json, r#"'"COMMENT"'"#);

    for missing in ["{{.Session.Nope}}", "{{.Report.nope}}", "{{.session.id}}"] {
        let error = render(missing, &data, 2).unwrap_err();
        assert!(matches!(error, HookError::Render { index: 2, .. }), "{missing}: {error}");
    }
    let error = render("{{.Session.ID", &data, 3).unwrap_err();
    assert!(matches!(error, HookError::Parse { index: 3, .. }), "{error}");
    assert!(error.to_string().starts_with("post-inspection hook 3: parse shell template"), "{error}");
    let error = render("{{nosuchfunc .}}", &data, 1).unwrap_err();
    assert!(matches!(error, HookError::Parse { .. } | HookError::Render { .. }), "{error}");
}

#[test]
fn template_errors_keep_gtmpl_error_and_read_as_before() {
    use git_agent_shared::error_chain;
    use std::error::Error as _;
    let data = data();
    let error = render("{{.Session.ID", &data, 3).unwrap_err();
    let cause =
        error.source().and_then(|cause| cause.downcast_ref::<Box<gtmpl::error::ParseError>>()).expect("gtmpl's error");
    let before = format!("post-inspection hook 3: parse shell template: {cause}");
    assert_eq!((error.to_string(), error_chain::render(&error)), (before.clone(), before));
    let error = render("{{.Session.Nope}}", &data, 2).unwrap_err();
    let cause =
        error.source().and_then(|cause| cause.downcast_ref::<Box<gtmpl::error::ExecError>>()).expect("gtmpl's error");
    let before = format!("post-inspection hook 2: render shell template: {cause}");
    assert_eq!((error.to_string(), error_chain::render(&error)), (before.clone(), before));
}

#[test]
fn markdown_escapes_dynamic_text_and_lists_everything() {
    let markdown = format_markdown(&data());
    for expected in [
        "- **Session ID:** TASKID\n",
        "- **Elapsed:** 1\\.25s\n",
        "## Usage\n\n- **Input tokens:** 12\n  - Cached: 5\n",
        "  - Uncached: 7\n",
        "## Used skills\n\n- go\n",
        "## Tool calls\n\n- read\\_file: 3\n",
        "## Branches (0)\n\nNone\n",
        "## Summary\n\nFound \\*one\\* issue\\.\n\\# Fake heading\n",
        "- **Recommendation:** COMMENT\n",
        "### MEDIUM — Protect \\[metrics\\]",
        "``main`tick.go:4-6`` — Handler",
        "**Proposed fix**\n\nAdd a test\\.",
        "### golangci\\-lint — findings",
        "`a.go:3:1` `vet` — x \\*y\\*",
        "Additional diagnostics omitted:** 2",
    ] {
        assert!(markdown.contains(expected), "missing {expected:?} in:\n{markdown}");
    }
    let simplify = json!({"report": {"summary": "s", "opportunities": [{"aspect": "reuse", "title": "Share", "body": "b", "evidences": [], "proposed_change": "c"}]}});
    let markdown = format_markdown(&simplify);
    assert!(markdown.contains("## Opportunities\n\n### reuse — Share"), "{markdown}");
    assert!(format_markdown(&json!({"report": []})).contains("## Report\n\nUnavailable"));
}

fn hooks(list: &[&str]) -> Vec<String> {
    list.iter().map(|hook| hook.to_string()).collect()
}

fn env() -> Environment {
    let mut vars = std::collections::BTreeMap::new();
    vars.insert("PATH".to_string(), std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
    vars.insert("OPENAI_API_KEY".to_string(), "sk-hook-secret".to_string());
    Environment::new(vars)
}

#[tokio::test]
async fn hooks_get_the_compact_payload_on_stdin_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.json");
    let second = dir.path().join("second.txt");
    let list = hooks(&[
        &format!("cat > {}", shell_quote(&first.display().to_string())),
        "",
        &format!("{{{{.Session.ID}}}} 2>/dev/null; env > {}", shell_quote(&second.display().to_string())),
    ]);
    let list: Vec<String> = list.into_iter().filter(|hook| !hook.trim().is_empty()).collect();
    run_post_inspection(&list, &payload(), &env(), &CancellationToken::new()).await.unwrap();
    let stdin = std::fs::read_to_string(&first).unwrap();
    assert_eq!(stdin, serde_json::to_string(&payload()).unwrap(), "compact JSON, exactly the payload");
    assert!(stdin.starts_with(r#"{"schema_version":2,"session":{"id":"TASKID""#), "{stdin}");
    let seen = std::fs::read_to_string(&second).unwrap();
    assert!(!seen.contains("sk-hook-secret") && !seen.contains("OPENAI_API_KEY"), "no credential reaches a hook");
}

#[tokio::test]
async fn a_failing_hook_stops_the_sequence_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let after = dir.path().join("after");
    let list = hooks(&["echo first >/dev/null", "echo 'it broke' >&2; exit 3", &format!("touch {}", after.display())]);
    let error = run_post_inspection(&list, &payload(), &env(), &CancellationToken::new()).await.unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("post-inspection hook 2: sh exited with exit status: 3: it broke"), "{message}");
    assert!(!after.exists(), "the sequence stops at the first failure");
    let error =
        run_post_inspection(&hooks(&["{{.Nope}}"]), &payload(), &env(), &CancellationToken::new()).await.unwrap_err();
    assert!(error.to_string().starts_with("post-inspection hook 1: render shell template"), "{error}");
}

#[tokio::test]
async fn a_background_child_holding_stderr_does_not_block_completion() {
    let started = Instant::now();
    let list = hooks(&["sleep 30 >&2 &"]);
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        run_post_inspection(&list, &payload(), &env(), &CancellationToken::new()),
    )
    .await
    .expect("the hook returned within the deadline");
    let elapsed = started.elapsed();
    assert!(matches!(result, Err(HookError::PipesHeldOpen { index: 1, .. })), "{result:?}");
    assert!(elapsed >= PIPE_GRACE && elapsed < PIPE_GRACE + Duration::from_millis(900), "{elapsed:?}");
}

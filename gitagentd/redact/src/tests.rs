use super::*;

fn run(text: &str) -> Redacted<'_> {
    redact(text, Origin::NONE, None)
}

#[test]
fn the_vendored_rules_parse_and_every_one_compiles() {
    assert!(skipped_rules().is_empty(), "rules left out: {:?}", skipped_rules());
    assert!(rule_count() >= 220, "{} rules", rule_count());
}

#[test]
fn every_planted_kind_is_found_by_its_rule_and_replaced_by_its_marker() {
    let plants = corpus::plants(7);
    let kinds: HashSet<&str> = plants.iter().map(|plant| plant.rule).collect();
    assert!(kinds.len() >= 20, "{} kinds", kinds.len());
    for plant in &plants {
        let redacted = run(&plant.line);
        assert!(!redacted.text.contains(&plant.value), "{}: {} kept in {}", plant.rule, plant.value, redacted.text);
        assert_eq!(
            redacted.findings.iter().map(|finding| finding.rule).collect::<Vec<_>>(),
            vec![plant.rule],
            "{}",
            plant.line
        );
        assert!(redacted.text.contains(&marker(plant.rule)), "{}", redacted.text);
    }
}

#[test]
fn a_file_of_plants_keeps_its_lines_and_its_ordinary_code() {
    for seed in 1..20 {
        let source = corpus::source_file(seed);
        let redacted = redact(&source, Origin::file("config/settings.py"), None);
        for plant in corpus::plants(seed) {
            assert!(!redacted.text.contains(&plant.value), "seed {seed}: {} kept", plant.rule);
        }
        assert_eq!(redacted.text.lines().count(), source.lines().count(), "line structure kept");
        assert!(redacted.text.contains("def main():\n    return os.getcwd()"));
        let line = redacted.findings.iter().find(|finding| finding.rule == "aws-access-token").unwrap().line;
        assert!(source.lines().nth(line as usize - 1).unwrap().contains("AKIA"));
    }
}

#[test]
fn secrets_inside_json_escaped_text_are_found() {
    for plant in corpus::plants(3) {
        let frame = serde_json::json!({"diff": format!("+{}\n", plant.line)}).to_string();
        let redacted = run(&frame);
        assert!(!redacted.text.contains(&plant.value), "{} kept in {}", plant.rule, redacted.text);
        assert!(serde_json::from_str::<Value>(&redacted.text).is_ok(), "still JSON: {}", redacted.text);
    }
}

#[test]
fn a_private_key_block_is_one_marker_and_a_cut_one_is_redacted_too() {
    let plant = corpus::plants(5).pop().unwrap();
    let diff = plant.line.lines().map(|line| format!("+{line}\n")).collect::<String>();
    let redacted = run(&diff);
    assert_eq!(redacted.findings.len(), 1);
    assert_eq!(redacted.findings[0].rule, "private-key");
    assert_eq!(redacted.text.lines().count(), diff.lines().count());
    assert!(redacted.text.lines().skip(1).all(|line| line == "+"), "{}", redacted.text);
    let cut: String = diff.lines().take(6).map(|line| format!("{line}\n")).collect();
    let redacted = run(&cut);
    assert_eq!(redacted.findings[0].rule, "private-key-truncated");
    assert!(!redacted.text.contains(&plant.value[..20]) && !redacted.text.contains("+MII"));
}

#[test]
fn secret_files_are_withheld_whole_as_files_and_as_diff_sections() {
    let env = "DATABASE_URL=postgres://u:p@h/db\nMODE=dev\n";
    let redacted = redact(env, Origin::file("app/.env"), None);
    assert_eq!(redacted.text, "[REDACTED:secret-file] app/.env: 2 lines, 42 bytes withheld");
    let added: String = env.lines().map(|line| format!("+{line}\n")).collect();
    let diff = format!(
        "diff --git a/.env b/.env\n--- a/.env\n+++ b/.env\n@@ -1 +1,2 @@\n-MODE=x\n{added}diff --git a/b b/b\n"
    );
    let redacted = run(&diff);
    assert!(redacted.text.starts_with("diff --git a/.env b/.env\n[REDACTED:secret-file]"), "{}", redacted.text);
    assert!(!redacted.text.contains("MODE=dev"));
    assert!(redacted.text.contains("2 lines added, 1 removed"), "{}", redacted.text);
}

#[test]
fn the_allow_regex_exempts_values_and_paths() {
    let plant = &corpus::plants(9)[0];
    let allow = compile_allow("^AKIA").unwrap();
    assert!(redact(&plant.line, Origin::NONE, Some(&allow)).findings.is_empty());
    let allow = compile_allow("^tests/fixtures/").unwrap();
    assert!(redact(&plant.line, Origin::file("tests/fixtures/aws.txt"), Some(&allow)).findings.is_empty());
    assert_eq!(redact(&plant.line, Origin::file("src/aws.txt"), Some(&allow)).findings.len(), 1);
}

#[test]
fn ordinary_code_identifiers_hashes_and_base64_are_left_alone() {
    let texts = [
        "let api_key = config.api_key.clone();",
        "password = os.environ[\"DB_PASSWORD\"]",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "secret_key_base = ENV.fetch('SECRET_KEY_BASE')",
        "fn tokenize_password_field(input: &str) -> Token {",
        "const AUTH_HEADER_NAME: &str = \"authorization\";",
        "\"integrity\": \"sha512-3dEBDjjvQZ8fUb2zjZbdsDuS1SL0ngc7BHNXWkdmb5bWi0PqfZwLXjnMTbHy8J5b1TBJP4ClnAb9zC3tGD2ZQ==\"",
        "checksum = \"4c7f3c6e9b8a1d2f0e5a7b3c9d1e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e\"",
        "name = \"regex-automata\"\nversion = \"0.4.9\"\nchecksum = \"809e8dc61f6de73b46c85f4c96486310fe304c434cfa43669d7b40f711150908\"",
        "data = base64.b64decode(\"SGVsbG8sIFdvcmxkISBUaGlzIGlzIHRlc3QgZGF0YSBmb3IgdGhlIGRlY29kZXIu\")",
        "password: \"changeme\"",
        "if token.kind == TokenKind::Ident { return Ok(key); }",
        "let secret = Secret::new(value.trim());",
        "h1 = \"AKIAIOSFODNN7EXAMPLE\" # the AWS documentation's example key",
    ];
    for text in texts {
        let redacted = run(text);
        assert!(redacted.findings.is_empty(), "{text}: {:?}", redacted.findings);
    }
}

#[test]
fn the_ledger_counts_distinct_secrets_and_the_summary_names_kinds_not_values() {
    let plants = corpus::plants(11);
    let redactor = Redactor::default();
    for _ in 0..3 {
        redactor.redact(&plants[0].line, Origin { path: Some("a.cfg"), first_line: 4 });
        redactor.text(&plants[1].line);
    }
    assert_eq!(redactor.count(), 2);
    let line = redactor.summary(false).unwrap();
    assert_eq!(line, "redacted 2 secrets before sending: 1 aws-access-token, 1 github-pat\n");
    let debug = redactor.summary(true).unwrap();
    assert!(debug.contains("(at a.cfg:4 (aws-access-token))"), "{debug}");
    assert!(!debug.contains(&plants[0].value) && !debug.contains(&plants[1].value));
    assert_eq!(Redactor::default().summary(true), None);
    let off = Redactor::disabled();
    assert_eq!(off.text(&plants[0].line), plants[0].line.as_str());
    assert_eq!(off.summary(false).as_deref(), Some(DISABLED_WARNING));
}

#[test]
fn json_objects_with_a_path_are_that_file() {
    let plant = &corpus::plants(13)[1];
    let redactor = Redactor::default();
    let mut value = serde_json::json!({
        "matches": [
            {"path": "src/a.py", "line": 12, "text": plant.line},
            {"path": ".env.local", "line": 1, "text": "PLAIN=1"},
        ],
        "path": "README.md",
    });
    redactor.redact_json(&mut value);
    let text = value.to_string();
    assert!(!text.contains(&plant.value) && !text.contains("PLAIN=1"), "{text}");
    assert_eq!(value["matches"][1]["path"], ".env.local");
    assert!(redactor.summary(true).unwrap().contains("src/a.py:12 (github-pat)"));
}

#[test]
fn a_secret_in_a_diff_is_placed_at_its_file_and_new_side_line() {
    let plant = &corpus::plants(17)[0];
    let diff = format!(
        "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +5,4 @@\n one\n-two\n+three\n+{}\n",
        plant.line
    );
    for text in [diff.clone(), serde_json::json!({ "diff": diff }).to_string()] {
        let redacted = run(&text);
        assert_eq!(redacted.findings.len(), 1, "{text}");
        let finding = &redacted.findings[0];
        assert_eq!((finding.path.as_deref(), finding.line), (Some("src/a.rs"), 7), "{text}");
    }
}

#[test]
fn rules_search_around_their_keywords_and_still_find_every_plant() {
    let bounded = RULES.rules.iter().filter(|rule| rule.regex.is_some() && rule.reach.is_some()).count();
    assert!(bounded * 10 >= rule_count() * 9, "{bounded} of {} rules search around their keywords", rule_count());
    let filler = "let value = key_of(item); // api token secret password auth access ey s. sk\n";
    for seed in [2, 4, 6] {
        let plants = corpus::plants(seed);
        // Far apart, among lines full of keywords.
        let apart: String = plants.iter().map(|plant| format!("{}{}\n", filler.repeat(40), plant.line)).collect();
        // On one long line (a minified file), where windows are that line.
        let one_line: String = plants
            .iter()
            .filter(|plant| !plant.line.contains('\n'))
            .map(|plant| format!("{} {} ", filler.trim_end().repeat(5), plant.line))
            .collect();
        for text in [apart, one_line] {
            let redacted = run(&text);
            for plant in plants.iter().filter(|plant| text.contains(&plant.value)) {
                assert!(!redacted.text.contains(&plant.value), "seed {seed}: {} kept", plant.rule);
            }
        }
    }
}

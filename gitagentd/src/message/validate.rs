//! The commit-message validator. Each rule returns a [`Violation`] that
//! reads as an instruction for the repair pass.

use super::shape::BODY_WIDTH;
use regex::Regex;
use std::sync::LazyLock;

/// Which commit-style task produced the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageMode {
    Normal,
    Amend,
    PullRequest,
}

/// The prepared facts a message is checked against.
#[derive(Debug, Clone, Default)]
pub struct ValidationContext<'a> {
    /// In amend mode, the subject of the commit being amended.
    pub original_subject: Option<&'a str>,
    /// Staged submodule commit summaries the message must mention.
    pub submodule_summaries: &'a [String],
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Phrases that show the model talking about the message instead of
/// writing it.
static COMMENTARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?im)^\s*(here is|here's|below is|sure[,!]|certainly[,!]|commit message:|explanation:|note to reviewer|i would|i have|as an ai)")
        .expect("the commentary pattern is valid")
});

/// Delta or process narration that an amended message must not use.
static AMEND_DELTA: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(also|this amend(ment)?|in addition|additionally|amended to)\b")
        .expect("the amend pattern is valid")
});

/// Checks a shaped message; an empty list means it is acceptable.
pub fn validate(mode: MessageMode, message: &str, context: &ValidationContext<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let trimmed = message.trim();
    if trimmed.is_empty() {
        violations.push(Violation("the message is empty; write a subject line".into()));
        return violations;
    }
    if trimmed.contains("```") || trimmed.contains("~~~") {
        violations.push(Violation("the message contains a code fence; output the plain message only".into()));
    }
    let subject = trimmed.lines().next().unwrap_or_default().trim();
    if subject.is_empty() || subject.starts_with('#') {
        violations.push(Violation("the first line must be the subject".into()));
    }
    if trimmed.lines().nth(1).is_some_and(|line| !line.trim().is_empty()) {
        violations.push(Violation("the subject must be followed by a blank line before the body".into()));
    }
    if let Some(found) = COMMENTARY.find(trimmed) {
        violations.push(Violation(format!(
            "the message contains commentary ({:?}); output only the commit message",
            found.as_str().trim()
        )));
    }
    if mode == MessageMode::Amend {
        if let Some(found) = AMEND_DELTA.find(trimmed) {
            violations.push(Violation(format!(
                "the amended message narrates a delta ({:?}); describe the final commit as one change",
                found.as_str()
            )));
        }
        if let Some(original) = context.original_subject.map(str::trim).filter(|original| !original.is_empty())
            && subject != original
        {
            violations.push(Violation(format!(
                "the subject must stay the original HEAD subject {original:?}, not {subject:?}"
            )));
        }
    }
    let lowered = normalize(trimmed);
    for summary in context.submodule_summaries {
        if !lowered.contains(&normalize(summary)) {
            violations
                .push(Violation(format!("the message must include the staged submodule commit summary {summary:?}")));
        }
    }
    for (index, line) in trimmed.lines().enumerate().skip(1) {
        if line.chars().count() > BODY_WIDTH && !is_unbreakable(line) {
            violations.push(Violation(format!("body line {} is longer than {BODY_WIDTH} columns", index + 1)));
        }
    }
    violations
}

/// A line that only overflows because of one word that cannot be broken,
/// such as a URL, after an optional list, quote or trailer prefix.
fn is_unbreakable(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [_] => true,
        [prefix, _] => matches!(*prefix, "-" | "*" | "+" | ">") || prefix.ends_with(':') || prefix.ends_with('.'),
        _ => false,
    }
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(mode: MessageMode, message: &str) -> Vec<Violation> {
        validate(mode, message, &ValidationContext::default())
    }

    #[test]
    fn a_plain_message_passes() {
        assert!(check(MessageMode::Normal, "fix: keep order\n\nThe body explains why.").is_empty());
    }

    #[test]
    fn the_body_needs_a_blank_line_after_the_subject() {
        assert!(check(MessageMode::Normal, "fix: x\nbody right away").iter().any(|v| v.0.contains("blank line")));
    }

    #[test]
    fn empty_output_fails() {
        assert_eq!(check(MessageMode::Normal, "  \n").len(), 1);
    }

    #[test]
    fn fences_fail() {
        assert!(!check(MessageMode::Normal, "```\nfix: x\n```").is_empty());
    }

    #[test]
    fn missing_subject_fails() {
        assert!(check(MessageMode::Normal, "# heading\n\nbody").iter().any(|v| v.0.contains("subject")));
    }

    #[test]
    fn commentary_fails() {
        let found = check(MessageMode::Normal, "Here is the commit message:\n\nfix: x");
        assert!(found.iter().any(|v| v.0.contains("commentary")), "{found:?}");
        assert!(check(MessageMode::Normal, "fix: explain where the cache lives").is_empty());
    }

    #[test]
    fn amend_rejects_delta_phrasing_as_words() {
        let context = ValidationContext { original_subject: Some("feat: add x"), ..Default::default() };
        assert!(!validate(MessageMode::Amend, "feat: add x\n\nAlso fixes y.", &context).is_empty());
        assert!(!validate(MessageMode::Amend, "feat: add x\n\nIn addition, z.", &context).is_empty());
        assert!(!validate(MessageMode::Amend, "feat: add x\n\nThis amend tidies.", &context).is_empty());
        assert!(validate(MessageMode::Amend, "feat: add x\n\nReturns false on empty input.", &context).is_empty());
        assert!(check(MessageMode::Normal, "fix: x\n\nAlso handles y.").is_empty());
    }

    #[test]
    fn amend_keeps_the_original_subject() {
        let context = ValidationContext { original_subject: Some("feat: add x"), ..Default::default() };
        let found = validate(MessageMode::Amend, "fix: narrow delta", &context);
        assert!(found.iter().any(|v| v.0.contains("original HEAD subject")), "{found:?}");
    }

    #[test]
    fn submodule_summaries_are_required() {
        let summaries = vec!["Add retry to fetch".to_string()];
        let context = ValidationContext { submodule_summaries: &summaries, ..Default::default() };
        assert!(!validate(MessageMode::Normal, "chore: bump lib", &context).is_empty());
        assert!(
            validate(MessageMode::Normal, "chore: bump lib\n\n- abc1234: add retry to  fetch", &context).is_empty()
        );
    }

    #[test]
    fn long_body_lines_fail_unless_unbreakable() {
        let long = format!("fix: x\n\n{}", "word ".repeat(20));
        assert!(!check(MessageMode::Normal, &long).is_empty());
        let url = format!("fix: x\n\n- https://example.test/{}", "a".repeat(80));
        assert!(check(MessageMode::Normal, &url).is_empty());
    }
}

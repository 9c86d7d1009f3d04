//! Commit-message output rules: shaping (subject first, one blank line,
//! body paragraphs reflowed to 72 columns with lists, quotes and trailers
//! wrapped under their own prefixes), validation, and carrying a task-ID
//! suffix such as ` (T12)` over from recent history.

use crate::git::CommitInfo;

/// The body width after shaping.
pub const WIDTH: usize = 72;

/// Shapes a model answer into a commit message.
pub fn shape(output: &str) -> String {
    let text = output.trim().replace("\r\n", "\n");
    if text.is_empty() {
        return String::new();
    }
    let (subject, body) = split_subject(&text);
    if body.trim().is_empty() { subject } else { format!("{subject}\n\n{}", wrap_body(body.trim(), WIDTH)) }
}

/// The subject (a wrapped first paragraph is re-joined when it plainly
/// continues) and the rest.
fn split_subject(text: &str) -> (String, &str) {
    let (first, rest) = text.split_once("\n\n").unwrap_or((text, ""));
    let lines: Vec<&str> = first.lines().collect();
    if lines.len() >= 2 && continues(lines[0].trim(), lines[1].trim()) {
        let subject = lines.iter().map(|line| line.trim()).filter(|line| !line.is_empty()).collect::<Vec<_>>();
        return (subject.join(" "), rest);
    }
    match text.split_once('\n') {
        Some((subject, rest)) => (subject.trim().to_string(), rest),
        None => (text.trim().to_string(), ""),
    }
}

fn continues(first: &str, second: &str) -> bool {
    let connector = [" and", " or", " to", " for", " with", " across", ","].iter().any(|end| first.ends_with(end));
    let conventional =
        first.len() >= 50 && is_conventional(first) && second.starts_with(|c: char| c.is_ascii_lowercase());
    connector || conventional
}

/// `type(scope)!: summary`.
pub fn is_conventional(subject: &str) -> bool {
    let Some((prefix, summary)) = subject.split_once(':') else { return false };
    if summary.trim().is_empty() {
        return false;
    }
    let prefix = prefix.strip_suffix('!').unwrap_or(prefix);
    let (kind, scope) = match prefix.split_once('(') {
        Some((kind, scope)) => (kind, scope.strip_suffix(')').map(|scope| !scope.is_empty() && !scope.contains(')'))),
        None => (prefix, Some(true)),
    };
    !kind.is_empty() && kind.chars().all(|c| c.is_ascii_lowercase()) && scope == Some(true)
}

/// Reflows prose paragraphs; structural lines keep their prefixes.
fn wrap_body(body: &str, width: usize) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let flush = |paragraph: &mut Vec<&str>, out: &mut Vec<String>| {
        if !paragraph.is_empty() {
            out.extend(wrap_words(&paragraph.join(" "), width, "", ""));
            paragraph.clear();
        }
    };
    for line in body.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            flush(&mut paragraph, &mut out);
            out.push(String::new());
            continue;
        }
        if let Some((first, next, content)) = structural(line.trim_end()) {
            flush(&mut paragraph, &mut out);
            out.extend(wrap_words(content, width, &first, &next));
            continue;
        }
        if line.starts_with([' ', '\t']) {
            flush(&mut paragraph, &mut out);
            out.push(line.trim_end().to_string());
            continue;
        }
        paragraph.push(trimmed);
    }
    flush(&mut paragraph, &mut out);
    let mut joined = out.join("\n");
    while joined.contains("\n\n\n") {
        joined = joined.replace("\n\n\n", "\n\n");
    }
    joined.trim().to_string()
}

/// A list item, quote or trailer: its first-line prefix, continuation
/// prefix, and content.
fn structural(line: &str) -> Option<(String, String, &str)> {
    let rest = line.trim_start();
    let indent = &line[..line.len() - rest.len()];
    let mut quote_end = 0;
    while rest[quote_end..].starts_with("> ") {
        quote_end += 2;
    }
    let (quote, rest) = rest.split_at(quote_end);
    let lead = format!("{indent}{quote}");
    if rest.len() >= 3 && rest.starts_with(['-', '*', '+']) && rest.as_bytes()[1] == b' ' {
        return Some((format!("{lead}{}", &rest[..2]), format!("{lead}  "), &rest[2..]));
    }
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && rest[digits..].starts_with(". ") {
        let marker = &rest[..digits + 2];
        return Some((format!("{lead}{marker}"), format!("{lead}{}", " ".repeat(marker.len())), &rest[digits + 2..]));
    }
    if let Some((token, value)) = rest.split_once(": ")
        && !token.is_empty()
        && !value.is_empty()
        && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && token.contains('-')
    {
        let marker = format!("{token}: ");
        return Some((format!("{lead}{marker}"), format!("{lead}{}", " ".repeat(marker.len())), value));
    }
    if !quote.is_empty() && !rest.is_empty() {
        return Some((lead.clone(), lead, rest));
    }
    None
}

/// Greedy word wrap; a word longer than the width stays whole.
fn wrap_words(text: &str, width: usize, first: &str, next: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = first.to_string();
    let mut has_word = false;
    for word in text.split_whitespace() {
        if has_word && current.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut current, next.to_string()));
            has_word = false;
        }
        if has_word {
            current.push(' ');
        }
        current.push_str(word);
        has_word = true;
    }
    if has_word || lines.is_empty() {
        lines.push(current);
    }
    lines
}

/// The problems with a shaped message; empty when it is valid.
pub fn validate(message: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let trimmed = message.trim();
    if trimmed.is_empty() {
        return vec!["the message is empty".into()];
    }
    if trimmed.contains("```") {
        errors.push("the message contains a code fence".into());
    }
    let subject = trimmed.lines().next().unwrap_or_default().trim();
    if subject.is_empty() {
        errors.push("the subject line is missing".into());
    }
    let lower = trimmed.to_lowercase();
    for phrase in ["here is", "here's the", "commit message:", "explanation:", "i would", "i have"] {
        if lower.contains(phrase) {
            errors.push(format!("the message contains commentary ({phrase:?}); return the message only"));
        }
    }
    let mut lines = trimmed.lines().skip(1);
    if lines.next().is_some_and(|line| !line.trim().is_empty()) {
        errors.push("the subject must be followed by a blank line before the body".into());
    }
    for (index, line) in trimmed.lines().enumerate().skip(2) {
        let breakable = line.trim().contains(char::is_whitespace);
        if line.chars().count() > WIDTH && breakable {
            errors.push(format!("body line {} is longer than {WIDTH} characters", index + 1));
        }
    }
    errors
}

/// Appends the task-ID suffix (` (T12)`) the recent history uses, when the
/// subject has none: the suffix of a recent commit with the same subject,
/// else of a run of recent commits sharing one suffix (and the subject's
/// conventional scope when it has one), else of the latest commit.
pub fn preserve_task_id(message: &str, recent: &[CommitInfo]) -> String {
    let message = message.trim();
    let (subject, rest) = message.split_once('\n').map_or((message, ""), |(subject, rest)| (subject, rest));
    let subject = subject.trim();
    if subject.is_empty() || task_suffix(subject).is_some() {
        return message.to_string();
    }
    let with = |suffix: &str| {
        if rest.is_empty() { format!("{subject}{suffix}") } else { format!("{subject}{suffix}\n{rest}") }
    };
    for commit in recent {
        if let Some(start) = task_suffix(commit.summary.trim())
            && commit.summary.trim()[..start].trim_end() == subject
        {
            return with(&commit.summary.trim()[start..]);
        }
    }
    let mut run: Vec<&str> = Vec::new();
    let mut suffix = "";
    for commit in recent {
        let summary = commit.summary.trim();
        let Some(start) = task_suffix(summary) else { break };
        if suffix.is_empty() {
            suffix = &summary[start..];
        }
        if &summary[start..] != suffix {
            break;
        }
        run.push(summary);
    }
    if run.len() >= 2 {
        let scope = scope_of(subject);
        if scope.is_none() || run.iter().any(|summary| scope_of(summary) == scope) {
            return with(suffix);
        }
        return message.to_string();
    }
    match recent.first().map(|commit| commit.summary.trim()).and_then(|s| task_suffix(s).map(|start| &s[start..])) {
        Some(suffix) => with(suffix),
        None => message.to_string(),
    }
}

/// Where a trailing run of ` (T<digits>)` groups starts.
fn task_suffix(subject: &str) -> Option<usize> {
    let mut end = subject.len();
    let mut start = None;
    while let Some(open) = subject[..end].rfind(" (T") {
        let group = &subject[open + 3..end];
        let Some(digits) = group.strip_suffix(')') else { break };
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            break;
        }
        start = Some(open);
        end = open;
    }
    start
}

fn scope_of(subject: &str) -> Option<&str> {
    let (prefix, _) = subject.split_once(':')?;
    let open = prefix.find('(')?;
    prefix.strip_suffix(')').map(|prefix| &prefix[open + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(summary: &str) -> CommitInfo {
        CommitInfo { sha: "0".repeat(40), summary: summary.into(), author: String::new(), date: String::new() }
    }

    #[test]
    fn prose_is_reflowed_and_structure_kept() {
        let raw = "feat(cli): add commit-msg\n\nThis change adds a command\nthat writes messages from the staged diff and keeps the output contract to exactly the message.\n\n- a list item that is long enough to need wrapping across two lines of output text\nRefs: T1\n";
        let shaped = shape(raw);
        assert_eq!(
            shaped,
            "feat(cli): add commit-msg\n\nThis change adds a command that writes messages from the staged diff and\nkeeps the output contract to exactly the message.\n\n- a list item that is long enough to need wrapping across two lines of\n  output text\nRefs: T1"
        );
        assert!(validate(&shaped).is_empty(), "{:?}", validate(&shaped));
    }

    #[test]
    fn a_wrapped_subject_is_rejoined() {
        assert_eq!(
            shape("fix: keep retries bounded and\nclear on cancel\n"),
            "fix: keep retries bounded and clear on cancel"
        );
        assert_eq!(shape("  subject only  "), "subject only");
    }

    #[test]
    fn validation_catches_fences_commentary_and_missing_blank_line() {
        assert!(!validate("").is_empty());
        assert!(validate("```\nfix: x\n```").iter().any(|e| e.contains("fence")));
        assert!(validate("Here is the commit message:\nfix: x").iter().any(|e| e.contains("commentary")));
        assert!(validate("fix: x\nbody right away").iter().any(|e| e.contains("blank line")));
        let long = format!("fix: x\n\n{}", "word ".repeat(30));
        assert!(validate(&long).iter().any(|e| e.contains("longer than 72")));
        let url = format!("fix: x\n\nhttps://example.test/{}", "a".repeat(90));
        assert!(validate(&url).is_empty(), "an unbreakable token may exceed the width");
    }

    #[test]
    fn task_ids_follow_recent_history() {
        let same = [commit("feat: add x (T7)"), commit("chore: y")];
        assert_eq!(preserve_task_id("feat: add x\n\nbody", &same), "feat: add x (T7)\n\nbody");
        let run = [commit("fix(api): a (T9)"), commit("feat(api): b (T9)")];
        assert_eq!(preserve_task_id("refactor(api): c", &run), "refactor(api): c (T9)");
        assert_eq!(preserve_task_id("refactor(ui): c", &run), "refactor(ui): c", "another scope keeps none");
        assert_eq!(preserve_task_id("docs: d (T1)", &run), "docs: d (T1)");
        assert_eq!(preserve_task_id("docs: d", &[commit("docs: e")]), "docs: d");
    }
}

//! Task-ID suffixes such as `(T123)` at the end of a subject. Teams that
//! tag every commit of a task keep doing so: when the model drops the
//! suffix, it is restored from the recent history.

use regex::Regex;
use std::sync::LazyLock;

static SUFFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:\s+\(T\d+\))+$").expect("the task-id pattern is valid"));

/// Restores a task-ID suffix on `message`'s subject when it has none: the
/// suffix of a recent subject with the same text, else the suffix of the
/// latest commit (the task in progress). `recent_subjects` is newest first.
pub fn preserve_task_id_suffix(message: &str, recent_subjects: &[String]) -> String {
    let Some((subject, rest)) = split_first_line(message) else { return message.to_string() };
    if subject.is_empty() || SUFFIX.is_match(subject) {
        return message.to_string();
    }
    let suffix_of = |reference: &str| SUFFIX.find(reference.trim()).map(|found| found.as_str().to_string());
    let same_subject = recent_subjects.iter().find_map(|reference| {
        let reference = reference.trim();
        let suffix = suffix_of(reference)?;
        (reference[..reference.len() - suffix.len()].trim() == subject).then_some(suffix)
    });
    let suffix = same_subject.or_else(|| recent_subjects.first().and_then(|latest| suffix_of(latest)));
    match suffix {
        Some(suffix) => format!("{subject}{suffix}{rest}"),
        None => message.to_string(),
    }
}

fn split_first_line(message: &str) -> Option<(&str, &str)> {
    let message = message.trim_start();
    if message.is_empty() {
        return None;
    }
    Some(match message.find('\n') {
        Some(end) => (message[..end].trim_end(), &message[end..]),
        None => (message.trim_end(), ""),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subjects(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn kept_when_present() {
        assert_eq!(preserve_task_id_suffix("fix: x (T9)", &subjects(&["a (T1)"])), "fix: x (T9)");
    }

    #[test]
    fn restored_from_the_same_subject() {
        let recent = subjects(&["feat: other (T2)", "fix: x (T7)"]);
        assert_eq!(preserve_task_id_suffix("fix: x\n\nbody", &recent), "fix: x (T7)\n\nbody");
    }

    #[test]
    fn restored_from_the_latest_commit() {
        let recent = subjects(&["feat: other (T2) (T3)", "fix: y"]);
        assert_eq!(preserve_task_id_suffix("fix: x", &recent), "fix: x (T2) (T3)");
    }

    #[test]
    fn untouched_without_suffixes_in_history() {
        assert_eq!(preserve_task_id_suffix("fix: x", &subjects(&["feat: y", "fix: z (T1)"])), "fix: x");
    }
}

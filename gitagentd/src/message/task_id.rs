//! Task-ID suffixes such as `(T123)` at the end of a subject. Teams that
//! tag every commit of a task keep doing so: when the model drops the
//! suffix, it is restored from the recent history.

use regex::Regex;
use std::sync::LazyLock;

static SUFFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:\s+\(T\d+\))+$").expect("the task-id pattern is valid"));

/// Appends the task-ID suffix (` (T12)`) the recent history uses, when the
/// subject has none: the suffix of a recent commit with the same subject,
/// else of a run of at least two recent commits sharing one suffix (and the
/// subject's conventional scope, when it has one), else of the latest
/// commit. `recent_subjects` is newest first.
pub fn preserve_task_id_suffix(message: &str, recent_subjects: &[String]) -> String {
    let message = message.trim();
    let (subject, rest) = message.split_once('\n').unwrap_or((message, ""));
    let subject = subject.trim();
    if subject.is_empty() || SUFFIX.is_match(subject) {
        return message.to_string();
    }
    let with = |suffix: &str| {
        if rest.is_empty() { format!("{subject}{suffix}") } else { format!("{subject}{suffix}\n{rest}") }
    };
    let split = |summary: &str| -> Option<(String, String)> {
        let summary = summary.trim();
        let found = SUFFIX.find(summary)?;
        Some((summary[..found.start()].trim_end().to_string(), found.as_str().to_string()))
    };
    if let Some((_, suffix)) =
        recent_subjects.iter().filter_map(|summary| split(summary)).find(|(base, _)| base.as_str() == subject)
    {
        return with(&suffix);
    }
    let mut run: Vec<String> = Vec::new();
    let mut run_suffix = String::new();
    for summary in recent_subjects {
        let Some((_, suffix)) = split(summary) else { break };
        if run_suffix.is_empty() {
            run_suffix = suffix.clone();
        }
        if suffix != run_suffix {
            break;
        }
        run.push(summary.trim().to_string());
    }
    if run.len() >= 2 {
        let scope = conventional_scope(subject);
        if scope.is_none() || run.iter().any(|summary| conventional_scope(summary) == scope) {
            return with(&run_suffix);
        }
        return message.to_string();
    }
    match recent_subjects.first().and_then(|latest| split(latest)) {
        Some((_, suffix)) => with(&suffix),
        None => message.to_string(),
    }
}

fn conventional_scope(subject: &str) -> Option<&str> {
    let (prefix, _) = subject.split_once(':')?;
    let open = prefix.find('(')?;
    prefix.strip_suffix(')').map(|prefix| &prefix[open + 1..])
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
    fn a_run_of_suffixes_follows_the_scope() {
        let run = subjects(&["fix(api): a (T9)", "feat(api): b (T9)"]);
        assert_eq!(preserve_task_id_suffix("refactor(api): c", &run), "refactor(api): c (T9)");
        assert_eq!(preserve_task_id_suffix("refactor(ui): c", &run), "refactor(ui): c", "another scope keeps none");
        assert_eq!(preserve_task_id_suffix("docs: d", &run), "docs: d (T9)");
    }

    #[test]
    fn untouched_without_suffixes_in_history() {
        assert_eq!(preserve_task_id_suffix("fix: x", &subjects(&["feat: y", "fix: z (T1)"])), "fix: x");
    }
}

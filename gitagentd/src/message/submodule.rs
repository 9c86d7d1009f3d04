//! Messages about submodule movements, formatted locally: the whole
//! message of a submodule-only staged change (no model, no credentials),
//! and the submodule section appended to a generated message that left
//! out the staged submodule commit summaries. The body mirrors the
//! release-note submodule changelog: each submodule path, then indented
//! `short-sha: summary` entries; a nested submodule that moved with its
//! parent gets its own section under its full path (`webui/wiki` after
//! `webui`).

use gitagent_git::SubmoduleChange;

/// Subjects name the submodules up to this many; past it they say
/// `submodules`.
const NAMED_SUBMODULES: usize = 3;

/// The subject style the history uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectStyle {
    /// `chore(deps): update lib submodule`
    Conventional,
    /// `Update lib submodule`
    TitleCase,
}

/// The style of the newest recent subject that shows one; conventional
/// when none does.
pub fn detect_style(recent_subjects: &[String]) -> SubjectStyle {
    for subject in recent_subjects {
        let subject = subject.trim();
        if is_conventional(subject) {
            return SubjectStyle::Conventional;
        }
        if subject.starts_with(|c: char| c.is_ascii_uppercase()) {
            return SubjectStyle::TitleCase;
        }
    }
    SubjectStyle::Conventional
}

fn is_conventional(subject: &str) -> bool {
    let Some((prefix, _)) = subject.split_once(':') else { return false };
    let prefix = prefix.trim().strip_suffix('!').unwrap_or(prefix.trim());
    let (kind, scope) = match prefix.split_once('(') {
        Some((kind, scope)) => (kind, Some(scope)),
        None => (prefix, None),
    };
    !kind.is_empty()
        && kind.bytes().all(|b| b.is_ascii_lowercase())
        && scope.is_none_or(|scope| scope.len() > 1 && scope.ends_with(')') && !scope[..scope.len() - 1].contains(')'))
}

/// The complete message of a submodule-only staged change. The subject
/// names the staged gitlinks; the body has a section for each of them and
/// for each nested submodule they moved.
pub fn submodule_only_message(submodules: &[SubmoduleChange], recent_subjects: &[String]) -> String {
    let mut paths: Vec<&str> =
        submodules.iter().filter(|sub| sub.nested_in.is_none()).map(|sub| sub.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    let target = match paths.as_slice() {
        [] => "submodules".to_string(),
        [one] => format!("{one} submodule"),
        many if many.len() > NAMED_SUBMODULES => "submodules".to_string(),
        [first @ .., last] if first.len() == 1 => format!("{} and {last} submodules", first[0]),
        [first @ .., last] => format!("{}, and {last} submodules", first.join(", ")),
    };
    let subject = match detect_style(recent_subjects) {
        SubjectStyle::Conventional => format!("chore(deps): update {target}"),
        SubjectStyle::TitleCase => format!("Update {target}"),
    };
    let body = submodule_section(submodules);
    super::shape(&if body.is_empty() { subject } else { format!("{subject}\n\n{body}") })
}

/// Each submodule path followed by its indented `short-sha: summary`
/// entries, sorted by path; a movement without local history names the
/// new commit instead.
pub fn submodule_section(submodules: &[SubmoduleChange]) -> String {
    let mut sorted: Vec<&SubmoduleChange> = submodules.iter().filter(|sub| !sub.path.is_empty()).collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut blocks = Vec::new();
    for sub in sorted {
        let mut entries: Vec<String> = sub
            .commits
            .iter()
            .filter(|commit| !commit.summary.trim().is_empty())
            .map(|commit| format!("{}: {}", short(&commit.sha), commit.summary.trim()))
            .collect();
        if entries.is_empty() {
            entries.push(match (sub.new_sha.is_empty(), sub.old_sha.is_empty()) {
                (false, _) => format!("{}: update submodule pointer", short(&sub.new_sha)),
                (true, false) => format!("{}: remove submodule pointer", short(&sub.old_sha)),
                (true, true) => "update submodule pointer".to_string(),
            });
        }
        let mut lines = vec![sub.path.clone()];
        for entry in entries {
            let options = textwrap::Options::new(super::BODY_WIDTH)
                .initial_indent("  - ")
                .subsequent_indent("    ")
                .word_separator(textwrap::WordSeparator::AsciiSpace)
                .break_words(false);
            lines.extend(textwrap::wrap(&entry, options).into_iter().map(|line| line.trim_end().to_string()));
        }
        blocks.push(lines.join("\n"));
    }
    blocks.join("\n\n")
}

/// `message` with the submodule section appended when it does not carry
/// every staged submodule commit summary yet.
pub fn with_submodule_section(message: &str, submodules: &[SubmoduleChange]) -> String {
    let normalized = normalize(message);
    let complete =
        submodules.iter().flat_map(SubmoduleChange::summaries).all(|summary| normalized.contains(&normalize(summary)));
    if complete {
        return message.to_string();
    }
    let section = submodule_section(submodules);
    super::shape(&format!("{}\n\n{section}", message.trim_end()))
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use gitagent_git::CommitInfo;

    fn sub(path: &str, commits: &[(&str, &str)]) -> SubmoduleChange {
        SubmoduleChange {
            path: path.into(),
            old_sha: "1111111aaaa".into(),
            new_sha: "2222222bbbb".into(),
            local_history_available: !commits.is_empty(),
            availability_error: String::new(),
            commits: commits
                .iter()
                .map(|(sha, summary)| CommitInfo {
                    sha: (*sha).into(),
                    summary: (*summary).into(),
                    author: String::new(),
                    date: String::new(),
                })
                .collect(),
            nested_in: None,
        }
    }

    fn subjects(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn style_follows_the_newest_telling_subject() {
        assert_eq!(detect_style(&subjects(&["fix(api): x", "Add y"])), SubjectStyle::Conventional);
        assert_eq!(detect_style(&subjects(&["Add y", "fix: x"])), SubjectStyle::TitleCase);
        assert_eq!(detect_style(&subjects(&["wip", "Merge branch"])), SubjectStyle::TitleCase);
        assert_eq!(detect_style(&[]), SubjectStyle::Conventional);
    }

    #[test]
    fn one_submodule_with_history() {
        let message = submodule_only_message(
            &[sub("vendor/lib", &[("abcdef0123", "Add retry to fetch"), ("0123456789", "Fix typo")])],
            &subjects(&["feat: x"]),
        );
        assert_eq!(
            message,
            "chore(deps): update vendor/lib submodule\n\nvendor/lib\n  - abcdef0: Add retry to fetch\n  - 0123456: Fix typo"
        );
    }

    #[test]
    fn title_case_and_names_up_to_three() {
        let two = submodule_only_message(&[sub("b", &[]), sub("a", &[])], &subjects(&["Add thing"]));
        assert!(
            two.starts_with("Update a and b submodules\n\na\n  - 2222222: update submodule pointer\n\nb\n"),
            "{two}"
        );
        let three = submodule_only_message(&[sub("c", &[]), sub("a", &[]), sub("b", &[])], &[]);
        assert!(three.starts_with("chore(deps): update a, b, and c submodules\n"), "{three}");
        let four = submodule_only_message(&[sub("a", &[]), sub("b", &[]), sub("c", &[]), sub("d", &[])], &[]);
        assert!(four.starts_with("chore(deps): update submodules\n"), "{four}");
    }

    #[test]
    fn nested_submodules_get_a_section_after_their_parent_but_stay_out_of_the_subject() {
        let parent = sub("webui", &[("aaaaaaa111", "chore(deps): update wiki submodule")]);
        let nested = SubmoduleChange {
            nested_in: Some("webui".into()),
            ..sub("webui/wiki", &[("bbbbbbb222", "docs(godoxy): document Docker label shortcuts")])
        };
        let message = submodule_only_message(&[nested.clone(), parent.clone()], &[]);
        assert_eq!(
            message,
            "chore(deps): update webui submodule\n\nwebui\n  - aaaaaaa: chore(deps): update wiki submodule\n\n\
             webui/wiki\n  - bbbbbbb: docs(godoxy): document Docker label shortcuts"
        );
        assert_eq!(
            with_submodule_section("chore: update webui and docs", &[parent, nested]),
            "chore: update webui and docs\n\nwebui\n  - aaaaaaa: chore(deps): update wiki submodule\n\n\
             webui/wiki\n  - bbbbbbb: docs(godoxy): document Docker label shortcuts"
        );
    }

    #[test]
    fn the_section_is_appended_only_when_summaries_are_missing() {
        let subs = [sub("lib", &[("abcdef0123", "Add retry to fetch")])];
        assert_eq!(
            with_submodule_section("chore: bump lib", &subs),
            "chore: bump lib\n\nlib\n  - abcdef0: Add retry to fetch"
        );
        let told = "chore: bump lib\n\nPicks up add retry to fetch.";
        assert_eq!(with_submodule_section(told, &subs), told);
    }
}

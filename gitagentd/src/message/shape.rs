//! Output shaping. The model is not asked to hard-wrap; here the subject
//! is separated from the body, soft line breaks inside body paragraphs are
//! joined, prose is reflowed to [`BODY_WIDTH`] columns, and list items,
//! blockquotes and Git trailers are wrapped with their prefixes kept (a
//! trailer's continuation lines are indented, as Git expects). Lines
//! indented by two or more spaces (code, tables, a block under a list
//! item) are kept as written; nested list items wrap under their marker. Words longer than the width,
//! such as URLs, are never broken and may overflow.

use textwrap::{Options, WordSeparator};

/// The body width after shaping.
pub const BODY_WIDTH: usize = 72;

/// Shapes a model answer into a Git message: subject, blank line, body.
pub fn shape(raw: &str) -> String {
    let text = raw.replace("\r\n", "\n");
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let (subject, body) = split_subject(text);
    let body = reflow_body(body, BODY_WIDTH);
    if body.is_empty() { subject } else { format!("{subject}\n\n{body}") }
}

/// The subject is the first line, or the whole first paragraph when the
/// model visibly wrapped a long subject onto a second line.
fn split_subject(text: &str) -> (String, &str) {
    let (first_paragraph, rest) = match text.split_once("\n\n") {
        Some((first, rest)) => (first, rest),
        None => (text, ""),
    };
    let lines: Vec<&str> = first_paragraph.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    if lines.len() >= 2 && subject_continues(lines[0], lines[1]) {
        return (lines.join(" "), rest.trim());
    }
    match text.split_once('\n') {
        Some((subject, body)) => (subject.trim().to_string(), body.trim()),
        None => (text.to_string(), ""),
    }
}

fn subject_continues(first: &str, second: &str) -> bool {
    const CONNECTORS: &[&str] = &[" and", " or", " to", " for", " with", " across", " in", " of", ","];
    let dangling = CONNECTORS.iter().any(|connector| first.ends_with(connector));
    let lowercase_next = second.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    dangling || (first.chars().count() >= 50 && conventional_prefix(first) && lowercase_next && !is_structural(second))
}

fn conventional_prefix(subject: &str) -> bool {
    let Some((prefix, summary)) = subject.split_once(':') else { return false };
    if summary.trim().is_empty() {
        return false;
    }
    let prefix = prefix.strip_suffix('!').unwrap_or(prefix);
    let (kind, scope_ok) = match prefix.split_once('(') {
        Some((kind, scope)) => (kind, scope.ends_with(')') && scope.len() > 1),
        None => (prefix, true),
    };
    scope_ok && !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase())
}

/// One structural line: where its text starts and how its continuation
/// lines are prefixed.
struct Structure<'a> {
    first_prefix: String,
    continuation_prefix: String,
    content: &'a str,
}

/// Recognises list items, blockquotes and trailers (optionally inside a
/// blockquote).
fn structure(line: &str) -> Option<Structure<'_>> {
    let mut quote = String::new();
    let mut rest = line;
    while let Some(stripped) = rest.strip_prefix("> ") {
        quote.push_str("> ");
        rest = stripped;
    }
    if let Some(content) = ["- ", "* ", "+ "].iter().find_map(|marker| rest.strip_prefix(marker)) {
        return Some(Structure {
            first_prefix: format!("{quote}{}", &rest[..2]),
            continuation_prefix: format!("{quote}  "),
            content,
        });
    }
    if let Some(width) = ordered_marker_width(rest) {
        return Some(Structure {
            first_prefix: format!("{quote}{}", &rest[..width]),
            continuation_prefix: format!("{quote}{}", " ".repeat(width)),
            content: &rest[width..],
        });
    }
    if let Some((token, value)) = rest.split_once(": ")
        && is_trailer_token(token)
        && !value.trim().is_empty()
    {
        return Some(Structure {
            first_prefix: format!("{quote}{token}: "),
            continuation_prefix: format!("{quote}{}", " ".repeat(token.len() + 2)),
            content: value,
        });
    }
    (!quote.is_empty()).then(|| Structure { first_prefix: quote.clone(), continuation_prefix: quote, content: rest })
}

/// Two or more leading spaces, or a tab, mark a line as its own block (a
/// code block, an indented continuation under a list item), as the
/// original keeps it.
fn is_block_indent(indent: &str) -> bool {
    indent.len() >= 2 || indent.contains('\t')
}

/// A bullet or numbered list item (not a quote or trailer).
fn list_item(line: &str) -> Option<Structure<'_>> {
    let marker = ["- ", "* ", "+ "].iter().any(|marker| line.starts_with(marker));
    if marker || ordered_marker_width(line).is_some() { structure(line) } else { None }
}

fn ordered_marker_width(line: &str) -> Option<usize> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    let rest = &line[digits..];
    (rest.starts_with(". ") || rest.starts_with(") ")).then_some(digits + 2)
}

fn is_trailer_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn is_structural(line: &str) -> bool {
    structure(line).is_some()
}

/// A block of the body being assembled.
enum Block {
    Prose(Vec<String>),
    Structured { first_prefix: String, continuation_prefix: String, words: Vec<String> },
    Verbatim(String),
    Blank,
}

fn reflow_body(body: &str, width: usize) -> String {
    let mut blocks: Vec<Block> = Vec::new();
    for raw_line in body.lines() {
        let line = raw_line.trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            if !matches!(blocks.last(), Some(Block::Blank) | None) {
                blocks.push(Block::Blank);
            }
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(structure) = indent.is_empty().then(|| structure(line)).flatten() {
            blocks.push(Block::Structured {
                first_prefix: structure.first_prefix,
                continuation_prefix: structure.continuation_prefix,
                words: vec![structure.content.trim().to_string()],
            });
            continue;
        }
        if is_block_indent(indent) {
            // A nested list item wraps under its own marker; any other
            // deeply indented line (code, an indented block under a list
            // item) stays as written.
            match list_item(trimmed) {
                Some(item) => blocks.push(Block::Structured {
                    first_prefix: format!("{indent}{}", item.first_prefix),
                    continuation_prefix: format!("{indent}{}", item.continuation_prefix),
                    words: vec![item.content.trim().to_string()],
                }),
                None => blocks.push(Block::Verbatim(line.to_string())),
            }
            continue;
        }
        match blocks.last_mut() {
            // A continuation of a list item, quote or trailer: a lazy
            // continuation line right after it, or one indented by a space.
            Some(Block::Structured { words, .. }) if !is_structural(trimmed) => words.push(trimmed.to_string()),
            _ if !indent.is_empty() => blocks.push(Block::Verbatim(line.to_string())),
            Some(Block::Prose(lines)) => lines.push(trimmed.to_string()),
            _ => blocks.push(Block::Prose(vec![trimmed.to_string()])),
        }
    }
    while matches!(blocks.last(), Some(Block::Blank)) {
        blocks.pop();
    }
    let mut out: Vec<String> = Vec::new();
    for block in blocks {
        match block {
            Block::Blank => out.push(String::new()),
            Block::Verbatim(line) => out.push(line),
            Block::Prose(lines) => out.extend(wrap(&lines.join(" "), "", "", width)),
            Block::Structured { first_prefix, continuation_prefix, words } => {
                out.extend(wrap(&words.join(" "), &first_prefix, &continuation_prefix, width));
            }
        }
    }
    out.join("\n").trim_matches('\n').to_string()
}

fn wrap(text: &str, first_prefix: &str, continuation_prefix: &str, width: usize) -> Vec<String> {
    let options = Options::new(width)
        .initial_indent(first_prefix)
        .subsequent_indent(continuation_prefix)
        .word_separator(WordSeparator::AsciiSpace)
        .break_words(false);
    let normalized = text.split_whitespace().collect::<Vec<_>>().join(" ");
    textwrap::wrap(&normalized, options).into_iter().map(|line| line.trim_end().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_only() {
        assert_eq!(shape("  fix: handle empty input \n"), "fix: handle empty input");
    }

    #[test]
    fn soft_wrapped_paragraphs_are_reflowed() {
        let raw = "feat: add search\n\nThe index is built\nlazily on the first\nquery.\n\n\n\nSecond paragraph.";
        assert_eq!(
            shape(raw),
            "feat: add search\n\nThe index is built lazily on the first query.\n\nSecond paragraph."
        );
    }

    #[test]
    fn long_prose_wraps_at_72() {
        let raw = format!("fix: x\n\n{}", "word ".repeat(40));
        let shaped = shape(&raw);
        for line in shaped.lines().skip(2) {
            assert!(line.chars().count() <= BODY_WIDTH, "{line:?}");
        }
        assert_eq!(shaped.lines().skip(2).collect::<Vec<_>>().join(" "), "word ".repeat(40).trim());
    }

    #[test]
    fn body_without_blank_line_after_subject_is_separated() {
        assert_eq!(shape("fix: x\nBody text."), "fix: x\n\nBody text.");
    }

    #[test]
    fn list_items_keep_their_markers_and_hang() {
        let raw = format!("chore: y\n\n- {}\n  continued\n* short\n1. {}", "alpha ".repeat(15), "beta ".repeat(15));
        let shaped = shape(&raw);
        let body: Vec<&str> = shaped.lines().skip(2).collect();
        assert!(body[0].starts_with("- alpha"));
        assert!(body[1].starts_with("  alpha"), "{body:?}");
        assert!(body.iter().any(|line| line.ends_with("continued")));
        assert!(body.contains(&"* short"));
        let ordered = body.iter().position(|line| line.starts_with("1. beta")).unwrap();
        assert!(body[ordered + 1].starts_with("   beta"), "{body:?}");
        assert!(body.iter().all(|line| line.chars().count() <= BODY_WIDTH));
    }

    #[test]
    fn blockquotes_keep_their_prefix() {
        let raw = format!("docs: z\n\n> {}", "quoted ".repeat(15));
        let shaped = shape(&raw);
        for line in shaped.lines().skip(2) {
            assert!(line.starts_with("> "), "{line:?}");
            assert!(line.chars().count() <= BODY_WIDTH);
        }
    }

    #[test]
    fn trailers_wrap_with_indented_continuations() {
        let raw =
            format!("fix: t\n\nBody.\n\nSigned-off-by: A <a@example.test>\nCo-authored-by: {}", "name ".repeat(20));
        let shaped = shape(&raw);
        assert!(shaped.contains("\nSigned-off-by: A <a@example.test>\nCo-authored-by: name"));
        let continuation = shaped.lines().last().unwrap();
        assert!(continuation.starts_with(&" ".repeat("Co-authored-by: ".len())), "{shaped}");
    }

    #[test]
    fn long_urls_are_not_broken() {
        let url = format!("https://example.test/{}", "a".repeat(90));
        let shaped = shape(&format!("docs: link\n\nSee {url} for details."));
        assert!(shaped.lines().any(|line| line == url), "{shaped}");
    }

    #[test]
    fn indented_code_is_kept() {
        let shaped =
            shape("fix: c\n\nRun:\n\n    cargo test --workspace --all-features -- --nocapture --test-threads 1 extra");
        assert!(shaped.ends_with("\n    cargo test --workspace --all-features -- --nocapture --test-threads 1 extra"));
    }

    #[test]
    fn an_indented_block_under_a_list_item_keeps_its_line() {
        let raw = "fix: l\n\nfirst paragraph\ncontinues\n\n- first item\n  indented block\n- second item\nRefs: #123";
        assert_eq!(
            shape(raw),
            "fix: l\n\nfirst paragraph continues\n\n- first item\n  indented block\n- second item\nRefs: #123"
        );
        assert_eq!(shape("fix: l\n\n- item\n\tcode();"), "fix: l\n\n- item\n\tcode();", "a tab indents too");
        assert_eq!(shape("fix: l\n\n- item\n lazy"), "fix: l\n\n- item lazy", "one space continues the item");
    }

    #[test]
    fn nested_list_items_wrap_under_their_marker() {
        let raw = format!("fix: n\n\n- outer\n  - {}", "inner ".repeat(15));
        let shaped = shape(&raw);
        let body: Vec<&str> = shaped.lines().skip(2).collect();
        assert_eq!(body[0], "- outer");
        assert!(body[1].starts_with("  - inner"), "{body:?}");
        assert!(body[2..].iter().all(|line| line.starts_with("    inner")), "{body:?}");
        assert!(body.iter().all(|line| line.chars().count() <= BODY_WIDTH));
    }

    #[test]
    fn a_wrapped_subject_is_joined() {
        assert_eq!(
            shape("fix(search): keep mapped indexes across\nsearches\n\nBody."),
            "fix(search): keep mapped indexes across searches\n\nBody."
        );
        assert_eq!(shape("Fix it\nsecond line"), "Fix it\n\nsecond line");
    }
}

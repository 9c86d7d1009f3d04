//! Markdown cut at its headings: each ATX heading (`#` to `######`,
//! outside fenced code blocks) opens a section that runs to the line
//! before the next heading. Text before the first heading is left for the
//! caller's in-between chunks.

use super::{Decl, Outline};

/// Whether a path is Markdown.
pub fn is_markdown(path: &str) -> bool {
    let lower = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".markdown") || lower.ends_with(".mdx")
}

/// The sections of a Markdown text (normalized); `None` without any
/// heading.
pub fn outline(text: &str) -> Option<Outline> {
    let mut decls: Vec<Decl> = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    let mut count = 0;
    for (index, line) in text.split('\n').enumerate() {
        count = index + 1;
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            fence = match fence {
                None => Some(marker),
                Some((byte, length)) if byte == marker.0 && marker.1 >= length && is_closing(trimmed) => None,
                open => open,
            };
            continue;
        }
        if fence.is_some() {
            continue;
        }
        let Some(title) = heading(trimmed) else { continue };
        if let Some(last) = decls.last_mut() {
            last.end_line = index;
            last.scope_end = index;
        }
        decls.push(Decl {
            kind: "section",
            name: title,
            start_line: index + 1,
            end_line: index + 1,
            signature_line: index + 1,
            scope_end: index + 1,
            parent: None,
            container: false,
        });
    }
    let last = decls.last_mut()?;
    last.end_line = count;
    last.scope_end = count;
    Some(Outline { decls })
}

/// The heading text of an ATX heading line.
fn heading(line: &str) -> Option<String> {
    let hashes = line.bytes().take_while(|&byte| byte == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim_end();
    if title.is_empty() { None } else { Some(title.split_whitespace().collect::<Vec<_>>().join(" ")) }
}

/// A code fence's character and length.
fn fence_marker(line: &str) -> Option<(u8, usize)> {
    let byte = *line.as_bytes().first()?;
    if byte != b'`' && byte != b'~' {
        return None;
    }
    let length = line.bytes().take_while(|&b| b == byte).count();
    (length >= 3).then_some((byte, length))
}

/// A closing fence has nothing after its marker but spaces.
fn is_closing(line: &str) -> bool {
    line.trim_start_matches(['`', '~']).trim().is_empty()
}

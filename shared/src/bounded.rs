//! Bounded text: caps a text by lines and bytes and says so explicitly,
//! for tool results, prepared context and stored diagnostics alike. The
//! one truncation helper of both binaries.

/// The marker appended to text that was cut.
pub const TRUNCATION_MARKER: &str = "[truncated]";

/// A text and whether it was cut to fit its caps.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BoundedText {
    pub text: String,
    pub truncated: bool,
}

/// Keeps at most `max_lines` lines and `max_bytes` bytes of `text` (never
/// splitting a character); a cut text ends with a `[truncated]` line.
pub fn bound(text: &str, max_bytes: usize, max_lines: usize) -> BoundedText {
    let mut end = text.len();
    if let Some((index, _)) = text.match_indices('\n').nth(max_lines.saturating_sub(1))
        && index + 1 < text.len()
    {
        end = index + 1;
    }
    if max_lines == 0 {
        end = 0;
    }
    if end > max_bytes {
        end = floor_char_boundary(text, max_bytes);
    }
    if end == text.len() {
        return BoundedText { text: text.to_string(), truncated: false };
    }
    let mut cut = text[..end].trim_end_matches('\n').to_string();
    if !cut.is_empty() {
        cut.push('\n');
    }
    cut.push_str(TRUNCATION_MARKER);
    cut.push('\n');
    BoundedText { text: cut, truncated: true }
}

/// The largest char boundary of `text` at or below `index`.
pub fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    (0..=index).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_caps_is_untouched() {
        assert_eq!(bound("a\nb\n", 100, 2), BoundedText { text: "a\nb\n".into(), truncated: false });
    }

    #[test]
    fn lines_and_bytes_are_capped_with_a_marker() {
        assert_eq!(bound("a\nb\nc\n", 100, 2).text, "a\nb\n[truncated]\n");
        let cut = bound("héllo world", 2, 10);
        assert!(cut.truncated);
        assert_eq!(cut.text, "h\n[truncated]\n", "never splits a character");
    }
}

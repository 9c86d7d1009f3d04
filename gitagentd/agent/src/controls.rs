//! Terminal control sequences in what the model writes. A model answer is
//! printed to terminals and stored in Git history, so escape sequences
//! (colours, window titles, cursor moves) and every other C0/C1 control
//! except newline and tab are removed from it before anything uses it.

use std::borrow::Cow;

/// `text` without escape sequences and control characters other than
/// `\n` and `\t`, and how many bytes were removed.
pub fn strip(text: &str) -> (Cow<'_, str>, usize) {
    if !text.chars().any(is_removed) {
        return (Cow::Borrowed(text), 0);
    }
    let without_sequences = anstream::adapter::strip_str(text).to_string();
    let clean: String = without_sequences.chars().filter(|c| !is_removed(*c)).collect();
    let removed = text.len() - clean.len();
    (Cow::Owned(clean), removed)
}

/// A structured (JSON) answer: control characters may also arrive as
/// JSON escapes (`\u001b`), which only show once the answer is parsed, so
/// every string in it is stripped. An answer that is not JSON is stripped
/// as text; the validator reports it.
pub fn strip_json(text: &str) -> (Cow<'_, str>, usize) {
    let (text, mut removed) = strip(text);
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&text) else { return (text, removed) };
    let before = removed;
    strip_strings(&mut value, &mut removed);
    if removed == before {
        return (text, removed);
    }
    (Cow::Owned(value.to_string()), removed)
}

fn strip_strings(value: &mut serde_json::Value, removed: &mut usize) {
    match value {
        serde_json::Value::String(string) => {
            let (clean, count) = strip(string);
            if count > 0 {
                *string = clean.into_owned();
                *removed += count;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|item| strip_strings(item, removed)),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(|field| strip_strings(field, removed)),
        _ => {}
    }
}

fn is_removed(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_go_newlines_and_tabs_stay() {
        let raw = "fix: \x1b[31mred\x1b[0m title \x1b]0;PWNED\x07 end\n\n- a\tb\r\x7f\u{9b}";
        let (clean, removed) = strip(raw);
        assert_eq!(clean, "fix: red title  end\n\n- a\tb");
        assert_eq!(removed, raw.len() - clean.len());
        assert!(removed > 0);
    }

    #[test]
    fn clean_text_is_borrowed_untouched() {
        let (clean, removed) = strip("feat: café ✓\n\nbody\twith tab");
        assert!(matches!(clean, Cow::Borrowed(_)));
        assert_eq!(removed, 0);
    }

    #[test]
    fn json_escapes_of_controls_are_stripped_inside_strings() {
        let raw = r#"{"title":"ok \u001b]0;PWNED\u0007 end","items":["a\u009bb"],"n":1}"#;
        let (clean, removed) = strip_json(raw);
        let value: serde_json::Value = serde_json::from_str(&clean).unwrap();
        assert_eq!(value["title"], "ok  end");
        assert_eq!(value["items"][0], "ab");
        assert!(removed > 0);
        let (same, none) = strip_json(r#"{"title":"fine\nline"}"#);
        assert_eq!(same, r#"{"title":"fine\nline"}"#);
        assert_eq!(none, 0);
    }
}

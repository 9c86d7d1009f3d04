//! The words of a text as search counts them: letter and digit runs,
//! lower-cased, split at camelCase and initialism boundaries. Chunk
//! inputs and lexical ranking share them.

/// Calls `visit` with every word of `text` (see [`words`]), lower-cased,
/// in order.
pub fn for_each_word(text: &str, mut visit: impl FnMut(&str)) {
    let mut word = String::new();
    let mut flush = |word: &mut String| {
        if !word.is_empty() {
            visit(word);
            word.clear();
        }
    };
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch.is_alphanumeric() {
            if ch.is_uppercase()
                && let Some(prev) = previous
                && (prev.is_lowercase()
                    || prev.is_numeric()
                    || (prev.is_uppercase() && chars.peek().is_some_and(|next| next.is_lowercase())))
            {
                flush(&mut word);
            }
            if ch.is_ascii() {
                word.push(ch.to_ascii_lowercase());
            } else {
                word.extend(ch.to_lowercase());
            }
            previous = Some(ch);
        } else {
            flush(&mut word);
            previous = None;
        }
    }
    flush(&mut word);
}

/// The words of `text`, in order: letter/digit runs, lower-cased, split
/// at camelCase and initialism boundaries (the terms before stemming).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |word| out.push(word.to_string()));
    out
}

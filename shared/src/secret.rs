//! Credentials and their redaction. A credential lives in [`Secret`],
//! whose `Debug` never prints it; text that leaves the process (a stored
//! error, a trace, a log line) goes through [`Redactor`] or
//! [`redact_credentials`] first. Both crates use this one type and this
//! one sanitizer, so a new credential source is taught here once.

use crate::environment::Environment;

/// What replaces a credential in any printed text.
pub const REDACTED: &str = "[redacted]";

/// A credential. Its `Debug` form is redacted so it cannot reach a log.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value, for the places that put it on the wire (a request
    /// header); never for messages.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

/// Whether the variable or field `name` holds a credential: API keys,
/// tokens, secrets and passwords of any tool (`OPENAI_API_KEY`,
/// `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `api_key`, `Authorization`),
/// and everything under the provider prefixes `OPENAI_` and `CODEX_`
/// except their plain settings. Counters such as `input_tokens` are not.
pub fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper.ends_with("TOKENS") {
        return false;
    }
    const WORDS: [&str; 8] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTHORIZATION", "COOKIE"];
    WORDS.iter().any(|word| upper.contains(word)) || upper.starts_with("CODEX_")
}

/// Text with every recognisable credential form replaced by
/// [`REDACTED`]: `Bearer <token>`, `sk-...` API keys, `NAME=value` and
/// `"name": "value"` pairs whose name is a credential name, and the user
/// information of URLs (`https://user:token@host`).
pub fn redact_credentials(text: &str) -> String {
    let text = redact_pairs(text);
    let mut out = String::with_capacity(text.len());
    let mut redact_next = false;
    for piece in text.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end();
        let tail = &piece[word.len()..];
        if redact_next && !word.is_empty() {
            out.push_str(REDACTED);
            out.push_str(closing_quotes(word));
            out.push_str(tail);
            redact_next = false;
            continue;
        }
        redact_next = word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("\"bearer");
        out.push_str(&redact_word(word));
        out.push_str(tail);
    }
    out
}

/// The quotes and punctuation that close a redacted value, kept so the
/// surrounding text stays readable (`"Bearer tok",` keeps `",`).
fn closing_quotes(word: &str) -> &str {
    let end = word.trim_end_matches(['"', '\'', ',', ';', '}', ')']);
    &word[end.len()..]
}

/// One whitespace-free word: an API key, or a URL with user information.
fn redact_word(word: &str) -> String {
    let bare = word.trim_start_matches(['"', '\'', '(', '<', '[']);
    if bare.starts_with("sk-") && bare.len() > 8 {
        let lead = &word[..word.len() - bare.len()];
        return format!("{lead}{REDACTED}{}", closing_quotes(bare));
    }
    if let Some((_, rest)) = word.split_once("://") {
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if rest[..authority_end].contains('@') {
            let start = word.len() - bare.len();
            return format!("{}{}", &word[..start], crate::giturl::sanitize(bare));
        }
    }
    word.to_string()
}

/// Replaces the value of every `name=value`, `"name": value` and
/// `name: "value"` pair whose name is a credential name. An unquoted
/// `name: value` is prose as often as not ("cannot read key: no such
/// file"), so a colon counts only with a quote on either side.
fn redact_pairs(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte != b'=' && byte != b':' {
            index += 1;
            continue;
        }
        // The name before the separator, past an optional closing quote.
        let mut name_end = index;
        let name_quoted = name_end > 0 && matches!(bytes[name_end - 1], b'"' | b'\'');
        if name_quoted {
            name_end -= 1;
        }
        let name_start = text[..name_end]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .map_or(0, |at| at + 1);
        let name = &text[name_start..name_end];
        // `https://...` is a URL, not a pair.
        let is_url = byte == b':' && text[index..].starts_with("://");
        if name.is_empty() || is_url || !is_credential_name(name) {
            index += 1;
            continue;
        }
        let mut value_start = index + 1;
        while value_start < bytes.len() && bytes[value_start] == b' ' {
            value_start += 1;
        }
        let quote = bytes.get(value_start).copied().filter(|byte| matches!(byte, b'"' | b'\''));
        if byte == b':' && !name_quoted && quote.is_none() {
            index += 1;
            continue;
        }
        if quote.is_some() {
            value_start += 1;
        }
        let value_end = match quote {
            Some(quote) => text[value_start..].find(char::from(quote)).map_or(text.len(), |at| value_start + at),
            None => text[value_start..]
                .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '&' | '}' | ')' | '"' | '\''))
                .map_or(text.len(), |at| value_start + at),
        };
        // `Authorization: Bearer x` keeps its scheme word.
        let value = &text[value_start..value_end];
        let value_start = if value.len() > 7 && value.get(..7).is_some_and(|head| head.eq_ignore_ascii_case("bearer "))
        {
            value_start + 7
        } else {
            value_start
        };
        if value_end > value_start {
            out.push_str(&text[copied..value_start]);
            out.push_str(REDACTED);
            copied = value_end;
        }
        index = value_end.max(index + 1);
    }
    out.push_str(&text[copied..]);
    out
}

/// The sanitizer of one invocation: it knows the exact credential values
/// in play (every credential variable of the caller's environment, plus
/// ones read elsewhere, such as the ChatGPT access token of
/// `~/.codex/auth.json`) and replaces them wherever they appear, then
/// applies [`redact_credentials`] for the forms it cannot know by value.
#[derive(Clone, Default)]
pub struct Redactor {
    values: Vec<Secret>,
}

/// Shorter values are not replaced: they would match ordinary words.
const MIN_SECRET_LEN: usize = 4;

impl Redactor {
    /// Every credential variable of `env` (`OPENAI_API_KEY`,
    /// `OPENAI_EMBEDDING_API_KEY`, `*_TOKEN`, `*_SECRET`, ...).
    pub fn from_environment(env: &Environment) -> Self {
        let mut redactor = Self::default();
        for (name, value) in env.vars() {
            if is_credential_name(name) {
                redactor.add(&Secret::new(value.trim()));
            }
        }
        redactor
    }

    /// Adds one known credential value.
    pub fn add(&mut self, secret: &Secret) {
        let value = secret.expose();
        if value.len() >= MIN_SECRET_LEN && !self.values.iter().any(|known| known.expose() == value) {
            self.values.push(secret.clone());
            // Longer values first, so a value containing another is
            // replaced whole.
            self.values.sort_by_key(|known| std::cmp::Reverse(known.expose().len()));
        }
    }

    /// `text` with every known value and every credential form redacted.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.values {
            if out.contains(secret.expose()) {
                out = out.replace(secret.expose(), REDACTED);
            }
        }
        redact_credentials(&out)
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} values)", self.values.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_is_redacted() {
        let secret = Secret::new("sk-live-123456");
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
        assert_eq!(secret.expose(), "sk-live-123456");
    }

    #[test]
    fn credential_names() {
        for name in ["OPENAI_API_KEY", "OPENAI_EMBEDDING_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "api_key"] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in ["CODEX_HOME", "DB_PASSWORD", "Authorization", "access_token"] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "GOPATH", "input_tokens", "OPENAI_MODEL", "LANG"] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn bearer_tokens_are_redacted() {
        assert_eq!(
            redact_credentials("request failed: Authorization: Bearer eyJhbGciOi.abc.def sent"),
            "request failed: Authorization: Bearer [redacted] sent"
        );
        assert_eq!(redact_credentials("header \"Bearer tok-123\", next"), "header \"Bearer [redacted]\", next");
    }

    #[test]
    fn api_keys_are_redacted_alone_and_in_pairs() {
        assert_eq!(redact_credentials("bad key sk-proj-abcdef123 given"), "bad key [redacted] given");
        assert_eq!(redact_credentials("OPENAI_API_KEY=sk-abcdef123456 go"), "OPENAI_API_KEY=[redacted] go");
        assert_eq!(redact_credentials("KEY=opaque-value-1 and more"), "KEY=[redacted] and more");
        assert_eq!(redact_credentials("GITHUB_TOKEN=ghp_xyz123;x=1"), "GITHUB_TOKEN=[redacted];x=1");
        assert_eq!(
            redact_credentials(r#"{"api_key": "abc123456", "model": "m"}"#),
            r#"{"api_key": "[redacted]", "model": "m"}"#
        );
        assert_eq!(redact_credentials("access_token: 'tok en'"), "access_token: '[redacted]'");
        assert_eq!(redact_credentials("cannot read key: no such file"), "cannot read key: no such file");
    }

    #[test]
    fn url_user_information_is_dropped() {
        assert_eq!(
            redact_credentials("cannot reach https://user:ghp_token@example.com/x?y=1 now"),
            "cannot reach https://example.com/x now"
        );
        assert_eq!(redact_credentials("see https://example.com/a@b"), "see https://example.com/a@b");
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        for text in [
            "error: the provider returned 500: upstream failed",
            "input_tokens=20 output_tokens=3 step=1",
            "https://api.openai.com/v1/responses returned 401",
            "the model returned no message",
        ] {
            assert_eq!(redact_credentials(text), text);
        }
    }

    #[test]
    fn redactor_knows_every_credential_variable_and_added_values() {
        let env = Environment::new(
            [
                ("OPENAI_API_KEY", "plain-api-key-1"),
                ("OPENAI_EMBEDDING_API_KEY", "embed-key-2"),
                ("SOME_SERVICE_TOKEN", "token-value-3"),
                ("PATH", "/usr/bin"),
            ]
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .into_iter()
            .collect(),
        );
        let mut redactor = Redactor::from_environment(&env);
        redactor.add(&Secret::new("chatgpt-access-token-4"));
        let text = "failed with plain-api-key-1, embed-key-2, token-value-3 and chatgpt-access-token-4 on /usr/bin";
        assert_eq!(redactor.redact(text), "failed with [redacted], [redacted], [redacted] and [redacted] on /usr/bin");
        assert_eq!(format!("{redactor:?}"), "Redactor(4 values)");
    }
}

//! An HTTP error answer as one readable line for the user: the message of
//! a JSON error envelope, the title of an HTML error page (a proxy's 502,
//! say), or the start of plain text. Credentials the server echoes back
//! (`Incorrect API key provided: sk-…`) are redacted, as in task records,
//! and terminal controls removed.

/// The most characters of a plain-text body that are shown.
const SHOWN_CHARS: usize = 300;

/// What `body` says, cleaned; `no error message` for an empty body.
pub fn readable_error_body(body: &str) -> String {
    let text = body.trim();
    let message = json_message(text)
        .or_else(|| html_title(text))
        .unwrap_or_else(|| text.chars().take(SHOWN_CHARS).collect::<String>());
    let message = clean(&message);
    if message.trim().is_empty() { "no error message".to_string() } else { message.trim().to_string() }
}

/// `text` with credentials redacted and terminal controls other than
/// newline and tab removed.
pub(super) fn clean(text: &str) -> String {
    let text: String = text.chars().filter(|c| !c.is_control() || matches!(c, '\n' | '\t')).collect();
    git_agent_shared::secret::redact_credentials(&text)
}

/// `{"error": {"message": …}}`, `{"error": "…"}` or `{"message": …}`.
fn json_message(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let error = value.get("error").unwrap_or(&value);
    match error {
        serde_json::Value::String(message) => Some(message.clone()),
        _ => error.get("message").and_then(serde_json::Value::as_str).map(str::to_string),
    }
}

/// An HTML page (a proxy's or load balancer's error page) as its title,
/// or as `an HTML error page` when it has none.
fn html_title(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    if !(lower.starts_with("<!doctype html") || lower.starts_with("<html") || lower.contains("<body")) {
        return None;
    }
    let title = lower.find("<title").and_then(|open| {
        let start = open + lower[open..].find('>')? + 1;
        let end = start + lower[start..].find("</title")?;
        Some(text[start..end].split_whitespace().collect::<Vec<_>>().join(" "))
    });
    Some(match title.filter(|title| !title.is_empty()) {
        Some(title) => format!("an HTML page titled {title:?}"),
        None => "an HTML error page".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_envelopes_give_their_message_with_keys_redacted() {
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-test-abcdefghijklmnop. You can find your key…","type":"invalid_request_error"}}"#;
        let text = readable_error_body(body);
        assert!(text.starts_with("Incorrect API key provided: [redacted]"), "{text}");
        assert!(!text.contains("sk-test"), "{text}");
        assert_eq!(readable_error_body(r#"{"error":"bad thing"}"#), "bad thing");
        assert_eq!(readable_error_body(r#"{"message":"no such model"}"#), "no such model");
    }

    #[test]
    fn html_pages_become_their_title() {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>502 Bad\n Gateway</title></head><body>{}</body></html>",
            "<p>cloud</p>".repeat(200)
        );
        assert_eq!(readable_error_body(&page), "an HTML page titled \"502 Bad Gateway\"");
        assert_eq!(readable_error_body("<html><body>oops</body></html>"), "an HTML error page");
    }

    #[test]
    fn plain_text_is_cut_and_cleaned() {
        let long = format!("upstream \x1b[31mexploded\x1b[0m {}", "x".repeat(1000));
        let text = readable_error_body(&long);
        assert!(text.chars().count() <= SHOWN_CHARS && !text.contains('\x1b'), "{text}");
        assert_eq!(readable_error_body("   "), "no error message");
    }
}

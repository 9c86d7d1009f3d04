//! The human console form of trace events: a short local time, `INF`, the
//! event kind, then `key=value` fields inline while they fit, and long or
//! multi-line values as indented preview blocks with their size. Keys are
//! coloured only on a terminal. Fields whose names suggest credentials,
//! and values that look like bearer tokens or API keys, print as
//! `[redacted]`.

use super::{Event, Value};

const INLINE_FIELDS: usize = 6;
const INLINE_WIDTH: usize = 140;
const PREVIEW_BYTES: usize = 1200;
const PREVIEW_LINES: usize = 20;

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const KEY: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";

/// Renders events for one output stream.
#[derive(Debug, Clone)]
pub struct Console {
    color: bool,
    zone: jiff::tz::TimeZone,
}

impl Console {
    /// `color` when the stream is a terminal (and NO_COLOR is unset);
    /// `tz` is the caller's `TZ`, else the system zone applies.
    pub fn new(color: bool, tz: Option<&str>) -> Self {
        let zone = tz
            .and_then(|name| jiff::tz::TimeZone::get(name.trim_start_matches(':')).ok())
            .unwrap_or_else(jiff::tz::TimeZone::system);
        Self { color, zone }
    }

    /// The event as console text, stamped now.
    pub fn render(&self, event: &Event) -> String {
        let now = jiff::Timestamp::now().to_zoned(self.zone.clone());
        render_event(&now.strftime("%H:%M:%S").to_string(), event, self.color)
    }
}

fn paint(text: &str, code: &str, color: bool) -> String {
    if color { format!("{code}{text}{RESET}") } else { text.to_string() }
}

/// The event as console text with the given `HH:MM:SS` time.
pub fn render_event(time: &str, event: &Event, color: bool) -> String {
    let mut inline = Vec::new();
    let mut blocks = Vec::new();
    for (key, value) in &event.fields {
        let value = if is_secret_key(key) { Value::Text("[redacted]".into()) } else { value.clone() };
        match value {
            Value::Text(text) => {
                let text = visible(&redact_secrets(&text));
                if text.contains('\n') || text.len() > PREVIEW_BYTES {
                    blocks.push((key.clone(), text));
                } else {
                    inline.push((key.clone(), quote(&text)));
                }
            }
            Value::Int(number) => inline.push((key.clone(), number.to_string())),
            Value::Bool(flag) => inline.push((key.clone(), flag.to_string())),
            Value::List(items) => {
                let items: Vec<String> = items.iter().map(|item| quote(&visible(&redact_secrets(item)))).collect();
                inline.push((key.clone(), format!("[{}]", items.join(" "))));
            }
        }
    }
    let mut out =
        format!("{} {} {}", paint(time, DIM, color), paint("INF", GREEN, color), paint(&event.kind, BOLD, color));
    let width: usize = inline.iter().map(|(key, value)| key.len() + value.len() + 2).sum();
    if blocks.is_empty() && inline.len() <= INLINE_FIELDS && width <= INLINE_WIDTH {
        for (key, value) in &inline {
            out.push_str(&format!(" {}={value}", paint(key, KEY, color)));
        }
        out.push('\n');
    } else {
        out.push('\n');
        let mut line_width = 0;
        for (index, (key, value)) in inline.iter().enumerate() {
            let item_width = key.len() + 1 + value.len();
            if index == 0 {
                out.push_str("  ");
            } else if line_width + 1 + item_width > INLINE_WIDTH {
                out.push_str("\n  ");
                line_width = 0;
            } else {
                out.push(' ');
                line_width += 1;
            }
            out.push_str(&format!("{}={value}", paint(key, KEY, color)));
            line_width += item_width;
        }
        if !inline.is_empty() {
            out.push('\n');
        }
    }
    for (key, text) in blocks {
        out.push_str(&format!("  {}:\n", paint(&key, KEY, color)));
        let (preview, truncated) = preview(&text);
        for line in preview.split('\n') {
            out.push_str(&format!("    {line}\n"));
        }
        let lines = text.split('\n').count();
        let meta = format!("{}({} bytes, {lines} lines)", if truncated { "… truncated " } else { "" }, text.len());
        out.push_str(&format!("    {}\n", paint(&meta, DIM, color)));
    }
    out
}

fn preview(text: &str) -> (String, bool) {
    let cut = git_agent_shared::bounded::floor_char_boundary(text, PREVIEW_BYTES);
    let mut preview = &text[..cut];
    let mut truncated = cut < text.len();
    if let Some((index, _)) = preview.match_indices('\n').nth(PREVIEW_LINES - 1) {
        preview = &preview[..index];
        truncated = true;
    }
    (preview.trim_end_matches('\n').to_string(), truncated)
}

/// Terminal controls other than newline and tab written as `\u{1b}`: a
/// traced answer, file or tool output never drives the terminal.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

fn quote(text: &str) -> String {
    if text.is_empty() || text.contains([' ', '\t', '"', '=']) { format!("{text:?}") } else { text.to_string() }
}

fn is_secret_key(key: &str) -> bool {
    git_agent_shared::secret::is_credential_name(key)
}

/// Replaces bearer credentials, API-key-shaped words, credential pairs
/// and URL user information with `[redacted]` (the shared sanitizer).
pub fn redact_secrets(text: &str) -> String {
    git_agent_shared::secret::redact_credentials(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_fields_stay_inline_without_color() {
        let event = Event::new("llm.usage").with("step", 1u32).with("input_tokens", 20u64).with("note", "two words");
        assert_eq!(
            render_event("15:04:05", &event, false),
            "15:04:05 INF llm.usage step=1 input_tokens=20 note=\"two words\"\n"
        );
    }

    #[test]
    fn keys_are_coloured_only_when_asked() {
        let event = Event::new("final").with("tool_calls", 2u32);
        let colored = render_event("15:04:05", &event, true);
        assert!(colored.contains("\x1b[36mtool_calls\x1b[0m=2"), "{colored:?}");
        assert!(!render_event("15:04:05", &event, false).contains('\x1b'));
    }

    #[test]
    fn multiline_values_become_indented_preview_blocks() {
        let event = Event::new("final").with("text", "feat: x\n\nbody line").with("tool_calls", 0u32);
        assert_eq!(
            render_event("15:04:05", &event, false),
            "15:04:05 INF final\n  tool_calls=0\n  text:\n    feat: x\n    \n    body line\n    (18 bytes, 3 lines)\n"
        );
    }

    #[test]
    fn long_values_are_previewed_and_marked_truncated() {
        let long = "line\n".repeat(50);
        let rendered = render_event("15:04:05", &Event::new("tool-output").with("content", long.as_str()), false);
        assert_eq!(rendered.matches("    line\n").count(), 20);
        assert!(rendered.contains("… truncated (250 bytes, 51 lines)"), "{rendered}");
    }

    #[test]
    fn terminal_controls_are_shown_escaped() {
        let event = Event::new("response").with("text", "fix: \x1b[31mred\x07\nnext\tline").with("id", "a\x1bb");
        let rendered = render_event("12:00:00", &event, false);
        assert!(!rendered.contains('\x1b') && !rendered.contains('\x07'), "{rendered:?}");
        assert!(rendered.contains("fix: \\u{1b}[31mred\\u{7}") && rendered.contains("next\tline"), "{rendered}");
    }

    #[test]
    fn credentials_are_never_rendered() {
        let event = Event::new("request")
            .with("authorization", "Bearer abc")
            .with("api_key", "sk-123456789")
            .with("error", "sent Bearer abcdef and sk-live-123456789 upstream")
            .with("input_tokens", 5u32);
        let rendered = render_event("15:04:05", &event, false);
        assert!(!rendered.contains("abc") && !rendered.contains("sk-"), "{rendered}");
        assert!(rendered.contains("input_tokens=5"), "token counts are not credentials: {rendered}");
    }
}

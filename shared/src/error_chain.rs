//! How an error and its causes become one message for a user. Errors keep
//! their cause in `source()` and do not repeat it in their own message;
//! [`render`] writes the chain out, once, at each place an error leaves the
//! program (a command's stderr, a task's record and status, an MCP tool's
//! result, a log line). Nothing here redacts: credentials never enter an
//! error's message.
//!
//! The rendering: the error's message, then each cause's, joined with
//! `": "`. A message's first line is its statement; the lines after it (a
//! `hint:` line) follow the whole chain, the innermost cause's first, so
//! `cannot read X` with the hint `check its permissions`, caused by
//! `permission denied`, reads `cannot read X: permission denied` and then
//! the hint. A cause whose message equals the one above it (a wrapper that
//! shows its cause's message as its own) adds nothing. A cause whose
//! message an outer message already contains was written out by that
//! message (an error that embeds `{source}`, as most foreign errors do), so
//! the chain ends there and nothing appears twice.

use std::error::Error;
use std::fmt;

/// `error` and every cause in its `source()` chain, as a user reads them.
pub fn render(error: &(dyn Error + 'static)) -> String {
    Chain(error).to_string()
}

/// [`render`] as a `Display` value, for `format!` and logging macros.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = vec![self.0.to_string()];
        let mut outer_text = shown[0].clone();
        let mut outer = self.0;
        while let Some(cause) = outer.source() {
            let text = cause.to_string();
            if !text.is_empty() && text != outer_text {
                if shown.iter().any(|message| message.contains(&text)) {
                    // An outer message wrote this cause out in its own
                    // words: what lies below it is that message's choice.
                    break;
                }
                shown.push(text.clone());
            }
            (outer, outer_text) = (cause, text);
        }
        let split = |text: &str| text.find('\n').unwrap_or(text.len());
        let mut first = true;
        for text in &shown {
            let head = &text[..split(text)];
            if head.is_empty() {
                continue;
            }
            if !first {
                f.write_str(": ")?;
            }
            f.write_str(head)?;
            first = false;
        }
        for text in shown.iter().rev() {
            f.write_str(&text[split(text)..])?;
        }
        Ok(())
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read the configuration file {path}\nhint: fix its permissions")]
    struct Read {
        path: &'static str,
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot start the search")]
    struct Outer {
        source: Read,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Wrapper(#[source] Read);

    #[derive(Debug, thiserror::Error)]
    #[error("cannot open {path}: {source}")]
    struct Embedding {
        path: &'static str,
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("\nhint: try again later")]
    struct HintOnly {
        source: std::io::Error,
    }

    fn denied() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied")
    }

    #[test]
    fn every_cause_follows_the_message_and_hints_follow_the_chain() {
        let error = Outer { source: Read { path: "/c.json", source: denied() } };
        assert_eq!(
            render(&error),
            "cannot start the search: cannot read the configuration file /c.json: permission denied\nhint: fix its permissions"
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let error = Embedding { path: "/x", source: denied() };
        assert_eq!(render(&error), "cannot open /x: permission denied");
        let error = Wrapper(Read { path: "/c.json", source: denied() });
        assert_eq!(
            render(&error),
            "cannot read the configuration file /c.json: permission denied\nhint: fix its permissions"
        );
    }

    /// A foreign error that shows one message and keeps a differently
    /// worded cause below it (as rusqlite's failures do).
    #[derive(Debug, thiserror::Error)]
    #[error("database is locked")]
    struct Foreign {
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot use the sessions {path}: {source}")]
    struct EmbedsForeign {
        path: &'static str,
        source: Foreign,
    }

    #[test]
    fn the_chain_ends_where_an_outer_message_wrote_its_cause_out() {
        let error = EmbedsForeign { path: "/s.db", source: Foreign { source: denied() } };
        assert_eq!(render(&error), "cannot use the sessions /s.db: database is locked");
        let error = Wrapper(Read { path: "/c.json", source: denied() });
        let wrapped = Outer { source: Read { path: "/c.json", source: denied() } };
        assert_eq!(render(&error), render(&wrapped).trim_start_matches("cannot start the search: "));
    }

    #[test]
    fn an_error_without_a_cause_is_its_message() {
        let error = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file\nhint: create it");
        assert_eq!(render(&error), "no such file\nhint: create it");
    }

    #[test]
    fn a_message_of_hints_only_adds_its_hint_after_the_cause() {
        let error = HintOnly { source: denied() };
        assert_eq!(render(&error), "permission denied\nhint: try again later");
        assert_eq!(format!("{}", Chain(&error)), render(&error));
    }
}

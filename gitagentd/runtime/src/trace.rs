//! Trace events of a command run and their human console rendering
//! (`15:04:05 INF final text="..."`). The same renderer serves the
//! `llm.usage` lines, `--debug` output on stderr, and the streamed trace
//! of `commit` and `release-note --out` on stdout.

mod console;

pub use console::{Console, redact_secrets, render_event};

/// A field value of a trace event.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Int(i64),
    Bool(bool),
    List(Vec<String>),
}

impl From<&str> for Value {
    fn from(value: &str) -> Self {
        Self::Text(value.to_string())
    }
}

impl From<String> for Value {
    fn from(value: String) -> Self {
        Self::Text(value)
    }
}

impl From<bool> for Value {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(value: $t) -> Self {
                Self::Int(i64::try_from(value).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_value!(i32, i64, u32, u64, usize);

/// One event: a kind such as `final` and its ordered fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: String,
    pub fields: Vec<(String, Value)>,
}

impl Event {
    pub fn new(kind: impl Into<String>) -> Self {
        Self { kind: kind.into(), fields: Vec::new() }
    }

    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.fields.push((key.into(), value.into()));
        self
    }
}

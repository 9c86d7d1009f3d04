//! What a running command sends back to its caller, in order: stdout and
//! stderr bytes, transient progress lines, pieces of a streamed answer, a commit for the client to
//! make, and the exit status.

use std::path::PathBuf;
use tokio::sync::mpsc;

/// What a command sends back to the caller, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Progress(String),
    /// A piece of the model's answer as it streams, for a caller watching
    /// it: model step, request attempt, text.
    TextDelta {
        step: u32,
        attempt: u32,
        text: String,
    },
    /// Asks the client to run `git commit [--amend] --file -` in the
    /// caller's context with this message.
    GitCommit {
        repository_root: PathBuf,
        message: String,
        amend: bool,
    },
    Exit(i32),
}

/// The caller's side of a running command. Sends never fail loudly: a
/// caller that went away cancels the command through its token instead.
#[derive(Debug, Clone)]
pub struct Output {
    tx: mpsc::UnboundedSender<Event>,
}

impl Output {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    pub fn stdout(&self, bytes: impl Into<Vec<u8>>) {
        let _ = self.tx.send(Event::Stdout(bytes.into()));
    }

    pub fn stderr(&self, bytes: impl Into<Vec<u8>>) {
        let _ = self.tx.send(Event::Stderr(bytes.into()));
    }

    pub fn progress(&self, text: impl Into<String>) {
        let _ = self.tx.send(Event::Progress(text.into()));
    }

    /// Sends a piece of the model's streamed answer.
    pub fn text_delta(&self, step: u32, attempt: u32, text: impl Into<String>) {
        let _ = self.tx.send(Event::TextDelta { step, attempt, text: text.into() });
    }

    /// Hands the commit itself to the client, so the user's hooks, signing
    /// and terminal apply.
    pub fn git_commit(&self, repository_root: PathBuf, message: String, amend: bool) {
        let _ = self.tx.send(Event::GitCommit { repository_root, message, amend });
    }

    /// The command's exit status, its last event.
    pub fn exit(&self, code: i32) {
        let _ = self.tx.send(Event::Exit(code));
    }
}

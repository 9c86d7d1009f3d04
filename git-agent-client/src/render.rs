//! Renders the daemon's event stream: stdout bytes exactly as sent,
//! stderr bytes, and transient progress on an interactive stderr only,
//! cleared before anything else is written. For `commit --interactive` it
//! also shows the message as the model writes it, and keeps the commit
//! the daemon hands over for the user's answer instead of making it.

use crate::actions;
use crate::daemon::Reply;
use gitagent_proto::v1::{ClientAction, GitCommit, RunEvent, TextDelta, client_action, run_event::Event};
use std::io::{self, Write};

pub struct Renderer {
    stdout: io::BufWriter<io::StdoutLock<'static>>,
    stdout_is_terminal: bool,
    stderr_is_terminal: bool,
    progress_shown: bool,
    stdout_broken: bool,
    /// Set when an action the daemon asked for failed; the command then
    /// exits non-zero whatever the daemon reports.
    action_failed: bool,
    /// Whether `git commit` ran here for a `GitCommit` action, and made the
    /// commit: what a `commit` interrupted afterwards has left behind.
    committed: Option<bool>,
    /// `commit --interactive`: streamed text is shown, and the commit is
    /// held in `held` for the user's answer.
    interactive: bool,
    held: Option<GitCommit>,
    /// The (step, attempt) of the answer being streamed, and whether its
    /// last line is still open on the screen.
    streaming: Option<(u32, u32)>,
    stream_line_open: bool,
}

/// Where streamed answer text starts each of its lines on the screen.
const STREAM_INDENT: &str = "  ";

impl Renderer {
    pub fn new(stdout_is_terminal: bool, stderr_is_terminal: bool) -> Self {
        Self {
            stdout: io::BufWriter::new(io::stdout().lock()),
            stdout_is_terminal,
            stderr_is_terminal,
            progress_shown: false,
            stdout_broken: false,
            action_failed: false,
            committed: None,
            interactive: false,
            held: None,
            streaming: None,
            stream_line_open: false,
        }
    }

    /// A renderer for `commit --interactive`.
    pub fn interactive(mut self) -> Self {
        self.interactive = true;
        self
    }

    /// The commit the daemon handed over, when this renderer held it.
    pub fn take_held_commit(&mut self) -> Option<GitCommit> {
        self.held.take()
    }

    /// Renders one event; returns the exit code when the command ended.
    pub fn render(&mut self, event: RunEvent) -> Option<i32> {
        match event.event? {
            Event::Stdout(bytes) => {
                self.clear_progress();
                self.close_stream_line();
                if !self.stdout_broken && self.stdout.write_all(&bytes).is_err() {
                    self.stdout_broken = true;
                }
                if self.stdout_is_terminal {
                    let _ = self.stdout.flush();
                }
            }
            Event::Stderr(bytes) => {
                self.clear_progress();
                self.close_stream_line();
                let _ = self.stdout.flush();
                let _ = io::stderr().write_all(&bytes);
            }
            Event::Progress(progress) => {
                if self.stderr_is_terminal {
                    let _ = self.stdout.flush();
                    let mut stderr = io::stderr();
                    let _ = write!(stderr, "\r\x1b[2K{}", progress.text);
                    let _ = stderr.flush();
                    self.progress_shown = !progress.text.is_empty();
                }
            }
            Event::Trace(_) => {}
            Event::TextDelta(delta) => self.stream_text(&delta),
            Event::Action(action) => self.perform(action),
            Event::Exit(exit) => {
                self.finish();
                return Some(if self.action_failed && exit.code == 0 { 1 } else { exit.code });
            }
        }
        None
    }

    /// Shows a piece of the streamed answer (interactive only), indented
    /// so it stands apart from the trace; a new step or attempt starts on
    /// a fresh line.
    fn stream_text(&mut self, delta: &TextDelta) {
        if !self.interactive || self.stdout_broken {
            return;
        }
        self.clear_progress();
        if self.streaming != Some((delta.step, delta.attempt)) {
            self.close_stream_line();
            self.streaming = Some((delta.step, delta.attempt));
        }
        let mut text = String::with_capacity(delta.text.len() + STREAM_INDENT.len());
        for piece in delta.text.split_inclusive('\n') {
            if !self.stream_line_open {
                text.push_str(STREAM_INDENT);
            }
            text.push_str(piece);
            self.stream_line_open = !piece.ends_with('\n');
        }
        if self.stdout.write_all(text.as_bytes()).and_then(|()| self.stdout.flush()).is_err() {
            self.stdout_broken = true;
        }
    }

    /// Ends the streamed answer's open line before anything else is shown.
    fn close_stream_line(&mut self) {
        if self.stream_line_open {
            let _ = self.stdout.write_all(b"\n");
            self.stream_line_open = false;
        }
    }

    fn perform(&mut self, action: ClientAction) {
        self.clear_progress();
        self.close_stream_line();
        let _ = self.stdout.flush();
        match action.action {
            Some(client_action::Action::GitCommit(commit)) if self.interactive => self.held = Some(commit),
            Some(client_action::Action::GitCommit(commit)) => {
                let root = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                    &commit.repository_root,
                ));
                let result = actions::git_commit(root, &commit.message, actions::CommitMode::plain(commit.amend));
                self.committed = Some(result.is_ok());
                if let Err(error) = result {
                    let _ = writeln!(io::stderr(), "error: {}", git_agent_shared::error_chain::Chain(&error));
                    self.action_failed = true;
                }
            }
            None => {
                let _ = writeln!(
                    io::stderr(),
                    "error: the daemon asked for an action this client does not know; update git-agent"
                );
                self.action_failed = true;
            }
        }
    }

    pub fn finish(&mut self) {
        self.clear_progress();
        self.close_stream_line();
        let _ = self.stdout.flush();
    }

    fn clear_progress(&mut self) {
        if self.progress_shown {
            let _ = io::stderr().write_all(b"\r\x1b[2K");
            self.progress_shown = false;
        }
    }
}

impl Reply for Renderer {
    fn event(&mut self, event: RunEvent) -> Option<i32> {
        self.render(event)
    }

    fn finish(&mut self) {
        Renderer::finish(self);
    }

    fn committed(&self) -> Option<bool> {
        self.committed
    }
}

//! Renders the daemon's event stream: stdout bytes exactly as sent,
//! stderr bytes, and transient progress on an interactive stderr only,
//! cleared before anything else is written.

use crate::actions;
use gitagent_proto::v1::{ClientAction, RunEvent, client_action, run_event::Event};
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
}

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
        }
    }

    /// Renders one event; returns the exit code when the command ended.
    pub fn render(&mut self, event: RunEvent) -> Option<i32> {
        match event.event? {
            Event::Stdout(bytes) => {
                self.clear_progress();
                if !self.stdout_broken && self.stdout.write_all(&bytes).is_err() {
                    self.stdout_broken = true;
                }
                if self.stdout_is_terminal {
                    let _ = self.stdout.flush();
                }
            }
            Event::Stderr(bytes) => {
                self.clear_progress();
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
            Event::Action(action) => self.perform(action),
            Event::Exit(exit) => {
                self.finish();
                return Some(if self.action_failed && exit.code == 0 { 1 } else { exit.code });
            }
        }
        None
    }

    fn perform(&mut self, action: ClientAction) {
        self.clear_progress();
        let _ = self.stdout.flush();
        match action.action {
            Some(client_action::Action::GitCommit(commit)) => {
                let root = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                    &commit.repository_root,
                ));
                let result = actions::git_commit(root, &commit.message, commit.amend);
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

    /// `Some(made)` once `git commit` ran for a `GitCommit` action.
    pub fn committed(&self) -> Option<bool> {
        self.committed
    }

    pub fn finish(&mut self) {
        self.clear_progress();
        let _ = self.stdout.flush();
    }

    fn clear_progress(&mut self) {
        if self.progress_shown {
            let _ = io::stderr().write_all(b"\r\x1b[2K");
            self.progress_shown = false;
        }
    }
}

//! `git-agent commit --interactive`: the daemon generates the message as
//! for `commit` (same trace, same validation) and streams its text while
//! the model writes it; the commit it hands back is held, the message is
//! shown whole, and one keystroke decides: accept (`git commit` as
//! `commit` runs it), edit (`git commit -e`, the user's editor), regenerate
//! (another run, optionally with a one-line hint joined to
//! `--append-prompt`) or quit (nothing is run, so the index and the work
//! tree stay as they were). It needs a terminal on stdin and stdout.

use crate::actions::{self, CommitMode};
use crate::daemon::{self, DaemonError};
use crate::render::Renderer;
use git_agent_shared::cli::Command;
use gitagent_proto::v1 as pb;
use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsRawFd;

/// What the user answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    Accept,
    Edit,
    /// Generate again (a one-line hint is asked for next).
    Regenerate,
    Quit,
}

const PROMPT: &str = "Commit with this message? [a]ccept, [e]dit, [r]egenerate, [q]uit: ";

/// Why `--interactive` cannot run here, when it cannot: stdin and stdout
/// must both be terminals (the keystroke is read from one, the message is
/// shown on the other).
pub fn unusable_reason() -> Option<&'static str> {
    match (std::io::stdin().is_terminal(), std::io::stdout().is_terminal()) {
        (true, true) => None,
        (false, true) => Some("stdin is not a terminal"),
        (true, false) => Some("stdout is not a terminal"),
        (false, false) => Some("neither stdin nor stdout is a terminal"),
    }
}

/// Runs `commit --interactive` and returns its exit code: that of the
/// generation when it failed, 0 once the commit is made, 1 when `git
/// commit` failed or the user quit.
pub async fn commit(mut invocation: pb::Invocation, command: &Command) -> Result<i32, DaemonError> {
    loop {
        let mut renderer = Renderer::new(true, invocation.stderr_is_terminal).interactive();
        let code = daemon::run_with(invocation.clone(), command, &mut renderer).await?;
        let Some(commit) = renderer.take_held_commit() else { return Ok(code) };
        drop(renderer);
        if code != 0 {
            return Ok(code);
        }
        show(&commit.message);
        let root = std::path::PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
            &commit.repository_root,
        ));
        let mode = match ask() {
            Choice::Accept => CommitMode::plain(commit.amend),
            Choice::Edit => CommitMode { amend: commit.amend, edit: true },
            Choice::Regenerate => {
                let hint = read_hint();
                invocation.args = with_hint(&invocation.args, hint.trim());
                continue;
            }
            Choice::Quit => {
                println!("Nothing was committed.");
                return Ok(1);
            }
        };
        return Ok(match actions::git_commit(&root, &commit.message, mode) {
            Ok(()) => 0,
            Err(error) => {
                eprintln!("error: {}", git_agent_shared::error_chain::Chain(&error));
                1
            }
        });
    }
}

/// The generated message, whole, below the trace.
fn show(message: &str) {
    let mut stdout = std::io::stdout().lock();
    let mut text = String::from("\n");
    for line in message.trim_end().lines() {
        text.push_str(&format!("    {line}\n"));
    }
    text.push('\n');
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

/// Asks for one keystroke until it is one of the choices.
fn ask() -> Choice {
    print_flushed(PROMPT);
    let choice = loop {
        let Some(key) = read_key() else { break Choice::Quit };
        match key {
            b'a' | b'A' | b'y' | b'Y' | b'\r' | b'\n' => break Choice::Accept,
            b'e' | b'E' => break Choice::Edit,
            b'r' | b'R' => break Choice::Regenerate,
            // q, Esc, Ctrl-C, Ctrl-D.
            b'q' | b'Q' | 0x1b | 0x03 | 0x04 => break Choice::Quit,
            _ => {}
        }
    };
    let word = match choice {
        Choice::Accept => "accept",
        Choice::Edit => "edit",
        Choice::Regenerate => "regenerate",
        Choice::Quit => "quit",
    };
    print_flushed(&format!("{word}\n"));
    choice
}

/// The one-line hint for a regeneration, read in the terminal's normal
/// (line) mode; empty for none.
fn read_hint() -> String {
    print_flushed("Hint for the model (Enter for none): ");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    line
}

fn print_flushed(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

/// One keystroke from stdin, read with the terminal out of line mode and
/// echo (and with Ctrl-C arriving as a byte, not a signal); `None` at the
/// end of input or on an error. The terminal's mode is restored after.
fn read_key() -> Option<u8> {
    let stdin = std::io::stdin();
    let fd = stdin.as_raw_fd();
    let _raw = RawMode::enter(fd);
    let mut buffer = [0u8; 16];
    // A key that sends a sequence (arrows) arrives in one read; its first
    // byte decides.
    match stdin.lock().read(&mut buffer) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(buffer[0]),
    }
}

/// The terminal of `fd` without line mode, echo and signal keys, until
/// dropped.
struct RawMode {
    fd: i32,
    saved: Option<libc::termios>,
}

impl RawMode {
    fn enter(fd: i32) -> Self {
        // SAFETY: termios is plain data; tcgetattr fills it for a valid fd
        // and fails otherwise, which leaves the terminal as it is.
        let saved = unsafe {
            let mut termios: libc::termios = std::mem::zeroed();
            (libc::tcgetattr(fd, &mut termios) == 0).then_some(termios)
        };
        if let Some(saved) = saved {
            let mut raw = saved;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
            raw.c_cc[libc::VMIN] = 1;
            raw.c_cc[libc::VTIME] = 0;
            // SAFETY: a valid termios for the same fd.
            unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) };
        }
        Self { fd, saved }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            // SAFETY: restores the termios read from this fd.
            unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, saved) };
        }
    }
}

/// `args` with `hint` joined to the `--append-prompt` text (on a line of
/// its own after any there already), or unchanged for an empty hint.
fn with_hint(args: &[String], hint: &str) -> Vec<String> {
    if hint.is_empty() {
        return args.to_vec();
    }
    let mut kept = Vec::with_capacity(args.len() + 2);
    let mut existing = None;
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        if arg == "--" {
            kept.push(arg.clone());
            kept.extend(words.by_ref().cloned());
            break;
        }
        if arg == "--append-prompt" {
            existing = words.next().cloned();
        } else if let Some(value) = arg.strip_prefix("--append-prompt=") {
            existing = Some(value.to_string());
        } else {
            kept.push(arg.clone());
        }
    }
    let joined = match existing.as_deref().map(str::trim).filter(|text| !text.is_empty()) {
        Some(text) => format!("{text}\n{hint}"),
        None => hint.to_string(),
    };
    // Before any `--`: commit takes no positional arguments, but keep the
    // option where clap reads it as one.
    let at = kept.iter().position(|arg| arg == "--").unwrap_or(kept.len());
    kept.splice(at..at, [format!("--append-prompt={joined}")]);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn a_hint_joins_the_appended_prompt() {
        assert_eq!(with_hint(&args(&["commit", "-i"]), "shorter"), args(&["commit", "-i", "--append-prompt=shorter"]));
        assert_eq!(
            with_hint(&args(&["commit", "--append-prompt", "use fix:", "-i"]), "shorter"),
            args(&["commit", "-i", "--append-prompt=use fix:\nshorter"])
        );
        let twice = with_hint(&with_hint(&args(&["commit", "--append-prompt=a", "-i"]), "b"), "c");
        assert_eq!(twice, args(&["commit", "-i", "--append-prompt=a\nb\nc"]));
        assert_eq!(with_hint(&args(&["commit", "-i"]), ""), args(&["commit", "-i"]));
        let parsed = git_agent_shared::cli::parse_command(&with_hint(&args(&["commit", "--append-prompt", "x"]), "y"));
        let Ok(Command::Commit(parsed)) = parsed else { panic!("{parsed:?}") };
        assert_eq!(parsed.message.generation.shared.append_prompt.as_deref(), Some("x\ny"));
    }
}

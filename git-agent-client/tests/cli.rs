//! Command-line validation that the client does before it talks to any
//! daemon. (Its presence also makes `cargo test` build the `git-agent`
//! executable that the end-to-end tests run.)

use std::process::Command;

fn git_agent() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_git-agent"));
    // No daemon can be reached: every case below must fail before needing one.
    command.env_clear().env("HOME", "/nonexistent").env("XDG_RUNTIME_DIR", "/nonexistent");
    command
}

#[test]
fn unknown_command_is_a_usage_error() {
    let output = git_agent().arg("frobnicate").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("frobnicate"));
}

#[test]
fn help_lists_the_commands() {
    let output = git_agent().arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["project_id", "config", "--cwd"] {
        assert!(help.contains(command), "{help}");
    }
}

#[test]
fn completions_are_generated_without_a_daemon() {
    for shell in ["bash", "zsh", "fish"] {
        let output = git_agent().args(["completions", shell]).output().unwrap();
        assert!(output.status.success(), "{shell}");
        assert!(String::from_utf8_lossy(&output.stdout).contains("project_id"), "{shell}");
    }
}

//! The `git-agent` command line, defined once. The client parses it to
//! validate and apply `--cwd`; the daemon parses the forwarded arguments
//! with the same definition; the packaging generates shell completions
//! from it.

use clap::builder::NonEmptyStringValueParser;
use clap::{Args, Parser, Subcommand};

/// Git writing and reading chores with a language model.
#[derive(Debug, Parser)]
#[command(name = "git-agent", version, disable_help_subcommand = true, propagate_version = true)]
pub struct Cli {
    /// Run as if git-agent was started in <directory> (before the command only).
    #[arg(long, value_name = "directory", value_parser = NonEmptyStringValueParser::new())]
    pub cwd: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the project identifier shared by search metadata and task records.
    #[command(name = "project_id")]
    ProjectId,

    /// Read or change the global configuration (index.remote).
    Config(ConfigArgs),

    /// Print a shell completion script for bash, zsh or fish.
    #[command(hide = true)]
    Completions {
        #[arg(value_parser = ["bash", "zsh", "fish"])]
        shell: String,
    },
}

#[derive(Debug, Args)]
#[command(override_usage = "git-agent config index.remote [<git-url>]\n       git-agent config --unset index.remote")]
pub struct ConfigArgs {
    /// Remove the setting.
    #[arg(long)]
    pub unset: bool,

    /// The configuration key; only index.remote exists.
    #[arg(value_name = "key")]
    pub key: String,

    /// The new value; without it the current value is printed.
    #[arg(value_name = "git-url")]
    pub value: Option<String>,
}

impl Command {
    /// Whether the client handles this command itself, without the daemon.
    pub fn is_local(&self) -> bool {
        matches!(self, Command::Completions { .. })
    }
}

/// Parses the arguments that follow the program name and `--cwd`.
pub fn parse_command(args: &[String]) -> Result<Command, clap::Error> {
    let argv = std::iter::once("git-agent".to_string()).chain(args.iter().cloned());
    Cli::try_parse_from(argv).map(|cli| cli.command)
}

/// Writes the completion script for `shell` (bash, zsh or fish).
pub fn write_completions(shell: &str, out: &mut dyn std::io::Write) {
    use clap::CommandFactory;
    let mut command = Cli::command();
    let shell = match shell {
        "bash" => clap_complete::Shell::Bash,
        "zsh" => clap_complete::Shell::Zsh,
        _ => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut command, "git-agent", out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn cwd_must_precede_the_command() {
        assert!(Cli::try_parse_from(["git-agent", "project_id", "--cwd", "x"]).is_err());
        assert!(Cli::try_parse_from(["git-agent", "--cwd", "x", "--cwd", "y", "project_id"]).is_err());
        assert!(Cli::try_parse_from(["git-agent", "--cwd", "", "project_id"]).is_err());
        let cli = Cli::try_parse_from(["git-agent", "--cwd", "x", "project_id"]).unwrap();
        assert_eq!(cli.cwd.as_deref(), Some("x"));
    }
}

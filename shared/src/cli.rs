//! The `git-agent` command line, defined once. The client parses it to
//! validate and apply `--cwd`; the daemon parses the forwarded arguments
//! with the same definition; the packaging generates shell completions
//! from it.

use clap::builder::NonEmptyStringValueParser;
use clap::{ArgGroup, Args, Parser, Subcommand};
use std::time::Duration;

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

    /// Write a commit message for the staged changes; stdout is the message only.
    #[command(name = "commit-msg")]
    CommitMsg(CommitMsgArgs),

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

/// `git-agent commit-msg [generation flags]`.
#[derive(Debug, Args)]
pub struct CommitMsgArgs {
    #[command(flatten)]
    pub generation: GenerationArgs,
}

/// The flag surface every message-generation command shares.
#[derive(Debug, Args, Clone, Default)]
#[command(group(ArgGroup::new("reasoning_effort").multiple(false)))]
pub struct GenerationArgs {
    /// Model identifier (default: OPENAI_MODEL, then gpt-5.6-luna).
    #[arg(long, value_name = "model", value_parser = NonEmptyStringValueParser::new())]
    pub model: Option<String>,

    /// Ask for the priority service tier (service_tier=priority).
    #[arg(long)]
    pub fast: bool,

    /// Low reasoning effort.
    #[arg(long, group = "reasoning_effort")]
    pub low: bool,

    /// Medium reasoning effort.
    #[arg(long, group = "reasoning_effort")]
    pub medium: bool,

    /// High reasoning effort.
    #[arg(long, group = "reasoning_effort")]
    pub high: bool,

    /// Extra-high reasoning effort.
    #[arg(long, group = "reasoning_effort")]
    pub xhigh: bool,

    /// Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default).
    #[arg(long, value_name = "url", value_parser = NonEmptyStringValueParser::new())]
    pub base_url: Option<String>,

    /// Time limit for the whole command and each provider request, such as 90s or 2m (default 2m).
    #[arg(long, value_name = "duration", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Maximum model steps of the agent loop (default 30).
    #[arg(long, value_name = "n", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: Option<u32>,

    /// Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none.
    #[arg(long, value_name = "family", value_parser = ["auto", "agents", "claude", "none"])]
    pub guidance_family: Option<String>,

    /// A lower-priority hint appended to the task prompt as escaped data.
    #[arg(long, value_name = "text")]
    pub append_prompt: Option<String>,

    /// Write the loop's trace and phase timings to stderr.
    #[arg(long)]
    pub debug: bool,

    /// Serve a diagnostics index at <addr> (host:port) while the command runs.
    #[arg(long, value_name = "addr", value_parser = NonEmptyStringValueParser::new())]
    pub pprof: Option<String>,
}

impl GenerationArgs {
    /// The requested reasoning effort, when one of the effort flags is set.
    pub fn reasoning_effort(&self) -> Option<&'static str> {
        [(self.low, "low"), (self.medium, "medium"), (self.high, "high"), (self.xhigh, "xhigh")]
            .into_iter()
            .find_map(|(set, effort)| set.then_some(effort))
    }
}

/// Parses a duration written like Go's `time.ParseDuration`: a sequence of
/// decimal numbers with units (`ns`, `us`, `ms`, `s`, `m`, `h`), such as
/// `90s`, `1m30s` or `1.5h`. It must be positive.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    const UNITS: [(&str, f64); 7] =
        [("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];
    let invalid = || format!("invalid duration {text:?}; write it like 90s, 2m or 1m30s");
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut seconds = 0f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let factor =
            UNITS.iter().find(|(unit, _)| *unit == &rest[..unit_len]).map(|(_, factor)| *factor).ok_or_else(invalid)?;
        seconds += number * factor;
        rest = &rest[unit_len..];
    }
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("the duration {text:?} must be positive"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| invalid())
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

    fn generation(args: &[&str]) -> Result<GenerationArgs, clap::Error> {
        let argv = ["git-agent", "commit-msg"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::CommitMsg(args) => Ok(args.generation),
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn generation_flags_parse() {
        let args = generation(&[
            "--model",
            "m",
            "--fast",
            "--high",
            "--timeout",
            "1m30s",
            "--max-steps",
            "4",
            "--guidance-family",
            "claude",
            "--append-prompt",
            "be brief",
            "--debug",
        ])
        .unwrap();
        assert_eq!(args.model.as_deref(), Some("m"));
        assert!(args.fast && args.debug);
        assert_eq!(args.reasoning_effort(), Some("high"));
        assert_eq!(args.timeout, Some(Duration::from_secs(90)));
        assert_eq!(args.max_steps, Some(4));
        assert_eq!(args.guidance_family.as_deref(), Some("claude"));
        assert_eq!(args.append_prompt.as_deref(), Some("be brief"));
        assert_eq!(generation(&[]).unwrap().reasoning_effort(), None);
    }

    #[test]
    fn generation_flags_are_validated_before_any_work() {
        assert!(generation(&["--low", "--high"]).is_err(), "effort flags are exclusive");
        assert!(generation(&["--max-steps", "0"]).is_err());
        assert!(generation(&["--timeout", "soon"]).is_err());
        assert!(generation(&["--timeout", "0s"]).is_err());
        assert!(generation(&["--guidance-family", "cursor"]).is_err());
        assert!(generation(&["positional"]).is_err());
    }

    #[test]
    fn durations_follow_go_syntax() {
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("90").is_err(), "a unit is required");
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
    }
}

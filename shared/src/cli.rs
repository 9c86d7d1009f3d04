//! The `git-agent` command line, defined once. The client parses it to
//! validate and apply `--cwd`; the daemon parses the forwarded arguments
//! with the same definition; the packaging generates shell completions
//! from it.

use clap::builder::NonEmptyStringValueParser;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
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

    /// Launch a detached, evidence-backed read-only code review.
    #[command(override_usage = INSPECT_USAGE_REVIEW)]
    Review(InspectArgs),

    /// Launch a detached read-only simplification audit.
    #[command(override_usage = INSPECT_USAGE_SIMPLIFY)]
    Simplify(InspectArgs),

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

const INSPECT_USAGE_REVIEW: &str =
    "git-agent review [--codebase|--uncommitted|--staged] [flags] [prompt...]\n       git-agent review --wait <id>";
const INSPECT_USAGE_SIMPLIFY: &str =
    "git-agent simplify [--codebase|--uncommitted|--staged] [flags] [prompt...]\n       git-agent simplify --wait <id>";

/// The options that `--wait` excludes: every option of an inspection launch.
const LAUNCH_OPTIONS: &[&str] = &[
    "codebase",
    "uncommitted",
    "staged",
    "depth",
    "max_steps",
    "max_web_searches",
    "dry_run",
    "model",
    "fast",
    "low",
    "medium",
    "high",
    "xhigh",
    "base_url",
    "timeout",
    "guidance_family",
    "append_prompt",
    "debug",
    "prompt",
];

/// `git-agent review` and `git-agent simplify`: the launch flags, the
/// isolated `--wait <id>` form and `--help-agent`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("mode").args(["codebase", "uncommitted", "staged"]).multiple(false)))]
pub struct InspectArgs {
    /// Inspect the full codebase.
    #[arg(long)]
    pub codebase: bool,

    /// Inspect all dirty changes: staged, unstaged and untracked (default).
    #[arg(long)]
    pub uncommitted: bool,

    /// Inspect staged changes only.
    #[arg(long)]
    pub staged: bool,

    /// Wait for a detached task and print its report.
    #[arg(long, value_name = "id", conflicts_with_all = LAUNCH_OPTIONS)]
    pub wait: Option<String>,

    /// Automatic inspection depth and default reasoning effort (default balanced).
    #[arg(long, value_enum, value_name = "fast|balanced|thorough", conflicts_with = "max_steps")]
    pub depth: Option<Depth>,

    /// Exact model-step ceiling, overriding the automatic inspection depth.
    #[arg(long, value_name = "n", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: Option<u32>,

    /// Cap provider-hosted web searches (API-key default 4; ChatGPT auth uncapped).
    #[arg(long, value_name = "n", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_web_searches: Option<u32>,

    /// Replace the provider with a deterministic fixture (preparation and launch stay real).
    #[arg(long)]
    pub dry_run: bool,

    /// Show help limited to agent-facing flags.
    #[arg(long)]
    pub help_agent: bool,

    #[command(flatten)]
    pub generation: GenerationArgs,

    /// Focus hint for the inspection (lower priority than the task instructions).
    #[arg(value_name = "prompt")]
    pub prompt: Vec<String>,
}

/// How much of the automatic inspection budget a review or simplification
/// uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Depth {
    Fast,
    Balanced,
    Thorough,
}

impl Depth {
    pub fn as_str(self) -> &'static str {
        match self {
            Depth::Fast => "fast",
            Depth::Balanced => "balanced",
            Depth::Thorough => "thorough",
        }
    }
}

/// A reasoning effort chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
    Xhigh,
}

impl ReasoningEffort {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
        }
    }
}

/// The generation flags that the model-backed commands share.
#[derive(Debug, Clone, Default, Args)]
#[command(group(ArgGroup::new("effort").args(["low", "medium", "high", "xhigh"]).multiple(false)))]
pub struct GenerationArgs {
    /// Override the model.
    #[arg(long, value_name = "model", value_parser = NonEmptyStringValueParser::new())]
    pub model: Option<String>,

    /// Send service_tier=priority.
    #[arg(long)]
    pub fast: bool,

    /// Send reasoning.effort=low.
    #[arg(long)]
    pub low: bool,

    /// Send reasoning.effort=medium.
    #[arg(long)]
    pub medium: bool,

    /// Send reasoning.effort=high.
    #[arg(long)]
    pub high: bool,

    /// Send reasoning.effort=xhigh.
    #[arg(long)]
    pub xhigh: bool,

    /// Override the provider base URL.
    #[arg(long, value_name = "url", value_parser = NonEmptyStringValueParser::new())]
    pub base_url: Option<String>,

    /// Deadline for the provider client and the whole agent loop, such as 90s or 5m (none by default).
    #[arg(long, value_name = "duration", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Project guidance family to read (AGENTS-family, CLAUDE-family or none).
    #[arg(long, value_name = "family", value_parser = NonEmptyStringValueParser::new())]
    pub guidance_family: Option<String>,

    /// Append a lower-priority operator hint to the task prompt.
    #[arg(long, value_name = "text")]
    pub append_prompt: Option<String>,

    /// Enable diagnostics on stderr.
    #[arg(long)]
    pub debug: bool,
}

impl GenerationArgs {
    /// The reasoning effort flag, when one was given.
    pub fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        [
            (self.low, ReasoningEffort::Low),
            (self.medium, ReasoningEffort::Medium),
            (self.high, ReasoningEffort::High),
            (self.xhigh, ReasoningEffort::Xhigh),
        ]
        .into_iter()
        .find_map(|(set, effort)| set.then_some(effort))
    }
}

/// Parses a Go-style duration: one or more `<number><unit>` parts with the
/// units ns, us, ms, s, m and h, such as `90s`, `1m30s` or `1.5h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {text:?}; use a number and a unit such as 90s, 5m or 1h30m");
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "\u{b5}s" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        total += number * seconds;
    }
    if !total.is_finite() || total <= 0.0 || total > 1e9 {
        return Err(format!("the duration {text:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(total))
}

impl InspectArgs {
    /// The prompt text after flag parsing: the positional words joined with
    /// one space, appended to `--append-prompt` when both are present.
    pub fn operator_hint(&self) -> Option<String> {
        let positional = self.prompt.join(" ").trim().to_string();
        let appended = self.generation.append_prompt.as_deref().map(str::trim).unwrap_or_default().to_string();
        match (appended.is_empty(), positional.is_empty()) {
            (true, true) => None,
            (false, true) => Some(appended),
            (true, false) => Some(positional),
            (false, false) => Some(format!("{appended}\n{positional}")),
        }
    }
}

/// The `--help-agent` text for `review` or `simplify`: the launch synopsis,
/// the three scope modes, `--depth` and the reasoning-effort flags, and
/// nothing an automated coding agent should not set.
pub fn agent_help(command: &str) -> String {
    let depth_defaults = if command == "simplify" {
        "fast=low, balanced=low, thorough=medium"
    } else {
        "fast=low, balanced=medium, thorough=high"
    };
    format!(
        "Usage: git-agent {command} [--codebase|--uncommitted|--staged] [--depth fast|balanced|thorough] [prompt...]\n\n\
         Modes:\n  \
         --uncommitted  inspect all dirty changes (default)\n  \
         --staged       inspect staged changes only\n  \
         --codebase     inspect the full codebase\n\n\
         Flags:\n  \
         --depth <fast|balanced|thorough>\n      \
         select automatic inspection depth and default reasoning effort: {depth_defaults} (default balanced)\n      \
         use thorough only for security-related issues or very complex logic; otherwise use fast or balanced\n  \
         --low | --medium | --high | --xhigh\n      \
         set reasoning effort (mutually exclusive)\n"
    )
}

impl Command {
    /// Whether the client handles this command itself, without the daemon.
    pub fn is_local(&self) -> bool {
        match self {
            Command::Completions { .. } => true,
            Command::Review(args) | Command::Simplify(args) => args.help_agent,
            _ => false,
        }
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

    fn inspect(args: &[&str]) -> Result<InspectArgs, clap::Error> {
        let argv: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        match parse_command(&argv)? {
            Command::Review(args) | Command::Simplify(args) => Ok(args),
            other => panic!("not an inspection: {other:?}"),
        }
    }

    #[test]
    fn inspection_modes_are_mutually_exclusive() {
        assert!(inspect(&["review", "--staged", "--codebase"]).is_err());
        assert!(inspect(&["simplify", "--uncommitted", "--staged"]).is_err());
        let args = inspect(&["review", "--staged"]).unwrap();
        assert!(args.staged && !args.codebase && !args.uncommitted);
    }

    #[test]
    fn depth_and_max_steps_exclude_each_other() {
        assert!(inspect(&["review", "--depth", "fast", "--max-steps", "12"]).is_err());
        assert!(inspect(&["review", "--max-steps", "0"]).is_err());
        assert!(inspect(&["review", "--depth", "exhaustive"]).is_err());
        assert_eq!(inspect(&["review", "--depth", "thorough"]).unwrap().depth, Some(Depth::Thorough));
        assert_eq!(inspect(&["review", "--max-steps", "70"]).unwrap().max_steps, Some(70));
    }

    #[test]
    fn wait_accepts_no_other_option() {
        for extra in [
            &["--codebase"][..],
            &["--uncommitted"],
            &["--staged"],
            &["--timeout", "1s"],
            &["--model", "m"],
            &["--max-steps", "1"],
            &["--depth", "fast"],
            &["--fast"],
            &["--low"],
            &["--xhigh"],
            &["--base-url", "https://example.test"],
            &["--guidance-family", "none"],
            &["--append-prompt", "hint"],
            &["--debug"],
            &["--dry-run"],
            &["--max-web-searches", "2"],
            &["prompt"],
        ] {
            let mut args = vec!["review", "--wait", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"];
            args.extend_from_slice(extra);
            assert!(inspect(&args).is_err(), "{args:?}");
        }
        let args = inspect(&["simplify", "--wait", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]).unwrap();
        assert_eq!(args.wait.as_deref(), Some("ABCDEFGHIJKLMNOPQRSTUVWXYZ"));
    }

    #[test]
    fn reasoning_flags_exclude_each_other() {
        assert!(inspect(&["review", "--low", "--high"]).is_err());
        let args = inspect(&["review", "--high"]).unwrap();
        assert_eq!(args.generation.reasoning_effort(), Some(ReasoningEffort::High));
    }

    #[test]
    fn prompt_words_join_and_follow_the_appended_prompt() {
        let args = inspect(&["review", "focus", "on", "--", "--errors"]).unwrap();
        assert_eq!(args.operator_hint().as_deref(), Some("focus on --errors"));
        let args = inspect(&["review", "--append-prompt", " first ", "second"]).unwrap();
        assert_eq!(args.operator_hint().as_deref(), Some("first\nsecond"));
        assert_eq!(inspect(&["review"]).unwrap().operator_hint(), None);
    }

    #[test]
    fn go_style_durations() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        for bad in ["", "5", "s", "0s", "-1s", "5 s", "5d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn agent_help_names_only_agent_facing_flags() {
        for command in ["review", "simplify"] {
            let help = agent_help(command);
            for wanted in [
                "--uncommitted  inspect all dirty changes (default)",
                "--staged       inspect staged changes only",
                "--codebase     inspect the full codebase",
                "--depth <fast|balanced|thorough>",
                "use thorough only for security-related issues or very complex logic; otherwise use fast or balanced",
                "--low | --medium | --high | --xhigh",
            ] {
                assert!(help.contains(wanted), "{help}");
            }
            for unwanted in ["--wait", "--model", "--max-steps", "--max-web-searches", "--append-prompt", "--dry-run"] {
                assert!(!help.contains(unwanted), "{help}");
            }
        }
        assert!(agent_help("simplify").contains("fast=low, balanced=low, thorough=medium"));
        assert!(agent_help("review").contains("fast=low, balanced=medium, thorough=high"));
    }
}

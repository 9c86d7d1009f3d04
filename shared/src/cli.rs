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

    /// Send secrets to the model and embeddings servers unredacted, for this invocation only.
    #[arg(long, global = true)]
    pub no_redact: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the project identifier shared by search metadata and task records.
    #[command(name = "project_id")]
    ProjectId,

    /// Read or change the global configuration (index.remote, search.embeddings, search.model_dir, redact.allow).
    Config(ConfigArgs),

    /// Launch a detached, evidence-backed read-only code review.
    #[command(override_usage = INSPECT_USAGE_REVIEW)]
    Review(InspectArgs),

    /// Launch a detached read-only simplification audit.
    #[command(override_usage = INSPECT_USAGE_SIMPLIFY)]
    Simplify(InspectArgs),

    /// Write a commit message for the staged changes; stdout is the message only.
    #[command(name = "commit-msg")]
    CommitMsg(CommitMsgArgs),

    /// Write a commit message for the staged changes, then run git commit with it.
    Commit(CommitArgs),

    /// Install, remove or inspect the prepare-commit-msg hook that fills `git commit`'s message.
    Hook(HookArgs),

    /// Embedding-backed code search over the files on disk.
    Search(SearchArgs),

    /// Write the squash-merge message of the current branch versus origin/HEAD; stdout is the message only.
    #[command(name = "pr-message")]
    PrMessage(PrMessageArgs),

    /// Write GitHub release notes for <base>..<release>, or since the latest version tag (patch|minor|major).
    #[command(name = "release-note")]
    ReleaseNote(ReleaseNoteArgs),

    /// Answer a codebase question with grounded findings; stdout is one JSON object.
    Explore(ExploreArgs),

    /// Share search indexes through the index.remote repository (sync, migrate, gc).
    #[command(override_usage = INDEX_USAGE)]
    Index(IndexArgs),

    /// Serve search, explore, review and task tools to coding agents over MCP (stdio).
    Mcp,

    /// Print a shell completion script for bash, zsh or fish.
    Completions {
        #[arg(value_parser = ["bash", "zsh", "fish"])]
        shell: String,
    },
}

#[derive(Debug, Args)]
#[command(
    override_usage = "git-agent config index.remote [<git-url>]\n       git-agent config search.embeddings [local|remote]\n       git-agent config search.model_dir [<folder>]\n       git-agent config redact.allow [<regex>]\n       git-agent config --unset <key>"
)]
pub struct ConfigArgs {
    /// Remove the setting.
    #[arg(long)]
    pub unset: bool,

    /// The configuration key: index.remote, search.embeddings, search.model_dir or redact.allow.
    #[arg(value_name = "key")]
    pub key: String,

    /// The new value; without it the current value is printed.
    #[arg(value_name = "value")]
    pub value: Option<String>,
}

/// `git-agent index <sync|migrate|gc>`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    #[command(subcommand)]
    pub command: IndexCommand,
}

/// The index maintenance commands. Their usage errors are exact lines of
/// the specification, see [`index_usage`].
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Export every completed revision index to index.remote.
    #[command(override_usage = INDEX_USAGE_SYNC)]
    Sync,

    /// Convert the index.remote repository from schema v1 to schema v2.
    #[command(override_usage = INDEX_USAGE_MIGRATE)]
    Migrate(IndexMigrateArgs),

    /// Remove unreachable index data, locally and in index.remote.
    #[command(override_usage = INDEX_USAGE_GC)]
    Gc(IndexGcArgs),
}

/// `git-agent index migrate --to v2 [--dry-run]`.
#[derive(Debug, Args)]
pub struct IndexMigrateArgs {
    /// The target schema; only v2 exists.
    #[arg(long, value_name = "version", value_parser = ["v2"], required = true)]
    pub to: String,

    /// Build and validate the migration in temporary storage; commit and push nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `git-agent index gc [--dry-run]`.
#[derive(Debug, Args)]
pub struct IndexGcArgs {
    /// Report what would be removed; change no byte and no modification time.
    #[arg(long)]
    pub dry_run: bool,
}

const INDEX_USAGE: &str =
    "git-agent index sync\n       git-agent index migrate --to v2 [--dry-run]\n       git-agent index gc [--dry-run]";
const INDEX_USAGE_SYNC: &str = "git-agent index sync";
const INDEX_USAGE_MIGRATE: &str = "git-agent index migrate --to v2 [--dry-run]";
const INDEX_USAGE_GC: &str = "git-agent index gc [--dry-run]";

/// The specification's exact usage error for a malformed `git-agent index`
/// command line (`args` after the program name and `--cwd`), or `None`
/// when `args` is not an index command. Clap's own message would name the
/// offending argument; the specification wants the one usage line of the
/// subcommand (all three when the subcommand itself is wrong).
/// A leading `--cwd <directory>` or `--cwd=<directory>` is skipped, so the
/// client can pass its whole argument list.
pub fn index_usage<S: AsRef<str>>(args: &[S]) -> Option<String> {
    let mut words = args.iter().map(AsRef::as_ref).peekable();
    match words.peek() {
        Some(&"--cwd") => {
            words.next();
            words.next();
        }
        Some(word) if word.starts_with("--cwd=") => {
            words.next();
        }
        _ => {}
    }
    if words.next() != Some("index") {
        return None;
    }
    let usage = match words.next() {
        Some("sync") => INDEX_USAGE_SYNC,
        Some("migrate") => INDEX_USAGE_MIGRATE,
        Some("gc") => INDEX_USAGE_GC,
        _ => INDEX_USAGE,
    };
    Some(format!("usage: {usage}"))
}

/// `git-agent pr-message [generation flags]`.
#[derive(Debug, Args)]
pub struct PrMessageArgs {
    #[command(flatten)]
    pub generation: MessageArgs,
}

/// `git-agent release-note [--out <file>] <base> <release>` or
/// `git-agent release-note [--out <file>] patch|minor|major`, with the
/// generation flags. Which of the two forms it is, the daemon decides.
#[derive(Debug, Args)]
#[command(
    override_usage = "git-agent release-note [--out <file>] [flags] <base> <release>\n       git-agent release-note [--out <file>] [flags] patch|minor|major"
)]
pub struct ReleaseNoteArgs {
    /// Write the Markdown to <file> (checked writable before anything runs) and stream the trace to stdout.
    #[arg(long, value_name = "file", value_parser = NonEmptyStringValueParser::new())]
    pub out: Option<String>,

    /// <base> <release>, or one of patch, minor, major (from the latest version tag to HEAD).
    #[arg(value_name = "range", required = true, num_args = 1..=2, value_parser = NonEmptyStringValueParser::new())]
    pub range: Vec<String>,

    #[command(flatten)]
    pub generation: MessageArgs,
}

/// `git-agent explore [--debug] [--fast] [--for <target>] [--follow-up <search-id>] <question...>`.
#[derive(Debug, Clone, Args)]
#[command(
    override_usage = "git-agent explore [--debug] [--fast] [--for <diagnose|change|behavior|owner>] [--follow-up <search-id>] <question...>"
)]
pub struct ExploreArgs {
    /// Write explore.phase timings and the console trace to stderr.
    #[arg(long)]
    pub debug: bool,

    /// Send service_tier=priority with the Responses API request.
    #[arg(long)]
    pub fast: bool,

    /// What the answer should prioritize.
    #[arg(long = "for", value_name = "target")]
    pub target: Option<ExploreTarget>,

    /// Continue the session of a previous explore result.
    #[arg(long, value_name = "search-id", value_parser = NonEmptyStringValueParser::new())]
    pub follow_up: Option<String>,

    /// The question, in natural language.
    #[arg(value_name = "question", required = true, num_args = 1.., value_parser = NonEmptyStringValueParser::new())]
    pub question: Vec<String>,
}

/// The `--for` targets of `git-agent explore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExploreTarget {
    /// The reproducer, failure mechanism, bottleneck or regression cause.
    Diagnose,
    /// The implementation boundary, affected behavior and focused validation.
    Change,
    /// Current semantics, contracts and invariants.
    Behavior,
    /// The authoritative implementation, callers and subsystem boundaries.
    Owner,
}

impl ExploreTarget {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Diagnose => "diagnose",
            Self::Change => "change",
            Self::Behavior => "behavior",
            Self::Owner => "owner",
        }
    }
}

const INSPECT_USAGE_REVIEW: &str = "git-agent review [--codebase|--uncommitted|--staged] [flags] [prompt...]\n       git-agent review --wait <id>\n       git-agent review [--debug] [--fast] --follow-up <turn-id> <prompt...>";
const INSPECT_USAGE_SIMPLIFY: &str = "git-agent simplify [--codebase|--uncommitted|--staged] [flags] [prompt...]\n       git-agent simplify --wait <id>\n       git-agent simplify [--debug] [--fast] --follow-up <turn-id> <prompt...>";

/// The options that `--wait` excludes: every option of an inspection launch.
const LAUNCH_OPTIONS: &[&str] = &[
    "codebase",
    "uncommitted",
    "staged",
    "base",
    "commit",
    "depth",
    "max_steps",
    "max_web_searches",
    "dry_run",
    "clippy",
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

/// The options `--follow-up` excludes: every launch option except
/// `--fast`, `--debug` and the (then required) prompt.
const FOLLOW_UP_EXCLUDED: &[&str] = &[
    "codebase",
    "uncommitted",
    "staged",
    "base",
    "commit",
    "clippy",
    "wait",
    "depth",
    "max_steps",
    "max_web_searches",
    "dry_run",
    "model",
    "low",
    "medium",
    "high",
    "xhigh",
    "base_url",
    "timeout",
    "guidance_family",
    "append_prompt",
];

/// `git-agent review` and `git-agent simplify`: the launch flags, the
/// isolated `--wait <id>` form and `--help-agent`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("mode").args(["codebase", "uncommitted", "staged", "base", "commit"]).multiple(false)))]
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

    /// Inspect HEAD against its merge base with <ref> (what a pull request would contain).
    #[arg(long, value_name = "ref", value_parser = NonEmptyStringValueParser::new())]
    pub base: Option<String>,

    /// Inspect one commit against its first parent.
    #[arg(long, value_name = "rev", value_parser = NonEmptyStringValueParser::new())]
    pub commit: Option<String>,

    /// Wait for a detached task and print its report.
    #[arg(long, value_name = "id", conflicts_with_all = LAUNCH_OPTIONS)]
    pub wait: Option<String>,

    /// Continue a successful detached task of this command and workspace with a new prompt.
    #[arg(long, value_name = "turn-id", conflicts_with_all = FOLLOW_UP_EXCLUDED, requires = "prompt")]
    pub follow_up: Option<String>,

    /// Automatic inspection depth and default reasoning effort (default balanced).
    #[arg(long, value_name = "fast|balanced|thorough", value_parser = DepthParser, conflicts_with = "max_steps")]
    pub depth: Option<Depth>,

    /// Exact model-step ceiling, overriding the automatic inspection depth.
    #[arg(long, value_name = "n", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: Option<u32>,

    /// Hosted web searches per model response (default 4 with an API key, uncapped with ChatGPT sign-in)
    #[arg(long, value_name = "n", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_web_searches: Option<u32>,

    /// Replace the provider with a deterministic fixture (preparation and launch stay real).
    #[arg(long)]
    pub dry_run: bool,

    /// Review only: also run `cargo clippy` on the packages of changed .rs files (compiles the code: build scripts and proc macros run).
    #[arg(long)]
    pub clippy: bool,

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

/// `--depth`'s parser: the value trimmed and in any case (` THOROUGH `
/// is thorough), as the original accepts it; help, errors and completions
/// list the depths as for any enum.
#[derive(Debug, Clone, Copy)]
struct DepthParser;

impl clap::builder::TypedValueParser for DepthParser {
    type Value = Depth;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Depth, clap::Error> {
        let normalized = value.to_str().map(|text| text.trim().to_ascii_lowercase());
        let value = normalized.as_deref().map_or(value, std::ffi::OsStr::new);
        clap::builder::EnumValueParser::<Depth>::new().parse_ref(command, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Depth::value_variants().iter().filter_map(ValueEnum::to_possible_value)))
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

/// `git-agent commit-msg [--amend] [flags]` and `git-agent commit
/// [--amend] [flags]`.
#[derive(Debug, Args)]
pub struct CommitMsgArgs {
    /// Describe the final amended HEAD commit (HEAD plus the staged changes) instead of the staged changes alone.
    #[arg(long)]
    pub amend: bool,

    #[command(flatten)]
    pub generation: MessageArgs,
}

/// `git-agent commit [--amend] [--interactive] [flags]`.
#[derive(Debug, Args)]
pub struct CommitArgs {
    #[command(flatten)]
    pub message: CommitMsgArgs,

    /// Show the message as it is written, then ask: accept, edit, regenerate or quit (needs a terminal).
    #[arg(long, short = 'i')]
    pub interactive: bool,
}

/// `git-agent hook install|uninstall|status`.
#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub command: HookCommand,
}

/// The hook commands. The client runs them itself: they touch only the
/// repository's hooks folder.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Write the prepare-commit-msg hook into the repository's hooks folder (core.hooksPath honoured).
    Install {
        /// Replace a prepare-commit-msg hook that git-agent did not write.
        #[arg(long)]
        force: bool,
    },

    /// Remove the prepare-commit-msg hook, if git-agent wrote it.
    Uninstall,

    /// Say whether the prepare-commit-msg hook is git-agent's, another program's, or absent.
    Status,

    /// What the installed hook runs: fill <file> with a generated message when git has none.
    #[command(hide = true)]
    Run {
        /// The commit message file git passes to the hook.
        #[arg(value_name = "file")]
        file: std::path::PathBuf,

        /// Where git's message came from (message, template, merge, squash, commit), when it has one.
        #[arg(value_name = "source")]
        source: Option<String>,

        /// The commit whose message is reused (source commit).
        #[arg(value_name = "commit")]
        commit: Option<String>,
    },
}

/// The flags of the message-generation commands: the shared generation
/// flags plus the agent loop's step ceiling and the diagnostics address.
#[derive(Debug, Args, Clone, Default)]
pub struct MessageArgs {
    #[command(flatten)]
    pub shared: GenerationArgs,

    /// Maximum model steps of the agent loop (default 30).
    #[arg(long, value_name = "n", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: Option<u32>,

    /// Serve a diagnostics index at <addr> (host:port) while the command runs.
    #[arg(long, value_name = "addr", value_parser = NonEmptyStringValueParser::new())]
    pub pprof: Option<String>,
}

/// The provider and prompt flags every model-backed command shares.
#[derive(Debug, Clone, Default, Args)]
#[command(group(ArgGroup::new("effort").args(["low", "medium", "high", "xhigh"]).multiple(false)))]
pub struct GenerationArgs {
    /// Model identifier (default: OPENAI_MODEL, then the command's default).
    #[arg(long, value_name = "model", value_parser = NonEmptyStringValueParser::new())]
    pub model: Option<String>,

    /// Ask for the priority service tier (service_tier=priority).
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

    /// Provider base URL (overrides OPENAI_BASE_URL and the ChatGPT default).
    #[arg(long, value_name = "url", value_parser = NonEmptyStringValueParser::new())]
    pub base_url: Option<String>,

    /// Deadline for the provider client and the whole run, such as 90s, 2m or 1m30s.
    #[arg(long, value_name = "duration", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Guidance family: auto (AGENTS, else CLAUDE), agents, claude or none.
    #[arg(long, value_name = "family", value_parser = ["auto", "agents", "claude", "none"])]
    pub guidance_family: Option<String>,

    /// A lower-priority hint appended to the task prompt as escaped data.
    #[arg(long, value_name = "text")]
    pub append_prompt: Option<String>,

    /// Write diagnostics (trace, phase timings) to stderr.
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

/// `--timeout` values are read and written by [`crate::timefmt`].
pub use crate::timefmt::{format_duration, parse_duration};

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
         --uncommitted   inspect all dirty changes (default)\n  \
         --staged        inspect staged changes only\n  \
         --codebase      inspect the full codebase\n  \
         --base <ref>    inspect HEAD against its merge base with <ref> (a branch's pull request)\n  \
         --commit <rev>  inspect one commit against its first parent\n\n\
         Flags:\n  \
         --depth <fast|balanced|thorough>\n      \
         select automatic inspection depth and default reasoning effort: {depth_defaults} (default balanced)\n      \
         use thorough only for security-related issues or very complex logic; otherwise use fast or balanced\n  \
         --low | --medium | --high | --xhigh\n      \
         set reasoning effort (mutually exclusive)\n"
    )
}

/// `git-agent search`: the flags of the search, `--index`, `--ls` and
/// `--ls-files` forms. Values are checked here only for their type; the
/// daemon validates ranges and combinations so that every form reports
/// its errors the same way.
#[derive(Debug, Args, Default)]
#[command(override_usage = "git-agent search [flags] <query...>
       git-agent search --index [--reindex] [--remote <url>] [--rev <rev>] [--scope <paths>] [--code]
       git-agent search --ls [--remote <url>] [--format text|json]
       git-agent search --ls-remotes [--format text|json|completion]
       git-agent search --ls-files [--format tree|json] [--remote <url>] [--rev <rev>] [--scope <paths>] [--no-tests]")]
pub struct SearchArgs {
    /// Search the committed tree of this revision instead of the files on disk.
    #[arg(long, value_name = "rev")]
    pub rev: Option<String>,

    /// Comma-separated paths, relative to the current directory, to search or index.
    #[arg(long, value_name = "paths")]
    pub scope: Option<String>,

    /// Maximum number of results, 1..100 (default 20).
    #[arg(long, value_name = "n", allow_negative_numbers = true)]
    pub limit: Option<i64>,

    /// Output format: json|brief for search (default json, brief with --agent),
    /// text|json for --ls, tree|json for --ls-files.
    #[arg(long, value_name = "format")]
    pub format: Option<String>,

    /// Search source-code files only.
    #[arg(long)]
    pub code: bool,

    /// Exclude common test files and test directories from results and --ls-files output.
    #[arg(long)]
    pub no_tests: bool,

    /// Serve indexing progress over a private local socket when embeddings need work.
    #[arg(long)]
    pub agent: bool,

    /// Build embeddings for the selected files without searching.
    #[arg(long)]
    pub index: bool,

    /// Rebuild embeddings for the selected files and drop stale cache entries.
    #[arg(long)]
    pub reindex: bool,

    /// List the search indexes of the current project.
    #[arg(long)]
    pub ls: bool,

    /// List the files stored in the selected search index.
    #[arg(long)]
    pub ls_files: bool,

    /// Minimum final hybrid score, 0 < score <= 1 (default 0.70).
    #[arg(long, value_name = "score", allow_negative_numbers = true)]
    pub min_score: Option<f64>,

    /// Embedding model (default OPENAI_EMBEDDING_MODEL, else text-embedding-3-small).
    #[arg(long, value_name = "model")]
    pub embedding_model: Option<String>,

    /// Embedding dimensions (default OPENAI_EMBEDDING_DIMENSIONS, else 1024).
    #[arg(long, value_name = "n", allow_negative_numbers = true)]
    pub embedding_dimensions: Option<i64>,

    /// Embeddings base URL (default OPENAI_EMBEDDING_BASE_URL, OPENAI_BASE_URL, https://api.openai.com/v1).
    #[arg(long, value_name = "url")]
    pub base_url: Option<String>,

    /// Per-request timeout for the embeddings endpoint, such as 30s or 2m (default 2m).
    #[arg(long, value_name = "duration")]
    pub timeout: Option<String>,

    /// Write diagnostic events to stderr.
    #[arg(long)]
    pub debug: bool,

    /// Search a remote Git repository (URL or path) through its cached bare clone.
    #[arg(long, value_name = "url")]
    pub remote: Option<String>,

    /// List the cached remote repositories.
    #[arg(long)]
    pub ls_remotes: bool,

    /// What to look for.
    #[arg(value_name = "query")]
    pub query: Vec<String>,
}

impl Command {
    /// The command as typed after `git-agent`: `commit-msg`, `index sync`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::ProjectId => "project_id",
            Command::Config(_) => "config",
            Command::Review(_) => "review",
            Command::Simplify(_) => "simplify",
            Command::CommitMsg(_) => "commit-msg",
            Command::Commit(_) => "commit",
            Command::Search(_) => "search",
            Command::PrMessage(_) => "pr-message",
            Command::ReleaseNote(_) => "release-note",
            Command::Explore(_) => "explore",
            Command::Index(args) => match args.command {
                IndexCommand::Sync => "index sync",
                IndexCommand::Migrate(_) => "index migrate",
                IndexCommand::Gc(_) => "index gc",
            },
            Command::Hook(args) => match args.command {
                HookCommand::Install { .. } => "hook install",
                HookCommand::Uninstall => "hook uninstall",
                HookCommand::Status => "hook status",
                HookCommand::Run { .. } => "hook run",
            },
            Command::Mcp => "mcp",
            Command::Completions { .. } => "completions",
        }
    }

    /// Whether the client handles this command itself, without the daemon.
    pub fn is_local(&self) -> bool {
        match self {
            Command::Completions { .. } | Command::Mcp | Command::Hook(_) => true,
            Command::Review(args) | Command::Simplify(args) => args.help_agent,
            _ => false,
        }
    }
}

/// Parses the arguments that follow the program name and `--cwd`.
pub fn parse_command(args: &[String]) -> Result<Command, clap::Error> {
    parse(args).map(|cli| cli.command)
}

/// Parses the arguments that follow the program name and `--cwd`, with
/// the global flags.
pub fn parse(args: &[String]) -> Result<Cli, clap::Error> {
    let argv = std::iter::once("git-agent".to_string()).chain(args.iter().cloned());
    Cli::try_parse_from(argv)
}

/// The clap command of `git-agent`, as completions and the manual page
/// describe it.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// The program name completions are registered for.
const PROGRAM: &str = "git-agent";

/// The completion script for `shell` (bash, zsh or fish).
pub fn completions(shell: &str) -> Vec<u8> {
    let mut command = command();
    let shell = match shell {
        "bash" => clap_complete::Shell::Bash,
        "zsh" => clap_complete::Shell::Zsh,
        _ => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, PROGRAM, &mut script);
    if shell == clap_complete::Shell::Bash { repair_bash_states(&script) } else { script }
}

/// clap_complete's bash script walks the words typed so far into a state
/// named `git__agent__subcmd__search` (the program's `-` escaped as `__`),
/// but labels the case arm of each state by escaping the whole path at once,
/// so the program's `-` becomes the subcommand separator there:
/// `git__subcmd__agent__subcmd__search`. No arm matched, and nothing past
/// the first word completed (clap-rs/clap#6421, open as of clap_complete
/// 4.6.12). The arms are relabelled the way the walk spells them; a fixed
/// clap_complete leaves nothing to relabel.
fn repair_bash_states(script: &[u8]) -> Vec<u8> {
    let walked = PROGRAM.replace('-', "__");
    let mislabelled = PROGRAM.replace('-', "__subcmd__");
    String::from_utf8_lossy(script)
        .replace(&format!("{mislabelled}__subcmd__"), &format!("{walked}__subcmd__"))
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(args: &[&str]) -> Result<IndexCommand, clap::Error> {
        let argv: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        match parse_command(&argv)? {
            Command::Index(args) => Ok(args.command),
            other => panic!("not an index command: {other:?}"),
        }
    }

    #[test]
    fn index_subcommands_parse() {
        assert!(matches!(index(&["index", "sync"]).unwrap(), IndexCommand::Sync));
        assert!(matches!(index(&["index", "gc"]).unwrap(), IndexCommand::Gc(IndexGcArgs { dry_run: false })));
        assert!(matches!(
            index(&["index", "gc", "--dry-run"]).unwrap(),
            IndexCommand::Gc(IndexGcArgs { dry_run: true })
        ));
        let IndexCommand::Migrate(migrate) = index(&["index", "migrate", "--dry-run", "--to", "v2"]).unwrap() else {
            panic!("not a migration");
        };
        assert_eq!((migrate.to.as_str(), migrate.dry_run), ("v2", true));
        let IndexCommand::Migrate(migrate) = index(&["index", "migrate", "--to", "v2"]).unwrap() else {
            panic!("not a migration");
        };
        assert!(!migrate.dry_run);
    }

    #[test]
    fn malformed_index_command_lines_are_refused() {
        for args in [
            &["index"][..],
            &["index", "prune"],
            &["index", "sync", "extra"],
            &["index", "sync", "--dry-run"],
            &["index", "migrate"],
            &["index", "migrate", "--to", "v3"],
            &["index", "migrate", "--to"],
            &["index", "migrate", "--to", "v2", "--to", "v2"],
            &["index", "migrate", "--to", "v2", "--dry-run", "--dry-run"],
            &["index", "gc", "--dry-run", "--dry-run"],
            &["index", "gc", "--remote", "x"],
            &["index", "gc", "extra"],
            &["index", "gc", "--force"],
        ] {
            assert!(index(args).is_err(), "{args:?} must be refused");
        }
    }

    #[test]
    fn index_usage_names_the_subcommand_line() {
        assert_eq!(index_usage(&["index", "gc", "--remote"]).as_deref(), Some("usage: git-agent index gc [--dry-run]"));
        assert_eq!(
            index_usage(&["--cwd", "/tmp", "index", "migrate", "--to", "v3"]).as_deref(),
            Some("usage: git-agent index migrate --to v2 [--dry-run]")
        );
        assert_eq!(index_usage(&["--cwd=/tmp", "index", "sync", "x"]).as_deref(), Some("usage: git-agent index sync"));
        assert_eq!(
            index_usage(&["index", "prune"]).as_deref(),
            Some(
                "usage: git-agent index sync\n       git-agent index migrate --to v2 [--dry-run]\n       git-agent index gc [--dry-run]"
            )
        );
        assert_eq!(index_usage(&["search", "index"]), None);
    }

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

    fn generation(args: &[&str]) -> Result<MessageArgs, clap::Error> {
        let argv = ["git-agent", "commit-msg"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::CommitMsg(args) => Ok(args.generation),
            other => panic!("parsed {other:?}"),
        }
    }

    fn release_note(args: &[&str]) -> Result<ReleaseNoteArgs, clap::Error> {
        let argv = ["git-agent", "release-note"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::ReleaseNote(args) => Ok(args),
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn commit_and_commit_msg_take_amend() {
        let parse = |argv: &[&str]| Cli::try_parse_from(argv).map(|cli| cli.command);
        match parse(&["git-agent", "commit", "--amend", "--fast"]).unwrap() {
            Command::Commit(args) => {
                assert!(args.message.amend && args.message.generation.shared.fast && !args.interactive)
            }
            other => panic!("parsed {other:?}"),
        }
        match parse(&["git-agent", "commit", "-i"]).unwrap() {
            Command::Commit(args) => assert!(args.interactive),
            other => panic!("parsed {other:?}"),
        }
        match parse(&["git-agent", "commit-msg"]).unwrap() {
            Command::CommitMsg(args) => assert!(!args.amend),
            other => panic!("parsed {other:?}"),
        }
        assert!(parse(&["git-agent", "commit", "extra"]).is_err(), "no positional arguments");
        assert!(parse(&["git-agent", "commit-msg", "--interactive"]).is_err(), "only commit is interactive");
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
        assert_eq!(inspect(&["review", "--depth", " THOROUGH "]).unwrap().depth, Some(Depth::Thorough));
        assert_eq!(inspect(&["simplify", "--depth", "Fast"]).unwrap().depth, Some(Depth::Fast));
        assert_eq!(inspect(&["review", "--depth=\tbalanced\n"]).unwrap().depth, Some(Depth::Balanced));
        assert!(inspect(&["review", "--depth", " "]).is_err());
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
    fn follow_up_takes_only_fast_debug_and_a_prompt() {
        let id = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        for extra in [
            &["--wait", id][..],
            &["--codebase"],
            &["--staged"],
            &["--uncommitted"],
            &["--timeout", "1s"],
            &["--model", "m"],
            &["--max-steps", "1"],
            &["--depth", "fast"],
            &["--high"],
            &["--base-url", "https://example.test"],
            &["--guidance-family", "none"],
            &["--append-prompt", "hint"],
            &["--dry-run"],
            &["--max-web-searches", "2"],
        ] {
            let mut args = vec!["review", "--follow-up", id, "again"];
            args.extend_from_slice(extra);
            assert!(inspect(&args).is_err(), "{args:?}");
        }
        assert!(inspect(&["review", "--follow-up", id]).is_err(), "the prompt is required");
        let args = inspect(&["simplify", "--fast", "--debug", "--follow-up", id, "--", "-x", "y"]).unwrap();
        assert_eq!(args.follow_up.as_deref(), Some(id));
        assert_eq!(args.prompt.join(" "), "-x y");
        assert!(args.generation.fast && args.generation.debug);
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
    fn durations_are_formatted_as_they_are_written() {
        assert_eq!(format_duration(Duration::from_secs(300)), "5m");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_millis(60_500)), "60.5s");
        for written in ["5m", "90s", "1.5s"] {
            assert_eq!(format_duration(parse_duration(written).unwrap()), written);
        }
    }

    #[test]
    fn help_states_the_web_search_defaults() {
        use clap::CommandFactory;
        for command in ["review", "simplify"] {
            let mut cli = Cli::command();
            let help = cli.find_subcommand_mut(command).unwrap().render_help().to_string();
            let line = help.lines().find(|line| line.contains("--max-web-searches")).unwrap_or_default();
            assert!(!line.contains("not applied"), "{help}");
            assert!(help.contains("default 4 with an API key") && help.contains("uncapped"), "{help}");
        }
    }

    #[test]
    fn base_commit_and_clippy_parse() {
        let parsed = parse_command(&["review".to_string(), "--base".into(), "main".into(), "--clippy".into()]).unwrap();
        let Command::Review(args) = parsed else { panic!("not a review") };
        assert_eq!((args.base.as_deref(), args.clippy), (Some("main"), true));
        let parsed =
            parse_command(&["simplify".to_string(), "--commit".into(), "HEAD~1".into(), "focus".into()]).unwrap();
        let Command::Simplify(args) = parsed else { panic!("not a simplify") };
        assert_eq!((args.commit.as_deref(), args.prompt.as_slice()), (Some("HEAD~1"), &["focus".to_string()][..]));
        for conflicting in [
            &["review", "--base", "main", "--staged"][..],
            &["review", "--base", "main", "--commit", "HEAD"],
            &["review", "--commit", "HEAD", "--codebase"],
            &["simplify", "--commit", "HEAD", "--uncommitted"],
            &["review", "--wait", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "--base", "main"],
            &["review", "--base", ""],
            &["review", "--wait", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "--clippy"],
        ] {
            let args: Vec<String> = conflicting.iter().map(|arg| arg.to_string()).collect();
            assert!(parse_command(&args).is_err(), "{conflicting:?}");
        }
    }

    #[test]
    fn agent_help_names_only_agent_facing_flags() {
        for command in ["review", "simplify"] {
            let help = agent_help(command);
            for wanted in [
                "--uncommitted   inspect all dirty changes (default)",
                "--staged        inspect staged changes only",
                "--codebase      inspect the full codebase",
                "--base <ref>    inspect HEAD against its merge base with <ref>",
                "--commit <rev>  inspect one commit against its first parent",
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
        assert_eq!(args.max_steps, Some(4));
        let args = args.shared;
        assert_eq!(args.model.as_deref(), Some("m"));
        assert!(args.fast && args.debug);
        assert_eq!(args.reasoning_effort(), Some(ReasoningEffort::High));
        assert_eq!(args.timeout, Some(Duration::from_secs(90)));
        assert_eq!(args.guidance_family.as_deref(), Some("claude"));
        assert_eq!(args.append_prompt.as_deref(), Some("be brief"));
        assert_eq!(generation(&[]).unwrap().shared.reasoning_effort(), None);
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

    #[test]
    fn release_note_takes_one_or_two_positionals_and_its_flags() {
        let args = release_note(&["--out", "notes.md", "v1.0.0", "v1.1.0", "--high", "--timeout", "5m"]).unwrap();
        assert_eq!(args.out.as_deref(), Some("notes.md"));
        assert_eq!(args.range, ["v1.0.0", "v1.1.0"]);
        assert_eq!(args.generation.shared.reasoning_effort(), Some(ReasoningEffort::High));
        assert_eq!(args.generation.shared.timeout, Some(Duration::from_secs(300)));
        assert_eq!(release_note(&["patch"]).unwrap().range, ["patch"]);
        assert!(release_note(&[]).is_err(), "a range or a bump is required");
        assert!(release_note(&["a", "b", "c"]).is_err());
        assert!(release_note(&["--out", "", "patch"]).is_err());
        assert!(release_note(&["", "v1"]).is_err());
    }

    #[test]
    fn pr_message_takes_only_generation_flags() {
        let parsed = Cli::try_parse_from(["git-agent", "pr-message", "--fast", "--max-steps", "3"]).unwrap();
        let Command::PrMessage(args) = parsed.command else { panic!("parsed {:?}", parsed.command) };
        assert!(args.generation.shared.fast);
        assert_eq!(args.generation.max_steps, Some(3));
        assert!(Cli::try_parse_from(["git-agent", "pr-message", "main"]).is_err());
    }
}

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

    /// Embedding-backed code search over the files on disk.
    Search(SearchArgs),

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

/// `git-agent search`: the flags of the search, `--index`, `--ls` and
/// `--ls-files` forms. Values are checked here only for their type; the
/// daemon validates ranges and combinations so that every form reports
/// its errors the same way.
#[derive(Debug, Args, Default)]
#[command(override_usage = "git-agent search [flags] <query...>
       git-agent search --index [--reindex] [--scope <paths>] [--code]
       git-agent search --ls [--format text|json]
       git-agent search --ls-files [--format tree|json] [--scope <paths>] [--no-tests]")]
pub struct SearchArgs {
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

    /// What to look for.
    #[arg(value_name = "query")]
    pub query: Vec<String>,
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

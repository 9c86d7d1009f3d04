//! The thin client. It validates the command line with the shared clap
//! definition, applies `--cwd`, captures the invocation (working
//! directory, the environment the spec reads, terminal-ness of the output
//! streams), sends it to the daemon, and renders the streamed reply; the
//! `hook` commands and `commit --interactive`'s questions run here. It
//! decides the process exit code in one place: [`run`].

mod actions;
mod daemon;
mod hook;
mod interactive;
mod invocation;
mod mcp;
mod render;

use clap::Parser;
use git_agent_shared::cli::{Cli, Command};
use git_agent_shared::task_record::TaskCommand;
use std::ffi::OsString;
use std::io::Write;

/// Runs `git-agent` with `argv` (program name first) and returns the exit
/// code.
pub fn run(argv: Vec<OsString>) -> i32 {
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(error) => {
            let args: Vec<String> = argv.iter().skip(1).map(|arg| arg.to_string_lossy().into_owned()).collect();
            match git_agent_shared::cli::index_usage(&args) {
                Some(usage) if error.use_stderr() => eprintln!("{usage}"),
                _ => {
                    let _ = error.print();
                }
            }
            return error.exit_code();
        }
    };
    match &cli.command {
        Command::Completions { shell } => {
            let script = git_agent_shared::cli::completions(shell);
            // A closed stdout (`git-agent completions fish | head`) is not an error.
            let _ = std::io::stdout().write_all(&script);
            return 0;
        }
        Command::Review(args) | Command::Simplify(args) if args.help_agent => {
            let command = if matches!(cli.command, Command::Review(_)) { "review" } else { "simplify" };
            let mut stdout = std::io::stdout().lock();
            let written = stdout.write_all(git_agent_shared::cli::agent_help(command).as_bytes());
            return i32::from(written.and_then(|()| stdout.flush()).is_err());
        }
        Command::Commit(args) if args.interactive => {
            if let Some(reason) = interactive::unusable_reason() {
                eprintln!(
                    "error: --interactive needs a terminal, and {reason}\nhint: run `git-agent commit` without --interactive from scripts and other programs"
                );
                return 2;
            }
        }
        _ => {}
    }
    let invocation = match invocation::capture(&argv, cli.cwd.as_deref()) {
        Ok(invocation) => invocation,
        Err(error) => {
            eprintln!("error: {}", git_agent_shared::error_chain::Chain(&error));
            return 1;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return 1;
        }
    };
    let work = async {
        match &cli.command {
            Command::Review(args) | Command::Simplify(args) => {
                let command =
                    if matches!(cli.command, Command::Review(_)) { TaskCommand::Review } else { TaskCommand::Simplify };
                match &args.wait {
                    Some(id) => daemon::wait(invocation, id.clone(), command).await,
                    None => daemon::launch(invocation).await,
                }
            }
            Command::Mcp => Ok(mcp::serve(invocation).await),
            Command::Hook(_) => Ok(hook::command(invocation, &cli.command).await),
            Command::Commit(args) if args.interactive => interactive::commit(invocation, &cli.command).await,
            command => daemon::run(invocation, command).await,
        }
    };
    match runtime.block_on(work) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", git_agent_shared::error_chain::Chain(&error));
            1
        }
    }
}

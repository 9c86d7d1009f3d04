//! The command's redactor: on unless `--no-redact` is given, exempting the
//! `redact.allow` regex of the configuration file. Every provider and
//! embeddings client a command builds takes it, and [`super::run`] prints
//! its one stderr line when the command ends.

use super::{CommandError, Invocation};
use git_agent_shared::cli::{self, Command};
use git_agent_shared::config_file::{ConfigFile, REDACT_ALLOW_KEY};
use git_agent_shared::paths;
use gitagent_provider::Redactor;

/// The redactor of `invocation`'s command line. A line that does not parse
/// gets the default one (the command fails on it anyway). `config` never
/// reads the allow regex, so a broken one can always be replaced, and
/// `project_id` sends nothing anywhere, so it reads no configuration.
pub async fn resolve(invocation: &Invocation) -> Result<Redactor, CommandError> {
    let Ok(cli) = cli::parse(&invocation.args) else { return Ok(Redactor::default()) };
    if cli.no_redact {
        return Ok(Redactor::disabled());
    }
    if matches!(cli.command, Command::Config(_) | Command::ProjectId) {
        return Ok(Redactor::default());
    }
    for_environment(&invocation.env).await
}

/// The redactor of a command run with `env` (its configuration file).
pub async fn for_environment(env: &git_agent_shared::Environment) -> Result<Redactor, CommandError> {
    let path = paths::config_file(env).map_err(CommandError::failed)?;
    let config = gitagent_runtime::blocking::run_to_end("the configuration file", {
        let path = path.clone();
        move || ConfigFile::load(&path)
    })
    .await?
    .map_err(CommandError::failed)?;
    if config.redact.allow.is_empty() {
        return Ok(Redactor::default());
    }
    match gitagent_provider::redact::compile_allow(&config.redact.allow) {
        Ok(allow) => Ok(Redactor::new(Some(allow))),
        Err(_) => Err(CommandError::Message(format!(
            "{REDACT_ALLOW_KEY} in {} is not a valid regular expression\nhint: git-agent config {REDACT_ALLOW_KEY} <regex>, or git-agent config --unset {REDACT_ALLOW_KEY}",
            path.display()
        ))),
    }
}

/// Whether the command line asks for `--debug` (which adds where each
/// secret was found to the stderr line).
pub fn debug(args: &[String]) -> bool {
    args.iter().take_while(|arg| *arg != "--").any(|arg| arg == "--debug")
}

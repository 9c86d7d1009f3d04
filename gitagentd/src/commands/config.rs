//! `git-agent config index.remote [<git-url>]` and
//! `git-agent config --unset index.remote`.

use super::{CommandError, Invocation, Output};
use git_agent_shared::cli::ConfigArgs;
use git_agent_shared::config_file::{ConfigFile, INDEX_REMOTE_KEY};
use git_agent_shared::{giturl, paths};

/// The name of the configuration file's blocking reads and writes.
const CONFIG_FILE_WORK: &str = "the configuration file";

pub async fn run(invocation: &Invocation, output: &Output, args: ConfigArgs) -> Result<(), CommandError> {
    if args.key != INDEX_REMOTE_KEY {
        return Err(CommandError::Usage(format!(
            "unknown configuration key {:?}\nhint: the only key is {INDEX_REMOTE_KEY}",
            args.key
        )));
    }
    if args.unset && args.value.is_some() {
        return Err(CommandError::Usage(format!(
            "--unset takes no value\nhint: git-agent config --unset {INDEX_REMOTE_KEY}"
        )));
    }
    let path = paths::config_file(&invocation.env).map_err(CommandError::failed)?;
    let env_path = path.clone();
    let mut config = crate::blocking::run_to_end(CONFIG_FILE_WORK, move || ConfigFile::load(&env_path))
        .await?
        .map_err(CommandError::failed)?;
    let new_value = match (args.unset, args.value) {
        (true, _) => String::new(),
        (false, None) => {
            if config.index.remote.is_empty() {
                return Err(CommandError::Failed(format!(
                    "{INDEX_REMOTE_KEY} is not configured\nhint: git-agent config {INDEX_REMOTE_KEY} <git-url>"
                )));
            }
            output.stdout(format!("{}\n", giturl::sanitize(&config.index.remote)));
            return Ok(());
        }
        (false, Some(value)) => {
            let value = value.trim().to_string();
            if value.is_empty() {
                return Err(CommandError::Usage(format!("{INDEX_REMOTE_KEY} must not be empty")));
            }
            value
        }
    };
    config.index.remote = new_value;
    crate::blocking::run_to_end(CONFIG_FILE_WORK, move || config.save(&path)).await?.map_err(CommandError::failed)
}

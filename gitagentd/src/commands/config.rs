//! `git-agent config <key> [<value>]` and `git-agent config --unset <key>`:
//! `index.remote` (the spec's key), `search.embeddings`,
//! `search.model_dir` and `redact.allow`.

use super::{CommandError, Invocation, Output};
use git_agent_shared::cli::ConfigArgs;
use git_agent_shared::config_file::{ConfigFile, INDEX_REMOTE_KEY, KEYS, SEARCH_EMBEDDINGS_KEY};
use git_agent_shared::config_file::{REDACT_ALLOW_KEY, SEARCH_MODEL_DIR_KEY};
use git_agent_shared::{giturl, paths};

/// The name of the configuration file's blocking reads and writes.
const CONFIG_FILE_WORK: &str = "the configuration file";

pub async fn run(invocation: &Invocation, output: &Output, args: ConfigArgs) -> Result<(), CommandError> {
    if !KEYS.contains(&args.key.as_str()) {
        return Err(CommandError::Usage(format!(
            "unknown configuration key {:?}\nhint: the keys are {}",
            args.key,
            KEYS.join(", ")
        )));
    }
    let key = args.key.as_str();
    if args.unset && args.value.is_some() {
        return Err(CommandError::Usage(format!("--unset takes no value\nhint: git-agent config --unset {key}")));
    }
    let path = paths::config_file(&invocation.env).map_err(CommandError::failed)?;
    let env_path = path.clone();
    let mut config = gitagent_runtime::blocking::run_to_end(CONFIG_FILE_WORK, move || ConfigFile::load(&env_path))
        .await?
        .map_err(CommandError::failed)?;
    let new_value = match (args.unset, args.value) {
        (true, _) => String::new(),
        (false, None) => {
            let value = config.get(key).unwrap_or_default();
            if value.is_empty() {
                return Err(CommandError::Message(format!(
                    "{key} is not configured\nhint: git-agent config {key} {}",
                    value_placeholder(key)
                )));
            }
            let shown = if key == INDEX_REMOTE_KEY { giturl::sanitize(value) } else { value.to_string() };
            output.stdout(format!("{shown}\n"));
            return Ok(());
        }
        (false, Some(value)) => {
            // A regex keeps its spaces; other values are trimmed.
            let value = if key == REDACT_ALLOW_KEY { value } else { value.trim().to_string() };
            if value.is_empty() {
                return Err(CommandError::Usage(format!("{key} must not be empty")));
            }
            match key {
                INDEX_REMOTE_KEY => validate_remote(&value)?,
                SEARCH_EMBEDDINGS_KEY => validate_embeddings(&value)?,
                REDACT_ALLOW_KEY => validate_allow(&value)?,
                _ => validate_model_dir(&value)?,
            }
            value
        }
    };
    config.set(key, new_value);
    gitagent_runtime::blocking::run_to_end(CONFIG_FILE_WORK, move || config.save(&path))
        .await?
        .map_err(CommandError::failed)
}

/// What a value of `key` looks like, for hints.
fn value_placeholder(key: &str) -> &'static str {
    match key {
        INDEX_REMOTE_KEY => "<git-url>",
        SEARCH_EMBEDDINGS_KEY => "local|remote",
        REDACT_ALLOW_KEY => "<regex>",
        _ => "<folder>",
    }
}

/// `redact.allow` is a regular expression the redactor can compile.
fn validate_allow(value: &str) -> Result<(), CommandError> {
    gitagent_provider::redact::compile_allow(value).map(drop).map_err(|error| {
        CommandError::Usage(format!(
            "{REDACT_ALLOW_KEY} {value:?} is not a valid regular expression: {}\nhint: one regex matching the secret values or file paths to leave alone; join several with |",
            error.to_string().lines().last().unwrap_or_default().trim_start_matches("error: ")
        ))
    })
}

/// `search.embeddings` is `local` or `remote`.
fn validate_embeddings(value: &str) -> Result<(), CommandError> {
    match value {
        "local" | "remote" => Ok(()),
        _ => Err(CommandError::Usage(format!(
            "{SEARCH_EMBEDDINGS_KEY} {value:?} is neither local nor remote\nhint: git-agent config {SEARCH_EMBEDDINGS_KEY} local (the built-in model) or remote (an OpenAI-compatible endpoint), or --unset it to choose by the environment"
        ))),
    }
}

/// `search.model_dir` is an absolute folder (it is read by the daemon,
/// wherever a search runs); whether it holds a model is checked when a
/// search loads it.
fn validate_model_dir(value: &str) -> Result<(), CommandError> {
    if !std::path::Path::new(value).is_absolute() {
        return Err(CommandError::Usage(format!(
            "{SEARCH_MODEL_DIR_KEY} {value:?} is not an absolute path\nhint: give the full path of the folder holding config.json, tokenizer.json and model.safetensors"
        )));
    }
    Ok(())
}

/// Refuses a value no machine could fetch from: anything but an
/// `https://`, `http://`, `ssh://` or `git://` URL with a host, the
/// scp-like `user@host:path`, or an absolute local path (`file://` or
/// `/srv/...`: a relative path would be relative to wherever a search
/// happens to run).
fn validate_remote(value: &str) -> Result<(), CommandError> {
    let refuse = |why: &str| {
        CommandError::Usage(format!(
            "{INDEX_REMOTE_KEY} {:?} is not a Git remote: {why}\nhint: use a URL such as https://git.example.com/team/indexes.git or git@git.example.com:team/indexes.git, or an absolute path",
            giturl::sanitize(value)
        ))
    };
    let url = gix::url::parse(gix::bstr::BStr::new(value.as_bytes())).map_err(|error| refuse(&error.to_string()))?;
    match url.scheme {
        gix::url::Scheme::File => {
            if !std::path::Path::new(&url.path.to_string()).is_absolute() {
                return Err(refuse("a local path must be absolute"));
            }
        }
        gix::url::Scheme::Https | gix::url::Scheme::Http | gix::url::Scheme::Ssh | gix::url::Scheme::Git => {
            if url.host().is_none_or(str::is_empty) {
                return Err(refuse("the URL names no host"));
            }
        }
        other => return Err(refuse(&format!("the {other} transport is not supported"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::validate_remote;

    #[test]
    fn only_fetchable_remotes_are_accepted() {
        for good in [
            "https://git.example.com/team/indexes.git",
            "http://127.0.0.1:8080/x.git",
            "ssh://git@git.example.com/team/indexes.git",
            "git@git.example.com:team/indexes.git",
            "git://git.example.com/indexes.git",
            "/srv/git/indexes.git",
            "file:///srv/git/indexes.git",
        ] {
            assert!(validate_remote(good).is_ok(), "{good}");
        }
        for bad in ["not a url at all", "indexes.git", "ext::sh -c touch% /tmp/pwned", "https:///no-host.git"] {
            let error = validate_remote(bad).expect_err(bad).to_string();
            assert!(error.contains("is not a Git remote"), "{bad}: {error}");
        }
    }
}

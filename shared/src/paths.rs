//! Where git-agent keeps things, resolved from the caller's environment.
//!
//! - the daemon socket: `$XDG_RUNTIME_DIR/git-agent/gitagentd.sock`, else
//!   `~/.git-agent/run/gitagentd.sock`, in a 0700 folder with its lock file;
//! - the per-project metadata root: `~/.git-agent/`;
//! - the configuration file: `${XDG_CONFIG_HOME:-~/.config}/git-agent/config.json`;
//! - daemon logs: `${XDG_STATE_HOME:-~/.local/state}/git-agent/logs/`.

use crate::environment::{Environment, MissingHome, vars};
use std::path::PathBuf;

const APP_DIR: &str = "git-agent";
const METADATA_DIR: &str = ".git-agent";

/// The folder that holds the daemon socket and its lock.
pub fn runtime_dir(env: &Environment) -> Result<PathBuf, MissingHome> {
    match env.absolute_dir(vars::XDG_RUNTIME_DIR) {
        Some(dir) => Ok(dir.join(APP_DIR)),
        None => Ok(env.home()?.join(METADATA_DIR).join("run")),
    }
}

/// The daemon's listening socket.
pub fn socket_path(env: &Environment) -> Result<PathBuf, MissingHome> {
    Ok(runtime_dir(env)?.join("gitagentd.sock"))
}

/// The name of the address lock file, beside the socket it guards
/// (inherited sockets included).
pub const LOCK_FILE_NAME: &str = "gitagentd.lock";

/// The lock file that makes one daemon own the socket address.
pub fn lock_path(env: &Environment) -> Result<PathBuf, MissingHome> {
    Ok(runtime_dir(env)?.join(LOCK_FILE_NAME))
}

/// `~/.git-agent`, the root of per-project metadata.
pub fn metadata_root(env: &Environment) -> Result<PathBuf, MissingHome> {
    Ok(env.home()?.join(METADATA_DIR))
}

/// The global configuration file written by `git-agent config`.
pub fn config_file(env: &Environment) -> Result<PathBuf, MissingHome> {
    let base = match env.absolute_dir(vars::XDG_CONFIG_HOME) {
        Some(dir) => dir,
        None => env.home()?.join(".config"),
    };
    Ok(base.join(APP_DIR).join("config.json"))
}

/// Where downloaded local embedding models live, one folder per model and
/// revision.
pub fn models_dir(env: &Environment) -> Result<PathBuf, MissingHome> {
    let base = match env.absolute_dir(vars::XDG_CACHE_HOME) {
        Some(dir) => dir,
        None => env.home()?.join(".cache"),
    };
    Ok(base.join(APP_DIR).join("models"))
}

/// The state directory for daemon logs and other per-user state.
pub fn state_dir(env: &Environment) -> Result<PathBuf, MissingHome> {
    let base = match env.absolute_dir(vars::XDG_STATE_HOME) {
        Some(dir) => dir,
        None => env.home()?.join(".local").join("state"),
    };
    Ok(base.join(APP_DIR))
}

/// The daemon's log folder.
pub fn log_dir(env: &Environment) -> Result<PathBuf, MissingHome> {
    Ok(state_dir(env)?.join("logs"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
    }

    #[test]
    fn socket_prefers_xdg_runtime_dir() {
        let env = env(&[("HOME", "/home/a"), ("XDG_RUNTIME_DIR", "/run/user/1")]);
        assert_eq!(socket_path(&env).unwrap(), PathBuf::from("/run/user/1/git-agent/gitagentd.sock"));
    }

    #[test]
    fn socket_falls_back_to_home() {
        let env = env(&[("HOME", "/home/a"), ("XDG_RUNTIME_DIR", "relative")]);
        assert_eq!(socket_path(&env).unwrap(), PathBuf::from("/home/a/.git-agent/run/gitagentd.sock"));
    }

    #[test]
    fn config_file_follows_xdg_config_home() {
        let env = env(&[("HOME", "/home/a")]);
        assert_eq!(config_file(&env).unwrap(), PathBuf::from("/home/a/.config/git-agent/config.json"));
        let env = self::env(&[("HOME", "/home/a"), ("XDG_CONFIG_HOME", "/cfg")]);
        assert_eq!(config_file(&env).unwrap(), PathBuf::from("/cfg/git-agent/config.json"));
    }

    #[test]
    fn missing_home_is_an_error() {
        assert!(metadata_root(&Environment::default()).is_err());
    }
}

//! Captures what the daemon needs to act as if it were the caller: the
//! working directory after `--cwd`, the forwarded environment, and whether
//! stdout and stderr are terminals.

use git_agent_shared::environment::{Environment, vars};
use gitagent_proto::v1 as pb;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum InvocationError {
    #[error("cannot determine the current directory: {0}")]
    CurrentDir(std::io::Error),
    #[error(
        "cannot change to the directory {path}: {source}\nhint: --cwd takes an existing directory, relative to where git-agent runs"
    )]
    Cwd { path: PathBuf, source: std::io::Error },
    #[error("the argument {0:?} is not valid UTF-8")]
    NotUtf8(OsString),
}

/// Applies `--cwd` and captures the invocation for `argv`.
pub fn capture(argv: &[OsString], cwd_flag: Option<&str>) -> Result<pb::Invocation, InvocationError> {
    let mut env = Environment::capture(
        std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?))),
    );
    let cwd = match cwd_flag {
        Some(target) => {
            let original = logical_cwd(&env)?;
            let target = original.join(target);
            std::env::set_current_dir(&target)
                .map_err(|source| InvocationError::Cwd { path: target.clone(), source })?;
            std::env::current_dir().map_err(InvocationError::CurrentDir)?
        }
        None => logical_cwd(&env)?,
    };
    // The directory goes as its bytes; `PWD` (text) names it only when it
    // is UTF-8, and is dropped otherwise rather than name another folder.
    let mut vars = env.into_vars();
    match cwd.to_str() {
        Some(text) => vars.insert(vars::PWD.to_string(), text.to_string()),
        None => vars.remove(vars::PWD),
    };
    env = Environment::new(vars);
    let args = command_args(argv)?;
    Ok(pb::Invocation {
        cwd: cwd.as_os_str().as_bytes().to_vec(),
        args,
        env: env.into_vars().into_iter().collect(),
        stdout_is_terminal: std::io::stdout().is_terminal(),
        stderr_is_terminal: std::io::stderr().is_terminal(),
        client_pid: std::process::id(),
        client_build: git_agent_shared::build::build_id().to_string(),
    })
}

/// The current directory as the shell names it: `$PWD` when it is
/// absolute and is the current directory, otherwise the physical path.
fn logical_cwd(env: &Environment) -> Result<PathBuf, InvocationError> {
    let physical = std::env::current_dir().map_err(InvocationError::CurrentDir)?;
    if let Some(pwd) = env.get(vars::PWD).map(Path::new).filter(|pwd| pwd.is_absolute())
        && same_file(pwd, Path::new("."))
    {
        return Ok(pwd.to_path_buf());
    }
    Ok(physical)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The arguments after the program name and the global `--cwd` option.
fn command_args(argv: &[OsString]) -> Result<Vec<String>, InvocationError> {
    let mut rest = argv.iter().skip(1).peekable();
    if let Some(first) = rest.peek() {
        if *first == "--cwd" {
            rest.next();
            rest.next();
        } else if first.to_str().is_some_and(|first| first.starts_with("--cwd=")) {
            rest.next();
        }
    }
    rest.map(|arg| arg.clone().into_string().map_err(InvocationError::NotUtf8)).collect()
}

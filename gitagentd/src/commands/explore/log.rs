//! `explore.log`: one disposition line per sealed batch item, appended by
//! the batch leader before provider execution, under
//! `${XDG_STATE_HOME:-~/.local/state}/git-agent/<project_id>/`. The
//! folders are 0700, the log and its lock 0600; appends from concurrent
//! batches serialize on the lock so records never interleave. Query
//! text is never written. Logging is best effort: a failure is returned
//! to the caller, which reports it on stderr and carries on.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a disposition could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot record the explore disposition in {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot lock {path}: {source}")]
    Lock { path: PathBuf, source: nix::Error },
}

/// One sealed batch, as the log records it.
#[derive(Debug, Clone)]
pub struct Disposition<'a> {
    pub project_id: &'a str,
    pub workspace: &'a Path,
    pub batch: &'a str,
    pub items: &'a [String],
    /// The parent search of a follow-up branch; `None` for fresh searches
    /// and depth resets.
    pub parent: Option<&'a str>,
    pub depth: u32,
}

impl Disposition<'_> {
    /// The records, one line per item, all with the same timestamp.
    pub fn lines(&self, timestamp: &str) -> String {
        let mode = if self.items.len() > 1 { "batched" } else { "unbatched" };
        let workspace =
            serde_json::to_string(&git_agent_shared::quote::os_path_key(self.workspace)).unwrap_or_default();
        self.items
            .iter()
            .map(|item| {
                format!(
                    "{timestamp} mode={mode} branch={} project_id={} workspace={workspace} batch={} size={} item={item} parent={} depth={} query=[redacted]\n",
                    self.parent.is_some(),
                    self.project_id,
                    self.batch,
                    self.items.len(),
                    self.parent.unwrap_or(""),
                    self.depth,
                )
            })
            .collect()
    }
}

/// The log of one project under `state_dir` (`…/state/git-agent`).
pub fn path(state_dir: &Path, project_id: &str) -> PathBuf {
    state_dir.join(project_id).join("explore.log")
}

/// Appends `disposition` to the log at `log` under its lock. Blocking.
pub fn append(log: &Path, disposition: &Disposition<'_>) -> Result<(), LogError> {
    let io = |source| LogError::Io { path: log.to_path_buf(), source };
    let project_dir = log.parent().ok_or_else(|| io(std::io::Error::other("no parent folder")))?;
    for dir in [project_dir.parent(), Some(project_dir)].into_iter().flatten() {
        git_agent_shared::private_fs::ensure_private_dir(dir).map_err(io)?;
    }
    let lock_path = log.with_file_name("explore.log.lock");
    let lock_file = open_private(&lock_path, false).map_err(io)?;
    let _lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, source)| LogError::Lock { path: lock_path.clone(), source })?;
    let timestamp = git_agent_shared::timefmt::format_rfc3339(jiff::Timestamp::now());
    let mut file = open_private(log, true).map_err(io)?;
    file.write_all(disposition.lines(&timestamp).as_bytes()).map_err(io)?;
    file.sync_data().map_err(io)
}

/// Opens (creating) an owner-only file, for appending or as a lock.
fn open_private(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    let file = OpenOptions::new().create(true).append(append).write(!append).truncate(false).mode(0o600).open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn lines_follow_the_record_format_without_the_query() {
        let items = vec!["AAAA".to_string(), "BBBB".to_string()];
        let disposition = Disposition {
            project_id: "p",
            workspace: Path::new("/work/a \"b\""),
            batch: "AAAA",
            items: &items,
            parent: None,
            depth: 0,
        };
        assert_eq!(
            disposition.lines("2026-01-02T03:04:05Z"),
            "2026-01-02T03:04:05Z mode=batched branch=false project_id=p workspace=\"/work/a \\\"b\\\"\" batch=AAAA size=2 item=AAAA parent= depth=0 query=[redacted]\n\
             2026-01-02T03:04:05Z mode=batched branch=false project_id=p workspace=\"/work/a \\\"b\\\"\" batch=AAAA size=2 item=BBBB parent= depth=0 query=[redacted]\n"
        );
        let one = vec!["CCCC".to_string()];
        let branch = Disposition { items: &one, parent: Some("PPPP"), depth: 2, ..disposition };
        assert!(branch.lines("t").starts_with("t mode=unbatched branch=true "));
        assert!(branch.lines("t").contains(" parent=PPPP depth=2 "));
    }

    #[test]
    fn appends_are_owner_only_and_accumulate() {
        let state = tempfile::tempdir().unwrap();
        let log = path(&state.path().join("git-agent"), "abc");
        let items = vec!["AAAA".to_string()];
        let disposition = Disposition {
            project_id: "abc",
            workspace: Path::new("/w"),
            batch: "AAAA",
            items: &items,
            parent: None,
            depth: 0,
        };
        append(&log, &disposition).unwrap();
        append(&log, &disposition).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
        for (path, mode) in [
            (log.clone(), 0o600),
            (log.with_file_name("explore.log.lock"), 0o600),
            (log.parent().unwrap().to_path_buf(), 0o700),
            (state.path().join("git-agent"), 0o700),
        ] {
            assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, mode, "{}", path.display());
        }
    }
}

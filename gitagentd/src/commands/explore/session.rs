//! Explore sessions: what a successful explore item leaves behind so that
//! `--follow-up <id>` can continue it. One owner-only JSON file per item
//! under the project's metadata folder
//! (`~/.git-agent/<project_id>/explore/sessions/<id>.json`, folders 0700,
//! files 0600, written atomically), holding the item's findings, its
//! parent and follow-up depth, the workspace it explored, the target that
//! chose its system prompt and the active one, the prompt-cache key of its
//! lineage, and the replayable conversation. A session is written once
//! and never changed, so simultaneous follow-ups of one parent become
//! independent siblings. Reading refuses what a follow-up must not use:
//! another workspace, a malformed or foreign file, a session without a
//! cache key or history.

use super::answer::Finding;
use git_agent_shared::cli::ExploreTarget;
use git_agent_shared::task_record::{MAX_FOLLOW_UP_DEPTH, TaskId};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The format of the session files this version writes and reads.
pub const SESSION_VERSION: u32 = 4;

/// The largest session file read back; a bigger one is refused rather
/// than loaded whole.
const MAX_SESSION_BYTES: u64 = 16 << 20;

/// One item of an exploration chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub version: u32,
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent_id: String,
    pub depth: u32,
    /// The cleaned absolute exploration root that created it.
    pub workspace: String,
    pub prompt_cache_key: String,
    /// The target whose system prompt the conversation carries; `None`
    /// is the universal prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction_target: Option<ExploreTarget>,
    /// The target the last question was asked under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_target: Option<ExploreTarget>,
    /// The item's own findings, as printed.
    pub items: Vec<Finding>,
    /// The provider-visible conversation, answers included, in the
    /// provider adapter's record form.
    pub history: Vec<serde_json::Value>,
}

/// Why a session cannot be read, written or followed up.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("invalid explore search ID {id:?}\nhint: pass the \"id\" of an earlier git-agent explore result")]
    InvalidId { id: String },
    #[error(
        "unknown explore search ID {id}: no session of that ID in this project\nhint: run git-agent explore without --follow-up"
    )]
    Unknown { id: String },
    #[error(
        "explore search ID {id} belongs to workspace {parent}, not {current}\nhint: run the follow-up from {parent}, or start a new git-agent explore here"
    )]
    OtherWorkspace { id: String, parent: String, current: String },
    #[error(
        "explore search ID {id} is not follow-up eligible: {reason}\nhint: run git-agent explore without --follow-up"
    )]
    NotEligible { id: String, reason: String },
    #[error("cannot read the explore session {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write the explore session {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// The sessions of one project.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// The store under a project's metadata folder (`~/.git-agent/<id>`).
    pub fn new(metadata_dir: &Path) -> Self {
        Self { dir: metadata_dir.join("explore").join("sessions") }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The session `id`, checked for follow-up use from `workspace`.
    /// Blocking.
    pub fn read_for_follow_up(&self, id: &str, workspace: &Path) -> Result<Session, SessionError> {
        if TaskId::parse(id).is_err() {
            return Err(SessionError::InvalidId { id: id.to_string() });
        }
        let path = self.path(id);
        let bytes = match read_bounded(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::Unknown { id: id.to_string() });
            }
            Err(source) => return Err(SessionError::Read { path, source }),
        };
        let not_eligible = |reason: &str| SessionError::NotEligible { id: id.to_string(), reason: reason.into() };
        let session: Session = serde_json::from_slice(&bytes)
            .map_err(|error| not_eligible(&format!("its session file does not parse ({error})")))?;
        if let Some(reason) = session.defect(id) {
            return Err(not_eligible(reason));
        }
        let current = workspace.display().to_string();
        if session.workspace != current {
            return Err(SessionError::OtherWorkspace { id: id.to_string(), parent: session.workspace, current });
        }
        Ok(session)
    }

    /// Writes new sessions, each atomically and owner-only. Blocking.
    pub fn create(&self, sessions: &[Session]) -> Result<(), SessionError> {
        let write_error = |path: &Path, source| SessionError::Write { path: path.to_path_buf(), source };
        for dir in [self.dir.parent(), Some(self.dir.as_path())].into_iter().flatten() {
            git_agent_shared::private_fs::ensure_private_dir(dir).map_err(|source| write_error(dir, source))?;
        }
        for session in sessions {
            let path = self.path(&session.id);
            let bytes = serde_json::to_vec(session).map_err(|error| write_error(&path, error.into()))?;
            git_agent_shared::private_fs::write_atomic(&path, &bytes).map_err(|source| write_error(&path, source))?;
        }
        Ok(())
    }
}

impl Session {
    /// What makes a stored session unusable, if anything.
    fn defect(&self, id: &str) -> Option<&'static str> {
        if self.version != SESSION_VERSION {
            return Some("it was written by another version of git-agent");
        }
        if self.id != id {
            return Some("its session file names another ID");
        }
        if self.workspace.trim().is_empty() {
            return Some("it records no workspace");
        }
        if self.prompt_cache_key.trim().is_empty() {
            return Some("it records no prompt-cache key");
        }
        if self.depth > MAX_FOLLOW_UP_DEPTH || (self.depth == 0) != self.parent_id.is_empty() {
            return Some("its follow-up depth and parent disagree");
        }
        if self.history.is_empty() || crate::provider::items_from_json(&self.history).is_none() {
            return Some("it has no replayable conversation");
        }
        if self.items.is_empty() {
            return Some("it has no findings");
        }
        None
    }

    /// Whether a follow-up may still continue this conversation; at the
    /// depth limit a follow-up starts over instead.
    pub fn can_continue(&self) -> bool {
        self.depth < MAX_FOLLOW_UP_DEPTH
    }
}

fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_SESSION_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SESSION_BYTES {
        return Err(std::io::Error::other(format!("the file is larger than {MAX_SESSION_BYTES} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    const ID: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

    fn session(depth: u32) -> Session {
        Session {
            version: SESSION_VERSION,
            id: ID.into(),
            parent_id: if depth == 0 { String::new() } else { "BCDEFGHIJKLMNOPQRSTUVWXYZA".into() },
            depth,
            workspace: "/work/app".into(),
            prompt_cache_key: "key".into(),
            instruction_target: None,
            active_target: Some(ExploreTarget::Owner),
            items: vec![Finding { description: "d".into(), references: vec!["a.rs".into()] }],
            history: crate::provider::items_to_json(&[crate::provider::Item::user("q")]),
        }
    }

    #[test]
    fn sessions_round_trip_owner_only_and_stay_in_their_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(&dir.path().join("project"));
        store.create(&[session(1)]).unwrap();
        let read = store.read_for_follow_up(ID, Path::new("/work/app")).unwrap();
        assert_eq!(read, session(1));
        let file = dir.path().join("project/explore/sessions").join(format!("{ID}.json"));
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(file.parent().unwrap()).unwrap().mode() & 0o777, 0o700);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("instruction_target"), "the universal target is left out: {text}");

        let error = store.read_for_follow_up(ID, Path::new("/work/other")).unwrap_err();
        assert!(matches!(error, SessionError::OtherWorkspace { .. }), "{error}");
        let error = store.read_for_follow_up("BCDEFGHIJKLMNOPQRSTUVWXYZA", Path::new("/work/app")).unwrap_err();
        assert!(matches!(error, SessionError::Unknown { .. }), "{error}");
        let error = store.read_for_follow_up("nope", Path::new("/work/app")).unwrap_err();
        assert!(matches!(error, SessionError::InvalidId { .. }), "{error}");
    }

    #[test]
    fn incomplete_sessions_are_not_follow_up_eligible() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let broken = [
            Session { prompt_cache_key: String::new(), ..session(0) },
            Session { workspace: String::new(), ..session(0) },
            Session { history: Vec::new(), ..session(0) },
            Session { version: 3, ..session(0) },
            Session { parent_id: String::new(), ..session(2) },
            Session { depth: 4, ..session(1) },
        ];
        for session in broken {
            store.create(std::slice::from_ref(&session)).unwrap();
            let error = store.read_for_follow_up(ID, Path::new("/work/app")).unwrap_err();
            assert!(matches!(error, SessionError::NotEligible { .. }), "{session:?}: {error}");
        }
        std::fs::write(store.path(ID), "{").unwrap();
        assert!(matches!(store.read_for_follow_up(ID, Path::new("/work/app")), Err(SessionError::NotEligible { .. })));
        assert!(session(2).can_continue() && !session(3).can_continue());
    }
}

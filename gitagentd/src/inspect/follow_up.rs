//! `--follow-up <turn-id>`: finding the parent turn of a new detached
//! inspection and deciding its lineage. A parent must be a successful
//! provider-backed task of the same command whose record carries the
//! replayable turn ([`TurnMetadata`]); its workspace is checked once the
//! new scope is prepared. Three context-preserving follow-ups keep the
//! parent's cache key and turn state; the next one resets the lineage
//! (depth zero, no parent, a new cache key, no turn state) while still
//! inheriting the whole input and report. The parent record is only
//! read, so simultaneous follow-ups become independent siblings.

use super::engine::{FollowUp, lineage_cache_key};
use super::prepare::Mode;
use crate::provider;
use git_agent_shared::cli::Depth;
use git_agent_shared::task_record::{
    self, MAX_FOLLOW_UP_DEPTH, RecordError, TaskCommand, TaskId, TurnLeaf, TurnMetadata,
};
use serde_json::Value;
use std::path::Path;

/// Why a task cannot be followed up.
#[derive(Debug, thiserror::Error)]
pub enum FollowUpError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(
        "task {id} was created by `git-agent {actual}`, not `git-agent {wanted}`\nhint: follow it up with `git-agent {actual} --follow-up {id} <prompt>`"
    )]
    OtherCommand { id: String, actual: String, wanted: &'static str },
    #[error(
        "task {id} has not finished successfully, so it has no report to follow up\nhint: check it with `git-agent {command} --wait {id}`"
    )]
    NotSucceeded { id: String, command: &'static str },
    #[error(
        "task {id} is not follow-up eligible: its record has no replayable turn (it was a dry run or was written by an older git-agent)\nhint: start a new `git-agent {command}`"
    )]
    NotEligible { id: String, command: &'static str },
    #[error(
        "task {id} has {leaves} branch leaves; continuing a branched task is not supported yet\nhint: start a new `git-agent {command}`"
    )]
    Branched { id: String, leaves: usize, command: &'static str },
    #[error("task {id} inspected another workspace ({parent}), not {current}\nhint: run the follow-up from {parent}")]
    OtherWorkspace { id: String, parent: String, current: String },
}

/// A parent turn that a follow-up may continue.
#[derive(Debug, Clone)]
pub struct ParentTurn {
    pub id: TaskId,
    pub turn: TurnMetadata,
    pub report: Value,
    pub mode: Mode,
    pub depth: Depth,
}

/// The lineage of a new turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// The parent of a context-preserving follow-up.
    pub parent_id: Option<String>,
    pub depth: u32,
    pub prompt_cache_key: String,
    pub turn_state: Option<String>,
}

impl Lineage {
    /// The lineage an initial launch of `task_id` starts.
    pub fn initial(command: TaskCommand, task_id: &str) -> Self {
        Self { parent_id: None, depth: 0, prompt_cache_key: lineage_cache_key(command, task_id), turn_state: None }
    }
}

/// Reads and checks the parent record `id` under the project's store.
/// Blocking: call it from the blocking pool.
pub fn find_parent(
    metadata_root: &Path,
    project_id: &str,
    command: TaskCommand,
    id: &str,
) -> Result<ParentTurn, FollowUpError> {
    let id = TaskId::parse(id)?;
    let path = task_record::record_path(metadata_root, project_id, &id);
    let path = if path.exists() { path } else { task_record::find_record(metadata_root, &id)? };
    let record = task_record::read_record(&path, &id)?;
    let wanted = command.as_str();
    if record.command != wanted {
        return Err(FollowUpError::OtherCommand { id: id.to_string(), actual: record.command, wanted });
    }
    let terminal = record.terminal.as_ref().filter(|terminal| terminal.kind == "final");
    let Some(report) = terminal.and_then(|terminal| terminal.value.get("text")).cloned() else {
        return Err(FollowUpError::NotSucceeded { id: id.to_string(), command: wanted });
    };
    let not_eligible = || FollowUpError::NotEligible { id: id.to_string(), command: wanted };
    let turn: TurnMetadata =
        record.turn.clone().and_then(|turn| serde_json::from_value(turn).ok()).ok_or_else(not_eligible)?;
    if !turn.follow_up_eligible() {
        return Err(not_eligible());
    }
    if turn.leaves.len() > 1 {
        return Err(FollowUpError::Branched { id: id.to_string(), leaves: turn.leaves.len(), command: wanted });
    }
    let mode = match turn.mode.as_str() {
        "uncommitted" => Mode::Uncommitted,
        "staged" => Mode::Staged,
        "codebase" => Mode::Codebase,
        _ => return Err(not_eligible()),
    };
    let depth = match turn.review_depth.as_str() {
        "fast" => Depth::Fast,
        "balanced" => Depth::Balanced,
        "thorough" => Depth::Thorough,
        _ => return Err(not_eligible()),
    };
    if provider::items_from_json(&replay_input(&turn, &turn.leaves[0])).is_none() {
        return Err(not_eligible());
    }
    Ok(ParentTurn { id, turn, report, mode, depth })
}

impl ParentTurn {
    /// The lineage of a follow-up allocated `new_id`: context-preserving
    /// below the depth limit, a reset at it.
    pub fn lineage(&self, command: TaskCommand, new_id: &str) -> Lineage {
        if self.turn.depth < MAX_FOLLOW_UP_DEPTH {
            let state = &self.leaf().turn_state;
            Lineage {
                parent_id: Some(self.id.to_string()),
                depth: self.turn.depth + 1,
                prompt_cache_key: self.turn.prompt_cache_key.clone(),
                turn_state: (!state.is_empty()).then(|| state.clone()),
            }
        } else {
            Lineage::initial(command, new_id)
        }
    }

    /// Refuses a follow-up from another workspace than the parent's.
    pub fn check_workspace(&self, current: &Path) -> Result<(), FollowUpError> {
        let current = current.display().to_string();
        if current == self.turn.workspace {
            return Ok(());
        }
        Err(FollowUpError::OtherWorkspace { id: self.id.to_string(), parent: self.turn.workspace.clone(), current })
    }

    /// The model and reasoning effort the parent's leaf used.
    pub fn model(&self) -> &str {
        &self.leaf().model
    }

    pub fn reasoning_effort(&self) -> Option<&'static str> {
        ["low", "medium", "high", "xhigh"].into_iter().find(|effort| *effort == self.leaf().reasoning_effort)
    }

    /// What the engine continues: the parent's whole conversation, its
    /// report and the new prompt.
    pub fn follow_up(&self, prompt: String, lineage: &Lineage) -> FollowUp {
        let history = provider::items_from_json(&replay_input(&self.turn, self.leaf())).unwrap_or_default();
        FollowUp { history, previous_report: self.report.clone(), prompt, turn_state: lineage.turn_state.clone() }
    }

    fn leaf(&self) -> &TurnLeaf {
        &self.turn.leaves[0]
    }
}

/// A leaf's complete input: the common prefix, then its own suffix.
fn replay_input(turn: &TurnMetadata, leaf: &TurnLeaf) -> Vec<Value> {
    turn.input.iter().chain(&leaf.input).cloned().collect()
}

/// The turn a successful provider-backed inspection records.
pub struct TurnRecord<'a> {
    pub lineage: &'a Lineage,
    pub mode: Mode,
    pub workspace: &'a Path,
    pub depth: Depth,
    pub model: &'a str,
    pub reasoning_effort: &'a str,
    pub turn_state: Option<String>,
    pub conversation: Vec<Value>,
}

impl TurnRecord<'_> {
    /// The record's `turn`: one leaf, its whole conversation stored as the
    /// common prefix.
    pub fn metadata(self) -> TurnMetadata {
        TurnMetadata {
            parent_id: self.lineage.parent_id.clone().unwrap_or_default(),
            mode: self.mode.as_str().into(),
            workspace: self.workspace.display().to_string(),
            review_depth: self.depth.as_str().into(),
            depth: self.lineage.depth,
            prompt_cache_key: self.lineage.prompt_cache_key.clone(),
            input: self.conversation,
            leaves: vec![TurnLeaf {
                scope: String::new(),
                model: self.model.into(),
                reasoning_effort: self.reasoning_effort.into(),
                turn_state: self.turn_state.unwrap_or_default(),
                input: Vec::new(),
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use git_agent_shared::task_record::{Record, TerminalEvent};

    const PARENT: &str = "CDEFGHIJKLMNOPQRSTUVWXYZAB";

    fn store(root: &Path, version: u32, turn: Option<Value>) {
        let id = TaskId::parse(PARENT).unwrap();
        let mut value = serde_json::Map::new();
        value.insert("text".into(), serde_json::json!({"summary": "ok", "recommendation": "APPROVE", "findings": []}));
        let terminal = TerminalEvent { seq: 1, at: "2026-01-02T03:04:05Z".into(), kind: "final".into(), value };
        let mut record = Record::running(&id, TaskCommand::Review, 7, jiff::Timestamp::now());
        record = record.complete(terminal, None, jiff::Timestamp::now());
        record.version = version;
        record.turn = turn;
        task_record::write_record(&task_record::record_path(root, "project", &id), &record).unwrap();
    }

    fn eligible_turn(depth: u32) -> TurnMetadata {
        TurnMetadata {
            mode: "staged".into(),
            workspace: "/work/repo".into(),
            review_depth: "thorough".into(),
            depth,
            prompt_cache_key: "key".into(),
            input: vec![
                serde_json::json!({"type":"message","role":"user","content":[{"type":"input_text","text":"task"}]}),
            ],
            leaves: vec![TurnLeaf {
                model: "m".into(),
                reasoning_effort: "high".into(),
                turn_state: "s".into(),
                ..TurnLeaf::default()
            }],
            ..TurnMetadata::default()
        }
    }

    #[test]
    fn older_records_and_incomplete_turns_are_not_follow_up_eligible() {
        let dir = tempfile::tempdir().unwrap();
        let find = || find_parent(dir.path(), "project", TaskCommand::Review, PARENT);
        store(dir.path(), 2, None);
        assert!(matches!(find(), Err(FollowUpError::NotEligible { .. })), "a version 2 record");
        let mut turn = eligible_turn(0);
        turn.workspace.clear();
        store(dir.path(), 3, Some(serde_json::to_value(&turn).unwrap()));
        let error = find().unwrap_err();
        assert!(error.to_string().contains("not follow-up eligible") && error.to_string().contains("hint:"), "{error}");
        store(dir.path(), 4, Some(serde_json::to_value(eligible_turn(0)).unwrap()));
        let parent = find().unwrap();
        assert_eq!(
            (parent.mode, parent.depth, parent.reasoning_effort()),
            (Mode::Staged, Depth::Thorough, Some("high"))
        );
        let error = find_parent(dir.path(), "project", TaskCommand::Simplify, PARENT).unwrap_err();
        assert!(matches!(error, FollowUpError::OtherCommand { .. }), "{error}");
    }

    #[test]
    fn the_lineage_is_kept_for_three_follow_ups_then_reset() {
        let dir = tempfile::tempdir().unwrap();
        for depth in 0..=MAX_FOLLOW_UP_DEPTH {
            store(dir.path(), 4, Some(serde_json::to_value(eligible_turn(depth)).unwrap()));
            let parent = find_parent(dir.path(), "project", TaskCommand::Review, PARENT).unwrap();
            let lineage = parent.lineage(TaskCommand::Review, "NEWIDNEWIDNEWIDNEWIDNEWIDN");
            if depth < MAX_FOLLOW_UP_DEPTH {
                assert_eq!(lineage.parent_id.as_deref(), Some(PARENT));
                assert_eq!((lineage.depth, lineage.prompt_cache_key.as_str()), (depth + 1, "key"));
                assert_eq!(lineage.turn_state.as_deref(), Some("s"));
            } else {
                assert_eq!(lineage, Lineage::initial(TaskCommand::Review, "NEWIDNEWIDNEWIDNEWIDNEWIDN"));
                assert_eq!(lineage.turn_state, None);
            }
            let follow_up = parent.follow_up("again".into(), &lineage);
            assert_eq!(follow_up.history.len(), 1, "the whole input is inherited either way");
        }
    }
}

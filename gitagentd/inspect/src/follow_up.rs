//! `--follow-up <turn-id>`: finding the parent turn of a new detached
//! inspection and deciding its lineage. A parent must be a successful
//! provider-backed task of the same command whose record carries the
//! replayable turn ([`TurnMetadata`]); its workspace is checked once the
//! new scope is prepared. Three context-preserving follow-ups keep the
//! parent's cache key and turn state; the next one resets the lineage
//! (depth zero, no parent, a new cache key, no turn state) while still
//! inheriting the whole input and report. The parent record is only
//! read, so simultaneous follow-ups become independent siblings. A
//! branched parent is continued leaf by leaf: every terminal leaf becomes
//! a root of the new inspection with its own model, effort and turn
//! state. A `--base` or `--commit` parent keeps its revision, so the
//! follow-up prepares the same kind of range (with a fingerprint of its
//! own).

use super::engine::{FollowUp, FollowUpRoot, LeafTurn, lineage_cache_key};
use super::prepare::Mode;
use git_agent_shared::cli::Depth;
use git_agent_shared::task_record::{
    self, MAX_FOLLOW_UP_DEPTH, RecordError, TaskCommand, TaskId, TurnLeaf, TurnMetadata,
};
use gitagent_provider as provider;
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
    /// The `--base` ref or `--commit` commit of a range parent.
    pub revision: Option<String>,
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
        record.turn_metadata().cloned().and_then(|turn| serde_json::from_value(turn).ok()).ok_or_else(not_eligible)?;
    if !turn.follow_up_eligible() {
        return Err(not_eligible());
    }
    let mode = match turn.mode.as_str() {
        "uncommitted" => Mode::Uncommitted,
        "staged" => Mode::Staged,
        "codebase" => Mode::Codebase,
        "base" => Mode::Base,
        "commit" => Mode::Commit,
        _ => return Err(not_eligible()),
    };
    let revision = (!turn.revision.is_empty()).then(|| turn.revision.clone());
    if mode.is_commit_range() != revision.is_some() {
        return Err(not_eligible());
    }
    let depth = match turn.review_depth.as_str() {
        "fast" => Depth::Fast,
        "balanced" => Depth::Balanced,
        "thorough" => Depth::Thorough,
        _ => return Err(not_eligible()),
    };
    if turn.leaves.iter().any(|leaf| provider::items_from_json(&replay_input(&turn, leaf)).is_none()) {
        return Err(not_eligible());
    }
    Ok(ParentTurn { id, turn, report, mode, revision, depth })
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
        let current = git_agent_shared::quote::os_path_key(current).into_owned();
        if current == self.turn.workspace {
            return Ok(());
        }
        Err(FollowUpError::OtherWorkspace { id: self.id.to_string(), parent: self.turn.workspace.clone(), current })
    }

    /// The model and reasoning effort the parent's (first) leaf used: the
    /// task's own, for its record and hooks.
    pub fn model(&self) -> &str {
        &self.turn.leaves[0].model
    }

    pub fn reasoning_effort(&self) -> Option<&'static str> {
        effort(&self.turn.leaves[0].reasoning_effort)
    }

    /// What the engine continues: every leaf's whole conversation, the
    /// (merged) report and the new prompt. Each leaf keeps its turn state
    /// only in a context-preserving turn.
    pub fn follow_up(&self, prompt: String, lineage: &Lineage) -> FollowUp {
        let preserving = lineage.parent_id.is_some();
        let roots = self
            .turn
            .leaves
            .iter()
            .map(|leaf| FollowUpRoot {
                scope: leaf.scope.clone(),
                model: leaf.model.clone(),
                reasoning_effort: leaf.reasoning_effort.clone(),
                history: provider::items_from_json(&replay_input(&self.turn, leaf)).unwrap_or_default(),
                turn_state: (preserving && !leaf.turn_state.is_empty()).then(|| leaf.turn_state.clone()),
            })
            .collect();
        FollowUp { roots, previous_report: self.report.clone(), prompt }
    }

    fn leaf(&self) -> &TurnLeaf {
        &self.turn.leaves[0]
    }
}

fn effort(text: &str) -> Option<&'static str> {
    ["low", "medium", "high", "xhigh"].into_iter().find(|effort| *effort == text)
}

/// A leaf's complete input: the common prefix, then its own suffix.
fn replay_input(turn: &TurnMetadata, leaf: &TurnLeaf) -> Vec<Value> {
    turn.input.iter().chain(&leaf.input).cloned().collect()
}

/// The turn a successful provider-backed inspection records.
pub struct TurnRecord<'a> {
    pub lineage: &'a Lineage,
    pub mode: Mode,
    /// The revision a range mode compares (see [`TurnMetadata::revision`]).
    pub revision: Option<String>,
    pub workspace: &'a Path,
    pub depth: Depth,
    pub leaves: Vec<LeafTurn>,
}

impl TurnRecord<'_> {
    /// The record's `turn`: the input every leaf shares stored once, then
    /// each leaf's own suffix.
    pub fn metadata(self) -> TurnMetadata {
        let shared = common_prefix(&self.leaves);
        let input = self.leaves.first().map(|leaf| leaf.conversation[..shared].to_vec()).unwrap_or_default();
        TurnMetadata {
            parent_id: self.lineage.parent_id.clone().unwrap_or_default(),
            mode: self.mode.as_str().into(),
            revision: self.revision.unwrap_or_default(),
            workspace: git_agent_shared::quote::os_path_key(self.workspace).into_owned(),
            review_depth: self.depth.as_str().into(),
            depth: self.lineage.depth,
            prompt_cache_key: self.lineage.prompt_cache_key.clone(),
            input,
            leaves: self
                .leaves
                .into_iter()
                .map(|leaf| TurnLeaf {
                    scope: leaf.scope,
                    model: leaf.model,
                    reasoning_effort: leaf.reasoning_effort,
                    turn_state: leaf.turn_state.unwrap_or_default(),
                    input: leaf.conversation[shared..].to_vec(),
                })
                .collect(),
        }
    }
}

/// How many leading items every leaf's conversation shares. A single
/// leaf shares all of it, so its whole conversation is the prefix.
fn common_prefix(leaves: &[LeafTurn]) -> usize {
    let Some((first, rest)) = leaves.split_first() else { return 0 };
    rest.iter().fold(first.conversation.len(), |shared, leaf| {
        first.conversation.iter().zip(&leaf.conversation).take(shared).take_while(|(a, b)| a == b).count()
    })
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

    /// Stores the record this build writes: version 3, the whole turn in
    /// the final event's value.
    fn store_as_written(root: &Path, turn: &TurnMetadata) {
        let id = TaskId::parse(PARENT).unwrap();
        let mut value = serde_json::Map::new();
        value.insert("text".into(), serde_json::json!({"summary": "ok", "recommendation": "APPROVE", "findings": []}));
        let terminal = TerminalEvent { seq: 1, at: "2026-01-02T03:04:05Z".into(), kind: "final".into(), value };
        let mut record = Record::running(&id, TaskCommand::Review, 7, jiff::Timestamp::now());
        record.turn = Some(serde_json::to_value(turn).unwrap());
        let record = record.complete(terminal, None, jiff::Timestamp::now());
        assert_eq!(record.version, 3);
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

    fn message(text: &str) -> Value {
        serde_json::json!({"type":"message","role":"user","content":[{"type":"input_text","text":text}]})
    }

    fn leaf(scope: &str, conversation: Vec<Value>) -> LeafTurn {
        LeafTurn {
            scope: scope.into(),
            model: format!("model-{scope}"),
            reasoning_effort: "low".into(),
            turn_state: Some(format!("state-{scope}")),
            conversation,
        }
    }

    #[test]
    fn a_branched_turn_stores_its_shared_prefix_once_and_continues_every_leaf() {
        let dir = tempfile::tempdir().unwrap();
        let (task, fork) = (message("task"), message("fork"));
        let leaves = vec![
            leaf("a", vec![task.clone(), fork.clone(), message("a1"), message("a2")]),
            leaf("b", vec![task.clone(), fork.clone(), message("b1")]),
        ];
        let lineage = Lineage::initial(TaskCommand::Review, PARENT);
        let record = TurnRecord {
            lineage: &lineage,
            mode: Mode::Uncommitted,
            revision: None,
            workspace: Path::new("/work/repo"),
            depth: Depth::Thorough,
            leaves,
        };
        let turn = record.metadata();
        assert_eq!(turn.input, vec![task.clone(), fork.clone()], "the common prefix");
        assert_eq!(turn.leaves[0].input, vec![message("a1"), message("a2")]);
        assert_eq!(turn.leaves[1].input, vec![message("b1")]);
        assert_eq!((turn.leaves[1].scope.as_str(), turn.leaves[1].turn_state.as_str()), ("b", "state-b"));

        store(dir.path(), 4, Some(serde_json::to_value(&turn).unwrap()));
        let parent = find_parent(dir.path(), "project", TaskCommand::Review, PARENT).expect("a branched parent");
        let lineage = parent.lineage(TaskCommand::Review, "NEWIDNEWIDNEWIDNEWIDNEWIDN");
        let follow_up = parent.follow_up("again".into(), &lineage);
        let roots: Vec<(&str, &str, usize, Option<&str>)> = follow_up
            .roots
            .iter()
            .map(|root| (root.scope.as_str(), root.model.as_str(), root.history.len(), root.turn_state.as_deref()))
            .collect();
        assert_eq!(roots, [("a", "model-a", 4, Some("state-a")), ("b", "model-b", 3, Some("state-b"))]);

        let single = TurnRecord {
            lineage: &lineage,
            mode: Mode::Staged,
            revision: None,
            workspace: Path::new("/work/repo"),
            depth: Depth::Fast,
            leaves: vec![leaf("", vec![task.clone(), fork.clone()])],
        }
        .metadata();
        assert_eq!((single.input.len(), single.leaves[0].input.len()), (2, 0), "one leaf is all prefix");
    }

    #[test]
    fn range_parents_keep_their_revision() {
        let dir = tempfile::tempdir().unwrap();
        let mut turn = eligible_turn(0);
        turn.mode = "base".into();
        store(dir.path(), 4, Some(serde_json::to_value(&turn).unwrap()));
        let error = find_parent(dir.path(), "project", TaskCommand::Review, PARENT).unwrap_err();
        assert!(matches!(error, FollowUpError::NotEligible { .. }), "a range turn without its revision: {error}");
        turn.revision = "main".into();
        store(dir.path(), 4, Some(serde_json::to_value(&turn).unwrap()));
        let parent = find_parent(dir.path(), "project", TaskCommand::Review, PARENT).unwrap();
        assert_eq!((parent.mode, parent.revision.as_deref()), (Mode::Base, Some("main")));
        turn.mode = "commit".into();
        turn.revision = "0123456789abcdef0123456789abcdef01234567".into();
        store(dir.path(), 4, Some(serde_json::to_value(&turn).unwrap()));
        let parent = find_parent(dir.path(), "project", TaskCommand::Review, PARENT).unwrap();
        assert_eq!(parent.mode, Mode::Commit);
        turn.mode = "base".into();
        turn.revision = "main".into();
        store_as_written(dir.path(), &turn);
        let parent = find_parent(dir.path(), "project", TaskCommand::Review, PARENT).unwrap();
        assert_eq!((parent.mode, parent.revision.as_deref()), (Mode::Base, Some("main")), "a version 3 record");
        assert_eq!(parent.turn, turn);
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
            assert_eq!(follow_up.roots.len(), 1);
            assert_eq!(follow_up.roots[0].history.len(), 1, "the whole input is inherited either way");
            let state = follow_up.roots[0].turn_state.as_deref();
            assert_eq!(state, (depth < MAX_FOLLOW_UP_DEPTH).then_some("s"), "a reset inherits no turn state");
        }
    }
}

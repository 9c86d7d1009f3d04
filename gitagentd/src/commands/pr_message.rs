//! `git-agent pr-message`: the squash-merge message of the current branch
//! versus `origin/HEAD`. The prepared context (base, changed paths, diff
//! statistics, branch commits, recent mainline commits, bounded diff) is
//! computed before any model request; the model's answer goes through the
//! same shaping and validation as a commit message. Stdout is the message
//! only; a failure writes nothing to stdout.

use super::{CommandError, Invocation, Output, blocking};
use crate::git::range::{History, PrContext, PrLimits};
use crate::message::{self, MessageMode, ValidationContext, Violation};
use git_agent_shared::cli::{MessageArgs, PrMessageArgs};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

pub async fn run(
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: PrMessageArgs,
) -> Result<(), CommandError> {
    let started = Instant::now();
    let cwd = invocation.cwd.clone();
    let context = blocking::run(cancel, move |_| History::discover(&cwd)?.prepare_pr_context(PrLimits::default()))
        .await?
        .map_err(CommandError::failed)?;
    if args.generation.shared.debug {
        output.stderr(format!(
            "pr-message: prepared {} against {} ({} paths, {} branch commits, {} diff bytes{}) in {:.1?}\n",
            context.range,
            context.base_branch,
            context.changed_paths.len(),
            context.branch_commits.len() + context.branch_commits_omitted,
            context.diff.len(),
            if context.diff_truncated { ", truncated" } else { "" },
            started.elapsed()
        ));
    }
    let answer = generate_message(&context, &args.generation).await?;
    let message = finish_message(&answer, &context).map_err(|violations| {
        let list: Vec<String> = violations.iter().map(|violation| format!("- {violation}")).collect();
        CommandError::Failed(format!("the generated message failed validation:\n{}", list.join("\n")))
    })?;
    output.stdout(format!("{message}\n"));
    Ok(())
}

/// THE MODEL SEAM of `pr-message`: asks the model for the squash message
/// of `context` (the prompt is `context.render_for_prompt()`, only skill
/// tools are exposed) and returns its raw answer. It is not yet connected
/// to the agent loop (`crate::agent`), so it fails clearly instead of
/// pretending; `commands::commit_msg` shows the wiring it needs.
async fn generate_message(context: &PrContext, _generation: &MessageArgs) -> Result<String, CommandError> {
    Err(CommandError::Failed(format!(
        "pr-message cannot ask the model yet: its generation step is not connected in this build\nhint: the branch context was prepared ({} changed paths against {}); write the squash message by hand for now",
        context.changed_paths.len(),
        context.base_branch
    )))
}

/// Shapes the model's answer like a commit message, restores a task-ID
/// suffix the branch commits carry, and validates it as a squash message.
pub(crate) fn finish_message(answer: &str, context: &PrContext) -> Result<String, Vec<Violation>> {
    let shaped = message::shape(answer);
    let message = message::preserve_task_id_suffix(&shaped, &context.branch_subjects());
    let violations = message::validate(MessageMode::PullRequest, &message, &ValidationContext::default());
    if violations.is_empty() { Ok(message) } else { Err(violations) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::range::CommitSummary;

    fn commit(summary: &str) -> CommitSummary {
        CommitSummary { sha: "0".repeat(40), summary: summary.into(), author: "A".into(), date: String::new() }
    }

    fn context(branch_subjects: &[&str]) -> PrContext {
        PrContext {
            range: "origin/HEAD..HEAD".into(),
            base_ref: "origin/HEAD".into(),
            base_branch: "origin/main".into(),
            base: commit("chore: base"),
            merge_base: "1".repeat(40),
            head_sha: "2".repeat(40),
            branch: Some("feature".into()),
            changed_paths: vec!["src/lib.rs".into()],
            stats: vec![],
            branch_commits: branch_subjects.iter().map(|subject| commit(subject)).collect(),
            branch_commits_omitted: 0,
            recent_commits: vec![],
            diff: String::new(),
            diff_truncated: false,
        }
    }

    #[test]
    fn answers_are_shaped_and_keep_the_branch_task_id() {
        let answer = "feat: add two\n\nAdd the two helper that callers\nneeded for the second step.\n";
        let message = finish_message(answer, &context(&["feat: add two (T42)", "wip (T42)"])).unwrap();
        assert_eq!(message, "feat: add two (T42)\n\nAdd the two helper that callers needed for the second step.");
    }

    #[test]
    fn commentary_and_fences_fail_validation() {
        let violations = finish_message("Here is the message:\n```\nfeat: x\n```", &context(&[])).unwrap_err();
        assert!(violations.iter().any(|violation| violation.0.contains("code fence")), "{violations:?}");
        assert!(finish_message("", &context(&[])).is_err());
    }
}

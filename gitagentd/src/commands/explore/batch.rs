//! Explore batching in the daemon: independently launched `git-agent
//! explore` processes reach one daemon, and compatible questions (same
//! cleaned workspace, service tier and query target; follow-ups: same
//! parent) are sealed into batches of at most [`MAX_BATCH`] that share
//! one provider conversation.
//!
//! The first member of a key opens a batch and starts its batch task;
//! later members join it until it is full, which seals it at once, or
//! until the join grace passes. The batch task, not any member's request,
//! owns the conversation, so a member that disconnects (its cancellation
//! fires) is removed before sealing or simply stops waiting afterwards
//! without failing the others; the conversation is cancelled only when
//! every member has gone. Each member receives only its own result; a
//! failure of the batch fails every member with the same error.

use super::answer::Finding;
use git_agent_shared::cli::ExploreTarget;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The most questions one provider conversation answers.
pub const MAX_BATCH: usize = 3;

/// What makes questions compatible.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BatchKey {
    pub workspace: PathBuf,
    pub service_tier: Option<String>,
    pub target: Option<ExploreTarget>,
    pub parent: Option<String>,
}

/// What one member gets back: its own findings, or the batch's error.
pub type MemberResult = Result<Vec<Finding>, String>;

/// One question waiting in a batch.
pub struct Member<Q> {
    pub item_id: String,
    pub question: Q,
    /// Fires when the member's client goes away.
    pub gone: CancellationToken,
    result: oneshot::Sender<MemberResult>,
}

/// Runs a sealed batch: its members' questions in, findings by item ID
/// (or one error for all) out; cancelled through the token when every
/// member has gone.
pub type Runner<Q> = Box<
    dyn FnOnce(
            Vec<(String, Q)>,
            CancellationToken,
        ) -> Pin<Box<dyn Future<Output = Result<HashMap<String, Vec<Finding>>, String>> + Send>>
        + Send,
>;

struct Open<Q> {
    serial: u64,
    members: Vec<Member<Q>>,
    /// Hands the members to the batch task when the batch fills up.
    full: oneshot::Sender<Vec<Member<Q>>>,
}

/// The open batches of the daemon, by key.
pub struct Batcher<Q> {
    open: Mutex<HashMap<BatchKey, Open<Q>>>,
    serial: std::sync::atomic::AtomicU64,
}

impl<Q> Default for Batcher<Q> {
    fn default() -> Self {
        Self { open: Mutex::new(HashMap::new()), serial: Default::default() }
    }
}

impl<Q> std::fmt::Debug for Batcher<Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

/// How a member took part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Opened the batch; its runner runs the conversation.
    Leader,
    Follower,
}

impl<Q: Send + 'static> Batcher<Q> {
    /// Adds a question to the open batch of `key`, or opens one whose
    /// batch task waits up to `grace` for others and then runs `runner`
    /// (used only when this call opens the batch). Returns the member's
    /// role and where its result arrives.
    pub fn join(
        self: &Arc<Self>,
        key: BatchKey,
        item_id: String,
        question: Q,
        gone: CancellationToken,
        grace: Duration,
        runner: Runner<Q>,
    ) -> (Role, oneshot::Receiver<MemberResult>) {
        let (result, receiver) = oneshot::channel();
        let member = Member { item_id, question, gone: gone.clone(), result };
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(batch) = open.get_mut(&key) {
            batch.members.push(member);
            let serial = batch.serial;
            // A full batch leaves the table at once: nobody else may join.
            if batch.members.len() >= MAX_BATCH
                && let Some(batch) = open.remove(&key)
            {
                let _ = batch.full.send(batch.members);
            }
            drop(open);
            self.watch_departure(key, serial, gone);
            return (Role::Follower, receiver);
        }
        let serial = self.serial.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (full, mut filled) = oneshot::channel();
        open.insert(key.clone(), Open { serial, members: vec![member], full });
        drop(open);
        self.watch_departure(key.clone(), serial, gone);
        let batcher = Arc::clone(self);
        tokio::spawn(async move {
            let members = tokio::select! {
                members = &mut filled => members.unwrap_or_default(),
                () = tokio::time::sleep(grace) => match batcher.seal(&key, serial) {
                    Some(members) => members,
                    // It filled up just as the grace ended.
                    None => filled.await.unwrap_or_default(),
                },
            };
            run_sealed(members, runner).await;
        });
        (Role::Leader, receiver)
    }

    /// Takes the members of batch `serial` out of the open table.
    /// `None` when it already left the table because it filled up.
    fn seal(&self, key: &BatchKey, serial: u64) -> Option<Vec<Member<Q>>> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match open.get(key) {
            Some(batch) if batch.serial == serial => open.remove(key).map(|batch| batch.members),
            _ => None,
        }
    }

    /// Removes a member whose client went away before its batch sealed.
    fn watch_departure(self: &Arc<Self>, key: BatchKey, serial: u64, gone: CancellationToken) {
        let batcher = Arc::downgrade(self);
        tokio::spawn(async move {
            gone.cancelled().await;
            let Some(batcher) = batcher.upgrade() else { return };
            let mut open = batcher.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(batch) = open.get_mut(&key)
                && batch.serial == serial
            {
                batch.members.retain(|member| !member.gone.is_cancelled());
            }
        });
    }
}

/// Runs a sealed batch and hands each member its own result.
async fn run_sealed<Q>(members: Vec<Member<Q>>, runner: Runner<Q>) {
    let members: Vec<Member<Q>> = members.into_iter().filter(|member| !member.gone.is_cancelled()).collect();
    if members.is_empty() {
        return;
    }
    // The conversation stops only when nobody waits for it any more.
    let cancel = CancellationToken::new();
    let tokens: Vec<CancellationToken> = members.iter().map(|member| member.gone.clone()).collect();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            futures_util::future::join_all(tokens.iter().map(CancellationToken::cancelled)).await;
            cancel.cancel();
        })
    };
    let mut senders = Vec::with_capacity(members.len());
    let mut questions = Vec::with_capacity(members.len());
    for member in members {
        senders.push((member.item_id.clone(), member.result));
        questions.push((member.item_id, member.question));
    }
    let outcome = runner(questions, cancel).await;
    watcher.abort();
    match outcome {
        Ok(mut answers) => {
            for (item_id, sender) in senders {
                let result =
                    answers.remove(&item_id).ok_or_else(|| format!("the batch answer has no findings for {item_id}"));
                let _ = sender.send(result);
            }
        }
        Err(error) => {
            for (_, sender) in senders {
                let _ = sender.send(Err(error.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(workspace: &str) -> BatchKey {
        BatchKey { workspace: workspace.into(), service_tier: None, target: None, parent: None }
    }

    /// A runner answering each question with its own text, recording the
    /// batch sizes it saw.
    fn runner(sizes: Arc<Mutex<Vec<usize>>>) -> Runner<String> {
        Box::new(move |questions, _| {
            Box::pin(async move {
                sizes.lock().unwrap().push(questions.len());
                Ok(questions
                    .into_iter()
                    .map(|(id, question)| (id, vec![Finding { description: question, references: vec![] }]))
                    .collect())
            })
        })
    }

    #[tokio::test(start_paused = true)]
    async fn compatible_questions_fill_batches_of_three_and_each_gets_its_own_result() {
        let batcher = Arc::new(Batcher::<String>::default());
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let mut receivers = Vec::new();
        let mut roles = Vec::new();
        for n in 0..5 {
            let (role, receiver) = batcher.join(
                key("/w"),
                format!("ID{n}"),
                format!("q{n}"),
                CancellationToken::new(),
                Duration::from_millis(100),
                runner(Arc::clone(&sizes)),
            );
            roles.push(role);
            receivers.push(receiver);
        }
        assert_eq!(roles, [Role::Leader, Role::Follower, Role::Follower, Role::Leader, Role::Follower]);
        for (n, receiver) in receivers.into_iter().enumerate() {
            let findings = receiver.await.unwrap().unwrap();
            assert_eq!(findings[0].description, format!("q{n}"));
        }
        let mut sizes = sizes.lock().unwrap().clone();
        sizes.sort_unstable();
        assert_eq!(sizes, [2, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn incompatible_keys_never_share_and_departed_members_are_dropped() {
        let batcher = Arc::new(Batcher::<String>::default());
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let grace = Duration::from_millis(100);
        let (_, a) = batcher.join(
            key("/a"),
            "A".into(),
            "a".into(),
            CancellationToken::new(),
            grace,
            runner(Arc::clone(&sizes)),
        );
        let fast = BatchKey { service_tier: Some("priority".into()), ..key("/a") };
        let (role, b) =
            batcher.join(fast, "B".into(), "b".into(), CancellationToken::new(), grace, runner(Arc::clone(&sizes)));
        assert_eq!(role, Role::Leader);
        let gone = CancellationToken::new();
        let (role, c) =
            batcher.join(key("/a"), "C".into(), "c".into(), gone.clone(), grace, runner(Arc::clone(&sizes)));
        assert_eq!(role, Role::Follower);
        gone.cancel();
        tokio::task::yield_now().await;
        assert_eq!(a.await.unwrap().unwrap()[0].description, "a");
        assert_eq!(b.await.unwrap().unwrap()[0].description, "b");
        assert!(c.await.is_err(), "a departed member gets nothing");
        assert_eq!(sizes.lock().unwrap().clone(), [1, 1]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_failure_fails_every_member() {
        let batcher = Arc::new(Batcher::<String>::default());
        let failing: Runner<String> = Box::new(|_, _| Box::pin(async { Err("the provider failed".to_string()) }));
        let (_, a) = batcher.join(
            key("/w"),
            "A".into(),
            "a".into(),
            CancellationToken::new(),
            Duration::from_millis(10),
            failing,
        );
        let (_, b) = batcher.join(
            key("/w"),
            "B".into(),
            "b".into(),
            CancellationToken::new(),
            Duration::from_millis(10),
            runner(Arc::default()),
        );
        assert_eq!(a.await.unwrap().unwrap_err(), "the provider failed");
        assert_eq!(b.await.unwrap().unwrap_err(), "the provider failed");
    }
}

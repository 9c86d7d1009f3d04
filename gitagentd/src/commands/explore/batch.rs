//! Explore batching in the daemon: independently launched `git-agent
//! explore` processes reach one daemon, and compatible questions (same
//! cleaned workspace, service tier and query target; follow-ups: same
//! parent) are sealed into batches of at most [`MAX_BATCH`] that share
//! one provider conversation.
//!
//! Each process first reserves its intent ([`Batcher::reserve`]), before
//! its semantic retrieval, then joins once it is ready. The first member
//! to join a key opens a batch and starts its batch task; later members
//! join it until it is full, which seals it at once, or until no reserved
//! intent of the key is still getting ready, which seals it too (as does
//! [`MAX_COLLECTION`] at the latest). The batch task, not any member's
//! request, owns the conversation, so a member that disconnects (its
//! cancellation fires) is removed before sealing or simply stops waiting
//! afterwards without failing the others; the conversation is cancelled
//! only when every member has gone. Each member receives only its own
//! result; a failure of the batch fails every member with the same error.

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

/// The longest an open batch waits for reserved intents that are still
/// getting ready (a retrieval queued behind another index build).
pub const MAX_COLLECTION: Duration = Duration::from_secs(120);

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
    /// Hands the members to the batch task when the batch seals early.
    sealed: oneshot::Sender<Vec<Member<Q>>>,
}

/// One key's state: intents reserved but not yet joined, and the batch
/// open for joining.
struct Slot<Q> {
    pending: usize,
    open: Option<Open<Q>>,
}

impl<Q> Default for Slot<Q> {
    fn default() -> Self {
        Self { pending: 0, open: None }
    }
}

/// The open batches of the daemon, by key.
pub struct Batcher<Q> {
    slots: Mutex<HashMap<BatchKey, Slot<Q>>>,
    serial: std::sync::atomic::AtomicU64,
}

impl<Q> Default for Batcher<Q> {
    fn default() -> Self {
        Self { slots: Mutex::new(HashMap::new()), serial: Default::default() }
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

/// An intent reserved before retrieval: open batches of its key wait for
/// it until it joins or is dropped.
pub struct Reservation<Q: Send + 'static> {
    batcher: Arc<Batcher<Q>>,
    key: BatchKey,
    joined: bool,
}

impl<Q: Send + 'static> Batcher<Q> {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<BatchKey, Slot<Q>>> {
        self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reserves an intent for `key`.
    pub fn reserve(self: &Arc<Self>, key: BatchKey) -> Reservation<Q> {
        self.slots().entry(key.clone()).or_default().pending += 1;
        Reservation { batcher: Arc::clone(self), key, joined: false }
    }

    /// Takes the members of batch `serial` out of the table. `None` when
    /// it already sealed.
    fn seal(&self, key: &BatchKey, serial: u64) -> Option<Vec<Member<Q>>> {
        let mut slots = self.slots();
        let slot = slots.get_mut(key)?;
        match &slot.open {
            Some(open) if open.serial == serial => {
                let members = slot.open.take().map(|open| open.members);
                if slot.pending == 0 {
                    slots.remove(key);
                }
                members
            }
            _ => None,
        }
    }

    /// Removes a member whose client went away before its batch sealed.
    fn watch_departure(self: &Arc<Self>, key: BatchKey, serial: u64, gone: CancellationToken) {
        let batcher = Arc::downgrade(self);
        tokio::spawn(async move {
            gone.cancelled().await;
            let Some(batcher) = batcher.upgrade() else { return };
            let mut slots = batcher.slots();
            if let Some(open) = slots.get_mut(&key).and_then(|slot| slot.open.as_mut())
                && open.serial == serial
            {
                open.members.retain(|member| !member.gone.is_cancelled());
            }
        });
    }
}

impl<Q: Send + 'static> Reservation<Q> {
    /// Adds the ready question to the open batch of its key, or opens one
    /// whose batch task waits for the key's other reserved intents and
    /// then runs `runner` (used only when this call opens the batch).
    /// Returns the member's role and where its result arrives.
    pub fn join(
        mut self,
        item_id: String,
        question: Q,
        gone: CancellationToken,
        runner: Runner<Q>,
    ) -> (Role, oneshot::Receiver<MemberResult>) {
        self.joined = true;
        let batcher = Arc::clone(&self.batcher);
        let key = self.key.clone();
        let (result, receiver) = oneshot::channel();
        let member = Member { item_id, question, gone: gone.clone(), result };
        let mut slots = batcher.slots();
        let slot = slots.entry(key.clone()).or_default();
        slot.pending = slot.pending.saturating_sub(1);
        if let Some(open) = slot.open.as_mut() {
            open.members.push(member);
            let serial = open.serial;
            // A full batch, or one nobody else is getting ready for,
            // leaves the table at once.
            if (open.members.len() >= MAX_BATCH || slot.pending == 0)
                && let Some(open) = slot.open.take()
            {
                let _ = open.sealed.send(open.members);
            }
            if slot.pending == 0 && slot.open.is_none() {
                slots.remove(&key);
            }
            drop(slots);
            batcher.watch_departure(key, serial, gone);
            return (Role::Follower, receiver);
        }
        let serial = batcher.serial.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if slot.pending == 0 {
            // Alone, and nobody else is coming: sealed already.
            slots.remove(&key);
            drop(slots);
            tokio::spawn(run_sealed(vec![member], runner));
            return (Role::Leader, receiver);
        }
        let (sealed, mut early) = oneshot::channel();
        slot.open = Some(Open { serial, members: vec![member], sealed });
        drop(slots);
        batcher.watch_departure(key.clone(), serial, gone);
        let waiting = Arc::clone(&batcher);
        tokio::spawn(async move {
            let members = tokio::select! {
                members = &mut early => members.unwrap_or_default(),
                () = tokio::time::sleep(MAX_COLLECTION) => match waiting.seal(&key, serial) {
                    Some(members) => members,
                    // It sealed just as the wait ended.
                    None => early.await.unwrap_or_default(),
                },
            };
            run_sealed(members, runner).await;
        });
        (Role::Leader, receiver)
    }
}

impl<Q: Send + 'static> Drop for Reservation<Q> {
    /// An intent that never joins (its client left, or its retrieval
    /// failed) stops holding its key's open batch.
    fn drop(&mut self) {
        if self.joined {
            return;
        }
        let mut slots = self.batcher.slots();
        let Some(slot) = slots.get_mut(&self.key) else { return };
        slot.pending = slot.pending.saturating_sub(1);
        if slot.pending > 0 {
            return;
        }
        if let Some(open) = slot.open.take() {
            let _ = open.sealed.send(open.members);
        }
        slots.remove(&self.key);
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
    async fn reserved_intents_fill_batches_of_three_and_each_gets_its_own_result() {
        let batcher = Arc::new(Batcher::<String>::default());
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let reservations: Vec<_> = (0..5).map(|_| batcher.reserve(key("/w"))).collect();
        let mut receivers = Vec::new();
        let mut roles = Vec::new();
        for (n, reservation) in reservations.into_iter().enumerate() {
            let (role, receiver) = reservation.join(
                format!("ID{n}"),
                format!("q{n}"),
                CancellationToken::new(),
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
        assert!(batcher.slots().is_empty(), "nothing is left behind");
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_batch_waits_for_reserved_intents_until_they_join_or_leave() {
        let batcher = Arc::new(Batcher::<String>::default());
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let first = batcher.reserve(key("/w"));
        let slow = batcher.reserve(key("/w"));
        let leaving = batcher.reserve(key("/w"));
        let (_, a) = first.join("A".into(), "a".into(), CancellationToken::new(), runner(Arc::clone(&sizes)));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(sizes.lock().unwrap().is_empty(), "still waiting for two reserved intents");
        drop(leaving);
        let (role, b) = slow.join("B".into(), "b".into(), CancellationToken::new(), runner(Arc::clone(&sizes)));
        assert_eq!(role, Role::Follower);
        assert_eq!(a.await.unwrap().unwrap()[0].description, "a");
        assert_eq!(b.await.unwrap().unwrap()[0].description, "b");
        assert_eq!(sizes.lock().unwrap().clone(), [2], "sealed once nobody else was getting ready");

        // Alone with nobody reserved: sealed at once, no waiting.
        let (role, c) = batcher.reserve(key("/w")).join(
            "C".into(),
            "c".into(),
            CancellationToken::new(),
            runner(Arc::clone(&sizes)),
        );
        assert_eq!(role, Role::Leader);
        assert_eq!(c.await.unwrap().unwrap()[0].description, "c");
    }

    #[tokio::test(start_paused = true)]
    async fn incompatible_keys_never_share_and_departed_members_are_dropped() {
        let batcher = Arc::new(Batcher::<String>::default());
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let fast = BatchKey { service_tier: Some("priority".into()), ..key("/a") };
        let (plain_a, fast_b, plain_c) =
            (batcher.reserve(key("/a")), batcher.reserve(fast), batcher.reserve(key("/a")));
        let (_, a) = plain_a.join("A".into(), "a".into(), CancellationToken::new(), runner(Arc::clone(&sizes)));
        let (role, b) = fast_b.join("B".into(), "b".into(), CancellationToken::new(), runner(Arc::clone(&sizes)));
        assert_eq!(role, Role::Leader);
        let gone = CancellationToken::new();
        let (role, c) = plain_c.join("C".into(), "c".into(), gone.clone(), runner(Arc::clone(&sizes)));
        assert_eq!(role, Role::Follower);
        gone.cancel();
        tokio::task::yield_now().await;
        assert_eq!(a.await.unwrap().unwrap()[0].description, "a");
        assert_eq!(b.await.unwrap().unwrap()[0].description, "b");
        assert!(c.await.is_err(), "a departed member gets nothing");
        let mut sizes = sizes.lock().unwrap().clone();
        sizes.sort_unstable();
        assert_eq!(sizes, [1, 1]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_failure_fails_every_member() {
        let batcher = Arc::new(Batcher::<String>::default());
        let failing: Runner<String> = Box::new(|_, _| Box::pin(async { Err("the provider failed".to_string()) }));
        let (first, second) = (batcher.reserve(key("/w")), batcher.reserve(key("/w")));
        let (_, a) = first.join("A".into(), "a".into(), CancellationToken::new(), failing);
        let (_, b) = second.join("B".into(), "b".into(), CancellationToken::new(), runner(Arc::default()));
        assert_eq!(a.await.unwrap().unwrap_err(), "the provider failed");
        assert_eq!(b.await.unwrap().unwrap_err(), "the provider failed");
    }
}

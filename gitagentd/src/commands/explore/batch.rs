//! Explore batching in the daemon: independently launched `git-agent
//! explore` processes reach one daemon, and compatible questions (same
//! cleaned workspace, service tier and query target; follow-ups: same
//! parent) are sealed into batches of at most [`MAX_BATCH`] that share
//! one provider conversation.
//!
//! Each process first reserves its intent ([`Batcher::reserve`]), before
//! its semantic retrieval, then joins once it is ready. The first member
//! to join a key opens a batch and starts its batch task; later members
//! join it until it is full, which seals it at once. Otherwise the batch
//! task seals it once no reserved intent of the key is still getting
//! ready and the key has been quiet for the join grace, or after
//! [`MAX_COLLECTION`] at the latest. The grace of a lone intent is
//! [`JOIN_WINDOW`] counted from its reservation, so it overlaps the
//! member's own retrieval: a lone explore waits only for what is left of
//! it once its retrieval is done. Once intents of a key overlap (one is
//! reserved while another is still live), the key is in a burst of
//! concurrently launched processes, and its batches also wait
//! [`BURST_WINDOW`] after the latest reservation or join, so stragglers
//! of the burst that start late on a busy machine still join. The batch task, not any
//! member's request, owns the conversation, so a member that disconnects
//! (its cancellation fires) is removed before sealing or simply stops
//! waiting afterwards without failing the others; the conversation is
//! cancelled only when every member has gone. Each member receives only
//! its own result; a failure of the batch fails every member with the
//! same error.

use super::answer::Finding;
use git_agent_shared::cli::ExploreTarget;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The most questions one provider conversation answers.
pub const MAX_BATCH: usize = 3;

/// The longest an open batch waits for reserved intents that are still
/// getting ready (a retrieval queued behind another index build).
pub const MAX_COLLECTION: Duration = Duration::from_secs(120);

/// How long a key must have been quiet (no new reservation) before a
/// batch that nobody else is getting ready for seals with fewer than
/// [`MAX_BATCH`] members. Processes launched together reserve within a
/// few milliseconds of each other; a lone explore pays only what its own
/// retrieval did not already cover.
pub const JOIN_WINDOW: Duration = Duration::from_millis(20);

/// How long a batch of a key in a burst (intents that overlapped) waits
/// after the key's latest reservation or join before it seals short of
/// full.
pub const BURST_WINDOW: Duration = Duration::from_millis(100);

/// When an open batch may seal short of full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The quiet time after a key's latest reservation.
    pub window: Duration,
    /// The quiet time after a key's latest reservation or join, once its
    /// intents overlapped.
    pub burst_window: Duration,
    /// Test builds only: how many reservations the daemon must have seen
    /// in all before any batch seals short of full, so concurrently
    /// launched test processes meet through their reservations rather
    /// than through timing.
    pub quorum: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Self { window: JOIN_WINDOW, burst_window: BURST_WINDOW, quorum: 0 }
    }
}

impl Policy {
    /// The daemon's policy: [`Policy::default`], or in builds with the
    /// `test-hooks` feature a quorum from
    /// `GITAGENTD_TEST_EXPLORE_QUORUM` in the daemon's environment.
    fn from_environment() -> Self {
        if let Some(quorum) = gitagent_runtime::test_hooks::explore_quorum() {
            return Self { quorum, ..Self::default() };
        }
        Self::default()
    }
}

/// What makes questions compatible.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BatchKey {
    pub workspace: PathBuf,
    pub service_tier: Option<String>,
    pub target: Option<ExploreTarget>,
    pub parent: Option<String>,
}

/// What one member gets back: its own findings, or the batch's error.
pub type MemberResult = Result<Vec<Finding>, BatchError>;

/// One question waiting in a batch.
pub struct Member<Q> {
    pub item_id: String,
    pub question: Q,
    /// Fires when the member's client goes away.
    pub gone: CancellationToken,
    result: oneshot::Sender<MemberResult>,
}

/// How a batch was collected, for the leader's `--debug` phases.
#[derive(Debug, Clone, Copy)]
pub struct Collected {
    /// When the batch began waiting only for the quiet window (nobody
    /// reserved was still getting ready); the seal itself when it never
    /// had to.
    pub grace_since: std::time::Instant,
}

/// Runs a sealed batch: its members' questions in, findings by item ID
/// (or one error for all) out; cancelled through the token when every
/// member has gone.
pub type Runner<Q> = Box<
    dyn FnOnce(
            Vec<(String, Q)>,
            Collected,
            CancellationToken,
        ) -> Pin<Box<dyn Future<Output = Result<HashMap<String, Vec<Finding>>, BatchError>> + Send>>
        + Send,
>;

/// Why a batch produced no result for a member. Cloned to every member of
/// a failed batch.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BatchError {
    /// The conversation failed; its error, for every member.
    #[error("{0}")]
    Failed(#[source] Arc<crate::commands::CommandError>),
    #[error("the batch answer has no findings for {0}")]
    NoFindings(String),
}

struct Open<Q> {
    serial: u64,
    members: Vec<Member<Q>>,
    /// Hands the members to the batch task when the batch seals early.
    sealed: oneshot::Sender<Vec<Member<Q>>>,
}

/// One key's state: intents reserved but not yet joined, the batch open
/// for joining, when the key last saw a reservation and a reservation or
/// join, and whether its intents overlapped.
struct Slot<Q> {
    pending: usize,
    open: Option<Open<Q>>,
    last_reserved: Instant,
    last_activity: Instant,
    burst: bool,
}

impl<Q> Default for Slot<Q> {
    fn default() -> Self {
        let now = Instant::now();
        Self { pending: 0, open: None, last_reserved: now, last_activity: now, burst: false }
    }
}

/// The open batches of the daemon, by key.
pub struct Batcher<Q> {
    slots: Mutex<HashMap<BatchKey, Slot<Q>>>,
    serial: std::sync::atomic::AtomicU64,
    policy: Policy,
    /// Every reservation the daemon has seen (the test quorum).
    reserved: std::sync::atomic::AtomicUsize,
    /// Wakes the batch tasks when a reservation arrives, joins or leaves.
    changed: Notify,
}

impl<Q> Default for Batcher<Q> {
    fn default() -> Self {
        Self::new(Policy::from_environment())
    }
}

impl<Q> Batcher<Q> {
    pub fn new(policy: Policy) -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
            serial: Default::default(),
            policy,
            reserved: Default::default(),
            changed: Notify::new(),
        }
    }
}

/// What an open batch's task does next.
enum Settle<Q> {
    /// It sealed now, with these members.
    Sealed(Vec<Member<Q>>),
    /// It sealed already (full): its members arrive through the channel.
    Gone,
    /// Reserved intents are still getting ready (or the test quorum is
    /// not reached): wait for a change.
    Waiting,
    /// Only the quiet window is left, since `since`: wait until `until`
    /// or a change.
    Quiet { since: Instant, until: Instant },
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
        {
            let mut slots = self.slots();
            let slot = slots.entry(key.clone()).or_default();
            slot.burst |= slot.pending > 0 || slot.open.is_some();
            slot.pending += 1;
            slot.last_reserved = Instant::now();
            slot.last_activity = slot.last_reserved;
            self.reserved.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.changed.notify_waiters();
        Reservation { batcher: Arc::clone(self), key, joined: false }
    }

    /// Takes the members of batch `serial` out of the table. `None` when
    /// it already sealed.
    fn seal(&self, key: &BatchKey, serial: u64) -> Option<Vec<Member<Q>>> {
        let mut slots = self.slots();
        Self::seal_locked(&mut slots, key, serial)
    }

    fn seal_locked(slots: &mut HashMap<BatchKey, Slot<Q>>, key: &BatchKey, serial: u64) -> Option<Vec<Member<Q>>> {
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

    /// Seals batch `serial` when nothing it could wait for is left, or
    /// says what it waits for.
    fn settle(&self, key: &BatchKey, serial: u64) -> Settle<Q> {
        let mut slots = self.slots();
        let Some(slot) = slots.get(key).filter(|slot| slot.open.as_ref().is_some_and(|open| open.serial == serial))
        else {
            return Settle::Gone;
        };
        let quorum = self.reserved.load(std::sync::atomic::Ordering::SeqCst) >= self.policy.quorum;
        if slot.pending > 0 || !quorum {
            return Settle::Waiting;
        }
        let mut until = slot.last_reserved + self.policy.window;
        if slot.burst {
            until = until.max(slot.last_activity + self.policy.burst_window);
        }
        if Instant::now() < until {
            return Settle::Quiet { since: Instant::now(), until };
        }
        Self::seal_locked(&mut slots, key, serial).map_or(Settle::Gone, Settle::Sealed)
    }

    /// The batch task's collection: waits until batch `serial` seals
    /// (full, quiet, or [`MAX_COLLECTION`]) and returns its members.
    async fn collect(
        &self,
        key: &BatchKey,
        serial: u64,
        mut early: oneshot::Receiver<Vec<Member<Q>>>,
    ) -> (Vec<Member<Q>>, Collected) {
        let deadline = Instant::now() + MAX_COLLECTION;
        let mut grace_since = None;
        let members = loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let until = match self.settle(key, serial) {
                Settle::Sealed(members) => break members,
                Settle::Gone => break (&mut early).await.unwrap_or_default(),
                Settle::Waiting => {
                    grace_since = None;
                    deadline
                }
                Settle::Quiet { since, until } => {
                    grace_since.get_or_insert(since);
                    until.min(deadline)
                }
            };
            tokio::select! {
                members = &mut early => break members.unwrap_or_default(),
                () = &mut changed => {}
                () = tokio::time::sleep_until(until) => {
                    if Instant::now() >= deadline {
                        break match self.seal(key, serial) {
                            Some(members) => members,
                            // It sealed just as the wait ended.
                            None => (&mut early).await.unwrap_or_default(),
                        };
                    }
                }
            }
        };
        let grace_since = grace_since.map_or_else(std::time::Instant::now, Instant::into_std);
        (members, Collected { grace_since })
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
        slot.last_activity = Instant::now();
        if let Some(open) = slot.open.as_mut() {
            open.members.push(member);
            let serial = open.serial;
            // A full batch leaves the table at once.
            if open.members.len() >= MAX_BATCH
                && let Some(open) = slot.open.take()
            {
                let _ = open.sealed.send(open.members);
            }
            if slot.pending == 0 && slot.open.is_none() {
                slots.remove(&key);
            }
            drop(slots);
            batcher.changed.notify_waiters();
            batcher.watch_departure(key, serial, gone);
            return (Role::Follower, receiver);
        }
        let serial = batcher.serial.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (sealed, early) = oneshot::channel();
        slot.open = Some(Open { serial, members: vec![member], sealed });
        drop(slots);
        batcher.changed.notify_waiters();
        batcher.watch_departure(key.clone(), serial, gone);
        let collecting = Arc::clone(&batcher);
        tokio::spawn(async move {
            let (members, collected) = collecting.collect(&key, serial, early).await;
            run_sealed(members, collected, runner).await;
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
        {
            let mut slots = self.batcher.slots();
            let Some(slot) = slots.get_mut(&self.key) else { return };
            slot.pending = slot.pending.saturating_sub(1);
            if slot.pending == 0 && slot.open.is_none() {
                slots.remove(&self.key);
            }
        }
        // An open batch of the key may now settle.
        self.batcher.changed.notify_waiters();
    }
}

/// Runs a sealed batch and hands each member its own result.
async fn run_sealed<Q>(members: Vec<Member<Q>>, collected: Collected, runner: Runner<Q>) {
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
    let outcome = runner(questions, collected, cancel).await;
    watcher.abort();
    match outcome {
        Ok(mut answers) => {
            for (item_id, sender) in senders {
                let result = answers.remove(&item_id).ok_or(BatchError::NoFindings(item_id));
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
        Box::new(move |questions, _, _| {
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

        // Alone with nobody reserved: sealed within the window.
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
        let failing: Runner<String> = Box::new(|_, _, _| {
            Box::pin(async {
                Err(BatchError::Failed(Arc::new(crate::commands::CommandError::message("the provider failed"))))
            })
        });
        let (first, second) = (batcher.reserve(key("/w")), batcher.reserve(key("/w")));
        let (_, a) = first.join("A".into(), "a".into(), CancellationToken::new(), failing);
        let (_, b) = second.join("B".into(), "b".into(), CancellationToken::new(), runner(Arc::default()));
        assert_eq!(a.await.unwrap().unwrap_err().to_string(), "the provider failed");
        assert_eq!(b.await.unwrap().unwrap_err().to_string(), "the provider failed");
    }

    /// A runner that records when it started and the batch sizes.
    fn timed_runner(started: Arc<Mutex<Vec<(usize, Instant)>>>) -> Runner<String> {
        Box::new(move |questions, _, _| {
            Box::pin(async move {
                started.lock().unwrap().push((questions.len(), Instant::now()));
                Ok(questions.into_iter().map(|(id, _)| (id, Vec::new())).collect())
            })
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_lone_member_waits_only_for_what_its_retrieval_left_of_the_window() {
        let batcher = Arc::new(Batcher::<String>::new(Policy::default()));
        let started = Arc::new(Mutex::new(Vec::new()));
        // Retrieval took 15 ms of the 20 ms window: 5 ms are left.
        let reserved = Instant::now();
        let reservation = batcher.reserve(key("/w"));
        tokio::time::sleep(Duration::from_millis(15)).await;
        let (_, a) = reservation.join("A".into(), "a".into(), CancellationToken::new(), timed_runner(started.clone()));
        a.await.unwrap().unwrap();
        assert_eq!(started.lock().unwrap()[0], (1, reserved + JOIN_WINDOW));
        // Retrieval outlasted the window: sealed at once.
        let reservation = batcher.reserve(key("/w"));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let joined = Instant::now();
        let (_, b) = reservation.join("B".into(), "b".into(), CancellationToken::new(), timed_runner(started.clone()));
        b.await.unwrap().unwrap();
        assert_eq!(started.lock().unwrap()[1], (1, joined));
    }

    #[tokio::test(start_paused = true)]
    async fn a_reservation_within_the_window_keeps_the_batch_open() {
        let batcher = Arc::new(Batcher::<String>::new(Policy::default()));
        let started = Arc::new(Mutex::new(Vec::new()));
        let first = batcher.reserve(key("/w"));
        tokio::time::sleep(Duration::from_millis(5)).await;
        let (role, a) = first.join("A".into(), "a".into(), CancellationToken::new(), timed_runner(started.clone()));
        assert_eq!(role, Role::Leader);
        // Launched 15 ms after the first: within its window.
        tokio::time::sleep(Duration::from_millis(10)).await;
        let second = batcher.reserve(key("/w"));
        tokio::time::sleep(Duration::from_millis(15)).await;
        let joined = Instant::now();
        let (role, b) = second.join("B".into(), "b".into(), CancellationToken::new(), timed_runner(started.clone()));
        assert_eq!(role, Role::Follower);
        a.await.unwrap().unwrap();
        b.await.unwrap().unwrap();
        // Reserved while the batch was open, it made the key a burst.
        assert_eq!(started.lock().unwrap().clone(), [(2, joined + BURST_WINDOW)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_test_quorum_holds_batches_until_enough_intents_were_reserved() {
        let batcher = Arc::new(Batcher::<String>::new(Policy { quorum: 3, ..Policy::default() }));
        let started = Arc::new(Mutex::new(Vec::new()));
        let (_, a) = batcher.reserve(key("/w")).join(
            "A".into(),
            "a".into(),
            CancellationToken::new(),
            timed_runner(started.clone()),
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(started.lock().unwrap().is_empty(), "sealed before the quorum");
        let (b, c) = (batcher.reserve(key("/w")), batcher.reserve(key("/w")));
        let (_, b) = b.join("B".into(), "b".into(), CancellationToken::new(), timed_runner(started.clone()));
        let (_, c) = c.join("C".into(), "c".into(), CancellationToken::new(), timed_runner(started.clone()));
        for receiver in [a, b, c] {
            receiver.await.unwrap().unwrap();
        }
        assert_eq!(started.lock().unwrap()[0].0, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_keeps_its_batch_open_for_a_late_straggler() {
        let batcher = Arc::new(Batcher::<String>::new(Policy::default()));
        let started = Arc::new(Mutex::new(Vec::new()));
        // Two overlapping intents: a burst.
        let (first, second) = (batcher.reserve(key("/w")), batcher.reserve(key("/w")));
        tokio::time::sleep(Duration::from_millis(40)).await;
        let (_, a) = first.join("A".into(), "a".into(), CancellationToken::new(), timed_runner(started.clone()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let (_, b) = second.join("B".into(), "b".into(), CancellationToken::new(), timed_runner(started.clone()));
        // A third process of the burst reserves 80 ms after the last join,
        // long after a lone intent's window.
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(started.lock().unwrap().is_empty(), "sealed within the burst window");
        let third = batcher.reserve(key("/w"));
        tokio::time::sleep(Duration::from_millis(60)).await;
        let (role, c) = third.join("C".into(), "c".into(), CancellationToken::new(), timed_runner(started.clone()));
        assert_eq!(role, Role::Follower);
        for receiver in [a, b, c] {
            receiver.await.unwrap().unwrap();
        }
        assert_eq!(started.lock().unwrap()[0].0, 3, "one batch of three");
    }
}

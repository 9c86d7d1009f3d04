//! What the daemon is doing: the number of commands and tasks in flight
//! and when the last one ended, so an on-demand daemon can exit when it
//! has been idle for its idle period.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug)]
pub struct Activity {
    active: AtomicUsize,
    /// How many commands and tasks have begun, ever.
    begun: AtomicU64,
    last_change: Mutex<Instant>,
    changed: Notify,
}

/// Held for the duration of one command or task.
pub struct ActiveGuard {
    activity: Arc<Activity>,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            active: AtomicUsize::new(0),
            begun: AtomicU64::new(0),
            last_change: Mutex::new(Instant::now()),
            changed: Notify::new(),
        }
    }
}

impl Activity {
    pub fn begin(self: &Arc<Self>) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::SeqCst);
        self.begun.fetch_add(1, Ordering::SeqCst);
        self.touch();
        ActiveGuard { activity: Arc::clone(self) }
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// How many commands and tasks have begun so far.
    pub fn begun(&self) -> u64 {
        self.begun.load(Ordering::SeqCst)
    }

    /// Resolves once a command or task begins after `seen` had.
    pub async fn begun_since(&self, seen: u64) {
        loop {
            let changed = self.changed.notified();
            if self.begun() != seen {
                return;
            }
            changed.await;
        }
    }

    fn touch(&self) {
        if let Ok(mut last) = self.last_change.lock() {
            *last = Instant::now();
        }
        self.changed.notify_waiters();
    }

    fn last_change(&self) -> Instant {
        self.last_change.lock().map(|last| *last).unwrap_or_else(|_| Instant::now())
    }

    /// Resolves once nothing has been active for `idle`.
    pub async fn idle_for(&self, idle: Duration) {
        loop {
            let changed = self.changed.notified();
            if self.active() == 0 {
                let deadline = self.last_change() + idle;
                if Instant::now() >= deadline {
                    return;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {}
                    _ = changed => {}
                }
            } else {
                changed.await;
            }
        }
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.activity.active.fetch_sub(1, Ordering::SeqCst);
        self.activity.touch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_waits_for_active_work_and_the_period() {
        let activity = Arc::new(Activity::default());
        let guard_owner = activity.clone();
        let started = Instant::now();
        let holder = tokio::spawn(async move {
            let _guard = guard_owner.begin();
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        tokio::task::yield_now().await;
        activity.idle_for(Duration::from_secs(10)).await;
        holder.await.unwrap();
        assert!(started.elapsed() >= Duration::from_secs(40), "{:?}", started.elapsed());
    }
}

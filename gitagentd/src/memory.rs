//! Returning freed memory to the system when the daemon goes idle. The
//! daemon's allocator (mimalloc, see `main.rs`) keeps freed pages in each
//! thread's heap and in its arenas for reuse, which is right while work
//! runs and wasteful for a daemon that then sits idle for hours. Once no
//! command or task has run for [`IDLE_TRIM_AFTER`], every runtime worker
//! collects its heap the next time it parks, the blocking pool's threads
//! have exited (their keep-alive, [`BLOCKING_KEEP_ALIVE`], is shorter), and
//! a forced collection purges the arenas.
//!
//! Transparent huge pages are kept out of the heap: with them, one live
//! object keeps a whole 2 MiB page resident that a purge cannot return (an
//! idle daemon held 8 MiB that way, over half its heap). mimalloc is built
//! without its huge-page advice (the `no_thp` feature), which is enough
//! where the kernel gives huge pages only when advised; where it gives
//! them to every mapping, [`refuse_transparent_huge_pages`] turns them off
//! for the process.

use crate::activity::Activity;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Turns transparent huge pages off for this process (and the helpers it
/// starts): the daemon's heap is returned in 4 KiB pages when it goes idle
/// instead of pinned in 2 MiB ones. Best effort: a kernel without the
/// switch leaves the default.
#[cfg(target_os = "linux")]
pub fn refuse_transparent_huge_pages() {
    if let Err(error) = nix::sys::prctl::set_thp_disable(true) {
        eprintln!("gitagentd: cannot turn transparent huge pages off: {error}");
    }
}

/// How long the daemon must be idle before it returns memory.
pub const IDLE_TRIM_AFTER: Duration = Duration::from_secs(3);

/// How long an idle blocking-pool thread lives: shorter than
/// [`IDLE_TRIM_AFTER`], so the threads (their stacks and heaps) are gone
/// by the time the daemon trims.
pub const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(2);

/// Bumped for every trim; a worker that has not collected since collects.
static TRIM_GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COLLECTED_GENERATION: Cell<u64> = const { Cell::new(0) };
}

use gitagent_runtime::memory::collect;

/// The runtime workers' park hook: a worker that goes idle after a trim
/// was asked for collects its own heap (only the owning thread can).
pub fn on_worker_park() {
    let wanted = TRIM_GENERATION.load(Ordering::Relaxed);
    COLLECTED_GENERATION.with(|collected| {
        if collected.get() != wanted {
            collected.set(wanted);
            collect();
        }
    });
}

/// Trims once per idle period, for as long as the daemon serves.
pub async fn trim_when_idle(activity: Arc<Activity>) {
    loop {
        activity.idle_for(IDLE_TRIM_AFTER).await;
        let begun = activity.begun();
        trim().await;
        activity.begun_since(begun).await;
    }
}

/// Asks every worker to collect on its next park, collects here, and wakes
/// the other workers so they park (and collect) again.
async fn trim() {
    TRIM_GENERATION.fetch_add(1, Ordering::Relaxed);
    tracing::debug!("idle: returning free memory to the system");
    let workers = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let wakers: Vec<_> = (0..workers).map(|_| tokio::spawn(tokio::task::yield_now())).collect();
    for waker in wakers {
        let _ = waker.await;
    }
    collect();
}

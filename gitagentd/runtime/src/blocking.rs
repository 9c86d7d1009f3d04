//! The one way daemon code runs blocking work (SQLite, fsync, gix opens,
//! file walks, reading files) off the async runtime, so a slow disk or a
//! large repository never stalls the runtime's few worker threads and with
//! them every other caller (`Hello`, `project_id`). The work runs on the
//! blocking pool; when the caller's cancellation fires, the [`Interrupt`]
//! the work checks between steps is raised, so abandoned work stops early
//! instead of running to its end.

pub use git_agent_shared::interrupt::Interrupt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Why blocking work returned no value.
#[derive(Debug, thiserror::Error)]
pub enum BlockingError {
    /// The work panicked (or the runtime is shutting down); the panic is
    /// logged by the pool, the caller gets this error instead.
    #[error("{what} stopped unexpectedly: {source}")]
    Stopped {
        what: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
}

/// Runs `work` on the blocking pool and returns what it returned. `what`
/// names the work in errors ("the task table", "the repository reader").
/// Cancelling `cancel` raises the interrupt `work` receives; the work
/// decides where it can stop.
pub async fn run<T, F>(what: &'static str, cancel: &CancellationToken, work: F) -> Result<T, BlockingError>
where
    T: Send + 'static,
    F: FnOnce(&Interrupt) -> T + Send + 'static,
{
    let interrupt = Arc::new(Interrupt::default());
    let watcher = {
        let interrupt = Arc::clone(&interrupt);
        let cancel = cancel.clone();
        tokio::spawn(async move {
            cancel.cancelled().await;
            interrupt.raise();
        })
    };
    let result = tokio::task::spawn_blocking(move || {
        test_delay(what);
        work(&interrupt)
    })
    .await;
    watcher.abort();
    result.map_err(|source| BlockingError::Stopped { what, source })
}

/// Runs `work` that must finish once started (a durable write, a table
/// update) on the blocking pool.
pub async fn run_to_end<T, F>(what: &'static str, work: F) -> Result<T, BlockingError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        test_delay(what);
        work()
    })
    .await
    .map_err(|source| BlockingError::Stopped { what, source })
}

/// Holds blocking work back where a test asks for it
/// ([`crate::test_hooks::slow_blocking`]).
fn test_delay(what: &str) {
    if let Some(delay) = crate::test_hooks::slow_blocking(what) {
        std::thread::sleep(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancellation_raises_the_interrupt_the_work_sees() {
        let cancel = CancellationToken::new();
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let run = run("the test work", &cancel, move |interrupt| {
            started_tx.send(()).unwrap();
            while !interrupt.is_raised() {
                std::thread::yield_now();
            }
            "stopped"
        });
        let canceller = async {
            tokio::task::spawn_blocking(move || started_rx.recv().unwrap()).await.unwrap();
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(run, canceller);
        assert_eq!(result.unwrap(), "stopped");
    }

    #[tokio::test]
    async fn a_panic_becomes_an_error_naming_the_work() {
        let error = run_to_end("the test work", || -> u8 { panic!("boom") }).await.unwrap_err();
        assert!(error.to_string().starts_with("the test work stopped unexpectedly"), "{error}");
    }
}

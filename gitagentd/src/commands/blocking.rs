//! Blocking repository work (gix reads) run off the async runtime. When
//! the caller goes away, the command's cancellation raises the
//! [`Interrupt`] the work checks between steps, so an abandoned
//! preparation stops instead of running to its end.

use super::CommandError;
use crate::git::range::Interrupt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Runs `work` on the blocking pool and returns what it returned.
pub async fn run<T, F>(cancel: &CancellationToken, work: F) -> Result<T, CommandError>
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
    let result = tokio::task::spawn_blocking(move || work(&interrupt)).await;
    watcher.abort();
    result.map_err(|error| CommandError::Failed(format!("the repository reader stopped unexpectedly: {error}")))
}

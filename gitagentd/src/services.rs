//! Daemon-wide state that outlives a single command: each long-lived
//! subsystem (the search index cache and single-flight lock, the detached
//! task table, ...) adds its handle here. Commands receive it from `rpc`.

use crate::tasks::TaskService;
use std::sync::Arc;

/// The daemon's shared services; cheap to clone behind an `Arc`.
#[derive(Debug, Default)]
pub struct Services {
    /// The detached review/simplify task table.
    pub tasks: Arc<TaskService>,
}

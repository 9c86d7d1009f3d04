//! Daemon-wide state that outlives a single command: each long-lived
//! subsystem (the search index cache and single-flight lock, the detached
//! task table, ...) adds its handle here. Commands receive it from `rpc`.

/// The daemon's shared services; cheap to clone behind an `Arc`.
#[derive(Debug, Default)]
pub struct Services {
    /// The search index single flight, mapped index cache and query history.
    pub search: crate::search::SearchService,
}

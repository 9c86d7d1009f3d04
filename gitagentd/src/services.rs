//! Daemon-wide state that outlives a single command: each long-lived
//! subsystem (the search index cache and single-flight lock, the detached
//! task table, ...) adds its handle here. Commands receive it from `rpc`.

/// The daemon's shared services; cheap to clone behind an `Arc`.
#[derive(Debug, Default)]
pub struct Services {
    /// HTTP clients for provider requests, built once (loading the
    /// system's root certificates is the slow part) and shared, with their
    /// connection pools, by every command.
    pub http_clients: crate::provider::HttpClients,
}

//! Daemon-wide state that outlives a single command: each long-lived
//! subsystem (the search index cache and single-flight lock, the detached
//! task table, ...) adds its handle here. Commands receive it from `rpc`;
//! it lives with them, since the explore batches are a command's own state.

use super::review;
use crate::tasks::TaskService;
use git_agent_shared::Environment;
use gitagent_git::identity::IdentityCache;
use std::sync::Arc;

/// The daemon's shared services; cheap to clone behind an `Arc`.
#[derive(Debug)]
#[cfg_attr(any(test, feature = "test-hooks"), derive(Default))]
pub struct Services {
    /// Origin identities of repositories seen before, so `project_id` and
    /// every project-scoped command skip reopening the repository.
    pub identities: IdentityCache,
    /// The detached task table.
    pub tasks: Arc<TaskService>,
    /// The engine review and simplify run on.
    pub inspection: review::Engine,
    /// HTTP clients for provider requests, built once (loading the
    /// system's root certificates is the slow part) and shared, with their
    /// connection pools, by every command and the inspection engine.
    pub http_clients: Arc<gitagent_provider::HttpClients>,
    /// The search index single flight, mapped index cache and query history.
    pub search: gitagent_search::SearchService,
    /// The open explore batches, where concurrent questions meet.
    pub explore: Arc<super::ExploreBatcher>,
}

impl Services {
    /// The daemon's services; `fallback_env`, the daemon's own
    /// environment, answers editors' task calls that carry none.
    pub fn new(fallback_env: Environment) -> Self {
        let http_clients = Arc::new(gitagent_provider::HttpClients::default());
        Self {
            identities: Default::default(),
            tasks: Arc::new(TaskService::new(fallback_env)),
            inspection: review::Engine::provider(Arc::clone(&http_clients)),
            http_clients,
            search: Default::default(),
            explore: Default::default(),
        }
    }
}

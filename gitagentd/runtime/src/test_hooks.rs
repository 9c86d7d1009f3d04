//! Every test-only switch of the daemon, in one place. Each reads the
//! daemon's own environment in builds with the `test-hooks` feature (the
//! workspace's `cargo test` builds the daemon so) and is inert otherwise,
//! so a release build has no switch a user could set by accident:
//!
//! | variable | effect |
//! |---|---|
//! | `GITAGENTD_TEST_SLOW_BLOCKING=<what>=<ms>` | every blocking call named `<what>` first sleeps `<ms>` ([`crate::blocking`]), so a test can prove slow blocking work never holds up other callers |
//! | `GITAGENTD_TEST_EXPLORE_QUORUM=<n>` | explore's batcher waits for `<n>` compatible questions |
//! | `GITAGENTD_TEST_HOLD_PRODUCTION` | the daemon's first index build keeps producing after its first file with streamed inputs until it is cancelled, so a test can fail an embedding window while production is open |
//! | `GITAGENTD_SEARCH_CRASH_AT=<point>` | the search service stops the process at a named point of an index publication |
//! | `GITAGENTD_TEST_PINNED_MODEL=<folder>` | the pinned local model is the files of `<folder>` (their sizes and SHA-256s), so a test can serve a tiny model as the hub and watch the first-use download |
//!
//! The one switch on the command line is `gitagentd serve --build-id`
//! (gitagentd's `args`), which stands a build identity in for the real one.

use std::time::Duration;

/// How long blocking work named `what` is held back before it runs.
pub fn slow_blocking(what: &str) -> Option<Duration> {
    #[cfg(feature = "test-hooks")]
    {
        static CONFIGURED: std::sync::OnceLock<Option<(String, Duration)>> = std::sync::OnceLock::new();
        let configured = CONFIGURED.get_or_init(|| {
            let value = std::env::var("GITAGENTD_TEST_SLOW_BLOCKING").ok()?;
            let (name, millis) = value.rsplit_once('=')?;
            Some((name.to_string(), Duration::from_millis(millis.parse().ok()?)))
        });
        configured.as_ref().filter(|(name, _)| name == what).map(|(_, delay)| *delay)
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        let _ = what;
        None
    }
}

/// The number of compatible questions explore's batcher waits for.
pub fn explore_quorum() -> Option<usize> {
    #[cfg(feature = "test-hooks")]
    {
        std::env::var("GITAGENTD_TEST_EXPLORE_QUORUM").ok().and_then(|value| value.parse().ok())
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        None
    }
}

/// The folder whose files stand in for the pinned local model's.
pub fn pinned_model() -> Option<std::path::PathBuf> {
    #[cfg(feature = "test-hooks")]
    {
        std::env::var_os("GITAGENTD_TEST_PINNED_MODEL").map(std::path::PathBuf::from)
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        None
    }
}

/// Whether the daemon's first index build is to be held open.
pub fn hold_production() -> bool {
    #[cfg(feature = "test-hooks")]
    {
        std::env::var_os("GITAGENTD_TEST_HOLD_PRODUCTION").is_some()
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        false
    }
}

/// The publication point where the search service is to stop the process.
pub fn search_crash_at() -> Option<String> {
    #[cfg(feature = "test-hooks")]
    {
        std::env::var(git_agent_shared::environment::vars::GITAGENTD_SEARCH_CRASH_AT).ok()
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        None
    }
}

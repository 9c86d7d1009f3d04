//! The build identity that the client and the daemon compare, so a daemon
//! left behind by another build is replaced rather than spoken to.

/// The package version of this build.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// An identity that differs between builds of different sources: the
/// version plus the compiler-provided build fingerprint of this crate.
pub fn build_id() -> &'static str {
    BUILD_ID
}

const BUILD_ID: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("GIT_AGENT_BUILD_FINGERPRINT"));

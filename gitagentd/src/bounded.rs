//! Bounded text, shared with the client: see [`git_agent_shared::bounded`].

pub use git_agent_shared::bounded::*;

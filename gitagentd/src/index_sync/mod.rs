//! The dedicated index-sync repository shared between machines.

pub mod catalog;

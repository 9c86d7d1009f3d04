//! Domain logic that both binaries share. Nothing here reads the process
//! environment or talks to the user: callers pass an [`Environment`] captured
//! from the invocation, and get typed values or errors back.

pub mod bounded;
pub mod build;
pub mod cli;
pub mod config_file;
pub mod controls;
pub mod environment;
pub mod error_chain;
pub mod executable;
pub mod giturl;
pub mod golden;
pub mod interrupt;
pub mod paths;
pub mod private_fs;
pub mod quote;
pub mod secret;
pub mod task_record;
pub mod timefmt;

pub use environment::Environment;
pub use secret::Secret;

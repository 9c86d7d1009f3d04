//! Commit-style messages (commit-msg, commit, pr-message): the local
//! output shaping that turns a model's answer into a Git message, and the
//! validator that decides whether it needs the one repair pass. Both are
//! pure functions of text; the task code supplies the prepared facts
//! (original HEAD subject, submodule summaries, recent subjects).

mod shape;
mod task_id;
mod validate;

pub use shape::{BODY_WIDTH, shape};
pub use task_id::preserve_task_id_suffix;
pub use validate::{MessageMode, ValidationContext, Violation, validate};

//! Commit-style messages (commit-msg, commit, pr-message): the local
//! output shaping that turns a model's answer into a Git message, the
//! validator that decides whether it needs the one repair pass, and the
//! locally formatted submodule messages. All are pure functions of text
//! and prepared facts (original HEAD subject, submodule movements and
//! summaries, recent subjects) that the task code supplies.

mod shape;
mod submodule;
mod task_id;
mod validate;

pub use shape::{BODY_WIDTH, shape};
pub use submodule::{SubjectStyle, detect_style, submodule_only_message, submodule_section, with_submodule_section};
pub use task_id::preserve_task_id_suffix;
pub use validate::{MessageMode, ValidationContext, Violation, validate};

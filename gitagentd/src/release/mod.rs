//! Release notes: the range (`<base> <release>` or a version bump), the
//! context prepared from its history before any model request (commits,
//! evidence, operator signals, candidates, submodule groups, link owners),
//! the structured document the model returns under a strict schema, its
//! Markdown rendering and full changelog (built locally, never by the
//! model), the validators, and the `--out` file.

mod candidates;
mod classify;
mod context;
mod document;
mod finish;
mod out_file;
mod range;
mod validate;

pub use candidates::{Candidate, Confidence};
pub use classify::{PathKind, Policy, Signal};
pub use context::{
    MESSAGE_MAX_LINES, MESSAGE_MAX_WORDS, Movement, PrepareError, PreparedCommit, PreparedFile, PreparedSubmodule,
    ReleaseContext, clamp_message, prepare,
};
pub use document::{
    Bullet, ChangelogEntry, ChildBullet, Document, Reference, SECTION_HEADINGS, Section, SubmoduleGroup, output_schema,
    render,
};
pub use finish::finish;
pub use gitagent_git::version::{Bump, Version, latest_version_tag};
pub use out_file::{OutFile, OutFileError};
pub use range::{RangeRequest, RangeUsageError, ReleaseRange, VersionBump, resolve as resolve_range};
pub use validate::{LinkOwners, validate_document, validate_markdown};

#[cfg(test)]
mod tests;

//! Release notes: the structured document the model returns under a strict
//! schema, its Markdown rendering (built locally, never by the model), the
//! validators, and the version-bump inference behind
//! `release-note patch|minor|major`.

mod document;
mod validate;
mod version;

pub use document::{
    Bullet, ChangelogEntry, ChildBullet, Document, Reference, SECTION_HEADINGS, Section, SubmoduleGroup, output_schema,
    render,
};
pub use validate::{LinkOwners, validate_document, validate_markdown};
pub use version::{Bump, Version, latest_version_tag};

//! Detached inspections (`review`, `simplify`) without the language model:
//! scope preparation through gix, the inspection budget, the diff-mode and
//! documentation tools as typed functions, report schemas and validation,
//! host checks, and the engine seam that runs the inspection itself.
//! Nothing here knows the wire protocol or the task table.

pub mod budget;
pub mod checks;
pub mod contextpack;
pub mod engine;
pub mod git;
pub mod patch;
pub mod prepare;
pub mod report;
pub mod scope;
pub mod tools;

#[cfg(test)]
pub(crate) mod tests;

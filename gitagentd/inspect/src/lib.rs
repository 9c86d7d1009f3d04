//! Detached inspections (`review`, `simplify`): scope preparation through
//! gix, the inspection budget, the diff-mode and documentation tools as
//! typed functions, report schemas and validation, host checks, the engine
//! seam, and the provider-backed engine that runs the inspection on the
//! agent loop. Nothing here knows the gRPC wire or the task table.

pub mod branch;
pub mod budget;
pub mod checks;
pub mod engine;
pub mod follow_up;
pub mod git;
pub mod hooks;
pub mod metrics;
pub mod patch;
pub mod prepare;
pub mod provider_engine;
pub mod report;
pub mod scope;
pub mod tools;

#[cfg(test)]
pub mod tests;

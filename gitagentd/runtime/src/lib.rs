//! How gitagentd's work runs, below every command: [`blocking`] (the one
//! way to run blocking work off the async runtime, cancellable through its
//! interrupt), [`subprocess`] (child processes: a minimal environment,
//! bounded output, deadlines, whole process groups killed) and [`trace`]
//! (a command's step events and their console rendering), [`output`] (what
//! a command sends back to its caller) and [`memory`] (freed memory
//! returned to the system); [`test_hooks`] holds every test-only switch;
//! [`http`] is the one HTTP server stack of the
//! daemon's small endpoints.

pub mod blocking;
pub mod http;
pub mod memory;
pub mod output;
pub mod subprocess;
pub mod test_hooks;
pub mod trace;

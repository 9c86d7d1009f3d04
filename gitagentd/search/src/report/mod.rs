//! What a search tells its caller: the stdout formats ([`output`]: the
//! JSON envelope, brief lines, `--ls` and `--ls-files`) and, while it runs,
//! the stderr side ([`progress`]: terminal progress lines, the `--agent`
//! endpoint, `--debug` events). Reporting renders what the other phases
//! produce; it decides nothing about files, indexes or scores.

pub mod output;
pub mod progress;

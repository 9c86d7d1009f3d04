//! The daemon's Git layer: the only code that knows gix. Callers get
//! domain values (commit summaries, changed files, prepared contexts) and
//! never gix types. Everything here is blocking; async callers run it on
//! `spawn_blocking`. Nothing here writes to a repository or runs `git`.

pub mod history;

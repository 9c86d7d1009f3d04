//! Daemon logs: tracing into daily-rotated files under
//! `${XDG_STATE_HOME:-~/.local/state}/git-agent/logs/`, at most seven kept.
//! Nothing is ever written to a client's stdout.

use git_agent_shared::{Environment, paths, private_fs};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;

const MAX_LOG_FILES: usize = 7;

/// Lines queued for the writer thread before new ones are dropped. The
/// queue is a preallocated ring of this many slots: the library's default
/// (128,000 lines, about 4 MiB resident for the daemon's whole life) is
/// most of an idle daemon's heap, while the daemon logs a few lines per
/// command.
const BUFFERED_LINES: usize = 4096;

/// Installs the file logger; logging is best effort, so a log folder that
/// cannot be created leaves the daemon running without logs.
pub fn init(env: &Environment) -> Option<WorkerGuard> {
    let dir = paths::log_dir(env).ok()?;
    private_fs::ensure_private_dir(&dir).ok()?;
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix("gitagentd")
        .filename_suffix("log")
        .max_log_files(MAX_LOG_FILES)
        .build(&dir)
        .ok()?;
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(BUFFERED_LINES)
        .finish(appender);
    let filter = EnvFilter::try_from_env("GITAGENTD_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_writer(writer).try_init().ok()?;
    Some(guard)
}

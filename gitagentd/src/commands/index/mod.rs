//! `git-agent index sync`, `git-agent index migrate --to v2 [--dry-run]` and
//! `git-agent index gc [--dry-run]`: the explicit maintenance of the search
//! indexes shared through `index.remote` (see [`crate::index_sync`]).

mod gc;

use super::{CommandError, Invocation, Output};
use crate::commands::Services;
use git_agent_shared::cli::{IndexArgs, IndexCommand};
use git_agent_shared::config_file::{ConfigFile, INDEX_REMOTE_KEY};
use git_agent_shared::paths;
use gitagent_sync::local;
use gitagent_sync::migrate::{self, MigratePhase};
use gitagent_sync::sync::{Endpoint, Phase};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub async fn run(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: IndexArgs,
) -> Result<(), CommandError> {
    match args.command {
        IndexCommand::Gc(args) => gc::run(services, invocation, output, cancel, args).await,
        IndexCommand::Sync => sync(invocation, output, cancel).await,
        IndexCommand::Migrate(args) => migrate(invocation, output, cancel, args.dry_run).await,
    }
}

/// `git-agent index migrate --to v2 [--dry-run]`: one exact summary line.
async fn migrate(
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    dry_run: bool,
) -> Result<(), CommandError> {
    let url = configured_remote(invocation).await?;
    let metadata_root = paths::metadata_root(&invocation.env).map_err(CommandError::failed)?;
    let endpoint = Endpoint::new(&url, &metadata_root, &invocation.env).map_err(CommandError::failed)?;
    let report = progress_reporter(output, invocation.stderr_is_terminal, migrate_update);
    let progress: migrate::Progress = Arc::new(move |phase| {
        report(phase);
        Ok(())
    });
    let summary = migrate::migrate(&endpoint, dry_run, progress, cancel).await.map_err(CommandError::failed)?;
    output.stdout(summary.line(dry_run));
    Ok(())
}

fn migrate_update(phase: MigratePhase) -> Update {
    Update::Phase(match phase {
        MigratePhase::Transfer(detail) => return Update::Transfer(detail),
        MigratePhase::Fetching => "index migrate: fetching remote".to_string(),
        MigratePhase::Scanning => "index migrate: scanning v1 snapshots".to_string(),
        MigratePhase::Building { done, total, elapsed } => {
            let mut text = format!("index migrate: building indexes {done}/{total}");
            if done > 0 && total > 0 {
                let percent = done as f64 / total as f64 * 100.0;
                text.push_str(&format!(" ({percent:.1}%, {})", elapsed_text(elapsed)));
            }
            text
        }
        MigratePhase::Installing => "index migrate: installing schema v2".to_string(),
        MigratePhase::Pushing => "index migrate: pushing remote".to_string(),
    })
}

/// An elapsed time rounded to the millisecond, spelled as the original
/// implementation's progress spells durations (`850ms`, `1.25s`, `2m3.5s`).
fn elapsed_text(elapsed: std::time::Duration) -> String {
    let millis = (elapsed.as_micros() + 500) / 1000;
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let minutes = millis / 60_000;
    let rest = millis % 60_000;
    let seconds = format!("{}.{:03}", rest / 1000, rest % 1000);
    let seconds = seconds.trim_end_matches('0').trim_end_matches('.');
    if minutes == 0 { format!("{seconds}s") } else { format!("{minutes}m{seconds}s") }
}

/// `git-agent index sync`: export every completed revision and
/// cached-remote index of this machine, one commit, one push.
async fn sync(invocation: &Invocation, output: &Output, cancel: &CancellationToken) -> Result<(), CommandError> {
    let url = configured_remote(invocation).await?;
    let metadata_root = paths::metadata_root(&invocation.env).map_err(CommandError::failed)?;
    let endpoint = Endpoint::new(&url, &metadata_root, &invocation.env).map_err(CommandError::failed)?;
    let progress = progress_reporter(output, invocation.stderr_is_terminal, sync_update);
    let scan_root = metadata_root.clone();
    let inventory =
        gitagent_runtime::blocking::run_to_end("the local index inventory", move || local::inventory(&scan_root))
            .await?;
    let mut skipped = inventory.skipped.clone();
    let published = endpoint.publish_from(Arc::new(inventory), progress, cancel).await.map_err(CommandError::failed)?;
    skipped.extend(published.skipped.iter().cloned());
    // Why each index was passed over; the stdout summary stays the spec's.
    for skip in &skipped {
        output.stderr(format!("index sync: skipped {}: {}\n", skip.index_dir.display(), skip.reason));
    }
    output.stdout(format!(
        "synced indexes={} records={} skipped={}\n",
        published.indexes,
        published.records,
        skipped.len()
    ));
    Ok(())
}

fn sync_update(phase: Phase) -> Update {
    Update::Phase(match phase {
        Phase::Transfer(detail) => return Update::Transfer(detail),
        Phase::Fetching => "index sync: fetching remote".to_string(),
        Phase::Scanning => "index sync: scanning local indexes".to_string(),
        Phase::Syncing { done, total } => format!("index sync: syncing indexes {done}/{total}"),
        Phase::Pushing => "index sync: pushing remote".to_string(),
    })
}

/// One progress update of `index sync`, `index migrate` or gc's shared
/// phase: a phase's own text, or transport details of the fetch or push
/// phase under way.
pub(super) enum Update {
    Phase(String),
    Transfer(String),
}

/// Progress on stderr, each phase `P` turned into an [`Update`] by
/// `update`: one rewritten line on a terminal, one line per update
/// otherwise.
pub(super) fn progress_reporter<P: 'static>(
    output: &Output,
    interactive: bool,
    update: fn(P) -> Update,
) -> Arc<dyn Fn(P) + Send + Sync> {
    let report = progress_line(output, interactive);
    let texts = std::sync::Mutex::new(ProgressText::default());
    Arc::new(move |phase| {
        let text = texts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).line(update(phase));
        report(text);
    })
}

/// The text of each progress update. Transport details are appended to
/// the fetch or push phase under way as a bracketed suffix (`index sync:
/// fetching remote [receiving objects from <url>: 3/9 objects, 1.2 KiB]`);
/// the phase alone shows until the first one.
#[derive(Default)]
struct ProgressText {
    phase: String,
}

impl ProgressText {
    fn line(&mut self, update: Update) -> String {
        match update {
            Update::Phase(text) => {
                self.phase.clone_from(&text);
                text
            }
            Update::Transfer(detail) => format!("{} [{detail}]", self.phase),
        }
    }
}

/// Writes one progress line on stderr: rewritten in place on a terminal,
/// one line per update otherwise.
fn progress_line(output: &Output, interactive: bool) -> Arc<dyn Fn(String) + Send + Sync> {
    let output = output.clone();
    Arc::new(move |text| {
        if interactive {
            output.progress(text);
        } else {
            output.stderr(format!("{text}\n"));
        }
    })
}

/// The configured `index.remote`, or the specification's failure when it
/// is unset (sync and migrate need it; gc does not).
async fn configured_remote(invocation: &Invocation) -> Result<String, CommandError> {
    let path = paths::config_file(&invocation.env).map_err(CommandError::failed)?;
    let config = gitagent_runtime::blocking::run_to_end("the configuration file", move || ConfigFile::load(&path))
        .await?
        .map_err(CommandError::failed)?;
    if config.index.remote.is_empty() {
        return Err(CommandError::Message(format!(
            "{INDEX_REMOTE_KEY} is not configured\nhint: git-agent config {INDEX_REMOTE_KEY} <git-url>"
        )));
    }
    Ok(config.index.remote)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn transport_details_are_a_bracketed_suffix_of_the_phase_under_way() {
        let mut texts = ProgressText::default();
        let mut line = |phase| texts.line(sync_update(phase));
        let url = "https://git.example.com/index.git";
        assert_eq!(line(Phase::Fetching), "index sync: fetching remote");
        assert_eq!(
            line(Phase::Transfer(format!("receiving objects from {url}: 3/9 objects, 1.2 KiB"))),
            format!("index sync: fetching remote [receiving objects from {url}: 3/9 objects, 1.2 KiB]")
        );
        assert_eq!(line(Phase::Syncing { done: 1, total: 2 }), "index sync: syncing indexes 1/2");
        assert_eq!(line(Phase::Pushing), "index sync: pushing remote");
        assert_eq!(
            line(Phase::Transfer(format!("writing objects to {url}: 2/5 objects"))),
            format!("index sync: pushing remote [writing objects to {url}: 2/5 objects]")
        );
    }

    #[test]
    fn migrate_transport_details_are_the_same_suffix() {
        let mut texts = ProgressText::default();
        let mut line = |phase| texts.line(migrate_update(phase));
        let url = "https://git.example.com/index.git";
        assert_eq!(line(MigratePhase::Fetching), "index migrate: fetching remote");
        assert_eq!(
            line(MigratePhase::Transfer(format!("receiving objects from {url}: 3/9 objects"))),
            format!("index migrate: fetching remote [receiving objects from {url}: 3/9 objects]")
        );
        assert_eq!(line(MigratePhase::Pushing), "index migrate: pushing remote");
        assert_eq!(
            line(MigratePhase::Transfer(format!("writing objects to {url}: 2/5 objects"))),
            format!("index migrate: pushing remote [writing objects to {url}: 2/5 objects]")
        );
    }

    #[test]
    fn building_progress_shows_percentage_and_elapsed_once_an_index_is_done() {
        let phase = |done, millis| MigratePhase::Building { done, total: 3, elapsed: Duration::from_millis(millis) };
        let migrate_phase_text = |phase| ProgressText::default().line(migrate_update(phase));
        assert_eq!(migrate_phase_text(phase(0, 0)), "index migrate: building indexes 0/3");
        assert_eq!(migrate_phase_text(phase(1, 850)), "index migrate: building indexes 1/3 (33.3%, 850ms)");
        assert_eq!(migrate_phase_text(phase(3, 1250)), "index migrate: building indexes 3/3 (100.0%, 1.25s)");
        assert_eq!(elapsed_text(Duration::from_millis(123_500)), "2m3.5s");
        assert_eq!(elapsed_text(Duration::from_secs(2)), "2s");
    }
}

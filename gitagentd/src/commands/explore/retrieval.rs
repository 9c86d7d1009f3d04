//! Explore's semantic leads: before its question joins a batch, a fresh
//! explore runs a warm-only filesystem search of the exploration root
//! with the default limits and the code-only filter. When every selected
//! chunk already has a vector, the ranked results go to the batch as
//! unverified leads; when one is missing the probe stops before any
//! embedding and the question goes without leads (the index is never
//! built in the foreground). A metadata folder the user cannot write (a
//! read-only HOME) also leaves the question without leads, with a
//! one-line warning, instead of failing it. After a batch with warm leads
//! is collected, its leader runs one ordinary index-only synchronization beside the
//! provider conversation when an index remote is configured for a
//! project with an origin ([`deferred_sync`]); its outcome is waited for
//! before any session is persisted.

use super::phases::Phases;
use super::{CommandError, Invocation, Output};
use crate::commands::Services;
use git_agent_shared::environment::vars;
use gitagent_search::index::embeddings::{Backend, LocalSource};
use gitagent_search::{self as search, SearchError, SearchRequest, report::progress::Feedback, settings};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use tokio_util::sync::CancellationToken;

/// One lead as the model sees it.
#[derive(Debug, Serialize)]
struct Lead {
    /// `path:start-end`, relative to the exploration root.
    range: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    symbol: Option<String>,
    relatedness: f64,
    excerpt: String,
}

/// What the probe found.
pub enum Probe {
    /// Every selected chunk had a vector: the ranked leads (possibly none).
    Warm(serde_json::Value),
    /// A vector was missing, or embeddings are not configured: no leads.
    Cold,
}

/// The shared settings of the probe and the deferred synchronization.
fn request(
    invocation: &Invocation,
    root: &Path,
    question: &str,
    index_only: bool,
) -> Result<Option<SearchRequest>, SearchError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // An unreadable configuration file only costs the leads.
    let config = git_agent_shared::paths::config_file(&invocation.env)
        .ok()
        .and_then(|path| git_agent_shared::config_file::ConfigFile::load(&path).ok())
        .unwrap_or_default();
    let mut embedding =
        match settings::resolve(&settings::SettingFlags::default(), &invocation.env, &config.search, cores) {
            Ok(embedding) => embedding,
            // Remote embeddings without credentials: there is no index to read.
            Err(settings::SettingsError::Environment(_)) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
    embedding.redactor = invocation.redactor.clone();
    let selection = search::select(root, &invocation.env, &[])?;
    Ok(Some(SearchRequest {
        selection,
        code_only: true,
        no_tests: false,
        reindex: false,
        index_only,
        warm_only: !index_only,
        query: question.to_string(),
        min_score: super::super::search::DEFAULT_MIN_SCORE,
        limit: super::super::search::DEFAULT_LIMIT as usize,
        settings: embedding,
        ranking: settings::ranking(&invocation.env)?,
        temp_dir: temp_dir(invocation),
        started: SystemTime::now(),
        remote: None,
    }))
}

fn temp_dir(invocation: &Invocation) -> PathBuf {
    invocation.env.absolute_dir(vars::TMPDIR).filter(|dir| dir.is_dir()).unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// Search progress for explore: nothing on the console but the transient
/// waiting line, and each search step as a `<prefix>.<step>` phase.
fn feedback(invocation: &Invocation, output: &Output, phases: &Phases, prefix: &'static str) -> Arc<Feedback> {
    let phases = phases.clone();
    let feedback = Feedback::new(output.clone(), false, false, invocation.stderr_is_terminal, &temp_dir(invocation))
        .with_timings(Box::new(move |step, duration| phases.report(&format!("{prefix}.{step}"), duration)));
    Arc::new(feedback)
}

/// The warm-only probe of `question` at `root`.
pub async fn probe(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    phases: &Phases,
    root: &Path,
    question: &str,
    cancel: &CancellationToken,
) -> Result<Probe, CommandError> {
    let (env_invocation, root_owned, question_owned) = (invocation.clone(), root.to_path_buf(), question.to_string());
    let request = gitagent_runtime::blocking::run("the explore search scope", cancel, move |_| {
        request(&env_invocation, &root_owned, &question_owned, false)
    })
    .await??;
    let Some(mut request) = request else { return Ok(Probe::Cold) };
    // A probe never downloads the local model: with none yet, there is no
    // index it could have built either.
    if let Backend::Local { source: LocalSource::Pinned { spec, models_dir, .. }, .. } = &request.settings.backend
        && !models_dir.join(spec.folder_name()).is_dir()
    {
        return Ok(Probe::Cold);
    }
    let prefix = request.selection.root.clone();
    let feedback = feedback(invocation, output, phases, "semantic_search");
    if let Err(error) = services.search.prepare_embeddings(&mut request.settings, &feedback, cancel).await {
        feedback.finish(None);
        output.stderr(format!(
            "warning: explore goes without semantic leads: {}\n",
            git_agent_shared::error_chain::Chain(&error)
        ));
        return Ok(Probe::Cold);
    }
    let result = services.search.search(request, Arc::clone(&feedback), cancel.clone()).await;
    feedback.finish(None);
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(SearchError::NotWarm) => return Ok(Probe::Cold),
        // The leads are optional: a metadata folder this user cannot
        // write (a read-only HOME) costs them, not the answer.
        Err(error) if is_unwritable(&error) => {
            output.stderr(format!(
                "warning: explore goes without semantic leads: {}\n",
                git_agent_shared::error_chain::Chain(&error)
            ));
            return Ok(Probe::Cold);
        }
        Err(error) => return Err(error.into()),
    };
    // Search paths are relative to the index root; leads are relative to
    // the exploration root beneath it.
    // Both are keys; the strip is by bytes, so either may be quoted.
    use git_agent_shared::quote::{key_bytes, utf8_or_quoted};
    let below =
        root.strip_prefix(&prefix).ok().map(|rel| std::os::unix::ffi::OsStrExt::as_bytes(rel.as_os_str()).to_vec());
    let leads: Vec<Lead> = outcome
        .hits
        .iter()
        .filter_map(|hit| {
            let path = match below.as_deref() {
                None | Some(b"") => hit.path.clone(),
                Some(rel) => {
                    let bytes = key_bytes(&hit.path);
                    utf8_or_quoted(bytes.strip_prefix(rel)?.strip_prefix(b"/")?).into_owned()
                }
            };
            Some(Lead {
                range: format!("{path}:{}-{}", hit.start_line, hit.end_line),
                symbol: hit.symbol.as_ref().map(|symbol| format!("{} {}", symbol.kind, symbol.name)),
                relatedness: (hit.scores.rank * 1000.0).round() / 1000.0,
                excerpt: hit.excerpt.clone(),
            })
        })
        .collect();
    Ok(Probe::Warm(serde_json::to_value(leads).map_err(CommandError::failed)?))
}

/// Whether `error` comes from storage this user may not write: a
/// permission refused or a read-only file system, anywhere in its chain.
fn is_unwritable(error: &SearchError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && matches!(io.kind(), std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem)
        {
            return true;
        }
        cause = current.source();
    }
    false
}

/// Whether a batch with warm leads needs the deferred synchronization:
/// an index remote is configured and the project has an origin.
pub fn needs_sync(invocation: &Invocation, root: &Path) -> bool {
    let Ok(path) = git_agent_shared::paths::config_file(&invocation.env) else { return false };
    let configured =
        git_agent_shared::config_file::ConfigFile::load(&path).is_ok_and(|config| !config.index.remote.is_empty());
    configured && gitagent_git::identity::ProjectIdentity::resolve(root).is_ok_and(|identity| identity.origin.is_some())
}

/// The one ordinary index-only synchronization of a batch's workspace,
/// after its collection.
pub async fn deferred_sync(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    phases: &Phases,
    root: &Path,
    cancel: &CancellationToken,
) -> Result<(), CommandError> {
    let (env_invocation, root_owned) = (invocation.clone(), root.to_path_buf());
    let request = gitagent_runtime::blocking::run("the explore search scope", cancel, move |_| {
        request(&env_invocation, &root_owned, "", true)
    })
    .await??;
    let Some(mut request) = request else { return Ok(()) };
    let feedback = feedback(invocation, output, phases, "index_sync");
    if let Err(error) = services.search.prepare_embeddings(&mut request.settings, &feedback, cancel).await {
        feedback.finish(Some(&git_agent_shared::error_chain::render(&error)));
        return Err(error.into());
    }
    // The same confirmation an ordinary `search --index` runs: with
    // `index.remote`, the committed HEAD revision is confirmed against the
    // remote (a failure is terminal) before the working tree's index.
    let head = crate::commands::search::HeadRevision {
        invocation,
        root: root.to_path_buf(),
        scopes: Vec::new(),
        began: std::time::Instant::now(),
        template: &request,
    };
    let result = match head.confirm(services, &feedback, cancel).await {
        Ok(()) => services
            .search
            .search(request, Arc::clone(&feedback), cancel.clone())
            .await
            .map(|_| ())
            .map_err(CommandError::from),
        Err(error) => Err(error),
    };
    feedback.finish(result.as_ref().err().map(ToString::to_string).as_deref());
    result
}

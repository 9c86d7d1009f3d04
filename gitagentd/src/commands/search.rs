//! `git-agent search`: validates the flags of each form (search, `--index`,
//! `--ls`, `--ls-files`), hands the work to the daemon's search service,
//! and writes the result on stdout only when the command succeeds.

use super::{CommandError, Invocation, Output};
use crate::commands::Services;
use git_agent_shared::cli::SearchArgs;
use git_agent_shared::environment::vars;
use git_agent_shared::timefmt;
use gitagent_search::{
    self as search, SearchError, SearchRequest, report::output as render, report::progress::Feedback, settings,
};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub(crate) const DEFAULT_MIN_SCORE: f64 = 0.70;
pub(crate) const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 100;

impl From<SearchError> for CommandError {
    fn from(error: SearchError) -> Self {
        if error.is_usage() { CommandError::usage(error) } else { CommandError::failed(error) }
    }
}

pub async fn run(
    services: &Arc<Services>,
    invocation: &Invocation,
    output: &Output,
    cancel: &CancellationToken,
    args: SearchArgs,
) -> Result<(), CommandError> {
    // A confirmation of `index.remote` that completes after this instant
    // may be reused by this search.
    let began = std::time::Instant::now();
    if [args.ls, args.ls_remotes, args.ls_files].iter().filter(|set| **set).count() > 1 {
        return Err(CommandError::Usage("search accepts only one of --ls, --ls-remotes, or --ls-files".into()));
    }
    if let Some(score) = args.min_score {
        validate_min_score(score)?;
    }
    let query = args.query.join(" ").trim().to_string();
    if args.ls_remotes {
        return list_remotes(invocation, output, &args, &query).await;
    }
    if args.ls || args.ls_files {
        return list(invocation, output, &args, &query).await;
    }
    let format = match args.format.as_deref() {
        Some(format @ ("json" | "brief")) => format,
        Some(other) => return Err(CommandError::Usage(format!("--format must be json or brief, got {other:?}"))),
        None if args.agent => "brief",
        None => "json",
    };
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(CommandError::Usage(format!("--limit must be between 1 and {MAX_LIMIT}, got {limit}")));
    }
    if args.index && !query.is_empty() {
        return Err(CommandError::Usage(
            "search --index does not accept a query\nhint: git-agent search --index, then git-agent search <query...>"
                .into(),
        ));
    }
    if !args.index && query.is_empty() {
        return Err(CommandError::Usage("search requires a query\nhint: git-agent search <query...>".into()));
    }
    let scopes = scopes(&args)?;
    let flags = settings::SettingFlags {
        model: args.embedding_model.clone(),
        dimensions: args.embedding_dimensions,
        base_url: args.base_url.clone(),
        timeout: args.timeout.clone(),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = search_config(invocation).await?;
    let mut embedding = settings::resolve(&flags, &invocation.env, &config, cores).map_err(SearchError::from)?;
    embedding.redactor = invocation.redactor.clone();
    let ranking = settings::ranking(&invocation.env).map_err(SearchError::from)?;
    let cwd = invocation.cwd.clone();
    let env = invocation.env.clone();
    let rev = args.rev.clone();
    let remote = args.remote.clone();
    let head_scopes = scopes.clone();
    let (selection, remote) = gitagent_runtime::blocking::run_to_end("the search scope", move || match remote {
        Some(remote) => search::select_remote(&remote, rev.as_deref(), &cwd, &env, &scopes)
            .map(|(selection, source)| (selection, Some(source))),
        None => search::select_source(&cwd, &env, &scopes, rev.as_deref()).map(|selection| (selection, None)),
    })
    .await??;
    let temp_dir = temp_dir(invocation);
    let feedback =
        Arc::new(Feedback::new(output.clone(), args.debug, args.agent, invocation.stderr_is_terminal, &temp_dir));
    if let Err(error) = services.search.prepare_embeddings(&mut embedding, &feedback, cancel).await {
        feedback.finish(Some(&git_agent_shared::error_chain::render(&error)));
        return Err(error.into());
    }
    let request = SearchRequest {
        selection: selection.clone(),
        code_only: args.code,
        no_tests: args.no_tests,
        reindex: args.reindex,
        index_only: args.index,
        warm_only: false,
        query: query.clone(),
        min_score: args.min_score.unwrap_or(DEFAULT_MIN_SCORE),
        limit: limit as usize,
        settings: embedding.clone(),
        ranking,
        temp_dir: temp_dir.clone(),
        started: std::time::SystemTime::now(),
        remote,
    };
    let started = std::time::Instant::now();
    // index.remote: import the revision's shared records first, publish after.
    let confirmation =
        gitagent_sync::confirm::prepare(&invocation.env, &selection, &embedding.model, embedding.dimensions, began)
            .await
            .map_err(index_remote_failed)?
            .map(|confirmation| confirmation.with_crash_at(services.search.crash_at()));
    if selection.revision.is_none() {
        let head =
            HeadRevision { invocation, root: invocation.cwd.clone(), scopes: head_scopes, began, template: &request };
        head.confirm(services, &feedback, cancel).await?;
    }
    if let Some(confirmation) = &confirmation {
        confirmation.import(cancel).await.map_err(index_remote_failed)?;
    }
    let result = services.search.search(request, Arc::clone(&feedback), cancel.clone()).await;
    if let (Ok(_), Some(confirmation)) = (&result, &confirmation) {
        confirmation.publish(cancel).await.map_err(index_remote_failed)?;
    }
    let outcome = match result {
        Ok(outcome) => {
            feedback.finish(None);
            outcome
        }
        Err(error) => {
            feedback.finish(Some(&git_agent_shared::error_chain::render(&error)));
            return Err(error.into());
        }
    };
    // Remote mode resolved its revision (and index folder) during the search.
    let selection = outcome.selection.clone();
    let index_status = if outcome.reused > 0 { "hit" } else { "miss" };
    feedback.event(
        "search_index",
        &[
            ("index", search::report::progress::Field::Str(index_status.into())),
            ("results", search::report::progress::Field::Int(outcome.hits.len() as i64)),
            ("files", search::report::progress::Field::Int(outcome.files as i64)),
            ("chunks", search::report::progress::Field::Int(outcome.chunks as i64)),
            ("reused_chunks", search::report::progress::Field::Int(outcome.reused as i64)),
            ("embedded_chunks", search::report::progress::Field::Int(outcome.embedded as i64)),
            ("index_dir", search::report::progress::Field::Str(selection.index_dir.display().to_string())),
            ("total", search::report::progress::Field::Duration(started.elapsed())),
        ],
    );
    let results: Vec<render::ResultOut> = outcome.hits.iter().map(render::ResultOut::from).collect();
    if format == "brief" {
        let freshness = render::freshness(outcome.chunks, outcome.embedded, outcome.reused);
        output.stdout(render::brief(selection.mode(), freshness, &results));
        return Ok(());
    }
    let envelope = render::SearchOutput {
        query,
        source: selection.source_out(),
        min_score: args.min_score.unwrap_or(DEFAULT_MIN_SCORE),
        retrieval: render::Retrieval {
            mode: "embeddings",
            embedding_backend: embedding.backend.name(),
            embedding_model: embedding.model.clone(),
            index: index_status,
            dimensions: embedding.dimensions,
            filters: render::Filters { code: args.code, no_tests: args.no_tests, scope: selection.scope.clone() },
            skipped: outcome.skipped.into(),
        },
        results,
        replay: (&outcome.replay).into(),
    };
    output.stdout(render::to_json_line(&envelope));
    Ok(())
}

/// The `search.*` keys of the caller's configuration file.
pub(crate) async fn search_config(
    invocation: &Invocation,
) -> Result<git_agent_shared::config_file::SearchConfig, CommandError> {
    let path = git_agent_shared::paths::config_file(&invocation.env).map_err(CommandError::failed)?;
    let config = gitagent_runtime::blocking::run_to_end("the configuration file", move || {
        git_agent_shared::config_file::ConfigFile::load(&path)
    })
    .await?
    .map_err(CommandError::failed)?;
    Ok(config.search)
}

/// Filesystem mode with `index.remote`: the committed `HEAD` revision index
/// is confirmed against the remote, ensured, and published before the
/// working tree is searched, so only committed content is ever shared (the
/// working tree's own index, with its dirty-only vectors, never is). The
/// working-tree search then reuses the revision's vectors. Explore's
/// deferred index-only synchronization runs the same confirmation.
pub(crate) struct HeadRevision<'a> {
    pub invocation: &'a Invocation,
    /// The folder whose committed `HEAD` is selected.
    pub root: PathBuf,
    pub scopes: Vec<String>,
    /// When the command began: only a remote observation completed after
    /// it may be reused.
    pub began: std::time::Instant,
    /// The working-tree search, whose settings the index-only run shares.
    pub template: &'a SearchRequest,
}

impl HeadRevision<'_> {
    pub(crate) async fn confirm(
        self,
        services: &Arc<Services>,
        feedback: &Arc<Feedback>,
        cancel: &CancellationToken,
    ) -> Result<(), CommandError> {
        let template = self.template;
        // Non-Git folders and repositories without origin stay local-only.
        if template.selection.origin_identity.is_empty() {
            return Ok(());
        }
        let env = &self.invocation.env;
        if gitagent_sync::confirm::configured_remote(env).await.map_err(CommandError::failed)?.is_none() {
            return Ok(());
        }
        let (cwd, head_env, scopes) = (self.root, env.clone(), self.scopes);
        let selected = gitagent_runtime::blocking::run_to_end("the search scope", move || {
            search::select_source(&cwd, &head_env, &scopes, Some("HEAD"))
        })
        .await?;
        // A repository without a commit has no revision to share.
        let Ok(head) = selected else {
            return Ok(());
        };
        let settings = &template.settings;
        let confirmation =
            gitagent_sync::confirm::prepare(env, &head, &settings.model, settings.dimensions, self.began)
                .await
                .map_err(index_remote_failed)?;
        let Some(confirmation) =
            confirmation.map(|confirmation| confirmation.with_crash_at(services.search.crash_at()))
        else {
            return Ok(());
        };
        confirmation.import(cancel).await.map_err(index_remote_failed)?;
        let request = SearchRequest {
            selection: head,
            index_only: true,
            reindex: false,
            query: String::new(),
            remote: None,
            ..template.clone()
        };
        services.search.search(request, Arc::clone(feedback), cancel.clone()).await?;
        confirmation.publish(cancel).await.map_err(index_remote_failed)?;
        Ok(())
    }
}

/// A failure of `index.remote` during a search: the spec wants no silent
/// local fallback, so the search fails, telling an offline user how to
/// search anyway (unless the cause already holds its own hint).
fn index_remote_failed(error: impl std::error::Error + Send + Sync + 'static) -> CommandError {
    CommandError::failed(IndexRemoteFailed { source: Box::new(error) })
}

/// The cause of an `index.remote` failure, and the hint to go without it.
#[derive(Debug, thiserror::Error)]
#[error("{}", if git_agent_shared::error_chain::render(.source.as_ref()).contains("\nhint: ") { "" } else { INDEX_REMOTE_HINT })]
struct IndexRemoteFailed {
    source: Box<dyn std::error::Error + Send + Sync>,
}

const INDEX_REMOTE_HINT: &str = "\nhint: to search without it, run git-agent config --unset index.remote (and set it again once the remote is reachable)";

fn validate_min_score(score: f64) -> Result<(), CommandError> {
    if !score.is_finite() || score <= 0.0 || score > 1.0 {
        return Err(CommandError::Usage(format!(
            "--min-score must be finite, > 0, and <= 1, got {score}\nhint: the default is {DEFAULT_MIN_SCORE}"
        )));
    }
    Ok(())
}

fn scopes(args: &SearchArgs) -> Result<Vec<String>, CommandError> {
    match args.scope.as_deref() {
        Some(value) => search::paths::split_scope_flag(value).map_err(CommandError::usage),
        None => Ok(Vec::new()),
    }
}

/// The caller's temporary folder (for body snapshots and the `--agent`
/// socket).
fn temp_dir(invocation: &Invocation) -> PathBuf {
    invocation.env.absolute_dir(vars::TMPDIR).filter(|dir| dir.is_dir()).unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// `--ls` and `--ls-files`.
async fn list(invocation: &Invocation, output: &Output, args: &SearchArgs, query: &str) -> Result<(), CommandError> {
    let mode = if args.ls { "--ls" } else { "--ls-files" };
    let mut rejected: Vec<&str> = Vec::new();
    let flag = |set: bool, name: &'static str, rejected: &mut Vec<&str>| {
        if set {
            rejected.push(name);
        }
    };
    flag(args.limit.is_some(), "limit", &mut rejected);
    flag(args.min_score.is_some(), "min-score", &mut rejected);
    flag(args.code, "code", &mut rejected);
    flag(args.agent, "agent", &mut rejected);
    flag(args.index, "index", &mut rejected);
    flag(args.reindex, "reindex", &mut rejected);
    flag(args.embedding_model.is_some(), "embedding-model", &mut rejected);
    flag(args.embedding_dimensions.is_some(), "embedding-dimensions", &mut rejected);
    flag(args.base_url.is_some(), "base-url", &mut rejected);
    flag(args.timeout.is_some(), "timeout", &mut rejected);
    flag(args.debug, "debug", &mut rejected);
    if args.ls {
        flag(args.rev.is_some(), "rev", &mut rejected);
        flag(args.scope.is_some(), "scope", &mut rejected);
        flag(args.no_tests, "no-tests", &mut rejected);
    }
    if let Some(name) = rejected.first() {
        return Err(CommandError::Usage(format!("search {mode} does not accept --{name}")));
    }
    if !query.is_empty() {
        return Err(CommandError::Usage(format!("search {mode} does not accept a query")));
    }
    let cwd = invocation.cwd.clone();
    let env = invocation.env.clone();
    if args.ls {
        let format = args.format.as_deref().unwrap_or("text");
        if format != "text" && format != "json" {
            return Err(CommandError::Usage(format!("--format must be text or json with --ls, got {format:?}")));
        }
        let remote = args.remote.clone();
        let (repo_dir, indexes) =
            gitagent_runtime::blocking::run_to_end("the search index list", move || match remote {
                Some(remote) => search::list_remote_indexes(&remote, &cwd, &env).map(|(dir, list)| (Some(dir), list)),
                None => search::list_indexes(&cwd, &env).map(|list| (None, list)),
            })
            .await??;
        if format == "json" {
            output.stdout(render::to_json_line(&indexes));
        } else {
            let created =
                |text: &str| timefmt::parse_rfc3339(text).map(timefmt::format_rfc3339_seconds).unwrap_or_default();
            let mut text = String::new();
            if let Some(dir) = repo_dir {
                text.push_str(&format!("remote repo={}\n", dir.display()));
            }
            text.push_str(&render::format_indexes(&indexes, &created));
            output.stdout(text);
        }
        return Ok(());
    }
    let format = args.format.as_deref().unwrap_or("tree");
    if format != "tree" && format != "json" {
        return Err(CommandError::Usage(format!("--format must be tree or json with --ls-files, got {format:?}")));
    }
    let scopes = scopes(args)?;
    let no_tests = args.no_tests;
    let rev = args.rev.clone();
    let remote = args.remote.clone();
    let listing = gitagent_runtime::blocking::run_to_end("the search index files", move || match remote {
        Some(remote) => search::list_remote_files(&remote, &cwd, &env, &scopes, rev.as_deref(), no_tests),
        None => search::list_files(&cwd, &env, &scopes, rev.as_deref(), no_tests),
    })
    .await??;
    if format == "json" {
        output.stdout(render::to_json_line(&listing));
    } else {
        output.stdout(render::format_tree(&listing.files));
    }
    Ok(())
}

/// `--ls-remotes`: the cached remotes' metadata; no fetch, no API key.
async fn list_remotes(
    invocation: &Invocation,
    output: &Output,
    args: &SearchArgs,
    query: &str,
) -> Result<(), CommandError> {
    let rejected = [
        (args.rev.is_some(), "rev"),
        (args.remote.is_some(), "remote"),
        (args.scope.is_some(), "scope"),
        (args.limit.is_some(), "limit"),
        (args.min_score.is_some(), "min-score"),
        (args.code, "code"),
        (args.no_tests, "no-tests"),
        (args.agent, "agent"),
        (args.index, "index"),
        (args.reindex, "reindex"),
        (args.embedding_model.is_some(), "embedding-model"),
        (args.embedding_dimensions.is_some(), "embedding-dimensions"),
        (args.base_url.is_some(), "base-url"),
        (args.timeout.is_some(), "timeout"),
        (args.debug, "debug"),
    ];
    if let Some((_, name)) = rejected.iter().find(|(set, _)| *set) {
        return Err(CommandError::Usage(format!("search --ls-remotes does not accept --{name}")));
    }
    if !query.is_empty() {
        return Err(CommandError::Usage("search --ls-remotes does not accept a query".into()));
    }
    let format = args.format.as_deref().unwrap_or("text");
    if !matches!(format, "text" | "json" | "completion") {
        return Err(CommandError::Usage(format!(
            "--format must be text, json, or completion with --ls-remotes, got {format:?}"
        )));
    }
    let root = git_agent_shared::paths::metadata_root(&invocation.env).map_err(SearchError::from)?;
    let remotes =
        gitagent_runtime::blocking::run_to_end("the remote list", move || search::source::remote::list(&root)).await?;
    output.stdout(match format {
        "json" => render::to_json_line(&remotes),
        "completion" => search::source::remote::format_completion(&remotes).into_bytes(),
        _ => search::source::remote::format_remotes(&remotes).into_bytes(),
    });
    Ok(())
}

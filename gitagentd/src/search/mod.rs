//! `git-agent search` in filesystem mode, owned by the daemon.
//!
//! The daemon holds, per user, the global index single flight (one index
//! production at a time per metadata root, in this process and, through
//! the `search-index-producer.lock` flock, against any other process), a
//! cache of [`live::LiveIndex`] views that stay mapped between searches
//! (dropped when their files change on disk or the cache is full), the
//! query history databases, and the embeddings connection pool.
//!
//! A search: resolve the project and index folder from the caller's
//! directory and environment; take the single flight; bring the index up
//! to date ([`refresh`]), embedding what is missing; publish; release the
//! single flight; then embed (or recall) the query, rank ([`query`]) and
//! record the query in the index's history. Module map: [`discovery`],
//! [`textkind`], [`paths`] choose files; [`chunking`] and [`golang`] cut
//! them; [`bodies`] snapshots their text; [`embeddings`] talks to the
//! endpoint; [`store`] owns the on-disk format; [`ranking`] scores;
//! [`history`] remembers queries; [`output`] renders; [`progress`]
//! reports.

pub mod bodies;
pub mod cache;
pub mod chunking;
pub mod discovery;
pub mod embeddings;
pub mod golang;
pub mod history;
pub mod live;
pub mod output;
pub mod paths;
pub mod progress;
pub mod query;
pub mod ranking;
pub mod refresh;
pub mod settings;
pub mod spool;
pub mod store;
pub mod syntax;
pub mod textkind;

use cache::FolderCache;
use embeddings::{EmbeddingError, EmbeddingSettings, EmbeddingsClient};
use git_agent_shared::identity::{IdentityError, ProjectIdentity};
use git_agent_shared::{Environment, timefmt};
use history::{History, HistoryError, QueryKey, Replay, StoredFilters};
use live::LiveIndex;
use progress::{Feedback, Field, Update};
use refresh::{RefreshError, RefreshRequest};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Instant, SystemTime};
use store::{CrashPoint, Manifest, StoreError};
use tokio_util::sync::CancellationToken;

/// How many physical indexes the daemon keeps mapped at once.
const CACHED_INDEXES: usize = 8;
/// How many bytes of mapped vectors (and their records) those may use
/// together; the view just used always stays.
const CACHED_INDEX_BYTES: u64 = 1 << 30;
/// How many query history databases stay open.
const CACHED_HISTORIES: usize = 8;

/// Why a search, `--ls` or `--ls-files` failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A `--scope` value was refused (a usage error).
    #[error(transparent)]
    Scope(#[from] paths::ScopeError),
    /// A flag or the environment's embedding settings are wrong; a bad flag
    /// is a usage error.
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error(transparent)]
    MissingHome(#[from] git_agent_shared::environment::MissingHome),
    #[error(transparent)]
    Identity(#[from] IdentityError),
    #[error(transparent)]
    Refresh(#[from] RefreshError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embedding(#[from] EmbeddingError),
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("no search index at {dir}\nhint: run `git-agent search --index` first{scope_hint}")]
    NoIndex { dir: PathBuf, scope_hint: String },
    #[error("a search worker failed: {0}")]
    Worker(#[from] crate::blocking::BlockingError),
    #[error("the search was cancelled")]
    Cancelled,
}

impl SearchError {
    /// Whether the caller's flags are at fault (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Scope(_) | Self::Settings(settings::SettingsError::Flag(_)))
    }
}

/// Where a search reads and writes.
#[derive(Debug, Clone)]
pub struct Selection {
    pub root: PathBuf,
    pub metadata_dir: PathBuf,
    pub index_dir: PathBuf,
    /// Root-relative, normalized; the caller's directory when it is below
    /// the root and no scope was given.
    pub scope: Vec<String>,
    /// The scope shares the root's physical cache (it opts into no
    /// normally skipped path).
    pub shared_scope: bool,
    pub origin_identity: String,
}

impl Selection {
    pub fn root_text(&self) -> String {
        self.root.display().to_string()
    }
}

/// Resolves the project, scope and index folder for `cwd`.
pub fn select(cwd: &Path, env: &Environment, raw_scopes: &[String]) -> Result<Selection, SearchError> {
    let identity = ProjectIdentity::resolve(cwd)?;
    let metadata_root = git_agent_shared::paths::metadata_root(env)?;
    let metadata_dir = metadata_root.join(identity.id());
    let mut scope = paths::normalize_scopes(raw_scopes)?;
    let cwd_clean = PathBuf::from(git_agent_shared::giturl::clean_path(&cwd.to_string_lossy()));
    let relative = cwd_clean
        .strip_prefix(&identity.root)
        .ok()
        .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        .filter(|rel| !rel.is_empty());
    if let Some(rel) = relative {
        if scope.is_empty() {
            scope = vec![rel];
        } else {
            scope = scope.iter().map(|item| paths::clean_relative(&format!("{rel}/{item}"))).collect();
            scope.sort();
            scope.dedup();
        }
    }
    let skipped = paths::scope_uses_skipped_path(&scope);
    let root_text = identity.root.display().to_string();
    let index_dir = store::filesystem_index_dir(&metadata_dir, &root_text, skipped.then_some(scope.as_slice()));
    Ok(Selection {
        root: identity.root.clone(),
        metadata_dir,
        index_dir,
        shared_scope: !scope.is_empty() && !skipped,
        scope,
        origin_identity: identity.origin.unwrap_or_default(),
    })
}

/// One search or `--index` run.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub selection: Selection,
    pub code_only: bool,
    pub no_tests: bool,
    pub reindex: bool,
    pub index_only: bool,
    pub query: String,
    pub min_score: f64,
    pub limit: usize,
    pub settings: EmbeddingSettings,
    pub ranking: settings::Ranking,
    pub temp_dir: PathBuf,
    pub started: SystemTime,
}

/// What the command renders.
#[derive(Debug)]
pub struct SearchOutcome {
    pub hits: Vec<query::Hit>,
    pub replay: Replay,
    pub files: usize,
    pub chunks: usize,
    pub reused: usize,
    pub embedded: usize,
    pub skipped: discovery::SkipCounts,
}

/// Daemon-wide search state. See the module documentation.
pub struct SearchService {
    /// HTTP clients keyed by the callers' network settings.
    clients: crate::provider::HttpClients,
    flights: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    indexes: Mutex<FolderCache<Arc<LiveIndex>>>,
    histories: Mutex<FolderCache<Arc<History>>>,
    query_flights: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
    crash_at: Option<CrashPoint>,
}

impl std::fmt::Debug for SearchService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchService").field("crash_at", &self.crash_at).finish_non_exhaustive()
    }
}

impl Default for SearchService {
    /// Reads only the test-only fault injection switch (test builds) from
    /// the daemon's own environment; everything else comes from each
    /// invocation.
    fn default() -> Self {
        #[cfg(feature = "test-hooks")]
        let crash_at = std::env::var(git_agent_shared::environment::vars::GITAGENTD_SEARCH_CRASH_AT)
            .ok()
            .and_then(|value| CrashPoint::parse(&value));
        #[cfg(not(feature = "test-hooks"))]
        let crash_at = None;
        Self::new(crash_at)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, SearchError> {
    Ok(crate::blocking::run_to_end("search", work).await?)
}

impl SearchService {
    pub fn new(crash_at: Option<CrashPoint>) -> Self {
        Self {
            clients: crate::provider::HttpClients::default(),
            flights: Mutex::new(HashMap::new()),
            indexes: Mutex::new(FolderCache::new(CACHED_INDEXES, CACHED_INDEX_BYTES)),
            histories: Mutex::new(FolderCache::new(CACHED_HISTORIES, u64::MAX)),
            query_flights: Mutex::new(HashMap::new()),
            crash_at,
        }
    }

    async fn client(&self, settings: &EmbeddingSettings) -> Result<EmbeddingsClient, SearchError> {
        Ok(EmbeddingsClient::new(&self.clients, settings).await?)
    }

    fn history(&self, metadata_dir: &Path) -> Result<Arc<History>, SearchError> {
        let path = store::search_root(metadata_dir).join("history.sqlite3");
        let mut histories = lock(&self.histories);
        if let Some(history) = histories.get(&path) {
            return Ok(history);
        }
        let history = Arc::new(History::open(&path)?);
        histories.put(&path, Arc::clone(&history), 0);
        Ok(history)
    }

    /// Waits for the global index single flight of the metadata root that
    /// holds `metadata_dir`: first this daemon's own queue, then the
    /// cross-process lock file.
    async fn take_flight(
        &self,
        metadata_dir: &Path,
        feedback: &Feedback,
        cancel: &CancellationToken,
    ) -> Result<(tokio::sync::OwnedMutexGuard<()>, store::FileLock), SearchError> {
        let root = metadata_dir.parent().unwrap_or(metadata_dir);
        let path = store::lock_path(&root.join(store::PRODUCER_LOCK));
        let mutex = Arc::clone(lock(&self.flights).entry(path.clone()).or_default());
        let mut announced = false;
        let guard = match Arc::clone(&mutex).try_lock_owned() {
            Ok(guard) => guard,
            Err(_) => {
                announced = true;
                feedback.update(Update { waiting: true, ..Update::default() });
                tokio::select! {
                    guard = mutex.lock_owned() => guard,
                    _ = cancel.cancelled() => return Err(SearchError::Cancelled),
                }
            }
        };
        loop {
            if let Some(file_lock) = store::try_lock(&path)? {
                return Ok((guard, file_lock));
            }
            if !announced {
                announced = true;
                feedback.update(Update { waiting: true, ..Update::default() });
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
                _ = cancel.cancelled() => return Err(SearchError::Cancelled),
            }
        }
    }

    /// Runs a search (or `--index`) to completion.
    pub async fn search(
        &self,
        request: SearchRequest,
        feedback: Arc<Feedback>,
        cancel: CancellationToken,
    ) -> Result<SearchOutcome, SearchError> {
        let started = Instant::now();
        let selection = request.selection.clone();
        let settings = request.settings.clone();
        let client = self.client(&settings).await?;
        let (flight, file_lock) = self.take_flight(&selection.metadata_dir, &feedback, &cancel).await?;
        feedback.timing_event("sync", started.elapsed());

        let previous = lock(&self.indexes).get(&selection.index_dir);
        let refresh_request = RefreshRequest {
            root: selection.root.clone(),
            metadata_dir: selection.metadata_dir.clone(),
            index_dir: selection.index_dir.clone(),
            scope: selection.scope.clone(),
            shared_scope: selection.shared_scope,
            code_only: request.code_only,
            reindex: request.reindex,
            started_ns: timefmt::unix_nanos(request.started),
            model: settings.model.clone(),
            dimensions: settings.dimensions,
            max_input_chars: settings.max_input_chars,
            manifest: Manifest {
                mode: "filesystem".into(),
                root: selection.root_text(),
                origin_identity: selection.origin_identity.clone(),
                ..Manifest::default()
            },
            temp_dir: request.temp_dir.clone(),
            crash_at: self.crash_at,
        };
        let reporter = Arc::clone(&feedback);
        let token = cancel.clone();
        let prepared = blocking(move || {
            let cancelled = move || token.is_cancelled();
            refresh::prepare(refresh_request, previous, reporter.as_ref(), &cancelled)
        })
        .await??;
        let candidate_paths = prepared.candidate_paths.clone();
        let (files, chunks, reused, embedded, skipped) =
            (prepared.files, prepared.chunks, prepared.reused, prepared.embedded_chunks, prepared.skipped);

        // New vectors go to a spool file as their batches arrive (see
        // `spool`); a write failure stops using it and is reported below.
        let mut spool = spool::VectorSpool::new();
        let mut spool_error: Option<std::io::Error> = None;
        let embed_started = Instant::now();
        if !prepared.missing.is_empty() {
            let sizes: Vec<usize> = prepared.missing.iter().map(|missing| missing.input_bytes).collect();
            let hashes: Vec<chunking::Hash32> = prepared.missing.iter().map(|missing| missing.hash).collect();
            let batches = embeddings::plan_batches(&sizes, settings.batch_inputs, settings.batch_max_chars);
            feedback.event(
                "search_embed_plan",
                &[
                    ("missing_chunks", Field::Int(sizes.len() as i64)),
                    ("reused_chunks", Field::Int(reused as i64)),
                    ("batches", Field::Int(batches.len() as i64)),
                    ("batch_inputs", Field::Int(settings.batch_inputs as i64)),
                    ("batch_max_chars", Field::Int(settings.batch_max_chars as i64)),
                    ("concurrency", Field::Int(settings.concurrency as i64)),
                    ("index_dir", Field::Str(selection.index_dir.display().to_string())),
                ],
            );
            let total = sizes.len();
            feedback.update(Update { total, reused, ..Update::default() });
            let progress = Arc::clone(&feedback);
            let result = embeddings::embed_many(
                &client,
                &settings,
                &sizes,
                prepared.input_builder(),
                |range, batch, done| {
                    for (hash, vector) in hashes[range].iter().zip(batch) {
                        if spool_error.is_none()
                            && let Err(error) = spool.insert(&request.temp_dir, *hash, &vector)
                        {
                            spool_error = Some(error);
                        }
                    }
                    let item = done.elapsed.checked_div(done.done.max(1) as u32).unwrap_or_default();
                    progress.event(
                        "search_embed_progress",
                        &[
                            (
                                "progress",
                                Field::Str(format!(
                                    "{}/{} ({:.1}%)",
                                    done.done,
                                    done.total,
                                    done.done as f64 / done.total.max(1) as f64 * 100.0
                                )),
                            ),
                            ("elapsed", Field::Duration(done.elapsed)),
                            ("item_elapsed", Field::Duration(item)),
                            ("client_elapsed", Field::Duration(done.request)),
                        ],
                    );
                    progress.update(Update {
                        done: done.done,
                        total,
                        reused,
                        elapsed: done.elapsed,
                        ..Update::default()
                    });
                },
                &cancel,
            )
            .await;
            feedback.timing_event("embed_index", embed_started.elapsed());
            result?;
            if let Some(source) = spool_error {
                return Err(RefreshError::Snapshot { dir: request.temp_dir.clone(), source }.into());
            }
        } else {
            feedback.timing_event("embed_index", embed_started.elapsed());
        }

        let reporter = Arc::clone(&feedback);
        let token = cancel.clone();
        let temp_dir = request.temp_dir.clone();
        let live = blocking(move || {
            let cancelled = move || token.is_cancelled();
            let vectors = spool.finish().map_err(|source| RefreshError::Snapshot { dir: temp_dir, source })?;
            // Freed pages return to the system when the daemon goes idle
            // (`crate::memory`).
            refresh::finish(prepared, vectors, reporter.as_ref(), &cancelled)
        })
        .await??;
        lock(&self.indexes).put(&selection.index_dir, Arc::clone(&live), live.footprint());
        drop(file_lock);
        drop(flight);

        let outcome = |hits, replay| SearchOutcome { hits, replay, files, chunks, reused, embedded, skipped };
        if request.index_only {
            return Ok(outcome(Vec::new(), Replay::Unset));
        }

        // The query: recalled from history or embedded once per exact
        // capped input, outside the single flight.
        let phase = Instant::now();
        let query_input = query::embedding_input(&request.query, settings.max_input_chars, request.ranking.framing);
        let key = QueryKey {
            index_dir: selection.index_dir.display().to_string(),
            normalized: normalize_query(&request.query),
            query_text_hash: chunking::hex(&Sha256::digest(query_input.as_bytes())),
            model: settings.model.clone(),
            dimensions: settings.dimensions,
            source_mode: "filesystem".into(),
            root: selection.root_text(),
        };
        let history = self.history(&selection.metadata_dir)?;
        let query_vector = {
            let flight_key = format!("{}\0{}\0{}\0{}", key.index_dir, key.normalized, key.query_text_hash, key.model);
            let query_flight = self.query_flight(&flight_key);
            let _guard = tokio::select! {
                guard = query_flight.lock() => guard,
                _ = cancel.cancelled() => return Err(SearchError::Cancelled),
            };
            let lookup = (Arc::clone(&history), key.clone());
            let cached = blocking(move || lookup.0.cached_embedding(&lookup.1)).await??;
            match cached {
                Some(vector) => vector,
                None => {
                    let inputs = [query_input];
                    let mut vectors = client.embed(&settings, &inputs, &cancel).await?;
                    let vector = vectors.pop().unwrap_or_default();
                    let record = (Arc::clone(&history), key.clone(), request.query.clone(), vector.clone());
                    let stored = blocking(move || {
                        record.0.append(history::Entry {
                            key: &record.1,
                            query: &record.2,
                            embedding: &record.3,
                            embedding_only: true,
                            filters: None,
                            result_chunk_ids: &[],
                            created_at: &now_rfc3339(),
                        })
                    })
                    .await?;
                    if let Err(error) = stored {
                        tracing::warn!(%error, "cannot record the query embedding");
                    }
                    vector
                }
            }
        };
        feedback.timing_event("embed_query", phase.elapsed());

        let phase = Instant::now();
        let ranked_live = Arc::clone(&live);
        let (no_tests, min_score, limit, fusion) =
            (request.no_tests, request.min_score, request.limit, request.ranking.fusion);
        let text = request.query.clone();
        let vector = query_vector.clone();
        let (hits, timings) = blocking(move || {
            query::rank_memoized(&query::Query {
                live: &ranked_live,
                candidate_paths: &candidate_paths,
                no_tests,
                text: &text,
                vector: &vector,
                min_score,
                limit,
                fusion,
            })
        })
        .await?;
        let hits: Vec<query::Hit> = hits.as_ref().clone();
        feedback.event(
            "search_score",
            &[
                ("candidates", Field::Int(timings.candidates as i64)),
                ("memo", Field::Str(if timings.memo { "hit" } else { "miss" }.into())),
                ("collect", Field::Duration(timings.collect)),
                ("cosine", Field::Duration(timings.cosine)),
                ("lexical", Field::Duration(timings.lexical)),
                ("select", Field::Duration(timings.select)),
            ],
        );
        feedback.timing_event("score", phase.elapsed());

        let phase = Instant::now();
        let filters =
            StoredFilters { code: request.code_only, no_tests: request.no_tests, scope: selection.scope.clone() };
        let ids: Vec<String> = hits.iter().map(|hit| hit.chunk_id.clone()).collect();
        let query_text = request.query.clone();
        let replay = blocking(move || -> Result<Replay, HistoryError> {
            let replay = history.replay(&key, &filters, &query_vector)?;
            history.append(history::Entry {
                key: &key,
                query: &query_text,
                embedding: &query_vector,
                embedding_only: false,
                filters: Some(&filters),
                result_chunk_ids: &ids,
                created_at: &now_rfc3339(),
            })?;
            Ok(replay)
        })
        .await?;
        let replay = match replay {
            Ok(replay) => replay,
            Err(error) => {
                tracing::warn!(%error, "cannot record the search history");
                feedback.event("search_history_error", &[("error", Field::Str(error.to_string()))]);
                Replay::None
            }
        };
        feedback.timing_event("replay", phase.elapsed());
        Ok(outcome(hits, replay))
    }

    fn query_flight(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut flights = lock(&self.query_flights);
        flights.retain(|_, flight| flight.strong_count() > 0);
        if let Some(flight) = flights.get(key).and_then(Weak::upgrade) {
            return flight;
        }
        let flight = Arc::new(tokio::sync::Mutex::new(()));
        flights.insert(key.to_string(), Arc::downgrade(&flight));
        flight
    }
}

impl Feedback {
    fn timing_event(&self, step: &str, duration: std::time::Duration) {
        refresh::Reporter::timing(self, step, duration);
    }
}

/// Lower case, whitespace runs collapsed.
pub fn normalize_query(query: &str) -> String {
    query.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn now_rfc3339() -> String {
    timefmt::format_rfc3339(jiff::Timestamp::now())
}

/// Every complete index of the project at `cwd`, sorted like the original.
pub fn list_indexes(cwd: &Path, env: &Environment) -> Result<Vec<output::IndexInfo>, SearchError> {
    let selection = select(cwd, env, &[])?;
    let search_root = store::search_root(&selection.metadata_dir);
    let mut indexes = Vec::new();
    for dir in store::complete_index_dirs(&selection.metadata_dir) {
        let Ok(_lock) = store::lock_blocking(&store::lock_path(&dir), &|| false) else { continue };
        if let Some(info) = index_info(&dir, &search_root, false) {
            indexes.push(info.0);
        }
    }
    indexes.sort_by(|a, b| {
        (a.mode.as_str(), a.resolved_rev.as_str(), &a.filters, a.dir.as_str()).cmp(&(
            b.mode.as_str(),
            b.resolved_rev.as_str(),
            &b.filters,
            b.dir.as_str(),
        ))
    });
    Ok(indexes)
}

/// Summary and (when asked for) sorted unique paths of one index.
fn index_info(dir: &Path, search_root: &Path, want_paths: bool) -> Option<(output::IndexInfo, Vec<String>)> {
    let manifest = store::read_manifest(dir)?;
    let created = manifest.created()?;
    let mut paths = Vec::new();
    let (files, chunks) = if want_paths || (manifest.file_count == 0 && manifest.chunk_count == 0) {
        let records = store::read_records(dir)?;
        let mut unique: Vec<String> =
            records.iter().map(|record| record.path.clone()).filter(|path| !path.is_empty()).collect();
        unique.sort();
        unique.dedup();
        let counts = (unique.len(), records.len());
        paths = unique;
        counts
    } else {
        (manifest.file_count.max(0) as usize, manifest.chunk_count.max(0) as usize)
    };
    let filters = dir
        .strip_prefix(search_root)
        .ok()
        .map(|rel| rel.iter().skip(2).map(|part| part.to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    Some((
        output::IndexInfo {
            mode: manifest.mode.clone(),
            root: manifest.root.clone(),
            remote: manifest.remote.clone(),
            resolved_rev: manifest.resolved_rev.clone(),
            embedding_model: manifest.embedding_model.clone(),
            dimensions: manifest.dimensions,
            created_at: timefmt::format_rfc3339(created),
            files,
            chunks,
            filters,
            dir: dir.display().to_string(),
        },
        paths,
    ))
}

/// `--ls-files`: the selected index's paths, filtered by scope and
/// `--no-tests`.
pub fn list_files(
    cwd: &Path,
    env: &Environment,
    raw_scopes: &[String],
    no_tests: bool,
) -> Result<output::IndexFiles, SearchError> {
    let selection = select(cwd, env, raw_scopes)?;
    let search_root = store::search_root(&selection.metadata_dir);
    let found = {
        let _lock = store::lock_blocking(&store::lock_path(&selection.index_dir), &|| false)?;
        index_info(&selection.index_dir, &search_root, true)
    };
    let Some((index, paths)) = found else {
        let scope_hint = if raw_scopes.is_empty() {
            String::new()
        } else {
            format!(" with the same --scope {}", raw_scopes.join(","))
        };
        return Err(SearchError::NoIndex { dir: selection.index_dir, scope_hint });
    };
    let files = paths
        .into_iter()
        .filter(|path| paths::path_in_scope(path, &selection.scope))
        .filter(|path| !no_tests || !paths::is_test_path(path))
        .collect();
    Ok(output::IndexFiles { index, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_history_connections_are_bounded() {
        let temp = tempfile::tempdir().unwrap();
        let service = SearchService::new(None);
        let first = temp.path().join("project-0");
        let kept = service.history(&first).unwrap();
        for project in 1..=CACHED_HISTORIES * 2 {
            service.history(&temp.path().join(format!("project-{project}"))).unwrap();
        }
        let histories = lock(&service.histories);
        assert_eq!(histories.len(), CACHED_HISTORIES);
        assert!(!histories.contains(&store::search_root(&first).join("history.sqlite3")));
        drop(histories);
        // The connection still in use stays usable after it leaves the cache.
        assert_eq!(Arc::strong_count(&kept), 1);
    }
}

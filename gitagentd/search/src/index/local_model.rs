//! The daemon's local embedding model: found (a folder the user named, or
//! the pinned model, downloaded on first use with its progress shown as a
//! fetch), loaded once on the blocking pool, shared by every search and
//! explore, and released once nothing has used it for [`IDLE_RELEASE`], so
//! an idle daemon returns to its idle memory.
//!
//! One model is held at a time; a search asking for another source (or a
//! folder whose files changed) loads that one in its place. Loads are
//! single-flight: concurrent first searches wait for one load.

use super::embeddings::{Backend, EmbeddingError, EmbeddingSettings, LocalSource};
use crate::SearchError;
use crate::report::progress::Feedback;
use gitagent_embed::download::{self, DownloadOptions};
use gitagent_embed::{Limits, LoadOptions, LocalModel};
use gitagent_provider::{ClientKind, HttpClients};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

/// How long a loaded model stays unused before it is released.
pub const IDLE_RELEASE: Duration = Duration::from_secs(180);

/// The files of a folder whose change means a different model.
const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The local model, loaded when first asked for.
pub struct LocalModels {
    idle_release: Duration,
    loaded: Mutex<Option<Loaded>>,
    /// Held while a model is downloaded or loaded.
    loading: tokio::sync::Mutex<()>,
}

struct Loaded {
    source: LocalSource,
    /// The size and modification time of a user folder's files.
    stamp: Option<Vec<(u64, SystemTime)>>,
    model: Arc<LocalModel>,
    last_used: Instant,
}

impl std::fmt::Debug for LocalModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded =
            self.loaded.lock().ok().and_then(|loaded| loaded.as_ref().map(|loaded| loaded.model.key().clone()));
        f.debug_struct("LocalModels").field("loaded", &loaded).finish_non_exhaustive()
    }
}

impl LocalModels {
    pub fn new(idle_release: Duration) -> Arc<Self> {
        Arc::new(Self { idle_release, loaded: Mutex::new(None), loading: tokio::sync::Mutex::new(()) })
    }

    /// Whether a model is loaded now.
    pub fn is_loaded(&self) -> bool {
        self.lock().is_some()
    }

    /// Fills in the local model of `settings` (its key as the model name,
    /// its dimensions), loading it first if need be. Remote settings are
    /// left as they are.
    pub async fn prepare(
        self: &Arc<Self>,
        settings: &mut EmbeddingSettings,
        clients: &HttpClients,
        feedback: &Feedback,
        cancel: &CancellationToken,
    ) -> Result<(), SearchError> {
        let Backend::Local { source, model } = &mut settings.backend else { return Ok(()) };
        let loaded = match model {
            Some(model) => Arc::clone(model),
            None => {
                let loaded = self.get(source, clients, &settings.network, feedback, cancel).await?;
                *model = Some(Arc::clone(&loaded));
                loaded
            }
        };
        settings.model = loaded.key().to_string();
        settings.dimensions = loaded.dimensions();
        Ok(())
    }

    /// The model of `source`: the one loaded, or loaded now.
    async fn get(
        self: &Arc<Self>,
        source: &LocalSource,
        clients: &HttpClients,
        network: &gitagent_provider::NetworkSettings,
        feedback: &Feedback,
        cancel: &CancellationToken,
    ) -> Result<Arc<LocalModel>, SearchError> {
        let stamp = match source {
            LocalSource::Folder(dir) => Some(folder_stamp(dir)),
            LocalSource::Pinned { .. } => None,
        };
        if let Some(model) = self.current(source, &stamp) {
            return Ok(model);
        }
        let _loading = tokio::select! {
            guard = self.loading.lock() => guard,
            () = cancel.cancelled() => return Err(SearchError::Cancelled),
        };
        if let Some(model) = self.current(source, &stamp) {
            return Ok(model);
        }
        let (dir, key) = match source {
            LocalSource::Folder(dir) => (dir.clone(), None),
            LocalSource::Pinned { spec, models_dir, hub } => {
                let http = clients.client(network, ClientKind::Embeddings).await.map_err(EmbeddingError::from)?;
                let options = DownloadOptions { base_url: hub.clone(), ..DownloadOptions::default() };
                let shown = Mutex::new(None::<(u64, Instant)>);
                let progress = |progress: download::Progress<'_>| show_download(feedback, &spec.name, &shown, progress);
                let dir =
                    download::ensure(spec, models_dir, &http, &options, &progress, cancel).await.map_err(|error| {
                        match error {
                            download::DownloadError::Cancelled => SearchError::Cancelled,
                            error => SearchError::LocalModel(Box::new(error)),
                        }
                    })?;
                (dir, Some(spec.key()))
            }
        };
        let started = Instant::now();
        let load_dir = dir.clone();
        let model = gitagent_runtime::blocking::run("loading the local embedding model", cancel, move |_| {
            LocalModel::load(&load_dir, &LoadOptions { limits: Limits::for_this_machine(), key })
        })
        .await?
        .map_err(|error| SearchError::LocalModel(Box::new(error)))?;
        let model = Arc::new(model);
        feedback.timing_event("local_model_load", started.elapsed());
        tracing::debug!(key = %model.key(), dir = %dir.display(), "local embedding model loaded");
        *self.lock() =
            Some(Loaded { source: source.clone(), stamp, model: Arc::clone(&model), last_used: Instant::now() });
        self.release_when_idle(&model);
        Ok(model)
    }

    /// The loaded model if it is `source`'s (and its files are unchanged).
    fn current(&self, source: &LocalSource, stamp: &Option<Vec<(u64, SystemTime)>>) -> Option<Arc<LocalModel>> {
        let mut loaded = self.lock();
        let current = loaded.as_mut().filter(|loaded| &loaded.source == source && &loaded.stamp == stamp)?;
        current.last_used = Instant::now();
        Some(Arc::clone(&current.model))
    }

    /// Drops `model` once it has gone unused for the idle period (and no
    /// search holds it), unless another model has taken its place.
    fn release_when_idle(self: &Arc<Self>, model: &Arc<LocalModel>) {
        let models: Weak<Self> = Arc::downgrade(self);
        let watched = Arc::downgrade(model);
        let period = self.idle_release;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period / 4).await;
                let Some(models) = models.upgrade() else { return };
                let mut loaded = models.lock();
                let Some(current) = loaded.as_ref() else { return };
                if !std::ptr::eq(Arc::as_ptr(&current.model), watched.as_ptr()) {
                    return;
                }
                // `watched` is weak: one strong reference is the slot's own,
                // any other is a search still embedding with it.
                if current.last_used.elapsed() >= period && Arc::strong_count(&current.model) == 1 {
                    tracing::debug!(key = %current.model.key(), "local embedding model released after idling");
                    *loaded = None;
                    return;
                }
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Loaded>> {
        self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The size and modification time of each of the folder's model files
/// (missing ones count as absent: loading reports them).
fn folder_stamp(dir: &Path) -> Vec<(u64, SystemTime)> {
    MODEL_FILES
        .iter()
        .map(|name| {
            std::fs::metadata(PathBuf::from(dir).join(name))
                .map(|meta| (meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
                .unwrap_or((0, SystemTime::UNIX_EPOCH))
        })
        .collect()
}

/// Shows the download as a fetch (a rewritten line on a terminal, the
/// `--agent` endpoint's status, a `search_fetch` event under `--debug`),
/// at most every quarter second and once per file's end.
fn show_download(
    feedback: &Feedback,
    name: &str,
    shown: &Mutex<Option<(u64, Instant)>>,
    progress: download::Progress<'_>,
) {
    let mut shown = shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let finished_file = progress.file_done == progress.file_size;
    if let Some((_, at)) = *shown
        && at.elapsed() < Duration::from_millis(250)
        && !finished_file
    {
        return;
    }
    *shown = Some((progress.done, Instant::now()));
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    feedback.fetching(&format!(
        "the local embedding model {name}: {} ({:.1} of {:.1} MiB)",
        progress.file,
        mib(progress.done),
        mib(progress.total)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{self, SettingFlags};
    use git_agent_shared::Environment;
    use git_agent_shared::config_file::SearchConfig;
    use gitagent_runtime::output::Output;

    /// The tiny BERT-shaped model the embed crate's tests generate.
    fn tiny_model() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../embed/tests/fixtures/tiny-bert")
    }

    /// A copy of the tiny model this test may change.
    fn copied_model(into: &Path) -> PathBuf {
        let dir = into.join("tiny");
        for entry in walk(&tiny_model()) {
            let target = dir.join(entry.strip_prefix(tiny_model()).unwrap());
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(&entry, &target).unwrap();
        }
        dir
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
        }
        files
    }

    fn local_settings(dir: &Path) -> EmbeddingSettings {
        let env = Environment::new(
            [
                ("HOME".to_string(), "/nonexistent".to_string()),
                ("GIT_AGENT_MODEL_DIR".into(), dir.display().to_string()),
            ]
            .into(),
        );
        settings::resolve(&SettingFlags::default(), &env, &SearchConfig::default(), 2).unwrap()
    }

    fn feedback(temp: &Path) -> Feedback {
        Feedback::new(Output::new().0, false, false, false, temp)
    }

    #[tokio::test]
    async fn a_folder_model_loads_once_names_the_settings_and_embeds() {
        let temp = tempfile::tempdir().unwrap();
        let models = LocalModels::new(IDLE_RELEASE);
        let clients = HttpClients::default();
        let cancel = CancellationToken::new();
        let mut first = local_settings(&tiny_model());
        models.prepare(&mut first, &clients, &feedback(temp.path()), &cancel).await.unwrap();
        assert!(first.model.starts_with("tiny-bert@sha256-"), "{}", first.model);
        assert_eq!(first.dimensions, 32);
        let mut second = local_settings(&tiny_model());
        models.prepare(&mut second, &clients, &feedback(temp.path()), &cancel).await.unwrap();
        let (Backend::Local { model: Some(a), .. }, Backend::Local { model: Some(b), .. }) =
            (&first.backend, &second.backend)
        else {
            panic!("both settings hold the model")
        };
        assert!(Arc::ptr_eq(a, b), "the second search shares the first one's model");

        let client = crate::index::embeddings::EmbeddingsClient::new(&clients, &first).await.unwrap();
        let inputs = vec!["fn parse_flags() {}".to_string(), "the quick brown fox".to_string()];
        let vectors = client.embed(&first, &inputs, &cancel).await.unwrap();
        assert_eq!(vectors, a.embed(&inputs, &|| false).unwrap(), "the client runs the model itself");
        assert!(vectors.iter().all(|vector| vector.len() == 32));
    }

    #[tokio::test]
    async fn a_changed_folder_is_loaded_again() {
        let temp = tempfile::tempdir().unwrap();
        let dir = copied_model(temp.path());
        let models = LocalModels::new(IDLE_RELEASE);
        let (clients, cancel) = (HttpClients::default(), CancellationToken::new());
        let mut before = local_settings(&dir);
        models.prepare(&mut before, &clients, &feedback(temp.path()), &cancel).await.unwrap();
        // Another tokenizer file: a different model as far as vectors go.
        let tokenizer = dir.join("tokenizer.json");
        let mut text = std::fs::read_to_string(&tokenizer).unwrap();
        text.push('\n');
        std::fs::write(&tokenizer, text).unwrap();
        let mut after = local_settings(&dir);
        models.prepare(&mut after, &clients, &feedback(temp.path()), &cancel).await.unwrap();
        assert_ne!(before.model, after.model, "the key follows the files");
    }

    #[tokio::test]
    async fn an_idle_model_is_released_and_one_in_use_is_kept() {
        let temp = tempfile::tempdir().unwrap();
        let models = LocalModels::new(Duration::from_millis(200));
        let (clients, cancel) = (HttpClients::default(), CancellationToken::new());
        let mut settings = local_settings(&tiny_model());
        models.prepare(&mut settings, &clients, &feedback(temp.path()), &cancel).await.unwrap();
        // `settings` holds the model, as a running search does.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(models.is_loaded(), "a model a search holds stays loaded");
        }
        drop(settings);
        let deadline = Instant::now() + Duration::from_secs(10);
        while models.is_loaded() {
            assert!(Instant::now() < deadline, "the idle model was never released");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    #[tokio::test]
    async fn a_folder_without_a_model_is_one_clear_error() {
        let temp = tempfile::tempdir().unwrap();
        let models = LocalModels::new(IDLE_RELEASE);
        let mut settings = local_settings(temp.path());
        let error = models
            .prepare(&mut settings, &HttpClients::default(), &feedback(temp.path()), &CancellationToken::new())
            .await
            .unwrap_err();
        let text = git_agent_shared::error_chain::render(&error);
        assert!(text.contains("config.json") && text.contains(&temp.path().display().to_string()), "{text}");
        assert!(!models.is_loaded());
    }
}

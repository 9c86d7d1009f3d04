//! The inspection's tool registry: the shared repository tools (with
//! `jq`) over the scope's source, the diff-mode tools in diff modes, the
//! documentation tools whose executables are on the caller's PATH, and
//! `skills_read` when `skills-mgr` is installed. All of them are
//! [`gitagent_agent::tools::Tool`]s; the inspection-specific ones live in
//! [`gitagent_agent::tools`].
//!
//! In diff modes every call first rechecks the launch fingerprint (the
//! diff-mode tools do it themselves; every other tool is wrapped in
//! [`Guarded`]). Drift is terminal: it is recorded in the [`DriftSlot`]
//! and the call reports cancellation, which stops the loop. The registry's
//! batch guard rechecks once more after a concurrent batch has joined.

use crate::git::GitEnv;
use crate::prepare::{self, PreparedScope};
pub use crate::tools::{DriftSlot, diff_tools, doc_tools};
use gitagent_agent::tools::{BatchGuard, Tool, ToolError, ToolFuture};
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Rechecks the launch fingerprint on the blocking pool.
async fn recheck(prepared: &Arc<PreparedScope>, git_env: &GitEnv, drift: &DriftSlot) -> Result<(), ToolError> {
    let (prepared, git_env) = (Arc::clone(prepared), git_env.clone());
    match gitagent_runtime::blocking::run_to_end("the snapshot check", move || prepare::recheck(&prepared, &git_env))
        .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(drift.stop_with(&error)),
        Err(error) => Err(ToolError::Recoverable(format!("the snapshot check failed: {error}"))),
    }
}

/// The recheck after a batch of calls has joined: drift that happened
/// while the calls ran stops the loop before their outputs are used.
pub fn batch_guard(prepared: &Arc<PreparedScope>, git_env: &GitEnv, drift: &DriftSlot) -> BatchGuard {
    let (prepared, git_env, drift) = (Arc::clone(prepared), git_env.clone(), drift.clone());
    Arc::new(move || {
        let (prepared, git_env, drift) = (Arc::clone(&prepared), git_env.clone(), drift.clone());
        Box::pin(async move {
            recheck(&prepared, &git_env, &drift).await.inspect_err(|error| {
                if let ToolError::Recoverable(message) = error {
                    drift.record(message.clone());
                }
            })
        })
    })
}

/// A tool that rechecks the launch fingerprint before it runs.
pub struct Guarded {
    inner: Arc<dyn Tool>,
    prepared: Arc<PreparedScope>,
    git_env: GitEnv,
    drift: DriftSlot,
}

impl Guarded {
    pub fn wrap(
        inner: Arc<dyn Tool>,
        prepared: &Arc<PreparedScope>,
        git_env: &GitEnv,
        drift: &DriftSlot,
    ) -> Arc<dyn Tool> {
        Arc::new(Self { inner, prepared: Arc::clone(prepared), git_env: git_env.clone(), drift: drift.clone() })
    }
}

impl Tool for Guarded {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn description(&self) -> &'static str {
        self.inner.description()
    }
    fn parameters(&self) -> Value {
        self.inner.parameters()
    }
    fn call(&self, arguments: &str, cancel: CancellationToken) -> ToolFuture {
        let (inner, prepared, git_env, drift) =
            (Arc::clone(&self.inner), Arc::clone(&self.prepared), self.git_env.clone(), self.drift.clone());
        let arguments = arguments.to_string();
        Box::pin(async move {
            recheck(&prepared, &git_env, &drift).await?;
            inner.call(&arguments, cancel).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::Mode;
    use crate::tests::Fixture;
    use git_agent_shared::task_record::TaskCommand;
    use serde_json::json;

    /// Part of every name outside the repository (files, folders, link
    /// targets) and of `.git`'s own marker file.
    const OUTSIDE_NAME: &str = "zqxOutsideNamezqx";
    /// Part of every byte outside the repository.
    const OUTSIDE_BYTES: &str = "zqxOutsideByteszqx";
    /// Text only `.git` holds.
    const GIT_BYTES: [&str; 2] = ["repositoryformatversion", "ref: refs/heads/"];

    /// A repository with every way out of it committed: a symlinked
    /// folder (absolute and relative), a symlinked file and a link to
    /// `.git` under another name; and a staged change so the diff tools
    /// exist.
    fn escaping_fixture() -> (Fixture, std::path::PathBuf) {
        use std::os::unix::fs::symlink;
        let fixture = Fixture::new();
        let outside = fixture.dir.path().join("outside");
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::fs::write(outside.join("secret.txt"), format!("{OUTSIDE_BYTES}\n")).unwrap();
        std::fs::write(outside.join("secret.json"), format!("{{\"k\":\"{OUTSIDE_BYTES}\"}}")).unwrap();
        std::fs::write(outside.join("secret.md"), format!("# {OUTSIDE_BYTES}\n")).unwrap();
        std::fs::write(outside.join(format!("{OUTSIDE_NAME}.txt")), OUTSIDE_BYTES).unwrap();
        std::fs::write(outside.join("deep").join(format!("{OUTSIDE_NAME}.go")), OUTSIDE_BYTES).unwrap();
        fixture.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
        let repo = fixture.repo();
        symlink(&outside, repo.join("escape-dir")).unwrap();
        symlink("../outside", repo.join("relative-escape")).unwrap();
        symlink(outside.join(format!("{OUTSIDE_NAME}.txt")), repo.join("escape.txt")).unwrap();
        symlink(".git", repo.join("gitdir")).unwrap();
        fixture.commit_all("initial");
        std::fs::write(repo.join(".git").join(format!("{OUTSIDE_NAME}.txt")), OUTSIDE_BYTES).unwrap();
        fixture.write("src/lib.rs", "pub fn one() -> u32 {\n    2\n}\n");
        fixture.git(&["add", "src/lib.rs"]);
        assert!(std::fs::read_dir(repo.join("escape-dir/deep")).unwrap().count() == 1, "the link works");
        (fixture, outside)
    }

    /// The envelope the model would see for one call.
    async fn envelope_of(registry: &gitagent_agent::tools::ToolRegistry, tool: &str, arguments: &Value) -> String {
        let handler = registry.get(tool).unwrap_or_else(|| panic!("{tool} is offered"));
        match handler.call(&arguments.to_string(), CancellationToken::new()).await {
            Ok(output) => gitagent_agent::tools::success_envelope(tool, &output),
            Err(ToolError::Recoverable(message)) => gitagent_agent::tools::error_envelope(tool, &message),
            Err(ToolError::Cancelled) => panic!("{tool} {arguments}: cancelled"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_tool_leaves_the_root_through_links_parents_or_absolute_paths() {
        let (fixture, outside) = escaping_fixture();
        let absolute = outside.display().to_string();
        let folders = [
            "escape-dir".to_string(),
            "escape-dir/deep".to_string(),
            "relative-escape".to_string(),
            "../outside".to_string(),
            absolute.clone(),
            "gitdir".to_string(),
            "gitdir/refs".to_string(),
        ];
        let mut files: Vec<String> = ["escape-dir/secret", "relative-escape/secret", "../outside/secret"]
            .into_iter()
            .map(String::from)
            .chain([format!("{absolute}/secret")])
            .collect();
        files = files.iter().flat_map(|file| ["txt", "json", "md"].map(|ext| format!("{file}.{ext}"))).collect();
        files.extend(["escape.txt", "gitdir/config", "gitdir/HEAD"].map(String::from));
        for mode in [Mode::Uncommitted, Mode::Staged, Mode::Codebase] {
            let request = super::super::tests::request(&fixture, TaskCommand::Review, mode, None);
            let drift = DriftSlot::new(CancellationToken::new());
            let task = super::super::assemble(&request, &drift, &CancellationToken::new()).await.expect("assemble");
            let registry = &task.tools;
            let mut calls = Vec::new();
            for folder in &folders {
                calls.push(("list_files", json!({"path": folder, "max_entries": null}), true));
                calls.push(("find", json!({"path": folder, "name": null, "type": null, "max_entries": null}), true));
                calls.push(("grep", json!({"pattern": ".", "path": folder, "glob": null, "max_matches": null}), true));
            }
            let sources = match mode {
                Mode::Staged => vec![json!(null), json!("index"), json!("head")],
                _ => vec![json!(null), json!("worktree"), json!("index"), json!("head")],
            };
            for file in &files {
                for source in &sources {
                    let read = json!({"path": file, "source": source, "line_start": null, "line_end": null,
                        "with_line_number": null, "max_bytes": null, "max_lines": null});
                    calls.push(("read_file", read, true));
                    calls.push(("inspect_file", json!({"path": file, "source": source}), true));
                    calls.push((
                        "jq",
                        json!({"path": file, "source": source, "pointer": "", "max_bytes": null, "max_lines": null}),
                        true,
                    ));
                }
            }
            if mode != Mode::Codebase {
                for path in folders.iter().chain(&files) {
                    // Path filters of the prepared diff: the ones that
                    // cannot be repository paths are refused, the others
                    // select nothing; neither reads the filesystem.
                    let refused = path.starts_with("../") || path.starts_with('/');
                    let arguments = json!({"paths": [path], "max_bytes": 65536, "max_lines": 2000});
                    calls.push(("review_diff_for_paths", arguments, refused));
                }
            }
            for (tool, arguments, must_fail) in calls {
                let envelope = envelope_of(registry, tool, &arguments).await;
                let context = format!("{mode:?} {tool} {arguments}: {envelope}");
                for forbidden in [OUTSIDE_NAME, OUTSIDE_BYTES].iter().chain(&GIT_BYTES) {
                    assert!(!envelope.contains(forbidden), "{context}");
                }
                let parsed: Value = serde_json::from_str(&envelope).unwrap();
                if must_fail {
                    assert_eq!(parsed["ok"], json!(false), "{context}");
                }
            }
            // The same tools still work inside the root.
            let inside = envelope_of(registry, "list_files", &json!({"path": "src", "max_entries": null})).await;
            assert!(inside.contains("src/lib.rs"), "{mode:?}: {inside}");
            let walked = envelope_of(registry, "list_files", &json!({"path": null, "max_entries": null})).await;
            assert_eq!(
                serde_json::from_str::<Value>(&walked).unwrap()["data"]["files"],
                json!(["src/lib.rs"]),
                "{mode:?}"
            );
        }
    }
}

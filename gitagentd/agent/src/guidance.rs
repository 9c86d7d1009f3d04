//! Project guidance (spec section 4): the AGENTS family
//! (`AGENTS.override.md` before `AGENTS.md` in each folder) or, only when
//! no task path has any AGENTS-family file, the CLAUDE family
//! (`CLAUDE.md`); never both. For every task path the folders from the
//! repository root down to the path's folder contribute at most one file
//! each, root first; sources are de-duplicated in that order and rendered
//! as one Codex-style `# AGENTS.md instructions for ...` block with
//! repository-relative `<PROJECT_DOC path="...">` tags.

use std::path::{Path, PathBuf};

/// Which guidance family applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// AGENTS when any task path has it, else CLAUDE.
    Auto,
    Agents,
    Claude,
    /// No guidance at all.
    None,
}

/// A `--guidance-family` value that names no family.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown guidance family {0:?}; use auto, agents, claude or none")]
pub struct UnknownFamily(pub String);

impl Family {
    /// Parses `--guidance-family`; absent means auto.
    pub fn parse(value: Option<&str>) -> Result<Self, UnknownFamily> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("auto") => Ok(Self::Auto),
            Some("agents") => Ok(Self::Agents),
            Some("claude") => Ok(Self::Claude),
            Some("none") => Ok(Self::None),
            Some(other) => Err(UnknownFamily(other.to_string())),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Agents => "agents",
            Self::Claude => "claude",
            Self::None => "none",
        }
    }

    fn file_names(self) -> &'static [&'static str] {
        match self {
            Self::Agents => &["AGENTS.override.md", "AGENTS.md"],
            Self::Claude => &["CLAUDE.md"],
            Self::Auto | Self::None => &[],
        }
    }
}

/// Reads a repository-relative file, or `None` when it is absent.
pub trait GuidanceReader {
    fn read(&self, relative: &str) -> Option<String>;
}

/// Reads guidance files from the work tree, refusing symlinks that lead
/// outside the repository.
pub struct WorktreeReader {
    root: PathBuf,
}

impl WorktreeReader {
    pub fn new(root: &Path) -> Self {
        Self { root: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()) }
    }
}

impl GuidanceReader for WorktreeReader {
    fn read(&self, relative: &str) -> Option<String> {
        let path = self.root.join(relative).canonicalize().ok()?;
        if !path.starts_with(&self.root) || !path.is_file() {
            return None;
        }
        std::fs::read(path).ok().map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Reads guidance files from the index, for staged inspections: unstaged
/// edits to a guidance file must not shape the review of the index.
pub struct IndexReader<'a> {
    repo: &'a gitagent_git::Repository,
}

impl<'a> IndexReader<'a> {
    pub fn new(repo: &'a gitagent_git::Repository) -> Self {
        Self { repo }
    }
}

impl GuidanceReader for IndexReader<'_> {
    fn read(&self, relative: &str) -> Option<String> {
        let bytes = self.repo.tracked_content(gitagent_git::FileSource::Index, relative).ok()??;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// One guidance file in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Repository-relative, `/`-separated.
    pub path: String,
    pub content: String,
}

/// The guidance in effect for a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guidance {
    /// The absolute path the heading names.
    pub target: PathBuf,
    /// The family chosen (`None` when nothing was found).
    pub family: Family,
    pub sources: Vec<Source>,
}

/// Resolves guidance for `paths` (repository-relative file paths; the
/// repository root when empty).
pub fn resolve(root: &Path, paths: &[String], requested: Family, reader: &dyn GuidanceReader) -> Guidance {
    let targets: Vec<&str> = if paths.is_empty() { vec![""] } else { paths.iter().map(String::as_str).collect() };
    let target = if targets[0].is_empty() { root.to_path_buf() } else { root.join(targets[0]) };
    let family = match requested {
        Family::Auto => {
            if targets.iter().any(|t| first_in_chain(t, Family::Agents, reader)) {
                Family::Agents
            } else if targets.iter().any(|t| first_in_chain(t, Family::Claude, reader)) {
                Family::Claude
            } else {
                Family::None
            }
        }
        explicit => explicit,
    };
    let mut sources: Vec<Source> = Vec::new();
    for target in &targets {
        for folder in folders(target) {
            let found = family.file_names().iter().find_map(|name| {
                let path = if folder.is_empty() { (*name).to_string() } else { format!("{folder}/{name}") };
                reader.read(&path).map(|content| Source { path, content })
            });
            if let Some(source) = found
                && !sources.iter().any(|existing| existing.path == source.path)
            {
                sources.push(source);
            }
        }
    }
    let family = if sources.is_empty() { Family::None } else { family };
    Guidance { target, family, sources }
}

fn first_in_chain(target: &str, family: Family, reader: &dyn GuidanceReader) -> bool {
    folders(target).iter().any(|folder| {
        family.file_names().iter().any(|name| {
            let path = if folder.is_empty() { (*name).to_string() } else { format!("{folder}/{name}") };
            reader.read(&path).is_some()
        })
    })
}

/// The folders from the root (`""`) down to the folder holding `path`.
fn folders(path: &str) -> Vec<String> {
    let mut folders = vec![String::new()];
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    for depth in 1..parts.len() {
        folders.push(parts[..depth].join("/"));
    }
    folders
}

impl Guidance {
    /// The rendered block, or an empty string when there is no guidance.
    pub fn render(&self) -> String {
        if self.sources.is_empty() {
            return String::new();
        }
        let mut out = format!("# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n", self.target.display());
        for (index, source) in self.sources.iter().enumerate() {
            if index > 0 {
                out.push('\n');
            }
            out.push_str(&format!("<PROJECT_DOC path={:?}>\n", source.path));
            out.push_str(source.content.trim_end_matches('\n'));
            out.push_str("\n</PROJECT_DOC>\n");
        }
        out.push_str("</INSTRUCTIONS>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Files(BTreeMap<&'static str, &'static str>);

    impl GuidanceReader for Files {
        fn read(&self, relative: &str) -> Option<String> {
            self.0.get(relative).map(|content| content.to_string())
        }
    }

    fn files(pairs: &[(&'static str, &'static str)]) -> Files {
        Files(pairs.iter().copied().collect())
    }

    fn paths(guidance: &Guidance) -> Vec<&str> {
        guidance.sources.iter().map(|source| source.path.as_str()).collect()
    }

    #[test]
    fn agents_family_scopes_root_to_leaf_and_ignores_claude() {
        let reader = files(&[
            ("AGENTS.md", "root"),
            ("frontend/AGENTS.md", "front"),
            ("frontend/admin/AGENTS.override.md", "override"),
            ("frontend/admin/AGENTS.md", "shadowed"),
            ("frontend/admin/CLAUDE.md", "claude"),
        ]);
        let guidance = resolve(Path::new("/repo"), &["frontend/admin/page.tsx".into()], Family::Auto, &reader);
        assert_eq!(guidance.family, Family::Agents);
        assert_eq!(paths(&guidance), ["AGENTS.md", "frontend/AGENTS.md", "frontend/admin/AGENTS.override.md"]);
    }

    #[test]
    fn claude_applies_only_when_no_task_path_has_agents_guidance() {
        let reader = files(&[("CLAUDE.md", "root claude"), ("docs/CLAUDE.md", "docs"), ("api/AGENTS.md", "api")]);
        let with_agents = resolve(Path::new("/repo"), &["docs/a.md".into(), "api/x.go".into()], Family::Auto, &reader);
        assert_eq!(paths(&with_agents), ["api/AGENTS.md"]);
        let only_claude = resolve(Path::new("/repo"), &["docs/a.md".into()], Family::Auto, &reader);
        assert_eq!(only_claude.family, Family::Claude);
        assert_eq!(paths(&only_claude), ["CLAUDE.md", "docs/CLAUDE.md"]);
    }

    #[test]
    fn sources_are_deduplicated_and_a_family_can_be_forced() {
        let reader = files(&[("AGENTS.md", "a"), ("CLAUDE.md", "c"), ("x/AGENTS.md", "x")]);
        let many = resolve(Path::new("/r"), &["x/1".into(), "x/2".into(), "y".into()], Family::Auto, &reader);
        assert_eq!(paths(&many), ["AGENTS.md", "x/AGENTS.md"]);
        let forced = resolve(Path::new("/r"), &["x/1".into()], Family::Claude, &reader);
        assert_eq!(paths(&forced), ["CLAUDE.md"]);
        assert!(resolve(Path::new("/r"), &[], Family::None, &reader).render().is_empty());
    }

    #[test]
    fn the_block_names_the_target_and_uses_relative_provenance() {
        let reader = files(&[("AGENTS.md", "Use tabs.\n\n"), ("src/AGENTS.md", "No unwrap.")]);
        let guidance = resolve(Path::new("/repo"), &["src/lib.rs".into()], Family::Auto, &reader);
        assert_eq!(
            guidance.render(),
            "# AGENTS.md instructions for /repo/src/lib.rs\n\n<INSTRUCTIONS>\n<PROJECT_DOC path=\"AGENTS.md\">\nUse tabs.\n</PROJECT_DOC>\n\n<PROJECT_DOC path=\"src/AGENTS.md\">\nNo unwrap.\n</PROJECT_DOC>\n</INSTRUCTIONS>"
        );
        assert_eq!(resolve(Path::new("/repo"), &[], Family::Auto, &reader).target, PathBuf::from("/repo"));
    }
}

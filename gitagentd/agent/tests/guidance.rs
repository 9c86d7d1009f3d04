//! Guidance blocks for nested AGENTS/CLAUDE layouts read from a real
//! work tree, compared with golden files (`UPDATE_GOLDEN=1` rewrites).

use gitagent_agent::guidance::{self, Family, WorktreeReader};
use std::path::{Path, PathBuf};

fn layout(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

fn assert_golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(expected == actual, "{} differs; rerun with UPDATE_GOLDEN=1 to accept:\n{actual}", path.display());
}

fn render(root: &Path, paths: &[&str], family: Family) -> String {
    let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    let guidance = guidance::resolve(root, &paths, family, &WorktreeReader::new(root));
    let root = root.canonicalize().unwrap();
    guidance.render().replace(root.to_str().unwrap(), "/repo")
}

#[test]
fn nested_agents_files_concatenate_root_to_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    layout(
        &root,
        &[
            ("AGENTS.md", "Root rules.\n"),
            ("frontend/AGENTS.md", "Frontend rules.\n"),
            ("frontend/admin/AGENTS.override.md", "Admin override.\n"),
            ("frontend/admin/AGENTS.md", "Shadowed by the override.\n"),
            ("frontend/admin/CLAUDE.md", "Never mixed in.\n"),
            ("backend/CLAUDE.md", "Claude for backend.\n"),
        ],
    );
    let block = render(&root, &["frontend/admin/page.tsx", "backend/api.go", "frontend/app.tsx"], Family::Auto);
    assert_golden("guidance-nested-agents.md", &block);
}

#[test]
fn claude_files_apply_when_no_agents_file_exists() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    layout(&root, &[("CLAUDE.md", "Root claude.\n"), ("docs/CLAUDE.md", "Docs claude.\n")]);
    assert_golden("guidance-claude-fallback.md", &render(&root, &["docs/guide.md"], Family::Auto));
    assert_eq!(render(&root, &["docs/guide.md"], Family::Agents), "", "forcing AGENTS finds none");
    assert_eq!(render(&root, &["docs/guide.md"], Family::None), "");
}

//! Operator-facing classification of changed paths: what kind of file each
//! path is (documentation, tests, generated, dependency metadata, build or
//! CI, submodule), the signals a set of changes raises (runtime, config
//! schema, API, CLI, docs, or only tests/generated/dependencies/build/
//! submodules), and the include/omit policy of a commit that follows from
//! them. Pure functions of paths and subjects.

use serde::Serialize;

/// What kind of file a path is; none of them means runtime code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    Docs,
    Tests,
    Generated,
    Dependency,
    Build,
    Submodule,
}

/// A fact about a set of changes that matters to whoever deploys them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// Code that ships and runs changed.
    Runtime,
    ConfigSchema,
    Api,
    Cli,
    Docs,
    DocsOnly,
    TestsOnly,
    GeneratedOnly,
    DependencyOnly,
    BuildOnly,
    SubmoduleOnly,
}

/// Whether a commit earns a narrative bullet, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    pub include: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

impl Policy {
    fn include() -> Self {
        Self { include: true, reason: None }
    }

    fn omit(reason: &'static str) -> Self {
        Self { include: false, reason: Some(reason) }
    }
}

/// The kinds of `path`; `submodule` when the path is a gitlink.
pub fn path_kinds(path: &str, submodule: bool) -> Vec<PathKind> {
    if submodule {
        return vec![PathKind::Submodule];
    }
    let lower = path.to_ascii_lowercase();
    let base = lower.rsplit('/').next().unwrap_or(&lower);
    let mut kinds = Vec::new();
    if is_dependency(&lower, base) {
        kinds.push(PathKind::Dependency);
    } else if is_build(&lower, base) {
        kinds.push(PathKind::Build);
    }
    if kinds.is_empty() && is_docs(&lower, base) {
        kinds.push(PathKind::Docs);
    }
    if is_test(&lower, base) {
        kinds.push(PathKind::Tests);
    }
    if is_generated(&lower, base) {
        kinds.push(PathKind::Generated);
    }
    kinds
}

fn segments(lower: &str) -> impl Iterator<Item = &str> {
    let dirs = lower.rsplit_once('/').map_or("", |(dirs, _)| dirs);
    dirs.split('/').filter(|part| !part.is_empty())
}

fn is_docs(lower: &str, base: &str) -> bool {
    const EXTENSIONS: &[&str] = &[".md", ".mdx", ".rst", ".adoc", ".txt"];
    const NAMES: &[&str] = &["readme", "changelog", "contributing", "license", "notice", "authors", "security"];
    segments(lower).any(|part| matches!(part, "docs" | "doc" | "documentation" | "wiki"))
        || EXTENSIONS.iter().any(|extension| base.ends_with(extension))
        || NAMES.contains(&base)
}

fn is_test(lower: &str, base: &str) -> bool {
    const SUFFIXES: &[&str] = &[
        "_test.go",
        "_test.rs",
        "_test.py",
        "_spec.rb",
        ".test.ts",
        ".test.tsx",
        ".test.js",
        ".test.jsx",
        ".spec.ts",
        ".spec.tsx",
        ".spec.js",
    ];
    segments(lower).any(|part| {
        matches!(part, "test" | "tests" | "__tests__" | "testdata" | "fixtures" | "spec" | "e2e" | "golden")
    }) || SUFFIXES.iter().any(|suffix| base.ends_with(suffix))
        || (base.starts_with("test_") && base.ends_with(".py"))
}

fn is_generated(lower: &str, base: &str) -> bool {
    base.contains(".gen.")
        || base.contains(".generated.")
        || base.ends_with("_gen.go")
        || base.ends_with(".pb.go")
        || base.ends_with("_pb2.py")
        || base.ends_with(".min.js")
        || base.ends_with(".min.css")
        || segments(lower).any(|part| matches!(part, "generated" | "gen" | "completions"))
}

fn is_dependency(lower: &str, base: &str) -> bool {
    const NAMES: &[&str] = &[
        "go.mod",
        "go.sum",
        "go.work",
        "go.work.sum",
        "cargo.lock",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "pnpm-lock.yaml",
        "yarn.lock",
        "bun.lock",
        "bun.lockb",
        "poetry.lock",
        "pipfile.lock",
        "uv.lock",
        "gemfile.lock",
        "composer.lock",
        "flake.lock",
        "mix.lock",
    ];
    NAMES.contains(&base)
        || (base.starts_with("requirements") && base.ends_with(".txt"))
        || lower.starts_with("vendor/")
        || lower.contains("/vendor/")
        || lower.starts_with("node_modules/")
        || lower.contains("/node_modules/")
        || lower.starts_with("third_party/")
}

fn is_build(lower: &str, base: &str) -> bool {
    const DIRS: &[&str] = &[
        ".github/",
        ".gitlab/",
        ".gitea/",
        ".forgejo/",
        ".circleci/",
        ".buildkite/",
        ".woodpecker/",
        ".ci/",
        "ci/",
        ".devcontainer/",
        ".husky/",
        ".cargo/",
        "packaging/",
    ];
    const NAMES: &[&str] = &[
        "dockerfile",
        "containerfile",
        ".dockerignore",
        "makefile",
        "gnumakefile",
        "justfile",
        "jenkinsfile",
        "cmakelists.txt",
        "meson.build",
        "build.rs",
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "pom.xml",
        ".gitlab-ci.yml",
        ".travis.yml",
        ".gitignore",
        ".gitattributes",
        ".editorconfig",
        "rustfmt.toml",
        ".rustfmt.toml",
        "clippy.toml",
        "rust-toolchain",
        "rust-toolchain.toml",
        ".golangci.yml",
        ".golangci.yaml",
        ".goreleaser.yml",
        ".goreleaser.yaml",
        ".pre-commit-config.yaml",
        "tsconfig.json",
        "renovate.json",
        "codecov.yml",
    ];
    const PREFIXES: &[&str] = &[
        "dockerfile.",
        "makefile.",
        ".eslintrc",
        "eslint.config.",
        ".prettierrc",
        "prettier.config.",
        "jest.config.",
        "vitest.config.",
        "vite.config.",
        "webpack.config.",
        "tsconfig.",
    ];
    DIRS.iter().any(|dir| lower.starts_with(dir))
        || NAMES.contains(&base)
        || PREFIXES.iter().any(|prefix| base.starts_with(prefix))
        || base.ends_with(".mk")
        || base.ends_with(".dockerfile")
}

fn is_cli(lower: &str, base: &str) -> bool {
    segments(lower).any(|part| matches!(part, "cmd" | "cli" | "bin" | "commands" | "completions"))
        || base.starts_with("cli.")
        || base == "main.rs"
        || base == "main.go"
}

fn is_api(lower: &str, base: &str) -> bool {
    segments(lower).any(|part| matches!(part, "api" | "proto" | "rpc" | "openapi" | "graphql"))
        || base.contains("openapi")
        || base.contains("swagger")
        || base.ends_with(".proto")
        || base.ends_with(".graphql")
}

fn is_config_schema(lower: &str, base: &str) -> bool {
    base.contains("schema")
        || base.contains("config")
        || base.contains("settings")
        || segments(lower).any(|part| matches!(part, "config" | "schema" | "settings"))
}

/// The signals of a set of changed files, given as `(path, kinds)`;
/// empty for no files.
pub fn signals<'a>(files: impl IntoIterator<Item = (&'a str, &'a [PathKind])>) -> Vec<Signal> {
    let mut count = 0;
    let mut all = [true; 6];
    let mut raised = Vec::new();
    for (path, kinds) in files {
        count += 1;
        for (index, kind) in [
            PathKind::Docs,
            PathKind::Tests,
            PathKind::Generated,
            PathKind::Dependency,
            PathKind::Build,
            PathKind::Submodule,
        ]
        .iter()
        .enumerate()
        {
            all[index] &= kinds.contains(kind);
        }
        let lower = path.to_ascii_lowercase();
        let base = lower.rsplit('/').next().unwrap_or(&lower);
        if kinds.contains(&PathKind::Docs) {
            raised.push(Signal::Docs);
        }
        if kinds.contains(&PathKind::Submodule) {
            continue;
        }
        if kinds.is_empty() {
            raised.push(Signal::Runtime);
        }
        let shipped = !kinds.iter().any(|kind| matches!(kind, PathKind::Tests | PathKind::Docs));
        if shipped && is_cli(&lower, base) {
            raised.push(Signal::Cli);
        }
        if shipped && is_api(&lower, base) {
            raised.push(Signal::Api);
        }
        if shipped && is_config_schema(&lower, base) && !kinds.contains(&PathKind::Build) {
            raised.push(Signal::ConfigSchema);
        }
    }
    if count == 0 {
        return Vec::new();
    }
    let only = [
        Signal::DocsOnly,
        Signal::TestsOnly,
        Signal::GeneratedOnly,
        Signal::DependencyOnly,
        Signal::BuildOnly,
        Signal::SubmoduleOnly,
    ];
    raised.extend(only.iter().zip(all).filter(|(_, all)| *all).map(|(signal, _)| *signal));
    raised.sort();
    raised.dedup();
    raised
}

/// Whether a commit with `summary` and `signals` earns a narrative bullet.
/// Omitted commits still appear in the full changelog.
pub fn policy(summary: &str, signals: &[Signal], has_files: bool) -> Policy {
    let lower = summary.to_ascii_lowercase();
    let chore = lower.starts_with("chore:") || lower.starts_with("chore(");
    if !has_files {
        return if chore { Policy::omit("chore without changed-file evidence") } else { Policy::include() };
    }
    let has = |signal| signals.contains(&signal);
    if has(Signal::SubmoduleOnly) {
        Policy::omit("submodule pointer update; the submodule's own commits are the evidence")
    } else if has(Signal::TestsOnly) {
        Policy::omit("tests only")
    } else if has(Signal::BuildOnly) {
        Policy::omit("build or CI files only")
    } else if has(Signal::GeneratedOnly) && !has(Signal::Api) && !has(Signal::ConfigSchema) {
        Policy::omit("generated files only")
    } else if has(Signal::DependencyOnly) {
        Policy::omit("dependency metadata only")
    } else if chore && !has(Signal::Runtime) && !has(Signal::Docs) {
        Policy::omit("chore without runtime changes")
    } else {
        Policy::include()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(path: &str) -> Vec<PathKind> {
        path_kinds(path, false)
    }

    #[test]
    fn paths_are_classified() {
        assert_eq!(kinds("README.md"), [PathKind::Docs]);
        assert_eq!(kinds("docs/guide/setup.html"), [PathKind::Docs]);
        assert_eq!(kinds("tests/tests/e2e/main.rs"), [PathKind::Tests]);
        assert_eq!(kinds("internal/x/x_test.go"), [PathKind::Tests]);
        assert_eq!(kinds("web/app.test.tsx"), [PathKind::Tests]);
        assert_eq!(kinds("Cargo.lock"), [PathKind::Dependency]);
        assert_eq!(kinds("requirements-dev.txt"), [PathKind::Dependency]);
        assert_eq!(kinds(".github/workflows/ci.yml"), [PathKind::Build]);
        assert_eq!(kinds("CMakeLists.txt"), [PathKind::Build]);
        assert_eq!(kinds("api/v1/service.pb.go"), [PathKind::Generated]);
        assert_eq!(kinds("src/search/rank.rs"), []);
        assert_eq!(path_kinds("vendor/lib", true), [PathKind::Submodule]);
    }

    #[test]
    fn signals_describe_the_whole_set() {
        let files = [("src/cli.rs", vec![]), ("docs/cli.md", kinds("docs/cli.md"))];
        let raised = signals(files.iter().map(|(path, kinds)| (*path, kinds.as_slice())));
        assert_eq!(raised, [Signal::Runtime, Signal::Cli, Signal::Docs]);

        let docs = [("README.md", kinds("README.md")), ("docs/a.md", kinds("docs/a.md"))];
        let raised = signals(docs.iter().map(|(path, kinds)| (*path, kinds.as_slice())));
        assert_eq!(raised, [Signal::Docs, Signal::DocsOnly]);

        let api = [("proto/gitagent/v1/gitagent.proto", vec![]), ("shared/src/config_file.rs", vec![])];
        let raised = signals(api.iter().map(|(path, kinds)| (*path, kinds.as_slice())));
        assert_eq!(raised, [Signal::Runtime, Signal::ConfigSchema, Signal::Api]);

        let submodule = [("vendor/lib", vec![PathKind::Submodule])];
        let raised = signals(submodule.iter().map(|(path, kinds)| (*path, kinds.as_slice())));
        assert_eq!(raised, [Signal::SubmoduleOnly]);
        assert!(signals(std::iter::empty()).is_empty());
    }

    #[test]
    fn policy_omits_what_operators_do_not_see() {
        assert_eq!(policy("feat: x", &[Signal::Runtime], true), Policy::include());
        assert_eq!(policy("test: x", &[Signal::TestsOnly], true).reason, Some("tests only"));
        assert!(!policy("chore: bump", &[Signal::DependencyOnly], true).include);
        assert!(!policy("Update lib", &[Signal::SubmoduleOnly], true).include);
        assert!(!policy("ci: cache", &[Signal::BuildOnly], true).include);
        assert!(policy("docs: explain", &[Signal::Docs, Signal::DocsOnly], true).include);
        assert!(!policy("chore: tidy", &[], false).include);
        assert!(policy("Fix crash", &[], false).include);
    }
}

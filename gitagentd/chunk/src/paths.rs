//! Path rules of search that do not touch the disk: `--scope` normalization
//! and membership, the dot-path rule and its scope opt-in, `--code`'s
//! extension list and `--no-tests`' test-path rules. Paths here are
//! root-relative and `/`-separated keys (`git_agent_shared::quote`): the
//! scope and dot rules compare the bytes a key stands for, so a name that
//! is not UTF-8 is matched exactly; the kind rules (`--code`, `--no-tests`,
//! extensions) judge a quoted key by [`kind_name`].

use git_agent_shared::quote::key_bytes;
use std::borrow::Cow;

/// Why a `--scope` value was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScopeError {
    #[error(
        "--scope path {0:?} must be relative\nhint: scopes are relative to the current directory, such as --scope src,docs"
    )]
    Absolute(String),
    #[error("--scope path {0:?} must stay under the search root")]
    Outside(String),
    #[error("--scope requires at least one relative path\nhint: --scope src,docs")]
    Empty,
    #[error(
        "--scope path {0:?} does not exist under {1}\nhint: scopes are relative to the current directory; check the spelling, or drop --scope to search everything"
    )]
    Missing(String, std::path::PathBuf),
}

/// Splits a `--scope` value at commas, dropping empty items.
pub fn split_scope_flag(value: &str) -> Result<Vec<String>, ScopeError> {
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<String> = value.split(',').filter(|item| !item.is_empty()).map(str::to_string).collect();
    if items.is_empty() {
        return Err(ScopeError::Empty);
    }
    Ok(items)
}

/// Cleans, deduplicates and sorts scope items. `.` (or anything that
/// cleans to it) selects everything and yields no scope at all.
pub fn normalize_scopes(scopes: &[String]) -> Result<Vec<String>, ScopeError> {
    if scopes.is_empty() {
        return Ok(Vec::new());
    }
    let mut normalized: Vec<String> = Vec::new();
    for raw in scopes {
        let item = raw.trim();
        if item.is_empty() {
            continue;
        }
        if item.starts_with('/') {
            return Err(ScopeError::Absolute(item.to_string()));
        }
        let cleaned = clean_relative(item);
        if cleaned == "." {
            return Ok(Vec::new());
        }
        if cleaned == ".." || cleaned.starts_with("../") {
            return Err(ScopeError::Outside(item.to_string()));
        }
        let cleaned = cleaned.trim_matches('/').to_string();
        if cleaned.is_empty() {
            return Ok(Vec::new());
        }
        if !normalized.contains(&cleaned) {
            normalized.push(cleaned);
        }
    }
    if normalized.is_empty() {
        return Err(ScopeError::Empty);
    }
    normalized.sort();
    Ok(normalized)
}

/// Lexically cleans a relative path: removes `.` and empty components and
/// resolves `..` against earlier components (Go's `path.Clean`, applied
/// to the path without its leading slashes).
pub fn clean_relative(path: &str) -> String {
    git_agent_shared::giturl::clean_path(path.trim_start_matches('/'))
}

/// Whether `path` lies in one of the scope items (everything does when
/// there is no scope).
pub fn path_in_scope(path: &str, scope: &[String]) -> bool {
    if scope.is_empty() {
        return true;
    }
    let path = key_bytes(path);
    let path = trim_slashes(&path);
    if path.is_empty() || path == b"." {
        return true;
    }
    scope.iter().any(|item| is_same_or_under(path, &key_bytes(item)))
}

/// Whether a walk must enter directory `dir` to reach some scope item.
pub fn scope_may_contain_dir(dir: &str, scope: &[String]) -> bool {
    if scope.is_empty() {
        return true;
    }
    let dir = key_bytes(dir);
    let dir = trim_slashes(&dir);
    if dir.is_empty() || dir == b"." {
        return true;
    }
    scope.iter().any(|item| {
        let item = key_bytes(item);
        is_same_or_under(&item, dir) || is_same_or_under(dir, &item)
    })
}

fn trim_slashes(path: &[u8]) -> &[u8] {
    let start = path.iter().position(|&byte| byte != b'/').unwrap_or(path.len());
    let end = path.iter().rposition(|&byte| byte != b'/').map_or(start, |at| at + 1);
    &path[start..end]
}

fn is_same_or_under(path: &[u8], base: &[u8]) -> bool {
    path == base || (path.len() > base.len() && path.starts_with(base) && path[base.len()] == b'/')
}

/// A dot name (`.git`, `.env`, `.github`) is skipped by default discovery.
pub fn is_dot_name(name: impl AsRef<[u8]>) -> bool {
    name.as_ref().first() == Some(&b'.')
}

/// Whether some component of `path` is a dot name.
pub fn path_has_dot_component(path: &str) -> bool {
    has_dot_component(&key_bytes(path))
}

fn has_dot_component(path: &[u8]) -> bool {
    path.split(|&byte| byte == b'/').any(is_dot_name)
}

/// Whether any scope item opts into a normally skipped (dot) path, which
/// gives the search its own `scope-*` cache.
pub fn scope_uses_skipped_path(scope: &[String]) -> bool {
    scope.iter().any(|item| path_has_dot_component(item))
}

/// Whether the dot-path rule skips `path`, given the scopes that may opt
/// into dot paths explicitly.
pub fn dot_rule_skips(path: &str, scope: &[String]) -> bool {
    let path = key_bytes(path);
    let mut end = 0;
    for (index, part) in path.split(|&byte| byte == b'/').enumerate() {
        end += part.len() + usize::from(index > 0);
        if is_dot_name(part) && !scope_allows_dot_prefix(&path[..end], scope) {
            return true;
        }
    }
    false
}

fn scope_allows_dot_prefix(prefix: &[u8], scope: &[String]) -> bool {
    scope.iter().any(|item| {
        let item = key_bytes(item);
        is_same_or_under(&item, prefix)
            || (has_dot_component(&item) && is_same_or_under(prefix, &item) && prefix != &*item)
    })
}

/// The text a path's kind (code, test, extension, language) is judged
/// by: the key itself, or for a quoted key the bytes it stands for with
/// any invalid UTF-8 replaced (extensions and test names are ASCII, so
/// nothing they are judged by is lost).
pub fn kind_name(path: &str) -> Cow<'_, str> {
    match key_bytes(path) {
        Cow::Borrowed(_) => Cow::Borrowed(path),
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

/// The `--code` filter: source-code files by extension.
pub fn is_code_path(path: &str) -> bool {
    let path = kind_name(path);
    const CODE: &[&str] = &[
        "go", "js", "jsx", "ts", "tsx", "mjs", "cjs", "py", "rb", "rs", "java", "kt", "kts", "c", "h", "cc", "hh",
        "cpp", "hpp", "cs", "php", "swift", "scala", "sh", "bash", "zsh", "fish", "ps1", "sql", "html", "css", "scss",
        "sass", "vue", "svelte",
    ];
    extension(&path).is_some_and(|ext| CODE.iter().any(|code| ext.eq_ignore_ascii_case(code)))
}

/// The extension of the last path component, without its dot (of a
/// quoted key: without its closing quote, whose escapes match no
/// extension).
pub fn extension(path: &str) -> Option<&str> {
    let path = match path.strip_prefix('"') {
        Some(quoted) => quoted.strip_suffix('"').unwrap_or(quoted),
        None => path,
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    let dot = name.rfind('.')?;
    Some(&name[dot + 1..])
}

/// `--no-tests`: test directories anywhere in the path, test-named files,
/// and class-style test names in class-based languages. `testdata` and
/// words such as `contest`, `latest` or `testimonial` are not tests.
pub fn is_test_path(path: &str) -> bool {
    let path = kind_name(path);
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    let Some((name, dirs)) = parts.split_last() else { return false };
    if dirs.iter().any(|dir| is_test_dir_name(&dir.to_lowercase())) {
        return true;
    }
    let stem = match name.rfind('.') {
        Some(dot) => &name[..dot],
        None => name,
    };
    let lower = stem.to_lowercase();
    if lower
        .split(['.', '-', '_'])
        .any(|part| matches!(part, "test" | "tests" | "spec" | "specs" | "unittest" | "unittests"))
    {
        return true;
    }
    is_class_style_test_name(name, stem)
}

fn is_test_dir_name(name: &str) -> bool {
    matches!(
        name,
        "test"
            | "tests"
            | "__tests__"
            | "spec"
            | "specs"
            | "__specs__"
            | "integration_test"
            | "integration_tests"
            | "integration-test"
            | "integration-tests"
    )
}

fn is_class_style_test_name(name: &str, stem: &str) -> bool {
    const CLASS_LANGUAGES: &[&str] =
        &["cs", "fs", "fsx", "groovy", "java", "kt", "kts", "m", "mm", "php", "scala", "swift", "vb"];
    let Some(ext) = extension(name) else { return false };
    if !CLASS_LANGUAGES.iter().any(|lang| ext.eq_ignore_ascii_case(lang)) {
        return false;
    }
    if stem.ends_with("Test") || stem.ends_with("Tests") || stem.ends_with("TestCase") {
        return true;
    }
    stem.strip_prefix("Test")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|next| next.is_uppercase() || next.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn no_tests_table() {
        let tests = [
            "widget_test.rs",
            "widget_tests.rs",
            "test_widget.py",
            "widget_test.py",
            "widget_spec.rb",
            "widget-test.cpp",
            "widget-unittest.cc",
            "button.test.ts",
            "button.spec.ts",
            "test.js",
            "spec.ts",
            "main_test.go",
            "WidgetTest.java",
            "WidgetTests.cs",
            "WidgetTestCase.kt",
            "TestWidget.java",
            "Test2Widget.swift",
            "integration_test/widget.dart",
            "integration-tests/widget.ts",
            "specs/widget.rb",
            "spec/model.rb",
            "tests/helper.go",
            "test/helper.py",
            "__tests__/view.ts",
            "__specs__/view.ts",
            "src/Tests/helper.go",
        ];
        for path in tests {
            assert!(is_test_path(path), "{path} should be a test path");
        }
        let non_tests = [
            "contest.rs",
            "latest.py",
            "testimonial.ts",
            "testament.java",
            "Testimonial.java",
            "testing/widget.go",
            "testdata/sample.json",
            "src/contest/main.go",
            "attestation.go",
            "TestWidget.go",
            "Testing.java",
            "main.go",
        ];
        for path in non_tests {
            assert!(!is_test_path(path), "{path} should not be a test path");
        }
    }

    #[test]
    fn code_extensions() {
        for path in ["a.go", "b/c.TSX", "x.rs", "y.svelte", "run.ps1", "s.sql", "index.html"] {
            assert!(is_code_path(path), "{path}");
        }
        for path in ["README.md", "config.yaml", "Makefile", "data.json", "notes.txt", "go"] {
            assert!(!is_code_path(path), "{path}");
        }
    }

    #[test]
    fn scopes_are_cleaned_sorted_and_checked() {
        assert_eq!(normalize_scopes(&scopes(&["b/", "./a//x", "b"])).unwrap(), scopes(&["a/x", "b"]));
        assert_eq!(normalize_scopes(&scopes(&["a", "."])).unwrap(), Vec::<String>::new());
        assert_eq!(normalize_scopes(&scopes(&["a/.."])).unwrap(), Vec::<String>::new());
        assert!(matches!(normalize_scopes(&scopes(&["/etc"])), Err(ScopeError::Absolute(_))));
        assert!(matches!(normalize_scopes(&scopes(&["../x"])), Err(ScopeError::Outside(_))));
        assert!(matches!(normalize_scopes(&scopes(&["  "])), Err(ScopeError::Empty)));
        assert!(matches!(split_scope_flag(",,"), Err(ScopeError::Empty)));
        assert_eq!(split_scope_flag("a,,b").unwrap(), scopes(&["a", "b"]));
    }

    #[test]
    fn scope_membership() {
        let scope = scopes(&["src/app", "docs"]);
        assert!(path_in_scope("src/app/main.go", &scope));
        assert!(path_in_scope("docs", &scope));
        assert!(!path_in_scope("src/application/main.go", &scope));
        assert!(scope_may_contain_dir("src", &scope));
        assert!(scope_may_contain_dir("src/app/x", &scope));
        assert!(!scope_may_contain_dir("lib", &scope));
    }

    #[test]
    fn quoted_keys_are_judged_by_their_bytes() {
        let quoted = |bytes: &[u8]| git_agent_shared::quote::utf8_or_quoted(bytes).into_owned();
        let scope = vec![quoted(b"dir\xff")];
        assert!(path_in_scope(&quoted(b"dir\xff/x.py"), &scope));
        assert!(!path_in_scope(&quoted(b"dir\xfe/x.py"), &scope));
        assert!(!path_in_scope("dir/x.py", &scope));
        assert!(scope_may_contain_dir(&quoted(b"dir\xff/sub"), &scope));
        assert!(dot_rule_skips(&quoted(b"a/.caf\xe9"), &[]));
        assert!(!dot_rule_skips(&quoted(b"caf\xe9/.x"), &[quoted(b"caf\xe9/.x")]));
        assert!(is_code_path(&quoted(b"caf\xe9.py")));
        assert_eq!(extension(&quoted(b"caf\xe9.py")), Some("py"));
        assert!(is_test_path(&quoted(b"tests/caf\xe9.txt")));
        assert_eq!(kind_name(&quoted(b"caf\xe9.py")), "caf\u{fffd}.py");
    }

    #[test]
    fn dot_paths_need_an_explicit_scope() {
        assert!(dot_rule_skips(".github/ci.yml", &[]));
        assert!(dot_rule_skips("src/.env", &[]));
        assert!(!dot_rule_skips("src/main.go", &[]));
        let scope = scopes(&[".github"]);
        assert!(!dot_rule_skips(".github/ci.yml", &scope));
        assert!(!dot_rule_skips(".github/.hidden/x.yml", &scope));
        assert!(dot_rule_skips(".gitlab/ci.yml", &scope));
        let deep = scopes(&[".config/app"]);
        assert!(!dot_rule_skips(".config/app/settings.toml", &deep));
        assert!(scope_uses_skipped_path(&deep));
        assert!(!scope_uses_skipped_path(&scopes(&["src"])));
    }
}

//! Files whose names say they hold secrets (`.env`, `*.pem`, `id_rsa`,
//! `*.p12`, `credentials.json` and the like) are never sent in full: a
//! file read becomes one line with its size and line count, and a
//! `diff --git` section of such a file keeps its header and becomes one
//! line with its added and removed line counts.
//!
//! Diff sections are found in plain text (sections end at the next line
//! that cannot belong to a patch) and in JSON-escaped text, where lines
//! are separated by `\n` escapes (sections end at the next `diff --git` or
//! at the end of the JSON string, the next unescaped `"`).

/// The marker rule of a withheld file.
pub const SECRET_FILE: &str = "secret-file";

/// Example and template files hold placeholders, not secrets.
const TEMPLATE_SUFFIXES: [&str; 6] = [".example", ".sample", ".template", ".dist", ".defaults", ".tmpl"];

/// Whether the file name of `path` says the file holds secrets.
pub fn is_secret_file(path: &str) -> bool {
    let path = path.trim_matches('"');
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path).to_ascii_lowercase();
    if name.ends_with(".pub") || TEMPLATE_SUFFIXES.iter().any(|suffix| name.ends_with(suffix)) {
        return false;
    }
    // `.env`, `.env.local`, `prod.env`.
    if name == ".env" || name.starts_with(".env.") || (name.len() > 4 && name.ends_with(".env")) {
        return true;
    }
    const EXTENSIONS: [&str; 10] =
        [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".ppk", ".p8", ".gpg"];
    if EXTENSIONS.iter().any(|extension| name.ends_with(extension)) {
        return true;
    }
    const SSH_KEYS: [&str; 4] = ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
    if SSH_KEYS.iter().any(|key| name.starts_with(key)) {
        return true;
    }
    const NAMES: [&str; 8] = [
        "credentials.json",
        "credentials",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".htpasswd",
        "secrets.json",
        "client_secret.json",
    ];
    NAMES.contains(&name.as_str()) || (name.starts_with("client_secret") && name.ends_with(".json"))
}

/// What the model sees instead of a whole secret-named file.
pub fn withheld_file(path: &str, text: &str) -> String {
    let lines = if text.is_empty() { 0 } else { text.lines().count() };
    format!("[REDACTED:{SECRET_FILE}] {path}: {lines} lines, {} bytes withheld", text.len())
}

/// A secret-named file's diff section: the bytes after its header line
/// to replace, and the line that replaces them.
pub(crate) struct Section {
    /// The file's path (its `b/` side, or `a/` for a deletion).
    pub path: String,
    pub start: usize,
    pub end: usize,
    pub replacement: String,
}

/// The diff sections of secret-named files in `text`.
pub(crate) fn secret_sections(text: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("diff --git ") {
        let header = from + found;
        from = header + "diff --git ".len();
        let raw = text[header..].find('\n').map(|at| header + at);
        let escaped = text[header..].find("\\n").map(|at| header + at);
        let (header_end, separator) = match (raw, escaped) {
            (Some(raw), Some(escaped)) if escaped < raw => (escaped, "\\n"),
            (Some(raw), _) => (raw, "\n"),
            (None, Some(escaped)) => (escaped, "\\n"),
            (None, None) => break,
        };
        let Some(path) =
            header_paths(&text[header + "diff --git ".len()..header_end]).find(|path| is_secret_file(path))
        else {
            continue;
        };
        let path = path.to_string();
        let end = if separator == "\n" { plain_end(text, header_end) } else { escaped_end(text, header_end) };
        let body = &text[header_end..end];
        let (mut added, mut removed) = (0, 0);
        for line in body.split(separator) {
            if line.starts_with('+') && !line.starts_with("+++") {
                added += 1;
            } else if line.starts_with('-') && !line.starts_with("---") {
                removed += 1;
            }
        }
        let replacement = format!(
            "{separator}[REDACTED:{SECRET_FILE}] content withheld: {added} lines added, {removed} removed, {} bytes of diff",
            body.len()
        );
        sections.push(Section { path, start: header_end, end, replacement });
        from = end.max(from);
    }
    sections
}

/// The file and its new-side line at `offset` of `text`, when `offset` is
/// inside a hunk of a `diff --git` section (plain or JSON-escaped).
pub(crate) fn diff_location(text: &str, offset: usize) -> Option<(String, u32)> {
    let before = &text[..offset];
    let header = before.rfind("diff --git ")?;
    let rest = &text[header + "diff --git ".len()..];
    let header_end = rest.find(['\n', '\\']).unwrap_or(rest.len());
    let path = header_paths(&rest[..header_end]).last()?.to_string();
    let hunk = header + before[header..].rfind("@@ -")?;
    let plus = hunk + before[hunk..].find(" +")? + 2;
    let digits: String = text[plus..].chars().take_while(char::is_ascii_digit).collect();
    let first: u32 = digits.parse().ok()?;
    let separator = if text[hunk..offset].contains('\n') { "\n" } else { "\\n" };
    // Lines after the hunk header up to the one holding `offset`; removed
    // lines are not on the new side.
    let mut lines = text[hunk..offset].split(separator).skip(1).collect::<Vec<_>>();
    lines.pop();
    let kept = lines.iter().filter(|line| !line.starts_with('-')).count() as u32;
    Some((path, first + kept))
}

/// The `a/` and `b/` paths of a `diff --git` header's rest.
fn header_paths(rest: &str) -> impl Iterator<Item = &str> {
    let (a, b) = match rest.rfind(" b/").or_else(|| rest.rfind(" \"b/")) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, ""),
    };
    [a, b].into_iter().map(|path| {
        let path = path.trim().trim_matches('"').trim_matches('\\').trim_matches('"');
        path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")).unwrap_or(path)
    })
}

/// Where a plain-text diff section that starts at `start` (its header's
/// newline) ends: before the first line that no patch holds.
fn plain_end(text: &str, start: usize) -> usize {
    let mut at = start;
    while at < text.len() {
        let line_start = at + 1;
        let line_end = text[line_start.min(text.len())..].find('\n').map_or(text.len(), |end| line_start + end);
        let line = &text[line_start.min(text.len())..line_end];
        if line.starts_with("diff --git ") || !patch_line(line) {
            return at;
        }
        at = line_end;
    }
    text.len()
}

fn patch_line(line: &str) -> bool {
    const HEADERS: [&str; 14] = [
        "index ",
        "new file mode",
        "deleted file mode",
        "old mode",
        "new mode",
        "similarity index",
        "dissimilarity index",
        "rename from",
        "rename to",
        "copy from",
        "copy to",
        "Binary files",
        "GIT binary patch",
        "@@",
    ];
    line.is_empty()
        || matches!(line.as_bytes()[0], b' ' | b'+' | b'-' | b'\\')
        || HEADERS.iter().any(|header| line.starts_with(header))
}

/// Where a JSON-escaped diff section ends: at the next `diff --git` or the
/// next unescaped quote, whichever comes first.
fn escaped_end(text: &str, start: usize) -> usize {
    let next_header = text[start..].find("diff --git ").map_or(text.len(), |at| start + at);
    let bytes = text.as_bytes();
    let mut backslashes = 0;
    for (offset, byte) in bytes[start..next_header].iter().enumerate() {
        match byte {
            b'\\' => backslashes += 1,
            b'"' if backslashes % 2 == 0 => return start + offset,
            _ => backslashes = 0,
        }
    }
    // Stop before the `\n` that precedes the next header.
    if next_header < text.len() && text[..next_header].ends_with("\\n") { next_header - 2 } else { next_header }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_hold_secrets() {
        for secret in [
            ".env",
            "app/.env.production",
            "deploy/prod.env",
            "certs/server.pem",
            "tls/server.key",
            "id_rsa",
            "home/.ssh/id_ed25519",
            "store.p12",
            "store.pfx",
            "gcp/credentials.json",
            ".netrc",
            "client_secret_123.apps.googleusercontent.com.json",
        ] {
            assert!(is_secret_file(secret), "{secret}");
        }
        for ordinary in [
            ".env.example",
            "id_rsa.pub",
            "src/env.rs",
            "environment.ts",
            "keys.go",
            "src/key.rs",
            "README.md",
            "credentials.rs",
            ".envrc.sample",
        ] {
            assert!(!is_secret_file(ordinary), "{ordinary}");
        }
    }

    #[test]
    fn plain_diff_sections_of_secret_files_are_withheld() {
        let diff = "diff --git a/.env b/.env\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.env\n@@ -0,0 +1,2 @@\n+A=1\n+B=2\ndiff --git a/src/a.rs b/src/a.rs\n+fn a() {}\n";
        let sections = secret_sections(diff);
        assert_eq!(sections.len(), 1);
        let section = &sections[0];
        assert_eq!(&diff[..section.start], "diff --git a/.env b/.env");
        assert_eq!(&diff[section.end..section.end + 12], "\ndiff --git ");
        assert!(section.replacement.contains("2 lines added, 0 removed"), "{}", section.replacement);
    }

    #[test]
    fn escaped_diff_sections_end_at_the_json_string() {
        let json =
            serde_json::json!({"diff": "diff --git a/id_rsa b/id_rsa\n+KEY \"x\"\n+MORE", "next": "kept"}).to_string();
        let sections = secret_sections(&json);
        assert_eq!(sections.len(), 1);
        assert!(json[sections[0].end..].starts_with("\",\"next\""), "{}", &json[sections[0].end..]);
    }
}

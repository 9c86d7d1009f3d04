//! Paths rendered the way git renders them: a path whose bytes are valid
//! UTF-8 with no control character, `"` or `\` is shown as it is (git's
//! `core.quotePath=false`, the form that keeps non-ASCII names readable);
//! any other path is shown in double quotes with C escapes, and every byte
//! that is not part of valid UTF-8 as a three-digit octal escape, as in
//! `"caf\351.py"`. The quoted form is for display and for the model; it
//! never names a file to open.

use std::borrow::Cow;

/// `bytes` as git shows the path.
pub fn quote_path(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.chars().any(|c| c.is_control() || c == '"' || c == '\\')
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\u{b}' => out.push_str("\\v"),
                '\u{c}' => out.push_str("\\f"),
                '\r' => out.push_str("\\r"),
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut buffer = [0u8; 4];
                    for byte in c.encode_utf8(&mut buffer).bytes() {
                        out.push_str(&format!("\\{byte:03o}"));
                    }
                }
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\{byte:03o}"));
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// A path that is valid UTF-8 as it is, whatever it holds (the text the
/// rest of the program keys and opens files by); any other path as
/// [`quote_path`] shows it.
pub fn utf8_or_quoted(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => quote_path(bytes),
    }
}

/// [`quote_path`] of an operating-system path.
pub fn quote_os_path(path: &std::path::Path) -> Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    quote_path(path.as_os_str().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `git ls-files` prints for the same names with
    /// `core.quotePath=false`.
    #[test]
    fn paths_are_quoted_as_git_quotes_them() {
        assert_eq!(quote_path(b"src/lib.rs"), "src/lib.rs");
        assert_eq!(quote_path("café.py".as_bytes()), "café.py");
        assert_eq!(quote_path(b"caf\xe9.py"), "\"caf\\351.py\"");
        assert_eq!(quote_path(b"a\nb"), "\"a\\nb\"");
        assert_eq!(quote_path(b"tab\there"), "\"tab\\there\"");
        assert_eq!(quote_path(b"say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(quote_path(b"back\\slash"), "\"back\\\\slash\"");
        assert_eq!(quote_path(b"esc\x1b"), "\"esc\\033\"");
        assert_eq!(utf8_or_quoted(b"a\nb"), "a\nb");
        assert_eq!(utf8_or_quoted(b"caf\xe9.py"), "\"caf\\351.py\"");
    }

    /// Git's own rendering: `core.quotePath=false` for valid UTF-8, and
    /// its default for names with invalid bytes or controls (which it
    /// quotes either way, but prints raw with `quotePath=false`).
    #[test]
    fn git_prints_the_same_quoted_names() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let output = std::process::Command::new("git")
                .current_dir(dir.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", dir.path())
                .args(args)
                .output()
                .unwrap();
            String::from_utf8(output.stdout).unwrap()
        };
        git(&["init", "-q"]);
        let quoted: [&[u8]; 3] = [b"caf\xe9.py", b"a\nb", b"esc\x1bx"];
        for name in quoted.iter().chain([&"caf\u{e9}.py".as_bytes()]) {
            use std::os::unix::ffi::OsStrExt;
            std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(name)), "x").unwrap();
        }
        git(&["add", "-A"]);
        let mut expected: Vec<String> = quoted.iter().map(|name| quote_path(name).into_owned()).collect();
        expected.sort();
        let mut listed: Vec<String> =
            git(&["ls-files"]).lines().filter(|line| !line.contains("\\303\\251")).map(str::to_string).collect();
        listed.sort();
        assert_eq!(listed, expected);
        let plain = git(&["-c", "core.quotePath=false", "ls-files", "caf\u{e9}.py"]);
        assert_eq!(plain.trim_end(), quote_path("caf\u{e9}.py".as_bytes()));
    }
}

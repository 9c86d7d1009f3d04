//! Paths rendered the way git renders them: a path whose bytes are valid
//! UTF-8 with no control character, `"` or `\` is shown as it is (git's
//! `core.quotePath=false`, the form that keeps non-ASCII names readable);
//! any other path is shown in double quotes with C escapes, and every byte
//! that is not part of valid UTF-8 as a three-digit octal escape, as in
//! `"caf\351.py"`.
//!
//! A path's *key* ([`utf8_or_quoted`]) is the one text the program keeps
//! for a path (index records, search results, what the model reads): the
//! path as it is when its bytes are valid UTF-8 and it does not start with
//! `"`, else the quoted form, which always starts with `"`. A key is
//! therefore reversible: [`key_bytes`] gives back the exact bytes, and
//! [`key_path`] the operating-system path to open. A quoted key never
//! names a file by itself: every open, stat or read goes through
//! [`key_path`].

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

/// The key of a path: the path as it is when it is valid UTF-8 (whatever
/// it holds) and does not start with `"`; any other path as
/// [`quote_path`] shows it (which then starts with `"`). [`key_bytes`] is
/// its exact inverse.
pub fn utf8_or_quoted(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.starts_with('"') => Cow::Borrowed(text),
        _ => quote_path(bytes),
    }
}

/// The bytes of the path whose key is `key` (see [`utf8_or_quoted`]): a
/// key starting with `"` is unquoted, any other is its own bytes. A text
/// starting with `"` that is not a well-formed quoted path (which no key
/// is) stands for itself.
pub fn key_bytes(key: &str) -> Cow<'_, [u8]> {
    if key.starts_with('"')
        && let Some(bytes) = unquote(key)
    {
        return Cow::Owned(bytes);
    }
    Cow::Borrowed(key.as_bytes())
}

/// The operating-system path whose key is `key`: what every open, stat
/// or read of a keyed path goes through.
pub fn key_path(key: &str) -> Cow<'_, std::path::Path> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    match key_bytes(key) {
        Cow::Borrowed(bytes) => Cow::Borrowed(std::path::Path::new(std::ffi::OsStr::from_bytes(bytes))),
        Cow::Owned(bytes) => Cow::Owned(std::ffi::OsString::from_vec(bytes).into()),
    }
}

/// The key of an operating-system path ([`utf8_or_quoted`] of its bytes).
pub fn os_path_key(path: &std::path::Path) -> Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    utf8_or_quoted(path.as_os_str().as_bytes())
}

/// `prefix` and the path whose key is `key`, as git writes them in a
/// patch header: `a/src/lib.rs`, or quoted whole, `"a/caf\351.py"`.
pub fn prefixed_key(prefix: &str, key: &str) -> String {
    match key_bytes(key) {
        Cow::Borrowed(_) => format!("{prefix}{key}"),
        Cow::Owned(bytes) => quote_path(&[prefix.as_bytes(), &bytes].concat()).into_owned(),
    }
}

/// The bytes of a C-quoted string as git writes it (`"..."` with `\a`,
/// `\b`, `\t`, `\n`, `\v`, `\f`, `\r`, `\"`, `\\` and three-digit
/// octal escapes); `None` when `text` is not one.
pub fn unquote(text: &str) -> Option<Vec<u8>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        at += 1;
        match byte {
            b'"' => return None,
            b'\\' => {
                let escape = *bytes.get(at)?;
                at += 1;
                out.push(match escape {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'r' => b'\r',
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'0'..=b'3' => {
                        let digits = bytes.get(at..at + 2)?;
                        if !digits.iter().all(|digit| (b'0'..=b'7').contains(digit)) {
                            return None;
                        }
                        at += 2;
                        ((escape - b'0') << 6) | ((digits[0] - b'0') << 3) | (digits[1] - b'0')
                    }
                    _ => return None,
                });
            }
            byte => out.push(byte),
        }
    }
    Some(out)
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
        assert_eq!(utf8_or_quoted(b"\"quoted\".py"), "\"\\\"quoted\\\".py\"");
        assert_eq!(utf8_or_quoted(b"a\"b"), "a\"b");
    }

    /// Every key gives back the bytes it was made of, and every quoted
    /// rendering unquotes to its bytes.
    fn assert_round_trip(bytes: &[u8]) {
        let key = utf8_or_quoted(bytes);
        assert_eq!(key_bytes(&key), bytes, "{key}");
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(key_path(&key).as_os_str().as_bytes(), bytes, "{key}");
        let quoted = quote_path(bytes);
        if quoted.starts_with('"') {
            assert_eq!(unquote(&quoted).as_deref(), Some(bytes), "{quoted}");
        }
    }

    #[test]
    fn keys_and_quoted_paths_round_trip() {
        for bytes in [
            &b""[..],
            b"src/lib.rs",
            "caf\u{e9}.py".as_bytes(),
            b"caf\xe9.py",
            b"dir\xff/x.py",
            b"\"",
            b"\"\"",
            b"\"a",
            b"a\"",
            b"\\",
            b"\\\"",
            b"a\nb\tc\rd\x07\x08\x0b\x0c\x1b\x7f",
            "\u{85}\u{9f}".as_bytes(),
            b"\xc3",
            b"\xc3\xa9\xe9",
            b"\x00\x01\x7f\x80\xff",
        ] {
            assert_round_trip(bytes);
        }
        // Every byte string of up to three bytes over an alphabet of the
        // bytes that matter (quote, backslash, controls, ASCII, UTF-8
        // leads and continuations, invalid bytes), then pseudo-random
        // strings over all bytes.
        let alphabet =
            [b'"', b'\\', b'\n', 0x07, 0x1b, b'0', b'7', b'a', b'/', 0x7f, 0x80, 0xa9, 0xc3, 0xe2, 0xf0, 0xff];
        for length in 0..=3u32 {
            for mut index in 0..alphabet.len().pow(length) {
                let mut bytes = Vec::new();
                for _ in 0..length {
                    bytes.push(alphabet[index % alphabet.len()]);
                    index /= alphabet.len();
                }
                assert_round_trip(&bytes);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let length = (state % 12) as usize;
            let bytes: Vec<u8> = (0..length).map(|at| (state >> (at * 5)) as u8).collect();
            assert_round_trip(&bytes);
        }
    }

    #[test]
    fn patch_headers_quote_the_prefixed_path() {
        assert_eq!(prefixed_key("a/", "src/lib.rs"), "a/src/lib.rs");
        assert_eq!(prefixed_key("b/", &utf8_or_quoted(b"d\xff/caf\xe9.rs")), "\"b/d\\377/caf\\351.rs\"");
    }

    #[test]
    fn unquote_refuses_what_git_never_writes() {
        assert_eq!(unquote("\"caf\\351.py\""), Some(b"caf\xe9.py".to_vec()));
        assert_eq!(unquote("\"a\\tb\""), Some(b"a\tb".to_vec()));
        for text in ["plain", "\"", "\"open", "\"a\"b\"", "\"\\\"", "\"\\q\"", "\"\\4000\"", "\"\\38\"", "\"\\1\""] {
            assert_eq!(unquote(text), None, "{text}");
        }
        // A text starting with a quote that unquotes to nothing stands
        // for itself.
        assert_eq!(key_bytes("\"open"), &b"\"open"[..]);
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

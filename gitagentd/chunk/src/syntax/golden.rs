//! Chunk output pinned to a golden file: every file under
//! `testdata/chunking/` (real Rust, Python, TypeScript, TSX, JavaScript
//! and Markdown files, one snippet per other language, and synthetic
//! files for long declarations, tiny neighbours, CRLF, long lines and
//! parse failures) is cut with the default and with a small input cap,
//! and each chunk's lines, symbol, context lines, body range and the
//! SHA-256 of its exact embedding input are compared with
//! `testdata/chunking.golden`. A change meant only to make chunking
//! faster must leave that file unchanged; a change of chunk policy
//! rewrites it with `UPDATE_GOLDEN=1` and shows the difference in review.

use crate::chunking::{self, ChunkedFile};
use std::fmt::Write as _;
use std::path::PathBuf;

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/syntax/testdata")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

/// One line per chunk of `file`, checking on the way that the stored
/// hash and length are those of the input [`chunking::chunk_input`]
/// builds.
fn describe(out: &mut String, path: &str, file: &ChunkedFile, max_chars: usize) {
    use sha2::{Digest, Sha256};
    for chunk in &file.chunks {
        let input = file.input(path, chunk, max_chars);
        let hash: [u8; 32] = Sha256::digest(input.as_bytes()).into();
        assert_eq!(
            hash, chunk.input_hash,
            "{path} lines {}-{}: hash is not its input's",
            chunk.start_line, chunk.end_line
        );
        assert_eq!(input.len(), chunk.input_bytes as usize, "{path} lines {}-{}", chunk.start_line, chunk.end_line);
        let symbol = chunk.symbol.as_ref().map_or(String::new(), |symbol| format!("{} {}", symbol.kind, symbol.name));
        let span = |span: Option<chunking::LineSpan>| {
            span.map_or(String::new(), |span| format!("{}+{}", span.start, span.len))
        };
        let _ = writeln!(
            out,
            "{path} cap={max_chars} lines={}-{} body={}+{} path_only={} symbol=[{symbol}] context=[{}] signature=[{}] input={} sha256={}",
            chunk.start_line,
            chunk.end_line,
            chunk.body_start,
            chunk.body_len,
            chunk.path_only,
            span(chunk.context.parent),
            span(chunk.context.signature),
            chunk.input_bytes,
            hex(&chunk.input_hash),
        );
    }
}

#[cfg(all(
    feature = "lang-rust",
    feature = "lang-python",
    feature = "lang-javascript",
    feature = "lang-typescript",
    feature = "lang-java",
    feature = "lang-c",
    feature = "lang-cpp",
    feature = "lang-csharp",
    feature = "lang-ruby",
    feature = "lang-php",
    feature = "lang-kotlin",
    feature = "lang-swift",
    feature = "lang-scala",
    feature = "lang-bash"
))]
#[test]
fn chunks_match_the_golden_file() {
    let folder = testdata().join("chunking");
    let mut names: Vec<String> =
        std::fs::read_dir(&folder).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert!(names.len() >= 20, "fixtures missing under {}", folder.display());
    let mut actual = String::new();
    for name in &names {
        let text = std::fs::read_to_string(folder.join(name)).unwrap();
        // The fixtures stand for files at these paths of a repository.
        let path = format!("src/{name}");
        for max_chars in [0, 600] {
            let file = chunking::chunk_file(&path, text.clone(), max_chars);
            describe(&mut actual, &path, &file, max_chars);
        }
    }
    let golden = testdata().join("chunking.golden");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_default();
    if expected != actual {
        let first = expected.lines().zip(actual.lines()).position(|(want, got)| want != got);
        let (want, got) = match first {
            Some(index) => (expected.lines().nth(index).unwrap_or(""), actual.lines().nth(index).unwrap_or("")),
            None => ("(line count differs)", ""),
        };
        panic!(
            "chunk output differs from {} ({} lines expected, {} produced); first difference:\n- {want}\n+ {got}\n\
             rerun with UPDATE_GOLDEN=1 only if the change of chunks is intended",
            golden.display(),
            expected.lines().count(),
            actual.lines().count(),
        );
    }
}

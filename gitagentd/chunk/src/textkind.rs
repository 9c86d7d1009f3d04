//! Whether a file's bytes are worth indexing: the binary check (a NUL byte
//! near the start) and the text-type check. Source-code extensions are
//! always text; other names go through a built-in extension table modeled
//! on the common `mime.types` entries (text types plus JSON, YAML, TOML,
//! XML, SQL and shell count as text; images, audio, video, archives,
//! documents, fonts and executables do not), and names the table does not
//! know are sniffed the way HTTP content sniffing does: known binary
//! signatures and control bytes mean "not text".

use super::paths::{extension, is_code_path};

/// How many leading bytes the binary check inspects.
const BINARY_PREFIX: usize = 8000;
/// How many leading bytes content sniffing inspects.
const SNIFF_PREFIX: usize = 512;

/// A NUL byte among the first 8,000 bytes marks a binary file.
pub fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(BINARY_PREFIX)].contains(&0)
}

/// Whether `data`, stored at `path`, is text git-agent indexes.
pub fn is_indexable_text(path: &str, data: &[u8]) -> bool {
    if is_code_path(path) {
        return true;
    }
    if let Some(ext) = extension(path) {
        let ext = ext.to_ascii_lowercase();
        if TEXT_EXTENSIONS.contains(&ext.as_str()) {
            return true;
        }
        if NON_TEXT_EXTENSIONS.contains(&ext.as_str()) {
            return false;
        }
    }
    sniff_is_text(data)
}

/// Extensions whose registered media type is text (or a text-like
/// application type).
const TEXT_EXTENSIONS: &[&str] = &[
    "txt",
    "text",
    "md",
    "markdown",
    "mdx",
    "rst",
    "adoc",
    "asciidoc",
    "org",
    "tex",
    "csv",
    "tsv",
    "json",
    "jsonl",
    "ndjson",
    "geojson",
    "yaml",
    "yml",
    "toml",
    "xml",
    "xsd",
    "xsl",
    "rss",
    "atom",
    "sql",
    "ics",
    "vcf",
    "htm",
    "xhtml",
    "ini",
    "cfg",
    "conf",
    "properties",
    "log",
    "diff",
    "patch",
    "srt",
    "vtt",
    "css",
    "js",
];

/// Extensions whose registered media type is neither text nor text-like.
const NON_TEXT_EXTENSIONS: &[&str] = &[
    // images
    "png", "jpg", "jpeg", "jpe", "gif", "bmp", "ico", "icns", "webp", "avif", "tif", "tiff", "psd", "heic", "heif",
    "svg", "svgz", "xcf", "jxl", // audio
    "mp3", "wav", "ogg", "oga", "flac", "m4a", "aac", "opus", "mid", "midi", "weba", "aiff", // video
    "mp4", "m4v", "mov", "avi", "mkv", "webm", "wmv", "flv", "mpg", "mpeg", "3gp", "ogv", // archives
    "zip", "gz", "tgz", "bz2", "xz", "7z", "rar", "tar", "zst", "lz", "lzma", "jar", "war", "apk", "deb", "rpm", "dmg",
    "iso", "cab", // documents
    "pdf", "ps", "eps", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "rtf", "epub", "mobi",
    // fonts
    "ttf", "otf", "woff", "woff2", "eot", // binaries and data
    "bin", "exe", "dll", "so", "dylib", "o", "a", "lib", "obj", "class", "pyc", "pyo", "wasm", "db", "sqlite",
    "sqlite3", "pem", "der", "crt", "p12", "pfx", "keystore", "swf", "torrent",
];

/// Content sniffing for names the table does not know.
fn sniff_is_text(data: &[u8]) -> bool {
    let head = &data[..data.len().min(SNIFF_PREFIX)];
    if head.starts_with(&[0xEF, 0xBB, 0xBF]) || head.starts_with(&[0xFE, 0xFF]) || head.starts_with(&[0xFF, 0xFE]) {
        return true;
    }
    const BINARY_SIGNATURES: &[&[u8]] = &[
        b"%PDF-",
        b"%!PS-Adobe-",
        b"GIF87a",
        b"GIF89a",
        b"\x89PNG\r\n\x1a\n",
        b"\xFF\xD8\xFF",
        b"BM",
        b"OggS",
        b"ID3",
        b"MThd",
        b"\x1A\x45\xDF\xA3",
        b"PK\x03\x04",
        b"\x1F\x8B\x08",
        b"Rar!\x1A\x07",
        b"\x00asm",
        b"wOFF",
        b"wOF2",
        b"OTTO",
        b"7z\xBC\xAF\x27\x1C",
    ];
    if BINARY_SIGNATURES.iter().any(|signature| head.starts_with(signature)) {
        return false;
    }
    if head.len() >= 12 && head.starts_with(b"RIFF") && matches!(&head[8..12], b"WEBP" | b"WAVE" | b"AVI ") {
        return false;
    }
    !head.iter().any(|&byte| matches!(byte, 0x00..=0x08 | 0x0B | 0x0E..=0x1A | 0x1C..=0x1F))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        let cases: &[(&str, &[u8], bool)] = &[
            ("main.go", b"package main\nfunc main() {}\n", true),
            ("component.tsx", b"export function Component() { return <div /> }\n", true),
            ("README.md", b"# title\n", true),
            ("data.json", br#"{"release":"notes"}"#, true),
            ("config.yaml", b"release: notes\n", true),
            ("config.toml", b"release = \"notes\"\n", true),
            ("schema.sql", b"select 1;\n", true),
            ("feed.xml", b"<feed />\n", true),
            ("LOCKFILE", b"release notes\n", true),
            ("icon.svg", br#"<svg xmlns="http://www.w3.org/2000/svg"><title>release notes</title></svg>"#, false),
            ("doc.pdf", b"%PDF-1.7\nrelease notes\n", false),
            ("image.png", b"release notes\n", false),
            ("archive.bin", b"release notes\n", false),
            ("notes", b"%PDF-1.7\n", false),
            ("escape", b"text \x1b[0m colour\n", true),
            ("control", b"text \x01 colour\n", false),
        ];
        for (path, data, want) in cases {
            assert_eq!(is_indexable_text(path, data), *want, "{path}");
        }
    }

    #[test]
    fn nul_bytes_mark_binary_files() {
        assert!(is_binary(b"release\x00notes"));
        assert!(!is_binary(b"release notes"));
        let mut late = vec![b'a'; BINARY_PREFIX];
        late.push(0);
        assert!(!is_binary(&late));
    }
}

//! Chunking: a file's text becomes line-ranged chunks, each with the exact
//! capped input the embeddings endpoint receives and the hashes that make
//! a stored vector reusable.
//!
//! - Text is normalized first (CRLF to LF, one trailing newline dropped).
//! - Go files are cut at their top-level declarations (functions, methods,
//!   types, constants, variables, each named), with the lines between
//!   declarations (package clause, imports, comments) as unnamed chunks; a
//!   Go file whose comment before `package` says `DO NOT EDIT` becomes one
//!   path-only chunk with no body.
//! - Files of a language with a built-in grammar ([`super::syntax`]) are
//!   cut at their declarations the same way, and a container's members
//!   (methods of a class, impl or trait) are chunks of their own, with the
//!   container's first line as `context:` in their embedding input and
//!   its header (up to the first member) as a chunk of its own. A
//!   function or method is always a chunk of its own (the answer to a
//!   search is the function, not a run of them); tiny neighbouring
//!   declarations of other kinds (constants, fields, type aliases) of one
//!   container merge (each at most 3 lines, together at most 12); the
//!   lines between declarations form
//!   chunks of their own, without the lines that hold only punctuation or
//!   a closing keyword. Markdown is cut at its headings.
//! - Other files, and files whose syntax cannot be followed, are cut into
//!   windows of 80 lines that overlap by 20. Declarations longer than 80
//!   lines are windowed the same way; each window after the first carries
//!   the declaration's first line as `signature:` in its input.
//! - The embedding input is `path:`, optional `symbol:` (kind, name and,
//!   when they differ from it, the name's words in parentheses:
//!   `symbol: method Searcher::search_path (searcher search path)`), `language:`,
//!   `context:` and `signature:` header lines, a blank line and the body,
//!   every physical line clamped to 4,000 characters, the whole capped at
//!   the configured number of characters. Its SHA-256 is the identity
//!   under which a vector is shared, so a chunk whose input did not change
//!   keeps its vector under any chunker version.

use super::paths;
use super::syntax::{self, markdown};
use gitagent_golang as golang;
use sha2::{Digest, Sha256};

/// The version of the rules above, written into every index manifest: an
/// index built by another version (or by a build with other languages) is
/// refreshed rather than trusted. [`chunker_version`] adds the built-in
/// grammars. `redact-1`: since then the text is redacted before it is
/// chunked (the search crate's reader), so older indexes, which may hold
/// secrets, are rebuilt.
const CHUNKER_RULES: &str = "syntax-4+redact-1";
pub const CHUNK_LINES: usize = 80;
/// Declarations of at most this many lines are tiny: neighbours merge.
pub const TINY_LINES: usize = 3;
/// A merge of tiny declarations spans at most this many lines.
pub const MERGED_LINES: usize = 12;
pub const CHUNK_OVERLAP: usize = 20;
pub const MAX_EMBEDDING_LINE_CHARS: usize = 4_000;
pub const DEFAULT_MAX_INPUT_CHARS: usize = 32_000;

/// A SHA-256 digest.
pub type Hash32 = [u8; 32];

/// The named declaration a chunk covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Symbol {
    pub kind: &'static str,
    pub name: String,
}

/// The chunker version recorded in manifests: the rules' version and the
/// languages this build parses.
pub fn chunker_version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| format!("{CHUNKER_RULES}+{}", syntax::built_in_labels().join(",")))
}

/// A line of the file's normalized text, as a byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSpan {
    pub start: u32,
    pub len: u32,
}

impl LineSpan {
    fn text<'a>(&self, text: &'a str) -> &'a str {
        let start = self.start as usize;
        text.get(start..start + self.len as usize).unwrap_or("").trim()
    }
}

/// Lines of the file that travel in a chunk's embedding input beside its
/// body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkContext {
    /// The first line of the container (class, impl, trait) of a member.
    pub parent: Option<LineSpan>,
    /// The first line of a long declaration, for its later windows.
    pub signature: Option<LineSpan>,
}

impl ChunkContext {
    /// `(label, line)` pairs in input order.
    fn lines<'a>(&self, text: &'a str) -> Vec<(&'static str, &'a str)> {
        let mut out = Vec::new();
        if let Some(parent) = self.parent {
            out.push(("context: ", parent.text(text)));
        }
        if let Some(signature) = self.signature {
            out.push(("signature: ", signature.text(text)));
        }
        out.retain(|(_, line)| !line.is_empty());
        out
    }
}

/// One chunk of a file, before it has a vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkDraft {
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: Option<Symbol>,
    pub context: ChunkContext,
    /// SHA-256 of the exact capped embedding input.
    pub input_hash: Hash32,
    /// Byte length of the capped embedding input.
    pub input_bytes: u32,
    /// The body as a byte range of the file's normalized text.
    pub body_start: u32,
    pub body_len: u32,
    pub path_only: bool,
}

/// A file cut into chunks, with the normalized text the ranges refer to.
#[derive(Debug)]
pub struct ChunkedFile {
    pub text: String,
    pub chunks: Vec<ChunkDraft>,
}

impl ChunkedFile {
    pub fn body(&self, chunk: &ChunkDraft) -> &str {
        let start = chunk.body_start as usize;
        &self.text[start..start + chunk.body_len as usize]
    }

    /// The exact embedding input of one of this file's chunks.
    pub fn input(&self, path: &str, chunk: &ChunkDraft, max_chars: usize) -> String {
        chunk_input(path, &self.text, chunk, max_chars)
    }
}

/// The exact embedding input of `chunk`, cut from `text` (the normalized
/// text it was cut from).
pub fn chunk_input(path: &str, text: &str, chunk: &ChunkDraft, max_chars: usize) -> String {
    let start = chunk.body_start as usize;
    let body = text.get(start..start + chunk.body_len as usize).unwrap_or("");
    embedding_input_with(path, chunk.symbol.as_ref(), &chunk.context.lines(text), body, max_chars)
}

/// CRLF to LF and one trailing newline removed.
pub fn normalize(text: String) -> String {
    let mut normalized =
        if memchr::memmem::find(text.as_bytes(), b"\r\n").is_some() { text.replace("\r\n", "\n") } else { text };
    if normalized.ends_with('\n') {
        normalized.pop();
    }
    normalized
}

/// The language label of the embedding input header.
pub fn language_for_path(path: &str) -> Option<&'static str> {
    let path = &*paths::kind_name(path);
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = &name[name.rfind('.')?..];
    match ext {
        ".go" => Some("go"),
        ".md" => Some("markdown"),
        ".json" => Some("json"),
        ".yaml" | ".yml" => Some("yaml"),
        ".js" => Some("javascript"),
        ".ts" => Some("typescript"),
        _ => syntax::language_label(path),
    }
}

/// Cuts `source` (as read from `path`) into chunks whose embedding inputs
/// are capped at `max_input_chars` characters.
pub fn chunk_file(path: &str, source: String, max_input_chars: usize) -> ChunkedFile {
    // What kind of file this is comes from the name (a quoted key's bytes);
    // the chunks carry the key.
    let kind = paths::kind_name(path);
    if kind.ends_with(".go") && golang::generated_heading(&source) {
        // Generated Go is indexed by its path alone; its text is never
        // read again, so none is kept.
        return ChunkedFile { text: String::new(), chunks: vec![path_only_chunk(path, max_input_chars)] };
    }
    let text = normalize(source);
    let lines = LineIndex::new(&text);
    let language = language_for_path(path);
    let mut chunks = Vec::new();
    let mut done = false;
    if kind.ends_with(".go")
        && let Some(file) = golang::scan(&text)
    {
        if file.generated {
            chunks.push(path_only_chunk(path, max_input_chars));
            done = true;
        } else {
            let ranges = go_ranges(file, &text, &lines);
            if !ranges.is_empty() {
                for (start, end, symbol) in ranges {
                    chunks.push(body_chunk(path, language, &text, &lines, start, end, symbol, max_input_chars));
                }
                done = true;
            }
        }
    }
    if !done {
        let outline =
            if markdown::is_markdown(&kind) { markdown::outline(&text) } else { syntax::outline(&kind, &text) };
        if let Some(outline) = outline {
            for piece in outline_pieces(&outline, &text, &lines) {
                chunks.push(piece_chunk(path, language, &text, &lines, piece, max_input_chars));
            }
            done = !chunks.is_empty();
        }
    }
    if !done {
        chunks.clear();
        for (start, end) in windows(1, lines.count()) {
            chunks.push(body_chunk(path, language, &text, &lines, start, end, None, max_input_chars));
        }
    }
    // The chunks stay with the cached file version for as long as the
    // daemon keeps its index: no growth slack (about half of a large
    // index's chunk memory otherwise).
    chunks.shrink_to_fit();
    for chunk in &mut chunks {
        if let Some(symbol) = &mut chunk.symbol {
            symbol.name.shrink_to_fit();
        }
    }
    ChunkedFile { text, chunks }
}

/// One chunk to cut, from an outline.
#[derive(Debug, Clone)]
struct Piece {
    start: usize,
    end: usize,
    symbol: Option<Symbol>,
    /// A declaration (or a merge of them), not the text between them.
    decl: bool,
    /// The container of a member.
    parent: Option<usize>,
    parent_line: Option<usize>,
    signature_line: usize,
    /// Every declaration merged into this one is tiny.
    tiny: bool,
}

/// Whether a line holds nothing worth a chunk or a summary: blank,
/// punctuation only, or a closing keyword.
pub fn is_trivial_line(line: &str) -> bool {
    let line = line.trim();
    !line.chars().any(char::is_alphanumeric) || matches!(line, "end" | "fi" | "done" | "esac" | "end;")
}

/// The pieces of an outline, in line order: declarations (tiny neighbours
/// merged), container headers worth a chunk, and the lines between, each
/// windowed when longer than [`CHUNK_LINES`].
fn outline_pieces(outline: &syntax::Outline, text: &str, lines: &LineIndex) -> Vec<Piece> {
    let count = lines.count();
    let line_text = |line: usize| {
        let (from, to) = lines.range(line, line);
        &text[from..to]
    };
    let mut covered = vec![false; count + 2];
    let mut pieces: Vec<Piece> = Vec::new();
    for decl in &outline.decls {
        let end = decl.end_line.min(count);
        if decl.start_line < 1 || decl.start_line > end {
            continue;
        }
        covered[decl.start_line..=end].fill(true);
        // A container header that is only its first line (`impl T {`) is
        // no chunk: its members carry it as context.
        if decl.container && (decl.start_line..=end).filter(|&line| !is_trivial_line(line_text(line))).count() <= 1 {
            continue;
        }
        let parent = decl.parent;
        pieces.push(Piece {
            start: decl.start_line,
            end,
            symbol: Some(Symbol { kind: decl.kind, name: decl.name.clone() }),
            decl: true,
            parent,
            parent_line: parent.map(|parent| outline.decls[parent].signature_line),
            signature_line: decl.signature_line.clamp(decl.start_line, end),
            tiny: end - decl.start_line < TINY_LINES,
        });
    }
    // The lines between declarations, inside a container named after it.
    let containers: Vec<&syntax::Decl> = outline.decls.iter().filter(|decl| decl.container).collect();
    let mut line = 1;
    while line <= count {
        if covered[line] {
            line += 1;
            continue;
        }
        let mut end = line;
        while end < count && !covered[end + 1] {
            end += 1;
        }
        let (mut from, mut to) = (line, end);
        while from <= to && is_trivial_line(line_text(from)) {
            from += 1;
        }
        while to >= from && is_trivial_line(line_text(to)) {
            to -= 1;
        }
        if from <= to {
            let container = containers
                .iter()
                .filter(|decl| decl.start_line <= from && to <= decl.scope_end)
                .max_by_key(|decl| decl.start_line);
            pieces.push(Piece {
                start: from,
                end: to,
                symbol: container.map(|decl| Symbol { kind: decl.kind, name: decl.name.clone() }),
                decl: false,
                parent: None,
                parent_line: None,
                signature_line: from,
                tiny: false,
            });
        }
        line = end + 1;
    }
    pieces.sort_by_key(|piece| (piece.start, piece.end));
    // Overlaps (declarations sharing a line) go to the earlier piece.
    let mut ordered: Vec<Piece> = Vec::with_capacity(pieces.len());
    for mut piece in pieces {
        if let Some(last) = ordered.last() {
            piece.start = piece.start.max(last.end + 1);
            if piece.start > piece.end {
                continue;
            }
            piece.signature_line = piece.signature_line.max(piece.start);
        }
        ordered.push(piece);
    }
    let merged = merge_tiny(ordered);
    let mut out = Vec::with_capacity(merged.len());
    for piece in merged {
        let windows = windows(piece.start, piece.end);
        if windows.len() == 1 {
            out.push(piece);
            continue;
        }
        for (from, to) in windows {
            let mut window = piece.clone();
            window.start = from;
            window.end = to;
            out.push(window);
        }
    }
    out
}

/// Symbol kinds of code that runs: each is a chunk of its own, however
/// small.
const CALLABLE_KINDS: &[&str] =
    &["constructor", "deinit", "destructor", "function", "indexer", "init", "macro", "method", "operator", "subscript"];

fn is_callable(piece: &Piece) -> bool {
    piece.symbol.as_ref().is_some_and(|symbol| CALLABLE_KINDS.contains(&symbol.kind))
}

/// Merges neighbouring tiny declarations of one container, functions and
/// methods excepted.
fn merge_tiny(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        if let Some(last) = out.last_mut()
            && last.decl
            && piece.decl
            && last.tiny
            && piece.tiny
            && !is_callable(last)
            && !is_callable(&piece)
            && last.parent == piece.parent
            && piece.end - last.start < MERGED_LINES
        {
            last.end = piece.end;
            if let (Some(symbol), Some(next)) = (last.symbol.as_mut(), piece.symbol) {
                symbol.name.push_str(", ");
                symbol.name.push_str(&next.name);
            }
            continue;
        }
        out.push(piece);
    }
    out
}

fn piece_chunk(
    path: &str,
    language: Option<&str>,
    text: &str,
    lines: &LineIndex,
    piece: Piece,
    max_input_chars: usize,
) -> ChunkDraft {
    let span = |line: usize| {
        let (from, to) = lines.range(line, line);
        LineSpan { start: from as u32, len: (to - from) as u32 }
    };
    let context = ChunkContext {
        parent: piece.parent_line.filter(|line| *line < piece.start).map(span),
        signature: (piece.signature_line < piece.start).then(|| span(piece.signature_line)),
    };
    let mut chunk = body_chunk(path, language, text, lines, piece.start, piece.end, piece.symbol, max_input_chars);
    if context != ChunkContext::default() {
        chunk.context = context;
        set_input_hash(path, language, text, lines, &mut chunk, max_input_chars);
    }
    chunk
}

/// Line starts of a normalized text; an empty text has one empty line.
struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|newline| newline + 1));
        Self { starts, len: text.len() }
    }

    fn count(&self) -> usize {
        self.starts.len()
    }

    /// Byte range of lines `start..=end` (1-based), without the final
    /// newline.
    fn range(&self, start: usize, end: usize) -> (usize, usize) {
        let from = self.starts[start - 1];
        let to = if end < self.starts.len() { self.starts[end] - 1 } else { self.len };
        (from, to)
    }
}

/// 80-line windows stepping by 60 over `start..=end`.
fn windows(start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if end < start {
        return out;
    }
    let step = CHUNK_LINES - CHUNK_OVERLAP;
    let mut from = start;
    loop {
        let to = end.min(from + CHUNK_LINES - 1);
        out.push((from, to));
        if to == end {
            break;
        }
        from += step;
    }
    out
}

/// Declaration chunks plus the uncovered stretches between them, sorted
/// by first line.
fn go_ranges(file: golang::GoFile, text: &str, lines: &LineIndex) -> Vec<(usize, usize, Option<Symbol>)> {
    let count = lines.count();
    let mut covered = vec![false; count + 1];
    let mut ranges = Vec::new();
    let mut add = |start: usize, end: usize, symbol: Option<Symbol>, covered: &mut Vec<bool>| {
        if start < 1 || end < start || start > count {
            return;
        }
        let end = end.min(count);
        let windows = windows(start, end);
        let last = windows.len().saturating_sub(1);
        let mut symbol = Some(symbol);
        for (index, (from, to)) in windows.into_iter().enumerate() {
            let symbol = if index == last { symbol.take().flatten() } else { symbol.clone().flatten() };
            ranges.push((from, to, symbol));
            covered[from..=to].fill(true);
        }
    };
    for decl in file.decls {
        let symbol = Symbol { kind: decl.kind, name: decl.name };
        add(decl.start_line, decl.end_line, Some(symbol), &mut covered);
    }
    let blank = |line: usize| {
        let (from, to) = lines.range(line, line);
        text[from..to].trim().is_empty()
    };
    let mut start = 1;
    while start <= count {
        while start <= count && (covered[start] || blank(start)) {
            start += 1;
        }
        if start > count {
            break;
        }
        let mut end = start;
        while end <= count && !covered[end] {
            end += 1;
        }
        add(start, end - 1, None, &mut covered);
        start = end;
    }
    ranges.sort_by_key(|(start, _, _)| *start);
    ranges
}

#[allow(clippy::too_many_arguments)]
fn body_chunk(
    path: &str,
    language: Option<&str>,
    text: &str,
    lines: &LineIndex,
    start: usize,
    end: usize,
    symbol: Option<Symbol>,
    max_input_chars: usize,
) -> ChunkDraft {
    let (from, to) = lines.range(start, end);
    let mut chunk = ChunkDraft {
        start_line: start as u32,
        end_line: end as u32,
        input_hash: [0; 32],
        input_bytes: 0,
        symbol,
        context: ChunkContext::default(),
        body_start: from as u32,
        body_len: (to - from) as u32,
        path_only: false,
    };
    set_input_hash(path, language, text, lines, &mut chunk, max_input_chars);
    chunk
}

/// Sets the hash and length of a chunk's exact embedding input.
fn set_input_hash(
    path: &str,
    language: Option<&str>,
    text: &str,
    lines: &LineIndex,
    chunk: &mut ChunkDraft,
    max_input_chars: usize,
) {
    let (start, end) = (chunk.start_line as usize, chunk.end_line as usize);
    let from = chunk.body_start as usize;
    let body = &text[from..from + chunk.body_len as usize];
    let context = chunk.context.lines(text);
    // A body of at most 4,000 bytes has no longer line.
    let short_lines = context.iter().all(|(_, line)| line.len() <= MAX_EMBEDDING_LINE_CHARS)
        && (body.len() <= MAX_EMBEDDING_LINE_CHARS
            || (start..=end).all(|line| {
                let (from, to) = lines.range(line, line);
                to - from <= MAX_EMBEDDING_LINE_CHARS
            }));
    // The input is hashed as it is produced where it is the header and
    // the body verbatim, else built first.
    let mut hasher = Sha256::new();
    let mut input_bytes = 0;
    let fed = short_lines
        && short_lines_input(path, chunk.symbol.as_ref(), language, &context, body, max_input_chars, |piece| {
            hasher.update(piece.as_bytes());
            input_bytes += piece.len();
        });
    chunk.input_hash = if fed {
        hasher.finalize().into()
    } else {
        let input = embedding_input_with(path, chunk.symbol.as_ref(), &context, body, max_input_chars);
        input_bytes = input.len();
        Sha256::digest(input.as_bytes()).into()
    };
    chunk.input_bytes = input_bytes as u32;
}

fn path_only_chunk(path: &str, max_input_chars: usize) -> ChunkDraft {
    let input = embedding_input(path, None, "", max_input_chars);
    ChunkDraft {
        start_line: 1,
        end_line: 1,
        symbol: None,
        context: ChunkContext::default(),
        input_hash: Sha256::digest(input.as_bytes()).into(),
        input_bytes: input.len() as u32,
        body_start: 0,
        body_len: 0,
        path_only: true,
    }
}

/// The checksum stored with a chunk's record: SHA-256 of its body, or of
/// `path-only:<source>:<path>` for a path-only chunk (whose body is never
/// read). Only records being written need it, so it is computed then, not
/// while chunking.
pub fn content_hash(path: &str, source_kind: &str, chunk: &ChunkDraft, body: &str) -> Hash32 {
    if chunk.path_only {
        let mut hasher = Sha256::new();
        for part in ["path-only:", source_kind, ":", path] {
            hasher.update(part.as_bytes());
        }
        hasher.finalize().into()
    } else {
        Sha256::digest(body.as_bytes()).into()
    }
}

/// The exact text sent to the embeddings endpoint for a chunk without
/// context lines. Private: a chunk's input is [`chunk_input`], which
/// adds the context lines its hash covers.
fn embedding_input(path: &str, symbol: Option<&Symbol>, body: &str, max_chars: usize) -> String {
    embedding_input_with(path, symbol, &[], body, max_chars)
}

/// The exact text sent to the embeddings endpoint for a chunk: the header
/// (with `context` lines, each `(label, line)`), a blank line, the body.
pub fn embedding_input_with(
    path: &str,
    symbol: Option<&Symbol>,
    context: &[(&str, &str)],
    body: &str,
    max_chars: usize,
) -> String {
    let max_chars = if max_chars == 0 { DEFAULT_MAX_INPUT_CHARS } else { max_chars };
    let mut out = CappedText { text: String::with_capacity(body.len().min(max_chars * 4) + 64), remaining: max_chars };
    out.push("path: ");
    out.push(path);
    out.push("\n");
    if let Some(symbol) = symbol.filter(|symbol| !symbol.name.is_empty()) {
        out.push("symbol: ");
        out.push(symbol.kind);
        out.push(" ");
        out.push(&symbol.name);
        if let Some(words) = name_words(&symbol.name) {
            out.push(" (");
            out.push(&words);
            out.push(")");
        }
        out.push("\n");
    }
    if let Some(language) = language_for_path(path) {
        out.push("language: ");
        out.push(language);
        out.push("\n");
    }
    for (label, line) in context {
        out.push(label);
        out.push(clamp_line(line));
        out.push("\n");
    }
    out.push("\n");
    if body.is_empty() || out.remaining == 0 {
        return out.text;
    }
    for (index, line) in body.split('\n').enumerate() {
        if index > 0 {
            out.push("\n");
        }
        out.push(clamp_line(line));
        if out.remaining == 0 {
            break;
        }
    }
    out.text
}

/// [`embedding_input`] for a body whose lines are all at most 4,000 bytes
/// (so none needs clamping), built from [`short_lines_input`].
#[cfg(test)]
fn embedding_input_short_lines(path: &str, symbol: Option<&Symbol>, body: &str, max_chars: usize) -> String {
    let mut out = String::new();
    if short_lines_input(path, symbol, language_for_path(path), &[], body, max_chars, |piece| out.push_str(piece)) {
        out
    } else {
        embedding_input(path, symbol, body, max_chars)
    }
}

/// Feeds [`embedding_input`] for a body whose lines are all at most 4,000
/// bytes (so none needs clamping) to `sink` piece by piece, when the whole
/// input fits the cap in bytes: then it is the header and the body
/// verbatim, with no characters to count. `language` is
/// [`language_for_path`] of `path`. Returns `false`, having fed nothing,
/// when the input might not fit.
fn short_lines_input(
    path: &str,
    symbol: Option<&Symbol>,
    language: Option<&str>,
    context: &[(&str, &str)],
    body: &str,
    max_chars: usize,
    mut sink: impl FnMut(&str),
) -> bool {
    let max_chars = if max_chars == 0 { DEFAULT_MAX_INPUT_CHARS } else { max_chars };
    let symbol = symbol.filter(|symbol| !symbol.name.is_empty());
    let words = symbol.and_then(|symbol| name_words(&symbol.name));
    let header_len = 7
        + path.len()
        + symbol.map_or(0, |symbol| 10 + symbol.kind.len() + symbol.name.len())
        + words.as_ref().map_or(0, |words| 3 + words.len())
        + language.map_or(0, |language| 11 + language.len())
        + context.iter().map(|(label, line)| label.len() + line.len() + 1).sum::<usize>()
        + 1;
    if header_len + body.len() > max_chars {
        return false;
    }
    sink("path: ");
    sink(path);
    sink("\n");
    if let Some(symbol) = symbol {
        sink("symbol: ");
        sink(symbol.kind);
        sink(" ");
        sink(&symbol.name);
        if let Some(words) = &words {
            sink(" (");
            sink(words);
            sink(")");
        }
        sink("\n");
    }
    if let Some(language) = language {
        sink("language: ");
        sink(language);
        sink("\n");
    }
    for (label, line) in context {
        sink(label);
        sink(line);
        sink("\n");
    }
    sink("\n");
    sink(body);
    true
}

/// A symbol name as the lower-case words of its identifiers
/// (`GenBashCompletionFile` gives `gen bash completion file`,
/// `Searcher::search_path` gives `searcher search path`), or `None` when
/// that is the name itself but for case (`main`, `Hello`). The embedding model reads words, not
/// camelCase: with them in the input, cosine over whole functions rose on
/// every corpus with such names (bench-search-quality, README).
fn name_words(name: &str) -> Option<String> {
    let words = crate::words::words(name).join(" ");
    (!words.is_empty() && words != name.to_lowercase()).then_some(words)
}

/// A line cut to at most 4,000 characters.
fn clamp_line(line: &str) -> &str {
    if line.len() <= MAX_EMBEDDING_LINE_CHARS {
        return line;
    }
    match line.char_indices().nth(MAX_EMBEDDING_LINE_CHARS) {
        Some((end, _)) => &line[..end],
        None => line,
    }
}

/// The words that frame a query as an implementation-location search.
/// A question a person would ask: measured with bench-search-quality
/// (README), cosine alone over whole functions with all-MiniLM-L6-v2 rose
/// against `implementation entrypoint for` on all six corpora (by 0.013
/// to 0.056 on five of them), where that framing had lost to the bare
/// query on four.
pub const QUERY_FRAMING: &str = "where is the code for ";

/// The query's embedding input: framed as an implementation-location
/// search ([`QUERY_FRAMING`]) when the framing fits the cap, otherwise the
/// bare query, so the user's words are never cut away for the framing.
pub fn query_embedding_input(query: &str, max_chars: usize) -> String {
    let max_chars = if max_chars == 0 { DEFAULT_MAX_INPUT_CHARS } else { max_chars };
    let framed = format!("{QUERY_FRAMING}{query}");
    if framed.chars().count() > max_chars { cap_chars(query, max_chars) } else { framed }
}

fn cap_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => text[..end].to_string(),
        None => text.to_string(),
    }
}

struct CappedText {
    text: String,
    remaining: usize,
}

impl CappedText {
    fn push(&mut self, piece: &str) {
        if piece.is_empty() || self.remaining == 0 {
            return;
        }
        if piece.len() <= self.remaining {
            self.remaining -= piece.chars().count();
            self.text.push_str(piece);
            return;
        }
        let mut taken = 0;
        for (index, _) in piece.char_indices() {
            if taken == self.remaining {
                self.text.push_str(&piece[..index]);
                self.remaining = 0;
                return;
            }
            taken += 1;
        }
        self.remaining -= taken;
        self.text.push_str(piece);
    }
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0xf)] as char);
    }
    out
}

/// Parses 64 lowercase or uppercase hexadecimal digits.
pub fn parse_hash(text: &str) -> Option<Hash32> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (index, pair) in bytes.chunks_exact(2).enumerate() {
        let high = (pair[0] as char).to_digit(16)?;
        let low = (pair[1] as char).to_digit(16)?;
        out[index] = (high * 16 + low) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(file: &ChunkedFile) -> Vec<(u32, u32, Option<String>)> {
        file.chunks
            .iter()
            .map(|chunk| {
                (chunk.start_line, chunk.end_line, chunk.symbol.as_ref().map(|s| format!("{} {}", s.kind, s.name)))
            })
            .collect()
    }

    #[test]
    fn short_files_are_one_chunk_and_long_ones_overlap() {
        let short = chunk_file("notes.txt", "a\nb\r\nc\n".to_string(), 0);
        assert_eq!(short.text, "a\nb\nc");
        assert_eq!(ranges(&short), [(1, 3, None)]);
        assert_eq!(short.body(&short.chunks[0]), "a\nb\nc");

        let long: String = (1..=200).map(|n| format!("line {n}\n")).collect();
        let file = chunk_file("notes.txt", long.to_string(), 0);
        assert_eq!(ranges(&file), [(1, 80, None), (61, 140, None), (121, 200, None)]);
        assert_eq!(file.body(&file.chunks[1]).lines().next(), Some("line 61"));

        let empty = chunk_file("empty.txt", "".to_string(), 0);
        assert_eq!(ranges(&empty), [(1, 1, None)]);
    }

    #[test]
    fn go_files_are_cut_at_declarations() {
        let source = "package demo\n\nimport \"fmt\"\n\n// Hello greets.\nfunc Hello() {\n\tfmt.Println(\"hi\")\n}\n\ntype T struct{}\n";
        let file = chunk_file("demo.go", source.to_string(), 0);
        assert_eq!(
            ranges(&file),
            [(1, 5, None), (6, 8, Some("function Hello".into())), (10, 10, Some("type T".into()))]
        );
        let input = embedding_input("demo.go", file.chunks[1].symbol.as_ref(), file.body(&file.chunks[1]), 0);
        assert_eq!(
            input,
            "path: demo.go\nsymbol: function Hello\nlanguage: go\n\nfunc Hello() {\n\tfmt.Println(\"hi\")\n}"
        );
        assert_eq!(file.chunks[1].input_hash, <Hash32>::from(Sha256::digest(input.as_bytes())));
    }

    #[test]
    fn long_go_declarations_are_split() {
        let body: String = (0..150).map(|n| format!("\tx{n} := {n}\n")).collect();
        let source = format!("package demo\n\nfunc Big() {{\n{body}}}\n");
        let file = chunk_file("big.go", source.to_string(), 0);
        let got = ranges(&file);
        assert_eq!(got[0], (1, 2, None));
        assert_eq!(got[1], (3, 82, Some("function Big".into())));
        assert_eq!(got[2], (63, 142, Some("function Big".into())));
        assert_eq!(got[3], (123, 154, Some("function Big".into())));
    }

    #[test]
    fn generated_go_files_are_path_only() {
        let source = "// Code generated by mockgen. DO NOT EDIT.\n\npackage mocks\n\nfunc Secret() {}\n";
        let file = chunk_file("mocks/mock.go", source.to_string(), 0);
        assert_eq!(file.chunks.len(), 1);
        let chunk = &file.chunks[0];
        assert!(chunk.path_only);
        assert_eq!((chunk.start_line, chunk.end_line, chunk.body_len), (1, 1, 0));
        let input = embedding_input("mocks/mock.go", None, "", 0);
        assert_eq!(input, "path: mocks/mock.go\nlanguage: go\n\n");
        assert_eq!(chunk.input_hash, <Hash32>::from(Sha256::digest(input.as_bytes())));
        assert_eq!(
            content_hash("mocks/mock.go", "filesystem", chunk, "ignored"),
            <Hash32>::from(Sha256::digest(b"path-only:filesystem:mocks/mock.go"))
        );
        assert_eq!(
            content_hash("a.go", "filesystem", &file.chunks[0], ""),
            content_hash("a.go", "filesystem", chunk, "x")
        );

        let after = "package mocks\n\n// DO NOT EDIT below.\nfunc Secret() {}\n";
        assert!(!chunk_file("mocks/mock.go", after.to_string(), 0).chunks[0].path_only);
    }

    #[cfg(feature = "lang-rust")]
    #[test]
    fn rust_files_are_cut_at_declarations_with_their_context() {
        let source = "use std::io;\n\n/// A searcher.\npub struct Searcher {\n    root: String,\n}\n\nimpl Searcher {\n    /// Searches.\n    pub fn search_path(&self) -> bool {\n        let x = 1;\n        x == 1\n    }\n}\n\nfn main() {\n    println!();\n}\n";
        let file = chunk_file("src/lib.rs", source.to_string(), 0);
        assert_eq!(
            ranges(&file),
            [
                (1, 1, None),
                (3, 6, Some("struct Searcher".into())),
                (9, 13, Some("method Searcher::search_path".into())),
                (16, 18, Some("function main".into())),
            ]
        );
        let method = &file.chunks[2];
        assert_eq!(
            file.input("src/lib.rs", method, 0),
            "path: src/lib.rs\nsymbol: method Searcher::search_path (searcher search path)\nlanguage: rust\ncontext: impl Searcher {\n\n    /// Searches.\n    pub fn search_path(&self) -> bool {\n        let x = 1;\n        x == 1\n    }"
        );
    }

    #[cfg(feature = "lang-python")]
    #[test]
    fn long_declarations_are_windowed_with_their_signature() {
        let body: String = (0..150).map(|n| format!("    x{n} = {n}\n")).collect();
        let source = format!("import os\n\n\ndef big(a, b):\n{body}    return a\n");
        let file = chunk_file("big.py", source, 0);
        assert_eq!(
            ranges(&file),
            [
                (1, 1, None),
                (4, 83, Some("function big".into())),
                (64, 143, Some("function big".into())),
                (124, 155, Some("function big".into())),
            ]
        );
        assert!(!file.input("big.py", &file.chunks[1], 0).contains("signature:"));
        let later = file.input("big.py", &file.chunks[2], 0);
        assert!(
            later.starts_with(
                "path: big.py\nsymbol: function big\nlanguage: python\nsignature: def big(a, b):\n\n    x59 = 59\n"
            ),
            "{later}"
        );
    }

    #[cfg(feature = "lang-rust")]
    #[test]
    fn tiny_neighbours_merge_but_functions_stay_apart_and_lone_braces_are_no_chunk() {
        let source = "const A: u8 = 1;\nconst B: u8 = 2;\nconst C: u8 = 3;\n\nimpl T {\n    fn a() {}\n    fn b() {}\n}\n\nfn long() {\n    one();\n    two();\n    three();\n}\nfn after() {}\n";
        let file = chunk_file("src/t.rs", source.to_string(), 0);
        assert_eq!(
            ranges(&file),
            [
                (1, 3, Some("const A, B, C".into())),
                (6, 6, Some("method T::a".into())),
                (7, 7, Some("method T::b".into())),
                (10, 14, Some("function long".into())),
                (15, 15, Some("function after".into())),
            ]
        );
    }

    #[cfg(feature = "lang-python")]
    #[test]
    fn files_that_do_not_parse_keep_line_windows() {
        let broken: String = (0..100).map(|n| format!("def f{n}(:\n")).collect();
        let file = chunk_file("broken.py", broken, 0);
        assert_eq!(ranges(&file), [(1, 80, None), (61, 100, None)]);
    }

    #[test]
    fn markdown_is_cut_at_its_headings() {
        let source =
            "Intro.\n\n# Install\n\nRun make.\nThen test.\nDone.\n\n## Usage\n\nCall it.\nWith flags.\nAnd more.\n";
        let file = chunk_file("README.md", source.to_string(), 0);
        assert_eq!(
            ranges(&file),
            [(1, 1, None), (3, 8, Some("section Install".into())), (9, 13, Some("section Usage".into()))]
        );
    }

    #[test]
    fn the_chunker_version_names_the_built_in_languages() {
        let version = chunker_version();
        assert!(version.starts_with("syntax-4+"), "{version}");
        #[cfg(feature = "lang-rust")]
        assert!(version.split(['+', ',']).any(|part| part == "rust"), "{version}");
    }

    #[test]
    fn long_lines_are_clamped_before_the_cap() {
        let long_line = "x".repeat(5_000);
        let input = embedding_input("a.txt", None, &format!("{long_line}\nshort"), 0);
        assert_eq!(input, format!("path: a.txt\n\n{}\nshort", "x".repeat(4_000)));
        let capped = embedding_input("a.txt", None, "ééééé", 15);
        assert_eq!(capped, "path: a.txt\n\néé");
        assert_eq!(capped.chars().count(), 15);
    }

    #[test]
    fn every_chunk_hashes_its_exact_input() {
        let go = "package demo\n\n// Run runs.\nfunc Run() {\n\treturn\n}\n\ntype T struct{ A int }\n";
        let long_line = "x".repeat(MAX_EMBEDDING_LINE_CHARS + 10);
        let lines: String = (0..200).map(|line| format!("line {line} é\n")).collect();
        let methods: String = (0..40).map(|n| format!("    fn m{n}(&self) -> u32 {{\n        {n}\n    }}\n")).collect();
        let rust = format!("use x;\n\nimpl T {{\n{methods}}}\n\nfn big() {{\n{lines}}}\n");
        for (path, text, cap) in [
            ("demo.go", go.to_string(), 0),
            ("demo.go", go.to_string(), 40),
            ("docs/notes.md", lines.clone(), 0),
            ("docs/notes.md", lines.clone(), 300),
            ("a.txt", format!("{long_line}\nshort\n"), 0),
            ("b.txt", String::new(), 0),
            ("src/a.rs", rust.clone(), 0),
            ("src/a.rs", rust.clone(), 120),
            ("src/a.rs", format!("impl T {{\n    fn a() {{ {long_line} }}\n    fn b() {{}}\n}}\n"), 0),
            ("README.md", format!("# A\n{lines}"), 0),
        ] {
            let file = chunk_file(path, text, cap);
            assert!(!file.chunks.is_empty());
            for chunk in &file.chunks {
                let input = file.input(path, chunk, cap);
                assert_eq!(chunk.input_hash, <Hash32>::from(Sha256::digest(input.as_bytes())), "{path} {cap}");
                assert_eq!(chunk.input_bytes as usize, input.len(), "{path} {cap}");
            }
        }
    }

    #[test]
    fn the_short_line_fast_path_builds_the_same_input() {
        let symbol = Symbol { kind: "function", name: "Run".into() };
        for (path, body, cap) in [
            ("a.go", "func Run() {}\n\treturn", 0),
            ("docs/x.md", "é text\nmore", 32_000),
            ("a.go", "0123456789", 25),
            ("a.go", "0123456789", 40),
            ("b.txt", "", 0),
        ] {
            for symbol in [None, Some(&symbol)] {
                assert_eq!(
                    embedding_input_short_lines(path, symbol, body, cap),
                    embedding_input(path, symbol, body, cap),
                    "{path} {body:?} {cap}"
                );
            }
        }
    }

    #[test]
    fn symbol_lines_carry_the_names_words() {
        assert_eq!(name_words("GenBashCompletionFileV2").as_deref(), Some("gen bash completion file v2"));
        assert_eq!(name_words("Searcher::search_path").as_deref(), Some("searcher search path"));
        assert_eq!(name_words("HTTPServer.toJSON").as_deref(), Some("http server to json"));
        assert_eq!(name_words("A, B").as_deref(), Some("a b"));
        // A name that is its own single word adds nothing.
        assert_eq!(name_words("main"), None);
        assert_eq!(name_words("Hello"), None);
        assert_eq!(name_words("::"), None);
        let symbol = Symbol { kind: "function", name: "parseArgs".into() };
        assert_eq!(
            embedding_input("a.ts", Some(&symbol), "x", 0),
            "path: a.ts\nsymbol: function parseArgs (parse args)\nlanguage: typescript\n\nx"
        );
        assert_eq!(
            embedding_input_short_lines("a.ts", Some(&symbol), "x", 0),
            embedding_input("a.ts", Some(&symbol), "x", 0)
        );
        // The cap counts the words: an input one character short of the
        // header and body is cut, never over the cap.
        let full = embedding_input("a.ts", Some(&symbol), "xyz", 0);
        let cut = embedding_input("a.ts", Some(&symbol), "xyz", full.chars().count() - 1);
        assert_eq!(cut, full[..full.len() - 1]);
        assert_eq!(embedding_input_short_lines("a.ts", Some(&symbol), "xyz", full.chars().count() - 1), cut);
    }

    #[test]
    fn query_framing_gives_way_to_small_caps() {
        assert_eq!(query_embedding_input("parse args", 0), "where is the code for parse args");
        assert_eq!(query_embedding_input("parse args", 32), "where is the code for parse args");
        assert_eq!(query_embedding_input("parse args", 31), "parse args");
        assert_eq!(query_embedding_input("where is x", 20), "where is x");
        assert_eq!(query_embedding_input("where is x", 5), "where");
    }

    #[test]
    fn hashes_round_trip_through_hex() {
        let hash: Hash32 = Sha256::digest(b"abc").into();
        assert_eq!(parse_hash(&hex(&hash)), Some(hash));
        assert_eq!(parse_hash("zz"), None);
    }
}

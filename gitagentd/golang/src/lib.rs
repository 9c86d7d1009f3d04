//! Top-level declarations of a Go source file, found by a small lexer
//! rather than a full parser: Go ends every top-level declaration with a
//! semicolon at bracket depth zero, written or inserted at a line end after
//! an identifier, a literal, `)`, `]`, `}`, `++`, `--` or one of the
//! keywords `break`, `continue`, `fallthrough`, `return`. That is enough to
//! find each `func`, `type`, `const` and `var` declaration's first and last
//! line and its names, and the comments before the `package` clause.
//!
//! A file the lexer cannot follow (an unterminated string or comment,
//! unbalanced brackets, no `package` clause, a statement that is not a
//! declaration) yields `None`, and the caller falls back to line chunks.

/// The kind and name of one declaration, as search reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decl {
    pub kind: &'static str,
    pub name: String,
    /// First and last line, 1-based, inclusive.
    pub start_line: usize,
    pub end_line: usize,
}

/// What the lexer learned about a file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GoFile {
    pub decls: Vec<Decl>,
    /// A comment before the `package` clause says `DO NOT EDIT`.
    pub generated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    Literal,
    Open(u8),
    Close(u8),
    Semi,
    Comma,
    IncDec,
    Other,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok<'a>,
    line: usize,
    end_line: usize,
    /// For semicolons: written or inserted outside every bracket.
    top: bool,
}

/// The lexer state. Only tokens outside every bracket, or directly inside
/// one pair of parentheses at the top (parameters, receivers, grouped
/// specs), are kept: function bodies need no storage.
struct Lexer<'a> {
    tokens: Vec<Token<'a>>,
    last: Option<Tok<'a>>,
    stack: Vec<u8>,
}

impl<'a> Lexer<'a> {
    fn keeps(&self) -> bool {
        self.stack.is_empty() || (self.stack.len() == 1 && self.stack[0] == b'(')
    }

    #[inline(always)]
    fn push(&mut self, tok: Tok<'a>, line: usize, end_line: usize) -> Option<()> {
        let token = Token { tok, line, end_line, top: self.stack.is_empty() };
        match tok {
            Tok::Open(open) => {
                if self.keeps() {
                    self.tokens.push(token);
                }
                self.stack.push(open);
            }
            Tok::Close(close) => {
                let open = self.stack.pop()?;
                if !matches!((open, close), (b'(', b')') | (b'[', b']') | (b'{', b'}')) {
                    return None;
                }
                if self.keeps() {
                    self.tokens.push(token);
                }
            }
            _ => {
                if self.keeps() {
                    self.tokens.push(token);
                }
            }
        }
        self.last = Some(tok);
        Some(())
    }

    /// Go's automatic semicolon insertion at a line end.
    fn line_end(&mut self, line: usize) {
        let inserts = match self.last {
            Some(Tok::Ident(word)) => !matches!(
                word,
                "package"
                    | "import"
                    | "func"
                    | "type"
                    | "const"
                    | "var"
                    | "if"
                    | "else"
                    | "for"
                    | "switch"
                    | "select"
                    | "case"
                    | "default"
                    | "go"
                    | "defer"
                    | "chan"
                    | "map"
                    | "struct"
                    | "interface"
                    | "range"
                    | "goto"
            ),
            Some(Tok::Literal | Tok::Close(_) | Tok::IncDec) => true,
            _ => false,
        };
        if inserts {
            let _ = self.push(Tok::Semi, line, line);
        }
    }
}

/// Whether `source` opens with comments, one of which says `DO NOT EDIT`,
/// and then a `package` clause: a generated file, indexed by its path
/// alone, whose body need not be lexed at all. Reads only up to the
/// clause.
pub fn generated_heading(source: &str) -> bool {
    let bytes = source.as_bytes();
    let mut index = 0;
    let mut do_not_edit = false;
    loop {
        match bytes.get(index) {
            Some(b' ' | b'\t' | b'\r' | b'\n') => index += 1,
            Some(b'/') if bytes.get(index + 1) == Some(&b'/') => {
                let end = memchr::memchr(b'\n', &bytes[index..]).map_or(bytes.len(), |offset| index + offset);
                do_not_edit |= source[index..end].contains("DO NOT EDIT");
                index = end;
            }
            Some(b'/') if bytes.get(index + 1) == Some(&b'*') => {
                let Some(close) = memchr::memmem::find(&bytes[index + 2..], b"*/") else { return false };
                let end = index + 2 + close + 2;
                do_not_edit |= source[index..end].contains("DO NOT EDIT");
                index = end;
            }
            _ => break,
        }
    }
    // The clause: the keyword as a whole word, then its name.
    let Some(rest) = source[index..].strip_prefix("package") else { return false };
    do_not_edit
        && rest.starts_with([' ', '\t'])
        && rest.trim_start_matches([' ', '\t']).starts_with(|c: char| c == '_' || c.is_alphabetic())
}

/// Scans `source`; `None` when it does not look like valid Go.
pub fn scan(source: &str) -> Option<GoFile> {
    scan_with(source, true)
}

/// [`scan`], stepping over regions whose tokens are not kept (bodies) with
/// [`skip_region`] when `skip_regions` is set, else token by token (the
/// reference the tests compare against).
fn scan_with(source: &str, skip_regions: bool) -> Option<GoFile> {
    let (tokens, comments) = lex(source, skip_regions)?;
    let statements = split_statements(&tokens)?;
    let mut file = GoFile::default();
    let mut iter = statements.into_iter().map(|range| &tokens[range]);
    let package = iter.next()?;
    match package.first().map(|token| token.tok) {
        Some(Tok::Ident("package")) => {}
        _ => return None,
    }
    file.generated = comments.iter().any(|comment| comment.before_package && comment.do_not_edit);
    for statement in iter {
        let Some(Tok::Ident(keyword)) = statement.first().map(|token| token.tok) else { return None };
        let start_line = statement[0].line;
        let end_line = statement.last().map_or(start_line, |token| token.end_line);
        let (kind, name) = match keyword {
            "import" => continue,
            "func" => func_name(&statement[1..])?,
            "type" => ("type", spec_names(&statement[1..], true)?),
            "const" => ("const", spec_names(&statement[1..], false)?),
            "var" => ("var", spec_names(&statement[1..], false)?),
            _ => return None,
        };
        file.decls.push(Decl { kind, name, start_line, end_line });
    }
    Some(file)
}

struct Comment {
    before_package: bool,
    do_not_edit: bool,
}

fn lex<'a>(source: &'a str, skip_regions: bool) -> Option<(Vec<Token<'a>>, Vec<Comment>)> {
    let bytes = source.as_bytes();
    // Only tokens outside bodies are kept, a small share of the file: a
    // capacity for every byte would touch megabytes of fresh memory for a
    // large file.
    let mut lexer = Lexer { tokens: Vec::with_capacity(bytes.len() / 256), last: None, stack: Vec::new() };
    let mut comments = Vec::new();
    let mut line = 1usize;
    let mut index = 0usize;
    let mut seen_package = false;
    while index < bytes.len() {
        let byte = bytes[index];
        // Each arm either moves past something that is not a token, or
        // yields one token (from `first_line` to `line`) for the one push
        // below.
        let first_line = line;
        let tok = match byte {
            b'\n' => {
                lexer.line_end(line);
                line += 1;
                index += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                index += 1;
                continue;
            }
            b'/' if bytes.get(index + 1) == Some(&b'/') => {
                let end = memchr::memchr(b'\n', &bytes[index..]).map_or(bytes.len(), |offset| index + offset);
                // Only comments before `package` decide anything.
                if !seen_package {
                    let text = &source[index..end];
                    comments.push(Comment { before_package: true, do_not_edit: text.contains("DO NOT EDIT") });
                }
                index = end;
                continue;
            }
            b'/' if bytes.get(index + 1) == Some(&b'*') => {
                let close = memchr::memmem::find(&bytes[index + 2..], b"*/")? + index + 2;
                let text = &source[index..close + 2];
                let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
                comments.push(Comment { before_package: !seen_package, do_not_edit: text.contains("DO NOT EDIT") });
                if newlines > 0 {
                    lexer.line_end(line);
                }
                line += newlines;
                index = close + 2;
                continue;
            }
            b'"' | b'\'' => {
                index = closing_quote(bytes, index, byte)? + 1;
                Tok::Literal
            }
            b'`' => {
                let close = memchr::memchr(b'`', &bytes[index + 1..])? + index + 1;
                line += memchr::memchr_iter(b'\n', &bytes[index..close]).count();
                index = close + 1;
                Tok::Literal
            }
            b'(' | b'[' | b'{' => {
                index += 1;
                Tok::Open(byte)
            }
            b')' | b']' | b'}' => {
                index += 1;
                Tok::Close(byte)
            }
            b';' => {
                index += 1;
                Tok::Semi
            }
            b',' => {
                index += 1;
                Tok::Comma
            }
            b'+' | b'-' if bytes.get(index + 1) == Some(&byte) => {
                index += 2;
                Tok::IncDec
            }
            b'0'..=b'9' => {
                index = skip_number(bytes, index);
                Tok::Literal
            }
            b'.' if bytes.get(index + 1).is_some_and(u8::is_ascii_digit) => {
                index = skip_number(bytes, index);
                Tok::Literal
            }
            _ if byte == b'_' || byte.is_ascii_alphabetic() || byte >= 0x80 => {
                let start = index;
                while index < bytes.len() {
                    // ASCII letters and digits in a run, the rare
                    // non-ASCII character one at a time.
                    index += bytes[index..]
                        .iter()
                        .position(|&b| !IDENT_BYTES[usize::from(b)])
                        .unwrap_or(bytes.len() - index);
                    if bytes.get(index).is_none_or(|&b| b < 0x80) {
                        break;
                    }
                    let ch = source[index..].chars().next()?;
                    if !ch.is_alphanumeric() {
                        break;
                    }
                    index += ch.len_utf8();
                }
                if index == start {
                    // A non-ASCII character that is not a letter: an
                    // operator-like token Go would reject.
                    return None;
                }
                let word = &source[start..index];
                if word == "package" {
                    seen_package = true;
                }
                Tok::Ident(word)
            }
            _ => {
                index += 1;
                Tok::Other
            }
        };
        lexer.push(tok, first_line, line)?;
        if skip_regions && matches!(tok, Tok::Open(_)) && !lexer.keeps() {
            // A region whose tokens are not kept (a body, a composite
            // literal): step over it to its closing bracket, which is
            // lexed as usual.
            let depth = lexer.stack.len() - 1;
            let (close, lines) = skip_region(source, index, &mut lexer.stack, depth)?;
            line += lines;
            index = close;
        }
    }
    lexer.line_end(line);
    if !lexer.stack.is_empty() {
        return None;
    }
    Some((lexer.tokens, comments))
}

/// ASCII bytes that continue an identifier: `_`, letters and digits.
const IDENT_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 128 {
        table[byte] = byte == b'_' as usize || (byte as u8).is_ascii_alphanumeric();
        byte += 1;
    }
    table
};

/// Bytes that matter inside a skipped region: brackets, the starts of
/// literals and comments, and non-ASCII bytes. (Newlines are counted
/// apart, see [`RegionBytes`].)
fn region_byte(byte: u8) -> bool {
    matches!(byte, b'{' | b'}' | b'(' | b')' | b'[' | b']' | b'"' | b'\'' | b'`' | b'/') || byte >= 0x80
}

/// The positions of [`region_byte`]s from some index on, found a 64-byte
/// block at a time: one bit per byte, computed without a branch per byte
/// (the compiler vectorises [`region_masks`]), so only the special bytes
/// themselves (about one in 15 in Go bodies) cost a branch. Newlines are
/// counted from the same blocks.
struct RegionBytes<'a> {
    bytes: &'a [u8],
    /// Where the current block starts.
    base: usize,
    /// The block's special bytes not yet returned, bit `i` for `base + i`.
    mask: u64,
    /// The block's newlines, bit `i` for `base + i`.
    newlines: u64,
    /// Newlines from the start to `base`.
    lines: usize,
}

impl<'a> RegionBytes<'a> {
    fn new(bytes: &'a [u8], index: usize) -> Self {
        let (mask, newlines) = block_masks(bytes, index);
        RegionBytes { bytes, base: index, mask, newlines, lines: 0 }
    }

    /// The next special byte's position; `None` at the end of the input.
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            self.lines += self.newlines.count_ones() as usize;
            self.base += 64;
            if self.base >= self.bytes.len() {
                return None;
            }
            (self.mask, self.newlines) = block_masks(self.bytes, self.base);
        }
        let index = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(index)
    }

    /// Continues from `index` (after a literal or comment the lexer
    /// stepped over), within the current block when it reaches that far.
    fn seek(&mut self, index: usize) {
        let offset = index - self.base;
        if offset < 64 {
            self.mask &= u64::MAX << offset;
        } else {
            let skipped = &self.bytes[self.base + 64..index];
            self.lines += self.newlines.count_ones() as usize + memchr::memchr_iter(b'\n', skipped).count();
            self.base = index;
            (self.mask, self.newlines) = block_masks(self.bytes, index);
        }
    }

    /// Newlines from the start to `index`, a position in the current
    /// block.
    fn lines_to(&self, index: usize) -> usize {
        let before = !(u64::MAX << (index - self.base));
        self.lines + (self.newlines & before).count_ones() as usize
    }
}

/// The [`region_masks`] of the 64 bytes from `index`, zero-padded past the
/// end (a zero byte is neither special nor a newline).
fn block_masks(bytes: &[u8], index: usize) -> (u64, u64) {
    match bytes.get(index..index + 64) {
        Some(block) => region_masks(block.try_into().unwrap()),
        None => {
            let mut block = [0u8; 64];
            let tail = bytes.get(index..).unwrap_or_default();
            block[..tail.len()].copy_from_slice(tail);
            region_masks(&block)
        }
    }
}

/// Bit `i` set where `block[i]` is a [`region_byte`], and where it is a
/// newline.
fn region_masks(block: &[u8; 64]) -> (u64, u64) {
    let mut special = [0u8; 64];
    let mut newline = [0u8; 64];
    for ((special, newline), &byte) in special.iter_mut().zip(&mut newline).zip(block) {
        *special = u8::from(region_byte(byte));
        *newline = u8::from(byte == b'\n');
    }
    (pack_bits(&special), pack_bits(&newline))
}

/// 64 bytes of 0 or 1 as the bits of a `u64`. Eight bytes become eight
/// bits with one multiply: byte `k` lands on bit 56 + k, and no two
/// partial products overlap.
fn pack_bits(flags: &[u8; 64]) -> u64 {
    let mut mask = 0;
    for (index, eight) in flags.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(eight.try_into().unwrap());
        mask |= (word.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (index * 8);
    }
    mask
}

/// Steps over the inside of a bracket region from `index` (just after its
/// opening bracket, already on `stack`) to the bracket that closes it,
/// with the lexer's own rules: nested brackets must match, strings, runes,
/// raw strings and comments are stepped over, and a non-ASCII character
/// outside them must be a letter or digit. Returns the index of the
/// closing bracket (left for the lexer, with the stack one above `depth`)
/// and the newlines crossed; `None` where [`lex`] would give up.
fn skip_region(source: &str, index: usize, stack: &mut Vec<u8>, depth: usize) -> Option<(usize, usize)> {
    let bytes = source.as_bytes();
    let mut specials = RegionBytes::new(bytes, index);
    loop {
        let index = specials.next()?;
        let byte = bytes[index];
        match byte {
            b'(' | b'[' | b'{' => stack.push(byte),
            b')' | b']' | b'}' => {
                if stack.len() == depth + 1 {
                    return Some((index, specials.lines_to(index)));
                }
                let open = stack.pop()?;
                if !matches!((open, byte), (b'(', b')') | (b'[', b']') | (b'{', b'}')) {
                    return None;
                }
            }
            b'"' | b'\'' => specials.seek(closing_quote(bytes, index, byte)? + 1),
            b'`' => specials.seek(memchr::memchr(b'`', &bytes[index + 1..])? + index + 2),
            b'/' => match bytes.get(index + 1) {
                Some(b'/') => {
                    specials.seek(memchr::memchr(b'\n', &bytes[index..]).map_or(bytes.len(), |offset| index + offset));
                }
                Some(b'*') => specials.seek(memchr::memmem::find(&bytes[index + 2..], b"*/")? + index + 4),
                _ => {}
            },
            _ => {
                // Non-ASCII: part of an identifier, or a token Go rejects.
                // (Only a character's first byte gets here: the others
                // are skipped.)
                let ch = source.get(index..)?.chars().next()?;
                if !ch.is_alphanumeric() {
                    return None;
                }
                specials.seek(index + ch.len_utf8());
            }
        }
    }
}

fn skip_number(bytes: &[u8], mut index: usize) -> usize {
    while index < bytes.len() {
        let b = bytes[index];
        let exponent_sign = (b == b'+' || b == b'-') && matches!(bytes[index - 1], b'e' | b'E' | b'p' | b'P');
        if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || exponent_sign) {
            break;
        }
        index += 1;
    }
    index
}

/// Splits the kept tokens into top-level statements (index ranges) at
/// semicolons outside every bracket.
fn split_statements(tokens: &[Token<'_>]) -> Option<Vec<std::ops::Range<usize>>> {
    let mut statements = Vec::new();
    let mut start = 0;
    for (index, token) in tokens.iter().enumerate() {
        if token.tok == Tok::Semi && token.top {
            if index > start {
                statements.push(start..index);
            }
            start = index + 1;
        }
    }
    if tokens.len() > start {
        statements.push(start..tokens.len());
    }
    Some(statements)
}

fn func_name(rest: &[Token<'_>]) -> Option<(&'static str, String)> {
    match rest.first()?.tok {
        Tok::Open(b'(') => {
            let close = matching_close(rest, 0)?;
            match rest.get(close + 1)?.tok {
                Tok::Ident(name) => Some(("method", name.to_string())),
                _ => None,
            }
        }
        Tok::Ident(name) => Some(("function", name.to_string())),
        _ => None,
    }
}

/// The index of the token closing the bracket opened at `open`.
fn matching_close(tokens: &[Token<'_>], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(open) {
        match token.tok {
            Tok::Open(_) => depth += 1,
            Tok::Close(_) => {
                depth -= 1;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// Names declared by a `type`, `const` or `var` declaration, grouped or
/// not, joined with ", ".
fn spec_names<'a>(rest: &[Token<'a>], type_spec: bool) -> Option<String> {
    let mut names: Vec<&'a str> = Vec::new();
    let mut collect = |spec: &[Token<'a>]| {
        let mut tokens = spec.iter();
        while let Some(Token { tok: Tok::Ident(name), .. }) = tokens.next() {
            names.push(name);
            if type_spec || !matches!(tokens.next(), Some(Token { tok: Tok::Comma, .. })) {
                break;
            }
        }
    };
    match rest.first()?.tok {
        Tok::Open(b'(') => {
            let close = matching_close(rest, 0)?;
            let inner = &rest[1..close];
            let mut depth = 0usize;
            let mut start = 0usize;
            for (index, token) in inner.iter().enumerate() {
                match token.tok {
                    Tok::Open(_) => depth += 1,
                    Tok::Close(_) => depth = depth.saturating_sub(1),
                    Tok::Semi if depth == 0 => {
                        collect_spec(&inner[start..index], &mut collect);
                        start = index + 1;
                    }
                    _ => {}
                }
            }
            collect_spec(&inner[start..], &mut collect);
        }
        Tok::Ident(_) => collect_spec(rest, &mut collect),
        _ => return None,
    }
    Some(names.join(", "))
}

fn collect_spec<'a>(spec: &[Token<'a>], collect: &mut impl FnMut(&[Token<'a>])) {
    if !spec.is_empty() {
        collect(spec);
    }
}

/// The position of the quote that closes the string or rune literal opened
/// by `quote` at `open`; `None` when a line ends first.
fn closing_quote(bytes: &[u8], open: usize, quote: u8) -> Option<usize> {
    let mut cursor = open + 1;
    if quote == b'"' {
        // Strings run for dozens of bytes: jump from escape to escape.
        loop {
            let found = cursor + memchr::memchr3(b'\\', b'\n', quote, bytes.get(cursor..)?)?;
            match bytes[found] {
                b'\\' => cursor = found + 2,
                b'\n' => return None,
                _ => return Some(found),
            }
        }
    }
    loop {
        match bytes.get(cursor)? {
            b'\\' => cursor += 2,
            b'\n' => return None,
            &b if b == quote => return Some(cursor),
            _ => cursor += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lexer as it was before [`RegionBytes`], identifier runs and the
    /// single push site: the new one must agree with it token for token.
    mod reference {
        use super::super::{Comment, Lexer, Tok, Token, skip_number};

        pub(super) fn lex<'a>(source: &'a str, skip_regions: bool) -> Option<(Vec<Token<'a>>, Vec<Comment>)> {
            let bytes = source.as_bytes();
            let mut lexer = Lexer { tokens: Vec::with_capacity(bytes.len() / 16), last: None, stack: Vec::new() };
            let mut comments = Vec::new();
            let mut line = 1usize;
            let mut index = 0usize;
            let mut seen_package = false;
            while index < bytes.len() {
                let byte = bytes[index];
                match byte {
                    b'\n' => {
                        lexer.line_end(line);
                        line += 1;
                        index += 1;
                    }
                    b' ' | b'\t' | b'\r' => index += 1,
                    b'/' if bytes.get(index + 1) == Some(&b'/') => {
                        let end = memchr::memchr(b'\n', &bytes[index..]).map_or(bytes.len(), |offset| index + offset);
                        // Only comments before `package` decide anything.
                        if !seen_package {
                            let text = &source[index..end];
                            comments.push(Comment { before_package: true, do_not_edit: text.contains("DO NOT EDIT") });
                        }
                        index = end;
                    }
                    b'/' if bytes.get(index + 1) == Some(&b'*') => {
                        let close = memchr::memmem::find(&bytes[index + 2..], b"*/")? + index + 2;
                        let text = &source[index..close + 2];
                        let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
                        comments
                            .push(Comment { before_package: !seen_package, do_not_edit: text.contains("DO NOT EDIT") });
                        if newlines > 0 {
                            lexer.line_end(line);
                        }
                        line += newlines;
                        index = close + 2;
                    }
                    b'"' | b'\'' => {
                        let cursor = closing_quote(bytes, index, byte)?;
                        lexer.push(Tok::Literal, line, line)?;
                        index = cursor + 1;
                    }
                    b'`' => {
                        let close = memchr::memchr(b'`', &bytes[index + 1..])? + index + 1;
                        let newlines = memchr::memchr_iter(b'\n', &bytes[index..close]).count();
                        lexer.push(Tok::Literal, line, line + newlines)?;
                        line += newlines;
                        index = close + 1;
                    }
                    b'(' | b'[' | b'{' => {
                        lexer.push(Tok::Open(byte), line, line)?;
                        index += 1;
                        if skip_regions && !lexer.keeps() {
                            // A region whose tokens are not kept (a body, a
                            // composite literal): step over it to its closing
                            // bracket, which is lexed as usual.
                            let depth = lexer.stack.len() - 1;
                            let (close, lines) = skip_region(source, index, &mut lexer.stack, depth)?;
                            line += lines;
                            index = close;
                        }
                    }
                    b')' | b']' | b'}' => {
                        lexer.push(Tok::Close(byte), line, line)?;
                        index += 1;
                    }
                    b';' => {
                        lexer.push(Tok::Semi, line, line)?;
                        index += 1;
                    }
                    b',' => {
                        lexer.push(Tok::Comma, line, line)?;
                        index += 1;
                    }
                    b'+' | b'-' if bytes.get(index + 1) == Some(&byte) => {
                        lexer.push(Tok::IncDec, line, line)?;
                        index += 2;
                    }
                    b'0'..=b'9' => {
                        index = skip_number(bytes, index);
                        lexer.push(Tok::Literal, line, line)?;
                    }
                    b'.' if bytes.get(index + 1).is_some_and(u8::is_ascii_digit) => {
                        index = skip_number(bytes, index);
                        lexer.push(Tok::Literal, line, line)?;
                    }
                    _ if byte == b'_' || byte.is_ascii_alphabetic() || byte >= 0x80 => {
                        let start = index;
                        while index < bytes.len() {
                            let b = bytes[index];
                            if b == b'_' || b.is_ascii_alphanumeric() {
                                index += 1;
                            } else if b >= 0x80 {
                                let ch = source[index..].chars().next()?;
                                if !ch.is_alphanumeric() {
                                    break;
                                }
                                index += ch.len_utf8();
                            } else {
                                break;
                            }
                        }
                        if index == start {
                            // A non-ASCII character that is not a letter: an
                            // operator-like token Go would reject.
                            return None;
                        }
                        let word = &source[start..index];
                        if word == "package" {
                            seen_package = true;
                        }
                        lexer.push(Tok::Ident(word), line, line)?;
                    }
                    _ => {
                        lexer.push(Tok::Other, line, line)?;
                        index += 1;
                    }
                }
            }
            lexer.line_end(line);
            if !lexer.stack.is_empty() {
                return None;
            }
            Some((lexer.tokens, comments))
        }

        /// Bytes that matter inside a skipped region: brackets, the starts of
        /// literals and comments, and non-ASCII bytes. (Newlines are counted once
        /// the region's end is known.)
        const REGION_BYTES: [bool; 256] = {
            let mut table = [false; 256];
            let mut index = 0;
            let bytes = b"{}()[]\"'`/";
            while index < bytes.len() {
                table[bytes[index] as usize] = true;
                index += 1;
            }
            let mut byte = 0x80;
            while byte < 256 {
                table[byte] = true;
                byte += 1;
            }
            table
        };

        /// Steps over the inside of a bracket region from `index` (just after its
        /// opening bracket, already on `stack`) to the bracket that closes it,
        /// with the lexer's own rules: nested brackets must match, strings, runes,
        /// raw strings and comments are stepped over, and a non-ASCII character
        /// outside them must be a letter or digit. Returns the index of the
        /// closing bracket (left for the lexer, with the stack one above `depth`)
        /// and the newlines crossed; `None` where [`lex`] would give up.
        fn skip_region(source: &str, mut index: usize, stack: &mut Vec<u8>, depth: usize) -> Option<(usize, usize)> {
            let bytes = source.as_bytes();
            let start = index;
            let lines = |end: usize| memchr::memchr_iter(b'\n', &bytes[start..end]).count();
            loop {
                while index < bytes.len() && !REGION_BYTES[bytes[index] as usize] {
                    index += 1;
                }
                let byte = *bytes.get(index)?;
                match byte {
                    b'(' | b'[' | b'{' => {
                        stack.push(byte);
                        index += 1;
                    }
                    b')' | b']' | b'}' => {
                        if stack.len() == depth + 1 {
                            return Some((index, lines(index)));
                        }
                        let open = stack.pop()?;
                        if !matches!((open, byte), (b'(', b')') | (b'[', b']') | (b'{', b'}')) {
                            return None;
                        }
                        index += 1;
                    }
                    b'"' | b'\'' => {
                        let cursor = closing_quote(bytes, index, byte)?;
                        index = cursor + 1;
                    }
                    b'`' => {
                        index = memchr::memchr(b'`', &bytes[index + 1..])? + index + 2;
                    }
                    b'/' => match bytes.get(index + 1) {
                        Some(b'/') => {
                            index = memchr::memchr(b'\n', &bytes[index..]).map_or(bytes.len(), |offset| index + offset);
                        }
                        Some(b'*') => {
                            index = memchr::memmem::find(&bytes[index + 2..], b"*/")? + index + 4;
                        }
                        _ => index += 1,
                    },
                    _ => {
                        // Non-ASCII: part of an identifier, or a token Go rejects.
                        let ch = source.get(index..)?.chars().next()?;
                        if !ch.is_alphanumeric() {
                            return None;
                        }
                        index += ch.len_utf8();
                    }
                }
            }
        }

        /// The position of the quote that closes the string or rune literal opened
        /// by `quote` at `open`; `None` when a line ends first.
        fn closing_quote(bytes: &[u8], open: usize, quote: u8) -> Option<usize> {
            let mut cursor = open + 1;
            loop {
                match bytes.get(cursor)? {
                    b'\\' => cursor += 2,
                    b'\n' => return None,
                    &b if b == quote => return Some(cursor),
                    _ => cursor += 1,
                }
            }
        }
    }

    fn decls(source: &str) -> Vec<(String, String, usize, usize)> {
        scan(source)
            .unwrap()
            .decls
            .into_iter()
            .map(|decl| (decl.kind.to_string(), decl.name, decl.start_line, decl.end_line))
            .collect()
    }

    fn decl(kind: &str, name: &str, start: usize, end: usize) -> (String, String, usize, usize) {
        (kind.to_string(), name.to_string(), start, end)
    }

    #[test]
    fn finds_declarations_and_their_lines() {
        let source = r#"// Package demo shows declarations.
package demo

import (
	"fmt"
	"strings"
)

// Greeting is a type.
type Greeting struct {
	Name string // a comment with } and "
}

const (
	A = iota
	B, C = 1, 2
)

var x, y = `raw
string`, 'r'

func (g *Greeting) Say() string {
	if g.Name == "" {
		return "nobody"
	}
	return fmt.Sprintf("hi %s", strings.TrimSpace(g.Name))
}

func Generic[T any](v T) T { return v }

type (
	One int
	Two = string
)
"#;
        assert_eq!(
            decls(source),
            [
                decl("type", "Greeting", 10, 12),
                decl("const", "A, B, C", 14, 17),
                decl("var", "x, y", 19, 20),
                decl("method", "Say", 22, 27),
                decl("function", "Generic", 29, 29),
                decl("type", "One, Two", 31, 34),
            ]
        );
        assert!(!scan(source).unwrap().generated);
    }

    #[test]
    fn generated_heading_is_detected_only_before_package() {
        let generated = "// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage pb\n\nfunc X() {}\n";
        assert!(scan(generated).unwrap().generated);
        assert!(generated_heading(generated));
        let after = "package pb\n\n// DO NOT EDIT this function by hand.\nfunc X() {}\n";
        assert!(!scan(after).unwrap().generated);
        assert!(!generated_heading(after));
    }

    #[test]
    fn generated_heading_reads_only_up_to_the_package_clause() {
        // The body is never lexed: a generated file stays generated even
        // where the rest would not lex.
        let broken_body = "// Code generated. DO NOT EDIT.\n\n/* more */\npackage pb\n\nfunc X() {\n";
        assert!(generated_heading(broken_body));
        let block = "/*\nDO NOT EDIT\n*/\npackage\tpb\n";
        assert!(generated_heading(block));
        // Each of these is not a heading followed by a package clause.
        for source in [
            "// DO NOT EDIT\n",
            "// DO NOT EDIT\nfunc X() {}\n",
            "// DO NOT EDIT\npackages x\n",
            "// DO NOT EDIT\npackage\n",
            "// DO NOT EDIT\nimport \"x\"\npackage x\n",
            "/* DO NOT EDIT\npackage x\n",
            "\u{feff}// DO NOT EDIT\npackage x\n",
            "// generated\n\npackage x // DO NOT EDIT\n",
        ] {
            assert!(!generated_heading(source), "{source:?}");
        }
        // Where scan sees a heading, so does the quick check.
        for source in [
            "// a\n// DO NOT EDIT.\n\npackage a\n\nvar X = 1\n",
            "/* DO NOT EDIT */ package a\n",
            "\r\n// DO NOT EDIT\r\npackage a\r\n",
        ] {
            assert_eq!(generated_heading(source), scan(source).unwrap().generated, "{source:?}");
        }
    }

    #[test]
    fn invalid_sources_are_refused() {
        assert!(scan("func main() {}\n").is_none());
        assert!(scan("package x\nfunc main() {\n").is_none());
        assert!(scan("package x\nvar s = \"unterminated\n").is_none());
        assert!(scan("package x\n/* open comment\n").is_none());
        assert!(scan("package x\nfmt.Println(1)\n").is_none());
    }

    /// Stepping over bodies finds what lexing them token by token finds,
    /// on valid sources and on every one-byte corruption of them.
    #[test]
    fn skipping_bodies_matches_lexing_them() {
        let sources = [
            "package x\n\nfunc A() {\n\ts := \"}{)(\\\"\"\n\tr := '}'\n\t_ = `raw\n}\n{`\n\t// }\n\t/* {\n( */\n}\n\nfunc B() int { return 1 }\n",
            "package x\n\nvar m = map[string][]int{\"a\": {1, 2}, \"b\": {3}}\n\ntype T struct {\n\tA [4]byte\n\tB func(int) (int, error)\n}\n",
            "package x\n\nfunc (t *T) M(a []int, b map[string]struct{}) (r int) {\n\tfor _, v := range a {\n\t\tr += v\n\t}\n\tnaïve := 0x1p-2\n\t_ = naïve\n\treturn\n}\n",
            "package x\n\nfunc C() {\n\t_ = a × b\n}\n",
            "package x\n\nconst (\n\tA = iota\n\tB\n)\n\nvar v = [...]string{\n\t\"x\",\n}\n\nfunc D() { if x { y() } else { z() } }\n",
            // Literals and comments longer than a 64-byte block, ending in
            // the next block or further on.
            "package x\n\nfunc E() {\n\ts := \"a long string, with \\\" an escape, { and } and ( and ] in it, past a block\"\n\t/* a comment\n\tthat runs over three lines, with { and ( and \"\n\tand more than a block, or two: ..................................... */\n\tr := `raw\n{ ( [ \" ' /* that is long enough to cross a block boundary ......... `\n\tf(s, r, 'x', '\\'', \"é\", ü)\n}\n\nvar Ünïcode = 1\n",
        ];
        let alphabet = b"{}()[]\"'`/*\\\n x";
        let mut checked = 0;
        for source in sources {
            let mut variants = vec![source.to_string()];
            for at in 0..source.len() {
                if !source.is_char_boundary(at) {
                    continue;
                }
                let mut removed = source.to_string();
                removed.remove(at);
                variants.push(removed);
                for &byte in alphabet {
                    let mut inserted = source.to_string();
                    inserted.insert(at, byte as char);
                    variants.push(inserted);
                }
            }
            for variant in &variants {
                let fast = super::lex(variant, true).map(|(tokens, _)| format!("{tokens:?}"));
                let slow = super::lex(variant, false).map(|(tokens, _)| format!("{tokens:?}"));
                assert_eq!(fast, slow, "{variant:?}");
                assert_eq!(super::scan_with(variant, true), super::scan_with(variant, false), "{variant:?}");
                let before = reference::lex(variant, true).map(|(tokens, _)| format!("{tokens:?}"));
                assert_eq!(fast, before, "{variant:?}");
                let before = reference::lex(variant, false).map(|(tokens, _)| format!("{tokens:?}"));
                assert_eq!(slow, before, "{variant:?}");
                checked += 1;
            }
        }
        assert!(checked > 1000);
        assert!(scan(sources[3]).is_none());
        assert_eq!(scan(sources[2]).map(|file| file.decls.len()), Some(1));
    }
}

//! The bodies of callables, found by a byte-level scan before the parse,
//! so that tree-sitter is handed only the rest of the file
//! (`Parser::set_included_ranges`). The outline never looks inside a
//! function body, and parsing bodies is most of what a full parse costs;
//! node offsets stay in the file's coordinates, so the declarations come
//! out on the same lines.
//!
//! Brace languages keep a body's `{` and `}` and leave out what is
//! between (`fn f() -> u32 {}` still parses). In Rust, TypeScript,
//! JavaScript and Java, whose outlines read the members of containers
//! only (impls, classes, namespaces), every other block at the outline's
//! level goes too: struct fields, enum variants, macro bodies, object and
//! type literals. Outside bodies, brace languages also leave out the text
//! of comments, which in documented code is a third of the rest: a block
//! comment keeps its first three bytes and its `*/`, and a run of comment
//! lines, one right under the other, keeps the first three bytes of its
//! first line and the last character and newline of its last, so the
//! parse sees one comment over the same lines and the outline still finds
//! the comments right above a declaration. Gaps start and end on character
//! boundaries. Python keeps a function's
//! header and the last logical line of its body, so the function still
//! ends on the same line, and leaves out the inside of long bracketed
//! literals and calls outside bodies (data tables as `X = {}`).
//!
//! The scan is a lexer, not a parser: it knows the language's comments,
//! strings, character literals and raw strings, and gives up (`None`) on
//! what it cannot follow (an unbalanced brace, an unterminated string or
//! comment); the caller then parses the whole file, as it also does when
//! the parse of the rest has any syntax error.

use std::ops::Range;

/// The byte ranges of `text` the parse of language `feature` may leave
/// out, in order; `None` when the language has no scan or the scan gave
/// up.
pub fn gaps(feature: &str, text: &str) -> Option<Vec<Range<usize>>> {
    let lexicon = match feature {
        "rust" => &RUST,
        "typescript" => &SCRIPT,
        // JSX text is no JavaScript (`<p>Don't</p>`): such files are
        // parsed whole.
        "javascript" if !text.contains("</") && !text.contains("/>") => &SCRIPT,
        "java" => &JAVA,
        "c" => &C,
        "cpp" => &CPP,
        "csharp" => &CSHARP,
        "python" => return python_gaps(text.as_bytes()),
        _ => return None,
    };
    Braces::new(text.as_bytes(), lexicon).scan()
}

/// Whether a gap is worth leaving out: each gap costs tree-sitter a range
/// switch.
const MIN_GAP: usize = 24;

/// The lexical rules of one brace language.
struct Lexicon {
    /// `/* /* */ */` nests.
    nested_comments: bool,
    /// Rust: `'a` is a lifetime, `'a'` a character; `r#"..."#` is raw.
    rust: bool,
    /// `"` strings may span lines (Rust); elsewhere an unterminated string
    /// ends at the line's end.
    multiline_strings: bool,
    /// JavaScript/TypeScript: `` `...${}...` `` templates and `/re/`.
    script: bool,
    /// `"""` text blocks (Java, C# raw strings).
    triple_quotes: bool,
    /// C/C++/C#: `#` starts a preprocessor line.
    preprocessor: bool,
    /// C++: `R"d(...)d"`, and `1'000` digit separators.
    cpp: bool,
    /// C#: `@"..."` verbatim strings.
    verbatim: bool,
    /// Keywords that open a body the outline reads (classes, impls,
    /// namespaces): a `{` after one of them in the same statement is kept.
    containers: &'static [&'static str],
    /// Every other `{...}` at the outline's level is left out, not only
    /// callable bodies: struct fields, enum variants, macro bodies, object
    /// and type literals. The language's outline reads the members of no
    /// other braces (its containers and groups all open with one of the
    /// keywords above).
    other_blocks: bool,
}

const RUST: Lexicon = Lexicon {
    nested_comments: true,
    rust: true,
    multiline_strings: true,
    script: false,
    triple_quotes: false,
    preprocessor: false,
    cpp: false,
    verbatim: false,
    containers: &["impl", "trait", "mod"],
    other_blocks: true,
};

const SCRIPT: Lexicon = Lexicon {
    nested_comments: false,
    rust: false,
    multiline_strings: false,
    script: true,
    triple_quotes: false,
    preprocessor: false,
    cpp: false,
    verbatim: false,
    containers: &["class", "namespace", "module", "global"],
    other_blocks: true,
};

const JAVA: Lexicon = Lexicon {
    nested_comments: false,
    rust: false,
    multiline_strings: false,
    script: false,
    triple_quotes: true,
    preprocessor: false,
    cpp: false,
    verbatim: false,
    containers: &["class", "interface", "enum", "record"],
    other_blocks: true,
};

const C: Lexicon = Lexicon {
    nested_comments: false,
    rust: false,
    multiline_strings: false,
    script: false,
    triple_quotes: false,
    preprocessor: true,
    cpp: false,
    verbatim: false,
    containers: &["struct", "union", "enum"],
    other_blocks: false,
};

const CPP: Lexicon = Lexicon {
    nested_comments: false,
    rust: false,
    multiline_strings: false,
    script: false,
    triple_quotes: false,
    preprocessor: true,
    cpp: true,
    verbatim: false,
    containers: &["class", "struct", "union", "enum", "namespace"],
    other_blocks: false,
};

const CSHARP: Lexicon = Lexicon {
    nested_comments: false,
    rust: false,
    multiline_strings: false,
    script: false,
    triple_quotes: true,
    preprocessor: true,
    cpp: false,
    verbatim: true,
    containers: &["class", "struct", "interface", "record", "enum", "namespace"],
    other_blocks: false,
};

/// One significant token of a brace language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    OpenParen,
    CloseParen,
    /// `=>` or `->`.
    Arrow,
    /// `;`: ends a statement.
    Stop,
    /// A plain `=`: ends what could lead to a body (and, where only
    /// callable bodies are left out, a container's header).
    Assign,
    Word {
        start: usize,
        end: usize,
    },
    Other,
}

struct Braces<'a> {
    text: &'a [u8],
    lexicon: &'static Lexicon,
    at: usize,
    /// JavaScript template expressions: the brace depth each `${` opened at.
    templates: Vec<usize>,
    depth: usize,
    /// Whether the last token lets a `/` start a regular expression.
    regex_allowed: bool,
    /// Whether the text so far ended a line with nothing but blanks (a
    /// preprocessor `#` must start a line).
    line_start: bool,
    /// The ranges to leave out so far, in order.
    gaps: Vec<Range<usize>>,
    /// Inside a body being left out, whose gap holds its comments.
    in_body: bool,
    /// The comment lines just read, one right under the other: where
    /// their gap starts, and the end (the newline) of the latest.
    comment_run: Option<(usize, usize)>,
}

/// Why the lexer stopped early: the scan gives up.
struct GiveUp;

impl<'a> Braces<'a> {
    fn new(text: &'a [u8], lexicon: &'static Lexicon) -> Self {
        Braces {
            text,
            lexicon,
            at: 0,
            templates: Vec::new(),
            depth: 0,
            regex_allowed: true,
            line_start: true,
            gaps: Vec::new(),
            in_body: false,
            comment_run: None,
        }
    }

    /// Walks the file's top level (and every body the outline reads),
    /// leaving out each `{...}` that follows `)` or an arrow (with
    /// [`Lexicon::other_blocks`], each `{...}`), with no container keyword
    /// since the statement began.
    fn scan(mut self) -> Option<Vec<Range<usize>>> {
        // A `)` or an arrow came since the statement began: the next `{`
        // opens a callable's body.
        let mut leads = false;
        // A container keyword came since the statement began.
        let mut blocked = false;
        loop {
            let token = match self.next() {
                Ok(Some(token)) => token,
                Ok(None) => break,
                Err(GiveUp) => return None,
            };
            match token {
                Token::Open => {
                    let open = self.at;
                    if (leads || self.lexicon.other_blocks) && !blocked {
                        let close = self.skip_body().ok()?;
                        self.leave_out(open..close);
                        self.regex_allowed = true;
                    }
                    leads = false;
                    blocked = false;
                }
                Token::Close => {
                    leads = false;
                    blocked = false;
                }
                Token::CloseParen | Token::Arrow => leads = true,
                Token::OpenParen => leads = false,
                Token::Stop => {
                    leads = false;
                    blocked = false;
                }
                // `class C<T = any> {` still opens a container.
                Token::Assign => {
                    leads = false;
                    blocked &= self.lexicon.other_blocks;
                }
                Token::Word { start, end } => {
                    let word = &self.text[start..end];
                    if self.lexicon.containers.iter().any(|keyword| keyword.as_bytes() == word) {
                        blocked = true;
                    }
                }
                Token::Other => {}
            }
        }
        if self.depth != 0 || !self.templates.is_empty() {
            return None;
        }
        self.close_comment_run();
        Some(self.gaps)
    }

    /// Adds a gap after every gap so far, when it is worth one.
    fn leave_out(&mut self, gap: Range<usize>) {
        self.close_comment_run();
        if gap.len() >= MIN_GAP {
            self.gaps.push(gap);
        }
    }

    /// Leaves out the comment run just read, all but the last character
    /// of its last line's text: tree-sitter ends a token that stops right
    /// where an included range starts at the end of the range before it,
    /// so with nothing kept on the last line the comment would end on the
    /// first.
    fn close_comment_run(&mut self) {
        let Some((start, newline)) = self.comment_run.take() else { return };
        let mut end = newline;
        while end > start && self.text[end - 1] == b'\r' {
            end -= 1;
        }
        let mut end = end.saturating_sub(1);
        while end > start && is_continuation(self.text[end]) {
            end -= 1;
        }
        if end > start && end - start >= MIN_GAP {
            self.gaps.push(start..end);
        }
    }

    /// A `//` comment alone on its line, from `start` to `self.at` (its
    /// newline): it joins the run of comment lines right above it, or
    /// opens a run.
    fn comment_line(&mut self, start: usize) {
        let end = self.at;
        if let Some((run_start, run_end)) = self.comment_run {
            let between = &self.text[run_end..start];
            let next_line = between.first() == Some(&b'\n')
                && between[1..].iter().all(|&byte| matches!(byte, b' ' | b'\t' | b'\r' | b'\x0c'));
            if next_line {
                self.comment_run = Some((run_start, end));
                return;
            }
        }
        self.close_comment_run();
        self.comment_run = Some((self.boundary_after(start + 3, end), end));
    }

    /// A block comment from `start` to `self.at` (after its `*/`).
    fn block_comment(&mut self, start: usize) {
        let to = self.at - 2;
        let from = self.boundary_after(start + 3, to);
        if to > from {
            self.leave_out(from..to);
        }
    }

    /// The first character boundary at or after `at`, at most `limit`.
    fn boundary_after(&self, mut at: usize, limit: usize) -> usize {
        at = at.min(limit);
        while at < limit && is_continuation(self.text[at]) {
            at += 1;
        }
        at
    }

    /// Skips a body whose `{` was just read; returns the offset of its `}`
    /// (left unread).
    fn skip_body(&mut self) -> Result<usize, GiveUp> {
        let floor = self.depth - 1;
        self.in_body = true;
        let close = loop {
            match self.next()? {
                Some(Token::Close) if self.depth == floor => break self.at - 1,
                Some(_) => {}
                None => return Err(GiveUp),
            }
        };
        self.in_body = false;
        Ok(close)
    }

    fn peek(&self, offset: usize) -> u8 {
        self.text.get(self.at + offset).copied().unwrap_or(0)
    }

    /// The next significant token (comments, strings and literals are
    /// skipped); `None` at the end.
    fn next(&mut self) -> Result<Option<Token>, GiveUp> {
        loop {
            let Some(&byte) = self.text.get(self.at) else { return Ok(None) };
            let line_start = std::mem::replace(&mut self.line_start, false);
            match byte {
                b'\n' => {
                    self.at += 1;
                    self.line_start = true;
                }
                b' ' | b'\t' | b'\r' | b'\x0c' => {
                    self.at += 1;
                    self.line_start = line_start;
                }
                b'/' if self.peek(1) == b'/' => {
                    let start = self.at;
                    self.skip_line();
                    if line_start && !self.in_body {
                        self.comment_line(start);
                    }
                }
                b'/' if self.peek(1) == b'*' => {
                    let start = self.at;
                    self.skip_block_comment()?;
                    if !self.in_body {
                        self.block_comment(start);
                    }
                }
                b'#' if self.lexicon.preprocessor && line_start => self.skip_directive(),
                b'"' => {
                    if self.lexicon.triple_quotes && self.peek(1) == b'"' && self.peek(2) == b'"' {
                        self.skip_triple()?;
                    } else {
                        self.skip_quoted(b'"', self.lexicon.multiline_strings)?;
                    }
                    return self.token(Token::Other, false);
                }
                b'\'' => {
                    if self.lexicon.rust {
                        self.skip_rust_quote();
                    } else {
                        self.skip_quoted(b'\'', false)?;
                    }
                    return self.token(Token::Other, false);
                }
                b'`' if self.lexicon.script => {
                    self.at += 1;
                    self.skip_template()?;
                    return self.token(Token::Other, false);
                }
                b'@' if self.lexicon.verbatim && matches!(self.peek(1), b'"' | b'$') => {
                    self.at += 1;
                    if self.peek(0) == b'$' {
                        self.at += 1;
                    }
                    self.skip_verbatim()?;
                    return self.token(Token::Other, false);
                }
                b'/' if self.lexicon.script && self.regex_allowed => {
                    self.skip_regex();
                    return self.token(Token::Other, false);
                }
                b'{' => {
                    self.at += 1;
                    self.depth += 1;
                    return self.token(Token::Open, true);
                }
                b'}' => {
                    self.at += 1;
                    // An unbalanced `}`.
                    self.depth = self.depth.checked_sub(1).ok_or(GiveUp)?;
                    if self.templates.last() == Some(&self.depth) {
                        self.templates.pop();
                        self.skip_template()?;
                        return self.token(Token::Other, false);
                    }
                    return self.token(Token::Close, true);
                }
                b'(' => {
                    self.at += 1;
                    return self.token(Token::OpenParen, true);
                }
                b')' => {
                    self.at += 1;
                    return self.token(Token::CloseParen, false);
                }
                b'=' | b'-' if self.peek(1) == b'>' => {
                    self.at += 2;
                    return self.token(Token::Arrow, true);
                }
                b';' => {
                    self.at += 1;
                    return self.token(Token::Stop, true);
                }
                b'=' => {
                    let compound = matches!(self.peek(1), b'=');
                    self.at += 1;
                    if compound {
                        self.at += 1;
                        return self.token(Token::Other, true);
                    }
                    return self.token(Token::Assign, true);
                }
                b'0'..=b'9' => {
                    self.skip_number();
                    return self.token(Token::Other, false);
                }
                _ if is_word_byte(byte) => {
                    let start = self.at;
                    if self.lexicon.rust && self.rust_raw_string()? {
                        return self.token(Token::Other, false);
                    }
                    if self.lexicon.cpp && self.cpp_raw_string()? {
                        return self.token(Token::Other, false);
                    }
                    while self.at < self.text.len() && is_word_byte(self.text[self.at]) {
                        self.at += 1;
                    }
                    let end = self.at;
                    let keyword = is_regex_keyword(&self.text[start..end]);
                    return self.token(Token::Word { start, end }, keyword);
                }
                _ => {
                    self.at += 1;
                    // Operators and punctuation: a `/` after them starts a
                    // regular expression; `]` ends an operand.
                    return self.token(Token::Other, byte != b']');
                }
            }
        }
    }

    fn token(&mut self, token: Token, regex_allowed: bool) -> Result<Option<Token>, GiveUp> {
        self.regex_allowed = regex_allowed;
        Ok(Some(token))
    }

    fn skip_line(&mut self) {
        while self.at < self.text.len() && self.text[self.at] != b'\n' {
            self.at += 1;
        }
    }

    /// A preprocessor line, with its `\` continuations.
    fn skip_directive(&mut self) {
        while self.at < self.text.len() {
            match self.text[self.at] {
                b'\\' => self.at += 2,
                b'\n' => return,
                b'/' if self.peek(1) == b'*' => {
                    if self.skip_block_comment().is_err() {
                        self.at = self.text.len();
                    }
                }
                _ => self.at += 1,
            }
        }
        self.at = self.at.min(self.text.len());
    }

    fn skip_block_comment(&mut self) -> Result<(), GiveUp> {
        self.at += 2;
        let mut nesting = 1;
        while self.at < self.text.len() {
            if self.text[self.at] == b'*' && self.peek(1) == b'/' {
                self.at += 2;
                nesting -= 1;
                if nesting == 0 {
                    return Ok(());
                }
            } else if self.lexicon.nested_comments && self.text[self.at] == b'/' && self.peek(1) == b'*' {
                self.at += 2;
                nesting += 1;
            } else {
                self.at += 1;
            }
        }
        Err(GiveUp)
    }

    /// A string or character literal opened by `quote` (at `self.at`).
    fn skip_quoted(&mut self, quote: u8, multiline: bool) -> Result<(), GiveUp> {
        self.at += 1;
        while self.at < self.text.len() {
            match self.text[self.at] {
                b'\\' => self.at += 2,
                b'\n' if !multiline => return Ok(()),
                byte if byte == quote => {
                    self.at += 1;
                    return Ok(());
                }
                _ => self.at += 1,
            }
        }
        if multiline { Err(GiveUp) } else { Ok(()) }
    }

    fn skip_triple(&mut self) -> Result<(), GiveUp> {
        self.at += 3;
        while self.at < self.text.len() {
            match self.text[self.at] {
                b'\\' => self.at += 2,
                b'"' if self.peek(1) == b'"' && self.peek(2) == b'"' => {
                    self.at += 3;
                    while self.peek(0) == b'"' {
                        self.at += 1;
                    }
                    return Ok(());
                }
                _ => self.at += 1,
            }
        }
        Err(GiveUp)
    }

    /// C# `@"..."`: no escapes but `""`.
    fn skip_verbatim(&mut self) -> Result<(), GiveUp> {
        if self.peek(0) != b'"' {
            return Ok(());
        }
        self.at += 1;
        while self.at < self.text.len() {
            if self.text[self.at] == b'"' {
                if self.peek(1) == b'"' {
                    self.at += 2;
                    continue;
                }
                self.at += 1;
                return Ok(());
            }
            self.at += 1;
        }
        Err(GiveUp)
    }

    /// After `` ` `` or a template expression's `}`: up to the closing
    /// backtick, or into the next `${` (whose depth is remembered).
    fn skip_template(&mut self) -> Result<(), GiveUp> {
        while self.at < self.text.len() {
            match self.text[self.at] {
                b'\\' => self.at += 2,
                b'`' => {
                    self.at += 1;
                    return Ok(());
                }
                b'$' if self.peek(1) == b'{' => {
                    self.at += 2;
                    self.templates.push(self.depth);
                    self.depth += 1;
                    self.regex_allowed = true;
                    return Ok(());
                }
                _ => self.at += 1,
            }
        }
        Err(GiveUp)
    }

    /// `/re/flags`, up to the line's end at most.
    fn skip_regex(&mut self) {
        self.at += 1;
        let mut class = false;
        while self.at < self.text.len() {
            match self.text[self.at] {
                b'\\' => self.at += 2,
                b'\n' => return,
                b'[' => {
                    class = true;
                    self.at += 1;
                }
                b']' => {
                    class = false;
                    self.at += 1;
                }
                b'/' if !class => {
                    self.at += 1;
                    while self.at < self.text.len() && is_word_byte(self.text[self.at]) {
                        self.at += 1;
                    }
                    return;
                }
                _ => self.at += 1,
            }
        }
    }

    /// Rust's `'`: a character literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a
    /// lifetime or label (`'a`).
    fn skip_rust_quote(&mut self) {
        self.at += 1;
        if self.peek(0) == b'\\' {
            self.at += 2;
            while self.at < self.text.len() && self.text[self.at] != b'\'' && self.text[self.at] != b'\n' {
                self.at += 1;
            }
            if self.peek(0) == b'\'' {
                self.at += 1;
            }
            return;
        }
        // One character (as UTF-8), then `'` for a character literal.
        let width = match self.peek(0) {
            0..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        if self.peek(width) == b'\'' {
            self.at += width + 1;
        }
    }

    /// `r"..."`, `r#"..."#`, `br"..."`, `cr#"..."#` at `self.at`.
    fn rust_raw_string(&mut self) -> Result<bool, GiveUp> {
        let mut at = self.at;
        if matches!(self.text[at], b'b' | b'c') {
            at += 1;
        }
        if self.text.get(at) != Some(&b'r') {
            return Ok(false);
        }
        at += 1;
        let hashes = self.text[at..].iter().take_while(|&&byte| byte == b'#').count();
        if self.text.get(at + hashes) != Some(&b'"') {
            return Ok(false);
        }
        at += hashes + 1;
        while at < self.text.len() {
            if self.text[at] == b'"'
                && self.text[at + 1..].iter().take(hashes).filter(|&&byte| byte == b'#').count() == hashes
            {
                self.at = at + 1 + hashes;
                return Ok(true);
            }
            at += 1;
        }
        Err(GiveUp)
    }

    /// `R"d(...)d"` with its `u8`, `u`, `U`, `L` prefixes.
    fn cpp_raw_string(&mut self) -> Result<bool, GiveUp> {
        let rest = &self.text[self.at..];
        let prefix =
            [&b"R\""[..], b"u8R\"", b"uR\"", b"UR\"", b"LR\""].into_iter().find(|prefix| rest.starts_with(prefix));
        let Some(prefix) = prefix else { return Ok(false) };
        let open = self.at + prefix.len();
        let Some(paren) = self.text[open..].iter().take(17).position(|&byte| byte == b'(') else { return Ok(false) };
        let delimiter = &self.text[open..open + paren];
        let mut at = open + paren + 1;
        while at < self.text.len() {
            if self.text[at] == b')'
                && self.text[at + 1..].starts_with(delimiter)
                && self.text.get(at + 1 + delimiter.len()) == Some(&b'"')
            {
                self.at = at + 2 + delimiter.len();
                return Ok(true);
            }
            at += 1;
        }
        Err(GiveUp)
    }

    fn skip_number(&mut self) {
        while self.at < self.text.len() {
            let byte = self.text[self.at];
            let separator = byte == b'\'' && self.lexicon.cpp && self.peek(1).is_ascii_alphanumeric();
            if is_word_byte(byte) || byte == b'.' || separator {
                self.at += 1;
            } else {
                break;
            }
        }
    }
}

/// A UTF-8 byte that continues a character.
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

/// Keywords after which a JavaScript `/` starts a regular expression.
fn is_regex_keyword(word: &[u8]) -> bool {
    matches!(
        word,
        b"return"
            | b"typeof"
            | b"case"
            | b"do"
            | b"else"
            | b"in"
            | b"of"
            | b"new"
            | b"delete"
            | b"void"
            | b"throw"
            | b"yield"
            | b"await"
            | b"instanceof"
    )
}

/// One logical line of Python (physical lines joined by brackets, `\` or
/// strings).
#[derive(Debug)]
struct Logical {
    /// The offset of its first physical line.
    start: usize,
    /// The offset after its last newline.
    end: usize,
    indent: usize,
    /// Comment-only or blank.
    blank: bool,
    /// Holds a comment and nothing else.
    comment: bool,
    /// `def` or `async def`.
    def: bool,
    /// Its last token is `:`.
    colon: bool,
    /// Starts with a keyword that continues the statement above it.
    continues: bool,
}

/// Python: each function body but its last logical line (and what
/// follows it) is left out. A function whose body ends with comments
/// indented between its own and its last line's indentation is kept
/// whole (the indentation scanner could close a block elsewhere).
fn python_gaps(text: &[u8]) -> Option<Vec<Range<usize>>> {
    let mut literals = Vec::new();
    let lines = python_lines(text, &mut literals)?;
    // Every dedent returns to an indentation seen before (tree-sitter
    // accepts some that do not, and closes blocks where no scan can tell).
    let mut levels = vec![0];
    for line in lines.iter().filter(|line| !line.blank) {
        let mut top = *levels.last()?;
        if line.indent > top {
            levels.push(line.indent);
            continue;
        }
        while line.indent < top {
            levels.pop();
            top = *levels.last()?;
        }
        if line.indent != top {
            return None;
        }
    }
    let mut gaps = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = &lines[index];
        if !(line.def && line.colon) {
            index += 1;
            continue;
        }
        let indent = line.indent;
        let mut last = None;
        let mut after = index + 1;
        while after < lines.len() {
            let body = &lines[after];
            if !body.blank {
                if body.indent <= indent {
                    break;
                }
                last = Some(after);
            }
            after += 1;
        }
        let Some(last) = last else {
            index += 1;
            continue;
        };
        let last_line = &lines[last];
        let inner = last_line.indent;
        let safe_tail = lines[last + 1..after]
            .iter()
            .all(|comment| !comment.comment || comment.indent >= inner || comment.indent <= indent);
        if safe_tail && !last_line.colon && !last_line.continues {
            let gap = line.end..last_line.start;
            if gap.len() >= MIN_GAP {
                gaps.push(gap);
            }
            index = after;
        } else {
            index += 1;
        }
    }
    // The literals outside the bodies left out.
    gaps.extend(literals);
    gaps.sort_by_key(|gap| gap.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(gaps.len());
    for gap in gaps {
        if merged.last().is_none_or(|last| gap.start >= last.end) {
            merged.push(gap);
        }
    }
    Some(merged)
}

/// The logical lines of a Python file; `None` when a string or bracket
/// is left open at the end.
/// A bracket pair on one line is left out from this size on.
const LONG_LINE_LITERAL: usize = 80;

/// Keywords after which a `[` opens a list.
fn is_python_keyword(word: &[u8]) -> bool {
    matches!(
        word,
        b"in"
            | b"return"
            | b"yield"
            | b"else"
            | b"and"
            | b"or"
            | b"not"
            | b"is"
            | b"lambda"
            | b"if"
            | b"assert"
            | b"await"
            | b"del"
            | b"for"
            | b"while"
            | b"with"
            | b"from"
            | b"import"
            | b"print"
            | b"elif"
    )
}

fn python_lines(text: &[u8], literals: &mut Vec<Range<usize>>) -> Option<Vec<Logical>> {
    let mut lines = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let start = at;
        // Indentation as tree-sitter-python counts it.
        let mut indent = 0;
        while at < text.len() {
            match text[at] {
                b' ' => indent += 1,
                b'\t' => indent += 8,
                b'\x0c' => indent = 0,
                b'\r' => {}
                _ => break,
            }
            at += 1;
        }
        let word_end = text[at..].iter().position(|&byte| !is_word_byte(byte)).map_or(text.len(), |n| at + n);
        let first = &text[at..word_end];
        let def = first == b"def"
            || (first == b"async" && {
                let next = text[word_end..].iter().position(|&byte| byte != b' ').map_or(text.len(), |n| word_end + n);
                text[next..].starts_with(b"def") && text.get(next + 3).is_some_and(|&byte| !is_word_byte(byte))
            });
        let continues = matches!(first, b"else" | b"elif" | b"except" | b"finally" | b"case");
        let mut brackets = 0usize;
        let mut blank = true;
        let mut comment = false;
        let mut colon = false;
        // Whether the last token ends an operand (a `[` after it indexes).
        let mut operand = false;
        // Inside the outermost bracket pair that may be left out: where
        // its inside starts, and whether it spans lines.
        let mut literal: Option<(usize, bool)> = None;
        while at < text.len() {
            let byte = text[at];
            match byte {
                b'\n' => {
                    at += 1;
                    if brackets == 0 {
                        break;
                    }
                    if let Some((_, spans)) = &mut literal {
                        *spans = true;
                    }
                }
                b' ' | b'\t' | b'\r' | b'\x0c' => at += 1,
                b'#' => {
                    comment |= blank;
                    while at < text.len() && text[at] != b'\n' {
                        at += 1;
                    }
                }
                b'\\' => {
                    at += 2;
                    colon = false;
                }
                b'"' | b'\'' => {
                    at = python_string(text, at)?;
                    blank = false;
                    colon = false;
                    operand = true;
                }
                _ => {
                    blank = false;
                    colon = byte == b':';
                    match byte {
                        b'(' | b'[' | b'{' => {
                            // `f(...)` as `f()`, `[...]` and `{...}` as
                            // empty literals; not `x[...]` (a subscript
                            // needs an index) nor `import (...)`.
                            let empty_is_valid = match byte {
                                b'(' => first != b"from" && first != b"import",
                                b'[' => !operand,
                                _ => true,
                            };
                            if brackets == 0 && empty_is_valid {
                                literal = Some((at + 1, false));
                            }
                            brackets += 1;
                        }
                        b')' | b']' | b'}' => {
                            brackets = brackets.checked_sub(1)?;
                            if brackets == 0
                                && let Some((inside, spans)) = literal.take()
                                && (spans || at - inside >= LONG_LINE_LITERAL)
                                && at - inside >= MIN_GAP
                            {
                                literals.push(inside..at);
                            }
                        }
                        _ => {}
                    }
                    if is_word_byte(byte) {
                        // A word, or a string prefix (`rb"`, `f'`).
                        let word = at;
                        while at < text.len() && is_word_byte(text[at]) {
                            at += 1;
                        }
                        operand = !is_python_keyword(&text[word..at]);
                        continue;
                    }
                    operand = matches!(byte, b')' | b']' | b'}');
                    at += 1;
                }
            }
        }
        if brackets != 0 {
            return None;
        }
        lines.push(Logical {
            start,
            end: at.min(text.len()),
            indent,
            blank,
            comment: comment && blank,
            def,
            colon,
            continues,
        });
    }
    Some(lines)
}

/// The offset after the Python string whose quote is at `at`; `None` when
/// a triple-quoted string is left open.
fn python_string(text: &[u8], at: usize) -> Option<usize> {
    let quote = text[at];
    if text.get(at + 1) == Some(&quote) && text.get(at + 2) == Some(&quote) {
        let mut at = at + 3;
        while at < text.len() {
            match text[at] {
                b'\\' => at += 2,
                byte if byte == quote && text.get(at + 1) == Some(&quote) && text.get(at + 2) == Some(&quote) => {
                    return Some(at + 3);
                }
                _ => at += 1,
            }
        }
        return None;
    }
    let mut at = at + 1;
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'\n' => return Some(at),
            byte if byte == quote => return Some(at + 1),
            _ => at += 1,
        }
    }
    Some(text.len())
}

#[cfg(test)]
mod tests {
    use super::gaps;

    /// The text of `text` the parse reads: gaps replaced by `~`.
    fn parsed(feature: &str, text: &str) -> String {
        let mut out = String::new();
        let mut at = 0;
        for gap in gaps(feature, text).expect("the scan follows the text") {
            assert!(gap.start >= at, "gaps in order: {gap:?} after {at}");
            out.push_str(&text[at..gap.start]);
            out.push('~');
            at = gap.end;
        }
        out.push_str(&text[at..]);
        out
    }

    #[test]
    fn a_run_of_comment_lines_outside_bodies_keeps_its_first_bytes_and_last_byte() {
        let text = "\
/// Reads the configuration from the user's home folder.
/// Returns the defaults when there is none.
pub fn read() -> u32 {
    // A comment inside the body goes with the body.
    1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9
}
";
        assert_eq!(parsed("rust", text), "///~.\npub fn read() -> u32 {~}\n");
    }

    #[test]
    fn comment_runs_end_at_code_and_at_blank_lines() {
        let text = "\
// The first group of comment lines, long enough to leave out.
// Its second line.

// A second group after a blank line, long enough as well.
struct S; // a trailing comment after code stays whole and long
";
        assert_eq!(
            parsed("rust", text),
            "// ~.\n\n// ~.\nstruct S; // a trailing comment after code stays whole and long\n"
        );
    }

    #[test]
    fn comments_in_containers_leave_the_parse_too() {
        let text = "\
impl Reader {
    /// Opens the reader over a file that must exist already.
    pub fn open() -> Self {
        Reader { position: 0, buffer: Vec::new() }
    }
}
";
        assert_eq!(parsed("rust", text), "impl Reader {\n    ///~.\n    pub fn open() -> Self {~}\n}\n");
    }

    #[test]
    fn block_comments_keep_their_opening_and_their_close() {
        let text = "\
/**
 * Parses the arguments of the command line into options.
 */
public class Parser {}
";
        assert_eq!(parsed("java", text), "/**~*/\npublic class Parser {}\n");
    }

    #[test]
    fn carriage_returns_stay_after_the_last_kept_byte() {
        let text = "// The first line of a comment that ends with CRLF\r\n// and its second line\r\nfn f() {}\r\n";
        assert_eq!(parsed("rust", text), "// ~e\r\nfn f() {}\r\n");
    }

    #[test]
    fn rust_and_typescript_leave_out_every_block_but_a_containers() {
        let rust = "pub struct Config { pub name: String, pub retries: u32 }\nimpl Config { pub const NAME: &str = \"a long enough constant\"; }\n";
        assert_eq!(
            parsed("rust", rust),
            "pub struct Config {~}\nimpl Config { pub const NAME: &str = \"a long enough constant\"; }\n"
        );
        // A default type argument's `=` does not end the class header.
        let script = "class Store<T = any> { options = { capacity: 10, name: \"store\" } }\n";
        assert_eq!(parsed("typescript", script), "class Store<T = any> { options = {~} }\n");
    }

    #[test]
    fn comment_gaps_start_and_end_on_character_boundaries() {
        // `parsed` slices the text at every gap, so a gap inside a
        // character would panic there.
        let text = "//ÿé: a comment opening on two-byte characters, long enough\n//ß and closing on one: é\nfn f() {}\n/*ü two-byte again, in a block comment long enough */\nfn g() {}\n";
        assert_eq!(parsed("rust", text), "//ÿ~é\nfn f() {}\n/*ü~*/\nfn g() {}\n");
    }

    #[test]
    fn short_comments_are_parsed_whole() {
        let text = "// short\nfn f() {}\n";
        assert_eq!(parsed("rust", text), text);
    }
}

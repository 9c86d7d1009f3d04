//! The rule set as data: gitleaks' default configuration
//! (`rules/gitleaks.toml`, vendored unchanged) and this crate's own
//! additions (`rules/extra.toml`, the same format), parsed and compiled
//! once.
//!
//! gitleaks' regexes are Go RE2. They are compiled with the `regex`
//! crate after one translation ([`translate`]): the Perl classes `\w`,
//! `\d`, `\s` and the word boundary `\b` are ASCII in RE2 and Unicode in
//! `regex`, so they are made ASCII (which also keeps the fast lazy DFA on
//! non-ASCII text). RE2 has no lookaround, so every rule compiles today; a
//! rule that ever fails to compile is left out, counted and named in
//! [`RuleSet::skipped`] (a test lists them), never silently lost.
//!
//! The semantics follow gitleaks 8: a rule runs only on text that holds one
//! of its keywords (case-insensitive). Where a rule's regex has a longest
//! match (all but a few, such as private-key blocks), it searches only the
//! whole lines within that reach of each keyword found ([`Scope`]), as
//! gitleaks' keywords sit inside their rules' matches: generic keywords
//! (`key`, `token`, `ey`) are in most files, and scanning those files whole
//! with their regexes was most of the redactor's cost; a rule with a `path` runs only on
//! text whose file name matches it, and a rule with a `path` and no regex
//! (a file kind, `pkcs12-file`) is left to [`crate::files`]; the secret is
//! the `secretGroup` capture, else the first non-empty group, else the
//! match; a rule with an `entropy` drops secrets whose Shannon entropy is
//! not above it; a secret of a `generic*` rule must hold a digit; a global
//! or rule allowlist (regexes on the secret, the match or the line;
//! stopwords; paths; `condition = "AND"`) drops a finding.

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde::Deserialize;

const GITLEAKS: &str = include_str!("../rules/gitleaks.toml");
const EXTRA: &str = include_str!("../rules/extra.toml");

#[derive(Deserialize)]
struct ConfigToml {
    #[serde(default)]
    allowlist: Option<AllowToml>,
    #[serde(default)]
    rules: Vec<RuleToml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleToml {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    secret_group: usize,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    allowlists: Vec<AllowToml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AllowToml {
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    stopwords: Vec<String>,
}

/// What an allowlist's regexes are matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

/// One allowlist: a finding it matches is not a secret.
pub(crate) struct Allowlist {
    all: bool,
    paths: Vec<Regex>,
    regexes: Vec<Regex>,
    target: Target,
    stopwords: Option<AhoCorasick>,
}

/// The text around a candidate an allowlist can look at.
pub(crate) struct Candidate<'a> {
    pub secret: &'a str,
    pub matched: &'a str,
    pub line: &'a str,
    pub path: Option<&'a str>,
}

impl Allowlist {
    pub(crate) fn allows(&self, candidate: &Candidate<'_>) -> bool {
        let mut checks = [None; 3];
        if !self.paths.is_empty() {
            checks[0] = Some(candidate.path.is_some_and(|path| self.paths.iter().any(|regex| regex.is_match(path))));
        }
        if !self.regexes.is_empty() {
            let target = match self.target {
                Target::Secret => candidate.secret,
                Target::Match => candidate.matched,
                Target::Line => candidate.line,
            };
            checks[1] = Some(self.regexes.iter().any(|regex| regex.is_match(target)));
        }
        if let Some(stopwords) = &self.stopwords {
            checks[2] = Some(stopwords.is_match(candidate.secret));
        }
        let mut present = checks.iter().flatten().peekable();
        if present.peek().is_none() {
            return false;
        }
        if self.all { present.all(|check| *check) } else { present.any(|check| *check) }
    }
}

/// One compiled rule.
pub(crate) struct Rule {
    pub id: String,
    pub regex: Option<Regex>,
    pub path: Option<Regex>,
    pub secret_group: usize,
    pub entropy: Option<f64>,
    pub keywords: Vec<String>,
    pub allowlists: Vec<Allowlist>,
    /// A `generic*` rule: its secrets must hold a digit.
    pub generic: bool,
    /// The longest match the regex can make, in bytes, when it has a
    /// bound: the rule then searches only around its keywords.
    pub reach: Option<usize>,
}

/// A vendored rule left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub id: String,
    pub reason: String,
}

/// Every rule, compiled, with the keyword prefilter.
pub(crate) struct RuleSet {
    pub rules: Vec<Rule>,
    pub global: Allowlist,
    /// Every distinct keyword, lower case, and the rules that name it.
    keywords: AhoCorasick,
    keyword_rules: Vec<Vec<usize>>,
    /// Rules with a regex and no keyword: they run on every text.
    always: Vec<usize>,
    pub skipped: Vec<Skipped>,
}

impl RuleSet {
    pub(crate) fn load() -> Self {
        let mut skipped = Vec::new();
        let gitleaks: ConfigToml =
            toml::from_str(GITLEAKS).expect("the vendored gitleaks.toml parses (a test checks it)");
        let extra: ConfigToml = toml::from_str(EXTRA).expect("rules/extra.toml parses (a test checks it)");
        let global = gitleaks
            .allowlist
            .as_ref()
            .and_then(|allow| compile_allowlist(allow).ok())
            .unwrap_or_else(Allowlist::empty);
        let mut rules = Vec::new();
        for rule in gitleaks.rules.iter().chain(&extra.rules) {
            match compile_rule(rule) {
                Ok(compiled) => rules.push(compiled),
                Err(reason) => skipped.push(Skipped { id: rule.id.clone(), reason }),
            }
        }
        let mut names: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if rule.regex.is_none() {
                continue;
            }
            if rule.keywords.is_empty() {
                always.push(index);
            }
            for keyword in &rule.keywords {
                let keyword = keyword.to_ascii_lowercase();
                match names.iter().position(|name| *name == keyword) {
                    Some(at) => keyword_rules[at].push(index),
                    None => {
                        names.push(keyword);
                        keyword_rules.push(vec![index]);
                    }
                }
            }
        }
        // A DFA: with this many keywords the builder would pick an NFA,
        // and this automaton reads every byte of every text redacted.
        let keywords = AhoCorasick::builder()
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .ascii_case_insensitive(true)
            .build(&names)
            .expect("the rule keywords build an automaton");
        Self { rules, global, keywords, keyword_rules, always, skipped }
    }

    /// The rules whose keywords `text` holds (and those without any), in
    /// rule order, each with the part of `text` its regex must search.
    pub(crate) fn candidates(&self, text: &str) -> Vec<(usize, Scope)> {
        let mut scopes: Vec<Option<Scope>> = Vec::new();
        scopes.resize_with(self.rules.len(), || None);
        for index in &self.always {
            scopes[*index] = Some(Scope::Whole);
        }
        for found in self.keywords.find_overlapping_iter(text) {
            for index in &self.keyword_rules[found.pattern().as_usize()] {
                let scope = &mut scopes[*index];
                match (self.rules[*index].reach, scope) {
                    (_, Some(Scope::Whole)) => {}
                    (None, scope) => *scope = Some(Scope::Whole),
                    (Some(reach), scope) => {
                        let windows = match scope {
                            Some(Scope::Windows(windows)) => windows,
                            _ => scope.insert(Scope::Windows(Vec::new())).windows_mut(),
                        };
                        add_window(windows, text, found.start(), found.end(), reach);
                    }
                }
            }
        }
        scopes.into_iter().enumerate().filter_map(|(index, scope)| Some((index, scope?))).collect()
    }
}

/// Where a rule's regex searches a text.
pub(crate) enum Scope {
    /// All of it: the rule has no keyword, or its match has no bound.
    Whole,
    /// Disjoint ranges of whole lines, in order: those around each of its
    /// keywords' occurrences, as far as a match holding the keyword can
    /// reach.
    Windows(Vec<std::ops::Range<usize>>),
}

impl Scope {
    fn windows_mut(&mut self) -> &mut Vec<std::ops::Range<usize>> {
        match self {
            Scope::Windows(windows) => windows,
            Scope::Whole => unreachable!("only called on windows"),
        }
    }
}

/// Adds the window around a keyword at `start..end` for a rule whose
/// matches are at most `reach` bytes long: the whole lines from `reach`
/// bytes before the keyword to `reach` bytes after it, merged with the
/// last window when they overlap. Whole lines keep `^`, `$` and `\b` at a
/// window's edges true to the text (they sit at line ends), and windows
/// come in text order, so a keyword inside the last window costs nothing.
fn add_window(windows: &mut Vec<std::ops::Range<usize>>, text: &str, start: usize, end: usize, reach: usize) {
    let bytes = text.as_bytes();
    let from = start.saturating_sub(reach);
    let to = end.saturating_add(reach).min(text.len());
    if let Some(last) = windows.last_mut()
        && from <= last.end
    {
        if to > last.end {
            last.end = line_end(bytes, to);
        }
        return;
    }
    let from = bytes[..from].iter().rposition(|byte| *byte == b'\n').map_or(0, |at| at + 1);
    let window = from..line_end(bytes, to);
    match windows.last_mut() {
        Some(last) if window.start <= last.end => last.end = window.end,
        _ => windows.push(window),
    }
}

fn line_end(bytes: &[u8], at: usize) -> usize {
    bytes[at..].iter().position(|byte| *byte == b'\n').map_or(bytes.len(), |offset| at + offset)
}

impl Allowlist {
    fn empty() -> Self {
        Self { all: false, paths: Vec::new(), regexes: Vec::new(), target: Target::Secret, stopwords: None }
    }
}

fn compile_rule(rule: &RuleToml) -> Result<Rule, String> {
    let regex = rule.regex.as_deref().map(compile).transpose()?;
    let reach = match &rule.regex {
        Some(pattern) => regex_syntax::parse(&translate(&adapt(pattern)))
            .map_err(|error| error.to_string())?
            .properties()
            .maximum_len(),
        None => None,
    };
    let path = rule.path.as_deref().map(compile).transpose()?;
    let allowlists = rule.allowlists.iter().map(compile_allowlist).collect::<Result<_, _>>()?;
    Ok(Rule {
        id: rule.id.clone(),
        regex,
        path,
        secret_group: rule.secret_group,
        entropy: rule.entropy.filter(|entropy| *entropy > 0.0),
        keywords: rule.keywords.clone(),
        allowlists,
        generic: rule.id.starts_with("generic"),
        reach,
    })
}

fn compile_allowlist(allow: &AllowToml) -> Result<Allowlist, String> {
    let target = match allow.regex_target.as_deref() {
        None | Some("secret") => Target::Secret,
        Some("match") => Target::Match,
        Some("line") => Target::Line,
        Some(other) => return Err(format!("unknown allowlist regexTarget {other:?}")),
    };
    let stopwords = (!allow.stopwords.is_empty())
        .then(|| AhoCorasick::builder().ascii_case_insensitive(true).build(&allow.stopwords))
        .transpose()
        .map_err(|error| error.to_string())?;
    Ok(Allowlist {
        all: allow.condition.as_deref().is_some_and(|condition| condition.eq_ignore_ascii_case("and")),
        paths: allow.paths.iter().map(|path| compile(path)).collect::<Result<_, _>>()?,
        regexes: allow.regexes.iter().map(|regex| compile(regex)).collect::<Result<_, _>>()?,
        target,
        stopwords,
    })
}

fn compile(pattern: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(&translate(&adapt(pattern)))
        .size_limit(32 << 20)
        .dfa_size_limit(8 << 20)
        .build()
        .map_err(|error| error.to_string())
}

/// An RE2 pattern as the `regex` crate reads it with RE2's meaning: the
/// Perl classes and the word boundary become ASCII, inside and outside
/// bracket classes. Everything else is the same syntax.
pub(crate) fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                match (next, depth > 0) {
                    ('w', false) => out.push_str("[0-9A-Za-z_]"),
                    ('d', false) => out.push_str("[0-9]"),
                    ('s', false) => out.push_str("[\\t\\n\\f\\r ]"),
                    ('b', false) => out.push_str("(?-u:\\b)"),
                    ('B', false) => out.push_str("(?-u:\\B)"),
                    ('w', true) => out.push_str("0-9A-Za-z_"),
                    ('d', true) => out.push_str("0-9"),
                    ('s', true) => out.push_str("\\t\\n\\f\\r "),
                    (other, _) => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            '[' => {
                out.push('[');
                if depth == 0 {
                    depth = 1;
                    // A `]` or `^]` right after the opening bracket is a literal.
                    if chars.peek() == Some(&'^') {
                        out.push('^');
                        chars.next();
                    }
                    if chars.peek() == Some(&']') {
                        out.push_str("\\]");
                        chars.next();
                    }
                } else if chars.peek() == Some(&':') {
                    // A POSIX class such as [:alpha:] inside a class.
                    for c in chars.by_ref() {
                        out.push(c);
                        if c == ']' {
                            break;
                        }
                    }
                } else {
                    depth += 1;
                }
            }
            // RE2 reads a `{` that opens no repetition as a literal.
            '{' if depth == 0 && !opens_repetition(chars.clone()) => out.push_str("\\{"),
            ']' if depth > 0 => {
                depth -= 1;
                out.push(']');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether the text after a `{` is a repetition count: `n}`, `n,}` or
/// `n,m}`.
fn opens_repetition(rest: impl Iterator<Item = char>) -> bool {
    let mut digits = 0;
    let mut comma = false;
    for c in rest {
        match c {
            '0'..='9' => digits += 1,
            ',' if !comma && digits > 0 => comma = true,
            '}' => return digits > 0,
            _ => return false,
        }
    }
    false
}

/// Text on its way to a model is often JSON, where quotes come escaped
/// (`\"`): gitleaks' common fragments are widened to read them. A secret
/// ends at a quote, a space, a semicolon, an escaped `\n`/`\r`, and also
/// an escaped tab or quote; the quotes around a key and before a value may
/// be escaped.
fn adapt(pattern: &str) -> String {
    pattern
        .replace(r"\\[nr]", r#"\\[nrt"']"#)
        .replace(r#"[\x60'"\s=]{0,5}"#, r#"(?:[\x60'"\s=]|\\[\x60'"]){0,5}"#)
        .replace(r#"[\s'"]{0,3}"#, r#"(?:[\s'"]|\\['"]){0,3}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_become_ascii_in_and_out_of_brackets() {
        assert_eq!(translate(r"\b\w+[\w.-]\s"), r"(?-u:\b)[0-9A-Za-z_]+[0-9A-Za-z_.-][\t\n\f\r ]");
        assert_eq!(translate(r"[^\s]\\n[\]x]"), r"[^\t\n\f\r ]\\n[\]x]");
        assert_eq!(translate(r"a{2}b{2,}c{1,3}\${{[^}]+}}"), r"a{2}b{2,}c{1,3}\$\{\{[^}]+}}");
        assert_eq!(adapt(r#"x(?:[\x60'"\s;]|\\[nr]|$)"#), r#"x(?:[\x60'"\s;]|\\[nrt"']|$)"#);
        let regex = compile(r"\b\w{3}\b").unwrap();
        assert!(regex.is_match("a abc b"));
        assert!(regex.is_match("éabcé"), "RE2's \\w is ASCII: é is not a word character, so it bounds one");
        assert!(!regex.is_match("abcd"));
    }
}

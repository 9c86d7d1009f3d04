//! The one secret redactor: every byte gitagentd sends to a model or an
//! embeddings server passes through it (the provider's request body, the
//! agent loop's tool outputs and first items, embedding inputs, search
//! chunks before they are embedded or stored). A found secret becomes a
//! marker, `[REDACTED:<rule-id>]`, that keeps the text's line structure;
//! the value itself is never kept, logged or returned. Repository files
//! are never touched: only the copies on their way out are.
//!
//! Detection is data: gitleaks' default rule set, vendored with its MIT
//! licence (`rules/`), plus a few rules of our own in the same format
//! ([`rules`]); secret-named files are withheld whole ([`files`]).
//!
//! The crate is pure: no I/O, no async, no environment. The rule set is
//! compiled once per process ([`LazyLock`]; the daemon does it at start,
//! [`warm`]); a [`Redactor`] carries one
//! invocation's choices (on or off, the user's `redact.allow` regex) and
//! its ledger of findings, from which the command's one stderr line is
//! made ([`Redactor::summary`]).

#[cfg(feature = "corpus")]
pub mod corpus;
pub mod files;
mod rules;

pub use files::{SECRET_FILE, is_secret_file, withheld_file};
pub use rules::Skipped;

use regex::Regex;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

static RULES: LazyLock<rules::RuleSet> = LazyLock::new(rules::RuleSet::load);

/// Compiles the rule set now (about a quarter of a second), so that the
/// first text redacted does not wait for it: the daemon calls this on its
/// blocking pool when it starts.
pub fn warm() {
    LazyLock::force(&RULES);
}

/// Vendored rules left out because they do not compile (empty today).
pub fn skipped_rules() -> &'static [Skipped] {
    &RULES.skipped
}

/// How many rules run (with a regex).
pub fn rule_count() -> usize {
    RULES.rules.iter().filter(|rule| rule.regex.is_some()).count()
}

/// Where a text comes from: the file it is (part of), and the line of
/// that file its first line is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Origin<'a> {
    pub path: Option<&'a str>,
    pub first_line: u32,
}

impl<'a> Origin<'a> {
    /// Text of no particular file.
    pub const NONE: Origin<'static> = Origin { path: None, first_line: 1 };

    /// The whole text of `path`.
    pub fn file(path: &'a str) -> Self {
        Self { path: Some(path), first_line: 1 }
    }
}

/// One redacted secret. The value is gone; only a masked hint of it is
/// kept (its first characters and length), for the precision bench.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    /// Byte offset of the secret in the text that was redacted.
    pub start: usize,
    /// The line of the file (when the origin names one) or of the text;
    /// 0 for a withheld file.
    pub line: u32,
    pub path: Option<String>,
    pub masked: String,
    value_hash: u64,
}

/// A text with its secrets replaced, and what was replaced.
#[derive(Debug)]
pub struct Redacted<'a> {
    pub text: Cow<'a, str>,
    pub findings: Vec<Finding>,
}

/// The marker that replaces a secret found by `rule`.
pub fn marker(rule: &str) -> String {
    format!("[REDACTED:{rule}]")
}

/// Redacts `text` from `origin`; `allow` exempts secrets (or whole files,
/// by path) it matches.
pub fn redact<'a>(text: &'a str, origin: Origin<'_>, allow: Option<&Regex>) -> Redacted<'a> {
    if let Some(path) = origin.path
        && is_secret_file(path)
        && !allow.is_some_and(|allow| allow.is_match(path))
    {
        let finding = Finding {
            rule: SECRET_FILE,
            start: 0,
            line: 0,
            path: Some(path.to_string()),
            masked: format!("({} bytes)", text.len()),
            value_hash: hash_of(path),
        };
        return Redacted { text: Cow::Owned(withheld_file(path, text)), findings: vec![finding] };
    }
    let spans = spans(text, origin, allow);
    if spans.is_empty() {
        return Redacted { text: Cow::Borrowed(text), findings: Vec::new() };
    }
    let mut out = String::with_capacity(text.len());
    let mut findings = Vec::with_capacity(spans.len());
    let mut at = 0;
    let mut line = origin.first_line;
    for span in spans {
        line += count_newlines(&text[at..span.start]);
        out.push_str(&text[at..span.start]);
        let value = &text[span.start..span.end];
        match span.replacement {
            Some(replacement) => out.push_str(&replacement),
            None => {
                out.push_str(&marker(span.rule));
                let prefix = diff_prefix(text, span.start);
                for _ in 0..count_newlines(value) {
                    out.push('\n');
                    out.push_str(prefix);
                }
            }
        }
        // A secret in a diff is placed in its file, at its new-side line.
        let (path, file_line) = match origin.path {
            Some(path) => (Some(path.to_string()), line),
            None => match files::diff_location(text, span.start) {
                Some((path, file_line)) => (Some(path), file_line),
                None => (None, line),
            },
        };
        findings.push(Finding {
            rule: span.rule,
            start: span.start,
            // A withheld file has no one line.
            line: if span.file.is_some() { 0 } else { file_line },
            masked: mask(value),
            value_hash: hash_of(span.file.as_deref().unwrap_or(value)),
            path: span.file.or(path),
        });
        line += count_newlines(value);
        at = span.end;
    }
    out.push_str(&text[at..]);
    Redacted { text: Cow::Owned(out), findings }
}

/// A replaced range of a text.
struct Span {
    start: usize,
    end: usize,
    rule: &'static str,
    /// Text other than the marker (a withheld diff section).
    replacement: Option<String>,
    /// The withheld file of a diff section: it counts once by its path.
    file: Option<String>,
}

/// The ranges of `text` to replace, sorted and disjoint. Secret-file diff
/// sections come first, then specific rules in rule order, then generic
/// ones; a range overlapping an earlier one is dropped.
fn spans(text: &str, origin: Origin<'_>, allow: Option<&Regex>) -> Vec<Span> {
    let rules: &'static rules::RuleSet = &RULES;
    let mut spans: Vec<Span> = Vec::new();
    if text.contains("diff --git ") {
        for section in files::secret_sections(text) {
            spans.push(Span {
                start: section.start,
                end: section.end,
                rule: SECRET_FILE,
                replacement: Some(section.replacement),
                file: Some(section.path),
            });
        }
    }
    let mut candidates = rules.candidates(text);
    candidates.sort_by_key(|(index, _)| rules.rules[*index].generic);
    for (index, scope) in candidates {
        let rule = &rules.rules[index];
        let Some(regex) = &rule.regex else { continue };
        if let Some(path_regex) = &rule.path
            && !origin.path.is_some_and(|path| path_regex.is_match(path))
        {
            continue;
        }
        let windows = match scope {
            rules::Scope::Whole => std::iter::once(0..text.len()).collect(),
            rules::Scope::Windows(windows) => windows,
        };
        for captures in windows.into_iter().flat_map(|window| captures_in(regex, text, window)) {
            let Some(matched) = captures.get(0) else { continue };
            let secret = if rule.secret_group > 0 {
                captures.get(rule.secret_group)
            } else {
                captures.iter().skip(1).flatten().find(|group| !group.is_empty())
            }
            .unwrap_or(matched);
            if secret.is_empty() || overlaps(&spans, secret.start(), secret.end()) {
                continue;
            }
            let value = secret.as_str();
            if rule.entropy.is_some_and(|threshold| shannon(value) <= threshold)
                || (rule.generic && !value.bytes().any(|byte| byte.is_ascii_digit()))
            {
                continue;
            }
            let candidate = rules::Candidate {
                secret: value,
                matched: matched.as_str(),
                line: line_around(text, matched.start(), matched.end()),
                path: origin.path,
            };
            if rules.global.allows(&candidate)
                || rule.allowlists.iter().any(|allowlist| allowlist.allows(&candidate))
                || allow.is_some_and(|allow| allow.is_match(value) || origin.path.is_some_and(|p| allow.is_match(p)))
            {
                continue;
            }
            let at = spans.partition_point(|span| span.start < secret.start());
            let span = Span { start: secret.start(), end: secret.end(), rule: &rule.id, replacement: None, file: None };
            spans.insert(at, span);
        }
    }
    spans.sort_by_key(|span| span.start);
    spans
}

/// The matches of `regex` that start in `window`, a range of whole lines of
/// `text` (so its end is a line end, where `$` and `\b` read as in `text`);
/// what precedes the window is seen by `^` and `\b`.
fn captures_in<'t>(
    regex: &Regex,
    text: &'t str,
    window: std::ops::Range<usize>,
) -> impl Iterator<Item = regex::Captures<'t>> {
    let haystack = &text[..window.end];
    let mut at = Some(window.start);
    std::iter::from_fn(move || {
        let captures = regex.captures_at(haystack, at?)?;
        let matched = captures.get(0)?;
        // An empty match moves on by one character.
        at = if matched.is_empty() {
            haystack[matched.end()..].chars().next().map(|c| matched.end() + c.len_utf8())
        } else {
            Some(matched.end())
        };
        Some(captures)
    })
}

fn overlaps(spans: &[Span], start: usize, end: usize) -> bool {
    spans.iter().any(|span| span.start < end && start < span.end)
}

/// The line of `text` holding `start..end` (from the line start before
/// `start` to the line end after `end`).
fn line_around(text: &str, start: usize, end: usize) -> &str {
    let from = text[..start].rfind('\n').map_or(0, |at| at + 1);
    let to = text[end..].find('\n').map_or(text.len(), |at| end + at);
    &text[from..to]
}

/// The `+`, `-` or space a diff line starts with, when the secret starts
/// right after it: kept on the lines a multi-line marker leaves, so a
/// redacted key block still reads as a patch.
fn diff_prefix(text: &str, start: usize) -> &'static str {
    let before = &text.as_bytes()[..start];
    match before {
        [.., b'\n', prefix] | [prefix] => match prefix {
            b'+' => "+",
            b'-' => "-",
            b' ' => " ",
            _ => "",
        },
        _ => "",
    }
}

fn count_newlines(text: &str) -> u32 {
    text.bytes().filter(|byte| *byte == b'\n').count() as u32
}

/// Shannon entropy of `text`'s bytes, in bits.
pub fn shannon(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for byte in text.bytes() {
        counts[byte as usize] += 1;
    }
    let length = text.len() as f64;
    counts.iter().filter(|count| **count > 0).map(|count| f64::from(*count) / length).map(|p| -p * p.log2()).sum()
}

/// The first characters of a value and its length: enough to review a
/// finding, not enough to use it.
fn mask(value: &str) -> String {
    let shown: String = value.chars().take(4).collect();
    format!("{shown}… ({} chars)", value.chars().count())
}

/// The identity of a value for counting: its letters and digits, so the
/// same key in plain text, in JSON (`\n` escapes) and in a diff (`+`
/// prefixes) counts once.
fn hash_of(value: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for escape in ["\\n", "\\r", "\\t"] {
        if value.contains(escape) {
            return hash_of(&value.replace(escape, ""));
        }
    }
    value.chars().filter(|c| c.is_alphanumeric()).for_each(|c| c.hash(&mut hasher));
    hasher.finish()
}

/// One invocation's redaction: whether it is on, the user's allow regex,
/// and the findings so far. Cheap to clone; clones share the ledger.
#[derive(Clone)]
pub struct Redactor {
    inner: Arc<Inner>,
}

struct Inner {
    enabled: bool,
    allow: Option<Regex>,
    ledger: Mutex<Ledger>,
}

#[derive(Default)]
struct Ledger {
    /// Distinct secrets: a value found again (the same diff in the next
    /// request) counts once.
    seen: HashSet<(&'static str, u64)>,
    counts: BTreeMap<&'static str, usize>,
    /// `path:line (rule)` of each distinct secret whose file is known.
    places: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("enabled", &self.inner.enabled)
            .field("allow", &self.inner.allow.as_ref().map(Regex::as_str))
            .finish()
    }
}

impl Default for Redactor {
    /// On, with no allow regex: what every outbound path uses unless the
    /// command says otherwise.
    fn default() -> Self {
        Self::new(None)
    }
}

impl Redactor {
    /// Redaction on, exempting what `allow` matches.
    pub fn new(allow: Option<Regex>) -> Self {
        Self { inner: Arc::new(Inner { enabled: true, allow, ledger: Mutex::default() }) }
    }

    /// Redaction off (`--no-redact`).
    pub fn disabled() -> Self {
        Self { inner: Arc::new(Inner { enabled: false, allow: None, ledger: Mutex::default() }) }
    }

    pub fn is_enabled(&self) -> bool {
        self.inner.enabled
    }

    /// `text` of no particular file, redacted.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact(text, Origin::NONE)
    }

    /// `text` from `origin`, redacted; its findings go to the ledger.
    pub fn redact<'a>(&self, text: &'a str, origin: Origin<'_>) -> Cow<'a, str> {
        if !self.inner.enabled {
            return Cow::Borrowed(text);
        }
        let redacted = redact(text, origin, self.inner.allow.as_ref());
        self.record(&redacted.findings);
        redacted.text
    }

    /// Redacts `text` in place; whether anything changed.
    pub fn redact_string(&self, text: &mut String, origin: Origin<'_>) -> bool {
        if let Cow::Owned(redacted) = self.redact(text, origin) {
            *text = redacted;
            true
        } else {
            false
        }
    }

    /// Redacts every string of `value`. An object with a `path` string is
    /// that file's text: its strings are redacted with that origin (and a
    /// `line` or `line_start` number as the first line), and when the
    /// path names a secret file, its text fields are withheld whole.
    pub fn redact_json(&self, value: &mut Value) {
        if self.inner.enabled {
            self.json(value, Origin::NONE);
        }
    }

    fn json(&self, value: &mut Value, origin: Origin<'_>) {
        match value {
            Value::String(text) => {
                self.redact_string(text, origin);
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.json(item, origin)),
            Value::Object(map) => {
                let path = map.get("path").and_then(Value::as_str).map(str::to_string);
                let first_line = ["line", "line_start", "start_line"]
                    .iter()
                    .find_map(|key| map.get(*key).and_then(Value::as_u64))
                    .map_or(origin.first_line, |line| line as u32);
                let origin = match &path {
                    Some(path) => Origin { path: Some(path), first_line },
                    None => origin,
                };
                for (key, item) in map.iter_mut() {
                    if KEYS_KEPT.contains(&key.as_str()) {
                        continue;
                    }
                    self.json(item, origin);
                }
            }
            _ => {}
        }
    }

    fn record(&self, findings: &[Finding]) {
        if findings.is_empty() {
            return;
        }
        let mut ledger = self.inner.ledger.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for finding in findings {
            if ledger.seen.insert((finding.rule, finding.value_hash)) {
                *ledger.counts.entry(finding.rule).or_default() += 1;
                match (&finding.path, finding.line) {
                    (Some(path), 0) => ledger.places.push(format!("{path} ({})", finding.rule)),
                    (Some(path), line) => ledger.places.push(format!("{path}:{line} ({})", finding.rule)),
                    (None, _) => {}
                }
            }
        }
    }

    /// Distinct secrets redacted so far.
    pub fn count(&self) -> usize {
        let ledger = self.inner.ledger.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        ledger.counts.values().sum()
    }

    /// The command's stderr line: how many secrets of which kinds were
    /// redacted (with `debug`, where), never the values; `None` when none
    /// was. With redaction off, the line that says so.
    pub fn summary(&self, debug: bool) -> Option<String> {
        if !self.inner.enabled {
            return Some(DISABLED_WARNING.to_string());
        }
        let ledger = self.inner.ledger.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let total: usize = ledger.counts.values().sum();
        if total == 0 {
            return None;
        }
        let kinds: Vec<String> = ledger.counts.iter().map(|(rule, count)| format!("{count} {rule}")).collect();
        let noun = if total == 1 { "secret" } else { "secrets" };
        let mut line = format!("redacted {total} {noun} before sending: {}", kinds.join(", "));
        if debug && !ledger.places.is_empty() {
            line.push_str(&format!(" (at {})", ledger.places.join(", ")));
        }
        line.push('\n');
        Some(line)
    }
}

/// The line `--no-redact` prints.
pub const DISABLED_WARNING: &str = "warning: --no-redact: secrets in this command's requests are sent as they are\n";

/// Fields that name a file or a wire item rather than hold text, and the
/// provider's opaque encrypted reasoning, which must reach it unchanged.
const KEYS_KEPT: [&str; 13] = [
    "path",
    "source",
    "status",
    "tool",
    "language",
    "kind",
    "old_path",
    "new_path",
    "encrypted_content",
    "call_id",
    "id",
    "type",
    "role",
];

/// Compiles a user's `redact.allow` value; the error names the regex.
pub fn compile_allow(pattern: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(pattern).size_limit(1 << 20).build()
}

#[cfg(test)]
mod tests;

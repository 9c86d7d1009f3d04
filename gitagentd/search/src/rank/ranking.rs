//! Hybrid ranking: exact cosine between the query vector and every
//! candidate's stored vector, plus normalized BM25 over chunk bodies and
//! term matches against paths and symbol names.
//!
//! - terms: letter/digit runs, lower-cased, split at camelCase and
//!   initialism boundaries (`HTTPServer` gives `http`, `server`); a term
//!   longer than three bytes ending in a single `s` also counts as its
//!   singular.
//! - vector relatedness = clamp((cosine + 1) / 2, 1e-9, 1).
//! - text = BM25 (k1 1.2, b 0.75) over all candidates, squashed to
//!   s/(s + n/2), n the number of query terms: BM25 is a sum over the
//!   query's terms, so a fixed s/(s+1) left every candidate of a long
//!   (docstring-like) question at 0.9 and up, no evidence at all.
//! - query terms: the unique terms of the query without English function
//!   words (`the`, `of`, `is`, ...), unless it has no other.
//! - path = share of the query terms found in the path.
//! - symbol = m / sqrt(n * k): m query terms found in the symbol's name
//!   (not its kind: `function` in a question is no evidence for every
//!   function), n query terms, k the name's own terms (the cosine of the
//!   two term sets). Of two names sharing the same query words, the one
//!   with fewer other words wins (`GenBashCompletionFile` over
//!   `GenBashCompletionFileV2` for "Generates bash completion file"),
//!   where a share of the query terms alone tied them.
//! - lexical = min(1, 0.45 text + 0.30 path + 0.35 symbol).
//! - rank = v + (1 - v) * (1 - (1 - lexical)^w), v the vector relatedness
//!   and w the lexical weight (see [`Fusion`]): the lexical evidence fills
//!   a share of the vector's headroom that grows with w but never reaches
//!   all of it, so strong lexical matches keep their cosine order instead
//!   of tying at 1; `--min-score` applies to it, results sort by it (then
//!   shorter range, path, line).
//!
//! Body term counts are computed once per file version and kept as hashed
//! postings, so a search touches only the query's terms.

use gitagent_chunk::words::for_each_word;
pub use gitagent_chunk::words::words;
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;

/// FNV-1a over the term's bytes: terms are compared by hash.
#[derive(Clone, Copy)]
struct TermHasher(u64);

impl TermHasher {
    const START: Self = Self(0xcbf2_9ce4_8422_2325);

    fn push(&mut self, byte: u8) {
        self.0 ^= u64::from(byte);
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
}

/// Hash of one whole term.
pub fn term_hash(term: &str) -> u64 {
    let mut hasher = TermHasher::START;
    for byte in term.bytes() {
        hasher.push(byte);
    }
    hasher.0
}

/// Visits every term of `text` (see [`terms`]) as a hash.
///
/// Words repeat massively in code (`self`, `let`, `return`, one file's own
/// identifiers), and stemming a word costs far more than finding it, so
/// each thread remembers the hash of the words it has stemmed
/// ([`TermMemo`]); the hashes are those of [`for_each_term_hash_direct`].
pub fn for_each_term_hash(text: &str, mut visit: impl FnMut(u64)) {
    TERM_MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        for_each_word(text, |word| visit(memo.hash(word)));
    });
}

/// [`for_each_term_hash`] without the memo: every word stemmed anew. The
/// reference the memo is tested (and benchmarked) against.
pub fn for_each_term_hash_direct(text: &str, mut visit: impl FnMut(u64)) {
    let stemmer = english();
    for_each_word(text, |word| visit(term_hash(&stemmer.stem(word))));
}

thread_local! {
    static TERM_MEMO: std::cell::RefCell<TermMemo> = std::cell::RefCell::new(TermMemo::new());
}

/// Words longer than this are stemmed every time (rare, and mostly
/// unique: hashes, base64, generated names).
const MEMO_MAX_WORD: usize = 32;

/// The memo is emptied when it holds this many words, bounding it to
/// about a megabyte a thread.
const MEMO_MAX_WORDS: usize = 16 * 1024;

/// One thread's word → term hash memo (see [`for_each_term_hash`]).
struct TermMemo {
    stemmer: Stemmer,
    hashes: HashMap<Box<str>, u64, std::hash::BuildHasherDefault<FnvHasher>>,
}

impl TermMemo {
    fn new() -> Self {
        Self { stemmer: english(), hashes: HashMap::default() }
    }

    /// The term hash of the lower-cased `word`.
    fn hash(&mut self, word: &str) -> u64 {
        if word.len() > MEMO_MAX_WORD {
            return term_hash(&self.stemmer.stem(word));
        }
        if let Some(&hash) = self.hashes.get(word) {
            return hash;
        }
        let hash = term_hash(&self.stemmer.stem(word));
        if self.hashes.len() >= MEMO_MAX_WORDS {
            self.hashes.clear();
        }
        self.hashes.insert(word.into(), hash);
        hash
    }
}

/// FNV-1a as a `HashMap` hasher: short words hash in a few cycles, where
/// the default SipHash costs a good share of the stemming it saves.
struct FnvHasher(TermHasher);

impl Default for FnvHasher {
    fn default() -> Self {
        Self(TermHasher::START)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0.push(byte);
        }
    }
}

/// The Snowball English stemmer. Terms are compared by stem so that a
/// question's `parses`, `parsing` and `parsed` meet the code's `parse`:
/// measured with bench-search-quality (README), MRR@10 rose on the held-out
/// tokio corpus and on four of the five tuning corpora.
fn english() -> Stemmer {
    Stemmer::create(Algorithm::English)
}

/// The terms of `text` as strings, in order: its [`words`], each stemmed.
pub fn terms(text: &str) -> Vec<String> {
    let stemmer = english();
    words(text).into_iter().map(|word| stemmer.stem(&word).into_owned()).collect()
}

/// English function words: they carry no evidence about which code a
/// query means (a docstring-like question is full of them), yet each
/// would count as a query term in the path and symbol shares. Sorted.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being",
    "but", "by", "can", "could", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into",
    "is", "it", "its", "may", "me", "might", "must", "my", "no", "of", "on", "one", "or", "our", "should", "so",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to",
    "us", "was", "we", "were", "what", "when", "where", "whether", "which", "while", "who", "whose", "why", "will",
    "with", "would", "you", "your",
];

/// Whether `term` is an English function word (see [`STOPWORDS`]).
pub fn is_stopword(term: &str) -> bool {
    STOPWORDS.binary_search(&term).is_ok()
}

/// Unique query terms (stemmed, see [`terms`]) in first-seen order, with
/// their hashes, without function words (unless the query has nothing
/// else). Function words are recognised before stemming (`does` would
/// stem to `doe`).
pub fn query_terms(query: &str) -> Vec<(String, u64)> {
    let all = words(query);
    let content: Vec<&String> = all.iter().filter(|word| !is_stopword(word)).collect();
    let kept = if content.is_empty() { all.iter().collect() } else { content };
    let stemmer = english();
    let mut seen = std::collections::HashSet::new();
    kept.into_iter()
        .map(|word| stemmer.stem(word).into_owned())
        .filter(|term| seen.insert(term.clone()))
        .map(|term| {
            let hash = term_hash(&term);
            (term, hash)
        })
        .collect()
}

/// Body term statistics of one file's chunks, kept for as long as the
/// daemon caches the file version: each term hash is stored once per file,
/// followed by the chunks it occurs in (a compressed sparse layout, half
/// the size of one `(hash, chunk, count)` row per occurrence).
#[derive(Debug, Default)]
pub struct FileTerms {
    body: TermIndex<(u32, u32)>,
    /// Number of terms in each chunk body.
    pub chunk_lengths: Vec<u32>,
    /// Sorted unique term hashes of the path.
    path_terms: Vec<u64>,
    /// The chunks whose symbol name holds each term.
    symbols: TermIndex<u32>,
    /// Number of unique terms in each chunk's symbol name.
    symbol_lengths: Vec<u32>,
}

/// Sorted unique term hashes, each with its entries (sorted by chunk):
/// the entries of `terms[i]` are `entries[starts[i]..starts[i + 1]]`.
#[derive(Debug)]
struct TermIndex<T> {
    terms: Vec<u64>,
    starts: Vec<u32>,
    entries: Vec<T>,
}

impl<T> Default for TermIndex<T> {
    fn default() -> Self {
        Self { terms: Vec::new(), starts: vec![0], entries: Vec::new() }
    }
}

impl<T: Copy> TermIndex<T> {
    /// Builds the index from `(term hash, entry)` rows sorted by hash,
    /// then entry.
    fn from_sorted(rows: &[(u64, T)]) -> Self {
        let mut index = Self { terms: Vec::new(), starts: Vec::new(), entries: Vec::with_capacity(rows.len()) };
        for (hash, entry) in rows {
            if index.terms.last() != Some(hash) {
                index.terms.push(*hash);
                index.starts.push(index.entries.len() as u32);
            }
            index.entries.push(*entry);
        }
        index.starts.push(index.entries.len() as u32);
        index.terms.shrink_to_fit();
        index.starts.shrink_to_fit();
        index
    }

    /// The entries of term `hash`, by chunk.
    fn entries(&self, hash: u64) -> &[T] {
        match self.terms.binary_search(&hash) {
            Ok(at) => &self.entries[self.starts[at] as usize..self.starts[at + 1] as usize],
            Err(_) => &[],
        }
    }

    fn heap_bytes(&self) -> usize {
        self.terms.len() * 8 + self.starts.len() * 4 + self.entries.len() * std::mem::size_of::<T>()
    }
}

impl FileTerms {
    /// Computes statistics for a file given each chunk's body and symbol
    /// text (its name, empty without a symbol).
    pub fn build<'a>(path: &str, chunks: impl Iterator<Item = (&'a str, String)>) -> Self {
        let mut chunk_lengths = Vec::new();
        let mut postings: Vec<(u64, (u32, u32))> = Vec::new();
        let mut symbol_terms: Vec<(u64, u32)> = Vec::new();
        let mut symbol_lengths = Vec::new();
        let mut counts: HashMap<u64, u32> = HashMap::new();
        for (index, (body, symbol)) in chunks.enumerate() {
            counts.clear();
            let mut length = 0u32;
            for_each_term_hash(body, |hash| {
                length += 1;
                *counts.entry(hash).or_insert(0) += 1;
            });
            chunk_lengths.push(length);
            postings.extend(counts.iter().map(|(&hash, &count)| (hash, (index as u32, count))));
            let unique = unique_hashes(&symbol);
            symbol_lengths.push(unique.len() as u32);
            let mut matched = unique;
            matched.extend(compound_part_hashes(&symbol));
            matched.sort_unstable();
            matched.dedup();
            symbol_terms.extend(matched.into_iter().map(|hash| (hash, index as u32)));
        }
        postings.sort_unstable();
        symbol_terms.sort_unstable();
        let mut path_terms = unique_hashes(path);
        chunk_lengths.shrink_to_fit();
        path_terms.shrink_to_fit();
        symbol_lengths.shrink_to_fit();
        Self {
            body: TermIndex::from_sorted(&postings),
            chunk_lengths,
            path_terms,
            symbols: TermIndex::from_sorted(&symbol_terms),
            symbol_lengths,
        }
    }

    /// How often term `hash` occurs in chunk `chunk`.
    pub fn count(&self, hash: u64, chunk: u32) -> u32 {
        let entries = self.body.entries(hash);
        match entries.binary_search_by_key(&chunk, |entry| entry.0) {
            Ok(at) => entries[at].1,
            Err(_) => 0,
        }
    }

    /// (chunk, count) of every chunk containing term `hash`, by chunk.
    pub fn occurrences(&self, hash: u64) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.body.entries(hash).iter().copied()
    }

    pub fn path_has(&self, hash: u64) -> bool {
        self.path_terms.binary_search(&hash).is_ok()
    }

    pub fn symbol_has(&self, chunk: u32, hash: u64) -> bool {
        self.symbols.entries(hash).binary_search(&chunk).is_ok()
    }

    /// Chunks whose symbol contains term `hash`.
    pub fn symbol_occurrences(&self, hash: u64) -> impl Iterator<Item = u32> + '_ {
        self.symbols.entries(hash).iter().copied()
    }

    pub fn has_symbol_terms(&self, chunk: u32) -> bool {
        self.symbols.entries.contains(&chunk)
    }

    /// Number of unique terms in chunk `chunk`'s symbol name (0 without
    /// one).
    pub fn symbol_length(&self, chunk: u32) -> u32 {
        self.symbol_lengths.get(chunk as usize).copied().unwrap_or(0)
    }

    /// Approximate heap size, for cache accounting.
    pub fn heap_bytes(&self) -> usize {
        self.body.heap_bytes()
            + self.chunk_lengths.len() * 4
            + self.path_terms.len() * 8
            + self.symbols.heap_bytes()
            + self.symbol_lengths.len() * 4
    }
}

/// Fewest characters of a symbol word's start or end that match a query
/// word on their own (see [`compound_part_hashes`]).
const COMPOUND_PART_MIN: usize = 3;

/// Fewest characters left of a symbol word beside a part that matches a
/// query word (see [`compound_part_hashes`]): `read` does not match
/// `reader` (2 left) or `thread`, it matches `readline` (4 left).
const COMPOUND_REST_MIN: usize = 4;

/// Term hashes of the starts and ends of `symbol`'s words that match a
/// query word although they are not words of their own: a name run
/// together from several words without a case or `_` boundary (Python's
/// `getaddrinfo`, `writelines`, `formatweekheader`) has one word for
/// [`words`], so a query about "info", "lines" or a "header" would never
/// meet it.
/// Each start of at least [`COMPOUND_PART_MIN`] characters followed by at
/// least [`COMPOUND_REST_MIN`] more, and each end likewise, is stemmed
/// and hashed like a word. They count as symbol matches, not as words of
/// the name (the symbol share's length stays that of the name's words);
/// parts that are no word match no query term. Measured with
/// bench-search-quality (README): MRR@10 rose on the Python corpus, every
/// other corpus within 0.005.
fn compound_part_hashes(symbol: &str) -> Vec<u64> {
    let mut hashes = Vec::new();
    TERM_MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        for_each_word(symbol, |word| {
            let bounds: Vec<usize> = word.char_indices().map(|(at, _)| at).chain([word.len()]).collect();
            let chars = bounds.len() - 1;
            if chars < COMPOUND_PART_MIN + COMPOUND_REST_MIN {
                return;
            }
            for part in COMPOUND_PART_MIN..=chars - COMPOUND_REST_MIN {
                hashes.push(memo.hash(&word[..bounds[part]]));
                hashes.push(memo.hash(&word[bounds[chars - part]..]));
            }
        });
    });
    hashes
}

fn unique_hashes(text: &str) -> Vec<u64> {
    let mut hashes = Vec::new();
    for_each_term_hash(text, |hash| hashes.push(hash));
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// Cosine similarity of two vectors given the norm of `b`.
pub fn cosine(query: &[f32], query_norm: f64, vector: &[f32], vector_norm: f64) -> f64 {
    if query.len() != vector.len() || query_norm == 0.0 || vector_norm == 0.0 {
        return 0.0;
    }
    dot(query, vector) / (query_norm * vector_norm)
}

/// The Euclidean norm.
pub fn norm(vector: &[f32]) -> f64 {
    vector.iter().map(|value| f64::from(*value) * f64::from(*value)).sum::<f64>().sqrt()
}

/// Dot product with independent accumulators so the compiler vectorizes.
pub fn dot(a: &[f32], b: &[f32]) -> f64 {
    dot_function()(a, b)
}

/// The fastest dot product this processor supports.
pub fn dot_function() -> fn(&[f32], &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return dot_avx2;
        }
    }
    dot_portable
}

#[cfg(target_arch = "x86_64")]
fn dot_avx2(a: &[f32], b: &[f32]) -> f64 {
    #[target_feature(enable = "avx2,fma")]
    fn inner(a: &[f32], b: &[f32]) -> f64 {
        dot_body(a, b)
    }
    // SAFETY: `dot_function` returns this function only after detecting
    // AVX2 and FMA on the running processor.
    unsafe { inner(a, b) }
}

fn dot_portable(a: &[f32], b: &[f32]) -> f64 {
    dot_body(a, b)
}

#[inline(always)]
fn dot_body(a: &[f32], b: &[f32]) -> f64 {
    const LANES: usize = 16;
    let mut sums = [0f32; LANES];
    let chunks = a.len() / LANES;
    for chunk in 0..chunks {
        let base = chunk * LANES;
        let left = &a[base..base + LANES];
        let right = &b[base..base + LANES];
        for lane in 0..LANES {
            sums[lane] += left[lane] * right[lane];
        }
    }
    let mut total: f64 = sums.iter().map(|sum| f64::from(*sum)).sum();
    for index in chunks * LANES..a.len() {
        total += f64::from(a[index]) * f64::from(b[index]);
    }
    total
}

/// Vector relatedness from a cosine.
pub fn relatedness(cosine: f64) -> f64 {
    ((cosine + 1.0) / 2.0).clamp(0.0, 1.0).max(1e-9)
}

/// Every score component of one candidate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    pub cosine: f64,
    pub vector_relatedness: f64,
    pub text: f64,
    pub path: f64,
    pub symbol: f64,
    pub lexical: f64,
    pub rank: f64,
}

/// What BM25 needs about every candidate for the query's terms, in flat
/// arrays: candidate `i`'s count of query term `t` is
/// `counts[i * terms + t]`.
#[derive(Debug, Clone, Default)]
pub struct LexicalInputs {
    terms: usize,
    counts: Vec<u32>,
    lengths: Vec<u32>,
    path_matches: Vec<u32>,
    symbol_matches: Vec<u32>,
    symbol_lengths: Vec<u32>,
}

/// A run of consecutive candidates of a [`LexicalInputs`], filled in place
/// (by one thread each when there are many): candidate `i` of a part is
/// candidate `first + i` of the whole.
pub struct LexicalPart<'a> {
    terms: usize,
    counts: &'a mut [u32],
    lengths: &'a mut [u32],
    path_matches: &'a mut [u32],
    symbol_matches: &'a mut [u32],
    symbol_lengths: &'a mut [u32],
}

impl LexicalInputs {
    /// Inputs for `candidates` candidates with no counts, lengths or
    /// matches yet, filled through [`Self::parts`].
    pub fn zeroed(candidates: usize, terms: usize) -> Self {
        Self {
            terms,
            counts: vec![0; candidates * terms],
            lengths: vec![0; candidates],
            path_matches: vec![0; candidates],
            symbol_matches: vec![0; candidates],
            symbol_lengths: vec![0; candidates],
        }
    }

    /// The candidates in runs of `per` (the last one shorter).
    pub fn parts(&mut self, per: usize) -> Vec<LexicalPart<'_>> {
        let per = per.max(1);
        let terms = self.terms;
        self.counts
            .chunks_mut((per * terms).max(1))
            .chain(std::iter::repeat_with(|| &mut [][..]))
            .zip(self.lengths.chunks_mut(per))
            .zip(self.path_matches.chunks_mut(per))
            .zip(self.symbol_matches.chunks_mut(per))
            .zip(self.symbol_lengths.chunks_mut(per))
            .map(|((((counts, lengths), path_matches), symbol_matches), symbol_lengths)| LexicalPart {
                terms,
                counts,
                lengths,
                path_matches,
                symbol_matches,
                symbol_lengths,
            })
            .collect()
    }

    /// Appends one candidate; `counts` yields one count per query term;
    /// `symbol` is (query terms found in the symbol name, the name's own
    /// terms).
    #[cfg(test)]
    pub fn push(
        &mut self,
        counts: impl Iterator<Item = u32>,
        length: u32,
        path_matches: usize,
        symbol: (usize, usize),
    ) {
        let before = self.counts.len();
        self.counts.extend(counts);
        self.counts.resize(before + self.terms, 0);
        self.lengths.push(length);
        self.path_matches.push(path_matches as u32);
        self.symbol_matches.push(symbol.0 as u32);
        self.symbol_lengths.push(symbol.1 as u32);
    }

    fn candidates(&self) -> usize {
        self.lengths.len()
    }

    fn counts(&self, candidate: usize) -> &[u32] {
        &self.counts[candidate * self.terms..(candidate + 1) * self.terms]
    }
}

impl LexicalPart<'_> {
    /// Sets candidate `candidate`'s body length, path matches and number
    /// of symbol name terms.
    pub fn set_candidate(&mut self, candidate: usize, length: u32, path_matches: usize, symbol_length: u32) {
        self.lengths[candidate] = length;
        self.path_matches[candidate] = path_matches as u32;
        self.symbol_lengths[candidate] = symbol_length;
    }

    /// Counts one more query term in candidate `candidate`'s symbol.
    pub fn add_symbol_match(&mut self, candidate: usize) {
        self.symbol_matches[candidate] += 1;
    }

    /// Sets candidate `candidate`'s count of query term `term`.
    pub fn set_count(&mut self, candidate: usize, term: usize, count: u32) {
        self.counts[candidate * self.terms + term] = count;
    }
}

/// BM25's statistics over all candidates (document frequency of each
/// query term, average body length), so that each candidate's lexical
/// components can be computed on their own, without a scores row for
/// every candidate.
#[derive(Debug, Clone)]
pub struct LexicalStats {
    docs: f64,
    df: Vec<usize>,
    average: f64,
    query_terms: usize,
}

impl LexicalStats {
    /// The statistics of `inputs`; `None` without candidates or terms
    /// (the lexical components then stay 0).
    pub fn new(inputs: &LexicalInputs, query_terms: usize) -> Option<Self> {
        let candidates = inputs.candidates();
        if candidates == 0 || query_terms == 0 {
            return None;
        }
        let docs = candidates as f64;
        let mut df = vec![0usize; query_terms];
        let mut total_length = 0f64;
        for candidate in 0..candidates {
            total_length += f64::from(inputs.lengths[candidate]);
            for (term, count) in inputs.counts(candidate).iter().enumerate() {
                if *count > 0 {
                    df[term] += 1;
                }
            }
        }
        let mut average = total_length / docs;
        if average == 0.0 {
            average = 1.0;
        }
        Some(Self { docs, df, average, query_terms })
    }

    /// Sets the lexical components of candidate `candidate` in `score`.
    pub fn apply(&self, inputs: &LexicalInputs, candidate: usize, score: &mut Scores) {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        let length = inputs.lengths[candidate];
        let mut bm25 = 0.0;
        if length > 0 {
            for (term, &count) in inputs.counts(candidate).iter().enumerate() {
                if count == 0 {
                    continue;
                }
                let df = self.df[term] as f64;
                let idf = (1.0 + (self.docs - df + 0.5) / (df + 0.5)).ln();
                let freq = f64::from(count);
                let denominator = freq + K1 * (1.0 - B + B * f64::from(length) / self.average);
                bm25 += idf * (freq * (K1 + 1.0) / denominator);
            }
        }
        let query_terms = self.query_terms as f64;
        score.text = text_share(bm25, self.query_terms);
        score.path = f64::from(inputs.path_matches[candidate]) / query_terms;
        score.symbol =
            symbol_share(inputs.symbol_matches[candidate], self.query_terms, inputs.symbol_lengths[candidate]);
        score.lexical = (score.text * 0.45 + score.path * 0.30 + score.symbol * 0.35).min(1.0);
    }
}

/// BM25 squashed to 0..1 as s / (s + n/2) for a query of `n` terms: the
/// score is a sum over the query's terms, so its scale grows with them.
pub fn text_share(bm25: f64, query_terms: usize) -> f64 {
    if bm25 <= 0.0 {
        return 0.0;
    }
    bm25 / (bm25 + query_terms.max(1) as f64 / 2.0)
}

/// The cosine of the query's term set (`query_terms` terms) and a symbol
/// name's (`name_terms` terms) sharing `matches` terms: m / sqrt(n * k).
pub fn symbol_share(matches: u32, query_terms: usize, name_terms: u32) -> f64 {
    if matches == 0 || query_terms == 0 || name_terms == 0 {
        return 0.0;
    }
    (f64::from(matches) / (query_terms as f64 * f64::from(name_terms)).sqrt()).min(1.0)
}

/// Completes `scores` (whose cosine fields are set) with the lexical
/// components; candidate `i` of `inputs` belongs to `scores[i]`.
pub fn apply_lexical(scores: &mut [Scores], inputs: &LexicalInputs, query_terms: usize) {
    if scores.is_empty() {
        return;
    }
    let Some(stats) = LexicalStats::new(inputs, query_terms) else { return };
    for (candidate, score) in scores.iter_mut().enumerate() {
        stats.apply(inputs, candidate, score);
    }
}

/// How the vector and lexical components combine into the rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// How strongly the lexical component fills the vector's headroom:
    /// rank = v + (1 - v) * (1 - (1 - lexical)^weight); 1 fills `lexical`
    /// of it, 0 leaves the vector alone.
    pub lexical_weight: f64,
    /// Rescale the vector relatedness per query so that it spans the
    /// candidates' range ([lowest, highest] -> [0, highest]) before fusion.
    pub normalize_cosine: bool,
}

impl Default for Fusion {
    fn default() -> Self {
        // Measured with bench-search-quality (README): 2 and 3 against 1
        // gained on Rust and Go but lost on Java, TypeScript and Python.
        Self { lexical_weight: 1.0, normalize_cosine: false }
    }
}

/// The candidates' vector relatedness range a [`Fusion`] normalizes by.
#[derive(Debug, Clone, Copy)]
pub struct RelatednessRange {
    lowest: f64,
    highest: f64,
}

impl Fusion {
    /// The range of `relatedness` over all candidates (unused, and not
    /// computed, without normalization).
    pub fn range(self, relatedness: impl Iterator<Item = f64>) -> RelatednessRange {
        let (mut lowest, mut highest) = (f64::INFINITY, f64::NEG_INFINITY);
        if self.normalize_cosine {
            for value in relatedness {
                lowest = lowest.min(value);
                highest = highest.max(value);
            }
        }
        RelatednessRange { lowest, highest }
    }

    /// The rank of a candidate from its vector relatedness and lexical
    /// component.
    pub fn rank(self, vector_relatedness: f64, lexical: f64, range: RelatednessRange) -> f64 {
        let RelatednessRange { lowest, highest } = range;
        let spread = highest - lowest;
        let vector = if self.normalize_cosine && spread > 0.0 {
            ((vector_relatedness - lowest) / spread * highest).max(1e-9)
        } else {
            vector_relatedness
        };
        vector + (1.0 - vector) * lexical_share(lexical, self.lexical_weight)
    }
}

/// Sets every candidate's rank from its vector relatedness and lexical
/// components (the lexical ones are 0 for a query without terms).
pub fn fuse(scores: &mut [Scores], fusion: Fusion) {
    let range = fusion.range(scores.iter().map(|score| score.vector_relatedness));
    for score in scores.iter_mut() {
        score.rank = fusion.rank(score.vector_relatedness, score.lexical, range);
    }
}

/// The share of the vector's headroom that `lexical` (0..1) fills at
/// `weight`: 1 - (1 - lexical)^weight.
pub fn lexical_share(lexical: f64, weight: f64) -> f64 {
    let lexical = lexical.clamp(0.0, 1.0);
    if weight == 0.0 {
        return 0.0;
    }
    1.0 - (1.0 - lexical).powf(weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_split_initialisms_and_are_stemmed() {
        let got = terms("HTTPServerCommand URLParser JSONEncoder");
        for want in ["http", "server", "command", "url", "parser", "json", "encod"] {
            assert!(got.contains(&want.to_string()), "{got:?} misses {want}");
        }
        assert_eq!(terms("parseFiles v2Value class"), ["pars", "file", "v2", "valu", "class"]);
        assert_eq!(terms("bus gas"), ["bus", "gas"]);
        // Inflections meet at one stem: the question's words find the code's.
        assert_eq!(terms("parses parsing parsed parse"), ["pars"; 4]);
        assert_eq!(terms("searches Searcher searched"), ["search", "searcher", "search"]);
    }

    #[test]
    fn query_terms_leave_out_function_words() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]), "STOPWORDS is sorted");
        let kept: Vec<String> =
            query_terms("Return the path of an open File").into_iter().map(|(term, _)| term).collect();
        assert_eq!(kept, ["return", "path", "open", "file"]);
        // Function words are dropped before stemming, repeats after it.
        let kept: Vec<String> =
            query_terms("Does it return the files? Returns a file").into_iter().map(|(term, _)| term).collect();
        assert_eq!(kept, ["return", "file"]);
        // A query of function words only keeps them.
        let kept: Vec<String> = query_terms("where is it").into_iter().map(|(term, _)| term).collect();
        assert_eq!(kept, ["where", "is", "it"]);
    }

    #[test]
    fn memoized_term_hashes_equal_direct_ones() {
        // Varied text: code, prose, inflections, initialisms, non-ASCII,
        // digits, words past the memo's length limit; read twice so the
        // second pass answers from the memo.
        let mut text = String::from(
            "fn parse_files(HTTPServer) { let parsed = self.parses(); } // Parsing naïve ÜNÏCODE wordS \
             v2Value x86_64 GenBashCompletionFileV2 aVeryLongIdentifierThatGoesOnAndOnPastTheMemoLimitForSure \
             abcdefghijklmnopqrstuvwxyzabcdefghijklmnop searches Searcher searched",
        );
        text.push(' ');
        text.push_str(&text.clone());
        // More distinct words than the memo holds: it is emptied and
        // refilled on the way, and still answers the same.
        for index in 0..MEMO_MAX_WORDS + 100 {
            text.push_str(&format!(" word{index}s"));
        }
        let hashes = |each: fn(&str, &mut dyn FnMut(u64))| {
            let mut out = Vec::new();
            each(&text, &mut |hash| out.push(hash));
            out
        };
        let direct = hashes(|text, visit| for_each_term_hash_direct(text, visit));
        let memoized = hashes(|text, visit| for_each_term_hash(text, visit));
        assert_eq!(memoized.len(), direct.len());
        assert_eq!(memoized, direct);
        // Again, now with a memo already full of these words.
        assert_eq!(hashes(|text, visit| for_each_term_hash(text, visit)), direct);
        let words = words(&text);
        assert_eq!(direct.len(), words.len());
        assert!(words.iter().any(|word| word.len() > MEMO_MAX_WORD));
    }

    #[test]
    fn hashed_terms_match_string_terms() {
        for text in ["HTTPServerCommand parses Files", "naïve Ünïcode wordS", "a_b-c.d9E"] {
            let mut hashed = Vec::new();
            for_each_term_hash(text, |hash| hashed.push(hash));
            let expected: Vec<u64> = terms(text).iter().map(|term| term_hash(term)).collect();
            assert_eq!(hashed, expected, "{text}");
        }
    }

    #[test]
    fn postings_answer_counts() {
        let file = FileTerms::build(
            "src/search/ranking.rs",
            [("score the scores", "function Score".to_string()), ("other", String::new())].into_iter(),
        );
        assert_eq!(file.count(term_hash("score"), 0), 2);
        // `scores` is counted under its stem, not as a term of its own.
        assert_eq!(file.count(term_hash("scores"), 0), 0);
        assert_eq!(file.count(term_hash("score"), 1), 0);
        assert_eq!(file.chunk_lengths, [3, 1]);
        assert!(file.path_has(term_hash("rank")));
        assert!(file.symbol_has(0, term_hash("score")));
        assert!(!file.has_symbol_terms(1));
        assert!(file.has_symbol_terms(0));
        assert_eq!(file.occurrences(term_hash("score")).collect::<Vec<_>>(), [(0, 2)]);
        assert_eq!(file.occurrences(term_hash("other")).collect::<Vec<_>>(), [(1, 1)]);
        assert_eq!(file.occurrences(term_hash("absent")).count(), 0);
        assert_eq!(file.symbol_occurrences(term_hash("function")).collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn a_run_together_symbol_word_matches_query_words_at_its_start_or_end() {
        let symbols = ["getaddrinfo", "writelines", "reader", "thread", "readLine", "größenangabe", ""];
        let file = FileTerms::build("lib.py", symbols.iter().map(|symbol| ("body", symbol.to_string())));
        let matching = |word: &str| {
            let (_, hash) = query_terms(word).remove(0);
            file.symbol_occurrences(hash).collect::<Vec<_>>()
        };
        // Starts and ends of at least 3 characters, at least 4 left beside them.
        assert_eq!(matching("info"), [0]);
        assert_eq!(matching("get"), [0]);
        // Only starts and ends: a middle part is no match.
        assert!(matching("addr").is_empty());
        assert_eq!(matching("write"), [1]);
        // The query's `lines` meets the end `lines` (and `readLine`'s word)
        // at their stem.
        assert_eq!(matching("lines"), [1, 4]);
        // Too little left beside the part: not a compound.
        assert_eq!(matching("read"), [4]);
        assert!(matching("ead").is_empty());
        // Whole words still match; camelCase words have their own terms.
        assert_eq!(matching("writelines"), [1]);
        // Characters, not bytes: `größen` is 6 characters of `größenangabe`.
        assert_eq!(matching("angabe"), [5]);
        // The parts are matches, not words of the name.
        assert_eq!(file.symbol_length(0), 1);
        assert_eq!(file.symbol_length(1), 1);
        assert_eq!(file.symbol_length(6), 0);
        assert!(!file.has_symbol_terms(6));
        // Bodies are untouched.
        assert_eq!(file.occurrences(term_hash("info")).count(), 0);
    }

    #[test]
    fn postings_list_every_chunk_of_a_term_in_chunk_order() {
        let bodies = ["alpha beta", "beta gamma beta", "gamma", "alpha alpha alpha"];
        let file = FileTerms::build("a.go", bodies.iter().map(|body| (*body, format!("func {body}"))));
        assert_eq!(file.occurrences(term_hash("alpha")).collect::<Vec<_>>(), [(0, 1), (3, 3)]);
        assert_eq!(file.occurrences(term_hash("beta")).collect::<Vec<_>>(), [(0, 1), (1, 2)]);
        assert_eq!(file.occurrences(term_hash("gamma")).collect::<Vec<_>>(), [(1, 1), (2, 1)]);
        assert_eq!(file.symbol_occurrences(term_hash("gamma")).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(file.symbol_occurrences(term_hash("func")).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(file.count(term_hash("alpha"), 3), 3);
        assert_eq!(file.count(term_hash("alpha"), 1), 0);
    }

    #[test]
    fn hybrid_rank_lifts_lexical_matches() {
        let mut scores = vec![
            Scores { cosine: 0.2, vector_relatedness: relatedness(0.2), ..Scores::default() },
            Scores { cosine: 0.2, vector_relatedness: relatedness(0.2), ..Scores::default() },
        ];
        let mut inputs = LexicalInputs { terms: 2, ..LexicalInputs::default() };
        inputs.push([3, 0].into_iter(), 10, 1, (2, 2));
        inputs.push([0, 0].into_iter(), 10, 0, (0, 0));
        apply_lexical(&mut scores, &inputs, 2);
        fuse(&mut scores, Fusion::default());
        assert!(scores[0].rank > scores[1].rank);
        assert_eq!(scores[1].rank, scores[1].vector_relatedness);
        assert!((scores[0].path - 0.5).abs() < 1e-12);
        assert!((scores[0].symbol - 1.0).abs() < 1e-12);
        assert!(scores[0].lexical <= 1.0);
        assert_eq!(relatedness(-1.0), 1e-9);
        assert_eq!(relatedness(1.0), 1.0);
    }

    #[test]
    fn fusion_weighs_lexical_and_normalizes_the_cosine_per_query() {
        let scores = |cosines: &[f64], lexical: &[f64]| -> Vec<Scores> {
            cosines
                .iter()
                .zip(lexical)
                .map(|(&cosine, &lexical)| Scores {
                    cosine,
                    vector_relatedness: relatedness(cosine),
                    lexical,
                    ..Scores::default()
                })
                .collect()
        };
        // Without lexical evidence the rank is the relatedness itself.
        let mut plain = scores(&[0.2, 0.4], &[0.0, 0.0]);
        fuse(&mut plain, Fusion::default());
        assert_eq!([plain[0].rank, plain[1].rank], [relatedness(0.2), relatedness(0.4)]);
        // The weight shapes the lexical lift; 1 fills `lexical` of the
        // headroom, 2 fills 1 - (1 - lexical)^2, 0 leaves the vector alone.
        let mut one = scores(&[0.2], &[0.5]);
        fuse(&mut one, Fusion { lexical_weight: 1.0, normalize_cosine: false });
        assert!((one[0].rank - (0.6 + 0.4 * 0.5)).abs() < 1e-12);
        let mut two = scores(&[0.2], &[0.5]);
        fuse(&mut two, Fusion { lexical_weight: 2.0, normalize_cosine: false });
        assert!((two[0].rank - (0.6 + 0.4 * 0.75)).abs() < 1e-12);
        let mut none = scores(&[0.2], &[0.5]);
        fuse(&mut none, Fusion { lexical_weight: 0.0, normalize_cosine: false });
        assert_eq!(none[0].rank, 0.6);
        // Strong lexical matches do not tie at 1: their cosine still
        // orders them.
        let mut strong = scores(&[0.2, 0.4], &[0.9, 0.9]);
        fuse(&mut strong, Fusion { lexical_weight: 3.0, normalize_cosine: false });
        assert!(strong[0].rank < strong[1].rank && strong[1].rank < 1.0);
        // Normalized: the best vector keeps its relatedness, the worst
        // drops to (almost) 0, the rest in proportion; order is kept.
        let mut normalized = scores(&[0.2, 0.3, 0.4], &[0.0, 0.0, 0.0]);
        fuse(&mut normalized, Fusion { lexical_weight: 1.0, normalize_cosine: true });
        assert!((normalized[2].rank - 0.7).abs() < 1e-12);
        assert!((normalized[1].rank - 0.35).abs() < 1e-12);
        assert_eq!(normalized[0].rank, 1e-9);
        // One candidate (no spread) is left as it is.
        let mut single = scores(&[0.3], &[0.0]);
        fuse(&mut single, Fusion { lexical_weight: 1.0, normalize_cosine: true });
        assert!((single[0].rank - 0.65).abs() < 1e-12);
    }

    #[test]
    fn inputs_filled_in_parts_equal_inputs_filled_whole() {
        // Candidate i: length i + 1, path matches i % 2, count (i * t) % 3
        // of term t, one symbol match for every third candidate.
        let fill = |per: usize| {
            let mut inputs = LexicalInputs::zeroed(7, 2);
            for (number, mut part) in inputs.parts(per).into_iter().enumerate() {
                for local in 0..part.lengths.len() {
                    let candidate = number * per + local;
                    part.set_candidate(local, candidate as u32 + 1, candidate % 2, 2);
                    for term in 0..2 {
                        part.set_count(local, term, (candidate * term % 3) as u32);
                    }
                    if candidate.is_multiple_of(3) {
                        part.add_symbol_match(local);
                    }
                }
            }
            inputs
        };
        let whole = fill(7);
        assert_eq!(whole.lengths, [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(whole.counts(4), [0, 1]);
        for per in [1, 2, 3, 4] {
            let parts = fill(per);
            assert_eq!(
                (&parts.counts, &parts.lengths, &parts.path_matches, &parts.symbol_matches, &parts.symbol_lengths),
                (&whole.counts, &whole.lengths, &whole.path_matches, &whole.symbol_matches, &whole.symbol_lengths),
                "{per} per part"
            );
        }
        let mut scores = vec![Scores::default(); 7];
        apply_lexical(&mut scores, &whole, 2);
        let stats = LexicalStats::new(&whole, 2).unwrap();
        for (candidate, expected) in scores.iter().enumerate() {
            let mut alone = Scores::default();
            stats.apply(&whole, candidate, &mut alone);
            assert_eq!(&alone, expected, "candidate {candidate} scored on its own");
        }
        assert!(LexicalStats::new(&LexicalInputs::zeroed(0, 2), 2).is_none());
        assert!(LexicalStats::new(&whole, 0).is_none());
    }

    #[test]
    fn a_name_the_question_spells_out_outranks_a_longer_one_sharing_its_words() {
        // generat, bash, complet, file (stems).
        let query = query_terms("Generates bash completion file.").len();
        assert_eq!(query, 4);
        let file = FileTerms::build(
            "bash_completions.go",
            [
                ("", "GenBashCompletionFile".to_string()),
                ("", "GenBashCompletionFileV2".to_string()),
                ("", String::new()),
            ]
            .into_iter(),
        );
        assert_eq!([file.symbol_length(0), file.symbol_length(1), file.symbol_length(2)], [4, 5, 0]);
        // Both names hold bash, completion and file (3 of the 4 query
        // terms, which alone tied them); the one without the extra `V2`
        // is the closer answer.
        let exact = symbol_share(3, query, file.symbol_length(0));
        let longer = symbol_share(3, query, file.symbol_length(1));
        assert!(exact > longer, "{exact} vs {longer}");
        assert!((exact - 3.0 / 16f64.sqrt()).abs() < 1e-12);
        assert_eq!(symbol_share(0, query, 2), 0.0);
        assert_eq!(symbol_share(3, query, 0), 0.0);
        assert_eq!(symbol_share(1, 1, 1), 1.0);
        // Through the stats: same matches, shorter name, higher share.
        let mut inputs = LexicalInputs { terms: 1, ..LexicalInputs::default() };
        inputs.push([0].into_iter(), 5, 0, (1, 2));
        inputs.push([0].into_iter(), 5, 0, (1, 3));
        let mut scores = vec![Scores::default(); 2];
        apply_lexical(&mut scores, &inputs, 1);
        assert!(scores[0].symbol > scores[1].symbol);
        assert!((scores[0].symbol - 1.0 / 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn body_text_saturates_later_for_longer_questions() {
        // The same BM25 sum means less for a question of more terms.
        assert!(text_share(6.0, 12) < text_share(6.0, 2));
        assert!((text_share(6.0, 12) - 0.5).abs() < 1e-12);
        assert!((text_share(1.0, 2) - 0.5).abs() < 1e-12);
        assert_eq!(text_share(0.0, 3), 0.0);
        // A long question's candidates are told apart instead of all
        // sitting at 0.9 and up (the old s / (s + 1)).
        let (strong, weak) = (text_share(20.0, 16), text_share(8.0, 16));
        assert!(strong - weak > 0.2, "{strong} {weak}");
        assert!(strong < 1.0 && weak > 0.0);
    }

    #[test]
    fn dot_and_norm() {
        let a: Vec<f32> = (0..37).map(|i| i as f32).collect();
        let expected: f64 = a.iter().map(|v| f64::from(*v) * f64::from(*v)).sum();
        assert!((dot(&a, &a) - expected).abs() < 1e-3);
        assert!((norm(&a) - expected.sqrt()).abs() < 1e-9);
        assert_eq!(cosine(&a, 0.0, &a, 1.0), 0.0);
    }
}

//! Scoring one query against a refreshed [`LiveIndex`]: the candidates are
//! the records of the candidate files (minus test paths with
//! `--no-tests`), their vectors read in place from the mapped payload,
//! their bodies from the snapshot. See [`super::ranking`] for the formula.

use super::ranking::{self, LexicalInputs, Scores};
use crate::chunking::Symbol;
use crate::index::live::{Link, LiveIndex};
use crate::paths::is_test_path;
use std::cmp::Ordering;
use std::sync::Arc;

const MAX_EXCERPT_LINES: usize = 40;
const MAX_EXCERPT_BYTES: usize = 12 << 10;
/// Below this many candidates one thread scores them all.
const PARALLEL_THRESHOLD: usize = 16_384;

/// One ranked result.
#[derive(Debug, Clone)]
pub struct Hit {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: Option<Symbol>,
    pub scores: Scores,
    pub excerpt: String,
    pub chunk_id: String,
}

/// What to rank.
pub struct Query<'a> {
    pub live: &'a LiveIndex,
    pub candidate_paths: &'a [String],
    pub no_tests: bool,
    pub text: &'a str,
    pub vector: &'a [f32],
    pub min_score: f64,
    pub limit: usize,
    pub fusion: ranking::Fusion,
}

struct Item<'a> {
    record: usize,
    link: &'a Link,
    vector: &'a [f32],
    norm: f64,
}

/// Where the time of one ranking went.
#[derive(Debug, Clone, Copy, Default)]
pub struct RankTimings {
    pub candidates: usize,
    pub collect: std::time::Duration,
    pub cosine: std::time::Duration,
    pub lexical: std::time::Duration,
    pub select: std::time::Duration,
    /// The result came from the view's memo of identical rankings.
    pub memo: bool,
}

/// The query's embedding input: framed as an implementation-location
/// search (when `framing` is on and the framing fits the cap), otherwise
/// the query itself, capped.
pub fn embedding_input(query: &str, max_chars: usize, framing: bool) -> String {
    if framing {
        return crate::chunking::query_embedding_input(query, max_chars);
    }
    let max_chars = if max_chars == 0 { crate::chunking::DEFAULT_MAX_INPUT_CHARS } else { max_chars };
    match query.char_indices().nth(max_chars) {
        Some((end, _)) => query[..end].to_string(),
        None => query.to_string(),
    }
}

/// Ranks the candidates and returns at most `limit` hits at or above
/// `min_score`, best first.
pub fn rank(query: &Query<'_>) -> Vec<Hit> {
    rank_timed(query).0
}

/// [`rank`], remembering the result in the live view: the same query
/// (text, vector, filters, threshold, limit) over the same candidate files
/// of the same immutable view always ranks the same, so a repeat returns
/// the remembered hits instead of scanning again.
pub fn rank_memoized(query: &Query<'_>) -> (Arc<Vec<Hit>>, RankTimings) {
    let key = memo_key(query);
    if let Some(hits) = query.live.memo_get(key) {
        return (hits, RankTimings { memo: true, ..RankTimings::default() });
    }
    let (hits, timings) = rank_timed(query);
    let hits = Arc::new(hits);
    query.live.memo_put(key, Arc::clone(&hits));
    (hits, timings)
}

fn memo_key(query: &Query<'_>) -> u128 {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(query.text.as_bytes());
    hasher.update([0, u8::from(query.no_tests)]);
    hasher.update(query.min_score.to_bits().to_le_bytes());
    hasher.update((query.limit as u64).to_le_bytes());
    hasher.update(query.fusion.lexical_weight.to_bits().to_le_bytes());
    hasher.update([u8::from(query.fusion.normalize_cosine)]);
    for value in query.vector {
        hasher.update(value.to_bits().to_le_bytes());
    }
    for path in query.candidate_paths {
        hasher.update(path.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    u128::from_le_bytes(key)
}

fn rank_timed(query: &Query<'_>) -> (Vec<Hit>, RankTimings) {
    let started = std::time::Instant::now();
    let mut timings = RankTimings::default();
    let live = query.live;
    // Candidates in byte-wise (path, line) order, so that after rank and
    // range size the item index itself breaks ties.
    let mut paths: Vec<&String> =
        query.candidate_paths.iter().filter(|path| !(query.no_tests && is_test_path(path))).collect();
    paths.sort_unstable();
    let mut items: Vec<Item<'_>> = Vec::new();
    for path in paths {
        let Some(entry) = live.paths.get(path) else { continue };
        let first = items.len();
        for &record in &entry.records {
            let (Some(link), Some(norm), Some(vector)) = (&live.links[record], live.norms[record], live.vector(record))
            else {
                continue;
            };
            items.push(Item { record, link, vector, norm });
        }
        items[first..].sort_by_key(|item| {
            let record = live.snapshot.records.get(item.record);
            (record.start_line(), record.end_line())
        });
    }
    timings.candidates = items.len();
    timings.collect = started.elapsed();
    let phase = std::time::Instant::now();
    let query_norm = ranking::norm(query.vector);
    let dot = ranking::dot_function();
    // Visit the vectors in payload order, so the scan streams through the
    // mapping instead of jumping between pages.
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    order.sort_unstable_by_key(|&index| items[index as usize].vector.as_ptr() as usize);
    let mut cosines = vec![0f64; items.len()];
    parallel_zip(&order, &mut cosines, |order, cosines| {
        for (&index, cosine) in order.iter().zip(cosines.iter_mut()) {
            *cosine = item_cosine(&items[index as usize], query.vector, query_norm, dot);
        }
    });
    // One rank per candidate, nothing more: the full scores are built
    // again for the few that are returned.
    let mut ranks = vec![0f64; items.len()];
    for (&index, &cosine) in order.iter().zip(&cosines) {
        ranks[index as usize] = ranking::relatedness(cosine);
    }
    drop((order, cosines));

    timings.cosine = phase.elapsed();
    let phase = std::time::Instant::now();
    let terms = ranking::query_terms(query.text);
    let hashes: Vec<u64> = terms.iter().map(|(_, hash)| *hash).collect();
    let lexical = if !hashes.is_empty() && !items.is_empty() {
        warm_terms(&items);
        let inputs = lexical_inputs(&items, &hashes);
        ranking::LexicalStats::new(&inputs, hashes.len()).map(|stats| (inputs, stats))
    } else {
        None
    };
    // The rank of candidate `index` whose vector relatedness `ranks` holds,
    // and its full scores.
    let scores_of = |index: usize, cosine: f64| {
        let relatedness = ranking::relatedness(cosine);
        let mut scores = Scores { cosine, vector_relatedness: relatedness, rank: relatedness, ..Scores::default() };
        if let Some((inputs, stats)) = &lexical {
            stats.apply(inputs, index, &mut scores);
        }
        scores
    };
    let range = query.fusion.range(ranks.iter().copied());
    for (index, rank) in ranks.iter_mut().enumerate() {
        let mut lexical_score = Scores::default();
        if let Some((inputs, stats)) = &lexical {
            stats.apply(inputs, index, &mut lexical_score);
        }
        *rank = query.fusion.rank(*rank, lexical_score.lexical, range);
    }

    timings.lexical = phase.elapsed();
    let phase = std::time::Instant::now();
    // Line span of a candidate: shorter ranges win ties.
    let span = |index: usize| {
        let record = live.snapshot.records.get(items[index].record);
        record.end_line() - record.start_line()
    };
    let mut survivors: Vec<u32> =
        (0..ranks.len() as u32).filter(|&index| ranks[index as usize] >= query.min_score).collect();
    let order = |a: &u32, b: &u32| {
        let (a, b) = (*a as usize, *b as usize);
        ranks[b]
            .partial_cmp(&ranks[a])
            .unwrap_or(Ordering::Equal)
            .then_with(|| span(a).cmp(&span(b)))
            .then_with(|| a.cmp(&b))
    };
    if survivors.len() > query.limit {
        survivors.select_nth_unstable_by(query.limit, order);
        survivors.truncate(query.limit);
    }
    survivors.sort_by(order);
    timings.select = phase.elapsed();
    let hits = survivors
        .into_iter()
        .map(|index| {
            let index = index as usize;
            let item = &items[index];
            let mut scores = scores_of(index, item_cosine(item, query.vector, query_norm, dot));
            scores.rank = ranks[index];
            let content = &item.link.content;
            let chunk = &content.chunks[item.link.chunk as usize];
            let record = live.snapshot.records.get(item.record);
            Hit {
                path: content.path.clone(),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                symbol: chunk.symbol.clone(),
                scores,
                excerpt: if chunk.path_only {
                    String::new()
                } else {
                    excerpt(content.chunk_body(chunk), chunk.start_line)
                },
                chunk_id: record.chunk_id(),
            }
        })
        .collect();
    (hits, timings)
}

/// The cosine between the query and `item`'s vector (0 for an empty one
/// or a dimension mismatch).
fn item_cosine(item: &Item<'_>, query: &[f32], query_norm: f64, dot: fn(&[f32], &[f32]) -> f64) -> f64 {
    if query_norm == 0.0 || item.norm == 0.0 || query.len() != item.vector.len() {
        0.0
    } else {
        dot(query, item.vector) / (query_norm * item.norm)
    }
}

/// Term counts, lengths and field matches of every item, computed on
/// several threads when there are many.
fn lexical_inputs(items: &[Item<'_>], hashes: &[u64]) -> LexicalInputs {
    // Each part fills its own candidates of one shared set of inputs.
    let fill = |items: &[Item<'_>], mut inputs: ranking::LexicalPart<'_>| {
        let mut slot_of_chunk: Vec<usize> = Vec::new();
        let mut start = 0;
        // Items come grouped by file: look each query term up once per
        // file and spread its per-chunk counts over that file's items.
        while start < items.len() {
            let content = &items[start].link.content;
            let mut end = start + 1;
            while end < items.len() && Arc::ptr_eq(&items[end].link.content, content) {
                end += 1;
            }
            let file_terms = content.terms();
            let path_matches = hashes.iter().filter(|hash| file_terms.path_has(**hash)).count();
            slot_of_chunk.clear();
            slot_of_chunk.resize(content.chunks.len(), usize::MAX);
            for (slot, item) in (start..end).zip(&items[start..end]) {
                let chunk = item.link.chunk as usize;
                let length = file_terms.chunk_lengths.get(chunk).copied().unwrap_or(0);
                inputs.set_candidate(slot, length, path_matches, file_terms.symbol_length(chunk as u32));
                if let Some(chunk_slot) = slot_of_chunk.get_mut(chunk) {
                    *chunk_slot = slot;
                }
            }
            let slot = |chunk: u32| slot_of_chunk.get(chunk as usize).copied().filter(|slot| *slot != usize::MAX);
            for (term, hash) in hashes.iter().enumerate() {
                for (chunk, count) in file_terms.occurrences(*hash) {
                    if let Some(slot) = slot(chunk) {
                        inputs.set_count(slot, term, count);
                    }
                }
                for chunk in file_terms.symbol_occurrences(*hash) {
                    if let Some(slot) = slot(chunk) {
                        inputs.add_symbol_match(slot);
                    }
                }
            }
            start = end;
        }
    };
    let mut inputs = LexicalInputs::zeroed(items.len(), hashes.len());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    if items.len() < PARALLEL_THRESHOLD || threads == 1 {
        if let Some(part) = inputs.parts(items.len()).pop() {
            fill(items, part);
        }
        return inputs;
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (chunk, part) in items.chunks(per).zip(inputs.parts(per)) {
            let fill = &fill;
            scope.spawn(move || fill(chunk, part));
        }
    });
    inputs
}

/// Runs `fill` over matching halves of `items`/`scores` on two or more
/// threads when there are many.
fn parallel_zip<T: Sync, S: Send>(items: &[T], scores: &mut [S], fill: impl Fn(&[T], &mut [S]) + Sync) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    if items.len() < PARALLEL_THRESHOLD || threads == 1 {
        fill(items, scores);
        return;
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (item_part, score_part) in items.chunks(per).zip(scores.chunks_mut(per)) {
            let fill = &fill;
            scope.spawn(move || fill(item_part, score_part));
        }
    });
}

/// Computes missing term statistics on several threads at once.
fn warm_terms(items: &[Item<'_>]) {
    let mut pending: Vec<&Arc<crate::index::live::FileContent>> = Vec::new();
    let mut last: Option<*const crate::index::live::FileContent> = None;
    for item in items {
        let pointer = Arc::as_ptr(&item.link.content);
        if last != Some(pointer) {
            pending.push(&item.link.content);
            last = Some(pointer);
        }
    }
    pending.retain(|content| !content.has_terms());
    if pending.len() < 64 {
        return;
    }
    crate::index::live::compute_missing_terms(&pending, &|| false);
}

/// Numbered lines of a chunk: at most 40 lines and 12 KiB.
pub fn excerpt(body: &str, start_line: u32) -> String {
    if body.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for (index, line) in body.split('\n').take(MAX_EXCERPT_LINES).enumerate() {
        if out.len() >= MAX_EXCERPT_BYTES {
            break;
        }
        let rendered = format!("{}: {line}", start_line as usize + index);
        if out.len() + rendered.len() + 1 > MAX_EXCERPT_BYTES {
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&rendered);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_numbered_and_bounded() {
        assert_eq!(excerpt("a\nb", 7), "7: a\n8: b");
        assert_eq!(excerpt("", 1), "");
        let long: String = (0..100).map(|n| format!("line {n}\n")).collect();
        assert_eq!(excerpt(&long, 1).lines().count(), 40);
        let wide = format!("{}\n{}", "x".repeat(12_000), "y".repeat(1_000));
        assert_eq!(excerpt(&wide, 1).lines().count(), 1);
    }
}

#[cfg(test)]
mod ranking_tests {
    use super::*;
    use crate::chunking::{self, hex};
    use crate::index::bodies::{BodyWriter, body_ref};
    use crate::index::live::FileContent;
    use crate::index::store::{self, IndexRecord, Manifest, Publication, RecordToWrite, VectorData};
    use crate::source::discovery::FileStat;
    use std::collections::{HashMap, HashSet};

    const DIMENSIONS: usize = 8;

    fn vector_for(text: &str) -> Vec<f32> {
        let mut vector = vec![0.1f32; DIMENSIONS];
        for term in ranking::terms(text) {
            vector[(ranking::term_hash(&term) % DIMENSIONS as u64) as usize] += 1.0;
        }
        vector
    }

    /// A published index of `files` with links to their contents.
    fn index(files: &[(&str, &str)]) -> (tempfile::TempDir, LiveIndex) {
        let temp = tempfile::tempdir().unwrap();
        let meta = temp.path().join("meta");
        let dir = store::filesystem_index_dir(&meta, "/r", None);
        let mut writer = BodyWriter::new(temp.path()).unwrap();
        let mut pending = Vec::new();
        for (path, text) in files {
            let chunked = chunking::chunk_file(path, text.to_string(), 0);
            let (offset, len) = writer.append(&chunked.text).unwrap();
            pending.push((path.to_string(), chunked, offset, len));
        }
        let segment = writer.finish().unwrap();
        let mut contents = HashMap::new();
        let mut vectors = Vec::new();
        let mut records = Vec::new();
        for (path, chunked, offset, len) in pending {
            let stat = FileStat { size: 1, mtime_ns: 1, ctime_ns: 1, ino: 1, dev: 1 };
            let content = Arc::new(FileContent::new(
                path.clone(),
                stat,
                i128::MAX,
                0,
                chunked.chunks.clone(),
                body_ref(&segment, offset, len),
            ));
            for chunk in &chunked.chunks {
                vectors.push(vector_for(chunked.body(chunk)));
                records.push(IndexRecord {
                    chunk_id: format!("c{:06}", records.len() + 1),
                    path: path.clone(),
                    source: "filesystem".into(),
                    start_line: i64::from(chunk.start_line),
                    end_line: i64::from(chunk.end_line),
                    content_hash: hex(&chunking::content_hash(&path, "filesystem", chunk, chunked.body(chunk))),
                    embedding_input_hash: hex(&chunk.input_hash),
                    embedding_model: "m".into(),
                    dimensions: DIMENSIONS as i64,
                    ..IndexRecord::default()
                });
            }
            contents.insert(path, content);
        }
        let to_write = records
            .into_iter()
            .zip(&vectors)
            .map(|(record, vector)| RecordToWrite { record, vector: VectorData::Values(vector), stored: None })
            .collect();
        let manifest =
            Manifest { mode: "filesystem".into(), created_at: "2026-01-02T03:04:05Z".into(), ..Manifest::default() };
        let snapshot = store::publish(
            Publication {
                metadata_dir: &meta,
                index_dir: &dir,
                manifest,
                records: to_write,
                force_new: false,
                crash_at: None,
            },
            &|| false,
        )
        .unwrap();
        let live = LiveIndex::build(Arc::new(snapshot), "m", DIMENSIONS, contents, HashMap::new(), None);
        (temp, live)
    }

    /// The formula computed directly from the bodies.
    fn reference(live: &LiveIndex, query_text: &str, query_vector: &[f32]) -> Vec<(String, Scores)> {
        let terms: Vec<String> = {
            let mut seen = HashSet::new();
            let unique: Vec<String> =
                ranking::terms(query_text).into_iter().filter(|term| seen.insert(term.clone())).collect();
            let content: Vec<String> = unique.iter().filter(|term| !ranking::is_stopword(term)).cloned().collect();
            if content.is_empty() { unique } else { content }
        };
        let mut rows = Vec::new();
        for (index, record) in live.snapshot.records.to_index_records().iter().enumerate() {
            let link = live.links[index].as_ref().unwrap();
            let chunk = &link.content.chunks[link.chunk as usize];
            let body_terms = ranking::terms(link.content.chunk_body(chunk));
            let vector = live.vector(index).unwrap();
            let cosine = ranking::dot(query_vector, vector) / (ranking::norm(query_vector) * ranking::norm(vector));
            let symbol = chunk.symbol.as_ref().map(|s| s.name.clone()).unwrap_or_default();
            rows.push((
                record.path.clone(),
                record.start_line,
                cosine,
                body_terms,
                ranking::terms(&record.path),
                ranking::terms(&symbol),
                compound_parts(&symbol),
            ));
        }
        let docs = rows.len() as f64;
        let average = rows.iter().map(|row| row.3.len() as f64).sum::<f64>() / docs;
        let df: Vec<f64> =
            terms.iter().map(|term| rows.iter().filter(|row| row.3.contains(term)).count() as f64).collect();
        rows.into_iter()
            .map(|(path, start, cosine, body, path_terms, symbol_terms, parts)| {
                let relatedness = ranking::relatedness(cosine);
                let mut bm25 = 0.0;
                for (term, df) in terms.iter().zip(&df) {
                    let freq = body.iter().filter(|t| *t == term).count() as f64;
                    if freq > 0.0 {
                        let idf = (1.0 + (docs - df + 0.5) / (df + 0.5)).ln();
                        bm25 += idf * (freq * 2.2 / (freq + 1.2 * (0.25 + 0.75 * body.len() as f64 / average)));
                    }
                }
                // s / (s + n/2) for n query terms.
                let text = bm25 / (bm25 + terms.len() as f64 / 2.0);
                let path_score = terms.iter().filter(|t| path_terms.contains(t)).count() as f64 / terms.len() as f64;
                // The cosine of the query's and the name's term sets; a
                // start or end of a run-together name word matches too.
                let name_terms: HashSet<&String> = symbol_terms.iter().collect();
                let matches = terms.iter().filter(|t| name_terms.contains(t) || parts.contains(*t)).count() as f64;
                let symbol = if name_terms.is_empty() {
                    0.0
                } else {
                    (matches / (terms.len() as f64 * name_terms.len() as f64).sqrt()).min(1.0)
                };
                let lexical = (text * 0.45 + path_score * 0.30 + symbol * 0.35).min(1.0);
                let rank = relatedness + (1.0 - relatedness) * lexical;
                let scores =
                    Scores { cosine, vector_relatedness: relatedness, text, path: path_score, symbol, lexical, rank };
                (format!("{path}:{start}"), scores)
            })
            .collect()
    }

    /// The stemmed starts and ends of `symbol`'s words of at least 3
    /// characters with at least 4 more beside them.
    fn compound_parts(symbol: &str) -> HashSet<String> {
        let mut parts = HashSet::new();
        for word in ranking::words(symbol) {
            let chars: Vec<char> = word.chars().collect();
            for len in 3..=chars.len().saturating_sub(4) {
                let start: String = chars[..len].iter().collect();
                let end: String = chars[chars.len() - len..].iter().collect();
                parts.extend(ranking::terms(&start));
                parts.extend(ranking::terms(&end));
            }
        }
        parts
    }

    #[test]
    fn the_query_input_is_framed_unless_framing_is_off() {
        assert_eq!(embedding_input("where is x", 0, true), "where is the code for where is x");
        assert_eq!(embedding_input("where is x", 0, false), "where is x");
        assert_eq!(embedding_input("héllo world", 4, false), "héll");
    }

    #[test]
    fn ranking_matches_the_formula_computed_directly() {
        let (_temp, live) = index(&[
            (
                "search/parse.go",
                "package search\n\n// ParseFlags parses search flags.\nfunc ParseFlags(args []string) []string {\n\treturn args\n}\n\nfunc rankResults() {}\n",
            ),
            ("docs/flags.md", "# Flags\n\nSearch flags and parsing rules; flags flags.\n"),
            ("main.go", "package main\n\nfunc main() {}\n"),
            ("tools.py", "def searchindex(root):\n    return root\n"),
        ]);
        // `the` is a function word and `function` names a symbol kind, not
        // a name: neither counts.
        let query_text = "parse the search flags function";
        let query_vector = vector_for(query_text);
        let candidates: Vec<String> =
            vec!["search/parse.go".into(), "docs/flags.md".into(), "main.go".into(), "tools.py".into()];
        let hits = rank(&Query {
            live: &live,
            candidate_paths: &candidates,
            no_tests: false,
            text: query_text,
            vector: &query_vector,
            min_score: 1e-9,
            limit: 100,
            fusion: ranking::Fusion::default(),
        });
        let expected = reference(&live, query_text, &query_vector);
        assert_eq!(hits.len(), expected.len());
        for hit in &hits {
            let key = format!("{}:{}", hit.path, hit.start_line);
            let (_, want) = expected.iter().find(|(name, _)| *name == key).unwrap();
            for (got, want, name) in [
                (hit.scores.cosine, want.cosine, "cosine"),
                (hit.scores.text, want.text, "text"),
                (hit.scores.path, want.path, "path"),
                (hit.scores.symbol, want.symbol, "symbol"),
                (hit.scores.lexical, want.lexical, "lexical"),
                (hit.scores.rank, want.rank, "rank"),
            ] {
                assert!((got - want).abs() < 1e-6, "{key} {name}: {got} != {want}");
            }
        }
        // Best first; the symbol match counts.
        assert!(hits.windows(2).all(|pair| pair[0].scores.rank >= pair[1].scores.rank));
        let parse = hits.iter().find(|hit| hit.symbol.as_ref().is_some_and(|s| s.name == "ParseFlags")).unwrap();
        assert!(parse.scores.symbol > 0.0);
        // `search` is the start of the run-together `searchindex`.
        let index = hits.iter().find(|hit| hit.symbol.as_ref().is_some_and(|s| s.name == "searchindex")).unwrap();
        assert!(index.scores.symbol > 0.0);
        // min_score and limit cut the list.
        let top = rank(&Query {
            live: &live,
            candidate_paths: &candidates,
            no_tests: false,
            text: query_text,
            vector: &query_vector,
            min_score: hits[1].scores.rank,
            limit: 1,
            fusion: ranking::Fusion::default(),
        });
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].path, hits[0].path);

        // A repeated ranking over the same view comes from the memo and is
        // identical; any change of input is a different ranking.
        let query = Query {
            live: &live,
            candidate_paths: &candidates,
            no_tests: false,
            text: query_text,
            vector: &query_vector,
            min_score: 1e-9,
            limit: 100,
            fusion: ranking::Fusion::default(),
        };
        let (first, timings) = rank_memoized(&query);
        assert!(!timings.memo);
        let (again, timings) = rank_memoized(&query);
        assert!(timings.memo);
        assert_eq!(format!("{first:?}"), format!("{again:?}"));
        assert_eq!(format!("{:?}", first.as_ref()), format!("{hits:?}"));
        let (_, timings) = rank_memoized(&Query { limit: 2, ..query });
        assert!(!timings.memo);
    }
}

//! Scoring one query against a refreshed [`LiveIndex`]: the candidates are
//! the records of the candidate files (minus test paths with
//! `--no-tests`), their vectors read in place from the mapped payload,
//! their bodies from the snapshot. See [`super::ranking`] for the formula.

use super::chunking::Symbol;
use super::live::{Link, LiveIndex};
use super::paths::is_test_path;
use super::ranking::{self, LexicalInput, Scores};
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
}

struct Item<'a> {
    record: usize,
    link: &'a Link,
    vector: &'a [f32],
    norm: f64,
}

/// Ranks the candidates and returns at most `limit` hits at or above
/// `min_score`, best first.
pub fn rank(query: &Query<'_>) -> Vec<Hit> {
    let live = query.live;
    let mut items: Vec<Item<'_>> = Vec::new();
    for path in query.candidate_paths {
        if query.no_tests && is_test_path(path) {
            continue;
        }
        let Some(entry) = live.paths.get(path) else { continue };
        for &record in &entry.records {
            let (Some(link), Some(norm), Some(vector)) = (&live.links[record], live.norms[record], live.vector(record))
            else {
                continue;
            };
            items.push(Item { record, link, vector, norm });
        }
    }
    let query_norm = ranking::norm(query.vector);
    let mut scores = vec![Scores::default(); items.len()];
    let fill = |items: &[Item<'_>], scores: &mut [Scores]| {
        for (item, score) in items.iter().zip(scores.iter_mut()) {
            let cosine = ranking::cosine(query.vector, query_norm, item.vector, item.norm);
            let relatedness = ranking::relatedness(cosine);
            *score = Scores { cosine, vector_relatedness: relatedness, rank: relatedness, ..Scores::default() };
        }
    };
    parallel_zip(&items, &mut scores, fill);

    let terms = ranking::query_terms(query.text);
    if !terms.is_empty() && !items.is_empty() {
        warm_terms(&items);
        let inputs: Vec<LexicalInput> = items
            .iter()
            .map(|item| {
                let file_terms = item.link.content.terms();
                let chunk = item.link.chunk;
                LexicalInput {
                    counts: terms.iter().map(|(_, hash)| file_terms.count(*hash, chunk)).collect(),
                    length: file_terms.chunk_lengths.get(chunk as usize).copied().unwrap_or(0),
                    path_matches: terms.iter().filter(|(_, hash)| file_terms.path_has(*hash)).count(),
                    symbol_matches: terms.iter().filter(|(_, hash)| file_terms.symbol_has(chunk, *hash)).count(),
                }
            })
            .collect();
        ranking::apply_lexical(&mut scores, &inputs, terms.len());
    }

    let mut survivors: Vec<(usize, Scores)> =
        scores.into_iter().enumerate().filter(|(_, score)| score.rank >= query.min_score).collect();
    let order = |a: &(usize, Scores), b: &(usize, Scores)| compare(live, &items[a.0], a.1, &items[b.0], b.1);
    if survivors.len() > query.limit {
        survivors.select_nth_unstable_by(query.limit, order);
        survivors.truncate(query.limit);
    }
    survivors.sort_by(order);
    survivors
        .into_iter()
        .map(|(index, scores)| {
            let item = &items[index];
            let content = &item.link.content;
            let chunk = &content.chunks[item.link.chunk as usize];
            let record = &live.snapshot.records[item.record];
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
                chunk_id: record.chunk_id.clone(),
            }
        })
        .collect()
}

fn compare(live: &LiveIndex, a: &Item<'_>, a_scores: Scores, b: &Item<'_>, b_scores: Scores) -> Ordering {
    let a_record = &live.snapshot.records[a.record];
    let b_record = &live.snapshot.records[b.record];
    b_scores
        .rank
        .partial_cmp(&a_scores.rank)
        .unwrap_or(Ordering::Equal)
        .then_with(|| (a_record.end_line - a_record.start_line).cmp(&(b_record.end_line - b_record.start_line)))
        .then_with(|| a_record.path.cmp(&b_record.path))
        .then_with(|| a_record.start_line.cmp(&b_record.start_line))
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
    let mut pending: Vec<&Arc<super::live::FileContent>> = Vec::new();
    let mut last: Option<*const super::live::FileContent> = None;
    for item in items {
        let pointer = Arc::as_ptr(&item.link.content);
        if last != Some(pointer) {
            pending.push(&item.link.content);
            last = Some(pointer);
        }
    }
    if pending.len() < 64 {
        return;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let per = pending.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for part in pending.chunks(per) {
            scope.spawn(move || {
                for content in part {
                    content.terms();
                }
            });
        }
    });
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

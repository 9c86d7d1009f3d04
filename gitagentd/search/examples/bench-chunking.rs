//! Cold chunking throughput on one core: reads every text file under the
//! given folders (at most 1 MiB, UTF-8, `.git` and `node_modules` left
//! out), then cuts each into search chunks on this one thread, and prints
//! MB/s per language and overall beside the time the reads took. Then,
//! per language with a grammar, the outline's parse alone. Last, the
//! hashing of every chunk body's terms (the search's term statistics,
//! `ranking::for_each_term_hash`) with each thread's word memo and without
//! it (`for_each_term_hash_direct`), alternating file by file.
//!
//! `cargo run --release -p gitagent-search --features bench --example bench-chunking -- <dir>...`

use gitagent_search::chunking;
use gitagent_search::rank::ranking;
use gitagent_search::syntax;

/// The daemon's allocator (`gitagentd/src/main.rs`), so the figure is the
/// daemon's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn main() {
    let roots: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if roots.is_empty() {
        eprintln!("usage: bench-chunking <dir>...");
        std::process::exit(2);
    }
    let mut paths = Vec::new();
    for root in &roots {
        walk(root, &mut paths);
    }
    paths.sort();
    let read_started = Instant::now();
    let mut files: Vec<(String, String)> = Vec::new();
    for path in &paths {
        if let Ok(text) = std::fs::read_to_string(path) {
            files.push((path.display().to_string(), text));
        }
    }
    let read = read_started.elapsed();

    let mut by_language: BTreeMap<String, (usize, usize, usize, Duration)> = BTreeMap::new();
    let mut bytes = 0;
    let mut chunks = 0;
    let parses = time_parses(&files);
    let mut chunked_files = Vec::with_capacity(files.len());
    // The total is the chunking alone: the outlines above are timed on
    // their own.
    let started = Instant::now();
    for (path, text) in files {
        let language = chunking::language_for_path(&path).unwrap_or("other").to_string();
        let size = text.len();
        let one = Instant::now();
        let chunked = chunking::chunk_file(&path, text, 0);
        let took = one.elapsed();
        let entry = by_language.entry(language).or_default();
        entry.0 += 1;
        entry.1 += size;
        entry.2 += chunked.chunks.len();
        entry.3 += took;
        bytes += size;
        chunks += chunked.chunks.len();
        chunked_files.push(chunked);
    }
    let elapsed = started.elapsed();
    println!("chunker {}", chunking::chunker_version());
    println!("{:<12} {:>6} {:>9} {:>8} {:>9}", "language", "files", "MB", "chunks", "MB/s");
    for (language, (count, size, pieces, took)) in &by_language {
        println!(
            "{:<12} {:>6} {:>9.2} {:>8} {:>9.1}",
            language,
            count,
            *size as f64 / 1e6,
            pieces,
            *size as f64 / 1e6 / took.as_secs_f64().max(1e-9)
        );
    }
    println!(
        "total: {} files, {:.2} MB, {} chunks, chunked in {:.3} s = {:.1} MB/s on one core; read in {:.3} s ({:.1} MB/s)",
        by_language.values().map(|entry| entry.0).sum::<usize>(),
        bytes as f64 / 1e6,
        chunks,
        elapsed.as_secs_f64(),
        bytes as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9),
        read.as_secs_f64(),
        bytes as f64 / 1e6 / read.as_secs_f64().max(1e-9),
    );
    println!();
    println!("outline parse alone, one core");
    println!("{:<12} {:>6} {:>9} {:>9} {:>9}", "language", "files", "MB", "outlined", "MB/s");
    for (language, entry) in &parses {
        println!(
            "{:<12} {:>6} {:>9.2} {:>9} {:>9.1}",
            language,
            entry.files,
            entry.bytes as f64 / 1e6,
            entry.outlined,
            entry.bytes as f64 / 1e6 / entry.took.as_secs_f64().max(1e-9),
        );
    }
    println!();
    compare_term_hashing(&chunked_files);
}

/// Times the term hashing of every chunk body, memoized and direct,
/// alternating file by file so that both see the same machine load, and
/// checks that both give the same hashes.
fn compare_term_hashing(files: &[chunking::ChunkedFile]) {
    let (mut memoized, mut direct) = (Duration::ZERO, Duration::ZERO);
    let (mut memoized_sum, mut direct_sum, mut terms, mut bytes) = (0u64, 0u64, 0usize, 0usize);
    for file in files {
        let started = Instant::now();
        for chunk in &file.chunks {
            ranking::for_each_term_hash(file.body(chunk), |hash| memoized_sum = memoized_sum.wrapping_add(hash));
        }
        memoized += started.elapsed();
        let started = Instant::now();
        for chunk in &file.chunks {
            ranking::for_each_term_hash_direct(file.body(chunk), |hash| {
                direct_sum = direct_sum.wrapping_add(hash);
                terms += 1;
            });
        }
        direct += started.elapsed();
        bytes += file.chunks.iter().map(|chunk| file.body(chunk).len()).sum::<usize>();
    }
    assert_eq!(memoized_sum, direct_sum, "the word memo changed the term hashes");
    let rate = |took: Duration| bytes as f64 / 1e6 / took.as_secs_f64().max(1e-9);
    println!(
        "body term hashing, one core: {terms} terms in {:.1} MB of chunk bodies: with the word memo {:.3} s ({:.1} MB/s), stemming every word {:.3} s ({:.1} MB/s), {:.2}x",
        bytes as f64 / 1e6,
        memoized.as_secs_f64(),
        rate(memoized),
        direct.as_secs_f64(),
        rate(direct),
        direct.as_secs_f64() / memoized.as_secs_f64().max(1e-9),
    );
}

#[derive(Default)]
struct Parses {
    files: usize,
    bytes: usize,
    /// Files with an outline (the others stay line windows).
    outlined: usize,
    took: Duration,
}

/// Each file with a grammar outlined, timed per language.
fn time_parses(files: &[(String, String)]) -> BTreeMap<String, Parses> {
    let mut by_language: BTreeMap<String, Parses> = BTreeMap::new();
    for (path, text) in files {
        let Some(language) = syntax::language_label(path) else { continue };
        let text = chunking::normalize(text.clone());
        let started = Instant::now();
        let outline = syntax::outline(path, &text);
        let took = started.elapsed();
        let entry = by_language.entry(language.to_string()).or_default();
        entry.files += 1;
        entry.bytes += text.len();
        entry.outlined += usize::from(outline.is_some());
        entry.took += took;
    }
    by_language
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == ".git" || name == "node_modules" {
            continue;
        }
        let Ok(file_type) = entry.file_type() else { continue };
        if file_type.is_dir() {
            walk(&entry.path(), out);
        } else if file_type.is_file() && entry.metadata().is_ok_and(|metadata| metadata.len() <= 1 << 20) {
            out.push(entry.path());
        }
    }
}

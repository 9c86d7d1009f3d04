//! Benchmark: the redactor's precision and speed over source trees.
//!
//! For each folder named on the command line, every UTF-8 text file (no
//! `.git`, `target` or `node_modules`; at most 4 MiB) is redacted as that
//! file (its repository-relative path is the origin, as for a tool read
//! or a search chunk). The benchmark prints, per tree, the files, lines
//! and bytes scanned, the redactions per 10,000 lines, the scan time and
//! rate, and every finding (rule, path, line, masked value: its first
//! four characters and its length), for review.
//!
//!     cargo build --release --bins --features git-agent-tests/bench
//!     target/release/bench-redact <dir>...

use gitagent_redact::{Origin, redact};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MAX_FILE: u64 = 4 << 20;

fn main() {
    let dirs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        eprintln!("usage: bench-redact <dir>...");
        std::process::exit(2);
    }
    let started = Instant::now();
    let warm = redact("warm up", Origin::NONE, None);
    drop(warm);
    println!("rule set compiled in {:.1} ms ({} rules)", ms(started.elapsed()), gitagent_redact::rule_count());
    for dir in dirs {
        let mut files = Vec::new();
        walk(&dir, &mut files);
        files.sort();
        let (mut lines, mut bytes, mut scanned) = (0usize, 0usize, 0usize);
        let mut spent = Duration::ZERO;
        let mut findings = Vec::new();
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else { continue };
            if text.as_bytes()[..text.len().min(8000)].contains(&0) {
                continue;
            }
            let relative = file.strip_prefix(&dir).unwrap_or(file).to_string_lossy().into_owned();
            scanned += 1;
            lines += text.lines().count();
            bytes += text.len();
            let start = Instant::now();
            let redacted = redact(&text, Origin::file(&relative), None);
            spent += start.elapsed();
            findings.extend(redacted.findings);
        }
        let per_10k = findings.len() as f64 * 10_000.0 / lines.max(1) as f64;
        println!(
            "{}: {scanned} files, {lines} lines, {:.1} MiB; {} redactions ({per_10k:.2} per 10,000 lines); {:.1} ms, {:.1} MiB/s",
            dir.display(),
            bytes as f64 / 1048576.0,
            findings.len(),
            ms(spent),
            bytes as f64 / 1048576.0 / spent.as_secs_f64().max(1e-9)
        );
        for finding in &findings {
            println!(
                "  {}\t{}:{}\t{}",
                finding.rule,
                finding.path.as_deref().unwrap_or("-"),
                finding.line,
                finding.masked
            );
        }
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if !matches!(name.to_str(), Some(".git" | "target" | "node_modules")) {
                walk(&path, files);
            }
        } else if kind.is_file() && entry.metadata().is_ok_and(|meta| meta.len() <= MAX_FILE) {
            files.push(path);
        }
    }
}

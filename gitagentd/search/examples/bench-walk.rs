//! Discovery alone: the filesystem search's walk
//! (`source::discovery::walk`: every selection rule, a stat of each file,
//! no reading) over the mixed tree of `bench-search cold` (generated in a
//! temporary folder, or in `dir` when it does not exist yet) or over
//! `dir`, on a warm page cache. Each round is a
//! fresh walk (no rules loaded); prints every round's wall time, the
//! median, the files found and a digest of the walk (files, skips and
//! counts in order), so two builds can be checked to walk alike.
//!
//! `cargo run --release -p gitagent-search --features bench --example bench-walk -- [dir] [rounds]`

use gitagent_search::source::discovery::{IgnoreRules, walk};

/// The daemon's allocator (`gitagentd/src/main.rs`), so the figure is the
/// daemon's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, rounds) = match args.as_slice() {
        [] => (None, 10),
        [one] => match one.parse::<usize>() {
            Ok(rounds) => (None, rounds),
            Err(_) => (Some(PathBuf::from(one)), 10),
        },
        [dir, rounds] => (Some(PathBuf::from(dir)), rounds.parse().unwrap_or_else(|_| usage())),
        _ => usage(),
    };
    if rounds == 0 {
        usage();
    }
    let generated = tempfile::tempdir().expect("create a temporary folder");
    let root = match dir {
        Some(dir) if dir.exists() => dir,
        Some(dir) => generate(dir),
        None => generate(generated.path().join("tree")),
    };
    let root = std::fs::canonicalize(&root).unwrap_or_else(|error| panic!("{}: {error}", root.display()));
    let mut times = Vec::with_capacity(rounds);
    let mut first = None;
    for round in 0..rounds {
        let started = Instant::now();
        let found = walk(&root, &[], &mut IgnoreRules::new(&root));
        let elapsed = started.elapsed();
        assert!(!found.files.is_empty(), "the walk of {} found no file", root.display());
        assert!(elapsed > Duration::ZERO, "the walk took no measurable time");
        let mut digest = DefaultHasher::new();
        for file in &found.files {
            file.path.hash(&mut digest);
        }
        for skip in &found.skips {
            (&skip.path, skip.reason.as_str()).hash(&mut digest);
        }
        format!("{:?}", found.skipped).hash(&mut digest);
        let summary = (found.files.len(), found.skips.len(), digest.finish());
        println!(
            "round {}: {:.2} ms, {} files, {} skips, digest {:016x}",
            round + 1,
            elapsed.as_secs_f64() * 1000.0,
            summary.0,
            summary.1,
            summary.2
        );
        assert!(first.is_none_or(|first| first == summary), "two walks of the same tree differ");
        first = Some(summary);
        times.push(elapsed);
    }
    times.sort();
    println!(
        "walk of {}: median {:.2} ms over {rounds} rounds",
        root.display(),
        times[rounds / 2].as_secs_f64() * 1000.0
    );
}

fn generate(root: PathBuf) -> PathBuf {
    let (files, bytes) = git_agent_tests::corpus::generate_tree(&root);
    println!("generated the mixed tree in {}: {files} files, {:.1} MB", root.display(), bytes as f64 / 1e6);
    root
}

fn usage() -> ! {
    eprintln!("usage: bench-walk [dir] [rounds]");
    std::process::exit(2);
}

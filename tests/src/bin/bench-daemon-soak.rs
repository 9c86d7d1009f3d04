//! Soak check: a long-lived daemon's state stays bounded. Runs 200
//! searches over 100 distinct throw-away repositories (each indexed on
//! first use, against a fake embeddings endpoint) and 50 finished
//! `review --dry-run` tasks, then compares the idle daemon's open
//! descriptors (`/proc/<pid>/fd`) and resident memory (`VmRSS`) with their
//! idle level after the first ten searches. Exits non-zero when either
//! grew by more than 10%.
//!
//!     cargo build --release --bins && target/release/bench-daemon-soak

use git_agent_tests::soak::{Footprint, Workload};
use std::process::ExitCode;
use std::time::Instant;

const REPOSITORIES: usize = 100;
const SEARCHES: usize = 200;
/// A review after every fourth search: 50 in all.
const REVIEW_EVERY: usize = 4;
const BASELINE_AFTER: usize = 10;
const BOUND_PERCENT: u64 = 10;

fn main() -> ExitCode {
    let started = Instant::now();
    let workload = Workload::new(REPOSITORIES);
    println!("{REPOSITORIES} repositories created in {:.1} s", started.elapsed().as_secs_f64());
    let started = Instant::now();
    let mut baseline = None;
    let mut reviews = 0;
    for search in 0..SEARCHES {
        let repo = search % workload.repositories();
        workload.search(repo);
        if search % REVIEW_EVERY == REVIEW_EVERY - 1 {
            workload.review(repo);
            reviews += 1;
        }
        if search + 1 == BASELINE_AFTER {
            let footprint = workload.settled_footprint();
            print_footprint(&format!("idle after the first {BASELINE_AFTER} searches ({reviews} reviews)"), &footprint);
            baseline = Some(footprint);
        }
    }
    println!("{SEARCHES} searches and {reviews} reviews in {:.1} s", started.elapsed().as_secs_f64());
    let baseline = baseline.expect("the baseline was taken");
    let last = workload.settled_footprint();
    print_footprint(&format!("idle after {SEARCHES} searches and {reviews} reviews"), &last);
    let (fds_ok, rss_ok) = last.within(&baseline, BOUND_PERCENT, 0);
    println!(
        "growth: descriptors {:+}, resident memory {:+.1}% (bound {BOUND_PERCENT}%)",
        last.open_fds as i64 - baseline.open_fds as i64,
        (last.resident_kib as f64 / baseline.resident_kib as f64 - 1.0) * 100.0
    );
    if fds_ok && rss_ok {
        println!("bounded: yes");
        ExitCode::SUCCESS
    } else {
        println!(
            "bounded: NO ({}{})",
            if fds_ok { "" } else { "open descriptors grew " },
            if rss_ok { "" } else { "resident memory grew" }
        );
        ExitCode::FAILURE
    }
}

fn print_footprint(label: &str, footprint: &Footprint) {
    println!(
        "{label}: open descriptors {}, VmRSS {:.1} MiB",
        footprint.open_fds,
        footprint.resident_kib as f64 / 1024.0
    );
}

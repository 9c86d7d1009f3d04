//! The long-lived daemon workload shared by the soak benchmark
//! (`bench-daemon-soak`) and its cheaper end-to-end test: searches over
//! many throw-away repositories and finished dry-run reviews, with the
//! daemon's open descriptors and resident memory read from `/proc`.

use crate::fake_embeddings::FakeEmbeddings;
use crate::{GitRepo, TestEnv, wait_until};
use std::time::{Duration, Instant};

/// A test environment wired to a fake embeddings endpoint.
pub struct Workload {
    pub env: TestEnv,
    _fake: FakeEmbeddings,
    repos: Vec<GitRepo>,
}

/// What the daemon holds at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// Entries of `/proc/<pid>/fd`.
    pub open_fds: usize,
    /// `VmRSS` in KiB.
    pub resident_kib: u64,
}

impl Footprint {
    /// Reads the footprint of process `pid`; panics when `/proc` does not
    /// describe it (a figure of 0 would pass any bound).
    pub fn of(pid: u32) -> Self {
        let open_fds = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("list the daemon's /proc fd folder").count();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read the daemon's /proc status");
        let resident_kib = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("the daemon's /proc status has a VmRSS line in kB");
        Self { open_fds, resident_kib }
    }

    /// Whether `self` is within `percent` of `baseline` (or at most
    /// `slack_fds` descriptors above it, for small counts).
    pub fn within(&self, baseline: &Footprint, percent: u64, slack_fds: usize) -> (bool, bool) {
        let fds_bound = (baseline.open_fds * (100 + percent as usize)).div_ceil(100).max(baseline.open_fds + slack_fds);
        let rss_bound = baseline.resident_kib * (100 + percent) / 100;
        (self.open_fds <= fds_bound, self.resident_kib <= rss_bound)
    }
}

impl Workload {
    /// `repositories` throw-away repositories, each with a committed file
    /// and an uncommitted change (so a review has a scope).
    pub fn new(repositories: usize) -> Self {
        let mut env = TestEnv::new();
        let fake = FakeEmbeddings::start();
        fake.configure(&mut env);
        env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "64");
        let repos = (0..repositories)
            .map(|n| {
                let repo = env.repo(&format!("soak{n:03}"));
                repo.write("README.md", &format!("# Soak {n}\n\nA throw-away repository.\n"));
                repo.write("src/lib.rs", &format!("/// Adds {n}.\npub fn add(x: u32) -> u32 {{\n    x + {n}\n}}\n"));
                repo.commit_all("initial");
                repo.write(
                    "src/lib.rs",
                    &format!("/// Adds {n} twice.\npub fn add(x: u32) -> u32 {{\n    x + {n} * 2\n}}\n"),
                );
                repo
            })
            .collect();
        Self { env, _fake: fake, repos }
    }

    pub fn repositories(&self) -> usize {
        self.repos.len()
    }

    /// One search in repository `n` (indexing it the first time).
    pub fn search(&self, n: usize) {
        let run = self.env.run_in(self.repos[n].path(), &["search", "--min-score", "0.01", "what does add return"]);
        assert_eq!(run.code, Some(0), "search in soak{n:03} failed:\n{}", run.stderr);
    }

    /// One `review --dry-run` in repository `n`, waited for to its end.
    pub fn review(&self, n: usize) {
        let path = self.repos[n].path();
        let launched = self.env.run_in(path, &["review", "--dry-run"]).success();
        let launched: serde_json::Value = serde_json::from_str(&launched).expect("the launch object");
        let id = launched["id"].as_str().expect("the task id").to_string();
        self.env.run_in(path, &["review", "--wait", &id]).success();
    }

    /// The serving daemon's pid.
    pub fn daemon_pid(&self) -> u32 {
        self.env.daemon_pid().expect("the daemon is running")
    }

    /// The daemon's footprint once it has settled idle ([`settled_footprint`]).
    pub fn settled_footprint(&self) -> Footprint {
        settled_footprint(self.daemon_pid())
    }
}

/// The footprint of daemon `pid` once it has been idle long enough to
/// return freed memory (it trims after 3 s idle): resident memory polled
/// until it holds still for a second after that. Call it when the last
/// command has ended.
pub fn settled_footprint(pid: u32) -> Footprint {
    const IDLE_TRIM: Duration = Duration::from_secs(4);
    const STEADY: Duration = Duration::from_secs(1);
    let idle_since = Instant::now();
    let mut last = Footprint::of(pid);
    let mut steady_since = Instant::now();
    let settled = wait_until(Duration::from_secs(30), || {
        let now = Footprint::of(pid);
        if now != last {
            last = now;
            steady_since = Instant::now();
        }
        idle_since.elapsed() >= IDLE_TRIM && steady_since.elapsed() >= STEADY
    });
    assert!(settled, "the daemon's footprint never held still");
    last
}

/// What each open descriptor of process `pid` refers to, for diagnostics.
pub fn open_files(pid: u32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    let mut files: Vec<String> = entries
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .map(|target| target.display().to_string())
        .collect();
    files.sort();
    files
}

/// Resident memory of process `pid` by what is mapped (a file's name, or
/// `[anon]`, `[heap]`, `[stack]`...), in KiB, largest first: where an idle
/// daemon's memory is (its own code, libraries, heap).
pub fn resident_by_mapping(pid: u32) -> Vec<(String, u64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).expect("read the daemon's /proc smaps");
    let mut totals: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    let mut current = String::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if first.contains('-') && first.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) && !first.ends_with(':') {
            // A mapping header: address perms offset dev inode [name].
            let name = fields.nth(4).map(str::to_string).unwrap_or_else(|| "[anon]".to_string());
            current =
                std::path::Path::new(&name).file_name().map_or(name.clone(), |n| n.to_string_lossy().into_owned());
        } else if first == "Rss:" {
            let kib: u64 = fields.next().and_then(|value| value.parse().ok()).unwrap_or(0);
            *totals.entry(current.clone()).or_default() += kib;
        }
    }
    let mut out: Vec<(String, u64)> = totals.into_iter().filter(|(_, kib)| *kib > 0).collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// [`resident_by_mapping`] as one line: the largest entries, then the rest.
pub fn resident_breakdown(pid: u32) -> String {
    let entries = resident_by_mapping(pid);
    let mut parts: Vec<String> = entries.iter().take(6).map(|(name, kib)| format!("{name} {kib} kB")).collect();
    let rest: u64 = entries.iter().skip(6).map(|(_, kib)| kib).sum();
    if rest > 0 {
        parts.push(format!("other {rest} kB"));
    }
    parts.join(", ")
}

/// The memory only process `pid` holds, from `/proc/<pid>/smaps_rollup`,
/// in KiB: its anonymous pages (heap, stacks) plus the file pages it
/// dirtied privately (relocated data, written copies). Clean file pages
/// (code, read-only data) are left out: they are shared with the page
/// cache and the kernel can take them back at any time, so `VmRSS`
/// counts them but they cost the machine nothing it cannot reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrivateMemory {
    /// `Anonymous`.
    pub anonymous_kib: u64,
    /// `Private_Dirty` less the anonymous pages it also counts.
    pub dirty_file_kib: u64,
    /// `Rss`, for comparison.
    pub resident_kib: u64,
}

impl PrivateMemory {
    /// Reads process `pid`'s rollup; panics when a field is missing (a
    /// figure of 0 would pass any bound).
    pub fn of(pid: u32) -> Self {
        // A binary just built or copied sits in the page cache as dirty
        // file pages until written back, which would count here as the
        // daemon's: write them back first.
        let _ = std::process::Command::new("sync").status();
        let rollup =
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).expect("read the daemon's /proc smaps_rollup");
        let field = |name: &str| -> u64 {
            rollup
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or_else(|| panic!("the daemon's smaps_rollup has no {name} line in kB"))
        };
        let anonymous_kib = field("Anonymous:");
        Self {
            anonymous_kib,
            dirty_file_kib: field("Private_Dirty:").saturating_sub(anonymous_kib),
            resident_kib: field("Rss:"),
        }
    }

    pub fn total_kib(&self) -> u64 {
        self.anonymous_kib + self.dirty_file_kib
    }
}

impl std::fmt::Display for PrivateMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "private {} kB ({:.1} MiB: anonymous {} kB, dirty file pages {} kB); VmRSS {} kB",
            self.total_kib(),
            self.total_kib() as f64 / 1024.0,
            self.anonymous_kib,
            self.dirty_file_kib,
            self.resident_kib
        )
    }
}

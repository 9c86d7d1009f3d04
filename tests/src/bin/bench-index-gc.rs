//! Benchmark of `git-agent index gc`: one metadata root whose shared vector
//! store holds 100,000 vectors, half of them referenced by a completed
//! index and half unreachable, written in the store's on-disk format. A
//! fresh daemon runs `git-agent index gc`; the benchmark prints the
//! command's wall time and the daemon's peak resident memory (`VmHWM`, the
//! process that does the collection), with the goal beside each.
//!
//!     cargo build --release --bins && target/release/bench-index-gc [dimensions]
//!
//! `dimensions` defaults to 256 (a 100 MB payload before, 50 MB after).

use git_agent_tests::TestEnv;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

const VECTORS: usize = 100_000;
const MODEL: &str = "bench-model";

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn main() {
    let dimensions: usize = match std::env::args().nth(1).map(|arg| arg.parse()) {
        None => 256,
        Some(Ok(dimensions)) if dimensions > 0 => dimensions,
        Some(_) => {
            eprintln!("usage: bench-index-gc [dimensions]");
            std::process::exit(2);
        }
    };
    let env = TestEnv::new();
    let root = env.home().join(".git-agent").join(hex(&Sha256::digest(b"/bench/project")));
    let started = Instant::now();
    write_store(&root, dimensions);
    eprintln!("store of {VECTORS} vectors x {dimensions} dimensions written in {:.1?}", started.elapsed());

    // A fresh daemon, so its peak resident memory is the collection's.
    env.run_in(&env.work(), &["project_id"]);
    let pid = env.daemon_pid().expect("the daemon answers");
    let before = vm_field(pid, "VmHWM:");
    let started = Instant::now();
    let run = env.run_in(&env.work(), &["index", "gc"]);
    let elapsed = started.elapsed();
    let summary = run.success();
    let peak = vm_field(pid, "VmHWM:");
    print!("{summary}");
    println!(
        "index gc: {VECTORS} vectors ({} unreachable), {dimensions} dimensions: wall {:.3} s (goal < 2 s), daemon VmHWM {:.1} MB (goal < 200 MB; {:.1} MB before the gc)",
        VECTORS / 2,
        elapsed.as_secs_f64(),
        peak as f64 / 1024.0,
        before as f64 / 1024.0,
    );
}

/// A `/proc/<pid>/status` field in kB.
fn vm_field(pid: u32, name: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read the daemon's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmHWM line")
}

/// The shared payload and catalog of `VECTORS` vectors, and one completed
/// index referencing every even one.
fn write_store(root: &Path, dimensions: usize) {
    let store = root.join("search/vector-store");
    let index = root.join("search/fs").join(&hex(&Sha256::digest(b"/bench/project"))[..16]);
    std::fs::create_dir_all(&store).unwrap();
    std::fs::create_dir_all(&index).unwrap();
    let mut payload = std::io::BufWriter::new(std::fs::File::create(store.join("vectors.f32")).unwrap());
    let mut catalog = String::from(r#"{"version":1,"generation":1,"entries":{"#);
    let mut records = String::from("[");
    let mut bytes = Vec::with_capacity(dimensions * 4);
    for i in 0..VECTORS {
        bytes.clear();
        for j in 0..dimensions {
            bytes.extend_from_slice(&(((i * 7 + j) % 1000) as f32 / 1000.0).to_le_bytes());
        }
        payload.write_all(&bytes).unwrap();
        let checksum = crc32fast::hash(&bytes);
        let offset = i * dimensions * 4;
        let input = hex(&Sha256::digest(format!("input {i}").as_bytes()));
        let key = hex(&Sha256::digest(format!("{input}\0{MODEL}\0{dimensions}").as_bytes()));
        if i > 0 {
            catalog.push(',');
        }
        let _ = write!(catalog, r#""{key}":{{"offset":{offset},"dimensions":{dimensions},"checksum":{checksum}}}"#);
        if i % 2 == 0 {
            if i > 0 {
                records.push(',');
            }
            let _ = write!(
                records,
                r#"{{"chunk_id":"c{i:06}","path":"src/file{}.go","source":"filesystem","start_line":1,"end_line":9,"content_hash":"{input}","embedding_input_hash":"{input}","embedding_model":"{MODEL}","dimensions":{dimensions},"size":100,"mtime_unix_nano":1,"offset":{offset},"vector_key":"{key}","vector_checksum":{checksum}}}"#,
                i / 16
            );
        }
    }
    payload.flush().unwrap();
    catalog.push_str("}}\n");
    records.push_str("]\n");
    std::fs::write(store.join("catalog-00000000000000000001.json"), catalog).unwrap();
    std::fs::write(index.join("vectors.index.json"), records).unwrap();
    std::fs::write(index.join("vectors.f32"), b"").unwrap();
    let manifest = format!(
        r#"{{"version":3,"mode":"filesystem","root":"/bench/project","embedding_model":"{MODEL}","dimensions":{dimensions},"created_at":"2026-01-02T03:04:05Z","file_count":{},"chunk_count":{},"vector_store":"shared-v1"}}
"#,
        VECTORS / 32,
        VECTORS / 2
    );
    std::fs::write(index.join("manifest.json"), manifest).unwrap();
}

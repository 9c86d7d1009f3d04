//! Computes a fingerprint of the workspace sources that the binaries are
//! built from, so the client can tell a daemon of another build apart.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const SOURCE_DIRS: &[&str] = &["proto/proto", "shared/src", "gitagentd/src", "git-agent-client/src"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("the shared crate sits inside the workspace").to_path_buf();
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        let dir = root.join(dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        collect(&dir, &mut files);
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap_or(file);
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        if let Ok(bytes) = std::fs::read(file) {
            hasher.update(&bytes);
        }
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=GIT_AGENT_BUILD_FINGERPRINT={hex}");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => collect(&path, files),
            Ok(kind) if kind.is_file() => files.push(path),
            _ => {}
        }
    }
}

//! Links the daemon with packed relative relocations (`DT_RELR`) where the
//! result is sure to run.
//!
//! A position-independent Rust binary carries one 24-byte `RELA` entry per
//! pointer to fix up at load time (about 66,000 for the daemon: 1.6 MB that
//! the loader reads at every start and that then stays resident for the
//! daemon's whole life). `DT_RELR` packs the same relocations into a bitmap
//! of about 20 kB. It needs a linker that writes it (LLD, which rustc uses
//! by default on x86_64 Linux, or GNU ld 2.38 and later) and a glibc of 2.36
//! or later to load it, so it is only asked for when the target is the
//! machine building it and that machine's glibc is new enough: a binary
//! built here runs here. `GITAGENTD_NO_RELR=1` turns it off.
//!
//! Where the linker is rustc's own LLD, the functions listed in
//! `hot-functions.txt` (what a `project_id` and review launches run) are
//! also laid out together at the start of `.text`. The kernel maps a
//! binary's pages in runs of 64 KiB or more, so hot code scattered among
//! cold code keeps most of the text resident in an idle daemon (15 of its
//! 22 MB); grouped, the hot pages are few. `GITAGENTD_NO_ORDER=1` turns it
//! off.

use std::process::Command;

/// The glibc release that first loads `DT_RELR`.
const RELR_GLIBC: (u32, u32) = (2, 36);

/// The first rustc release that links x86_64 Linux with its own LLD.
const RUSTC_LLD: (u32, u32) = (1, 90);

fn main() {
    println!("cargo:rerun-if-env-changed=GITAGENTD_NO_RELR");
    println!("cargo:rerun-if-env-changed=GITAGENTD_NO_ORDER");
    println!("cargo:rerun-if-changed=hot-functions.txt");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    // LLD is rustc's own linker on this target only; elsewhere the system
    // linker may predate the options.
    if target != "x86_64-unknown-linux-gnu" || target != host {
        return;
    }
    if !turned_off("GITAGENTD_NO_RELR") && host_glibc().is_some_and(|version| version >= RELR_GLIBC) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if !turned_off("GITAGENTD_NO_ORDER") && links_with_rust_lld() {
        let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let order = std::path::Path::new(&manifest).join("hot-functions.txt");
        // `-Wl,` splits at commas.
        if order.is_file() && !order.to_string_lossy().contains(',') {
            println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
            // Names of another build (toolchain, dependency versions) are
            // skipped silently: the list only orders, it never decides.
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}

/// Whether the build sets `variable` to `1`.
fn turned_off(variable: &str) -> bool {
    std::env::var_os(variable).is_some_and(|value| value == "1")
}

/// Whether the daemon is linked by rustc's own LLD: a rustc of 1.90 or
/// later with no linker of the build's choosing (a `linker` setting reaches
/// build scripts as `RUSTC_LINKER`; flags as the encoded RUSTFLAGS).
fn links_with_rust_lld() -> bool {
    if std::env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") || flags.contains("fuse-ld") {
        return false;
    }
    rustc_version().is_some_and(|version| version >= RUSTC_LLD)
}

/// The building rustc's release, from `rustc -V` (`rustc 1.95.0 (…)`).
fn rustc_version() -> Option<(u32, u32)> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc).arg("-V").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let mut parts = text.split_whitespace().nth(1)?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The building machine's glibc release, from `getconf GNU_LIBC_VERSION`
/// (`glibc 2.36`).
fn host_glibc() -> Option<(u32, u32)> {
    let output = Command::new("getconf").arg("GNU_LIBC_VERSION").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    let minor = minor.split(|c: char| !c.is_ascii_digit()).next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

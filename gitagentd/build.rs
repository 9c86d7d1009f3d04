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

use std::process::Command;

/// The glibc release that first loads `DT_RELR`.
const RELR_GLIBC: (u32, u32) = (2, 36);

fn main() {
    println!("cargo:rerun-if-env-changed=GITAGENTD_NO_RELR");
    if std::env::var_os("GITAGENTD_NO_RELR").is_some_and(|value| value == "1") {
        return;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    // LLD is rustc's own linker on this target only; elsewhere the system
    // linker may predate the option.
    if target != "x86_64-unknown-linux-gnu" || target != host {
        return;
    }
    if host_glibc().is_some_and(|version| version >= RELR_GLIBC) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
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

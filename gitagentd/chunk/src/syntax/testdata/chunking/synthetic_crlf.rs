//! CRLF file.
use std::io;

/// Reads.
pub fn read() -> io::Result<()> {
    Ok(())
}

fn a() {}
fn b() {}
fn c() {}

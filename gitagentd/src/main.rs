//! `gitagentd`: parses its command line and hands over to the library.

use clap::Parser;
use std::process::ExitCode;

/// mimalloc instead of glibc's allocator: the daemon allocates from many
/// threads at once (search readers, gRPC, tool batches), and glibc grows
/// each thread's arena page by page with `mprotect`, which stalls the
/// page faults of every other thread; cold search indexing ran about 12%
/// slower with it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = gitagentd::args::DaemonArgs::parse();
    match gitagentd::run(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("gitagentd: {error:#}");
            ExitCode::FAILURE
        }
    }
}

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
    forget_certificate_locations();
    #[cfg(target_os = "linux")]
    gitagentd::memory::refuse_transparent_huge_pages();
    let args = gitagentd::args::DaemonArgs::parse();
    match gitagentd::run(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("gitagentd: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The TLS root loader reads `SSL_CERT_FILE` and `SSL_CERT_DIR` from the
/// process environment. The daemon takes them from each invocation
/// instead (`provider::network`), so the shell or service manager that
/// happened to start it must not decide for every caller.
fn forget_certificate_locations() {
    for name in [git_agent_shared::environment::vars::SSL_CERT_FILE, git_agent_shared::environment::vars::SSL_CERT_DIR]
    {
        // SAFETY: the first thing `main` does, before any other thread
        // exists that could read the environment.
        unsafe { std::env::remove_var(name) };
    }
}

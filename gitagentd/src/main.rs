//! `gitagentd`: parses its command line and hands over to the library.

use clap::Parser;
use std::process::ExitCode;

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

//! `git-agent`: hands the command line to the library and exits with the
//! code it decides.

fn main() {
    let code = git_agent_client::run(std::env::args_os().collect());
    std::process::exit(code);
}

//! `--pprof <addr>`: Go's pprof profiles do not exist in a Rust build, so
//! git-agent binds the address (failing like the spec asks when it
//! cannot) and serves a small, honest diagnostics index under
//! `/debug/pprof/` while the command runs: the daemon's command line and
//! its `/proc/self/status` (memory and threads). No CPU or heap profiles.

use super::CommandError;
use gitagent_runtime::http::{Answer, Handler, Method};
use std::sync::Arc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The running server; it stops when dropped.
pub struct DiagnosticsServer {
    pub address: std::net::SocketAddr,
    _stop: DropGuard,
}

impl DiagnosticsServer {
    pub async fn start(address: &str) -> Result<Self, CommandError> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| CommandError::failed(ListenError { address: address.to_string(), source }))?;
        let address = listener.local_addr().map_err(CommandError::failed)?;
        let stop = CancellationToken::new();
        let handler: Handler = Arc::new(|method, path| match (method, path) {
            (&Method::GET, "/debug/pprof/" | "/debug/pprof") => Answer::ok(TEXT, INDEX),
            (&Method::GET, "/debug/pprof/cmdline") => Answer::ok(TEXT, std::env::args().collect::<Vec<_>>().join("\0")),
            (&Method::GET, "/debug/pprof/status") => {
                Answer::ok(TEXT, std::fs::read_to_string("/proc/self/status").unwrap_or_default())
            }
            _ => Answer::not_found("not found; see /debug/pprof/\n"),
        });
        tokio::spawn(gitagent_runtime::http::serve(listener, handler, stop.clone()));
        Ok(Self { address, _stop: stop.drop_guard() })
    }
}

/// `--pprof`'s address cannot be bound.
#[derive(Debug, thiserror::Error)]
#[error("--pprof cannot listen on {address}\nhint: pass a free host:port, such as 127.0.0.1:6060")]
struct ListenError {
    address: String,
    source: std::io::Error,
}

const TEXT: &str = "text/plain; charset=utf-8";

const INDEX: &str = "git-agent diagnostics (the Rust build has no Go pprof profiles)\n\n\
/debug/pprof/cmdline  the daemon's command line\n\
/debug/pprof/status   the daemon's /proc/self/status: memory, threads\n";

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn serves_the_index_until_dropped_and_reports_bind_failures() {
        let server = DiagnosticsServer::start("127.0.0.1:0").await.unwrap();
        let mut socket = tokio::net::TcpStream::connect(server.address).await.unwrap();
        socket.write_all(b"GET /debug/pprof/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await.unwrap();
        let mut response = String::new();
        socket.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK") && response.contains("/debug/pprof/status"), "{response}");
        let taken = server.address.to_string();
        let error = DiagnosticsServer::start(&taken).await.err().unwrap();
        assert!(error.to_string().contains("--pprof cannot listen"));
    }
}

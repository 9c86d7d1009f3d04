//! The daemon socket's accept loop. Every connection is checked for the
//! peer's uid first (only the daemon's own user is served), then sniffed:
//! a connection that opens with the HTTP/2 client preface is gRPC, served
//! by hyper's HTTP/2 server with tonic's routes (through
//! [`grpc_authority`](crate::grpc_authority), which repairs the
//! `:authority` some stock gRPC clients send); anything else is plain
//! HTTP/1.1 for the read-only task view ([`task_http`](crate::task_http)).
//! A connection is served in the task that sniffed it, on the worker that
//! accepted it: nothing hands it to another thread.

use crate::grpc_authority::AuthorityRepair;
use crate::tasks::TaskService;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The gRPC service every connection is served with: tonic's routes.
pub type GrpcRoutes = tonic::service::Routes;

/// Held by every connection's task; the daemon waits, after shutdown, until
/// the last one is dropped (in-flight replies are written whole).
pub type Draining = mpsc::Sender<()>;

/// The HTTP/2 client connection preface (RFC 9113, section 3.4).
pub const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long a new connection may take to send the bytes that tell its
/// protocol apart; a silent one is closed after that.
const SNIFF_WAIT: Duration = Duration::from_secs(10);

/// The protocol a connection speaks, told from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The bytes are the whole HTTP/2 preface: gRPC.
    Grpc,
    /// The bytes already differ from the preface: HTTP/1.1.
    Http1,
    /// Every byte so far matches the preface: read more.
    Undecided,
}

/// Classifies the first bytes of a connection.
pub fn protocol_of(first: &[u8]) -> Protocol {
    let shared = first.len().min(H2_PREFACE.len());
    if first[..shared] != H2_PREFACE[..shared] {
        Protocol::Http1
    } else if shared == H2_PREFACE.len() {
        Protocol::Grpc
    } else {
        Protocol::Undecided
    }
}

/// Whether a peer of `peer_uid` may use a daemon running as `own_uid`.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> bool {
    peer_uid == own_uid
}

/// Checks the peer's credentials, logging refusals.
fn admitted(stream: &UnixStream, own_uid: u32) -> bool {
    match stream.peer_cred() {
        Ok(credentials) if peer_allowed(credentials.uid(), own_uid) => true,
        Ok(credentials) => {
            tracing::warn!(uid = credentials.uid(), "refused a connection from another user");
            false
        }
        Err(error) => {
            tracing::warn!(%error, "refused a connection without peer credentials");
            false
        }
    }
}

/// How long the accept loop pauses after a failed `accept`.
const ACCEPT_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Accepts connections until `shutdown` and serves each in its own task:
/// gRPC with `grpc`, HTTP/1.1 task views with `tasks`. Every connection's
/// task holds a clone of `draining` until it ends.
pub async fn accept(
    listener: UnixListener,
    grpc: GrpcRoutes,
    tasks: Arc<TaskService>,
    shutdown: CancellationToken,
    draining: Draining,
) {
    let own_uid = nix::unistd::geteuid().as_raw();
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors or a connection reset before
                    // accept: the listener itself is fine. A persistent
                    // error (descriptors exhausted) would otherwise spin
                    // and flood the log, so wait a moment before retrying.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = tokio::time::sleep(ACCEPT_RETRY_PAUSE) => {}
                    }
                    continue;
                }
            },
        };
        if !admitted(&stream, own_uid) {
            continue;
        }
        let grpc = grpc.clone();
        let tasks = Arc::clone(&tasks);
        let shutdown = shutdown.clone();
        let draining = draining.clone();
        tokio::spawn(async move {
            let _draining = draining;
            let mut stream = stream;
            let (protocol, first) = match tokio::time::timeout(SNIFF_WAIT, sniff(&mut stream)).await {
                Ok(Ok(sniffed)) => sniffed,
                Ok(Err(error)) => {
                    tracing::debug!(%error, "a connection closed before it said anything");
                    return;
                }
                Err(_) => {
                    tracing::debug!("a connection sent nothing for {SNIFF_WAIT:?}; closed");
                    return;
                }
            };
            match protocol {
                Protocol::Grpc => serve_grpc(AuthorityRepair::new(stream, first), grpc, shutdown).await,
                Protocol::Http1 | Protocol::Undecided => {
                    crate::task_http::serve(Prefixed::new(first, stream), tasks, shutdown).await;
                }
            }
        });
    }
}

/// Serves one gRPC connection until the client closes it, or until
/// `shutdown`: then it stops taking new calls and finishes those in flight.
async fn serve_grpc(stream: AuthorityRepair<UnixStream>, grpc: GrpcRoutes, shutdown: CancellationToken) {
    let mut builder = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
    builder.timer(hyper_util::rt::TokioTimer::new());
    let service = hyper_util::service::TowerToHyperService::new(grpc);
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let served = tokio::select! {
        served = connection.as_mut() => served,
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = served {
        tracing::debug!(%error, "a gRPC connection ended with an error");
    }
}

/// Reads until the first bytes tell the protocol; returns them with it.
/// An end of stream before that is an error (nothing to serve).
async fn sniff(stream: &mut UnixStream) -> io::Result<(Protocol, Vec<u8>)> {
    let mut first = Vec::with_capacity(H2_PREFACE.len());
    let mut buffer = [0u8; H2_PREFACE.len()];
    loop {
        let wanted = H2_PREFACE.len() - first.len();
        let read = stream.read(&mut buffer[..wanted]).await?;
        if read == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        first.extend_from_slice(&buffer[..read]);
        match protocol_of(&first) {
            Protocol::Undecided => {}
            decided => return Ok((decided, first)),
        }
    }
}

/// A stream whose first bytes were already read: they are read again
/// before the rest.
pub struct Prefixed<S> {
    prefix: Vec<u8>,
    offset: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub fn new(prefix: Vec<u8>, inner: S) -> Self {
        Self { prefix, offset: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.offset < this.prefix.len() {
            let rest = &this.prefix[this.offset..];
            let count = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..count]);
            this.offset += count;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preface_is_grpc_and_anything_else_http1() {
        assert_eq!(protocol_of(H2_PREFACE), Protocol::Grpc);
        assert_eq!(protocol_of(b"PRI * HTTP/2"), Protocol::Undecided);
        assert_eq!(protocol_of(b""), Protocol::Undecided);
        assert_eq!(protocol_of(b"GET /v1/tasks HTTP/1.1\r\n"), Protocol::Http1);
        assert_eq!(protocol_of(b"PRI * HTTP/1.1\r\n"), Protocol::Http1);
        assert_eq!(protocol_of(b"P"), Protocol::Undecided);
        assert_eq!(protocol_of(b"POST"), Protocol::Http1);
    }

    #[test]
    fn only_the_daemons_own_uid_is_allowed() {
        assert!(peer_allowed(1000, 1000));
        assert!(!peer_allowed(1001, 1000));
        assert!(!peer_allowed(0, 1000), "not even root");
    }

    #[tokio::test]
    async fn prefixed_streams_replay_the_sniffed_bytes_first() {
        let (mut client, server) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut client, b" world").await.unwrap();
        drop(client);
        let mut stream = Prefixed::new(b"hello".to_vec(), server);
        let mut text = String::new();
        stream.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "hello world");
    }
}

//! The one HTTP server stack of the daemon's small endpoints (hyper,
//! HTTP/1.1): search's `--agent` progress and a command's `--pprof`
//! diagnostics answer each request from its method and path alone. The
//! socket's task view (gitagentd's `task_http`) uses the same hyper
//! server with its own streaming service.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
pub use hyper::{Method, StatusCode};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// One whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        Self { status: StatusCode::OK, content_type, body: body.into() }
    }

    pub fn not_found(body: impl Into<Vec<u8>>) -> Self {
        Self { status: StatusCode::NOT_FOUND, content_type: "text/plain; charset=utf-8", body: body.into() }
    }
}

/// Answers a request from its method and path.
pub type Handler = Arc<dyn Fn(&Method, &str) -> Answer + Send + Sync>;

/// A listening socket the endpoints accept connections from.
pub trait Listener: Send + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept_io(&self) -> impl Future<Output = std::io::Result<Self::Io>> + Send;
}

impl Listener for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept_io(&self) -> std::io::Result<Self::Io> {
        self.accept().await.map(|(socket, _)| socket)
    }
}

impl Listener for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;
    async fn accept_io(&self) -> std::io::Result<Self::Io> {
        self.accept().await.map(|(socket, _)| socket)
    }
}

/// Serves every connection `listener` accepts with `handler`, each on its
/// own task, until `stop` fires.
pub async fn serve(listener: impl Listener, handler: Handler, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept_io() => accepted,
        };
        match accepted {
            Ok(io) => {
                tokio::spawn(connection(io, Arc::clone(&handler), stop.clone()));
            }
            Err(error) => {
                // A listener out of descriptors fails at once: back off
                // instead of spinning.
                tracing::debug!(%error, "an HTTP endpoint could not accept a connection");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// Serves one connection until the client closes it, or until `stop` lets
/// the request in flight finish.
async fn connection<IO>(io: IO, handler: Handler, stop: CancellationToken)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let answer = handler(request.method(), request.uri().path());
        async move { Ok::<_, Infallible>(response(answer)) }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        tracing::debug!(%error, "an HTTP endpoint connection failed");
    }
}

fn response(answer: Answer) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() = answer.status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(answer.content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn answers_by_path_and_stops_when_told() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let handler: Handler = Arc::new(|method, path| match (method, path) {
            (&Method::GET, "/hello") => Answer::ok("text/plain", "hi\n"),
            _ => Answer::not_found("no\n"),
        });
        let server = tokio::spawn(serve(listener, handler, stop.clone()));
        for (path, status, body) in [("/hello", "200 OK", "hi\n"), ("/else", "404 Not Found", "no\n")] {
            let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
            let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            socket.write_all(request.as_bytes()).await.unwrap();
            let mut response = String::new();
            socket.read_to_string(&mut response).await.unwrap();
            assert!(response.starts_with(&format!("HTTP/1.1 {status}")), "{response}");
            assert!(response.ends_with(body), "{response}");
        }
        stop.cancel();
        server.await.unwrap();
    }
}

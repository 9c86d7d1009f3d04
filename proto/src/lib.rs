//! The wire protocol between `git-agent` and `gitagentd`, generated from
//! `proto/gitagent/v1/gitagent.proto`, and the one function that opens a
//! channel to the daemon's Unix socket. Only the RPC layers of the two
//! binaries use these types; domain code never sees them.

use hyper_util::rt::TokioIo;
use std::path::{Path, PathBuf};
use tonic::transport::{Channel, Endpoint};

/// Bumped when a change needs both sides to agree; additive changes keep it.
pub const PROTOCOL_VERSION: u32 = 1;

pub mod v1 {
    tonic::include_proto!("gitagent.v1");
}

pub use v1::git_agent_client::GitAgentClient;

/// The invocation's environment holds the caller's credentials, so its
/// `Debug` lists variable names and never values.
impl std::fmt::Debug for v1::Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.env.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("Invocation")
            .field("cwd", &<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&self.cwd))
            .field("args", &self.args)
            .field("env_names", &names)
            .field("stdout_is_terminal", &self.stdout_is_terminal)
            .field("stderr_is_terminal", &self.stderr_is_terminal)
            .field("client_pid", &self.client_pid)
            .field("client_build", &self.client_build)
            .finish()
    }
}

/// The largest piece of a command's stdout or stderr one `RunEvent`
/// carries: output of any size is streamed as a sequence of these, so no
/// single message approaches a decoder's limit.
pub const OUTPUT_CHUNK_BYTES: usize = 1024 * 1024;

/// The largest message either side decodes. Streamed output stays far
/// below it (one chunk plus framing); the headroom is for the unary
/// messages that are not split: an invocation's environment and a
/// detached task's stored report.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// A client on `channel` that accepts every message the daemon may send.
pub fn client(channel: Channel) -> GitAgentClient<Channel> {
    GitAgentClient::new(channel).max_decoding_message_size(MAX_MESSAGE_BYTES)
}

/// Opens a gRPC channel to the daemon listening on `socket`. The
/// connection is made eagerly, so a missing or dead daemon is reported
/// here rather than on the first call. Before a byte is sent, the peer's
/// uid is checked (SO_PEERCRED / getpeereid): a process of another user
/// on that address never receives a request, which carries the caller's
/// environment and credentials. Such a peer fails the connection with an
/// [`std::io::Error`] wrapping [`ForeignPeer`] (see [`foreign_peer`]).
pub async fn connect(socket: &Path) -> Result<Channel, tonic::transport::Error> {
    connect_as(socket, nix::unistd::geteuid().as_raw()).await
}

/// [`connect`] to a daemon that must run as `expected_uid`.
pub async fn connect_as(socket: &Path, expected_uid: u32) -> Result<Channel, tonic::transport::Error> {
    let socket: PathBuf = socket.to_path_buf();
    // The URI is required by the HTTP/2 layer but never resolved: the
    // connector below always dials the Unix socket.
    Endpoint::from_static("http://gitagentd.local")
        .connect_with_connector(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(&socket).await?;
                verify_peer(&stream, &socket, expected_uid)?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
}

/// The process listening on the daemon's address runs as another user.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the process listening on {socket} runs as uid {peer}, not as you (uid {expected}); nothing was sent to it\nhint: stop that process or remove {socket}"
)]
pub struct ForeignPeer {
    pub socket: PathBuf,
    pub peer: u32,
    pub expected: u32,
}

/// Checks that the process on the other end of `stream` runs as
/// `expected_uid`.
pub fn verify_peer(stream: &tokio::net::UnixStream, socket: &Path, expected_uid: u32) -> std::io::Result<()> {
    let peer = stream.peer_cred()?.uid();
    if peer == expected_uid {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        ForeignPeer { socket: socket.to_path_buf(), peer, expected: expected_uid },
    ))
}

/// The [`ForeignPeer`] refusal behind a failed [`connect`], if that is
/// why it failed.
pub fn foreign_peer<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a ForeignPeer> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(peer) = error.downcast_ref::<ForeignPeer>() {
            return Some(peer);
        }
        if let Some(peer) = error
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<ForeignPeer>())
        {
            return Some(peer);
        }
        current = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocation_debug_shows_no_environment_value() {
        let invocation = v1::Invocation {
            cwd: "/work".into(),
            env: [("OPENAI_API_KEY".to_string(), "sk-wire-secret-1".to_string())].into_iter().collect(),
            ..Default::default()
        };
        let request = v1::RunRequest { invocation: Some(invocation) };
        let shown = format!("{request:?}");
        assert!(shown.contains("OPENAI_API_KEY") && !shown.contains("sk-wire-secret"), "{shown}");
    }

    #[tokio::test]
    async fn a_peer_of_another_uid_is_refused() {
        let (ours, _theirs) = tokio::net::UnixStream::pair().unwrap();
        let own = nix::unistd::geteuid().as_raw();
        let socket = Path::new("/run/test/gitagentd.sock");
        verify_peer(&ours, socket, own).unwrap();
        let error = verify_peer(&ours, socket, own.wrapping_add(1)).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
        let peer = foreign_peer(&error).expect("the refusal is recognisable");
        assert_eq!((peer.peer, peer.expected), (own, own.wrapping_add(1)));
        assert!(error.to_string().contains("nothing was sent"), "{error}");
    }

    #[tokio::test]
    async fn connect_refuses_a_listener_of_another_uid_before_sending() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("gitagentd.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let own = nix::unistd::geteuid().as_raw();
        let accept = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut received = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut received).await.unwrap();
            received
        });
        let error = connect_as(&socket, own.wrapping_add(1)).await.unwrap_err();
        let peer = foreign_peer(&error).expect("the transport error carries the refusal");
        assert_eq!((peer.peer, peer.expected), (own, own.wrapping_add(1)));
        assert!(accept.await.unwrap().is_empty(), "nothing may reach a foreign peer");
        assert!(foreign_peer(&std::io::Error::other("other")).is_none());
    }
}

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
/// here rather than on the first call.
pub async fn connect(socket: &Path) -> Result<Channel, tonic::transport::Error> {
    let socket: PathBuf = socket.to_path_buf();
    // The URI is required by the HTTP/2 layer but never resolved: the
    // connector below always dials the Unix socket.
    Endpoint::from_static("http://gitagentd.local")
        .connect_with_connector(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move { tokio::net::UnixStream::connect(socket).await.map(TokioIo::new) }
        }))
        .await
}

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

//! Serves gRPC clients that send the socket path as the HTTP/2 `:authority`.
//!
//! Current grpcio (`%2Fpath%2Fto%2Fgitagentd.sock`), grpc-java and older
//! grpcurl (`/path/to/gitagentd.sock`) name a Unix socket's path as the
//! request authority. That is no valid URI authority, and the HTTP/2 layer
//! under tonic (h2) resets such a stream with PROTOCOL_ERROR before any
//! handler runs; h2 has no option to accept it. So the bytes a client sends
//! pass through [`AuthorityRepair`] on their way to tonic: it reads the
//! frames, decodes the connection's first header block with its own HPACK
//! decoder and, when that block's `:authority` is one h2 would refuse,
//! re-encodes this and every later header block of the connection with
//! `:authority: localhost`. A connection whose first authority is valid
//! (git-agent's own client, grpc-go, grpcurl with `-authority`) is passed
//! through untouched from then on. Everything the daemon writes goes to
//! the client unchanged, and only header blocks are rewritten, so flow
//! control, stream ids and the HPACK state the daemon encodes for the
//! client are unaffected; the daemon decodes what this encoder wrote.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The authority a repaired request carries.
pub const REPAIRED_AUTHORITY: &str = "localhost";

const FRAME_HEADER: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The largest frame payload every HTTP/2 peer accepts (RFC 9113,
/// SETTINGS_MAX_FRAME_SIZE's initial value); re-encoded blocks are cut
/// into frames of at most this size.
const MAX_FRAME: usize = 16_384;
/// The HPACK dynamic table size both the client and the daemon use: the
/// daemon never advertises another SETTINGS_HEADER_TABLE_SIZE.
const TABLE_SIZE: usize = 4_096;
/// The most header block bytes held while its frames arrive.
const MAX_BLOCK: usize = 1 << 20;

/// Why a client's frames cannot be repaired; the connection is closed.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error("HTTP/2 header block does not decode: {0}")]
    Hpack(#[source] loona_hpack::decoder::DecoderError),
    #[error("HTTP/2 HEADERS frame with a bad padding length")]
    Padding,
    #[error("HTTP/2 frame of type {kind} inside a header block")]
    Interleaved { kind: u8 },
    #[error("HTTP/2 CONTINUATION frame outside a header block")]
    StrayContinuation,
    #[error("HTTP/2 header block larger than {MAX_BLOCK} bytes")]
    BlockTooLarge,
}

impl From<RepairError> for io::Error {
    fn from(error: RepairError) -> Self {
        io::Error::new(io::ErrorKind::InvalidData, error)
    }
}

/// What is done to the frames that arrive.
enum Mode {
    /// Until the first header block is complete: decode it to decide.
    Inspecting(Box<Codec>),
    /// The client's authorities need repair: every block is re-encoded.
    Repairing(Box<Codec>),
    /// The first authority was valid: bytes go through untouched.
    Passing,
}

/// The HPACK contexts of a repaired connection: one mirrors the client's
/// encoder, the other is what the daemon's decoder mirrors.
struct Codec {
    decoder: loona_hpack::Decoder<'static>,
    encoder: loona_hpack::Encoder<'static>,
    block: Option<Block>,
}

impl Codec {
    fn new() -> Self {
        let mut decoder = loona_hpack::Decoder::new();
        decoder.set_max_allowed_table_size(TABLE_SIZE);
        Self { decoder, encoder: loona_hpack::Encoder::new(), block: None }
    }
}

/// A header block whose frames are arriving.
struct Block {
    stream: u32,
    end_stream: bool,
    priority: Option<[u8; 5]>,
    fragment: BytesMut,
    /// The frames as received, forwarded as they are when the block
    /// needs no repair.
    raw: BytesMut,
}

/// The client-to-daemon bytes of an HTTP/2 connection, with header blocks
/// repaired as the module describes; writes go to the client unchanged.
pub struct AuthorityRepair<S> {
    inner: S,
    /// Bytes from the client not yet framed.
    input: BytesMut,
    /// Bytes ready for the daemon.
    output: BytesMut,
    mode: Mode,
    /// The client closed its side.
    ended: bool,
}

impl<S> AuthorityRepair<S> {
    /// `first` are the bytes already read (the connection preface).
    pub fn new(inner: S, first: Vec<u8>) -> Self {
        Self {
            inner,
            input: BytesMut::new(),
            output: BytesMut::from(&first[..]),
            mode: Mode::Inspecting(Box::new(Codec::new())),
            ended: false,
        }
    }

    /// Moves every complete frame of `input` to `output`, repairing header
    /// blocks as the mode asks.
    fn process(&mut self) -> Result<(), RepairError> {
        loop {
            let codec = match &mut self.mode {
                Mode::Passing => {
                    let rest = self.input.split();
                    self.output.unsplit(rest);
                    return Ok(());
                }
                Mode::Inspecting(codec) | Mode::Repairing(codec) => codec,
            };
            if self.input.len() < FRAME_HEADER {
                return Ok(());
            }
            let length =
                usize::from(self.input[0]) << 16 | usize::from(self.input[1]) << 8 | usize::from(self.input[2]);
            if self.input.len() < FRAME_HEADER + length {
                return Ok(());
            }
            let frame = self.input.split_to(FRAME_HEADER + length).freeze();
            let (kind, flags) = (frame[3], frame[4]);
            let stream = u32::from_be_bytes([frame[5], frame[6], frame[7], frame[8]]) & 0x7fff_ffff;
            match (kind, codec.block.as_mut()) {
                (HEADERS, None) => codec.block = Some(start_block(&frame, flags, stream)?),
                (CONTINUATION, Some(block)) if block.stream == stream => {
                    block.fragment.extend_from_slice(&frame[FRAME_HEADER..]);
                    block.raw.extend_from_slice(&frame);
                }
                (CONTINUATION, None) => return Err(RepairError::StrayContinuation),
                (kind, Some(_)) => return Err(RepairError::Interleaved { kind }),
                (_, None) => {
                    self.output.extend_from_slice(&frame);
                    continue;
                }
            }
            let Some(block) = codec.block.as_ref() else { continue };
            if block.fragment.len() > MAX_BLOCK {
                return Err(RepairError::BlockTooLarge);
            }
            if flags & END_HEADERS == 0 {
                continue;
            }
            let Some(block) = codec.block.take() else { continue };
            self.finish_block(block)?;
        }
    }

    /// Decodes a complete block and forwards it, as received or repaired.
    fn finish_block(&mut self, block: Block) -> Result<(), RepairError> {
        let codec = match &mut self.mode {
            Mode::Inspecting(codec) | Mode::Repairing(codec) => codec,
            Mode::Passing => return Ok(()),
        };
        let mut headers = codec.decoder.decode(&block.fragment).map_err(RepairError::Hpack)?;
        let repaired = repair_authority(&mut headers);
        if matches!(self.mode, Mode::Inspecting(_)) {
            if !repaired {
                self.output.extend_from_slice(&block.raw);
                self.mode = Mode::Passing;
                return Ok(());
            }
            tracing::info!(
                "a gRPC client sent an invalid :authority (a socket path?); its requests are served as {REPAIRED_AUTHORITY}"
            );
            if let Mode::Inspecting(codec) = std::mem::replace(&mut self.mode, Mode::Passing) {
                self.mode = Mode::Repairing(codec);
            }
        }
        let Mode::Repairing(codec) = &mut self.mode else { return Ok(()) };
        let encoded = codec.encoder.encode(headers.iter().map(|(name, value)| (&name[..], &value[..])));
        write_block(&mut self.output, &block, &encoded);
        Ok(())
    }
}

/// Reads the first frame of a header block, without its padding.
fn start_block(frame: &Bytes, flags: u8, stream: u32) -> Result<Block, RepairError> {
    let mut payload = &frame[FRAME_HEADER..];
    if flags & PADDED != 0 {
        let (&pad, rest) = payload.split_first().ok_or(RepairError::Padding)?;
        let keep = rest.len().checked_sub(usize::from(pad)).ok_or(RepairError::Padding)?;
        payload = &rest[..keep];
    }
    let mut priority = None;
    if flags & PRIORITY != 0 {
        if payload.len() < 5 {
            return Err(RepairError::Padding);
        }
        let mut fields = [0u8; 5];
        fields.copy_from_slice(&payload[..5]);
        priority = Some(fields);
        payload = &payload[5..];
    }
    Ok(Block {
        stream,
        end_stream: flags & END_STREAM != 0,
        priority,
        fragment: BytesMut::from(payload),
        raw: BytesMut::from(&frame[..]),
    })
}

/// Replaces an `:authority` h2 would refuse; returns whether it did.
fn repair_authority(headers: &mut [(Vec<u8>, Vec<u8>)]) -> bool {
    let mut repaired = false;
    for (name, value) in headers.iter_mut() {
        if name == b":authority" && hyper::http::uri::Authority::try_from(&value[..]).is_err() {
            *value = REPAIRED_AUTHORITY.as_bytes().to_vec();
            repaired = true;
        }
    }
    repaired
}

/// Writes a re-encoded block as a HEADERS frame and as many CONTINUATION
/// frames as its size needs.
fn write_block(output: &mut BytesMut, block: &Block, encoded: &[u8]) {
    let priority = block.priority.as_ref().map_or(&[][..], |fields| &fields[..]);
    let first_room = MAX_FRAME - priority.len();
    let (first, mut rest) = encoded.split_at(encoded.len().min(first_room));
    let mut flags = if block.end_stream { END_STREAM } else { 0 };
    if block.priority.is_some() {
        flags |= PRIORITY;
    }
    if rest.is_empty() {
        flags |= END_HEADERS;
    }
    put_frame_header(output, priority.len() + first.len(), HEADERS, flags, block.stream);
    output.put_slice(priority);
    output.put_slice(first);
    while !rest.is_empty() {
        let (piece, after) = rest.split_at(rest.len().min(MAX_FRAME));
        let flags = if after.is_empty() { END_HEADERS } else { 0 };
        put_frame_header(output, piece.len(), CONTINUATION, flags, block.stream);
        output.put_slice(piece);
        rest = after;
    }
}

fn put_frame_header(output: &mut BytesMut, length: usize, kind: u8, flags: u8, stream: u32) {
    // `length` is at most MAX_FRAME, which fits 24 bits.
    output.put_uint(length as u64, 3);
    output.put_u8(kind);
    output.put_u8(flags);
    output.put_u32(stream);
}

impl<S: AsyncRead + Unpin> AsyncRead for AuthorityRepair<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.output.is_empty() {
                let count = this.output.len().min(buf.remaining());
                buf.put_slice(&this.output[..count]);
                this.output.advance(count);
                return Poll::Ready(Ok(()));
            }
            if matches!(this.mode, Mode::Passing) && this.input.is_empty() {
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
            if this.ended {
                // A partial frame at the end is dropped: the daemon sees
                // the connection end, as it would mid-frame.
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8_192];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Ready(Ok(())) if read.filled().is_empty() => this.ended = true,
                Poll::Ready(Ok(())) => {
                    this.input.extend_from_slice(read.filled());
                    this.process()?;
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AuthorityRepair<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        put_frame_header(&mut out, payload.len(), kind, flags, stream);
        out.put_slice(payload);
        out.to_vec()
    }

    fn request_headers(authority: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/gitagent.v1.GitAgent/Hello"),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("user-agent", "grpc-python/1.70.0 grpc-c/45.0.0 (linux; chttp2)"),
        ]
        .iter()
        .map(|(name, value)| (name.as_bytes().to_vec(), value.as_bytes().to_vec()))
        .collect()
    }

    fn encode(encoder: &mut loona_hpack::Encoder<'static>, headers: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        encoder.encode(headers.iter().map(|(name, value)| (&name[..], &value[..])))
    }

    /// Runs `sent` (after the preface) through the repair and returns what
    /// the daemon would read.
    async fn through_repair(sent: Vec<u8>) -> Vec<u8> {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        client.write_all(&sent).await.unwrap();
        drop(client);
        let mut repair = AuthorityRepair::new(server, PREFACE.to_vec());
        let mut received = Vec::new();
        repair.read_to_end(&mut received).await.unwrap();
        assert!(received.starts_with(PREFACE), "the preface comes first");
        received.split_off(PREFACE.len())
    }

    /// (type, flags, stream, payload) of every frame.
    fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let length = usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
            let stream = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]);
            out.push((bytes[3], bytes[4], stream, bytes[FRAME_HEADER..FRAME_HEADER + length].to_vec()));
            bytes = &bytes[FRAME_HEADER + length..];
        }
        out
    }

    #[tokio::test]
    async fn a_socket_path_authority_becomes_localhost_in_every_block() {
        let mut client = loona_hpack::Encoder::new();
        let settings = frame(0x4, 0, 0, &[]);
        let data = frame(0x0, END_STREAM, 1, &[0, 0, 0, 0, 0]);
        let path = "%2Ftmp%2Fga%2Fgitagentd.sock";
        let first = encode(&mut client, &request_headers(path));
        // The second request indexes the authority from the dynamic table.
        let second = encode(&mut client, &request_headers(path));
        assert!(second.len() < first.len(), "the client's second block reuses its table");
        let mut sent = settings.clone();
        sent.extend(frame(HEADERS, END_HEADERS, 1, &first));
        sent.extend(&data);
        // The second block in two frames, padded and with a priority.
        let (head, tail) = second.split_at(3);
        let mut padded = vec![2u8];
        padded.extend([0x80, 0, 0, 1, 15]);
        padded.extend(head);
        padded.extend([0, 0]);
        sent.extend(frame(HEADERS, PADDED | PRIORITY, 3, &padded));
        sent.extend(frame(CONTINUATION, END_HEADERS, 3, tail));

        let received = frames(&through_repair(sent).await);
        assert_eq!(received.len(), 4, "{received:?}");
        assert_eq!((received[0].0, received[0].3.as_slice()), (0x4, &[][..]), "SETTINGS unchanged");
        assert_eq!(received[2], (0x0, END_STREAM, 1, vec![0, 0, 0, 0, 0]), "DATA unchanged");
        let mut daemon = loona_hpack::Decoder::new();
        let expected = request_headers(REPAIRED_AUTHORITY);
        assert_eq!(received[1].0, HEADERS);
        assert_eq!(received[1].1, END_HEADERS);
        assert_eq!(daemon.decode(&received[1].3).unwrap(), expected);
        let (kind, flags, stream, payload) = &received[3];
        assert_eq!((*kind, *flags, *stream), (HEADERS, END_HEADERS | PRIORITY, 3));
        assert_eq!(&payload[..5], &[0x80, 0, 0, 1, 15], "the priority fields are kept");
        assert_eq!(daemon.decode(&payload[5..]).unwrap(), expected, "the daemon's table stays in step");
    }

    #[tokio::test]
    async fn a_valid_authority_passes_byte_for_byte() {
        let mut client = loona_hpack::Encoder::new();
        let mut sent = frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        for stream in [1, 3] {
            sent.extend(frame(HEADERS, END_HEADERS, stream, &encode(&mut client, &request_headers("localhost"))));
            sent.extend(frame(0x0, END_STREAM, stream, &[0, 0, 0, 0, 0]));
        }
        assert_eq!(through_repair(sent.clone()).await, sent);
    }

    #[tokio::test]
    async fn large_repaired_blocks_are_cut_into_continuations() {
        let mut client = loona_hpack::Encoder::new();
        let mut headers = request_headers("/tmp/ga/gitagentd.sock");
        headers.push((b"x-large".to_vec(), vec![b'v'; 40_000]));
        let block = encode(&mut client, &headers);
        let mut sent = Vec::new();
        let mut chunks = block.chunks(MAX_FRAME).peekable();
        let mut kind = HEADERS;
        while let Some(chunk) = chunks.next() {
            let mut flags = if kind == HEADERS { END_STREAM } else { 0 };
            if chunks.peek().is_none() {
                flags |= END_HEADERS;
            }
            sent.extend(frame(kind, flags, 1, chunk));
            kind = CONTINUATION;
        }
        let received = frames(&through_repair(sent).await);
        assert!(received.len() >= 3, "{} frames", received.len());
        assert_eq!(received[0].0, HEADERS);
        assert_eq!(received[0].1 & END_STREAM, END_STREAM);
        let mut fragment = Vec::new();
        for (index, (kind, flags, stream, payload)) in received.iter().enumerate() {
            assert!(payload.len() <= MAX_FRAME);
            assert_eq!(*stream, 1);
            if index > 0 {
                assert_eq!(*kind, CONTINUATION);
            }
            assert_eq!(flags & END_HEADERS != 0, index == received.len() - 1);
            fragment.extend(payload);
        }
        headers[3].1 = REPAIRED_AUTHORITY.as_bytes().to_vec();
        assert_eq!(loona_hpack::Decoder::new().decode(&fragment).unwrap(), headers);
    }

    #[tokio::test]
    async fn a_frame_inside_a_header_block_closes_the_connection() {
        let mut client = loona_hpack::Encoder::new();
        let block = encode(&mut client, &request_headers("/tmp/ga/gitagentd.sock"));
        let mut sent = frame(HEADERS, 0, 1, &block[..4]);
        sent.extend(frame(0x0, 0, 1, b"x"));
        let (mut writer, server) = tokio::io::duplex(1 << 16);
        writer.write_all(&sent).await.unwrap();
        drop(writer);
        let mut repair = AuthorityRepair::new(server, Vec::new());
        let error = repair.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("inside a header block"), "{error}");
    }

    #[tokio::test]
    async fn an_undecodable_header_block_keeps_the_hpack_error_and_reads_as_before() {
        use std::error::Error as _;
        // An indexed field naming entry 62: the dynamic table is empty.
        let sent = frame(HEADERS, END_HEADERS, 1, &[0x80 | 62]);
        let (mut writer, server) = tokio::io::duplex(1 << 16);
        writer.write_all(&sent).await.unwrap();
        drop(writer);
        let mut repair = AuthorityRepair::new(server, Vec::new());
        let error = repair.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        let repair_error =
            error.get_ref().and_then(|inner| inner.downcast_ref::<RepairError>()).expect("a RepairError");
        let cause = repair_error.source().and_then(|cause| cause.downcast_ref::<loona_hpack::decoder::DecoderError>());
        assert_eq!(cause, Some(&loona_hpack::decoder::DecoderError::HeaderIndexOutOfBounds));
        let before = "HTTP/2 header block does not decode: Header index out of bounds";
        assert_eq!(git_agent_shared::error_chain::render(repair_error), before);
        assert_eq!(error.to_string(), before);
    }

    #[test]
    fn only_authorities_h2_refuses_are_repaired() {
        for refused in ["/tmp/ga/gitagentd.sock", "%2Ftmp%2Fgitagentd.sock", "unix:/tmp/x y"] {
            let mut headers = vec![(b":authority".to_vec(), refused.as_bytes().to_vec())];
            assert!(repair_authority(&mut headers), "{refused}");
            assert_eq!(headers[0].1, b"localhost");
        }
        for accepted in ["localhost", "[::]:50051", "gitagentd"] {
            let mut headers = vec![(b":authority".to_vec(), accepted.as_bytes().to_vec())];
            assert!(!repair_authority(&mut headers), "{accepted}");
        }
    }
}

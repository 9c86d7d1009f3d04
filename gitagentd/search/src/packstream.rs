//! Decoding a pack while it arrives: the bytes gix reads from the
//! transport are copied ([`TeeTransport`]) to a [`PackDecoder`] on another
//! thread, which decodes each entry as soon as its compressed bytes are
//! there, resolves OFS and REF deltas against the entries already seen and
//! hashes every object.
//!
//! gix 0.90 hands the whole stream to `gix_pack::Bundle::write_to_directory`,
//! which makes nothing readable before the pack is complete and indexed;
//! this decoder is what lets remote mode chunk files during the transfer
//! ([`super::overlay`]). gix still writes and indexes the pack unchanged:
//! the copy is read-only, and a decoder that falls behind, fails or is
//! dropped never slows or fails the fetch (its copy simply stops).

use gix::ObjectId;
use gix::objs::Kind;
use gix::odb::pack::data::entry::Header;
use gix::protocol::transport::client::{
    self, MessageKind, TransportWithoutIO, WriteMode,
    blocking_io::{ExtendedBufRead, HandleProgress, ReadlineBufRead, RequestWriter, SetServiceResponse, Transport},
};
use std::collections::HashMap;
use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

/// The most decoded bytes a decoder keeps as delta bases; a pack whose
/// objects need more stops being decoded (the search reads it after the
/// fetch instead). The daemon is long-lived and shares the machine: a
/// repository this large loses the overlap rather than the daemon growing
/// by gigabytes during its fetch.
pub const MAX_KEPT_BYTES: u64 = 256 << 20;
/// The most copied bytes that may wait for a decoder that fell behind.
const MAX_QUEUED_BYTES: u64 = 256 << 20;

/// Why a pack could not be decoded while it arrived. Any of them only
/// ends the overlap: the search then reads the fetched repository.
#[derive(Debug, thiserror::Error)]
pub enum PackStreamError {
    #[error("the pack stream ended early or could not be read: {0}")]
    Io(#[from] io::Error),
    #[error("not a pack stream (version {version}, magic {magic:?})")]
    NotAPack { magic: [u8; 4], version: u32 },
    #[error("pack entry at offset {offset}: {message}")]
    Corrupt { offset: u64, message: String },
    #[error("pack entry at offset {offset}: its delta base is not in the pack before it")]
    MissingBase { offset: u64 },
    #[error("the pack's objects need more than {limit} bytes of memory to decode while it arrives")]
    TooLarge { limit: u64 },
}

/// One decoded object.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub id: ObjectId,
    pub kind: Kind,
    pub data: Arc<[u8]>,
    /// Whether it was stored as a delta in the pack.
    pub deltified: bool,
}

/// Decodes the entries of a pack from `read` in pack order.
pub struct PackDecoder<R> {
    read: R,
    objects: u32,
    left: u32,
    offset: u64,
    inflate: gix::zlib::Decompress,
    /// Every object seen so far, as a possible delta base.
    by_offset: HashMap<u64, (Kind, Arc<[u8]>)>,
    by_id: HashMap<ObjectId, u64>,
    kept: u64,
    /// The most bytes `kept` may reach ([`MAX_KEPT_BYTES`] unless a test
    /// lowers it).
    limit: u64,
    failed: bool,
}

impl<R: BufRead> PackDecoder<R> {
    /// Reads the pack header.
    pub fn new(mut read: R) -> Result<Self, PackStreamError> {
        let mut header = [0u8; 12];
        read.read_exact(&mut header)?;
        let magic = [header[0], header[1], header[2], header[3]];
        let version = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if &magic != b"PACK" || !(version == 2 || version == 3) {
            return Err(PackStreamError::NotAPack { magic, version });
        }
        let objects = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
        Ok(Self {
            read,
            objects,
            left: objects,
            offset: 12,
            inflate: gix::zlib::Decompress::new(),
            by_offset: HashMap::new(),
            by_id: HashMap::new(),
            kept: 0,
            limit: MAX_KEPT_BYTES,
            failed: false,
        })
    }

    /// Lowers the most decoded bytes this decoder keeps.
    #[cfg(test)]
    fn with_limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }

    /// The object count the pack header announces.
    pub fn objects(&self) -> u32 {
        self.objects
    }

    /// The base a delta entry names.
    fn base(&self, header: &Header, offset: u64) -> Result<(Kind, Arc<[u8]>), PackStreamError> {
        let base_offset = match header {
            Header::OfsDelta { base_distance } => offset.checked_sub(*base_distance),
            Header::RefDelta { base_id } => self.by_id.get(base_id).copied(),
            _ => None,
        };
        base_offset.and_then(|at| self.by_offset.get(&at)).cloned().ok_or(PackStreamError::MissingBase { offset })
    }

    fn next_entry(&mut self) -> Result<Decoded, PackStreamError> {
        let offset = self.offset;
        let corrupt = |message: String| PackStreamError::Corrupt { offset, message };
        let hash_len = gix::hash::Kind::Sha1.len_in_bytes();
        let mut counted = CountingRead { read: &mut self.read, count: 0 };
        let entry = gix::odb::pack::data::Entry::from_read(&mut counted, offset, hash_len)?;
        let header_len = counted.count;
        let too_large = PackStreamError::TooLarge { limit: self.limit };
        let size = usize::try_from(entry.decompressed_size).map_err(|_| too_large)?;
        if self.kept + size as u64 > self.limit {
            return Err(PackStreamError::TooLarge { limit: self.limit });
        }
        let mut raw = vec![0u8; size];
        let compressed = inflate_exact(&mut self.read, &mut self.inflate, &mut raw).map_err(|error| match error {
            InflateError::Io(error) => PackStreamError::Io(error),
            InflateError::Corrupt(message) => corrupt(message),
        })?;
        self.offset += header_len + compressed;
        let (kind, data, deltified) = match entry.header {
            Header::Commit => (Kind::Commit, raw, false),
            Header::Tree => (Kind::Tree, raw, false),
            Header::Blob => (Kind::Blob, raw, false),
            Header::Tag => (Kind::Tag, raw, false),
            delta @ (Header::OfsDelta { .. } | Header::RefDelta { .. }) => {
                let (kind, base) = self.base(&delta, offset)?;
                let data = apply_delta(&base, &raw).map_err(|message| corrupt(message.to_string()))?;
                (kind, data, true)
            }
        };
        if self.kept + data.len() as u64 > self.limit {
            return Err(PackStreamError::TooLarge { limit: self.limit });
        }
        self.kept += data.len() as u64;
        let id =
            gix::objs::compute_hash(gix::hash::Kind::Sha1, kind, &data).map_err(|error| corrupt(error.to_string()))?;
        let data: Arc<[u8]> = data.into();
        self.by_offset.insert(offset, (kind, Arc::clone(&data)));
        self.by_id.insert(id, offset);
        Ok(Decoded { id, kind, data, deltified })
    }

    /// Reads the trailing pack checksum once every entry is decoded.
    fn finish(&mut self) -> Result<(), PackStreamError> {
        let mut trailer = [0u8; 20];
        self.read.read_exact(&mut trailer)?;
        Ok(())
    }
}

impl<R: BufRead> Iterator for PackDecoder<R> {
    type Item = Result<Decoded, PackStreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut result = self.next_entry();
        if result.is_ok()
            && self.left == 0
            && let Err(error) = self.finish()
        {
            result = Err(error);
        }
        self.failed = result.is_err();
        Some(result)
    }
}

/// Counts the bytes an entry header takes.
struct CountingRead<'a, R> {
    read: &'a mut R,
    count: u64,
}

impl<R: Read> Read for CountingRead<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.read.read(buf)?;
        self.count += read as u64;
        Ok(read)
    }
}

enum InflateError {
    Io(io::Error),
    Corrupt(String),
}

/// Inflates one zlib stream from `read` into exactly `out`, consuming its
/// compressed bytes and nothing after them. Returns the compressed length.
fn inflate_exact(
    read: &mut impl BufRead,
    state: &mut gix::zlib::Decompress,
    out: &mut [u8],
) -> Result<u64, InflateError> {
    use gix::zlib::{FlushDecompress, Status};
    state.reset();
    let mut written = 0usize;
    // Past the declared size the stream may only end (its checksum).
    let mut spare = [0u8; 1];
    loop {
        let input = read.fill_buf().map_err(InflateError::Io)?;
        if input.is_empty() {
            return Err(InflateError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        let (before_in, before_out) = (state.total_in(), state.total_out());
        let target: &mut [u8] = if written < out.len() { &mut out[written..] } else { &mut spare };
        let status = state
            .decompress(input, target, FlushDecompress::None)
            .map_err(|error| InflateError::Corrupt(format!("corrupt zlib stream: {error}")))?;
        let consumed = (state.total_in() - before_in) as usize;
        let produced = (state.total_out() - before_out) as usize;
        read.consume(consumed);
        written += produced;
        if written > out.len() {
            return Err(InflateError::Corrupt("the entry inflates to more than its declared size".into()));
        }
        match status {
            Status::StreamEnd if written == out.len() => return Ok(state.total_in()),
            Status::StreamEnd => {
                return Err(InflateError::Corrupt("the entry inflates to less than its declared size".into()));
            }
            Status::Ok | Status::BufError if consumed == 0 && produced == 0 => {
                return Err(InflateError::Corrupt("the zlib stream makes no progress".into()));
            }
            Status::Ok | Status::BufError => {}
        }
    }
}

/// Applies a git delta (`base` size, result size, then copy and insert
/// instructions) to `base`.
pub fn apply_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, &'static str> {
    fn size(delta: &[u8], at: &mut usize) -> Result<usize, &'static str> {
        let mut value = 0usize;
        let mut shift = 0;
        loop {
            let byte = *delta.get(*at).ok_or("truncated delta header")?;
            *at += 1;
            if shift > 56 {
                return Err("delta header size too large");
            }
            value |= usize::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
    }
    let mut at = 0;
    if size(delta, &mut at)? != base.len() {
        return Err("the delta's base size does not match its base");
    }
    let result_size = size(delta, &mut at)?;
    if result_size as u64 > MAX_KEPT_BYTES {
        return Err("the delta result is too large");
    }
    let mut out = Vec::with_capacity(result_size);
    while let Some(&command) = delta.get(at) {
        at += 1;
        if command & 0x80 != 0 {
            let mut next = |bit: u8, shift: u32| -> Result<usize, &'static str> {
                if command & bit == 0 {
                    return Ok(0);
                }
                let byte = *delta.get(at).ok_or("truncated delta copy")?;
                at += 1;
                Ok(usize::from(byte) << shift)
            };
            let offset = next(0x01, 0)? | next(0x02, 8)? | next(0x04, 16)? | next(0x08, 24)?;
            let mut length = next(0x10, 0)? | next(0x20, 8)? | next(0x40, 16)?;
            if length == 0 {
                length = 0x10000;
            }
            let end = offset.checked_add(length).ok_or("delta copy overflows")?;
            out.extend_from_slice(base.get(offset..end).ok_or("delta copy beyond its base")?);
        } else if command != 0 {
            let end = at + usize::from(command);
            out.extend_from_slice(delta.get(at..end).ok_or("truncated delta insert")?);
            at = end;
        } else {
            return Err("reserved delta command 0");
        }
        if out.len() > result_size {
            return Err("the delta produces more than its declared size");
        }
    }
    if out.len() != result_size {
        return Err("the delta produces less than its declared size");
    }
    Ok(out)
}

/// The receiving end of the copied pack bytes: a `BufRead` over the
/// chunks a [`Tee`] sends, ending when every sender is gone.
pub struct ChunkReader {
    chunks: mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
    queued: Arc<AtomicU64>,
}

impl ChunkReader {
    pub fn new(chunks: mpsc::Receiver<Vec<u8>>, queued: Arc<AtomicU64>) -> Self {
        Self { chunks, current: Vec::new(), at: 0, queued }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ChunkReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at >= self.current.len() {
            match self.chunks.recv() {
                Ok(chunk) => {
                    self.queued.fetch_sub(chunk.len() as u64, Ordering::Relaxed);
                    self.current = chunk;
                    self.at = 0;
                }
                // Every sender is gone: the end of the stream.
                Err(_) => return Ok(&[]),
            }
        }
        Ok(&self.current[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.current.len());
    }
}

/// Where a [`TeeTransport`] copies response bytes, once attached. Bytes
/// are dropped (the copy stops for good) when the decoder is gone or has
/// fallen [`MAX_QUEUED_BYTES`] behind.
#[derive(Clone, Default)]
pub struct Tee {
    inner: Arc<TeeInner>,
}

#[derive(Default)]
struct TeeInner {
    sender: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    queued: Arc<AtomicU64>,
    stopped: AtomicBool,
    copied: AtomicU64,
}

impl Tee {
    /// Starts copying to a new reader.
    pub fn attach(&self) -> ChunkReader {
        let (sender, receiver) = mpsc::channel();
        *self.inner.sender.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sender);
        ChunkReader::new(receiver, Arc::clone(&self.inner.queued))
    }

    /// Stops copying; the reader sees the end of the stream.
    pub fn detach(&self) {
        self.inner.stopped.store(true, Ordering::Relaxed);
        self.inner.sender.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    }

    /// The bytes copied so far.
    pub fn copied(&self) -> u64 {
        self.inner.copied.load(Ordering::Relaxed)
    }

    fn copy(&self, bytes: &[u8]) {
        if bytes.is_empty() || self.inner.stopped.load(Ordering::Relaxed) {
            return;
        }
        let mut sender = self.inner.sender.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(to) = sender.as_ref() else { return };
        let queued = self.inner.queued.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if queued + bytes.len() as u64 > MAX_QUEUED_BYTES || to.send(bytes.to_vec()).is_err() {
            self.inner.stopped.store(true, Ordering::Relaxed);
            sender.take();
            return;
        }
        self.inner.copied.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }
}

/// A transport that behaves exactly like `inner` and copies the bytes
/// read from each response's data stream (after side-band demultiplexing:
/// in a fetch, the pack) to a [`Tee`]. Lines read as packet lines
/// (advertisements, acknowledgements) are not copied.
///
/// It also notes whether the server's handshake offers object filters
/// ([`TeeTransport::filter_offered`]), and [`TeeTransport::with_filter`]
/// then adds a `filter <spec>` argument to each protocol v2 `fetch`
/// request: gix 0.90 has the argument but no way to ask for it.
pub struct TeeTransport<T> {
    inner: T,
    tee: Tee,
    filter: Option<String>,
    filter_offered: Arc<AtomicBool>,
}

impl<T> TeeTransport<T> {
    pub fn new(inner: T, tee: Tee) -> Self {
        Self { inner, tee, filter: None, filter_offered: Arc::default() }
    }

    /// Asks every `fetch` request for objects filtered by `spec`
    /// (`blob:none`, `blob:limit=<bytes>`) when the handshake offered
    /// filters; a server that does not would refuse the argument.
    pub fn with_filter(mut self, spec: impl Into<String>) -> Self {
        self.filter = Some(spec.into());
        self
    }

    /// Set by the handshake: whether the server speaks protocol v2 and
    /// its `fetch` command accepts `filter`.
    pub fn filter_offered(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.filter_offered)
    }
}

impl<T: TransportWithoutIO> TransportWithoutIO for TeeTransport<T> {
    fn set_identity(&mut self, identity: gix::sec::identity::Account) -> Result<(), client::Error> {
        self.inner.set_identity(identity)
    }

    fn to_url(&self) -> std::borrow::Cow<'_, gix::bstr::BStr> {
        self.inner.to_url()
    }

    fn supported_protocol_versions(&self) -> &[gix::protocol::transport::Protocol] {
        self.inner.supported_protocol_versions()
    }

    fn connection_persists_across_multiple_requests(&self) -> bool {
        self.inner.connection_persists_across_multiple_requests()
    }

    fn configure(&mut self, config: &dyn std::any::Any) -> gix::Result {
        self.inner.configure(config)
    }
}

impl<T: Transport> Transport for TeeTransport<T> {
    fn handshake<'a>(
        &mut self,
        service: gix::protocol::transport::Service,
        extra_parameters: &'a [(&'a str, Option<&'a str>)],
    ) -> Result<SetServiceResponse<'_>, client::Error> {
        let response = self.inner.handshake(service, extra_parameters)?;
        let offered = response.actual_protocol == gix::protocol::transport::Protocol::V2
            && response.capabilities.capability("fetch").and_then(|fetch| fetch.supports("filter")).unwrap_or(false);
        self.filter_offered.store(offered, Ordering::Relaxed);
        Ok(response)
    }

    fn request(
        &mut self,
        write_mode: WriteMode,
        on_into_read: MessageKind,
        trace: bool,
    ) -> Result<RequestWriter<'_>, client::Error> {
        let tee = self.tee.clone();
        let (writer, reader) = self.inner.request(write_mode, on_into_read, trace)?.into_parts();
        let reader = Box::new(TeeReader { inner: reader, tee });
        let filter = self.filter.as_deref().filter(|_| self.filter_offered.load(Ordering::Relaxed));
        Ok(match filter {
            Some(spec) => {
                let writer = FilterArgument::new(writer, spec);
                RequestWriter::new_from_bufread(writer, reader, write_mode, on_into_read, trace)
            }
            None => RequestWriter::new_from_bufread(writer, reader, write_mode, on_into_read, trace),
        })
    }
}

/// Passes a request's packet lines through to `inner`, and in a protocol
/// v2 `fetch` request (first line `command=fetch`) adds `filter <spec>`
/// right after the delimiter that opens the arguments.
struct FilterArgument<W> {
    inner: W,
    /// The encoded `filter <spec>` line.
    argument: Vec<u8>,
    /// Bytes of a packet line not complete yet.
    pending: Vec<u8>,
    /// Complete packet lines seen so far.
    lines: usize,
    fetch: bool,
    added: bool,
}

impl<W: io::Write> FilterArgument<W> {
    fn new(inner: W, spec: &str) -> Self {
        let payload = format!("filter {spec}\n");
        let argument = format!("{:04x}{payload}", payload.len() + 4).into_bytes();
        Self { inner, argument, pending: Vec::new(), lines: 0, fetch: false, added: false }
    }

    /// The length of the complete packet line at the start of `pending`.
    fn complete_line(&self) -> io::Result<Option<usize>> {
        let Some(prefix) = self.pending.get(..4) else { return Ok(None) };
        let length = std::str::from_utf8(prefix)
            .ok()
            .and_then(|hex| usize::from_str_radix(hex, 16).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a request line without its length"))?;
        // `0000` to `0002` are the flush, delimiter and response-end lines.
        let length = if length < 4 { 4 } else { length };
        Ok((self.pending.len() >= length).then_some(length))
    }
}

impl<W: io::Write> io::Write for FilterArgument<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(length) = self.complete_line()? {
            let line: Vec<u8> = self.pending.drain(..length).collect();
            if self.lines == 0 {
                self.fetch = line.get(4..).is_some_and(|payload| payload.starts_with(b"command=fetch"));
            }
            self.lines += 1;
            self.inner.write_all(&line)?;
            if self.fetch && !self.added && line == b"0001" {
                self.inner.write_all(&self.argument)?;
                self.added = true;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A response reader that copies what is read through `Read` and
/// `BufRead` to its tee.
struct TeeReader<'a> {
    inner: Box<dyn ExtendedBufRead<'a> + Unpin + 'a>,
    tee: Tee,
}

impl Read for TeeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.tee.copy(&buf[..read]);
        Ok(read)
    }
}

impl BufRead for TeeReader<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        if let Ok(buffer) = self.inner.fill_buf() {
            let amount = amount.min(buffer.len());
            self.tee.copy(&buffer[..amount]);
        }
        self.inner.consume(amount);
    }
}

impl ReadlineBufRead for TeeReader<'_> {
    fn readline(&mut self) -> Option<io::Result<gix::Result<gix::protocol::transport::packetline::PacketLineRef<'_>>>> {
        self.inner.readline()
    }

    fn readline_str(&mut self, line: &mut String) -> io::Result<usize> {
        self.inner.readline_str(line)
    }
}

impl<'a> ExtendedBufRead<'a> for TeeReader<'a> {
    fn set_progress_handler(&mut self, handle_progress: Option<HandleProgress<'a>>) {
        self.inner.set_progress_handler(handle_progress);
    }

    fn peek_data_line(&mut self) -> Option<io::Result<Result<&[u8], client::Error>>> {
        self.inner.peek_data_line()
    }

    fn reset(&mut self, version: gix::protocol::transport::Protocol) {
        self.inner.reset(version);
    }

    fn stopped_at(&self) -> Option<MessageKind> {
        self.inner.stopped_at()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::Path;
    use std::process::{Command, Stdio};

    /// Packet lines as gix writes them: each line, then flush or delimiter.
    fn packet(payload: &str) -> Vec<u8> {
        format!("{:04x}{payload}", payload.len() + 4).into_bytes()
    }

    fn filtered(request: &[u8], splits: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer = FilterArgument::new(&mut out, "blob:none");
        let mut at = 0;
        for &split in splits.iter().chain(std::iter::once(&request.len())) {
            io::Write::write_all(&mut writer, &request[at..split]).unwrap();
            at = split;
        }
        io::Write::flush(&mut writer).unwrap();
        out
    }

    #[test]
    fn a_fetch_request_gains_the_filter_after_its_delimiter_however_it_is_written() {
        let mut fetch = packet("command=fetch\n");
        fetch.extend(packet("agent=git/2.0\n"));
        fetch.extend(b"0001");
        let arguments = [packet("want 0123456789012345678901234567890123456789\n"), packet("done\n")].concat();
        fetch.extend(&arguments);
        fetch.extend(b"0000");
        let mut expected = packet("command=fetch\n");
        expected.extend(packet("agent=git/2.0\n"));
        expected.extend(b"0001");
        expected.extend(packet("filter blob:none\n"));
        expected.extend(&arguments);
        expected.extend(b"0000");
        assert_eq!(filtered(&fetch, &[]), expected);
        // Lines split across writes, and a write ending inside a length.
        assert_eq!(filtered(&fetch, &[2, 19, 20, 40, 41, 42, 43]), expected);
        let every_byte: Vec<usize> = (1..fetch.len()).collect();
        assert_eq!(filtered(&fetch, &every_byte), expected);
    }

    #[test]
    fn other_requests_pass_through_unchanged() {
        let mut ls_refs = packet("command=ls-refs\n");
        ls_refs.extend(b"0001");
        ls_refs.extend(packet("peel\n"));
        ls_refs.extend(packet("ref-prefix refs/heads/\n"));
        ls_refs.extend(b"0000");
        assert_eq!(filtered(&ls_refs, &[7]), ls_refs);
        // A line that only mentions fetch later is no fetch request.
        let mut other = packet("command=object-info\n");
        other.extend(b"0001");
        other.extend(packet("command=fetch\n"));
        other.extend(b"0000");
        assert_eq!(filtered(&other, &[]), other);
    }

    #[test]
    fn a_request_line_without_a_length_is_an_error() {
        let mut out = Vec::new();
        let mut writer = FilterArgument::new(&mut out, "blob:none");
        let error = io::Write::write_all(&mut writer, b"zzzzcommand=fetch").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }

    /// Runs `git` in `dir` with a private identity and `input` on stdin; its
    /// stdout. Also the overlap tests' way to build repositories and packs.
    pub(crate) fn git(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        let mut child = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = input.map(<[u8]>::to_vec).unwrap_or_default();
        let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
        let output = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        output.stdout
    }

    /// A repository whose history makes `git pack-objects` write deltas:
    /// one large file edited over several commits, and near copies.
    pub fn repository_with_deltas(root: &Path) {
        git(root, &["init", "-q", "-b", "main"], None);
        let base: String = (0..400).map(|line| format!("fn line_{line}() -> usize {{ {line} }}\n")).collect();
        std::fs::create_dir_all(root.join("src")).unwrap();
        for round in 0..4 {
            let edited = base.replace(&format!("line_{}()", round * 50), &format!("edited_{round}()"));
            std::fs::write(root.join("src/big.rs"), &edited).unwrap();
            std::fs::write(root.join(format!("src/copy{round}.rs")), format!("{edited}// copy {round}\n")).unwrap();
            git(root, &["add", "-A"], None);
            git(root, &["commit", "-q", "-m", &format!("round {round}")], None);
        }
        git(root, &["tag", "-a", "v1", "-m", "tag"], None);
    }

    /// Every object of `repo` by id: (kind, content).
    fn objects_of(repo: &Path) -> HashMap<ObjectId, (String, Vec<u8>)> {
        let listing = git(repo, &["cat-file", "--batch-all-objects", "--batch"], None);
        let mut out = HashMap::new();
        let mut rest = listing.as_slice();
        while !rest.is_empty() {
            let newline = rest.iter().position(|&byte| byte == b'\n').unwrap();
            let header = std::str::from_utf8(&rest[..newline]).unwrap().to_string();
            let mut parts = header.split(' ');
            let id = ObjectId::from_hex(parts.next().unwrap().as_bytes()).unwrap();
            let kind = parts.next().unwrap().to_string();
            let size: usize = parts.next().unwrap().parse().unwrap();
            let content = rest[newline + 1..newline + 1 + size].to_vec();
            rest = &rest[newline + 2 + size..];
            out.insert(id, (kind, content));
        }
        out
    }

    /// Feeds `bytes` to a decoder in `chunk`-byte pieces from another
    /// thread, as a transfer would.
    fn decode_in_pieces(bytes: Vec<u8>, chunk: usize) -> Result<Vec<Decoded>, PackStreamError> {
        let tee = Tee::default();
        let reader = tee.attach();
        let feeder = std::thread::spawn(move || {
            for piece in bytes.chunks(chunk) {
                tee.copy(piece);
            }
            tee.detach();
        });
        let decoded: Result<Vec<Decoded>, PackStreamError> = PackDecoder::new(reader)?.collect();
        feeder.join().unwrap();
        decoded
    }

    #[test]
    fn packs_of_git_pack_objects_decode_with_ofs_and_ref_deltas() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        repository_with_deltas(root);
        let expected = objects_of(root);
        let wants = git(root, &["rev-parse", "--all"], None);
        for (args, chunk) in [
            (vec!["pack-objects", "--revs", "--stdout", "--delta-base-offset"], 7),
            (vec!["pack-objects", "--revs", "--stdout"], 1),
            (vec!["pack-objects", "--revs", "--stdout", "--delta-base-offset"], 65_536),
        ] {
            let pack = git(root, &args, Some(&wants));
            let decoded = decode_in_pieces(pack, chunk).unwrap_or_else(|error| panic!("{args:?}: {error}"));
            assert_eq!(decoded.len(), expected.len(), "{args:?}: every object once");
            assert!(decoded.iter().filter(|object| object.deltified).count() >= 4, "{args:?}: the pack has deltas");
            for object in &decoded {
                let (kind, content) = &expected[&object.id];
                assert_eq!(kind.as_bytes(), object.kind.as_bytes(), "{}", object.id);
                assert_eq!(content.as_slice(), &*object.data, "{}", object.id);
            }
        }
    }

    #[test]
    fn a_truncated_or_foreign_stream_fails_instead_of_decoding_wrongly() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        repository_with_deltas(root);
        let wants = git(root, &["rev-parse", "--all"], None);
        let pack = git(root, &["pack-objects", "--revs", "--stdout", "--delta-base-offset"], Some(&wants));
        let cut = pack[..pack.len() / 2].to_vec();
        assert!(matches!(decode_in_pieces(cut, 100), Err(PackStreamError::Io(_))));
        let mut corrupted = pack.clone();
        let middle = corrupted.len() / 2;
        for byte in &mut corrupted[middle..middle + 64] {
            *byte ^= 0x5a;
        }
        assert!(decode_in_pieces(corrupted, 4096).is_err());
        assert!(matches!(decode_in_pieces(b"0008NAK\n0000PACKED".to_vec(), 3), Err(PackStreamError::NotAPack { .. })));
    }

    #[test]
    fn a_pack_needing_more_memory_than_the_limit_stops_decoding() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        repository_with_deltas(root);
        let wants = git(root, &["rev-parse", "--all"], None);
        let pack = git(root, &["pack-objects", "--revs", "--stdout", "--delta-base-offset"], Some(&wants));
        let decoder = PackDecoder::new(std::io::Cursor::new(pack.clone())).unwrap().with_limit(4096);
        let decoded: Result<Vec<_>, _> = decoder.collect();
        assert!(matches!(decoded, Err(PackStreamError::TooLarge { limit: 4096 })), "{decoded:?}");
        let whole: Result<Vec<_>, _> = PackDecoder::new(std::io::Cursor::new(pack)).unwrap().collect();
        assert!(whole.is_ok(), "the default limit decodes the same pack");
    }

    #[test]
    fn deltas_copy_and_insert() {
        let base = b"hello, world";
        // base size 12, result size 12: copy 7 bytes from 0, insert "there".
        let delta = [12, 12, 0x80 | 0x10, 7, 5, b't', b'h', b'e', b'r', b'e'];
        assert_eq!(apply_delta(base, &delta).unwrap(), b"hello, there");
        assert!(apply_delta(b"short", &delta).is_err());
        assert!(apply_delta(base, &[12, 12, 0]).is_err());
        assert!(apply_delta(base, &delta[..delta.len() - 1]).is_err());
    }
}

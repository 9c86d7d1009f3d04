//! The transport every remote fetch goes through: gix's own, wrapped by
//! [`FilterTransport`] so that a fetch can ask for an object filter.
//!
//! gix 0.90 has the protocol v2 `filter` argument but no way to ask for
//! it. The wrapper notes whether the server's handshake offers filters
//! and, when it does, adds `filter <spec>` ([`FilterArgument`]) after the
//! delimiter of each `fetch` request; remote mode asks for
//! `blob:limit=<bytes>` so blobs too large to search stay on the server.
//! Everything else passes through unchanged, and a server that offers no
//! filters never sees the argument (it would refuse it).

use gix::protocol::transport::client::{
    self, MessageKind, TransportWithoutIO, WriteMode,
    blocking_io::{RequestWriter, SetServiceResponse, Transport},
};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A transport that behaves exactly like `inner`, except that it notes
/// whether the server's handshake offers object filters
/// ([`FilterTransport::filter_offered`]) and [`FilterTransport::with_filter`]
/// then adds a `filter <spec>` argument to each protocol v2 `fetch`
/// request.
pub struct FilterTransport<T> {
    inner: T,
    filter: Option<String>,
    filter_offered: Arc<AtomicBool>,
}

impl<T> FilterTransport<T> {
    pub fn new(inner: T) -> Self {
        Self { inner, filter: None, filter_offered: Arc::default() }
    }

    /// Asks every `fetch` request for objects filtered by `spec`
    /// (`blob:limit=<bytes>`) when the handshake offered filters; a server
    /// that does not would refuse the argument.
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

impl<T: TransportWithoutIO> TransportWithoutIO for FilterTransport<T> {
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

impl<T: Transport> Transport for FilterTransport<T> {
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
        let filter = self.filter.clone().filter(|_| self.filter_offered.load(Ordering::Relaxed));
        let request = self.inner.request(write_mode, on_into_read, trace)?;
        Ok(match filter {
            Some(spec) => {
                let (writer, reader) = request.into_parts();
                let writer = FilterArgument::new(writer, &spec);
                RequestWriter::new_from_bufread(writer, reader, write_mode, on_into_read, trace)
            }
            None => request,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

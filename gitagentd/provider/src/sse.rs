//! Server-sent event framing: turns the bytes of a `text/event-stream`
//! body into the `data` payloads of complete events. An event is complete
//! only once its terminating blank line arrived, so a body cut off in the
//! middle of an event yields nothing for it. One line and one event are
//! capped, so an endpoint that never ends a line or an event cannot make
//! the daemon buffer without bound.

use super::StreamCap;

/// Incremental decoder; feed it body chunks in order.
#[derive(Debug)]
pub struct SseDecoder {
    /// The most bytes one line may hold, line break excluded.
    max_line: usize,
    /// The most bytes the joined `data` of one event may hold.
    max_event: usize,
    /// Bytes of the line being read.
    line: Vec<u8>,
    /// `data:` lines of the event being read, joined by newlines.
    data: Option<String>,
    /// Whether the previous byte was a carriage return, so that a
    /// following line feed belongs to the same line break.
    after_cr: bool,
}

/// A line or an event went over its cap; the cap that broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapExceeded(pub StreamCap);

impl SseDecoder {
    pub fn new(max_line: usize, max_event: usize) -> Self {
        Self { max_line, max_event, line: Vec::new(), data: None, after_cr: false }
    }

    /// Consumes `chunk` and returns the data of every event it completed,
    /// or the cap a line or an event broke.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, CapExceeded> {
        let mut events = Vec::new();
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.after_cr && rest[0] == b'\n' {
                self.after_cr = false;
                rest = &rest[1..];
                continue;
            }
            let Some(end) = rest.iter().position(|&byte| byte == b'\n' || byte == b'\r') else {
                self.push_line(rest)?;
                break;
            };
            self.push_line(&rest[..end])?;
            self.after_cr = rest[end] == b'\r';
            self.end_line(&mut events)?;
            rest = &rest[end + 1..];
        }
        Ok(events)
    }

    fn push_line(&mut self, bytes: &[u8]) -> Result<(), CapExceeded> {
        if !bytes.is_empty() {
            self.after_cr = false;
        }
        if self.line.len() + bytes.len() > self.max_line {
            return Err(CapExceeded(StreamCap::Line));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<String>) -> Result<(), CapExceeded> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                events.push(data);
            }
            return Ok(());
        }
        let line = String::from_utf8_lossy(&line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        // Comments (`: keep-alive`), `event:`, `id:` and `retry:` lines
        // carry nothing the Responses stream needs: its JSON names itself.
        if field == "data" {
            let data = self.data.get_or_insert_with(String::new);
            let separator = usize::from(!data.is_empty());
            if data.len() + separator + value.len() > self.max_event {
                return Err(CapExceeded(StreamCap::Event));
            }
            if separator == 1 {
                data.push('\n');
            }
            data.push_str(value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoder() -> SseDecoder {
        SseDecoder::new(1024, 1024)
    }

    #[test]
    fn events_end_at_blank_lines_across_chunks() {
        let mut decoder = decoder();
        assert!(decoder.feed(b"event: x\ndata: {\"a\"").unwrap().is_empty());
        assert_eq!(decoder.feed(b":1}\n\n: comment\n\ndata: two\r\n\r\n").unwrap(), vec!["{\"a\":1}", "two"]);
        assert_eq!(decoder.feed(b"data: a\ndata: b\r\rdata: [DONE]\n\n").unwrap(), vec!["a\nb", "[DONE]"]);
    }

    #[test]
    fn a_line_break_split_across_chunks_is_one_break() {
        let mut decoder = decoder();
        assert!(decoder.feed(b"data: a\r").unwrap().is_empty());
        assert!(decoder.feed(b"\ndata: b\r").unwrap().is_empty());
        assert_eq!(decoder.feed(b"\n\r\n").unwrap(), vec!["a\nb"]);
    }

    #[test]
    fn an_unterminated_event_is_never_emitted() {
        let mut decoder = decoder();
        assert!(decoder.feed(b"data: {\"type\":\"response.completed\"}\n").unwrap().is_empty());
    }

    #[test]
    fn a_line_over_its_cap_is_refused_even_across_chunks() {
        let mut decoder = SseDecoder::new(16, 1024);
        assert!(decoder.feed(b"data: 0123456789").unwrap().is_empty(), "exactly at the cap");
        assert_eq!(decoder.feed(b"x"), Err(CapExceeded(StreamCap::Line)));
        let mut comments = SseDecoder::new(16, 1024);
        assert_eq!(comments.feed(b": a comment longer than the cap\n"), Err(CapExceeded(StreamCap::Line)));
    }

    #[test]
    fn an_event_over_its_cap_is_refused_though_each_line_fits() {
        let mut decoder = SseDecoder::new(64, 10);
        assert_eq!(decoder.feed(b"data: 01234\ndata: 5678\n\n").unwrap(), vec!["01234\n5678"]);
        assert_eq!(decoder.feed(b"data: 01234\ndata: 56789\n"), Err(CapExceeded(StreamCap::Event)));
    }
}

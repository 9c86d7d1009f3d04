//! Server-sent event framing: turns the bytes of a `text/event-stream`
//! body into the `data` payloads of complete events. An event is complete
//! only once its terminating blank line arrived, so a body cut off in the
//! middle of an event yields nothing for it.

/// Incremental decoder; feed it body chunks in order.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the line being read.
    line: Vec<u8>,
    /// `data:` lines of the event being read, joined by newlines.
    data: Option<String>,
    /// Whether the previous byte was a carriage return, so that a
    /// following line feed belongs to the same line break.
    after_cr: bool,
}

impl SseDecoder {
    /// Consumes `chunk` and returns the data of every event it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    self.end_line(&mut events);
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(byte);
                }
            }
        }
        events
    }

    fn end_line(&mut self, events: &mut Vec<String>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                events.push(data);
            }
            return;
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
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_end_at_blank_lines_across_chunks() {
        let mut decoder = SseDecoder::default();
        assert!(decoder.feed(b"event: x\ndata: {\"a\"").is_empty());
        assert_eq!(decoder.feed(b":1}\n\n: comment\n\ndata: two\r\n\r\n"), vec!["{\"a\":1}", "two"]);
        assert_eq!(decoder.feed(b"data: a\ndata: b\r\rdata: [DONE]\n\n"), vec!["a\nb", "[DONE]"]);
    }

    #[test]
    fn an_unterminated_event_is_never_emitted() {
        let mut decoder = SseDecoder::default();
        assert!(decoder.feed(b"data: {\"type\":\"response.completed\"}\n").is_empty());
    }
}

//! The stdio framing of `git-agent mcp`, in front of rmcp's transport. A
//! line from stdin that is not JSON is answered with JSON-RPC's parse error
//! (code -32700, `id` null) and the session goes on; rmcp alone would drop
//! it without a word, leaving the peer waiting for an answer. Every other
//! line reaches rmcp untouched, and rmcp's messages and those errors reach
//! stdout one whole line at a time, never interleaved.

use rmcp::model::ErrorCode;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The longest line read, as rmcp's own stdio transport bounds it.
const MAX_LINE: usize = 16 * 1024 * 1024;
/// The buffer between this framing and rmcp, each way.
const PIPE_BYTES: usize = 64 * 1024;
/// Parse errors waiting for stdout; a peer that floods stdin with them and
/// never reads is slowed down, not buffered without bound.
const PENDING_ERRORS: usize = 64;

/// Frames `input` and `output` for rmcp: returns the stream rmcp serves
/// on, and the task writing `output`, which ends once rmcp has closed its
/// side and every message was written (await it before exiting).
pub fn frame<R, W>(input: R, output: W) -> (DuplexStream, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let (errors, pending) = mpsc::channel(PENDING_ERRORS);
    tokio::spawn(inbound(BufReader::new(input), to_rmcp, errors));
    let writer = tokio::spawn(outbound(BufReader::new(from_rmcp), pending, output));
    (rmcp, writer)
}

/// One line of stdin, as rmcp would take it.
#[derive(Debug, PartialEq)]
enum Line {
    /// JSON (or blank): rmcp's to read.
    Pass,
    /// Not JSON: answered with this parse error.
    NotJson(String),
}

fn classify(line: &[u8]) -> Line {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    if text.is_empty() {
        return Line::Pass;
    }
    let Ok(text) = std::str::from_utf8(text) else {
        return Line::NotJson("parse error: the line is not UTF-8, so not JSON".to_string());
    };
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => Line::Pass,
        Err(error) => Line::NotJson(format!("parse error: the line is not JSON ({error})")),
    }
}

/// The JSON-RPC 2.0 response to a message that could not be parsed.
fn parse_error(message: &str) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: (),
        error: Error<'a>,
    }
    #[derive(serde::Serialize)]
    struct Error<'a> {
        code: i32,
        message: &'a str,
    }
    let response = Response { jsonrpc: "2.0", id: (), error: Error { code: ErrorCode::PARSE_ERROR.0, message } };
    let mut line = serde_json::to_vec(&response).unwrap_or_default();
    line.push(b'\n');
    line
}

/// What [`read_line`] found.
enum Read {
    Line,
    /// Longer than [`MAX_LINE`]; read to its end and dropped.
    Oversized,
    Eof,
}

/// Reads one `\n`-terminated line into `line`, never holding more than
/// [`MAX_LINE`] bytes of it. A last line without its newline is dropped,
/// as rmcp drops it.
async fn read_line(reader: &mut (impl AsyncBufRead + Unpin), line: &mut Vec<u8>) -> std::io::Result<Read> {
    line.clear();
    let mut oversized = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(Read::Eof);
        }
        let (used, complete) = match available.iter().position(|&byte| byte == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        if !oversized {
            if line.len() + used > MAX_LINE {
                oversized = true;
                line.clear();
            } else {
                line.extend_from_slice(&available[..used]);
            }
        }
        reader.consume(used);
        if complete {
            return Ok(if oversized { Read::Oversized } else { Read::Line });
        }
    }
}

/// Reads stdin: JSON lines go to rmcp, the others become parse errors. At
/// the end of stdin rmcp's input ends too, which ends the session.
async fn inbound(
    mut input: impl AsyncBufRead + Unpin,
    mut to_rmcp: impl AsyncWrite + Unpin,
    errors: mpsc::Sender<Vec<u8>>,
) {
    let mut line = Vec::new();
    loop {
        let error = match read_line(&mut input, &mut line).await {
            Ok(Read::Eof) | Err(_) => break,
            Ok(Read::Oversized) => {
                parse_error(&format!("parse error: the line is longer than {} MiB; it was not read", MAX_LINE >> 20))
            }
            Ok(Read::Line) => match classify(&line) {
                Line::Pass => {
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                    continue;
                }
                Line::NotJson(message) => parse_error(&message),
            },
        };
        if errors.send(error).await.is_err() {
            break;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Writes rmcp's messages and the parse errors to stdout, each line whole,
/// until rmcp closes its side.
async fn outbound(
    mut from_rmcp: impl AsyncBufRead + Unpin,
    mut errors: mpsc::Receiver<Vec<u8>>,
    mut output: impl AsyncWrite + Unpin,
) {
    let mut message = Vec::new();
    let mut errors_open = true;
    loop {
        message.clear();
        let line = tokio::select! {
            biased;
            error = errors.recv(), if errors_open => match error {
                Some(error) => error,
                None => {
                    errors_open = false;
                    continue;
                }
            },
            read = from_rmcp.read_until(b'\n', &mut message) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => std::mem::take(&mut message),
            },
        };
        if output.write_all(&line).await.and(output.flush().await).is_err() {
            return;
        }
    }
    // rmcp is done; parse errors already queued still get their answer.
    while let Ok(error) = errors.try_recv() {
        if output.write_all(&error).await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_are_not_json_are_parse_errors() {
        for passed in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..],
            b"{\"jsonrpc\":\"2.0\"}\r\n",
            b"\xEF\xBB\xBF{}\n",
            b"[1, 2]\n",
            b"\n",
            b"\r\n",
        ] {
            assert_eq!(classify(passed), Line::Pass, "{}", String::from_utf8_lossy(passed));
        }
        for refused in [&b"hello\n"[..], b"{\"jsonrpc\":\n", b"{\"a\":\"\xFF\"}\n", b"{} {}\n"] {
            assert!(matches!(classify(refused), Line::NotJson(_)), "{}", String::from_utf8_lossy(refused));
        }
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_is_answered_and_the_rest_passes_through() {
        let input: &[u8] = b"not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        let (output, mut written) = tokio::io::duplex(4096);
        let (rmcp, writer) = frame(input, output);
        let (mut rmcp_in, mut rmcp_out) = tokio::io::split(rmcp);
        let mut received = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut rmcp_in, &mut received).await.unwrap();
        assert_eq!(received, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        rmcp_out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n").await.unwrap();
        drop((rmcp_in, rmcp_out));
        writer.await.unwrap();
        let mut stdout = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut written, &mut stdout).await.unwrap();
        let lines: Vec<serde_json::Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{stdout}");
        assert_eq!(lines[0]["id"], serde_json::Value::Null);
        assert_eq!(lines[0]["error"]["code"], -32700);
        assert_eq!(lines[1]["result"], serde_json::json!({}));
    }
}

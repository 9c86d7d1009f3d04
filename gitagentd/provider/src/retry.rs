//! Which broken streams deserve the one equivalent retry. The rule is
//! narrow on purpose: a stream that ended (cleanly or mid-transfer)
//! without `response.completed`, a complete event that is not valid JSON,
//! or an HTTP/2 stream reset by the peer with INTERNAL_ERROR or
//! REFUSED_STREAM. Everything else (HTTP errors, connect failures,
//! timeouts, local resets, other or future reset codes) is terminal.

/// How a stream broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamBreak {
    /// The body ended before `response.completed`.
    MissingCompleted,
    /// A complete event was not valid JSON, or not the shape its type
    /// announces.
    MalformedEvent { snippet: String },
    /// The connection closed in the middle of the body.
    TruncatedBody,
    /// An HTTP/2 stream reset with this error code.
    Reset { code: u32, by_peer: bool },
}

impl std::fmt::Display for StreamBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MissingCompleted => f.write_str("the stream ended without response.completed"),
            Self::MalformedEvent { snippet } => write!(f, "the stream carried a malformed event: {snippet}"),
            Self::TruncatedBody => f.write_str("the connection closed in the middle of the stream"),
            Self::Reset { code, by_peer } => {
                let who = if *by_peer { "the provider" } else { "this client" };
                write!(f, "{who} reset the HTTP/2 stream ({})", h2::Reason::from(*code))
            }
        }
    }
}

/// Why a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    MalformedStream,
    PeerStreamReset,
}

impl RetryReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MalformedStream => "malformed_stream",
            Self::PeerStreamReset => "peer_stream_reset",
        }
    }
}

/// The retry reason for `brk`, or `None` when retrying cannot help.
pub fn retry_reason(brk: &StreamBreak) -> Option<RetryReason> {
    match brk {
        StreamBreak::MissingCompleted | StreamBreak::MalformedEvent { .. } | StreamBreak::TruncatedBody => {
            Some(RetryReason::MalformedStream)
        }
        StreamBreak::Reset { code, by_peer: true }
            if *code == u32::from(h2::Reason::INTERNAL_ERROR) || *code == u32::from(h2::Reason::REFUSED_STREAM) =>
        {
            Some(RetryReason::PeerStreamReset)
        }
        StreamBreak::Reset { .. } => None,
    }
}

/// What broke, when a transport error is a broken stream at all.
pub(super) fn classify_transport(error: &reqwest::Error) -> Option<StreamBreak> {
    if error.is_timeout() || error.is_connect() || error.is_builder() || error.is_redirect() {
        return None;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(h2) = cause.downcast_ref::<h2::Error>() {
            return match h2.reason() {
                Some(reason) if h2.is_reset() => {
                    Some(StreamBreak::Reset { code: reason.into(), by_peer: h2.is_remote() })
                }
                _ => None,
            };
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::UnexpectedEof
        {
            return Some(StreamBreak::TruncatedBody);
        }
        source = cause.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reset(reason: h2::Reason, by_peer: bool) -> StreamBreak {
        StreamBreak::Reset { code: reason.into(), by_peer }
    }

    #[test]
    fn positive_cases_retry() {
        assert_eq!(retry_reason(&StreamBreak::MissingCompleted), Some(RetryReason::MalformedStream));
        assert_eq!(retry_reason(&StreamBreak::TruncatedBody), Some(RetryReason::MalformedStream));
        let malformed = StreamBreak::MalformedEvent { snippet: "{".into() };
        assert_eq!(retry_reason(&malformed), Some(RetryReason::MalformedStream));
        assert_eq!(retry_reason(&reset(h2::Reason::INTERNAL_ERROR, true)), Some(RetryReason::PeerStreamReset));
        assert_eq!(retry_reason(&reset(h2::Reason::REFUSED_STREAM, true)), Some(RetryReason::PeerStreamReset));
    }

    #[test]
    fn negative_and_future_cases_do_not_retry() {
        assert_eq!(retry_reason(&reset(h2::Reason::CANCEL, true)), None, "a cancel is deliberate");
        assert_eq!(retry_reason(&reset(h2::Reason::INTERNAL_ERROR, false)), None, "a local reset is ours");
        assert_eq!(retry_reason(&reset(h2::Reason::ENHANCE_YOUR_CALM, true)), None);
        assert_eq!(retry_reason(&reset(h2::Reason::from(0x77), true)), None, "unknown future codes are terminal");
    }
}

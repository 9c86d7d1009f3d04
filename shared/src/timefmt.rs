//! The one place where times and durations become text and back, for
//! both binaries. Timestamps go through `jiff`: RFC 3339 in UTC with the
//! nanoseconds trimmed of trailing zeros (what task records, search
//! manifests and history rows hold, like the original's
//! `time.RFC3339Nano`), or in a commit's own offset. Durations are written
//! and read in Go's notation (`90s`, `1m30s`, `1.5h`, `250ms`), which the
//! original implementation's flags and diagnostics use and `jiff`'s
//! formats do not follow exactly.

use jiff::Timestamp;
use std::time::{Duration, SystemTime};

/// `2006-01-02T15:04:05.999999999Z`, trailing zeros of the fraction
/// trimmed, no fraction when it is zero.
pub fn format_rfc3339(time: Timestamp) -> String {
    time.to_string()
}

/// `2006-01-02T15:04:05Z`: whole seconds, the fraction dropped.
pub fn format_rfc3339_seconds(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A commit time in its own offset: `2026-01-01T22:04:05-05:00`, or with
/// `Z` when the offset is zero. `None` when either part is out of range.
pub fn format_rfc3339_in_offset(seconds: i64, offset_seconds: i32) -> Option<String> {
    let time = Timestamp::from_second(seconds).ok()?;
    let offset = jiff::tz::Offset::from_seconds(offset_seconds).ok()?;
    let format = if offset_seconds == 0 { "%Y-%m-%dT%H:%M:%SZ" } else { "%Y-%m-%dT%H:%M:%S%:z" };
    Some(time.to_zoned(jiff::tz::TimeZone::fixed(offset)).strftime(format).to_string())
}

/// `15:04:05` in UTC, for console diagnostics.
pub fn format_clock(time: Timestamp) -> String {
    time.strftime("%H:%M:%S").to_string()
}

/// Reads an RFC 3339 timestamp with any offset.
pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp (0 when it
/// does not parse).
pub fn unix_millis(text: &str) -> i64 {
    parse_rfc3339(text).map_or(0, |time| time.as_millisecond())
}

/// Nanoseconds since the Unix epoch (negative before it).
pub fn unix_nanos(time: SystemTime) -> i128 {
    Timestamp::try_from(time).map_or(0, |time| time.as_nanosecond())
}

/// The timestamp `nanos` nanoseconds after the Unix epoch, when in range.
pub fn from_unix_nanos(nanos: i128) -> Option<Timestamp> {
    Timestamp::from_nanosecond(nanos).ok()
}

/// A duration as milliseconds with three decimals (`12.345`), the unit of
/// the `--debug` timing events.
pub fn format_millis(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64() * 1000.0)
}

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?}; write it like 90s, 2m or 1m30s")]
    Invalid(String),
    #[error("the duration {0:?} must be positive")]
    NotPositive(String),
}

/// Reads a duration written like Go's `time.ParseDuration`: decimal
/// numbers with units (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`), such as
/// `90s`, `1m30s`, `1.5h` or `250ms`; a bare `0` is zero. No sign, no
/// spaces.
pub fn parse_go_duration(text: &str) -> Result<Duration, DurationError> {
    const UNITS: [(&str, f64); 7] =
        [("ns", 1e-9), ("us", 1e-6), ("\u{b5}s", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];
    let invalid = || DurationError::Invalid(text.to_string());
    let trimmed = text.trim();
    if trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    if trimmed.is_empty() {
        return Err(invalid());
    }
    let mut rest = trimmed;
    let mut seconds = 0f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let factor =
            UNITS.iter().find(|(unit, _)| *unit == &rest[..unit_len]).map(|(_, factor)| *factor).ok_or_else(invalid)?;
        seconds += number * factor;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| invalid())
}

/// [`parse_go_duration`] for flags that need a positive duration
/// (`--timeout`).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let duration = parse_go_duration(text)?;
    if duration.is_zero() {
        return Err(DurationError::NotPositive(text.to_string()));
    }
    Ok(duration)
}

/// A duration as a user would write it for `--timeout`: whole minutes as
/// `5m`, anything else in seconds (`90s`, `1.5s`).
pub fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 && seconds.is_multiple_of(60) && duration.subsec_nanos() == 0 {
        format!("{}m", seconds / 60)
    } else {
        format!("{}s", duration.as_secs_f64())
    }
}

/// A duration in Go's `time.Duration.String` form after rounding to
/// milliseconds: `0s`, `12ms`, `1.234s`, `2m3.5s`, `1h0m3s`.
pub fn format_go_duration_ms(duration: Duration) -> String {
    let ms = (duration.as_nanos() + 500_000) / 1_000_000;
    if ms == 0 {
        return "0s".to_string();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (total_secs, millis) = (ms / 1000, ms % 1000);
    let (hours, minutes, secs) = (total_secs / 3600, total_secs % 3600 / 60, total_secs % 60);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&secs.to_string());
    if millis > 0 {
        out.push('.');
        out.push_str(format!("{millis:03}").trim_end_matches('0'));
    }
    out.push('s');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(nanos: i128) -> Timestamp {
        from_unix_nanos(nanos).unwrap()
    }

    #[test]
    fn timestamps_are_written_like_go_rfc3339_nano() {
        assert_eq!(format_rfc3339(at(1_767_323_045_123_456_000)), "2026-01-02T03:04:05.123456Z");
        assert_eq!(format_rfc3339(at(1_767_323_045_123_456_789)), "2026-01-02T03:04:05.123456789Z");
        assert_eq!(format_rfc3339(at(1_767_323_045_100_000_000)), "2026-01-02T03:04:05.1Z");
        assert_eq!(format_rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(at(-1_000_000_000)), "1969-12-31T23:59:59Z");
        assert_eq!(format_rfc3339_seconds(at(1_767_323_045_999_000_000)), "2026-01-02T03:04:05Z");
        assert_eq!(format_clock(at(1_767_323_045_500_000_000)), "03:04:05");
    }

    #[test]
    fn commit_times_keep_their_offset() {
        assert_eq!(format_rfc3339_in_offset(1_767_323_045, 0).unwrap(), "2026-01-02T03:04:05Z");
        assert_eq!(format_rfc3339_in_offset(1_767_323_045, -5 * 3600).unwrap(), "2026-01-01T22:04:05-05:00");
        assert_eq!(format_rfc3339_in_offset(1_767_323_045, 5 * 3600 + 30 * 60).unwrap(), "2026-01-02T08:34:05+05:30");
        assert_eq!(format_rfc3339_in_offset(i64::MAX, 0), None);
    }

    #[test]
    fn timestamps_are_read_with_any_offset() {
        let nanos = 1_767_323_045_123_456_000i128;
        assert_eq!(parse_rfc3339("2026-01-02T03:04:05.123456Z").map(|t| t.as_nanosecond()), Some(nanos));
        assert_eq!(parse_rfc3339("2026-01-02T04:04:05+01:00").map(|t| t.as_second()), Some(1_767_323_045));
        assert_eq!(unix_millis("2026-01-02T03:04:05.123456Z"), 1_767_323_045_123);
        assert_eq!(unix_millis("garbage"), 0);
        for bad in ["2026-13-02T03:04:05Z", "2026-01-02T03:04:05", "garbage", ""] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        let now = SystemTime::now();
        assert_eq!(from_unix_nanos(unix_nanos(now)).map(SystemTime::from), Some(now));
    }

    #[test]
    fn go_durations_are_read() {
        assert_eq!(parse_go_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1500us"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_go_duration("2µs"), Ok(Duration::from_micros(2)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "10", "-1s", "5 s", "5d", "s", "1.2.3s"] {
            assert_eq!(parse_go_duration(bad), Err(DurationError::Invalid(bad.into())), "{bad}");
        }
        assert_eq!(parse_duration("0s"), Err(DurationError::NotPositive("0s".into())));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(
            DurationError::Invalid("5".into()).to_string(),
            "invalid duration \"5\"; write it like 90s, 2m or 1m30s"
        );
    }

    #[test]
    fn durations_are_written_like_go_and_like_flags() {
        assert_eq!(format_go_duration_ms(Duration::from_micros(400)), "0s");
        assert_eq!(format_go_duration_ms(Duration::from_millis(12)), "12ms");
        assert_eq!(format_go_duration_ms(Duration::from_millis(1234)), "1.234s");
        assert_eq!(format_go_duration_ms(Duration::from_millis(123_500)), "2m3.5s");
        assert_eq!(format_go_duration_ms(Duration::from_secs(3603)), "1h0m3s");
        assert_eq!(format_duration(Duration::from_secs(300)), "5m");
        assert_eq!(format_duration(Duration::from_millis(60_500)), "60.5s");
        assert_eq!(format_millis(Duration::from_micros(12_345)), "12.345");
    }
}

//! RFC 3339 timestamps as the manifests and `--ls` print them, without a
//! calendar dependency: UTC only, nanoseconds with trailing zeros trimmed
//! (Go's `time.RFC3339Nano`), and a parser that also accepts offsets.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch (negative before it).
pub fn unix_nanos(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// `2006-01-02T15:04:05.999999999Z` with trailing zeros trimmed.
pub fn format_rfc3339_nanos(nanos: i128) -> String {
    let secs = nanos.div_euclid(1_000_000_000) as i64;
    let frac = nanos.rem_euclid(1_000_000_000) as u32;
    let mut out = format_seconds(secs);
    if frac > 0 {
        let digits = format!("{frac:09}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// `2006-01-02T15:04:05Z`.
pub fn format_rfc3339_seconds(nanos: i128) -> String {
    let mut out = format_seconds(nanos.div_euclid(1_000_000_000) as i64);
    out.push('Z');
    out
}

/// `15:04:05` in UTC, for console diagnostics.
pub fn format_clock(time: SystemTime) -> String {
    let secs = (unix_nanos(time).div_euclid(1_000_000_000)) as i64;
    let day_secs = secs.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", day_secs / 3600, day_secs % 3600 / 60, day_secs % 60)
}

fn format_seconds(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let day_secs = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}", day_secs / 3600, day_secs % 3600 / 60, day_secs % 60)
}

/// Parses an RFC 3339 timestamp into nanoseconds since the epoch.
pub fn parse_rfc3339(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't') {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut index = 19;
    let mut frac: i128 = 0;
    if bytes[index] == b'.' {
        index += 1;
        let start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        let digits = &text[start..index];
        if digits.is_empty() {
            return None;
        }
        let padded: String = digits.chars().chain(std::iter::repeat('0')).take(9).collect();
        frac = padded.parse().ok()?;
    }
    let offset_secs: i64 = match bytes.get(index)? {
        b'Z' | b'z' if index + 1 == bytes.len() => 0,
        sign @ (b'+' | b'-') if index + 6 == bytes.len() && bytes[index + 3] == b':' => {
            let hours = number(index + 1..index + 3)?;
            let minutes = number(index + 4..index + 6)?;
            let total = hours * 3600 + minutes * 60;
            if *sign == b'+' { total } else { -total }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Some(i128::from(secs) * 1_000_000_000 + frac)
}

/// A duration in Go's `time.Duration.String` form after rounding to
/// milliseconds: `0s`, `12ms`, `1.234s`, `2m3.5s`.
pub fn format_duration_ms(duration: Duration) -> String {
    let ms = (duration.as_nanos() + 500_000) / 1_000_000;
    if ms == 0 {
        return "0s".to_string();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let total_secs = ms / 1000;
    let millis = ms % 1000;
    let hours = total_secs / 3600;
    let minutes = total_secs % 3600 / 60;
    let secs = total_secs % 60;
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&secs.to_string());
    if millis > 0 {
        let frac = format!("{millis:03}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('s');
    out
}

/// Parses a Go duration such as `30s`, `1m30s`, `1.5h` or `250ms`.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if number_end == 0 {
            return None;
        }
        let value: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
}

// Howard Hinnant's days-from-civil algorithms.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let year = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (if month <= 2 { year + 1 } else { year }, month, day)
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        let nanos = 1_767_323_045_123_456_000i128;
        let text = format_rfc3339_nanos(nanos);
        assert_eq!(text, "2026-01-02T03:04:05.123456Z");
        assert_eq!(parse_rfc3339(&text), Some(nanos));
        assert_eq!(format_rfc3339_seconds(nanos), "2026-01-02T03:04:05Z");
        assert_eq!(parse_rfc3339("2026-01-02T04:04:05+01:00"), Some(1_767_323_045_000_000_000));
        assert_eq!(format_rfc3339_nanos(0), "1970-01-01T00:00:00Z");
        assert_eq!(parse_rfc3339("2026-13-02T03:04:05Z"), None);
        assert_eq!(parse_rfc3339("garbage"), None);
    }

    #[test]
    fn durations_read_and_print_like_go() {
        assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(format_duration_ms(Duration::from_micros(400)), "0s");
        assert_eq!(format_duration_ms(Duration::from_millis(12)), "12ms");
        assert_eq!(format_duration_ms(Duration::from_millis(1234)), "1.234s");
        assert_eq!(format_duration_ms(Duration::from_millis(123_500)), "2m3.5s");
    }
}

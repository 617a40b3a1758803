//! A point in time where a read takes a revision: RFC 3339 with at most microseconds, e.g.
//! `2026-12-03T12:00:00.123456Z` or `2026-12-03T13:00:00+01:00`. It means the last revision
//! committed at or before it. A revision argument is a revision id (a UUID) or such a time;
//! the two forms cannot be confused (a UUID's first group has eight hex digits, a time's four
//! decimal digits and a `-`).

/// Why a text that looks like a time is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed time {text:?}: {reason} (expected RFC 3339 with at most microseconds, e.g. 2026-12-03T12:00:00.123456Z)")]
pub struct TimeError {
    pub text: String,
    pub reason: &'static str,
}

/// What a revision argument is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionArg<'a> {
    /// A point in time, valid RFC 3339 (PostgreSQL's `timestamptz` reads it as is).
    Time(&'a str),
    /// Anything else: a revision id to check as one.
    Id(&'a str),
}

/// Longest time text: `YYYY-MM-DDTHH:MM:SS.ffffff+HH:MM`.
const MAX_TIME_CHARS: usize = 32;

/// Tells a time from a revision id; a text that starts like a date (`DDDD-`) must be a valid
/// time.
pub fn classify(text: &str) -> Result<RevisionArg<'_>, TimeError> {
    let b = text.as_bytes();
    let looks_like_date = b.len() >= 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-';
    if !looks_like_date {
        return Ok(RevisionArg::Id(text));
    }
    check(text)?;
    Ok(RevisionArg::Time(text))
}

/// Checks that `text` is RFC 3339 with at most six fractional digits and real calendar values.
pub fn check(text: &str) -> Result<(), TimeError> {
    let fail = |reason| TimeError {
        text: text.chars().take(MAX_TIME_CHARS + 8).collect(),
        reason,
    };
    if text.len() > MAX_TIME_CHARS {
        return Err(fail("too long"));
    }
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let s = b.get(from..from + len)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| s.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let (Some(year), Some(month), Some(day)) = (num(0, 4), num(5, 2), num(8, 2)) else {
        return Err(fail("the date must be YYYY-MM-DD"));
    };
    if !(at(4, b'-') && at(7, b'-')) {
        return Err(fail("the date must be YYYY-MM-DD"));
    }
    if !(at(10, b'T') || at(10, b't')) {
        return Err(fail("a T must separate the date and the time of day"));
    }
    let (Some(hour), Some(minute), Some(second)) = (num(11, 2), num(14, 2), num(17, 2)) else {
        return Err(fail("the time of day must be HH:MM:SS"));
    };
    if !(at(13, b':') && at(16, b':')) {
        return Err(fail("the time of day must be HH:MM:SS"));
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(fail("the month must be 01 to 12")),
    };
    if year == 0 || day == 0 || day > days {
        return Err(fail("no such date"));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(fail("no such time of day"));
    }
    let mut i = 19;
    if at(i, b'.') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 6 {
            return Err(fail("a fraction of a second has 1 to 6 digits"));
        }
        i += 1 + digits;
    }
    match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => Ok(()),
        Some(b'+' | b'-') if i + 6 == b.len() => match (num(i + 1, 2), num(i + 4, 2)) {
            (Some(h), Some(m)) if at(i + 3, b':') && h <= 23 && m <= 59 => Ok(()),
            _ => Err(fail("the offset must be Z or +HH:MM / -HH:MM")),
        },
        _ => Err(fail("the offset must be Z or +HH:MM / -HH:MM")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn times_and_ids_are_told_apart() {
        for ok in [
            "2026-12-03T12:00:00Z",
            "2026-12-03T12:00:00.123456Z",
            "2026-12-03t12:00:00.1z",
            "2024-02-29T23:59:59+05:30",
            "2026-12-03T00:00:00-00:00",
        ] {
            assert_eq!(classify(ok), Ok(RevisionArg::Time(ok)), "{ok}");
        }
        for id in ["4f1c2d3e-0000-4000-8000-000000000000", "head", "", "12345"] {
            assert_eq!(classify(id), Ok(RevisionArg::Id(id)));
        }
        for bad in [
            "2026-12-03",
            "2026-12-03 12:00:00Z",
            "2026-12-03T12:00:00",
            "2026-12-03T12:00:00.1234567Z",
            "2026-12-03T12:00:00.Z",
            "2026-02-29T12:00:00Z",
            "2026-13-01T12:00:00Z",
            "2026-12-32T12:00:00Z",
            "2026-12-03T24:00:00Z",
            "2026-12-03T12:60:00Z",
            "2026-12-03T12:00:60Z",
            "2026-12-03T12:00:00+24:00",
            "2026-12-03T12:00:00+0100",
            "2026-12-03T12:00:00Z ",
            "0000-01-01T00:00:00Z",
            "2026-12-03T12:00:00.000000000000000000000000000000001Z",
        ] {
            assert!(classify(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        /// Whatever the text, classifying never panics, and what it accepts as a time is short
        /// ASCII that PostgreSQL's ISO 8601 reader takes as is.
        #[test]
        fn classify_never_panics(text in "\\PC{0,40}") {
            if let Ok(RevisionArg::Time(t)) = classify(&text) {
                prop_assert!(t.len() <= MAX_TIME_CHARS && t.is_ascii());
            }
        }

        #[test]
        fn every_valid_time_is_accepted(
            y in 1u32..=9999, mo in 1u32..=12, d in 1u32..=28, h in 0u32..24, mi in 0u32..60,
            s in 0u32..60, frac in proptest::option::of(0u32..1_000_000), off in -1439i32..=1439,
        ) {
            let frac = frac.map(|f| format!(".{f:06}")).unwrap_or_default();
            let off = if off == 0 { "Z".to_owned() } else {
                format!("{}{:02}:{:02}", if off < 0 { '-' } else { '+' }, off.abs() / 60, off.abs() % 60)
            };
            let t = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{off}");
            prop_assert_eq!(classify(&t), Ok(RevisionArg::Time(&t)));
        }
    }
}

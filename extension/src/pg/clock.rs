//! The transaction's start time (`now()` in SQL), read from the backend rather than by a
//! statement: what a commit stores as its time and answers in its receipt.

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;

/// The current transaction's start time, in microseconds since the Unix epoch.
fn transaction_start_us() -> i64 {
    // SAFETY: reads the current transaction's start time, which every transaction has.
    let since_2000_us = unsafe { pgrx::pg_sys::GetCurrentTransactionStartTimestamp() };
    since_2000_us + PG_EPOCH_US
}

/// `now()` in nanoseconds since the Unix epoch.
pub fn now_ns() -> i64 {
    transaction_start_us() * 1000
}

/// `now()` as `supabash.utc_text(now())` writes it: `YYYY-MM-DDTHH:MM:SS.ffffffZ`, UTC.
pub fn now_utc_text() -> String {
    utc_text(transaction_start_us())
}

/// A time in microseconds since the Unix epoch as `supabash.utc_text` writes it (years 1 to
/// 9999; the in-backend test `utc_text_matches_sql` compares the two).
pub fn utc_text(us: i64) -> String {
    let (days, in_day) = (us.div_euclid(86_400_000_000), us.rem_euclid(86_400_000_000));
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / 1_000_000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        in_day % 1_000_000
    )
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::utc_text;

    #[test]
    fn known_times() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(utc_text(951_782_400_000_001), "2000-02-29T00:00:00.000001Z");
        assert_eq!(
            utc_text(1_796_342_399_999_999),
            "2026-12-03T23:59:59.999999Z"
        );
        assert_eq!(utc_text(-1), "1969-12-31T23:59:59.999999Z");
        assert_eq!(
            utc_text(253_402_300_799_999_999),
            "9999-12-31T23:59:59.999999Z"
        );
    }
}

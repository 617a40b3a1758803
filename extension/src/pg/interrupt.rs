//! Interrupts inside native loops. PostgreSQL acts on `statement_timeout`, `pg_cancel_backend`
//! and a terminating backend only where running code asks (`CHECK_FOR_INTERRUPTS`), and native
//! Rust code never does by itself: a loop over user data that does not ask runs to its end
//! whatever the client wants. Every such loop reports the work it just did to [`tick`] (bytes
//! hashed, copied, compressed or searched; rows, counted as [`ROW`] units; regex steps), and
//! every [`EVERY`] units the pending interrupt, if any, stops the call with PostgreSQL's own
//! ERROR (`57014` for a timeout or a cancel). A unit costs about a nanosecond, so a check
//! comes every millisecond or so of work, well within the 100 ms a cancel may take.

use std::cell::Cell;

/// Units of work between two checks.
pub const EVERY: u64 = 1 << 20;
/// The units a row of a loop counts for (its statement, decoding and answer text).
pub const ROW: u64 = 1024;

thread_local! {
    /// Units done since the last check.
    static DONE: Cell<u64> = const { Cell::new(0) };
}

/// Counts `work` units done; checks for a pending interrupt once [`EVERY`] have passed since
/// the last check. A pending interrupt ends the call with an ERROR (it unwinds like any
/// PostgreSQL error raised under the extension).
pub fn tick(work: u64) {
    let done = DONE.with(Cell::get).saturating_add(work);
    if done >= EVERY {
        DONE.with(|d| d.set(0));
        check();
    } else {
        DONE.with(|d| d.set(done));
    }
}

/// Counts `rows` rows of a loop (see [`ROW`]).
pub fn rows(rows: usize) {
    tick((rows as u64).saturating_mul(ROW));
}

/// Checks for a pending interrupt now.
pub fn check() {
    // Unit tests run outside PostgreSQL, where there is nothing to check.
    #[cfg(not(test))]
    pgrx::check_for_interrupts!();
}

/// The SHA-256 of `data`, hashed a slice of [`EVERY`] bytes at a time with a tick after each
/// (a large body hashes in about 2 ns a byte).
pub fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in data.chunks(EVERY as usize) {
        hasher.update(part);
        tick(part.len() as u64 * 2);
    }
    hasher.finalize().into()
}

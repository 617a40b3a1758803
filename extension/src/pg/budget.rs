//! The memory ceiling of one call: how many plain body bytes a single `supabash._call` may
//! decode (setting `supabash.max_decoded_per_call`, superuser-only, default 128 MB). Bodies
//! are decoded in Rust heap, outside PostgreSQL's memory accounting, and a highly compressible
//! body costs almost nothing to store, so every read charges the plain size of what it is about
//! to decode (known from the stored rows) *before* fetching or decoding it, and fails with
//! `SUPABASH_QUOTA_EXCEEDED` instead. What one call holds at its peak is several times what it
//! decodes (the stored form, the decoded bytes, the answer's JSON and its `jsonb`);
//! BENCHMARKS.md has the measured figure.

use crate::pg::fail::{Fail, Outcome};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use serde_json::json;
use std::cell::Cell;
use supabash_core::Marker;

/// The setting, in MB.
static MAX_DECODED_MB: GucSetting<i32> = GucSetting::<i32>::new(128);

/// Registers the setting (from `_PG_init`).
pub fn define() {
    GucRegistry::define_int_guc(
        c"supabash.max_decoded_per_call",
        c"Most plain body bytes one supabash call may decode.",
        c"A read that would decode more (a snapshot, a revision, diff previews) fails with SUPABASH_QUOTA_EXCEEDED before it allocates. Must be at least the largest document a caller should be able to read.",
        &MAX_DECODED_MB,
        1,
        1024 * 1024,
        GucContext::Suset,
        GucFlags::UNIT_MB,
    );
}

thread_local! {
    /// Bytes the running call may still decode.
    static LEFT: Cell<u64> = const { Cell::new(0) };
}

fn ceiling() -> u64 {
    MAX_DECODED_MB.get().max(1) as u64 * 1024 * 1024
}

/// Gives the call that starts now its full allowance.
pub fn start() {
    LEFT.with(|l| l.set(ceiling()));
}

/// Bytes the running call may still decode.
pub fn left() -> u64 {
    LEFT.with(Cell::get)
}

/// Takes `bytes` from the running call's allowance, or refuses (nothing is taken).
pub fn charge(bytes: u64) -> Outcome<()> {
    LEFT.with(|l| {
        let left = l.get();
        if bytes > left {
            let max = ceiling();
            return Err(Fail::new(
                Marker::Quota,
                format!(
                    "this call would decode more than supabash.max_decoded_per_call ({} MB) of file contents; read fewer or smaller files at a time",
                    max / (1024 * 1024)
                ),
            )
            .with_detail(json!({ "limitBytes": max, "wantedBytes": max - left + bytes })));
        }
        l.set(left - bytes);
        Ok(())
    })
}

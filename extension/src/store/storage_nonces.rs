//! `supabash.storage_nonces`: the single-use nonces of Storage capabilities, spent by the
//! host's service role (`supabash_spend_storage_nonce`) so every host process that shares the
//! database accepts a capability once. Only hashes are kept, each until its token could no
//! longer be accepted; expired rows are forgotten a batch at a time by every spend.

use crate::pg::db;
use crate::pg::fail::Outcome;
use sha2::{Digest, Sha256};

/// How many expired nonces one spend forgets at most.
const CLEANUP_BATCH: i64 = 64;

/// The stored form of `nonce`: SHA-256 of a label that keeps Storage nonces apart from any
/// other hash, and the nonce.
fn hash(nonce: &str) -> Vec<u8> {
    Sha256::digest(format!("supabash storage nonce\0{nonce}")).to_vec()
}

/// Forgets up to a batch of expired nonces, skipping rows a concurrent spend holds. In expiry
/// order, so the plan is a range scan of the expiry index over expired rows only (without the
/// order, statistics that show many expired rows made it a sequential scan, which reads every
/// live nonce when few have expired).
pub fn forget_expired() -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.storage_nonces WHERE nonce_hash IN (
           SELECT nonce_hash FROM supabash.storage_nonces
            WHERE expires_at <= clock_timestamp()
            ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)",
        &[CLEANUP_BATCH.into()],
    )
}

/// How many unexpired nonces are kept, counted up to `cap` (an index scan of at most `cap`
/// entries).
pub fn live(cap: i64) -> Outcome<i64> {
    Ok(db::row(
        "SELECT count(*) FROM (SELECT 1 FROM supabash.storage_nonces
                                WHERE expires_at > clock_timestamp() LIMIT $1) s",
        &[cap.into()],
        |r| db::get::<i64>(r, 1),
    )?
    .unwrap_or(0))
}

/// The database's clock, in Unix seconds.
pub fn now() -> Outcome<i64> {
    Ok(db::row(
        "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint",
        &[],
        |r| db::get::<i64>(r, 1),
    )?
    .unwrap_or(0))
}

/// Spends `nonce`, kept until `keep_until` (Unix seconds); `false` when it was spent already.
/// Atomic across sessions: of two concurrent spends of one nonce, the second waits for the
/// first's transaction and then finds the row.
pub fn spend(nonce: &str, keep_until: i64) -> Outcome<bool> {
    Ok(db::row(
        "INSERT INTO supabash.storage_nonces (nonce_hash, expires_at)
         VALUES ($1, to_timestamp($2)) ON CONFLICT DO NOTHING RETURNING true",
        &[hash(nonce).into(), keep_until.into()],
        |_| Ok(()),
    )?
    .is_some())
}

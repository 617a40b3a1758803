//! Receipts at rest: one `revisions` row per commit, its lines in the compact binary form of
//! `supabash_core::receipt_lines`. The JSON receipt is rebuilt from the row on every read, so a
//! replay returns exactly what the commit returned.

use crate::db;
use crate::fail::{Fail, Outcome};
use pgrx::datum::DatumWithOid;
use supabash_core::receipt_lines;
use supabash_core::rpc::Receipt;
use supabash_core::Marker;

/// The select list [`rows`] expects, in order, for `supabash.revisions`, ending with the
/// columns that give the delegation key id and the rebase base (added by later versions).
macro_rules! columns_ending {
    ($key_id:literal, $rebased_from:literal) => {
        concat!(
            "workspace_id::text, revision_id::text, parent_revision::text, position,
             transaction_id::text, idempotency_key, actor, correlation_id, cause, metadata,
             source_revision::text, supabash.utc_text(committed_at), lines, request_hash, ",
            $key_id,
            ", ",
            $rebased_from
        )
    };
}
const COLUMNS: &str = columns_ending!("delegation_key_id", "rebased_from::text");
/// The same on a 0.3.0 schema, which records no rebase base.
const COLUMNS_BEFORE_0_4: &str = columns_ending!("delegation_key_id", "NULL::text");
/// The same on a schema older than 0.3.0, which records no delegation key id either.
const COLUMNS_BEFORE_0_3: &str = columns_ending!("NULL::text", "NULL::text");

/// Whether revisions record the grant's key id (0.3.0 on; see `schema`).
fn records_key_id() -> bool {
    crate::schema::has_column(c"revisions", c"delegation_key_id")
}

/// Whether revisions record a rebased commit's base (0.4.0 on).
fn records_rebase() -> bool {
    crate::schema::has_column(c"revisions", c"rebased_from")
}

/// The select list [`rows`] expects, for the installed schema.
pub fn columns() -> &'static str {
    if records_rebase() {
        COLUMNS
    } else if records_key_id() {
        COLUMNS_BEFORE_0_4
    } else {
        COLUMNS_BEFORE_0_3
    }
}

/// A stored receipt and the hash of the request that made it.
pub struct Stored {
    pub receipt: Receipt,
    pub request_hash: Vec<u8>,
}

fn corrupt(e: impl std::fmt::Display) -> Fail {
    Fail::new(
        Marker::HistoryCorruption,
        format!("a stored receipt is unreadable: {e}"),
    )
}

/// Runs a read-only query selecting [`COLUMNS`] and rebuilds each receipt.
pub fn rows(sql: &str, args: &[DatumWithOid]) -> Outcome<Vec<Stored>> {
    db::query(sql, args, |r| {
        let lines: Vec<u8> = db::get(r, 13)?;
        Ok(Stored {
            receipt: Receipt {
                workspace_id: db::get(r, 1)?,
                revision: db::get(r, 2)?,
                parent_revision: db::opt(r, 3)?,
                position: db::get(r, 4)?,
                transaction_id: db::get(r, 5)?,
                idempotency_key: db::opt(r, 6)?,
                actor: db::get(r, 7)?,
                correlation_id: db::opt(r, 8)?,
                cause: db::opt(r, 9)?,
                metadata: db::get::<pgrx::JsonB>(r, 10)?.0,
                source_revision: db::opt(r, 11)?,
                delegation_key_id: db::opt(r, 15)?,
                rebased_from: db::opt(r, 16)?,
                committed_at: db::get(r, 12)?,
                changes: receipt_lines::decode(&lines).map_err(corrupt)?,
            },
            request_hash: db::get(r, 14)?,
        })
    })
}

/// Stores the receipt of a new revision.
pub fn insert(receipt: &Receipt, request_hash: &[u8]) -> Outcome<()> {
    let lines = receipt_lines::encode(&receipt.changes).map_err(corrupt)?;
    // An older schema has no key id column (a delegated commit there has none to record),
    // nor a rebase column (a rebased commit there records only its parent).
    let (key_column, key_value) = if records_key_id() {
        (", delegation_key_id", ", $14")
    } else {
        ("", "")
    };
    let (rebase_column, rebase_value) = if records_rebase() {
        (", rebased_from", ", $15::uuid")
    } else {
        ("", "")
    };
    crate::db::exec(
        &format!(
            "INSERT INTO supabash.revisions
                    (workspace_id, revision_id, position, parent_revision, transaction_id,
                     idempotency_key, request_hash, committed_at, actor, correlation_id, cause,
                     metadata, source_revision, lines{key_column}{rebase_column})
             VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5::uuid, $6, $7, now(), $8, $9, $10, $11,
                     $12::uuid, $13{key_value}{rebase_value})"
        ),
        &[
            receipt.workspace_id.as_str().into(),
            receipt.revision.as_str().into(),
            receipt.position.into(),
            receipt.parent_revision.clone().into(),
            receipt.transaction_id.as_str().into(),
            receipt.idempotency_key.clone().into(),
            request_hash.to_vec().into(),
            receipt.actor.as_str().into(),
            receipt.correlation_id.clone().into(),
            receipt.cause.clone().into(),
            pgrx::JsonB(receipt.metadata.clone()).into(),
            receipt.source_revision.clone().into(),
            lines.into(),
            receipt.delegation_key_id.clone().into(),
            receipt.rebased_from.clone().into(),
        ],
    )
}

//! Receipts at rest: one `revisions` row per commit, its lines in the compact binary form of
//! `supabash_core::receipt_lines`. The JSON receipt is rebuilt from the row on every read, so a
//! replay returns exactly what the commit returned.

use crate::fail::{Fail, Outcome};
use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::Value;
use supabash_core::receipt_lines;
use supabash_core::wire::Receipt;
use supabash_core::Marker;

/// The select list [`rows`] expects, in order, for `supabash.revisions`.
pub const COLUMNS: &str = "workspace_id::text, revision_id::text, parent_revision::text, position,
    transaction_id::text, idempotency_key, actor, correlation_id, cause, metadata,
    source_revision::text, supabash.utc_text(committed_at),
    lines, request_hash";

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

/// Runs a query selecting [`COLUMNS`] and rebuilds each receipt.
pub fn rows(sql: &str, args: &[DatumWithOid]) -> Outcome<Vec<Stored>> {
    Spi::connect_mut(|c| {
        let table = c.update(sql, None, args)?;
        let mut out = Vec::with_capacity(table.len());
        for row in table {
            let text = |i: usize| row.get::<String>(i);
            let lines = row.get::<Vec<u8>>(13)?.unwrap_or_default();
            out.push((
                Receipt {
                    workspace_id: text(1)?.unwrap_or_default(),
                    revision: text(2)?.unwrap_or_default(),
                    parent_revision: text(3)?,
                    position: row.get::<i64>(4)?.unwrap_or_default(),
                    transaction_id: text(5)?.unwrap_or_default(),
                    idempotency_key: text(6)?,
                    actor: text(7)?.unwrap_or_default(),
                    correlation_id: text(8)?,
                    cause: text(9)?,
                    metadata: row.get::<JsonB>(10)?.map(|j| j.0).unwrap_or(Value::Null),
                    source_revision: text(11)?,
                    committed_at: text(12)?.unwrap_or_default(),
                    changes: Vec::new(),
                },
                lines,
                row.get::<Vec<u8>>(14)?.unwrap_or_default(),
            ));
        }
        Ok::<_, pgrx::spi::Error>(out)
    })?
    .into_iter()
    .map(|(mut receipt, lines, request_hash)| {
        receipt.changes = receipt_lines::decode(&lines).map_err(corrupt)?;
        Ok(Stored {
            receipt,
            request_hash,
        })
    })
    .collect()
}

/// Stores the receipt of a new revision.
pub fn insert(receipt: &Receipt, request_hash: &[u8]) -> Outcome<()> {
    let lines = receipt_lines::encode(&receipt.changes).map_err(corrupt)?;
    crate::db::exec(
        "INSERT INTO supabash.revisions
                (workspace_id, revision_id, position, parent_revision, transaction_id,
                 idempotency_key, request_hash, committed_at, actor, correlation_id, cause,
                 metadata, source_revision, lines)
         VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5::uuid, $6, $7, now(), $8, $9, $10, $11,
                 $12::uuid, $13)",
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
            JsonB(receipt.metadata.clone()).into(),
            receipt.source_revision.clone().into(),
            lines.into(),
        ],
    )
}

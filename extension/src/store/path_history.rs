//! What one path's history is read from: its entry rows (the `entries` primary key is by
//! workspace and path, so this costs the path's versions) and the receipts of the revisions
//! at the positions those rows name.

use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use std::collections::HashMap;
use supabash_core::receipt_lines;
use supabash_core::rpc::ReceiptLine;
use supabash_core::Marker;

/// One stored version of a path: visible at positions `[valid_from, valid_until)`.
pub struct Interval {
    pub valid_from: i64,
    pub valid_until: Option<i64>,
    /// Rendered content hash and size.
    pub hash: Vec<u8>,
    pub size: i64,
    /// A tombstone: redaction removed the content.
    pub redacted: bool,
}

/// The versions of `path` in workspace `ws` that began before position `below` (all of them
/// without it), oldest first.
pub fn intervals(ws: &str, path: &str, below: Option<i64>) -> Outcome<Vec<Interval>> {
    db::query(
        "SELECT valid_from, valid_until, coalesce(content_hash, body_hash),
                coalesce(content_size, body_size), redacted
           FROM supabash.entries
          WHERE workspace_id = $1::uuid AND path = $2 AND ($3::bigint IS NULL OR valid_from < $3)
          ORDER BY valid_from",
        &[ws.into(), path.into(), below.into()],
        |r| {
            Ok(Interval {
                valid_from: db::get(r, 1)?,
                valid_until: db::opt(r, 2)?,
                hash: db::get(r, 3)?,
                size: db::get(r, 4)?,
                redacted: db::get(r, 5)?,
            })
        },
    )
}

/// A retained revision at one position: who committed it, when, and its receipt lines.
pub struct Touch {
    pub revision: String,
    pub actor: String,
    pub committed_at: String,
    pub lines: Vec<ReceiptLine>,
}

/// The retained revisions of `ws` at `positions` (a purged one is absent), by position.
pub fn revisions_at(ws: &str, positions: &[i64]) -> Outcome<HashMap<i64, Touch>> {
    let rows = db::query(
        "SELECT position, revision_id::text, actor, supabash.utc_text(committed_at), lines
           FROM supabash.revisions
          WHERE workspace_id = $1::uuid AND position = ANY($2)",
        &[ws.into(), positions.to_vec().into()],
        |r| {
            let lines: Vec<u8> = db::get(r, 5)?;
            let lines = receipt_lines::decode(&lines).map_err(|e| {
                Fail::new(
                    Marker::HistoryCorruption,
                    format!("a stored receipt is unreadable: {e}"),
                )
            })?;
            Ok((
                db::get::<i64>(r, 1)?,
                Touch {
                    revision: db::get(r, 2)?,
                    actor: db::get(r, 3)?,
                    committed_at: db::get(r, 4)?,
                    lines,
                },
            ))
        },
    )?;
    Ok(rows.into_iter().collect())
}

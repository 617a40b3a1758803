//! Checkpoints (`supabash.checkpoints`): named pins on a revision that purge never removes.

use crate::pg::db::{self, Row};
use crate::pg::fail::Outcome;
use supabash_core::rpc::{Checkpoint, CheckpointDeleted};

/// The columns [`checkpoint_of`] reads, in order.
const COLUMNS: &str = "checkpoint_id::text, revision_id::text, label, retention_class,
    idempotency_key, supabash.utc_text(created_at)";

/// Reads [`COLUMNS`] starting at column `at`.
fn checkpoint_of(r: &Row, at: usize) -> Outcome<Checkpoint> {
    Ok(Checkpoint {
        checkpoint_id: db::get(r, at)?,
        revision: db::get(r, at + 1)?,
        label: db::opt(r, at + 2)?,
        retention_class: db::opt(r, at + 3)?,
        idempotency_key: db::opt(r, at + 4)?,
        created_at: db::get(r, at + 5)?,
        replayed: false,
    })
}

/// The checkpoint of `ws` made with idempotency key `key`, with its request hash.
pub fn by_key(ws: &str, key: &str) -> Outcome<Option<(Vec<u8>, Checkpoint)>> {
    db::row(
        &format!(
            "SELECT request_hash, {COLUMNS} FROM supabash.checkpoints
              WHERE workspace_id = $1::uuid AND idempotency_key = $2"
        ),
        &[ws.into(), key.into()],
        |r| Ok((db::get::<Vec<u8>>(r, 1)?, checkpoint_of(r, 2)?)),
    )
}

/// What a new checkpoint pins and says.
pub struct New {
    pub revision: String,
    pub label: Option<String>,
    pub retention_class: Option<String>,
    pub idempotency_key: Option<String>,
    pub request_hash: Vec<u8>,
}

/// Stores a new checkpoint of `ws`.
pub fn insert(ws: &str, new: New) -> Outcome<Option<Checkpoint>> {
    db::row(
        &format!(
            "INSERT INTO supabash.checkpoints
                    (workspace_id, revision_id, label, retention_class, idempotency_key, request_hash)
             VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6) RETURNING {COLUMNS}"
        ),
        &[
            ws.into(),
            new.revision.into(),
            new.label.into(),
            new.retention_class.into(),
            new.idempotency_key.into(),
            new.request_hash.into(),
        ],
        |r| checkpoint_of(r, 1),
    )
}

/// Every checkpoint of `ws`, oldest first.
pub fn list(ws: &str) -> Outcome<Vec<Checkpoint>> {
    db::query(
        &format!(
            "SELECT {COLUMNS} FROM supabash.checkpoints WHERE workspace_id = $1::uuid
              ORDER BY created_at, checkpoint_id"
        ),
        &[ws.into()],
        |r| checkpoint_of(r, 1),
    )
}

/// The revision checkpoint `checkpoint` of `ws` pins.
pub fn revision_of(ws: &str, checkpoint: &str) -> Outcome<Option<String>> {
    db::query_row(
        "SELECT revision_id::text FROM supabash.checkpoints
          WHERE workspace_id = $1::uuid AND checkpoint_id = $2::uuid",
        &[ws.into(), checkpoint.into()],
        |r| db::get::<String>(r, 1),
    )
}

/// Removes checkpoint `id` of `ws`, if it exists.
pub fn delete(ws: &str, id: &str) -> Outcome<Option<CheckpointDeleted>> {
    db::row(
        "DELETE FROM supabash.checkpoints WHERE workspace_id = $1::uuid AND checkpoint_id = $2::uuid
         RETURNING checkpoint_id::text",
        &[ws.into(), id.into()],
        |r| {
            Ok(CheckpointDeleted {
                checkpoint_id: db::get(r, 1)?,
                deleted: true,
            })
        },
    )
}

/// Deletes every checkpoint of `ws`.
pub fn delete_all(ws: &str) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.checkpoints WHERE workspace_id = $1::uuid",
        &[ws.into()],
    )
}

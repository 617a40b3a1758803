//! Checkpoints: named pins on a revision that purge never removes. Creation is idempotent by key.

use super::Call;
use crate::pg::args;
use crate::pg::db::{self, Row};
use crate::pg::fail::{Fail, Outcome};
use crate::store::access;
use serde_json::json;
use supabash_core::capability::Operation;
use supabash_core::hash::sha256;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Checkpoint, CheckpointDeleted};
use supabash_core::Marker;

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

/// `supabash_checkpoint`: pins a revision (default: the head).
pub fn checkpoint(_call: &Call, req: rq::Checkpoint) -> Outcome<Checkpoint> {
    req.check_fields().map_err(args::field)?;
    let ws = access::open_locked(&req, &[Operation::Checkpoint])?;
    let revision = match args::uuid_opt("revision", req.revision.as_deref())? {
        Some(r) => {
            access::revision_position(&ws.id, &r)?;
            r
        }
        None => ws.head.clone().ok_or_else(|| {
            Fail::new(
                Marker::RevisionNotFound,
                "the workspace has no revision to checkpoint yet",
            )
        })?,
    };
    let (label, class, key) = (req.label, req.retention_class, req.idempotency_key);
    let request_hash = sha256(
        json!({ "revision": revision, "label": label, "retentionClass": class, "idempotencyKey": key })
            .to_string()
            .as_bytes(),
    )
    .to_vec();
    if key.is_some() {
        let existing = db::row(
            &format!(
                "SELECT request_hash, {COLUMNS} FROM supabash.checkpoints
                  WHERE workspace_id = $1::uuid AND idempotency_key = $2"
            ),
            &[ws.id.as_str().into(), key.clone().into()],
            |r| Ok((db::get::<Vec<u8>>(r, 1)?, checkpoint_of(r, 2)?)),
        )?;
        if let Some((hash, mut cp)) = existing {
            if hash != request_hash {
                return Err(Fail::new(
                    Marker::IdempotencyConflict,
                    "this idempotency key was already used for a different checkpoint",
                ));
            }
            cp.replayed = true;
            return Ok(cp);
        }
    }
    let cp = db::row(
        &format!(
            "INSERT INTO supabash.checkpoints
                    (workspace_id, revision_id, label, retention_class, idempotency_key, request_hash)
             VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6) RETURNING {COLUMNS}"
        ),
        &[ws.id.as_str().into(), revision.as_str().into(), label.into(), class.into(), key.into(), request_hash.into()],
        |r| checkpoint_of(r, 1),
    )?
    .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "the checkpoint was not created"))?;
    Ok(cp)
}

/// `supabash_checkpoints`: all checkpoints, oldest first.
pub fn checkpoints(_call: &Call, req: rq::Checkpoints) -> Outcome<Vec<Checkpoint>> {
    let ws = access::open(&req, &[Operation::Checkpoint])?;
    db::query(
        &format!(
            "SELECT {COLUMNS} FROM supabash.checkpoints WHERE workspace_id = $1::uuid
              ORDER BY created_at, checkpoint_id"
        ),
        &[ws.id.as_str().into()],
        |r| checkpoint_of(r, 1),
    )
}

/// `supabash_delete_checkpoint`: removes one checkpoint (its revision becomes purgeable).
pub fn delete_checkpoint(_call: &Call, req: rq::DeleteCheckpoint) -> Outcome<CheckpointDeleted> {
    let ws = access::open_locked(&req, &[Operation::Checkpoint])?;
    let id = args::uuid("checkpoint_id", &req.checkpoint_id)?;
    db::row(
        "DELETE FROM supabash.checkpoints WHERE workspace_id = $1::uuid AND checkpoint_id = $2::uuid
         RETURNING checkpoint_id::text",
        &[ws.id.as_str().into(), id.as_str().into()],
        |r| {
            Ok(CheckpointDeleted {
                checkpoint_id: db::get(r, 1)?,
                deleted: true,
            })
        },
    )?
    .ok_or_else(|| {
        Fail::new(Marker::CheckpointNotFound, "checkpoint not found in this workspace")
            .with_detail(json!({ "checkpointId": id }))
    })
}

//! Checkpoints: named pins on a revision that purge never removes. Creation is idempotent by key.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{Fail, Outcome};
use crate::store::{access, checkpoints};
use serde_json::json;
use supabash_core::hash::sha256;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Checkpoint, CheckpointDeleted};
use supabash_core::Marker;

/// `supabash_checkpoint`: pins a revision (default: the head).
pub fn checkpoint(_call: &Call, req: rq::Checkpoint) -> Outcome<Checkpoint> {
    req.check_fields().map_err(args::field)?;
    let ws = access::open_locked(&req)?;
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
    if let Some(key) = &key {
        let existing = checkpoints::by_key(&ws.id, key)?;
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
    let cp = checkpoints::insert(
        &ws.id,
        checkpoints::New {
            revision,
            label,
            retention_class: class,
            idempotency_key: key,
            request_hash,
        },
    )?
    .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "the checkpoint was not created"))?;
    Ok(cp)
}

/// `supabash_checkpoints`: all checkpoints, oldest first.
pub fn checkpoints(_call: &Call, req: rq::Checkpoints) -> Outcome<Vec<Checkpoint>> {
    let ws = access::open(&req)?;
    checkpoints::list(&ws.id)
}

/// `supabash_delete_checkpoint`: removes one checkpoint (its revision becomes purgeable).
pub fn delete_checkpoint(_call: &Call, req: rq::DeleteCheckpoint) -> Outcome<CheckpointDeleted> {
    let ws = access::open_locked(&req)?;
    let id = args::uuid("checkpoint_id", &req.checkpoint_id)?;
    checkpoints::delete(&ws.id, &id)?.ok_or_else(|| {
        Fail::new(
            Marker::CheckpointNotFound,
            "checkpoint not found in this workspace",
        )
        .with_detail(json!({ "checkpointId": id }))
    })
}

//! Checkpoints: named pins on a revision that purge never removes. Creation is idempotent by key.

use crate::access;
use crate::args::Args;
use crate::db;
use crate::fail::{Fail, Outcome};
use serde_json::{json, Value};
use supabash_core::capability::Operation;
use supabash_core::hash::sha256;
use supabash_core::limits::{MAX_CAUSE_BYTES, MAX_LABEL_BYTES};
use supabash_core::Marker;

const CHECKPOINT_JSON: &str = "jsonb_strip_nulls(jsonb_build_object(
    'checkpointId', checkpoint_id, 'revision', revision_id, 'label', label,
    'retentionClass', retention_class, 'idempotencyKey', idempotency_key, 'createdAt', created_at))";

/// `supabash_checkpoint`: pins a revision (default: the head).
pub fn checkpoint(args: &Args) -> Outcome<Value> {
    let ws = access::open_locked(args, &[Operation::Checkpoint])?;
    let label = args.text_opt("label", MAX_CAUSE_BYTES)?;
    let class = args.text_opt("retention_class", 255)?;
    let key = args.text_opt("idempotency_key", MAX_LABEL_BYTES)?;
    let revision = match args.uuid_opt("revision")? {
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
    let request_hash = sha256(
        json!({ "revision": revision, "label": label, "retentionClass": class, "idempotencyKey": key })
            .to_string()
            .as_bytes(),
    )
    .to_vec();
    if key.is_some() {
        let existing = db::json(
            &format!(
                "SELECT jsonb_build_object('hash', encode(request_hash, 'hex'), 'checkpoint', {CHECKPOINT_JSON})
                   FROM supabash.checkpoints WHERE workspace_id = $1::uuid AND idempotency_key = $2"
            ),
            &[ws.id.as_str().into(), key.clone().into()],
        )?;
        if let Some(found) = existing {
            let same = found["hash"].as_str() == Some(hex::encode(&request_hash).as_str());
            if !same {
                return Err(Fail::new(
                    Marker::IdempotencyConflict,
                    "this idempotency key was already used for a different checkpoint",
                ));
            }
            let mut cp = found["checkpoint"].clone();
            cp["replayed"] = json!(true);
            return Ok(cp);
        }
    }
    let mut cp = db::json(
        &format!(
            "INSERT INTO supabash.checkpoints
                    (workspace_id, revision_id, label, retention_class, idempotency_key, request_hash)
             VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6) RETURNING {CHECKPOINT_JSON}"
        ),
        &[ws.id.as_str().into(), revision.as_str().into(), label.into(), class.into(), key.into(), request_hash.into()],
    )?
    .unwrap_or(Value::Null);
    cp["replayed"] = json!(false);
    Ok(cp)
}

/// `supabash_checkpoints`: all checkpoints, oldest first.
pub fn checkpoints(args: &Args) -> Outcome<Value> {
    let ws = access::open(args, &[Operation::Checkpoint])?;
    Ok(db::json(
        &format!(
            "SELECT coalesce(jsonb_agg({CHECKPOINT_JSON} ORDER BY created_at, checkpoint_id), '[]'::jsonb)
               FROM supabash.checkpoints WHERE workspace_id = $1::uuid"
        ),
        &[ws.id.as_str().into()],
    )?
    .unwrap_or_else(|| json!([])))
}

/// `supabash_delete_checkpoint`: removes one checkpoint (its revision becomes purgeable).
pub fn delete_checkpoint(args: &Args) -> Outcome<Value> {
    let ws = access::open_locked(args, &[Operation::Checkpoint])?;
    let id = args.uuid("checkpoint_id")?;
    db::json(
        "DELETE FROM supabash.checkpoints WHERE workspace_id = $1::uuid AND checkpoint_id = $2::uuid
         RETURNING jsonb_build_object('checkpointId', checkpoint_id, 'deleted', true)",
        &[ws.id.as_str().into(), id.as_str().into()],
    )?
    .ok_or_else(|| {
        Fail::new(Marker::CheckpointNotFound, "checkpoint not found in this workspace")
            .with_detail(json!({ "checkpointId": id }))
    })
}

//! The audit trail (`supabash.audit_records`): what agents did through the client's surfaces.
//! A commit writes the records of the actions that led to it in its own transaction ([`write()`],
//! called by `commit` after its replay check, so a replayed commit writes nothing again);
//! `supabash_record_discarded` writes a discarded session's; `supabash_audit` pages them ([`page`]).
//! Purge removes the records of the revisions it removes but those telling what a job tried
//! ([`purge`]); deleting a workspace removes its records ([`delete_all`]); a path redaction scrubs
//! the arguments of every record that touched a redacted path ([`scrub`]). Records are
//! append-only otherwise (sql/privileges.sql).

use crate::pg::args;
use crate::pg::db;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::pg::schema::Schema;
use crate::store::access::Workspace;
use crate::store::usage;
use serde_json::{json, Value};
use supabash_core::capability::DELEGATED_ACTOR_PREFIX;
use supabash_core::rpc::audit::{self as wire, Action, ActionOutcome};
use supabash_core::Marker;

/// Checks actions (the shared limits, their UUIDs) and flattens them into the rows
/// [`write()`] inserts; `None` when there are none.
pub fn prepare(actions: &[Action]) -> Outcome<Option<Value>> {
    wire::check_actions(actions).map_err(args::field)?;
    if actions.is_empty() {
        return Ok(None);
    }
    let rows = actions
        .iter()
        .map(|a| {
            let (outcome, code, reason) = match &a.outcome {
                ActionOutcome::Ok => ("ok", None, None),
                ActionOutcome::Error { code } => ("error", Some(code), None),
                ActionOutcome::Denied { reason } => ("denied", None, Some(reason)),
            };
            Ok(json!({
                "record_id": args::uuid("audit.recordId", &a.record_id)?,
                "session_id": args::uuid("audit.sessionId", &a.session_id)?,
                "sequence": a.sequence,
                "at_ms": a.at_ms,
                "kind": a.kind.as_str(),
                "tool": a.tool,
                "arguments": a.arguments,
                "outcome": outcome,
                "code": code,
                "reason": reason,
                "duration_ms": a.duration_ms,
                "paths": a.paths,
                "bytes_changed": a.bytes_changed,
                "stored_bytes": a.encoded_len(),
            }))
        })
        .collect::<Outcome<Vec<Value>>>()?;
    Ok(Some(Value::Array(rows)))
}

/// Writes prepared rows for workspace `ws`: led to `revision`, or discarded when `None`. A
/// record id already written is skipped, so a retry writes nothing twice. The records' bytes
/// count in the owner's byte quota (`supabash.max_bytes_per_owner`), in the family's usage
/// row like its bodies: past the quota nothing is written. Returns how many were written.
pub fn write(
    schema: &Schema,
    ws: &Workspace,
    revision: Option<&str>,
    actor: &str,
    rows: &Value,
) -> Outcome<i64> {
    let (column, value) = if schema.audit_bytes {
        (", stored_bytes", ", r.stored_bytes")
    } else {
        ("", "")
    };
    let returned = stored_bytes(schema);
    // Times past year 9999 are clamped: the client's clock is the client's business.
    let written = db::rows(
        &format!("INSERT INTO supabash.audit_records AS a
                (workspace_id, record_id, revision_id, session_id, sequence, started_at, actor, kind,
                 tool, arguments, outcome, code, reason, duration_ms, paths, bytes_changed, discarded
                 {column})
         SELECT $1::uuid, r.record_id, $2::uuid, r.session_id, r.sequence,
                to_timestamp(least(r.at_ms, 253402300799999) / 1000.0), $3, r.kind, r.tool,
                r.arguments, r.outcome, r.code, r.reason, r.duration_ms, r.paths, r.bytes_changed,
                $2::uuid IS NULL {value}
           FROM jsonb_to_recordset($4) AS r(record_id uuid, session_id uuid, sequence bigint,
                at_ms bigint, kind text, tool text, arguments jsonb, outcome text, code text,
                reason text, duration_ms bigint, paths text[], bytes_changed bigint,
                stored_bytes integer)
         ON CONFLICT ON CONSTRAINT audit_records_pkey DO NOTHING
         RETURNING {returned}"),
        &[
            ws.id.as_str().into(),
            revision.into(),
            actor.into(),
            pgrx::JsonB(rows.clone()).into(),
        ],
        |r| db::get::<i64>(r, 1),
    )?;
    usage::add_bytes(&ws.store, &ws.owner, written.iter().sum())?;
    Ok(written.len() as i64)
}

/// The bytes a deleted or written record (`a`) counted: none on a 0.5.0 schema.
fn stored_bytes(schema: &Schema) -> &'static str {
    if schema.audit_bytes {
        "a.stored_bytes::bigint"
    } else {
        "0::bigint"
    }
}

/// Up to `limit` records of workspace `ws` (of one revision, when given) after the record
/// `cursor` names, in recording order. A cursor that names no record of the workspace is refused.
pub fn page(
    ws: &str,
    revision: Option<String>,
    cursor: Option<String>,
    limit: i64,
) -> Outcome<Vec<wire::AuditRecord>> {
    if let Some(c) = &cursor {
        let known = db::query_row(
            "SELECT 1 FROM supabash.audit_records WHERE workspace_id = $1::uuid AND record_id = $2::uuid",
            &[ws.into(), c.as_str().into()],
            |_| Ok(()),
        )?;
        if known.is_none() {
            return Err(
                invalid("the cursor names no audit record of this workspace")
                    .with_detail(json!({ "cursor": c })),
            );
        }
    }
    db::query(
        "SELECT a.record_id::text, a.revision_id::text, a.session_id::text, a.sequence,
                supabash.utc_text(a.started_at), supabash.utc_text(a.recorded_at), a.actor, a.kind,
                a.tool, a.arguments, a.outcome, a.code, a.reason, a.duration_ms, a.paths,
                a.bytes_changed, a.discarded, a.scrubbed
           FROM supabash.audit_records a
          WHERE a.workspace_id = $1::uuid AND ($2::uuid IS NULL OR a.revision_id = $2::uuid)
            AND ($3::uuid IS NULL OR (a.recorded_at, a.session_id, a.sequence, a.record_id) >
                 (SELECT c.recorded_at, c.session_id, c.sequence, c.record_id
                    FROM supabash.audit_records c
                   WHERE c.workspace_id = $1::uuid AND c.record_id = $3::uuid))
          ORDER BY a.recorded_at, a.session_id, a.sequence, a.record_id
          LIMIT $4",
        &[ws.into(), revision.into(), cursor.into(), limit.into()],
        record,
    )
}

/// One stored row as the wire record.
fn record(r: &db::Row) -> Outcome<wire::AuditRecord> {
    let corrupt = |what: &str| {
        Fail::new(
            Marker::HistoryCorruption,
            format!("a stored audit record has an unknown {what}"),
        )
    };
    let kind: String = db::get(r, 8)?;
    let outcome = match db::get::<String>(r, 11)?.as_str() {
        "ok" => ActionOutcome::Ok,
        "error" => ActionOutcome::Error {
            code: db::get(r, 12)?,
        },
        "denied" => ActionOutcome::Denied {
            reason: db::get(r, 13)?,
        },
        _ => return Err(corrupt("outcome")),
    };
    Ok(wire::AuditRecord {
        record_id: db::get(r, 1)?,
        revision: db::opt(r, 2)?,
        session_id: db::get(r, 3)?,
        sequence: db::get(r, 4)?,
        at: db::get(r, 5)?,
        recorded_at: db::get(r, 6)?,
        actor: db::get(r, 7)?,
        kind: serde_json::from_value(Value::String(kind)).map_err(|_| corrupt("kind"))?,
        tool: db::get(r, 9)?,
        arguments: db::json(r, 10)?,
        outcome,
        duration_ms: db::get(r, 14)?,
        paths: db::get(r, 15)?,
        bytes_changed: db::get(r, 16)?,
        discarded: db::get(r, 17)?,
        scrubbed: db::get(r, 18)?,
    })
}

/// After purge removed `revisions` of `ws`: their records go. By default the records that
/// tell what a job tried stay: denied and discarded actions, and every record of a delegated
/// actor. With `everything` (the owner's explicit choice) those go too, and so do discarded
/// records written before the oldest revision it kept (the trail keeps the span history
/// keeps). Gives the removed records' bytes back to the owner's usage.
pub fn purge(
    schema: &Schema,
    ws: &Workspace,
    revisions: &[String],
    everything: bool,
) -> Outcome<()> {
    if revisions.is_empty() && !everything {
        return Ok(());
    }
    // Runs after the revisions are gone: with `everything`, a record whose revision no longer
    // exists goes (also one an earlier purge kept).
    let freed = db::rows(
        &format!("DELETE FROM supabash.audit_records a
          WHERE a.workspace_id = $1::uuid
            AND ((a.revision_id = ANY($2::uuid[])
                  AND a.outcome <> 'denied' AND NOT starts_with(a.actor, $4))
                 OR ($3 AND a.revision_id IS NOT NULL
                     AND NOT EXISTS (SELECT 1 FROM supabash.revisions r
                                      WHERE r.workspace_id = $1::uuid AND r.revision_id = a.revision_id))
                 OR ($3 AND a.revision_id IS NULL AND a.recorded_at <
                     (SELECT min(committed_at) FROM supabash.revisions WHERE workspace_id = $1::uuid)))
         RETURNING {}", stored_bytes(schema)),
        &[
            ws.id.as_str().into(),
            revisions.to_vec().into(),
            everything.into(),
            DELEGATED_ACTOR_PREFIX.into(),
        ],
        |r| db::get::<i64>(r, 1),
    )?;
    usage::add_bytes(&ws.store, &ws.owner, -freed.iter().sum::<i64>())
}

/// Removes every record of workspace `ws` (deleted, or hidden for its forks: its trail goes
/// with its revisions) and gives their bytes back to the usage of body store `store`.
pub fn delete_all(schema: &Schema, ws: &str, store: &str, owner: &str) -> Outcome<()> {
    let freed = db::rows(
        &format!(
            "DELETE FROM supabash.audit_records a WHERE a.workspace_id = $1::uuid RETURNING {}",
            stored_bytes(schema)
        ),
        &[ws.into()],
        |r| db::get::<i64>(r, 1),
    )?;
    usage::add_bytes(store, owner, -freed.iter().sum::<i64>())
}

/// After a redaction of `paths` in `ws`: the arguments of every record that touched one of
/// them are scrubbed (set to null, marked `scrubbed`); the rest of the record stays.
pub fn scrub(ws: &str, paths: &[String]) -> Outcome<()> {
    if paths.is_empty() {
        return Ok(());
    }
    db::exec(
        "UPDATE supabash.audit_records SET arguments = NULL, scrubbed = true
          WHERE workspace_id = $1::uuid AND paths && $2::text[] AND NOT scrubbed",
        &[ws.into(), paths.to_vec().into()],
    )
}

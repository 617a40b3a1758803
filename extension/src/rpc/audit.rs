//! The audit RPCs: `supabash_record_discarded` writes a discarded session's records,
//! `supabash_audit` pages a workspace's trail (the table is `store::audit`'s).

use super::Call;
use crate::pg::args;
use crate::pg::fail::Outcome;
use crate::store::{access, audit};
use supabash_core::limits::{DEFAULT_AUDIT_PAGE, MAX_AUDIT_PAGE};
use supabash_core::rpc::audit as wire;

/// `supabash_record_discarded`: see docs/audit.md. A grant that can change the workspace
/// (`write` or `commit`) may record what its session did; a read-only one may not write.
pub fn record_discarded(call: &Call, req: wire::RecordDiscarded) -> Outcome<wire::AuditWritten> {
    let ws = access::open(&req)?;
    req.check_fields().map_err(args::field)?;
    let rows = audit::prepare(&req.actions)?;
    let actor = access::recorded_actor(ws.delegation.as_ref(), req.actor.clone())?;
    let written = match rows {
        Some(rows) => audit::write(&call.schema, &ws, None, &actor, &rows)?,
        None => 0,
    };
    Ok(wire::AuditWritten { written })
}

/// `supabash_audit`: see docs/audit.md. Reads only, so it works on a hot standby.
pub fn audit(_call: &Call, req: wire::Audit) -> Outcome<wire::AuditPage> {
    let ws = access::open(&req)?;
    let limit = args::page_size(req.page_size, DEFAULT_AUDIT_PAGE, MAX_AUDIT_PAGE)?;
    let revision = args::uuid_opt("revision", req.revision.as_deref())?;
    if let Some(r) = &revision {
        access::revision_position(&ws.id, r)?;
    }
    let cursor = args::uuid_opt("cursor", req.cursor.as_deref())?;
    let mut records = audit::page(&ws.id, revision, cursor, limit + 1)?;
    let more = records.len() as i64 > limit;
    records.truncate(limit as usize);
    let next_cursor = more
        .then(|| records.last().map(|r| r.record_id.clone()))
        .flatten();
    Ok(wire::AuditPage {
        records,
        next_cursor,
    })
}

//! `supabash_add_note` and `supabash_notes`: notes on a revision after the fact. Adding one
//! needs the grant operation `commit` (it changes what the workspace records, though not its
//! files) and takes the workspace's lock; reading needs `history`, like the receipts the notes
//! sit next to.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{Fail, Outcome};
use crate::store::{access, notes, revisions};
use serde_json::json;
use supabash_core::rpc::notes::{AddNote, Notes, RevisionNote, MAX_NOTES_PER_REVISION};
use supabash_core::Marker;

/// `supabash_add_note`: appends a note to an existing revision.
pub fn add_note(call: &Call, mut req: AddNote) -> Outcome<RevisionNote> {
    call.schema.require_notes()?;
    req.check_fields().map_err(args::field)?;
    let ws = access::open_locked(&req)?;
    let revision = args::uuid("revision", &req.revision)?;
    access::revision_position(&ws.id, &revision)?;
    let actor = access::recorded_actor(ws.delegation.as_ref(), req.actor.take())?;
    notes::append(
        &ws.id,
        notes::New {
            revision: revision.clone(),
            key: std::mem::take(&mut req.key),
            value: std::mem::take(&mut req.value),
            actor,
            delegation_key_id: ws.delegation.as_ref().map(|d| d.key_id.clone()),
        },
    )?
    .ok_or_else(|| {
        Fail::new(
            Marker::Quota,
            format!("revision {revision} already holds {MAX_NOTES_PER_REVISION} notes"),
        )
        .with_detail(json!({ "revision": revision, "max": MAX_NOTES_PER_REVISION }))
    })
}

/// `supabash_notes`: a revision's notes (a revision id or a point in time).
pub fn notes(call: &Call, req: Notes) -> Outcome<Vec<RevisionNote>> {
    call.schema.require_notes()?;
    let ws = access::open(&req)?;
    let revision = revisions::resolve_time(&ws.id, &req.revision)?;
    let revision = args::uuid("revision", &revision)?;
    access::revision_position(&ws.id, &revision)?;
    notes::of_revisions(&ws.id, &[revision], req.key.as_deref())
}

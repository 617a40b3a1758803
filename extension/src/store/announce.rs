//! Change announcements: after a write commits, listeners learn that a workspace changed and
//! where its head is (`supabash_core::rpc::watch::Announcement`: workspace id, kind, position,
//! revision; never paths or content). One channel per workspace, `supabash:<workspace id>`,
//! through `pg_notify`, which PostgreSQL delivers only when the writing transaction commits
//! (and drops on rollback). When the database has Supabase Realtime (`Schema::
//! realtime_broadcast`), the same payload is also broadcast on the private topic of that name
//! (`supabash._broadcast` calls `realtime.send`, whose row in `realtime.messages` Realtime
//! delivers only once the transaction commits).

use crate::pg::db;
use crate::pg::fail::Outcome;
use crate::pg::schema::Schema;
pub use supabash_core::rpc::watch::ChangeKind as Kind;
use supabash_core::rpc::watch::{channel, Announcement};

/// Announces, at commit, that `ws` changed and that its head is `revision` at `position`.
pub fn announce(
    schema: &Schema,
    ws: &str,
    kind: Kind,
    position: Option<i64>,
    revision: Option<&str>,
) -> Outcome<()> {
    let payload = serde_json::to_string(&Announcement {
        workspace_id: ws.to_owned(),
        kind,
        position,
        revision: revision.map(str::to_owned),
    })
    .map_err(|e| crate::pg::fail::Fail::new(supabash_core::Marker::Internal, e.to_string()))?;
    // Kept plans: no planning on the commit path.
    db::exec_kept(
        "SELECT pg_notify($1, $2)",
        &[channel(ws).into(), payload.clone().into()],
    )?;
    if schema.realtime_broadcast {
        db::exec_kept(
            "SELECT supabash._broadcast($1, $2, $3::jsonb)",
            &[channel(ws).into(), kind.as_str().into(), payload.into()],
        )?;
    }
    Ok(())
}

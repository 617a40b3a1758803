//! Who is calling and what they may touch. Identity comes only from the claims PostgREST sets
//! (see `supabash.request_owner()` in schema.sql, which the row-level security policies use
//! too); this module turns "no visible row" into the right error and takes the workspace lock.

use crate::db;
use crate::fail::{Fail, Outcome};
use serde_json::Value;
use supabash_core::Marker;

/// A workspace the caller owns, with its head as read (after the lock, when locked).
pub struct Workspace {
    pub id: String,
    pub head: Option<String>,
    pub head_position: Option<i64>,
}

/// The verified owner id of the caller, or the reason there is none.
pub fn caller() -> Outcome<String> {
    let who = db::json(
        "SELECT jsonb_build_object('owner', supabash.request_owner(), 'role', supabash.request_role())",
        &[],
    )?
    .unwrap_or(Value::Null);
    if let Some(owner) = who["owner"].as_str() {
        return Ok(owner.to_owned());
    }
    Err(match who["role"].as_str() {
        Some("service_role") => Fail::new(
            Marker::WorkspaceDenied,
            "service_role has no workspace access without a delegated grant",
        ),
        _ => Fail::new(
            Marker::AuthenticationRequired,
            "an authenticated user session is required",
        ),
    })
}

fn read_head(id: &str) -> Outcome<Option<Workspace>> {
    let row = db::json(
        "SELECT jsonb_build_object('head', head_revision, 'position', head_position)
           FROM supabash.workspaces WHERE id = $1::uuid",
        &[id.into()],
    )?;
    Ok(row.map(|r| Workspace {
        id: id.to_owned(),
        head: r["head"].as_str().map(str::to_owned),
        head_position: r["position"].as_i64(),
    }))
}

/// Opens a workspace the caller owns. Another user's workspace and a missing one give the same
/// authorisation error, so ids cannot be probed.
pub fn open(id: &str) -> Outcome<Workspace> {
    caller()?;
    read_head(id)?.ok_or_else(|| {
        Fail::new(
            Marker::WorkspaceDenied,
            "workspace not found or not owned by the caller",
        )
        .with_detail(serde_json::json!({ "workspaceId": id }))
    })
}

/// Opens a workspace and takes its transaction-scoped advisory lock. The SQL wrappers bound
/// the wait with `lock_timeout` (1 s) and turn a timeout into `SUPABASH_COMMIT_COORDINATION`.
pub fn open_locked(id: &str) -> Outcome<Workspace> {
    open(id)?;
    db::exec(
        "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('supabash:' || $1, 0))",
        &[id.into()],
    )?;
    read_head(id)?.ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "workspace vanished"))
}

/// The position of a revision of this workspace.
pub fn revision_position(ws: &str, revision: &str) -> Outcome<i64> {
    db::json(
        "SELECT to_jsonb(position) FROM supabash.revisions WHERE workspace_id = $1::uuid AND revision_id = $2::uuid",
        &[ws.into(), revision.into()],
    )?
    .and_then(|v| v.as_i64())
    .ok_or_else(|| {
        Fail::new(Marker::RevisionNotFound, "revision not found in this workspace")
            .with_detail(serde_json::json!({ "revision": revision }))
    })
}

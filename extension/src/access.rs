//! Who is calling and what they may touch. Identity comes only from the claims PostgREST sets
//! (see `identity`, whose `supabash.request_owner()` the row-level security policies use
//! too) or, for `service_role`, from a delegated grant minted by `supabash_exchange_capability`;
//! this module turns "no visible row" into the right error and takes the workspace lock.
//!
//! A grant opens row-level security for exactly one workspace of one owner through a *scope*
//! that only this native code sets, for the duration of one `supabash._call` (see
//! `supabash._scope_workspace()` in the policies), so no SQL a caller could send can widen it.

use crate::args::Args;
use crate::db;
use crate::fail::{Fail, Outcome};
use serde_json::{json, Value};
use std::cell::RefCell;
use supabash_core::capability::Operation;
use supabash_core::Marker;

/// A workspace the caller may use, with its head as read (after the lock, when locked).
pub struct Workspace {
    pub id: String,
    pub head: Option<String>,
    pub head_position: Option<i64>,
    /// Set when the caller is a job holding a delegated grant.
    pub delegation: Option<Delegation>,
}

/// What a delegated grant binds a call to.
#[derive(Clone)]
pub struct Delegation {
    pub actor_subject: String,
    pub correlation_id: Option<String>,
}

/// The workspace (and owner, once known) a native call may see beyond the caller's own.
struct Scope {
    workspace: String,
    owner: Option<String>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Clears the scope when dropped: created at the start of every `supabash._call`, so a scope
/// never outlives the call that set it, even when the call fails.
pub struct ScopeGuard;

impl ScopeGuard {
    pub fn new() -> Self {
        clear_scope();
        ScopeGuard
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        clear_scope();
    }
}

/// Lets this call see `workspace` (of `owner`, or of anyone while the owner is being looked up).
pub fn set_scope(workspace: &str, owner: Option<&str>) {
    SCOPE.with(|s| {
        *s.borrow_mut() = Some(Scope {
            workspace: workspace.to_owned(),
            owner: owner.map(str::to_owned),
        })
    });
}

/// Ends the scope early (the guard ends it at the latest).
pub fn clear_scope() {
    SCOPE.with(|s| s.borrow_mut().take());
}

/// The scoped workspace id (for the row-level security policies), or NULL.
pub fn scope_workspace() -> Option<String> {
    SCOPE.with(|s| s.borrow().as_ref().map(|s| s.workspace.clone()))
}

/// The scoped workspace's owner (for the row-level security policies), or NULL.
pub fn scope_owner() -> Option<String> {
    SCOPE.with(|s| s.borrow().as_ref().and_then(|s| s.owner.clone()))
}

fn denied(message: &str) -> Fail {
    Fail::new(Marker::WorkspaceDenied, message.to_owned())
}

/// Checks a delegated grant for `workspace` holding one of `need`, and scopes the call to it.
fn delegate(grant: &str, workspace: &str, need: &[Operation]) -> Outcome<Delegation> {
    let refused = || denied("the delegated grant does not allow this operation on this workspace");
    let Some(hash) = crate::capability::grant_hash(grant) else {
        return Err(refused());
    };
    let need: Vec<String> = need.iter().map(|o| o.as_str().to_owned()).collect();
    let found = db::json(
        "SELECT jsonb_build_object('owner', owner_id, 'subject', actor_subject, 'correlation', correlation_id)
           FROM supabash.grants
          WHERE grant_hash = $1 AND workspace_id = $2::uuid AND expires_at > clock_timestamp()
            AND operations && $3",
        &[hash.into(), workspace.into(), need.into()],
    )?
    .ok_or_else(refused)?;
    set_scope(workspace, found["owner"].as_str());
    Ok(Delegation {
        actor_subject: found["subject"].as_str().unwrap_or_default().to_owned(),
        correlation_id: found["correlation"].as_str().map(str::to_owned),
    })
}

/// Authorises the caller for the workspace named by `workspace_id` and returns the
/// delegation, if any: a user session must not present a grant; `service_role` must present a
/// valid grant for this workspace holding one of `need`; nobody else gets anything.
fn authorize(args: &Args, workspace: &str, need: &[Operation]) -> Outcome<Option<Delegation>> {
    let grant = args.text_opt("delegated_grant", 256)?;
    let who = identity()?;
    match (who["role"].as_str(), grant) {
        (Some("authenticated"), Some(_)) => Err(denied(
            "a delegated grant is presented by service_role, not by a user session",
        )),
        (Some("service_role"), Some(grant)) => delegate(&grant, workspace, need).map(Some),
        _ => owner_of(&who).map(|_| None),
    }
}

/// The caller's verified owner id and role, as the claims give them.
fn identity() -> Outcome<Value> {
    let claims = crate::identity::claims();
    let owner = crate::identity::owner(&claims).map(|u| u.to_string());
    Ok(json!({ "owner": owner, "role": crate::identity::role(&claims) }))
}

/// The owner id in `who`, or the reason there is none.
fn owner_of(who: &Value) -> Outcome<String> {
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

/// The verified owner id of the caller, or the reason there is none.
pub fn caller() -> Outcome<String> {
    owner_of(&identity()?)
}

fn read_head(id: &str, delegation: Option<Delegation>) -> Outcome<Option<Workspace>> {
    let row = db::json(
        "SELECT jsonb_build_object('head', head_revision, 'position', head_position)
           FROM supabash.workspaces WHERE id = $1::uuid",
        &[id.into()],
    )?;
    Ok(row.map(|r| Workspace {
        id: id.to_owned(),
        head: r["head"].as_str().map(str::to_owned),
        head_position: r["position"].as_i64(),
        delegation,
    }))
}

/// Opens the workspace named by `workspace_id` for a caller allowed one of `need`. Another
/// user's workspace and a missing one give the same authorisation error, so ids cannot be
/// probed.
pub fn open(args: &Args, need: &[Operation]) -> Outcome<Workspace> {
    let id = args.uuid("workspace_id")?;
    let delegation = authorize(args, &id, need)?;
    read_head(&id, delegation)?.ok_or_else(|| {
        denied("workspace not found or not owned by the caller")
            .with_detail(json!({ "workspaceId": id }))
    })
}

/// Opens a workspace and takes its transaction-scoped advisory lock. The SQL wrappers bound
/// the wait with `lock_timeout` (1 s) and turn a timeout into `SUPABASH_COMMIT_COORDINATION`.
pub fn open_locked(args: &Args, need: &[Operation]) -> Outcome<Workspace> {
    let ws = open(args, need)?;
    db::exec(
        "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('supabash:' || $1, 0))",
        &[ws.id.as_str().into()],
    )?;
    read_head(&ws.id, ws.delegation)?.ok_or_else(|| denied("workspace vanished"))
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

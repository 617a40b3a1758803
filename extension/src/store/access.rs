//! Who is calling and what they may touch. Identity comes only from the claims PostgREST sets
//! (see `identity`, whose `supabash.request_owner()` the row-level security policies use
//! too) or, for `service_role`, from a delegated grant minted by `supabash_exchange_capability`;
//! this module turns "no visible row" into the right error and takes the workspace lock.
//!
//! A grant opens row-level security for exactly one workspace of one owner through a *scope*
//! (see `scope`).

use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
pub use crate::store::grants::Delegation;
use serde_json::json;
use supabash_core::capability::{delegated_actor, Operation, DELEGATED_ACTOR_PREFIX};
use supabash_core::rpc::requests::WorkspaceRequest;
use supabash_core::Marker;

/// A workspace the caller may use, with its head as read (after the lock, when locked).
pub struct Workspace {
    pub id: String,
    /// The workspace owner's user id.
    pub owner: String,
    pub head: Option<String>,
    pub head_position: Option<i64>,
    /// The body store its bodies live in (shared by a fork family; see `lineage`).
    pub store: String,
    /// For a fork: the workspaces it reads from, nearest first (see `lineage`).
    pub sources: Vec<crate::store::lineage::Source>,
    /// How many redactions the workspace has seen.
    pub redaction_epoch: i64,
    /// Set when the caller is a job holding a delegated grant.
    pub delegation: Option<Delegation>,
    /// The workspace stores plain files only (issue 24's `workspaces.files_only`; false on a
    /// 0.5.0 schema, which has no such column).
    pub files_only: bool,
}

fn denied(message: &str) -> Fail {
    Fail::new(Marker::WorkspaceDenied, message.to_owned())
}

/// Checks a delegated grant for `workspace` holding one of `need`, and scopes the call to it.
/// The grant must have been minted under its verifier's current generation: rotation and
/// revocation end it.
fn delegate(grant: &str, workspace: &str, need: &[Operation]) -> Outcome<Delegation> {
    let refused = || denied("the delegated grant does not allow this operation on this workspace");
    let Some(hash) = crate::store::grants::grant_hash(grant) else {
        return Err(refused());
    };
    let need: Vec<String> = need.iter().map(|o| o.as_str().to_owned()).collect();
    let (owner, delegation) =
        crate::store::grants::find(hash, workspace, need)?.ok_or_else(refused)?;
    crate::pg::scope::set(workspace, Some(&owner));
    Ok(delegation)
}

/// Grants longer than this are refused before any lookup.
const MAX_GRANT_CHARS: usize = 256;

/// The request header a grant may travel in instead of the `delegated_grant` argument, as
/// PostgREST exposes it in `request.headers` (lower-case names). A header stays out of URLs
/// (PostgREST serves read RPCs over GET) and out of statement text, so out of the server log.
pub const GRANT_HEADER: &str = "x-supabash-grant";

/// The grant the call presents: the argument, or else the [`GRANT_HEADER`] header. Both at
/// once must agree.
fn presented_grant(argument: Option<&str>) -> Outcome<Option<String>> {
    let header = crate::pg::identity::header(GRANT_HEADER);
    match (argument, header) {
        (Some(a), Some(h)) if a != h => {
            Err(denied("the delegated grant argument and header disagree"))
        }
        (Some(a), _) => Ok(Some(a.to_owned())),
        (None, h) => Ok(h),
    }
}

/// Authorises the caller for `workspace` and returns the delegation, if any: a user session
/// must not present a grant; `service_role` must present a valid grant for this workspace
/// holding one of `need`; nobody else gets anything.
fn authorize(
    grant: Option<&str>,
    workspace: &str,
    need: &[Operation],
) -> Outcome<Option<Delegation>> {
    let grant = presented_grant(grant)?;
    supabash_core::limits::check_text("delegated_grant", grant.as_deref(), MAX_GRANT_CHARS)
        .map_err(crate::pg::args::field)?;
    let who = identity();
    match (who.role.as_deref(), grant.as_deref()) {
        (Some("authenticated"), Some(_)) => Err(denied(
            "a delegated grant is presented by service_role, not by a user session",
        )),
        (Some("service_role"), Some(grant)) => delegate(grant, workspace, need).map(Some),
        _ => who.owner().map(|_| None),
    }
}

/// The caller as the claims give them.
struct Identity {
    owner: Option<String>,
    role: Option<String>,
}

impl Identity {
    /// The verified owner id, or the reason there is none.
    fn owner(self) -> Outcome<String> {
        if let Some(owner) = self.owner {
            return Ok(owner);
        }
        Err(match self.role.as_deref() {
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
}

fn identity() -> Identity {
    let claims = crate::pg::identity::claims();
    Identity {
        owner: crate::pg::identity::owner(&claims).map(|u| u.to_string()),
        role: crate::pg::identity::role(&claims),
    }
}

/// The owner of workspace `id`, looked up through a scope limited to this one lookup (what a
/// capability exchange needs before any grant exists).
pub fn owner_unscoped(id: &str) -> Outcome<Option<String>> {
    crate::pg::scope::set(id, None);
    let owner = db::row(
        "SELECT owner_id::text FROM supabash.workspaces WHERE id = $1::uuid",
        &[id.into()],
        |r| db::get::<String>(r, 1),
    );
    crate::pg::scope::clear();
    owner
}

/// The actor a write is recorded under: a delegated call's is the grant's subject under the
/// reserved prefix, whatever the caller sent; anyone else must name one without that prefix.
pub fn recorded_actor(
    delegation: Option<&Delegation>,
    requested: Option<String>,
) -> Outcome<String> {
    match (delegation, requested) {
        (Some(d), _) => Ok(delegated_actor(&d.actor_subject)),
        (None, Some(a)) if a.starts_with(DELEGATED_ACTOR_PREFIX) => Err(crate::pg::fail::invalid(
            format!(
                "actors starting with {DELEGATED_ACTOR_PREFIX:?} are recorded only for delegated grants"
            ),
        )),
        (None, Some(a)) => Ok(a),
        (None, None) => Err(crate::pg::fail::invalid("actor is required")),
    }
}

/// The verified owner id of the caller, or the reason there is none.
pub fn caller() -> Outcome<String> {
    identity().owner()
}

/// Reads the workspace row (locking it when `lock`, in the same statement), through kept plans.
/// Workspace `id` as the extension itself reads it (no caller checks, no lock): for work a
/// call already authorised on its family, such as a redaction's recount of its forks.
pub fn by_id(id: &str) -> Outcome<Option<Workspace>> {
    read_head(id, None, false)
}

fn read_head(id: &str, delegation: Option<Delegation>, lock: bool) -> Outcome<Option<Workspace>> {
    // `files_only` is read from the row as a whole (`to_jsonb`), so one statement serves both
    // schemas of the support window: a 0.5.0 row has no such key and reads as false. The
    // answers of the open path carry it, and this saves each of them a second lookup.
    const HEAD: &str = "SELECT head_revision::text, head_position, owner_id::text, store_id::text,
                fork_of IS NOT NULL, redaction_epoch,
                coalesce((to_jsonb(w) ->> 'files_only')::boolean, false)
           FROM supabash.workspaces w WHERE id = $1::uuid AND deleted_at IS NULL";
    const LOCKED: &str =
        "SELECT head_revision::text, head_position, owner_id::text, store_id::text,
                fork_of IS NOT NULL, redaction_epoch,
                coalesce((to_jsonb(w) ->> 'files_only')::boolean, false)
           FROM supabash.workspaces w WHERE id = $1::uuid AND deleted_at IS NULL
           FOR NO KEY UPDATE";
    type Head = (
        (Option<String>, Option<i64>),
        String,
        String,
        bool,
        (i64, bool),
    );
    let head = |r: &db::Row| -> Outcome<Head> {
        Ok((
            (db::opt::<String>(r, 1)?, db::opt::<i64>(r, 2)?),
            db::get::<String>(r, 3)?,
            db::get::<String>(r, 4)?,
            db::get::<bool>(r, 5)?,
            (db::get::<i64>(r, 6)?, db::get::<bool>(r, 7)?),
        ))
    };
    let found = if lock {
        db::rows_kept(LOCKED, &[id.into()], head)?
    } else {
        db::query_generic(HEAD, &[id.into()], head)?
    }
    .into_iter()
    .next();
    let Some(((head, head_position), owner, store, forked, (redaction_epoch, files_only))) = found
    else {
        return Ok(None);
    };
    if delegation.is_some() {
        crate::pg::scope::widen_to_store(&store);
    }
    let sources = if forked { sources(id)? } else { Vec::new() };
    Ok(Some(Workspace {
        id: id.to_owned(),
        owner,
        head,
        head_position,
        store,
        sources,
        redaction_epoch,
        delegation,
        files_only,
    }))
}

/// A fork's sources, nearest first, each with the position it is read at (the fork point of
/// the workspace before it). Deleted sources count: a fork still reads what they kept for it.
fn sources(id: &str) -> Outcome<Vec<crate::store::lineage::Source>> {
    let chain: Vec<(String, i64)> = db::query(
        "WITH RECURSIVE up (id, fork_of, fork_position, depth) AS (
           SELECT id, fork_of, fork_position, 0 FROM supabash.workspaces WHERE id = $1::uuid
           UNION ALL
           SELECT w.id, w.fork_of, w.fork_position, up.depth + 1
             FROM supabash.workspaces w JOIN up ON w.id = up.fork_of
            WHERE up.depth <= $2)
         SELECT fork_of::text, fork_position FROM up WHERE fork_of IS NOT NULL ORDER BY depth",
        &[id.into(), (crate::store::lineage::MAX_DEPTH as i64).into()],
        |r| Ok((db::get(r, 1)?, db::get(r, 2)?)),
    )?;
    if chain.len() > crate::store::lineage::MAX_DEPTH {
        return Err(Fail::new(
            Marker::HistoryCorruption,
            "the fork chain is deeper than any fork can be",
        ));
    }
    Ok(chain
        .into_iter()
        .map(|(workspace, position)| crate::store::lineage::Source {
            workspace,
            position,
        })
        .collect())
}

/// Opens the workspace a request names for a caller allowed it: its owner, or a delegated
/// grant holding one of the operations the request type declares ([`WorkspaceRequest::NEEDS`],
/// in core's contract). Another user's workspace and a missing one give the same authorisation
/// error, so ids cannot be probed.
pub fn open<R: WorkspaceRequest>(request: &R) -> Outcome<Workspace> {
    find(request, false)
}

/// [`open`], locking the row when `lock` (in the statement that reads it).
fn find<R: WorkspaceRequest>(request: &R, lock: bool) -> Outcome<Workspace> {
    let id = crate::pg::args::uuid("workspace_id", request.workspace_id())?;
    let delegation = authorize(request.delegated_grant(), &id, R::NEEDS)?;
    read_head(&id, delegation, lock)?.ok_or_else(|| {
        denied("workspace not found or not owned by the caller")
            .with_detail(json!({ "workspaceId": id }))
    })
}

/// Opens a workspace and locks its row until the transaction ends, in one statement. Row locks
/// need the UPDATE privilege and pass the workspace's row-level security, so only the
/// workspace's authorised callers (through these RPCs) can take this lock: no other session
/// can hold a workspace's commits hostage (an advisory lock on a guessable key could be taken
/// by any login). The SQL wrappers bound the wait with `lock_timeout` (1 s) and turn a timeout
/// into `SUPABASH_COMMIT_COORDINATION`. A row locked FOR NO KEY UPDATE reads as its latest
/// committed version, so the head is the one after the lock.
pub fn open_locked<R: WorkspaceRequest>(request: &R) -> Outcome<Workspace> {
    find(request, true)
}

/// Locks every workspace of `ws`'s fork family (its body store) in id order and reads the head
/// again: what an operation that deletes entries or bodies needs, so no commit anywhere in the
/// family can reference a body while it goes. Take it instead of [`open_locked`], never after it
/// (the id order is what keeps two such operations from deadlocking).
pub fn lock_family(ws: Workspace) -> Outcome<Workspace> {
    lock_store(&ws.store)?;
    read_head(&ws.id, ws.delegation, false)?.ok_or_else(|| denied("workspace vanished"))
}

/// Locks every workspace (of the caller's) sharing body store `store`, in id order: see
/// [`lock_family`]. Several stores must be locked in store id order.
pub fn lock_store(store: &str) -> Outcome<()> {
    db::exec(
        "SELECT 1 FROM supabash.workspaces WHERE store_id = $1::uuid ORDER BY id FOR NO KEY UPDATE",
        &[store.into()],
    )
}

/// Moves the head of locked workspace `ws` to `revision` at `position`.
pub fn set_head(ws: &str, revision: &str, position: i64) -> Outcome<()> {
    db::exec_kept(
        "UPDATE supabash.workspaces SET head_revision = $2::uuid, head_position = $3, updated_at = now()
          WHERE id = $1::uuid",
        &[ws.into(), revision.into(), position.into()],
    )
}

/// The position of a revision of this workspace.
pub fn revision_position(ws: &str, revision: &str) -> Outcome<i64> {
    db::query_row(
        "SELECT position FROM supabash.revisions WHERE workspace_id = $1::uuid AND revision_id = $2::uuid",
        &[ws.into(), revision.into()],
        |r| db::get::<i64>(r, 1),
    )?
    .ok_or_else(|| {
        Fail::new(Marker::RevisionNotFound, "revision not found in this workspace")
            .with_detail(json!({ "revision": revision }))
    })
}

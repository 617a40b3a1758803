//! Single-writer leases: at most one live lease per workspace (`supabash.leases`), held by a
//! host id and proven by a random token. Lease writes take the workspace row lock, so they
//! serialise with commits; a commit checks the lease under that same lock ([`check_commit`]).
//! Time is the database's clock only (`clock_timestamp()`): hosts' clocks never matter.
//!
//! Leases are opt-in: a workspace without a live lease commits as before. The shared library
//! also serves schemas older than 0.4.0 (see `schema`): there is no lease table, so no lease
//! can exist, a read answers null and a write asks for the upgrade.

use super::Call;
use crate::pg::args;
use crate::pg::db::{self, Row};
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::store::access::{self, Workspace};
use serde_json::json;
use supabash_core::capability::Operation;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Lease, LeaseReleased, LeaseState};
use supabash_core::Marker;

/// What a delegated caller needs: lease writes guard commits, so they need `commit`; reading
/// the lease needs `read` or `commit`.
const WRITE: &[Operation] = &[Operation::Commit];
const READ: &[Operation] = &[Operation::Read, Operation::Commit];

/// The columns [`lease_of`] reads, in order.
const COLUMNS: &str = "holder, token::text, supabash.utc_text(acquired_at),
    supabash.utc_text(renewed_at), supabash.utc_text(expires_at)";

fn lease_of(r: &Row, taken_over: bool, head: Option<String>) -> Outcome<Lease> {
    Ok(Lease {
        holder: db::get(r, 1)?,
        token: db::get(r, 2)?,
        acquired_at: db::get(r, 3)?,
        renewed_at: db::get(r, 4)?,
        expires_at: db::get(r, 5)?,
        taken_over,
        head_revision: head,
    })
}

fn lost(message: &str) -> Fail {
    Fail::new(Marker::LeaseLost, message.to_owned())
}

/// The lease row of a workspace: (token, holder, expires_at text, live).
fn current(ws: &str) -> Outcome<Option<(String, String, String, bool)>> {
    db::query_row(
        "SELECT token::text, holder, supabash.utc_text(expires_at), expires_at > clock_timestamp()
           FROM supabash.leases WHERE workspace_id = $1::uuid",
        &[ws.into()],
        |r| {
            Ok((
                db::get(r, 1)?,
                db::get(r, 2)?,
                db::get(r, 3)?,
                db::get(r, 4)?,
            ))
        },
    )
}

fn held(holder: &str, expires_at: &str) -> Fail {
    Fail::new(
        Marker::LeaseHeld,
        format!(
            "the workspace is leased to {:?} until {expires_at}; retry after it expires",
            crate::pg::clip(holder)
        ),
    )
    .with_detail(json!({ "holder": holder, "expiresAt": expires_at }))
}

/// `supabash_acquire_lease`.
pub fn acquire(_call: &Call, req: rq::AcquireLease) -> Outcome<Lease> {
    req.check_fields().map_err(|e| invalid(e.to_string()))?;
    let Workspace { id, head, .. } = access::open_locked(&req, WRITE)?;
    let taken_over = match current(&id)? {
        Some((_, holder, expires_at, true)) if holder != req.holder => {
            return Err(held(&holder, &expires_at))
        }
        Some((_, _, _, live)) => !live,
        None => false,
    };
    db::row(
        &format!(
            "INSERT INTO supabash.leases AS l
                    (workspace_id, holder, token, acquired_at, renewed_at, expires_at)
             SELECT $1::uuid, $2, gen_random_uuid(), t, t, t + $3 * interval '1 second'
               FROM clock_timestamp() t
             ON CONFLICT (workspace_id) DO UPDATE
                SET holder = EXCLUDED.holder, token = EXCLUDED.token,
                    acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at,
                    expires_at = EXCLUDED.expires_at
             RETURNING {COLUMNS}"
        ),
        &[
            id.as_str().into(),
            req.holder.as_str().into(),
            req.ttl_seconds.into(),
        ],
        |r| lease_of(r, taken_over, head.clone()),
    )?
    .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "the lease was not written"))
}

/// `supabash_renew_lease`: LEASE_LOST unless `token` is the live lease.
pub fn renew(_call: &Call, req: rq::RenewLease) -> Outcome<Lease> {
    req.check_fields().map_err(|e| invalid(e.to_string()))?;
    let Workspace { id, head, .. } = access::open_locked(&req, WRITE)?;
    let token = args::uuid("token", &req.token)?;
    db::row(
        &format!(
            "UPDATE supabash.leases SET renewed_at = t, expires_at = t + $3 * interval '1 second'
               FROM clock_timestamp() t
              WHERE workspace_id = $1::uuid AND token = $2::uuid AND expires_at > t
             RETURNING {COLUMNS}"
        ),
        &[
            id.as_str().into(),
            token.as_str().into(),
            req.ttl_seconds.into(),
        ],
        |r| lease_of(r, false, head.clone()),
    )?
    .ok_or_else(|| lost("the lease expired, was released or was taken over; acquire it again"))
}

/// `supabash_release_lease`: removes the lease `token` names, live or expired.
pub fn release(_call: &Call, req: rq::ReleaseLease) -> Outcome<LeaseReleased> {
    let Workspace { id, .. } = access::open_locked(&req, WRITE)?;
    let token = args::uuid("token", &req.token)?;
    let live = db::row(
        "DELETE FROM supabash.leases WHERE workspace_id = $1::uuid AND token = $2::uuid
         RETURNING expires_at > clock_timestamp()",
        &[id.as_str().into(), token.as_str().into()],
        |r| db::get::<bool>(r, 1),
    )?;
    Ok(LeaseReleased {
        released: live.unwrap_or(false),
    })
}

/// `supabash_lease`: a read (no transaction id; works on a hot standby).
pub fn lease(_call: &Call, req: rq::LeaseInfo) -> Outcome<Option<LeaseState>> {
    let ws = access::open(&req, READ)?;
    db::query_row(
        "SELECT holder, supabash.utc_text(acquired_at), supabash.utc_text(renewed_at),
                supabash.utc_text(expires_at)
           FROM supabash.leases WHERE workspace_id = $1::uuid AND expires_at > clock_timestamp()",
        &[ws.id.as_str().into()],
        |r| {
            Ok(LeaseState {
                holder: db::get(r, 1)?,
                acquired_at: db::get(r, 2)?,
                renewed_at: db::get(r, 3)?,
                expires_at: db::get(r, 4)?,
            })
        },
    )
}

/// The commit's lease rule, checked under the workspace lock before anything is written:
/// while a live lease exists the commit must present its token (else LEASE_HELD); a presented
/// token that is not the live one (expired, released, taken over) is LEASE_LOST, so a host
/// whose lease lapsed never commits. Without a live lease and without a token, nothing changes.
pub fn check_commit(ws: &str, presented: Option<&str>) -> Outcome<()> {
    let presented = args::uuid_opt("lease", presented)?;
    let row = current(ws)?;
    match (row, presented) {
        (Some((token, _, _, true)), Some(p)) if token == p => Ok(()),
        (Some((_, holder, expires_at, true)), None) => Err(held(&holder, &expires_at)),
        (_, Some(_)) => Err(lost(
            "the lease this commit presents expired, was released or was taken over; nothing was committed",
        )),
        (_, None) => Ok(()),
    }
}

//! Single-writer leases: at most one live lease per workspace (`supabash.leases`), held by a
//! host id and proven by a random token. Lease writes take the workspace row lock, so they
//! serialise with commits; a commit checks the lease under that same lock ([`check_commit`]).
//! Time is the database's clock only (`clock_timestamp()`): hosts' clocks never matter.
//!
//! Leases are opt-in: a workspace without a live lease commits as before. The table is
//! `store::leases`'.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::store::access::{self, Workspace};
use crate::store::leases::{self, Stored};
use serde_json::json;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Lease, LeaseReleased, LeaseState};
use supabash_core::Marker;

/// A stored lease as the answer, with whether it took an expired one over and the head.
fn answer(l: Stored, taken_over: bool, head: Option<String>) -> Lease {
    Lease {
        holder: l.holder,
        token: l.token,
        acquired_at: l.acquired_at,
        renewed_at: l.renewed_at,
        expires_at: l.expires_at,
        taken_over,
        head_revision: head,
    }
}

fn lost(message: &str) -> Fail {
    Fail::new(Marker::LeaseLost, message.to_owned())
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
    let Workspace { id, head, .. } = access::open_locked(&req)?;
    let presented = args::uuid_opt("token", req.token.as_deref())?;
    // A holder name is public (`supabash_lease`, LEASE_HELD show it): only the live token
    // renews the claim, whoever names itself the holder.
    let taken_over = match leases::current(&id)? {
        Some(l) if l.live && (l.holder != req.holder || presented.as_ref() != Some(&l.token)) => {
            return Err(held(&l.holder, &l.expires_at))
        }
        Some(l) => !l.live,
        None => false,
    };
    leases::take(&id, &req.holder, req.ttl_seconds)?
        .map(|l| answer(l, taken_over, head))
        .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "the lease was not written"))
}

/// `supabash_renew_lease`: LEASE_LOST unless `token` is the live lease.
pub fn renew(_call: &Call, req: rq::RenewLease) -> Outcome<Lease> {
    req.check_fields().map_err(|e| invalid(e.to_string()))?;
    let Workspace { id, head, .. } = access::open_locked(&req)?;
    let token = args::uuid("token", &req.token)?;
    leases::renew(&id, &token, req.ttl_seconds)?
        .map(|l| answer(l, false, head))
        .ok_or_else(|| lost("the lease expired, was released or was taken over; acquire it again"))
}

/// `supabash_release_lease`: removes the lease `token` names, live or expired.
pub fn release(_call: &Call, req: rq::ReleaseLease) -> Outcome<LeaseReleased> {
    let Workspace { id, .. } = access::open_locked(&req)?;
    let token = args::uuid("token", &req.token)?;
    let live = leases::release(&id, &token)?;
    Ok(LeaseReleased { released: live })
}

/// `supabash_lease`: a read (no transaction id; works on a hot standby).
pub fn lease(_call: &Call, req: rq::LeaseInfo) -> Outcome<Option<LeaseState>> {
    let ws = access::open(&req)?;
    leases::live(&ws.id)
}

/// The commit's lease rule, checked under the workspace lock before anything is written:
/// while a live lease exists the commit must present its token (else LEASE_HELD); a presented
/// token that is not the live one (expired, released, taken over) is LEASE_LOST, so a host
/// whose lease lapsed never commits. Without a live lease and without a token, nothing changes.
pub fn check_commit(ws: &str, presented: Option<&str>) -> Outcome<()> {
    let presented = args::uuid_opt("lease", presented)?;
    let row = leases::current(ws)?;
    match (row, presented) {
        (Some(l), Some(p)) if l.live && l.token == p => Ok(()),
        (Some(l), None) if l.live => Err(held(&l.holder, &l.expires_at)),
        (_, Some(_)) => Err(lost(
            "the lease this commit presents expired, was released or was taken over; nothing was committed",
        )),
        (_, None) => Ok(()),
    }
}

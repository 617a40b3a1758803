//! Single-writer leases (`supabash.leases`): at most one row per workspace, live until its
//! `expires_at` by the database's clock.

use crate::pg::db::{self, Row};
use crate::pg::fail::Outcome;
use supabash_core::rpc::LeaseState;

/// The columns [`stored`] reads, in order.
const COLUMNS: &str = "holder, token::text, supabash.utc_text(acquired_at),
    supabash.utc_text(renewed_at), supabash.utc_text(expires_at)";

/// A lease row (times as UTC text).
pub struct Stored {
    pub holder: String,
    pub token: String,
    pub acquired_at: String,
    pub renewed_at: String,
    pub expires_at: String,
}

fn stored(r: &Row) -> Outcome<Stored> {
    Ok(Stored {
        holder: db::get(r, 1)?,
        token: db::get(r, 2)?,
        acquired_at: db::get(r, 3)?,
        renewed_at: db::get(r, 4)?,
        expires_at: db::get(r, 5)?,
    })
}

/// The lease row of a workspace, live or not.
pub struct Current {
    pub token: String,
    pub holder: String,
    pub expires_at: String,
    pub live: bool,
}

/// The lease row of workspace `ws`, if any.
pub fn current(ws: &str) -> Outcome<Option<Current>> {
    db::query_row_generic(
        "SELECT token::text, holder, supabash.utc_text(expires_at), expires_at > clock_timestamp()
           FROM supabash.leases WHERE workspace_id = $1::uuid",
        &[ws.into()],
        |r| {
            Ok(Current {
                token: db::get(r, 1)?,
                holder: db::get(r, 2)?,
                expires_at: db::get(r, 3)?,
                live: db::get(r, 4)?,
            })
        },
    )
}

/// Writes a new lease of `ws` for `holder` (replacing any row), live for `ttl_seconds`.
pub fn take(ws: &str, holder: &str, ttl_seconds: i32) -> Outcome<Option<Stored>> {
    db::row(
        &format!(
            "INSERT INTO supabash.leases AS l
                    (workspace_id, holder, token, acquired_at, renewed_at, expires_at)
             SELECT $1::uuid, $2, gen_random_uuid(), t, t, t + $3 * interval '1 second'
               FROM clock_timestamp() t
             ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
                SET holder = EXCLUDED.holder, token = EXCLUDED.token,
                    acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at,
                    expires_at = EXCLUDED.expires_at
             RETURNING {COLUMNS}"
        ),
        &[ws.into(), holder.into(), ttl_seconds.into()],
        stored,
    )
}

/// Extends the live lease `token` of `ws` by `ttl_seconds` from now; `None` when it is not live.
pub fn renew(ws: &str, token: &str, ttl_seconds: i32) -> Outcome<Option<Stored>> {
    db::row(
        &format!(
            "UPDATE supabash.leases SET renewed_at = t, expires_at = t + $3 * interval '1 second'
               FROM clock_timestamp() t
              WHERE workspace_id = $1::uuid AND token = $2::uuid AND expires_at > t
             RETURNING {COLUMNS}"
        ),
        &[ws.into(), token.into(), ttl_seconds.into()],
        stored,
    )
}

/// Removes the lease `token` of `ws`; whether it was live.
pub fn release(ws: &str, token: &str) -> Outcome<bool> {
    Ok(db::row(
        "DELETE FROM supabash.leases WHERE workspace_id = $1::uuid AND token = $2::uuid
         RETURNING expires_at > clock_timestamp()",
        &[ws.into(), token.into()],
        |r| db::get::<bool>(r, 1),
    )?
    .unwrap_or(false))
}

/// The live lease of `ws` as a read shows it (no token).
pub fn live(ws: &str) -> Outcome<Option<LeaseState>> {
    db::query_row(
        "SELECT holder, supabash.utc_text(acquired_at), supabash.utc_text(renewed_at),
                supabash.utc_text(expires_at)
           FROM supabash.leases WHERE workspace_id = $1::uuid AND expires_at > clock_timestamp()",
        &[ws.into()],
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

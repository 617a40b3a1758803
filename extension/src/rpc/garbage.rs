//! `supabash_garbage`: what the caller's stores keep for nothing. Orphan bodies (stored in a
//! body store, referenced by no entry of its fork family, directly or as a delta base; see
//! `bodies::garbage_sql`) and workspaces nothing changed for `idle_days`. A report unless
//! `apply`, which deletes the orphans (under the family's locks, as purge does) and gives
//! their bytes back to the owner's usage; idle workspaces are only reported (deleting one is
//! `supabash_delete_workspace`).

use super::Call;
use crate::pg::db;
use crate::pg::fail::{invalid, Outcome};
use crate::store::access;
use crate::store::bodies;
use crate::store::usage;
use supabash_core::rpc::verify::{
    Garbage, GarbageReport, IdleWorkspace, Orphan, DEFAULT_IDLE_DAYS, MAX_IDLE_DAYS,
    MAX_LISTED_IDLE, MAX_LISTED_ORPHANS,
};

/// `supabash_garbage`: the signed-in user's own stores and workspaces.
pub fn garbage(_call: &Call, req: Garbage) -> Outcome<GarbageReport> {
    let owner = access::caller()?;
    let idle_days = req.idle_days.unwrap_or(DEFAULT_IDLE_DAYS);
    if !(0..=MAX_IDLE_DAYS).contains(&idle_days) {
        return Err(invalid(format!(
            "idle_days must be between 0 and {MAX_IDLE_DAYS}"
        )));
    }
    let apply = req.apply == Some(true);
    let mut report = GarbageReport {
        dry_run: !apply,
        idle_days,
        orphan_bodies: 0,
        orphan_bytes: 0,
        orphans: Vec::new(),
        deleted_bodies: 0,
        deleted_bytes: 0,
        idle_count: 0,
        idle_workspaces: Vec::new(),
    };
    // Store id order is the lock order (see `access::lock_store`).
    let stores: Vec<String> = db::query(
        "SELECT DISTINCT store_id::text FROM supabash.workspaces WHERE owner_id = $1::uuid ORDER BY 1",
        &[owner.as_str().into()],
        |r| db::get::<String>(r, 1),
    )?;
    for store in stores {
        if apply {
            access::lock_store(&store)?;
        }
        orphans(&store, &mut report)?;
        if apply {
            let (bodies, bytes) = bodies::collect_garbage(&store)?;
            usage::add_bytes(&store, &owner, -bytes)?;
            report.deleted_bodies += bodies;
            report.deleted_bytes += bytes;
        }
    }
    idle(&owner, idle_days, &mut report)?;
    Ok(report)
}

/// Counts the orphans of `store` and lists them while the report has room.
fn orphans(store: &str, report: &mut GarbageReport) -> Outcome<()> {
    let room = MAX_LISTED_ORPHANS.saturating_sub(report.orphans.len()) as i64;
    let none: Vec<String> = Vec::new();
    let (count, bytes, listed): (i64, i64, Vec<Orphan>) = db::query_row(
        &format!(
            "WITH g AS ({}), listed AS (SELECT hash, size FROM g ORDER BY hash LIMIT $5)
             SELECT (SELECT count(*) FROM g), (SELECT coalesce(sum(size), 0)::bigint FROM g),
                    (SELECT coalesce(array_agg(encode(hash, 'hex') ORDER BY hash), '{{}}') FROM listed),
                    (SELECT coalesce(array_agg(size ORDER BY hash), '{{}}') FROM listed)",
            bodies::garbage_sql()
        ),
        &[
            store.into(),
            none.clone().into(),
            none.into(),
            Vec::<i64>::new().into(),
            room.into(),
        ],
        |r| {
            let hashes: Vec<String> = db::get(r, 3)?;
            let sizes: Vec<i64> = db::get(r, 4)?;
            let listed = hashes
                .into_iter()
                .zip(sizes)
                .map(|(hash, size)| Orphan {
                    store_id: store.to_owned(),
                    hash,
                    size,
                })
                .collect();
            Ok((db::get(r, 1)?, db::get(r, 2)?, listed))
        },
    )?
    .expect("an aggregate query returns one row");
    report.orphan_bodies += count;
    report.orphan_bytes += bytes;
    report.orphans.extend(listed);
    Ok(())
}

/// The owner's live workspaces unchanged for at least `days` days.
fn idle(owner: &str, days: i32, report: &mut GarbageReport) -> Outcome<()> {
    let rows = db::query(
        "SELECT id::text, label, head_position, supabash.utc_text(updated_at),
                floor(extract(epoch FROM now() - updated_at) / 86400)::bigint,
                count(*) OVER ()
           FROM supabash.workspaces
          WHERE owner_id = $1::uuid AND deleted_at IS NULL
            AND updated_at <= now() - make_interval(days => $2)
          ORDER BY updated_at, id LIMIT $3",
        &[owner.into(), days.into(), (MAX_LISTED_IDLE as i64).into()],
        |r| {
            Ok((
                IdleWorkspace {
                    workspace_id: db::get(r, 1)?,
                    label: db::opt(r, 2)?,
                    head_position: db::opt(r, 3)?,
                    updated_at: db::get(r, 4)?,
                    idle_days: db::get(r, 5)?,
                },
                db::get::<i64>(r, 6)?,
            ))
        },
    )?;
    report.idle_count = rows.first().map_or(0, |(_, n)| *n);
    report.idle_workspaces = rows.into_iter().map(|(w, _)| w).collect();
    Ok(())
}

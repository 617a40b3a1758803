//! `supabash_garbage`: what the caller's stores keep for nothing. Orphan bodies (stored in a
//! body store, referenced by no entry of its fork family, directly or as a delta base; see
//! `bodies::garbage_sql`) and workspaces nothing changed for `idle_days`. A report unless
//! `apply`, which deletes the orphans (under the family's locks, as purge does) and gives
//! their bytes back to the owner's usage; idle workspaces are only reported (deleting one is
//! `supabash_delete_workspace`).

use super::Call;
use crate::pg::fail::{invalid, Outcome};
use crate::store::access;
use crate::store::bodies;
use crate::store::usage;
use crate::store::workspaces;
use supabash_core::rpc::verify::{
    Garbage, GarbageReport, Orphan, DEFAULT_IDLE_DAYS, MAX_IDLE_DAYS, MAX_LISTED_IDLE,
    MAX_LISTED_ORPHANS,
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
    let stores = workspaces::stores_of(&owner)?;
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
    let bodies::Orphans {
        count,
        bytes,
        listed,
    } = bodies::orphans(store, room)?;
    let listed = listed.into_iter().map(|(hash, size)| Orphan {
        store_id: store.to_owned(),
        hash,
        size,
    });
    report.orphan_bodies += count;
    report.orphan_bytes += bytes;
    report.orphans.extend(listed);
    Ok(())
}

/// The owner's live workspaces unchanged for at least `days` days.
fn idle(owner: &str, days: i32, report: &mut GarbageReport) -> Outcome<()> {
    let rows = workspaces::idle(owner, days, MAX_LISTED_IDLE as i64)?;
    report.idle_count = rows.first().map_or(0, |(_, n)| *n);
    report.idle_workspaces = rows.into_iter().map(|(w, _)| w).collect();
    Ok(())
}

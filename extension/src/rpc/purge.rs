//! `supabash_purge`: drops old revisions and reclaims what only they needed. The head, every
//! checkpointed revision and every revision at or after the floor are always kept, so no
//! retained revision ever becomes unreadable; nor does any fork (see `lineage`).

use super::Call;
use crate::pg::args;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::store::access;
use crate::store::announce::{self, Kind};
use crate::store::bodies;
use crate::store::usage;
use crate::store::{entries, retention, revisions};
use supabash_core::limits::DEFAULT_PURGE_KEEP;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::PurgeReport;
use supabash_core::Marker;

/// What a purge removes.
struct Plan {
    revisions: Vec<String>,
    entry_paths: Vec<String>,
    entry_froms: Vec<i64>,
    bodies: Vec<Vec<u8>>,
    bytes: i64,
}

/// `supabash_purge`.
pub fn purge(call: &Call, req: rq::Purge) -> Outcome<PurgeReport> {
    // Purge deletes bodies, which the workspace's whole fork family shares.
    let ws = access::lock_family(access::open(&req)?)?;
    let purge_audit = req.purge_audit == Some(true);
    if purge_audit && ws.delegation.is_some() {
        return Err(Fail::new(
            Marker::WorkspaceDenied,
            "purge_audit is the owner's alone: a delegated grant cannot remove the trail of what jobs did",
        ));
    }
    let (mut keep, max_age) = (req.keep_revisions.map(i64::from), req.max_age_seconds);
    if keep.is_some_and(|k| k < 0) || max_age.is_some_and(|a| a < 0) {
        return Err(invalid(
            "keepRevisions and maxAgeSeconds must not be negative",
        ));
    }
    if keep.is_none() && max_age.is_none() {
        keep = Some(DEFAULT_PURGE_KEEP);
    }
    let floor = match args::uuid_opt("floor_revision", req.floor_revision.as_deref())? {
        Some(r) => Some(access::revision_position(&ws.id, &r)?),
        None => None,
    };
    let dry_run = req.dry_run == Some(true);
    let doomed = retention::doomed(
        &ws,
        retention::Keep {
            newest: keep,
            max_age_seconds: max_age,
            floor,
        },
    )?;
    let gone_ws: Vec<String> = doomed.entry_paths.iter().map(|_| ws.id.clone()).collect();
    let dead_bodies = bodies::unreferenced_after(
        &ws.store,
        &gone_ws,
        &doomed.entry_paths,
        &doomed.entry_froms,
    )?;
    let plan = Plan {
        revisions: doomed.revisions,
        entry_paths: doomed.entry_paths,
        entry_froms: doomed.entry_froms,
        bytes: dead_bodies.iter().map(|(_, s)| s).sum(),
        bodies: dead_bodies.into_iter().map(|(h, _)| h).collect(),
    };
    let report = PurgeReport {
        dry_run,
        entries: plan.entry_paths.len() as i64,
        bodies: plan.bodies.len() as i64,
        bytes: plan.bytes,
        revisions: plan.revisions.clone(),
    };
    if !dry_run {
        revisions::purge(&ws.id, &plan.revisions)?;
        crate::store::audit::purge(&call.schema, &ws, &plan.revisions, purge_audit)?;
        entries::delete_rows(&ws.id, &plan.entry_paths, &plan.entry_froms)?;
        bodies::delete(&ws.store, &plan.bodies)?;
        usage::add_bytes(&ws.store, &ws.owner, -plan.bytes)?;
        announce::announce(
            &call.schema,
            &ws.id,
            Kind::Purge,
            ws.head_position,
            ws.head.as_deref(),
        )?;
    }
    Ok(report)
}

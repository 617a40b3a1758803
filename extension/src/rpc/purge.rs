//! `supabash_purge`: drops old revisions and reclaims what only they needed. The head, every
//! checkpointed revision and every revision at or after the floor are always kept, so no
//! retained revision ever becomes unreadable; nor does any fork (see `lineage`).

use super::Call;
use crate::pg::args;
use crate::pg::db;
use crate::pg::fail::{invalid, Outcome};
use crate::store::access;
use crate::store::bodies;
use crate::store::lineage;
use crate::store::usage;
use supabash_core::capability::Operation;
use supabash_core::limits::DEFAULT_PURGE_KEEP;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::PurgeReport;

/// Marks what goes: revisions, then closed intervals no retained revision sees and no fork
/// reads (a fork made at position p reads what is visible at p; a fork's copies of inherited
/// versions always stay, see `lineage`). `$1` workspace, `$2` keep, `$3` max age, `$4` head,
/// `$5` floor, `$6` whether the workspace is a fork.
fn doomed_sql() -> String {
    let forks = "UNION SELECT fork_position FROM supabash.workspaces WHERE fork_of = $1::uuid";
    format!("
WITH ranked AS (
  SELECT revision_id, position, committed_at,
         row_number() OVER (ORDER BY position DESC) AS newest_rank
    FROM supabash.revisions WHERE workspace_id = $1::uuid),
doomed AS (
  SELECT r.revision_id, r.position FROM ranked r
   WHERE (($2::bigint IS NOT NULL AND r.newest_rank > $2)
          OR ($3::bigint IS NOT NULL AND r.committed_at < now() - make_interval(secs => $3)))
     AND r.revision_id IS DISTINCT FROM $4::uuid
     AND ($5::bigint IS NULL OR r.position < $5)
     AND NOT EXISTS (SELECT 1 FROM supabash.checkpoints c
                      WHERE c.workspace_id = $1::uuid AND c.revision_id = r.revision_id)),
kept AS (SELECT position FROM ranked WHERE revision_id NOT IN (SELECT revision_id FROM doomed)
         {forks}),
dead_entries AS (
  SELECT e.path, e.valid_from FROM supabash.entries e
   WHERE e.workspace_id = $1::uuid AND e.valid_until IS NOT NULL
     AND NOT ($6 AND e.valid_from = $7)
     AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.position >= e.valid_from AND k.position < e.valid_until))
SELECT
  (SELECT coalesce(array_agg(revision_id::text ORDER BY position), '{{}}') FROM doomed),
  (SELECT coalesce(array_agg(path), '{{}}') FROM dead_entries),
  (SELECT coalesce(array_agg(valid_from), '{{}}') FROM dead_entries)")
}

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
    let ws = access::lock_family(access::open(&req, &[Operation::Purge])?)?;
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
    let (revisions, entry_paths, entry_froms): (Vec<String>, Vec<String>, Vec<i64>) =
        db::query_row(
            &doomed_sql(),
            &[
                ws.id.as_str().into(),
                keep.into(),
                max_age.into(),
                ws.head.clone().into(),
                floor.into(),
                (!ws.sources.is_empty()).into(),
                lineage::FIRST_POSITION.into(),
            ],
            |r| Ok((db::get(r, 1)?, db::get(r, 2)?, db::get(r, 3)?)),
        )?
        .expect("an aggregate query returns one row");
    let gone_ws: Vec<&str> = entry_paths.iter().map(|_| ws.id.as_str()).collect();
    let dead_bodies: Vec<(Vec<u8>, i64)> = db::query(
        &bodies::garbage_sql(),
        &[
            ws.store.as_str().into(),
            gone_ws.into(),
            entry_paths.clone().into(),
            entry_froms.clone().into(),
        ],
        |r| Ok((db::get(r, 1)?, db::get(r, 2)?)),
    )?;
    let plan = Plan {
        revisions,
        entry_paths,
        entry_froms,
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
        // A purged commit's transaction id and idempotency key stay spent (see commit's replay).
        let delete = "DELETE FROM supabash.revisions
                       WHERE workspace_id = $1::uuid AND revision_id = ANY($2::uuid[])";
        let sql = format!(
            "WITH gone AS ({delete} RETURNING workspace_id, transaction_id, idempotency_key, revision_id)
             INSERT INTO supabash.purged_commits (workspace_id, transaction_id, idempotency_key, revision_id)
             SELECT * FROM gone"
        );
        db::exec(
            &sql,
            &[ws.id.as_str().into(), plan.revisions.clone().into()],
        )?;
        crate::store::audit::purge(&call.schema, &ws.id, &plan.revisions)?;
        db::exec(
            "DELETE FROM supabash.entries e USING unnest($2::text[], $3::bigint[]) AS d(path, valid_from)
              WHERE e.workspace_id = $1::uuid AND e.path = d.path AND e.valid_from = d.valid_from",
            &[ws.id.as_str().into(), plan.entry_paths.into(), plan.entry_froms.into()],
        )?;
        bodies::delete(&ws.store, &plan.bodies)?;
        usage::add_bytes(&ws.store, &ws.owner, -plan.bytes)?;
    }
    Ok(report)
}

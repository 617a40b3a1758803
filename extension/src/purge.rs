//! `supabash_purge`: drops old revisions and reclaims what only they needed. The head, every
//! checkpointed revision and every revision at or after the floor are always kept, so no
//! retained revision ever becomes unreadable.

use crate::access;
use crate::args;
use crate::db;
use crate::fail::{invalid, Outcome};
use crate::quota;
use supabash_core::capability::Operation;
use supabash_core::limits::DEFAULT_PURGE_KEEP;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::PurgeReport;

/// Marks what goes: revisions, then closed intervals no retained revision sees, then bodies no
/// remaining interval references and no remaining body is a delta against (directly or down
/// a chain). A dry run answers the same question and writes nothing.
const PLAN_SQL: &str = "
WITH RECURSIVE ranked AS (
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
kept AS (SELECT position FROM ranked WHERE revision_id NOT IN (SELECT revision_id FROM doomed)),
dead_entries AS (
  SELECT e.path, e.valid_from FROM supabash.entries e
   WHERE e.workspace_id = $1::uuid AND e.valid_until IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.position >= e.valid_from AND k.position < e.valid_until)),
live_bodies AS (
  SELECT e.body_hash AS hash FROM supabash.entries e
   WHERE e.workspace_id = $1::uuid
     AND (e.path, e.valid_from) NOT IN (SELECT path, valid_from FROM dead_entries)
  UNION
  SELECT b.base_hash FROM live_bodies l
    JOIN supabash.bodies b ON b.workspace_id = $1::uuid AND b.hash = l.hash
   WHERE b.base_hash IS NOT NULL),
dead_bodies AS (
  SELECT b.hash, b.size FROM supabash.bodies b
   WHERE b.workspace_id = $1::uuid AND b.hash NOT IN (SELECT hash FROM live_bodies))
SELECT
  (SELECT coalesce(array_agg(revision_id::text ORDER BY position), '{}') FROM doomed),
  (SELECT coalesce(array_agg(path), '{}') FROM dead_entries),
  (SELECT coalesce(array_agg(valid_from), '{}') FROM dead_entries),
  (SELECT coalesce(array_agg(encode(hash, 'hex')), '{}') FROM dead_bodies),
  (SELECT coalesce(sum(size), 0)::bigint FROM dead_bodies)";

/// What a purge removes.
struct Plan {
    revisions: Vec<String>,
    entry_paths: Vec<String>,
    entry_froms: Vec<i64>,
    /// Body hashes, hex.
    bodies: Vec<String>,
    bytes: i64,
}

/// `supabash_purge`.
pub fn purge(req: rq::Purge) -> Outcome<PurgeReport> {
    let ws = access::open_locked(&req, &[Operation::Purge])?;
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
    let plan = db::row(
        PLAN_SQL,
        &[
            ws.id.as_str().into(),
            keep.into(),
            max_age.into(),
            ws.head.clone().into(),
            floor.into(),
        ],
        |r| {
            Ok(Plan {
                revisions: db::get(r, 1)?,
                entry_paths: db::get(r, 2)?,
                entry_froms: db::get(r, 3)?,
                bodies: db::get(r, 4)?,
                bytes: db::get(r, 5)?,
            })
        },
    )?
    .expect("an aggregate query returns one row");
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
        let sql = if crate::schema::has_table(c"purged_commits") {
            format!(
                "WITH gone AS ({delete} RETURNING workspace_id, transaction_id, idempotency_key, revision_id)
                 INSERT INTO supabash.purged_commits (workspace_id, transaction_id, idempotency_key, revision_id)
                 SELECT * FROM gone"
            )
        } else {
            delete.to_owned()
        };
        db::exec(&sql, &[ws.id.as_str().into(), plan.revisions.into()])?;
        db::exec(
            "DELETE FROM supabash.entries e USING unnest($2::text[], $3::bigint[]) AS d(path, valid_from)
              WHERE e.workspace_id = $1::uuid AND e.path = d.path AND e.valid_from = d.valid_from",
            &[ws.id.as_str().into(), plan.entry_paths.into(), plan.entry_froms.into()],
        )?;
        let hashes: Vec<Vec<u8>> = plan
            .bodies
            .iter()
            .map(|h| hex::decode(h).expect("encode(hash, 'hex') is hex"))
            .collect();
        db::exec(
            "DELETE FROM supabash.bodies WHERE workspace_id = $1::uuid AND hash = ANY($2)",
            &[ws.id.as_str().into(), hashes.into()],
        )?;
        quota::add_bytes(&ws.id, &ws.owner, -plan.bytes)?;
    }
    Ok(report)
}

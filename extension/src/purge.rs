//! `supabash_purge`: drops old revisions and reclaims what only they needed. The head, every
//! checkpointed revision and every revision at or after the floor are always kept, so no
//! retained revision ever becomes unreadable.

use crate::access;
use crate::args::Args;
use crate::db;
use crate::fail::{invalid, Outcome};
use serde_json::{json, Value};
use supabash_core::capability::Operation;
use supabash_core::limits::DEFAULT_PURGE_KEEP;

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
SELECT jsonb_build_object(
  'revisions', (SELECT coalesce(jsonb_agg(revision_id ORDER BY position), '[]') FROM doomed),
  'entryPaths', (SELECT coalesce(jsonb_agg(path), '[]') FROM dead_entries),
  'entryFroms', (SELECT coalesce(jsonb_agg(valid_from), '[]') FROM dead_entries),
  'bodies', (SELECT coalesce(jsonb_agg(encode(hash, 'hex')), '[]') FROM dead_bodies),
  'bytes', (SELECT coalesce(sum(size), 0) FROM dead_bodies))";

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// `supabash_purge`.
pub fn purge(args: &Args) -> Outcome<Value> {
    let ws = access::open_locked(args, &[Operation::Purge])?;
    let mut keep = args.int_opt("keep_revisions")?;
    let max_age = args.int_opt("max_age_seconds")?;
    if keep.is_some_and(|k| k < 0) || max_age.is_some_and(|a| a < 0) {
        return Err(invalid(
            "keepRevisions and maxAgeSeconds must not be negative",
        ));
    }
    if keep.is_none() && max_age.is_none() {
        keep = Some(DEFAULT_PURGE_KEEP);
    }
    let floor = match args.uuid_opt("floor_revision")? {
        Some(r) => Some(access::revision_position(&ws.id, &r)?),
        None => None,
    };
    let dry_run = args.flag("dry_run")?;
    let plan = db::json(
        PLAN_SQL,
        &[
            ws.id.as_str().into(),
            keep.into(),
            max_age.into(),
            ws.head.clone().into(),
            floor.into(),
        ],
    )?
    .unwrap_or(Value::Null);
    let revisions = strings(&plan["revisions"]);
    let bodies = strings(&plan["bodies"]);
    let entry_paths = strings(&plan["entryPaths"]);
    let entry_froms: Vec<i64> = plan["entryFroms"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    if !dry_run {
        db::exec(
            "DELETE FROM supabash.revisions WHERE workspace_id = $1::uuid AND revision_id = ANY($2::uuid[])",
            &[ws.id.as_str().into(), revisions.clone().into()],
        )?;
        db::exec(
            "DELETE FROM supabash.entries e USING unnest($2::text[], $3::bigint[]) AS d(path, valid_from)
              WHERE e.workspace_id = $1::uuid AND e.path = d.path AND e.valid_from = d.valid_from",
            &[ws.id.as_str().into(), entry_paths.clone().into(), entry_froms.into()],
        )?;
        let hashes: Vec<Vec<u8>> = bodies.iter().filter_map(|h| hex::decode(h).ok()).collect();
        db::exec(
            "DELETE FROM supabash.bodies WHERE workspace_id = $1::uuid AND hash = ANY($2)",
            &[ws.id.as_str().into(), hashes.into()],
        )?;
    }
    Ok(json!({
        "dryRun": dry_run,
        "revisions": revisions,
        "entries": entry_paths.len(),
        "bodies": bodies.len(),
        "bytes": plan["bytes"],
    }))
}

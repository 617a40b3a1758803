//! What purge may drop: the revisions no retention rule keeps, and the closed entry rows no
//! retained revision and no fork reads.

use crate::pg::db;
use crate::pg::fail::Outcome;
use crate::store::access::Workspace;
use crate::store::lineage;

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

/// What a purge keeps besides the head and the checkpointed revisions.
pub struct Keep {
    /// The newest revisions kept, if limited.
    pub newest: Option<i64>,
    /// Revisions older than this are dropped, if limited.
    pub max_age_seconds: Option<i64>,
    /// No revision from this position on is dropped.
    pub floor: Option<i64>,
}

/// The revisions and entry rows a purge of `ws` drops.
pub struct Doomed {
    pub revisions: Vec<String>,
    pub entry_paths: Vec<String>,
    pub entry_froms: Vec<i64>,
}

/// What a purge of `ws` with `keep` drops (see [`doomed_sql`]).
pub fn doomed(ws: &Workspace, keep: Keep) -> Outcome<Doomed> {
    Ok(db::query_row(
        &doomed_sql(),
        &[
            ws.id.as_str().into(),
            keep.newest.into(),
            keep.max_age_seconds.into(),
            ws.head.clone().into(),
            keep.floor.into(),
            (!ws.sources.is_empty()).into(),
            lineage::FIRST_POSITION.into(),
        ],
        |r| {
            Ok(Doomed {
                revisions: db::get(r, 1)?,
                entry_paths: db::get(r, 2)?,
                entry_froms: db::get(r, 3)?,
            })
        },
    )?
    .expect("an aggregate query returns one row"))
}

//! Receipts at rest: one `revisions` row per commit, its lines in the compact binary form of
//! `supabash_core::receipt_lines`. The JSON receipt is rebuilt from the row on every read, so a
//! replay returns exactly what the commit returned.

use crate::pg::db;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::pg::schema::Schema;
use crate::store::access::Workspace;
use crate::store::lineage;
use pgrx::datum::DatumWithOid;
use serde_json::json;
use supabash_core::point_in_time::{self, RevisionArg};
use supabash_core::receipt_lines;
use supabash_core::rpc::{ForkedFrom, Receipt, ReceiptLine};
use supabash_core::Marker;

/// The select list [`rows`] expects, in order, for `supabash.revisions`.
const COLUMNS: &str = "workspace_id::text, revision_id::text, parent_revision::text, position,
     transaction_id::text, idempotency_key, actor, correlation_id, cause, metadata,
     source_revision::text, supabash.utc_text(committed_at), lines, request_hash,
     delegation_key_id, forked_from_workspace::text, forked_from_revision::text,
     rebased_from::text";

/// A stored receipt and the hash of the request that made it.
pub struct Stored {
    pub receipt: Receipt,
    pub request_hash: Vec<u8>,
}

fn corrupt(e: impl std::fmt::Display) -> Fail {
    Fail::new(
        Marker::HistoryCorruption,
        format!("a stored receipt is unreadable: {e}"),
    )
}

/// Runs a read-only query selecting [`COLUMNS`] and rebuilds each receipt.
fn rows(sql: &str, args: &[DatumWithOid]) -> Outcome<Vec<Stored>> {
    db::query(sql, args, stored)
}

/// A row selecting [`COLUMNS`] as its receipt.
fn stored(r: &db::Row) -> Outcome<Stored> {
    {
        let lines: Vec<u8> = db::get(r, 13)?;
        Ok(Stored {
            receipt: Receipt {
                workspace_id: db::get(r, 1)?,
                revision: db::get(r, 2)?,
                parent_revision: db::opt(r, 3)?,
                position: db::get(r, 4)?,
                transaction_id: db::get(r, 5)?,
                idempotency_key: db::opt(r, 6)?,
                actor: db::get(r, 7)?,
                correlation_id: db::opt(r, 8)?,
                cause: db::opt(r, 9)?,
                metadata: db::get::<pgrx::JsonB>(r, 10)?.0,
                source_revision: db::opt(r, 11)?,
                delegation_key_id: db::opt(r, 15)?,
                forked_from: ForkedFrom::from_columns(db::opt(r, 16)?, db::opt(r, 17)?),
                rebased_from: db::opt(r, 18)?,
                committed_at: db::get(r, 12)?,
                changes: receipt_lines::decode(&lines).map_err(corrupt)?,
            },
            request_hash: db::get(r, 14)?,
        })
    }
}

/// The revision `revision` of workspace `ws`.
pub fn find(ws: &str, revision: &str) -> Outcome<Option<Stored>> {
    Ok(rows(
        &format!(
            "SELECT {COLUMNS} FROM supabash.revisions
              WHERE workspace_id = $1::uuid AND revision_id = $2::uuid"
        ),
        &[ws.into(), revision.into()],
    )?
    .into_iter()
    .next())
}

/// Up to `limit` revisions of `ws` after position `after`, oldest first.
pub fn page(ws: &str, after: i64, limit: i64) -> Outcome<Vec<Stored>> {
    rows(
        &format!(
            "SELECT {COLUMNS} FROM supabash.revisions
              WHERE workspace_id = $1::uuid AND position > $2 ORDER BY position LIMIT $3"
        ),
        &[ws.into(), after.into(), limit.into()],
    )
}

/// What a transaction id or idempotency key already did in a workspace.
pub enum Spent {
    /// Nothing: the request commits.
    No,
    /// The first revision it committed (what a replay answers or conflicts with).
    Committed(Box<Stored>),
    /// The revision it committed, since purged (purge keeps them spent).
    Purged(String),
}

/// What a transaction id (`$2`) and an idempotency key (`$3`) did in workspace `$1`, one
/// statement (see [`spent`]): the position of the revision each committed (at most one each),
/// then the revision each committed that purge removed. Only these narrow columns: the stored
/// receipt is read when a revision matches, which only a replay or a conflict pays for.
pub(crate) const SPENT_SQL: &str = "
SELECT x.position, NULL::text FROM (SELECT r.position, r.transaction_id FROM supabash.revisions r
                                     WHERE r.workspace_id = $1::uuid
                                       AND r.transaction_id >= $2::uuid AND r.transaction_id <= $2::uuid
                                     ORDER BY r.transaction_id LIMIT 1) x
 WHERE x.transaction_id = $2::uuid
UNION ALL
SELECT y.position, NULL FROM (SELECT r.position, r.idempotency_key FROM supabash.revisions r
                               WHERE r.workspace_id = $1::uuid
                                 AND r.idempotency_key >= $3 AND r.idempotency_key <= $3
                               ORDER BY r.idempotency_key LIMIT 1) y
 WHERE y.idempotency_key = $3
UNION ALL
SELECT NULL, p.revision_id::text FROM supabash.purged_commits p
 WHERE p.workspace_id = $1::uuid AND p.transaction_id = $2::uuid
UNION ALL
SELECT NULL, p.revision_id::text FROM supabash.purged_commits p
 WHERE p.workspace_id = $1::uuid AND p.idempotency_key = $3";

/// What transaction id `transaction_id` or idempotency key `key` already did in `ws`, in one
/// statement ([`SPENT_SQL`]) through a kept generic plan. Each lookup goes by its unique
/// index, a branch per key (never an OR, which a generic plan turns into a walk of the
/// workspace's revisions in position order). Each key is found among the revisions as the
/// first at or above it in the workspace (`>=`, `ORDER BY`, `LIMIT 1`), kept when equal, and
/// the plan is made with sorts disabled: the unique index is then the only plan without a
/// sort, whatever the statistics say. The key is bounded from above too (`<=`): a closed range
/// is estimated at a few rows where an open one is a third of the workspace's, and for a few
/// rows the row-level security check looks up their workspace by its key instead of hashing
/// every workspace the caller may see (sql/policies.sql). (With an equality, or with sorts allowed, statistics
/// taken when the workspace had one revision make every index on `workspace_id` cost the
/// same, and a kept plan could walk all the workspace's revisions by
/// `revisions_committed_idx` with the key as a filter, on every commit.) When both keys
/// match, the earlier revision is what they spent; a purged one counts only when no retained
/// revision matches.
pub fn spent(ws: &str, transaction_id: &str, key: Option<&str>) -> Outcome<Spent> {
    let args = [ws.into(), transaction_id.into(), key.into()];
    let found = {
        let _no_sort = db::Setting::set(c"enable_sort", c"off");
        db::query_generic(SPENT_SQL, &args, |r| {
            Ok((db::opt::<i64>(r, 1)?, db::opt::<String>(r, 2)?))
        })?
    };
    if let Some(position) = found.iter().filter_map(|(p, _)| *p).min() {
        let stored = rows(
            &format!(
                "SELECT {COLUMNS} FROM supabash.revisions
                  WHERE workspace_id = $1::uuid AND position = $2"
            ),
            &[ws.into(), position.into()],
        )?
        .into_iter()
        .next()
        .ok_or_else(|| corrupt("a spent revision vanished"))?;
        return Ok(Spent::Committed(Box::new(stored)));
    }
    Ok(found
        .into_iter()
        .find_map(|(_, purged)| purged)
        .map_or(Spent::No, Spent::Purged))
}

/// The position of revision `revision` of `ws` when it lies below position `below`.
pub fn position_below(ws: &str, revision: &str, below: i64) -> Outcome<Option<i64>> {
    db::query_row(
        "SELECT position FROM supabash.revisions
          WHERE workspace_id = $1::uuid AND revision_id = $2::uuid AND position < $3",
        &[ws.into(), revision.into(), below.into()],
        |r| db::get::<i64>(r, 1),
    )
}

/// The receipt lines of the revisions of `ws` after position `after` up to `upto`, in
/// position order (purged ones are missing).
pub fn lines_between(ws: &str, after: i64, upto: i64) -> Outcome<Vec<Vec<ReceiptLine>>> {
    db::query(
        "SELECT lines FROM supabash.revisions
          WHERE workspace_id = $1::uuid AND position > $2 AND position <= $3 ORDER BY position",
        &[ws.into(), after.into(), upto.into()],
        |r| receipt_lines::decode(&db::get::<Vec<u8>>(r, 1)?).map_err(corrupt),
    )
}

/// Where a new revision's tree totals (`tree_files`, `tree_bytes`) come from: another
/// revision's (the parent's, or a fork point's; none for a workspace's first commit) plus
/// what the commit changed. The base revision's NULL totals (unknown: counted by scan, see
/// [`tree_totals`]) stay NULL.
pub struct Totals<'a> {
    pub workspace: &'a str,
    pub revision: Option<&'a str>,
    pub files: i64,
    pub bytes: i64,
}

/// Stores the receipt of a new revision, committed now (the transaction's start), with its
/// tree totals when the schema has them (0.6.0); answers that time as UTC text, the receipt's
/// `committed_at` (formatted here as `supabash.utc_text` does, not by a SQL function called
/// from the statement: one that is not inlined is parsed and planned on every call).
pub fn insert(
    schema: Schema,
    receipt: &Receipt,
    request_hash: &[u8],
    totals: Totals,
) -> Outcome<String> {
    let lines = receipt_lines::encode(&receipt.changes).map_err(corrupt)?;
    let forked = receipt.forked_from.as_ref();
    let mut args: Vec<DatumWithOid> = vec![
        receipt.workspace_id.as_str().into(),
        receipt.revision.as_str().into(),
        receipt.position.into(),
        receipt.parent_revision.clone().into(),
        receipt.transaction_id.as_str().into(),
        receipt.idempotency_key.clone().into(),
        request_hash.to_vec().into(),
        receipt.actor.as_str().into(),
        receipt.correlation_id.clone().into(),
        receipt.cause.clone().into(),
        pgrx::JsonB(receipt.metadata.clone()).into(),
        receipt.source_revision.clone().into(),
        lines.into(),
        receipt.delegation_key_id.clone().into(),
        forked.map(|f| f.workspace_id.clone()).into(),
        forked.map(|f| f.revision.clone()).into(),
        receipt.rebased_from.clone().into(),
    ];
    // The parent's totals are read by primary key inside the insert (its one row, probed for
    // each of the two columns), not by a statement of their own.
    let (columns, values) = if schema.revision_totals {
        args.extend([
            totals.workspace.into(),
            totals.revision.into(),
            totals.files.into(),
            totals.bytes.into(),
        ]);
        (
            ", tree_files, tree_bytes",
            ", t.files, t.bytes FROM (SELECT CASE WHEN $19::uuid IS NULL THEN $20::bigint
                  ELSE (SELECT p.tree_files + $20 FROM supabash.revisions p
                         WHERE p.workspace_id = $18::uuid AND p.revision_id = $19::uuid) END,
                CASE WHEN $19::uuid IS NULL THEN $21::bigint
                  ELSE (SELECT p.tree_bytes + $21 FROM supabash.revisions p
                         WHERE p.workspace_id = $18::uuid AND p.revision_id = $19::uuid) END)
                AS t(files, bytes)",
        )
    } else {
        ("", "")
    };
    let sql = format!(
        "INSERT INTO supabash.revisions
                    (workspace_id, revision_id, position, parent_revision, transaction_id,
                     idempotency_key, request_hash, committed_at, actor, correlation_id, cause,
                     metadata, source_revision, lines, delegation_key_id,
                     forked_from_workspace, forked_from_revision, rebased_from{columns})
             SELECT $1::uuid, $2::uuid, $3, $4::uuid, $5::uuid, $6, $7, now(), $8, $9, $10, $11,
                     $12::uuid, $13, $14, $15::uuid, $16::uuid, $17::uuid{values}"
    );
    db::exec_kept(&sql, &args)?;
    Ok(crate::pg::clock::now_utc_text())
}

/// The stored tree totals of revision `revision` of `ws`: `None` when the schema predates
/// them (0.5.0), the revision is gone, or they are unknown (a revision from before 0.6.0 in a
/// fork, or one older than a redaction's recount).
pub fn stored_totals(schema: Schema, ws: &str, revision: &str) -> Outcome<Option<(i64, i64)>> {
    if !schema.revision_totals {
        return Ok(None);
    }
    Ok(db::query_row(
        "SELECT tree_files, tree_bytes FROM supabash.revisions
          WHERE workspace_id = $1::uuid AND revision_id = $2::uuid",
        &[ws.into(), revision.into()],
        |r| Ok(db::opt::<i64>(r, 1)?.zip(db::opt::<i64>(r, 2)?)),
    )?
    .flatten())
}

/// Files and rendered bytes of the whole tree of `ws` at a position (default: the head),
/// counted by a scan of what `lineage` makes visible.
pub fn tree_totals(ws: &Workspace, position: Option<i64>) -> Outcome<(i64, i64)> {
    let at_head = position.is_none() || position == ws.head_position;
    let sql = format!(
        "SELECT count(*), coalesce(sum(coalesce(e.content_size, e.body_size)), 0)::bigint
           FROM ({}) e",
        lineage::visible_sql(&ws.sources, at_head, "e.content_size, e.body_size", "true")
    );
    let args = lineage::visible_args(&ws.id, &ws.sources, position);
    let row = db::query_row(&sql, &args, |r| {
        Ok((db::get::<i64>(r, 1)?, db::get::<i64>(r, 2)?))
    })?;
    Ok(row.unwrap_or((0, 0)))
}

/// After a redaction turned versions of `ws` into tombstones (their bytes now count 0): its
/// older revisions' totals become unknown (counted by scan when asked) and the head's are
/// counted again, so later commits keep adding to exact totals.
pub fn recount(schema: Schema, ws: &Workspace) -> Outcome<()> {
    if !schema.revision_totals {
        return Ok(());
    }
    db::exec(
        "UPDATE supabash.revisions SET tree_files = NULL, tree_bytes = NULL
          WHERE workspace_id = $1::uuid AND tree_files IS NOT NULL",
        &[ws.id.as_str().into()],
    )?;
    if let Some(head) = &ws.head {
        let (files, bytes) = tree_totals(ws, None)?;
        db::exec(
            "UPDATE supabash.revisions SET tree_files = $3, tree_bytes = $4
              WHERE workspace_id = $1::uuid AND revision_id = $2::uuid",
            &[
                ws.id.as_str().into(),
                head.as_str().into(),
                files.into(),
                bytes.into(),
            ],
        )?;
    }
    Ok(())
}

/// Deletes every revision of `ws`.
pub fn delete_all(ws: &str) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.revisions WHERE workspace_id = $1::uuid",
        &[ws.into()],
    )
}

/// Removes metadata `keys` (and the cause, when `clear_cause`) from revisions `revisions` of
/// `ws`: what a redaction of metadata rewrites.
pub fn scrub(ws: &str, revisions: &[String], keys: &[String], clear_cause: bool) -> Outcome<()> {
    db::exec(
        "UPDATE supabash.revisions
            SET metadata = metadata - $3::text[],
                cause = CASE WHEN $4 THEN NULL ELSE cause END
          WHERE workspace_id = $1::uuid AND revision_id = ANY($2::uuid[])",
        &[
            ws.into(),
            revisions.to_vec().into(),
            keys.to_vec().into(),
            clear_cause.into(),
        ],
    )
}

/// Deletes revisions `revisions` of `ws`; their transaction ids and idempotency keys stay
/// spent in `supabash.purged_commits` (see commit's replay).
pub fn purge(ws: &str, revisions: &[String]) -> Outcome<()> {
    db::exec(
        "WITH gone AS (DELETE FROM supabash.revisions
                        WHERE workspace_id = $1::uuid AND revision_id = ANY($2::uuid[])
                       RETURNING workspace_id, transaction_id, idempotency_key, revision_id)
         INSERT INTO supabash.purged_commits (workspace_id, transaction_id, idempotency_key, revision_id)
         SELECT * FROM gone",
        &[ws.into(), revisions.to_vec().into()],
    )
}

/// [`resolve_time`] of an optional revision argument.
pub fn resolve_time_opt(ws: &str, revision: Option<&str>) -> Outcome<Option<String>> {
    revision.map(|r| resolve_time(ws, r)).transpose()
}

/// Whether the revision at `position` of `ws` was still the head at `at` or later: the
/// revision after it (positions count commits one by one) was committed at `at` or after.
/// A purged successor answers false (nothing then says when it was committed).
pub fn head_at_or_after(ws: &str, position: i64, at: &str) -> Outcome<bool> {
    db::query_row(
        "SELECT committed_at >= $3::timestamptz FROM supabash.revisions
          WHERE workspace_id = $1::uuid AND position = $2 + 1",
        &[ws.into(), position.into(), at.into()],
        |r| db::get::<bool>(r, 1),
    )
    .map(|found| found.unwrap_or(false))
}

/// A revision argument of a read, resolved: a revision id passes through unchanged (its checks
/// come later); a point in time (`supabash_core::point_in_time`) names the last revision of
/// `ws` committed at or before it. A time in the future, a time before the oldest retained
/// revision, and a time inside a range of purged revisions are refused (the last two with
/// `SUPABASH_REVISION_NOT_FOUND` naming the nearest retained revisions).
pub fn resolve_time(ws: &str, revision: &str) -> Outcome<String> {
    let at = match point_in_time::classify(revision).map_err(|e| invalid(e.to_string()))? {
        RevisionArg::Id(id) => return Ok(id.to_owned()),
        RevisionArg::Time(at) => at,
    };
    let found = db::query_row(
        "WITH hit AS (
           SELECT revision_id, position, committed_at FROM supabash.revisions
            WHERE workspace_id = $1::uuid AND committed_at <= $2::timestamptz
            ORDER BY committed_at DESC, position DESC LIMIT 1),
         next AS (
           SELECT r.revision_id, r.position FROM supabash.revisions r, hit
            WHERE r.workspace_id = $1::uuid AND r.position > hit.position
            ORDER BY r.position LIMIT 1),
         oldest AS (
           SELECT revision_id FROM supabash.revisions WHERE workspace_id = $1::uuid
            ORDER BY position LIMIT 1)
         SELECT $2::timestamptz > now(), supabash.utc_text(now()),
                (SELECT revision_id::text FROM hit), (SELECT position FROM hit),
                (SELECT revision_id::text FROM next), (SELECT position FROM next),
                (SELECT revision_id::text FROM oldest),
                coalesce((SELECT committed_at = $2::timestamptz FROM hit), false)",
        &[ws.into(), at.into()],
        |r| {
            Ok((
                db::get::<bool>(r, 1)?,
                db::get::<String>(r, 2)?,
                db::opt::<String>(r, 3)?,
                db::opt::<i64>(r, 4)?,
                db::opt::<String>(r, 5)?,
                db::opt::<i64>(r, 6)?,
                db::opt::<String>(r, 7)?,
                db::get::<bool>(r, 8)?,
            ))
        },
    )?
    .expect("one row");
    let (future, now, hit, hit_position, next, next_position, oldest, exact) = found;
    if future {
        return Err(invalid(format!(
            "the time {at} is in the future (the detail has the server's clock)"
        ))
        .with_detail(json!({ "at": at, "now": now })));
    }
    let missing = |message: String, nearest: Option<String>, next: Option<String>| {
        Fail::new(Marker::RevisionNotFound, message).with_detail(json!({
            "at": at, "nearestRevision": nearest, "nextRevision": next,
        }))
    };
    match (hit, hit_position, next_position) {
        // Purged revisions lie between the one found and the next retained one: the time may
        // name one of them, unless it is the found revision's own time.
        (Some(hit), Some(p), Some(n)) if n > p + 1 && !exact => Err(missing(
            format!("the time {at} falls inside a range of purged revisions"),
            Some(hit),
            next,
        )),
        (Some(hit), ..) => Ok(hit),
        (None, ..) if oldest.is_none() => Err(missing(
            "the workspace has no revision".to_owned(),
            None,
            None,
        )),
        (None, ..) => Err(missing(
            format!("no retained revision was committed at or before {at}"),
            oldest.clone(),
            oldest,
        )),
    }
}

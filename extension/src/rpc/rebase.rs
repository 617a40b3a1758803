//! Path-level rebase: a commit made on an older base applies on top of the head when no path
//! it touches changed in between (docs/sql-contract.md, `supabash_commit`'s `rebase`).

use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use serde_json::json;
use supabash_core::Marker;

/// Checks that a commit based on `base` may apply on top of `head` (at `head_position`):
/// `base` is a retained revision of this workspace below the head, and no path in `touched`
/// changed after it. Fails with COMMIT_CONFLICT, naming the conflicting paths, otherwise.
pub fn check(
    ws: &str,
    base: Option<&str>,
    head: Option<&str>,
    head_position: i64,
    touched: &[String],
) -> Outcome<()> {
    let conflict = |message: &str, conflicts: Vec<String>| {
        Fail::new(Marker::CommitConflict, message).with_detail(json!({
            "expectedRevision": base, "actualRevision": head, "conflicts": conflicts,
        }))
    };
    let base_position = match base {
        None => None,
        Some(base) => db::query_row(
            "SELECT position FROM supabash.revisions
              WHERE workspace_id = $1::uuid AND revision_id = $2::uuid AND position < $3",
            &[ws.into(), base.into(), head_position.into()],
            |r| db::get::<i64>(r, 1),
        )?,
    };
    let Some(base_position) = base_position else {
        return Err(conflict(
            "the head moved and the base revision is unknown or purged, so the commit cannot be rebased",
            Vec::new(),
        ));
    };
    // A path changed in (base, head] when one of this workspace's rows for it opens or closes
    // there: an edit, a create, a delete, or a fork's first touch of an inherited path (its
    // copied row closes there). The rows the retained base sees survive every purge.
    let conflicts: Vec<String> = db::query(
        "SELECT DISTINCT path FROM supabash.entries
          WHERE workspace_id = $1::uuid AND path = ANY($2)
            AND ((valid_from > $3 AND valid_from <= $4)
                 OR (valid_until > $3 AND valid_until <= $4))
          ORDER BY path",
        &[
            ws.into(),
            touched.to_vec().into(),
            base_position.into(),
            head_position.into(),
        ],
        |r| db::get::<String>(r, 1),
    )?;
    if conflicts.is_empty() {
        return Ok(());
    }
    Err(conflict(
        "the head moved and changed paths this commit touches",
        conflicts,
    ))
}

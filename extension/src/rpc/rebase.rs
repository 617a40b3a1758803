//! Path-level rebase: a commit made on an older base applies on top of the head when no path
//! it touches changed in between (docs/sql-contract.md, `supabash_commit`'s `rebase`).

use crate::pg::fail::{Fail, Outcome};
use crate::store::{entries, revisions};
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
        Some(base) => revisions::position_below(ws, base, head_position)?,
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
    let conflicts = entries::changed_between(ws, touched, base_position, head_position)?;
    if conflicts.is_empty() {
        return Ok(());
    }
    Err(conflict(
        "the head moved and changed paths this commit touches",
        conflicts,
    ))
}

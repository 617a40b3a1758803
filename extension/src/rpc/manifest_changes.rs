//! `supabash_manifest_changes`: the entries that differ between two revisions' manifests,
//! found from the receipts in between (each names the paths its commit touched, a move's
//! source too), then read at the later revision by path (the entries' primary key). The cost
//! follows the revisions and paths in between, never the tree.

use super::Call;
use crate::pg::args;
use crate::pg::fail::Outcome;
use crate::rpc::files::{file, with_link_targets};
use crate::rpc::pinned::{readable, Header};
use crate::store::access;
use crate::store::entries;
use crate::store::revisions;
use std::collections::BTreeSet;
use supabash_core::rpc::manifest_changes::{
    ManifestChanges, ManifestChangesSince, MAX_CHANGED_PATHS, MAX_CHANGED_REVISIONS,
};

/// `supabash_manifest_changes`.
pub fn manifest_changes(call: &Call, req: ManifestChangesSince) -> Outcome<ManifestChanges> {
    let ws = access::open(&req)?;
    let since = args::uuid("since", &req.since)?;
    let mut answer = Header::read(&ws, req.revision.as_deref())?.manifest_changes();
    let Some(to) = answer.position else {
        return Ok(answer);
    };
    let from = match revisions::position_below(&ws.id, &since, to + 1)? {
        // A grant that may not read `since` is not told what changed after it either.
        Some(from) if to - from <= MAX_CHANGED_REVISIONS && readable(&ws, from)? => from,
        _ => return Ok(answer),
    };
    // Positions count a workspace's commits one by one: a missing receipt was purged, and
    // with it what that commit touched.
    let receipts = revisions::lines_between(&ws.id, from, to)?;
    if receipts.len() as i64 != to - from {
        return Ok(answer);
    }
    let mut paths = BTreeSet::new();
    for line in receipts.into_iter().flatten() {
        paths.extend(line.from);
        paths.insert(line.path);
        if paths.len() > MAX_CHANGED_PATHS {
            return Ok(answer);
        }
    }
    let paths: Vec<String> = paths.into_iter().collect();
    let at = Some(to).filter(|p| Some(*p) != ws.head_position);
    let mut rows = entries::files_at_paths(call.schema, &ws, at, paths.clone())?;
    with_link_targets(&ws, &mut rows)?;
    let present: BTreeSet<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    answer.removed = paths
        .iter()
        .filter(|p| !present.contains(p.as_str()))
        .cloned()
        .collect();
    answer.files = rows.into_iter().map(file).collect();
    answer.complete = true;
    Ok(answer)
}

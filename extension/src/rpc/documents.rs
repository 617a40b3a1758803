//! `supabash_load_documents`: many files of one revision with their bodies in one call, so a
//! mount or a lazy tree reads a directory's small files in one round trip instead of one per
//! file. A read: it runs on a hot standby and through `supabash._read`.

use super::files::file;
use super::pinned::{point, Point};
use super::Call;
use crate::pg::args;
use crate::pg::fail::{Fail, Outcome};
use crate::store::access;
use crate::store::bodies;
use crate::store::entries::{self, FileRow};
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use supabash_core::rpc::requests::{self as rq, MAX_DOCUMENTS_PER_CALL};
use supabash_core::rpc::Documents;
use supabash_core::Marker;

/// `supabash_load_documents`: the files at `paths` in a pinned revision (default: head), with
/// their bodies, charged against the call's decode budget before any body is fetched.
pub fn load_documents(call: &Call, req: rq::LoadDocuments) -> Outcome<Documents> {
    let ws = access::open(&req)?;
    if req.paths.len() > MAX_DOCUMENTS_PER_CALL {
        return Err(Fail::new(
            Marker::Quota,
            format!("one call reads at most {MAX_DOCUMENTS_PER_CALL} paths"),
        )
        .with_detail(json!({ "limit": MAX_DOCUMENTS_PER_CALL, "paths": req.paths.len() })));
    }
    let wanted: BTreeSet<String> = req
        .paths
        .iter()
        .map(|p| args::checked_path(p))
        .collect::<Outcome<_>>()?;
    let Point { revision, position } = point(&ws, req.revision.as_deref())?;
    let mut rows = if revision.is_none() || wanted.is_empty() {
        Vec::new()
    } else {
        let paths: Vec<String> = wanted.iter().cloned().collect();
        let at = position.filter(|p| Some(*p) != ws.head_position);
        entries::files_at_paths(call.schema, &ws, at, paths)?
    };
    attach_bodies(&ws.store, &mut rows)?;
    let found: BTreeSet<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    let missing = wanted
        .iter()
        .filter(|p| !found.contains(p.as_str()))
        .cloned()
        .collect();
    Ok(Documents {
        files: rows.into_iter().map(file).collect(),
        missing,
        revision,
    })
}

/// Loads the bodies of `rows` (tombstones name none) in one charged fetch; rows sharing a body
/// share its bytes.
fn attach_bodies(store: &str, rows: &mut [FileRow]) -> Outcome<()> {
    let wanted: Vec<(Vec<u8>, i64)> = rows
        .iter()
        .filter(|r| !r.redacted)
        .map(|r| (r.body_hash.clone(), r.body_size))
        .collect();
    let loaded = bodies::load_charged(store, &wanted)?;
    let bytes: HashMap<&[u8], &Vec<u8>> = loaded
        .iter()
        .map(|(h, b)| (h.as_slice(), &b.bytes))
        .collect();
    for row in rows.iter_mut().filter(|r| !r.redacted) {
        row.body = bytes.get(row.body_hash.as_slice()).map(|b| (*b).clone());
    }
    Ok(())
}

//! A commit leaves no symbolic link that leads outside the workspace once the tree is real
//! files: every link of the resulting tree resolves inside it, as the kernel resolves it
//! (`supabash_core::links::check`: every link on the way followed, at most 40). Checked only
//! when the commit changes the tree's links (creates, retargets, moves, replaces or deletes
//! one): a path that is not a link counts as a directory in the rule, so files and
//! directories never change its answer. Then every link of the resulting tree is resolved:
//! one read of the head's links (a scan of the workspace's open rows, filtered by kind) and of
//! their targets' bodies, then one resolution per link.

use crate::pg::fail::{Fail, Outcome};
use crate::pg::schema::Schema;
use crate::store::access::Workspace;
use crate::store::bodies;
use crate::store::entries::{self, Version};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use supabash_core::links::{self, Absolute};
use supabash_core::posix::Kind;
use supabash_core::Marker;

/// Refuses a final state holding a link that resolves outside the workspace or through more
/// than 40 links. `new_bytes` holds the bodies the commit introduces, by body hash.
pub fn check(
    schema: Schema,
    ws: &Workspace,
    initial: &BTreeMap<String, Version>,
    state: &BTreeMap<String, Option<Version>>,
    new_bytes: &HashMap<Vec<u8>, Vec<u8>>,
) -> Outcome<()> {
    let is_link = |v: Option<&Version>| v.is_some_and(|v| v.kind == Kind::Symlink);
    let changes_links = state.iter().any(|(p, fin)| {
        let cur = initial.get(p);
        (is_link(cur) || is_link(fin.as_ref())) && cur != fin.as_ref()
    });
    if !schema.posix_entries || !changes_links {
        return Ok(());
    }
    // The head's links, those this commit touches replaced by their final state.
    let mut hashes: BTreeMap<String, (Vec<u8>, i64)> = entries::visible_files(
        schema,
        ws,
        None,
        "e.kind = 'symlink' AND NOT e.redacted",
        "",
        Vec::new(),
        true,
    )?
    .into_iter()
    .map(|r| (r.path, (r.body_hash, r.body_size)))
    .collect();
    for (p, fin) in state {
        match fin {
            Some(v) if v.kind == Kind::Symlink && !v.is_tombstone() => {
                hashes.insert(p.clone(), (v.body_hash.clone(), v.body_size));
            }
            _ => {
                hashes.remove(p);
            }
        }
    }
    let stored: Vec<(Vec<u8>, i64)> = hashes
        .values()
        .filter(|(h, _)| !new_bytes.contains_key(h))
        .cloned()
        .collect();
    let loaded = bodies::load_charged(&ws.store, &stored)?;
    let links: BTreeMap<String, String> = hashes
        .into_iter()
        .map(|(p, (h, _))| {
            let bytes = new_bytes
                .get(&h)
                .map(Vec::as_slice)
                .or_else(|| loaded.get(&h).map(|b| b.bytes.as_slice()))
                .unwrap_or_default();
            (p, String::from_utf8_lossy(bytes).into_owned())
        })
        .collect();
    links::check_all(&links, Absolute::Escapes).map_err(|(link, e)| {
        Fail::new(Marker::InvalidPath, e.message(&link)).with_detail(json!({
            "path": link,
            "target": links.get(&link),
            "reason": e.reason(),
        }))
    })
}

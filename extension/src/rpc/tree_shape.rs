//! A commit leaves a tree, not a set of unrelated paths: no entry lies below a regular file
//! or a symbolic link. Checked for the paths a commit creates or turns into a non-directory,
//! against the head (two set-based probes) with the commit's own changes laid over it.

use crate::pg::fail::{Fail, Outcome};
use crate::pg::schema::Schema;
use crate::store::access::Workspace;
use crate::store::entries::{self, Version};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use supabash_core::path;
use supabash_core::posix::Kind;
use supabash_core::Marker;

/// Refuses a final state where an entry lies below a file or a link: a new path under an
/// existing (or newly written) non-directory, or a non-directory written where entries lie
/// below.
pub fn check(
    schema: Schema,
    ws: &Workspace,
    initial: &BTreeMap<String, Version>,
    state: &BTreeMap<String, Option<Version>>,
) -> Outcome<()> {
    let is_leaf = |v: &Version| v.kind != Kind::Directory;
    // Paths that appear in this commit: their ancestors must be directories.
    let created: Vec<&String> = state
        .iter()
        .filter(|(p, v)| v.is_some() && !initial.contains_key(*p))
        .map(|(p, _)| p)
        .collect();
    // Paths that become a file or link: nothing may lie below them.
    let leaves: Vec<String> = state
        .iter()
        .filter(|(p, v)| {
            v.as_ref().is_some_and(is_leaf) && initial.get(*p).is_none_or(|i| !is_leaf(i))
        })
        .map(|(p, _)| p.clone())
        .collect();
    if created.is_empty() && leaves.is_empty() {
        return Ok(());
    }
    let mut ancestors = BTreeSet::new();
    for p in &created {
        let mut dir = path::parent(p);
        while dir != "/" {
            ancestors.insert(dir.to_owned());
            dir = path::parent(dir);
        }
    }
    // The final kind of a path: the commit's when it touches it, else the head's.
    let stored = entries::versions(schema, ws, None, ancestors.iter().cloned().collect())?;
    for p in &created {
        let mut dir = path::parent(p);
        while dir != "/" {
            let fin = match state.get(dir) {
                Some(v) => v.as_ref(),
                None => stored.get(dir),
            };
            if let Some(v) = fin.filter(|v| is_leaf(v)) {
                return Err(collision(p, dir, v.kind));
            }
            dir = path::parent(dir);
        }
    }
    if leaves.is_empty() {
        return Ok(());
    }
    // Below each new leaf: the commit's own entries, then the head's (unless deleted here).
    for leaf in &leaves {
        let prefix = format!("{leaf}/");
        if let Some((below, _)) = state
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .find(|(_, v)| v.is_some())
        {
            return Err(collision(below, leaf, Kind::File));
        }
    }
    let deleted: Vec<String> = state
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    match entries::first_below(schema, ws, &leaves, &deleted)?
        .into_iter()
        .next()
    {
        Some((leaf, below)) => {
            let kind = state
                .get(&leaf)
                .cloned()
                .flatten()
                .map_or(Kind::File, |v| v.kind);
            Err(collision(&below, &leaf, kind))
        }
        None => Ok(()),
    }
}

fn collision(path: &str, under: &str, kind: Kind) -> Fail {
    Fail::new(
        Marker::InvalidArgument,
        format!("{path:?} cannot lie below {under:?}: it is a {kind}, not a directory"),
    )
    .with_detail(json!({ "path": path, "under": under, "reason": "not-a-directory" }))
}

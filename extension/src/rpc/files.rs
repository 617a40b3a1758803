//! Files of a pinned tree as the reads answer them: the wire form of a stored row, the rows
//! visible at a position (with their bodies, or with only the symbolic links' targets).

use crate::pg::fail::Outcome;
use crate::pg::schema::Schema;
use crate::store::access::Workspace;
use crate::store::bodies;
use crate::store::entries::{self, FileRow};
use std::collections::HashMap;
use supabash_core::hash::hex_lower;
use supabash_core::posix::Kind;
use supabash_core::rpc::File;

/// The wire form of a file row (with its body when the row carries one).
pub fn file(row: FileRow) -> File {
    let file = File {
        path: row.path,
        content_hash: hex_lower(&row.content_hash),
        size: row.content_size,
        body_hash: hex_lower(&row.body_hash),
        body_size: row.body_size,
        metadata: row.metadata,
        text: None,
        base64: None,
        redacted: row.redacted,
        kind: row.kind,
        mode: row.mode,
        mtime_ns: row.mtime_ns,
    };
    match row.body {
        Some(body) => file.with_body(body),
        None => file,
    }
}

pub fn files(rows: Vec<FileRow>) -> Vec<File> {
    rows.into_iter().map(file).collect()
}

/// The files of a workspace at a position (`None`: the head), optionally one path only,
/// optionally with bodies (a symbolic link always carries its body: its target), in path
/// order (see [`entries::visible_files`]).
pub fn files_at(
    schema: Schema,
    ws: &Workspace,
    position: Option<i64>,
    only: Option<&str>,
    bodies: bool,
) -> Outcome<Vec<FileRow>> {
    let mut rows = entries::visible_files(
        schema,
        ws,
        position,
        "$5::text IS NULL OR e.path = $5",
        "",
        vec![only.into()],
        false,
    )?;
    if bodies {
        // Tombstones name no body.
        let wanted: Vec<(Vec<u8>, i64)> = rows
            .iter()
            .filter(|r| !r.redacted)
            .map(|r| (r.body_hash.clone(), r.body_size))
            .collect();
        let mut loaded = bodies::load_charged(&ws.store, &wanted)?;
        let mut uses: HashMap<Vec<u8>, usize> = HashMap::new();
        for row in rows.iter().filter(|r| !r.redacted) {
            *uses.entry(row.body_hash.clone()).or_default() += 1;
        }
        for row in rows.iter_mut().filter(|r| !r.redacted) {
            // Files that share a body share its bytes: the last of them takes them.
            let left = uses.get_mut(&row.body_hash).expect("counted");
            *left -= 1;
            row.body = if *left == 0 {
                loaded.remove(&row.body_hash).map(|b| b.bytes)
            } else {
                loaded.get(&row.body_hash).map(|b| b.bytes.clone())
            };
        }
    } else {
        with_link_targets(ws, &mut rows)?;
    }
    Ok(rows)
}

/// Attaches their bodies (their targets, a few bytes each) to the symbolic links of `rows`, so
/// a tree without bodies still shows where each link points.
pub fn with_link_targets(ws: &Workspace, rows: &mut [FileRow]) -> Outcome<()> {
    let link = |r: &FileRow| r.kind == Kind::Symlink && !r.redacted;
    let wanted: Vec<(Vec<u8>, i64)> = rows
        .iter()
        .filter(|r| link(r))
        .map(|r| (r.body_hash.clone(), r.body_size))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let loaded = bodies::load_charged(&ws.store, &wanted)?;
    for row in rows.iter_mut().filter(|r| link(r)) {
        row.body = loaded.get(&row.body_hash).map(|b| b.bytes.clone());
    }
    Ok(())
}

//! Every read of one workspace: manifest, pinned documents and snapshots, revisions and
//! history pages.

use super::{Call, Text};
use crate::pg::args;
use crate::pg::fail::{Fail, Outcome};
use crate::pg::schema::Schema;
use crate::store::access::{self, Workspace};
use crate::store::bodies;
use crate::store::entries::{self, FileRow};
use crate::store::revisions;
use serde_json::json;
use std::collections::HashMap;
use supabash_core::capability::Operation;
use supabash_core::hash::hex_lower;
use supabash_core::limits::{DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE};
use supabash_core::posix::Kind;
use supabash_core::rpc::body;
use supabash_core::rpc::manifest_text::ManifestText;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Document, File, HistoryPage, ManifestFile, Receipt, RevisionTree, Tree};
use supabash_core::Marker;

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

fn files(rows: Vec<FileRow>) -> Vec<File> {
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

/// Resolves an optional revision argument to (revision id, position); absent means the head.
pub(crate) fn pinned(
    ws: &Workspace,
    revision: Option<&str>,
) -> Outcome<(Option<String>, Option<i64>)> {
    match args::uuid_opt("revision", revision)? {
        None => Ok((ws.head.clone(), ws.head_position)),
        Some(rev) => {
            let pos = access::revision_position(&ws.id, &rev)?;
            Ok((Some(rev), Some(pos)))
        }
    }
}

/// `supabash_load_manifest`: the tree without bodies at a pinned revision (default: head),
/// its text written as the rows are read (`ManifestText`): a 10,000-file answer builds no
/// owned row, string or JSON value per file. A symbolic link carries its target: the links'
/// bodies are loaded between a first walk of the rows, which finds them, and the second.
pub fn load_manifest(call: &Call, req: rq::LoadManifest) -> Outcome<Text> {
    let ws = access::open(&req, &[Operation::Read])?;
    let at = revisions::resolve_time_opt(&ws.id, req.revision.as_deref())?;
    let (revision, position) = pinned(&ws, at.as_deref())?;
    let compact = req.compact.unwrap_or(false);
    let head = Tree::<ManifestFile> {
        files: Vec::new(),
        restore_floor: crate::store::redactions::restore_floor(&ws.id)?,
        files_only: ws.files_only,
        redaction_epoch: ws.redaction_epoch,
        workspace_id: ws.id.clone(),
        revision,
        position,
    };
    entries::with_visible_rows(call.schema, &ws, position, |rows| {
        // The first walk: the links, and the paths' bytes, for the answer's size (an entry
        // takes about 150 bytes besides its path, 300 in the full form).
        let (mut links, mut size) = (Vec::new(), 512);
        rows.each(|row| {
            if let Some((hash, body_size)) = entries::link_body(row)? {
                links.push((hash.to_vec(), body_size));
            }
            size += row.text(1)?.map_or(0, str::len) + if compact { 150 } else { 300 };
            Ok(())
        })?;
        let targets: HashMap<Vec<u8>, body::Encoded> = bodies::load_charged(&ws.store, &links)?
            .into_iter()
            .map(|(hash, b)| (hash, body::encode(b.bytes)))
            .collect();
        let mut text = ManifestText::new(&head, compact, size);
        rows.each(|row| {
            let mut entry = entries::manifest_entry(row)?;
            if entry.kind == Kind::Symlink && !entry.redacted {
                entry.body = targets.get(entry.body_hash);
            }
            text.push(&entry);
            Ok(())
        })?;
        Ok(Text(text.finish()))
    })
}

/// `supabash_load_document`: one file, with its body, at a pinned revision (default: head).
pub fn load_document(call: &Call, req: rq::LoadDocument) -> Outcome<Document> {
    let ws = access::open(&req, &[Operation::Read])?;
    let path = args::checked_path(&req.path)?;
    let at = revisions::resolve_time_opt(&ws.id, req.revision.as_deref())?;
    let (revision, position) = pinned(&ws, at.as_deref())?;
    let row = files_at(call.schema, &ws, position, Some(&path), true)?
        .into_iter()
        .next()
        .ok_or_else(|| {
            Fail::new(
                Marker::PathNotFound,
                format!("{path:?} does not exist at this revision"),
            )
            .with_detail(json!({ "path": path, "revision": revision }))
        })?;
    Ok(Document {
        file: file(row),
        revision,
    })
}

/// `supabash_load_snapshot`: every file with its body at a pinned revision (default: head).
pub fn load_snapshot(call: &Call, req: rq::LoadSnapshot) -> Outcome<Tree> {
    let ws = access::open(&req, &[Operation::Read])?;
    let at = revisions::resolve_time_opt(&ws.id, req.revision.as_deref())?;
    let (revision, position) = pinned(&ws, at.as_deref())?;
    let files = if revision.is_none() {
        Vec::new()
    } else {
        files(files_at(call.schema, &ws, position, None, true)?)
    };
    Ok(Tree {
        restore_floor: crate::store::redactions::restore_floor(&ws.id)?,
        files_only: ws.files_only,
        redaction_epoch: ws.redaction_epoch,
        workspace_id: ws.id,
        revision,
        position,
        files,
    })
}

/// The receipt of a revision.
fn receipt(ws: &str, revision: &str) -> Outcome<Receipt> {
    let stored = revisions::find(ws, revision)?.ok_or_else(|| {
        Fail::new(
            Marker::RevisionNotFound,
            "revision not found in this workspace",
        )
    })?;
    Ok(stored.receipt)
}

/// `supabash_load_revision`: a revision's receipt and its full tree with bodies.
pub fn load_revision(call: &Call, req: rq::LoadRevision) -> Outcome<RevisionTree> {
    let ws = access::open(&req, &[Operation::History, Operation::Restore])?;
    let revision = revisions::resolve_time(&ws.id, &req.revision)?;
    let revision = args::uuid("revision", &revision)?;
    let position = access::revision_position(&ws.id, &revision)?;
    Ok(RevisionTree {
        files: files(files_at(call.schema, &ws, Some(position), None, true)?),
        receipt: receipt(&ws.id, &revision)?,
    })
}

/// `supabash_history`: receipts oldest first, a page at a time. The cursor is the revision id
/// of the last record of the previous page.
pub fn history(call: &Call, req: rq::History) -> Outcome<HistoryPage> {
    let ws = access::open(&req, &[Operation::History])?;
    let limit = args::page_size(req.page_size, DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE)?;
    let after = match args::uuid_opt("cursor", req.cursor.as_deref())? {
        None => i64::MIN,
        Some(cursor) => match access::revision_position(&ws.id, &cursor) {
            Ok(p) => p,
            Err(_) if req.restart_if_missing == Some(true) => i64::MIN,
            Err(_) => {
                return Err(Fail::new(
                    Marker::RevisionNotFound,
                    "the cursor names no retained revision",
                )
                .with_detail(json!({ "cursor": cursor })))
            }
        },
    };
    let mut records: Vec<Receipt> = revisions::page(&ws.id, after, limit + 1)?
        .into_iter()
        .map(|s| s.receipt)
        .collect();
    let more = records.len() as i64 > limit;
    records.truncate(limit as usize);
    let next_cursor = if more {
        records.last().map(|r| r.revision.clone())
    } else {
        None
    };
    let notes = if call.schema.revision_notes && !records.is_empty() {
        let ids: Vec<String> = records.iter().map(|r| r.revision.clone()).collect();
        crate::store::notes::of_revisions(&ws.id, &ids, None)?
    } else {
        Vec::new()
    };
    Ok(HistoryPage {
        records,
        next_cursor,
        notes,
    })
}

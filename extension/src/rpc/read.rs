//! Every read of one workspace: manifest, pinned documents and snapshots, revisions and
//! history pages.

use super::files::{file, files, files_at};
use super::pinned::{point_or_time, Header, Point};
use super::{Call, Text};
use crate::pg::args;
use crate::pg::fail::{Fail, Outcome};
use crate::store::access::{self};
use crate::store::bodies;
use crate::store::entries::{self};
use crate::store::revisions;
use serde_json::json;
use std::collections::HashMap;
use supabash_core::limits::{DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE};
use supabash_core::posix::Kind;
use supabash_core::rpc::body;
use supabash_core::rpc::manifest_text::ManifestText;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Document, HistoryPage, ManifestFile, Receipt, RevisionTree, Tree};
use supabash_core::Marker;

/// `supabash_load_manifest`: the tree without bodies at a pinned revision (default: head),
/// its text written as the rows are read (`ManifestText`): a 10,000-file answer builds no
/// owned row, string or JSON value per file. A symbolic link carries its target: the links'
/// bodies are loaded between a first walk of the rows, which finds them, and the second.
pub fn load_manifest(call: &Call, req: rq::LoadManifest) -> Outcome<Text> {
    let ws = access::open(&req)?;
    let head = Header::read(&ws, req.revision.as_deref())?.tree::<ManifestFile>(Vec::new());
    let (position, compact) = (head.position, req.compact.unwrap_or(false));
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
    let ws = access::open(&req)?;
    let path = args::checked_path(&req.path)?;
    let Point { revision, position } = point_or_time(&ws, req.revision.as_deref())?;
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
    let ws = access::open(&req)?;
    let header = Header::read(&ws, req.revision.as_deref())?;
    let files = if header.revision.is_none() {
        Vec::new()
    } else {
        files(files_at(call.schema, &ws, header.position, None, true)?)
    };
    Ok(header.tree(files))
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
    let ws = access::open(&req)?;
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
    let ws = access::open(&req)?;
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

//! Workspace creation and every read: manifest, pinned documents and snapshots, revisions and
//! history pages.

use crate::access::{self, Workspace};
use crate::args::Args;
use crate::bodies;
use crate::db::{self, FileRow};
use crate::fail::{Fail, Outcome};
use crate::receipts;
use base64::Engine;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use supabash_core::capability::Operation;
use supabash_core::limits::{DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE};
use supabash_core::wire::Receipt;
use supabash_core::Marker;

/// `supabash_create_workspace`: a new, empty workspace owned by the caller.
pub fn create_workspace() -> Outcome<Value> {
    let owner = access::caller()?;
    Ok(db::json(
        "INSERT INTO supabash.workspaces (owner_id) VALUES ($1::uuid)
         RETURNING jsonb_build_object('workspaceId', id, 'createdAt', created_at, 'headRevision', NULL)",
        &[owner.into()],
    )?
    .unwrap_or(Value::Null))
}

/// The body as JSON text when it can be one: UTF-8 without NUL (Postgres jsonb cannot hold
/// `\u0000`, so a NUL in a result would fail the whole call).
pub fn json_text(body: Vec<u8>) -> Result<String, Vec<u8>> {
    if body.contains(&0) {
        return Err(body);
    }
    String::from_utf8(body).map_err(|e| e.into_bytes())
}

/// Adds the body of a file to its JSON: `text` when it is UTF-8 without NUL, `base64`
/// otherwise.
pub fn put_body(obj: &mut Map<String, Value>, body: Vec<u8>) {
    match json_text(body) {
        Ok(text) => obj.insert("text".into(), Value::String(text)),
        Err(bytes) => obj.insert(
            "base64".into(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    };
}

/// The JSON form of a file row (with its body when the row carries one).
pub fn file_json(row: FileRow) -> Value {
    let mut obj = Map::new();
    obj.insert("path".into(), Value::String(row.path));
    obj.insert(
        "contentHash".into(),
        Value::String(hex::encode(row.content_hash)),
    );
    obj.insert("size".into(), json!(row.content_size));
    obj.insert("bodyHash".into(), Value::String(hex::encode(row.body_hash)));
    obj.insert("bodySize".into(), json!(row.body_size));
    obj.insert("metadata".into(), row.metadata);
    if let Some(body) = row.body {
        put_body(&mut obj, body);
    }
    Value::Object(obj)
}

const FILE_COLUMNS: &str =
    "e.path, e.body_hash, e.body_size, e.content_hash, e.content_size, e.metadata";

/// The files of a workspace at a position (`None`: the head), optionally one path only,
/// optionally with bodies. Reading the head uses the open-interval index; any other retained
/// position is an index range scan over the workspace's intervals.
pub fn files_at(
    ws: &Workspace,
    position: Option<i64>,
    only: Option<&str>,
    bodies: bool,
) -> Outcome<Vec<FileRow>> {
    let at_head = position.is_none() || position == ws.head_position;
    let interval = if at_head {
        "e.valid_until IS NULL"
    } else {
        "e.valid_from <= $2 AND (e.valid_until IS NULL OR e.valid_until > $2)"
    };
    let sql = format!(
        "SELECT {FILE_COLUMNS} FROM supabash.entries e
          WHERE e.workspace_id = $1::uuid AND {interval} AND ($3::text IS NULL OR e.path = $3)
          ORDER BY e.path"
    );
    let mut rows = db::file_rows(
        &sql,
        &[
            ws.id.as_str().into(),
            position.unwrap_or(0).into(),
            only.into(),
        ],
    )?;
    if bodies {
        let hashes = rows.iter().map(|r| r.body_hash.clone()).collect();
        let mut loaded = bodies::load(&ws.id, hashes)?;
        let mut uses: HashMap<Vec<u8>, usize> = HashMap::new();
        for row in &rows {
            *uses.entry(row.body_hash.clone()).or_default() += 1;
        }
        for row in &mut rows {
            // Files that share a body share its bytes: the last of them takes them.
            let left = uses.get_mut(&row.body_hash).expect("counted");
            *left -= 1;
            row.body = if *left == 0 {
                loaded.remove(&row.body_hash).map(|b| b.bytes)
            } else {
                loaded.get(&row.body_hash).map(|b| b.bytes.clone())
            };
        }
    }
    Ok(rows)
}

/// Resolves an optional revision argument to (revision id, position); absent means the head.
fn pinned(ws: &Workspace, args: &Args) -> Outcome<(Option<String>, Option<i64>)> {
    match args.uuid_opt("revision")? {
        None => Ok((ws.head.clone(), ws.head_position)),
        Some(rev) => {
            let pos = access::revision_position(&ws.id, &rev)?;
            Ok((Some(rev), Some(pos)))
        }
    }
}

/// `supabash_load_manifest`: the head tree without bodies.
pub fn load_manifest(args: &Args) -> Outcome<Value> {
    let ws = access::open(args, &[Operation::Read])?;
    let files: Vec<Value> = files_at(&ws, None, None, false)?
        .into_iter()
        .map(file_json)
        .collect();
    Ok(
        json!({ "workspaceId": ws.id, "revision": ws.head, "position": ws.head_position, "files": files }),
    )
}

/// `supabash_load_document`: one file, with its body, at a pinned revision (default: head).
pub fn load_document(args: &Args) -> Outcome<Value> {
    let ws = access::open(args, &[Operation::Read])?;
    let path = args.path("path")?;
    let (revision, position) = pinned(&ws, args)?;
    let row = files_at(&ws, position, Some(&path), true)?
        .into_iter()
        .next()
        .ok_or_else(|| {
            Fail::new(
                Marker::PathNotFound,
                format!("{path:?} does not exist at this revision"),
            )
            .with_detail(json!({ "path": path, "revision": revision }))
        })?;
    let mut doc = file_json(row);
    doc["revision"] = json!(revision);
    Ok(doc)
}

/// `supabash_load_snapshot`: every file with its body at a pinned revision (default: head).
pub fn load_snapshot(args: &Args) -> Outcome<Value> {
    let ws = access::open(args, &[Operation::Read])?;
    let (revision, position) = pinned(&ws, args)?;
    let files: Vec<Value> = if revision.is_none() {
        Vec::new()
    } else {
        files_at(&ws, position, None, true)?
            .into_iter()
            .map(file_json)
            .collect()
    };
    Ok(json!({ "workspaceId": ws.id, "revision": revision, "position": position, "files": files }))
}

/// The receipt of a revision.
fn receipt(ws: &str, revision: &str) -> Outcome<Value> {
    let found = receipts::rows(
        &format!(
            "SELECT {} FROM supabash.revisions WHERE workspace_id = $1::uuid AND revision_id = $2::uuid",
            receipts::COLUMNS
        ),
        &[ws.into(), revision.into()],
    )?;
    let stored = found.into_iter().next().ok_or_else(|| {
        Fail::new(
            Marker::RevisionNotFound,
            "revision not found in this workspace",
        )
    })?;
    Ok(json!(stored.receipt))
}

/// `supabash_load_revision`: a revision's receipt and its full tree with bodies.
pub fn load_revision(args: &Args) -> Outcome<Value> {
    let ws = access::open(args, &[Operation::History, Operation::Restore])?;
    let revision = args.uuid("revision")?;
    let position = access::revision_position(&ws.id, &revision)?;
    let files: Vec<Value> = files_at(&ws, Some(position), None, true)?
        .into_iter()
        .map(file_json)
        .collect();
    Ok(json!({ "receipt": receipt(&ws.id, &revision)?, "files": files }))
}

/// `supabash_history`: receipts oldest first, a page at a time. The cursor is the revision id
/// of the last record of the previous page.
pub fn history(args: &Args) -> Outcome<Value> {
    let ws = access::open(args, &[Operation::History])?;
    let limit = args.int_opt("page_size")?.unwrap_or(DEFAULT_HISTORY_PAGE);
    if !(1..=MAX_HISTORY_PAGE).contains(&limit) {
        return Err(Fail::new(
            Marker::Quota,
            format!("page_size must be between 1 and {MAX_HISTORY_PAGE}"),
        ));
    }
    let after = match args.uuid_opt("cursor")? {
        None => i64::MIN,
        Some(cursor) => match access::revision_position(&ws.id, &cursor) {
            Ok(p) => p,
            Err(_) if args.flag("restart_if_missing")? => i64::MIN,
            Err(_) => {
                return Err(Fail::new(
                    Marker::RevisionNotFound,
                    "the cursor names no retained revision",
                )
                .with_detail(json!({ "cursor": cursor })))
            }
        },
    };
    let mut records: Vec<Receipt> = receipts::rows(
        &format!(
            "SELECT {} FROM supabash.revisions
              WHERE workspace_id = $1::uuid AND position > $2 ORDER BY position LIMIT $3",
            receipts::COLUMNS
        ),
        &[ws.id.as_str().into(), after.into(), (limit + 1).into()],
    )?
    .into_iter()
    .map(|s| s.receipt)
    .collect();
    let more = records.len() as i64 > limit;
    records.truncate(limit as usize);
    let next = if more {
        records.last().map(|r| r.revision.clone())
    } else {
        None
    };
    Ok(json!({ "records": records, "nextCursor": next }))
}

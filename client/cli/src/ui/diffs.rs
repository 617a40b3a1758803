//! One revision (`GET /api/ws/{id}/revision?rev=ID`): its receipt and notes, its changes as
//! unified diffs (git's layout from `history::diff`: renames as renames, mode changes, link
//! targets, binary files named, redacted versions said so, large files summarised), and the
//! audit records that produced it (each naming its revision, so they link both ways); and
//! one path between two of its versions (`GET /api/ws/{id}/compare`), which is also how the
//! page reads a revision's large files (over 256 KiB) after the rest.

use super::error::{ApiError, ApiResult};
use super::timeline::{receipt, summary};
use super::UiState;
use crate::history::diff::{compare, load, unified_within, FileDiff, Side};
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use supabash::transport::call;
use supabash::workspace::{Diff, DiffEntry, DiffKind, DiffRef};
use supabash::Transport;
use supabash_core::rpc::audit::{Audit, AuditRecord};
use supabash_core::rpc::{Receipt, ReceiptLine};

/// The longest one file's diff may look for the smallest set of changes (then it answers a
/// larger one: correct, less tidy).
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);
/// A side larger than this is summarised, not read.
const MAX_DIFF_SIDE: i64 = 2 << 20;
/// A revision's file whose larger side is over this is not diffed in the revision's answer:
/// the page asks for it on its own (`/compare`) once the rest is drawn.
const DEFER_SIDE: i64 = 256 << 10;
/// The most bytes of unified diff one file answers (the rest is cut, and said so): two sides
/// of [`MAX_DIFF_SIDE`] wholly rewritten fit.
const MAX_DIFF_TEXT: usize = 5 << 20;

/// The query naming a revision.
#[derive(Debug, Deserialize)]
pub struct RevQuery {
    rev: String,
}

/// The entries of a revision without a readable parent, from its receipt.
fn entries_of(r: &Receipt) -> Vec<DiffEntry> {
    r.changes
        .iter()
        .map(|c| DiffEntry {
            kind: match (c.op.as_str(), &c.before_hash) {
                ("delete", _) => DiffKind::Deleted,
                ("move", _) => DiffKind::Moved,
                (_, None) => DiffKind::Added,
                _ => DiffKind::Modified,
            },
            path: c.path.clone(),
            from: c.from.clone(),
            before_hash: c.before_hash.clone(),
            after_hash: c.after_hash.clone(),
            preview: None,
            binary: false,
            before_mode: c.before_mode,
            after_mode: c.after_mode,
            before_kind: None,
            after_kind: c.kind,
        })
        .collect()
}

/// The larger side of `path` as the receipt tells it.
fn largest(lines: &[ReceiptLine], path: &str) -> i64 {
    lines
        .iter()
        .filter(|c| c.path == path)
        .map(|c| c.before_size.unwrap_or(0).max(c.after_size.unwrap_or(0)))
        .max()
        .unwrap_or(0)
}

/// What the page shows of a changed entry before its content.
fn entry_fields(entry: &DiffEntry) -> Value {
    json!({
        "kind": entry.kind,
        "path": entry.path,
        "from": entry.from,
        "beforeMode": entry.before_mode.map(|m| format!("{m:o}")),
        "afterMode": entry.after_mode.map(|m| format!("{m:o}")),
        "beforeKind": entry.before_kind,
        "afterKind": entry.after_kind,
        "binary": entry.binary,
    })
}

/// A large file of a revision, to be asked for on its own: where `/compare` finds it.
fn deferred(diff: &Diff, entry: &DiffEntry, size: i64) -> Value {
    let mut shown = entry_fields(entry);
    shown["deferred"] = json!({
        "from": diff.from, "to": diff.to, "path": entry.path, "old": entry.from, "size": size,
    });
    shown
}

/// One file's change as the page shows it.
async fn file_change(
    t: &dyn Transport,
    ws: &str,
    diff: &Diff,
    entry: &DiffEntry,
    size: i64,
) -> Value {
    let mut shown = entry_fields(entry);
    if size > MAX_DIFF_SIDE {
        shown["large"] = json!(size);
        return shown;
    }
    let one = Diff {
        from: diff.from.clone(),
        to: diff.to.clone(),
        entries: vec![entry.clone()],
    };
    let files: Vec<FileDiff> = match load(t, ws, &one).await {
        Ok(f) => f,
        Err(e) => {
            shown["error"] = json!(ApiError::from(e).message);
            return shown;
        }
    };
    let redacted = files
        .iter()
        .any(|f| f.before == Side::Redacted || f.after == Side::Redacted);
    let binary = files
        .iter()
        .any(|f| f.before == Side::Binary || f.after == Side::Binary);
    let mut text = unified_within(&files, false, Some(DIFF_TIMEOUT));
    if text.len() > MAX_DIFF_TEXT {
        let mut cut = MAX_DIFF_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        shown["truncated"] = json!(true);
    }
    shown["redacted"] = json!(redacted);
    shown["binary"] = json!(entry.binary || binary);
    shown["unified"] = json!(text);
    shown
}

/// Every audit record of revision `rev`.
pub async fn audit_of(
    t: &dyn Transport,
    ws: &str,
    rev: &str,
) -> Result<Vec<AuditRecord>, ApiError> {
    let mut records = Vec::new();
    let mut cursor = None;
    loop {
        let request = Audit {
            workspace_id: ws.to_owned(),
            revision: Some(rev.to_owned()),
            cursor,
            page_size: None,
            delegated_grant: None,
        };
        let page = call(t, &request).await?;
        records.extend(page.records);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(records),
        }
    }
}

/// `GET /api/ws/{id}/revision?rev=ID`: `{"revision": summary, "files": [...], "audit": [...]}`.
pub async fn revision(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(q): Query<RevQuery>,
) -> ApiResult<Value> {
    let t = s.transport.as_ref();
    let r = receipt(t, &s.receipts, &ws, &q.rev).await?;
    let to = DiffRef::Revision(r.revision.clone());
    let compared = async {
        match &r.parent_revision {
            Some(p) => compare(t, &ws, DiffRef::Revision(p.clone()), to, None)
                .await
                .ok(),
            None => None,
        }
    };
    // Side by side on the pool's connections: the notes, the audit records and the diff.
    let (notes, audit, compared) = tokio::join!(
        crate::history::notes::fetch(t, &ws, &r.revision),
        audit_of(t, &ws, &r.revision),
        compared
    );
    let (notes, audit) = (notes?, audit?);
    let diff = compared.unwrap_or_else(|| Diff {
        from: None,
        to: Some(r.revision.clone()),
        entries: entries_of(&r),
    });
    let mut files = Vec::with_capacity(diff.entries.len());
    for e in &diff.entries {
        let size = largest(&r.changes, &e.path);
        let later = size > DEFER_SIDE && size <= MAX_DIFF_SIDE && diff.from.is_some() && !e.binary;
        files.push(if later {
            deferred(&diff, e, size)
        } else {
            file_change(t, &ws, &diff, e, size).await
        });
    }
    Ok(Json(json!({
        "revision": summary(&r, &notes),
        "metadata": r.metadata,
        "files": files,
        "audit": audit,
    })))
}

/// The query of a path's diff between two of its versions.
#[derive(Debug, Deserialize)]
pub struct CompareQuery {
    path: String,
    /// Where the path was in `from`, when a move brought it to `path`.
    old: Option<String>,
    from: String,
    to: String,
    /// The larger version's size, as the path's history gives it (a larger one is not read).
    size: Option<i64>,
}

/// `GET /api/ws/{id}/compare?path&old&from&to&size`: `{"from", "to", "files": [...]}`.
pub async fn compare_path(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(q): Query<CompareQuery>,
) -> ApiResult<Value> {
    let t = s.transport.as_ref();
    let mut paths = vec![q.path.clone()];
    paths.extend(q.old.filter(|o| *o != q.path));
    let (from, to) = (DiffRef::Revision(q.from), DiffRef::Revision(q.to));
    let diff = compare(t, &ws, from, to, Some(paths)).await?;
    let mut files = Vec::with_capacity(diff.entries.len());
    for e in &diff.entries {
        files.push(file_change(t, &ws, &diff, e, q.size.unwrap_or(0)).await);
    }
    Ok(Json(
        json!({ "from": diff.from, "to": diff.to, "files": files }),
    ))
}

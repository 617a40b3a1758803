//! The revision timeline (`GET /api/ws/{id}/timeline`): pages of receipts, oldest first, each
//! summarised (actor, cause, time, notes, files changed, bytes), filtered by path and actor on
//! the server; and the receipts it has seen, kept so a revision opens without walking history
//! again ([`ReceiptCache`], [`receipt`]).

use super::error::{ApiError, ApiResult};
use super::UiState;
use crate::history::revision::{for_each_page, page};
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use supabash::{ErrorCode, Transport};
use supabash_core::posix::Kind;
use supabash_core::rpc::notes::RevisionNote;
use supabash_core::rpc::Receipt;

/// The most receipts the cache keeps (then it starts again).
const CACHED_RECEIPTS: usize = 20_000;
/// Pages a filtered request reads at most before answering what it found and where to go on.
const FILTER_PAGES: usize = 20;

/// Receipts by workspace and revision id.
#[derive(Default)]
pub struct ReceiptCache(Mutex<HashMap<(String, String), Receipt>>);

impl ReceiptCache {
    fn keep(&self, ws: &str, receipts: Vec<Receipt>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() + receipts.len() > CACHED_RECEIPTS {
            map.clear();
        }
        for r in receipts {
            map.insert((ws.to_owned(), r.revision.clone()), r);
        }
    }

    fn get(&self, ws: &str, rev: &str) -> Option<Receipt> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(ws.to_owned(), rev.to_owned())).cloned()
    }
}

/// The receipt of revision `rev` (an id): from the cache, else found in history.
/// `REVISION_NOT_FOUND` when history has none (never was, or purged).
pub async fn receipt(
    transport: &dyn Transport,
    cache: &ReceiptCache,
    ws: &str,
    rev: &str,
) -> Result<Receipt, ApiError> {
    if let Some(r) = cache.get(ws, rev) {
        return Ok(r);
    }
    let mut found = None;
    for_each_page(transport, ws, |p| {
        if found.is_none() {
            found = p.records.iter().find(|r| r.revision == rev).cloned();
        }
        cache.keep(ws, p.records);
    })
    .await?;
    found.ok_or_else(|| {
        ApiError::not_found(
            ErrorCode::RevisionNotFound,
            "no such revision: it never was, or purge removed it",
        )
    })
}

/// The query of a timeline page.
#[derive(Debug, Deserialize)]
pub struct TimelineQuery {
    cursor: Option<String>,
    limit: Option<usize>,
    /// Only revisions that changed this path or something below it.
    path: Option<String>,
    /// Only revisions by an actor containing this text.
    actor: Option<String>,
}

impl TimelineQuery {
    fn keeps(&self, r: &Receipt) -> bool {
        let actor_ok = self
            .actor
            .as_deref()
            .filter(|a| !a.is_empty())
            .is_none_or(|a| r.actor.contains(a));
        let path_ok = match self.path.as_deref().filter(|p| !p.is_empty()) {
            None => true,
            Some(p) => r.changes.iter().any(|c| {
                [Some(c.path.as_str()), c.from.as_deref()]
                    .into_iter()
                    .flatten()
                    .any(|changed| under(p, changed))
            }),
        };
        actor_ok && path_ok
    }
}

/// Whether `path` is `dir` or lies below it.
fn under(dir: &str, path: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    dir.is_empty()
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The files a revision adds less those it removes (directories not counted): the steps of
/// the growth chart, so the page need not be sent every change line (a first commit of 10,000
/// files has 10,000).
fn files_delta(r: &Receipt) -> i64 {
    r.changes
        .iter()
        .filter(|c| c.kind != Some(Kind::Directory))
        .map(|c| match c.op.as_str() {
            "delete" => -1,
            "upsert" if c.before_hash.is_none() && !c.redacted => 1,
            "move" if c.replaced_hash.is_some() => -1,
            _ => 0,
        })
        .sum()
}

/// One revision as the timeline shows it (its change lines counted, not listed).
pub fn summary(r: &Receipt, notes: &[RevisionNote]) -> Value {
    let written: i64 = r.changes.iter().filter_map(|c| c.after_size).sum();
    let delta: i64 = r
        .changes
        .iter()
        .map(|c| c.after_size.unwrap_or(0) - c.before_size.unwrap_or(0))
        .sum();
    let notes: Vec<&RevisionNote> = notes.iter().filter(|n| n.revision == r.revision).collect();
    json!({
        "revision": r.revision,
        "position": r.position,
        "parent": r.parent_revision,
        "actor": r.actor,
        "cause": r.cause,
        "committedAt": r.committed_at,
        "correlationId": r.correlation_id,
        "forkedFrom": r.forked_from,
        "filesChanged": r.changes.len(),
        "bytesWritten": written,
        "bytesDelta": delta,
        "filesDelta": files_delta(r),
        "notes": notes,
    })
}

/// `GET /api/ws/{id}/timeline?cursor&limit&path&actor`: `{"records", "nextCursor"}`.
pub async fn timeline(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(q): Query<TimelineQuery>,
) -> ApiResult<Value> {
    let limit = q.limit.unwrap_or(50).clamp(1, 500);
    let mut out = Vec::new();
    let mut cursor = q.cursor.clone();
    for _ in 0..FILTER_PAGES {
        let p = page(
            s.transport.as_ref(),
            &ws,
            cursor.clone(),
            Some(limit as i32),
        )
        .await?;
        let mut full = false;
        for r in &p.records {
            cursor = Some(r.revision.clone());
            if q.keeps(r) {
                out.push(summary(r, &p.notes));
                full = out.len() == limit;
                if full {
                    break;
                }
            }
        }
        let last_page = p.next_cursor.is_none();
        // Kept whole (moved, not copied: a first commit's receipt may list 10,000 changes).
        s.receipts.keep(&ws, p.records);
        if full {
            return Ok(Json(json!({ "records": out, "nextCursor": cursor })));
        }
        if last_page {
            return Ok(Json(json!({ "records": out, "nextCursor": null })));
        }
    }
    Ok(Json(json!({ "records": out, "nextCursor": cursor })))
}

#[cfg(test)]
mod tests {
    use super::{files_delta, under, Receipt};
    use serde_json::json;

    #[test]
    fn the_growth_chart_counts_files_added_less_files_removed() {
        let line = |op: &str, before: Option<&str>, extra: serde_json::Value| {
            let mut l = json!({ "op": op, "path": "/x", "beforeHash": before });
            l.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            l
        };
        let changes = [
            line("upsert", None, json!({})),       // a new file: +1
            line("upsert", None, json!({})),       // another: +1
            line("upsert", Some("ab"), json!({})), // an edit: 0
            line("delete", Some("ab"), json!({})), // gone: -1
            line("upsert", None, json!({ "kind": "directory" })), // a directory: 0
            line("move", Some("ab"), json!({ "replacedHash": "cd" })), // onto a file: -1
            line("upsert", None, json!({ "redacted": true })), // redacted: not counted
        ];
        let r: Receipt = serde_json::from_value(json!({
            "workspaceId": "w", "revision": "r", "position": 1, "transactionId": "t",
            "actor": "a", "metadata": {}, "committedAt": "now", "changes": changes,
        }))
        .unwrap();
        assert_eq!(files_delta(&r), 0);
        let only_new: Receipt = serde_json::from_value(json!({
            "workspaceId": "w", "revision": "r", "position": 1, "transactionId": "t",
            "actor": "a", "metadata": {}, "committedAt": "now", "changes": [changes[0], changes[1]],
        }))
        .unwrap();
        assert_eq!(files_delta(&only_new), 2);
    }

    #[test]
    fn a_path_filter_keeps_the_path_and_what_lies_below() {
        assert!(under("/src", "/src/a.rs"));
        assert!(under("/src/", "/src"));
        assert!(!under("/src", "/srcs/a.rs"));
        assert!(under("/", "/x"));
    }
}

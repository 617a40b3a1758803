//! The JSON API the page reads, all `GET` over the client's RPCs as the connection's identity:
//! the workspaces (`/api/workspaces`), one workspace (`/api/ws/{id}`) and its audit trail
//! (`/audit`); the timeline ([`super::timeline`]), a revision ([`super::diffs`]), files and
//! search ([`super::tree`]), and the live feed ([`super::live`]).

use super::error::{ApiError, ApiResult};
use super::UiState;
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use supabash::transport::call;
use supabash::{ErrorCode, Transport, Workspace};
use supabash_core::rpc::audit::{Audit, AuditPage};
use supabash_core::rpc::listing::ListDirectory;
use supabash_core::rpc::requests::LeaseInfo;
use supabash_core::rpc::WorkspaceInfo;

/// The most workspaces the list shows.
const MAX_WORKSPACES: usize = 1000;
/// Leases are read for at most this many workspaces of the list (one call each).
const LEASES_LISTED: usize = 100;

/// The API's routes.
pub fn routes() -> Router<UiState> {
    Router::new()
        .route("/api/workspaces", get(workspaces))
        .route("/api/ws/{id}", get(workspace))
        .route("/api/ws/{id}/audit", get(audit))
        .route("/api/ws/{id}/timeline", get(super::timeline::timeline))
        .route("/api/ws/{id}/revision", get(super::diffs::revision))
        .route("/api/ws/{id}/compare", get(super::diffs::compare_path))
        .route("/api/ws/{id}/tree", get(super::tree::list))
        .route("/api/ws/{id}/file", get(super::tree::file))
        .route("/api/ws/{id}/raw", get(super::tree::raw))
        .route("/api/ws/{id}/history", get(super::tree::history))
        .route("/api/ws/{id}/search", get(super::tree::search))
        .route("/api/ws/{id}/events", get(super::live::events))
}

/// Every workspace the identity may list (at most [`MAX_WORKSPACES`]).
async fn all_workspaces(t: &dyn Transport) -> Result<Vec<WorkspaceInfo>, ApiError> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = Workspace::list(t, cursor.as_deref(), None).await?;
        out.extend(page.workspaces);
        match page.next_cursor {
            Some(c) if out.len() < MAX_WORKSPACES => cursor = Some(c),
            _ => return Ok(out),
        }
    }
}

/// The live lease of `ws` (holder and times), or null.
async fn lease(t: &dyn Transport, ws: &str) -> Result<Value, ApiError> {
    let request = LeaseInfo {
        workspace_id: ws.to_owned(),
        delegated_grant: None,
    };
    Ok(json!(call(t, &request).await?))
}

/// `GET /api/workspaces`: `{"workspaces": [info + lease]}`, oldest first (the page draws the
/// fork tree from each one's `forkedFrom`).
async fn workspaces(State(s): State<UiState>) -> ApiResult<Value> {
    let t = s.transport.as_ref();
    let list = all_workspaces(t).await?;
    let mut shown = Vec::with_capacity(list.len());
    for (i, w) in list.into_iter().enumerate() {
        let mut v = json!(w);
        if i < LEASES_LISTED {
            v["lease"] = lease(t, &w.workspace_id).await.unwrap_or(Value::Null);
        }
        shown.push(v);
    }
    Ok(Json(json!({ "workspaces": shown })))
}

/// Whether to count the head tree's files and bytes (a scan of the tree index).
#[derive(Debug, Deserialize)]
pub struct Totals {
    totals: Option<String>,
}

/// `GET /api/ws/{id}?totals`: the workspace's entry and lease; with `totals=1` also the files
/// and bytes of its head (the page asks for those after its first render).
async fn workspace(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(q): Query<Totals>,
) -> ApiResult<Value> {
    let t = s.transport.as_ref();
    // Side by side (the transport is a pool of connections): the list decides "not found".
    let (list, lease) = tokio::join!(all_workspaces(t), lease(t, &ws));
    let info = list?
        .into_iter()
        .find(|w| w.workspace_id == ws)
        .ok_or_else(|| {
            ApiError::not_found(
                ErrorCode::NotFound,
                "no such workspace among yours: unknown, deleted, or not shared with you",
            )
        })?;
    let mut v = json!(info);
    v["lease"] = lease?;
    if q.totals.as_deref() == Some("1") {
        let request = ListDirectory {
            workspace_id: ws.clone(),
            path: "/".into(),
            page_size: Some(1),
            totals: Some(true),
            ..Default::default()
        };
        let root = call(t, &request).await?;
        v["treeFiles"] = json!(root.tree_files);
        v["treeBytes"] = json!(root.tree_bytes);
        v["restoreFloor"] = json!(root.restore_floor);
    }
    Ok(Json(v))
}

/// A page cursor.
#[derive(Debug, Deserialize)]
pub struct Cursor {
    cursor: Option<String>,
}

/// `GET /api/ws/{id}/audit?cursor`: a page of audit records, in the order they were written.
async fn audit(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(c): Query<Cursor>,
) -> ApiResult<AuditPage> {
    let request = Audit {
        workspace_id: ws,
        revision: None,
        cursor: c.cursor,
        page_size: Some(100),
        delegated_grant: None,
    };
    Ok(Json(call(s.transport.as_ref(), &request).await?))
}

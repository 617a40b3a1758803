//! Files at a revision: one directory a page at a time (`/api/ws/{id}/tree`, so a large tree
//! opens as fast as its root), one file (`/file`: text capped, images named by their sniffed
//! type, binaries and redacted versions summarised), its bytes (`/raw`: an image type only
//! for PNG, JPEG, GIF and WebP, else a download), a path's versions (`/history`) and search
//! (`/search`, `supabash_grep`).

use super::error::{ApiError, ApiResult};
use super::UiState;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use supabash::documents::StoredFile;
use supabash::transport::call;
use supabash::{ErrorCode, Transport};
use supabash_core::rpc::grep::{Grep, GrepPage};
use supabash_core::rpc::listing::{DirectoryPage, ListDirectory};
use supabash_core::rpc::path_history::{PathHistory, PathHistoryPage};
use supabash_core::rpc::requests as rq;

/// The most bytes of a text file the file view answers.
const MAX_TEXT: usize = 512 << 10;

/// A path, a revision (default: the head) and a page cursor.
#[derive(Debug, Deserialize)]
pub struct At {
    path: Option<String>,
    rev: Option<String>,
    cursor: Option<String>,
}

impl At {
    fn path(&self) -> String {
        self.path.clone().unwrap_or_else(|| "/".into())
    }
    fn rev(&self) -> Option<String> {
        self.rev.clone().filter(|r| !r.is_empty() && r != "head")
    }
}

/// `GET /api/ws/{id}/tree?path&rev&cursor`: one page of a directory's children.
pub async fn list(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(at): Query<At>,
) -> ApiResult<DirectoryPage> {
    let request = ListDirectory {
        workspace_id: ws,
        path: at.path(),
        revision: at.rev(),
        cursor: at.cursor.clone(),
        page_size: Some(1000),
        totals: None,
        delegated_grant: None,
    };
    Ok(Json(call(s.transport.as_ref(), &request).await?))
}

/// The image type of `bytes` among those shown inline, by their signature.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The file at `path` as the store holds it (a tombstone is answered, not refused).
async fn stored(
    t: &dyn Transport,
    ws: &str,
    at: &At,
) -> Result<(supabash_core::rpc::File, Option<String>), ApiError> {
    let request = rq::LoadDocument {
        workspace_id: ws.to_owned(),
        path: at.path(),
        revision: at.rev(),
        delegated_grant: None,
    };
    let doc = call(t, &request).await?;
    Ok((doc.file, doc.revision))
}

/// `GET /api/ws/{id}/file?path&rev`: the file's entry and what to show of it.
pub async fn file(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(at): Query<At>,
) -> ApiResult<Value> {
    let (f, revision) = match stored(s.transport.as_ref(), &ws, &at).await {
        Err(e) if e.code == ErrorCode::Redacted.as_str() => {
            return Ok(Json(json!({ "path": at.path(), "redacted": true })))
        }
        other => other?,
    };
    let mut shown = json!({
        "path": f.path, "revision": revision, "size": f.size, "kind": f.kind,
        "mode": format!("{:o}", f.mode), "mtimeNs": f.mtime_ns, "redacted": f.redacted,
        "contentHash": f.content_hash,
    });
    if f.redacted {
        return Ok(Json(shown));
    }
    let bytes = StoredFile::try_from(f)?.verified(None)?;
    if let Some(mime) = image_type(&bytes) {
        shown["image"] = json!(mime);
    } else if let Ok(text) = std::str::from_utf8(&bytes) {
        let mut cut = text.len().min(MAX_TEXT);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        shown["text"] = json!(&text[..cut]);
        shown["truncated"] = json!(cut < text.len());
    } else {
        shown["binary"] = json!(true);
    }
    Ok(Json(shown))
}

/// `GET /api/ws/{id}/raw?path&rev`: the bytes, as an image only for the safe types.
pub async fn raw(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(at): Query<At>,
) -> Result<Response, ApiError> {
    let (f, _) = stored(s.transport.as_ref(), &ws, &at).await?;
    let bytes = StoredFile::try_from(f)?.verified(None)?;
    Ok(match image_type(&bytes) {
        Some(mime) => ([(header::CONTENT_TYPE, mime)], bytes).into_response(),
        None => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (header::CONTENT_DISPOSITION, "attachment"),
            ],
            bytes,
        )
            .into_response(),
    })
}

/// `GET /api/ws/{id}/history?path&cursor`: a page of the path's versions, newest first.
pub async fn history(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(at): Query<At>,
) -> ApiResult<PathHistoryPage> {
    let request = PathHistory {
        workspace_id: ws,
        path: at.path(),
        cursor: at.cursor.clone(),
        page_size: Some(100),
        follow_moves: Some(true),
        oldest_first: Some(false),
        delegated_grant: None,
    };
    Ok(Json(call(s.transport.as_ref(), &request).await?))
}

/// The query of a search.
#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    q: String,
    rev: Option<String>,
    cursor: Option<String>,
    /// `1`: the pattern is a literal.
    fixed: Option<String>,
    /// `1`: ignore case.
    icase: Option<String>,
}

/// `GET /api/ws/{id}/search?q&rev&cursor&fixed&icase`: a page of matching lines.
pub async fn search(
    State(s): State<UiState>,
    Path(ws): Path<String>,
    Query(q): Query<SearchQuery>,
) -> ApiResult<GrepPage> {
    if q.q.is_empty() {
        return Err(ApiError::bad("give a pattern to search for"));
    }
    let request = Grep {
        workspace_id: ws,
        pattern: q.q,
        revision: q.rev.filter(|r| !r.is_empty() && r != "head"),
        paths: None,
        ignore_case: Some(q.icase.as_deref() == Some("1")),
        fixed_strings: Some(q.fixed.as_deref() == Some("1")),
        max_matches: Some(200),
        context_lines: None,
        cursor: q.cursor,
        delegated_grant: None,
    };
    Ok(Json(call(s.transport.as_ref(), &request).await?))
}

#[cfg(test)]
mod tests {
    use super::image_type;

    #[test]
    fn only_safe_image_types_are_named() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"<svg onload=alert(1)>"), None);
        assert_eq!(image_type(b"<html><script>"), None);
    }
}

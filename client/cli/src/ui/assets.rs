//! The page and its assets, embedded in the binary: plain HTML, CSS and JavaScript modules,
//! no framework, nothing fetched from elsewhere, no build step. The scripts build the page
//! with DOM calls (`textContent`, `createElement`), never from HTML strings.

use super::error::no_route;
use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The assets by name, with their types.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
    ("app.js", JS, include_str!("assets/app.js")),
    ("early.js", JS, include_str!("assets/early.js")),
    ("dom.js", JS, include_str!("assets/dom.js")),
    ("highlight.js", JS, include_str!("assets/highlight.js")),
    ("diffview.js", JS, include_str!("assets/diffview.js")),
    ("workspaces.js", JS, include_str!("assets/workspaces.js")),
    ("timeline.js", JS, include_str!("assets/timeline.js")),
    ("revision.js", JS, include_str!("assets/revision.js")),
    ("files.js", JS, include_str!("assets/files.js")),
    ("search.js", JS, include_str!("assets/search.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// `GET /`: the page.
pub async fn index() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("assets/index.html"),
    )
        .into_response()
}

/// `GET /assets/{name}`.
pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, mime, body)) => ([(header::CONTENT_TYPE, *mime)], *body).into_response(),
        None => no_route().await.into_response(),
    }
}

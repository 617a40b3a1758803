//! The Storage harness against an **external Storage server** (the real Supabase Storage API,
//! for measurements by hand): when `SUPABASH_STORAGE_URL` is set, [`crate::storage_server::
//! StorageServer::start`] starts this forwarder on a free loopback port instead of the test
//! server. It counts every request by kind and the bytes uploaded with the same meter (and the
//! same optional delay), then forwards it unchanged to the external server and its answer back,
//! so the Storage bench rows and `client/tests/storage_scale.rs` run as they are.
//!
//! The environment:
//!
//! - `SUPABASH_STORAGE_URL`: the server's base URL, e.g. `http://127.0.0.1:5000` (a server
//!   without Kong; hosted: `https://<ref>.supabase.co/storage/v1`);
//! - `SUPABASH_STORAGE_JWT_SECRET`: the HS256 secret it verifies tokens with (its
//!   `AUTH_JWT_SECRET`): user tokens and, unless given, the service key are signed with it;
//! - `SUPABASH_STORAGE_SERVICE_KEY` (optional): the service key to use instead;
//! - `SUPABASH_STORAGE_DSN` (optional): a superuser connection string to the server's
//!   database; `sql/storage.sql` (bucket and policies) is applied there once per process.
//!   Without it, the bucket `workspaces` and its policies must exist already.
//!
//! Injected faults ([`crate::storage_server::Fault`]) and the peak of concurrent mutations are
//! the test server's own: against an external server they do nothing.

use crate::storage_meter::{kind, Meter};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::response::Response;
use axum::Router;
use std::sync::{Arc, OnceLock};

/// An external Storage server, from the environment.
#[derive(Debug, Clone)]
pub struct External {
    pub url: String,
    pub jwt_secret: String,
    pub service_key: Option<String>,
    pub dsn: Option<String>,
}

/// The external server `SUPABASH_STORAGE_URL` names, if any. Panics when the URL is set
/// without `SUPABASH_STORAGE_JWT_SECRET` (no token could be made).
pub fn external() -> Option<External> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let url = var("SUPABASH_STORAGE_URL")?;
    let jwt_secret = var("SUPABASH_STORAGE_JWT_SECRET")
        .expect("SUPABASH_STORAGE_URL needs SUPABASH_STORAGE_JWT_SECRET");
    Some(External {
        url: url.trim_end_matches('/').to_owned(),
        jwt_secret,
        service_key: var("SUPABASH_STORAGE_SERVICE_KEY"),
        dsn: var("SUPABASH_STORAGE_DSN"),
    })
}

struct Proxy {
    target: String,
    client: reqwest::Client,
    meter: Arc<Meter>,
}

/// Applies `sql/storage.sql` to the external server's database (once per process), when
/// `SUPABASH_STORAGE_DSN` names it.
async fn prepare(external: &External) {
    static PREPARED: OnceLock<tokio::sync::Mutex<bool>> = OnceLock::new();
    let Some(dsn) = &external.dsn else {
        return;
    };
    let mut done = PREPARED.get_or_init(Default::default).lock().await;
    if *done {
        return;
    }
    let (client, conn) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
        .await
        .expect("connect to SUPABASH_STORAGE_DSN");
    let task = tokio::spawn(conn);
    client
        .batch_execute(include_str!("../../sql/storage.sql"))
        .await
        .expect("apply sql/storage.sql to the external server's database");
    drop(client);
    let _ = task.await;
    *done = true;
}

/// Starts the forwarder to `external` counting with `meter`: its base URL and its task.
pub async fn start(
    external: &External,
    meter: Arc<Meter>,
) -> (String, tokio::task::JoinHandle<()>) {
    prepare(external).await;
    let proxy = Arc::new(Proxy {
        target: external.url.clone(),
        client: reqwest::Client::new(),
        meter,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(forward).with_state(proxy);
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (url, task)
}

/// Headers that belong to one connection, not to the request.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host" | "connection" | "keep-alive" | "transfer-encoding" | "content-length" | "upgrade"
    )
}

async fn forward(State(proxy): State<Arc<Proxy>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 1024 * 1024 * 1024).await else {
        return status(StatusCode::PAYLOAD_TOO_LARGE);
    };
    let path = parts.uri.path();
    if path != "/status" {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let ranged = parts.headers.contains_key("range");
        let kind = kind(&parts.method, &segments, ranged);
        proxy.meter.record(kind, body.len()).await;
    }
    let query = parts
        .uri
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let mut out = proxy
        .client
        .request(parts.method, format!("{}{path}{query}", proxy.target))
        .body(body);
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            out = out.header(name, value);
        }
    }
    let answer = match out.send().await {
        Ok(a) => a,
        Err(_) => return status(StatusCode::BAD_GATEWAY),
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if !hop_by_hop(name) {
            response = response.header(name, value);
        }
    }
    match answer.bytes().await {
        Ok(bytes) => response.body(Body::from(bytes)).unwrap(),
        Err(_) => status(StatusCode::BAD_GATEWAY),
    }
}

fn status(code: StatusCode) -> Response {
    Response::builder()
        .status(code)
        .body(Body::empty())
        .unwrap()
}

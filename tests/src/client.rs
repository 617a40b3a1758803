//! End-to-end support: one throwaway cluster per test process, `postrust` (a PostgREST-
//! compatible server) in front of it with HS256 JWTs signed here, transports for a user through
//! either path, workspace and receipt helpers, a JSON HTTP test server, and a TCP proxy that
//! can drop one response.
//!
//! Every postrust process has a [`Watchdog`] that kills it when it is stopped or dropped and
//! when the test process ends in any way (the shared one lives in a static and is never
//! dropped); see the crate docs.

use crate::Cluster;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde_json::{json, Value};
use std::net::TcpListener as StdListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use supabash::auth::SupabaseConfig;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, PostgresTransport, PostgrestTransport, Transport, Workspace};
use supabash_core::rpc::Receipt;
use supabash_devcluster::watchdog::Watchdog;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const JWT_SECRET: &str = "supabash-test-secret-with-at-least-32-chars";
const AUTHENTICATOR_PASSWORD: &str = "authpass";

/// The two ways a host reaches the RPCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Postgres,
    Postgrest,
}

pub const BOTH: [Via; 2] = [Via::Postgres, Via::Postgrest];

pub fn cluster() -> &'static Cluster {
    Cluster::shared()
}

/// A postrust process in front of the shared cluster; stopped on drop, and (the shared one
/// too) when the test process ends.
pub struct Postrust {
    pub url: String,
    child: Mutex<Child>,
    watchdog: Watchdog,
}

static POSTRUST: OnceLock<Postrust> = OnceLock::new();
static AUTHENTICATOR: OnceLock<()> = OnceLock::new();

extern "C" fn stop_postrust() {
    if let Some(s) = POSTRUST.get() {
        s.stop();
    }
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn postrust_binary() -> String {
    if let Ok(p) = std::env::var("POSTRUST") {
        return p;
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    format!("{home}/.cargo/bin/postrust")
}

impl Postrust {
    /// Starts postrust with the settings of the PostgREST reference, verifying tokens with
    /// `jwt_secret` (`PGRST_JWT_SECRET`: an HS256 secret or a JSON Web Key Set), and waits
    /// until it listens.
    pub fn start(jwt_secret: &str) -> Postrust {
        let c = cluster();
        AUTHENTICATOR.get_or_init(|| {
            c.psql(
                "app",
                &format!("ALTER ROLE authenticator PASSWORD '{AUTHENTICATOR_PASSWORD}'"),
            );
        });
        let port = free_port();
        let mut child = Command::new(postrust_binary())
            .env_remove("DATABASE_URL")
            .env_remove("PORT")
            .env(
                "PGRST_DB_URI",
                format!(
                    "postgres://authenticator:{AUTHENTICATOR_PASSWORD}@127.0.0.1:{}/app",
                    c.port
                ),
            )
            .env("PGRST_DB_SCHEMAS", "public")
            .env("PGRST_DB_ANON_ROLE", "anon")
            .env("PGRST_JWT_SECRET", jwt_secret)
            .env("PGRST_SERVER_HOST", "127.0.0.1")
            .env("PGRST_SERVER_PORT", port.to_string())
            .env("PGRST_COMPAT_MODE", "true")
            .env("PGRST_DB_PREPARED_STATEMENTS", "false")
            .env("PGRST_DB_CHANNEL_ENABLED", "true")
            .env("PGRST_DB_POOL", "10")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postrust starts (install it: scripts/setup.sh --postrust)");
        let watchdog = Watchdog::kill_process(child.id()).unwrap_or_else(|e| {
            let _ = child.kill();
            let _ = child.wait();
            panic!("postrust's watchdog: {e}")
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "postrust did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Postrust {
            url: format!("http://127.0.0.1:{port}"),
            child: Mutex::new(child),
            watchdog,
        }
    }

    /// The process id of the server.
    pub fn pid(&self) -> u32 {
        match self.child.lock() {
            Ok(c) => c.id(),
            Err(poisoned) => poisoned.into_inner().id(),
        }
    }

    /// Stops the server: the watchdog kills it while it is still an unreaped child (so its
    /// process id cannot have been reused), then it is reaped. Later calls do nothing.
    pub fn stop(&self) {
        self.watchdog.fire();
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Postrust {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The base URL of the shared postrust server, verifying HS256 tokens signed with
/// [`JWT_SECRET`] (it serves RPCs at the root, where Supabase serves them under `/rest/v1`).
pub fn postrust_url() -> &'static str {
    &shared_postrust().url
}

/// The shared postrust server of this test process (see [`postrust_url`]), stopped at exit.
pub fn shared_postrust() -> &'static Postrust {
    POSTRUST.get_or_init(|| {
        let server = Postrust::start(JWT_SECRET);
        // SAFETY: registering a plain extern "C" function.
        #[allow(unsafe_code)]
        unsafe {
            libc::atexit(stop_postrust)
        };
        server
    })
}

/// A new user id.
pub fn new_user() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The claims Supabase Auth puts in a user's access token.
pub fn user_claims(sub: &str) -> Value {
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    json!({ "sub": sub, "role": "authenticated", "aud": "authenticated", "exp": exp })
}

/// An HS256 access token for `claims`.
pub fn sign(claims: &Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(JWT_SECRET.as_bytes()),
    )
    .unwrap()
}

/// A transport for `user` over `via`, with its own connection.
pub async fn transport(via: Via, user: &str) -> Arc<dyn Transport> {
    match via {
        Via::Postgres => Arc::new(
            PostgresTransport::connect(&cluster().dsn("authenticator"), user_claims(user))
                .await
                .unwrap(),
        ),
        Via::Postgrest => http_transport(postrust_url(), user),
    }
}

/// A PostgREST transport at `base_url` for `user`.
pub fn http_transport(base_url: &str, user: &str) -> Arc<dyn Transport> {
    let token = sign(&user_claims(user));
    Arc::new(PostgrestTransport::new(
        base_url,
        "test-publishable-key",
        &token,
    ))
}

/// A new empty workspace of `user` over `via`, with default limits.
pub async fn new_workspace(via: Via, user: &str) -> Workspace {
    Workspace::builder(transport(via, user).await)
        .create()
        .await
        .unwrap()
}

/// A new workspace of `user` over `via` holding `files` (parent directories created),
/// committed as "seed" when there are any.
pub async fn workspace_with(via: Via, user: &str, files: &[(&str, &str)]) -> Workspace {
    let ws = new_workspace(via, user).await;
    for (p, text) in files {
        ws.fs()
            .mkdir(supabash_core::path::parent(p), true)
            .await
            .unwrap();
        ws.fs().write(p, *text).await.unwrap();
    }
    if !files.is_empty() {
        ws.commit(CommitOptions::new("seed")).await.unwrap();
    }
    ws
}

/// `user`'s workspace `id` opened anew over `via`, so its base files load lazily from the
/// database.
pub async fn reopen(via: Via, user: &str, id: &str) -> Workspace {
    Workspace::builder(transport(via, user).await)
        .open(id)
        .await
        .unwrap()
}

/// Asserts that `receipt` follows the revision `parent` and records exactly the lines
/// `expected` as (op, path, from), in any order; `context` names the case in failures.
pub fn assert_receipt(
    receipt: &Receipt,
    parent: &str,
    expected: &[(&str, &str, Option<&str>)],
    context: &str,
) {
    let mut lines: Vec<(&str, &str, Option<&str>)> = receipt
        .changes
        .iter()
        .map(|l| (l.op.as_str(), l.path.as_str(), l.from.as_deref()))
        .collect();
    lines.sort();
    let mut expected = expected.to_vec();
    expected.sort();
    assert_eq!(lines, expected, "{context}");
    assert_eq!(
        receipt.parent_revision.as_deref(),
        Some(parent),
        "{context}"
    );
}

/// Request headers with one `Authorization: Bearer` header for each of `tokens`.
pub fn bearer_headers(tokens: &[&str]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for t in tokens {
        h.append(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
        );
    }
    h
}

/// Opening from requests through `config`: `user`'s `token` creates a workspace that commits
/// and reopens with the same token, and `other_token` (another user's, verified the same way)
/// is refused by the database with AUTHORIZATION. `context` names the case in failures.
pub async fn assert_opens_only_for_its_user(
    config: &SupabaseConfig,
    user: &str,
    token: &str,
    other_token: &str,
    context: &str,
) {
    let (session, ws) = Workspace::builder_from_request(&bearer_headers(&[token]), config)
        .create()
        .await
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    assert_eq!(session.user_id, user, "{context}");
    ws.fs().write("/hello.md", "hi").await.unwrap();
    ws.commit(CommitOptions::new("e2e")).await.unwrap();
    let (_, again) = Workspace::builder_from_request(&bearer_headers(&[token]), config)
        .open(ws.id())
        .await
        .unwrap();
    assert_eq!(again.fs().read_text("/hello.md").await.unwrap(), "hi");
    let e = Workspace::builder_from_request(&bearer_headers(&[other_token]), config)
        .open(ws.id())
        .await
        .err()
        .unwrap();
    assert_eq!(e.code(), ErrorCode::Authorization, "{context} {e}");
}

/// The head of the request `conn` sends (up to the blank line, maybe with some of the body);
/// `None` when the connection ends first.
async fn read_head(conn: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    Some(head)
}

/// A local HTTP test server for a JSON service (each test names the documented contract its
/// `answer` follows): it reads each request's head, answers `answer(head)` as (status, JSON
/// body) and closes the connection. Answers its base URL.
pub async fn json_test_server<F>(answer: F) -> String
where
    F: Fn(&str) -> (&'static str, String) + Send + Sync + 'static,
{
    let answer = Arc::new(answer);
    serve_local(move |mut conn| {
        let answer = answer.clone();
        async move {
            let Some(head) = read_head(&mut conn).await else {
                return;
            };
            let (status, body) = answer(&String::from_utf8_lossy(&head));
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(response.as_bytes()).await;
        }
    })
    .await
}

/// Listens on a local port and runs `handle` on each connection, in a task of its own.
/// Answers the base URL.
async fn serve_local<F, Fut>(handle: F) -> String
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(handle(conn));
        }
    });
    url
}

/// How [`postgrest_stand_in`] frames its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// With `Content-Length`, as PostgREST sends a result it has whole.
    Length,
    /// `Transfer-Encoding: chunked`, no length announced.
    Chunked,
    /// Chunked and never ending: the answer repeated until the client hangs up (a server
    /// that misbehaves; a capped reader must stop on its own).
    Endless,
}

/// A stand-in for PostgREST as its documented contract has it: `POST /rpc/<function>` with the
/// named arguments as a JSON object, answered `200 OK` with the function's JSON result,
/// `Content-Type: application/json`. Every call is answered `answer` (already JSON), framed as
/// `framing` says; the connection closes after each answer. Answers its base URL.
pub async fn postgrest_stand_in(answer: Vec<u8>, framing: Framing) -> String {
    let answer = Arc::new(answer);
    serve_local(move |conn| answer_rpc(conn, answer.clone(), framing)).await
}

/// One connection of [`postgrest_stand_in`].
async fn answer_rpc(mut conn: TcpStream, answer: Arc<Vec<u8>>, framing: Framing) {
    let Some(head) = read_head(&mut conn).await else {
        return;
    };
    if !head.starts_with(b"POST /rpc/") {
        let _ = conn
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            .await;
        return;
    }
    let framing_header = match framing {
        Framing::Length => format!("Content-Length: {}", answer.len()),
        Framing::Chunked | Framing::Endless => "Transfer-Encoding: chunked".into(),
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{framing_header}\r\nConnection: close\r\n\r\n"
    );
    if conn.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    if framing == Framing::Length {
        let _ = conn.write_all(&answer).await;
        return;
    }
    loop {
        for piece in answer.chunks(16 * 1024) {
            let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
            frame.extend_from_slice(piece);
            frame.extend_from_slice(b"\r\n");
            if conn.write_all(&frame).await.is_err() {
                return;
            }
        }
        if framing != Framing::Endless {
            let _ = conn.write_all(b"0\r\n\r\n").await;
            return;
        }
    }
}

/// A TCP proxy to `upstream`; when armed it drops the next response (after the request went
/// through) and closes that connection.
pub struct DroppingProxy {
    pub url: String,
    armed: Arc<AtomicBool>,
}

impl DroppingProxy {
    pub async fn start(upstream: &str) -> DroppingProxy {
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let armed = Arc::new(AtomicBool::new(false));
        let flag = armed.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.unwrap();
                tokio::spawn(relay(client, server, flag.clone()));
            }
        });
        DroppingProxy { url, armed }
    }

    /// Drops the next response that comes back.
    pub fn drop_next_response(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }
}

async fn relay(client: TcpStream, server: TcpStream, armed: Arc<AtomicBool>) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut cr, &mut sw).await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match sr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if armed.swap(false, Ordering::SeqCst) {
                    break;
                }
                if cw.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    up.abort();
}

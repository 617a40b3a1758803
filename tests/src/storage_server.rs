//! The **Storage API test server**: an HTTP server that follows the observed contract of the
//! Supabase Storage API (docs/storage.md, "What the backend relies on": endpoints, body shapes,
//! errors as HTTP 400 with the real status as a string in the body, `x-upsert`, ETags as the
//! quoted md5 of the content, `If-None-Match` → 304, list-v2 cursors), so the Storage backend is
//! tested against the contract without the real server (which cannot be installed here).
//!
//! Object rows live in the real `storage.objects` table of a throwaway cluster, with the
//! policies of `sql/storage.sql`: every request runs in one transaction as the caller's role
//! (`authenticated`, `anon`, or `service_role` for the service key) with `request.jwt.claims`
//! set, so row-level security decides what a caller sees and may change, as in the real
//! server. Object bodies live on disk under a temporary directory, one file per object
//! `version` (a fresh UUID per upload), written before the row that names it commits.
//!
//! `GET` honours one `Range: bytes=...` (206 with `content-range`, as the real server does).
//! Not implemented (the backend does not use them): signed URLs, the v1
//! `list` endpoint, `?download=`, bucket listing and deletion, multipart form uploads.
//!
//! Like the real server (reference: supabase-storage-api.md), it refuses an upload whose key
//! has a segment over 255 bytes with HTTP 500 and an `InternalError` body that does not name
//! the cause (the file backend fails with `ENAMETOOLONG`, seen only in the server log); answers
//! an expired token with 403 `AccessDenied` `"exp" claim timestamp check failed`; and enforces a
//! bucket's `file_size_limit` (413 `EntityTooLarge`) and `allowed_mime_types` (415
//! `InvalidMimeType`; `type/*` entries match any subtype).
//!
//! Paths have no `/storage/v1` prefix (as the real server without Kong). Tests can make the
//! N-th mutating request fail before it is applied (HTTP 503, or 500 as an internal failure),
//! after (HTTP 504: the change happened but the answer is lost), wait until released, or never
//! answer, or answer 429 to everything, see [`Fault`]. [`StorageServer::peak_mutations`] reports
//! how many mutating requests ran at once; [`StorageServer::counts`] the requests by kind and
//! the bytes uploaded, and [`StorageServer::set_delay`] adds a fixed delay to every request
//! (`storage_meter.rs`). With `SUPABASH_STORAGE_URL` set, [`StorageServer::start`] forwards
//! to that external server instead, counting the same way (`storage_proxy.rs`).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use base64::Engine;
use md5::{Digest, Md5};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio_postgres::{Client, NoTls};

pub use crate::storage_meter::Counts;
use crate::storage_meter::Meter;

/// The HS256 secret the test server verifies JWTs with.
pub const STORAGE_JWT_SECRET: &str = "storage-test-server-secret-at-least-32-chars";

/// When an injected failure strikes the N-th mutating request (counting from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer HTTP 503 without applying the request, and to every retry of it (same method
    /// and path) until the next [`StorageServer::inject`].
    Before(usize),
    /// Answer HTTP 500 (the real server's `InternalError` body) without applying the request.
    Internal(usize),
    /// Apply the request, then answer HTTP 504 (the caller cannot know it happened).
    After(usize),
    /// Never answer (the request is not applied): for callers that give up.
    Stall(usize),
    /// Hold the request until [`StorageServer::release`], then apply it.
    Hold(usize),
    /// Delay the `slow`-th request by `ms` milliseconds, then apply it; answer the `fail`-th
    /// (and its retries) with HTTP 503 without applying it (a failure while another request
    /// is in flight).
    SlowWhileFailing { slow: usize, fail: usize, ms: u64 },
    /// Answer every request (reads too) with the real server's rate-limit answer, HTTP 429
    /// `SlowDown`, applying none.
    ThrottleAll,
}

struct Inner {
    dsn: String,
    dir: PathBuf,
    pool: Mutex<Vec<Client>>,
    mutations: AtomicUsize,
    /// Mutating requests running now, and the most seen at once since the last `inject`.
    running: AtomicUsize,
    peak: AtomicUsize,
    fault: Mutex<Option<Fault>>,
    /// The request (method and path) an injected 503 struck: its retries get 503 too, until
    /// the next `inject`.
    unavailable: Mutex<Option<(Method, Vec<String>)>>,
    release: tokio::sync::Notify,
    meter: Arc<Meter>,
}

/// A running Storage API test server on a free loopback port.
pub struct StorageServer {
    /// Base URL, e.g. `http://127.0.0.1:41234` (no trailing slash).
    pub url: String,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
    /// Whether this forwards to an external server (`storage_proxy.rs`).
    external: bool,
}

impl Drop for StorageServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.inner.dir);
    }
}

/// A Storage error: HTTP 400 (or the real status for 5xx) with the status inside the body.
struct ApiError {
    status: u16,
    error: &'static str,
    message: String,
    code: &'static str,
}

type ApiResult<T> = Result<T, ApiError>;

fn api_error(status: u16, error: &'static str, code: &'static str, message: &str) -> ApiError {
    ApiError {
        status,
        error,
        message: message.to_owned(),
        code,
    }
}

/// The real server's answer to a failure it has no error code for (the cause stays in its log).
fn internal() -> ApiError {
    api_error(500, "internal", "InternalError", "Internal Server Error")
}

/// Longest key segment the real server's file backend stores (a file name).
const MAX_SEGMENT_BYTES: usize = 255;

/// An injected 503: the request was not applied.
fn unavailable() -> ApiError {
    api_error(503, "unavailable", "ServiceUnavailable", "injected")
}

fn not_found() -> ApiError {
    api_error(404, "not_found", "NoSuchKey", "Object not found")
}

fn invalid(message: &str) -> ApiError {
    api_error(400, "Error", "InvalidRequest", message)
}

fn db_error(e: tokio_postgres::Error) -> ApiError {
    match e.code().map(|c| c.code()) {
        Some("42501") => api_error(
            403,
            "Unauthorized",
            "AccessDenied",
            "new row violates row-level security policy",
        ),
        Some("23505") => api_error(
            409,
            "Duplicate",
            "KeyAlreadyExists",
            "The resource already exists",
        ),
        _ => api_error(500, "internal", "InternalError", &e.to_string()),
    }
}

impl From<tokio_postgres::Error> for ApiError {
    fn from(e: tokio_postgres::Error) -> Self {
        db_error(e)
    }
}

impl ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "statusCode": self.status.to_string(),
            "error": self.error,
            "message": self.message,
            "code": self.code,
        });
        // A rate limit comes back as a real 429 (from the gateway or the server's limiter).
        let http = if self.status >= 500 || self.status == 429 {
            self.status
        } else {
            400
        };
        json_response(StatusCode::from_u16(http).unwrap(), &body)
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Who the bearer token says the caller is.
struct Caller {
    role: &'static str,
    claims: Value,
    sub: Option<String>,
}

fn caller(headers: &HeaderMap) -> ApiResult<Caller> {
    let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return Err(invalid(
            "headers must have required property 'authorization'",
        ));
    };
    let token = auth
        .strip_prefix("Bearer ")
        .or_else(|| auth.strip_prefix("bearer "))
        .unwrap_or(auth);
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    // The real server allows no clock tolerance.
    validation.leeway = 0;
    let claims = jsonwebtoken::decode::<Value>(
        token,
        &jsonwebtoken::DecodingKey::from_secret(STORAGE_JWT_SECRET.as_bytes()),
        &validation,
    )
    .map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        // The real server's messages (from its JWT library).
        let message = match e.kind() {
            ErrorKind::ExpiredSignature => "\"exp\" claim timestamp check failed",
            ErrorKind::ImmatureSignature => "\"nbf\" claim timestamp check failed",
            ErrorKind::InvalidSignature => "signature verification failed",
            _ => "JWS Protected Header is invalid",
        };
        api_error(403, "Unauthorized", "AccessDenied", message)
    })?
    .claims;
    let role = match claims["role"].as_str() {
        Some("service_role") => "service_role",
        Some("authenticated") => "authenticated",
        _ => "anon",
    };
    Ok(Caller {
        role,
        sub: claims["sub"].as_str().map(str::to_owned),
        claims,
    })
}

/// Supabase's object-key rule: `\w`, `/`, and `!-.*'() &$@=;:+,?` only (so no non-ASCII).
fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_/!-.*'() &$@=;:+,?".contains(c))
}

fn percent_decode(s: &str) -> ApiResult<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| invalid("path is not UTF-8"))
}

fn etag_of(bytes: &[u8]) -> String {
    format!("\"{}\"", hex::encode(Md5::digest(bytes)))
}

fn now_http() -> String {
    httpdate(std::time::SystemTime::now())
}

/// An RFC 7231 date (IMF-fixdate).
fn httpdate(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
    let (y, mo, d) = supabash::storage::model::civil_date(days);
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(mo - 1) as usize];
    format!("{weekday}, {d:02} {month} {y} {h:02}:{m:02}:{s:02} GMT")
}

/// One parsed request.
struct Call {
    method: Method,
    segments: Vec<String>,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl StorageServer {
    /// Starts a server whose rows live in database `app` of the cluster at `dsn_superuser`
    /// (a libpq connection string for a superuser; `sql/storage.sql` must be applied).
    pub async fn start(dsn_superuser: &str) -> StorageServer {
        let dir = std::env::temp_dir().join(format!(
            "supabash-storage-bodies-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let inner = Arc::new(Inner {
            dsn: dsn_superuser.to_owned(),
            dir,
            pool: Mutex::default(),
            mutations: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            fault: Mutex::default(),
            unavailable: Mutex::default(),
            release: tokio::sync::Notify::new(),
            meter: Arc::default(),
        });
        if let Some(external) = crate::storage_proxy::external() {
            let (url, task) = crate::storage_proxy::start(&external, inner.meter.clone()).await;
            return StorageServer {
                url,
                inner,
                task,
                external: true,
            };
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        StorageServer {
            url,
            inner,
            task,
            external: false,
        }
    }

    /// Whether this forwards to an external Storage server (`SUPABASH_STORAGE_URL`, see
    /// `storage_proxy.rs`) rather than being the test server.
    pub fn is_external(&self) -> bool {
        self.external
    }

    /// Arms one injected failure (replacing any armed one) and resets the mutation counter.
    pub fn inject(&self, fault: Option<Fault>) {
        self.inner.mutations.store(0, Ordering::SeqCst);
        self.inner.peak.store(0, Ordering::SeqCst);
        *self.inner.unavailable.lock().unwrap() = None;
        *self.inner.fault.lock().unwrap() = fault;
    }

    /// Lets a request held by [`Fault::Hold`] go on.
    pub fn release(&self) {
        self.inner.release.notify_one();
    }

    /// Mutating requests (uploads, deletes, copies, moves) seen since the last [`Self::inject`].
    pub fn mutations(&self) -> usize {
        self.inner.mutations.load(Ordering::SeqCst)
    }

    /// The most mutating requests that ran at once since the last [`Self::inject`].
    pub fn peak_mutations(&self) -> usize {
        self.inner.peak.load(Ordering::SeqCst)
    }

    /// Requests by kind and bytes uploaded since the last [`Self::reset_counts`] (or start).
    pub fn counts(&self) -> Counts {
        self.inner.meter.counts()
    }

    /// Starts counting requests afresh.
    pub fn reset_counts(&self) {
        self.inner.meter.reset();
    }

    /// Adds `delay` to every request from now on (default `$SUPABASH_STORAGE_DELAY_MS`).
    pub fn set_delay(&self, delay: std::time::Duration) {
        self.inner.meter.set_delay(delay);
    }

    /// The delay added to every request.
    pub fn delay(&self) -> std::time::Duration {
        self.inner.meter.delay()
    }

    /// A signed access token for a user (`role: authenticated`).
    pub fn user_token(sub: &str) -> String {
        Self::token(json!({ "role": "authenticated", "sub": sub, "aud": "authenticated" }))
    }

    /// The service key (`role: service_role`; an external server's
    /// `SUPABASH_STORAGE_SERVICE_KEY` when set).
    pub fn service_key() -> String {
        match crate::storage_proxy::external().and_then(|e| e.service_key) {
            Some(key) => key,
            None => Self::token(json!({ "role": "service_role" })),
        }
    }

    /// A token with any claims (`exp` one hour ahead unless given), signed with
    /// [`STORAGE_JWT_SECRET`] (an external server's `SUPABASH_STORAGE_JWT_SECRET` when set).
    pub fn token(mut claims: Value) -> String {
        if claims.get("exp").is_none() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            claims["exp"] = json!(now + 3600);
        }
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(jwt_secret().as_bytes()),
        )
        .unwrap()
    }
}

/// The secret tokens are signed with.
fn jwt_secret() -> String {
    crate::storage_proxy::external().map_or_else(|| STORAGE_JWT_SECRET.to_owned(), |e| e.jwt_secret)
}

async fn handle(State(inner): State<Arc<Inner>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, 256 * 1024 * 1024).await {
        Ok(b) => b.to_vec(),
        Err(_) => return invalid("body too large").into_response(),
    };
    let segments: Vec<String> = parts
        .uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let call = Call {
        method: parts.method,
        segments,
        headers: parts.headers,
        body,
    };
    if call.segments.first().map(String::as_str) != Some("status") {
        let segs: Vec<&str> = call.segments.iter().map(String::as_str).collect();
        let ranged = call.headers.contains_key("range");
        let kind = crate::storage_meter::kind(&call.method, &segs, ranged);
        inner.meter.record(kind, call.body.len()).await;
    }
    match route(&inner, call).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

fn is_mutation(call: &Call) -> bool {
    let s: Vec<&str> = call.segments.iter().map(String::as_str).collect();
    match (&call.method, s.as_slice()) {
        (&Method::POST, ["object", "list" | "list-v2" | "info" | "sign", ..]) => false,
        (&Method::POST | &Method::PUT | &Method::DELETE, ["object", ..]) => true,
        _ => false,
    }
}

async fn route(inner: &Arc<Inner>, call: Call) -> ApiResult<Response> {
    if call.segments.first().map(String::as_str) == Some("status") {
        return Ok(Response::new(Body::empty()));
    }
    if *inner.fault.lock().unwrap() == Some(Fault::ThrottleAll) {
        return Err(api_error(
            429,
            "too_many_requests",
            "SlowDown",
            "Too Many Requests",
        ));
    }
    let mutation = is_mutation(&call);
    let _running = mutation.then(|| Running::start(inner));
    let mut after_fault = false;
    if mutation {
        let n = inner.mutations.fetch_add(1, Ordering::SeqCst);
        let fault = *inner.fault.lock().unwrap();
        let this = (call.method.clone(), call.segments.clone());
        if inner.unavailable.lock().unwrap().as_ref() == Some(&this) {
            return Err(unavailable());
        }
        match fault {
            Some(Fault::Before(k)) if k == n => {
                *inner.unavailable.lock().unwrap() = Some(this);
                return Err(unavailable());
            }
            Some(Fault::Internal(k)) if k == n => return Err(internal()),
            Some(Fault::After(k)) if k == n => after_fault = true,
            Some(Fault::Stall(k)) if k == n => std::future::pending::<()>().await,
            Some(Fault::Hold(k)) if k == n => inner.release.notified().await,
            Some(Fault::SlowWhileFailing { slow, ms, .. }) if slow == n => {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await
            }
            Some(Fault::SlowWhileFailing { fail, .. }) if fail == n => {
                *inner.unavailable.lock().unwrap() = Some(this);
                return Err(unavailable());
            }
            _ => {}
        }
    }
    let who = caller(&call.headers)?;
    let mut client = inner.client().await?;
    let result = dispatch(inner, &mut client, &who, call).await;
    inner.pool.lock().unwrap().push(client);
    let response = result?;
    if after_fault {
        return Err(api_error(504, "timeout", "GatewayTimeout", "injected"));
    }
    Ok(response)
}

/// Counts one mutating request as running until dropped, keeping the peak.
struct Running<'a>(&'a Inner);

impl<'a> Running<'a> {
    fn start(inner: &'a Inner) -> Self {
        let now = inner.running.fetch_add(1, Ordering::SeqCst) + 1;
        inner.peak.fetch_max(now, Ordering::SeqCst);
        Running(inner)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Inner {
    async fn client(&self) -> ApiResult<Client> {
        if let Some(c) = self.pool.lock().unwrap().pop() {
            if !c.is_closed() {
                return Ok(c);
            }
        }
        let (client, conn) = tokio_postgres::connect(&self.dsn, NoTls).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }

    fn body_path(&self, version: &str) -> PathBuf {
        self.dir.join(version)
    }
}

/// Opens a transaction as the caller: claims set, role switched. Bucket existence is checked
/// first with the server's own rights (as the real server looks buckets up itself).
async fn as_caller<'a>(
    client: &'a mut Client,
    who: &Caller,
    bucket: Option<&str>,
) -> ApiResult<tokio_postgres::Transaction<'a>> {
    let tx = client.transaction().await?;
    if let Some(bucket) = bucket {
        if tx
            .query_opt("SELECT 1 FROM storage.buckets WHERE id = $1", &[&bucket])
            .await?
            .is_none()
        {
            return Err(api_error(
                404,
                "Bucket not found",
                "NoSuchBucket",
                "Bucket not found",
            ));
        }
    }
    tx.execute(
        "SELECT set_config('request.jwt.claims', $1, true)",
        &[&who.claims.to_string()],
    )
    .await?;
    tx.batch_execute(&format!("SET LOCAL ROLE {}", who.role))
        .await?;
    Ok(tx)
}

/// `bucket` and the decoded key from path segments.
fn bucket_key(segments: &[String]) -> ApiResult<(String, String)> {
    let (bucket, rest) = segments
        .split_first()
        .ok_or_else(|| invalid("missing bucket"))?;
    let key = rest
        .iter()
        .map(|s| percent_decode(s))
        .collect::<ApiResult<Vec<_>>>()?
        .join("/");
    Ok((percent_decode(bucket)?, key))
}

async fn dispatch(
    inner: &Inner,
    client: &mut Client,
    who: &Caller,
    call: Call,
) -> ApiResult<Response> {
    let segs: Vec<&str> = call.segments.iter().map(String::as_str).collect();
    match (&call.method, segs.as_slice()) {
        (&Method::POST, ["bucket"]) => create_bucket(client, who, &call.body).await,
        (&Method::POST, ["object", "list-v2", bucket]) => {
            list_v2(client, who, bucket, &call.body).await
        }
        (&Method::POST, ["object", "copy"]) => copy_or_move(inner, client, who, &call, false).await,
        (&Method::POST, ["object", "move"]) => copy_or_move(inner, client, who, &call, true).await,
        (&Method::GET, ["object", "info", "authenticated", rest @ ..])
        | (&Method::GET, ["object", "info", rest @ ..]) => {
            let (bucket, key) = bucket_key(&owned(rest))?;
            info(client, who, &bucket, &key).await
        }
        (&Method::GET | &Method::HEAD, ["object", "authenticated", rest @ ..])
        | (&Method::GET | &Method::HEAD, ["object", rest @ ..])
            if rest.len() >= 2 =>
        {
            let (bucket, key) = bucket_key(&owned(rest))?;
            download(inner, client, who, &bucket, &key, &call).await
        }
        (&Method::POST | &Method::PUT, ["object", rest @ ..]) if rest.len() >= 2 => {
            let (bucket, key) = bucket_key(&owned(rest))?;
            upload(inner, client, who, &bucket, &key, &call).await
        }
        (&Method::DELETE, ["object", bucket]) => {
            delete_many(client, who, &percent_decode(bucket)?, &call.body).await
        }
        (&Method::DELETE, ["object", rest @ ..]) if rest.len() >= 2 => {
            let (bucket, key) = bucket_key(&owned(rest))?;
            delete_one(client, who, &bucket, &key).await
        }
        _ => Err(api_error(404, "Not Found", "NotFound", "Route not found")),
    }
}

fn owned(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| (*x).to_owned()).collect()
}

fn parse_json(body: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(body).map_err(|_| invalid("body must be JSON"))
}

async fn create_bucket(client: &mut Client, who: &Caller, body: &[u8]) -> ApiResult<Response> {
    let b = parse_json(body)?;
    let name = b["name"]
        .as_str()
        .ok_or_else(|| invalid("body must have required property 'name'"))?;
    let public = b["public"].as_bool().unwrap_or(false);
    let tx = as_caller(client, who, None).await?;
    tx.execute(
        "INSERT INTO storage.buckets (id, name, public) VALUES ($1, $1, $2)",
        &[&name, &public],
    )
    .await
    .map_err(|e| match e.code().map(|c| c.code()) {
        Some("23505") => api_error(
            409,
            "Duplicate",
            "BucketAlreadyExists",
            "The resource already exists",
        ),
        _ => db_error(e),
    })?;
    tx.commit().await?;
    Ok(json_response(StatusCode::OK, &json!({ "name": name })))
}

/// Whether `allowed` (a bucket's `allowed_mime_types` entry) admits `mimetype`, as the real
/// server matches: the same type and subtype, or the same type and a `*` subtype.
fn mime_allowed(allowed: &str, mimetype: &str) -> bool {
    let essence = mimetype.split(';').next().unwrap_or_default().trim();
    match (allowed.split_once('/'), essence.split_once('/')) {
        (Some((at, asub)), Some((t, sub))) => at == t && (asub == "*" || asub == sub),
        _ => false,
    }
}

/// A bucket's restrictions on uploads (looked up with the server's own rights, as the real
/// server does): `file_size_limit` (413) and `allowed_mime_types` (415).
async fn check_bucket_rules(
    client: &Client,
    bucket: &str,
    mimetype: &str,
    size: usize,
) -> ApiResult<()> {
    let Some(row) = client
        .query_opt(
            "SELECT file_size_limit, allowed_mime_types FROM storage.buckets WHERE id = $1",
            &[&bucket],
        )
        .await?
    else {
        return Ok(());
    };
    let (limit, allowed): (Option<i64>, Option<Vec<String>>) = (row.get(0), row.get(1));
    if limit.is_some_and(|l| size as i64 > l) {
        return Err(api_error(
            413,
            "Payload too large",
            "EntityTooLarge",
            "The object exceeded the maximum allowed size",
        ));
    }
    if let Some(allowed) = allowed.filter(|a| !a.is_empty()) {
        if !allowed.iter().any(|a| mime_allowed(a, mimetype)) {
            return Err(api_error(
                415,
                "invalid_mime_type",
                "InvalidMimeType",
                &format!("mime type {mimetype} is not supported"),
            ));
        }
    }
    Ok(())
}

fn system_metadata(etag: &str, size: usize, mimetype: &str, cache_control: &str) -> Value {
    json!({
        "eTag": etag,
        "size": size,
        "mimetype": mimetype,
        "cacheControl": cache_control,
        "lastModified": now_http(),
        "contentLength": size,
        "httpStatusCode": 200,
    })
}

async fn upload(
    inner: &Inner,
    client: &mut Client,
    who: &Caller,
    bucket: &str,
    key: &str,
    call: &Call,
) -> ApiResult<Response> {
    if !valid_key(key) {
        return Err(api_error(
            400,
            "InvalidKey",
            "InvalidKey",
            &format!("Invalid key: {key}"),
        ));
    }
    let header = |name: &str| call.headers.get(name).and_then(|v| v.to_str().ok());
    let upsert = call.method == Method::PUT || header("x-upsert") == Some("true");
    let mimetype = header("content-type").unwrap_or("application/octet-stream");
    check_bucket_rules(client, bucket, mimetype, call.body.len()).await?;
    if key.split('/').any(|s| s.len() > MAX_SEGMENT_BYTES) {
        // The file backend cannot create the file (ENAMETOOLONG); the body names no cause.
        return Err(internal());
    }
    let cache_control = match header("cache-control") {
        Some(c) if c.chars().all(|c| c.is_ascii_digit()) => format!("max-age={c}"),
        Some(c) => c.to_owned(),
        None => "no-cache".to_owned(),
    };
    let user_metadata = match header("x-metadata") {
        Some(m) => {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(m)
                .map_err(|_| invalid("x-metadata is not base64"))?;
            serde_json::from_slice::<Value>(&raw)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| invalid("x-metadata is not a JSON object"))?
        }
        None => json!({}),
    };
    let version = uuid::Uuid::new_v4().to_string();
    std::fs::write(inner.body_path(&version), &call.body)
        .map_err(|e| api_error(500, "internal", "InternalError", &e.to_string()))?;
    let metadata = system_metadata(
        &etag_of(&call.body),
        call.body.len(),
        mimetype,
        &cache_control,
    );
    let owner = who.sub.clone();
    let tx = as_caller(client, who, Some(bucket)).await?;
    let sql = if upsert {
        "INSERT INTO storage.objects (bucket_id, name, owner, owner_id, version, metadata, user_metadata)
         VALUES ($1, $2, $3::text::uuid, $3, $4, $5, $6)
         ON CONFLICT (bucket_id, name) DO UPDATE SET version = excluded.version,
           metadata = excluded.metadata, user_metadata = excluded.user_metadata,
           owner = excluded.owner, owner_id = excluded.owner_id, updated_at = now()
         RETURNING id"
    } else {
        "INSERT INTO storage.objects (bucket_id, name, owner, owner_id, version, metadata, user_metadata)
         VALUES ($1, $2, $3::text::uuid, $3, $4, $5, $6) RETURNING id"
    };
    let row = tx
        .query_one(
            sql,
            &[&bucket, &key, &owner, &version, &metadata, &user_metadata],
        )
        .await?;
    tx.commit().await?;
    let id: uuid::Uuid = row.get(0);
    Ok(json_response(
        StatusCode::OK,
        &json!({ "Key": format!("{bucket}/{key}"), "Id": id.to_string() }),
    ))
}

const OBJECT_COLUMNS: &str = "id, name, bucket_id, version, metadata, user_metadata,
    to_json(created_at)#>>'{}', to_json(updated_at)#>>'{}', to_json(last_accessed_at)#>>'{}'";

struct Row {
    id: uuid::Uuid,
    name: String,
    bucket_id: String,
    version: String,
    metadata: Value,
    user_metadata: Option<Value>,
    created_at: String,
    updated_at: String,
    last_accessed_at: String,
}

fn read_row(r: &tokio_postgres::Row) -> Row {
    Row {
        id: r.get(0),
        name: r.get(1),
        bucket_id: r.get(2),
        version: r.get(3),
        metadata: r.get(4),
        user_metadata: r.get(5),
        created_at: r.get(6),
        updated_at: r.get(7),
        last_accessed_at: r.get(8),
    }
}

impl Row {
    fn etag(&self) -> String {
        self.metadata["eTag"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn listed(&self, key: Option<&str>) -> Value {
        let mut v = json!({
            "id": self.id.to_string(),
            "name": self.name,
            "metadata": self.metadata,
            "updated_at": self.updated_at,
            "created_at": self.created_at,
            "last_accessed_at": self.last_accessed_at,
        });
        if let Some(k) = key {
            v["key"] = json!(k);
        }
        v
    }

    fn deleted(&self) -> Value {
        json!({
            "name": self.name,
            "bucket_id": self.bucket_id,
            "version": self.version,
            "id": self.id.to_string(),
            "updated_at": self.updated_at,
            "created_at": self.created_at,
            "last_accessed_at": self.last_accessed_at,
            "metadata": self.metadata,
            "user_metadata": self.user_metadata.clone().unwrap_or(json!({})),
        })
    }
}

async fn find(
    client: &mut Client,
    who: &Caller,
    bucket: &str,
    key: &str,
) -> ApiResult<Option<Row>> {
    let tx = as_caller(client, who, Some(bucket)).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {OBJECT_COLUMNS} FROM storage.objects WHERE bucket_id = $1 AND name = $2"
            ),
            &[&bucket, &key],
        )
        .await?;
    tx.commit().await?;
    Ok(row.as_ref().map(read_row))
}

async fn info(client: &mut Client, who: &Caller, bucket: &str, key: &str) -> ApiResult<Response> {
    let row = find(client, who, bucket, key)
        .await?
        .ok_or_else(not_found)?;
    let m = &row.metadata;
    let body = json!({
        "id": row.id.to_string(),
        "name": row.name,
        "version": row.version,
        "bucket_id": row.bucket_id,
        "size": m["size"],
        "content_type": m["mimetype"],
        "cache_control": m["cacheControl"],
        "etag": m["eTag"],
        "metadata": row.user_metadata.clone().unwrap_or(json!({})),
        "last_modified": row.updated_at,
        "created_at": row.created_at,
    });
    let mut r = json_response(StatusCode::OK, &body);
    r.headers_mut()
        .insert("etag", HeaderValue::from_str(&row.etag()).unwrap());
    Ok(r)
}

async fn download(
    inner: &Inner,
    client: &mut Client,
    who: &Caller,
    bucket: &str,
    key: &str,
    call: &Call,
) -> ApiResult<Response> {
    if bucket == "public" {
        return Err(api_error(
            404,
            "Bucket not found",
            "NoSuchBucket",
            "Bucket not found",
        ));
    }
    let row = find(client, who, bucket, key)
        .await?
        .ok_or_else(not_found)?;
    let etag = row.etag();
    let m = &row.metadata;
    let mut builder = Response::builder()
        .header("etag", &etag)
        .header("accept-ranges", "bytes")
        .header("cache-control", m["cacheControl"].as_str().unwrap_or(""))
        .header(
            "content-type",
            m["mimetype"].as_str().unwrap_or("application/octet-stream"),
        )
        .header(
            "last-modified",
            m["lastModified"].as_str().unwrap_or_default(),
        )
        .header("x-robots-tag", "none");
    let unchanged = call
        .headers
        .get("if-none-match")
        .and_then(|v| v.to_str().ok())
        == Some(etag.as_str());
    if unchanged {
        return Ok(builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .unwrap());
    }
    let mut bytes = std::fs::read(inner.body_path(&row.version))
        .map_err(|e| api_error(500, "internal", "InternalError", &e.to_string()))?;
    let mut status = StatusCode::OK;
    if let Some(range) = call.headers.get("range").and_then(|v| v.to_str().ok()) {
        let (start, end) = byte_range(range, bytes.len()).ok_or_else(|| {
            api_error(
                416,
                "InvalidRange",
                "InvalidRange",
                "The requested range is not satisfiable",
            )
        })?;
        builder = builder.header(
            "content-range",
            format!("bytes {start}-{end}/{}", bytes.len()),
        );
        bytes = bytes[start..=end].to_vec();
        status = StatusCode::PARTIAL_CONTENT;
    }
    builder = builder.header("content-length", bytes.len());
    let body = if call.method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(bytes)
    };
    Ok(builder.status(status).body(body).unwrap())
}

/// The first and last byte of a `Range: bytes=a-b` (or `a-`, or `-n`: the last n) header over
/// `len` bytes; `None` when not satisfiable or not one byte range.
fn byte_range(header: &str, len: usize) -> Option<(usize, usize)> {
    let (a, b) = header.strip_prefix("bytes=")?.split_once('-')?;
    let (start, end) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: usize = n.parse().ok()?;
            (len.checked_sub(n.min(len))?, len.checked_sub(1)?)
        }
        (a, "") => (a.parse().ok()?, len.checked_sub(1)?),
        (a, b) => (
            a.parse().ok()?,
            b.parse::<usize>().ok()?.min(len.checked_sub(1)?),
        ),
    };
    (start <= end && end < len).then_some((start, end))
}

async fn delete_one(
    client: &mut Client,
    who: &Caller,
    bucket: &str,
    key: &str,
) -> ApiResult<Response> {
    let tx = as_caller(client, who, Some(bucket)).await?;
    let deleted = tx
        .execute(
            "DELETE FROM storage.objects WHERE bucket_id = $1 AND name = $2",
            &[&bucket, &key],
        )
        .await?;
    tx.commit().await?;
    if deleted == 0 {
        // Tell a hidden object (policy) from a missing one, as the real server does.
        let exists = client
            .query_opt(
                "SELECT 1 FROM storage.objects WHERE bucket_id = $1 AND name = $2",
                &[&bucket, &key],
            )
            .await?
            .is_some();
        return Err(if exists {
            api_error(403, "Unauthorized", "AccessDenied", "Access denied")
        } else {
            not_found()
        });
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({ "message": "Successfully deleted" }),
    ))
}

async fn delete_many(
    client: &mut Client,
    who: &Caller,
    bucket: &str,
    body: &[u8],
) -> ApiResult<Response> {
    let b = parse_json(body)?;
    let prefixes: Vec<String> = b["prefixes"]
        .as_array()
        .ok_or_else(|| invalid("body must have required property 'prefixes'"))?
        .iter()
        .map(|p| p.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(|| invalid("body/prefixes must be strings"))?;
    if prefixes.is_empty() {
        return Err(invalid("body/prefixes must NOT have fewer than 1 items"));
    }
    let tx = as_caller(client, who, Some(bucket)).await?;
    let rows = tx
        .query(
            &format!(
                "DELETE FROM storage.objects WHERE bucket_id = $1 AND name = ANY($2)
                 RETURNING {OBJECT_COLUMNS}"
            ),
            &[&bucket, &prefixes],
        )
        .await?;
    tx.commit().await?;
    let out: Vec<Value> = rows.iter().map(|r| read_row(r).deleted()).collect();
    Ok(json_response(StatusCode::OK, &Value::Array(out)))
}

/// list-v2: objects (and, with `with_delimiter`, folders) under `prefix` in name order, pages
/// of `limit` (default 1000), `cursor` = base64 of the last name of the previous page.
async fn list_v2(
    client: &mut Client,
    who: &Caller,
    bucket: &str,
    body: &[u8],
) -> ApiResult<Response> {
    let b = parse_json(body)?;
    let prefix = b["prefix"].as_str().unwrap_or("").to_owned();
    let delimiter = b["with_delimiter"].as_bool().unwrap_or(false);
    let limit = b["limit"].as_u64().unwrap_or(1000).clamp(1, 1000) as usize;
    let after = match b["cursor"].as_str() {
        Some(c) => String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(c)
                .map_err(|_| invalid("invalid cursor"))?,
        )
        .map_err(|_| invalid("invalid cursor"))?,
        None => String::new(),
    };
    let tx = match as_caller(client, who, Some(bucket)).await {
        Ok(tx) => tx,
        Err(e) if e.code == "NoSuchBucket" => {
            return Ok(json_response(
                StatusCode::OK,
                &json!({ "hasNext": false, "folders": [], "objects": [] }),
            ))
        }
        Err(e) => return Err(e),
    };
    let rows = tx
        .query(
            &format!(
                "SELECT {OBJECT_COLUMNS} FROM storage.objects
                  WHERE bucket_id = $1 AND starts_with(name, $2) AND name > $3
                  ORDER BY name COLLATE \"C\""
            ),
            &[&bucket, &prefix, &after],
        )
        .await?;
    tx.commit().await?;
    // Entries in name order: (sort name, folder?, row).
    let mut entries: Vec<(String, Option<Row>)> = Vec::new();
    for r in rows.iter().map(read_row) {
        let rest = &r.name[prefix.len()..];
        match rest.find('/') {
            Some(i) if delimiter => {
                let folder = format!("{prefix}{}/", &rest[..i]);
                if entries.last().map(|(n, _)| n.as_str()) != Some(folder.as_str()) {
                    entries.push((folder, None));
                }
            }
            _ => entries.push((r.name.clone(), Some(r))),
        }
    }
    let has_next = entries.len() > limit;
    entries.truncate(limit);
    let (mut folders, mut objects) = (Vec::new(), Vec::new());
    for (name, row) in &entries {
        let key = name[prefix.len()..].trim_end_matches('/');
        match row {
            None => folders.push(json!({
                "key": key, "name": name, "id": null, "metadata": null,
                "updated_at": null, "created_at": null, "last_accessed_at": null,
            })),
            Some(r) => objects.push(r.listed(delimiter.then_some(key))),
        }
    }
    let mut out = json!({ "hasNext": has_next, "folders": folders, "objects": objects });
    if has_next {
        // After a folder, the next page starts past everything inside it.
        let last = &entries.last().unwrap().0;
        let resume = if last.ends_with('/') {
            format!("{last}\u{10ffff}")
        } else {
            last.clone()
        };
        out["nextCursor"] = json!(base64::engine::general_purpose::STANDARD.encode(&resume));
        out["nextCursorKey"] = json!(last);
    }
    Ok(json_response(StatusCode::OK, &out))
}

async fn copy_or_move(
    inner: &Inner,
    client: &mut Client,
    who: &Caller,
    call: &Call,
    is_move: bool,
) -> ApiResult<Response> {
    let b = parse_json(&call.body)?;
    let field = |n: &str| {
        b[n].as_str()
            .map(str::to_owned)
            .ok_or_else(|| invalid(&format!("body must have required property '{n}'")))
    };
    let (bucket, source, dest) = (
        field("bucketId")?,
        field("sourceKey")?,
        field("destinationKey")?,
    );
    if !valid_key(&dest) {
        return Err(api_error(
            400,
            "InvalidKey",
            "InvalidKey",
            &format!("Invalid key: {dest}"),
        ));
    }
    let tx = as_caller(client, who, Some(&bucket)).await?;
    if is_move {
        let n = tx
            .execute(
                "UPDATE storage.objects SET name = $3, updated_at = now()
                  WHERE bucket_id = $1 AND name = $2",
                &[&bucket, &source, &dest],
            )
            .await?;
        tx.commit().await?;
        if n == 0 {
            return Err(not_found());
        }
        return Ok(json_response(
            StatusCode::OK,
            &json!({ "message": "Successfully moved" }),
        ));
    }
    let row = tx
        .query_opt(
            &format!(
                "SELECT {OBJECT_COLUMNS} FROM storage.objects WHERE bucket_id = $1 AND name = $2"
            ),
            &[&bucket, &source],
        )
        .await?
        .map(|r| read_row(&r))
        .ok_or_else(not_found)?;
    let version = uuid::Uuid::new_v4().to_string();
    std::fs::copy(inner.body_path(&row.version), inner.body_path(&version))
        .map_err(|e| api_error(500, "internal", "InternalError", &e.to_string()))?;
    let new = tx
        .query_one(
            &format!(
                "INSERT INTO storage.objects (bucket_id, name, owner, owner_id, version, metadata, user_metadata)
                 VALUES ($1, $2, $3::text::uuid, $3, $4, $5, $6) RETURNING {OBJECT_COLUMNS}"
            ),
            &[&bucket, &dest, &who.sub, &version, &row.metadata, &row.user_metadata],
        )
        .await?;
    tx.commit().await?;
    let new = read_row(&new);
    let mut out = new.deleted();
    out["Key"] = json!(format!("{bucket}/{dest}"));
    out["Id"] = json!(new.id.to_string());
    Ok(json_response(StatusCode::OK, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_supabase_rule() {
        assert!(valid_key("u/notes.md"));
        assert!(valid_key("u/my notes.md"));
        assert!(valid_key("u/q?x.md"));
        assert!(!valid_key("u/été.md"));
        assert!(!valid_key("u/a~b"));
        assert!(!valid_key(""));
    }

    #[test]
    fn mime_types_match_as_the_real_server_does() {
        assert!(mime_allowed("application/json", "application/json"));
        assert!(mime_allowed(
            "application/*",
            "application/vnd.supabash.symlink"
        ));
        assert!(mime_allowed("text/plain", "text/plain; charset=utf-8"));
        assert!(!mime_allowed("text/*", "application/json"));
        assert!(!mime_allowed("*/*", "application/json"));
        assert!(!mime_allowed("application", "application/json"));
    }

    #[test]
    fn byte_ranges() {
        assert_eq!(byte_range("bytes=0-4", 19), Some((0, 4)));
        assert_eq!(byte_range("bytes=5-", 19), Some((5, 18)));
        assert_eq!(byte_range("bytes=-4", 19), Some((15, 18)));
        assert_eq!(byte_range("bytes=10-100", 19), Some((10, 18)));
        assert_eq!(byte_range("bytes=19-", 19), None);
        assert_eq!(byte_range("bytes=0-0", 0), None);
        assert_eq!(byte_range("items=0-1", 19), None);
    }

    #[test]
    fn http_dates() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(784_111_777);
        assert_eq!(httpdate(t), "Sun, 06 Nov 1994 08:49:37 GMT");
    }
}

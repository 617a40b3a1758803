//! The Storage transport: the few Supabase Storage REST calls the backend needs, with one
//! bearer token, one bucket and one prefix every key must stay under.
//!
//! Errors: Storage answers nearly every failure with HTTP 400 and the real status as a string
//! in the body (`{"statusCode":"404","code":"NoSuchKey",...}`), so the status and code are read
//! from the body and go through the client's one error table (`SupabashError::from_rpc`);
//! `InvalidKey` is `INVALID_PATH`; `InvalidJWT`, and an `AccessDenied` about the token itself
//! (the real server's answer to an expired session: `"exp" claim timestamp check failed`), are
//! `AUTHENTICATION`. Every message names the status and the server's code and message (a 5xx
//! included). A request that never left is retryable; a mutation whose answer was lost (or a
//! gateway timeout) is retryable and `outcome_unknown`.

use crate::error::{Result, SupabashError};
use crate::transport::answer::{read_capped, too_large, ReadError};
use crate::transport::{Delivery, RpcError, DEFAULT_MAX_ANSWER_BYTES};
use base64::Engine;
use reqwest::header::HeaderValue;
use reqwest::{Method, StatusCode, Url};
use serde_json::{json, Value};
use std::num::NonZeroUsize;
use supabash_core::capability::prefix_covers;
use supabash_core::ErrorCode;

/// Most keys one list-v2 page or one batch delete carries.
pub const PAGE: usize = 1000;

/// A Storage endpoint for one bucket and prefix.
#[derive(Clone)]
pub struct StorageApi {
    http: reqwest::Client,
    base: Url,
    bucket: String,
    prefix: String,
    token: String,
    api_key: Option<String>,
    upload_concurrency: NonZeroUsize,
    max_answer_bytes: usize,
}

impl std::fmt::Debug for StorageApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageApi")
            .field("base", &self.base.as_str())
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// How many uploads [`StorageApi::upload_all`] runs at a time unless told otherwise: 16, where
/// a first commit of 1,000 files stopped getting faster against the test server with a 5 ms
/// round trip (4: 3.6 s, 8: 2.7 s, 16: 2.2 s, 32: 2.3 s; bench/ANALYSIS.md, issue 39).
pub const DEFAULT_UPLOAD_CONCURRENCY: NonZeroUsize = NonZeroUsize::new(16).expect("not zero");

/// Messages of an `AccessDenied` answer that are about the bearer token itself (expired, not yet
/// valid, malformed, badly signed) rather than a policy: a new login helps, new rights do not.
const TOKEN_FAILURES: [&str; 4] = [
    "claim timestamp check failed",
    "JWS",
    "JWT",
    "signature verification failed",
];

/// One upsert for [`StorageApi::upload_all`].
#[derive(Debug, Clone)]
pub struct Upload {
    pub key: String,
    pub body: Vec<u8>,
    pub content_type: &'static str,
    pub metadata: Value,
}

/// What `info` reports about an object.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectInfo {
    pub etag: Option<String>,
    pub size: Option<u64>,
    pub content_type: Option<String>,
    /// The user metadata (`x-metadata` at upload).
    pub metadata: Value,
}

/// One object of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// The full key.
    pub name: String,
    pub etag: Option<String>,
    pub size: Option<u64>,
}

fn transport_error(e: reqwest::Error, mutation: bool) -> SupabashError {
    let delivery = if e.is_connect() || e.is_builder() {
        Delivery::Unreached
    } else {
        Delivery::Lost
    };
    SupabashError::from_rpc(
        RpcError::transport(delivery, format!("storage request failed: {e}")),
        mutation,
    )
}

/// Maps an error answer: the status and code inside the body win over the HTTP status.
pub fn answer_error(http: u16, body: &[u8], mutation: bool) -> SupabashError {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let status = answer_status(http, body);
    let code = v["code"].as_str().unwrap_or_default();
    let message = match v["message"].as_str() {
        Some(m) => format!("storage answered {status} {code}: {m}"),
        None => format!("storage answered HTTP {http}"),
    };
    let special = match code {
        "InvalidKey" => Some(ErrorCode::InvalidPath),
        "InvalidJWT" => Some(ErrorCode::Authentication),
        "AccessDenied" if TOKEN_FAILURES.iter().any(|t| message.contains(t)) => {
            Some(ErrorCode::Authentication)
        }
        _ => None,
    };
    let mut e = SupabashError::from_rpc(
        RpcError {
            status: Some(status),
            code: None,
            message,
            details: None,
            hint: None,
            delivery: Delivery::Answered,
        },
        mutation,
    );
    if let Some(c) = special {
        e.code = c;
        e.retryable = false;
    }
    e
}

/// How often a request answered 429 or 503 is sent again.
pub const RETRIES: u32 = 4;
/// The first back-off after a 429 or 503; it doubles with each retry.
pub const RETRY_BASE: std::time::Duration = std::time::Duration::from_millis(50);
/// The longest back-off (also caps the server's `Retry-After`).
pub const RETRY_CAP: std::time::Duration = std::time::Duration::from_secs(2);

/// The wait before retry `attempt` (from 0): the server's `Retry-After` seconds when given,
/// else [`RETRY_BASE`] doubled per attempt; never over [`RETRY_CAP`].
fn backoff(attempt: u32, headers: &reqwest::header::HeaderMap) -> std::time::Duration {
    let asked = headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(std::time::Duration::from_secs);
    asked
        .unwrap_or(RETRY_BASE * 2u32.saturating_pow(attempt))
        .min(RETRY_CAP)
}

/// The status an error answer means: its body's `statusCode`, else the HTTP status.
fn answer_status(http: u16, body: &[u8]) -> u16 {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match &v["statusCode"] {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        _ => None,
    }
    .unwrap_or(http)
}

fn is_not_found(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| {
        v["statusCode"] == "404" && matches!(v["code"].as_str(), Some("NoSuchKey" | "not_found"))
    })
}

impl StorageApi {
    /// An endpoint at `base_url` (hosted: `https://<ref>.supabase.co/storage/v1`) for
    /// `bucket`, confined to keys under `prefix`, sending `Authorization: Bearer <token>` (and
    /// `apikey` when given, for the Supabase gateway).
    pub fn new(
        base_url: &str,
        bucket: &str,
        prefix: &str,
        token: &str,
        api_key: Option<&str>,
    ) -> Result<StorageApi> {
        let mut base = Url::parse(base_url).map_err(|e| {
            SupabashError::new(ErrorCode::InvalidArgument, format!("storage URL: {e}"))
        })?;
        if base.cannot_be_a_base() {
            return Err(SupabashError::new(
                ErrorCode::InvalidArgument,
                "storage URL cannot be a base",
            ));
        }
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        Ok(StorageApi {
            http: reqwest::Client::new(),
            base,
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            token: token.to_owned(),
            api_key: api_key.map(str::to_owned),
            upload_concurrency: DEFAULT_UPLOAD_CONCURRENCY,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        })
    }

    /// Reads at most `bytes` of one answer (default [`DEFAULT_MAX_ANSWER_BYTES`], 256 MiB); a
    /// longer one fails with `QUOTA_EXCEEDED`. From 1 to [`crate::transport::MAX_ANSWER_BYTES`],
    /// else `INVALID_ARGUMENT`.
    pub fn with_max_answer_bytes(mut self, bytes: usize) -> Result<StorageApi> {
        crate::limits::check_setting(
            "max_answer_bytes",
            bytes,
            crate::transport::MAX_ANSWER_BYTES,
        )?;
        self.max_answer_bytes = bytes;
        Ok(self)
    }

    /// Runs at most `n` uploads at a time in [`Self::upload_all`] (default
    /// [`DEFAULT_UPLOAD_CONCURRENCY`]).
    pub fn with_upload_concurrency(mut self, n: NonZeroUsize) -> StorageApi {
        self.upload_concurrency = n;
        self
    }

    /// The Storage base URL.
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The prefix every key stays under.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Refuses a key outside the prefix (`AUTHORIZATION`): a second barrier after the policies;
    /// and one over Storage's size limits (`INVALID_PATH`, see [`super::keys::check_key`]).
    fn guard(&self, key: &str) -> Result<()> {
        if prefix_covers(&self.prefix, key) {
            super::keys::check_key(key)
        } else {
            Err(SupabashError::new(
                ErrorCode::Authorization,
                "object key outside the workspace prefix",
            ))
        }
    }

    fn url(&self, fixed: &[&str], key: Option<&str>) -> Url {
        let mut url = self.base.clone();
        {
            let mut segs = url.path_segments_mut().expect("base URL");
            segs.pop_if_empty();
            segs.extend(fixed);
            segs.push(&self.bucket);
            if let Some(key) = key {
                segs.extend(key.split('/'));
            }
        }
        url
    }

    fn request(&self, method: Method, url: Url) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, url).bearer_auth(&self.token);
        if let Some(k) = &self.api_key {
            r = r.header("apikey", k);
        }
        r
    }

    /// Sends `r`; an answer of 429 or 503 (rate limited, unavailable: not applied) is retried
    /// after a back-off ([`RETRY_BASE`] doubling, or the server's `Retry-After`, at most
    /// [`RETRY_CAP`]) up to [`RETRIES`] times, then returned as the error it is.
    async fn send(
        &self,
        mut r: reqwest::RequestBuilder,
        mutation: bool,
    ) -> Result<(StatusCode, reqwest::header::HeaderMap, Vec<u8>)> {
        let mut attempt = 0;
        loop {
            let again = r.try_clone();
            let (status, headers, body) = self.send_once(r, mutation).await?;
            if status.is_success() || !matches!(answer_status(status.as_u16(), &body), 429 | 503) {
                return Ok((status, headers, body));
            }
            match again {
                Some(next) if attempt < RETRIES => {
                    tokio::time::sleep(backoff(attempt, &headers)).await;
                    attempt += 1;
                    r = next;
                }
                _ => {
                    let mut e = answer_error(status.as_u16(), &body, mutation);
                    e.message = format!("{} (after {} attempts)", e.message, attempt + 1);
                    return Err(e);
                }
            }
        }
    }

    async fn send_once(
        &self,
        r: reqwest::RequestBuilder,
        mutation: bool,
    ) -> Result<(StatusCode, reqwest::header::HeaderMap, Vec<u8>)> {
        let response = r.send().await.map_err(|e| transport_error(e, mutation))?;
        let status = response.status();
        let headers = response.headers().clone();
        match read_capped(response, self.max_answer_bytes).await {
            Ok(body) => Ok((status, headers, body)),
            Err(ReadError::Transport(e)) => Err(transport_error(e, mutation)),
            Err(ReadError::TooLarge { limit }) => {
                let what = format!("a Storage answer (HTTP {})", status.as_u16());
                let mut e = SupabashError::quota(too_large(
                    &what,
                    limit,
                    "StorageConfig::with_max_answer_bytes or StorageApi::with_max_answer_bytes",
                ));
                // A mutation that succeeded ran, whatever its answer held.
                e.outcome_unknown = mutation && status.is_success();
                Err(e)
            }
        }
    }

    /// Uploads `body` to `key` (`x-upsert: true` when `upsert`, else create-only: an existing
    /// key is `COMMIT_CONFLICT`), with content type and user metadata.
    pub async fn upload(
        &self,
        key: &str,
        body: Vec<u8>,
        content_type: &str,
        metadata: &Value,
        upsert: bool,
    ) -> Result<()> {
        self.guard(key)?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(metadata.to_string());
        let r = self
            .request(Method::POST, self.url(&["object"], Some(key)))
            .header("content-type", content_type)
            .header("cache-control", "no-cache")
            .header("x-upsert", if upsert { "true" } else { "false" })
            .header(
                "x-metadata",
                HeaderValue::from_str(&encoded).expect("base64 is a header value"),
            )
            .body(body);
        let (status, _, body) = self.send(r, true).await?;
        if status.is_success() {
            Ok(())
        } else {
            Err(answer_error(status.as_u16(), &body, true).with_path(key))
        }
    }

    /// Upserts every upload, [`Self::with_upload_concurrency`] at a time. On the first failure
    /// no further upload starts, every one already sent is waited for (its answer, success or
    /// failure), and only then is that first failure returned: a request still in flight when
    /// a commit reports failure could land after the rollback that follows and leave bytes no
    /// revision has in a visible object. (Some uploads may have been applied.)
    pub async fn upload_all(&self, uploads: Vec<Upload>) -> Result<()> {
        let mut pending = uploads.into_iter();
        let mut running = tokio::task::JoinSet::new();
        let mut first_failure: Option<SupabashError> = None;
        loop {
            while first_failure.is_none() && running.len() < self.upload_concurrency.get() {
                let Some(u) = pending.next() else { break };
                let api = self.clone();
                running.spawn(async move {
                    api.upload(&u.key, u.body, u.content_type, &u.metadata, true)
                        .await
                });
            }
            let failure = match running.join_next().await {
                None => return first_failure.map_or(Ok(()), Err),
                Some(Ok(Ok(()))) => continue,
                Some(Ok(Err(e))) => e,
                Some(Err(e)) => {
                    SupabashError::new(ErrorCode::Backend, format!("an upload task failed: {e}"))
                }
            };
            first_failure.get_or_insert(failure);
        }
    }

    /// The bytes of `key`; `None` when it does not exist (or the policies hide it).
    pub async fn download(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.guard(key)?;
        let r = self.request(
            Method::GET,
            self.url(&["object", "authenticated"], Some(key)),
        );
        let (status, _, body) = self.send(r, false).await?;
        if status.is_success() {
            Ok(Some(body))
        } else if is_not_found(&body) {
            Ok(None)
        } else {
            Err(answer_error(status.as_u16(), &body, false))
        }
    }

    /// `len` bytes of `key` from `offset` (one `Range` request); `None` when the object does
    /// not exist. Fewer bytes than asked (the object is shorter) is `HISTORY_CORRUPTION`.
    pub async fn download_range(
        &self,
        key: &str,
        offset: u64,
        len: u64,
    ) -> Result<Option<Vec<u8>>> {
        self.guard(key)?;
        if len == 0 {
            return Ok(Some(Vec::new()));
        }
        let last = offset.saturating_add(len - 1);
        let r = self
            .request(
                Method::GET,
                self.url(&["object", "authenticated"], Some(key)),
            )
            .header("range", format!("bytes={offset}-{last}"));
        let (status, _, body) = self.send(r, false).await?;
        let bytes = match status {
            StatusCode::PARTIAL_CONTENT => body,
            // A server that ignores ranges sends the whole object.
            StatusCode::OK => body
                .get(offset as usize..)
                .map(|b| b[..b.len().min(len as usize)].to_vec())
                .unwrap_or_default(),
            _ if is_not_found(&body) => return Ok(None),
            _ => return Err(answer_error(status.as_u16(), &body, false)),
        };
        if bytes.len() as u64 != len {
            return Err(SupabashError::new(
                ErrorCode::HistoryCorruption,
                format!("{key} is shorter than its index says"),
            ));
        }
        Ok(Some(bytes))
    }

    /// A JSON record at `key`; `None` when absent, `HISTORY_CORRUPTION` when not JSON.
    pub async fn read_json(&self, key: &str) -> Result<Option<Value>> {
        match self.download(key).await? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                SupabashError::new(
                    ErrorCode::HistoryCorruption,
                    format!("record {key} is not JSON: {e}"),
                )
            }),
        }
    }

    /// Writes a JSON record at `key`.
    pub async fn write_json(&self, key: &str, value: &Value, upsert: bool) -> Result<()> {
        self.upload(
            key,
            value.to_string().into_bytes(),
            super::model::RECORD_TYPE,
            &json!({}),
            upsert,
        )
        .await
    }

    /// What Storage knows about `key`; `None` when it does not exist.
    pub async fn info(&self, key: &str) -> Result<Option<ObjectInfo>> {
        self.guard(key)?;
        let r = self.request(Method::GET, self.url(&["object", "info"], Some(key)));
        let (status, _, body) = self.send(r, false).await?;
        if !status.is_success() {
            return if is_not_found(&body) {
                Ok(None)
            } else {
                Err(answer_error(status.as_u16(), &body, false))
            };
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| SupabashError::new(ErrorCode::Backend, format!("info: {e}")))?;
        Ok(Some(ObjectInfo {
            etag: v["etag"].as_str().map(str::to_owned),
            size: v["size"].as_u64(),
            content_type: v["content_type"].as_str().map(str::to_owned),
            metadata: v.get("metadata").cloned().unwrap_or(Value::Null),
        }))
    }

    /// Deletes `keys` (batches of [`PAGE`]); returns the keys that existed and were deleted.
    /// Missing keys are skipped, as Storage does.
    pub async fn delete(&self, keys: &[String]) -> Result<Vec<String>> {
        let mut deleted = Vec::new();
        for batch in keys.chunks(PAGE) {
            for k in batch {
                self.guard(k)?;
            }
            let r = self
                .request(Method::DELETE, self.url(&["object"], None))
                .header("content-type", "application/json")
                .body(json!({ "prefixes": batch }).to_string());
            let (status, _, body) = self.send(r, true).await?;
            if !status.is_success() {
                return Err(answer_error(status.as_u16(), &body, true));
            }
            let rows: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            for row in rows.as_array().into_iter().flatten() {
                if let Some(name) = row["name"].as_str() {
                    deleted.push(name.to_owned());
                }
            }
        }
        Ok(deleted)
    }

    /// Every object under `prefix` (a key prefix inside the workspace prefix), following
    /// list-v2 cursors page by page. Every name must lie under the workspace prefix, else
    /// `AUTHORIZATION`.
    pub async fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        if !prefix.starts_with(&self.prefix) {
            return Err(SupabashError::new(
                ErrorCode::Authorization,
                "listing outside the workspace prefix",
            ));
        }
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut body = json!({ "prefix": prefix, "limit": PAGE, "with_delimiter": false });
            if let Some(c) = &cursor {
                body["cursor"] = json!(c);
            }
            let r = self
                .request(Method::POST, self.url(&["object", "list-v2"], None))
                .header("content-type", "application/json")
                .body(body.to_string());
            let (status, _, bytes) = self.send(r, false).await?;
            if !status.is_success() {
                return Err(answer_error(status.as_u16(), &bytes, false));
            }
            let page: Value = serde_json::from_slice(&bytes)
                .map_err(|e| SupabashError::new(ErrorCode::Backend, format!("list-v2: {e}")))?;
            for o in page["objects"].as_array().into_iter().flatten() {
                let name = o["name"].as_str().unwrap_or_default().to_owned();
                if !name.starts_with(prefix) {
                    return Err(SupabashError::new(
                        ErrorCode::Authorization,
                        "storage listed a key outside the workspace prefix",
                    ));
                }
                out.push(Listed {
                    name,
                    etag: o["metadata"]["eTag"].as_str().map(str::to_owned),
                    size: o["metadata"]["size"].as_u64(),
                });
            }
            if page["hasNext"] != true {
                return Ok(out);
            }
            cursor = Some(
                page["nextCursor"]
                    .as_str()
                    .ok_or_else(|| {
                        SupabashError::new(
                            ErrorCode::Backend,
                            "list-v2 said hasNext without a cursor",
                        )
                    })?
                    .to_owned(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_come_from_the_body() {
        let e = answer_error(
            400,
            br#"{"statusCode":"404","error":"not_found","message":"Object not found","code":"NoSuchKey"}"#,
            false,
        );
        assert_eq!(e.code, ErrorCode::NotFound);
        let e = answer_error(
            400,
            br#"{"statusCode":"403","error":"Unauthorized","message":"new row violates row-level security policy","code":"AccessDenied"}"#,
            true,
        );
        assert_eq!(e.code, ErrorCode::Authorization);
        assert!(!e.retryable && !e.outcome_unknown);
        let e = answer_error(
            400,
            br#"{"statusCode":"409","error":"Duplicate","message":"The resource already exists","code":"KeyAlreadyExists"}"#,
            true,
        );
        assert_eq!(e.code, ErrorCode::CommitConflict);
        let e = answer_error(
            400,
            br#"{"statusCode":"400","error":"InvalidKey","message":"Invalid key: u/x","code":"InvalidKey"}"#,
            true,
        );
        assert_eq!(e.code, ErrorCode::InvalidPath);
        // The real server's answer to an expired session: re-login, not a permission problem.
        let e = answer_error(
            400,
            br#"{"statusCode":"403","error":"Unauthorized","message":"\"exp\" claim timestamp check failed","code":"AccessDenied"}"#,
            false,
        );
        assert_eq!(e.code, ErrorCode::Authentication);
        let e = answer_error(
            400,
            br#"{"statusCode":"403","error":"Unauthorized","message":"Access denied","code":"AccessDenied"}"#,
            true,
        );
        assert_eq!(e.code, ErrorCode::Authorization);
        // A 5xx names its status and the server's message.
        let e = answer_error(
            500,
            br#"{"statusCode":"500","error":"internal","message":"Internal Server Error","code":"InternalError"}"#,
            true,
        );
        assert_eq!(e.code, ErrorCode::Backend);
        assert!(
            e.to_string()
                .contains("500 InternalError: Internal Server Error"),
            "{e}"
        );
        let e = answer_error(504, b"gateway timeout", true);
        assert!(e.retryable && e.outcome_unknown);
        let e = answer_error(503, br#"{"statusCode":"503","code":"x"}"#, true);
        assert!(e.retryable && !e.outcome_unknown);
        assert!(is_not_found(
            br#"{"statusCode":"404","code":"NoSuchKey","message":"Object not found"}"#
        ));
        assert!(!is_not_found(
            br#"{"statusCode":"404","code":"NoSuchBucket","message":"Bucket not found"}"#
        ));
    }

    #[tokio::test]
    async fn unreached_is_retryable_and_a_lost_answer_is_unknown() {
        // Nothing listens: the request never left.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let api =
            StorageApi::new(&format!("http://127.0.0.1:{port}"), "b", "u/", "t", None).unwrap();
        let e = api
            .upload("u/x", b"x".to_vec(), "text/plain", &json!({}), true)
            .await
            .unwrap_err();
        assert!(e.retryable && !e.outcome_unknown, "{e}");
        // A server that reads the request and hangs up: the upload may have happened.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
            }
        });
        let api = StorageApi::new(&url, "b", "u/", "t", None).unwrap();
        let e = api
            .upload("u/x", b"x".to_vec(), "text/plain", &json!({}), true)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Backend);
        assert!(e.retryable && e.outcome_unknown, "{e}");
        let e = api.download("u/x").await.unwrap_err();
        assert!(e.retryable && !e.outcome_unknown, "{e}");
    }

    #[test]
    fn keys_outside_the_prefix_are_refused() {
        let api = StorageApi::new("http://127.0.0.1:1/storage/v1", "b", "u1/", "t", None).unwrap();
        assert_eq!(
            api.guard("u2/x").unwrap_err().code,
            ErrorCode::Authorization
        );
        assert_eq!(api.guard("u1/").unwrap_err().code, ErrorCode::Authorization);
        assert!(api.guard("u1/a/b").is_ok());
        let url = api.url(&["object"], Some("u1/my notes/?.md"));
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:1/storage/v1/object/b/u1/my%20notes/%3F.md"
        );
    }
}

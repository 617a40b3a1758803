//! PostgREST over HTTP: the production path. On Supabase the base URL is the project URL plus
//! `/rest/v1`; any PostgREST-compatible server works when given its own base URL.

use super::answer::{read_capped, too_large, ReadError, DEFAULT_MAX_ANSWER_BYTES};
use super::{Delivery, RpcError, Transport};
use serde_json::{Map, Value};
use std::time::Duration;

/// Calls RPCs as `POST {base}/rpc/{name}` with the `apikey` and `Authorization: Bearer` headers.
/// Each answer is read up to [`Self::with_max_answer_bytes`] bytes (default
/// [`DEFAULT_MAX_ANSWER_BYTES`], 256 MiB); a longer one fails the call with `QUOTA_EXCEEDED`.
pub struct PostgrestTransport {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    bearer: String,
    max_answer_bytes: usize,
}

/// The SQLSTATE an answer past its cap is reported with (`program_limit_exceeded`, which the
/// client's error table reads as `QUOTA_EXCEEDED`).
pub(crate) const ANSWER_TOO_LARGE: &str = "54000";

impl PostgrestTransport {
    /// A transport for a Supabase project: `{supabase_url}/rest/v1`.
    pub fn supabase(supabase_url: &str, api_key: &str, bearer: &str) -> Self {
        Self::new(
            &format!("{}/rest/v1", supabase_url.trim_end_matches('/')),
            api_key,
            bearer,
        )
    }

    /// A transport for any PostgREST base URL (RPCs live at `{base_url}/rpc/...`).
    /// `api_key` goes in the `apikey` header, `bearer` (the user's access token) in
    /// `Authorization`.
    pub fn new(base_url: &str, api_key: &str, bearer: &str) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .expect("a rustls HTTP client builds");
        PostgrestTransport {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
            bearer: bearer.to_owned(),
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }

    /// Reads at most `bytes` of one answer (default [`DEFAULT_MAX_ANSWER_BYTES`]); from 1 to
    /// [`super::MAX_ANSWER_BYTES`], else `INVALID_ARGUMENT`.
    pub fn with_max_answer_bytes(mut self, bytes: usize) -> crate::Result<Self> {
        crate::limits::check_setting("max_answer_bytes", bytes, super::MAX_ANSWER_BYTES)?;
        self.max_answer_bytes = bytes;
        Ok(self)
    }
}

fn send_error(e: reqwest::Error) -> RpcError {
    // A connection that could not be made carried nothing; anything later may have.
    let delivery = if e.is_connect() || e.is_builder() {
        Delivery::Unreached
    } else {
        Delivery::Lost
    };
    RpcError::transport(delivery, format!("request failed: {e}"))
}

fn text_field(body: &Value, name: &str) -> Option<String> {
    match body.get(name)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The request header a delegated grant travels in; PostgREST hands it to the database in
/// `request.headers` (the extension reads it from there).
pub const GRANT_HEADER: &str = "X-Supabash-Grant";

impl PostgrestTransport {
    async fn post(
        &self,
        rpc: &str,
        args: &Map<String, Value>,
        grant: Option<&str>,
    ) -> Result<Value, RpcError> {
        let text = self.post_text(rpc, args, grant).await?;
        super::json_answer(&text)
    }

    /// One call's answer as JSON text (`null` for an empty body).
    async fn post_text(
        &self,
        rpc: &str,
        args: &Map<String, Value>,
        grant: Option<&str>,
    ) -> Result<String, RpcError> {
        let url = format!("{}/rpc/{rpc}", self.base_url);
        let body = serde_json::to_vec(args).expect("JSON arguments serialise");
        let mut request = self
            .http
            .post(url)
            .header("apikey", &self.api_key)
            .header("Authorization", format!("Bearer {}", self.bearer))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(grant) = grant {
            request = request.header(GRANT_HEADER, grant);
        }
        let response = request.body(body).send().await.map_err(send_error)?;
        let status = response.status().as_u16();
        let bytes = match read_capped(response, self.max_answer_bytes).await {
            Ok(bytes) => bytes,
            Err(ReadError::Transport(e)) => return Err(send_error(e)),
            Err(ReadError::TooLarge { limit }) => {
                let what = format!("the answer of {rpc} (HTTP {status})");
                let setting = "PostgrestTransport::with_max_answer_bytes";
                return Err(RpcError {
                    status: Some(status),
                    // An error answer keeps its status's meaning; a success is a quota.
                    code: (200..300)
                        .contains(&status)
                        .then(|| ANSWER_TOO_LARGE.to_owned()),
                    message: too_large(&what, limit, setting),
                    details: None,
                    hint: None,
                    delivery: Delivery::Answered,
                });
            }
        };
        if (200..300).contains(&status) {
            if bytes.is_empty() {
                return Ok("null".to_owned());
            }
            // Checked without building it (callers decode it into their own types).
            let checked = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|_| String::from_utf8(bytes).map_err(|e| e.to_string()));
            return checked.map_err(|e| RpcError {
                status: Some(status),
                code: None,
                message: format!("the answer is not JSON: {e}"),
                details: None,
                hint: None,
                delivery: Delivery::Answered,
            });
        }
        let parsed: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Err(RpcError {
            status: Some(status),
            code: text_field(&parsed, "code"),
            message: text_field(&parsed, "message")
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned()),
            details: text_field(&parsed, "details"),
            hint: text_field(&parsed, "hint"),
            delivery: Delivery::Answered,
        })
    }
}

#[async_trait::async_trait]
impl Transport for PostgrestTransport {
    async fn call(&self, rpc: &str, args: Map<String, Value>) -> Result<Value, RpcError> {
        self.post(rpc, &args, None).await
    }

    async fn call_text(&self, rpc: &str, args: Map<String, Value>) -> Result<String, RpcError> {
        self.post_text(rpc, &args, None).await
    }

    /// Sends the grant in the `X-Supabash-Grant` header (`GRANT_HEADER`), never in the URL or the body.
    async fn call_with_grant(
        &self,
        rpc: &str,
        mut args: Map<String, Value>,
        grant: &str,
    ) -> Result<Value, RpcError> {
        args.remove("delegated_grant");
        self.post(rpc, &args, Some(grant)).await
    }
}

//! Opening from an incoming request: exactly one bearer token, a publishable (never a secret or
//! service-role) API key, a user session verified with Supabase Auth (`GET /auth/v1/user`) or
//! locally against the project's JWT secret or its JSON Web Key Set (see [`jwks`]). The caller
//! never supplies a user id: it comes from the verified session, and the database checks
//! ownership from the same token.

pub mod jwks;

pub use jwks::JwksVerifier;

use crate::error::{Result, SupabashError};
use crate::transport::answer::{read_capped, ReadError};
use crate::{Limits, PostgrestTransport, Transport, Workspace};
use base64::Engine;
use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use supabash_core::ErrorCode;

/// How a session token is verified.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Verifier {
    /// Ask Supabase Auth (`{supabase_url}/auth/v1/user`), the default.
    SupabaseAuth,
    /// Verify an HS256 token locally with the project's JWT secret.
    JwtSecret(String),
    /// Verify an RS256, ES256 or EdDSA token locally against a JSON Web Key Set (HS256 tokens
    /// are refused). Share one verifier: it caches the set.
    Jwks(Arc<JwksVerifier>),
}

/// Clock skew allowed when checking `exp` and `nbf` locally: 30 seconds.
pub const LEEWAY_SECS: u64 = 30;
/// The most bytes read of Supabase Auth's answer to a session check (`/auth/v1/user`): 1 MiB.
pub const MAX_USER_ANSWER_BYTES: usize = 1 << 20;

/// A Supabase project as a host configures it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SupabaseConfig {
    /// The project URL, e.g. `https://xyz.supabase.co`.
    pub url: String,
    /// The publishable (or legacy anon) key.
    pub publishable_key: String,
    pub verifier: Verifier,
    /// The PostgREST base URL when it is not `{url}/rest/v1`.
    pub rest_url: Option<String>,
    /// The most bytes one PostgREST answer may hold (default
    /// [`crate::transport::DEFAULT_MAX_ANSWER_BYTES`]; see
    /// [`PostgrestTransport::with_max_answer_bytes`], which checks it when a workspace opens).
    pub max_answer_bytes: usize,
}

crate::setters! {
    impl SupabaseConfig {
        with_url(url: into String),
        with_publishable_key(publishable_key: into String),
        with_verifier(verifier: Verifier),
        with_rest_url(rest_url: some into String),
        with_max_answer_bytes(max_answer_bytes: usize),
    }
}

impl SupabaseConfig {
    /// A project verified by Supabase Auth, with PostgREST at `{url}/rest/v1`.
    pub fn new(url: &str, publishable_key: &str) -> Self {
        SupabaseConfig {
            url: url.to_owned(),
            publishable_key: publishable_key.to_owned(),
            verifier: Verifier::SupabaseAuth,
            rest_url: None,
            max_answer_bytes: crate::transport::DEFAULT_MAX_ANSWER_BYTES,
        }
    }

    fn transport(&self, session: &Session) -> Result<Arc<dyn Transport>> {
        let t = match &self.rest_url {
            Some(base) => {
                PostgrestTransport::new(base, &self.publishable_key, &session.access_token)
            }
            None => PostgrestTransport::supabase(
                &self.url,
                &self.publishable_key,
                &session.access_token,
            ),
        };
        Ok(Arc::new(t.with_max_answer_bytes(self.max_answer_bytes)?))
    }
}

/// A verified user session.
#[derive(Debug, Clone)]
pub struct Session {
    /// The user id (the token's `sub`).
    pub user_id: String,
    /// The access token, forwarded to PostgREST.
    pub access_token: String,
}

fn denied(code: ErrorCode, message: impl Into<String>) -> SupabashError {
    SupabashError::new(code, message)
}

/// The one bearer token of a request's `Authorization` header.
pub fn bearer_token(headers: &HeaderMap) -> Result<String> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(denied(
            ErrorCode::Authentication,
            "the request must carry exactly one Authorization header",
        ));
    };
    let value = value
        .to_str()
        .map_err(|_| denied(ErrorCode::Authentication, "Authorization is not ASCII"))?;
    let mut parts = value.split(' ').filter(|p| !p.is_empty());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(scheme), Some(token), None) if scheme.eq_ignore_ascii_case("bearer") => {
            Ok(token.to_owned())
        }
        _ => Err(denied(
            ErrorCode::Authentication,
            "Authorization must be `Bearer <token>`",
        )),
    }
}

/// The unverified payload of a compact JWT, when `token` looks like one.
fn jwt_payload(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Refuses a secret key or a legacy service-role key where a publishable key is expected.
pub fn check_publishable_key(key: &str) -> Result<()> {
    let refused = || {
        denied(
            ErrorCode::Authorization,
            "a secret or service-role key was given where a publishable key is expected",
        )
    };
    if key.starts_with("sb_secret_") {
        return Err(refused());
    }
    match jwt_payload(key) {
        Some(claims) if claims["role"] != "anon" => Err(refused()),
        _ => Ok(()),
    }
}

fn user_id_of(id: Option<&str>, role: Option<&str>) -> Result<String> {
    if role == Some("service_role") {
        return Err(denied(
            ErrorCode::Authorization,
            "a service_role token cannot open a user workspace",
        ));
    }
    id.and_then(|s| uuid::Uuid::parse_str(s).ok())
        .map(|u| u.to_string())
        .ok_or_else(|| denied(ErrorCode::Authentication, "the session names no user"))
}

async fn ask_supabase_auth(config: &SupabaseConfig, token: &str) -> Result<String> {
    let url = format!("{}/auth/v1/user", config.url.trim_end_matches('/'));
    let answer = reqwest::Client::new()
        .get(url)
        .header("apikey", &config.publishable_key)
        .bearer_auth(token)
        .timeout(Duration::from_secs(15))
        .send()
        .await
        .map_err(|e| {
            SupabashError::new(ErrorCode::Backend, "Supabase Auth did not answer").with_source(e)
        })?;
    let status = answer.status().as_u16();
    if status == 401 || status == 403 {
        return Err(denied(
            ErrorCode::Authentication,
            "the session is not valid",
        ));
    }
    if status != 200 {
        let mut e = SupabashError::new(
            ErrorCode::Backend,
            format!("Supabase Auth answered HTTP {status}"),
        );
        e.retryable = status >= 500;
        return Err(e);
    }
    let body = read_capped(answer, MAX_USER_ANSWER_BYTES)
        .await
        .map_err(|e| match e {
            ReadError::Transport(e) => {
                SupabashError::new(ErrorCode::Backend, "Supabase Auth's answer was lost")
                    .with_source(e)
            }
            ReadError::TooLarge { limit } => SupabashError::quota(format!(
                "Supabase Auth's user answer is larger than {limit} bytes \
                 (MAX_USER_ANSWER_BYTES, fixed: a user record is a few KiB)"
            )),
        })?;
    let user: Value = serde_json::from_slice(&body).map_err(|e| {
        SupabashError::new(ErrorCode::Backend, "Supabase Auth answered no user").with_source(e)
    })?;
    user_id_of(user["id"].as_str(), user["role"].as_str())
}

/// What local verification checks besides the signature: `exp` and `nbf` (with
/// [`LEEWAY_SECS`]), `aud` = `authenticated`, and that `exp` and `sub` are present.
fn validation(algorithm: jsonwebtoken::Algorithm) -> jsonwebtoken::Validation {
    let mut validation = jsonwebtoken::Validation::new(algorithm);
    validation.leeway = LEEWAY_SECS;
    validation.validate_nbf = true;
    validation.set_audience(&["authenticated"]);
    validation.set_required_spec_claims(&["exp", "sub", "aud"]);
    validation
}

/// The user id of verified claims: the role must be `authenticated` (a `service_role` token is
/// refused as such) and `sub` a user id.
fn session_claims(claims: &Value) -> Result<String> {
    let role = claims["role"].as_str();
    let id = user_id_of(claims["sub"].as_str(), role)?;
    if role != Some("authenticated") {
        return Err(denied(
            ErrorCode::Authentication,
            "the session token is not an authenticated user's",
        ));
    }
    Ok(id)
}

fn verify_locally(secret: &str, token: &str) -> Result<String> {
    let data = jsonwebtoken::decode::<Value>(
        token,
        &jsonwebtoken::DecodingKey::from_secret(secret.as_bytes()),
        &validation(jsonwebtoken::Algorithm::HS256),
    )
    .map_err(|e| {
        denied(ErrorCode::Authentication, "the session token is not valid").with_source(e)
    })?;
    session_claims(&data.claims)
}

/// Verifies the request's session: one bearer token, a publishable key, a token that is not
/// service_role, and a live session by the configured verifier.
pub async fn verify_request(headers: &HeaderMap, config: &SupabaseConfig) -> Result<Session> {
    check_publishable_key(&config.publishable_key)?;
    let token = bearer_token(headers)?;
    if jwt_payload(&token).is_some_and(|c| c["role"] == "service_role") {
        return Err(denied(
            ErrorCode::Authorization,
            "a service_role token cannot open a user workspace",
        ));
    }
    let user_id = match &config.verifier {
        Verifier::SupabaseAuth => ask_supabase_auth(config, &token).await?,
        Verifier::JwtSecret(secret) => verify_locally(secret, &token)?,
        Verifier::Jwks(keys) => keys.verify(&token).await?,
    };
    Ok(Session {
        user_id,
        access_token: token,
    })
}

impl Workspace {
    /// Verifies the incoming request's session, then opens `workspace_id` as that user over
    /// PostgREST. The database refuses a workspace the user does not own.
    pub(crate) async fn open_from_request(
        headers: &HeaderMap,
        config: &SupabaseConfig,
        workspace_id: &str,
        limits: Limits,
    ) -> Result<(Session, Workspace)> {
        let session = verify_request(headers, config).await?;
        let ws = Workspace::open(config.transport(&session)?, workspace_id, limits).await?;
        Ok((session, ws))
    }

    /// Verifies the incoming request's session and creates a workspace owned by that user.
    pub(crate) async fn create_from_request(
        headers: &HeaderMap,
        config: &SupabaseConfig,
        limits: Limits,
        files_only: bool,
    ) -> Result<(Session, Workspace)> {
        let session = verify_request(headers, config).await?;
        let ws = Workspace::create(config.transport(&session)?, limits, files_only).await?;
        Ok((session, ws))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn exactly_one_bearer_token() {
        assert_eq!(bearer_token(&headers(&["Bearer abc"])).unwrap(), "abc");
        assert_eq!(bearer_token(&headers(&["bearer  abc"])).unwrap(), "abc");
        for bad in [
            &[][..],
            &["Bearer a", "Bearer b"],
            &["Basic abc"],
            &["Bearer a b"],
            &["Bearer"],
        ] {
            assert_eq!(
                bearer_token(&headers(bad)).unwrap_err().code,
                ErrorCode::Authentication,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn refuses_secret_keys() {
        let jwt = |role: &str| {
            let p = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(format!("{{\"role\":\"{role}\"}}"));
            format!("eyJhbGciOiJIUzI1NiJ9.{p}.sig")
        };
        check_publishable_key("sb_publishable_abc").unwrap();
        check_publishable_key(&jwt("anon")).unwrap();
        for bad in ["sb_secret_abc".to_owned(), jwt("service_role")] {
            assert_eq!(
                check_publishable_key(&bad).unwrap_err().code,
                ErrorCode::Authorization
            );
        }
    }
}

//! Local verification of Supabase access tokens against a JSON Web Key Set: RS256, ES256
//! (P-256) and EdDSA (Ed25519) keys, chosen by the token's `kid`.
//!
//! - **The algorithm comes from the key, never from the token.** Each key admits one algorithm
//!   (its JWK `alg`, or what its type and curve imply); a token whose header names another one,
//!   `alg: none`, an HMAC algorithm, or a `kid` the set does not hold, is refused.
//! - **Where the set comes from**: given by the host ([`JwksVerifier::from_json`]), or fetched
//!   from `<supabase url>/auth/v1/.well-known/jwks.json` ([`JwksVerifier::supabase`]). A fetched
//!   set is kept for [`KEEP_FETCHED`] and fetched again on first use after that; a token whose
//!   `kid` is unknown triggers one fetch, at most once per [`UNKNOWN_KID_INTERVAL`] (so a flood
//!   of random `kid`s cannot hammer Supabase Auth). Concurrent verifications wait for one fetch.
//!   A failed fetch keeps the last good set, and nothing is fetched for that interval after it
//!   (without any good set, verification fails retryably meanwhile). Fetches do not follow redirects, time out after
//!   [`FETCH_TIMEOUT`] and read at most [`MAX_JWKS_BYTES`] ([`JwksVerifier::with_max_bytes`]; a
//!   longer set is refused by its `Content-Length` or as soon as the body passes the cap).
//! - Claims are checked by `session_claims` (the parent module): exp/nbf with [`super::LEEWAY_SECS`],
//!   `aud` = `authenticated`, the role, and `sub`.

use super::{denied, session_claims};
use crate::error::{Result, SupabashError};
use crate::transport::answer::{read_capped, too_large, ReadError};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::RwLock;
use std::time::{Duration, Instant};
use supabash_core::ErrorCode;

/// How long a fetched key set is used before it is fetched again: ten minutes.
pub const KEEP_FETCHED: Duration = Duration::from_secs(600);
/// The least time between two fetches caused by unknown `kid`s (or by failures): 30 s.
pub const UNKNOWN_KID_INTERVAL: Duration = Duration::from_secs(30);
/// How long one fetch may take: 10 s.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest key set read by default: 1 MiB (Supabase Auth's set holds a few keys of a few
/// hundred bytes each).
pub const MAX_JWKS_BYTES: usize = 1 << 20;
/// The largest cap [`JwksVerifier::with_max_bytes`] accepts: 16 MiB.
pub const MAX_JWKS_BYTES_CEILING: usize = 16 << 20;

/// One usable key of a set.
struct Key {
    algorithm: Algorithm,
    decoding: DecodingKey,
}

/// The usable keys of a set, by `kid`.
#[derive(Default)]
struct KeySet(HashMap<String, Key>);

impl KeySet {
    /// Parses a JWKS document. Keys that cannot verify RS256, ES256 or EdDSA signatures
    /// (symmetric keys, other curves, encryption keys, keys without a `kid`) are left out.
    fn parse(json: &[u8]) -> Result<KeySet> {
        let doc: Value = serde_json::from_slice(json).map_err(|e| {
            SupabashError::new(ErrorCode::Backend, "the key set is not JSON").with_source(e)
        })?;
        let keys = doc["keys"].as_array().ok_or_else(|| {
            SupabashError::new(ErrorCode::Backend, "the key set has no \"keys\" array")
        })?;
        let set = keys
            .iter()
            .filter_map(|k| Some((k["kid"].as_str()?.to_owned(), usable_key(k)?)))
            .collect();
        Ok(KeySet(set))
    }
}

/// The key a JWK describes, when it is a signature key of an accepted algorithm.
fn usable_key(jwk: &Value) -> Option<Key> {
    let text = |name: &str| jwk[name].as_str();
    if text("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let (algorithm, decoding) = match (text("kty")?, text("crv")) {
        ("RSA", _) => (
            Algorithm::RS256,
            DecodingKey::from_rsa_components(text("n")?, text("e")?).ok()?,
        ),
        ("EC", Some("P-256")) => (
            Algorithm::ES256,
            DecodingKey::from_ec_components(text("x")?, text("y")?).ok()?,
        ),
        ("OKP", Some("Ed25519")) => (
            Algorithm::EdDSA,
            DecodingKey::from_ed_components(text("x")?).ok()?,
        ),
        _ => return None,
    };
    // A key that names its algorithm must name the one its type implies.
    let named = text("alg");
    if named.is_some_and(|a| a != algorithm_name(algorithm)) {
        return None;
    }
    Some(Key {
        algorithm,
        decoding,
    })
}

fn algorithm_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::RS256 => "RS256",
        Algorithm::ES256 => "ES256",
        Algorithm::EdDSA => "EdDSA",
        _ => "unsupported",
    }
}

/// Where a verifier's keys come from.
enum Source {
    Given,
    Fetched { url: String, http: reqwest::Client },
}

/// The keys in force and when they were last fetched or tried.
#[derive(Default)]
struct State {
    keys: KeySet,
    /// When the keys were fetched (`None`: given by the host, or never fetched).
    fetched_at: Option<Instant>,
    /// When a fetch last failed.
    failed_at: Option<Instant>,
    /// When an unknown `kid` last caused a fetch.
    unknown_kid_at: Option<Instant>,
}

/// Verifies access tokens against a JSON Web Key Set. Share one per project (it caches the set).
pub struct JwksVerifier {
    source: Source,
    state: RwLock<State>,
    /// Serialises fetches: verifications that need one wait for the one under way.
    fetching: tokio::sync::Mutex<()>,
    unknown_kid_interval: Duration,
    /// The most bytes a fetched set may hold.
    max_bytes: usize,
}

impl fmt::Debug for JwksVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kids: Vec<String> = self
            .state
            .read()
            .expect("jwks")
            .keys
            .0
            .keys()
            .cloned()
            .collect();
        kids.sort();
        let url = match &self.source {
            Source::Given => None,
            Source::Fetched { url, .. } => Some(url.as_str()),
        };
        f.debug_struct("JwksVerifier")
            .field("url", &url)
            .field("kids", &kids)
            .finish()
    }
}

impl JwksVerifier {
    /// Verifies against the key set `json` (a JWKS document) the host provides; never fetches.
    pub fn from_json(json: &str) -> Result<Self> {
        let keys = KeySet::parse(json.as_bytes())?;
        Ok(JwksVerifier {
            source: Source::Given,
            state: RwLock::new(State {
                keys,
                ..State::default()
            }),
            fetching: tokio::sync::Mutex::new(()),
            unknown_kid_interval: UNKNOWN_KID_INTERVAL,
            max_bytes: MAX_JWKS_BYTES,
        })
    }

    /// Verifies against the key set Supabase Auth publishes at
    /// `{supabase_url}/auth/v1/.well-known/jwks.json`, fetched on first use and cached.
    pub fn supabase(supabase_url: &str) -> Result<Self> {
        Self::fetched_from(&format!(
            "{}/auth/v1/.well-known/jwks.json",
            supabase_url.trim_end_matches('/')
        ))
    }

    /// Verifies against the key set at `url`, fetched on first use and cached. The URL must be
    /// `https`, or `http` to a loopback host (a key set anyone on the path could replace would
    /// let them sign any token).
    pub fn fetched_from(url: &str) -> Result<Self> {
        check_url(url)?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| {
                SupabashError::new(ErrorCode::Backend, "no HTTP client for the key set")
                    .with_source(e)
            })?;
        Ok(JwksVerifier {
            source: Source::Fetched {
                url: url.to_owned(),
                http,
            },
            state: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
            unknown_kid_interval: UNKNOWN_KID_INTERVAL,
            max_bytes: MAX_JWKS_BYTES,
        })
    }

    /// Sets the least time between fetches caused by unknown `kid`s (default
    /// [`UNKNOWN_KID_INTERVAL`]).
    pub fn with_unknown_kid_interval(mut self, interval: Duration) -> Self {
        self.unknown_kid_interval = interval;
        self
    }

    /// Reads at most `bytes` of a fetched key set (default [`MAX_JWKS_BYTES`]); from 1 to
    /// [`MAX_JWKS_BYTES_CEILING`], else `INVALID_ARGUMENT`.
    pub fn with_max_bytes(mut self, bytes: usize) -> Result<Self> {
        crate::limits::check_setting("max_bytes", bytes, MAX_JWKS_BYTES_CEILING)?;
        self.max_bytes = bytes;
        Ok(self)
    }

    /// Verifies `token` and returns the user id (its `sub`).
    pub async fn verify(&self, token: &str) -> Result<String> {
        let invalid = |e: jsonwebtoken::errors::Error| {
            denied(ErrorCode::Authentication, "the session token is not valid").with_source(e)
        };
        // `alg: none` and unknown algorithms fail here: the header does not parse.
        let header = jsonwebtoken::decode_header(token).map_err(invalid)?;
        if !matches!(
            header.alg,
            Algorithm::RS256 | Algorithm::ES256 | Algorithm::EdDSA
        ) {
            return Err(denied(
                ErrorCode::Authentication,
                format!(
                    "{:?} tokens are not accepted: only RS256, ES256 and EdDSA keys are configured",
                    header.alg
                ),
            ));
        }
        let kid = header.kid.ok_or_else(|| {
            denied(
                ErrorCode::Authentication,
                "the session token names no key (kid)",
            )
        })?;
        self.refresh(&kid).await?;
        let state = self.state.read().expect("jwks");
        let key = state.keys.0.get(&kid).ok_or_else(|| {
            denied(
                ErrorCode::Authentication,
                "the session token is signed by a key not in the key set",
            )
        })?;
        if key.algorithm != header.alg {
            return Err(denied(
                ErrorCode::Authentication,
                "the session token's algorithm is not its key's",
            ));
        }
        let claims =
            jsonwebtoken::decode::<Value>(token, &key.decoding, &super::validation(key.algorithm))
                .map_err(invalid)?
                .claims;
        session_claims(&claims)
    }

    /// Fetches the set when it is needed: never fetched or kept too long, or `kid` unknown and
    /// no unknown `kid` caused a fetch within the interval. After a failed fetch, nothing is
    /// fetched for the interval.
    async fn refresh(&self, kid: &str) -> Result<()> {
        let Source::Fetched { url, http } = &self.source else {
            return Ok(());
        };
        let needed = |state: &State| {
            let recent =
                |at: Option<Instant>, within: Duration| at.is_some_and(|t| t.elapsed() < within);
            let interval = self.unknown_kid_interval;
            if recent(state.failed_at, interval) {
                return None;
            }
            if !recent(state.fetched_at, KEEP_FETCHED) {
                return Some(false);
            }
            let unknown = !state.keys.0.contains_key(kid);
            (unknown && !recent(state.unknown_kid_at, interval)).then_some(true)
        };
        if needed(&self.state.read().expect("jwks")).is_none() {
            return self.usable();
        }
        let _one = self.fetching.lock().await;
        let Some(for_unknown_kid) = needed(&self.state.read().expect("jwks")) else {
            return self.usable();
        };
        let fetched = fetch(http, url, self.max_bytes).await;
        let mut state = self.state.write().expect("jwks");
        let now = Instant::now();
        if for_unknown_kid {
            state.unknown_kid_at = Some(now);
        }
        match fetched {
            Ok(keys) => {
                state.keys = keys;
                state.fetched_at = Some(now);
                state.failed_at = None;
                Ok(())
            }
            // Keep the last good set; without one, nothing can be verified.
            Err(e) => {
                state.failed_at = Some(now);
                match state.fetched_at {
                    None => Err(e),
                    Some(_) => Ok(()),
                }
            }
        }
    }

    /// Fails (retryably) when no set was ever fetched.
    fn usable(&self) -> Result<()> {
        let state = self.state.read().expect("jwks");
        if matches!(self.source, Source::Fetched { .. }) && state.fetched_at.is_none() {
            let mut e = SupabashError::new(
                ErrorCode::Backend,
                "the key set could not be fetched yet; try again later",
            );
            e.retryable = true;
            return Err(e);
        }
        Ok(())
    }
}

/// Refuses a key set URL that is neither `https` nor `http` to a loopback host.
fn check_url(url: &str) -> Result<()> {
    let parsed = reqwest::Url::parse(url).ok();
    let loopback = |u: &reqwest::Url| {
        let host = u.host_str().unwrap_or_default();
        host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    match parsed {
        Some(u) if u.scheme() == "https" || (u.scheme() == "http" && loopback(&u)) => Ok(()),
        _ => Err(SupabashError::new(
            ErrorCode::InvalidArgument,
            format!("a key set URL must be https (or http to a loopback host): {url}"),
        )),
    }
}

async fn fetch(http: &reqwest::Client, url: &str, max_bytes: usize) -> Result<KeySet> {
    let unavailable = |message: String| {
        let mut e = SupabashError::new(ErrorCode::Backend, message);
        e.retryable = true;
        e
    };
    let answer =
        http.get(url).send().await.map_err(|e| {
            unavailable(format!("the key set at {url} was not fetched")).with_source(e)
        })?;
    if answer.status() != reqwest::StatusCode::OK {
        return Err(unavailable(format!(
            "the key set at {url} answered HTTP {}",
            answer.status().as_u16()
        )));
    }
    let body = read_capped(answer, max_bytes).await.map_err(|e| match e {
        ReadError::Transport(e) => {
            unavailable(format!("the key set at {url} was cut off")).with_source(e)
        }
        ReadError::TooLarge { limit } => SupabashError::quota(too_large(
            &format!("the key set at {url}"),
            limit,
            "JwksVerifier::with_max_bytes",
        )),
    })?;
    KeySet::parse(&body)
}

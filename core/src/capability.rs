//! Capability claims and the pure rules that validate them, shared by every kind of capability
//! (the Postgres capabilities verified in the database and the Storage capabilities verified
//! in process, both Ed25519). No cryptography and no I/O here: a verifier checks the
//! signature of a [`Compact`] token, then these rules.
//!
//! - **Compact form**: `base64url(header).base64url(claims).base64url(signature)`, at most
//!   [`MAX_TOKEN_BYTES`], unpadded base64url, a header of exactly `alg`, `kid` and optional
//!   `typ` (`"JWT"` or `"JWS"`), whose `alg` must be the one the verifier expects (never chosen by the token).
//! - **Claims**: [`CommonClaims`] plus the fields of one [`Binding`] (e.g. [`StorageBinding`]);
//!   any other field is refused.
//! - **Operations**: non-empty, distinct, each one of [`Operation::ALL`].
//! - **Time**: `iat` not after `now + skew`, `exp` after `iat`, `exp - iat` at most the policy's
//!   maximum lifetime, and `now` not after `exp + skew` (else [`CapabilityError::Expired`]). A
//!   nonce is kept until `exp + skew`, so it can never be replayed while the token is accepted.

use crate::ErrorCode;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt;

/// The claims schema version this code reads and writes (`ver`).
pub const SCHEMA_VERSION: u32 = 1;
/// The longest token accepted, in bytes.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// The longest `iss`, `aud`, `sub`, `origin`, `kid` or `cid`, in bytes.
pub const MAX_TEXT_BYTES: usize = 256;
/// Nonce length bounds, in characters (`[A-Za-z0-9_-]`).
pub const NONCE_CHARS: std::ops::RangeInclusive<usize> = 16..=128;
/// The longest Storage prefix, in bytes.
pub const MAX_PREFIX_BYTES: usize = 1024;
/// The longest Storage bucket name, in characters.
pub const MAX_BUCKET_CHARS: usize = 100;
/// How long after a token stops verifying its nonce is still kept (see
/// [`CommonClaims::nonce_forget_at`]), in seconds.
pub const NONCE_GRACE_SECS: i64 = 60;
/// The header `alg` of every capability: EdDSA over Ed25519. The verifier holds only a public
/// key, so nothing it stores can mint.
pub const ALGORITHM: &str = "EdDSA";
/// The actor prefix of a delegated commit. The database sets it from the grant and refuses it
/// in an actor a caller names.
pub const DELEGATED_ACTOR_PREFIX: &str = "delegated:";

/// Whether `nonce` has a capability nonce's shape: [`NONCE_CHARS`] characters of
/// `[A-Za-z0-9_-]`.
pub fn nonce_is_valid(nonce: &str) -> bool {
    NONCE_CHARS.contains(&nonce.len())
        && nonce
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// How far past the database's clock a Storage capability's nonce may be kept
/// (`supabash_spend_storage_nonce`), in seconds: the longest lifetime a verifier allows
/// (one day) plus the largest clock skew (one hour) and [`NONCE_GRACE_SECS`], rounded up to two
/// days.
pub const MAX_STORAGE_NONCE_KEEP_SECS: i64 = 2 * 86_400;

/// The most Storage capability nonces the database keeps unexpired at once; past it
/// `supabash_spend_storage_nonce` answers `SUPABASH_QUOTA_EXCEEDED` until some expire.
pub const MAX_LIVE_STORAGE_NONCES: i64 = 100_000;

/// The actor a delegated commit records for capability subject `subject`.
pub fn delegated_actor(subject: &str) -> String {
    format!("{DELEGATED_ACTOR_PREFIX}{subject}")
}

/// What a capability may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Read,
    Write,
    Commit,
    Checkpoint,
    History,
    Restore,
    Purge,
    Redact,
    Fork,
}

impl Operation {
    /// Every operation, in wire order.
    pub const ALL: [Operation; 9] = [
        Operation::Read,
        Operation::Write,
        Operation::Commit,
        Operation::Checkpoint,
        Operation::History,
        Operation::Restore,
        Operation::Purge,
        Operation::Redact,
        Operation::Fork,
    ];

    /// The wire name, e.g. `checkpoint`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Commit => "commit",
            Operation::Checkpoint => "checkpoint",
            Operation::History => "history",
            Operation::Restore => "restore",
            Operation::Purge => "purge",
            Operation::Redact => "redact",
            Operation::Fork => "fork",
        }
    }

    /// The operation with wire name `name` (exact, lower case).
    pub fn from_wire(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A valid operation set: non-empty and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationSet(BTreeSet<Operation>);

impl OperationSet {
    /// The set of `ops`; refuses an empty list and duplicates.
    pub fn new(ops: impl IntoIterator<Item = Operation>) -> Result<Self, CapabilityError> {
        let mut set = BTreeSet::new();
        for op in ops {
            if !set.insert(op) {
                return Err(Reason::Operations.into());
            }
        }
        if set.is_empty() {
            return Err(Reason::Operations.into());
        }
        Ok(OperationSet(set))
    }

    /// The set named by wire names; refuses unknown names too.
    pub fn from_wire<S: AsRef<str>>(names: &[S]) -> Result<Self, CapabilityError> {
        let ops: Option<Vec<Operation>> = names
            .iter()
            .map(|n| Operation::from_wire(n.as_ref()))
            .collect();
        Self::new(ops.ok_or(Reason::Operations)?)
    }

    /// Whether the set allows `op`.
    pub fn contains(&self, op: Operation) -> bool {
        self.0.contains(&op)
    }

    /// The operations, in wire order.
    pub fn iter(&self) -> impl Iterator<Item = Operation> + '_ {
        self.0.iter().copied()
    }

    /// The wire names, in wire order.
    pub fn to_wire(&self) -> Vec<String> {
        self.iter().map(|o| o.as_str().to_owned()).collect()
    }
}

/// Which rule refused a capability. For logs and tests; callers see only the error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Not a compact token of the expected shape, or claims that do not parse.
    Malformed,
    /// The header names another algorithm or type, or carries other fields.
    Header,
    /// No key with the token's key id.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `ver` is not [`SCHEMA_VERSION`].
    SchemaVersion,
    /// A claim that must match the verifier (issuer, audience, origin) does not.
    Issuer,
    Audience,
    Origin,
    /// A text claim is empty, too long or holds control characters.
    Text,
    /// The operation set is empty, repeats itself, names an unknown operation, or is not the
    /// one expected.
    Operations,
    /// `iat` is after `now + skew`.
    IssuedInFuture,
    /// `exp` is not after `iat`, or the lifetime exceeds the maximum.
    Lifetime,
    /// The nonce has the wrong length or characters.
    Nonce,
    /// The nonce was used before.
    Replayed,
    /// The binding (workspace, bucket, prefix, ...) is malformed or not the one expected.
    Binding,
}

/// A refused capability. Only expiry is told apart; everything else is "invalid", with no
/// detail a forger could use (the [`Reason`] is for the verifier's own logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    #[error("the capability has expired")]
    Expired,
    #[error("the capability is not valid")]
    Invalid(Reason),
}

impl From<Reason> for CapabilityError {
    fn from(r: Reason) -> Self {
        CapabilityError::Invalid(r)
    }
}

impl CapabilityError {
    /// The client error code: `EXPIRED_CAPABILITY` or `INVALID_CAPABILITY`.
    pub fn code(self) -> ErrorCode {
        match self {
            CapabilityError::Expired => ErrorCode::ExpiredCapability,
            CapabilityError::Invalid(_) => ErrorCode::InvalidCapability,
        }
    }
}

/// The header of a capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub alg: String,
    pub kid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typ: Option<String>,
}

/// A token split into its parts, signature not yet checked.
#[derive(Debug, Clone)]
pub struct Compact<'a> {
    pub header: Header,
    /// The claims object, not yet validated.
    pub claims: Map<String, Value>,
    /// `header.claims` as sent: the bytes the signature covers.
    pub signing_input: &'a str,
    pub signature: Vec<u8>,
}

fn b64_decode(part: &str) -> Result<Vec<u8>, CapabilityError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| Reason::Malformed.into())
}

/// Unpadded base64url, as the compact form uses.
pub fn b64_encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn check_text(s: &str) -> Result<(), CapabilityError> {
    if s.is_empty() || s.len() > MAX_TEXT_BYTES || s.chars().any(char::is_control) {
        return Err(Reason::Text.into());
    }
    Ok(())
}

/// Reads a token part as a JSON object whose keys are unique and whose values are not null: a
/// duplicate key may be read differently by another parser (the issuer's, say), and a null
/// where a string is optional (`typ`, `cid`) would pass for an absent one.
fn strict_object(bytes: &[u8]) -> Option<Map<String, Value>> {
    use serde::de::{Deserializer as _, Error, MapAccess, Visitor};
    struct Strict;
    impl<'de> Visitor<'de> for Strict {
        type Value = Map<String, Value>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object without duplicate keys or null values")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut map = Map::new();
            while let Some((key, value)) = access.next_entry::<String, Value>()? {
                if value.is_null() {
                    return Err(A::Error::custom(format!("{key} is null")));
                }
                if map.insert(key, value).is_some() {
                    return Err(A::Error::custom("duplicate key"));
                }
            }
            Ok(map)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let map = (&mut de).deserialize_map(Strict).ok()?;
    de.end().ok()?;
    Some(map)
}

/// Splits `token` and checks its header: `alg` must be `expected_alg` exactly. Header and
/// claims must be JSON objects without duplicate keys or null values.
pub fn parse_compact<'a>(
    token: &'a str,
    expected_alg: &str,
) -> Result<Compact<'a>, CapabilityError> {
    parse_compact_among(token, &[expected_alg])
}

/// [`parse_compact`] for a verifier that learns the expected algorithm from the key id: `alg`
/// must be one of `algs`, and the caller then requires it to be the one its key was registered
/// for.
pub fn parse_compact_among<'a>(
    token: &'a str,
    algs: &[&str],
) -> Result<Compact<'a>, CapabilityError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Reason::Malformed.into());
    }
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Reason::Malformed.into());
    };
    let header = strict_object(&b64_decode(h)?).ok_or(Reason::Header)?;
    let header: Header =
        serde_json::from_value(Value::Object(header)).map_err(|_| Reason::Header)?;
    if !algs.contains(&header.alg.as_str())
        || header
            .typ
            .as_deref()
            .is_some_and(|t| t != "JWT" && t != "JWS")
    {
        return Err(Reason::Header.into());
    }
    check_text(&header.kid).map_err(|_| Reason::Header)?;
    let claims = strict_object(&b64_decode(c)?).ok_or(Reason::Malformed)?;
    Ok(Compact {
        header,
        claims,
        signing_input: &token[..h.len() + 1 + c.len()],
        signature: b64_decode(s)?,
    })
}

/// The part of a signed token before the signature: `base64url(header).base64url(claims)`.
pub fn signing_input(header: &Header, claims: &Value) -> String {
    let header = serde_json::to_vec(header).expect("a header serialises");
    let claims = serde_json::to_vec(claims).expect("JSON serialises");
    format!("{}.{}", b64_encode(&header), b64_encode(&claims))
}

/// What a verifier requires of the claims, besides the binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub issuer: String,
    pub audience: String,
    pub origin: String,
    /// Clock skew allowed on `iat` and `exp`, in seconds.
    pub skew_secs: i64,
    /// The longest `exp - iat` accepted, in seconds.
    pub max_lifetime_secs: i64,
}

/// Claims every capability carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommonClaims {
    /// Schema version, [`SCHEMA_VERSION`].
    pub ver: u32,
    pub iss: String,
    pub aud: String,
    /// The actor the capability is for.
    pub sub: String,
    /// The deployment the capability is for.
    pub origin: String,
    /// Operation wire names.
    pub ops: Vec<String>,
    /// Issued at and expiry, Unix seconds.
    pub iat: i64,
    pub exp: i64,
    /// Single-use random value.
    pub nonce: String,
    /// Correlation id the work is recorded under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cid: Option<String>,
}

const COMMON_FIELDS: [&str; 10] = [
    "ver", "iss", "aud", "sub", "origin", "ops", "iat", "exp", "nonce", "cid",
];

impl CommonClaims {
    /// The rules that need no verifier and no clock: version, texts, nonce, operations.
    pub fn check_shape(&self) -> Result<OperationSet, CapabilityError> {
        if self.ver != SCHEMA_VERSION {
            return Err(Reason::SchemaVersion.into());
        }
        for text in [&self.iss, &self.aud, &self.sub, &self.origin] {
            check_text(text)?;
        }
        if let Some(cid) = &self.cid {
            check_text(cid)?;
        }
        if !nonce_is_valid(&self.nonce) {
            return Err(Reason::Nonce.into());
        }
        OperationSet::from_wire(&self.ops)
    }

    /// Every common rule at Unix time `now`; returns the operation set.
    pub fn validate(&self, policy: &Policy, now: i64) -> Result<OperationSet, CapabilityError> {
        let ops = self.check_shape()?;
        self.check_policy(policy, now)?;
        Ok(ops)
    }

    /// The rules that compare the claims with the verifier and the clock (issuer, audience,
    /// origin, issued-at, lifetime, expiry), whatever claims schema the token used.
    pub fn check_policy(&self, policy: &Policy, now: i64) -> Result<(), CapabilityError> {
        if self.iss != policy.issuer {
            return Err(Reason::Issuer.into());
        }
        if self.aud != policy.audience {
            return Err(Reason::Audience.into());
        }
        if self.origin != policy.origin {
            return Err(Reason::Origin.into());
        }
        if self.iat > now.saturating_add(policy.skew_secs) {
            return Err(Reason::IssuedInFuture.into());
        }
        if self.exp <= self.iat || self.exp.saturating_sub(self.iat) > policy.max_lifetime_secs {
            return Err(Reason::Lifetime.into());
        }
        if now > self.nonce_until(policy) {
            return Err(CapabilityError::Expired);
        }
        Ok(())
    }

    /// The last Unix second at which the token is accepted: `exp + skew`. A store that
    /// compares whole seconds keeps the nonce until then.
    pub fn nonce_until(&self, policy: &Policy) -> i64 {
        self.exp.saturating_add(policy.skew_secs)
    }

    /// When a store that compares a fractional clock may forget the nonce: the token verifies
    /// up to the instant `exp + skew + 1` (exclusive), and an exchange that read its clock
    /// just before that may still be writing the nonce, so [`NONCE_GRACE_SECS`] more.
    pub fn nonce_forget_at(&self, policy: &Policy) -> i64 {
        self.nonce_until(policy)
            .saturating_add(1)
            .saturating_add(NONCE_GRACE_SECS)
    }
}

/// What one kind of capability binds besides the common claims.
pub trait Binding: Serialize + DeserializeOwned {
    /// The binding's claim names.
    const FIELDS: &'static [&'static str];
    /// The binding's own shape rules.
    fn check(&self) -> Result<(), CapabilityError>;
}

/// The claims of a capability of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims<B> {
    #[serde(flatten)]
    pub common: CommonClaims,
    #[serde(flatten)]
    pub binding: B,
}

impl<B: Binding> Claims<B> {
    /// Reads claims from a token's claims object; any field not named by the common claims or
    /// the binding is refused.
    pub fn from_map(map: Map<String, Value>) -> Result<Self, CapabilityError> {
        if map
            .keys()
            .any(|k| !COMMON_FIELDS.contains(&k.as_str()) && !B::FIELDS.contains(&k.as_str()))
        {
            return Err(Reason::Malformed.into());
        }
        serde_json::from_value(Value::Object(map)).map_err(|_| Reason::Malformed.into())
    }

    /// The rules that need no verifier and no clock (what a signer checks before minting).
    pub fn check_shape(&self) -> Result<OperationSet, CapabilityError> {
        let ops = self.common.check_shape()?;
        self.binding.check()?;
        Ok(ops)
    }

    /// Every rule at Unix time `now`; returns the operation set.
    pub fn validate(&self, policy: &Policy, now: i64) -> Result<OperationSet, CapabilityError> {
        self.binding.check()?;
        self.common.validate(policy, now)
    }

    /// The claims as a JSON object.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("claims serialise")
    }
}

/// A Storage capability's binding: one bucket and one exact object prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageBinding {
    pub bucket: String,
    /// See [`check_prefix`].
    pub prefix: String,
}

impl Binding for StorageBinding {
    const FIELDS: &'static [&'static str] = &["bucket", "prefix"];

    fn check(&self) -> Result<(), CapabilityError> {
        check_bucket(&self.bucket)?;
        check_prefix(&self.prefix)
    }
}

/// Claims of an Ed25519 Storage capability.
pub type StorageClaims = Claims<StorageBinding>;

/// The `backend` claim of a Postgres capability.
pub const POSTGRES_BACKEND: &str = "postgres";

/// A Postgres capability's binding: one workspace of the `postgres` backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostgresBinding {
    /// Always [`POSTGRES_BACKEND`].
    pub backend: String,
    /// The workspace id: a UUID in canonical lowercase hyphenated form.
    pub workspace: String,
}

impl Binding for PostgresBinding {
    const FIELDS: &'static [&'static str] = &["backend", "workspace"];

    fn check(&self) -> Result<(), CapabilityError> {
        let canonical_uuid = self.workspace.len() == 36
            && self.workspace.bytes().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => b == b'-',
                _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
            });
        (self.backend == POSTGRES_BACKEND && canonical_uuid)
            .then_some(())
            .ok_or(Reason::Binding.into())
    }
}

/// Claims of a Postgres capability (verified inside the database).
pub type PostgresClaims = Claims<PostgresBinding>;

/// The algorithm a Postgres capability verifier is registered for. Ed25519 is the default and
/// the recommendation (the database keeps only a public key); HS256 is the TypeScript
/// supabash-fs package's format (a shared secret the database derives from a server key file,
/// docs/capabilities.md "HS256").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    EdDSA,
    Hs256,
}

impl Algorithm {
    /// Every algorithm, in wire order.
    pub const ALL: [Algorithm; 2] = [Algorithm::EdDSA, Algorithm::Hs256];

    /// The header `alg`: `EdDSA` or `HS256`.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::EdDSA => ALGORITHM,
            Algorithm::Hs256 => "HS256",
        }
    }

    /// The algorithm whose header `alg` is `name` (exact).
    pub fn from_wire(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// The claims schema version (`sv`) of the seed's HS256 Postgres capability.
pub const SEED_SCHEMA_VERSION: u32 = 3;
/// The longest `sub` of a seed capability, in bytes (`delegated:` plus it fits an actor).
pub const SEED_MAX_SUBJECT_BYTES: usize = 1014;
/// The longest `nonce` or `corr` of a seed capability, in bytes.
pub const SEED_MAX_LABEL_BYTES: usize = 1024;

/// The claims of a Postgres capability as the TypeScript supabash-fs package mints them
/// (`createPostgresDelegatedCapability`, schema version 3, HS256): `aud`, `backend`, `corr`,
/// `exp`, `iat`, `iss`, `nonce`, `ops`, `origin`, `sub`, `sv`, `workspace`, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedPostgresClaims {
    pub aud: String,
    /// Always [`POSTGRES_BACKEND`].
    pub backend: String,
    /// The correlation id (required here, unlike `cid`).
    pub corr: String,
    pub exp: i64,
    pub iat: i64,
    pub iss: String,
    /// Any non-empty text up to [`SEED_MAX_LABEL_BYTES`] (the package's own rule).
    pub nonce: String,
    pub ops: Vec<String>,
    pub origin: String,
    pub sub: String,
    /// [`SEED_SCHEMA_VERSION`].
    pub sv: u32,
    pub workspace: String,
}

impl SeedPostgresClaims {
    /// Reads the claims object of a token.
    pub fn from_map(map: Map<String, Value>) -> Result<Self, CapabilityError> {
        serde_json::from_value(Value::Object(map)).map_err(|_| Reason::Malformed.into())
    }

    /// The package's shape rules (what needs no verifier and no clock), then the same verifier
    /// and clock rules as every Postgres capability ([`CommonClaims::check_policy`]). Answers
    /// the claims in this crate's form ([`SeedPostgresClaims::into_claims`]) and the operation
    /// set.
    pub fn validate(
        self,
        policy: &Policy,
        now: i64,
    ) -> Result<(PostgresClaims, OperationSet), CapabilityError> {
        let ops = self.check_shape()?;
        let claims = self.into_claims();
        claims.common.check_policy(policy, now)?;
        Ok((claims, ops))
    }

    /// The rules that need no verifier and no clock: `sv`, texts, nonce, operations, binding.
    pub fn check_shape(&self) -> Result<OperationSet, CapabilityError> {
        if self.sv != SEED_SCHEMA_VERSION {
            return Err(Reason::SchemaVersion.into());
        }
        for text in [&self.iss, &self.aud, &self.origin] {
            check_text(text)?;
        }
        let label_ok = |s: &str, max: usize| {
            !s.trim().is_empty() && s.len() <= max && !s.chars().any(char::is_control)
        };
        if !label_ok(&self.sub, SEED_MAX_SUBJECT_BYTES)
            || !label_ok(&self.corr, SEED_MAX_LABEL_BYTES)
        {
            return Err(Reason::Text.into());
        }
        if !label_ok(&self.nonce, SEED_MAX_LABEL_BYTES) {
            return Err(Reason::Nonce.into());
        }
        PostgresBinding {
            backend: self.backend.clone(),
            workspace: self.workspace.clone(),
        }
        .check()?;
        OperationSet::from_wire(&self.ops)
    }

    /// The same claims in this crate's form: `ver` [`SEED_SCHEMA_VERSION`], `cid` from `corr`.
    pub fn into_claims(self) -> PostgresClaims {
        PostgresClaims {
            common: CommonClaims {
                ver: SEED_SCHEMA_VERSION,
                iss: self.iss,
                aud: self.aud,
                sub: self.sub,
                origin: self.origin,
                ops: self.ops,
                iat: self.iat,
                exp: self.exp,
                nonce: self.nonce,
                cid: Some(self.corr),
            },
            binding: PostgresBinding {
                backend: self.backend,
                workspace: self.workspace,
            },
        }
    }
}

/// A bucket name: 1 to [`MAX_BUCKET_CHARS`] of `[A-Za-z0-9._-]`, not `.` or `..`.
pub fn check_bucket(bucket: &str) -> Result<(), CapabilityError> {
    let ok = (1..=MAX_BUCKET_CHARS).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && bucket != "."
        && bucket != "..";
    ok.then_some(()).ok_or(Reason::Binding.into())
}

/// A Storage object prefix: at most [`MAX_PREFIX_BYTES`], no leading `/`, ending in `/`, made
/// of non-empty segments other than `.` and `..`, without `\` or control characters. E.g.
/// `users/42/reports/`.
pub fn check_prefix(prefix: &str) -> Result<(), CapabilityError> {
    let Some(inner) = prefix.strip_suffix('/') else {
        return Err(Reason::Binding.into());
    };
    let ok = prefix.len() <= MAX_PREFIX_BYTES
        && !prefix.chars().any(|c| c == '\\' || c.is_control())
        && inner
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..");
    ok.then_some(()).ok_or(Reason::Binding.into())
}

/// Whether object `key` lies under `prefix` (a valid prefix; `key` has no `.`/`..` segments).
pub fn prefix_covers(prefix: &str, key: &str) -> bool {
    check_prefix(prefix).is_ok()
        && key.len() > prefix.len()
        && key.starts_with(prefix)
        && !key.chars().any(|c| c == '\\' || c.is_control())
        && key
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

#[cfg(test)]
mod tests;

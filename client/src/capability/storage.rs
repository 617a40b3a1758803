//! Ed25519 capabilities for Storage prefixes: a trusted issuer mints a compact JWS
//! (`alg: EdDSA`, its key id in `kid`) whose claims bind issuer, audience, subject, origin,
//! bucket, exact prefix, operations, iat, exp, nonce, correlation id and schema version
//! (`supabash_core::capability::StorageClaims`); a Storage host verifies it in process against
//! the issuers' public keys by key id.
//!
//! Verification is two steps, so the nonce is spent only on success:
//! [`StorageVerifier::verify`] checks the header, key, signature (strict Ed25519), every claim
//! rule and the requested scope, and returns a [`VerifiedStorageCapability`]; its
//! [`open`](VerifiedStorageCapability::open) runs the host's open and consumes the nonce only
//! once that succeeded. A replayed nonce then fails and what was opened is dropped.

use super::nonce::NonceStore;
use super::{refused, unix_now, KeySigner};
use crate::error::{Result, SupabashError};
use ed25519_dalek::{Signature, VerifyingKey};
use std::collections::HashMap;
use std::future::Future;
use supabash_core::capability::{
    self, CapabilityError, OperationSet, Policy, Reason, StorageClaims,
};
use supabash_core::limits::{
    DEFAULT_CAPABILITY_LIFETIME_SECS, DEFAULT_CAPABILITY_SKEW_SECS, MAX_CAPABILITY_LIFETIME_SECS,
    MAX_CAPABILITY_SKEW_SECS,
};
use supabash_core::ErrorCode;

/// The header `alg` of a Storage capability.
pub const ALGORITHM: &str = capability::ALGORITHM;

/// What the caller asks a capability for: a bucket, an exact prefix and an exact set of
/// operations (a capability for more, fewer or other operations is refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageScope {
    pub bucket: String,
    pub prefix: String,
    pub operations: OperationSet,
}

/// The policy of a Storage verifier for tokens from `issuer` to `audience` at `origin`, with
/// the defaults the database's verifier has too: a longest lifetime of
/// [`DEFAULT_CAPABILITY_LIFETIME_SECS`] (900 s) and a clock skew of
/// [`DEFAULT_CAPABILITY_SKEW_SECS`] (60 s).
pub fn storage_policy(issuer: &str, audience: &str, origin: &str) -> Policy {
    Policy {
        issuer: issuer.to_owned(),
        audience: audience.to_owned(),
        origin: origin.to_owned(),
        skew_secs: DEFAULT_CAPABILITY_SKEW_SECS,
        max_lifetime_secs: DEFAULT_CAPABILITY_LIFETIME_SECS,
    }
}

/// Refuses a policy that makes no sense (`INVALID_ARGUMENT`): a longest lifetime outside 1 to
/// [`MAX_CAPABILITY_LIFETIME_SECS`] (the rule of every limit, [`crate::limits::check_setting`]),
/// a clock skew outside 0 to [`MAX_CAPABILITY_SKEW_SECS`], or an empty issuer, audience or
/// origin.
pub fn check_policy(policy: &Policy) -> Result<()> {
    crate::limits::check_setting(
        "max_lifetime_secs",
        usize::try_from(policy.max_lifetime_secs).unwrap_or(0),
        MAX_CAPABILITY_LIFETIME_SECS as usize,
    )?;
    let invalid = |m: String| SupabashError::new(ErrorCode::InvalidArgument, m);
    if !(0..=MAX_CAPABILITY_SKEW_SECS).contains(&policy.skew_secs) {
        return Err(invalid(format!(
            "skew_secs must be from 0 to {MAX_CAPABILITY_SKEW_SECS}; it is {}",
            policy.skew_secs
        )));
    }
    for (name, text) in [
        ("issuer", &policy.issuer),
        ("audience", &policy.audience),
        ("origin", &policy.origin),
    ] {
        if text.is_empty() {
            return Err(invalid(format!("the policy's {name} must not be empty")));
        }
    }
    Ok(())
}

/// Verifies Storage capabilities against public keys by key id, under one [`Policy`]
/// ([`storage_policy`] gives the defaults; a policy [`check_policy`] refuses makes every
/// verification fail with `INVALID_ARGUMENT`).
#[derive(Debug, Clone)]
pub struct StorageVerifier {
    policy: Policy,
    keys: HashMap<String, VerifyingKey>,
}

impl StorageVerifier {
    /// A verifier with no keys yet.
    pub fn new(policy: Policy) -> Self {
        StorageVerifier {
            policy,
            keys: HashMap::new(),
        }
    }

    /// Trusts `public_key` (32 bytes) for tokens whose `kid` is `kid`; a second key id gives a
    /// rotation overlap. Refuses a malformed or weak (small-order) key.
    pub fn with_key(mut self, kid: &str, public_key: &[u8; 32]) -> Result<Self> {
        let key = VerifyingKey::from_bytes(public_key)
            .ok()
            .filter(|k| !k.is_weak())
            .ok_or_else(|| {
                SupabashError::new(
                    ErrorCode::InvalidArgument,
                    "not a usable Ed25519 public key",
                )
            })?;
        self.keys.insert(kid.to_owned(), key);
        Ok(self)
    }

    /// Verifies `token` for `scope` now. See [`Self::verify_at`].
    pub fn verify(&self, token: &str, scope: &StorageScope) -> Result<VerifiedStorageCapability> {
        self.verify_at(token, scope, unix_now())
    }

    /// Verifies `token` for `scope` at Unix time `now`: header (`alg` EdDSA, a known `kid`),
    /// the signature (strict), every claim rule, then bucket, prefix and operations exactly as
    /// asked. The nonce is not consumed here.
    pub fn verify_at(
        &self,
        token: &str,
        scope: &StorageScope,
        now: i64,
    ) -> Result<VerifiedStorageCapability> {
        check_policy(&self.policy)?;
        self.check(token, scope, now).map_err(refused)
    }

    fn check(
        &self,
        token: &str,
        scope: &StorageScope,
        now: i64,
    ) -> std::result::Result<VerifiedStorageCapability, CapabilityError> {
        let compact = capability::parse_compact(token, ALGORITHM)?;
        let key = self
            .keys
            .get(&compact.header.kid)
            .ok_or(Reason::UnknownKey)?;
        let signature = Signature::from_slice(&compact.signature).map_err(|_| Reason::Signature)?;
        key.verify_strict(compact.signing_input.as_bytes(), &signature)
            .map_err(|_| Reason::Signature)?;
        let claims = StorageClaims::from_map(compact.claims)?;
        let operations = claims.validate(&self.policy, now)?;
        if claims.binding.bucket != scope.bucket || claims.binding.prefix != scope.prefix {
            return Err(Reason::Binding.into());
        }
        if operations != scope.operations {
            return Err(Reason::Operations.into());
        }
        Ok(VerifiedStorageCapability {
            nonce_until: claims.common.nonce_until(&self.policy),
            claims,
            operations,
        })
    }
}

/// A capability whose every check passed but whose nonce is not spent yet. Spend it with
/// [`Self::open`]; dropping it leaves the nonce unused.
#[derive(Debug)]
#[must_use = "the capability is only used through `open`"]
pub struct VerifiedStorageCapability {
    claims: StorageClaims,
    operations: OperationSet,
    nonce_until: i64,
}

/// What [`VerifiedStorageCapability::open`] returns: the host's opened value and the
/// capability's claims.
#[derive(Debug)]
pub struct Opened<T> {
    pub value: T,
    pub claims: StorageClaims,
    pub operations: OperationSet,
}

impl VerifiedStorageCapability {
    /// The verified claims.
    pub fn claims(&self) -> &StorageClaims {
        &self.claims
    }

    /// The verified operation set.
    pub fn operations(&self) -> &OperationSet {
        &self.operations
    }

    /// Runs the host's `open` with the verified claims, then consumes the nonce in `nonces`.
    /// A failed open leaves the nonce unused (its error is returned); a nonce already used
    /// fails with `INVALID_CAPABILITY` and the opened value is dropped.
    pub async fn open<T, F, Fut>(self, nonces: &dyn NonceStore, open: F) -> Result<Opened<T>>
    where
        F: FnOnce(&StorageClaims) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let value = open(&self.claims).await?;
        if !nonces
            .consume(&self.claims.common.nonce, self.nonce_until)
            .await?
        {
            return Err(refused(Reason::Replayed.into()));
        }
        Ok(Opened {
            value,
            claims: self.claims,
            operations: self.operations,
        })
    }
}

/// Mints Storage capabilities for a trusted issuer.
pub struct StorageSigner {
    signer: KeySigner,
}

impl std::fmt::Debug for StorageSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageSigner")
            .field("kid", &self.signer.kid())
            .finish_non_exhaustive()
    }
}

impl StorageSigner {
    /// A signer with key id `kid` and the Ed25519 private key `seed` (32 bytes; keep it secret).
    pub fn from_seed(kid: &str, seed: &[u8; 32]) -> Self {
        StorageSigner {
            signer: KeySigner::new(kid, seed),
        }
    }

    /// The public key verifiers register under this signer's key id.
    pub fn public_key(&self) -> [u8; 32] {
        self.signer.public_key().to_bytes()
    }

    /// Signs `claims` after checking the rules that need no verifier or clock (schema version,
    /// texts, nonce, operations, bucket, prefix).
    pub fn mint(&self, claims: &StorageClaims) -> Result<String> {
        claims.check_shape().map_err(|e| {
            SupabashError::new(
                ErrorCode::InvalidArgument,
                format!("these claims cannot be minted: {:?}", reason_of(e)),
            )
        })?;
        Ok(self.signer.sign(&claims.to_json()))
    }
}

fn reason_of(e: CapabilityError) -> Option<Reason> {
    match e {
        CapabilityError::Invalid(r) => Some(r),
        CapabilityError::Expired => None,
    }
}

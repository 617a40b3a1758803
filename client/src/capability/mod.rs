//! Capabilities, all Ed25519-signed: permissions for one Storage bucket and exact prefix,
//! verified in process (module `storage`, cargo feature `storage`) with the single-use nonce
//! store they need (module `nonce`: in memory, or in the database across processes); and permissions for one Postgres workspace, minted here and verified
//! inside the database, which holds only the public key ([`postgres`]). The claim rules are
//! `supabash_core::capability`'s.

#[cfg(feature = "storage")]
pub mod nonce;
pub mod postgres;
#[cfg(feature = "storage")]
pub mod storage;

#[cfg(feature = "storage")]
pub use nonce::{DatabaseNonceStore, MemoryNonceStore, NonceStore};
pub use postgres::PostgresSigner;
#[cfg(feature = "storage")]
pub use storage::{
    check_policy, storage_policy, Opened, StorageScope, StorageSigner, StorageVerifier,
    VerifiedStorageCapability,
};

use crate::error::SupabashError;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};
use supabash_core::capability::{self, CapabilityError, Header};

/// An Ed25519 private key and its key id: what signs both kinds of capability, as a compact
/// JWS with the header `{"alg":"EdDSA","kid":<key id>,"typ":"JWT"}`.
pub(crate) struct KeySigner {
    kid: String,
    key: SigningKey,
}

impl KeySigner {
    /// A signer with key id `kid` and the Ed25519 private key `seed`.
    pub(crate) fn new(kid: &str, seed: &[u8; 32]) -> Self {
        KeySigner {
            kid: kid.to_owned(),
            key: SigningKey::from_bytes(seed),
        }
    }

    /// The key id tokens carry in `kid`.
    pub(crate) fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key verifiers check the signatures with.
    pub(crate) fn public_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The compact JWS of `claims` (already checked by the caller).
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let header = Header {
            alg: capability::ALGORITHM.to_owned(),
            kid: self.kid.clone(),
            typ: Some("JWT".to_owned()),
        };
        let input = capability::signing_input(&header, claims);
        let signature = self.key.sign(input.as_bytes());
        format!("{input}.{}", capability::b64_encode(&signature.to_bytes()))
    }
}

/// The client error for a refused capability: `EXPIRED_CAPABILITY` or `INVALID_CAPABILITY`
/// with a fixed message; the rule that refused it is only in the source, for the host's logs.
pub(crate) fn refused(e: CapabilityError) -> SupabashError {
    SupabashError::new(e.code(), e.to_string()).with_source(e)
}

/// A fresh random nonce (a v4 UUID: 122 random bits, 32 hex characters).
pub fn new_nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The current Unix time in seconds.
pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(all(test, feature = "storage"))]
mod tests;

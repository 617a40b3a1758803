//! Capabilities, all Ed25519-signed: permissions for one Storage bucket and exact prefix,
//! verified in process ([`storage`], cargo feature `storage`) with the single-use nonce store
//! they need ([`nonce`]); and permissions for one Postgres workspace, minted here and verified
//! inside the database, which holds only the public key ([`postgres`]). The claim rules are
//! `supabash_core::capability`'s.

#[cfg(feature = "storage")]
pub mod nonce;
pub mod postgres;
#[cfg(feature = "storage")]
pub mod storage;

#[cfg(feature = "storage")]
pub use nonce::{MemoryNonceStore, NonceStore};
pub use postgres::PostgresSigner;
#[cfg(feature = "storage")]
pub use storage::{
    Opened, StorageScope, StorageSigner, StorageVerifier, VerifiedStorageCapability,
};

use crate::error::SupabashError;
use std::time::{SystemTime, UNIX_EPOCH};
use supabash_core::capability::CapabilityError;

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

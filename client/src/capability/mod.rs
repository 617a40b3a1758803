//! Capabilities verified in process (cargo feature `storage-capability`): Ed25519-signed
//! permissions for one Storage bucket and exact prefix ([`storage`]), and the single-use nonce
//! store they need ([`nonce`]). The claim rules are `supabash_core::capability`'s.

pub mod nonce;
pub mod storage;

pub use nonce::{MemoryNonceStore, NonceStore};
pub use storage::{
    new_nonce, Opened, StorageScope, StorageSigner, StorageVerifier, VerifiedStorageCapability,
};

use crate::error::SupabashError;
use supabash_core::capability::CapabilityError;

/// The client error for a refused capability: `EXPIRED_CAPABILITY` or `INVALID_CAPABILITY`
/// with a fixed message; the rule that refused it is only in the source, for the host's logs.
pub(crate) fn refused(e: CapabilityError) -> SupabashError {
    SupabashError::new(e.code(), e.to_string()).with_source(e)
}

#[cfg(test)]
mod tests;

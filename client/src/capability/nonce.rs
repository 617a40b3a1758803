//! Single-use nonces: a capability's nonce is consumed once and remembered until the token
//! could no longer be accepted (`exp + skew`), so it cannot be replayed within that window.
//! [`MemoryNonceStore`] remembers them in one process; [`DatabaseNonceStore`] in the database,
//! for every host process that shares it.

use super::unix_now;
use crate::error::{Result, SupabashError};
use crate::transport::{self, Transport};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use supabash_core::capability::NONCE_GRACE_SECS;
use supabash_core::rpc::requests::SpendStorageNonce;
use supabash_core::ErrorCode;

/// Where used nonces are remembered. Share one store among every verifier that accepts the
/// same tokens (across processes, a store backed by a database or a cache).
#[async_trait::async_trait]
pub trait NonceStore: Send + Sync {
    /// Marks `nonce` used until `until` (Unix seconds). `true` when it was unused and is now
    /// consumed; `false` when it had been used already. Must be atomic: of two concurrent
    /// calls with one nonce, at most one returns `true`.
    async fn consume(&self, nonce: &str, until: i64) -> Result<bool>;
}

/// A [`NonceStore`] in this process's memory; entries are dropped once their time has passed.
#[derive(Debug, Default)]
pub struct MemoryNonceStore {
    used: Mutex<HashMap<String, i64>>,
}

impl MemoryNonceStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many nonces are remembered.
    pub fn len(&self) -> usize {
        self.used.lock().expect("nonces").len()
    }

    /// Whether no nonce is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait::async_trait]
impl NonceStore for MemoryNonceStore {
    async fn consume(&self, nonce: &str, until: i64) -> Result<bool> {
        let now = unix_now();
        let mut used = self.used.lock().expect("nonces");
        used.retain(|_, kept_until| *kept_until >= now);
        if used.contains_key(nonce) {
            return Ok(false);
        }
        used.insert(nonce.to_owned(), until);
        Ok(true)
    }
}

/// A [`NonceStore`] in the database (`supabash_spend_storage_nonce`, docs/storage.md): every
/// host process that verifies Storage capabilities against the same database shares it, so a
/// capability is accepted once across all of them. The transport must call as the host's
/// `service_role` (a direct Postgres connection with service-role claims, or PostgREST with
/// the service key); the database refuses anyone else. A nonce is kept
/// [`NONCE_GRACE_SECS`] past the token's last acceptable second, so a database clock a little
/// ahead of the host's does not forget it early.
pub struct DatabaseNonceStore {
    transport: Arc<dyn Transport>,
}

impl DatabaseNonceStore {
    /// A store spending nonces through `service` (a service-role transport).
    pub fn new(service: Arc<dyn Transport>) -> Self {
        DatabaseNonceStore { transport: service }
    }
}

impl std::fmt::Debug for DatabaseNonceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseNonceStore").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl NonceStore for DatabaseNonceStore {
    async fn consume(&self, nonce: &str, until: i64) -> Result<bool> {
        let request = SpendStorageNonce {
            nonce: nonce.to_owned(),
            keep_until: until.saturating_add(1).saturating_add(NONCE_GRACE_SECS),
        };
        request
            .check_fields()
            .map_err(|why| SupabashError::new(ErrorCode::InvalidArgument, why))?;
        Ok(transport::call(self.transport.as_ref(), &request)
            .await?
            .consumed)
    }
}

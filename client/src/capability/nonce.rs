//! Single-use nonces: a capability's nonce is consumed once and remembered until the token
//! could no longer be accepted (`exp + skew`), so it cannot be replayed within that window.

use super::unix_now;
use crate::error::Result;
use std::collections::HashMap;
use std::sync::Mutex;

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

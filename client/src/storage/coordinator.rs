//! The optional commit coordinator: a lease per scope (bucket and prefix) that serialises
//! commits, recovery at open and recovery at discard across hosts. A commit checks the lease
//! before its first write, before its complete record and before the head; a lost lease stops
//! it with `COMMIT_COORDINATION`.
//!
//! [`PostgresCoordinator`] holds a session-level advisory lock on a connection of its own:
//! the lease is lost when that connection is.

use crate::error::{Result, SupabashError};
use std::time::Duration;
use supabash_core::ErrorCode;
use tokio_postgres::{Client, NoTls};

/// A held lease.
#[async_trait::async_trait]
pub trait Lease: Send + Sync {
    /// True once the lease can no longer be relied on.
    async fn lost(&self) -> bool;
    /// Gives the lease up (failures are ignored: a coordinator must expire lost leases).
    async fn release(&self);
}

/// Hands out one lease per scope at a time.
#[async_trait::async_trait]
pub trait CommitCoordinator: Send + Sync {
    /// Waits for the lease of `scope`; `COMMIT_COORDINATION` (retryable) when it cannot.
    async fn acquire(&self, scope: &str, transaction_id: &str) -> Result<Box<dyn Lease>>;
}

fn coordination(message: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::CommitCoordination, message)
}

/// Fails with `COMMIT_COORDINATION` when `lease` is lost.
pub(crate) async fn check(lease: Option<&dyn Lease>) -> Result<()> {
    match lease {
        Some(l) if l.lost().await => Err(coordination(
            "the commit lease was lost; nothing more is written",
        )),
        _ => Ok(()),
    }
}

/// Leases as PostgreSQL session advisory locks (`pg_try_advisory_lock` on
/// `hashtextextended('supabash-storage:' || scope, 0)`), one connection per lease.
#[derive(Debug, Clone)]
pub struct PostgresCoordinator {
    dsn: String,
    wait: Duration,
}

impl PostgresCoordinator {
    /// Leases through the database at `dsn` (libpq form, no TLS), waiting at most `wait`.
    pub fn new(dsn: &str, wait: Duration) -> Self {
        PostgresCoordinator {
            dsn: dsn.to_owned(),
            wait,
        }
    }
}

const LOCK_KEY: &str = "hashtextextended('supabash-storage:' || $1, 0)";

struct PostgresLease {
    client: Client,
    scope: String,
}

#[async_trait::async_trait]
impl Lease for PostgresLease {
    async fn lost(&self) -> bool {
        self.client.simple_query("SELECT 1").await.is_err()
    }

    async fn release(&self) {
        let _ = self
            .client
            .execute(
                &format!("SELECT pg_advisory_unlock({LOCK_KEY})"),
                &[&self.scope],
            )
            .await;
    }
}

#[async_trait::async_trait]
impl CommitCoordinator for PostgresCoordinator {
    async fn acquire(&self, scope: &str, _transaction_id: &str) -> Result<Box<dyn Lease>> {
        let (client, conn) = tokio_postgres::connect(&self.dsn, NoTls)
            .await
            .map_err(|e| coordination(format!("cannot reach the coordinator: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let deadline = tokio::time::Instant::now() + self.wait;
        let sql = format!("SELECT pg_try_advisory_lock({LOCK_KEY})");
        loop {
            let got: bool = client
                .query_one(&sql, &[&scope])
                .await
                .map_err(|e| coordination(format!("coordinator query failed: {e}")))?
                .get(0);
            if got {
                return Ok(Box::new(PostgresLease {
                    client,
                    scope: scope.to_owned(),
                }));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(coordination("another host holds the commit lease"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

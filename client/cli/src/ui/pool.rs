//! The viewer's reads over a few connections at once. A direct connection runs one call at a
//! time, so the page's first requests (the workspace's entry, its lease, a page of history)
//! would queue behind each other on one; [`ReadPool`] hands each call a free connection of a
//! small fixed set, all made at start as the same identity, and waits only when all are busy.

use std::sync::{Arc, Mutex};
use supabash::transport::{Listening, RpcError, Transport};
use tokio::sync::Semaphore;

/// How many direct connections the viewer reads over.
pub const DIRECT_CONNECTIONS: usize = 4;

/// Calls spread over `members` (each one call at a time), the most recently freed first.
pub struct ReadPool {
    members: Vec<Arc<dyn Transport>>,
    free: Mutex<Vec<usize>>,
    permits: Semaphore,
}

/// A member lent to one call: given back when dropped (also when the call is cancelled).
struct Lent<'a> {
    pool: &'a ReadPool,
    index: usize,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.pool.free_list().push(self.index);
    }
}

impl ReadPool {
    /// A pool over `members` (at least one).
    pub fn new(members: Vec<Arc<dyn Transport>>) -> ReadPool {
        assert!(!members.is_empty(), "a pool of no connection");
        ReadPool {
            free: Mutex::new((0..members.len()).rev().collect()),
            permits: Semaphore::new(members.len()),
            members,
        }
    }

    /// How many connections it holds.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    fn free_list(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free member: waits while every one is busy.
    async fn lend(&self) -> (tokio::sync::SemaphorePermit<'_>, Lent<'_>) {
        // The semaphore is never closed.
        let permit = self.permits.acquire().await.expect("open semaphore");
        let index = self
            .free_list()
            .pop()
            .expect("a permit means a free member");
        (permit, Lent { pool: self, index })
    }
}

#[async_trait::async_trait]
impl Transport for ReadPool {
    async fn call(
        &self,
        rpc: &str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, RpcError> {
        // `lent` is dropped (given back) before `permit`, so a woken waiter finds it free.
        let (_permit, lent) = self.lend().await;
        self.members[lent.index].call(rpc, args).await
    }

    async fn call_text(
        &self,
        rpc: &str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, RpcError> {
        let (_permit, lent) = self.lend().await;
        self.members[lent.index].call_text(rpc, args).await
    }

    async fn call_with_grant(
        &self,
        rpc: &str,
        args: serde_json::Map<String, serde_json::Value>,
        grant: &str,
    ) -> Result<serde_json::Value, RpcError> {
        let (_permit, lent) = self.lend().await;
        self.members[lent.index]
            .call_with_grant(rpc, args, grant)
            .await
    }

    /// A `LISTEN` opens a connection of its own: no member is held for it.
    async fn listen(&self, channel: &str) -> Result<Option<Listening>, RpcError> {
        self.members[0].listen(channel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// One call at a time (checked), counting the calls running on all members at once.
    #[derive(Default)]
    struct Slow {
        running: AtomicUsize,
        at_once: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    }

    #[async_trait::async_trait]
    impl Transport for Slow {
        async fn call(&self, _rpc: &str, _args: Map<String, Value>) -> Result<Value, RpcError> {
            let mine = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            assert_eq!(mine, 1, "a member ran two calls at once");
            let all = self.at_once.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(all, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            self.at_once.fetch_sub(1, Ordering::SeqCst);
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(Value::Null)
        }
    }

    #[tokio::test]
    async fn calls_run_side_by_side_one_per_member_and_wait_when_all_are_busy() {
        let (at_once, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let members: Vec<Arc<dyn Transport>> = (0..3)
            .map(|_| {
                Arc::new(Slow {
                    running: AtomicUsize::new(0),
                    at_once: at_once.clone(),
                    most: most.clone(),
                }) as Arc<dyn Transport>
            })
            .collect();
        let pool = ReadPool::new(members);
        let started = std::time::Instant::now();
        let call = || pool.call("x", Map::new());
        let answers = tokio::join!(call(), call(), call(), call(), call(), call());
        for r in [
            answers.0, answers.1, answers.2, answers.3, answers.4, answers.5,
        ] {
            r.unwrap();
        }
        let took = started.elapsed();
        // Six calls of 50 ms on three members: two rounds (not six), three at once at most.
        assert!(took >= Duration::from_millis(100), "{took:?}");
        assert!(took < Duration::from_millis(290), "{took:?}");
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert_eq!(pool.free_list().len(), 3, "every member given back");
    }
}

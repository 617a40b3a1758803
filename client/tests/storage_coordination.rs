//! Two hosts committing at once to one Storage prefix, with and without a commit coordinator
//! (PostgreSQL advisory-lock leases on the test cluster), and a lease lost mid-commit.
#![cfg(feature = "storage")]

mod storage_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::{
    CommitCoordinator, Lease, PostgresCoordinator, StorageApi, StorageConfig, StorageWorkspace,
};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits, Result};
use supabash_tests::storage_server::StorageServer;

fn coordinated(server: &StorageServer, wait: Duration) -> StorageConfig {
    let mut c = config(server);
    c.coordinator = Some(Arc::new(PostgresCoordinator::new(
        &cluster().dsn("postgres"),
        wait,
    )));
    c
}

async fn open_cfg(c: &StorageConfig, s: &Session) -> StorageWorkspace {
    StorageWorkspace::open_for_session(c, s, Limits::default())
        .await
        .unwrap()
}

async fn records(server: &StorageServer, s: &Session) -> usize {
    StorageApi::new(
        &server.url,
        BUCKET,
        &format!("{}/", s.user_id),
        &StorageServer::service_key(),
        None,
    )
    .unwrap()
    .list(&format!("{}/.supabash/revisions/", s.user_id))
    .await
    .unwrap()
    .len()
}

#[tokio::test]
async fn a_coordinator_serialises_two_hosts() {
    let server = server().await;
    let session = new_session();
    let cfg = coordinated(&server, Duration::from_secs(10));
    let a = open_cfg(&cfg, &session).await;
    let b = open_cfg(&cfg, &session).await;
    a.fs().write("/a.md", "from a").await.unwrap();
    b.fs().write("/b.md", "from b").await.unwrap();
    let (ra, rb) = tokio::join!(
        a.commit(CommitOptions::new("a")),
        b.commit(CommitOptions::new("b"))
    );
    let (ra, rb) = (ra.unwrap().receipt, rb.unwrap().receipt);
    let (first, second) = if ra.position == 1 { (ra, rb) } else { (rb, ra) };
    assert_eq!(second.position, 2);
    assert_eq!(
        second.parent_revision.as_deref(),
        Some(first.revision.as_str())
    );
    let reopened = open_cfg(&cfg, &session).await;
    assert_eq!(reopened.fs().read_text("/a.md").await.unwrap(), "from a");
    assert_eq!(reopened.fs().read_text("/b.md").await.unwrap(), "from b");
    assert_eq!(records(&server, &session).await, 2);
    assert_eq!(reopened.history(None, None).await.unwrap().records.len(), 2);
}

/// Known failure, kept as the specification of the fix (issue 6 stays open): without a
/// coordinator, one host's recovery can roll back another host's commit while it is writing
/// its records, deleting a revision record the other host then names in `head.json`; the
/// next open fails with HISTORY_CORRUPTION. Fix: recovery resolves a foreign intent only under
/// a lease or once it is stale, and never deletes a record a head could still name.
#[tokio::test]
#[ignore = "known race without a coordinator (docs/storage.md, Limits); fails intermittently"]
async fn without_a_coordinator_the_race_is_bounded_to_whole_revisions() {
    let server = server().await;
    let session = new_session();
    let a = open(&server, &session).await;
    let b = open(&server, &session).await;
    a.fs().write("/a.md", "from a").await.unwrap();
    b.fs().write("/b.md", "from b").await.unwrap();
    let (ra, rb) = tokio::join!(
        a.commit(CommitOptions::new("a")),
        b.commit(CommitOptions::new("b"))
    );
    assert!(ra.is_ok() || rb.is_ok(), "{ra:?} {rb:?}");
    // Whatever won, a reopen reads one whole published revision and no intent is left.
    let reopened = open(&server, &session).await;
    let head = reopened.base_revision().unwrap();
    let published = reopened.read_revision(&head).await.unwrap();
    let tree = dump(reopened.fs()).await;
    assert_eq!(
        tree.keys().collect::<Vec<_>>(),
        published.entries.keys().collect::<Vec<_>>()
    );
    assert!(tree.contains_key("/a.md") || tree.contains_key("/b.md"));
    assert!((1..=2).contains(&records(&server, &session).await));
}

#[tokio::test]
async fn a_held_lease_makes_a_commit_wait_then_give_up() {
    let server = server().await;
    let session = new_session();
    let cfg = coordinated(&server, Duration::from_millis(200));
    let ws = open_cfg(&cfg, &session).await;
    let holder = PostgresCoordinator::new(&cluster().dsn("postgres"), Duration::from_secs(5));
    let lease = holder.acquire(&ws.scope(), "other-host").await.unwrap();
    ws.fs().write("/x", "1").await.unwrap();
    let e = ws.commit(CommitOptions::new("t")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::CommitCoordination);
    assert!(e.retryable && !e.outcome_unknown);
    lease.release().await;
    ws.commit(CommitOptions::new("t")).await.unwrap();
    assert_eq!(records(&server, &session).await, 1);
}

/// A coordinator whose lease is lost after `checks` calls of `lost`.
struct Fragile {
    checks: usize,
}

struct FragileLease {
    left: AtomicUsize,
}

#[async_trait::async_trait]
impl Lease for FragileLease {
    async fn lost(&self) -> bool {
        self.left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_err()
    }
    async fn release(&self) {}
}

#[async_trait::async_trait]
impl CommitCoordinator for Fragile {
    async fn acquire(&self, _scope: &str, _tx: &str) -> Result<Box<dyn Lease>> {
        Ok(Box::new(FragileLease {
            left: AtomicUsize::new(self.checks),
        }))
    }
}

#[tokio::test]
async fn a_lost_lease_stops_the_commit_before_it_is_published() {
    let server = server().await;
    let session = new_session();
    let ws = open(&server, &session).await;
    ws.fs().write("/keep", "old").await.unwrap();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let before = dump(ws.fs()).await;

    let mut cfg = config(&server);
    cfg.coordinator = Some(Arc::new(Fragile { checks: 1 }));
    let fragile = open_cfg(&cfg, &session).await;
    fragile.fs().write("/keep", "new").await.unwrap();
    let e = fragile.commit(CommitOptions::new("t")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::CommitCoordination, "{e}");
    assert!(e.outcome_unknown);
    // The next open rolls the unfinished commit back: the old tree, one record.
    let reopened = open(&server, &session).await;
    assert_eq!(dump(reopened.fs()).await, before);
    assert_eq!(records(&server, &session).await, 1);
}

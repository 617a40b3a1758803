//! Two hosts committing at once to one Storage prefix, with and without a commit coordinator
//! (PostgreSQL advisory-lock leases on the test cluster), and a lease lost mid-commit.
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::{
    CommitCoordinator, Lease, PostgresCoordinator, StorageConfig, StorageWorkspace,
};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits, Result};
use supabash_tests::storage_server::{Fault, StorageServer};

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
    assert_eq!(revision_records(&server, &session).await, 2);
    assert_eq!(reopened.history(None, None).await.unwrap().records.len(), 2);
}

/// Without a coordinator, another host's fresh intent is left alone (a commit meeting one is
/// refused with a retryable COMMIT_COORDINATION), so neither host's recovery can roll back the
/// other's commit in flight; run many times, since the interleaving varies.
#[tokio::test]
async fn without_a_coordinator_the_race_is_bounded_to_whole_revisions() {
    for _ in 0..10 {
        race_once().await;
    }
}

async fn race_once() {
    let server = server().await;
    let session = new_session();
    let cfg = config(&server).with_stale_intent_after(supabash::storage::DEFAULT_STALE_INTENT);
    let a = open_cfg(&cfg, &session).await;
    let b = open_cfg(&cfg, &session).await;
    a.fs().write("/a.md", "from a").await.unwrap();
    b.fs().write("/b.md", "from b").await.unwrap();
    let (ra, rb) = tokio::join!(
        a.commit(CommitOptions::new("a")),
        b.commit(CommitOptions::new("b"))
    );
    assert!(ra.is_ok() || rb.is_ok(), "{ra:?} {rb:?}");
    for r in [&ra, &rb] {
        if let Err(e) = r {
            assert!(
                matches!(
                    e.code(),
                    ErrorCode::CommitCoordination | ErrorCode::CommitConflict
                ),
                "{e}"
            );
            assert!(e.is_retryable(), "{e}");
        }
    }
    // Whatever won, a reopen reads one whole published revision.
    let reopened = open_cfg(&cfg, &session).await;
    let head = reopened.base_revision().unwrap();
    let published = reopened.read_revision(&head).await.unwrap();
    let tree = dump(reopened.fs()).await;
    assert_eq!(
        tree.keys().collect::<Vec<_>>(),
        published.entries.keys().collect::<Vec<_>>()
    );
    assert!(tree.contains_key("/a.md") || tree.contains_key("/b.md"));
    assert!((1..=2).contains(&revision_records(&server, &session).await));
}

/// Deterministically: host A's commit is held right after its intent; host B opens (and sees
/// the published head, A's intent untouched), and B's commit is refused with a retryable
/// COMMIT_COORDINATION instead of rolling A back. Once A finishes, B's retry commits on top.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_in_flight_on_another_host_is_left_alone() {
    let server = server().await;
    let session = new_session();
    let cfg = config(&server).with_stale_intent_after(supabash::storage::DEFAULT_STALE_INTENT);
    let seed = open_cfg(&cfg, &session).await;
    seed.fs().write("/seed.md", "seed").await.unwrap();
    seed.commit(CommitOptions::new("seed")).await.unwrap();

    let a = open_cfg(&cfg, &session).await;
    a.fs().write("/a.md", "from a").await.unwrap();
    // A single-file commit's mutations: the body, the intent, then the visible object.
    server.inject(Some(Fault::Hold(3)));
    let a_commit = tokio::spawn(async move { a.commit(CommitOptions::new("a")).await });
    for _ in 0..1000 {
        if server.mutations() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        server.mutations() >= 3,
        "A never reached its visible upload"
    );

    let b = open_cfg(&cfg, &session).await;
    assert_eq!(b.fs().read_text("/seed.md").await.unwrap(), "seed");
    assert!(
        !b.fs().exists("/a.md").await,
        "B sees the published head only"
    );
    b.fs().write("/b.md", "from b").await.unwrap();
    let e = b.commit(CommitOptions::new("b")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::CommitCoordination, "{e}");
    assert!(e.is_retryable() && !e.outcome_unknown(), "{e}");

    server.release();
    let a_receipt = a_commit.await.unwrap().expect("A commits").receipt;
    let b_receipt = b
        .commit(CommitOptions::new("b"))
        .await
        .expect("B's retry")
        .receipt;
    assert_eq!(
        b_receipt.parent_revision.as_deref(),
        Some(a_receipt.revision.as_str())
    );
    let reopened = open_cfg(&cfg, &session).await;
    for (path, text) in [
        ("/seed.md", "seed"),
        ("/a.md", "from a"),
        ("/b.md", "from b"),
    ] {
        assert_eq!(reopened.fs().read_text(path).await.unwrap(), text);
    }
    assert_eq!(revision_records(&server, &session).await, 3);
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
    assert_eq!(e.code(), ErrorCode::CommitCoordination);
    assert!(e.is_retryable() && !e.outcome_unknown());
    lease.release().await;
    ws.commit(CommitOptions::new("t")).await.unwrap();
    assert_eq!(revision_records(&server, &session).await, 1);
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
    assert_eq!(e.code(), ErrorCode::CommitCoordination, "{e}");
    assert!(e.outcome_unknown());
    // The next open rolls the unfinished commit back: the old tree, one record.
    let reopened = open(&server, &session).await;
    assert_eq!(dump(reopened.fs()).await, before);
    assert_eq!(revision_records(&server, &session).await, 1);
}

//! The fault matrix of the Storage commit: a failure injected by the Storage API test server
//! before and after every durable step (every mutating request) of a commit. After each,
//! reopening gives the whole old or the whole new tree and at most one new history record;
//! failures after the intent are PARTIAL_COMMIT; a retry of the same commit or a discard
//! resolves them.
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use std::collections::BTreeMap;
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::StorageWorkspace;
use supabash::workspace::CommitOptions;
use supabash::ErrorCode;
use supabash_tests::storage_server::{Fault, StorageServer};

type Tree = BTreeMap<String, Dumped>;

/// A user with one published revision and a staged change touching every kind of entry;
/// returns the workspace, the old tree and the staged (new) tree.
async fn prepared(server: &StorageServer) -> (Session, StorageWorkspace, Tree, Tree) {
    let session = new_session();
    let ws = open(server, &session).await;
    let fs = ws.fs();
    fs.write("/keep.md", "keep v1").await.unwrap();
    fs.write("/old.bin", vec![0u8, 159, 146, 150])
        .await
        .unwrap();
    fs.mkdir("/dir/empty", true).await.unwrap();
    fs.symlink("keep.md", "/link").await.unwrap();
    ws.commit(CommitOptions::new("setup")).await.unwrap();
    let old = dump(fs).await;
    fs.write("/keep.md", "keep v2").await.unwrap();
    fs.rm("/old.bin", false, false).await.unwrap();
    fs.write("/dir/été.md", "new").await.unwrap();
    fs.rm("/dir/empty", true, false).await.unwrap();
    fs.mkdir("/fresh", false).await.unwrap();
    fs.rm("/link", false, false).await.unwrap();
    fs.symlink("dir/été.md", "/link").await.unwrap();
    fs.chmod("/keep.md", 0o640).await.unwrap();
    let new = dump(fs).await;
    assert_ne!(old, new);
    (session, ws, old, new)
}

#[tokio::test]
async fn every_durable_step_fails_to_old_or_new() {
    let server = server().await;
    // A clean run counts the mutating requests of the commit.
    let (_, ws, _, _) = prepared(&server).await;
    server.inject(None);
    ws.commit(CommitOptions::new("clean")).await.unwrap();
    let steps = server.mutations();
    assert!(steps >= 8, "a commit makes at least 8 writes, saw {steps}");

    let mut outcomes = BTreeMap::new();
    for step in 0..steps {
        for fault in [Fault::Before(step), Fault::After(step)] {
            let (session, ws, old, new) = prepared(&server).await;
            server.inject(Some(fault));
            let result = ws.commit(CommitOptions::new("faulty")).await;
            server.inject(None);
            if let Err(e) = &result {
                assert!(
                    matches!(e.code(), ErrorCode::Backend | ErrorCode::PartialCommit),
                    "{fault:?}: {e}"
                );
                assert!(e.is_retryable(), "{fault:?}: {e}");
                if e.code() == ErrorCode::PartialCommit {
                    assert!(e.outcome_unknown(), "{fault:?}");
                }
            }
            let reopened = open(&server, &session).await;
            let tree = dump(reopened.fs()).await;
            let which = if tree == new {
                "new"
            } else if tree == old {
                "old"
            } else {
                panic!("{fault:?}: a mix of old and new: {tree:#?}")
            };
            if result.is_ok() {
                assert_eq!(which, "new", "{fault:?}: a successful commit reopened old");
            }
            let records = revision_records(&server, &session).await;
            assert!(
                records == 1 || (records == 2 && which == "new"),
                "{fault:?}: {records} revision records with the {which} tree"
            );
            // After recovery no intent is left.
            let service = service_api(&server, &session);
            let head = service
                .read_json(&format!("{}/.supabash/head.json", session.user_id))
                .await
                .unwrap()
                .unwrap();
            assert!(head.get("pending").is_none(), "{fault:?}: {head}");
            outcomes.insert(format!("{fault:?}"), which);
        }
    }
    // Early failures keep the old tree; a failure after the head was written keeps the new.
    assert_eq!(outcomes["Before(0)"], "old");
    assert_eq!(outcomes[&format!("After({})", steps - 1)], "new");
}

#[tokio::test]
async fn a_retry_after_a_partial_commit_publishes_once() {
    let server = server().await;
    let (_, ws, _, _) = prepared(&server).await;
    server.inject(None);
    ws.commit(CommitOptions::new("clean")).await.unwrap();
    let steps = server.mutations();

    // Lost answer of the head write: the retry finds the commit published and replays it.
    let (session, ws, _, new) = prepared(&server).await;
    let mut o = CommitOptions::new("retry");
    o.idempotency_key = Some("k".into());
    // With a key the idempotency record comes before the head: the head is step `steps`.
    server.inject(Some(Fault::After(steps)));
    let e = ws.commit(o.clone()).await.unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::PartialCommit);
    let r = ws.commit(o.clone()).await.unwrap();
    assert!(r.replayed);
    assert_eq!(revision_records(&server, &session).await, 2);
    assert_eq!(dump(open(&server, &session).await.fs()).await, new);

    // A failure right after the intent: the retry rolls it back and commits again, once.
    let (session, ws, _, new) = prepared(&server).await;
    server.inject(Some(Fault::Before(3)));
    let e = ws.commit(o.clone()).await.unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::PartialCommit, "{e}");
    let r = ws.commit(o).await.unwrap();
    assert!(!r.replayed);
    assert_eq!(r.receipt.position, 2);
    assert_eq!(revision_records(&server, &session).await, 2);
    assert_eq!(dump(open(&server, &session).await.fs()).await, new);
}

#[tokio::test]
async fn discard_after_a_partial_commit_resolves_it() {
    let server = server().await;
    let (session, ws, old, _) = prepared(&server).await;
    server.inject(Some(Fault::Before(4)));
    let e = ws.commit(CommitOptions::new("x")).await.unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::PartialCommit, "{e}");
    // While unresolved, the previous revision stays readable.
    let previous = ws.base_revision().unwrap();
    assert_eq!(
        ws.read_revision_file(&previous, "/keep.md").await.unwrap(),
        b"keep v1"
    );
    assert_eq!(ws.history(None, None).await.unwrap().records.len(), 1);
    ws.discard().await.unwrap();
    assert_eq!(dump(ws.fs()).await, old);
    assert_eq!(dump(open(&server, &session).await.fs()).await, old);
    assert_eq!(revision_records(&server, &session).await, 1);
}

#[tokio::test]
async fn a_cancelled_commit_unfreezes_the_tree_and_is_resolved_later() {
    let server = server().await;
    let (session, ws, old, new) = prepared(&server).await;
    // The first visible upload after the intent never answers; the host gives up.
    server.inject(Some(Fault::Stall(2)));
    let cancelled = tokio::time::timeout(
        std::time::Duration::from_millis(500),
        ws.commit(CommitOptions::new("x")),
    )
    .await;
    server.inject(None);
    assert!(cancelled.is_err(), "the commit should still be waiting");
    // The tree is editable again (not stuck in COMMIT_IN_PROGRESS).
    ws.fs().write("/after.md", "editable again").await.unwrap();
    ws.fs().rm("/after.md", false, false).await.unwrap();
    let tree = dump(open(&server, &session).await.fs()).await;
    assert_eq!(
        tree, old,
        "the unfinished commit is rolled back at the next open"
    );
    assert_ne!(tree, new);
}

#[tokio::test]
async fn a_commit_rolled_back_by_another_hosts_recovery_undoes_its_own_writes() {
    let server = server().await;
    let (session, ws, old, _) = prepared(&server).await;
    let ws = std::sync::Arc::new(ws);
    // Hold the first visible upload (after the revision pack and the intent) of host A.
    server.inject(Some(Fault::Hold(2)));
    let a = tokio::spawn({
        let ws = ws.clone();
        async move { ws.commit(CommitOptions::new("a")).await }
    });
    while server.mutations() <= 2 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // Host B opens without a coordinator: its recovery rolls A's unfinished commit back.
    let b = open(&server, &session).await;
    assert_eq!(dump(b.fs()).await, old);
    server.release();
    let e = a.await.unwrap().unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::CommitCoordination, "{e}");
    assert!(e.is_retryable() && !e.outcome_unknown());
    // A undid what it wrote after B's rollback: the visible objects are the old tree's.
    let service = service_api(&server, &session);
    let keep = format!("{}/keep.md", session.user_id);
    assert_eq!(service.download(&keep).await.unwrap().unwrap(), b"keep v1");
    let mut visible: Vec<String> = service
        .list(&format!("{}/", session.user_id))
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.name[session.user_id.len() + 1..].to_owned())
        .filter(|k| !k.starts_with(".supabash/"))
        .collect();
    visible.sort();
    assert_eq!(
        visible,
        [
            "dir/.supabash-directory",
            "dir/empty/.supabash-directory",
            "keep.md",
            "link",
            "old.bin"
        ]
    );
    assert_eq!(dump(open(&server, &session).await.fs()).await, old);
    assert_eq!(revision_records(&server, &session).await, 1);
    // A's staged edits are still there; a retry now commits them once.
    ws.commit(CommitOptions::new("a")).await.unwrap();
    assert_eq!(revision_records(&server, &session).await, 2);
}

/// Issue 23, item 12: when one upload of a batch fails while another is still in flight,
/// `upload_all` reports the failure only after every upload it sent has been answered, so no
/// request of a failed commit can land after the rollback that follows it.
#[tokio::test]
async fn a_failed_upload_batch_waits_for_every_upload_in_flight() {
    use supabash::storage::api::Upload;
    let server = server().await;
    let session = new_session();
    let api = user_api(&server, &session).with_upload_concurrency(2.try_into().unwrap());
    let key = |name: &str| format!("{}/{name}", session.user_id);
    let upload = |name: &str| Upload {
        key: key(name),
        body: b"late bytes".to_vec(),
        content_type: "text/plain",
        metadata: serde_json::json!({}),
    };
    // The first upload is slow and lands; the second fails meanwhile; the third never starts.
    // (The failing upload's retries, with their back-off, end while the slow one still runs.)
    server.inject(Some(Fault::SlowWhileFailing {
        slow: 0,
        fail: 1,
        ms: 2_000,
    }));
    let e = api
        .upload_all(vec![
            upload("slow.txt"),
            upload("fails.txt"),
            upload("never.txt"),
        ])
        .await
        .unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    // Right when the failure is reported, the slow upload has landed: nothing is left in flight.
    assert_eq!(
        api.download(&key("slow.txt")).await.unwrap().as_deref(),
        Some(&b"late bytes"[..])
    );
    assert!(api.download(&key("fails.txt")).await.unwrap().is_none());
    assert!(
        api.download(&key("never.txt")).await.unwrap().is_none(),
        "no upload starts after a failure"
    );
}

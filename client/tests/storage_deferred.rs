//! Visible objects written after the head (a commit of more than `visible_inline_max`
//! entries): the commit is published by its head before any visible object, the head says the
//! visible objects lag until they are written, and an interrupted write is finished by the
//! next commit (any host) or `sync_visible`, failing at every durable step.
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use serde_json::Value;
use std::collections::BTreeMap;
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::{StorageConfig, StorageWorkspace};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits};
use supabash_tests::storage_server::{Fault, StorageServer};

type Tree = BTreeMap<String, Dumped>;

/// Every commit with changes writes its visible objects after its head.
fn deferring(server: &StorageServer) -> StorageConfig {
    config(server).with_visible_inline_max(0)
}

async fn open_with(config: &StorageConfig, session: &Session) -> StorageWorkspace {
    StorageWorkspace::open_for_session(config, session, Limits::default())
        .await
        .expect("open")
}

async fn raw_head(server: &StorageServer, session: &Session) -> Value {
    service_api(server, session)
        .read_json(&format!("{}/.supabash/head.json", session.user_id))
        .await
        .unwrap()
        .unwrap()
}

/// The tree the visible objects alone describe: the head is deleted (this ends the
/// workspace's history) and the prefix reopened, so the tree is read from the objects.
async fn visible_tree(server: &StorageServer, session: &Session) -> Tree {
    let head = format!("{}/.supabash/head.json", session.user_id);
    service_api(server, session).delete(&[head]).await.unwrap();
    dump(open(server, session).await.fs()).await
}

/// A user with one published revision (its visible objects written) and a staged change
/// touching every kind of entry; returns the workspace, the old tree and the new one.
async fn prepared(server: &StorageServer) -> (Session, StorageWorkspace, Tree, Tree) {
    let session = new_session();
    let ws = open_with(&deferring(server), &session).await;
    let fs = ws.fs();
    fs.write("/keep.md", "keep v1").await.unwrap();
    fs.write("/old.bin", vec![0u8, 159, 146, 150])
        .await
        .unwrap();
    fs.mkdir("/dir/empty", true).await.unwrap();
    fs.symlink("keep.md", "/link").await.unwrap();
    ws.commit(CommitOptions::new("setup")).await.unwrap();
    ws.sync_visible().await.unwrap();
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
async fn the_head_lands_before_the_visible_objects() {
    let server = server().await;
    let (session, ws, old, new) = prepared(&server).await;
    // Mutations: the pack (0), the head (1), then the visible objects: hold the first.
    server.inject(Some(Fault::Hold(2)));
    let receipt = ws.commit(CommitOptions::new("large")).await.unwrap();
    // Published while the visible objects wait: a reopen reads the new tree, and the head
    // says its visible objects lag.
    assert_eq!(dump(open(&server, &session).await.fs()).await, new);
    let head = raw_head(&server, &session).await;
    assert_eq!(head["visibleBehind"], receipt.receipt.revision.as_str());
    assert!(head.get("pending").is_none(), "no intent: {head}");
    server.release();
    // Written, and the lag cleared, by the background task: nothing left to do.
    assert!(!ws.sync_visible().await.unwrap());
    server.inject(None);
    let head = raw_head(&server, &session).await;
    assert!(head.get("visibleBehind").is_none(), "{head}");
    assert_eq!(visible_tree(&server, &session).await, new);
    assert_ne!(new, old);
}

#[tokio::test]
async fn a_small_commit_keeps_its_visible_objects_before_its_head() {
    let server = server().await;
    let session = new_session();
    let ws = open_with(&config(&server).with_visible_inline_max(3), &session).await;
    for i in 0..3 {
        ws.fs().write(&format!("/f{i}"), "x").await.unwrap();
    }
    ws.commit(CommitOptions::new("small")).await.unwrap();
    // Nothing in flight once the commit returns.
    let head = raw_head(&server, &session).await;
    assert!(head.get("visibleBehind").is_none(), "{head}");
    assert!(!ws.sync_visible().await.unwrap());
    let tree = dump(ws.fs()).await;
    assert_eq!(visible_tree(&server, &session).await, tree);
}

#[tokio::test]
async fn every_durable_step_fails_to_old_or_new_and_the_visible_objects_follow() {
    let server = server().await;
    // A clean run counts the mutating requests of the commit and its visible objects.
    let (_, ws, _, _) = prepared(&server).await;
    server.inject(None);
    ws.commit(CommitOptions::new("clean")).await.unwrap();
    ws.sync_visible().await.unwrap();
    let steps = server.mutations();
    assert!(steps >= 5, "pack, head, objects, delete, head: saw {steps}");

    let mut outcomes = BTreeMap::new();
    for step in 0..steps {
        for fault in [
            Fault::Before(step),
            Fault::After(step),
            Fault::Internal(step),
        ] {
            let (session, ws, old, new) = prepared(&server).await;
            server.inject(Some(fault));
            let result = ws.commit(CommitOptions::new("faulty")).await;
            // Waits for the background write (which may fail), then tries to finish it.
            let _ = ws.sync_visible().await;
            server.inject(None);
            if let Err(e) = &result {
                assert!(
                    matches!(e.code(), ErrorCode::Backend | ErrorCode::PartialCommit),
                    "{fault:?}: {e}"
                );
            }
            let tree = dump(open(&server, &session).await.fs()).await;
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
            // A pack whose head never landed may stay for purge; history holds one more
            // revision at most, and only with the new tree.
            let reopened = open(&server, &session).await;
            let records = reopened.history(None, None).await.unwrap().records.len();
            assert!(
                records == 1 || (records == 2 && which == "new"),
                "{fault:?}: {records} revisions with the {which} tree"
            );
            // Another host's next commit (small: its own visible objects before its head)
            // finishes whatever the visible objects lack first.
            let other = open(&server, &session).await;
            other.fs().write("/another.md", "x").await.unwrap();
            other.commit(CommitOptions::new("next")).await.unwrap();
            let expected = dump(other.fs()).await;
            assert_eq!(expected.len(), tree.len() + 1, "{fault:?}");
            let head = raw_head(&server, &session).await;
            assert!(head.get("visibleBehind").is_none(), "{fault:?}: {head}");
            assert!(head.get("pending").is_none(), "{fault:?}: {head}");
            assert_eq!(
                visible_tree(&server, &session).await,
                expected,
                "{fault:?}: the visible objects do not show the {which} tree"
            );
            outcomes.insert(format!("{fault:?}"), which);
        }
    }
    // Before the head: the old tree; from the head on (visible objects after it): the new.
    assert_eq!(outcomes["Before(0)"], "old");
    assert_eq!(outcomes[&format!("Before({})", steps - 1)], "new");
    assert_eq!(outcomes[&format!("After({})", steps - 1)], "new");
}

#[tokio::test]
async fn sync_visible_finishes_an_interrupted_write_from_another_workspace() {
    let server = server().await;
    let (session, ws, _, new) = prepared(&server).await;
    // The first visible upload, and every retry of it, answers 503: the background write
    // stops, and so does this workspace's attempt to finish it.
    server.inject(Some(Fault::Before(2)));
    let receipt = ws.commit(CommitOptions::new("large")).await.unwrap();
    let e = ws.sync_visible().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    server.inject(None);
    let head = raw_head(&server, &session).await;
    assert_eq!(head["visibleBehind"], receipt.receipt.revision.as_str());
    // The published tree is whole meanwhile.
    assert_eq!(dump(open(&server, &session).await.fs()).await, new);
    let fresh = open(&server, &session).await;
    assert!(
        fresh.sync_visible().await.unwrap(),
        "a lag was left to finish"
    );
    let head = raw_head(&server, &session).await;
    assert!(head.get("visibleBehind").is_none(), "{head}");
    assert_eq!(visible_tree(&server, &session).await, new);
}

#[tokio::test]
async fn under_a_coordinator_the_background_write_keeps_the_lease() {
    let server = server().await;
    let coordinator = supabash::storage::PostgresCoordinator::new(
        &cluster().dsn("postgres"),
        std::time::Duration::from_millis(300),
    );
    let mut a_config = deferring(&server);
    a_config.coordinator = Some(std::sync::Arc::new(coordinator));
    // Another host: the same server by another name, so that this process's own lock on
    // the prefix does not make it wait; only the coordinator's lease does.
    let mut b_config = a_config.clone();
    b_config.url = server.url.replace("127.0.0.1", "localhost");
    let session = new_session();
    let a = open_with(&a_config, &session).await;
    let b = open_with(&b_config, &session).await;
    a.fs().write("/one.md", "1").await.unwrap();
    a.fs().write("/two.md", "2").await.unwrap();
    b.fs().write("/three.md", "3").await.unwrap();
    // Mutations of this first commit: the pack and the snapshot (0, 1), the head (2), then
    // the visible objects: hold the first.
    server.inject(Some(Fault::Hold(3)));
    a.commit(CommitOptions::new("a")).await.unwrap();
    let e = b.commit(CommitOptions::new("b")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::CommitCoordination, "{e}");
    assert!(e.is_retryable(), "{e}");
    server.release();
    a.sync_visible().await.unwrap();
    server.inject(None);
    b.commit(CommitOptions::new("b")).await.unwrap();
    b.sync_visible().await.unwrap();
    let tree = dump(open(&server, &session).await.fs()).await;
    assert_eq!(tree.len(), 3, "{tree:#?}");
    assert_eq!(visible_tree(&server, &session).await, tree);
}

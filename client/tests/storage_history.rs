//! History of the Storage backend against the Storage API test server: pages oldest first with
//! cursors, old revisions and their files, diffs, forward restore, checkpoints and purge (with
//! ancestry kept so history stays ordered across purged revisions).
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use storage_support::*;
use supabash::workspace::{CheckpointOptions, CommitOptions, DiffRef, PurgeOptions};
use supabash::ErrorCode;

#[tokio::test]
async fn history_restore_checkpoints_and_purge() {
    let server = server().await;
    let session = new_session();
    let ws = open(&server, &session).await;
    let fs = ws.fs();
    fs.write("/a", "1").await.unwrap();
    let r1 = ws.commit(CommitOptions::new("t")).await.unwrap().receipt;
    fs.write("/a", "2").await.unwrap();
    fs.write("/b", "bee").await.unwrap();
    let r2 = ws.commit(CommitOptions::new("t")).await.unwrap().receipt;
    fs.rm("/b", false, false).await.unwrap();
    fs.mkdir("/d", false).await.unwrap();
    let r3 = ws.commit(CommitOptions::new("t")).await.unwrap().receipt;

    // Pages, oldest first.
    let p1 = ws.history(None, Some(2)).await.unwrap();
    let revs: Vec<&str> = p1.records.iter().map(|r| r.revision.as_str()).collect();
    assert_eq!(revs, [r1.revision.as_str(), r2.revision.as_str()]);
    assert_eq!(p1.next_cursor.as_deref(), Some(r2.revision.as_str()));
    let p2 = ws
        .history(p1.next_cursor.as_deref(), Some(2))
        .await
        .unwrap();
    assert_eq!(p2.records, vec![r3.clone()]);
    assert_eq!(p2.next_cursor, None);
    let e = ws.history(Some("nope"), None).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RevisionNotFound);

    // Old revisions and diffs.
    let old = ws.read_revision(&r1.revision).await.unwrap();
    assert_eq!(old.receipt, r1);
    assert_eq!(old.entries.keys().collect::<Vec<_>>(), ["/a"]);
    assert_eq!(
        ws.read_revision_file(&r1.revision, "/a").await.unwrap(),
        b"1"
    );
    let d = ws
        .diff(DiffRef::Revision(r1.revision.clone()), DiffRef::Head)
        .await
        .unwrap();
    let kinds: Vec<(&str, &str)> = d
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.kind.as_str()))
        .collect();
    assert_eq!(kinds, [("/a", "modified"), ("/d", "added")]);

    // Forward restore: a new revision recording its source.
    let staged = ws.restore(&r1.revision).await.unwrap();
    assert!(staged.iter().any(|t| t.path == "/d" && t.after.is_none()));
    let r4 = ws.commit(CommitOptions::new("t")).await.unwrap().receipt;
    assert_eq!(r4.source_revision.as_deref(), Some(r1.revision.as_str()));
    assert_eq!(r4.position, 4);
    let reopened = open(&server, &session).await;
    assert_eq!(reopened.fs().read_text("/a").await.unwrap(), "1");
    assert!(!reopened.fs().exists("/d").await);

    // Checkpoints pin revisions; purge keeps them and the newest.
    let mut o = CheckpointOptions::default()
        .with_revision(r2.revision.clone())
        .with_label("before cleanup")
        .with_idempotency_key("cp-1");
    let cp = ws.checkpoint(o.clone()).await.unwrap();
    assert!(!cp.replayed);
    o.label = Some("again".into());
    let again = ws.checkpoint(o).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.checkpoint_id, cp.checkpoint_id);
    assert_eq!(ws.checkpoints().await.unwrap().len(), 1);

    let keep_one = PurgeOptions::default()
        .with_keep_revisions(1)
        .with_dry_run(true);
    let dry = ws.purge(keep_one.clone()).await.unwrap();
    assert_eq!(dry.revisions, [r3.revision.clone(), r1.revision.clone()]);
    assert_eq!(ws.history(None, None).await.unwrap().records.len(), 4);
    let done = ws
        .purge(keep_one.clone().with_dry_run(false))
        .await
        .unwrap();
    assert_eq!(done.revisions, dry.revisions);
    let h = ws.history(None, None).await.unwrap();
    let revs: Vec<&str> = h.records.iter().map(|r| r.revision.as_str()).collect();
    assert_eq!(revs, [r2.revision.as_str(), r4.revision.as_str()]);
    assert_eq!(
        ws.read_revision_file(&r2.revision, "/b").await.unwrap(),
        b"bee"
    );
    let e = ws.read_revision(&r1.revision).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RevisionNotFound);
    assert_eq!(
        open(&server, &session)
            .await
            .fs()
            .read_text("/a")
            .await
            .unwrap(),
        "1"
    );

    ws.delete_checkpoint(&cp.checkpoint_id).await.unwrap();
    let last = ws.purge(keep_one.with_dry_run(false)).await.unwrap();
    assert_eq!(last.revisions, vec![r2.revision]);
    assert!(last.bodies >= 1, "the body of /b is no longer used");
    let h = ws.history(None, None).await.unwrap();
    assert_eq!(h.records, vec![r4]);
}

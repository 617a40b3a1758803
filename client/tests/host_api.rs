//! Every limit gives QUOTA_EXCEEDED before anything durable; the host API end to end
//! (history pages, checkpoints, diffs against the staged tree, purge); error mapping.

use supabash_tests::client as support;

use serde_json::json;
use std::sync::Arc;
use supabash::workspace::{CheckpointOptions, CommitOptions, DiffRef, PurgeOptions};
use supabash::{ErrorCode, FsError, Limits, PostgrestTransport, Workspace};
use support::{new_user, new_workspace, postrust_url, transport, BOTH};

fn quota(e: FsError) -> bool {
    matches!(e, FsError::Supabash(s) if s.code() == ErrorCode::QuotaExceeded)
}

#[tokio::test]
async fn every_limit_refuses_before_anything_durable() {
    for via in BOTH {
        let limits = Limits::default()
            .with_max_files(3)
            .with_max_file_bytes(10)
            .with_max_staged_bytes(20)
            .with_max_path_chars(12)
            .with_max_history_page(5)
            .with_max_diff_preview_bytes(100)
            .with_max_transaction_metadata_bytes(64);
        let user = new_user();
        let ws = Workspace::builder(transport(via, &user).await)
            .limits(limits.clone())
            .create()
            .await
            .unwrap();
        let fs = ws.fs();
        assert!(quota(fs.write("/big", "12345678901").await.unwrap_err()));
        assert!(quota(fs.write("/a-very-long-name", "x").await.unwrap_err()));
        fs.write("/a", "1234567890").await.unwrap();
        fs.write("/b", "1234567890").await.unwrap();
        assert!(
            quota(fs.write("/c", "1").await.unwrap_err()),
            "staged bytes"
        );
        fs.write("/b", "1").await.unwrap();
        fs.write("/c", "1").await.unwrap();
        assert!(quota(fs.write("/d", "").await.unwrap_err()), "file count");

        let big_metadata =
            CommitOptions::new("e2e").with_metadata(json!({ "note": "x".repeat(100) }));
        let e = ws.commit(big_metadata).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{via:?}");
        assert!(
            ws.history(None, None).await.unwrap().records.is_empty(),
            "nothing durable"
        );
        assert_eq!(ws.changes().unwrap().len(), 3, "still staged");

        assert_eq!(
            ws.history(None, Some(6)).await.unwrap_err().code(),
            ErrorCode::QuotaExceeded
        );
        let e = ws
            .diff(DiffRef::Head, DiffRef::Staged, None, Some(101))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::QuotaExceeded);
        ws.commit(CommitOptions::new("e2e")).await.unwrap();
    }
}

#[tokio::test]
async fn host_api_tour() {
    for via in BOTH {
        let user = new_user();
        let ws = new_workspace(via, &user).await;
        let mut revisions = Vec::new();
        for i in 0..5 {
            ws.fs()
                .write("/log.md", format!("entry {i}\n"))
                .await
                .unwrap();
            let r = ws
                .commit(CommitOptions::new("e2e").with_cause(format!("step {i}")))
                .await
                .unwrap();
            revisions.push(r.receipt.revision);
        }
        // History, two per page, oldest first.
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = ws.history(cursor.as_deref(), Some(2)).await.unwrap();
            seen.extend(page.records.iter().map(|r| r.revision.clone()));
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, revisions, "{via:?}");

        // Checkpoints, idempotent by key.
        let opts = CheckpointOptions::default()
            .with_label("second")
            .with_idempotency_key("cp-1")
            .with_revision(revisions[1].clone());
        let cp = ws.checkpoint(opts.clone()).await.unwrap();
        assert!(!cp.replayed);
        assert!(ws.checkpoint(opts).await.unwrap().replayed);
        assert_eq!(ws.checkpoints().await.unwrap().len(), 1);

        // Diffs: checkpoint → head, and head → staged (the staged side is sent along).
        let d = ws
            .diff(
                DiffRef::Checkpoint(cp.checkpoint_id.clone()),
                DiffRef::Head,
                None,
                None,
            )
            .await
            .unwrap();
        assert_eq!(d.entries.len(), 1);
        assert_eq!(d.entries[0].kind, supabash::workspace::DiffKind::Modified);
        ws.fs().write("/staged.md", "only staged").await.unwrap();
        let d = ws
            .diff(DiffRef::Head, DiffRef::Staged, None, Some(5))
            .await
            .unwrap();
        assert_eq!(d.to.as_deref(), Some("staged"));
        assert_eq!(d.entries.len(), 1);
        assert_eq!(d.entries[0].path, "/staged.md");
        assert!(
            d.entries[0]
                .preview
                .as_deref()
                .unwrap()
                .starts_with("only "),
            "{:?}",
            d.entries[0]
        );
        ws.discard().await.unwrap();
        assert!(!ws.fs().exists("/staged.md").await);

        // Purge keeps the head and the checkpointed revision.
        let dry = ws
            .purge(
                PurgeOptions::default()
                    .with_keep_revisions(1)
                    .with_dry_run(true),
            )
            .await
            .unwrap();
        assert!(dry.dry_run);
        assert_eq!(dry.revisions.len(), 3, "{via:?} {dry:?}");
        assert!(!dry.revisions.contains(&revisions[1]));
        let done = ws
            .purge(PurgeOptions::default().with_keep_revisions(1))
            .await
            .unwrap();
        assert_eq!(done.revisions, dry.revisions);
        assert_eq!(ws.history(None, None).await.unwrap().records.len(), 2);
        let old = ws.read_revision(&revisions[1]).await.unwrap();
        assert_eq!(old.files["/log.md"], b"entry 1\n");
        let e = ws.read_revision(&revisions[0]).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::RevisionNotFound, "{via:?} {e}");
        ws.delete_checkpoint(&cp.checkpoint_id).await.unwrap();
        let e = ws.delete_checkpoint(&cp.checkpoint_id).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::RevisionNotFound);
    }
}

#[tokio::test]
async fn errors_map_to_codes() {
    for via in BOTH {
        let owner = new_user();
        let ws = new_workspace(via, &owner).await;
        let e = Workspace::builder(transport(via, &new_user()).await)
            .open(ws.id())
            .await
            .err()
            .unwrap();
        assert_eq!(e.code(), ErrorCode::Authorization, "{via:?} {e}");
        assert!(!e.is_retryable());
        let e = ws
            .read_revision(&uuid::Uuid::new_v4().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::RevisionNotFound, "{via:?}");
    }
    // A token signed with another secret never reaches the database.
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &support::user_claims(&new_user()),
        &jsonwebtoken::EncodingKey::from_secret(b"not-the-secret-not-the-secret-not-it"),
    )
    .unwrap();
    let t = Arc::new(PostgrestTransport::new(
        postrust_url(),
        "test-publishable-key",
        &forged,
    ));
    let e = Workspace::builder(t).create().await.err().unwrap();
    assert_eq!(e.code(), ErrorCode::Authentication, "{e}");
    // Nothing listening: retryable, and a create whose request never left is not unknown.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Arc::new(PostgrestTransport::new(
        &format!("http://127.0.0.1:{port}"),
        "k",
        "t",
    ));
    let e = Workspace::builder(t).create().await.err().unwrap();
    assert!(e.is_retryable() && !e.outcome_unknown(), "{e}");
}

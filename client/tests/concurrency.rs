//! Two hosts racing, idempotent replay from a second client, and a commit whose answer is lost.

use supabash_tests::client as support;

use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Workspace};
use support::{http_transport, new_user, new_workspace, postrust_url, reopen, DroppingProxy, BOTH};

#[tokio::test]
async fn racing_hosts_one_conflict_and_the_loser_is_invisible() {
    for via in BOTH {
        let user = new_user();
        let setup = new_workspace(via, &user).await;
        setup.fs().write("/shared.md", "base").await.unwrap();
        setup.commit(CommitOptions::new("setup")).await.unwrap();

        let a = reopen(via, &user, setup.id()).await;
        let b = reopen(via, &user, setup.id()).await;
        a.fs().write("/from-a.md", "a").await.unwrap();
        b.fs().write("/from-b.md", "b").await.unwrap();
        let (ra, rb) = tokio::join!(
            a.commit(CommitOptions::new("host-a")),
            b.commit(CommitOptions::new("host-b"))
        );
        let (winner, loser_file, err) = match (ra, rb) {
            (Ok(w), Err(e)) => (w, "/from-b.md", e),
            (Err(e), Ok(w)) => (w, "/from-a.md", e),
            (ra, rb) => panic!("{via:?}: expected one conflict, got {ra:?} and {rb:?}"),
        };
        assert_eq!(err.code(), ErrorCode::CommitConflict, "{via:?} {err}");
        assert!(!err.is_retryable() && !err.outcome_unknown());
        let head = reopen(via, &user, setup.id()).await;
        assert_eq!(head.base_revision(), Some(winner.receipt.revision));
        assert!(!head.fs().exists(loser_file).await, "{via:?}");
        assert_eq!(head.history(None, None).await.unwrap().records.len(), 2);
    }
}

#[tokio::test]
async fn idempotent_replay_from_a_second_client() {
    for via in BOTH {
        let user = new_user();
        let first = new_workspace(via, &user).await;
        let second = reopen(via, &user, first.id()).await;
        let options = CommitOptions::new("worker")
            .with_idempotency_key("job-42")
            .with_correlation_id("req-1");
        for ws in [&first, &second] {
            ws.fs().write("/result.md", "done").await.unwrap();
        }
        let r1 = first.commit(options.clone()).await.unwrap();
        assert!(!r1.replayed);
        let r2 = second.commit(options.clone()).await.unwrap();
        assert!(r2.replayed, "{via:?}");
        assert_eq!(r1.receipt, r2.receipt);
        assert!(second.changes().unwrap().is_empty());
        assert_eq!(second.history(None, None).await.unwrap().records.len(), 1);

        // The same key with different content is refused.
        second.fs().write("/result.md", "other").await.unwrap();
        let third = reopen(via, &user, first.id()).await;
        third.fs().write("/result.md", "other").await.unwrap();
        let e = third.commit(options).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::IdempotencyConflict, "{via:?} {e}");
    }
}

#[tokio::test]
async fn a_lost_commit_answer_is_retried_without_a_second_revision() {
    let proxy = DroppingProxy::start(postrust_url()).await;
    let user = new_user();
    let ws = Workspace::builder(http_transport(&proxy.url, &user))
        .create()
        .await
        .unwrap();
    ws.fs().write("/once.md", "exactly once").await.unwrap();
    proxy.drop_next_response();
    let e = ws.commit(CommitOptions::new("e2e")).await.unwrap_err();
    assert!(e.outcome_unknown() && e.is_retryable(), "{e}");
    assert_eq!(e.code(), ErrorCode::Backend);
    // The staged tree is unchanged and writable again.
    assert_eq!(ws.changes().unwrap().len(), 1);

    let retry = ws.commit(CommitOptions::new("e2e")).await.unwrap();
    assert!(retry.replayed, "the server already had it");
    assert!(ws.changes().unwrap().is_empty());
    let history = ws.history(None, None).await.unwrap();
    assert_eq!(history.records.len(), 1);
    assert_eq!(
        history.records[0].transaction_id,
        retry.receipt.transaction_id
    );
}

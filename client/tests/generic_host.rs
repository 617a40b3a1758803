//! One host round written once over `HostWorkspace` (edit, commit, checkpoint, diff against
//! the staged tree, discard, read and restore an old revision, history, purge dry run, delete
//! the checkpoint), run against real backends: a user's `Workspace` (PostgREST and direct
//! Postgres), a delegated job's `DelegatedWorkspace`, and a `StorageWorkspace`.

use supabash_tests::client as support;

use serde_json::json;
use supabash::workspace::{CheckpointOptions, CommitOptions, DiffKind, DiffRef, PurgeOptions};
use supabash::{DelegatedWorkspace, HostWorkspace, Limits, PostgrestTransport, Workspace};
use supabash_core::capability::{Operation, OperationSet};
use supabash_tests::capability::register;
use support::{cluster, new_user, postrust_url, sign, transport, BOTH};

/// Every revision id of the workspace, oldest first, read page by page.
async fn all_revisions(ws: &impl HostWorkspace) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = ws.history(cursor.as_deref(), Some(2)).await.unwrap();
        out.extend(page.records.into_iter().map(|r| r.revision));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

/// The host round, knowing nothing of the backend but the trait. `/host.md` must not exist.
async fn host_round(ws: &impl HostWorkspace) {
    let before = all_revisions(ws).await;
    let fs = ws.fs();

    fs.write("/host.md", "one\n").await.unwrap();
    assert_eq!(ws.changes().unwrap().len(), 1);
    let r1 = ws.commit(CommitOptions::new("host")).await.unwrap();
    let r1 = r1.receipt.revision;
    assert_eq!(ws.base_revision().as_deref(), Some(r1.as_str()));
    assert!(ws.changes().unwrap().is_empty());

    let cp = ws.checkpoint(CheckpointOptions::default()).await.unwrap();
    assert_eq!(cp.revision, r1);
    let listed = ws.checkpoints().await.unwrap();
    assert!(listed.iter().any(|c| c.checkpoint_id == cp.checkpoint_id));

    fs.write("/host.md", "two\n").await.unwrap();
    let r2 = ws.commit(CommitOptions::new("host")).await.unwrap();
    assert_ne!(r2.receipt.revision, r1);

    // A scratch edit shows in the diff against the head, then goes with a discard.
    fs.write("/scratch.md", "scratch\n").await.unwrap();
    let diff = ws.diff(DiffRef::Head, DiffRef::Staged).await.unwrap();
    let kinds: Vec<(&str, DiffKind)> = diff
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.kind))
        .collect();
    assert_eq!(kinds, [("/scratch.md", DiffKind::Added)]);
    ws.discard().await.unwrap();
    assert!(ws.changes().unwrap().is_empty());
    assert!(!fs.exists("/scratch.md").await);

    ws.read_revision(&r1).await.unwrap();
    let restored = ws.restore(&r1).await.unwrap();
    assert_eq!(restored.len(), 1, "{restored:?}");
    let r3 = ws.commit(CommitOptions::new("host")).await.unwrap();
    assert_eq!(r3.receipt.source_revision.as_deref(), Some(r1.as_str()));
    assert_eq!(fs.read_text("/host.md").await.unwrap(), "one\n");

    let after = all_revisions(ws).await;
    assert_eq!(after.len(), before.len() + 3);
    assert_eq!(
        after[before.len()..],
        [r1, r2.receipt.revision, r3.receipt.revision]
    );

    let report = ws
        .purge(PurgeOptions::default().with_dry_run(true))
        .await
        .unwrap();
    assert!(report.dry_run);
    assert_eq!(all_revisions(ws).await, after);

    ws.delete_checkpoint(&cp.checkpoint_id).await.unwrap();
    let listed = ws.checkpoints().await.unwrap();
    assert!(!listed.iter().any(|c| c.checkpoint_id == cp.checkpoint_id));
}

#[tokio::test]
async fn a_host_round_runs_on_a_users_workspace() {
    for via in BOTH {
        let ws = Workspace::builder(transport(via, &new_user()).await)
            .create()
            .await
            .unwrap();
        host_round(&ws).await;
    }
}

#[tokio::test]
async fn the_same_host_round_runs_on_a_delegated_workspace() {
    const ISS: &str = "https://issuer.test";
    const AUD: &str = "supabash";
    const ORIGIN: &str = "https://project.test";
    let secret = register(cluster(), "generic-host", ISS, AUD, ORIGIN);
    let signer =
        supabash::capability::PostgresSigner::new("generic-host", &secret, ISS, AUD, ORIGIN)
            .unwrap();
    let owner = Workspace::builder(transport(support::Via::Postgrest, &new_user()).await)
        .create()
        .await
        .unwrap();
    owner.fs().write("/notes.md", "owned\n").await.unwrap();
    owner.commit(CommitOptions::new("owner")).await.unwrap();

    let operations = OperationSet::new([
        Operation::Read,
        Operation::Write,
        Operation::Commit,
        Operation::History,
        Operation::Restore,
        Operation::Checkpoint,
        Operation::Purge,
    ])
    .unwrap();
    let token = signer
        .mint("host-job", owner.id(), &operations, 300, None)
        .unwrap();
    let service_token = sign(&json!({ "role": "service_role", "exp": 4_000_000_000u64 }));
    let service = std::sync::Arc::new(PostgrestTransport::new(
        postrust_url(),
        "test-service-key",
        &service_token,
    ));
    let ws = DelegatedWorkspace::open(service, &token, &operations, Limits::default())
        .await
        .unwrap();
    host_round(&ws).await;
}

#[cfg(feature = "storage")]
#[tokio::test]
async fn the_same_host_round_runs_on_a_storage_workspace() {
    use supabash_tests::storage_support::{new_session, open, server};
    let server = server().await;
    let ws = open(&server, &new_session()).await;
    host_round(&ws).await;
}

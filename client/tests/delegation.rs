//! Delegated workspaces end to end, through postrust (a PostgREST-compatible server) with a
//! service-role key: mint a capability, open it, edit, commit as `delegated:<subject>`; the
//! guard refuses what the grant does not allow before any request; a capability for the wrong
//! operation set is refused before the exchange, so its nonce stays unspent.

use supabash_tests::client as support;

use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use supabash::capability::PostgresSigner;
use supabash::transport::RpcError;
use supabash::workspace::{CheckpointOptions, CommitOptions, DiffRef, PurgeOptions};
use supabash::{
    DelegatedWorkspace, ErrorCode, Limits, PostgrestTransport, SupabashError, Transport, Workspace,
};
use supabash_core::capability::{Operation, OperationSet};
use supabash_tests::capability::{register, server_log};
use support::{cluster, new_user, postrust_url, sign, transport, Via};

const ISS: &str = "https://issuer.test";
const AUD: &str = "supabash";
const ORIGIN: &str = "https://project.test";

/// A transport that counts the requests it forwards, and those that carried a grant in their
/// arguments (over PostgREST a grant belongs in a header, never in the body or the URL).
struct Counting {
    inner: Arc<dyn Transport>,
    calls: AtomicUsize,
    grant_arguments: AtomicUsize,
}

#[async_trait::async_trait]
impl Transport for Counting {
    async fn call(&self, rpc: &str, args: Map<String, Value>) -> Result<Value, RpcError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if args.contains_key("delegated_grant") {
            self.grant_arguments.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.call(rpc, args).await
    }

    async fn call_with_grant(
        &self,
        rpc: &str,
        args: Map<String, Value>,
        grant: &str,
    ) -> Result<Value, RpcError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if args.contains_key("delegated_grant") {
            self.grant_arguments.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.call_with_grant(rpc, args, grant).await
    }
}

impl Counting {
    fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// The service-role transport through postrust, counting requests.
fn service() -> Arc<Counting> {
    let token = sign(&json!({ "role": "service_role", "exp": 4_000_000_000u64 }));
    Arc::new(Counting {
        inner: Arc::new(PostgrestTransport::new(
            postrust_url(),
            "test-service-key",
            &token,
        )),
        calls: AtomicUsize::new(0),
        grant_arguments: AtomicUsize::new(0),
    })
}

fn signer(kid: &str) -> PostgresSigner {
    let secret = register(cluster(), kid, ISS, AUD, ORIGIN);
    PostgresSigner::new(kid, &secret, ISS, AUD, ORIGIN).unwrap()
}

fn ops(list: &[Operation]) -> OperationSet {
    OperationSet::new(list.iter().copied()).unwrap()
}

/// A user's workspace with `/notes.md` committed twice; its id and first revision.
async fn owned_workspace() -> (String, String) {
    let ws = Workspace::builder(transport(Via::Postgrest, &new_user()).await)
        .create()
        .await
        .unwrap();
    ws.fs().write("/notes.md", "v1\n").await.unwrap();
    let r1 = ws.commit(CommitOptions::new("owner")).await.unwrap();
    ws.fs().write("/notes.md", "v2\n").await.unwrap();
    ws.commit(CommitOptions::new("owner")).await.unwrap();
    (ws.id().to_owned(), r1.receipt.revision)
}

fn assert_quiet(e: &SupabashError, token: &str) {
    let shown = format!("{e} {e:?}");
    let signature = token.rsplit('.').next().unwrap();
    assert!(
        !shown.contains(signature),
        "the error shows the token: {shown}"
    );
}

#[tokio::test]
async fn a_delegated_job_edits_and_commits_as_itself() {
    let signer = signer("e2e-commit");
    let (ws_id, _) = owned_workspace().await;
    let service = service();
    let rwc = ops(&[Operation::Read, Operation::Write, Operation::Commit]);
    let token = signer
        .mint("nightly-job", &ws_id, &rwc, 300, Some("run-17"))
        .unwrap();
    let ws = DelegatedWorkspace::open(service.clone(), &token, &rwc, Limits::default())
        .await
        .unwrap();
    let d = ws.delegation();
    assert_eq!(d.workspace_id(), ws_id);
    assert_eq!(d.subject(), "nightly-job");
    assert_eq!(d.actor(), "delegated:nightly-job");
    assert_eq!(d.operations(), &rwc);
    assert_eq!(d.correlation_id(), Some("run-17"));
    assert!(d.expires_at().ends_with('Z'), "{}", d.expires_at());

    assert_eq!(ws.fs().read_text("/notes.md").await.unwrap(), "v2\n");
    ws.fs().write("/notes.md", "v3 by the job\n").await.unwrap();
    ws.fs().write("/report.md", "done\n").await.unwrap();
    let options = CommitOptions::new("the-owner").with_correlation_id("forged");
    let committed = ws.commit(options).await.unwrap();
    assert_eq!(committed.receipt.actor, "delegated:nightly-job");
    assert_eq!(committed.receipt.correlation_id.as_deref(), Some("run-17"));
    assert_eq!(
        committed.receipt.delegation_key_id.as_deref(),
        Some("e2e-commit")
    );
    assert_eq!(committed.receipt.changes.len(), 2);
    // Every call so far reached postrust with the grant in the X-Supabash-Grant header only.
    assert_eq!(service.grant_arguments.load(Ordering::SeqCst), 0);

    // The guard refuses what the grant lacks, without a request.
    let before = service.count();
    let refusals = [
        ws.history(None, None).await.err(),
        ws.diff(DiffRef::Head, DiffRef::Staged, None, None)
            .await
            .err(),
        ws.read_revision(&committed.receipt.revision).await.err(),
        ws.restore(&committed.receipt.revision).await.err(),
        ws.checkpoint(CheckpointOptions::default()).await.err(),
        ws.checkpoints().await.err(),
        ws.delete_checkpoint("00000000-0000-4000-8000-000000000000")
            .await
            .err(),
        ws.purge(PurgeOptions::default()).await.err(),
    ];
    for e in refusals {
        let e = e.expect("refused");
        assert_eq!(e.code(), ErrorCode::Authorization, "{e}");
    }
    assert_eq!(service.count(), before, "the guard made requests");

    // The grant is the job's only way in: a stranger still cannot open the workspace.
    let owner_view = Workspace::builder(transport(Via::Postgres, &new_user()).await)
        .open(&ws_id)
        .await;
    assert_eq!(
        owner_view.err().map(|e| e.code()),
        Some(ErrorCode::Authorization),
        "a stranger still cannot open it"
    );
}

#[tokio::test]
async fn without_write_or_commit_nothing_is_committed() {
    let signer = signer("e2e-guard");
    let (ws_id, r1) = owned_workspace().await;
    let service = service();

    // read only: scratch edits stay in memory; commit and discard are refused.
    let read = ops(&[Operation::Read]);
    let token = signer.mint("reader", &ws_id, &read, 300, None).unwrap();
    let ws = DelegatedWorkspace::open(service.clone(), &token, &read, Limits::default())
        .await
        .unwrap();
    ws.fs().write("/notes.md", "scribble").await.unwrap();
    let before = service.count();
    assert_eq!(
        ws.commit(CommitOptions::new("x")).await.unwrap_err().code(),
        ErrorCode::Authorization
    );
    assert_eq!(
        ws.discard().await.unwrap_err().code(),
        ErrorCode::Authorization
    );
    assert_eq!(service.count(), before);
    let snapshot = ws.committed_snapshot().await.unwrap();
    assert_eq!(snapshot.files["/notes.md"], b"v2\n");

    // read + commit: edits need write.
    let rc = ops(&[Operation::Read, Operation::Commit]);
    let token = signer.mint("committer", &ws_id, &rc, 300, None).unwrap();
    let ws = DelegatedWorkspace::open(service.clone(), &token, &rc, Limits::default())
        .await
        .unwrap();
    ws.fs().write("/notes.md", "edit").await.unwrap();
    let e = ws.commit(CommitOptions::new("x")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authorization);
    assert!(e.message().contains("write"), "{e}");

    // read + restore + commit: a restore commits without write; the source is recorded.
    let rrc = ops(&[Operation::Read, Operation::Restore, Operation::Commit]);
    let token = signer.mint("restorer", &ws_id, &rrc, 300, None).unwrap();
    let ws = DelegatedWorkspace::open(service.clone(), &token, &rrc, Limits::default())
        .await
        .unwrap();
    let restored = ws.restore(&r1).await.unwrap();
    assert_eq!(restored.changes.len(), 1);
    let committed = ws.commit(CommitOptions::new("x")).await.unwrap();
    assert_eq!(
        committed.receipt.source_revision.as_deref(),
        Some(r1.as_str())
    );
    assert_eq!(committed.receipt.actor, "delegated:restorer");
    assert_eq!(ws.fs().read_text("/notes.md").await.unwrap(), "v1\n");
    // ...but an edit on top of a restore needs write again.
    ws.restore(&r1).await.unwrap();
    ws.fs().write("/extra.md", "x").await.unwrap();
    assert_eq!(
        ws.commit(CommitOptions::new("x")).await.unwrap_err().code(),
        ErrorCode::Authorization
    );
    assert_eq!(
        ws.history(None, None).await.unwrap_err().code(),
        ErrorCode::Authorization,
        "restore does not imply history"
    );
}

#[tokio::test]
async fn a_wrong_operation_set_is_refused_before_the_exchange_and_spends_nothing() {
    let signer = signer("e2e-expected");
    let (ws_id, _) = owned_workspace().await;
    let service = service();
    let rc = ops(&[Operation::Read, Operation::Commit]);
    let token = signer.mint("job", &ws_id, &rc, 300, None).unwrap();
    for expected in [
        ops(&[Operation::Read]),
        ops(&[Operation::Read, Operation::Commit, Operation::Write]),
        ops(&[Operation::Read, Operation::History]),
    ] {
        let e = DelegatedWorkspace::open(service.clone(), &token, &expected, Limits::default())
            .await
            .err()
            .expect("refused");
        assert_eq!(e.code(), ErrorCode::InvalidCapability);
        assert_quiet(&e, &token);
    }
    assert_eq!(service.count(), 0, "no request before the operation check");
    // Without read, a capability never opens.
    let commit_only = ops(&[Operation::Commit]);
    let blind = signer.mint("job", &ws_id, &commit_only, 300, None).unwrap();
    let e = DelegatedWorkspace::open(service.clone(), &blind, &commit_only, Limits::default())
        .await
        .err()
        .expect("refused");
    assert_eq!(e.code(), ErrorCode::InvalidCapability);
    assert_eq!(service.count(), 0);

    // The nonce was not spent: the same token opens with the right set, once.
    let ws = DelegatedWorkspace::open(service.clone(), &token, &rc, Limits::default())
        .await
        .unwrap();
    assert_eq!(ws.id(), ws_id);
    let e = DelegatedWorkspace::open(service.clone(), &token, &rc, Limits::default())
        .await
        .err()
        .expect("a replay is refused");
    assert_eq!(e.code(), ErrorCode::InvalidCapability);
    assert_quiet(&e, &token);

    // Expired and forged capabilities fail at the exchange with their codes.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let old = signer
        .sign(&signer.claims("job", &ws_id, &rc, now - 2000, 600, None))
        .unwrap();
    let e = DelegatedWorkspace::open(service.clone(), &old, &rc, Limits::default())
        .await
        .err()
        .expect("expired");
    assert_eq!(e.code(), ErrorCode::ExpiredCapability, "{e}");
    let forger = PostgresSigner::new(
        "e2e-expected",
        &supabash_core::capability::b64_encode(&[1u8; 32]),
        ISS,
        AUD,
        ORIGIN,
    )
    .unwrap();
    let forged = forger.mint("job", &ws_id, &rc, 300, None).unwrap();
    let e = DelegatedWorkspace::open(service.clone(), &forged, &rc, Limits::default())
        .await
        .err()
        .expect("forged");
    assert_eq!(e.code(), ErrorCode::InvalidCapability, "{e}");
    assert_quiet(&e, &forged);

    // Nothing of these tokens reached the server log through postrust either.
    let log = server_log(cluster());
    for t in [&token, &blind, &old, &forged] {
        let signature = t.rsplit('.').next().unwrap();
        assert!(!log.contains(signature), "the server log holds a token");
    }
}

#[tokio::test]
async fn fork_leases_and_audit_are_grant_checked() {
    use std::time::Duration;
    use supabash::workspace::ForkOptions;
    let signer = signer("e2e-more-ops");
    let (ws_id, _) = owned_workspace().await;
    let service = service();
    let rfch = ops(&[
        Operation::Read,
        Operation::Fork,
        Operation::Commit,
        Operation::History,
    ]);
    let token = signer.mint("fork-job", &ws_id, &rfch, 300, None).unwrap();
    let ws = DelegatedWorkspace::open(service.clone(), &token, &rfch, Limits::default())
        .await
        .unwrap();
    let forked = ws.fork(ForkOptions::new("ignored")).await.unwrap();
    assert_ne!(forked.workspace_id, ws_id);
    assert_eq!(forked.forked_from.workspace_id, ws_id);
    let lease = ws
        .acquire_lease("fork-job", Duration::from_secs(30))
        .await
        .unwrap();
    let held = ws.lease().await.unwrap().expect("a lease is held");
    assert_eq!(held.holder, "fork-job");
    ws.renew_lease(Duration::from_secs(30)).await.unwrap();
    assert!(ws.release_lease().await.unwrap());
    assert!(!lease.token.is_empty());
    // A history grant reads the audit trail (the answer is checked by tests/tests/audit.rs).
    ws.audit(None, None).await.unwrap();

    // A redact grant redacts (a dry run here: the report, nothing scrubbed), grant-checked by
    // the database.
    let rr = ops(&[Operation::Read, Operation::Redact]);
    let token = signer.mint("redactor", &ws_id, &rr, 300, None).unwrap();
    let red = DelegatedWorkspace::open(service.clone(), &token, &rr, Limits::default())
        .await
        .unwrap();
    let report = red
        .redact(supabash::workspace::RedactOptions::new().path("/notes.md"))
        .await
        .unwrap();
    assert!(report.dry_run);
    assert!(!report.revisions.is_empty(), "{report:?}");
    assert_eq!(red.fs().read("/notes.md").await.unwrap(), b"v2\n");

    // A read-only grant: each is refused locally, without a request.
    let read = ops(&[Operation::Read]);
    let token = signer.mint("reader", &ws_id, &read, 300, None).unwrap();
    let ro = DelegatedWorkspace::open(service.clone(), &token, &read, Limits::default())
        .await
        .unwrap();
    let before = service.count();
    let denied = [
        ro.fork(ForkOptions::new("x")).await.err(),
        ro.acquire_lease("x", Duration::from_secs(30)).await.err(),
        ro.release_lease().await.err(),
        ro.audit(None, None).await.err(),
        ro.redact(supabash::workspace::RedactOptions::default())
            .await
            .err(),
    ];
    for e in denied {
        let e = e.expect("refused");
        assert_eq!(e.code(), ErrorCode::Authorization, "{e}");
    }
    assert_eq!(service.count(), before, "no request was made");
    assert!(
        ro.lease().await.unwrap().is_none(),
        "read sees the lease state"
    );
}

/// A job adds a note with `commit` (recorded as the grant's actor) and reads notes and watches
/// with `history`; without those the guard refuses before any request.
#[tokio::test]
async fn notes_and_watch_are_grant_checked() {
    let signer = signer("e2e-notes");
    let (ws_id, r1) = owned_workspace().await;
    let service = service();
    let all = ops(&[Operation::Read, Operation::Commit, Operation::History]);
    let token = signer.mint("grader", &ws_id, &all, 300, None).unwrap();
    let ws = DelegatedWorkspace::open(service.clone(), &token, &all, Limits::default())
        .await
        .unwrap();
    let note = ws.add_note(&r1, "eval", json!({"score": 1})).await.unwrap();
    assert_eq!(note.actor, "delegated:grader");
    assert_eq!(ws.notes(&r1, None).await.unwrap(), vec![note]);
    let watch = ws.watch(None).await.unwrap();
    assert_eq!(watch.last().map(|l| l.position), Some(2));

    let read_only = ops(&[Operation::Read]);
    let token = signer
        .mint("reader", &ws_id, &read_only, 300, None)
        .unwrap();
    let ws = DelegatedWorkspace::open(service.clone(), &token, &read_only, Limits::default())
        .await
        .unwrap();
    let before = service.count();
    let refusals = [
        ws.add_note(&r1, "eval", json!(0)).await.err(),
        ws.notes(&r1, None).await.err(),
        ws.watch(None).await.err(),
    ];
    for e in refusals {
        assert_eq!(e.expect("refused").code(), ErrorCode::Authorization);
    }
    assert_eq!(service.count(), before, "the guard made requests");
}

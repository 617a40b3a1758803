//! A delegated workspace as an agent mount, end to end through postrust (a PostgREST-compatible
//! server) with a service-role key: read-only without `write`, writable with it.

use supabash_tests::client as support;

use serde_json::json;
use std::sync::Arc;
use supabash::capability::PostgresSigner;
use supabash::workspace::{CommitOptions, Workspace};
use supabash::{DelegatedWorkspace, ErrorCode, Limits, PostgrestTransport, Transport};
use supabash_agent::{AgentFs, DelegatedMount, MountedFs, SnapshotLimits};
use supabash_core::capability::{Operation, OperationSet};
use supabash_tests::capability::register;
use support::{cluster, new_user, postrust_url, sign, transport, Via};

const ISS: &str = "https://issuer.test";
const AUD: &str = "supabash";
const ORIGIN: &str = "https://project.test";

/// The service-role transport through postrust.
fn service() -> Arc<dyn Transport> {
    let token = sign(&json!({ "role": "service_role", "exp": 4_000_000_000u64 }));
    Arc::new(PostgrestTransport::new(
        postrust_url(),
        "test-service-key",
        &token,
    ))
}

fn signer(kid: &str) -> PostgresSigner {
    let secret = register(cluster(), kid, ISS, AUD, ORIGIN);
    PostgresSigner::new(kid, &secret, ISS, AUD, ORIGIN).unwrap()
}

fn ops(list: &[Operation]) -> OperationSet {
    OperationSet::new(list.iter().copied()).unwrap()
}

/// A user's workspace with `/notes.md` committed twice; its id.
async fn owned_workspace() -> String {
    let ws = Workspace::builder(transport(Via::Postgrest, &new_user()).await)
        .create()
        .await
        .unwrap();
    ws.fs().write("/notes.md", "v1\n").await.unwrap();
    ws.commit(CommitOptions::new("owner")).await.unwrap();
    ws.fs().write("/notes.md", "v2\n").await.unwrap();
    ws.commit(CommitOptions::new("owner")).await.unwrap();
    ws.id().to_owned()
}

/// An agent's mount of a delegated workspace is read-only without `write`, writable with it.
#[tokio::test]
async fn an_agent_mount_follows_the_write_operation() {
    let signer = signer("e2e-mount");
    let ws_id = owned_workspace().await;
    let service = service();
    for (set, writable) in [
        (ops(&[Operation::Read, Operation::Commit]), false),
        (
            ops(&[Operation::Read, Operation::Write, Operation::Commit]),
            true,
        ),
    ] {
        let token = signer.mint("agent", &ws_id, &set, 300, None).unwrap();
        let ws = DelegatedWorkspace::open(service.clone(), &token, &set, Limits::default())
            .await
            .unwrap();
        let mount = ws
            .mount("/work", None, SnapshotLimits::default())
            .await
            .unwrap();
        assert_eq!(mount.record().writable, writable);
        let fs = MountedFs::new(vec![mount]).unwrap();
        assert_eq!(fs.read("/work/notes.md").await.unwrap(), b"v2\n");
        let written = fs.write("/work/notes.md", b"agent".to_vec()).await;
        if writable {
            written.unwrap();
            assert_eq!(ws.changes().unwrap().len(), 1);
            let committed = ws.commit(CommitOptions::new("agent")).await.unwrap();
            assert_eq!(committed.receipt.actor, "delegated:agent");
        } else {
            assert_eq!(written.unwrap_err().code(), ErrorCode::PolicyDenied);
            assert!(ws.changes().unwrap().is_empty());
        }
    }
}

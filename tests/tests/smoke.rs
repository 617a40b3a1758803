//! The harness works end to end: a user creates a workspace, commits, and reads it back;
//! another user and anon cannot.

use serde_json::json;
use supabash_tests::{Caller, Cluster, SqlRpc};

#[tokio::test]
async fn create_commit_read_and_deny_others() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let alice = Caller::User(uuid::Uuid::new_v4().to_string());
    let ws = rest
        .call(&alice, "supabash_create_workspace", json!({}))
        .await
        .unwrap();
    let ws = ws["workspaceId"].as_str().unwrap().to_owned();
    let r = rest
        .call(
            &alice,
            "supabash_commit",
            json!({
                "workspace_id": ws, "actor": "smoke",
                "changes": [{"op": "upsert", "path": "/a.md", "text": "hello"}]
            }),
        )
        .await
        .unwrap();
    assert_eq!(r["receipt"]["changes"][0]["afterSize"], json!(5));
    let m = rest
        .call(
            &alice,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap();
    assert_eq!(m["files"][0]["path"], json!("/a.md"));

    let bob = Caller::User(uuid::Uuid::new_v4().to_string());
    let e = rest
        .call(
            &bob,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "42501");
    assert!(e.message.starts_with("SUPABASH_WORKSPACE_DENIED"), "{e}");
    let e = rest
        .call(
            &Caller::Anon,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "42501");
    assert!(e.message.contains("permission denied"), "{e}");
}

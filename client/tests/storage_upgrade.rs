//! A workspace written by 0.6.0's layout (a full manifest per revision, `head.json` naming it,
//! one content-addressed object per body) opens, keeps its history readable and upgrades on its
//! next commit. The stored workspace is `fixtures/storage-0.6.0.json` (every object under the
//! prefix: key, content type, user metadata, bytes), written by 0.6.0's own writer with the
//! ignored test below (`SUPABASH_WRITE_FIXTURE=1`).
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use base64::Engine;
use serde_json::{json, Value};
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::api::Upload;
use supabash::workspace::CommitOptions;
use supabash_tests::storage_server::StorageServer;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/storage-0.6.0.json"
);

/// The user the fixture was written for.
fn fixture_session(fixture: &Value) -> Session {
    let user_id = fixture["userId"].as_str().unwrap().to_owned();
    Session {
        access_token: StorageServer::user_token(&user_id),
        user_id,
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// Loads the stored 0.6.0 workspace into its user's folder.
async fn load_fixture(server: &StorageServer) -> (Session, Value) {
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    let session = fixture_session(&fixture);
    let api = service_api(server, &session);
    let uploads = fixture["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| Upload {
            key: format!("{}/{}", session.user_id, o["key"].as_str().unwrap()),
            body: b64().decode(o["body"].as_str().unwrap()).unwrap(),
            content_type: match o["contentType"].as_str().unwrap() {
                "application/json" => "application/json",
                "application/vnd.supabash.directory" => "application/vnd.supabash.directory",
                "application/vnd.supabash.symlink" => "application/vnd.supabash.symlink",
                _ => "application/octet-stream",
            },
            metadata: o["metadata"].clone(),
        })
        .collect();
    api.upload_all(uploads).await.unwrap();
    (session, fixture)
}

#[tokio::test]
async fn a_0_6_0_workspace_opens_and_upgrades_on_its_next_commit() {
    let server = server().await;
    let (session, fixture) = load_fixture(&server).await;
    let ws = open(&server, &session).await;
    let fs = ws.fs();
    assert_eq!(fs.read_text("/notes/été.md").await.unwrap(), "bonjour v2\n");
    assert_eq!(fs.read("/bin.dat").await.unwrap(), binary());
    assert_eq!(fs.readlink("/link").await.unwrap(), "notes/été.md");
    assert_eq!(fs.stat("/bin.dat").await.unwrap().mode & 0o777, 0o600);
    assert_eq!(
        fs.stat("/notes/empty").await.unwrap().kind,
        supabash::tree::FileKind::Directory
    );
    assert!(fs.stat("/gone.md").await.is_err());
    let head = fixture["head"].as_str().unwrap();
    assert_eq!(ws.base_revision().as_deref(), Some(head));
    // History and the old revisions stay readable.
    let history = ws.history(None, None).await.unwrap();
    assert_eq!(history.records.len(), 2);
    let first = history.records[0].revision.clone();
    assert_eq!(
        ws.read_revision_file(&first, "/gone.md").await.unwrap(),
        b"gone soon"
    );

    // The next commit upgrades the layout; everything old is still there.
    fs.write("/new.md", "after the upgrade").await.unwrap();
    ws.commit(CommitOptions::new("upgrader")).await.unwrap();
    let raw = service_api(&server, &session)
        .read_json(&format!("{}/.supabash/head.json", session.user_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw["schemaVersion"], 2, "{raw}");
    let again = open(&server, &session).await;
    assert_eq!(dump(again.fs()).await.len(), dump(fs).await.len());
    assert_eq!(
        again.fs().read_text("/new.md").await.unwrap(),
        "after the upgrade"
    );
    assert_eq!(again.fs().read("/bin.dat").await.unwrap(), binary());
    let history = again.history(None, None).await.unwrap();
    assert_eq!(history.records.len(), 3);
    assert_eq!(
        again.read_revision_file(&first, "/gone.md").await.unwrap(),
        b"gone soon"
    );
    let diff = again
        .diff(
            supabash::workspace::DiffRef::Revision(first),
            supabash::workspace::DiffRef::Head,
        )
        .await
        .unwrap();
    assert!(diff.entries.iter().any(|e| e.path == "/new.md"));
    assert!(diff.entries.iter().any(|e| e.path == "/gone.md"));
}

fn binary() -> Vec<u8> {
    (0..=255u8).cycle().take(3_000).collect()
}

/// Writes `fixtures/storage-0.6.0.json` with the layout of the code it runs with (run it with
/// 0.6.0's writer only).
#[tokio::test]
#[ignore = "writes the 0.6.0 fixture; run with SUPABASH_WRITE_FIXTURE=1 on 0.6.0's code"]
async fn write_the_0_6_0_fixture() {
    if std::env::var("SUPABASH_WRITE_FIXTURE").is_err() {
        return;
    }
    let server = server().await;
    let session = new_session();
    let ws = open(&server, &session).await;
    let fs = ws.fs();
    fs.mkdir("/notes/empty", true).await.unwrap();
    fs.write("/notes/été.md", "bonjour\n").await.unwrap();
    fs.write("/gone.md", "gone soon").await.unwrap();
    ws.commit(CommitOptions::new("v0.6.0")).await.unwrap();
    fs.write("/notes/été.md", "bonjour v2\n").await.unwrap();
    fs.write("/bin.dat", binary()).await.unwrap();
    fs.chmod("/bin.dat", 0o600).await.unwrap();
    fs.symlink("notes/été.md", "/link").await.unwrap();
    fs.rm("/gone.md", false, false).await.unwrap();
    let r = ws.commit(CommitOptions::new("v0.6.0")).await.unwrap();
    let api = service_api(&server, &session);
    let mut objects = Vec::new();
    for listed in api.list(&format!("{}/", session.user_id)).await.unwrap() {
        let info = api.info(&listed.name).await.unwrap().unwrap();
        let body = api.download(&listed.name).await.unwrap().unwrap();
        objects.push(json!({
            "key": &listed.name[session.user_id.len() + 1..],
            "contentType": info.content_type,
            "metadata": info.metadata,
            "body": b64().encode(body),
        }));
    }
    let fixture = json!({
        "layout": "0.6.0",
        "userId": session.user_id,
        "head": r.receipt.revision,
        "objects": objects,
    });
    std::fs::write(
        FIXTURE,
        serde_json::to_string_pretty(&fixture).unwrap() + "\n",
    )
    .unwrap();
}

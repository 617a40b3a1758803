//! The Storage backend where the real Storage server is strict (reference:
//! supabase-storage-api.md; the test server reproduces each point): names longer than a key
//! segment may be, 5xx answers, a host's own failed commit, an expired session, bucket
//! restrictions, and the upload concurrency setting.
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use serde_json::json;
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::model::{Intent, SCHEMA_VERSION};
use supabash::storage::setup::{check_bucket, create_bucket};
use supabash::storage::{StorageApi, StorageConfig, StorageWorkspace};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits};
use supabash_tests::storage_server::{Fault, StorageServer};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Every key stored under the session's folder.
async fn stored_keys(server: &StorageServer, session: &Session) -> Vec<String> {
    service_api(server, session)
        .list(&format!("{}/", session.user_id))
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.name)
        .collect()
}

/// Names whose escaped keys pass 255 bytes a segment or 1,024 bytes a key commit, reopen the
/// same, and (with the head gone) are read back from the visible objects' metadata.
#[tokio::test]
async fn long_names_commit_and_reopen() {
    let server = server().await;
    let session = new_session();
    let limits = Limits::default().with_max_path_chars(4096);
    let cfg = config(&server);
    let open_long = || StorageWorkspace::open_for_session(&cfg, &session, limits.clone());
    let ws = open_long().await.unwrap();
    let fs = ws.fs();
    fs.mkdir("/notes", false).await.unwrap();
    let cjk = format!("/notes/{}.md", "語".repeat(30));
    let accents = format!("/{}", "é".repeat(127));
    let long_dir = format!("/{}", "ü".repeat(100));
    let deep = format!("/{}", vec!["d".repeat(250); 5].join("/"));
    fs.write(&cjk, "thirty CJK characters").await.unwrap();
    fs.write(&accents, "254 bytes of é").await.unwrap();
    fs.mkdir(&format!("{long_dir}/empty"), true).await.unwrap();
    fs.write(&format!("{long_dir}/inside.md"), "under a long directory")
        .await
        .unwrap();
    fs.mkdir(&deep, true).await.unwrap();
    fs.write(&format!("{deep}/f.md"), "a key over 1,024 bytes")
        .await
        .unwrap();
    fs.symlink(&cjk[1..], &format!("/{}", "link-語".repeat(20)))
        .await
        .unwrap();
    let staged = dump(fs).await;
    ws.commit(CommitOptions::new("long")).await.unwrap();
    for key in stored_keys(&server, &session).await {
        assert!(key.len() <= 1024, "{key}");
        assert!(key.split('/').all(|s| s.len() <= 255), "{key}");
    }
    assert_eq!(dump(open_long().await.unwrap().fs()).await, staged);
    // Without a published head the tree comes from the visible objects alone.
    service_api(&server, &session)
        .delete(&[format!("{}/.supabash/head.json", session.user_id)])
        .await
        .unwrap();
    let listed = open_long().await.unwrap();
    assert_eq!(listed.base_revision(), None);
    assert_eq!(dump(listed.fs()).await, staged);
}

/// The test server refuses a key segment over 255 bytes as the real file backend does: HTTP
/// 500 with an `InternalError` body; the client's error names status and message.
#[tokio::test]
async fn a_server_error_is_named() {
    let server = server().await;
    let session = new_session();
    let api = user_api(&server, &session);
    let key = format!("{}/{}", session.user_id, "a".repeat(256));
    let raw = reqwest::Client::new()
        .post(format!("{}/object/{BUCKET}/{key}", server.url))
        .bearer_auth(&session.access_token)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 500);
    let body: serde_json::Value = serde_json::from_slice(&raw.bytes().await.unwrap()).unwrap();
    assert_eq!(body["statusCode"], "500");
    assert_eq!(body["code"], "InternalError");
    // The client refuses such a key before sending it.
    let e = api
        .upload(&key, b"x".to_vec(), "text/plain", &json!({}), true)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidPath, "{e}");

    // A 500 after the intent: PARTIAL_COMMIT whose message carries the server's answer.
    let ws = open(&server, &session).await;
    ws.fs().write("/a.md", "a").await.unwrap();
    // Mutations: the revision pack and the first snapshot (0, 1), the intent (2), the visible
    // object (3).
    server.inject(Some(Fault::Internal(3)));
    let e = ws.commit(CommitOptions::new("x")).await.unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::PartialCommit, "{e}");
    assert!(e.outcome_unknown());
    assert!(
        e.to_string()
            .contains("storage answered 500 InternalError: Internal Server Error"),
        "{e}"
    );
    // Before the intent: a plain BACKEND error, named the same way.
    ws.discard().await.unwrap();
    ws.fs().write("/b.md", "b").await.unwrap();
    server.inject(Some(Fault::Internal(0)));
    let e = ws.commit(CommitOptions::new("x")).await.unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    assert!(e.to_string().contains("500 InternalError"), "{e}");
}

/// A host that opens a fresh workspace per request (no discard) is not blocked by its own
/// failed commit, with the default stale window; another host's fresh intent still blocks.
#[tokio::test]
async fn a_hosts_own_failed_intent_does_not_block_its_next_commit() {
    let server = server().await;
    let session = new_session();
    let cfg = StorageConfig::new(server.url.clone(), BUCKET);
    let first = StorageWorkspace::open_for_session(&cfg, &session, Limits::default())
        .await
        .unwrap();
    first
        .fs()
        .write("/lost.md", "never published")
        .await
        .unwrap();
    // The visible upload after the pack, the snapshot and the intent fails.
    server.inject(Some(Fault::Before(3)));
    let e = first.commit(CommitOptions::new("a")).await.unwrap_err();
    server.inject(None);
    assert_eq!(e.code(), ErrorCode::PartialCommit, "{e}");
    drop(first);

    let next = StorageWorkspace::open_for_session(&cfg, &session, Limits::default())
        .await
        .unwrap();
    assert!(!next.fs().exists("/lost.md").await, "rolled back at open");
    next.fs()
        .write("/next.md", "the next request")
        .await
        .unwrap();
    next.commit(CommitOptions::new("b")).await.unwrap();

    // Another host's fresh intent: this host's commit waits for it (retryable).
    let tx = uuid::Uuid::new_v4().to_string();
    let intent = Intent {
        transaction_id: tx.clone(),
        new_revision: uuid::Uuid::new_v4().to_string(),
        parent_revision: next.base_revision(),
        fingerprint: "f".repeat(64),
        idempotency_key: None,
        touched: Vec::new(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        created_ms: now_ms(),
        host: Some("another-host".into()),
        schema_version: SCHEMA_VERSION,
    };
    // It lies in the head, as every commit in flight does.
    let api = user_api(&server, &session);
    let head_key = format!("{}/.supabash/head.json", session.user_id);
    let mut head = api.read_json(&head_key).await.unwrap().unwrap();
    head["pending"] = serde_json::to_value(&intent).unwrap();
    api.write_json(&head_key, &head, true).await.unwrap();
    next.fs().write("/blocked.md", "waits").await.unwrap();
    let e = next.commit(CommitOptions::new("c")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::CommitCoordination, "{e}");
    assert!(e.is_retryable());
}

/// An expired user token: the real server's answer (403 `AccessDenied`, `"exp" claim timestamp
/// check failed`), mapped to AUTHENTICATION (log in again), not AUTHORIZATION.
#[tokio::test]
async fn an_expired_session_is_authentication() {
    let server = server().await;
    let user_id = uuid::Uuid::new_v4().to_string();
    let expired = StorageServer::token(json!({
        "role": "authenticated",
        "sub": user_id,
        "exp": now_ms() / 1000 - 10,
    }));
    let raw = reqwest::Client::new()
        .get(format!(
            "{}/object/info/{BUCKET}/{user_id}/.supabash/head.json",
            server.url
        ))
        .bearer_auth(&expired)
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);
    let body: serde_json::Value = serde_json::from_slice(&raw.bytes().await.unwrap()).unwrap();
    assert_eq!(
        body,
        json!({
            "statusCode": "403",
            "error": "Unauthorized",
            "message": "\"exp\" claim timestamp check failed",
            "code": "AccessDenied",
        })
    );
    let session = Session {
        access_token: expired,
        user_id,
    };
    let e = StorageWorkspace::open_for_session(&config(&server), &session, Limits::default())
        .await
        .err()
        .expect("an expired session cannot open");
    assert_eq!(e.code(), ErrorCode::Authentication, "{e}");
}

/// `allowed_mime_types` refuses the backend's own uploads (415) and `file_size_limit` large
/// files (413, QUOTA_EXCEEDED); `check_bucket` names both and what to change.
#[tokio::test]
async fn bucket_restrictions_are_reported() {
    let server = server().await;
    let bucket = format!(
        "restricted-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let service = StorageServer::service_key();
    assert!(create_bucket(&server.url, &service, &bucket).await.unwrap());
    let admin = supabash_tests::support::admin(cluster()).await;
    let set = |sql: String| {
        let admin = &admin;
        async move { admin.batch_execute(&sql).await.unwrap() }
    };
    set(format!(
        "UPDATE storage.buckets SET allowed_mime_types = '{{text/plain}}', file_size_limit = 4000
          WHERE id = '{bucket}'"
    ))
    .await;
    let api = StorageApi::new(&server.url, &bucket, "job/", &service, None).unwrap();
    let ws = StorageWorkspace::open(api.clone(), Limits::default())
        .await
        .unwrap();
    ws.fs().write("/a.md", "small").await.unwrap();
    let e = ws.commit(CommitOptions::new("x")).await.unwrap_err();
    assert!(e.to_string().contains("415 InvalidMimeType"), "{e}");
    let report = check_bucket(&admin, &bucket, &Limits::default())
        .await
        .unwrap();
    assert!(!report.ok());
    assert_eq!(report.refused_types.len(), 4, "{report:?}");
    let advice = report.advice(&bucket).join("\n");
    assert!(advice.contains("allowed_mime_types refuses application/octet-stream"));
    assert!(advice.contains("file_size_limit is 4000 bytes"), "{advice}");

    set(format!(
        "UPDATE storage.buckets SET allowed_mime_types = '{{application/*}}' WHERE id = '{bucket}'"
    ))
    .await;
    ws.commit(CommitOptions::new("x")).await.unwrap();
    ws.fs().write("/big.bin", vec![7u8; 5000]).await.unwrap();
    let e = ws.commit(CommitOptions::new("x")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}");
    let report = check_bucket(&admin, &bucket, &Limits::default())
        .await
        .unwrap();
    assert!(
        report.refused_types.is_empty() && !report.ok(),
        "{report:?}"
    );

    set(format!(
        "UPDATE storage.buckets SET file_size_limit = NULL WHERE id = '{bucket}'"
    ))
    .await;
    let report = check_bucket(&admin, &bucket, &Limits::default())
        .await
        .unwrap();
    assert!(report.ok(), "{report:?}");
    ws.commit(CommitOptions::new("x")).await.unwrap();
}

/// Upload concurrency is a setting (default 16): a commit never runs more uploads at once.
#[tokio::test]
async fn upload_concurrency_is_a_setting() {
    let server = server().await;
    assert_eq!(
        StorageConfig::new("http://x", BUCKET).upload_concurrency,
        16
    );
    let session = new_session();
    let cfg = config(&server).with_upload_concurrency(2);
    let ws = StorageWorkspace::open_for_session(&cfg, &session, Limits::default())
        .await
        .unwrap();
    for i in 0..24 {
        ws.fs()
            .write(&format!("/f{i}.md"), format!("{i}"))
            .await
            .unwrap();
    }
    server.inject(None);
    ws.commit(CommitOptions::new("x")).await.unwrap();
    let peak = server.peak_mutations();
    assert!((1..=2).contains(&peak), "{peak} uploads ran at once");

    let zero = config(&server).with_upload_concurrency(0);
    let e = StorageWorkspace::open_for_session(&zero, &session, Limits::default())
        .await
        .err()
        .expect("zero uploads at a time is refused");
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

/// Storage answers stop at the configured cap (`QUOTA_EXCEEDED`, naming it), whether the object
/// is read directly or through a workspace; an answer within it passes, and a cap of 0 is
/// refused.
#[tokio::test]
async fn storage_answers_stop_at_the_cap() {
    let server = server().await;
    let session = new_session();
    let big = format!("{}/big.bin", session.user_id);
    let small = format!("{}/small.bin", session.user_id);
    put(
        &user_api(&server, &session),
        &big,
        &[7; 4096],
        "application/octet-stream",
    )
    .await;
    put(
        &user_api(&server, &session),
        &small,
        &[7; 512],
        "application/octet-stream",
    )
    .await;
    let capped = user_api(&server, &session)
        .with_max_answer_bytes(1024)
        .unwrap();
    assert_eq!(capped.download(&small).await.unwrap().unwrap().len(), 512);
    let e = capped.download(&big).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}");
    assert!(e.to_string().contains("1024"), "{e}");

    // Through a workspace: the manifest fits, the body does not.
    let ws = open(&server, &session).await;
    ws.fs().write("/big.md", "b".repeat(8192)).await.unwrap();
    ws.commit(CommitOptions::new("big")).await.unwrap();
    let cfg = config(&server).with_max_answer_bytes(4096);
    let ws = StorageWorkspace::open_for_session(&cfg, &session, Limits::default())
        .await
        .unwrap();
    let e = ws.fs().read("/big.md").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}");

    let zero = config(&server).with_max_answer_bytes(0);
    let e = StorageWorkspace::open_for_session(&zero, &session, Limits::default())
        .await
        .err()
        .expect("a cap of 0 is refused");
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

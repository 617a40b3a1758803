//! The Storage backend end to end, against the Storage API test server (rows in the real
//! `storage.objects` with the policies of `sql/storage.sql`): opening from a session, files,
//! directories, symbolic links, modes and mtimes surviving a reopen, non-ASCII names, the
//! reserved area, lazy verified bodies, conflicts, idempotency and the capability open.
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use std::time::{Duration, SystemTime};
use storage_support::*;
use supabash::workspace::CommitOptions;
use supabash::ErrorCode;
use supabash_tests::storage_server::StorageServer;

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

#[tokio::test]
async fn a_reopen_reproduces_the_tree() {
    let server = server().await;
    let session = new_session();
    let ws = open(&server, &session).await;
    assert_eq!(ws.base_revision(), None);
    let fs = ws.fs();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    fs.mkdir("/notes/empty", true).await.unwrap();
    fs.write("/notes/été.md", "bonjour\n").await.unwrap();
    fs.write("/bin.dat", binary.clone()).await.unwrap();
    fs.write("/my notes?.txt", "").await.unwrap();
    fs.symlink("notes/été.md", "/link").await.unwrap();
    fs.chmod("/bin.dat", 0o600).await.unwrap();
    fs.chmod("/notes/empty", 0o700).await.unwrap();
    fs.utimes("/notes/été.md", at(1_700_000_000_123))
        .await
        .unwrap();
    let before = dump(fs).await;
    let changes = ws.changes().unwrap();
    assert!(changes.iter().any(|t| t.path == "/notes/empty"));

    let r = ws
        .commit(CommitOptions::new("tester"))
        .await
        .expect("commit");
    assert!(!r.replayed);
    assert_eq!(r.receipt.position, 1);
    assert_eq!(
        ws.base_revision().as_deref(),
        Some(r.receipt.revision.as_str())
    );
    assert!(ws.changes().unwrap().is_empty());

    // What Storage holds: encoded keys, a marker for the empty directory, the reserved area.
    let service = service_api(&server, &session);
    let keys: Vec<String> = service
        .list(&format!("{}/", session.user_id))
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.name[session.user_id.len() + 1..].to_owned())
        .collect();
    for want in [
        "notes/!C3!A9t!C3!A9.md",
        "notes/empty/.supabash-directory",
        "my notes!3F.txt",
        "link",
        "bin.dat",
        ".supabash/head.json",
    ] {
        assert!(keys.iter().any(|k| k == want), "{want} not in {keys:?}");
    }
    let link = service
        .info(&format!("{}/link", session.user_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link.metadata["supabash_kind"], "symlink");
    assert_eq!(link.metadata["supabash_target"], "notes/été.md");

    let again = open(&server, &session).await;
    assert_eq!(again.base_revision(), ws.base_revision());
    let after = dump(again.fs()).await;
    assert_eq!(after, before);
    assert_eq!(after["/bin.dat"].content, binary);
    assert_eq!(after["/bin.dat"].mode, 0o600);
    assert_eq!(after["/notes/empty"].mode, 0o700);
    assert_eq!(after["/notes/été.md"].mtime_ms, 1_700_000_000_123);
    assert_eq!(again.fs().read_text("/link").await.unwrap(), "bonjour\n");

    // The reserved area is invisible and unreachable from the tree.
    let entries = again.fs().readdir("/").await.unwrap();
    let top: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert!(!top.iter().any(|n| n.starts_with(".supabash")), "{top:?}");
    assert!(again.fs().write("/.supabash/head.json", "x").await.is_err());

    // Deleting and editing, then a third open.
    again.fs().rm("/notes", true, false).await.unwrap();
    again.fs().write("/bin.dat", "small").await.unwrap();
    let r2 = again.commit(CommitOptions::new("tester")).await.unwrap();
    assert_eq!(r2.receipt.position, 2);
    assert_eq!(
        r2.receipt.parent_revision.as_deref(),
        Some(r.receipt.revision.as_str())
    );
    let third = open(&server, &session).await;
    let d = dump(third.fs()).await;
    assert!(!d.contains_key("/notes/été.md") && !d.contains_key("/notes/empty"));
    assert_eq!(d["/bin.dat"].content, b"small");
    assert_eq!(d["/bin.dat"].mode, 0o600);
}

#[tokio::test]
async fn objects_written_by_others_open_without_history() {
    let server = server().await;
    let session = new_session();
    let api = user_api(&server, &session);
    let key = format!("{}/docs/plain.txt", session.user_id);
    put(&api, &key, b"foreign", "text/plain").await;
    let ws = open(&server, &session).await;
    assert_eq!(
        ws.fs().read_text("/docs/plain.txt").await.unwrap(),
        "foreign"
    );
    ws.fs().write("/docs/plain.txt", "mine").await.unwrap();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    assert_eq!(api.download(&key).await.unwrap().unwrap(), b"mine");
}

#[tokio::test]
async fn bodies_load_lazily_and_are_verified() {
    let server = server().await;
    let session = new_session();
    let ws = open(&server, &session).await;
    ws.fs().write("/a.txt", "original").await.unwrap();
    let big: Vec<u8> = (0..1_100_000u32).map(|i| (i % 251) as u8).collect();
    ws.fs().write("/big.bin", big.clone()).await.unwrap();
    let r = ws.commit(CommitOptions::new("t")).await.unwrap();
    // Change the packed body behind the client's back (service key): same length, other bytes.
    let service = service_api(&server, &session);
    let pack = format!(
        "{}/.supabash/revisions/{}.pack",
        session.user_id, r.receipt.revision
    );
    let bytes = service.download(&pack).await.unwrap().unwrap();
    let at = bytes.windows(8).position(|w| w == b"original").unwrap();
    let mut tampered = bytes.clone();
    tampered[at..at + 8].copy_from_slice(b"ORIGINAL");
    put(&service, &pack, &tampered, "application/octet-stream").await;
    let again = open(&server, &session).await;
    let e = again.fs().read("/a.txt").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::HistoryCorruption);
    // A body too large for the pack is stored alone, and checked the same way.
    let hash = supabash_core::hash::sha256_hex(&big);
    let key = format!("{}/.supabash/objects/{hash}", session.user_id);
    assert_eq!(service.download(&key).await.unwrap().unwrap(), big);
    put(&service, &key, b"tampered", "application/octet-stream").await;
    let e = again.fs().read("/big.bin").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::HistoryCorruption);
}

#[tokio::test]
async fn per_path_conflicts_and_rebase() {
    let server = server().await;
    let session = new_session();
    let a = open(&server, &session).await;
    a.fs().write("/shared.md", "v1").await.unwrap();
    a.commit(CommitOptions::new("a")).await.unwrap();
    let b = open(&server, &session).await;
    a.fs().write("/shared.md", "v2 by a").await.unwrap();
    a.commit(CommitOptions::new("a")).await.unwrap();

    // b touches another path: rebased onto a's head, and sees a's change afterwards.
    b.fs().write("/other.md", "b").await.unwrap();
    let r = b.commit(CommitOptions::new("b")).await.unwrap();
    assert_eq!(r.receipt.position, 3);
    assert_eq!(b.fs().read_text("/shared.md").await.unwrap(), "v2 by a");

    // A stale path is a conflict, and nothing is published.
    let c = open(&server, &session).await;
    b.fs().write("/shared.md", "v3 by b").await.unwrap();
    b.commit(CommitOptions::new("b")).await.unwrap();
    c.fs().write("/shared.md", "v3 by c").await.unwrap();
    let e = c.commit(CommitOptions::new("c")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::CommitConflict);
    assert_eq!(e.path(), Some("/shared.md"));
    let fresh = open(&server, &session).await;
    assert_eq!(fresh.fs().read_text("/shared.md").await.unwrap(), "v3 by b");
}

#[tokio::test]
async fn idempotency_keys_replay_or_conflict() {
    let server = server().await;
    let session = new_session();
    // Two hosts stage the same change from the same base and commit with one key.
    let one = open(&server, &session).await;
    let two = open(&server, &session).await;
    for ws in [&one, &two] {
        ws.fs().write("/x", "1").await.unwrap();
        ws.fs().utimes("/x", at(1_000)).await.unwrap();
    }
    let mut o = CommitOptions::new("t");
    o.idempotency_key = Some("job-1".into());
    let first = one.commit(o.clone()).await.unwrap();
    one.fs().write("/z", "later").await.unwrap();
    let later = one.commit(CommitOptions::new("t")).await.unwrap();
    let replay = two.commit(o.clone()).await.unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.receipt, first.receipt);
    assert_eq!(revision_records(&server, &session).await, 2);
    // The replaying host is now based on the current head, like after any commit.
    assert_eq!(
        two.base_revision().as_deref(),
        Some(later.receipt.revision.as_str())
    );
    assert_eq!(two.fs().read_text("/z").await.unwrap(), "later");
    assert!(two.changes().unwrap().is_empty());

    // The same key for other changes is refused, and discard drops them.
    let three = open(&server, &session).await;
    three.fs().write("/y", "2").await.unwrap();
    let e = three.commit(o).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::IdempotencyConflict);
    three.discard().await.unwrap();
    assert!(!three.fs().exists("/y").await);
    assert_eq!(three.fs().read_text("/x").await.unwrap(), "1");
}

#[cfg(feature = "storage")]
#[tokio::test]
async fn a_capability_opens_its_exact_prefix_and_spends_its_nonce_once() {
    use supabash::capability::{
        new_nonce, MemoryNonceStore, StorageScope, StorageSigner, StorageVerifier,
    };
    use supabash::storage::StorageWorkspace;
    use supabash_core::capability::{
        CommonClaims, Operation, OperationSet, Policy, StorageBinding, StorageClaims,
        SCHEMA_VERSION,
    };
    let server = server().await;
    let owner = new_session();
    let ws = open(&server, &owner).await;
    ws.fs().write("/report.md", "for the job").await.unwrap();
    ws.commit(CommitOptions::new("owner")).await.unwrap();

    let policy = Policy {
        issuer: "jobs".into(),
        audience: "storage".into(),
        origin: "https://app.example".into(),
        skew_secs: 30,
        max_lifetime_secs: 900,
    };
    let signer = StorageSigner::from_seed("k1", &[9; 32]);
    let verifier = StorageVerifier::new(policy)
        .with_key("k1", &signer.public_key())
        .unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let prefix = format!("{}/", owner.user_id);
    let claims = StorageClaims {
        common: CommonClaims {
            ver: SCHEMA_VERSION,
            iss: "jobs".into(),
            aud: "storage".into(),
            sub: "job-1".into(),
            origin: "https://app.example".into(),
            ops: vec!["read".into(), "commit".into()],
            iat: now,
            exp: now + 300,
            nonce: new_nonce(),
            cid: None,
        },
        binding: StorageBinding {
            bucket: BUCKET.into(),
            prefix: prefix.clone(),
        },
    };
    let token = signer.mint(&claims).unwrap();
    let scope = StorageScope {
        bucket: BUCKET.into(),
        prefix,
        operations: OperationSet::new([Operation::Read, Operation::Commit]).unwrap(),
    };
    let nonces = MemoryNonceStore::default();
    let service = StorageServer::service_key();
    let opened = StorageWorkspace::open_with_capability(
        &config(&server),
        verifier.verify(&token, &scope).unwrap(),
        &nonces,
        &service,
        supabash::Limits::default(),
    )
    .await
    .unwrap();
    let job = opened.value;
    assert_eq!(
        job.fs().read_text("/report.md").await.unwrap(),
        "for the job"
    );
    job.fs().write("/report.md", "done").await.unwrap();
    job.commit(CommitOptions::new("job-1")).await.unwrap();
    assert_eq!(
        open(&server, &owner)
            .await
            .fs()
            .read_text("/report.md")
            .await
            .unwrap(),
        "done"
    );
    // The same token again: the nonce is spent.
    let e = StorageWorkspace::open_with_capability(
        &config(&server),
        verifier.verify(&token, &scope).unwrap(),
        &nonces,
        &service,
        supabash::Limits::default(),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(e.code(), ErrorCode::InvalidCapability);

    // A read-only capability opens but cannot commit or read history.
    let mut read_only = claims.clone();
    read_only.common.ops = vec!["read".into()];
    read_only.common.nonce = new_nonce();
    let token = signer.mint(&read_only).unwrap();
    let scope = StorageScope {
        operations: OperationSet::new([Operation::Read]).unwrap(),
        ..scope
    };
    let reader = StorageWorkspace::open_with_capability(
        &config(&server),
        verifier.verify(&token, &scope).unwrap(),
        &nonces,
        &service,
        supabash::Limits::default(),
    )
    .await
    .unwrap()
    .value;
    assert_eq!(reader.fs().read_text("/report.md").await.unwrap(), "done");
    reader.fs().write("/report.md", "tampered").await.unwrap();
    let e = reader.commit(CommitOptions::new("job")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authorization);
    let e = reader.history(None, None).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authorization);
    assert_eq!(
        open(&server, &owner)
            .await
            .fs()
            .read_text("/report.md")
            .await
            .unwrap(),
        "done"
    );
}

#[tokio::test]
async fn opening_from_a_request_uses_the_verified_user_folder() {
    use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
    use supabash::auth::{SupabaseConfig, Verifier};
    use supabash_tests::storage_server::STORAGE_JWT_SECRET;
    let server = server().await;
    let mut supabase = SupabaseConfig::new(&server.url, "sb_publishable_test");
    supabase.verifier = Verifier::JwtSecret(STORAGE_JWT_SECRET.into());
    let headers = |token: &str| {
        let mut h = HeaderMap::new();
        h.insert(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        h
    };
    let user = new_session();
    let (session, ws) = supabash::storage::StorageWorkspace::open_from_request(
        &headers(&user.access_token),
        &supabase,
        &config(&server),
        supabash::Limits::default(),
    )
    .await
    .unwrap();
    assert_eq!(session.user_id, user.user_id);
    assert_eq!(ws.scope(), format!("{BUCKET}/{}/", user.user_id));
    ws.fs().write("/hello.md", "hi").await.unwrap();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    assert_eq!(
        open(&server, &user)
            .await
            .fs()
            .read_text("/hello.md")
            .await
            .unwrap(),
        "hi"
    );

    let service = StorageServer::service_key();
    let forged = supabash_tests::storage_server::StorageServer::token(serde_json::json!({
        "role": "authenticated", "sub": user.user_id, "aud": "authenticated", "exp": 1
    }));
    for (token, code) in [
        (service.as_str(), ErrorCode::Authorization),
        (forged.as_str(), ErrorCode::Authentication),
        ("not-a-jwt", ErrorCode::Authentication),
    ] {
        let e = supabash::storage::StorageWorkspace::open_from_request(
            &headers(token),
            &supabase,
            &config(&server),
            supabash::Limits::default(),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(e.code(), code, "{token}");
    }
}

//! Reading each body once: `supabash_load_documents` end to end (many files of one revision in
//! one call, missing paths answered, tombstones without bodies, the decode budget), and the
//! client's lazy reads through it and through the host body cache (a second open of the same
//! revision fetches nothing the cache holds; a tampered cache file is discarded and fetched
//! again, never served).

use serde_json::json;
use std::sync::Arc;
use supabash::cache::HostCache;
use supabash::{OpenMode, Workspace};
use supabash_core::hash::sha256_hex;
use supabash_tests::client::{new_user, transport, workspace_with, Via};
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, SqlRpc};

#[tokio::test]
async fn many_files_of_one_revision_come_in_one_call() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([
                {"op": "upsert", "path": "/a.md", "text": "a1"},
                {"op": "upsert", "path": "/d/b.md", "text": "b1"},
                {"op": "upsert", "path": "/d/c.md", "text": "b1"},
            ]),
        )
        .await;
    let r2 = rest
        .commit_as(
            &owner,
            &ws,
            Some(&r1),
            json!([
                {"op": "upsert", "path": "/a.md", "text": "a2"},
                {"op": "delete", "path": "/d/c.md"},
            ]),
        )
        .await;
    let ask = |paths: serde_json::Value, revision: Option<&str>| {
        let mut args = json!({ "workspace_id": ws, "paths": paths });
        if let Some(r) = revision {
            args["revision"] = json!(r);
        }
        args
    };
    // At r1: every file asked for, in path order, with bodies that match their hashes; the
    // duplicate and the unknown path do not make it fail.
    let got = rest
        .call(
            &owner,
            "supabash_load_documents",
            ask(
                json!(["/d/c.md", "/a.md", "/d/b.md", "/a.md", "/nope.md"]),
                Some(&r1),
            ),
        )
        .await
        .unwrap();
    assert_eq!(got["revision"], json!(r1));
    let files = got["files"].as_array().unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/a.md", "/d/b.md", "/d/c.md"]);
    assert_eq!(got["missing"], json!(["/nope.md"]));
    for f in files {
        let text = f["text"].as_str().unwrap();
        assert_eq!(sha256_hex(text.as_bytes()), f["bodyHash"].as_str().unwrap());
    }
    assert_eq!(files[0]["text"], json!("a1"));
    assert_eq!(files[2]["text"], json!("b1"));
    // At the head (the default): the new version, and the deleted file is missing.
    let got = rest
        .call(
            &owner,
            "supabash_load_documents",
            ask(json!(["/a.md", "/d/c.md"]), None),
        )
        .await
        .unwrap();
    assert_eq!(got["revision"], json!(r2));
    assert_eq!(got["files"][0]["text"], json!("a2"));
    assert_eq!(got["missing"], json!(["/d/c.md"]));
    // No paths: nothing, no error.
    let got = rest
        .call(&owner, "supabash_load_documents", ask(json!([]), None))
        .await
        .unwrap();
    assert_eq!(got["files"], json!([]));
    // Someone else's workspace: denied like every read.
    let stranger = Caller::new_user();
    let r = rest
        .call(
            &stranger,
            "supabash_load_documents",
            ask(json!(["/a.md"]), None),
        )
        .await;
    expect_err(r, "42501", Some("SUPABASH_WORKSPACE_DENIED"));
}

#[tokio::test]
async fn the_decode_budget_counts_every_body_of_the_call() {
    let cluster = Cluster::shared();
    let dsn = supabash_tests::support::authenticator_with(
        cluster,
        "batched_low_ceiling_authenticator",
        &[("supabash.max_decoded_per_call", "1MB")],
    )
    .await;
    let mut rest = SqlRpc::connect(&dsn).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let big = "x".repeat(600 * 1024);
    rest.commit_as(
        &owner,
        &ws,
        None,
        json!([
            {"op": "upsert", "path": "/one.txt", "text": format!("1{big}")},
            {"op": "upsert", "path": "/two.txt", "text": format!("2{big}")},
        ]),
    )
    .await;
    // Each alone fits under 1 MB; both together do not.
    for p in ["/one.txt", "/two.txt"] {
        rest.call(
            &owner,
            "supabash_load_documents",
            json!({ "workspace_id": ws, "paths": [p] }),
        )
        .await
        .unwrap();
    }
    let r = rest
        .call(
            &owner,
            "supabash_load_documents",
            json!({ "workspace_id": ws, "paths": ["/one.txt", "/two.txt"] }),
        )
        .await;
    let e = expect_err(r, "54000", Some("SUPABASH_QUOTA_EXCEEDED"));
    assert!(e.message.contains("max_decoded_per_call"), "{e}");
}

fn temp_cache() -> (std::path::PathBuf, Arc<HostCache>) {
    let dir = std::env::temp_dir().join(format!("supabash-cache-e2e-{}", uuid::Uuid::new_v4()));
    let cache = Arc::new(HostCache::open(&dir, 64 << 20).unwrap());
    (dir, cache)
}

async fn open_lazy(user: &str, id: &str, cache: &Arc<HostCache>) -> Workspace {
    let ws = Workspace::builder(transport(Via::Postgres, user).await)
        .open_mode(OpenMode::Lazy)
        .open(id)
        .await
        .unwrap();
    ws.fs().use_host_cache(cache.clone());
    ws
}

#[tokio::test]
async fn a_second_open_reads_from_the_host_cache_and_a_tampered_file_is_fetched_again() {
    let user = new_user();
    let files: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("/src/d{}/f{i:02}.txt", i % 2),
                format!("body {i}\n"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let seeded = workspace_with(Via::Postgres, &user, &refs).await;
    let (dir, cache) = temp_cache();

    // First open: reading one file of a directory brings its siblings in the same batch.
    let ws = open_lazy(&user, seeded.id(), &cache).await;
    assert_eq!(
        ws.fs().read_text("/src/d0/f00.txt").await.unwrap(),
        "body 0\n"
    );
    for (p, text) in files.iter().filter(|(p, _)| p.starts_with("/src/d0/")) {
        assert!(
            cache.contains(&sha256_hex(text.as_bytes())),
            "{p} not cached"
        );
    }
    // The other directory, prefetched as a listing would.
    assert_eq!(ws.fs().prefetch_dir("/src/d1").await.unwrap(), 20);
    assert_eq!(ws.fs().prefetch_dir("/src/d1").await.unwrap(), 0);

    // A tampered cache file is discarded and the body fetched again, verified.
    let victim = sha256_hex(b"body 2\n");
    let at = cache.dir().join("bodies").join(&victim[..2]).join(&victim);
    std::fs::write(&at, b"evil bytes").unwrap();

    // Second open of the same revision: every body but the tampered one comes from the cache,
    // which `prefetch_dir` reports as nothing fetched from the source.
    let again = open_lazy(&user, seeded.id(), &cache).await;
    again.fs().readdir("/src/d0").await.unwrap();
    again.fs().readdir("/src/d1").await.unwrap();
    assert_eq!(again.fs().prefetch_dir("/src/d1").await.unwrap(), 0);
    assert_eq!(again.fs().prefetch_dir("/src/d0").await.unwrap(), 1);
    assert_eq!(
        again.fs().read_text("/src/d0/f02.txt").await.unwrap(),
        "body 2\n"
    );
    assert_eq!(std::fs::read(&at).unwrap(), b"body 2\n");
    for (p, text) in &files {
        assert_eq!(&again.fs().read_text(p).await.unwrap(), text);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Redacted bodies leave the host cache: the bodies a redaction applied from this host removed
/// at once, and what a cache listed for the workspace when a later open finds the redaction
/// epoch moved (another host redacted meanwhile).
#[tokio::test]
async fn redacted_bodies_leave_the_host_cache() {
    use supabash::workspace::{CommitOptions, RedactOptions};
    let user = new_user();
    let files = [
        ("/a/secret.txt", "API_KEY=one\n"),
        ("/a/other.txt", "API_KEY=two\n"),
        ("/a/kept.txt", "plain\n"),
    ];
    let seeded = workspace_with(Via::Postgres, &user, &files).await;
    let (dir, shared) = temp_cache();
    let hash = |text: &str| sha256_hex(text.as_bytes());

    // This host reads every file through a cache listed for the workspace.
    let ws = Workspace::builder(transport(Via::Postgres, &user).await)
        .open_mode(OpenMode::Lazy)
        .open(seeded.id())
        .await
        .unwrap();
    let epoch = ws.redaction_epoch();
    let cache = Arc::new(shared.for_workspace(ws.id(), epoch).unwrap());
    ws.fs().use_host_cache(cache.clone());
    for (p, text) in files {
        assert_eq!(ws.fs().read_text(p).await.unwrap(), text);
        assert!(shared.contains(&hash(text)), "{p} cached");
    }

    // Redacted here: its body leaves the cache with the answer.
    ws.fs().rm("/a/secret.txt", false, false).await.unwrap();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let report = ws
        .redact(RedactOptions::new().path("/a/secret.txt").apply())
        .await
        .unwrap();
    assert_eq!(report.bodies, [hash("API_KEY=one\n")]);
    assert!(!shared.contains(&hash("API_KEY=one\n")));
    assert!(shared.contains(&hash("API_KEY=two\n")));

    // Redacted by another host (no cache): the next open here sees the epoch moved and drops
    // what the cache listed for the workspace before reading anything.
    let other = Workspace::builder(transport(Via::Postgres, &user).await)
        .open(seeded.id())
        .await
        .unwrap();
    other.fs().rm("/a/other.txt", false, false).await.unwrap();
    other.commit(CommitOptions::new("t")).await.unwrap();
    other
        .redact(RedactOptions::new().path("/a/other.txt").apply())
        .await
        .unwrap();
    let again = Workspace::builder(transport(Via::Postgres, &user).await)
        .open(seeded.id())
        .await
        .unwrap();
    assert!(again.redaction_epoch() > epoch);
    let reopened = shared
        .for_workspace(again.id(), again.redaction_epoch())
        .unwrap();
    assert!(
        !shared.contains(&hash("API_KEY=two\n")),
        "never served again"
    );
    // What is still in the workspace comes back (fetched again) and is listed anew.
    again.fs().use_host_cache(Arc::new(reopened));
    assert_eq!(
        again.fs().read_text("/a/kept.txt").await.unwrap(),
        "plain\n"
    );
    assert!(shared.contains(&hash("plain\n")));
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Size and scale of the Storage backend against the Storage API test server: a 10 MiB binary
//! file round-trips; the ignored tests measure a 5,000-file workspace (first commit, its
//! visible objects, open, single-file commits) and upload concurrency, printing the figures
//! (no timing assertions). With `SUPABASH_STORAGE_URL` they run against that external server
//! (tests/src/storage_proxy.rs).
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use std::time::Instant;
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::{StorageConfig, StorageWorkspace};
use supabash::workspace::CommitOptions;
use supabash::Limits;
use supabash_tests::storage_server::StorageServer;

#[tokio::test]
async fn a_ten_mib_binary_file_round_trips() {
    let server = server().await;
    let session = new_session();
    let ws = open(&server, &session).await;
    let big: Vec<u8> = (0..10 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    ws.fs().write("/big.bin", big.clone()).await.unwrap();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let again = open(&server, &session).await;
    assert_eq!(
        again.fs().stat("/big.bin").await.unwrap().size,
        big.len() as u64
    );
    assert!(again.fs().read("/big.bin").await.unwrap() == big);
}

#[tokio::test]
async fn an_unpublished_prefix_with_more_objects_than_a_page_opens_whole() {
    let server = server().await;
    let session = new_session();
    let api = user_api(&server, &session);
    let n = supabash::storage::api::PAGE + 5;
    let uploads = (0..n)
        .map(|i| supabash::storage::api::Upload {
            key: format!("{}/many/{i:05}.txt", session.user_id),
            body: format!("{i}").into_bytes(),
            content_type: "text/plain",
            metadata: serde_json::json!({}),
        })
        .collect();
    api.upload_all(uploads).await.unwrap();
    let ws = open(&server, &session).await;
    let names = ws.fs().readdir("/many").await.unwrap();
    assert_eq!(names.len(), n);
    assert_eq!(
        ws.fs()
            .read_text(&format!("/many/{:05}.txt", n - 1))
            .await
            .unwrap(),
        format!("{}", n - 1)
    );
}

#[tokio::test]
async fn the_forwarder_passes_requests_through_and_counts_them() {
    // The forwarder the ignored tests and the bench use for an external server, here in
    // front of the test server.
    let server = server().await;
    let external = supabash_tests::storage_proxy::External {
        url: server.url.clone(),
        jwt_secret: supabash_tests::storage_server::STORAGE_JWT_SECRET.into(),
        service_key: None,
        dsn: None,
    };
    let meter = std::sync::Arc::new(supabash_tests::storage_meter::Meter::default());
    let (url, task) = supabash_tests::storage_proxy::start(&external, meter.clone()).await;
    let config = config(&server).with_url(url);
    let (session, ws) = seeded(&config, 2, 10).await;
    server.reset_counts();
    meter.reset();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let again = StorageWorkspace::open_for_session(&config, &session, Limits::default())
        .await
        .unwrap();
    assert_eq!(
        again.fs().read_text("/d1/f7.txt").await.unwrap(),
        "file 7\n"
    );
    // Through the forwarder: every request counted there was served here, and none lost.
    let (seen, served) = (meter.counts(), server.counts());
    assert!(served.writes() >= 3, "{served:?}");
    assert_eq!(seen.by_kind, served.by_kind);
    assert_eq!(seen.bytes_uploaded, served.bytes_uploaded);
    task.abort();
}

/// Requests and bytes of one measured step: writing requests, reads, bytes uploaded.
fn counted(server: &StorageServer) -> String {
    let c = server.counts();
    format!(
        "{} writes, {} reads, {} bytes up ({:?})",
        c.writes(),
        c.reads(),
        c.bytes_uploaded,
        c.by_kind
    )
}

/// The delay added to every request: `$SUPABASH_STORAGE_DELAY_MS`, else 5 ms on the test
/// server (a remote round trip) and none on an external server (it has its own).
fn delay_ms(server: &StorageServer) -> u64 {
    std::env::var("SUPABASH_STORAGE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if server.is_external() { 0 } else { 5 })
}

/// A fresh user's workspace under `config`, with `files` small files staged in `dirs` folders.
async fn seeded(config: &StorageConfig, dirs: usize, files: usize) -> (Session, StorageWorkspace) {
    let session = new_session();
    let ws = StorageWorkspace::open_for_session(config, &session, Limits::default())
        .await
        .unwrap();
    for d in 0..dirs {
        ws.fs().mkdir(&format!("/d{d}"), false).await.unwrap();
    }
    for i in 0..files {
        ws.fs()
            .write(&format!("/d{}/f{i}.txt", i % dirs), format!("file {i}\n"))
            .await
            .unwrap();
    }
    (session, ws)
}

/// The first commit of 5,000 files under `config` (fresh user): its time and counts, then
/// how long its visible objects took to land after it returned, and theirs.
async fn first_commit(server: &StorageServer, config: &StorageConfig) -> (Session, String) {
    let (session, ws) = seeded(config, 50, 5_000).await;
    server.reset_counts();
    let t = Instant::now();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let first = format!("{:?}: {}", t.elapsed(), counted(server));
    server.reset_counts();
    let t = Instant::now();
    ws.sync_visible().await.unwrap();
    let after = format!("{:?}: {}", t.elapsed(), counted(server));
    (
        session,
        format!("{first}; visible objects after it: {after}"),
    )
}

#[tokio::test]
#[ignore = "measures a 5,000-file workspace (about a minute); run with --ignored"]
async fn five_thousand_files() {
    let server = server().await;
    let delay_ms = delay_ms(&server);
    server.set_delay(std::time::Duration::from_millis(delay_ms));
    let (session, first) = first_commit(&server, &config(&server)).await;
    server.reset_counts();
    let t = Instant::now();
    let again = open(&server, &session).await;
    let open_time = t.elapsed();
    let open_counts = counted(&server);
    assert_eq!(again.fs().readdir("/d7").await.unwrap().len(), 100);
    let mut singles = Vec::new();
    for i in 0..5 {
        again
            .fs()
            .write("/d0/f0.txt", format!("changed {i}"))
            .await
            .unwrap();
        server.reset_counts();
        let t = Instant::now();
        again.commit(CommitOptions::new("t")).await.unwrap();
        singles.push(format!("{:?}: {}", t.elapsed(), counted(&server)));
    }
    // Every visible object before its head, as before issue 39's last round.
    let inline = config(&server).with_visible_inline_max(usize::MAX);
    let (_, inline_first) = first_commit(&server, &inline).await;
    // Without visible objects.
    let hidden = config(&server).with_visible_objects(false);
    let (_, hidden_first) = first_commit(&server, &hidden).await;
    println!("storage 5000 files ({delay_ms} ms added to a request):");
    println!("  without visible objects: first commit {hidden_first}");
    println!("  visible objects before the head: first commit {inline_first}");
    println!("  first commit {first}");
    println!("  open {open_time:?}: {open_counts}");
    for s in singles {
        println!("  single-file commit {s}");
    }
}

#[tokio::test]
#[ignore = "measures first commits of 1,000 files by upload concurrency; run with --ignored"]
async fn upload_concurrency_by_measure() {
    let server = server().await;
    let delay_ms = delay_ms(&server);
    server.set_delay(std::time::Duration::from_millis(delay_ms));
    for concurrency in [4, 8, 16, 32] {
        // Every visible object before the head, so that the commit's time holds them all.
        let config = config(&server)
            .with_upload_concurrency(concurrency)
            .with_visible_inline_max(usize::MAX);
        let mut times = Vec::new();
        for _ in 0..2 {
            let (_, ws) = seeded(&config, 10, 1_000).await;
            let t = Instant::now();
            ws.commit(CommitOptions::new("t")).await.unwrap();
            times.push(t.elapsed());
        }
        println!("upload concurrency {concurrency}: {times:?} ({delay_ms} ms a request)");
    }
}

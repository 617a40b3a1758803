//! Size and scale of the Storage backend against the Storage API test server: a 10 MiB binary
//! file round-trips; the ignored test measures a 5,000-file workspace (open time and a
//! single-file commit), printing the figures (no timing assertions).
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use std::time::Instant;
use storage_support::*;
use supabash::workspace::CommitOptions;

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

/// Requests and bytes of one measured step: writing requests, reads, bytes uploaded.
fn counted(server: &supabash_tests::storage_server::StorageServer) -> String {
    let c = server.counts();
    format!(
        "{} writes, {} reads, {} bytes up ({:?})",
        c.writes(),
        c.reads(),
        c.bytes_uploaded,
        c.by_kind
    )
}

#[tokio::test]
#[ignore = "measures a 5,000-file workspace (about a minute); run with --ignored"]
async fn five_thousand_files() {
    let server = server().await;
    // A remote server's round trip, so that the number of requests shows in the times.
    let delay_ms = std::env::var("SUPABASH_STORAGE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    server.set_delay(std::time::Duration::from_millis(delay_ms));
    let session = new_session();
    let ws = open(&server, &session).await;
    for d in 0..50 {
        ws.fs().mkdir(&format!("/d{d}"), false).await.unwrap();
    }
    for i in 0..5_000 {
        ws.fs()
            .write(&format!("/d{}/f{i}.txt", i % 50), format!("file {i}\n"))
            .await
            .unwrap();
    }
    server.reset_counts();
    let t = Instant::now();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let first = t.elapsed();
    let first_counts = counted(&server);
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
    // The same without visible objects (a fresh user).
    let hidden = config(&server).with_visible_objects(false);
    let session = new_session();
    let ws = supabash::storage::StorageWorkspace::open_for_session(
        &hidden,
        &session,
        supabash::Limits::default(),
    )
    .await
    .unwrap();
    for d in 0..50 {
        ws.fs().mkdir(&format!("/d{d}"), false).await.unwrap();
    }
    for i in 0..5_000 {
        ws.fs()
            .write(&format!("/d{}/f{i}.txt", i % 50), format!("file {i}\n"))
            .await
            .unwrap();
    }
    server.reset_counts();
    let t = Instant::now();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let hidden_first = format!("{:?}: {}", t.elapsed(), counted(&server));
    ws.fs().write("/d0/f0.txt", "changed").await.unwrap();
    server.reset_counts();
    let t = Instant::now();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let hidden_single = format!("{:?}: {}", t.elapsed(), counted(&server));
    println!("storage 5000 files (test server, {delay_ms} ms a request):");
    println!("  without visible objects: first commit {hidden_first}");
    println!("  without visible objects: single-file commit {hidden_single}");
    println!("  first commit {first:?}: {first_counts}");
    println!("  open {open_time:?}: {open_counts}");
    for s in singles {
        println!("  single-file commit {s}");
    }
}

#[tokio::test]
#[ignore = "measures first commits of 1,000 files by upload concurrency; run with --ignored"]
async fn upload_concurrency_by_measure() {
    let server = server().await;
    let delay_ms = std::env::var("SUPABASH_STORAGE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    server.set_delay(std::time::Duration::from_millis(delay_ms));
    for concurrency in [4, 8, 16, 32] {
        let config = config(&server).with_upload_concurrency(concurrency);
        let mut times = Vec::new();
        for _ in 0..2 {
            let session = new_session();
            let ws = supabash::storage::StorageWorkspace::open_for_session(
                &config,
                &session,
                supabash::Limits::default(),
            )
            .await
            .unwrap();
            for d in 0..10 {
                ws.fs().mkdir(&format!("/d{d}"), false).await.unwrap();
            }
            for i in 0..1_000 {
                ws.fs()
                    .write(&format!("/d{}/f{i}.txt", i % 10), format!("file {i}\n"))
                    .await
                    .unwrap();
            }
            let t = Instant::now();
            ws.commit(CommitOptions::new("t")).await.unwrap();
            times.push(t.elapsed());
        }
        println!("upload concurrency {concurrency}: {times:?} ({delay_ms} ms a request)");
    }
}

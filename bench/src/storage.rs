//! The Storage backend on the Storage API test server: a 5,000-file workspace's first commit,
//! its open and single-file commits, with the requests and bytes each one sends (which do not
//! depend on the machine) next to the times. The server adds a fixed delay to every request
//! (`SUPABASH_BENCH_STORAGE_DELAY_MS`, default 5 ms, as a remote server's round trip), so the
//! number of requests shows in the times.

use crate::report::{ms, stats, Report};
use crate::{f2, text};
use std::time::{Duration, Instant};
use supabash::auth::Session;
use supabash::storage::{StorageConfig, StorageWorkspace};
use supabash::workspace::CommitOptions;
use supabash::Limits;
use supabash_devcluster::Cluster;
use supabash_tests::storage_server::{Counts, StorageServer};

/// One measured row: times, and the requests and bytes of one run (the median run's).
struct Row {
    what: String,
    times: Vec<f64>,
    counts: Vec<Counts>,
}

impl Row {
    fn cells(&self) -> Vec<String> {
        let s = stats(&self.times);
        let mut writes: Vec<usize> = self.counts.iter().map(Counts::writes).collect();
        let mut reads: Vec<usize> = self.counts.iter().map(Counts::reads).collect();
        let mut bytes: Vec<u64> = self.counts.iter().map(|c| c.bytes_uploaded).collect();
        writes.sort_unstable();
        reads.sort_unstable();
        bytes.sort_unstable();
        let mid = self.counts.len() / 2;
        vec![
            self.what.clone(),
            self.times.len().to_string(),
            f2(s.median),
            f2(s.p90),
            writes.get(mid).map_or("—".into(), |w| w.to_string()),
            reads.get(mid).map_or("—".into(), |r| r.to_string()),
            bytes.get(mid).map_or("—".into(), |b| b.to_string()),
        ]
    }
}

fn new_session() -> Session {
    let user_id = uuid::Uuid::new_v4().to_string();
    Session {
        access_token: StorageServer::user_token(&user_id),
        user_id,
    }
}

/// A fresh user's workspace with `files` files of 512 B in `dirs` folders, staged.
async fn staged(config: &StorageConfig, files: usize, dirs: usize) -> (Session, StorageWorkspace) {
    let session = new_session();
    let ws = StorageWorkspace::open_for_session(config, &session, Limits::default())
        .await
        .expect("open");
    for d in 0..dirs {
        ws.fs().mkdir(&format!("/d{d}"), false).await.unwrap();
    }
    for i in 0..files {
        let path = format!("/d{}/f{i}.md", i % dirs);
        ws.fs().write(&path, text(i as u64, 512)).await.unwrap();
    }
    (session, ws)
}

/// Times `run` and counts what it sent.
async fn measured<F: std::future::Future<Output = ()>>(
    server: &StorageServer,
    row: &mut Row,
    run: F,
) {
    server.reset_counts();
    let t = Instant::now();
    run.await;
    row.times.push(ms(t));
    row.counts.push(server.counts());
}

fn row(what: impl Into<String>) -> Row {
    Row {
        what: what.into(),
        times: Vec::new(),
        counts: Vec::new(),
    }
}

/// The first commit of 5,000 files under `config` (a fresh user), then the wait for its
/// visible objects (written after its head when it defers them): two rows.
async fn first_commit(
    server: &StorageServer,
    config: &StorageConfig,
    label: &str,
) -> (Session, Vec<Row>) {
    let (session, ws) = staged(config, 5_000, 50).await;
    let mut first = row(format!("first commit, 5,000 files{label}"));
    measured(server, &mut first, async {
        ws.commit(CommitOptions::new("bench"))
            .await
            .expect("first commit");
    })
    .await;
    let mut after = row(format!(
        "its 5,000 visible objects, written after it returned{label}"
    ));
    measured(server, &mut after, async {
        ws.sync_visible().await.expect("visible objects");
    })
    .await;
    (session, vec![first, after])
}

/// The rows of one configuration: first commit of 5,000 files (and the wait for its visible
/// objects), 5 opens, 20 single-file commits.
async fn five_thousand(server: &StorageServer, config: &StorageConfig, label: &str) -> Vec<Row> {
    let (session, mut rows) = first_commit(server, config, label).await;
    let open = || StorageWorkspace::open_for_session(config, &session, Limits::default());
    let mut opens = row(format!("open, 5,000 files{label}"));
    for _ in 0..5 {
        let mut opened = None;
        measured(server, &mut opens, async {
            opened = Some(open().await.expect("open"));
        })
        .await;
        let again = opened.unwrap();
        assert_eq!(again.fs().readdir("/d7").await.unwrap().len(), 100);
    }
    let ws = open().await.expect("open");
    let mut commits = row(format!("single-file commit, 5,000 files{label}"));
    for i in 0..20u64 {
        ws.fs()
            .write("/d0/f0.md", text(9_000_000 + i, 512))
            .await
            .unwrap();
        measured(server, &mut commits, async {
            ws.commit(CommitOptions::new("bench"))
                .await
                .expect("commit");
        })
        .await;
    }
    rows.extend([opens, commits]);
    rows
}

/// The Storage section of the report.
pub async fn storage_backend(cluster: &Cluster, r: &mut Report) {
    cluster.psql("app", include_str!("../../sql/storage.sql"));
    // With SUPABASH_STORAGE_URL: an external server, behind a counting forwarder
    // (tests/src/storage_proxy.rs).
    let server = StorageServer::start(&cluster.dsn("postgres")).await;
    let delay_ms: u64 = std::env::var("SUPABASH_BENCH_STORAGE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if server.is_external() { 0 } else { 5 });
    server.set_delay(Duration::from_millis(delay_ms));
    let config = StorageConfig::new(server.url.clone(), "workspaces");
    let mut rows = five_thousand(&server, &config, "").await;
    // The same first commit with every visible object written before its head (as before),
    // and without visible objects.
    let inline = config.clone().with_visible_inline_max(usize::MAX);
    rows.push(
        first_commit(&server, &inline, ", visible objects before the head")
            .await
            .1
            .remove(0),
    );
    let hidden = config.clone().with_visible_objects(false);
    rows.push(
        first_commit(&server, &hidden, ", no visible objects")
            .await
            .1
            .remove(0),
    );
    // What upload concurrency buys: first commits of 1,000 files, fresh users, 3 runs each,
    // every visible object before the head (so the commit holds every upload); skipped with
    // SUPABASH_BENCH_STORAGE_SWEEP=0 (a slow server).
    let sweep = !std::env::var("SUPABASH_BENCH_STORAGE_SWEEP").is_ok_and(|v| v == "0");
    for concurrency in [1, 4, 8, 16, 32].into_iter().filter(|_| sweep) {
        let config = inline.clone().with_upload_concurrency(concurrency);
        let mut first = row(format!(
            "first commit, 1,000 files, upload concurrency {concurrency}"
        ));
        for _ in 0..3 {
            let (_, ws) = staged(&config, 1_000, 10).await;
            measured(&server, &mut first, async {
                ws.commit(CommitOptions::new("bench"))
                    .await
                    .expect("first commit");
            })
            .await;
        }
        rows.push(first);
    }
    let server_is = if server.is_external() {
        "an external Supabase Storage server (`SUPABASH_STORAGE_URL`, behind the counting \
         forwarder of `tests/src/storage_proxy.rs`)"
            .to_owned()
    } else {
        "the Storage API test server (`tests/src/storage_server.rs`: axum on loopback, object \
         rows in `storage.objects` of the same cluster under the row-level-security policies \
         of `sql/storage.sql`, bodies on local disk)"
            .to_owned()
    };
    r.section(if server.is_external() {
        "Storage backend (external Supabase Storage server)"
    } else {
        "Storage backend (Storage API test server)"
    });
    r.line(&format!(
        "The Storage backend (`client/src/storage/`) against {server_is}, with {delay_ms} ms \
         added to every request (a remote server's round trip; \
         `SUPABASH_BENCH_STORAGE_DELAY_MS`). A fresh user's workspace gets 5,000 files of \
         512 B in 50 folders in one commit (which writes its visible objects after its head: \
         the next row waits for them); then the workspace is opened 5 times (bodies stay \
         lazy) and one file is edited and committed 20 times. Writes, reads and bytes \
         uploaded are those of the median run, counted by the server: they do not depend on \
         the machine."
    ));
    r.table(&[
        "measure",
        "N",
        "median ms",
        "p90 ms",
        "writes",
        "reads",
        "bytes uploaded",
    ]);
    for row in &rows {
        r.row(&row.cells());
    }
    let (open, commit) = (stats(&rows[2].times), stats(&rows[3].times));
    r.summary(
        "Storage backend, 5,000 files: open / single-file commit (test server)",
        format!("{} / {} ms", f2(open.median), f2(commit.median)),
        "—".into(),
        None,
    );
}

//! The delta layout against the Storage API test server, counted by the server: a commit costs
//! what it changes (writes and bytes do not grow with the workspace), opening is two reads,
//! snapshots come back when the changes pass their bound, visible objects can be turned off,
//! and bad input (a snapshot or pack header failing its hash, changes past their bound, a
//! missing snapshot, a server answering 429 to everything) is a clear error that loses nothing.
#![cfg(feature = "storage")]

use supabash_tests::storage_support;

use serde_json::Value;
use storage_support::*;
use supabash::auth::Session;
use supabash::storage::layout::MAX_DELTA;
use supabash::storage::{StorageConfig, StorageWorkspace};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits};
use supabash_tests::storage_server::{Counts, Fault, StorageServer};

const FILE: usize = 512;

fn body(i: usize) -> Vec<u8> {
    format!("{i:0width$}", width = FILE).into_bytes()
}

/// A workspace of `files` files of [`FILE`] bytes, committed.
async fn workspace(server: &StorageServer, config: &StorageConfig, files: usize) -> Session {
    let session = new_session();
    let ws = StorageWorkspace::open_for_session(config, &session, Limits::default())
        .await
        .unwrap();
    for d in 0..10 {
        ws.fs().mkdir(&format!("/d{d}"), false).await.unwrap();
    }
    for i in 0..files {
        ws.fs()
            .write(&format!("/d{}/f{i}.md", i % 10), body(i))
            .await
            .unwrap();
    }
    ws.commit(CommitOptions::new("setup")).await.unwrap();
    // A setup of more than `visible_inline_max` files writes its visible objects after its
    // head: let them land before anything is counted.
    ws.sync_visible().await.unwrap();
    let _ = server;
    session
}

/// What one single-file commit and one open send, counted by the server.
async fn costs(server: &StorageServer, config: &StorageConfig, files: usize) -> (Counts, Counts) {
    let session = workspace(server, config, files).await;
    let ws = StorageWorkspace::open_for_session(config, &session, Limits::default())
        .await
        .unwrap();
    ws.fs().write("/d0/f0.md", body(999_999)).await.unwrap();
    server.reset_counts();
    ws.commit(CommitOptions::new("one")).await.unwrap();
    let commit = server.counts();
    server.reset_counts();
    let again = StorageWorkspace::open_for_session(config, &session, Limits::default())
        .await
        .unwrap();
    let open = server.counts();
    assert_eq!(again.fs().read("/d0/f0.md").await.unwrap(), body(999_999));
    (commit, open)
}

#[tokio::test]
async fn a_commit_costs_what_it_changes_not_the_workspace() {
    let server = server().await;
    let config = config(&server);
    let (small, small_open) = costs(&server, &config, 20).await;
    let (large, large_open) = costs(&server, &config, 600).await;
    for (c, o) in [(&small, &small_open), (&large, &large_open)] {
        assert!(c.writes() <= 4, "a single-file commit wrote {c:?}");
        // Twice the file (pack and visible object) plus records of constant size.
        assert!(
            c.bytes_uploaded <= 2 * FILE as u64 + 4096,
            "a single-file commit uploaded {} bytes",
            c.bytes_uploaded
        );
        assert!(o.total() <= 2 && o.writes() == 0, "an open sent {o:?}");
    }
    let grew = large.bytes_uploaded.abs_diff(small.bytes_uploaded);
    assert!(grew < 64, "30 times the files cost {grew} more bytes");

    // Without visible objects: the pack and the head.
    let hidden = config.clone().with_visible_objects(false);
    let (c, _) = costs(&server, &hidden, 600).await;
    assert!(c.writes() <= 2, "{c:?}");
    assert!(c.bytes_uploaded <= FILE as u64 + 3072, "{c:?}");
}

#[tokio::test]
async fn without_visible_objects_the_bucket_holds_only_the_reserved_area() {
    let server = server().await;
    let config = config(&server).with_visible_objects(false);
    let session = workspace(&server, &config, 30).await;
    let service = service_api(&server, &session);
    let listed = service
        .list(&format!("{}/", session.user_id))
        .await
        .unwrap();
    let prefix = format!("{}/.supabash/", session.user_id);
    assert!(
        listed.iter().all(|l| l.name.starts_with(&prefix)),
        "{listed:?}"
    );
    let ws = StorageWorkspace::open_for_session(&config, &session, Limits::default())
        .await
        .unwrap();
    assert_eq!(ws.fs().read("/d3/f13.md").await.unwrap(), body(13));
    ws.fs().rm("/d3/f13.md", false, false).await.unwrap();
    ws.commit(CommitOptions::new("rm")).await.unwrap();
    assert_eq!(ws.history(None, None).await.unwrap().records.len(), 2);
}

/// `head.json` of `session`, raw.
async fn raw_head(server: &StorageServer, session: &Session) -> Value {
    service_api(server, session)
        .read_json(&format!("{}/.supabash/head.json", session.user_id))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn changes_past_their_bound_write_a_snapshot() {
    let server = server().await;
    let config = config(&server);
    let session = workspace(&server, &config, 10).await;
    let first = raw_head(&server, &session).await;
    let ws = open(&server, &session).await;
    ws.fs().write("/small.md", "one change").await.unwrap();
    ws.commit(CommitOptions::new("small")).await.unwrap();
    let head = raw_head(&server, &session).await;
    assert_eq!(head["tree"]["snapshot"], first["tree"]["snapshot"]);
    assert_eq!(head["tree"]["changes"].as_object().unwrap().len(), 1);
    // More paths than the bound: the commit writes a snapshot, the head carries no changes.
    ws.fs().mkdir("/many", false).await.unwrap();
    for i in 0..MAX_DELTA {
        ws.fs()
            .write(&format!("/many/{i}.md"), body(i))
            .await
            .unwrap();
    }
    ws.commit(CommitOptions::new("many")).await.unwrap();
    let head = raw_head(&server, &session).await;
    assert_ne!(head["tree"]["snapshot"], first["tree"]["snapshot"]);
    assert!(head["tree"]["changes"].as_object().unwrap().is_empty());
    let again = open(&server, &session).await;
    assert_eq!(dump(again.fs()).await, dump(ws.fs()).await);
    // Old revisions read through their own snapshot.
    let history = again.history(None, None).await.unwrap();
    assert_eq!(history.records.len(), 3);
    let second = &history.records[1].revision;
    assert_eq!(
        again.read_revision_file(second, "/small.md").await.unwrap(),
        b"one change"
    );
}

#[tokio::test]
async fn damaged_records_are_clear_errors_and_lose_nothing() {
    let server = server().await;
    let config = config(&server);
    let session = workspace(&server, &config, 10).await;
    let service = service_api(&server, &session);
    let head = raw_head(&server, &session).await;
    let snap_rev = head["tree"]["snapshot"]["revision"].as_str().unwrap();
    let snap_key = format!("{}/.supabash/snapshots/{snap_rev}.json", session.user_id);
    let snapshot = service.download(&snap_key).await.unwrap().unwrap();
    let corruption = |e: supabash::SupabashError, what: &str| {
        assert_eq!(e.code(), ErrorCode::HistoryCorruption, "{what}: {e}");
    };

    // A snapshot failing its hash.
    let mut changed = snapshot.clone();
    let at = changed.len() / 2;
    changed[at] = if changed[at] == b'0' { b'1' } else { b'0' };
    put(&service, &snap_key, &changed, "application/json").await;
    let e = StorageWorkspace::open_for_session(&config, &session, Limits::default()).await;
    corruption(e.err().unwrap(), "a changed snapshot");
    // A missing snapshot (a broken chain).
    service
        .delete(std::slice::from_ref(&snap_key))
        .await
        .unwrap();
    let e = StorageWorkspace::open_for_session(&config, &session, Limits::default()).await;
    corruption(e.err().unwrap(), "a missing snapshot");
    put(&service, &snap_key, &snapshot, "application/json").await;

    // Changes past their bound in the head.
    let head_key = format!("{}/.supabash/head.json", session.user_id);
    let mut long = head.clone();
    for i in 0..=MAX_DELTA {
        long["tree"]["changes"][format!("/x{i}")] = Value::Null;
    }
    service.write_json(&head_key, &long, true).await.unwrap();
    let e = StorageWorkspace::open_for_session(&config, &session, Limits::default())
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("bound"), "{e}");
    corruption(e, "changes past their bound");
    service.write_json(&head_key, &head, true).await.unwrap();

    // A pack header failing its hash: history says so.
    let rev = head["revision"].as_str().unwrap();
    let pack_key = format!("{}/.supabash/revisions/{rev}.pack", session.user_id);
    let pack = service.download(&pack_key).await.unwrap().unwrap();
    let mut changed = pack.clone();
    let at = changed.len() - 20;
    changed[at] ^= 0x20;
    put(&service, &pack_key, &changed, "application/octet-stream").await;
    let ws = open(&server, &session).await;
    corruption(
        ws.history(None, None).await.unwrap_err(),
        "a changed pack header",
    );
    put(&service, &pack_key, &pack, "application/octet-stream").await;

    // Nothing was lost: with the records back, the workspace opens whole.
    let ws = open(&server, &session).await;
    assert_eq!(ws.fs().read("/d3/f3.md").await.unwrap(), body(3));
    assert_eq!(ws.history(None, None).await.unwrap().records.len(), 1);
}

#[tokio::test]
async fn a_server_answering_429_to_everything_is_a_retryable_error() {
    let server = server().await;
    let config = config(&server);
    let session = workspace(&server, &config, 5).await;
    let ws = open(&server, &session).await;
    let old = dump(ws.fs()).await;
    ws.fs().write("/d1/f1.md", "staged").await.unwrap();
    server.inject(Some(Fault::ThrottleAll));
    let e = ws.commit(CommitOptions::new("t")).await.unwrap_err();
    let e2 = StorageWorkspace::open_for_session(&config, &session, Limits::default())
        .await
        .err()
        .unwrap();
    server.inject(None);
    for e in [&e, &e2] {
        assert_eq!(e.code(), ErrorCode::Backend, "{e}");
        assert!(e.is_retryable() && !e.outcome_unknown(), "{e}");
        assert!(e.to_string().contains("429"), "{e}");
        assert!(e.to_string().contains("attempts"), "{e}");
    }
    // Nothing was lost: the published tree is whole, the staged edit commits once allowed.
    assert_eq!(dump(open(&server, &session).await.fs()).await, old);
    assert_eq!(ws.fs().read_text("/d1/f1.md").await.unwrap(), "staged");
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let again = open(&server, &session).await;
    assert_eq!(again.fs().read_text("/d1/f1.md").await.unwrap(), "staged");
}

#[tokio::test]
async fn a_pack_stays_within_the_largest_upload() {
    let server = server().await;
    let limits = Limits::default()
        .with_max_file_bytes(200_000)
        .with_max_files(100);
    let largest = supabash::storage::setup::largest_upload(&limits);
    let session = new_session();
    let ws = StorageWorkspace::open_for_session(&config(&server), &session, limits)
        .await
        .unwrap();
    for i in 0..30 {
        ws.fs()
            .write(&format!("/f{i}.bin"), vec![i as u8; 10_000])
            .await
            .unwrap();
    }
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let service = service_api(&server, &session);
    let listed = service
        .list(&format!("{}/.supabash/", session.user_id))
        .await
        .unwrap();
    let biggest = listed.iter().filter_map(|l| l.size).max().unwrap();
    assert!(biggest <= largest, "{biggest} bytes in one upload");
    // The bodies that did not fit went alone; every file reads back.
    assert!(listed.iter().any(|l| l.name.contains("/objects/")));
    let again = open(&server, &session).await;
    for i in 0..30 {
        assert_eq!(
            again.fs().read(&format!("/f{i}.bin")).await.unwrap(),
            vec![i as u8; 10_000]
        );
    }
}

#[tokio::test]
async fn an_old_revision_is_read_by_ranges_not_its_whole_pack() {
    let server = server().await;
    let config = config(&server);
    // 600 files of 512 B: the first revision's pack is about 300 KB.
    let session = workspace(&server, &config, 600).await;
    let ws = open(&server, &session).await;
    let first = ws.base_revision().unwrap();
    ws.fs().write("/d1/f1.md", "newer").await.unwrap();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    server.reset_counts();
    let old = ws.read_revision(&first).await.unwrap();
    let c = server.counts();
    assert_eq!(old.entries.len(), 610);
    // The head, the pack's size, its trailer, its header, the snapshot: no whole pack.
    assert_eq!((c.of("info"), c.of("range")), (1, 2), "{c:?}");
    assert_eq!(
        ws.read_revision_file(&first, "/d1/f1.md").await.unwrap(),
        body(1)
    );
}

#[tokio::test]
async fn content_whose_pack_was_purged_is_uploaded_again() {
    let server = server().await;
    let session = new_session();
    let ws = open(&server, &session).await;
    ws.fs().write("/x.md", "the same bytes").await.unwrap();
    ws.commit(CommitOptions::new("x")).await.unwrap();
    ws.fs().rm("/x.md", false, false).await.unwrap();
    ws.fs().write("/other.md", "other").await.unwrap();
    ws.commit(CommitOptions::new("rm")).await.unwrap();
    // The first revision (and its pack, whose one body nothing names now) goes.
    let purged = ws
        .purge(supabash::workspace::PurgeOptions::default().with_keep_revisions(1))
        .await
        .unwrap();
    assert_eq!(purged.revisions.len(), 1);
    // The same content again: it must be stored again, not taken as still packed.
    ws.fs().write("/y.md", "the same bytes").await.unwrap();
    ws.commit(CommitOptions::new("y")).await.unwrap();
    let again = open(&server, &session).await;
    assert_eq!(
        again.fs().read_text("/y.md").await.unwrap(),
        "the same bytes"
    );
}

//! The memory ceiling of one call (`supabash.max_decoded_per_call`, default 128 MB): twelve
//! 60 MiB files of repeated text (a few KiB each at rest) cannot make a backend decode them
//! all. Four sessions asking for the whole tree at once get a clean QUOTA_EXCEEDED before
//! anything is decoded, diff previews decode only the prefix they show, and one such file still
//! reads whole, after which its backend keeps at most `supabash.backend_heap_keep` of what it
//! freed. Peak backend memory is sampled throughout (BENCHMARKS.md has the figures).

use serde_json::{json, Value};
use supabash_tests::memory::{rss_anon, Sampler};
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, SqlRpc};

const MIB: u64 = 1024 * 1024;
const FILES: usize = 12;
const FILE_BYTES: usize = 60 * 1024 * 1024;

fn big_text(i: usize) -> String {
    let line = format!("file {i}: the same line again and again, compressible to almost nothing\n");
    line.repeat(FILE_BYTES / line.len() + 1)[..FILE_BYTES].to_owned()
}

async fn session(cluster: &Cluster) -> (SqlRpc, i32) {
    let rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let pid: i32 = rest
        .client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    (rest, pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn big_trees_fail_cleanly_and_previews_decode_only_their_prefix() {
    let cluster = Cluster::shared();
    let owner = Caller::new_user();
    let (mut rest, _) = session(cluster).await;
    let ws = rest.create_workspace(&owner).await;
    let first = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/small.md", "text": "small\n"}]),
        )
        .await;
    let mut head = first.clone();
    for i in 0..FILES {
        let text = big_text(i);
        head = rest
            .commit_as(
                &owner,
                &ws,
                Some(&head),
                json!([{"op": "upsert", "path": format!("/big/{i:02}.txt"), "text": text}]),
            )
            .await;
    }

    // Four sessions at once: two whole-tree reads, a revision read and a diff with previews.
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(session(cluster).await);
    }
    let pids: Vec<i32> = sessions.iter().map(|(_, p)| *p).collect();
    let sampler = Sampler::start(pids.clone());
    let calls: Vec<(&str, Value)> = vec![
        ("supabash_load_snapshot", json!({ "workspace_id": ws })),
        (
            "supabash_load_snapshot",
            json!({ "workspace_id": ws, "revision": head }),
        ),
        (
            "supabash_load_revision",
            json!({ "workspace_id": ws, "revision": head }),
        ),
        (
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"revision": first}, "to_ref": {"head": true}, "preview_bytes": 65536 }),
        ),
    ];
    let mut tasks = Vec::new();
    for ((mut rest, _), (rpc, args)) in sessions.into_iter().zip(calls) {
        let owner = owner.clone();
        tasks.push(tokio::spawn(async move {
            (rpc, rest.call(&owner, rpc, args).await)
        }));
    }
    for t in tasks {
        let (rpc, r) = t.await.unwrap();
        if rpc == "supabash_diff" {
            let d = r.unwrap();
            let entries = d["entries"].as_array().unwrap();
            assert_eq!(entries.len(), FILES);
            for e in entries {
                let preview = e["preview"].as_str().unwrap();
                assert!(
                    preview.len() <= 65536 + 20 && preview.ends_with("[truncated]\n"),
                    "{}",
                    &preview[..80]
                );
                assert_ne!(e["binary"], json!(true));
            }
        } else {
            let e = expect_err(r, "54000", Some("SUPABASH_QUOTA_EXCEEDED"));
            assert!(e.message.contains("supabash.max_decoded_per_call"), "{e}");
        }
    }
    let peaks = sampler.finish();
    for pid in &pids {
        let peak = peaks.get(pid).copied().unwrap_or(0);
        assert!(peak < 64 * MIB, "backend {pid} reached {} MiB", peak / MIB);
    }
    eprintln!(
        "peaks (MiB): {:?}",
        peaks.values().map(|p| p / MIB).collect::<Vec<_>>()
    );

    // One 60 MiB file is under the ceiling and reads whole.
    let (mut one, pid) = session(cluster).await;
    one.call(&owner, "supabash_history", json!({ "workspace_id": ws }))
        .await
        .unwrap();
    let before = rss_anon(pid).unwrap();
    let sampler = Sampler::start(vec![pid]);
    let doc = one
        .call(
            &owner,
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/big/03.txt" }),
        )
        .await
        .unwrap();
    assert_eq!(doc["text"].as_str().map(str::len), Some(FILE_BYTES));
    assert!(doc["text"].as_str().unwrap() == big_text(3));
    let peak = sampler.finish()[&pid];
    let kept = rss_anon(pid).unwrap().saturating_sub(before);
    eprintln!(
        "one 60 MiB document: peak {} MiB, kept {} MiB",
        peak / MIB,
        kept / MIB
    );
    // Once the call is over, the backend keeps at most `supabash.backend_heap_keep` of what the
    // call freed (default 64 MB; the peak was several times that).
    let keep = one
        .client
        .query_one("SHOW supabash.backend_heap_keep", &[])
        .await
        .unwrap()
        .get::<_, String>(0);
    assert_eq!(keep, "64MB");
    assert!(peak > 128 * MIB, "the read peaked at {} MiB", peak / MIB);
    assert!(kept <= 64 * MIB, "the backend kept {} MiB", kept / MIB);

    // A superuser may lower the ceiling for a role; the same read is then refused.
    let dsn = supabash_tests::support::authenticator_with(
        cluster,
        "low_ceiling_authenticator",
        &[("supabash.max_decoded_per_call", "16MB")],
    )
    .await;
    let mut low = SqlRpc::connect(&dsn).await;
    let r = low
        .call(
            &owner,
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/big/03.txt" }),
        )
        .await;
    let e = expect_err(r, "54000", Some("SUPABASH_QUOTA_EXCEEDED"));
    assert!(e.message.contains("16 MB"), "{e}");
    // A session cannot raise it for itself.
    let r = low
        .client
        .batch_execute("SET supabash.max_decoded_per_call = '1024MB'")
        .await;
    assert!(r.is_err(), "a non-superuser raised the ceiling");
}

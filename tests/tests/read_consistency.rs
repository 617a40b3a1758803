//! A read racing commits and purges sees one committed state: a manifest's revision label
//! matches its files, and a pinned snapshot is the whole tree of its revision or a clean
//! REVISION_NOT_FOUND, never a mix of two revisions or a partial tree.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use supabash_tests::support::marker;
use supabash_tests::{Caller, Cluster, SqlRpc};

const FILES: usize = 24;
const RUN: Duration = Duration::from_secs(4);

fn marker_text(n: usize) -> String {
    format!("revision number {n}\n")
}

fn sha_hex(text: &str) -> String {
    hex::encode(supabash_core::hash::sha256(text.as_bytes()))
}

/// Every file of revision `n` holds the same text.
fn all_files(n: usize) -> Value {
    Value::Array(
        (0..FILES)
            .map(|i| json!({"op": "upsert", "path": format!("/f/{i:02}.md"), "text": marker_text(n)}))
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_racing_commits_and_purges_see_one_revision() {
    let cluster = Cluster::shared();
    let owner = Caller::new_user();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let ws = rest.create_workspace(&owner).await;
    let first = rest.commit_as(&owner, &ws, None, all_files(0)).await;
    // revision id -> the number its files hold
    let numbers = Arc::new(Mutex::new(HashMap::from([(first.clone(), 0usize)])));
    let stop = Arc::new(AtomicBool::new(false));

    let writer = {
        let (ws, owner, numbers, stop) = (ws.clone(), owner.clone(), numbers.clone(), stop.clone());
        let dsn = cluster.dsn("authenticator");
        tokio::spawn(async move {
            let mut rest = SqlRpc::connect(&dsn).await;
            let mut head = first;
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                head = rest.commit_as(&owner, &ws, Some(&head), all_files(n)).await;
                numbers.lock().unwrap().insert(head.clone(), n);
            }
            n
        })
    };
    let purger = {
        let (ws, owner, stop) = (ws.clone(), owner.clone(), stop.clone());
        let dsn = cluster.dsn("authenticator");
        tokio::spawn(async move {
            let mut rest = SqlRpc::connect(&dsn).await;
            let mut purges = 0;
            while !stop.load(Ordering::Relaxed) {
                let r = rest
                    .call(
                        &owner,
                        "supabash_purge",
                        json!({ "workspace_id": ws, "keep_revisions": 2 }),
                    )
                    .await;
                match r {
                    Ok(_) => purges += 1,
                    Err(e) if e.code == "55P03" => {}
                    Err(e) => panic!("purge: {e}"),
                }
            }
            purges
        })
    };

    let mut readers = Vec::new();
    for reader in 0..2 {
        let (ws, owner, numbers, stop) = (ws.clone(), owner.clone(), numbers.clone(), stop.clone());
        let dsn = cluster.dsn("authenticator");
        readers.push(tokio::spawn(async move {
            let mut rest = SqlRpc::connect(&dsn).await;
            // (revision label, content hash of every file) of each manifest read
            let mut manifests: Vec<(String, Vec<String>)> = Vec::new();
            let (mut whole, mut gone) = (0, 0);
            while !stop.load(Ordering::Relaxed) {
                let m = rest
                    .call(
                        &owner,
                        "supabash_load_manifest",
                        json!({ "workspace_id": ws }),
                    )
                    .await
                    .unwrap();
                let hashes = m["files"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["contentHash"].as_str().unwrap().to_owned())
                    .collect();
                manifests.push((m["revision"].as_str().unwrap().to_owned(), hashes));

                // A pinned snapshot of a revision the purger may be removing right now.
                let pinned: Option<(String, usize)> = {
                    let known = numbers.lock().unwrap();
                    let mut all: Vec<_> = known.iter().map(|(r, n)| (r.clone(), *n)).collect();
                    all.sort_by_key(|(_, n)| *n);
                    let k = all.len().saturating_sub(3 + reader);
                    all.get(k).cloned()
                };
                let Some((revision, n)) = pinned else {
                    continue;
                };
                let r = rest
                    .call(
                        &owner,
                        "supabash_load_snapshot",
                        json!({ "workspace_id": ws, "revision": revision }),
                    )
                    .await;
                match r {
                    Ok(s) => {
                        assert_eq!(s["revision"], json!(revision));
                        let files = s["files"].as_array().unwrap();
                        assert_eq!(files.len(), FILES, "a partial tree of {revision}");
                        for f in files {
                            assert_eq!(
                                f["text"],
                                json!(marker_text(n)),
                                "a mixed tree of {revision}"
                            );
                        }
                        whole += 1;
                    }
                    Err(e) => {
                        assert_eq!(marker(&e), Some("SUPABASH_REVISION_NOT_FOUND"), "{e}");
                        gone += 1;
                    }
                }
            }
            (manifests, whole, gone)
        }));
    }

    tokio::time::sleep(RUN).await;
    stop.store(true, Ordering::Relaxed);
    let commits = writer.await.unwrap();
    let purges = purger.await.unwrap();
    let numbers = numbers.lock().unwrap().clone();
    let (mut reads, mut whole, mut gone) = (0, 0, 0);
    for r in readers {
        let (manifests, w, g) = r.await.unwrap();
        whole += w;
        gone += g;
        for (label, hashes) in manifests {
            let n = numbers[&label];
            assert_eq!(hashes.len(), FILES, "manifest of {label}");
            for h in hashes {
                assert_eq!(
                    h,
                    sha_hex(&marker_text(n)),
                    "manifest labelled {label} (number {n}) shows another revision's file"
                );
            }
            reads += 1;
        }
    }
    assert!(
        commits >= 10 && purges >= 5,
        "too little contention: {commits} commits, {purges} purges"
    );
    assert!(
        reads >= 20 && whole + gone >= 20,
        "too few reads: {reads} manifests, {whole} whole, {gone} gone"
    );
    eprintln!("{commits} commits, {purges} purges, {reads} manifests, {whole} whole snapshots, {gone} purged");
}

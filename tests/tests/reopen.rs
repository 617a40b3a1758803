//! Opens that cost what changed (issue 25, item 6): each revision's stored tree totals equal
//! what its manifest holds (commits of every kind, a fork, a redaction); the changes between
//! two revisions' manifests patch the older into the newer, and say when they cannot (a purge
//! in between, a `since` ahead of the revision); the client's manifest cache reopens from them
//! and loads the manifest again after a redaction or a purge.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use supabash::workspace::CommitOptions;
use supabash::{ManifestCache, OpenMode, Workspace};
use supabash_tests::client::{transport, Via};
use supabash_tests::{Caller, Cluster, SqlRpc};

/// The manifest of `ws` at `revision` (default: the head), by path.
async fn manifest(
    rest: &mut SqlRpc,
    who: &Caller,
    ws: &str,
    revision: Option<&str>,
) -> BTreeMap<String, Value> {
    let mut args = json!({ "workspace_id": ws });
    if let Some(r) = revision {
        args["revision"] = json!(r);
    }
    let m = rest
        .call(who, "supabash_load_manifest", args)
        .await
        .unwrap();
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_owned(), f.clone()))
        .collect()
}

/// The totals `supabash_list_directory` answers for `ws` at `revision`.
async fn totals(rest: &mut SqlRpc, who: &Caller, ws: &str, revision: &str) -> (i64, i64) {
    let page = rest
        .call(
            who,
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/", "revision": revision, "totals": true, "page_size": 1 }),
        )
        .await
        .unwrap();
    (
        page["treeFiles"].as_i64().unwrap(),
        page["treeBytes"].as_i64().unwrap(),
    )
}

/// Files and bytes a manifest holds.
fn counted(m: &BTreeMap<String, Value>) -> (i64, i64) {
    let bytes = m.values().map(|f| f["size"].as_i64().unwrap()).sum();
    (m.len() as i64, bytes)
}

/// The stored totals of every revision of `ws`, by revision (NULL: unknown).
fn stored(cluster: &Cluster, ws: &str) -> BTreeMap<String, String> {
    cluster
        .psql(
            "app",
            &format!(
                "SELECT revision_id, coalesce(tree_files::text, 'null') || ' ' || coalesce(tree_bytes::text, 'null')
                   FROM supabash.revisions WHERE workspace_id = '{ws}' ORDER BY position"
            ),
        )
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(r, t)| (r.to_owned(), t.to_owned()))
        .collect()
}

/// A workspace whose revisions upsert, overwrite with metadata, delete, move, make a
/// directory and a link: its revisions, oldest first.
async fn history(rest: &mut SqlRpc, owner: &Caller) -> (String, Vec<String>) {
    let ws = rest.create_workspace(owner).await;
    let steps = [
        json!([{"op": "upsert", "path": "/a.md", "text": "alpha"},
               {"op": "upsert", "path": "/d/b.md", "text": "bravo!"},
               {"op": "upsert", "path": "/d/c.bin", "base64": "AAEC"}]),
        json!([{"op": "upsert", "path": "/a.md", "text": "alpha, longer", "metadata": {"k": 1}}]),
        json!([{"op": "delete", "path": "/d/c.bin"},
               {"op": "upsert", "path": "/e/f.md", "text": "foxtrot"}]),
        json!([{"op": "move", "from": "/d/b.md", "path": "/a.md"}]),
        json!([{"op": "upsert", "path": "/empty", "kind": "directory"},
               {"op": "upsert", "path": "/e/link", "text": "f.md", "kind": "symlink"},
               {"op": "upsert", "path": "/g.md", "text": "golf"}]),
        json!([{"op": "move", "from": "/e/f.md", "path": "/h.md", "text": "hotel"},
               {"op": "setattr", "path": "/g.md", "mode": 0o600}]),
    ];
    let mut revs: Vec<String> = Vec::new();
    for changes in steps {
        let base = revs.last().cloned();
        revs.push(rest.commit_as(owner, &ws, base.as_deref(), changes).await);
    }
    (ws, revs)
}

#[tokio::test]
async fn stored_totals_count_every_revisions_tree() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let (ws, revs) = history(&mut rest, &owner).await;
    for r in &revs {
        let m = manifest(&mut rest, &owner, &ws, Some(r)).await;
        assert_eq!(totals(&mut rest, &owner, &ws, r).await, counted(&m), "{r}");
    }
    // They are stored, not counted when asked.
    let rows = stored(cluster, &ws);
    assert_eq!(rows.len(), revs.len());
    assert!(rows.values().all(|t| !t.contains("null")), "{rows:?}");

    // A fork starts from its source's totals and adds its own commits'.
    let fork = rest
        .call(
            &owner,
            "supabash_fork",
            json!({ "workspace_id": ws, "revision": revs[2], "actor": "t" }),
        )
        .await
        .unwrap();
    let fork_id = fork["workspaceId"].as_str().unwrap().to_owned();
    let fork_head = fork["headRevision"].as_str().unwrap().to_owned();
    let next = rest
        .commit_as(
            &owner,
            &fork_id,
            Some(&fork_head),
            json!([{"op": "upsert", "path": "/d/b.md", "text": "changed in the fork"},
                   {"op": "delete", "path": "/a.md"}]),
        )
        .await;
    for r in [&fork_head, &next] {
        let m = manifest(&mut rest, &owner, &fork_id, Some(r)).await;
        assert_eq!(totals(&mut rest, &owner, &fork_id, r).await, counted(&m));
    }

    // A redaction turns versions into tombstones (0 bytes): the head is counted again, older
    // revisions become unknown and are counted by scan, and later commits add to exact totals.
    let redacted = rest
        .call(
            &owner,
            "supabash_redact",
            json!({ "workspace_id": ws, "paths": ["/d/b.md"], "before_revision": revs[3] }),
        )
        .await
        .unwrap();
    let epoch = redacted["epoch"].as_i64().unwrap();
    for r in &revs {
        let m = manifest(&mut rest, &owner, &ws, Some(r)).await;
        assert_eq!(totals(&mut rest, &owner, &ws, r).await, counted(&m), "{r}");
    }
    let rows = stored(cluster, &ws);
    assert!(!rows[revs.last().unwrap()].contains("null"), "{rows:?}");
    assert!(rows[&revs[0]].contains("null"), "{rows:?}");
    let after = rest
        .call(
            &owner,
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "owner", "base_revision": revs.last(),
                    "redaction_epoch": epoch,
                    "changes": [{"op": "upsert", "path": "/i.md", "text": "india"}] }),
        )
        .await
        .unwrap()["receipt"]["revision"]
        .as_str()
        .unwrap()
        .to_owned();
    let m = manifest(&mut rest, &owner, &ws, None).await;
    assert_eq!(totals(&mut rest, &owner, &ws, &after).await, counted(&m));
    assert!(!stored(cluster, &ws)[&after].contains("null"));
}

/// The manifest `since` patched with `changes`.
fn patched(mut since: BTreeMap<String, Value>, changes: &Value) -> BTreeMap<String, Value> {
    for p in changes["removed"].as_array().unwrap() {
        // A path added and removed in between is listed too.
        since.remove(p.as_str().unwrap());
    }
    for f in changes["files"].as_array().unwrap() {
        since.insert(f["path"].as_str().unwrap().to_owned(), f.clone());
    }
    since
}

async fn changes(
    rest: &mut SqlRpc,
    who: &Caller,
    ws: &str,
    since: &str,
    revision: Option<&str>,
) -> Value {
    let mut args = json!({ "workspace_id": ws, "since": since });
    if let Some(r) = revision {
        args["revision"] = json!(r);
    }
    rest.call(who, "supabash_manifest_changes", args)
        .await
        .unwrap()
}

#[tokio::test]
async fn manifest_changes_patch_one_manifest_into_another() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let (ws, revs) = history(&mut rest, &owner).await;
    let mut manifests = Vec::new();
    for r in &revs {
        manifests.push(manifest(&mut rest, &owner, &ws, Some(r)).await);
    }
    for i in 0..revs.len() {
        for j in i..revs.len() {
            let c = changes(&mut rest, &owner, &ws, &revs[i], Some(&revs[j])).await;
            assert_eq!(c["complete"], json!(true), "{i}..{j}: {c}");
            assert_eq!(c["revision"], json!(revs[j]));
            assert_eq!(patched(manifests[i].clone(), &c), manifests[j], "{i}..{j}");
            // Only what changed travels.
            if i == j {
                assert_eq!(c["files"], json!([]));
            }
        }
    }
    let one = changes(&mut rest, &owner, &ws, &revs[0], Some(&revs[1])).await;
    assert_eq!(one["files"].as_array().unwrap().len(), 1, "{one}");
    // Default: to the head.
    let c = changes(&mut rest, &owner, &ws, &revs[2], None).await;
    assert_eq!(c["revision"], json!(revs.last().unwrap()));
    // Backwards, or from a revision of no workspace of ours: incomplete, nothing listed.
    for since in [
        revs.last().unwrap().clone(),
        uuid::Uuid::new_v4().to_string(),
    ] {
        let c = changes(&mut rest, &owner, &ws, &since, Some(&revs[1])).await;
        assert_eq!(c["complete"], json!(false), "{c}");
        assert_eq!(c["files"], json!([]));
    }
    // A purge that removes receipts in between: incomplete; from a retained revision: complete.
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": 2 }),
    )
    .await
    .unwrap();
    let n = revs.len();
    let c = changes(&mut rest, &owner, &ws, &revs[0], None).await;
    assert_eq!(c["complete"], json!(false), "{c}");
    let c = changes(&mut rest, &owner, &ws, &revs[n - 2], None).await;
    assert_eq!(c["complete"], json!(true), "{c}");
    assert_eq!(patched(manifests[n - 2].clone(), &c), manifests[n - 1]);
    // Another user learns nothing.
    let other = Caller::new_user();
    let e = rest
        .call(
            &other,
            "supabash_manifest_changes",
            json!({ "workspace_id": ws, "since": revs[n - 2] }),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "42501", "{e}");
}

/// Every path of `ws`'s tree with its kind, mode and content (a link: its target).
async fn snapshot(ws: &Workspace) -> BTreeMap<String, String> {
    let fs = ws.fs();
    let mut out = BTreeMap::new();
    let mut dirs = vec!["/".to_owned()];
    while let Some(dir) = dirs.pop() {
        for e in fs.readdir(&dir).await.unwrap() {
            let p = if dir == "/" {
                format!("/{}", e.name)
            } else {
                format!("{dir}/{}", e.name)
            };
            let st = fs.lstat(&p).await.unwrap();
            let what = match e.kind {
                supabash::tree::FileKind::Directory => {
                    dirs.push(p.clone());
                    "dir".to_owned()
                }
                supabash::tree::FileKind::Symlink => fs.readlink(&p).await.unwrap(),
                _ => String::from_utf8_lossy(&fs.read(&p).await.unwrap()).into_owned(),
            };
            out.insert(p, format!("{:?} {:o} {what}", e.kind, st.mode));
        }
    }
    out
}

async fn open_cached(user: &str, id: &str, cache: &ManifestCache) -> Workspace {
    Workspace::builder(transport(Via::Postgres, user).await)
        .open_mode(OpenMode::Eager)
        .manifest_cache(cache.clone())
        .open(id)
        .await
        .unwrap()
}

async fn open_plain(user: &str, id: &str) -> Workspace {
    Workspace::builder(transport(Via::Postgres, user).await)
        .open_mode(OpenMode::Eager)
        .open(id)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_manifest_cache_reopens_from_the_changes_and_reloads_after_redaction_or_purge() {
    let user = supabash_tests::client::new_user();
    let writer = open_plain_new(&user).await;
    let id = writer.id().to_owned();
    let fs = writer.fs();
    for i in 0..20 {
        fs.mkdir("/src", true).await.unwrap();
        fs.write(&format!("/src/f{i:02}.md"), format!("file {i}"))
            .await
            .unwrap();
    }
    fs.write("/secret.md", "hunter2").await.unwrap();
    writer.commit(CommitOptions::new("seed")).await.unwrap();
    let cache = ManifestCache::new();
    let first = open_cached(&user, &id, &cache).await;
    let seen = first.fs().base_revision().unwrap();
    assert_eq!(cache.revision(&id), Some(seen.clone()));
    let first_tree = snapshot(&first).await;

    // Commits elsewhere: an edit, a delete, a move, a new file.
    fs.write("/src/f00.md", "edited").await.unwrap();
    fs.rm("/src/f01.md", false, false).await.unwrap();
    fs.mv("/src/f02.md", "/moved.md").await.unwrap();
    fs.write("/new.md", "new").await.unwrap();
    fs.write("/secret.md", "clean").await.unwrap();
    let head = writer
        .commit(CommitOptions::new("edit"))
        .await
        .unwrap()
        .receipt
        .revision;
    let reopened = open_cached(&user, &id, &cache).await;
    assert_eq!(reopened.fs().base_revision(), Some(head.clone()));
    assert_eq!(cache.revision(&id), Some(head.clone()));
    assert_eq!(
        snapshot(&reopened).await,
        snapshot(&open_plain(&user, &id).await).await
    );
    // The tree opened before shared the cached base: the reopen patched a copy, so that tree
    // still shows its own revision, with nothing staged.
    assert_eq!(first.fs().base_revision(), Some(seen.clone()));
    assert_eq!(snapshot(&first).await, first_tree);
    assert!(first.changes().unwrap().is_empty());
    // A reopened tree commits like any other.
    reopened.fs().write("/from-reopened.md", "x").await.unwrap();
    reopened
        .commit(CommitOptions::new("after reopen"))
        .await
        .unwrap();

    // A redaction rewrites versions without a revision: the cache cannot patch across it.
    let mut rest = SqlRpc::connect(&supabash_tests::client::cluster().dsn("authenticator")).await;
    let owner = Caller::User(user.clone());
    rest.call(
        &owner,
        "supabash_redact",
        json!({ "workspace_id": id, "paths": ["/secret.md"], "before_revision": head }),
    )
    .await
    .unwrap();
    let after = open_cached(&user, &id, &cache).await;
    assert_eq!(
        snapshot(&after).await,
        snapshot(&open_plain(&user, &id).await).await
    );
    // The epoch the cache keeps is the redacted one: a commit from the reopened tree passes.
    after.fs().write("/after-redaction.md", "y").await.unwrap();
    after
        .commit(CommitOptions::new("after redaction"))
        .await
        .unwrap();

    // A purge that removes the cached revision's successors' receipts: a full load, same tree.
    let cached = cache.revision(&id).unwrap();
    let more = open_plain(&user, &id).await;
    for i in 0..3 {
        more.fs()
            .write("/churn.md", format!("churn {i}"))
            .await
            .unwrap();
        more.commit(CommitOptions::new("churn")).await.unwrap();
    }
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": id, "keep_revisions": 1 }),
    )
    .await
    .unwrap();
    let purged = open_cached(&user, &id, &cache).await;
    assert_ne!(cache.revision(&id), Some(cached));
    assert_eq!(
        snapshot(&purged).await,
        snapshot(&open_plain(&user, &id).await).await
    );
}

async fn open_plain_new(user: &str) -> Workspace {
    Workspace::builder(transport(Via::Postgres, user).await)
        .create()
        .await
        .unwrap()
}

//! Forks: a fork's tree is its source's at the fork point and stays so whatever either side
//! does next (commits, purge, deletion), forks of forks, zero-copy storage (row counts),
//! deletion and listing, and every new RPC tried as the wrong caller and with bad input.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use supabash_tests::support::{admin, expect_err};
use supabash_tests::{Caller, Cluster, DbError, SqlRpc};
use tokio_postgres::Client;

const DENIED: &str = "SUPABASH_WORKSPACE_DENIED";

/// One user's session over the PostgREST call shape.
struct User {
    rest: SqlRpc,
    me: Caller,
}

impl User {
    async fn new() -> User {
        let cluster = Cluster::shared();
        User {
            rest: SqlRpc::connect(&cluster.dsn("authenticator")).await,
            me: Caller::new_user(),
        }
    }

    async fn call(&mut self, rpc: &str, args: Value) -> Result<Value, DbError> {
        self.rest.call(&self.me, rpc, args).await
    }

    async fn create(&mut self, files: &[(&str, &str)]) -> String {
        let id = self.rest.create_workspace(&self.me).await;
        if !files.is_empty() {
            self.commit(&id, upserts(files)).await;
        }
        id
    }

    async fn head(&mut self, ws: &str) -> Option<String> {
        let m = self.manifest(ws, None).await;
        m["revision"].as_str().map(str::to_owned)
    }

    async fn commit(&mut self, ws: &str, changes: Value) -> String {
        let base = self.head(ws).await;
        self.rest
            .commit_as(&self.me, ws, base.as_deref(), changes)
            .await
    }

    async fn fork(&mut self, ws: &str, revision: Option<&str>) -> Value {
        self.call(
            "supabash_fork",
            json!({ "workspace_id": ws, "revision": revision, "actor": "tester" }),
        )
        .await
        .expect("fork")
    }

    async fn fork_id(&mut self, ws: &str, revision: Option<&str>) -> String {
        self.fork(ws, revision).await["workspaceId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn epoch(&mut self, ws: &str) -> i64 {
        self.manifest(ws, None).await["redactionEpoch"]
            .as_i64()
            .unwrap()
    }

    async fn manifest(&mut self, ws: &str, revision: Option<&str>) -> Value {
        self.call(
            "supabash_load_manifest",
            json!({ "workspace_id": ws, "revision": revision }),
        )
        .await
        .expect("manifest")
    }

    /// Every file's text at a revision (default head), by path, from the snapshot RPC.
    async fn texts(&mut self, ws: &str, revision: Option<&str>) -> BTreeMap<String, String> {
        let snap = self
            .call(
                "supabash_load_snapshot",
                json!({ "workspace_id": ws, "revision": revision }),
            )
            .await
            .expect("snapshot");
        let texts = files_of(&snap, "text");
        // The manifest agrees with the snapshot, path for path and hash for hash.
        let m = self.manifest(ws, revision).await;
        assert_eq!(
            files_of(&m, "contentHash"),
            files_of(&snap, "contentHash"),
            "manifest and snapshot of {ws} at {revision:?}"
        );
        texts
    }
}

fn files_of(tree: &Value, field: &str) -> BTreeMap<String, String> {
    tree["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f[field].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn upserts(files: &[(&str, &str)]) -> Value {
    files
        .iter()
        .map(|(p, t)| json!({"op": "upsert", "path": p, "text": t}))
        .collect()
}

fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

/// Row counts of the raw tables for one body store (all of a fork family).
async fn counts(admin: &Client, store: &str) -> (i64, i64, i64, i64) {
    let r = admin
        .query_one(
            "SELECT (SELECT count(*) FROM supabash.workspaces WHERE store_id = $1::text::uuid),
                    (SELECT count(*) FROM supabash.revisions r JOIN supabash.workspaces w
                       ON w.id = r.workspace_id WHERE w.store_id = $1::text::uuid),
                    (SELECT count(*) FROM supabash.entries e JOIN supabash.workspaces w
                       ON w.id = e.workspace_id WHERE w.store_id = $1::text::uuid),
                    (SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::text::uuid)",
            &[&store],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1), r.get(2), r.get(3))
}

#[tokio::test]
async fn a_fork_is_its_source_at_the_fork_point_and_neither_side_sees_the_other_later() {
    let mut u = User::new().await;
    let base = [
        ("/a.md", "alpha"),
        ("/b.md", "beta"),
        ("/dir/c.md", "gamma"),
    ];
    let p = u.create(&base).await;
    let forked = u.fork(&p, None).await;
    let f = forked["workspaceId"].as_str().unwrap().to_owned();
    let fork_point = u.head(&p).await.unwrap();
    assert_eq!(forked["forkedFrom"]["workspaceId"], json!(p));
    assert_eq!(forked["forkedFrom"]["revision"], json!(fork_point));
    assert_eq!(u.texts(&f, None).await, tree(&base));
    // The fork's first revision records where it came from and changes nothing.
    let h = u
        .call("supabash_history", json!({ "workspace_id": f }))
        .await
        .unwrap();
    let first = &h["records"][0];
    assert_eq!(first["position"], json!(1));
    assert_eq!(first["forkedFrom"]["revision"], json!(fork_point));
    assert_eq!(first["changes"], json!([]));
    assert_eq!(first["actor"], json!("tester"));

    // The source moves on: the fork does not see it.
    u.commit(
        &p,
        json!([{"op": "upsert", "path": "/a.md", "text": "alpha 2"},
               {"op": "delete", "path": "/b.md"},
               {"op": "upsert", "path": "/d.md", "text": "delta"}]),
    )
    .await;
    assert_eq!(u.texts(&f, None).await, tree(&base));
    // The fork moves on: edits, deletes and moves of inherited files, new files.
    let r2 = u
        .commit(
            &f,
            json!([{"op": "upsert", "path": "/b.md", "text": "beta in the fork"},
                   {"op": "delete", "path": "/a.md"},
                   {"op": "move", "from": "/dir/c.md", "path": "/dir/c2.md"},
                   {"op": "upsert", "path": "/e.md", "text": "epsilon"}]),
        )
        .await;
    let fork_tree = tree(&[
        ("/b.md", "beta in the fork"),
        ("/dir/c2.md", "gamma"),
        ("/e.md", "epsilon"),
    ]);
    assert_eq!(u.texts(&f, None).await, fork_tree);
    assert_eq!(
        u.texts(&p, None).await,
        tree(&[
            ("/a.md", "alpha 2"),
            ("/d.md", "delta"),
            ("/dir/c.md", "gamma"),
        ])
    );
    // Pinned reads of the fork: its first revision is the fork point, the next its commit.
    let first_rev = first["revision"].as_str().unwrap().to_owned();
    assert_eq!(u.texts(&f, Some(&first_rev)).await, tree(&base));
    assert_eq!(u.texts(&f, Some(&r2)).await, fork_tree);
    // One document, at head and pinned, through the inherited and the own rows.
    let doc = u
        .call(
            "supabash_load_document",
            json!({ "workspace_id": f, "path": "/a.md", "revision": first_rev }),
        )
        .await
        .unwrap();
    assert_eq!(doc["text"], json!("alpha"));
    expect_err(
        u.call(
            "supabash_load_document",
            json!({ "workspace_id": f, "path": "/a.md" }),
        )
        .await,
        "22023",
        Some("SUPABASH_PATH_NOT_FOUND"),
    );
    // A deleted inherited file can come back, as the fork's own.
    u.commit(&f, upserts(&[("/a.md", "alpha reborn")])).await;
    assert_eq!(u.texts(&f, None).await["/a.md"], "alpha reborn");
    // Diff inside the fork, across the fork point's inherited rows.
    let d = u
        .call(
            "supabash_diff",
            json!({ "workspace_id": f, "from_ref": {"revision": first_rev}, "to_ref": {"head": true} }),
        )
        .await
        .unwrap();
    let kinds: BTreeMap<String, String> = d["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(kinds.get("/e.md").map(String::as_str), Some("added"));
    assert_eq!(kinds.get("/a.md").map(String::as_str), Some("modified"));
}

#[tokio::test]
async fn forks_of_forks_and_forks_of_old_revisions_read_exactly_their_fork_points() {
    let mut u = User::new().await;
    let p = u.create(&[("/x", "x1"), ("/y", "y1")]).await;
    let r1 = u.head(&p).await.unwrap();
    u.commit(&p, upserts(&[("/x", "x2"), ("/z", "z2")])).await;
    // Forked from the first revision, not the head.
    let f = u.fork_id(&p, Some(&r1)).await;
    assert_eq!(u.texts(&f, None).await, tree(&[("/x", "x1"), ("/y", "y1")]));
    u.commit(&f, upserts(&[("/y", "y-f")])).await;
    let g = u.fork_id(&f, None).await;
    assert_eq!(
        u.texts(&g, None).await,
        tree(&[("/x", "x1"), ("/y", "y-f")])
    );
    // Every level changes afterwards; the grandchild keeps its fork point.
    u.commit(&p, upserts(&[("/x", "x3")])).await;
    u.commit(&f, json!([{"op": "delete", "path": "/x"}])).await;
    assert_eq!(
        u.texts(&g, None).await,
        tree(&[("/x", "x1"), ("/y", "y-f")])
    );
    u.commit(&g, json!([{"op": "delete", "path": "/y"}])).await;
    assert_eq!(u.texts(&g, None).await, tree(&[("/x", "x1")]));
    assert_eq!(u.texts(&f, None).await, tree(&[("/y", "y-f")]));
    // A fork of the child made after its delete does not see the deleted file.
    let h = u.fork_id(&f, None).await;
    assert_eq!(u.texts(&h, None).await, tree(&[("/y", "y-f")]));
}

#[tokio::test]
async fn forking_copies_no_rows_and_no_bytes() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut u = User::new().await;
    let files: Vec<(String, String)> = (0..300)
        .map(|i| (format!("/f/{i:04}.txt"), format!("file {i}\n").repeat(40)))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let p = u.create(&refs).await;
    let before = counts(&admin, &p).await;
    let f = u.fork_id(&p, None).await;
    let after = counts(&admin, &p).await;
    assert_eq!(after.0, before.0 + 1, "one workspace row");
    assert_eq!(after.1, before.1 + 1, "one revision row");
    assert_eq!(after.2, before.2, "no entry copied");
    assert_eq!(after.3, before.3, "no body copied");
    // A commit in the fork touching one inherited file writes its copy and its new version;
    // an unchanged body is not stored again (the family shares one store).
    u.commit(
        &f,
        upserts(&[("/f/0001.txt", "changed"), ("/new", &files[2].1)]),
    )
    .await;
    let later = counts(&admin, &p).await;
    assert_eq!(later.2, after.2 + 3, "copy + new version + new file");
    assert_eq!(later.3, after.3 + 1, "only the one new body");
    // The fork's family shares the store id; the listing says so.
    let list = u.call("supabash_list_workspaces", json!({})).await.unwrap();
    let stores: Vec<&Value> = list["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["storeId"])
        .collect();
    assert_eq!(stores, vec![&json!(p), &json!(p)]);
}

#[tokio::test]
async fn purging_either_side_keeps_the_other_whole() {
    let mut u = User::new().await;
    let p = u.create(&[("/doc", "v0"), ("/keep", "k")]).await;
    for i in 1..=5 {
        u.commit(&p, upserts(&[("/doc", &format!("v{i}"))])).await;
    }
    let r3 = {
        let h = u
            .call("supabash_history", json!({ "workspace_id": p }))
            .await
            .unwrap();
        h["records"][3]["revision"].as_str().unwrap().to_owned()
    };
    let f = u.fork_id(&p, Some(&r3)).await;
    let expected = tree(&[("/doc", "v3"), ("/keep", "k")]);
    assert_eq!(u.texts(&f, None).await, expected);
    // The fork deletes an inherited file, then changes another twice.
    u.commit(&f, json!([{"op": "delete", "path": "/keep"}]))
        .await;
    u.commit(&f, upserts(&[("/doc", "f1")])).await;
    u.commit(&f, upserts(&[("/doc", "f2")])).await;
    // Purge the source down to its head: the fork point's versions stay.
    let report = u
        .call(
            "supabash_purge",
            json!({ "workspace_id": p, "keep_revisions": 1 }),
        )
        .await
        .unwrap();
    assert_eq!(report["revisions"].as_array().unwrap().len(), 5);
    let first = u
        .call("supabash_history", json!({ "workspace_id": f }))
        .await
        .unwrap()["records"][0]["revision"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(u.texts(&f, Some(&first)).await, expected);
    assert_eq!(u.texts(&f, None).await, tree(&[("/doc", "f2")]));
    // Purge the fork to its head: the deleted inherited file stays deleted.
    u.call(
        "supabash_purge",
        json!({ "workspace_id": f, "keep_revisions": 1 }),
    )
    .await
    .unwrap();
    assert_eq!(u.texts(&f, None).await, tree(&[("/doc", "f2")]));
    assert_eq!(
        u.texts(&p, None).await,
        tree(&[("/doc", "v5"), ("/keep", "k")])
    );
    // A fork made after both purges still starts from the source's head.
    let g = u.fork_id(&p, None).await;
    assert_eq!(
        u.texts(&g, None).await,
        tree(&[("/doc", "v5"), ("/keep", "k")])
    );
}

#[tokio::test]
async fn deleting_a_source_keeps_its_forks_and_the_last_fork_takes_it_along() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut u = User::new().await;
    let p = u.create(&[("/a", "a"), ("/b", "b")]).await;
    u.commit(&p, upserts(&[("/a", "a2")])).await;
    let f = u.fork_id(&p, None).await;
    u.commit(&p, upserts(&[("/c", "c")])).await;
    let gone = u
        .call("supabash_delete_workspace", json!({ "workspace_id": p }))
        .await
        .unwrap();
    assert_eq!(gone["keptForForks"], json!(true));
    // The source is gone for every RPC; the fork reads on.
    expect_err(
        u.call("supabash_load_manifest", json!({ "workspace_id": p }))
            .await,
        "42501",
        Some(DENIED),
    );
    expect_err(
        u.call("supabash_fork", json!({ "workspace_id": p, "actor": "t" }))
            .await,
        "42501",
        Some(DENIED),
    );
    assert_eq!(u.texts(&f, None).await, tree(&[("/a", "a2"), ("/b", "b")]));
    let listed = u.call("supabash_list_workspaces", json!({})).await.unwrap();
    let ids: Vec<&Value> = listed["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["workspaceId"])
        .collect();
    assert_eq!(ids, vec![&json!(f)]);
    // What the fork does not read (the source's later file) went already.
    let (_, revisions, _, bodies) = counts(&admin, &p).await;
    assert_eq!(revisions, 1, "only the fork's revision");
    let c_body = admin
        .query_one(
            "SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::text::uuid
                AND hash = sha256('c'::bytea)",
            &[&p],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(c_body, 0, "a body only the deleted source used is gone");
    assert!(bodies >= 2);
    // The fork goes: nothing of the family remains.
    let last = u
        .call("supabash_delete_workspace", json!({ "workspace_id": f }))
        .await
        .unwrap();
    assert_eq!(last["keptForForks"], json!(false));
    assert_eq!(counts(&admin, &p).await, (0, 0, 0, 0));
    let usage: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.usage WHERE workspace_id = $1::text::uuid",
            &[&p],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(usage, 0);
}

#[tokio::test]
async fn deleting_a_workspace_without_forks_reclaims_everything() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut u = User::new().await;
    let p = u.create(&[("/a", "a"), ("/b", "b")]).await;
    u.commit(&p, upserts(&[("/a", "a2")])).await;
    u.call(
        "supabash_checkpoint",
        json!({ "workspace_id": p, "label": "kept" }),
    )
    .await
    .unwrap();
    let gone = u
        .call("supabash_delete_workspace", json!({ "workspace_id": p }))
        .await
        .unwrap();
    assert_eq!(gone["keptForForks"], json!(false));
    assert_eq!(gone["bodies"], json!(3));
    assert_eq!(counts(&admin, &p).await, (0, 0, 0, 0));
    // Deleting again is the same refusal as any unknown workspace.
    expect_err(
        u.call("supabash_delete_workspace", json!({ "workspace_id": p }))
            .await,
        "42501",
        Some(DENIED),
    );
}

#[tokio::test]
async fn listing_pages_the_callers_workspaces_only() {
    let mut u = User::new().await;
    let mut other = User::new().await;
    let mut ids = Vec::new();
    for label in ["one", "two", "three"] {
        let r = u
            .call("supabash_create_workspace", json!({ "label": label }))
            .await
            .unwrap();
        ids.push(r["workspaceId"].as_str().unwrap().to_owned());
    }
    u.commit(&ids[0], upserts(&[("/x", "x")])).await;
    let f = u
        .call(
            "supabash_fork",
            json!({ "workspace_id": ids[0], "actor": "t", "label": "fork of one" }),
        )
        .await
        .unwrap()["workspaceId"]
        .as_str()
        .unwrap()
        .to_owned();
    other.create(&[]).await;
    let page1 = u
        .call("supabash_list_workspaces", json!({ "page_size": 2 }))
        .await
        .unwrap();
    let cursor = page1["nextCursor"].as_str().unwrap().to_owned();
    let page2 = u
        .call(
            "supabash_list_workspaces",
            json!({ "page_size": 2, "cursor": cursor }),
        )
        .await
        .unwrap();
    assert!(page2.get("nextCursor").is_none_or(Value::is_null));
    let all: Vec<Value> = page1["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .chain(page2["workspaces"].as_array().unwrap())
        .cloned()
        .collect();
    let labels: Vec<&str> = all.iter().map(|w| w["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["one", "two", "three", "fork of one"]);
    assert_eq!(all[3]["workspaceId"], json!(f));
    assert_eq!(all[3]["forkedFrom"]["workspaceId"], json!(ids[0]));
    assert_eq!(all[3]["headPosition"], json!(1));
    assert!(all[1].get("forkedFrom").is_none());
    assert!(all[0]["storeBytes"].as_i64().unwrap() >= 1);
    // Another user's cursor, a bad cursor, a bad page size.
    let theirs = other
        .call("supabash_list_workspaces", json!({}))
        .await
        .unwrap();
    assert_eq!(theirs["workspaces"].as_array().unwrap().len(), 1);
    expect_err(
        other
            .call("supabash_list_workspaces", json!({ "cursor": ids[0] }))
            .await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );
    expect_err(
        u.call("supabash_list_workspaces", json!({ "cursor": "nope" }))
            .await,
        "22023",
        None,
    );
    expect_err(
        u.call("supabash_list_workspaces", json!({ "page_size": 0 }))
            .await,
        "54000",
        None,
    );
}

#[tokio::test]
async fn nobody_but_the_owner_forks_deletes_or_lists() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut u = User::new().await;
    let mut intruder = User::new().await;
    let p = u.create(&[("/secret", "s")]).await;
    let before = counts(&admin, &p).await;
    let fork = |ws: &str| json!({ "workspace_id": ws, "actor": "x" });
    for caller in [Caller::new_user(), Caller::Anon, Caller::Service] {
        for (rpc, args) in [
            ("supabash_fork", fork(&p)),
            ("supabash_delete_workspace", json!({ "workspace_id": p })),
        ] {
            let r = intruder.rest.call(&caller, rpc, args).await;
            assert!(r.is_err(), "{caller:?} {rpc}: {r:?}");
        }
        if let Ok(page) = intruder
            .rest
            .call(&caller, "supabash_list_workspaces", json!({}))
            .await
        {
            assert_eq!(page["workspaces"], json!([]), "{caller:?} lists nothing");
        }
    }
    expect_err(
        intruder.call("supabash_fork", fork(&p)).await,
        "42501",
        Some(DENIED),
    );
    // A made-up grant as service_role.
    expect_err(
        intruder
            .rest
            .call(
                &Caller::Service,
                "supabash_fork",
                json!({ "workspace_id": p, "delegated_grant": "A".repeat(43) }),
            )
            .await,
        "42501",
        Some(DENIED),
    );
    assert_eq!(counts(&admin, &p).await, before, "nothing was written");
    // Malformed input.
    for (args, code) in [
        (
            json!({ "workspace_id": "not-a-uuid", "actor": "x" }),
            "22023",
        ),
        (
            json!({ "workspace_id": p, "actor": "x", "revision": "nope" }),
            "22023",
        ),
        (
            json!({ "workspace_id": p, "actor": "x", "revision": uuid::Uuid::new_v4().to_string() }),
            "22023",
        ),
        (
            json!({ "workspace_id": p, "actor": "x", "label": "" }),
            "22023",
        ),
        (
            json!({ "workspace_id": p, "actor": "x", "label": "l".repeat(257) }),
            "54000",
        ),
        (json!({ "workspace_id": p }), "22023"),
        (
            json!({ "workspace_id": p, "actor": "delegated:me" }),
            "22023",
        ),
    ] {
        let r = u.call("supabash_fork", args.clone()).await;
        expect_err(r, code, None);
    }
    let empty = u.create(&[]).await;
    expect_err(
        u.call("supabash_fork", fork(&empty)).await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );
    assert!(u.rest.alive().await);
}

#[tokio::test]
async fn the_client_forks_lists_and_deletes_over_both_transports() {
    use supabash::workspace::{CommitOptions, ForkOptions};
    use supabash::Workspace;
    use supabash_tests::client::{new_user, transport, workspace_with, BOTH};
    for via in BOTH {
        let user = new_user();
        let ws = workspace_with(via, &user, &[("/notes/a.md", "a"), ("/b.md", "b")]).await;
        // Staged edits of the source stay in the source.
        ws.fs().write("/staged.md", "only here").await.unwrap();
        let mut options = ForkOptions::new("host");
        options.label = Some("attempt 1".into());
        let forked = ws.fork(options).await.unwrap();
        assert_eq!(forked.forked_from.revision, ws.base_revision().unwrap());
        let fork = forked.workspace;
        assert!(!fork.fs().exists("/staged.md").await, "{via:?}");
        assert_eq!(
            fork.fs().read("/notes/a.md").await.unwrap(),
            b"a",
            "{via:?}"
        );
        assert!(fork.base_revision().is_some());
        fork.fs().write("/b.md", "b in the fork").await.unwrap();
        let committed = fork.commit(CommitOptions::new("agent")).await.unwrap();
        assert_eq!(committed.receipt.position, 2, "{via:?}");
        ws.commit(CommitOptions::new("host")).await.unwrap();
        assert_eq!(ws.fs().read("/b.md").await.unwrap(), b"b", "{via:?}");
        let t = transport(via, &user).await;
        let page = Workspace::list(t.as_ref(), None, None).await.unwrap();
        let labels: Vec<Option<String>> = page.workspaces.iter().map(|w| w.label.clone()).collect();
        assert_eq!(labels, vec![None, Some("attempt 1".to_owned())], "{via:?}");
        assert_eq!(
            page.workspaces[1]
                .forked_from
                .as_ref()
                .unwrap()
                .workspace_id,
            ws.id()
        );
        let fork_id = fork.id().to_owned();
        let deleted = fork.delete().await.unwrap();
        assert_eq!(deleted.workspace_id, fork_id);
        assert!(!deleted.kept_for_forks);
        let page = Workspace::list(t.as_ref(), None, None).await.unwrap();
        assert_eq!(page.workspaces.len(), 1, "{via:?}");
    }
}

#[tokio::test]
async fn a_redaction_reaches_the_forks_that_share_the_version_and_no_further() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut u = User::new().await;
    let secret = "password=hunter2-forked";
    let p = u.create(&[("/cfg", secret), ("/other", "o")]).await;
    let shared = u.fork_id(&p, None).await; // reads /cfg from p
    let editing = u.fork_id(&p, None).await; // will copy /cfg when it edits it
    u.commit(&editing, upserts(&[("/cfg", "fork's own config")]))
        .await;
    u.commit(&p, upserts(&[("/cfg", "clean")])).await;
    let later = u.fork_id(&p, None).await; // made after the secret left: not affected
    let shared_epoch = u.epoch(&shared).await;
    // Redacting in a fork what it only inherits is refused: the bytes are its source's.
    expect_err(
        u.call(
            "supabash_redact",
            json!({ "workspace_id": shared, "paths": ["/cfg"] }),
        )
        .await,
        "22023",
        None,
    );
    let report = u
        .call(
            "supabash_redact",
            json!({ "workspace_id": p, "paths": ["/cfg"], "dry_run": false, "reason": "leaked" }),
        )
        .await
        .unwrap();
    assert_eq!(report["bodies"].as_array().unwrap().len(), 1, "{report}");
    // The secret's bytes are gone from the family's store.
    let secret_hash = supabash_core::hash::sha256(secret.as_bytes()).to_vec();
    let left: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::text::uuid AND hash = $2",
            &[&p, &secret_hash],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
    let copies: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.entries WHERE body_hash = $1",
            &[&secret_hash],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(copies, 0, "no entry anywhere names the secret");
    // The fork that read it through its fork point now reads a tombstone, and must reload.
    let snap = u
        .call("supabash_load_snapshot", json!({ "workspace_id": shared }))
        .await
        .unwrap();
    let cfg = snap["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/cfg")
        .unwrap()
        .clone();
    assert_eq!(cfg["redacted"], json!(true), "{cfg}");
    assert!(cfg.get("text").is_none());
    assert!(u.epoch(&shared).await > shared_epoch);
    let stale = u
        .call(
            "supabash_commit",
            json!({ "workspace_id": shared, "actor": "t", "base_revision": snap["revision"],
                    "redaction_epoch": shared_epoch,
                    "changes": [{"op": "upsert", "path": "/x", "text": "x"}] }),
        )
        .await;
    expect_err(stale, "55000", Some("SUPABASH_REDACTION_INVALIDATED"));
    // The fork that copied it: its first revision shows the tombstone, its own version stays.
    let first = u
        .call("supabash_history", json!({ "workspace_id": editing }))
        .await
        .unwrap()["records"][0]["revision"]
        .as_str()
        .unwrap()
        .to_owned();
    let old = u
        .call(
            "supabash_load_snapshot",
            json!({ "workspace_id": editing, "revision": first }),
        )
        .await
        .unwrap();
    let old_cfg = old["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/cfg")
        .unwrap()
        .clone();
    assert_eq!(old_cfg["redacted"], json!(true), "{old_cfg}");
    assert_eq!(u.texts(&editing, None).await["/cfg"], "fork's own config");
    // A fork made after the secret left is untouched.
    assert_eq!(u.texts(&later, None).await["/cfg"], "clean");
    assert_eq!(u.texts(&p, None).await["/cfg"], "clean");
}

#[tokio::test]
async fn a_forks_work_merges_back_with_rebase_and_overlaps_conflict() {
    use supabash::workspace::{CommitOptions, ForkOptions};
    use supabash::ErrorCode;
    use supabash_tests::client::{new_user, reopen, workspace_with, BOTH};
    for via in BOTH {
        let user = new_user();
        let source = workspace_with(via, &user, &[("/a.md", "a"), ("/b.md", "b")]).await;
        let fork_point = source.base_revision().unwrap();
        let attempt = source
            .fork(ForkOptions::new("host"))
            .await
            .unwrap()
            .workspace;
        let loser = source
            .fork(ForkOptions::new("host"))
            .await
            .unwrap()
            .workspace;
        // The attempt edits, adds and removes; the source moves on elsewhere meanwhile.
        attempt.fs().write("/a.md", "a, better").await.unwrap();
        attempt.fs().write("/c.md", "new").await.unwrap();
        attempt.fs().rm("/b.md", false, false).await.unwrap();
        attempt.commit(CommitOptions::new("agent")).await.unwrap();
        source.fs().write("/d.md", "source's own").await.unwrap();
        source.commit(CommitOptions::new("host")).await.unwrap();
        let merged = attempt
            .merge_into_source(CommitOptions::new("host"))
            .await
            .unwrap();
        assert_eq!(
            merged.receipt.rebased_from.as_deref(),
            Some(fork_point.as_str()),
            "{via:?}"
        );
        let now = reopen(via, &user, source.id()).await;
        let mut paths: Vec<String> = now
            .fs()
            .readdir("/")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        paths.sort();
        assert_eq!(paths, ["a.md", "c.md", "d.md"], "{via:?}");
        assert_eq!(now.fs().read("/a.md").await.unwrap(), b"a, better");
        // The other attempt changed /a.md too: its merge conflicts and writes nothing.
        loser.fs().write("/a.md", "a, worse").await.unwrap();
        loser.commit(CommitOptions::new("agent")).await.unwrap();
        let err = loser
            .merge_into_source(CommitOptions::new("host"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::CommitConflict, "{via:?}: {err}");
        let after = reopen(via, &user, source.id()).await;
        assert_eq!(after.base_revision(), Some(merged.receipt.revision.clone()));
        // A workspace that is not a fork has nothing to merge.
        let err = after
            .merge_into_source(CommitOptions::new("host"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
    }
}

//! Path-level rebase on commit: a commit made on an older base applies on top of the head when
//! no path it touches changed in between, and fails with PT409 naming the paths otherwise.
//! Through the RPCs (move, delete and purge edge cases, replay) and through the client over
//! both transports (the staged tree after a rebase), with 64 concurrent writers, and in a fork
//! (inherited paths the fork changed count as changed).

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use supabash::transport::RpcError;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, SupabashError};
use supabash_tests::client::{new_user, reopen, workspace_with, Via, BOTH};
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, DbError, SqlRpc};
use tokio::sync::Barrier;

const WRITERS: usize = 64;

/// A workspace driven through the raw RPCs.
struct Ws {
    rest: SqlRpc,
    owner: Caller,
    id: String,
}

impl Ws {
    /// A workspace holding `files` (path, text) in its first revision; returns it and that
    /// revision.
    async fn with(files: &[(&str, &str)]) -> (Ws, String) {
        let mut rest = SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await;
        let owner = Caller::new_user();
        let id = rest.create_workspace(&owner).await;
        let changes: Vec<Value> = files
            .iter()
            .map(|(p, t)| json!({"op": "upsert", "path": p, "text": t}))
            .collect();
        let base = rest.commit_as(&owner, &id, None, json!(changes)).await;
        (Ws { rest, owner, id }, base)
    }

    async fn commit(
        &mut self,
        base: &str,
        changes: Value,
        mut extra: Value,
    ) -> Result<Value, DbError> {
        extra["workspace_id"] = json!(self.id);
        extra["actor"] = json!("rebaser");
        extra["base_revision"] = json!(base);
        extra["changes"] = changes;
        self.rest.call(&self.owner, "supabash_commit", extra).await
    }

    /// Commits `changes` on `base` and returns the new revision.
    async fn advance(&mut self, base: &str, changes: Value) -> String {
        let r = self.commit(base, changes, json!({})).await.unwrap();
        r["receipt"]["revision"].as_str().unwrap().to_owned()
    }

    /// The head tree: path -> text.
    async fn tree(&mut self) -> BTreeMap<String, String> {
        let snap = self
            .rest
            .call(
                &self.owner,
                "supabash_load_snapshot",
                json!({"workspace_id": self.id}),
            )
            .await
            .unwrap();
        snap["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let text = f["text"].as_str().unwrap().to_owned();
                (f["path"].as_str().unwrap().to_owned(), text)
            })
            .collect()
    }
}

/// The conflicting paths a PT409 names.
fn conflicts(e: &DbError) -> Vec<String> {
    let detail: Value = serde_json::from_str(e.detail.as_deref().unwrap_or("{}")).unwrap();
    serde_json::from_value(detail["conflicts"].clone()).unwrap_or_default()
}

/// One base, the other side's commit on it, then ours on the same base with rebase: the
/// conflicting paths (empty when it applied), and the head tree after.
async fn race(theirs: Value, ours: Value) -> (Vec<String>, BTreeMap<String, String>) {
    let (mut ws, base) = Ws::with(&[
        ("/a.md", "a"),
        ("/b.md", "b"),
        ("/dir/x.md", "x"),
        ("/dir/y.md", "y"),
    ])
    .await;
    let head = ws.advance(&base, theirs).await;
    let found = match ws.commit(&base, ours, json!({"rebase": true})).await {
        Ok(r) => {
            let receipt = &r["receipt"];
            assert_eq!(receipt["rebasedFrom"], json!(base), "{r}");
            assert_eq!(receipt["parentRevision"], json!(head), "{r}");
            Vec::new()
        }
        Err(e) => {
            let e = expect_err(Err(e), "PT409", Some("SUPABASH_COMMIT_CONFLICT"));
            conflicts(&e)
        }
    };
    (found, ws.tree().await)
}

fn up(path: &str, text: &str) -> Value {
    json!({"op": "upsert", "path": path, "text": text})
}

fn del(path: &str) -> Value {
    json!({"op": "delete", "path": path})
}

fn mv(from: &str, path: &str) -> Value {
    json!({"op": "move", "from": from, "path": path})
}

#[tokio::test]
async fn disjoint_paths_apply_and_overlapping_ones_conflict() {
    let (c, tree) = race(json!([up("/a.md", "theirs")]), json!([up("/b.md", "ours")])).await;
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(
        (tree["/a.md"].as_str(), tree["/b.md"].as_str()),
        ("theirs", "ours")
    );

    let (c, tree) = race(
        json!([up("/a.md", "theirs"), up("/b.md", "theirs")]),
        json!([up("/b.md", "ours"), up("/new.md", "ours")]),
    )
    .await;
    assert_eq!(c, ["/b.md"]);
    assert_eq!(tree["/b.md"], "theirs");
    assert!(!tree.contains_key("/new.md"));
}

#[tokio::test]
async fn moves_count_for_both_paths() {
    // The source was edited by the other side.
    let (c, _) = race(
        json!([up("/a.md", "edited")]),
        json!([mv("/a.md", "/c.md")]),
    )
    .await;
    assert_eq!(c, ["/a.md"]);
    // The target was created by the other side.
    let (c, tree) = race(
        json!([up("/c.md", "created")]),
        json!([mv("/a.md", "/c.md")]),
    )
    .await;
    assert_eq!(c, ["/c.md"]);
    assert_eq!(tree["/c.md"], "created");
    // Their move changed both its paths: an edit of its source conflicts.
    let (c, _) = race(json!([mv("/b.md", "/c.md")]), json!([up("/b.md", "ours")])).await;
    assert_eq!(c, ["/b.md"]);
    // A move of an untouched file next to their edit applies.
    let (c, tree) = race(
        json!([up("/b.md", "edited")]),
        json!([mv("/a.md", "/c.md")]),
    )
    .await;
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(tree.get("/c.md").map(String::as_str), Some("a"));
    assert!(!tree.contains_key("/a.md"));
    assert_eq!(tree["/b.md"], "edited");
}

#[tokio::test]
async fn deletes_conflict_with_edits_but_not_with_new_neighbours() {
    let (c, tree) = race(json!([up("/a.md", "edited")]), json!([del("/a.md")])).await;
    assert_eq!(c, ["/a.md"]);
    assert_eq!(tree["/a.md"], "edited");
    // Both deleting the same file conflicts too: it changed after the base.
    let (c, _) = race(json!([del("/b.md")]), json!([del("/b.md"), del("/a.md")])).await;
    assert_eq!(c, ["/b.md"]);
    // Deleting a directory (each file it held) while the other side adds a file to it: the
    // files are disjoint, so the new file stays.
    let (c, tree) = race(
        json!([up("/dir/z.md", "new")]),
        json!([del("/dir/x.md"), del("/dir/y.md")]),
    )
    .await;
    assert!(c.is_empty(), "{c:?}");
    let dir: Vec<&str> = tree
        .keys()
        .filter(|p| p.starts_with("/dir/"))
        .map(String::as_str)
        .collect();
    assert_eq!(dir, ["/dir/z.md"]);
}

#[tokio::test]
async fn strict_is_the_default_and_the_base_must_be_retained() {
    let (mut ws, base) = Ws::with(&[("/a.md", "a"), ("/b.md", "b")]).await;
    let head = ws.advance(&base, json!([up("/a.md", "a2")])).await;
    // Without rebase any head move conflicts, whatever the paths.
    for extra in [json!({}), json!({"rebase": false})] {
        let r = ws.commit(&base, json!([up("/b.md", "b2")]), extra).await;
        let e = expect_err(r, "PT409", Some("SUPABASH_COMMIT_CONFLICT"));
        assert!(conflicts(&e).is_empty(), "{e:?}");
    }
    // Rebase on the head itself is an ordinary commit: no rebasedFrom.
    let r = ws
        .commit(&head, json!([up("/b.md", "b2")]), json!({"rebase": true}))
        .await
        .unwrap();
    assert!(r["receipt"].get("rebasedFrom").is_none(), "{r}");
    let head = r["receipt"]["revision"].as_str().unwrap().to_owned();

    // A base purged since: unknown, so not rebased even onto disjoint paths.
    let head = ws.advance(&head, json!([up("/c.md", "c")])).await;
    let purged = ws
        .rest
        .call(
            &ws.owner,
            "supabash_purge",
            json!({"workspace_id": ws.id, "keep_revisions": 1}),
        )
        .await
        .unwrap();
    assert!(purged.to_string().contains(&base), "{purged}");
    let r = ws
        .commit(&base, json!([up("/d.md", "d")]), json!({"rebase": true}))
        .await;
    let e = expect_err(r, "PT409", Some("SUPABASH_COMMIT_CONFLICT"));
    assert!(e.message.contains("unknown or purged"), "{e:?}");
    // So is a revision of another workspace of the same owner.
    let other = ws.rest.create_workspace(&ws.owner).await;
    let foreign = ws
        .rest
        .commit_as(&ws.owner, &other, None, json!([up("/x.md", "x")]))
        .await;
    let r = ws
        .commit(&foreign, json!([up("/d.md", "d")]), json!({"rebase": true}))
        .await;
    let e = expect_err(r, "PT409", Some("SUPABASH_COMMIT_CONFLICT"));
    assert!(e.message.contains("unknown or purged"), "{e:?}");
    // A rebase flag that is not a boolean is refused.
    let r = ws
        .commit(&base, json!([up("/d.md", "d")]), json!({"rebase": "maybe"}))
        .await;
    assert!(r.is_err(), "{r:?}");
    // And an empty base under a non-empty head.
    let mut args = json!({"workspace_id": ws.id, "actor": "rebaser", "rebase": true,
                          "changes": [up("/d.md", "d")]});
    let r = ws
        .rest
        .call(&ws.owner, "supabash_commit", args.take())
        .await;
    expect_err(r, "PT409", Some("SUPABASH_COMMIT_CONFLICT"));
    assert_eq!(
        ws.tree().await.len(),
        3,
        "nothing was committed; head {head}"
    );
}

#[tokio::test]
async fn replay_returns_the_rebased_receipt_and_the_flag_is_hashed() {
    let (mut ws, base) = Ws::with(&[("/a.md", "a"), ("/b.md", "b")]).await;
    ws.advance(&base, json!([up("/a.md", "a2")])).await;
    let tx = uuid::Uuid::new_v4().to_string();
    let extra = json!({"rebase": true, "transaction_id": tx});
    let first = ws
        .commit(&base, json!([up("/b.md", "b2")]), extra.clone())
        .await
        .unwrap();
    assert_eq!(first["replayed"], json!(false));
    // Another commit moves the head; the replay still answers the first receipt.
    let head = first["receipt"]["revision"].as_str().unwrap().to_owned();
    ws.advance(&head, json!([up("/c.md", "c")])).await;
    let again = ws
        .commit(&base, json!([up("/b.md", "b2")]), extra)
        .await
        .unwrap();
    assert_eq!(again["replayed"], json!(true));
    assert_eq!(again["receipt"], first["receipt"]);
    // The same transaction id without rebase is a different request.
    let r = ws
        .commit(
            &base,
            json!([up("/b.md", "b2")]),
            json!({"transaction_id": tx}),
        )
        .await;
    expect_err(r, "23505", Some("SUPABASH_IDEMPOTENCY_CONFLICT"));
    // History and revision reads rebuild the same receipt.
    let history = ws
        .rest
        .call(
            &ws.owner,
            "supabash_history",
            json!({"workspace_id": ws.id}),
        )
        .await
        .unwrap();
    let stored = &history["records"][2];
    assert_eq!(stored, &first["receipt"], "{history}");
    assert_eq!(stored["rebasedFrom"], json!(base));
    assert!(history["records"][1].get("rebasedFrom").is_none());
}

/// The paths a client-side conflict names.
fn client_conflicts(e: &SupabashError) -> Vec<String> {
    let rpc = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<RpcError>())
        .expect("an RPC error");
    let detail: Value = serde_json::from_str(rpc.details.as_deref().unwrap_or("{}")).unwrap();
    serde_json::from_value(detail["conflicts"].clone()).unwrap_or_default()
}

#[tokio::test]
async fn the_client_rebases_and_shows_the_head() {
    for via in BOTH {
        let user = new_user();
        let setup = workspace_with(via, &user, &[("/a.md", "a"), ("/b.md", "b")]).await;
        let base = setup.base_revision().unwrap();
        let a = reopen(via, &user, setup.id()).await;
        let b = reopen(via, &user, setup.id()).await;
        a.fs().write("/a.md", "from a").await.unwrap();
        a.fs().write("/only-a.md", "new from a").await.unwrap();
        let ra = a.commit(CommitOptions::new("a")).await.unwrap();

        b.fs().write("/b.md", "from b").await.unwrap();
        b.fs().mkdir("/tmp", true).await.unwrap();
        b.fs().write("/tmp/scratch", "shell").await.unwrap();
        let e = b.commit(CommitOptions::new("b")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::CommitConflict, "{via:?} {e}");
        assert_eq!(
            b.changes().unwrap().len(),
            1,
            "{via:?}: a conflict keeps the staged change"
        );
        assert_eq!(b.base_revision().as_deref(), Some(base.as_str()));

        let rb = b
            .commit(CommitOptions::new("b").with_rebase(true))
            .await
            .unwrap();
        assert_eq!(
            rb.receipt.rebased_from.as_deref(),
            Some(base.as_str()),
            "{via:?}"
        );
        assert_eq!(
            rb.receipt.parent_revision,
            Some(ra.receipt.revision.clone())
        );
        // The staged tree is the new head: a's files included, nothing staged.
        assert_eq!(
            b.base_revision(),
            Some(rb.receipt.revision.clone()),
            "{via:?}"
        );
        assert!(b.changes().unwrap().is_empty(), "{via:?}");
        assert_eq!(b.fs().read("/a.md").await.unwrap(), b"from a", "{via:?}");
        assert_eq!(b.fs().read("/only-a.md").await.unwrap(), b"new from a");
        assert_eq!(b.fs().read("/b.md").await.unwrap(), b"from b");
        assert_eq!(b.fs().read("/tmp/scratch").await.unwrap(), b"shell");
        let snapshot = b.committed_snapshot().await.unwrap();
        assert_eq!(snapshot.files.len(), 3, "{via:?}");

        // `a` is behind now; editing what b committed conflicts and names the path, and the
        // staged edit stays.
        a.fs().write("/b.md", "a again").await.unwrap();
        let e = a
            .commit(CommitOptions::new("a").with_rebase(true))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::CommitConflict, "{via:?} {e}");
        assert_eq!(client_conflicts(&e), ["/b.md"], "{via:?}");
        assert_eq!(a.fs().read("/b.md").await.unwrap(), b"a again");
        assert_eq!(a.changes().unwrap().len(), 1);
    }
}

/// Bytes unique to writer `i`: binary and a few KiB.
fn writer_bytes(i: usize) -> Vec<u8> {
    (0..4096u32)
        .map(|k| ((k.wrapping_mul(31) as usize + i * 7) % 251) as u8 | 0x80)
        .collect()
}

/// Commits with rebase, retrying only while the workspace is busy.
async fn commit_retrying(ws: &supabash::Workspace, actor: &str) -> supabash::Result<String> {
    loop {
        match ws.commit(CommitOptions::new(actor).with_rebase(true)).await {
            Ok(r) => return Ok(r.receipt.revision),
            Err(e) if e.code() == ErrorCode::CommitCoordination => continue,
            Err(e) => return Err(e),
        }
    }
}

/// 64 handles of one workspace opened at `via` on the same base, each writing `path(i)`, all
/// committing with rebase at once: each writer's outcome.
async fn writers(
    via: Via,
    user: &str,
    id: &str,
    path: fn(usize) -> String,
) -> Vec<supabash::Result<String>> {
    let mut handles = Vec::new();
    for i in 0..WRITERS {
        let ws = reopen(via, user, id).await;
        let p = path(i);
        ws.fs()
            .mkdir(supabash_core::path::parent(&p), true)
            .await
            .unwrap();
        ws.fs().write(&p, writer_bytes(i)).await.unwrap();
        handles.push(ws);
    }
    let barrier = Arc::new(Barrier::new(WRITERS));
    let tasks: Vec<_> = handles
        .into_iter()
        .enumerate()
        .map(|(i, ws)| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                commit_retrying(&ws, &format!("writer-{i}")).await
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_writers_on_disjoint_files_all_land() {
    let via = Via::Postgres;
    let user = new_user();
    let setup = workspace_with(via, &user, &[("/seed.md", "seed")]).await;
    let outcomes = writers(via, &user, setup.id(), |i| format!("/w/{i}.bin")).await;
    for (i, o) in outcomes.iter().enumerate() {
        assert!(o.is_ok(), "writer {i}: {o:?}");
    }
    let head = reopen(via, &user, setup.id()).await;
    let files = head.committed_snapshot().await.unwrap().files;
    assert_eq!(files.len(), WRITERS + 1);
    for i in 0..WRITERS {
        assert_eq!(files[&format!("/w/{i}.bin")], writer_bytes(i), "writer {i}");
    }
    let mut records = 0;
    let mut cursor = None;
    loop {
        let page = head.history(cursor.as_deref(), Some(100)).await.unwrap();
        records += page.records.len();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(records, WRITERS + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_writers_on_one_file_one_wins() {
    let via = Via::Postgres;
    let user = new_user();
    let setup = workspace_with(via, &user, &[("/race.bin", "base")]).await;
    let outcomes = writers(via, &user, setup.id(), |_| "/race.bin".to_owned()).await;
    let winners: Vec<usize> = (0..WRITERS).filter(|&i| outcomes[i].is_ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for o in &outcomes {
        if let Err(e) = o {
            assert_eq!(e.code(), ErrorCode::CommitConflict, "{e}");
            assert_eq!(client_conflicts(e), ["/race.bin"]);
        }
    }
    let files = reopen(via, &user, setup.id())
        .await
        .committed_snapshot()
        .await
        .unwrap()
        .files;
    assert_eq!(files["/race.bin"], writer_bytes(winners[0]));
}

#[tokio::test]
async fn in_a_fork_an_inherited_path_counts_once_touched() {
    let (mut parent, _) = Ws::with(&[("/a.md", "a"), ("/b.md", "b"), ("/c.md", "c")]).await;
    let forked = parent
        .rest
        .call(
            &parent.owner,
            "supabash_fork",
            json!({"workspace_id": parent.id, "actor": "forker"}),
        )
        .await
        .unwrap();
    let mut fork = Ws {
        rest: SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await,
        owner: parent.owner.clone(),
        id: forked["workspaceId"].as_str().unwrap().to_owned(),
    };
    let base = forked["headRevision"].as_str().unwrap().to_owned();
    // The other writer's first touches of inherited paths: an edit and a delete.
    let head = fork
        .advance(
            &base,
            json!([up("/a.md", "edited in the fork"), del("/b.md")]),
        )
        .await;
    for (ours, want) in [
        (json!([up("/a.md", "ours")]), vec!["/a.md"]),
        (json!([mv("/b.md", "/d.md")]), vec!["/b.md"]),
        (
            json!([del("/a.md"), up("/b.md", "back")]),
            vec!["/a.md", "/b.md"],
        ),
    ] {
        let r = fork.commit(&base, ours, json!({"rebase": true})).await;
        let e = expect_err(r, "PT409", Some("SUPABASH_COMMIT_CONFLICT"));
        assert_eq!(conflicts(&e), want);
    }
    // An inherited path neither side touched in the fork rebases.
    let r = fork
        .commit(&base, json!([up("/c.md", "ours")]), json!({"rebase": true}))
        .await
        .unwrap();
    assert_eq!(r["receipt"]["parentRevision"], json!(head), "{r}");
    let tree = fork.tree().await;
    assert_eq!(
        tree,
        BTreeMap::from([
            ("/a.md".to_owned(), "edited in the fork".to_owned()),
            ("/c.md".to_owned(), "ours".to_owned()),
        ])
    );
    // The fork's commits left the parent as it was.
    assert_eq!(parent.tree().await["/a.md"], "a");
}

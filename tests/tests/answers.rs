//! What only the database can answer (issue 25): one path's history, reads as of a time,
//! server-side search, change announcements, files and rows in one transaction.

use serde_json::{json, Value};
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, SqlRpc};

/// `(op, path, from)` of every version in a page, in order.
fn ops(page: &Value) -> Vec<(String, String, Option<String>)> {
    page["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["op"].as_str().unwrap().to_owned(),
                v["path"].as_str().unwrap().to_owned(),
                v["from"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn v(op: &str, path: &str, from: Option<&str>) -> (String, String, Option<String>) {
    (op.into(), path.into(), from.map(str::to_owned))
}

/// A file written, changed, moved, changed, deleted and written again; another file at the
/// source path after the move.
async fn moved_file(rest: &mut SqlRpc, owner: &Caller) -> (String, Vec<String>) {
    let ws = rest.create_workspace(owner).await;
    let mut revs: Vec<String> = Vec::new();
    for changes in [
        json!([{"op": "upsert", "path": "/a.md", "text": "one"},
               {"op": "upsert", "path": "/other.md", "text": "x"}]),
        json!([{"op": "upsert", "path": "/a.md", "text": "two"}]),
        json!([{"op": "upsert", "path": "/other.md", "text": "y"}]),
        json!([{"op": "move", "from": "/a.md", "path": "/b.md"}]),
        json!([{"op": "upsert", "path": "/b.md", "text": "three"},
               {"op": "upsert", "path": "/a.md", "text": "new a"}]),
        json!([{"op": "delete", "path": "/b.md"}]),
        json!([{"op": "upsert", "path": "/b.md", "text": "again"}]),
    ] {
        let base = revs.last().cloned();
        revs.push(rest.commit_as(owner, &ws, base.as_deref(), changes).await);
    }
    (ws, revs)
}

#[tokio::test]
async fn a_path_history_lists_its_versions_and_follows_moves() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let (ws, revs) = moved_file(&mut rest, &owner).await;
    let history = |args: Value| {
        let mut a = json!({ "workspace_id": ws, "path": "/b.md" });
        a.as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        a
    };

    // Newest first, without following the move: the history starts at the move.
    let page = rest
        .call(&owner, "supabash_path_history", history(json!({})))
        .await
        .unwrap();
    assert_eq!(
        ops(&page),
        vec![
            v("add", "/b.md", None),
            v("delete", "/b.md", None),
            v("modify", "/b.md", None),
            v("move", "/b.md", Some("/a.md")),
        ]
    );
    let newest = &page["versions"][0];
    assert_eq!(newest["revision"], json!(revs[6]));
    assert_eq!(newest["position"], json!(7));
    assert_eq!(newest["size"], json!(5));
    assert_eq!(newest["actor"], json!("owner"));
    assert!(newest["committedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(newest["hash"].as_str().unwrap().len(), 64);
    assert!(page["versions"][1]["hash"].is_null());
    assert!(page["nextCursor"].is_null());

    // Following the move: /a.md's versions before it, oldest first, a page of two at a time.
    let mut all = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let page = rest
            .call(
                &owner,
                "supabash_path_history",
                history(json!({"follow_moves": true, "oldest_first": true, "page_size": 2, "cursor": cursor})),
            )
            .await
            .unwrap();
        pages += 1;
        eprintln!("page {pages}: {page}");
        all.extend(ops(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(
        all,
        vec![
            v("add", "/a.md", None),
            v("modify", "/a.md", None),
            v("move", "/b.md", Some("/a.md")),
            v("modify", "/b.md", None),
            v("delete", "/b.md", None),
            v("add", "/b.md", None),
        ]
    );

    // The source path's own history shows the move away and the new file written there.
    let page = rest
        .call(
            &owner,
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/a.md", "oldest_first": true }),
        )
        .await
        .unwrap();
    assert_eq!(
        ops(&page),
        vec![
            v("add", "/a.md", None),
            v("modify", "/a.md", None),
            v("move", "/b.md", Some("/a.md")),
            v("add", "/a.md", None),
        ]
    );

    // A path with no version, a bad cursor.
    expect_err(
        rest.call(
            &owner,
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/never.md" }),
        )
        .await,
        "22023",
        Some("SUPABASH_PATH_NOT_FOUND"),
    );
    for bad in ["x", "-1", "1e3", " 3"] {
        expect_err(
            rest.call(
                &owner,
                "supabash_path_history",
                history(json!({"cursor": bad})),
            )
            .await,
            "22023",
            Some("SUPABASH_INVALID_ARGUMENT"),
        );
    }
}

#[tokio::test]
async fn a_path_history_survives_purge_and_redaction() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let (ws, _) = moved_file(&mut rest, &owner).await;
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": 2 }),
    )
    .await
    .unwrap();
    // /other.md's first version is still visible at the retained revisions; its revisions
    // are gone.
    let page = rest
        .call(
            &owner,
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/other.md" }),
        )
        .await
        .unwrap();
    let versions = page["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{page}");
    // Its predecessor went with the purged revisions: it reads as added.
    assert_eq!(versions[0]["op"], json!("add"));
    assert_eq!(versions[0]["position"], json!(3));
    assert!(versions[0]["revision"].is_null());
    assert!(versions[0]["actor"].is_null());
    assert_eq!(versions[0]["size"], json!(1));
}

//! `supabash_list_directory` end to end: paging by cursor, pinned revisions, forks, deep and
//! non-ASCII paths, totals, refusals (wrong user, anon, a made-up grant, malformed input); and
//! the client opening a workspace lazily (directories listed on demand) against the database.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use supabash::workspace::{CommitOptions, DiffRef};
use supabash::{OpenMode, Workspace};
use supabash_tests::client::{transport, workspace_with, Via};
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, SqlRpc};

/// Every direct child of `dir` by paging with `page_size`: (files as full paths, directory
/// names), each page's answer checked against the page size.
async fn list_all(
    rest: &mut SqlRpc,
    who: &Caller,
    ws: &str,
    dir: &str,
    revision: Option<&str>,
    page_size: i64,
) -> (Vec<String>, Vec<String>) {
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let mut args = json!({ "workspace_id": ws, "path": dir, "page_size": page_size });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        if let Some(r) = revision {
            args["revision"] = json!(r);
        }
        let page = rest
            .call(who, "supabash_list_directory", args)
            .await
            .unwrap();
        let f = page["files"].as_array().unwrap();
        let d = page["directories"].as_array().unwrap();
        assert!(f.len() + d.len() <= page_size as usize, "{page}");
        files.extend(f.iter().map(|f| f["path"].as_str().unwrap().to_owned()));
        dirs.extend(d.iter().map(|d| d.as_str().unwrap().to_owned()));
        match page["nextCursor"].as_str() {
            Some(c) => {
                assert_eq!(
                    f.len() + d.len(),
                    page_size as usize,
                    "a short page has no cursor"
                );
                cursor = Some(c.to_owned());
            }
            None => return (files, dirs),
        }
    }
    panic!("paging does not end");
}

/// What a directory's listing must hold, from the whole manifest.
fn expected(manifest: &Value, dir: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let prefix = if dir == "/" {
        "/".to_owned()
    } else {
        format!("{dir}/")
    };
    let (mut files, mut dirs) = (BTreeSet::new(), BTreeSet::new());
    for f in manifest["files"].as_array().unwrap() {
        let p = f["path"].as_str().unwrap();
        let Some(rest) = p.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            Some((name, _)) => dirs.insert(name.to_owned()),
            None if f["kind"] == "directory" => dirs.insert(rest.to_owned()),
            None => files.insert(p.to_owned()),
        };
    }
    (files, dirs)
}

fn upsert(path: &str, text: &str) -> Value {
    json!({ "op": "upsert", "path": path, "text": text })
}

/// Paths that sort awkwardly around `/`: a directory `b` next to files `b!`, `b0` and `b.md`
/// (`!` and `.` sort before `/`, `0` right after it), non-ASCII names, deep paths, runs of
/// subdirectories.
fn awkward_tree() -> Vec<Value> {
    let mut changes = vec![
        upsert("/d/b!", "bang"),
        upsert("/d/b0", "zero"),
        upsert("/d/b.md", "dot"),
        upsert("/d/b/inner.md", "inner"),
        upsert("/d/b/c/deeper.md", "deeper"),
        upsert("/d/ünïcødé.md", "unicode"),
        upsert("/d/日本/語.md", "japanese"),
        upsert("/d/a b/space.md", "space"),
        upsert("/top.md", "top"),
    ];
    let deep = (0..30)
        .map(|i| format!("l{i}"))
        .collect::<Vec<_>>()
        .join("/");
    changes.push(upsert(&format!("/d/{deep}/leaf.md"), "leaf"));
    for i in 0..23 {
        changes.push(upsert(&format!("/d/f{i:02}.md"), &format!("file {i}")));
    }
    // Subdirectories in a row (where the listing walks instead of probing), one of them an
    // explicit empty directory, then a file; and the same at the root.
    for i in 0..12 {
        changes.push(upsert(&format!("/d/g{i:02}/x.md"), "g"));
        changes.push(upsert(&format!("/e{i:02}/x.md"), "e"));
    }
    changes.push(json!({ "op": "upsert", "path": "/d/g05e", "kind": "directory" }));
    changes.push(upsert("/d/h.md", "h"));
    changes
}

async fn manifest(rest: &mut SqlRpc, who: &Caller, ws: &str, revision: Option<&str>) -> Value {
    let mut args = json!({ "workspace_id": ws });
    if let Some(r) = revision {
        args["revision"] = json!(r);
    }
    rest.call(who, "supabash_load_manifest", args)
        .await
        .unwrap()
}

/// Checks every directory of the manifest's tree, paged at `page_size`.
async fn check_every_directory(
    rest: &mut SqlRpc,
    who: &Caller,
    ws: &str,
    revision: Option<&str>,
    page_size: i64,
) {
    let m = manifest(rest, who, ws, revision).await;
    let mut dirs: BTreeSet<String> = ["/".to_owned()].into();
    for f in m["files"].as_array().unwrap() {
        let mut p = f["path"].as_str().unwrap();
        while let Some((parent, _)) = p.rsplit_once('/') {
            if parent.is_empty() {
                break;
            }
            dirs.insert(parent.to_owned());
            p = parent;
        }
    }
    for dir in dirs {
        let (files, subdirs) = list_all(rest, who, ws, &dir, revision, page_size).await;
        let (want_files, want_dirs) = expected(&m, &dir);
        let got_files: BTreeSet<String> = files.iter().cloned().collect();
        let got_dirs: BTreeSet<String> = subdirs.iter().cloned().collect();
        assert_eq!(files.len(), got_files.len(), "{dir}: a file listed twice");
        assert_eq!(
            subdirs.len(),
            got_dirs.len(),
            "{dir}: a directory listed twice"
        );
        assert_eq!(
            got_files, want_files,
            "{dir} at {revision:?}, pages of {page_size}"
        );
        assert_eq!(
            got_dirs, want_dirs,
            "{dir} at {revision:?}, pages of {page_size}"
        );
    }
}

#[tokio::test]
async fn pages_cover_each_directory_once_at_every_revision() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let first = rest
        .commit_as(&owner, &ws, None, json!(awkward_tree()))
        .await;
    let second = rest
        .commit_as(
            &owner,
            &ws,
            Some(&first),
            json!([{"op": "delete", "path": "/d/b/inner.md"},
                   {"op": "delete", "path": "/d/b/c/deeper.md"},
                   {"op": "move", "from": "/d/b0", "path": "/d/moved/b0"},
                   upsert("/d/f00.md", "edited")]),
        )
        .await;
    for page_size in [1, 2, 7, 1000] {
        check_every_directory(&mut rest, &owner, &ws, None, page_size).await;
        check_every_directory(&mut rest, &owner, &ws, Some(&first), page_size).await;
    }
    // The directory `b` went with its last file; at the first revision it is there.
    let (_, head_dirs) = list_all(&mut rest, &owner, &ws, "/d", None, 100).await;
    assert!(!head_dirs.contains(&"b".to_owned()) && head_dirs.contains(&"moved".to_owned()));
    let (_, first_dirs) = list_all(&mut rest, &owner, &ws, "/d", Some(&first), 100).await;
    assert!(first_dirs.contains(&"b".to_owned()));
    // A page names its revision, and files carry what the manifest says of them.
    let page = rest
        .call(
            &owner,
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/d", "totals": true }),
        )
        .await
        .unwrap();
    assert_eq!(page["revision"], json!(second));
    assert_eq!(page["path"], json!("/d"));
    let m = manifest(&mut rest, &owner, &ws, None).await;
    let f00 = page["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == json!("/d/f00.md"))
        .unwrap();
    let in_manifest = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == json!("/d/f00.md"))
        .unwrap();
    assert_eq!(f00, in_manifest);
    // Totals count the whole tree.
    let files = m["files"].as_array().unwrap();
    assert_eq!(page["treeFiles"], json!(files.len()));
    let bytes: i64 = files.iter().map(|f| f["size"].as_i64().unwrap()).sum();
    assert_eq!(page["treeBytes"], json!(bytes));
    // A path that names no directory lists nothing; so does an empty workspace.
    for path in ["/nowhere", "/top.md"] {
        let (f, d) = list_all(&mut rest, &owner, &ws, path, None, 10).await;
        assert!(f.is_empty() && d.is_empty(), "{path}");
    }
    let empty = rest.create_workspace(&owner).await;
    let page = rest
        .call(
            &owner,
            "supabash_list_directory",
            json!({ "workspace_id": empty, "path": "/", "totals": true }),
        )
        .await
        .unwrap();
    assert_eq!(page["revision"], Value::Null);
    assert_eq!(page["treeFiles"], json!(0));
}

#[tokio::test]
async fn a_fork_lists_its_own_files_over_its_sources() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let head = rest
        .commit_as(&owner, &ws, None, json!(awkward_tree()))
        .await;
    let fork = rest
        .call(
            &owner,
            "supabash_fork",
            json!({ "workspace_id": ws, "actor": "test" }),
        )
        .await
        .unwrap();
    let fork_id = fork["workspaceId"].as_str().unwrap().to_owned();
    let fork_head = fork["headRevision"].as_str().unwrap().to_owned();
    let after = rest
        .commit_as(
            &owner,
            &fork_id,
            Some(&fork_head),
            json!([{"op": "delete", "path": "/d/b/inner.md"},
                   {"op": "delete", "path": "/d/b/c/deeper.md"},
                   upsert("/d/fork-only.md", "mine"),
                   upsert("/d/f01.md", "changed in the fork")]),
        )
        .await;
    // A fork of the fork reads through two levels.
    let grandchild = rest
        .call(
            &owner,
            "supabash_fork",
            json!({ "workspace_id": fork_id, "actor": "test" }),
        )
        .await
        .unwrap();
    let grandchild = grandchild["workspaceId"].as_str().unwrap().to_owned();
    for (id, revision) in [
        (&fork_id, None),
        (&fork_id, Some(fork_head.as_str())),
        (&fork_id, Some(after.as_str())),
        (&grandchild, None),
        (&ws, Some(head.as_str())),
    ] {
        for page_size in [1, 5, 1000] {
            check_every_directory(&mut rest, &owner, id, revision, page_size).await;
        }
    }
    let (files, dirs) = list_all(&mut rest, &owner, &fork_id, "/d", None, 100).await;
    assert!(files.contains(&"/d/fork-only.md".to_owned()));
    assert!(!dirs.contains(&"b".to_owned()), "the fork deleted all of b");
    let (files, dirs) = list_all(&mut rest, &owner, &ws, "/d", None, 100).await;
    assert!(!files.contains(&"/d/fork-only.md".to_owned()) && dirs.contains(&"b".to_owned()));
}

#[tokio::test]
async fn refuses_strangers_bad_grants_and_malformed_input() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    rest.commit_as(&owner, &ws, None, json!(awkward_tree()))
        .await;
    let list = |extra: Value| {
        let mut args = json!({ "workspace_id": ws, "path": "/d" });
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    for (who, caller) in [
        ("another user", Caller::new_user()),
        ("anon", Caller::Anon),
        ("service_role without a grant", Caller::Service),
    ] {
        let r = rest
            .call(&caller, "supabash_list_directory", list(json!({})))
            .await;
        let e = r.expect_err(who);
        assert_eq!(e.code, "42501", "{who}: {e}");
    }
    let made_up = list(json!({ "delegated_grant": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }));
    for caller in [Caller::Service, owner.clone()] {
        let e = rest
            .call(&caller, "supabash_list_directory", made_up.clone())
            .await
            .expect_err("a made-up grant");
        assert_eq!(e.code, "42501", "{e}");
    }
    let bad = [
        (json!({ "path": "../etc" }), "SUPABASH_INVALID_PATH"),
        (json!({ "path": "relative/dir" }), "SUPABASH_INVALID_PATH"),
        (json!({ "path": "/d/" }), "SUPABASH_INVALID_PATH"),
        (json!({ "path": "" }), "SUPABASH_INVALID_PATH"),
        (json!({ "page_size": 0 }), "SUPABASH_QUOTA_EXCEEDED"),
        (json!({ "page_size": 10_001 }), "SUPABASH_QUOTA_EXCEEDED"),
        (json!({ "page_size": -5 }), "SUPABASH_QUOTA_EXCEEDED"),
        (
            json!({ "cursor": "/elsewhere/x" }),
            "SUPABASH_INVALID_ARGUMENT",
        ),
        (json!({ "cursor": "/d/b/c" }), "SUPABASH_INVALID_ARGUMENT"),
        (json!({ "cursor": "/d/" }), "SUPABASH_INVALID_ARGUMENT"),
        (
            json!({ "revision": "not-a-uuid" }),
            "SUPABASH_INVALID_ARGUMENT",
        ),
        (
            json!({ "revision": "00000000-0000-4000-8000-000000000000" }),
            "SUPABASH_REVISION_NOT_FOUND",
        ),
        (
            json!({ "workspace_id": "nope" }),
            "SUPABASH_INVALID_ARGUMENT",
        ),
    ];
    for (extra, marker) in bad {
        let r = rest
            .call(&owner, "supabash_list_directory", list(extra.clone()))
            .await;
        let e = r.expect_err(&format!("{extra}"));
        assert_eq!(
            supabash_tests::support::marker(&e),
            Some(marker),
            "{extra}: {e}"
        );
    }
    // A read RPC cannot be made to write through the read dispatcher.
    let e = expect_err(
        rest.sql_as(&owner, "SELECT supabash._read('commit', '{}'::json)")
            .await
            .map(|_| Value::Null),
        "42501",
        None,
    );
    assert!(e.message.contains("permission denied"), "{e}");
}

/// Files of a workspace for the lazy-open tests: 3 directories of 40 files, nested.
fn tree_files() -> Vec<(String, String)> {
    let mut files = vec![("/README.md".to_owned(), "readme".to_owned())];
    for d in ["src", "docs", "data/raw"] {
        for i in 0..40 {
            files.push((format!("/{d}/sub{}/f{i:02}.md", i % 4), format!("{d} {i}")));
        }
    }
    files
}

async fn open(via: Via, user: &str, id: &str, mode: OpenMode) -> Workspace {
    Workspace::builder(transport(via, user).await)
        .open_mode(mode)
        .open(id)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_lazily_opened_workspace_reads_edits_and_commits_like_an_eager_one() {
    for via in [Via::Postgres, Via::Postgrest] {
        let user = supabash_tests::client::new_user();
        let files = tree_files();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let seeded = workspace_with(via, &user, &borrowed).await;
        let id = seeded.id().to_owned();
        let lazy = open(via, &user, &id, OpenMode::Lazy).await;
        let eager = open(via, &user, &id, OpenMode::Eager).await;
        assert!(lazy.fs().is_partially_loaded() && !eager.fs().is_partially_loaded());
        // The same edits on both trees.
        for ws in [&lazy, &eager] {
            let fs = ws.fs();
            assert_eq!(fs.read_text("/src/sub1/f05.md").await.unwrap(), "src 5");
            assert_eq!(fs.readdir("/data/raw").await.unwrap().len(), 4);
            fs.write("/docs/sub0/new.md", "new").await.unwrap();
            fs.mv("/src/sub2", "/src/renamed").await.unwrap();
            fs.rm("/data", true, false).await.unwrap();
        }
        assert_eq!(lazy.changes().unwrap(), eager.changes().unwrap());
        let lazy_diff = lazy.diff(DiffRef::Head, DiffRef::Staged, None, None);
        let lazy_diff = lazy_diff.await.unwrap();
        let eager_diff = eager.diff(DiffRef::Head, DiffRef::Staged, None, None);
        let eager_diff = eager_diff.await.unwrap();
        assert_eq!(lazy_diff.entries, eager_diff.entries);
        assert!(!lazy_diff.entries.is_empty());
        eager.discard().await.unwrap();
        let committed = lazy.commit(CommitOptions::new("lazy")).await.unwrap();
        assert!(lazy.changes().unwrap().is_empty());
        // Reopened either way, the tree is what the lazy tree committed.
        let again = open(via, &user, &id, OpenMode::Eager).await;
        assert_eq!(
            again.base_revision(),
            Some(committed.receipt.revision.clone())
        );
        let fs = again.fs();
        assert!(!fs.exists("/data/raw/sub0/f00.md").await);
        assert_eq!(fs.read_text("/src/renamed/f02.md").await.unwrap(), "src 2");
        assert_eq!(fs.read_text("/docs/sub0/new.md").await.unwrap(), "new");
        let moves = committed
            .receipt
            .changes
            .iter()
            .filter(|l| l.from.is_some())
            .count();
        assert_eq!(moves, 10, "the renamed directory's files moved");
        // The lazy tree keeps working after its commit, at the new revision.
        assert_eq!(
            lazy.fs().read_text("/docs/sub3/f03.md").await.unwrap(),
            "docs 3"
        );
        // Restore brings the old tree back, through every directory.
        let restored = lazy
            .restore(seeded.base_revision().as_deref().unwrap())
            .await
            .unwrap();
        assert!(!restored.changes.is_empty());
        lazy.commit(CommitOptions::new("restore")).await.unwrap();
        let back = open(via, &user, &id, OpenMode::Lazy).await;
        assert_eq!(
            back.fs().read_text("/data/raw/sub1/f01.md").await.unwrap(),
            "data/raw 1"
        );
        assert!(!back.fs().exists("/docs/sub0/new.md").await);
    }
}

#[tokio::test]
async fn auto_opens_small_trees_whole_and_flat_trees_from_their_root() {
    let via = Via::Postgres;
    let user = supabash_tests::client::new_user();
    let nested = workspace_with(via, &user, &[("/a/b.md", "b"), ("/c.md", "c")]).await;
    let flat = workspace_with(via, &user, &[("/x.md", "x"), ("/y.md", "y")]).await;
    let nested = open(via, &user, nested.id(), OpenMode::Auto).await;
    let flat = open(via, &user, flat.id(), OpenMode::Auto).await;
    if std::env::var("SUPABASH_OPEN_MODE").is_err() {
        assert!(
            !nested.fs().is_partially_loaded(),
            "a small tree loads whole"
        );
    }
    assert!(!flat.fs().is_partially_loaded());
    assert_eq!(flat.fs().read_text("/y.md").await.unwrap(), "y");
    assert_eq!(nested.fs().read_text("/a/b.md").await.unwrap(), "b");
}

//! POSIX fidelity of the Postgres backend (issue 24): each version records its kind, mode and
//! time; a symbolic link's target is its content; an empty directory is an entry; a mode- or
//! time-only change stores no body; bad kinds, modes and targets are refused with nothing
//! committed; the client's staged tree carries all of it both ways.

use serde_json::{json, Value};
use supabash::workspace::CommitOptions;
use supabash_tests::client::{new_user, new_workspace, reopen, BOTH};
use supabash_tests::{Caller, Cluster, SqlRpc};

const EXEC: i64 = 0o755;
const TIME: i64 = 1_700_000_000_123_456_789;

async fn connect() -> SqlRpc {
    SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await
}

async fn commit(
    rest: &mut SqlRpc,
    who: &Caller,
    ws: &str,
    changes: Value,
) -> Result<Value, String> {
    rest.commit_at_head(who, ws, "posix", changes).await
}

async fn manifest(rest: &mut SqlRpc, who: &Caller, ws: &str) -> Value {
    rest.call(who, "supabash_load_manifest", json!({ "workspace_id": ws }))
        .await
        .unwrap()
}

fn file<'a>(tree: &'a Value, path: &str) -> &'a Value {
    tree["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} in {tree}"))
}

#[tokio::test]
async fn kinds_modes_and_times_are_stored_and_shown() {
    let mut rest = connect().await;
    let alice = Caller::new_user();
    let ws = rest.create_workspace(&alice).await;
    let r = commit(
        &mut rest,
        &alice,
        &ws,
        json!([
            {"op": "upsert", "path": "/tools/run.sh", "text": "#!/bin/sh\necho hi\n", "mode": EXEC, "mtimeNs": TIME},
            {"op": "upsert", "path": "/tools/run", "text": "run.sh", "kind": "symlink"},
            {"op": "upsert", "path": "/empty", "kind": "directory", "mode": 0o700},
            {"op": "upsert", "path": "/plain.md", "text": "old caller"},
        ]),
    )
    .await
    .unwrap();
    let lines = r["receipt"]["changes"].as_array().unwrap();
    let line = |p: &str| lines.iter().find(|l| l["path"] == p).unwrap();
    assert_eq!(line("/tools/run.sh")["afterMode"], json!(EXEC));
    assert_eq!(line("/tools/run")["kind"], json!("symlink"));
    assert_eq!(line("/empty")["kind"], json!("directory"));

    let m = manifest(&mut rest, &alice, &ws).await;
    let run = file(&m, "/tools/run.sh");
    assert_eq!(
        (&run["kind"], &run["mode"], &run["mtimeNs"]),
        (&json!("file"), &json!(EXEC), &json!(TIME))
    );
    let link = file(&m, "/tools/run");
    assert_eq!(
        (&link["kind"], &link["mode"], &link["text"]),
        (&json!("symlink"), &json!(0o777), &json!("run.sh")),
        "a manifest carries a link's target"
    );
    let empty = file(&m, "/empty");
    assert_eq!(
        (&empty["kind"], &empty["mode"]),
        (&json!("directory"), &json!(0o700))
    );
    let plain = file(&m, "/plain.md");
    assert_eq!(
        (&plain["kind"], &plain["mode"]),
        (&json!("file"), &json!(0o644))
    );
    assert!(
        plain["mtimeNs"].as_i64().unwrap() > TIME,
        "no time given: the commit's"
    );

    // The listing shows the empty directory as a directory, with its entry.
    let root = rest
        .call(
            &alice,
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/" }),
        )
        .await
        .unwrap();
    assert_eq!(root["directories"], json!(["empty", "tools"]));
    assert_eq!(root["directoryEntries"][0]["path"], json!("/empty"));
    assert_eq!(root["files"].as_array().unwrap().len(), 1);
    let bin = rest
        .call(
            &alice,
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/tools" }),
        )
        .await
        .unwrap();
    assert_eq!(bin["files"][0]["text"], json!("run.sh"));

    // The snapshot and the revision carry them too.
    let snap = rest
        .call(
            &alice,
            "supabash_load_snapshot",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap();
    assert_eq!(file(&snap, "/tools/run.sh")["mode"], json!(EXEC));
    let rev = rest
        .call(
            &alice,
            "supabash_load_revision",
            json!({ "workspace_id": ws, "revision": m["revision"] }),
        )
        .await
        .unwrap();
    assert_eq!(file(&rev, "/empty")["kind"], json!("directory"));

    // What was stored verifies: a link's and a directory's bodies are there like any other.
    let v = rest
        .call(&alice, "supabash_verify", json!({ "workspace_id": ws }))
        .await
        .unwrap();
    assert_eq!(v["ok"], json!(true), "{v}");
}

#[tokio::test]
async fn a_mode_or_time_change_stores_no_body_and_diffs_as_a_mode_change() {
    let mut rest = connect().await;
    let alice = Caller::new_user();
    let ws = rest.create_workspace(&alice).await;
    let body = "x".repeat(4096);
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([{"op": "upsert", "path": "/s.sh", "text": body, "mtimeNs": TIME}]),
    )
    .await
    .unwrap();
    let first = manifest(&mut rest, &alice, &ws).await;
    let bytes = rest.listed_workspace(&alice, &ws).await["storeBytes"]
        .as_i64()
        .unwrap();

    // The same content again without a time: nothing changes.
    let same = commit(
        &mut rest,
        &alice,
        &ws,
        json!([{"op": "upsert", "path": "/s.sh", "text": body}]),
    )
    .await
    .unwrap();
    let m = manifest(&mut rest, &alice, &ws).await;
    assert_eq!(file(&m, "/s.sh")["mtimeNs"], json!(TIME), "{same}");

    // chmod +x: a setattr, no body travels or is stored.
    let r = commit(
        &mut rest,
        &alice,
        &ws,
        json!([{"op": "setattr", "path": "/s.sh", "mode": EXEC}]),
    )
    .await
    .unwrap();
    let line = &r["receipt"]["changes"][0];
    assert_eq!(line["op"], json!("setattr"));
    assert_eq!(
        (&line["beforeMode"], &line["afterMode"]),
        (&json!(0o644), &json!(EXEC))
    );
    assert_eq!(line["beforeHash"], line["afterHash"]);
    assert_eq!(
        rest.listed_workspace(&alice, &ws).await["storeBytes"]
            .as_i64()
            .unwrap(),
        bytes
    );
    let m = manifest(&mut rest, &alice, &ws).await;
    let s = file(&m, "/s.sh");
    assert_eq!((&s["mode"], &s["mtimeNs"]), (&json!(EXEC), &json!(TIME)));

    // A time-only change (an upsert of the same content with a new time) stores no body.
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([{"op": "upsert", "path": "/s.sh", "text": body, "mode": EXEC, "mtimeNs": TIME + 1}]),
    )
    .await
    .unwrap();
    assert_eq!(
        rest.listed_workspace(&alice, &ws).await["storeBytes"]
            .as_i64()
            .unwrap(),
        bytes
    );
    assert_eq!(
        file(&manifest(&mut rest, &alice, &ws).await, "/s.sh")["mtimeNs"],
        json!(TIME + 1)
    );

    // The diff calls a mode change a modification, with both modes.
    let d = rest
        .call(
            &alice,
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"revision": first["revision"]}, "to_ref": {"head": true} }),
        )
        .await
        .unwrap();
    let e = &d["entries"][0];
    assert_eq!(e["kind"], json!("modified"), "{d}");
    assert_eq!(
        (&e["beforeMode"], &e["afterMode"]),
        (&json!(0o644), &json!(EXEC))
    );
    assert_eq!(e["beforeHash"], e["afterHash"]);

    // A setattr of a missing path is refused.
    let e = commit(
        &mut rest,
        &alice,
        &ws,
        json!([{"op": "setattr", "path": "/nope", "mode": EXEC}]),
    )
    .await
    .unwrap_err();
    assert!(e.starts_with("SUPABASH_PATH_NOT_FOUND"), "{e}");
}

#[tokio::test]
async fn bad_kinds_modes_targets_and_shapes_are_refused_with_nothing_committed() {
    let mut rest = connect().await;
    let alice = Caller::new_user();
    let ws = rest.create_workspace(&alice).await;
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([
            {"op": "upsert", "path": "/f", "text": "file"},
            {"op": "upsert", "path": "/d/x", "text": "below d"},
        ]),
    )
    .await
    .unwrap();
    let before = manifest(&mut rest, &alice, &ws).await;
    let cases = [
        (
            json!({"op": "upsert", "path": "/l", "text": "/etc/passwd", "kind": "symlink"}),
            "absolute",
        ),
        (
            json!({"op": "upsert", "path": "/d/l", "text": "../../x", "kind": "symlink"}),
            "climb",
        ),
        (
            json!({"op": "upsert", "path": "/l", "text": "a\u{7}b", "kind": "symlink"}),
            "valid path",
        ),
        (
            json!({"op": "upsert", "path": "/l", "text": "", "kind": "symlink"}),
            "needs a target",
        ),
        (
            json!({"op": "upsert", "path": "/m", "text": "x", "mode": 0o10000}),
            "outside",
        ),
        (
            json!({"op": "upsert", "path": "/m", "text": "x", "mode": -1}),
            "outside",
        ),
        (
            json!({"op": "upsert", "path": "/m", "text": "x", "kind": "fifo"}),
            "unknown variant",
        ),
        (
            json!({"op": "upsert", "path": "/f/inside", "text": "x"}),
            "not a directory",
        ),
        (
            json!({"op": "upsert", "path": "/f/e", "kind": "directory"}),
            "not a directory",
        ),
        (
            json!({"op": "upsert", "path": "/d", "text": "over a directory"}),
            "not a directory",
        ),
        (
            json!({"op": "upsert", "path": "/d", "text": "x", "kind": "symlink"}),
            "not a directory",
        ),
        (
            json!({"op": "upsert", "path": "/e", "text": "x", "kind": "directory"}),
            "no text",
        ),
    ];
    for (change, why) in cases {
        let e = commit(&mut rest, &alice, &ws, json!([change.clone()]))
            .await
            .expect_err(&change.to_string());
        assert!(e.contains(why), "{change}: {e}");
        assert!(e.starts_with("SUPABASH_INVALID_ARGUMENT"), "{change}: {e}");
    }
    assert_eq!(manifest(&mut rest, &alice, &ws).await, before);

    // Replacing a directory by a file in one commit that deletes what was below it is fine.
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([
            {"op": "delete", "path": "/d/x"},
            {"op": "upsert", "path": "/d", "text": "now a file"},
        ]),
    )
    .await
    .unwrap();
}

/// Through the client, over both transports: chmod, times, a link and an empty directory
/// survive a commit and a fresh open; a mode-only change is a setattr.
#[tokio::test]
async fn the_staged_tree_carries_them_both_ways() {
    for via in BOTH {
        let user = new_user();
        let ws = new_workspace(via, &user).await;
        let caps = ws.capabilities();
        assert!(caps.symbolic_links && caps.modes && caps.times && caps.durable_empty_directories);
        let fs = ws.fs();
        fs.mkdir("/tools", true).await.unwrap();
        fs.write("/tools/run.sh", "#!/bin/sh\necho hi\n")
            .await
            .unwrap();
        fs.chmod("/tools/run.sh", 0o755).await.unwrap();
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(TIME as u64);
        fs.utimes("/tools/run.sh", when).await.unwrap();
        fs.symlink("tools/run.sh", "/run").await.unwrap();
        fs.mkdir("/empty/nested", true).await.unwrap();
        ws.commit(CommitOptions::new("posix")).await.unwrap();

        let again = reopen(via, &user, ws.id()).await;
        let fs = again.fs();
        let st = fs.stat("/tools/run.sh").await.unwrap();
        assert_eq!((st.mode, st.mtime), (0o755, when), "{via:?}");
        assert_eq!(fs.readlink("/run").await.unwrap(), "tools/run.sh");
        assert_eq!(fs.read_text("/run").await.unwrap(), "#!/bin/sh\necho hi\n");
        assert!(fs.stat("/empty/nested").await.is_ok(), "{via:?}");
        assert!(
            again.changes().unwrap().is_empty(),
            "{via:?}: {:?}",
            again.changes()
        );

        fs.chmod("/tools/run.sh", 0o700).await.unwrap();
        let changes = again.changes().unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(
            (changes[0].before_mode, changes[0].after_mode),
            (Some(0o755), Some(0o700))
        );
        let r = again.commit(CommitOptions::new("chmod")).await.unwrap();
        assert_eq!(r.receipt.changes[0].op, "setattr");
        let third = reopen(via, &user, ws.id()).await;
        assert_eq!(third.fs().stat("/tools/run.sh").await.unwrap().mode, 0o700);
    }
}

//! A workspace's life through the RPCs: history paging, diff kinds, restoring forward,
//! checkpoints and purge with body reclamation, UTF-8 and binary round trips.

use base64::Engine;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use supabash_core::hash::sha256;
use supabash_tests::support::{admin, expect_err, workspace_counts};
use supabash_tests::{Caller, Cluster, SqlRpc};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

struct Ws {
    rest: SqlRpc,
    owner: Caller,
    id: String,
    head: Option<String>,
}

impl Ws {
    async fn new() -> Ws {
        let cluster = Cluster::shared();
        let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
        let owner = Caller::new_user();
        let id = rest.create_workspace(&owner).await;
        Ws {
            rest,
            owner,
            id,
            head: None,
        }
    }

    async fn call(&mut self, rpc: &str, mut args: Value) -> Result<Value, supabash_tests::DbError> {
        args["workspace_id"] = json!(self.id);
        self.rest.call(&self.owner, rpc, args).await
    }

    /// Commits on the current head and returns the receipt.
    async fn commit(&mut self, changes: Value) -> Value {
        self.commit_with(changes, json!({})).await
    }

    async fn commit_with(&mut self, changes: Value, mut extra: Value) -> Value {
        extra["changes"] = changes;
        extra["actor"] = json!("lifecycle");
        extra["base_revision"] = json!(self.head);
        let r = self.call("supabash_commit", extra).await.unwrap();
        let receipt = r["receipt"].clone();
        self.head = Some(receipt["revision"].as_str().unwrap().to_owned());
        receipt
    }

    async fn doc(&mut self, path: &str, revision: Option<&str>) -> Value {
        self.call(
            "supabash_load_document",
            json!({ "path": path, "revision": revision }),
        )
        .await
        .unwrap()
    }

    fn head(&self) -> String {
        self.head.clone().unwrap()
    }
}

/// The bytes of a returned document (text or base64).
fn bytes_of(doc: &Value) -> Vec<u8> {
    match (doc["text"].as_str(), doc["base64"].as_str()) {
        (Some(t), None) => t.as_bytes().to_vec(),
        (None, Some(b)) => B64.decode(b).unwrap(),
        _ => panic!("document without exactly one body: {doc}"),
    }
}

fn hex_sha(bytes: &[u8]) -> String {
    sha256(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn history_pages_end_to_end() {
    let mut ws = Ws::new().await;
    let mut revisions = Vec::new();
    for i in 0..25 {
        let r = ws
            .commit_with(
                json!([{"op": "upsert", "path": "/log.md", "text": format!("entry {i}")}]),
                json!({ "cause": format!("c{i}") }),
            )
            .await;
        revisions.push(r["revision"].as_str().unwrap().to_owned());
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let page = ws
            .call(
                "supabash_history",
                json!({ "cursor": cursor, "page_size": 7 }),
            )
            .await
            .unwrap();
        let records = page["records"].as_array().unwrap().clone();
        pages.push(records.len());
        for r in &records {
            seen.push((
                r["revision"].as_str().unwrap().to_owned(),
                r["position"].as_i64().unwrap(),
                r["parentRevision"].as_str().map(str::to_owned),
                r["cause"].as_str().unwrap().to_owned(),
            ));
        }
        match page["nextCursor"].as_str() {
            Some(c) => {
                assert_eq!(Some(c), records.last().unwrap()["revision"].as_str());
                cursor = Some(c.to_owned());
            }
            None => break,
        }
        assert!(pages.len() < 10, "paging does not end");
    }
    assert_eq!(pages, vec![7, 7, 7, 4]);
    let ids: Vec<String> = seen.iter().map(|s| s.0.clone()).collect();
    assert_eq!(ids, revisions, "oldest first, each once");
    for (k, s) in seen.iter().enumerate() {
        assert_eq!(s.3, format!("c{k}"));
        if k > 0 {
            assert!(s.1 > seen[k - 1].1, "positions increase");
            assert_eq!(s.2.as_deref(), Some(seen[k - 1].0.as_str()), "parent chain");
        } else {
            assert_eq!(s.2, None);
        }
    }
    // A cursor naming nothing: error, or the first page when asked to restart.
    let unknown = uuid::Uuid::new_v4().to_string();
    expect_err(
        ws.call(
            "supabash_history",
            json!({ "cursor": unknown, "page_size": 7 }),
        )
        .await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );
    let restarted = ws
        .call(
            "supabash_history",
            json!({ "cursor": unknown, "page_size": 7, "restart_if_missing": true }),
        )
        .await
        .unwrap();
    assert_eq!(restarted["records"][0]["revision"], json!(revisions[0]));
    assert_eq!(restarted["nextCursor"], json!(revisions[6]));
    // Another workspace's revision is an unknown cursor here.
    let mut other = Ws::new().await;
    let foreign = other
        .commit(json!([{"op": "upsert", "path": "/x", "text": "x"}]))
        .await["revision"]
        .clone();
    expect_err(
        ws.call("supabash_history", json!({ "cursor": foreign }))
            .await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );
}

#[tokio::test]
async fn diff_kinds_sides_filters_and_previews() {
    let mut ws = Ws::new().await;
    let long = "ab".to_owned() + &"€".repeat(100); // 3-byte characters after 2 ASCII bytes
    let r1 = ws
        .commit(json!([
            {"op": "upsert", "path": "/same.md", "text": "same"},
            {"op": "upsert", "path": "/del.md", "text": "deleted later"},
            {"op": "upsert", "path": "/mod.md", "text": "before"},
            {"op": "upsert", "path": "/dir/from.md", "text": "moved content"},
            {"op": "upsert", "path": "/img.bin", "base64": "/9j/4AAQ"},
        ]))
        .await["revision"]
        .as_str()
        .unwrap()
        .to_owned();
    let cp = ws
        .call("supabash_checkpoint", json!({ "label": "r1" }))
        .await
        .unwrap()["checkpointId"]
        .as_str()
        .unwrap()
        .to_owned();
    ws.commit(json!([
        {"op": "delete", "path": "/del.md"},
        {"op": "upsert", "path": "/mod.md", "text": "after"},
        {"op": "move", "from": "/dir/from.md", "path": "/dir/sub/to.md"},
        {"op": "upsert", "path": "/add.md", "text": long},
        {"op": "upsert", "path": "/img.bin", "base64": "/9j/4AAR"},
    ]))
    .await;
    let kinds = |d: &Value| -> BTreeMap<String, (String, Option<String>)> {
        d["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().unwrap().to_owned(),
                    (
                        e["kind"].as_str().unwrap().to_owned(),
                        e["from"].as_str().map(str::to_owned),
                    ),
                )
            })
            .collect()
    };
    let expected: BTreeMap<String, (String, Option<String>)> = [
        ("/add.md", "added", None),
        ("/del.md", "deleted", None),
        ("/dir/sub/to.md", "moved", Some("/dir/from.md")),
        ("/img.bin", "modified", None),
        ("/mod.md", "modified", None),
    ]
    .into_iter()
    .map(|(p, k, f)| (p.to_owned(), (k.to_owned(), f.map(str::to_owned))))
    .collect();
    for from in [json!({"revision": r1}), json!({"checkpoint": cp})] {
        let d = ws
            .call(
                "supabash_diff",
                json!({ "from_ref": from, "to_ref": {"head": true} }),
            )
            .await
            .unwrap();
        assert_eq!(kinds(&d), expected);
        assert_eq!(d["from"], json!(r1));
        assert_eq!(d["to"], json!(ws.head()));
        let img = d["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == "/img.bin")
            .unwrap();
        assert_eq!(img["binary"], json!(true));
        assert!(img.get("preview").is_none());
    }
    // The reverse direction swaps added and deleted and reverses the move.
    let back = ws
        .call(
            "supabash_diff",
            json!({ "from_ref": {"head": true}, "to_ref": {"revision": r1} }),
        )
        .await
        .unwrap();
    let k = kinds(&back);
    assert_eq!(k["/add.md"].0, "deleted");
    assert_eq!(k["/del.md"].0, "added");
    assert_eq!(
        k["/dir/from.md"],
        ("moved".to_owned(), Some("/dir/sub/to.md".to_owned()))
    );

    // Paths filter: a directory keeps the move (by either end); a file keeps only itself.
    for (filter, want) in [
        (vec!["/dir/sub"], vec!["/dir/sub/to.md"]),
        (vec!["/dir"], vec!["/dir/sub/to.md"]),
        (vec!["/mod.md", "/add.md"], vec!["/add.md", "/mod.md"]),
        (vec!["/mo"], vec![]),
    ] {
        let d = ws
            .call(
                "supabash_diff",
                json!({ "from_ref": {"revision": r1}, "to_ref": {"head": true}, "paths": filter }),
            )
            .await
            .unwrap();
        let got: Vec<String> = kinds(&d).into_keys().collect();
        assert_eq!(got, want, "filter {filter:?}");
    }

    // Previews are cut on a character boundary, at most N bytes plus the marker.
    for n in 1..12usize {
        let d = ws
            .call(
                "supabash_diff",
                json!({ "from_ref": {"revision": r1}, "to_ref": {"head": true},
                        "paths": ["/add.md"], "preview_bytes": n }),
            )
            .await
            .unwrap();
        let p = d["entries"][0]["preview"].as_str().unwrap();
        let cut = p
            .strip_suffix("\n[truncated]\n")
            .unwrap_or_else(|| panic!("n={n}: no marker in {p:?}"));
        assert!(cut.len() <= n, "n={n}: {cut:?}");
        assert!(long.starts_with(cut));
        let next = long[cut.len()..].chars().next().unwrap();
        assert!(cut.len() + next.len_utf8() > n, "n={n}: cut too early");
    }
    let full = ws
        .call(
            "supabash_diff",
            json!({ "from_ref": {"revision": r1}, "to_ref": {"head": true},
                    "paths": ["/add.md"], "preview_bytes": 65536 }),
        )
        .await
        .unwrap();
    assert_eq!(full["entries"][0]["preview"], json!(long));

    // A staged side: exactly what the caller would commit next.
    let staged = ws
        .call(
            "supabash_diff",
            json!({ "from_ref": {"head": true}, "to_ref": {"staged": true},
                    "staged": [
                        {"path": "/same.md", "text": "same"},
                        {"path": "/mod.md", "text": "after, staged"},
                        {"path": "/dir/sub/to.md", "text": "moved content"},
                        {"path": "/img.bin", "base64": "/9j/4AAR"},
                        {"path": "/staged.md", "text": "new", "metadata": {"title": "T"}},
                    ] }),
        )
        .await
        .unwrap();
    assert_eq!(staged["to"], json!("staged"));
    let k = kinds(&staged);
    assert_eq!(
        k.iter()
            .map(|(p, (kind, _))| (p.as_str(), kind.as_str()))
            .collect::<Vec<_>>(),
        vec![
            ("/add.md", "deleted"),
            ("/mod.md", "modified"),
            ("/staged.md", "added")
        ]
    );
    let added = staged["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "/staged.md")
        .unwrap();
    // The staged hash is the rendered document's, as a commit would store it.
    assert_eq!(
        added["afterHash"],
        json!(hex_sha(b"---\ntitle: \"T\"\n---\nnew"))
    );
}

#[tokio::test]
async fn restore_forward_through_rpcs() {
    let mut ws = Ws::new().await;
    let r1 = ws
        .commit(json!([
            {"op": "upsert", "path": "/a.md", "text": "a1", "metadata": {"v": 1}},
            {"op": "upsert", "path": "/b.bin", "base64": "AP8A/w=="},
            {"op": "upsert", "path": "/c.md", "text": "c1"},
        ]))
        .await["revision"]
        .as_str()
        .unwrap()
        .to_owned();
    let r2 = ws
        .commit(json!([
            {"op": "upsert", "path": "/a.md", "text": "a2"},
            {"op": "delete", "path": "/b.bin"},
            {"op": "upsert", "path": "/d.md", "text": "d2"},
        ]))
        .await["revision"]
        .as_str()
        .unwrap()
        .to_owned();

    // Restore r1 forward: read it, diff it against the head, commit the difference on top of
    // the head naming r1 as the source.
    let old = ws
        .call("supabash_load_revision", json!({ "revision": r1 }))
        .await
        .unwrap();
    assert_eq!(old["receipt"]["revision"], json!(r1));
    let head = ws.call("supabash_load_manifest", json!({})).await.unwrap();
    let head_hashes: BTreeMap<String, String> = head["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["contentHash"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut changes = Vec::new();
    let mut wanted = HashSet::new();
    for f in old["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        wanted.insert(path.to_owned());
        if head_hashes.get(path).map(String::as_str) == f["contentHash"].as_str() {
            continue;
        }
        let mut c = json!({ "op": "upsert", "path": path, "metadata": f["metadata"] });
        match (f.get("text"), f.get("base64")) {
            (Some(t), _) => c["text"] = t.clone(),
            (_, Some(b)) => c["base64"] = b.clone(),
            _ => panic!("no body in {f}"),
        }
        if f["metadata"].as_object().unwrap().is_empty() {
            c.as_object_mut().unwrap().remove("metadata");
        }
        changes.push(c);
    }
    for path in head_hashes.keys() {
        if !wanted.contains(path) {
            changes.push(json!({ "op": "delete", "path": path }));
        }
    }
    assert_eq!(changes.len(), 3, "{changes:?}"); // a.md back, b.bin back, d.md gone
    let r3 = ws
        .commit_with(
            Value::Array(changes),
            json!({ "source_revision": r1, "cause": "restore" }),
        )
        .await;
    assert_eq!(r3["sourceRevision"], json!(r1));
    assert_eq!(r3["parentRevision"], json!(r2));

    // The new head has r1's content byte for byte; r2 is still in history.
    let now = ws.call("supabash_load_snapshot", json!({})).await.unwrap();
    let strip = |files: &Value| -> Vec<(String, String, Value)> {
        files
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_owned(),
                    f["contentHash"].as_str().unwrap().to_owned(),
                    f["metadata"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(strip(&now["files"]), strip(&old["files"]));
    assert_eq!(
        bytes_of(&ws.doc("/b.bin", None).await),
        vec![0, 255, 0, 255]
    );
    let h = ws.call("supabash_history", json!({})).await.unwrap();
    let ids: Vec<&str> = h["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![r1.as_str(), r2.as_str(), r3["revision"].as_str().unwrap()]
    );
    // A restore from a revision that does not exist is refused.
    let e = ws
        .call(
            "supabash_commit",
            json!({ "actor": "x", "base_revision": ws.head(), "changes": [],
                    "source_revision": uuid::Uuid::new_v4().to_string() }),
        )
        .await;
    expect_err(e, "22023", Some("SUPABASH_REVISION_NOT_FOUND"));
}

#[tokio::test]
async fn checkpoints_and_purge_reclaim_bodies() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut ws = Ws::new().await;
    let shared = "shared body, referenced until the end".to_owned();
    let mut revs = Vec::new();
    for i in 0..6 {
        let r = ws
            .commit(json!([
                {"op": "upsert", "path": "/big.txt", "text": format!("{i}:{}", "x".repeat(50_000))},
                {"op": "upsert", "path": format!("/copy{i}.md"), "text": shared},
            ]))
            .await;
        revs.push(r["revision"].as_str().unwrap().to_owned());
    }
    // 6 distinct big bodies + 1 shared body stored once.
    assert_eq!(workspace_counts(&admin, &ws.id).await, (6, 12, 7));

    // Idempotent checkpoint of r2 (index 1).
    let cp = ws
        .call(
            "supabash_checkpoint",
            json!({ "revision": revs[1], "idempotency_key": "pin-r2", "label": "pin" }),
        )
        .await
        .unwrap();
    let again = ws
        .call(
            "supabash_checkpoint",
            json!({ "revision": revs[1], "idempotency_key": "pin-r2", "label": "pin" }),
        )
        .await
        .unwrap();
    assert_eq!(again["checkpointId"], cp["checkpointId"]);
    assert_eq!(again["replayed"], json!(true));
    expect_err(
        ws.call(
            "supabash_checkpoint",
            json!({ "revision": revs[2], "idempotency_key": "pin-r2", "label": "pin" }),
        )
        .await,
        "23505",
        Some("SUPABASH_IDEMPOTENCY_CONFLICT"),
    );
    let list = ws.call("supabash_checkpoints", json!({})).await.unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);

    // Dry run with keep 1: r1, r3, r4, r5 go (r2 pinned, r6 head); nothing written.
    let dry = ws
        .call(
            "supabash_purge",
            json!({ "keep_revisions": 1, "dry_run": true }),
        )
        .await
        .unwrap();
    let doomed = vec![
        revs[0].clone(),
        revs[2].clone(),
        revs[3].clone(),
        revs[4].clone(),
    ];
    assert_eq!(dry["revisions"], json!(doomed));
    assert_eq!(dry["bodies"], json!(4));
    assert_eq!(dry["bytes"], json!(4 * 50_002));
    assert_eq!(workspace_counts(&admin, &ws.id).await, (6, 12, 7));

    let done = ws
        .call("supabash_purge", json!({ "keep_revisions": 1 }))
        .await
        .unwrap();
    assert_eq!(done["revisions"], dry["revisions"]);
    assert_eq!(done["bytes"], dry["bytes"]);
    // Kept: r2 and r6 big bodies + the shared body; the copies' entries stay (still open).
    let (revisions, _, bodies) = workspace_counts(&admin, &ws.id).await;
    assert_eq!((revisions, bodies), (2, 3));
    let stored: i64 = admin
        .query_one(
            "SELECT sum(size)::bigint FROM supabash.bodies WHERE workspace_id = $1::text::uuid",
            &[&ws.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 2 * 50_002 + shared.len() as i64);

    // The pinned and the head revisions read back fully; purged ones are gone.
    let pinned = ws.doc("/big.txt", Some(&revs[1])).await;
    assert!(pinned["text"].as_str().unwrap().starts_with("1:xxx"));
    let snap = ws
        .call("supabash_load_snapshot", json!({ "revision": revs[1] }))
        .await
        .unwrap();
    assert_eq!(snap["files"].as_array().unwrap().len(), 3); // big + copy0 + copy1
    assert_eq!(snap["files"][1]["text"], json!(shared));
    assert!(ws.doc("/big.txt", None).await["text"]
        .as_str()
        .unwrap()
        .starts_with("5:xxx"));
    expect_err(
        ws.call("supabash_load_revision", json!({ "revision": revs[0] }))
            .await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );

    // Purging again changes nothing; deleting the checkpoint makes r2 purgeable.
    let idle = ws
        .call("supabash_purge", json!({ "keep_revisions": 0 }))
        .await
        .unwrap();
    assert_eq!(idle["revisions"], json!([]));
    ws.call(
        "supabash_delete_checkpoint",
        json!({ "checkpoint_id": cp["checkpointId"] }),
    )
    .await
    .unwrap();
    let last = ws
        .call("supabash_purge", json!({ "keep_revisions": 0 }))
        .await
        .unwrap();
    assert_eq!(last["revisions"], json!([revs[1]]));
    let (revisions, entries, bodies) = workspace_counts(&admin, &ws.id).await;
    // Only the head remains: its big body, the shared body, 7 open entries.
    assert_eq!((revisions, entries, bodies), (1, 7, 2));
    let head = ws.call("supabash_load_snapshot", json!({})).await.unwrap();
    assert_eq!(head["files"].as_array().unwrap().len(), 7);
}

#[tokio::test]
async fn utf8_paths_and_text_round_trip() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut ws = Ws::new().await;
    let nfc = "/caf\u{e9}.md"; // é precomposed
    let nfd = "/cafe\u{301}.md"; // e + combining acute
    let texts: Vec<(&str, String)> = vec![
        (nfc, "NFC \u{e9}".into()),
        (nfd, "NFD e\u{301}".into()),
        ("/emoji/😀🚀.md", "family 👨‍👩‍👧‍👦, flag 🇫🇷, skin 👍🏽".into()),
        ("/日本語/文書.txt", "漢字かなカナ한국어中文".into()),
        ("/mixed/עברית العربية.md", "RTL עברית and العربية".into()),
        ("/tabs.tsv", "a\tb\tc\n1\t2\t3\r\n".into()),
        (
            "/space name/with spaces.md",
            "  leading and trailing  ".into(),
        ),
        // Invisible characters are refused in paths (core::path), never in contents.
        ("/zero-width/ab.md", "zero\u{200b}width\u{feff}".into()),
        ("/empty.md", String::new()),
    ];
    let changes: Vec<Value> = texts
        .iter()
        .map(|(p, t)| json!({"op": "upsert", "path": p, "text": t}))
        .collect();
    let receipt = ws.commit(Value::Array(changes)).await;
    for line in receipt["changes"].as_array().unwrap() {
        let path = line["path"].as_str().unwrap();
        let text = &texts.iter().find(|(p, _)| *p == path).unwrap().1;
        assert_eq!(line["afterSize"], json!(text.len()), "{path}");
        assert_eq!(line["afterHash"], json!(hex_sha(text.as_bytes())), "{path}");
    }
    // NFC and NFD are distinct paths, each with its own content.
    let m = ws.call("supabash_load_manifest", json!({})).await.unwrap();
    let paths: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), texts.len());
    assert!(paths.contains(&nfc) && paths.contains(&nfd));
    // Paths sort by bytes (COLLATE "C").
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    for (p, t) in &texts {
        let d = ws.doc(p, None).await;
        assert_eq!(d["path"], json!(p));
        assert_eq!(d["text"], json!(t), "{p}");
        assert_eq!(d["size"], json!(t.len()));
    }
    // Stored bytes equal the sent bytes (checked as the superuser, outside JSON).
    let stored: Vec<u8> = admin
        .query_one(
            "SELECT b.body FROM supabash.entries e JOIN supabash.bodies b
                ON b.workspace_id = e.workspace_id AND b.hash = e.body_hash
              WHERE e.workspace_id = $1::text::uuid AND e.path = $2 AND e.valid_until IS NULL",
            &[&ws.id, &"/emoji/😀🚀.md"],
        )
        .await
        .unwrap()
        .get(0);
    // A short body is stored plain: codec byte 0, then the bytes (extension/src/stored.rs).
    assert_eq!(stored.split_first(), Some((&0u8, texts[2].1.as_bytes())));
    // A move between the two normalisations keeps them distinct.
    ws.commit(json!([{"op": "delete", "path": nfc}, {"op": "move", "from": nfd, "path": "/moved-nfd.md"}]))
        .await;
    expect_err(
        ws.call("supabash_load_document", json!({ "path": nfc }))
            .await,
        "22023",
        Some("SUPABASH_PATH_NOT_FOUND"),
    );
    assert_eq!(
        ws.doc("/moved-nfd.md", None).await["text"],
        json!("NFD e\u{301}")
    );
    // Tabs are fine in content, never in paths.
    expect_err(
        ws.call(
            "supabash_commit",
            json!({ "actor": "x", "base_revision": ws.head(),
                    "changes": [{"op": "upsert", "path": "/a\tb", "text": "x"}] }),
        )
        .await,
        "22023",
        Some("SUPABASH_INVALID_PATH"),
    );
}

#[tokio::test]
async fn binary_bodies_round_trip() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut ws = Ws::new().await;
    let all: Vec<u8> = (0..=255u8).collect();
    let nul_utf8 = b"nul\0inside valid utf-8".to_vec();
    let invalid = vec![0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x82, 0xf0, 0x9f, 0x98];
    let big: Vec<u8> = (0..1_048_576u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("/all-bytes.bin", all.clone()),
        ("/nul.bin", nul_utf8.clone()),
        ("/invalid-utf8.bin", invalid.clone()),
        ("/big.bin", big.clone()),
        ("/empty.bin", Vec::new()),
        ("/copy-of-all.bin", all.clone()),
    ];
    let changes: Vec<Value> = bodies
        .iter()
        .map(|(p, b)| json!({"op": "upsert", "path": p, "base64": B64.encode(b)}))
        .collect();
    let r1 = ws.commit(Value::Array(changes)).await["revision"]
        .as_str()
        .unwrap()
        .to_owned();
    for (p, b) in &bodies {
        let d = ws.doc(p, None).await;
        assert_eq!(bytes_of(&d), *b, "{p}");
        assert_eq!(d["size"], json!(b.len()));
        assert_eq!(d["contentHash"], json!(hex_sha(b)));
    }
    // Non-text bodies come back as base64 (never as lossy text).
    assert!(ws.doc("/nul.bin", None).await.get("base64").is_some());
    assert!(ws
        .doc("/invalid-utf8.bin", None)
        .await
        .get("base64")
        .is_some());
    // Identical bytes are stored once.
    let (_, entries, stored) = workspace_counts(&admin, &ws.id).await;
    assert_eq!((entries, stored), (6, 5));

    // Overwrite and read both versions back through snapshot and revision loads.
    let mut flipped = big.clone();
    flipped[524_288] ^= 0xff;
    ws.commit(json!([{"op": "upsert", "path": "/big.bin", "base64": B64.encode(&flipped)}]))
        .await;
    let snap = ws.call("supabash_load_snapshot", json!({})).await.unwrap();
    let big_now = snap["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/big.bin")
        .unwrap();
    assert_eq!(bytes_of(big_now), flipped);
    let old = ws
        .call("supabash_load_revision", json!({ "revision": r1 }))
        .await
        .unwrap();
    for f in old["files"].as_array().unwrap() {
        let p = f["path"].as_str().unwrap();
        let want = &bodies.iter().find(|(q, _)| *q == p).unwrap().1;
        assert_eq!(bytes_of(f), *want, "{p} at r1");
    }
    // The diff calls the change binary and previews nothing.
    let d = ws
        .call(
            "supabash_diff",
            json!({ "from_ref": {"revision": r1}, "to_ref": {"head": true} }),
        )
        .await
        .unwrap();
    assert_eq!(d["entries"].as_array().unwrap().len(), 1);
    assert_eq!(d["entries"][0]["kind"], json!("modified"));
    assert_eq!(d["entries"][0]["binary"], json!(true));
}

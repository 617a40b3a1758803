//! Notes on a revision after the fact (issue 25, item 7): appended per key with who and when,
//! without a new revision; shown by history; removed by purge with their revision and by a
//! redaction's metadata keys; bounded per note and per revision.

use serde_json::{json, Value};
use supabash_tests::support::{admin, expect_err};
use supabash_tests::{Caller, Cluster, SqlRpc};

/// `(key, version, value, actor)` of each note.
fn shown(notes: &Value) -> Vec<(String, i64, Value, String)> {
    notes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["key"].as_str().unwrap().to_owned(),
                n["version"].as_i64().unwrap(),
                n["value"].clone(),
                n["actor"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn note(key: &str, version: i64, value: Value, actor: &str) -> (String, i64, Value, String) {
    (key.into(), version, value, actor.into())
}

async fn add(
    rest: &mut SqlRpc,
    owner: &Caller,
    ws: &str,
    rev: &str,
    key: &str,
    value: Value,
) -> Value {
    rest.call(
        owner,
        "supabash_add_note",
        json!({ "workspace_id": ws, "revision": rev, "key": key, "value": value, "actor": "eval" }),
    )
    .await
    .unwrap()
}

/// The notes of `rev` (only under `key` when given) as `owner` reads them.
async fn notes_of(
    rest: &mut SqlRpc,
    owner: &Caller,
    ws: &str,
    rev: &Value,
    key: Option<&str>,
) -> Value {
    let mut args = json!({ "workspace_id": ws, "revision": rev });
    if let Some(k) = key {
        args["key"] = json!(k);
    }
    rest.call(owner, "supabash_notes", args).await.unwrap()
}

#[tokio::test]
async fn notes_append_per_key_show_in_history_and_go_with_purge_and_redaction() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a.md", "text": "one"}]),
        )
        .await;
    let r2 = rest
        .commit_as(
            &owner,
            &ws,
            Some(&r1),
            json!([{"op": "upsert", "path": "/a.md", "text": "two"}]),
        )
        .await;

    let first = add(&mut rest, &owner, &ws, &r1, "score", json!({"score": 0.5})).await;
    assert_eq!(first["revision"], json!(r1));
    assert_eq!(first["version"], json!(1));
    assert!(first["notedAt"].as_str().unwrap().ends_with('Z'), "{first}");
    let second = add(&mut rest, &owner, &ws, &r1, "score", json!({"score": 0.75})).await;
    assert_eq!(second["version"], json!(2));
    add(&mut rest, &owner, &ws, &r1, "verdict", json!("approved")).await;

    // No new revision: the head and the history's length are unchanged.
    let history = rest
        .call(&owner, "supabash_history", json!({ "workspace_id": ws }))
        .await
        .unwrap();
    assert_eq!(history["records"].as_array().unwrap().len(), 2);
    assert_eq!(history["records"][1]["revision"], json!(r2));
    let want = vec![
        note("score", 1, json!({"score": 0.5}), "eval"),
        note("score", 2, json!({"score": 0.75}), "eval"),
        note("verdict", 1, json!("approved"), "eval"),
    ];
    assert_eq!(shown(&history["notes"]), want);
    assert!(history["notes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["revision"] == json!(r1)));

    let all = notes_of(&mut rest, &owner, &ws, &json!(r1), None).await;
    assert_eq!(shown(&all), want);
    let scores = notes_of(&mut rest, &owner, &ws, &json!(r1), Some("score")).await;
    assert_eq!(shown(&scores), want[..2].to_vec());
    // As of a time: the revision committed at or before it.
    let at = history["records"][0]["committedAt"].clone();
    let as_of = notes_of(&mut rest, &owner, &ws, &json!(at), None).await;
    assert_eq!(shown(&as_of), want);
    let none = notes_of(&mut rest, &owner, &ws, &json!(r2), None).await;
    assert_eq!(none, json!([]));

    // Another user neither reads nor adds.
    let other = Caller::new_user();
    for (rpc, args) in [
        (
            "supabash_notes",
            json!({ "workspace_id": ws, "revision": r1 }),
        ),
        (
            "supabash_add_note",
            json!({ "workspace_id": ws, "revision": r1, "key": "score", "value": 0, "actor": "x" }),
        ),
    ] {
        expect_err(rest.call(&other, rpc, args).await, "42501", None);
    }

    // A redaction's metadata keys remove those keys' notes.
    rest.call(
        &owner,
        "supabash_redact",
        json!({ "workspace_id": ws, "metadata_keys": ["verdict"] }),
    )
    .await
    .unwrap();
    let left = notes_of(&mut rest, &owner, &ws, &json!(r1), None).await;
    assert_eq!(shown(&left), want[..2].to_vec());

    // Purge removes a revision's notes with it.
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": 1 }),
    )
    .await
    .unwrap();
    let count: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.revision_notes WHERE workspace_id = $1::text::uuid",
            &[&ws],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0);
    expect_err(
        rest.call(
            &owner,
            "supabash_notes",
            json!({ "workspace_id": ws, "revision": r1 }),
        )
        .await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );
}

#[tokio::test]
async fn a_revision_holds_a_bounded_number_of_notes() {
    use supabash_core::rpc::notes::MAX_NOTES_PER_REVISION;
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a.md", "text": "one"}]),
        )
        .await;
    for i in 0..MAX_NOTES_PER_REVISION {
        add(
            &mut rest,
            &owner,
            &ws,
            &r1,
            &format!("k{}", i % 7),
            json!(i),
        )
        .await;
    }
    expect_err(
        rest.call(
            &owner,
            "supabash_add_note",
            json!({ "workspace_id": ws, "revision": r1, "key": "k0", "value": 1, "actor": "eval" }),
        )
        .await,
        "54000",
        Some("SUPABASH_QUOTA_EXCEEDED"),
    );
    let all = notes_of(&mut rest, &owner, &ws, &json!(r1), Some("k0")).await;
    let versions: Vec<i64> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, (1..=versions.len() as i64).collect::<Vec<_>>());
}

/// The Rust client's methods over both transports.
#[tokio::test]
async fn the_client_adds_and_reads_notes() {
    use supabash_tests::client::{new_user, workspace_with, BOTH};
    for via in BOTH {
        let ws = workspace_with(via, &new_user(), &[("/a.md", "alpha\n")]).await;
        let head = ws.history(None, None).await.unwrap().records[0]
            .revision
            .clone();
        let n = ws
            .add_note(&head, "score", json!({"score": 1}), "eval")
            .await
            .unwrap();
        assert_eq!(
            (n.key.as_str(), n.version, n.actor.as_str()),
            ("score", 1, "eval"),
            "{via:?}"
        );
        let notes = ws.notes(&head, None).await.unwrap();
        assert_eq!(notes, vec![n.clone()], "{via:?}");
        let page = ws.history(None, None).await.unwrap();
        assert_eq!(page.notes, vec![n], "{via:?}");
        // Refused before it leaves the client: a value over the ceiling.
        let big = json!("x".repeat(supabash_core::rpc::notes::MAX_NOTE_BYTES));
        let e = ws.add_note(&head, "big", big, "eval").await.unwrap_err();
        assert_eq!(e.code(), supabash::ErrorCode::QuotaExceeded, "{via:?}");
    }
}

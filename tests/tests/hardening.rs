//! Smaller hardening rules, each through the RPCs: authorisation before any decoding of a
//! commit, metadata that round-trips through PostgreSQL (negative zero), invisible characters
//! in paths, purged commits that stay spent, and positions that count one workspace's commits.

use serde_json::{json, Value};
use supabash_core::document::{metadata_from_json, render};
use supabash_core::hash::sha256;
use supabash_tests::support::{expect_err, marker};
use supabash_tests::{Caller, Cluster, SqlRpc};

async fn rest() -> SqlRpc {
    SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await
}

fn commit_args(ws: &str, base: Option<&str>, changes: Value) -> Value {
    json!({ "workspace_id": ws, "actor": "t", "base_revision": base, "changes": changes })
}

#[tokio::test]
async fn a_commit_is_authorised_before_its_changes_are_decoded() {
    let mut rest = rest().await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    // Undecodable content and an invalid path: an outsider learns nothing about them.
    let bad = json!([{"op": "upsert", "path": "/a.md", "base64": "not base64!"},
                     {"op": "upsert", "path": "relative", "text": "x"}]);
    for caller in [Caller::new_user(), Caller::Service] {
        let r = rest
            .call(
                &caller,
                "supabash_commit",
                commit_args(&ws, None, bad.clone()),
            )
            .await;
        expect_err(r, "42501", Some("SUPABASH_WORKSPACE_DENIED"));
    }
    let r = rest
        .call(
            &Caller::Anon,
            "supabash_commit",
            commit_args(&ws, None, bad.clone()),
        )
        .await;
    assert!(r.is_err());
    let e = r.unwrap_err();
    assert_ne!(marker(&e), Some("SUPABASH_INVALID_ARGUMENT"), "{e}");
    assert_ne!(marker(&e), Some("SUPABASH_INVALID_PATH"), "{e}");
    // The owner is told what is wrong.
    let r = rest
        .call(&owner, "supabash_commit", commit_args(&ws, None, bad))
        .await;
    assert!(matches!(
        marker(&r.unwrap_err()),
        Some("SUPABASH_INVALID_ARGUMENT" | "SUPABASH_INVALID_PATH")
    ));
}

#[tokio::test]
async fn negative_zero_metadata_reads_back_with_its_hash() {
    let mut rest = rest().await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let metadata: Value =
        serde_json::from_str(r#"{"a": -0, "b": -0.0, "c": 1.5e-7, "d": -2}"#).unwrap();
    rest.commit_as(
        &owner,
        &ws,
        None,
        json!([{"op": "upsert", "path": "/n.md", "text": "body\n", "metadata": metadata}]),
    )
    .await;
    let doc = rest
        .call(
            &owner,
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/n.md" }),
        )
        .await
        .unwrap();
    // What a client does with the answer: render the stored metadata and check the hash.
    let stored = metadata_from_json(&doc["metadata"]).unwrap();
    let rendered = render(doc["text"].as_str().unwrap().as_bytes(), &stored);
    assert_eq!(
        doc["contentHash"].as_str().unwrap(),
        hex::encode(sha256(&rendered)),
        "metadata {} does not reproduce its hash",
        doc["metadata"]
    );
    assert_eq!(doc["metadata"]["a"], json!(0.0));
}

#[tokio::test]
async fn paths_with_invisible_characters_are_refused() {
    let mut rest = rest().await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    for path in [
        "/invoice\u{202e}fdp.md",
        "/a\u{200b}.md",
        "/a\u{00a0}b.md",
        "/\u{feff}x.md",
    ] {
        let r = rest
            .call(
                &owner,
                "supabash_commit",
                commit_args(
                    &ws,
                    None,
                    json!([{"op": "upsert", "path": path, "text": "x"}]),
                ),
            )
            .await;
        let e = expect_err(r, "22023", Some("SUPABASH_INVALID_PATH"));
        assert!(
            e.detail.unwrap_or_default().contains("invisible-character"),
            "{path:?}"
        );
    }
}

#[tokio::test]
async fn a_retried_commit_of_a_purged_revision_is_not_committed_again() {
    let mut rest = rest().await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let tx = uuid::Uuid::new_v4().to_string();
    let mut args = commit_args(
        &ws,
        None,
        json!([{"op": "upsert", "path": "/a.md", "text": "1"}]),
    );
    args["transaction_id"] = json!(tx);
    args["idempotency_key"] = json!("first-write");
    let first = rest
        .call(&owner, "supabash_commit", args.clone())
        .await
        .unwrap();
    let first_rev = first["receipt"]["revision"].as_str().unwrap().to_owned();
    let mut head = first_rev.clone();
    for i in 0..3 {
        head = rest
            .commit_as(
                &owner,
                &ws,
                Some(&head),
                json!([{"op": "upsert", "path": "/a.md", "text": format!("v{i}")}]),
            )
            .await;
    }
    // Kept revisions keep replaying.
    let replayed = rest
        .call(&owner, "supabash_commit", args.clone())
        .await
        .unwrap();
    assert_eq!(replayed["replayed"], json!(true));
    let purged = rest
        .call(
            &owner,
            "supabash_purge",
            json!({ "workspace_id": ws, "keep_revisions": 1 }),
        )
        .await
        .unwrap();
    assert!(purged["revisions"]
        .as_array()
        .unwrap()
        .contains(&json!(first_rev)));
    // The same request again, by transaction id and by key: refused, nothing committed.
    let mut by_key = args.clone();
    by_key["transaction_id"] = json!(uuid::Uuid::new_v4().to_string());
    for retry in [args, by_key] {
        let r = rest.call(&owner, "supabash_commit", retry).await;
        let e = expect_err(r, "23505", Some("SUPABASH_IDEMPOTENCY_CONFLICT"));
        assert!(
            e.detail.as_deref().unwrap_or_default().contains(&first_rev),
            "{e}"
        );
    }
    let m = rest
        .call(
            &owner,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap();
    assert_eq!(m["revision"], json!(head));
}

#[tokio::test]
async fn positions_count_one_workspaces_commits() {
    let mut rest = rest().await;
    let (alice, bob) = (Caller::new_user(), Caller::new_user());
    let a = rest.create_workspace(&alice).await;
    let b = rest.create_workspace(&bob).await;
    let (mut ha, mut hb) = (None::<String>, None::<String>);
    for i in 1..=4i64 {
        let ra = rest
            .call(
                &alice,
                "supabash_commit",
                commit_args(
                    &a,
                    ha.as_deref(),
                    json!([{"op": "upsert", "path": "/a", "text": format!("{i}")}]),
                ),
            )
            .await
            .unwrap();
        // Bob commits twice in between: Alice's numbering must not show it.
        for _ in 0..2 {
            let rb = rest
                .call(&bob, "supabash_commit", commit_args(&b, hb.as_deref(), json!([{"op": "upsert", "path": "/b", "text": uuid::Uuid::new_v4().to_string()}])))
                .await
                .unwrap();
            hb = Some(rb["receipt"]["revision"].as_str().unwrap().to_owned());
        }
        assert_eq!(ra["receipt"]["position"], json!(i));
        ha = Some(ra["receipt"]["revision"].as_str().unwrap().to_owned());
    }
    let m = rest
        .call(&bob, "supabash_load_manifest", json!({ "workspace_id": b }))
        .await
        .unwrap();
    assert_eq!(m["position"], json!(8));
}

#[tokio::test]
async fn per_owner_quotas_hold_across_workspaces_and_purge_gives_bytes_back() {
    let cluster = Cluster::shared();
    let dsn = supabash_tests::support::authenticator_with(
        cluster,
        "quota_authenticator",
        &[
            ("supabash.max_workspaces_per_owner", "2"),
            ("supabash.max_bytes_per_owner", "1MB"),
        ],
    )
    .await;
    let mut rest = SqlRpc::connect(&dsn).await;
    let owner = Caller::new_user();
    let a = rest.create_workspace(&owner).await;
    let b = rest.create_workspace(&owner).await;
    let r = rest
        .call(&owner, "supabash_create_workspace", json!({}))
        .await;
    let e = expect_err(r, "54000", Some("SUPABASH_QUOTA_EXCEEDED"));
    assert!(
        e.message.contains("supabash.max_workspaces_per_owner"),
        "{e}"
    );
    // Another owner is not affected.
    rest.create_workspace(&Caller::new_user()).await;

    // 600 KB in each workspace passes the 1 MB quota on the second one; nothing is kept.
    let blob = |seed: u8| -> String {
        (0..600_000u32)
            .map(|i| (b'a' + ((i as u8).wrapping_mul(seed) % 26)) as char)
            .collect()
    };
    let ha = rest
        .commit_as(
            &owner,
            &a,
            None,
            json!([{"op": "upsert", "path": "/a.txt", "text": blob(7)}]),
        )
        .await;
    let r = rest
        .call(
            &owner,
            "supabash_commit",
            commit_args(
                &b,
                None,
                json!([{"op": "upsert", "path": "/b.txt", "text": blob(11)}]),
            ),
        )
        .await;
    let e = expect_err(r, "54000", Some("SUPABASH_QUOTA_EXCEEDED"));
    assert!(e.message.contains("supabash.max_bytes_per_owner"), "{e}");
    let m = rest
        .call(
            &owner,
            "supabash_load_manifest",
            json!({ "workspace_id": b }),
        )
        .await
        .unwrap();
    assert_eq!(m["revision"], Value::Null);
    // The same bytes again in the same workspace add nothing; deleting and purging gives the
    // bytes back, and the other workspace's commit then fits.
    let ha = rest
        .commit_as(
            &owner,
            &a,
            Some(&ha),
            json!([{"op": "upsert", "path": "/copy.txt", "text": blob(7)}]),
        )
        .await;
    let ha = rest
        .commit_as(
            &owner,
            &a,
            Some(&ha),
            json!([{"op": "delete", "path": "/a.txt"}, {"op": "delete", "path": "/copy.txt"}]),
        )
        .await;
    let _ = ha;
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": a, "keep_revisions": 1 }),
    )
    .await
    .unwrap();
    rest.commit_as(
        &owner,
        &b,
        None,
        json!([{"op": "upsert", "path": "/b.txt", "text": blob(11)}]),
    )
    .await;
}

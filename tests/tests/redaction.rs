//! Redaction: a secret leaves history for good. Reads of old revisions show tombstones; the raw
//! tables (read as the superuser, every stored body decoded, deltas against their bases) hold
//! the secret's bytes nowhere, and no receipt line names its hash; every kept version reads back
//! byte for byte; the epoch stops stale trees from committing; the restore fence holds; and the
//! RPC refuses wrong callers and malformed input. The client and both transports at the end.

use serde_json::{json, Value};
use std::collections::HashMap;
use supabash::workspace::{CommitOptions, RedactOptions};
use supabash::ErrorCode;
use supabash_core::hash::{sha256, sha256_hex};
use supabash_tests::client::{reopen, workspace_with, BOTH};
use supabash_tests::support::{admin, expect_err, fingerprint};
use supabash_tests::{Caller, Cluster, DbError, SqlRpc};
use tokio_postgres::Client;

const SECRET: &str = "API_KEY=sk-live-9f8e7d6c5b4a3210";

struct Ws {
    rest: SqlRpc,
    owner: Caller,
    id: String,
    head: Option<String>,
    epoch: Option<i64>,
}

impl Ws {
    async fn new() -> Ws {
        let mut rest = SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await;
        let owner = Caller::new_user();
        let id = rest.create_workspace(&owner).await;
        Ws {
            rest,
            owner,
            id,
            head: None,
            epoch: None,
        }
    }

    async fn call(&mut self, rpc: &str, mut args: Value) -> Result<Value, DbError> {
        args["workspace_id"] = json!(self.id);
        self.rest.call(&self.owner, rpc, args).await
    }

    async fn try_commit(&mut self, changes: Value, mut extra: Value) -> Result<Value, DbError> {
        extra["changes"] = changes;
        extra["actor"] = json!("redaction-test");
        extra["base_revision"] = json!(self.head);
        if extra.get("redaction_epoch").is_none() {
            extra["redaction_epoch"] = json!(self.epoch);
        }
        let r = self.call("supabash_commit", extra).await?;
        self.head = Some(r["receipt"]["revision"].as_str().unwrap().to_owned());
        Ok(r["receipt"].clone())
    }

    async fn commit(&mut self, changes: Value) -> String {
        let receipt = self.try_commit(changes, json!({})).await.unwrap();
        receipt["revision"].as_str().unwrap().to_owned()
    }

    async fn redact(&mut self, args: Value) -> Result<Value, DbError> {
        self.call("supabash_redact", args).await
    }

    async fn doc(&mut self, path: &str, revision: &str) -> Value {
        self.call(
            "supabash_load_document",
            json!({ "path": path, "revision": revision }),
        )
        .await
        .unwrap()
    }
}

fn upsert(path: &str, text: &str) -> Value {
    json!([{ "op": "upsert", "path": path, "text": text }])
}

/// Text long enough to be compressed, so that edits of it are stored as deltas.
fn filler() -> String {
    (0..60)
        .map(|i| {
            format!(
                "line {i}: notes about the project, item {}\n",
                (i * 7919) % 1000
            )
        })
        .collect()
}

/// Stored bodies by hash: the stored form and the base's hash.
type StoredBodies = HashMap<Vec<u8>, (Vec<u8>, Option<Vec<u8>>)>;

/// Every stored body of the workspace, decoded to its plain bytes (deltas against their
/// bases), each checked against its hash, by hash.
async fn decoded_bodies(admin: &Client, ws: &str) -> HashMap<Vec<u8>, Vec<u8>> {
    let rows = admin
        .query(
            "SELECT hash, body, base_hash FROM supabash.bodies WHERE workspace_id = $1::text::uuid",
            &[&ws],
        )
        .await
        .unwrap();
    let stored: StoredBodies = rows
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    fn decode(hash: &[u8], stored: &StoredBodies, done: &mut HashMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
        if let Some(d) = done.get(hash) {
            return d.clone();
        }
        let (form, base) = stored
            .get(hash)
            .unwrap_or_else(|| panic!("body {} is missing", hex::encode(hash)));
        let plain = match (form[0], base) {
            (0, None) => form[1..].to_vec(),
            (1, None) => zstd::bulk::decompress(&form[1..], 1 << 26).unwrap(),
            (2, Some(base)) => {
                let base = decode(base, stored, done);
                let mut dctx = zstd::zstd_safe::DCtx::create();
                dctx.ref_prefix(base.as_slice()).unwrap();
                let mut out = Vec::with_capacity(1 << 20);
                dctx.decompress(&mut out, &form[1..]).unwrap();
                out
            }
            (codec, base) => panic!("codec {codec} with base {base:?}"),
        };
        assert_eq!(sha256(&plain).as_slice(), hash, "a body matches its hash");
        done.insert(hash.to_vec(), plain.clone());
        plain
    }
    let mut done = HashMap::new();
    for hash in stored.keys() {
        decode(hash, &stored, &mut done);
    }
    done
}

async fn base_of(admin: &Client, ws: &str, hash: &[u8]) -> Option<Vec<u8>> {
    admin
        .query_one(
            "SELECT base_hash FROM supabash.bodies WHERE workspace_id = $1::text::uuid AND hash = $2",
            &[&ws, &hash],
        )
        .await
        .unwrap()
        .get(0)
}

async fn usage(admin: &Client, ws: &str) -> i64 {
    admin
        .query_one(
            "SELECT body_bytes FROM supabash.usage WHERE workspace_id = $1::text::uuid",
            &[&ws],
        )
        .await
        .unwrap()
        .get(0)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn a_secret_leaves_every_table_and_kept_versions_stay_whole() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    let base = filler();
    let v1 = format!("{base}{SECRET}\n");
    let v2 = format!("{v1}more 1\n");
    let v3 = format!("{v2}more 2\n");
    let v4 = format!("{base}more 1\nmore 2\nclean now\n");
    let other = format!("{base}another file\n");
    let r1 = ws
        .commit(json!([
            { "op": "upsert", "path": "/config.md", "text": base },
            { "op": "upsert", "path": "/other.md", "text": other },
            // A user's own frontmatter saying redacted is content, not a tombstone.
            { "op": "upsert", "path": "/fm.md", "text": "mine\n", "metadata": { "redacted": true } }
        ]))
        .await;
    let r2 = ws.commit(upsert("/config.md", &v1)).await;
    let r3 = ws.commit(upsert("/config.md", &v2)).await;
    let r4 = ws.commit(upsert("/config.md", &v3)).await;
    let r5_receipt = ws
        .try_commit(upsert("/config.md", &v4), json!({}))
        .await
        .unwrap();
    let r5 = r5_receipt["revision"].as_str().unwrap().to_owned();
    let hashes: Vec<Vec<u8>> = [&base, &v1, &v2, &v3]
        .iter()
        .map(|t| sha256(t.as_bytes()).to_vec())
        .collect();
    // The setup exercises both delta cases: a secret version that is a delta against another
    // body, and a kept version (the head's) that is a delta against a secret one.
    assert_eq!(
        base_of(&admin, &ws.id, &hashes[1]).await,
        Some(hashes[0].clone())
    );
    assert_eq!(
        base_of(&admin, &ws.id, &sha256(v4.as_bytes())).await,
        Some(hashes[3].clone())
    );
    let usage_before = usage(&admin, &ws.id).await;

    let report = ws
        .redact(json!({ "paths": ["/config.md"], "reason": "leaked key" }))
        .await
        .unwrap();
    assert_eq!(report["dryRun"], json!(false));
    assert_eq!(report["versions"], json!(4), "{report}");
    assert_eq!(report["epoch"], json!(1));
    assert_eq!(report["revisions"], json!([r1, r2, r3, r4]), "{report}");
    let mut removed: Vec<String> = hashes.iter().map(hex::encode).collect();
    removed.sort();
    assert_eq!(report["bodies"], json!(removed), "{report}");
    let bytes: i64 = [&base, &v1, &v2, &v3].iter().map(|t| t.len() as i64).sum();
    assert_eq!(report["bytes"], json!(bytes));
    assert_eq!(usage(&admin, &ws.id).await, usage_before - bytes);

    // Old revisions read as tombstones, without a body.
    for rev in [&r1, &r2, &r4] {
        let d = ws.doc("/config.md", rev).await;
        assert_eq!(d["redacted"], json!(true), "{d}");
        assert!(d.get("text").is_none() && d.get("base64").is_none(), "{d}");
    }
    let tree = ws
        .call("supabash_load_revision", json!({ "revision": r3 }))
        .await
        .unwrap();
    let files = tree["files"].as_array().unwrap();
    let config = files.iter().find(|f| f["path"] == "/config.md").unwrap();
    assert_eq!(config["redacted"], json!(true));
    let snapshot = ws
        .call("supabash_load_snapshot", json!({ "revision": r2 }))
        .await
        .unwrap();
    assert!(snapshot["files"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["path"] == "/config.md" && f["redacted"] == json!(true)));
    let diff = ws
        .call(
            "supabash_diff",
            json!({ "from_ref": { "revision": r3 }, "to_ref": { "head": true } }),
        )
        .await
        .unwrap();
    let entry = &diff["entries"][0];
    assert_eq!(entry["path"], json!("/config.md"), "{diff}");
    assert!(entry.get("beforeHash").is_none(), "{diff}");
    assert!(!diff.to_string().contains("sk-live"), "{diff}");
    // Kept versions read back byte for byte; the user's frontmatter is no tombstone.
    assert_eq!(ws.doc("/config.md", &r5).await["text"], json!(v4));
    for rev in [&r1, &r3, &r5] {
        assert_eq!(ws.doc("/other.md", rev).await["text"], json!(other));
        let fm = ws.doc("/fm.md", rev).await;
        assert!(fm.get("redacted").is_none(), "{fm}");
        assert_eq!(fm["text"], json!("mine\n"));
        assert_eq!(fm["metadata"], json!({ "redacted": true }));
    }

    // The raw tables: no body under a redacted hash, no stored body holding the secret (every
    // body decoded, deltas included), no delta against a removed body, no entry naming one.
    let bodies = decoded_bodies(&admin, &ws.id).await;
    for h in &hashes {
        assert!(!bodies.contains_key(h), "body {} remains", hex::encode(h));
    }
    assert!(bodies.values().all(|b| !contains(b, b"sk-live")));
    assert_eq!(
        bodies.get(sha256(v4.as_bytes()).as_slice()),
        Some(&v4.clone().into_bytes())
    );
    let raw: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::text::uuid
               AND (position('sk-live'::bytea IN body) > 0 OR base_hash = ANY($2))",
            &[&ws.id, &hashes],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(raw, 0);
    let entries = admin
        .query(
            "SELECT body_hash, redacted FROM supabash.entries
              WHERE workspace_id = $1::text::uuid AND path = '/config.md' ORDER BY valid_from",
            &[&ws.id],
        )
        .await
        .unwrap();
    let flags: Vec<bool> = entries.iter().map(|r| r.get(1)).collect();
    assert_eq!(flags, [true, true, true, true, false]);
    assert!(entries
        .iter()
        .all(|r| !hashes.contains(&r.get::<_, Vec<u8>>(0))));
    // Receipts: neither the stored lines nor history name a redacted hash.
    let lines = admin
        .query(
            "SELECT lines FROM supabash.revisions WHERE workspace_id = $1::text::uuid",
            &[&ws.id],
        )
        .await
        .unwrap();
    for row in lines {
        let bytes: Vec<u8> = row.get(0);
        assert!(hashes.iter().all(|h| !contains(&bytes, h)));
    }
    let history = ws.call("supabash_history", json!({})).await.unwrap();
    let text = history.to_string();
    assert!(hashes.iter().all(|h| !text.contains(&hex::encode(h))));
    let head_line = &history["records"][4]["changes"][0];
    assert_eq!(head_line["redacted"], json!(true), "{head_line}");
    assert_eq!(head_line["afterHash"], json!(sha256_hex(v4.as_bytes())));
    assert!(head_line.get("beforeHash").is_none(), "{head_line}");
    // The audit row.
    let audit = admin
        .query_one(
            "SELECT boundary_revision::text, paths, hash_count, reason, actor FROM supabash.redactions
              WHERE workspace_id = $1::text::uuid",
            &[&ws.id],
        )
        .await
        .unwrap();
    assert_eq!(audit.get::<_, String>(0), r5);
    assert_eq!(audit.get::<_, Vec<String>>(1), ["/config.md"]);
    assert_eq!(audit.get::<_, i32>(2), 0);
    assert_eq!(
        audit.get::<_, Option<String>>(3).as_deref(),
        Some("leaked key")
    );

    // The epoch: manifests carry it; a commit without it, or with the old one, is refused
    // before anything, even before an idempotent replay of an earlier commit.
    let manifest = ws.call("supabash_load_manifest", json!({})).await.unwrap();
    assert_eq!(manifest["redactionEpoch"], json!(1));
    assert_eq!(manifest["restoreFloor"], json!(5));
    let before = fingerprint(&admin, &ws.id).await;
    for epoch in [Value::Null, json!(0), json!(2)] {
        let r = ws
            .try_commit(upsert("/new.md", "x"), json!({ "redaction_epoch": epoch }))
            .await;
        expect_err(r, "55000", Some("SUPABASH_REDACTION_INVALIDATED"));
    }
    let mut replay = json!({ "changes": upsert("/config.md", &v4), "actor": "redaction-test",
                             "base_revision": r4, "transaction_id": r5_receipt["transactionId"] });
    let r = ws.call("supabash_commit", replay.clone()).await;
    expect_err(r, "55000", Some("SUPABASH_REDACTION_INVALIDATED"));
    replay["redaction_epoch"] = json!(1);
    let replayed = ws.call("supabash_commit", replay).await.unwrap();
    assert_eq!(replayed["replayed"], json!(true));
    assert_eq!(
        fingerprint(&admin, &ws.id).await,
        before,
        "nothing was written"
    );
    ws.epoch = Some(1);

    // The fence: a restore from before the boundary is refused; from the boundary it is not.
    let r = ws
        .try_commit(
            upsert("/config.md", "restored"),
            json!({ "source_revision": r4 }),
        )
        .await;
    expect_err(r, "55000", Some("SUPABASH_RESTORE_CROSSES_REDACTION"));
    ws.try_commit(upsert("/new.md", "after"), json!({ "source_revision": r5 }))
        .await
        .unwrap();
}

#[tokio::test]
async fn by_hash_the_current_body_and_a_dry_run() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    let secret = format!("{SECRET}\n");
    let hash = sha256_hex(secret.as_bytes());
    ws.commit(json!([
        { "op": "upsert", "path": "/a.md", "text": secret },
        { "op": "upsert", "path": "/b.md", "text": secret }
    ]))
    .await;
    ws.commit(upsert("/a.md", "a2")).await;
    // /b.md still holds the body at the head.
    let r = ws.redact(json!({ "body_hashes": [hash] })).await;
    let e = expect_err(r, "55000", Some("SUPABASH_REDACTION_CURRENT_BODY"));
    assert!(e.message.contains("/b.md"), "{e}");
    ws.commit(upsert("/b.md", "b2")).await;

    // A dry run answers what would go and writes nothing.
    let before = fingerprint(&admin, &ws.id).await;
    let dry = ws
        .redact(json!({ "body_hashes": [hash.to_uppercase()], "dry_run": true }))
        .await
        .unwrap();
    assert_eq!(dry["dryRun"], json!(true));
    assert_eq!(dry["versions"], json!(2), "{dry}");
    assert_eq!(dry["bodies"], json!([hash]), "{dry}");
    assert_eq!(dry["epoch"], json!(0));
    assert_eq!(fingerprint(&admin, &ws.id).await, before);
    let audits: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.redactions WHERE workspace_id = $1::text::uuid",
            &[&ws.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(audits, 0);

    let applied = ws.redact(json!({ "body_hashes": [hash] })).await.unwrap();
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("redactionId");
        v.as_object_mut().unwrap().remove("dryRun");
        v.as_object_mut().unwrap().remove("epoch");
        v
    };
    assert_eq!(
        strip(applied.clone()),
        strip(dry),
        "the dry run told the truth"
    );
    let bodies = decoded_bodies(&admin, &ws.id).await;
    assert!(bodies.values().all(|b| !contains(b, b"sk-live")));
    // A hash redaction sets no restore fence.
    let manifest = ws.call("supabash_load_manifest", json!({})).await.unwrap();
    assert!(manifest.get("restoreFloor").is_none(), "{manifest}");
}

#[tokio::test]
async fn metadata_keys_and_causes_are_scrubbed_from_the_selected_revisions() {
    let mut ws = Ws::new().await;
    ws.try_commit(
        upsert("/x.md", "x1"),
        json!({ "metadata": { "ticket": "T-1", "token": "abc" }, "cause": "pasted the key abc" }),
    )
    .await
    .unwrap();
    ws.try_commit(
        upsert("/y.md", "y1"),
        json!({ "metadata": { "token": "def" }, "cause": "kept" }),
    )
    .await
    .unwrap();
    let head = ws
        .try_commit(
            upsert("/x.md", "x2"),
            json!({ "metadata": { "token": "ghi" }, "cause": "the head" }),
        )
        .await
        .unwrap();
    let report = ws
        .redact(json!({ "paths": ["/x.md"], "metadata_keys": ["token"], "clear_cause": true }))
        .await
        .unwrap();
    assert_eq!(report["revisions"].as_array().unwrap().len(), 2, "{report}");
    let history = ws.call("supabash_history", json!({})).await.unwrap();
    let r = history["records"].as_array().unwrap();
    assert_eq!(r[0]["metadata"], json!({ "ticket": "T-1" }));
    assert!(r[0].get("cause").is_none(), "{}", r[0]);
    // r2 showed /x.md's first version too.
    assert_eq!(r[1]["metadata"], json!({}));
    assert!(r[1].get("cause").is_none());
    assert_eq!(
        r[2]["metadata"], head["metadata"],
        "the head is never touched"
    );
    assert_eq!(r[2]["cause"], json!("the head"));

    // Only scrubbing: every revision before the boundary, no version touched.
    let report = ws
        .redact(json!({ "metadata_keys": ["ticket"] }))
        .await
        .unwrap();
    assert_eq!(report["versions"], json!(0));
    assert_eq!(report["revisions"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn wrong_callers_and_malformed_input_are_refused() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    ws.commit(upsert("/a.md", "a")).await;
    ws.commit(upsert("/a.md", "b")).await;
    let before = fingerprint(&admin, &ws.id).await;
    let args = json!({ "workspace_id": ws.id, "paths": ["/a.md"] });
    let r = ws
        .rest
        .call(&Caller::new_user(), "supabash_redact", args.clone())
        .await;
    expect_err(r, "42501", Some("SUPABASH_WORKSPACE_DENIED"));
    let r = ws
        .rest
        .call(&Caller::Anon, "supabash_redact", args.clone())
        .await;
    expect_err(r, "42501", None);
    let r = ws
        .rest
        .call(&Caller::Service, "supabash_redact", args.clone())
        .await;
    expect_err(r, "42501", Some("SUPABASH_WORKSPACE_DENIED"));
    let mut forged = args.clone();
    forged["delegated_grant"] = json!("sbg_forged");
    let r = ws
        .rest
        .call(&Caller::Service, "supabash_redact", forged)
        .await;
    expect_err(r, "42501", Some("SUPABASH_WORKSPACE_DENIED"));

    let invalid = "SUPABASH_INVALID_ARGUMENT";
    for (bad, marker) in [
        (json!({ "body_hashes": ["xyz"] }), invalid),
        (json!({ "body_hashes": ["a".repeat(63)] }), invalid),
        (json!({ "paths": ["relative.md"] }), "SUPABASH_INVALID_PATH"),
        (
            json!({ "paths": ["/a.md"], "before_revision": uuid::Uuid::new_v4().to_string() }),
            "SUPABASH_REVISION_NOT_FOUND",
        ),
        (
            json!({ "paths": ["/a.md"], "before_revision": "not-a-uuid" }),
            invalid,
        ),
        (json!({}), invalid),
        (json!({ "paths": [], "body_hashes": [] }), invalid),
        (json!({ "metadata_keys": [""] }), invalid),
    ] {
        let r = ws.redact(bad.clone()).await;
        expect_err(r, "22023", Some(marker));
    }
    assert_eq!(
        fingerprint(&admin, &ws.id).await,
        before,
        "nothing was written"
    );
}

#[tokio::test]
async fn the_client_reloads_after_a_redaction_and_stale_trees_cannot_commit() {
    for via in BOTH {
        let user = uuid::Uuid::new_v4().to_string();
        let ws = workspace_with(
            via,
            &user,
            &[("/notes/key.md", "token=abc123\n"), ("/keep.md", "keep\n")],
        )
        .await;
        let r1 = ws.base_revision().unwrap();
        ws.fs()
            .write("/notes/key.md", "token=REMOVED\n")
            .await
            .unwrap();
        ws.commit(CommitOptions::new("host")).await.unwrap();
        let stale = reopen(via, &user, ws.id()).await;
        stale.fs().write("/stale.md", "from before").await.unwrap();
        ws.fs().write("/draft.md", "staged").await.unwrap();

        // A dry run changes nothing, staged edits included.
        let dry = ws
            .redact(RedactOptions::new().path("/notes/key.md"))
            .await
            .unwrap();
        assert!(dry.dry_run && dry.versions == 1, "{via:?}: {dry:?}");
        assert_eq!(ws.changes().unwrap().len(), 1);

        let report = ws
            .redact(
                RedactOptions::new()
                    .path("/notes/key.md")
                    .reason("leak")
                    .apply(),
            )
            .await
            .unwrap();
        assert_eq!((report.versions, report.epoch), (1, 1), "{via:?}");
        assert!(
            ws.changes().unwrap().is_empty(),
            "staged changes are discarded"
        );
        assert_eq!(
            ws.fs().read("/notes/key.md").await.unwrap(),
            b"token=REMOVED\n"
        );
        let old = ws.read_revision(&r1).await.unwrap();
        assert_eq!(old.redacted, ["/notes/key.md"]);
        assert_eq!(
            old.files.get("/keep.md").map(Vec::as_slice),
            Some(&b"keep\n"[..])
        );
        let e = ws.restore(&r1).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::RestoreCrossesRedaction, "{via:?}: {e}");
        // A tree loaded before the redaction cannot commit.
        let e = stale.commit(CommitOptions::new("host")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::RedactionInvalidated, "{via:?}: {e}");
        // The reloaded one can.
        ws.fs().write("/after.md", "fine").await.unwrap();
        ws.commit(CommitOptions::new("host")).await.unwrap();
        let fresh = reopen(via, &user, ws.id()).await;
        assert_eq!(fresh.fs().read("/after.md").await.unwrap(), b"fine");
    }
}

/// Issue 23, item 6: a fork inherits a version its source then redacts. The fork can still
/// change that path: overwrite it (the tombstone is never a delta base), delete it and move
/// onto it (its empty hash is never a receipt hash: the line shows none and is marked
/// redacted); moving the tombstone itself without content is refused by name.
#[tokio::test]
async fn a_fork_changes_a_path_it_inherited_as_a_tombstone() {
    let mut ws = Ws::new().await;
    let secret = format!("{}{SECRET}\n", filler());
    let r1 = ws
        .commit(json!([
            { "op": "upsert", "path": "/s.txt", "text": secret },
            { "op": "upsert", "path": "/t.txt", "text": secret },
            { "op": "upsert", "path": "/u.txt", "text": "u" },
            { "op": "upsert", "path": "/m.txt", "text": secret },
            { "op": "upsert", "path": "/x.txt", "text": secret }
        ]))
        .await;
    ws.commit(json!([
        { "op": "upsert", "path": "/s.txt", "text": "clean" },
        { "op": "upsert", "path": "/t.txt", "text": "clean" },
        { "op": "upsert", "path": "/m.txt", "text": "clean" },
        { "op": "upsert", "path": "/x.txt", "text": "clean" }
    ]))
    .await;
    let fork = ws
        .call(
            "supabash_fork",
            json!({ "revision": r1, "actor": "forker" }),
        )
        .await
        .unwrap();
    let fork_id = fork["workspaceId"].as_str().unwrap().to_owned();
    ws.redact(json!({ "paths": ["/s.txt", "/t.txt", "/m.txt", "/x.txt"], "reason": "leak" }))
        .await
        .unwrap();

    let mut f = Ws {
        rest: SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await,
        owner: ws.owner.clone(),
        id: fork_id,
        head: fork["headRevision"].as_str().map(str::to_owned),
        epoch: None,
    };
    let d = f.doc("/s.txt", f.head.clone().unwrap().as_str()).await;
    assert_eq!(d["redacted"], json!(true), "{d}");
    let tree = f.call("supabash_load_manifest", json!({})).await.unwrap();
    f.epoch = tree["redactionEpoch"].as_i64();
    assert_eq!(f.epoch, Some(1), "the source's redaction reached the fork");
    // Overwrite: no delta against the tombstone.
    let receipt = f
        .try_commit(upsert("/s.txt", "new in the fork"), json!({}))
        .await
        .unwrap();
    let line = &receipt["changes"][0];
    assert_eq!(line["afterHash"], json!(sha256_hex(b"new in the fork")));
    assert!(line.get("beforeHash").is_none(), "{receipt}");
    assert_eq!(line["redacted"], json!(true), "{receipt}");
    let head = f.head.clone().unwrap();
    assert_eq!(
        f.doc("/s.txt", &head).await["text"],
        json!("new in the fork")
    );
    // Delete: the line names no hash.
    let receipt = f
        .try_commit(json!([{ "op": "delete", "path": "/t.txt" }]), json!({}))
        .await
        .unwrap();
    let line = &receipt["changes"][0];
    assert!(line.get("beforeHash").is_none(), "{receipt}");
    assert_eq!(line["redacted"], json!(true), "{receipt}");
    // A move onto a tombstone replaces it without naming a hash.
    let receipt = f
        .try_commit(
            json!([{ "op": "move", "from": "/u.txt", "path": "/m.txt" }]),
            json!({}),
        )
        .await
        .unwrap();
    let line = &receipt["changes"][0];
    assert!(line.get("replacedHash").is_none(), "{receipt}");
    assert_eq!(line["redacted"], json!(true), "{receipt}");
    // Moving a tombstone without content is refused, naming the path; with content it moves.
    let e = f
        .try_commit(
            json!([{ "op": "move", "from": "/x.txt", "path": "/w.txt" }]),
            json!({}),
        )
        .await;
    let e = expect_err(e, "22023", Some("SUPABASH_INVALID_ARGUMENT"));
    assert!(e.message.contains("/x.txt"), "{e}");
    f.try_commit(
        json!([{ "op": "move", "from": "/x.txt", "path": "/w.txt", "text": "fresh" }]),
        json!({}),
    )
    .await
    .unwrap();
    let verify = f.call("supabash_verify", json!({})).await.unwrap();
    assert_eq!(verify["ok"], json!(true), "{verify}");
}

/// Issue 23, item 1: a source deleted while a fork reads it (kept hidden for the fork) can be
/// redacted by nobody, so the fork's redaction reaches the version it inherits from it: the
/// bytes leave every table (also a kept version that was a delta against them), both when the
/// fork still inherits the file and when it overwrote it first. The deleted source's audit
/// records (arguments included) went with it, and once the last fork goes, nothing of the
/// source is left.
#[tokio::test]
async fn a_forks_redaction_reaches_a_deleted_sources_version() {
    let admin = admin(Cluster::shared()).await;
    let mut src = Ws::new().await;
    let store = src.id.clone();
    let secret = format!("{}{SECRET}\n", filler());
    let kept = format!("{}{SECRET}\nand a kept line\n", filler());
    let moved = format!("{}{SECRET}\nmoved\n", filler());
    // The source's commit carries an audit record whose arguments hold the secret.
    let audit = json!([{
        "recordId": uuid::Uuid::new_v4().to_string(),
        "sessionId": uuid::Uuid::new_v4().to_string(),
        "sequence": 0, "atMs": 1, "kind": "file_tool", "tool": "write",
        "arguments": { "content": SECRET }, "outcome": { "status": "ok" },
        "durationMs": 1, "paths": ["/secret.txt"] }]);
    src.try_commit(
        json!([{ "op": "upsert", "path": "/secret.txt", "text": secret },
               { "op": "upsert", "path": "/moved.txt", "text": moved }]),
        json!({ "audit": audit }),
    )
    .await
    .unwrap();
    // A second file stored as a delta against the secret version: it must stay readable.
    src.commit(upsert("/kept.txt", &kept)).await;
    let mut forks = Vec::new();
    for _ in 0..2 {
        let f = src
            .call("supabash_fork", json!({ "actor": "forker" }))
            .await
            .unwrap();
        forks.push(Ws {
            rest: SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await,
            owner: src.owner.clone(),
            id: f["workspaceId"].as_str().unwrap().to_owned(),
            head: f["headRevision"].as_str().map(str::to_owned),
            epoch: None,
        });
    }
    let deleted = src
        .rest
        .call(
            &src.owner,
            "supabash_delete_workspace",
            json!({ "workspace_id": src.id }),
        )
        .await
        .unwrap();
    assert_eq!(deleted["keptForForks"], json!(true));
    let records: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.audit_records WHERE workspace_id = $1::text::uuid",
            &[&store],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        records, 0,
        "the deleted source's records went with its revisions"
    );

    // Fork A still inherits /secret.txt; fork B overwrites /moved.txt first.
    let mut b = forks.pop().unwrap();
    let mut a = forks.pop().unwrap();
    b.commit(upsert("/moved.txt", "rewritten in b")).await;
    let report = a
        .redact(json!({ "paths": ["/secret.txt"], "reason": "leak" }))
        .await
        .unwrap();
    assert_eq!(
        report["bodies"],
        json!([sha256_hex(secret.as_bytes())]),
        "{report}"
    );
    let head = a.head.clone().unwrap();
    let d = a.doc("/secret.txt", &head).await;
    assert_eq!(d["redacted"], json!(true), "{d}");
    // B's redaction of its own history reaches the source's version it overwrote.
    let report = b
        .redact(json!({ "paths": ["/moved.txt"], "reason": "leak" }))
        .await
        .unwrap();
    assert_eq!(
        report["versions"],
        json!(2),
        "its copy and the source's row: {report}"
    );
    assert_eq!(
        report["bodies"],
        json!([sha256_hex(moved.as_bytes())]),
        "{report}"
    );
    let bodies = decoded_bodies(&admin, &store).await;
    for (hash, plain) in &bodies {
        assert!(
            !contains(plain, b"sk-live-9f8e7d6c5b4a3210") || plain == kept.as_bytes(),
            "body {} still holds the secret",
            hex::encode(hash)
        );
    }
    let kept_head = b.head.clone().unwrap();
    assert_eq!(b.doc("/kept.txt", &kept_head).await["text"], json!(kept));
    assert_eq!(
        b.doc("/moved.txt", &kept_head).await["text"],
        json!("rewritten in b")
    );
    for w in [&mut a, &mut b] {
        let v = w.call("supabash_verify", json!({})).await.unwrap();
        assert_eq!(v["ok"], json!(true), "{v}");
    }
    // Once the last fork goes, nothing of the source is left.
    for w in [&mut a, &mut b] {
        w.rest
            .call(
                &w.owner,
                "supabash_delete_workspace",
                json!({ "workspace_id": w.id }),
            )
            .await
            .unwrap();
    }
    for table in ["entries", "bodies", "audit_records", "workspaces"] {
        let column = if table == "workspaces" {
            "id"
        } else {
            "workspace_id"
        };
        let n: i64 = admin
            .query_one(
                &format!("SELECT count(*) FROM supabash.{table} WHERE {column} = $1::text::uuid"),
                &[&store],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "{table} still holds the deleted source");
    }
}

/// Issue 23, item 9: a copy a redaction cannot reach is said. A fork that moved an inherited
/// secret file keeps its own version at the new path; the source's redaction of the old path
/// cannot free the body and its report names the fork and the path that still hold it.
#[tokio::test]
async fn the_report_names_every_version_that_still_holds_a_selected_body() {
    let mut src = Ws::new().await;
    let secret = format!("{}{SECRET}\n", filler());
    src.commit(upsert("/leak.txt", &secret)).await;
    let f = src
        .call("supabash_fork", json!({ "actor": "forker" }))
        .await
        .unwrap();
    let mut fork = Ws {
        rest: SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await,
        owner: src.owner.clone(),
        id: f["workspaceId"].as_str().unwrap().to_owned(),
        head: f["headRevision"].as_str().map(str::to_owned),
        epoch: None,
    };
    fork.commit(json!([{ "op": "move", "from": "/leak.txt", "path": "/elsewhere.txt" }]))
        .await;
    src.commit(upsert("/leak.txt", "clean")).await;
    let report = src
        .redact(json!({ "paths": ["/leak.txt"], "reason": "leak", "dry_run": true }))
        .await
        .unwrap();
    assert_eq!(report["bodies"], json!([]), "{report}");
    let held = report["stillHeld"].as_array().unwrap();
    assert!(
        held.iter().any(|h| h["workspaceId"] == json!(fork.id)
            && h["path"] == "/elsewhere.txt"
            && h["bodyHash"] == json!(sha256_hex(secret.as_bytes()))
            && h["deleted"] == false),
        "{report}"
    );
    let applied = src
        .redact(json!({ "paths": ["/leak.txt"], "reason": "leak" }))
        .await
        .unwrap();
    assert_eq!(applied["stillHeld"], report["stillHeld"]);
}

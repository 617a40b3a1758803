//! Integrity: `supabash_verify` finds every kind of damage a superuser can do to the stored
//! tables (each corrupted on purpose here) and reports it precisely, while clean workspaces
//! (also forked, redacted and purged ones) verify ok, on the primary and on a hot standby;
//! `supabash_garbage` reports orphan bodies and idle workspaces and, with `apply`, deletes the
//! orphans only; both refuse wrong callers and malformed input. Then `supabash doctor`: every
//! check passes on a good install, and each one fails when its subject is broken.

use serde_json::{json, Value};
use supabash::capability::postgres::PostgresSigner;
use supabash_cli::connect::ConnectArgs;
use supabash_cli::doctor::{self, DoctorArgs, Report, Status};
use supabash_core::capability::{Operation, OperationSet};
use supabash_core::hash::sha256;
use supabash_tests::support::{admin, expect_err};
use supabash_tests::{Caller, Cluster, DbError, SqlRpc};
use tokio_postgres::Client;

struct Ws {
    rest: SqlRpc,
    owner: Caller,
    id: String,
    head: Option<String>,
}

impl Ws {
    async fn new() -> Ws {
        Ws::of(Caller::new_user()).await
    }

    async fn of(owner: Caller) -> Ws {
        let mut rest = SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await;
        let id = rest.create_workspace(&owner).await;
        Ws {
            rest,
            owner,
            id,
            head: None,
        }
    }

    async fn call(&mut self, rpc: &str, mut args: Value) -> Result<Value, DbError> {
        args["workspace_id"] = json!(self.id);
        self.rest.call(&self.owner, rpc, args).await
    }

    async fn commit(&mut self, changes: Value) -> String {
        let r = self
            .call(
                "supabash_commit",
                json!({ "changes": changes, "actor": "integrity-test", "base_revision": self.head }),
            )
            .await
            .unwrap();
        let revision = r["receipt"]["revision"].as_str().unwrap().to_owned();
        self.head = Some(revision.clone());
        revision
    }

    async fn verify(&mut self) -> Value {
        self.call("supabash_verify", json!({})).await.unwrap()
    }

    async fn store(&self, admin: &Client) -> String {
        admin
            .query_one(
                "SELECT store_id::text FROM supabash.workspaces WHERE id = $1::text::uuid",
                &[&self.id],
            )
            .await
            .unwrap()
            .get(0)
    }
}

fn upsert(path: &str, text: &str) -> Value {
    json!({ "op": "upsert", "path": path, "text": text })
}

/// A text zstd compresses, long enough that an edit of it is stored as a delta.
fn long_text(seed: u64) -> String {
    (0..200u64)
        .map(|l| {
            format!(
                "line {l}: {:016x}\n",
                (l + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            )
        })
        .collect()
}

fn hex_of(text: &str) -> String {
    hex::encode(sha256(text.as_bytes()))
}

fn problems(report: &Value) -> &Vec<Value> {
    report["problems"].as_array().unwrap()
}

fn kinds(report: &Value) -> Vec<&str> {
    problems(report)
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect()
}

/// The problems of `kind`.
fn of_kind<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    problems(report)
        .iter()
        .filter(|p| p["kind"] == kind)
        .collect()
}

#[track_caller]
fn assert_clean(report: &Value) {
    assert_eq!(report["ok"], json!(true), "{report:#}");
    assert_eq!(report["problemCount"], json!(0), "{report:#}");
}

async fn exec(admin: &Client, sql: &str, args: &[&(dyn tokio_postgres::types::ToSql + Sync)]) {
    admin.execute(sql, args).await.unwrap();
}

#[tokio::test]
async fn clean_workspaces_verify_ok_also_forked_redacted_and_purged() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    let empty = ws.verify().await;
    assert_clean(&empty);
    ws.commit(json!([
        upsert("/a.md", "hello"),
        upsert("/big.txt", &long_text(1)),
        { "op": "upsert", "path": "/notes.md", "text": "body", "metadata": { "title": "Notes" } },
    ]))
    .await;
    let mut edited = long_text(1);
    edited.push_str("one more line\n");
    ws.commit(json!([
        upsert("/big.txt", &edited),
        { "op": "move", "from": "/a.md", "path": "/b.md" },
    ]))
    .await;
    ws.commit(json!([{ "op": "delete", "path": "/notes.md" }, upsert("/a.md", "hello again")]))
        .await;
    let store = ws.store(&admin).await;
    let deltas: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::text::uuid AND base_hash IS NOT NULL",
            &[&store],
        )
        .await
        .unwrap()
        .get(0);
    assert!(deltas >= 1, "the edit is stored as a delta");
    let report = ws.verify().await;
    assert_clean(&report);
    assert_eq!(report["workspaceId"], json!(ws.id));
    assert_eq!(
        report["checked"],
        json!({ "entries": 6, "bodies": 5, "revisions": 3, "receipts": 3 })
    );

    // A fork reads its source's rows; its own commits copy what they touch.
    let forked = ws
        .call("supabash_fork", json!({ "actor": "integrity-test" }))
        .await
        .unwrap();
    let mut fork = Ws {
        rest: SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await,
        owner: ws.owner.clone(),
        id: forked["workspaceId"].as_str().unwrap().to_owned(),
        head: forked["headRevision"].as_str().map(str::to_owned),
    };
    assert_clean(&fork.verify().await);
    edited.push_str("a line of the fork\n");
    fork.commit(json!([upsert("/big.txt", &edited), { "op": "delete", "path": "/b.md" }]))
        .await;
    let report = fork.verify().await;
    assert_clean(&report);
    assert_eq!(report["checked"]["revisions"], json!(2));
    assert_clean(&ws.verify().await);

    // Redaction leaves tombstones and scrubbed receipt lines, which are not problems.
    ws.commit(json!([upsert("/.env", "API_KEY=sk-integrity-0123")]))
        .await;
    ws.commit(json!([{ "op": "delete", "path": "/.env" }]))
        .await;
    ws.call("supabash_redact", json!({ "paths": ["/.env"] }))
        .await
        .unwrap();
    let tombstones: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.entries WHERE workspace_id = $1::text::uuid AND redacted",
            &[&ws.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tombstones, 1);
    assert_clean(&ws.verify().await);
    assert_clean(&fork.verify().await);

    // Purge leaves parents that are no longer stored (but recorded as purged).
    ws.call("supabash_purge", json!({ "keep_revisions": 1 }))
        .await
        .unwrap();
    let report = ws.verify().await;
    assert_clean(&report);
    assert_eq!(
        report["checked"]["revisions"],
        json!(1),
        "only the head stays"
    );
    assert_clean(&fork.verify().await);
}

#[tokio::test]
async fn a_missing_body_is_reported_at_its_entry() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    ws.commit(json!([
        upsert("/a.txt", "alpha body"),
        upsert("/keep.txt", "kept")
    ]))
    .await;
    exec(
        &admin,
        "DELETE FROM supabash.bodies WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&ws.store(&admin).await, &sha256(b"alpha body").to_vec()],
    )
    .await;
    let report = ws.verify().await;
    assert_eq!(report["ok"], json!(false));
    assert_eq!(
        problems(&report),
        &vec![json!({
            "kind": "body_missing", "path": "/a.txt", "position": 1,
            "hash": hex_of("alpha body"),
            "detail": format!("the version of /a.txt from position 1 names body {} which is not stored", &hex_of("alpha body")[..12]),
        })]
    );
}

#[tokio::test]
async fn flipped_bytes_and_wrong_sizes_are_reported_at_their_body() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    let big = long_text(7);
    ws.commit(json!([
        upsert("/small.txt", "bravo"),
        upsert("/big.txt", &big),
        upsert("/sized.txt", "charlie")
    ]))
    .await;
    let store = ws.store(&admin).await;
    // A byte inside the zstd frame of the long text; byte 2 of the short one, its first byte
    // of content after the codec byte (plain).
    exec(
        &admin,
        "UPDATE supabash.bodies SET body = overlay(body PLACING '\\x58'::bytea FROM 40 FOR 1)
          WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&store, &sha256(big.as_bytes()).to_vec()],
    )
    .await;
    exec(
        &admin,
        "UPDATE supabash.bodies SET body = overlay(body PLACING '\\x58'::bytea FROM 2 FOR 1)
          WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&store, &sha256(b"bravo").to_vec()],
    )
    .await;
    exec(
        &admin,
        "UPDATE supabash.entries SET body_size = body_size + 1 WHERE workspace_id = $1::text::uuid AND path = '/sized.txt'",
        &[&ws.id],
    )
    .await;
    let report = ws.verify().await;
    let small = of_kind(&report, "body_hash_mismatch");
    assert!(
        small
            .iter()
            .any(|p| p["path"] == "/small.txt" && p["hash"] == hex_of("bravo")),
        "{report:#}"
    );
    let damaged: Vec<&Value> = problems(&report)
        .iter()
        .filter(|p| p["hash"] == hex_of(&big))
        .collect();
    assert_eq!(damaged.len(), 1, "{report:#}");
    assert!(
        ["body_unreadable", "body_hash_mismatch"].contains(&damaged[0]["kind"].as_str().unwrap()),
        "{report:#}"
    );
    assert_eq!(damaged[0]["path"], "/big.txt");
    let sized = of_kind(&report, "entry_size_mismatch");
    assert_eq!(sized.len(), 1, "{report:#}");
    assert_eq!(sized[0]["path"], "/sized.txt");
    assert_eq!(sized[0]["position"], 1);
    // The receipt says 7 bytes, the entry now 8.
    assert!(of_kind(&report, "receipt_mismatch")
        .iter()
        .any(|p| p["path"] == "/sized.txt"));
    assert_eq!(
        report["problemCount"],
        json!(problems(&report).len()),
        "every problem listed"
    );
}

/// A workspace whose `/doc.txt` was edited once (the edit stored as a delta on the first
/// version) beside `/other.txt`; answers the hashes of both versions and of the other file.
async fn with_delta() -> (Ws, Client, String, [Vec<u8>; 3]) {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    let (v1, other) = (long_text(11), long_text(999));
    ws.commit(json!([
        upsert("/doc.txt", &v1),
        upsert("/other.txt", &other)
    ]))
    .await;
    let v2 = format!("{v1}an edit\n");
    ws.commit(json!([upsert("/doc.txt", &v2)])).await;
    let store = ws.store(&admin).await;
    let hashes = [v1, v2, other].map(|t| sha256(t.as_bytes()).to_vec());
    let base: Option<Vec<u8>> = admin
        .query_one(
            "SELECT base_hash FROM supabash.bodies WHERE workspace_id = $1::text::uuid AND hash = $2",
            &[&store, &hashes[1]],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(base.as_ref(), Some(&hashes[0]), "the edit is a delta");
    (ws, admin, store, hashes)
}

#[tokio::test]
async fn a_delta_on_the_wrong_base_is_reported() {
    let (mut ws, admin, store, [_, v2, other]) = with_delta().await;
    exec(
        &admin,
        "UPDATE supabash.bodies SET base_hash = $3 WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&store, &v2, &other],
    )
    .await;
    let report = ws.verify().await;
    assert_eq!(report["problemCount"], json!(1), "{report:#}");
    let p = &problems(&report)[0];
    assert!(
        ["body_unreadable", "body_hash_mismatch"].contains(&p["kind"].as_str().unwrap()),
        "{report:#}"
    );
    assert_eq!(
        (&p["hash"], &p["path"]),
        (&json!(hex::encode(&v2)), &json!("/doc.txt"))
    );
}

#[tokio::test]
async fn a_missing_delta_base_is_reported_for_the_delta_and_the_entry() {
    let (mut ws, admin, store, [v1, v2, _]) = with_delta().await;
    exec(
        &admin,
        "DELETE FROM supabash.bodies WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&store, &v1],
    )
    .await;
    let report = ws.verify().await;
    let mut got: Vec<(String, String)> = problems(&report)
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_owned(),
                p["hash"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("body_missing".to_owned(), hex::encode(&v1)),
            ("delta_base_missing".to_owned(), hex::encode(&v2)),
        ],
        "{report:#}"
    );
    assert_eq!(of_kind(&report, "body_missing")[0]["position"], json!(1));
}

#[tokio::test]
async fn a_damaged_base_breaks_its_delta() {
    let (mut ws, admin, store, [v1, v2, _]) = with_delta().await;
    exec(
        &admin,
        "UPDATE supabash.bodies SET body = overlay(body PLACING '\\x58'::bytea FROM 30 FOR 1)
          WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&store, &v1],
    )
    .await;
    let report = ws.verify().await;
    let broken = of_kind(&report, "delta_base_broken");
    assert_eq!(broken.len(), 1, "{report:#}");
    assert_eq!(broken[0]["hash"], json!(hex::encode(&v2)));
    assert!(problems(&report)
        .iter()
        .any(|p| p["hash"] == json!(hex::encode(&v1))
            && ["body_unreadable", "body_hash_mismatch"].contains(&p["kind"].as_str().unwrap())));
    assert_eq!(report["problemCount"], json!(2), "{report:#}");
}

#[tokio::test]
async fn a_broken_parent_link_is_reported_at_its_revision() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    ws.commit(json!([upsert("/a.txt", "1")])).await;
    ws.commit(json!([upsert("/a.txt", "2")])).await;
    let r3 = ws.commit(json!([upsert("/a.txt", "3")])).await;
    exec(
        &admin,
        "UPDATE supabash.revisions SET parent_revision = gen_random_uuid()
          WHERE workspace_id = $1::text::uuid AND revision_id = $2::text::uuid",
        &[&ws.id, &r3],
    )
    .await;
    let report = ws.verify().await;
    assert_eq!(kinds(&report), ["revision_parent"], "{report:#}");
    let p = &problems(&report)[0];
    assert_eq!((&p["revision"], &p["position"]), (&json!(r3), &json!(3)));
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains("neither stored nor purged"));
}

#[tokio::test]
async fn a_moved_position_is_reported() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    ws.commit(json!([upsert("/a.txt", "1")])).await;
    let r2 = ws.commit(json!([upsert("/a.txt", "2")])).await;
    let r3 = ws.commit(json!([upsert("/a.txt", "3")])).await;
    exec(
        &admin,
        "UPDATE supabash.revisions SET position = 7 WHERE workspace_id = $1::text::uuid AND revision_id = $2::text::uuid",
        &[&ws.id, &r2],
    )
    .await;
    let report = ws.verify().await;
    let positions = of_kind(&report, "revision_position");
    assert!(
        positions
            .iter()
            .any(|p| p["revision"] == json!(r2) && p["position"] == json!(7)),
        "{report:#}"
    );
    assert!(
        positions
            .iter()
            .any(|p| p["revision"] == json!(r3) && p["position"] == json!(3)),
        "its child's parent is now after it: {report:#}"
    );
    let head = of_kind(&report, "head_mismatch");
    assert_eq!(head.len(), 1, "{report:#}");
    assert_eq!(head[0]["revision"], json!(r3));
}

#[tokio::test]
async fn an_altered_receipt_is_reported_at_its_line() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    let r1 = ws.commit(json!([upsert("/a.txt", "charlie")])).await;
    let r2 = ws.commit(json!([upsert("/a.txt", "delta")])).await;
    // The first byte of the after hash of r2's line.
    exec(
        &admin,
        "UPDATE supabash.revisions SET lines = overlay(lines PLACING '\\x00'::bytea FROM position($3 IN lines) FOR 1)
          WHERE workspace_id = $1::text::uuid AND revision_id = $2::text::uuid",
        &[&ws.id, &r2, &sha256(b"delta").to_vec()],
    )
    .await;
    let report = ws.verify().await;
    assert_eq!(kinds(&report), ["receipt_mismatch"], "{report:#}");
    let p = &problems(&report)[0];
    let mut altered = sha256(b"delta").to_vec();
    altered[0] = 0;
    assert_eq!(
        (&p["path"], &p["revision"], &p["position"], &p["hash"]),
        (
            &json!("/a.txt"),
            &json!(r2),
            &json!(2),
            &json!(hex::encode(altered))
        )
    );
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains("after this revision"));

    // Lines that do not decode, and lines that leave out a change.
    exec(
        &admin,
        "UPDATE supabash.revisions SET lines = '\\x07'::bytea WHERE workspace_id = $1::text::uuid AND revision_id = $2::text::uuid",
        &[&ws.id, &r1],
    )
    .await;
    let no_lines = supabash_core::receipt_lines::encode(&[]).unwrap();
    exec(
        &admin,
        "UPDATE supabash.revisions SET lines = $3 WHERE workspace_id = $1::text::uuid AND revision_id = $2::text::uuid",
        &[&ws.id, &r2, &no_lines],
    )
    .await;
    let report = ws.verify().await;
    assert_eq!(
        kinds(&report),
        ["receipt_unreadable", "receipt_mismatch"],
        "{report:#}"
    );
    assert_eq!(problems(&report)[0]["revision"], json!(r1));
    let unnamed = &problems(&report)[1];
    assert_eq!(
        (&unnamed["path"], &unnamed["revision"]),
        (&json!("/a.txt"), &json!(r2))
    );
    assert!(unnamed["detail"]
        .as_str()
        .unwrap()
        .contains("does not name the path"));
    assert_eq!(report["checked"]["receipts"], json!(1));
}

#[tokio::test]
async fn every_problem_is_reported_not_only_the_first() {
    let admin = admin(Cluster::shared()).await;
    let mut ws = Ws::new().await;
    ws.commit(json!([
        upsert("/x.txt", "xray"),
        upsert("/y.txt", "yankee")
    ]))
    .await;
    let store = ws.store(&admin).await;
    exec(
        &admin,
        "DELETE FROM supabash.bodies WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&store, &sha256(b"xray").to_vec()],
    )
    .await;
    exec(
        &admin,
        "UPDATE supabash.bodies SET body = '\\x0059'::bytea WHERE workspace_id = $1::text::uuid AND hash = $2",
        &[&store, &sha256(b"yankee").to_vec()],
    )
    .await;
    exec(
        &admin,
        "UPDATE supabash.entries SET valid_until = 5 WHERE workspace_id = $1::text::uuid AND path = '/y.txt'",
        &[&ws.id],
    )
    .await;
    let report = ws.verify().await;
    let mut got = kinds(&report);
    got.sort();
    assert_eq!(
        got,
        ["body_missing", "body_size_mismatch", "entry_interval"],
        "{report:#}"
    );
}

const ISS: &str = "https://jobs.integrity.example";
const AUD: &str = "supabash";
const ORIGIN: &str = "https://project.integrity.example";

async fn grant(rest: &mut SqlRpc, kid: &str, ws: &str, ops: &[Operation]) -> String {
    let secret = supabash_tests::capability::register(Cluster::shared(), kid, ISS, AUD, ORIGIN);
    let signer = PostgresSigner::new(kid, &secret, ISS, AUD, ORIGIN).unwrap();
    let ops = OperationSet::new(ops.iter().copied()).unwrap();
    let token = signer.mint("integrity-job", ws, &ops, 300, None).unwrap();
    let answer = rest
        .call(
            &Caller::Service,
            "supabash_exchange_capability",
            json!({ "capability": token }),
        )
        .await
        .unwrap();
    answer["delegatedGrant"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn verify_and_garbage_refuse_wrong_callers_and_malformed_input() {
    let mut ws = Ws::new().await;
    ws.commit(json!([upsert("/a.txt", "mine")])).await;
    let args = json!({ "workspace_id": ws.id });
    let denied = Some("SUPABASH_WORKSPACE_DENIED");
    let stranger = Caller::new_user();
    let r = ws
        .rest
        .call(&stranger, "supabash_verify", args.clone())
        .await;
    expect_err(r, "42501", denied);
    let r = ws
        .rest
        .call(&Caller::Anon, "supabash_verify", args.clone())
        .await;
    expect_err(r, "42501", None);
    let r = ws
        .rest
        .call(&Caller::Service, "supabash_verify", args.clone())
        .await;
    expect_err(r, "42501", denied);
    let forged = json!({ "workspace_id": ws.id, "delegated_grant": "sbg_forged-grant-of-nobody" });
    let r = ws
        .rest
        .call(&Caller::Service, "supabash_verify", forged)
        .await;
    expect_err(r, "42501", denied);
    // A user session never presents a grant.
    let r = ws
        .rest
        .call(
            &ws.owner,
            "supabash_verify",
            json!({ "workspace_id": ws.id, "delegated_grant": "sbg_x" }),
        )
        .await;
    expect_err(r, "42501", denied);

    // A grant with `history` verifies; one without does not.
    let id = ws.id.clone();
    let history = grant(
        &mut ws.rest,
        "integrity-history",
        &id,
        &[Operation::History],
    )
    .await;
    let with = json!({ "workspace_id": id, "delegated_grant": history });
    let report = ws
        .rest
        .call(&Caller::Service, "supabash_verify", with)
        .await
        .unwrap();
    assert_clean(&report);
    let read = grant(&mut ws.rest, "integrity-read", &id, &[Operation::Read]).await;
    let without = json!({ "workspace_id": id, "delegated_grant": read });
    let r = ws
        .rest
        .call(&Caller::Service, "supabash_verify", without)
        .await;
    expect_err(r, "42501", denied);

    let invalid = Some("SUPABASH_INVALID_ARGUMENT");
    let r = ws
        .rest
        .call(
            &ws.owner,
            "supabash_verify",
            json!({ "workspace_id": "not-a-uuid" }),
        )
        .await;
    expect_err(r, "22023", invalid);

    for bad in [-1, 36_501] {
        let r = ws
            .rest
            .call(&ws.owner, "supabash_garbage", json!({ "idle_days": bad }))
            .await;
        expect_err(r, "22023", invalid);
    }
    let r = ws
        .rest
        .call(&Caller::Anon, "supabash_garbage", json!({}))
        .await;
    expect_err(r, "42501", None);
    let r = ws
        .rest
        .call(&Caller::Service, "supabash_garbage", json!({}))
        .await;
    expect_err(r, "42501", denied);
}

#[tokio::test]
async fn verify_runs_on_a_hot_standby_and_garbage_does_not() {
    let primary = Cluster::shared();
    let mut ws = Ws::new().await;
    ws.commit(json!([upsert("/a.txt", &long_text(3))])).await;
    let replica = primary.start_replica();
    primary.wait_replayed(&replica);
    let mut rest = SqlRpc::connect(&replica.dsn("authenticator")).await;
    let report = rest
        .call(
            &ws.owner,
            "supabash_verify",
            json!({ "workspace_id": ws.id }),
        )
        .await;
    let garbage = rest.call(&ws.owner, "supabash_garbage", json!({})).await;
    replica.stop();
    assert_clean(&report.unwrap());
    expect_err(garbage, "25006", Some("SUPABASH_READ_ONLY"));
}

#[tokio::test]
async fn garbage_reports_orphans_and_idle_workspaces_and_applies_to_orphans_only() {
    let admin = admin(Cluster::shared()).await;
    let owner = Caller::new_user();
    let mut busy = Ws::of(owner.clone()).await;
    busy.commit(json!([upsert("/a.txt", "in use")])).await;
    let mut idle = Ws::of(owner.clone()).await;
    idle.commit(json!([upsert("/b.txt", "resting")])).await;
    let mut other = Ws::new().await;
    other
        .commit(json!([upsert("/c.txt", "someone else's")]))
        .await;
    let orphan = b"nobody refers to these bytes";
    let store = busy.store(&admin).await;
    for s in [&store, &other.store(&admin).await] {
        exec(
            &admin,
            "INSERT INTO supabash.bodies (workspace_id, hash, size, body, owner_id)
             SELECT $1::text::uuid, $2, $3, '\\x00'::bytea || $4, owner_id
               FROM supabash.workspaces WHERE id = $1::text::uuid",
            &[
                s,
                &sha256(orphan).to_vec(),
                &(orphan.len() as i64),
                &orphan.to_vec(),
            ],
        )
        .await;
        exec(
            &admin,
            "UPDATE supabash.usage SET body_bytes = body_bytes + $2 WHERE workspace_id = $1::text::uuid",
            &[s, &(orphan.len() as i64)],
        )
        .await;
    }
    exec(
        &admin,
        "UPDATE supabash.workspaces SET updated_at = now() - interval '40 days' WHERE id = $1::text::uuid",
        &[&idle.id],
    )
    .await;
    let usage = |store: String| {
        let admin = &admin;
        async move {
            admin
                .query_one(
                    "SELECT body_bytes FROM supabash.usage WHERE workspace_id = $1::text::uuid",
                    &[&store],
                )
                .await
                .unwrap()
                .get::<_, i64>(0)
        }
    };
    let before = usage(store.clone()).await;

    let dry = busy
        .rest
        .call(&owner, "supabash_garbage", json!({}))
        .await
        .unwrap();
    assert_eq!(dry["dryRun"], json!(true));
    assert_eq!(dry["idleDays"], json!(30));
    assert_eq!(
        (&dry["orphanBodies"], &dry["orphanBytes"]),
        (&json!(1), &json!(orphan.len()))
    );
    assert_eq!(
        dry["orphans"],
        json!([{ "storeId": store, "hash": hex::encode(sha256(orphan)), "size": orphan.len() }])
    );
    assert_eq!(
        (&dry["deletedBodies"], &dry["deletedBytes"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(dry["idleCount"], json!(1));
    let listed = &dry["idleWorkspaces"][0];
    assert_eq!(listed["workspaceId"], json!(idle.id));
    assert_eq!(listed["headPosition"], json!(1));
    assert!(listed["idleDays"].as_i64().unwrap() >= 39, "{dry:#}");
    let stricter = busy
        .rest
        .call(&owner, "supabash_garbage", json!({ "idle_days": 50 }))
        .await
        .unwrap();
    assert_eq!(stricter["idleCount"], json!(0));
    assert_eq!(
        usage(store.clone()).await,
        before,
        "a dry run changes nothing"
    );

    let applied = busy
        .rest
        .call(&owner, "supabash_garbage", json!({ "apply": true }))
        .await
        .unwrap();
    assert_eq!(applied["dryRun"], json!(false));
    assert_eq!(
        (&applied["deletedBodies"], &applied["deletedBytes"]),
        (&json!(1), &json!(orphan.len()))
    );
    assert_eq!(usage(store.clone()).await, before - orphan.len() as i64);
    let again = busy
        .rest
        .call(&owner, "supabash_garbage", json!({ "apply": true }))
        .await
        .unwrap();
    assert_eq!(again["orphanBodies"], json!(0));
    assert_eq!(
        again["idleCount"],
        json!(1),
        "idle workspaces are only reported"
    );
    assert_clean(&busy.verify().await);
    assert_clean(&idle.verify().await);
    // The other owner's orphan is untouched.
    let theirs = other
        .rest
        .call(&other.owner, "supabash_garbage", json!({}))
        .await
        .unwrap();
    assert_eq!(theirs["orphanBodies"], json!(1));
}

// --- supabash doctor ---------------------------------------------------------------------

/// A libpq connection string for `user` on database `db` of the shared cluster.
/// A fresh database `name` with the Supabase roles and, unless `version` is `None`, the
/// extension at that version (`Some("")`: the current one).
fn database(name: &str, version: Option<&str>) {
    let c = Cluster::shared();
    c.fresh_database(name);
    match version {
        Some("") => {
            c.psql(name, "CREATE EXTENSION supabash");
        }
        Some(v) => {
            c.psql(name, &format!("CREATE EXTENSION supabash VERSION '{v}'"));
        }
        None => {}
    }
}

/// Doctor arguments for a user over a direct connection, with catalog checks on `db`.
fn doctor_args(db: Option<String>) -> DoctorArgs {
    DoctorArgs {
        connect: ConnectArgs {
            dsn: Some(Cluster::shared().dsn("authenticator")),
            sub: Some(uuid::Uuid::new_v4().to_string()),
            url: None,
            token: None,
            apikey: None,
            dsn_file: None,
            token_file: None,
            apikey_file: None,
            profile: None,
            config: None,
        },
        db,
        storage_url: None,
        bucket: "workspaces".into(),
        max_skew_seconds: doctor::DEFAULT_MAX_SKEW_SECONDS,
        clock_offset_seconds: 0,
        json: false,
    }
}

#[track_caller]
fn status(report: &Report, name: &str) -> Status {
    report
        .check(name)
        .unwrap_or_else(|| panic!("no check {name}: {}", report.render()))
        .status
}

fn detail<'a>(report: &'a Report, name: &str) -> &'a str {
    &report.check(name).unwrap().detail
}

#[tokio::test]
async fn doctor_passes_on_a_good_install() {
    let report = doctor::run(&doctor_args(Some(
        Cluster::shared().dsn_on("postgres", "app"),
    )))
    .await;
    assert!(report.ok(), "{}", report.render());
    for name in [
        "connectivity",
        "extension",
        "upgrade",
        "privileges",
        "row-level security",
        "clock",
    ] {
        assert_eq!(status(&report, name), Status::Ok, "{}", report.render());
    }
    assert_eq!(status(&report, "storage"), Status::Skipped);
    assert!(detail(&report, "storage").contains("no Storage URL"));
    // The test cluster has Supabase's roles: the project owner bypasses row-level security,
    // which the trust check names as a warning (not a failure); no key file is configured.
    assert_eq!(
        status(&report, "trust"),
        Status::Warn,
        "{}",
        report.render()
    );
    assert!(detail(&report, "trust").contains("supabase_project_owner"));
    assert!(!detail(&report, "trust").contains("HS256 key file"));
    assert_eq!(report.render().lines().count(), 8, "one line per check");
    assert_eq!(report.to_json()["ok"], json!(true));

    // Without a superuser the privilege checks say what they need; the rest still run.
    let as_authenticator = doctor::run(&doctor_args(None)).await;
    assert_eq!(status(&as_authenticator, "privileges"), Status::Skipped);
    assert_eq!(status(&as_authenticator, "trust"), Status::Skipped);
    assert!(detail(&as_authenticator, "privileges").contains("needs a superuser"));
    assert_eq!(status(&as_authenticator, "extension"), Status::Ok);
    assert!(as_authenticator.ok(), "{}", as_authenticator.render());
}

#[tokio::test]
async fn doctor_over_postgrest_and_unreachable() {
    let user = uuid::Uuid::new_v4().to_string();
    let mut args = doctor_args(None);
    args.connect = ConnectArgs {
        dsn: None,
        sub: None,
        url: Some(supabash_tests::client::postrust_url().to_owned()),
        token: Some(supabash_tests::client::sign(
            &supabash_tests::client::user_claims(&user),
        )),
        apikey: Some("test-publishable-key".into()),
        dsn_file: None,
        token_file: None,
        apikey_file: None,
        profile: None,
        config: None,
    };
    let report = doctor::run(&args).await;
    assert!(report.ok(), "{}", report.render());
    assert_eq!(status(&report, "connectivity"), Status::Ok);
    assert_eq!(status(&report, "extension"), Status::Ok);
    assert_eq!(status(&report, "clock"), Status::Skipped);

    // A structured refusal is an answer: the gateway is reachable.
    let refusing = supabash_tests::client::json_test_server(|_| {
        (
            "401 Unauthorized",
            r#"{"code":"PGRST301","message":"JWT invalid"}"#.to_owned(),
        )
    })
    .await;
    args.connect.url = Some(refusing);
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "connectivity"),
        Status::Ok,
        "{}",
        report.render()
    );
    assert!(detail(&report, "connectivity").contains("HTTP 401"));
    assert_eq!(status(&report, "extension"), Status::Skipped);

    // Nothing listens: a transport failure.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    args.connect.url = Some(format!("http://127.0.0.1:{port}"));
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "connectivity"),
        Status::Fail,
        "{}",
        report.render()
    );
    assert!(!report.ok());
}

#[tokio::test]
async fn doctor_fails_without_the_extension_and_with_an_upgrade_pending() {
    database("doctor_bare", None);
    let report = doctor::run(&doctor_args(Some(
        Cluster::shared().dsn_on("postgres", "doctor_bare"),
    )))
    .await;
    assert_eq!(
        status(&report, "extension"),
        Status::Fail,
        "{}",
        report.render()
    );
    assert!(detail(&report, "extension").contains("not installed"));
    assert_eq!(status(&report, "upgrade"), Status::Skipped);
    assert!(!report.ok());

    database("doctor_old", Some("0.4.0"));
    let report = doctor::run(&doctor_args(Some(
        Cluster::shared().dsn_on("postgres", "doctor_old"),
    )))
    .await;
    assert_eq!(
        status(&report, "extension"),
        Status::Fail,
        "{}",
        report.render()
    );
    assert!(detail(&report, "extension").contains("installed 0.4.0"));
    assert_eq!(status(&report, "upgrade"), Status::Fail);
    assert!(detail(&report, "upgrade").contains("ALTER EXTENSION supabash UPDATE"));

    Cluster::shared().psql("doctor_old", "ALTER EXTENSION supabash UPDATE");
    let report = doctor::run(&doctor_args(Some(
        Cluster::shared().dsn_on("postgres", "doctor_old"),
    )))
    .await;
    assert_eq!(
        status(&report, "extension"),
        Status::Ok,
        "{}",
        report.render()
    );
    assert_eq!(status(&report, "upgrade"), Status::Ok);
    assert_eq!(
        status(&report, "privileges"),
        Status::Ok,
        "an upgrade sets the same privileges"
    );
}

#[tokio::test]
async fn doctor_fails_on_a_wrong_privilege_and_on_row_security_off() {
    database("doctor_privs", Some(""));
    let c = Cluster::shared();
    let args = doctor_args(Some(Cluster::shared().dsn_on("postgres", "doctor_privs")));
    assert!(doctor::run(&args).await.ok());
    c.psql(
        "doctor_privs",
        "GRANT SELECT ON supabash.entries TO authenticated",
    );
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "privileges"),
        Status::Fail,
        "{}",
        report.render()
    );
    assert!(detail(&report, "privileges").contains("supabash.entries"));
    assert!(!report.ok());
    // Nothing of the drift check stays: the grant is still there, as it was.
    let still = c.psql(
        "doctor_privs",
        "SELECT has_table_privilege('authenticated', 'supabash.entries', 'SELECT')",
    );
    assert_eq!(still.trim(), "t");

    c.psql(
        "doctor_privs",
        "REVOKE SELECT ON supabash.entries FROM authenticated",
    );
    c.psql(
        "doctor_privs",
        "ALTER TABLE supabash.bodies NO FORCE ROW LEVEL SECURITY",
    );
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "row-level security"),
        Status::Fail,
        "{}",
        report.render()
    );
    assert!(detail(&report, "row-level security").contains("supabash.bodies"));
}

#[tokio::test]
async fn doctor_checks_the_storage_policies_when_storage_is_configured() {
    database("doctor_storage", Some(""));
    let c = Cluster::shared();
    c.psql("doctor_storage", include_str!("../../sql/storage.sql"));
    let mut args = doctor_args(Some(Cluster::shared().dsn_on("postgres", "doctor_storage")));
    args.storage_url = Some("http://127.0.0.1:9/storage/v1".into());
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "storage"),
        Status::Ok,
        "{}",
        report.render()
    );
    c.psql(
        "doctor_storage",
        "DROP POLICY supabash_workspaces_delete ON storage.objects",
    );
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "storage"),
        Status::Fail,
        "{}",
        report.render()
    );
    assert!(detail(&report, "storage").contains("no DELETE policy"));
    assert!(!report.ok());
}

#[tokio::test]
async fn doctor_measures_clock_skew() {
    let mut args = doctor_args(Some(Cluster::shared().dsn_on("postgres", "app")));
    args.clock_offset_seconds = 3600;
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "clock"),
        Status::Fail,
        "{}",
        report.render()
    );
    assert!(
        detail(&report, "clock").contains("-3600"),
        "{}",
        report.render()
    );
    args.clock_offset_seconds = -45;
    let report = doctor::run(&args).await;
    assert_eq!(
        status(&report, "clock"),
        Status::Warn,
        "{}",
        report.render()
    );
    assert!(report.ok(), "a warning is not a failure");
}

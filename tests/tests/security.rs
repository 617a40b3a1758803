//! Nobody but the owner reads or writes a workspace, and bad input is refused without effect.
//!
//! Every RPC is tried as another user, anon, service_role and with forged claim/role pairs;
//! every malformed request is tried as the owner; every private table is tried directly by
//! each PostgREST role. After each attempt the owner's stored rows must be byte-identical and
//! the connection must still answer. The tests count attempts and denials and require that
//! every attempt was denied.

use serde_json::{json, Value};
use supabash_tests::support::{admin, fingerprint, marker};
use supabash_tests::{Caller, Cluster, SqlRpc};

/// Attempts and denials, for the final report of each test.
#[derive(Default)]
struct Tally {
    attempts: usize,
    denials: usize,
    leaks: Vec<String>,
}

impl Tally {
    fn finish(&self, what: &str) {
        eprintln!(
            "{what}: {} attempts, {} denied, {} leaks",
            self.attempts,
            self.denials,
            self.leaks.len()
        );
        assert!(
            self.leaks.is_empty(),
            "{what} leaked:\n{}",
            self.leaks.join("\n")
        );
        assert_eq!(self.attempts, self.denials, "{what}");
        assert!(self.attempts > 0);
    }
}

/// The owner's workspace with two revisions, a binary file and a checkpoint.
struct Fixture {
    owner: Caller,
    ws: String,
    r1: String,
    r2: String,
    cp: String,
}

async fn fixture(rest: &mut SqlRpc) -> Fixture {
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([
                {"op": "upsert", "path": "/secret.md", "text": "owner only"},
                {"op": "upsert", "path": "/key.bin", "base64": "AAEC/w=="},
                {"op": "upsert", "path": "/b.md", "text": "b"}]),
        )
        .await;
    let r2 = rest
        .commit_as(
            &owner,
            &ws,
            Some(&r1),
            json!([{"op": "upsert", "path": "/secret.md", "text": "owner only, v2"}]),
        )
        .await;
    let cp = rest
        .call(
            &owner,
            "supabash_checkpoint",
            json!({ "workspace_id": ws, "revision": r1 }),
        )
        .await
        .unwrap()["checkpointId"]
        .as_str()
        .unwrap()
        .to_owned();
    Fixture {
        owner,
        ws,
        r1,
        r2,
        cp,
    }
}

/// Every RPC with valid arguments for the fixture's workspace (each would succeed as owner).
fn every_rpc(f: &Fixture) -> Vec<(&'static str, Value)> {
    let ws = &f.ws;
    vec![
        ("supabash_create_workspace", json!({})),
        ("supabash_create_workspace", json!({ "files_only": true })),
        ("supabash_load_manifest", json!({ "workspace_id": ws })),
        (
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/secret.md" }),
        ),
        (
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/secret.md", "revision": f.r1 }),
        ),
        ("supabash_load_snapshot", json!({ "workspace_id": ws })),
        (
            "supabash_load_documents",
            json!({ "workspace_id": ws, "paths": ["/secret.md"], "revision": f.r1 }),
        ),
        (
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/" }),
        ),
        (
            "supabash_load_revision",
            json!({ "workspace_id": ws, "revision": f.r1 }),
        ),
        ("supabash_history", json!({ "workspace_id": ws })),
        (
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/secret.md", "follow_moves": true }),
        ),
        (
            "supabash_grep",
            json!({ "workspace_id": ws, "pattern": "owner" }),
        ),
        (
            "supabash_manifest_changes",
            json!({ "workspace_id": ws, "since": f.r1 }),
        ),
        (
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "intruder", "base_revision": f.r2,
                    "changes": [{"op": "upsert", "path": "/secret.md", "text": "pwned"}] }),
        ),
        (
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "intruder", "base_revision": f.r2,
                    "changes": [{"op": "delete", "path": "/secret.md"}] }),
        ),
        (
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"revision": f.r1}, "to_ref": {"head": true} }),
        ),
        (
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"head": true}, "to_ref": {"staged": true},
                    "staged": [] }),
        ),
        (
            "supabash_checkpoint",
            json!({ "workspace_id": ws, "label": "intruder" }),
        ),
        ("supabash_checkpoints", json!({ "workspace_id": ws })),
        (
            "supabash_delete_checkpoint",
            json!({ "workspace_id": ws, "checkpoint_id": f.cp }),
        ),
        (
            "supabash_purge",
            json!({ "workspace_id": ws, "keep_revisions": 0 }),
        ),
        (
            "supabash_add_note",
            json!({ "workspace_id": ws, "revision": f.r1, "key": "verdict",
                    "value": {"ok": false}, "actor": "intruder" }),
        ),
        (
            "supabash_notes",
            json!({ "workspace_id": ws, "revision": f.r1 }),
        ),
    ]
}

/// Callers that must not reach the owner's workspace, with the SQLSTATE each must get.
fn intruders(owner_sub: &str) -> Vec<(&'static str, Caller)> {
    vec![
        ("other user", Caller::new_user()),
        ("anon", Caller::Anon),
        ("service_role", Caller::Service),
        (
            "owner claims without SET ROLE",
            Caller::Raw {
                role: None,
                claims: json!({ "role": "authenticated", "sub": owner_sub }),
            },
        ),
        (
            "owner claims under service_role",
            Caller::Raw {
                role: Some("service_role".into()),
                claims: json!({ "role": "authenticated", "sub": owner_sub }),
            },
        ),
        (
            "owner sub with service_role claim",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: json!({ "role": "service_role", "sub": owner_sub }),
            },
        ),
        (
            "owner claims under anon",
            Caller::Raw {
                role: Some("anon".into()),
                claims: json!({ "role": "anon", "sub": owner_sub }),
            },
        ),
        (
            "authenticated without sub",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: json!({ "role": "authenticated" }),
            },
        ),
        (
            "authenticated with a non-uuid sub",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: json!({ "role": "authenticated", "sub": "' OR true --" }),
            },
        ),
        (
            "no claims at all",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: Value::Null,
            },
        ),
    ]
}

#[tokio::test]
async fn only_the_owner_reaches_a_workspace() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let f = fixture(&mut rest).await;
    let owner_sub = match &f.owner {
        Caller::User(s) => s.clone(),
        _ => unreachable!(),
    };
    let before = fingerprint(&admin, &f.ws).await;
    let mut tally = Tally::default();
    for (who, caller) in intruders(&owner_sub) {
        for (rpc, args) in every_rpc(&f) {
            // A signed-in user may create a workspace of their own: that is not access.
            if rpc == "supabash_create_workspace" && who == "other user" {
                continue;
            }
            tally.attempts += 1;
            let r = rest.call(&caller, rpc, args.clone()).await;
            let what = format!("{who} → {rpc} {args}");
            match r {
                Ok(v) => tally.leaks.push(format!("{what}: answered {v}")),
                Err(e) if e.code == "42501" => tally.denials += 1,
                Err(e) => tally.leaks.push(format!("{what}: {e} (expected 42501)")),
            }
            assert!(rest.alive().await, "{what}: connection lost");
            assert_eq!(
                fingerprint(&admin, &f.ws).await,
                before,
                "{what} changed the owner's data"
            );
        }
    }
    tally.finish("RPCs by intruders");

    // The owner still reads everything, unchanged.
    let doc = rest
        .call(
            &f.owner,
            "supabash_load_document",
            json!({ "workspace_id": f.ws, "path": "/secret.md" }),
        )
        .await
        .unwrap();
    assert_eq!(doc["text"], json!("owner only, v2"));
    assert_eq!(doc["revision"], json!(f.r2));
}

/// One malformed request and the SQLSTATE it must get.
struct Bad {
    rpc: &'static str,
    args: Value,
    code: &'static str,
}

fn bad(rpc: &'static str, args: Value, code: &'static str) -> Bad {
    Bad { rpc, args, code }
}

fn malformed(f: &Fixture) -> Vec<Bad> {
    let ws = f.ws.as_str();
    let up = |path: &str| {
        json!({ "workspace_id": ws, "actor": "owner", "base_revision": f.r2,
                "changes": [{"op": "upsert", "path": path, "text": "x"}] })
    };
    let commit = |changes: Value| json!({ "workspace_id": ws, "actor": "owner", "base_revision": f.r2, "changes": changes });
    let mut v = vec![];
    // Bad UUIDs wherever one is expected.
    for id in [
        "",
        "not-a-uuid",
        "1234",
        "00000000-0000-0000-0000-00000000000g",
        "' OR 1=1 --",
    ] {
        v.push(bad(
            "supabash_load_manifest",
            json!({ "workspace_id": id }),
            "22023",
        ));
        v.push(bad(
            "supabash_load_revision",
            json!({ "workspace_id": ws, "revision": id }),
            "22023",
        ));
        v.push(bad(
            "supabash_history",
            json!({ "workspace_id": ws, "cursor": id }),
            "22023",
        ));
        v.push(bad(
            "supabash_delete_checkpoint",
            json!({ "workspace_id": ws, "checkpoint_id": id }),
            "22023",
        ));
        v.push(bad(
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "owner", "base_revision": id, "changes": [] }),
            "22023",
        ));
    }
    // Invalid paths, in commits and reads.
    let long_segment = format!("/{}", "s".repeat(256));
    let long_path = "/p".repeat(2100);
    for p in [
        "",
        "a.md",
        "/",
        "/a/",
        "/a//b",
        "/a/./b",
        "/a/../b",
        "/..",
        "../x",
        "/a/%2e%2e/b",
        "/%2E%2E/x",
        "/a%2fb",
        "/a%5Cb",
        "/a\\b",
        "/a\u{0}b",
        "/a\nb",
        "/a\tb",
        "/a\u{7f}b",
        "/a\u{1b}[31m",
        "/tmp/x",
        "/tmp",
        "/dev/null",
        "/proc/self/environ",
        "/bin/sh",
        "/usr/lib/x",
        "/.supabash",
        "/.supabash/state",
        "/a/.supabash-lock",
        long_segment.as_str(),
        long_path.as_str(),
    ] {
        // A NUL cannot enter a `text` argument: Postgres refuses it (22P05) before supabash
        // runs. Inside `changes` (a `json` argument) it reaches supabash: INVALID_PATH.
        let text_code = if p.contains('\0') { "22P05" } else { "22023" };
        v.push(bad("supabash_commit", up(p), "22023"));
        v.push(bad(
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": p }),
            text_code,
        ));
        v.push(bad(
            "supabash_load_documents",
            json!({ "workspace_id": ws, "paths": ["/secret.md", p] }),
            text_code,
        ));
        v.push(bad(
            "supabash_commit",
            commit(json!([{"op": "move", "from": "/b.md", "path": p}])),
            "22023",
        ));
    }
    // Wrong JSON shapes.
    for changes in [
        json!(null),
        json!("upsert"),
        json!(42),
        json!({"op": "upsert", "path": "/a", "text": "x"}),
        json!([null]),
        json!([[]]),
        json!([{"op": "upsert"}]),
        json!([{"path": "/a", "text": "x"}]),
        json!([{"op": "upsert", "path": "/a"}]),
        json!([{"op": "upsert", "path": 7, "text": "x"}]),
        json!([{"op": "upsert", "path": "/a", "text": ["x"]}]),
        json!([{"op": "upsert", "path": "/a", "text": "x", "base64": "eA=="}]),
        json!([{"op": "upsert", "path": "/a", "base64": "not base64!"}]),
        json!([{"op": "upsert", "path": "/a", "text": "x", "hash": "00"}]),
        json!([{"op": "upsert", "path": "/a", "text": "x", "metadata": "title"}]),
        json!([{"op": "upsert", "path": "/a", "text": "x", "metadata": {"a b": 1}}]),
        json!([{"op": "upsert", "path": "/a", "text": "x", "metadata": {"k": {"n": 1}}}]),
        json!([{"op": "upsert", "path": "/a", "base64": "/w==", "metadata": {"k": 1}}]),
        json!([{"op": "delete", "path": "/b.md", "text": "x"}]),
        json!([{"op": "move", "path": "/c.md"}]),
        json!([{"op": "move", "from": 5, "path": "/c.md"}]),
        json!([{"op": "chmod", "path": "/b.md"}]),
        // A delete of a missing path, a move of a missing path, a move onto itself, and a
        // valid change followed by a bad one (the valid one must not land either).
        json!([{"op": "delete", "path": "/missing.md"}]),
        json!([{"op": "move", "from": "/missing.md", "path": "/c.md"}]),
        json!([{"op": "move", "from": "/b.md", "path": "/b.md"}]),
        json!([{"op": "upsert", "path": "/ok.md", "text": "fine"}, {"op": "delete", "path": "/missing.md"}]),
        json!([{"op": "delete", "path": "/b.md"}, {"op": "delete", "path": "/b.md"}]),
    ] {
        v.push(bad("supabash_commit", commit(changes), "22023"));
    }
    for (name, value) in [
        ("metadata", json!([1])),
        ("metadata", json!("x")),
        ("actor", json!("")),
        ("transaction_id", json!("tx-1")),
        (
            "source_revision",
            json!("00000000-0000-4000-8000-000000000000"),
        ),
    ] {
        let mut a = commit(json!([]));
        a[name] = value;
        v.push(bad("supabash_commit", a, "22023"));
    }
    // Oversized values.
    let mut a = commit(json!([]));
    a["actor"] = json!("a".repeat(1025));
    v.push(bad("supabash_commit", a, "54000"));
    let mut a = commit(json!([]));
    a["cause"] = json!("c".repeat(4097));
    v.push(bad("supabash_commit", a, "54000"));
    let mut a = commit(json!([]));
    a["idempotency_key"] = json!("k".repeat(1025));
    v.push(bad("supabash_commit", a, "54000"));
    let mut a = commit(json!([]));
    a["metadata"] = json!({ "big": "m".repeat(17 * 1024) });
    v.push(bad("supabash_commit", a, "54000"));
    let many: Vec<Value> = (0..100_001)
        .map(|i| json!({"op": "delete", "path": format!("/f{i}")}))
        .collect();
    v.push(bad("supabash_commit", commit(Value::Array(many)), "54000"));
    // More paths than one batched read takes.
    let paths: Vec<String> = (0..=supabash_core::rpc::requests::MAX_DOCUMENTS_PER_CALL)
        .map(|i| format!("/f{i}"))
        .collect();
    v.push(bad(
        "supabash_load_documents",
        json!({ "workspace_id": ws, "paths": paths }),
        "54000",
    ));
    v.push(bad(
        "supabash_commit",
        commit(json!([{"op": "upsert", "path": "/huge.bin", "text": "h".repeat(64 * 1024 * 1024 + 1)}])),
        "54000",
    ));
    v.push(bad(
        "supabash_history",
        json!({ "workspace_id": ws, "page_size": 100_000 }),
        "54000",
    ));
    v.push(bad(
        "supabash_history",
        json!({ "workspace_id": ws, "page_size": -5 }),
        "54000",
    ));
    v.push(bad(
        "supabash_path_history",
        json!({ "workspace_id": ws, "path": "/secret.md", "page_size": 100_000 }),
        "54000",
    ));
    for cursor in ["", "x", "-1", "99999999999999999999"] {
        v.push(bad(
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/secret.md", "cursor": cursor }),
            "22023",
        ));
    }
    // Reads as of a time: malformed, in the future, before the first revision.
    for at in [
        "2026-02-30T00:00:00Z",
        "2026-12-03T12:00:00",
        "2999-01-01T00:00:00Z",
        "2001-01-01T00:00:00Z",
    ] {
        v.push(bad(
            "supabash_load_manifest",
            json!({ "workspace_id": ws, "revision": at }),
            "22023",
        ));
    }
    for (args, code) in [
        (json!({ "pattern": "(" }), "22023"),
        (json!({ "pattern": "x".repeat(4097) }), "54000"),
        (json!({ "pattern": "x", "paths": ["[z-a]"] }), "22023"),
        (json!({ "pattern": "x", "cursor": "1:relative" }), "22023"),
    ] {
        let mut args = args;
        args["workspace_id"] = json!(ws);
        v.push(bad("supabash_grep", args, code));
    }
    for (since, revision) in [
        ("not-a-uuid", None),
        (f.r1.as_str(), Some("2999-01-01T00:00:00Z")),
    ] {
        let mut args = json!({ "workspace_id": ws, "since": since });
        if let Some(r) = revision {
            args["revision"] = json!(r);
        }
        v.push(bad("supabash_manifest_changes", args, "22023"));
    }
    for path in ["secret.md", "/a/../b", "/never.md"] {
        v.push(bad(
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": path }),
            "22023",
        ));
    }
    v.push(bad(
        "supabash_checkpoint",
        json!({ "workspace_id": ws, "label": "l".repeat(4097) }),
        "54000",
    ));
    // Notes: a missing or malformed revision, an empty or oversized key or value, null, and
    // the delegated actor prefix.
    let note = |args: Value| {
        let mut base = json!({ "workspace_id": ws, "revision": f.r1, "key": "score",
                               "value": {"score": 1}, "actor": "host" });
        for (k, v) in args.as_object().unwrap() {
            base[k] = v.clone();
        }
        base
    };
    for (args, code) in [
        (json!({ "revision": "not-a-uuid" }), "22023"),
        (
            json!({ "revision": uuid::Uuid::new_v4().to_string() }),
            "22023",
        ),
        (json!({ "key": "" }), "22023"),
        (json!({ "key": "k".repeat(1025) }), "54000"),
        (json!({ "value": null }), "22023"),
        (json!({ "value": "v".repeat(5000) }), "54000"),
        (json!({ "actor": "delegated:someone" }), "22023"),
        (json!({ "actor": null }), "22023"),
    ] {
        v.push(bad("supabash_add_note", note(args), code));
    }
    // Who may watch: a workspace id that is not one is an error, not a quiet false.
    for id in ["", "not-a-uuid", "supabash:x"] {
        v.push(bad(
            "supabash_may_watch",
            json!({ "workspace_id": id }),
            "22023",
        ));
    }
    for revision in ["", "x", "2999-01-01T00:00:00Z"] {
        v.push(bad(
            "supabash_notes",
            json!({ "workspace_id": ws, "revision": revision }),
            "22023",
        ));
    }
    v.push(bad(
        "supabash_diff",
        json!({ "workspace_id": ws, "from_ref": {"head": true}, "to_ref": {"head": true},
                "preview_bytes": 1_000_000 }),
        "54000",
    ));
    // Diff references of the wrong shape.
    for r in [
        json!(null),
        json!("head"),
        json!([]),
        json!({}),
        json!({"head": false}),
        json!({"head": "yes"}),
        json!({"revision": "x"}),
        json!({"revision": 5}),
        json!({"checkpoint": "00000000-0000-4000-8000-000000000000"}),
        json!({"revision": f.r1, "head": true}),
        json!({"tree": "/"}),
    ] {
        v.push(bad(
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": r, "to_ref": {"head": true} }),
            "22023",
        ));
    }
    for staged in [
        json!({"path": "/a"}),
        json!([{"path": "/a"}]),
        json!([{"path": "../a", "text": "x"}]),
        json!([{"path": "/a", "text": "x"}, {"path": "/a", "text": "y"}]),
    ] {
        v.push(bad(
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"head": true}, "to_ref": {"staged": true},
                    "staged": staged }),
            "22023",
        ));
    }
    v.push(bad(
        "supabash_diff",
        json!({ "workspace_id": ws, "from_ref": {"head": true}, "to_ref": {"head": true},
                "paths": ["/ok", "/a/../b"] }),
        "22023",
    ));
    // Purge and checkpoint arguments.
    v.push(bad(
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": -1 }),
        "22023",
    ));
    v.push(bad(
        "supabash_purge",
        json!({ "workspace_id": ws, "floor_revision": "00000000-0000-4000-8000-000000000000" }),
        "22023",
    ));
    // Issue 23: the new lease token argument and the audit record's shape.
    v.push(bad(
        "supabash_acquire_lease",
        json!({ "workspace_id": ws, "holder": "h", "ttl_seconds": 30, "token": "not-a-uuid" }),
        "22023",
    ));
    v.push(bad(
        "supabash_record_discarded",
        json!({ "workspace_id": ws, "actor": "a",
                "actions": [{"recordId": "00000000-0000-4000-8000-0000000000a1",
                             "sessionId": "00000000-0000-4000-8000-0000000000a2",
                             "sequence": 0, "atMs": 0, "kind": "bash", "tool": "bash",
                             "outcome": {"status": "maybe"}, "durationMs": 0}] }),
        "22023",
    ));
    v.push(bad(
        "supabash_checkpoint",
        json!({ "workspace_id": ws, "revision": "00000000-0000-4000-8000-000000000000" }),
        "22023",
    ));
    v.push(bad(
        "supabash_checkpoint",
        json!({ "workspace_id": ws, "idempotency_key": "" }),
        "22023",
    ));
    v
}

#[tokio::test]
async fn malformed_input_is_refused_and_changes_nothing() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let f = fixture(&mut rest).await;
    let before = fingerprint(&admin, &f.ws).await;
    let mut tally = Tally::default();
    for b in malformed(&f) {
        tally.attempts += 1;
        let mut shown = b.args.to_string();
        if shown.len() > 160 {
            shown = format!(
                "{}… ({} bytes)",
                &shown[..shown.floor_char_boundary(160)],
                shown.len()
            );
        }
        let what = format!("{} {shown}", b.rpc);
        match rest.call(&f.owner, b.rpc, b.args).await {
            Ok(v) => tally.leaks.push(format!("{what}: accepted, answered {v}")),
            Err(e) => {
                // Every refusal by supabash carries a marker; 22P05 comes from text input.
                if e.code == b.code && (marker(&e).is_some() || e.code == "22P05") {
                    tally.denials += 1;
                } else {
                    tally
                        .leaks
                        .push(format!("{what}: {e} (expected {} with a marker)", b.code));
                }
            }
        }
        assert!(rest.alive().await, "{what}: connection lost");
        assert_eq!(
            fingerprint(&admin, &f.ws).await,
            before,
            "{what} changed the owner's data"
        );
    }
    tally.finish("malformed requests");
}

/// Private tables, sequences and functions by each PostgREST role, directly.
#[tokio::test]
async fn private_objects_are_unreachable_directly() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let f = fixture(&mut rest).await;
    let before = fingerprint(&admin, &f.ws).await;
    let tables: Vec<String> = admin
        .query(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'supabash'::regnamespace
              AND c.relkind IN ('r', 'p', 'v', 'm') ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for t in [
        "workspaces",
        "revisions",
        "entries",
        "bodies",
        "checkpoints",
    ] {
        assert!(
            tables.iter().any(|x| x == t),
            "table {t} missing: {tables:?}"
        );
    }
    let owner_claims = match &f.owner {
        Caller::User(sub) => json!({ "role": "authenticated", "sub": sub }),
        _ => unreachable!(),
    };
    let roles: Vec<(&str, Caller)> = vec![
        ("anon", Caller::Anon),
        (
            "authenticated (as the owner)",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: owner_claims.clone(),
            },
        ),
        ("service_role", Caller::Service),
        (
            "authenticator",
            Caller::Raw {
                role: None,
                claims: owner_claims.clone(),
            },
        ),
    ];
    let ws = &f.ws;
    let mut tally = Tally::default();
    for (who, caller) in &roles {
        let mut statements: Vec<String> = Vec::new();
        for t in &tables {
            statements.push(format!("SELECT * FROM supabash.{t}"));
            statements.push(format!("SELECT count(*) FROM supabash.{t}"));
            statements.push(format!("INSERT INTO supabash.{t} DEFAULT VALUES"));
            statements.push(format!(
                "UPDATE supabash.{t} SET workspace_id = workspace_id WHERE true"
            ));
            statements.push(format!("DELETE FROM supabash.{t}"));
            statements.push(format!("TRUNCATE supabash.{t}"));
        }
        statements.push(format!(
            "UPDATE supabash.workspaces SET owner_id = gen_random_uuid() WHERE id = '{ws}'"
        ));
        statements.push("SELECT nextval('supabash.positions')".into());
        statements.push(format!(
            "SELECT supabash._call('load_manifest', jsonb_build_object('workspaceId', '{ws}'))"
        ));
        statements.push(format!(
            "SELECT supabash._write('purge', jsonb_build_object('workspaceId', '{ws}', 'keepRevisions', 0))"
        ));
        statements.push("SELECT supabash.request_owner()".into());
        statements.push("CREATE TABLE supabash.planted (x int)".into());
        statements.push(
            "CREATE FUNCTION supabash.planted() RETURNS int LANGUAGE sql AS 'SELECT 1'".into(),
        );
        for sql in statements {
            // Some statements are invalid for some tables (e.g. no workspace_id column in
            // workspaces): the privilege check comes first, so they must still be 42501.
            tally.attempts += 1;
            let what = format!("{who}: {sql}");
            match rest.sql_as(caller, &sql).await {
                Ok(n) => tally.leaks.push(format!("{what}: allowed ({n} rows)")),
                Err(e) if e.code == "42501" => tally.denials += 1,
                Err(e) => tally.leaks.push(format!("{what}: {e} (expected 42501)")),
            }
            assert!(rest.alive().await, "{what}: connection lost");
        }
    }
    assert_eq!(fingerprint(&admin, &f.ws).await, before);
    tally.finish("direct access to private objects");
}

/// The privilege report: any privilege a PostgREST role holds on an object of schema supabash
/// (schema, tables, sequences, functions, columns; the capability secrets, verifiers, nonces
/// and grants among them), EXECUTE on the verifier registration and revocation functions, or
/// anon EXECUTE on a public.supabash_* function. It must be empty.
#[tokio::test]
async fn privilege_report_is_empty() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let rows = admin
        .query(
            "SELECT r.rolname, o.what
               FROM pg_roles r
               CROSS JOIN LATERAL (
                 SELECT 'schema supabash' AS what
                  WHERE has_schema_privilege(r.oid, 'supabash', 'USAGE') OR has_schema_privilege(r.oid, 'supabash', 'CREATE')
                 UNION ALL
                 SELECT c.oid::regclass::text FROM pg_class c
                  WHERE c.relnamespace = 'supabash'::regnamespace
                    AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(r.oid, c.oid, 'USAGE,SELECT,UPDATE')
                             ELSE has_table_privilege(r.oid, c.oid, 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER') END
                 UNION ALL
                 SELECT c.oid::regclass::text || '.' || a.attname FROM pg_class c
                   JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                  WHERE c.relnamespace = 'supabash'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
                    AND has_column_privilege(r.oid, c.oid, a.attnum, 'SELECT,INSERT,UPDATE,REFERENCES')
                 UNION ALL
                 SELECT p.oid::regprocedure::text FROM pg_proc p
                  WHERE p.pronamespace = 'supabash'::regnamespace AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                 UNION ALL
                 SELECT p.oid::regprocedure::text FROM pg_proc p
                  WHERE p.pronamespace = 'public'::regnamespace
                    AND p.proname IN ('supabash_register_capability_verifier', 'supabash_revoke_capability_verifier')
                    AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                 UNION ALL
                 SELECT p.oid::regprocedure::text FROM pg_proc p
                  WHERE r.rolname = 'anon' AND p.pronamespace = 'public'::regnamespace
                    AND p.proname LIKE 'supabash\\_%' AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
               ) o
              WHERE r.rolname IN ('anon', 'authenticated', 'service_role', 'authenticator')",
            &[],
        )
        .await
        .unwrap();
    let report: Vec<String> = rows
        .iter()
        .map(|r| format!("{} on {}", r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect();
    assert!(report.is_empty(), "privilege leaks: {report:#?}");

    // The report is not vacuous: the RPCs exist, the owner role does hold privileges, and
    // authenticated may execute the public RPCs.
    let owner_privs: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'supabash'::regnamespace
              AND has_table_privilege('supabash_owner', c.oid, 'SELECT')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(owner_privs >= 5, "{owner_privs}");
    let rpcs: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
              AND p.proname LIKE 'supabash\\_%' AND has_function_privilege('authenticated', p.oid, 'EXECUTE')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(rpcs >= 12, "{rpcs}");
    // The capability functions exist: registration and revocation for the database owner
    // only, the exchange and the Storage nonce store for service_role.
    let capability_fns: Vec<(String, bool)> = admin
        .query(
            "SELECT p.proname::text, has_function_privilege('service_role', p.oid, 'EXECUTE')
               FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
                AND p.proname IN ('supabash_register_capability_verifier',
                                  'supabash_revoke_capability_verifier', 'supabash_exchange_capability',
                                  'supabash_spend_storage_nonce')
              ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        capability_fns,
        vec![
            ("supabash_exchange_capability".to_owned(), true),
            ("supabash_register_capability_verifier".to_owned(), false),
            ("supabash_revoke_capability_verifier".to_owned(), false),
            ("supabash_spend_storage_nonce".to_owned(), true),
        ]
    );
    // The Storage nonce store is service_role's alone (tests/tests/storage_nonces.rs tries it).
    let spenders: Vec<String> = admin
        .query(
            "SELECT r.rolname::text FROM pg_roles r
              WHERE has_function_privilege(r.oid, 'public.supabash_spend_storage_nonce(text, bigint)', 'EXECUTE')
                AND r.rolname IN ('anon', 'authenticated', 'service_role', 'authenticator')
              ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(spenders, ["service_role"]);
    // Every RPC runs as the NOLOGIN, NOBYPASSRLS owner (the verifier registration functions
    // as the NOLOGIN keeper of capability secrets), and every private table forces RLS.
    let bad_rpcs: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_proc p JOIN pg_roles o ON o.oid = p.proowner
              WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\\_%'
                AND (NOT p.prosecdef OR o.rolcanlogin OR o.rolbypassrls OR o.rolsuper
                     OR o.rolname <> CASE WHEN p.proname ~ '^supabash_(register|revoke)_capability_verifier$'
                                          THEN 'supabash_keeper' ELSE 'supabash_owner' END)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(bad_rpcs, 0);
    let unforced: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'supabash'::regnamespace
              AND c.relkind = 'r' AND NOT (c.relrowsecurity AND c.relforcerowsecurity)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(unforced, 0);
}

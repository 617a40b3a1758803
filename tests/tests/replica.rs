//! Reads on a hot standby, as a Supabase read replica serves them: every read RPC answers on a
//! real streaming replica exactly as on the primary, writes there fail with a clear read-only
//! error, and on the primary no read RPC asks for a transaction id.

use serde_json::{json, Value};
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, SqlRpc};

/// Every read RPC with arguments that exercise it on the workspace `fill` made.
fn reads(ws: &str, first: &str, head: &str, checkpoint: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("supabash_load_manifest", json!({ "workspace_id": ws })),
        (
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/notes/a.md" }),
        ),
        (
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/notes/a.md", "revision": first }),
        ),
        ("supabash_load_snapshot", json!({ "workspace_id": ws })),
        (
            "supabash_load_snapshot",
            json!({ "workspace_id": ws, "revision": first }),
        ),
        (
            "supabash_load_documents",
            json!({ "workspace_id": ws, "paths": ["/notes/a.md", "/missing.md"], "revision": first }),
        ),
        (
            "supabash_load_revision",
            json!({ "workspace_id": ws, "revision": head }),
        ),
        ("supabash_history", json!({ "workspace_id": ws })),
        (
            "supabash_history",
            json!({ "workspace_id": ws, "page_size": 1, "cursor": first }),
        ),
        (
            "supabash_grep",
            json!({ "workspace_id": ws, "pattern": "one|two", "revision": first, "context_lines": 1 }),
        ),
        (
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/data/moved", "follow_moves": true }),
        ),
        (
            "supabash_manifest_changes",
            json!({ "workspace_id": ws, "since": first }),
        ),
        (
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"revision": first}, "to_ref": {"head": true} }),
        ),
        (
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"checkpoint": checkpoint}, "to_ref": {"staged": true},
                                   "staged": [{"path": "/notes/a.md", "text": "staged"}] }),
        ),
        ("supabash_checkpoints", json!({ "workspace_id": ws })),
        (
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/notes", "totals": true }),
        ),
        (
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/", "revision": first, "page_size": 1 }),
        ),
        (
            "supabash_notes",
            json!({ "workspace_id": ws, "revision": head }),
        ),
        (
            "supabash_notes",
            json!({ "workspace_id": ws, "revision": head, "key": "score" }),
        ),
        ("supabash_may_watch", json!({ "workspace_id": ws })),
    ]
}

/// A workspace with two revisions (a text file, a binary file, a move) and a checkpoint.
async fn fill(rest: &mut SqlRpc, owner: &Caller) -> (String, String, String, String) {
    let ws = rest.create_workspace(owner).await;
    let first = rest
        .commit_as(
            owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/notes/a.md", "text": "one\n"},
                   {"op": "upsert", "path": "/data/blob", "base64": "AAEC/w=="}]),
        )
        .await;
    let head = rest
        .commit_as(
            owner,
            &ws,
            Some(&first),
            json!([{"op": "upsert", "path": "/notes/a.md", "text": "two\n"},
                   {"op": "move", "from": "/data/blob", "path": "/data/moved"}]),
        )
        .await;
    let cp = rest
        .call(
            owner,
            "supabash_checkpoint",
            json!({ "workspace_id": ws, "label": "c" }),
        )
        .await
        .unwrap();
    let cp = cp["checkpointId"].as_str().unwrap().to_owned();
    // A note on the head: history and supabash_notes show it on the replica too.
    rest.call(
        owner,
        "supabash_add_note",
        json!({ "workspace_id": ws, "revision": head, "key": "score", "value": {"score": 0.9},
                "actor": "eval" }),
    )
    .await
    .unwrap();
    (ws, first, head, cp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_rpc_answers_on_a_streaming_replica_and_writes_are_refused() {
    let primary = Cluster::start();
    let replica = primary.start_replica();
    let owner = Caller::new_user();
    let mut on_primary = SqlRpc::connect(&primary.dsn("authenticator")).await;
    let (ws, first, head, cp) = fill(&mut on_primary, &owner).await;
    // A fork of the first revision reads through its source on the replica too.
    let fork = on_primary
        .call(
            &owner,
            "supabash_fork",
            json!({ "workspace_id": ws, "revision": first, "actor": "a" }),
        )
        .await
        .unwrap()["workspaceId"]
        .clone();
    primary.wait_replayed(&replica);

    let mut on_replica = SqlRpc::connect(&replica.dsn("authenticator")).await;
    // A read as of a time (the first revision's) resolves the time on the replica too.
    let first_at = on_primary
        .call(&owner, "supabash_history", json!({ "workspace_id": ws }))
        .await
        .unwrap()["records"][0]["committedAt"]
        .clone();
    let more = [
        (
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/notes/a.md", "revision": first_at }),
        ),
        (
            "supabash_load_manifest",
            json!({ "workspace_id": ws, "revision": first }),
        ),
        ("supabash_load_snapshot", json!({ "workspace_id": fork })),
        (
            "supabash_load_document",
            json!({ "workspace_id": fork, "path": "/data/blob" }),
        ),
        ("supabash_list_workspaces", json!({})),
    ];
    for (rpc, args) in reads(&ws, &first, &head, &cp).into_iter().chain(more) {
        let want = on_primary.call(&owner, rpc, args.clone()).await.unwrap();
        let got = on_replica
            .call(&owner, rpc, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{rpc} {args} on the replica: {e}"));
        assert_eq!(got, want, "{rpc} {args}");
    }
    // Another user, anon and service_role without a grant read nothing there either.
    for caller in [Caller::new_user(), Caller::Anon, Caller::Service] {
        let r = on_replica
            .call(
                &caller,
                "supabash_load_snapshot",
                json!({ "workspace_id": ws }),
            )
            .await;
        assert!(
            r.is_err(),
            "{caller:?} read the workspace on the replica: {r:?}"
        );
    }

    // Writes on the replica: a clear read-only error, nothing else.
    let writes = [
        ("supabash_create_workspace", json!({})),
        ("supabash_create_workspace", json!({ "files_only": true })),
        (
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "a", "base_revision": head,
                                     "changes": [{"op": "upsert", "path": "/x.md", "text": "x"}] }),
        ),
        ("supabash_checkpoint", json!({ "workspace_id": ws })),
        (
            "supabash_delete_checkpoint",
            json!({ "workspace_id": ws, "checkpoint_id": cp }),
        ),
        (
            "supabash_purge",
            json!({ "workspace_id": ws, "keep_revisions": 1 }),
        ),
        (
            "supabash_exchange_capability",
            json!({ "capability": "x.y.z" }),
        ),
        ("supabash_fork", json!({ "workspace_id": ws, "actor": "a" })),
        ("supabash_delete_workspace", json!({ "workspace_id": ws })),
        (
            "supabash_add_note",
            json!({ "workspace_id": ws, "revision": head, "key": "k", "value": 1, "actor": "a" }),
        ),
    ];
    for (rpc, args) in writes {
        let caller = if rpc == "supabash_exchange_capability" {
            Caller::Service
        } else {
            owner.clone()
        };
        let e = expect_err(
            on_replica.call(&caller, rpc, args).await,
            "25006",
            Some("SUPABASH_READ_ONLY"),
        );
        assert!(e.message.contains("primary"), "{rpc}: {e}");
    }
    // The primary still works, and the replica follows it.
    let next = on_primary
        .commit_as(
            &owner,
            &ws,
            Some(&head),
            json!([{"op": "delete", "path": "/notes/a.md"}]),
        )
        .await;
    primary.wait_replayed(&replica);
    let m = on_replica
        .call(
            &owner,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap();
    assert_eq!(m["revision"], json!(next));
    assert_eq!(m["files"].as_array().unwrap().len(), 1);
    replica.stop();
    primary.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_rpcs_take_no_transaction_id() {
    let cluster = Cluster::shared();
    let owner = Caller::new_user();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let (ws, first, head, cp) = fill(&mut rest, &owner).await;
    let Caller::User(sub) = &owner else {
        unreachable!()
    };
    let claims = json!({ "role": "authenticated", "sub": sub }).to_string();
    for (rpc, args) in reads(&ws, &first, &head, &cp) {
        let tx = rest.client.transaction().await.unwrap();
        tx.execute(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[&claims],
        )
        .await
        .unwrap();
        tx.batch_execute("SET LOCAL ROLE authenticated")
            .await
            .unwrap();
        let mut typed = Vec::new();
        for (k, v) in args.as_object().unwrap() {
            let ty: String = tx
                .query_one(
                    "SELECT format_type(t, NULL) FROM pg_proc p,
                            unnest(p.proargnames, p.proargtypes::oid[]) AS a(n, t)
                      WHERE p.proname = $1 AND a.n = $2",
                    &[&rpc, k],
                )
                .await
                .unwrap()
                .get(0);
            typed.push((ty, v.clone()));
        }
        // Named arguments, as PostgREST calls them, sent as text and cast to each parameter type.
        let casts: Vec<String> = typed
            .iter()
            .enumerate()
            .zip(args.as_object().unwrap().keys())
            .map(|((i, (ty, _)), k)| format!("{k} => ${}::text::{ty}", i + 1))
            .collect();
        let sql = format!("SELECT public.{rpc}({})::text", casts.join(", "));
        let texts: Vec<String> = typed
            .iter()
            .map(|(ty, v)| match v {
                Value::String(s) => s.clone(),
                // A `text[]` parameter: its array literal.
                Value::Array(items) if ty == "text[]" => format!(
                    "{{{}}}",
                    items
                        .iter()
                        .map(|i| format!("\"{}\"", i.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                other => other.to_string(),
            })
            .collect();
        let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = texts
            .iter()
            .map(|t| t as &(dyn tokio_postgres::types::ToSql + Sync))
            .collect();
        tx.query_one(&sql, &params)
            .await
            .unwrap_or_else(|e| panic!("{rpc} {args}: {e}"));
        let xid: Option<String> = tx
            .query_one("SELECT pg_current_xact_id_if_assigned()::text", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(xid, None, "{rpc} {args} assigned a transaction id");
        tx.rollback().await.unwrap();
    }
}

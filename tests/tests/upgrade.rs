//! Upgrades. For every older version of the extension (each frozen install script
//! `extension/sql/supabash--X.sql`, found at run time, so a newly frozen version is picked up
//! without editing this file), in a fresh database:
//!
//! 1. `CREATE EXTENSION supabash VERSION 'X'`, and data written through the RPCs as PostgREST's
//!    roles would: two users' workspaces, commits with text, binary content, metadata and a
//!    move, a checkpoint, a purge, a registered capability verifier and an exchanged grant. A
//!    version older than the support window (`SERVED_SCHEMAS`: the library serves the current
//!    schema and the one before it) must first refuse every RPC with
//!    `SUPABASH_SCHEMA_OUTDATED`; it is then updated to the oldest served version, and the data
//!    is written there;
//! 2. the answer of every read RPC on that data;
//! 3. `ALTER EXTENSION supabash UPDATE` (the chain of `supabash--A--B.sql` scripts);
//! 4. then: (a) the catalog equals a fresh `CREATE EXTENSION supabash` in another database
//!    (functions, tables, columns, indexes, constraints, policies, RLS flags, sequences,
//!    owners, privileges, function bodies; a readable diff otherwise); (b) every read RPC
//!    answers exactly as before; (c) new commits, a new workspace and a new capability
//!    exchange work; (d) no PostgREST role gained a privilege: the install check passes, and
//!    the privileges can be broken and re-asserted.
//!
//! Needs the current extension installed (`just install`), which also installs the frozen
//! scripts of older versions.

use serde_json::{json, Value};
use std::path::Path;
use supabash::capability::PostgresSigner;
use supabash_core::capability::{Operation, OperationSet};
use supabash_core::SERVED_SCHEMAS;
use supabash_tests::cluster::repo_root;
use supabash_tests::{Caller, Cluster, SqlRpc};
use tokio_postgres::{Client, NoTls};

/// The version this build installs (the workspace version, which the extension's is too).
const CURRENT: &str = env!("CARGO_PKG_VERSION");

const ISS: &str = "https://issuer.test";
const AUD: &str = "supabash";
const ORIGIN: &str = "https://project.test";

fn parse_version(v: &str) -> Vec<u64> {
    v.split('.')
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("version {v:?} is not dotted numbers"))
        })
        .collect()
}

/// The versions that have a frozen install script in `dir` (`supabash--X.sql`, not the
/// upgrade scripts `supabash--A--B.sql`), oldest first.
fn frozen_versions(dir: &Path) -> Vec<String> {
    let mut versions: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().ok()?;
            let version = name.strip_prefix("supabash--")?.strip_suffix(".sql")?;
            (!version.contains("--")).then(|| version.to_owned())
        })
        .collect();
    versions.sort_by_key(|v| parse_version(v));
    versions
}

async fn connect(cluster: &Cluster, user: &str, db: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(&cluster.dsn_on(user, db), NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect as {user} to {db}: {e}"));
    tokio::spawn(conn);
    client
}

async fn one_text(db: &Client, sql: &str) -> String {
    db.query_one(sql, &[]).await.unwrap().get(0)
}

/// The catalog as sorted, self-describing lines: everything the extension made and everything
/// about it a caller or an attacker could notice.
async fn catalog(db: &Client) -> Vec<String> {
    // Privileges compare as sets (the order of aclitems means nothing); NULL is the default.
    const QUERIES: &[&str] = &[
        "SELECT format('extension %s | version %s | owner %s | schema %s | relocatable %s | config %s',
                e.extname, e.extversion, pg_get_userbyid(e.extowner), e.extnamespace::regnamespace,
                e.extrelocatable, e.extconfig::regclass[])
           FROM pg_extension e WHERE e.extname = 'supabash'",
        "SELECT 'member ' || pg_describe_object(d.classid, d.objid, d.objsubid)
           FROM pg_depend d
          WHERE d.deptype = 'e' AND d.refclassid = 'pg_extension'::regclass
            AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'supabash')",
        "SELECT format('schema %s | owner %s | acl %s', n.nspname, pg_get_userbyid(n.nspowner),
                (SELECT string_agg(a::text, ' ' ORDER BY a::text)
                   FROM unnest(coalesce(n.nspacl, acldefault('n', n.nspowner))) a))
           FROM pg_namespace n WHERE n.nspname = 'supabash'",
        // Functions: the private schema's, and the extension's in public.
        "WITH f AS (
           SELECT p.*, p.pronamespace::regnamespace::text || '.' || p.proname || '('
                       || pg_get_function_identity_arguments(p.oid) || ')' AS sig
             FROM pg_proc p
            WHERE p.pronamespace = 'supabash'::regnamespace
               OR (p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\\_%'))
         SELECT format('function %s | args %s | returns %s | kind %s | language %s | volatility %s
                        | security definer %s | strict %s | leakproof %s | parallel %s | cost %s
                        | rows %s | config %s | owner %s | acl %s | probin %s',
                f.sig, pg_get_function_arguments(f.oid), pg_get_function_result(f.oid), f.prokind,
                l.lanname, f.provolatile, f.prosecdef, f.proisstrict, f.proleakproof,
                f.proparallel, f.procost, f.prorows, f.proconfig, pg_get_userbyid(f.proowner),
                (SELECT string_agg(a::text, ' ' ORDER BY a::text)
                   FROM unnest(coalesce(f.proacl, acldefault('f', f.proowner))) a),
                f.probin)
           FROM f JOIN pg_language l ON l.oid = f.prolang
         UNION ALL
         SELECT format('function %s | body %s | %s', f.sig, lpad(b.n::text, 4, '0'), b.line)
           FROM f, regexp_split_to_table(f.prosrc, '\\n') WITH ORDINALITY AS b(line, n)",
        // Relations: tables, indexes, sequences, views.
        "SELECT format('relation %s | kind %s | owner %s | persistence %s | rls %s | forced rls %s
                        | options %s | acl %s',
                c.oid::regclass, c.relkind, pg_get_userbyid(c.relowner), c.relpersistence,
                c.relrowsecurity, c.relforcerowsecurity, c.reloptions,
                (SELECT string_agg(a::text, ' ' ORDER BY a::text)
                   FROM unnest(coalesce(c.relacl, acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::\"char\",
                                                             c.relowner))) a))
           FROM pg_class c WHERE c.relnamespace = 'supabash'::regnamespace",
        // Columns, in their order (dropped columns do not count).
        "SELECT format('column %s.%s | position %s | type %s | not null %s | default %s | identity %s
                        | generated %s | storage %s | collation %s | acl %s',
                c.oid::regclass, a.attname,
                row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum),
                format_type(a.atttypid, a.atttypmod), a.attnotnull,
                pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated, a.attstorage,
                co.collname, a.attacl)
           FROM pg_class c
           JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
           LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
           LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
          WHERE c.relnamespace = 'supabash'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')",
        "SELECT format('index %s | %s', i.indexrelid::regclass, pg_get_indexdef(i.indexrelid))
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE c.relnamespace = 'supabash'::regnamespace",
        "SELECT format('constraint %s on %s | type %s | %s', co.conname, co.conrelid::regclass,
                co.contype, pg_get_constraintdef(co.oid))
           FROM pg_constraint co WHERE co.connamespace = 'supabash'::regnamespace",
        "SELECT format('policy %s on %s | command %s | permissive %s | roles %s | using %s | check %s',
                p.polname, p.polrelid::regclass, p.polcmd, p.polpermissive,
                (SELECT string_agg(CASE r WHEN 0 THEN 'public' ELSE pg_get_userbyid(r)::text END, ',' ORDER BY 1)
                   FROM unnest(p.polroles) r),
                pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
           FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
          WHERE c.relnamespace = 'supabash'::regnamespace",
        "SELECT format('sequence %s | type %s | start %s | increment %s | min %s | max %s | cache %s | cycle %s',
                s.seqrelid::regclass, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement,
                s.seqmin, s.seqmax, s.seqcache, s.seqcycle)
           FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
          WHERE c.relnamespace = 'supabash'::regnamespace",
        "SELECT format('trigger %s on %s | %s', t.tgname, t.tgrelid::regclass, pg_get_triggerdef(t.oid))
           FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
          WHERE c.relnamespace = 'supabash'::regnamespace AND NOT t.tgisinternal",
        "SELECT format('type %s | kind %s | owner %s', t.oid::regtype, t.typtype, pg_get_userbyid(t.typowner))
           FROM pg_type t WHERE t.typnamespace = 'supabash'::regnamespace
            AND t.typrelid = 0 AND t.typcategory <> 'A'",
        // What pg_dump takes as the extension's own privileges (it dumps only changes to them).
        "SELECT format('initial privileges of %s | %s | %s', pg_describe_object(i.classoid, i.objoid, i.objsubid),
                i.privtype, (SELECT string_agg(a::text, ' ' ORDER BY a::text) FROM unnest(i.initprivs) a))
           FROM pg_init_privs i
           JOIN pg_depend e ON e.classid = i.classoid AND e.objid = i.objoid AND e.deptype = 'e'
          WHERE e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'supabash')",
        "SELECT format('comment on %s | %s', pg_describe_object(d.classoid, d.objoid, d.objsubid), d.description)
           FROM pg_description d
           JOIN pg_depend e ON e.classid = d.classoid AND e.objid = d.objoid AND e.deptype = 'e'
          WHERE e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'supabash')",
    ];
    let mut lines = Vec::new();
    for sql in QUERIES {
        let rows = db
            .query(*sql, &[])
            .await
            .unwrap_or_else(|e| panic!("catalog query failed: {e:?}\n{sql}"));
        for row in rows {
            let line: String = row.get(0);
            // One line per object: squeeze the whitespace format() kept from the query text.
            lines.push(line.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    lines.sort();
    lines
}

/// A line diff (longest common subsequence) of two sorted dumps: `-` only in `want`, `+` only
/// in `got`. Empty when they are equal.
fn diff(want: &[String], got: &[String]) -> Vec<String> {
    let (n, m) = (want.len(), got.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if want[i] == got[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && want[i] == got[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("+ {}", got[j]));
            j += 1;
        } else {
            out.push(format!("- {}", want[i]));
            i += 1;
        }
    }
    out
}

/// Where two JSON answers first differ, as `at <path>: <before> vs <after>`.
/// An answer without its `mtimeNs` fields (entry times, which only 0.6.0 stores).
fn without_times<E: Clone>(answer: &Result<Value, E>) -> Result<Value, E> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                o.remove("mtimeNs");
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut answer = answer.clone();
    if let Ok(v) = &mut answer {
        strip(v);
    }
    answer
}

/// Every file an upgraded database answers carries its time.
fn assert_times_added(what: &str, answer: &Value) {
    if let Some(files) = answer.get("files").and_then(Value::as_array) {
        for f in files {
            assert!(
                f.get("mtimeNs").is_some_and(Value::is_i64),
                "{what}: a file without mtimeNs after the upgrade: {f}"
            );
        }
    }
}

fn first_difference(b: &Value, a: &Value, path: &str) -> String {
    match (b, a) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (p, q) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if p != q || x.contains_key(k) != y.contains_key(k) {
                    return first_difference(p, q, &format!("{path}.{k}"));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    return first_difference(p, q, &format!("{path}[{i}]"));
                }
            }
        }
        _ => {}
    }
    format!("at {path}: {b} vs {a}")
}

fn ops(list: &[Operation]) -> OperationSet {
    OperationSet::new(list.iter().copied()).unwrap()
}

/// What the old version holds, as the tests need to read it back.
struct Filled {
    alice: Caller,
    bob: Caller,
    /// (owner, workspace id)
    workspaces: Vec<(Caller, String)>,
    /// Bob's workspace's grant (read, history, write, commit), and the key id of the old
    /// version's verifier.
    grant: String,
    kid: String,
    purged: String,
}

fn receipt_revision(v: &Value) -> String {
    v["receipt"]["revision"]
        .as_str()
        .unwrap_or_else(|| panic!("a receipt: {v}"))
        .to_owned()
}

async fn commit(rest: &mut SqlRpc, who: &Caller, ws: &str, args: Value) -> String {
    let mut args = args;
    args["workspace_id"] = json!(ws);
    let r = rest
        .call(who, "supabash_commit", args)
        .await
        .unwrap_or_else(|e| panic!("commit: {e}"));
    receipt_revision(&r)
}

/// Fills database `db` (which has the old version) through the RPCs.
async fn fill(cluster: &Cluster, db: &str, rest: &mut SqlRpc) -> Filled {
    let alice = Caller::new_user();
    let bob = Caller::new_user();
    let a = rest.create_workspace(&alice).await;
    let b = rest.create_workspace(&bob).await;

    // Alice: text with and without metadata, binary content, a move, a delete, larger edits
    // (stored as deltas where the version does that), a checkpoint and a purge.
    let binary: Vec<u8> = (0..=255u8).chain([0xff, 0xfe, 0x00, 0x80]).collect();
    let r1 = commit(
        rest,
        &alice,
        &a,
        json!({"actor": "agent", "changes": [
            {"op": "upsert", "path": "/notes/a.md", "text": "hello\n", "metadata": {"title": "A"}},
            {"op": "upsert", "path": "/img/logo.png", "base64": base64_encode(&binary)},
            {"op": "upsert", "path": "/draft.md", "text": "draft one\n"},
            {"op": "upsert", "path": "/old.md", "text": "to be deleted\n"}
        ]}),
    )
    .await;
    let long: String = (0..400)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    let r2 = commit(
        rest,
        &alice,
        &a,
        json!({"actor": "agent", "base_revision": r1, "correlation_id": "cid-2",
               "cause": "edit", "metadata": {"step": 2}, "changes": [
            {"op": "upsert", "path": "/notes/a.md", "text": "hello again\n", "metadata": {"title": "A2"}},
            {"op": "move", "from": "/draft.md", "path": "/final.md"},
            {"op": "delete", "path": "/old.md"},
            {"op": "upsert", "path": "/long.txt", "text": long}
        ]}),
    )
    .await;
    let checkpoint = rest
        .call(
            &alice,
            "supabash_checkpoint",
            json!({"workspace_id": a, "label": "before the edits", "retention_class": "keep",
                   "idempotency_key": "cp-1"}),
        )
        .await
        .unwrap_or_else(|e| panic!("checkpoint: {e}"));
    assert_eq!(checkpoint["revision"], json!(r2));
    let long2 = long.replace("line 200 of", "LINE 200 OF");
    let r3 = commit(
        rest,
        &alice,
        &a,
        json!({"actor": "agent", "base_revision": r2, "idempotency_key": "k-3", "changes": [
            {"op": "upsert", "path": "/long.txt", "text": long2},
            {"op": "move", "from": "/final.md", "path": "/docs/final.md", "text": "moved and changed\n"}
        ]}),
    )
    .await;
    let r4 = commit(
        rest,
        &alice,
        &a,
        json!({"actor": "agent", "base_revision": r3, "changes": [
            {"op": "upsert", "path": "/notes/b.md", "text": "b\n"}
        ]}),
    )
    .await;
    // A second checkpoint that is deleted again.
    let cp2 = rest
        .call(
            &alice,
            "supabash_checkpoint",
            json!({"workspace_id": a, "revision": r3}),
        )
        .await
        .unwrap();
    rest.call(
        &alice,
        "supabash_delete_checkpoint",
        json!({"workspace_id": a, "checkpoint_id": cp2["checkpointId"]}),
    )
    .await
    .unwrap();
    // Keeps the two newest (r3, r4) and the checkpointed r2: r1 goes.
    let purge = rest
        .call(
            &alice,
            "supabash_purge",
            json!({"workspace_id": a, "keep_revisions": 2}),
        )
        .await
        .unwrap_or_else(|e| panic!("purge: {e}"));
    assert_eq!(purge["revisions"], json!([r1]), "{purge}");

    // From 0.4.0 on: a fork of Alice's workspace with a commit of its own, then a redaction in
    // the workspace it reads from (its tombstones reach the fork's reads too).
    let mut workspaces = vec![(alice.clone(), a.clone()), (bob.clone(), b.clone())];
    if cluster
        .psql(db, "SELECT to_regproc('public.supabash_fork') IS NOT NULL")
        .trim()
        == "t"
    {
        let fork = rest
            .call(
                &alice,
                "supabash_fork",
                json!({"workspace_id": a, "label": "the fork", "actor": "agent"}),
            )
            .await
            .unwrap_or_else(|e| panic!("fork: {e}"));
        let fork_id = fork["workspaceId"]
            .as_str()
            .unwrap_or_else(|| panic!("a fork id: {fork}"))
            .to_owned();
        let fork_head = fork["headRevision"].as_str().map(str::to_owned);
        let mut args = json!({"actor": "agent", "changes": [
            {"op": "upsert", "path": "/notes/a.md", "text": "the fork's own words\n"},
            {"op": "upsert", "path": "/fork-only.txt", "text": "only here\n"}
        ]});
        if let Some(h) = fork_head {
            args["base_revision"] = json!(h);
        }
        commit(rest, &alice, &fork_id, args).await;
        let redacted = rest
            .call(
                &alice,
                "supabash_redact",
                json!({"workspace_id": a, "paths": ["/long.txt"], "reason": "upgrade test"}),
            )
            .await
            .unwrap_or_else(|e| panic!("redact: {e}"));
        assert!(
            redacted["versions"].as_u64().is_some_and(|n| n > 0),
            "{redacted}"
        );
        workspaces.push((alice.clone(), fork_id));
    }
    let _ = r4;

    // Bob: a few commits, then a verifier and a grant for his workspace.
    let mut base: Option<String> = None;
    for i in 0..3 {
        let mut args = json!({"actor": "bob", "changes": [
            {"op": "upsert", "path": format!("/b/{i}.txt"), "text": format!("bob {i}\n")},
            {"op": "upsert", "path": "/b/log.txt", "text": "x\n".repeat(i + 1)}
        ]});
        if let Some(b) = &base {
            args["base_revision"] = json!(b);
        }
        base = Some(commit(rest, &bob, &b, args).await);
    }
    let kid = "upgrade-kid";
    let secret = cluster
        .psql(
            db,
            &format!(
                "SELECT supabash_register_capability_verifier('{kid}', '{ISS}', '{AUD}', '{ORIGIN}')"
            ),
        )
        .trim()
        .to_owned();
    let grant = {
        // 0.3.0 on: the database generated an Ed25519 pair and returned the private key.
        let token = PostgresSigner::new(kid, &secret, ISS, AUD, ORIGIN)
            .unwrap()
            .mint(
                "job-7",
                &b,
                &ops(&[
                    Operation::Read,
                    Operation::Write,
                    Operation::Commit,
                    Operation::History,
                ]),
                900,
                Some("cid-job"),
            )
            .unwrap();
        rest.call(
            &Caller::Service,
            "supabash_exchange_capability",
            json!({ "capability": token }),
        )
        .await
        .unwrap_or_else(|e| panic!("exchange on the old version: {e}"))["delegatedGrant"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    commit(
        rest,
        &Caller::Service,
        &b,
        json!({"actor": "job-7", "base_revision": base, "delegated_grant": grant, "changes": [
            {"op": "upsert", "path": "/b/by-job.txt", "text": "written through a grant\n"}
        ]}),
    )
    .await;

    Filled {
        workspaces,
        alice,
        bob,
        grant,
        kid: kid.to_owned(),
        purged: r1,
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// What every read RPC answers on the filled data: (what was asked, the answer or the error).
async fn reads(rest: &mut SqlRpc, filled: &Filled) -> Vec<(String, Result<Value, String>)> {
    let mut out: Vec<(String, Result<Value, String>)> = Vec::new();
    for (who, ws) in &filled.workspaces {
        let mut calls: Vec<(&str, Value)> = vec![
            ("supabash_load_manifest", json!({"workspace_id": ws})),
            ("supabash_load_snapshot", json!({"workspace_id": ws})),
            ("supabash_checkpoints", json!({"workspace_id": ws})),
            (
                "supabash_history",
                json!({"workspace_id": ws, "page_size": 1000}),
            ),
            (
                "supabash_load_revision",
                json!({"workspace_id": ws, "revision": filled.purged}),
            ),
            (
                "supabash_history",
                json!({"workspace_id": ws, "cursor": filled.purged, "restart_if_missing": true, "page_size": 2}),
            ),
        ];
        // Every retained revision: its receipt and tree, its snapshot, every file at it, and
        // its diff against the head (and against a staged tree).
        let history = rest
            .call(
                who,
                "supabash_history",
                json!({"workspace_id": ws, "page_size": 1000}),
            )
            .await
            .unwrap_or_else(|e| panic!("history: {e}"));
        let revisions: Vec<String> = history["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["revision"].as_str().unwrap().to_owned())
            .collect();
        assert!(!revisions.is_empty());
        // History page by page.
        let mut cursor: Option<String> = None;
        loop {
            let mut args = json!({"workspace_id": ws, "page_size": 2});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let page = rest.call(who, "supabash_history", args.clone()).await;
            let next = page
                .as_ref()
                .ok()
                .and_then(|p| p["nextCursor"].as_str().map(str::to_owned));
            out.push((
                format!("supabash_history {args}"),
                page.map_err(|e| e.to_string()),
            ));
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        for rev in &revisions {
            calls.push((
                "supabash_load_revision",
                json!({"workspace_id": ws, "revision": rev}),
            ));
            calls.push((
                "supabash_load_snapshot",
                json!({"workspace_id": ws, "revision": rev}),
            ));
            calls.push((
                "supabash_diff",
                json!({"workspace_id": ws, "from_ref": {"revision": rev}, "to_ref": {"head": true}}),
            ));
            calls.push((
                "supabash_diff",
                json!({"workspace_id": ws, "from_ref": {"revision": rev}, "to_ref": {"staged": true},
                       "staged": [{"path": "/staged.md", "text": "staged\n"}], "preview_bytes": 64}),
            ));
            let snapshot = rest
                .call(
                    who,
                    "supabash_load_snapshot",
                    json!({"workspace_id": ws, "revision": rev}),
                )
                .await
                .unwrap();
            for file in snapshot["files"].as_array().unwrap() {
                calls.push((
                    "supabash_load_document",
                    json!({"workspace_id": ws, "path": file["path"], "revision": rev}),
                ));
            }
        }
        let checkpoints = rest
            .call(who, "supabash_checkpoints", json!({"workspace_id": ws}))
            .await
            .unwrap();
        for cp in checkpoints.as_array().expect("a list of checkpoints") {
            calls.push((
                "supabash_diff",
                json!({"workspace_id": ws, "from_ref": {"checkpoint": cp["checkpointId"]},
                       "to_ref": {"head": true}, "paths": ["/notes", "/long.txt"]}),
            ));
        }
        for (rpc, args) in calls {
            let r = rest.call(who, rpc, args.clone()).await;
            out.push((format!("{rpc} {args}"), r.map_err(|e| e.to_string())));
        }
    }
    // Through the grant, as the job would.
    let (_, bob_ws) = &filled.workspaces[1];
    for (rpc, args) in [
        ("supabash_load_manifest", json!({"workspace_id": bob_ws})),
        ("supabash_load_snapshot", json!({"workspace_id": bob_ws})),
        ("supabash_history", json!({"workspace_id": bob_ws})),
    ] {
        let mut args = args;
        args["delegated_grant"] = json!(filled.grant);
        let r = rest.call(&Caller::Service, rpc, args.clone()).await;
        out.push((
            format!("service_role with grant: {rpc}"),
            r.map_err(|e| e.to_string()),
        ));
    }
    // And what others are refused.
    let (_, alice_ws) = &filled.workspaces[0];
    let r = rest
        .call(
            &filled.bob,
            "supabash_load_manifest",
            json!({"workspace_id": alice_ws}),
        )
        .await;
    out.push(("bob reads alice's".into(), r.map_err(|e| e.to_string())));
    let r = rest
        .call(
            &Caller::Anon,
            "supabash_load_manifest",
            json!({"workspace_id": alice_ws}),
        )
        .await;
    out.push(("anon reads alice's".into(), r.map_err(|e| e.to_string())));
    out
}

/// Every privilege a PostgREST role holds on a private object or an RPC not meant for it
/// (the install check's question, asked independently of it).
async fn privilege_report(db: &Client) -> Vec<String> {
    db.query(
        "SELECT r.rolname || ' on ' || o.what
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
             SELECT p.oid::regprocedure::text FROM pg_proc p
              WHERE p.pronamespace = 'supabash'::regnamespace AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
             UNION ALL
             SELECT p.oid::regprocedure::text FROM pg_proc p
              WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\\_%'
                AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                AND (r.rolname = 'anon'
                     OR p.proname IN ('supabash_register_capability_verifier', 'supabash_revoke_capability_verifier')
                     OR (p.proname = 'supabash_create_workspace' AND r.rolname = 'service_role')
                     OR (p.proname = 'supabash_exchange_capability' AND r.rolname = 'authenticated')
                     OR (p.proname = 'supabash_spend_storage_nonce' AND r.rolname = 'authenticated'))
           ) o
          WHERE r.rolname IN ('anon', 'authenticated', 'service_role', 'authenticator')
          ORDER BY 1",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[test]
fn older_versions_are_found_and_older() {
    let versions = frozen_versions(&repo_root().join("extension/sql"));
    assert!(
        versions.iter().any(|v| v == "0.1.0"),
        "the frozen 0.1.0 install script: {versions:?}"
    );
    for v in &versions {
        assert!(
            parse_version(v) < parse_version(CURRENT),
            "supabash--{v}.sql is frozen but the workspace version is {CURRENT}: freeze a \
             version only once it is released and the version has moved on"
        );
    }
}

#[tokio::test]
async fn every_older_version_upgrades_to_a_fresh_install() {
    let cluster = Cluster::shared();

    // The reference: a fresh install of the current version.
    cluster.fresh_database("upgrade_fresh");
    let fresh = connect(cluster, "postgres", "upgrade_fresh").await;
    fresh
        .batch_execute("CREATE EXTENSION supabash")
        .await
        .unwrap();
    let installed = one_text(
        &fresh,
        "SELECT extversion FROM pg_extension WHERE extname = 'supabash'",
    )
    .await;
    assert_eq!(
        installed, CURRENT,
        "the installed extension is not this build's version: run `just install`"
    );
    let want = catalog(&fresh).await;
    assert!(
        want.iter()
            .any(|l| l.starts_with("policy owner on supabash.workspaces")),
        "the catalog dump sees policies: {want:#?}"
    );

    let older: Vec<String> = frozen_versions(&repo_root().join("extension/sql"))
        .into_iter()
        .filter(|v| parse_version(v) < parse_version(CURRENT))
        .collect();
    assert!(!older.is_empty(), "no older version to upgrade from");
    for version in older {
        println!("upgrading from {version} to {CURRENT}");
        let name = format!("upgrade_from_{}", version.replace('.', "_"));
        cluster.fresh_database(&name);
        let admin = connect(cluster, "postgres", &name).await;
        admin
            .batch_execute(&format!("CREATE EXTENSION supabash VERSION '{version}'"))
            .await
            .unwrap_or_else(|e| {
                panic!("CREATE EXTENSION supabash VERSION '{version}' (is it installed? `just install`): {e}")
            });
        let mut rest = SqlRpc::connect(&cluster.dsn_on("authenticator", &name)).await;
        if !SERVED_SCHEMAS.contains(&version.as_str()) {
            // Older than the support window: every RPC is refused with the upgrade hint, and the
            // data is written once the schema is the oldest one served (the chain of upgrade
            // scripts still runs from this version).
            outside_the_window_is_refused(&mut rest, &version).await;
            let oldest = SERVED_SCHEMAS[SERVED_SCHEMAS.len() - 1];
            admin
                .batch_execute(&format!("ALTER EXTENSION supabash UPDATE TO '{oldest}'"))
                .await
                .unwrap_or_else(|e| {
                    panic!("ALTER EXTENSION supabash UPDATE TO {oldest} from {version}: {e:?}")
                });
        }
        let filled = fill(cluster, &name, &mut rest).await;
        let before = reads(&mut rest, &filled).await;
        assert!(before.len() > 30, "{} reads", before.len());

        admin
            .batch_execute("ALTER EXTENSION supabash UPDATE")
            .await
            .unwrap_or_else(|e| panic!("ALTER EXTENSION supabash UPDATE from {version}: {e:?}"));
        assert_eq!(
            one_text(
                &admin,
                "SELECT extversion FROM pg_extension WHERE extname = 'supabash'"
            )
            .await,
            CURRENT
        );

        // (a) The catalog is the fresh install's.
        let got = catalog(&admin).await;
        let d = diff(&want, &got);
        assert!(
            d.is_empty(),
            "after upgrading from {version}, the catalog differs from a fresh install of {CURRENT} \
             (- fresh, + upgraded):\n{}",
            d.join("\n")
        );

        // The upgrade counted every revision's tree (issue 25): what a scan of the entries
        // visible at it counts, for every workspace that is not a fork and saw no redaction
        // (a redaction recounts only the head: older totals say what was committed).
        let wrong = one_text(
            &admin,
            "WITH counted AS (
               SELECT r.tree_files, r.tree_bytes,
                      (SELECT count(*) FROM supabash.entries e
                        WHERE e.workspace_id = r.workspace_id AND e.valid_from <= r.position
                          AND (e.valid_until IS NULL OR e.valid_until > r.position)) AS files,
                      (SELECT coalesce(sum(coalesce(e.content_size, e.body_size)), 0)::bigint
                         FROM supabash.entries e
                        WHERE e.workspace_id = r.workspace_id AND e.valid_from <= r.position
                          AND (e.valid_until IS NULL OR e.valid_until > r.position)) AS bytes
                 FROM supabash.revisions r
                 JOIN supabash.workspaces w ON w.id = r.workspace_id AND w.fork_of IS NULL
                WHERE NOT EXISTS (SELECT FROM supabash.redactions x WHERE x.workspace_id = w.id))
             SELECT format('%s of %s',
                           count(*) FILTER (WHERE tree_files IS DISTINCT FROM files
                                               OR tree_bytes IS DISTINCT FROM bytes),
                           count(*))
               FROM counted",
        )
        .await;
        assert!(
            wrong.starts_with("0 of ") && wrong != "0 of 0",
            "revisions whose upgraded totals differ from a scan: {wrong}"
        );

        println!(
            "{version}: catalog equal ({} lines); comparing {} read answers",
            got.len(),
            before.len()
        );
        // (b) Every read answers as before, on a new connection (no cached plan helps).
        let mut rest = SqlRpc::connect(&cluster.dsn_on("authenticator", &name)).await;
        let after = reads(&mut rest, &filled).await;
        assert_eq!(before.len(), after.len());
        for ((what, b), (_, a)) in before.iter().zip(&after) {
            // 0.6.0 adds entry times (issue 24): a 0.5.0 schema has none to answer, the
            // upgrade gives every version its commit's. Everything else answers as before.
            if let Ok(a) = a {
                assert_times_added(what, a);
            }
            let (b, a) = (&without_times(b), &without_times(a));
            if b != a {
                let at = match (b, a) {
                    (Ok(b), Ok(a)) => first_difference(b, a, "$"),
                    _ => String::new(),
                };
                panic!(
                    "after upgrading from {version}, {what} answers differently {at}\n\
                     before: {b:?}\nafter:  {a:?}"
                );
            }
        }

        // (c) The upgraded database takes new writes.
        let (_, alice_ws) = &filled.workspaces[0];
        let manifest = rest
            .call(
                &filled.alice,
                "supabash_load_manifest",
                json!({"workspace_id": alice_ws}),
            )
            .await
            .unwrap();
        // The epoch the tree was loaded at (the redaction moved it, where there was one).
        let (head, epoch) = (&manifest["revision"], &manifest["redactionEpoch"]);
        let rev = commit(
            &mut rest,
            &filled.alice,
            alice_ws,
            json!({"actor": "after-upgrade", "base_revision": head, "redaction_epoch": epoch, "changes": [
                {"op": "upsert", "path": "/notes/a.md", "text": "after the upgrade\n"},
                {"op": "upsert", "path": "/bin.dat", "base64": base64_encode(&[0, 159, 146, 150])},
                {"op": "move", "from": "/notes/b.md", "path": "/notes/c.md"}
            ]}),
        )
        .await;
        let doc = rest
            .call(
                &filled.alice,
                "supabash_load_document",
                json!({"workspace_id": alice_ws, "path": "/notes/a.md"}),
            )
            .await
            .unwrap();
        assert_eq!(doc["text"], json!("after the upgrade\n"));
        assert_eq!(doc["revision"], json!(rev));
        // The old grant still commits, and the verifier registered again mints new ones.
        let (_, bob_ws) = &filled.workspaces[1];
        let head = rest
            .call(
                &Caller::Service,
                "supabash_load_manifest",
                json!({"workspace_id": bob_ws, "delegated_grant": filled.grant}),
            )
            .await
            .unwrap()["revision"]
            .clone();
        commit(
            &mut rest,
            &Caller::Service,
            bob_ws,
            json!({"actor": "job-7", "base_revision": head, "delegated_grant": filled.grant, "changes": [
                {"op": "upsert", "path": "/b/after.txt", "text": "after\n"}
            ]}),
        )
        .await;
        let key = cluster
            .psql(
                &name,
                &format!(
                    "SELECT supabash_register_capability_verifier('{}', '{ISS}', '{AUD}', '{ORIGIN}')",
                    filled.kid
                ),
            )
            .trim()
            .to_owned();
        let token = PostgresSigner::new(&filled.kid, &key, ISS, AUD, ORIGIN)
            .unwrap()
            .mint("job-8", bob_ws, &ops(&[Operation::Read]), 300, None)
            .unwrap();
        let exchanged = rest
            .call(
                &Caller::Service,
                "supabash_exchange_capability",
                json!({ "capability": token }),
            )
            .await
            .unwrap_or_else(|e| panic!("exchange after the upgrade: {e}"));
        let g = exchanged["delegatedGrant"].as_str().unwrap();
        let m = rest
            .call(
                &Caller::Service,
                "supabash_load_manifest",
                json!({"workspace_id": bob_ws, "delegated_grant": g}),
            )
            .await
            .unwrap();
        assert!(m["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == json!("/b/after.txt")));
        // The database nonce store of Storage capabilities (0.6.0) works on the upgraded
        // schema, for the service role only.
        let keep_until = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            + 600;
        let nonce = json!({ "nonce": format!("upgraded-{}", name), "keep_until": keep_until });
        for consumed in [true, false] {
            let spent = rest
                .call(
                    &Caller::Service,
                    "supabash_spend_storage_nonce",
                    nonce.clone(),
                )
                .await
                .unwrap_or_else(|e| panic!("spending a nonce after the upgrade: {e}"));
            assert_eq!(spent, json!({ "consumed": consumed }));
        }
        let refused = rest
            .call(&filled.alice, "supabash_spend_storage_nonce", nonce)
            .await
            .unwrap_err();
        assert_eq!(refused.code, "42501", "{refused}");
        // A new user and workspace; the other user is still refused.
        let carol = Caller::new_user();
        let c = rest.create_workspace(&carol).await;
        commit(
            &mut rest,
            &carol,
            &c,
            json!({"actor": "carol", "changes": [{"op": "upsert", "path": "/c.md", "text": "c"}]}),
        )
        .await;
        let denied = rest
            .call(
                &filled.bob,
                "supabash_load_manifest",
                json!({"workspace_id": c}),
            )
            .await
            .unwrap_err();
        assert_eq!(denied.code, "42501", "{denied}");

        // (d) No PostgREST role gained a privilege, and the install check says so too.
        assert_eq!(privilege_report(&admin).await, Vec::<String>::new());
        admin
            .batch_execute("SELECT supabash._check_install()")
            .await
            .unwrap_or_else(|e| panic!("install check after the upgrade: {e:?}"));
        // The check is not vacuous, and privileges can be asserted again: a leaked grant is
        // reported, and supabash._assert_privileges() takes it back.
        admin
            .batch_execute("GRANT EXECUTE ON FUNCTION supabash._call(text, json) TO authenticated")
            .await
            .unwrap();
        let leak = admin
            .batch_execute("SELECT supabash._check_install()")
            .await
            .unwrap_err();
        let message = leak.as_db_error().map(|e| e.message().to_owned());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.starts_with("SUPABASH_INSTALL") && m.contains("supabash._call")),
            "{message:?}"
        );
        admin
            .batch_execute("SELECT supabash._assert_privileges(); SELECT supabash._check_install()")
            .await
            .unwrap_or_else(|e| panic!("re-asserting privileges: {e:?}"));
        assert_eq!(privilege_report(&admin).await, Vec::<String>::new());
        // The install's helpers are the installer's only.
        for role in [
            "anon",
            "authenticated",
            "service_role",
            "authenticator",
            "supabash_owner",
            "supabash_keeper",
        ] {
            let can = admin
                .query_one(
                    "SELECT has_function_privilege($1, 'supabash._assert_privileges()', 'EXECUTE')
                         OR has_function_privilege($1, 'supabash._check_install()', 'EXECUTE')",
                    &[&role],
                )
                .await
                .unwrap()
                .get::<_, bool>(0);
            assert!(!can, "{role} can run the install helpers");
        }
        // The databases emulate Supabase's default privileges, so an upgrade that created a
        // public function and forgot to revoke it would have leaked here.
        admin
            .batch_execute(
                "CREATE FUNCTION public.upgrade_probe() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            )
            .await
            .unwrap();
        let leaked: bool = admin
            .query_one(
                "SELECT has_function_privilege('anon', 'public.upgrade_probe()', 'EXECUTE')
                    AND has_function_privilege('authenticated', 'public.upgrade_probe()', 'EXECUTE')",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(
            leaked,
            "sql/bootstrap.sql emulates Supabase's default privileges"
        );
        admin
            .batch_execute("DROP FUNCTION public.upgrade_probe()")
            .await
            .unwrap();
    }
}

/// On a schema older than the support window, writes and reads alike answer
/// `SUPABASH_SCHEMA_OUTDATED` with the upgrade hint, and nothing is written.
async fn outside_the_window_is_refused(rest: &mut SqlRpc, version: &str) {
    let alice = Caller::new_user();
    // A write and a read every version has; the schema is checked before the workspace is.
    let ws = uuid::Uuid::new_v4().to_string();
    for (rpc, args) in [
        ("supabash_create_workspace", json!({})),
        ("supabash_load_manifest", json!({ "workspace_id": ws })),
    ] {
        let refused = rest
            .call(&alice, rpc, args)
            .await
            .expect_err("an outdated schema is refused");
        assert!(
            refused.message.starts_with("SUPABASH_SCHEMA_OUTDATED")
                && refused.message.contains("ALTER EXTENSION supabash UPDATE"),
            "{rpc} on {version}: {refused}"
        );
    }
}

#[test]
fn the_diff_shows_what_differs() {
    let a: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let b: Vec<String> = ["a", "c", "d"].iter().map(|s| s.to_string()).collect();
    assert_eq!(diff(&a, &b), vec!["- b", "+ d"]);
    assert!(diff(&a, &a).is_empty());
}

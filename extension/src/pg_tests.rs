//! In-backend tests of the RPCs, played the way PostgREST calls them: claims set for the
//! transaction, `SET LOCAL ROLE`, then the public function. Each test runs in its own rolled
//! back transaction.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;
    use pgrx::JsonB;
    use serde_json::{json, Value};

    const ALICE: &str = "11111111-1111-4111-8111-111111111111";
    const BOB: &str = "22222222-2222-4222-8222-222222222222";

    fn become_user(sub: &str) {
        Spi::run("RESET ROLE").unwrap();
        Spi::run_with_args(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[json!({ "sub": sub, "role": "authenticated" })
                .to_string()
                .into()],
        )
        .unwrap();
        Spi::run("SET LOCAL ROLE authenticated").unwrap();
    }

    /// Runs `sql` (one RPC call) and answers its result, `json` (reads) or `jsonb` (writes).
    fn call(sql: &str, args: Vec<pgrx::datum::DatumWithOid>) -> Value {
        let sql = format!("SELECT to_jsonb(answer) FROM ({sql}) AS rpc(answer)");
        Spi::get_one_with_args::<JsonB>(&sql, &args)
            .unwrap()
            .unwrap()
            .0
    }

    fn new_workspace(sub: &str) -> String {
        become_user(sub);
        let ws = call("SELECT supabash_create_workspace()", vec![]);
        ws["workspaceId"].as_str().unwrap().to_owned()
    }

    fn commit(ws: &str, base: Option<&str>, changes: Value) -> Value {
        call(
            "SELECT supabash_commit(workspace_id => $1, changes => $2, actor => 'test', base_revision => $3)",
            vec![ws.into(), pgrx::Json(changes).into(), base.map(str::to_owned).into()],
        )
    }

    #[pg_test]
    fn commit_then_read_back() {
        let ws = new_workspace(ALICE);
        let r = commit(
            &ws,
            None,
            json!([
                {"op": "upsert", "path": "/notes/été.md", "text": "bonjour"},
                {"op": "upsert", "path": "/bin.dat", "base64": "AP8A"},
            ]),
        );
        assert_eq!(r["replayed"], json!(false));
        let rev = r["receipt"]["revision"].as_str().unwrap().to_owned();
        assert_eq!(r["receipt"]["changes"].as_array().unwrap().len(), 2);
        let doc = call(
            "SELECT supabash_load_document($1, '/notes/été.md', $2)",
            vec![ws.as_str().into(), rev.as_str().into()],
        );
        assert_eq!(doc["text"], json!("bonjour"));
        assert_eq!(
            doc["contentHash"],
            json!(supabash_core::hash::sha256_hex("bonjour".as_bytes()))
        );
        let snap = call(
            "SELECT supabash_load_snapshot($1)",
            vec![ws.as_str().into()],
        );
        assert_eq!(snap["files"][0]["path"], json!("/bin.dat"));
        assert_eq!(snap["files"][0]["base64"], json!("AP8A"));
    }

    #[pg_test]
    fn intervals_touch_only_changed_paths() {
        let ws = new_workspace(ALICE);
        let files: Vec<Value> = (0..20)
            .map(|i| json!({"op": "upsert", "path": format!("/f{i}"), "text": format!("v{i}")}))
            .collect();
        let r1 = commit(&ws, None, Value::Array(files));
        let rev1 = r1["receipt"]["revision"].as_str().unwrap().to_owned();
        let r2 = commit(
            &ws,
            Some(&rev1),
            json!([{"op": "upsert", "path": "/f3", "text": "changed"}]),
        );
        let rev2 = r2["receipt"]["revision"].as_str().unwrap().to_owned();
        Spi::run("RESET ROLE").unwrap();
        let rows = Spi::get_one_with_args::<i64>(
            "SELECT count(*) FROM supabash.entries WHERE workspace_id = $1::uuid",
            &[ws.as_str().into()],
        )
        .unwrap()
        .unwrap();
        assert_eq!(rows, 21, "one new interval for one changed path");
        become_user(ALICE);
        let old = call(
            "SELECT supabash_load_document($1, '/f3', $2)",
            vec![ws.as_str().into(), rev1.as_str().into()],
        );
        let new = call(
            "SELECT supabash_load_document($1, '/f3', $2)",
            vec![ws.as_str().into(), rev2.as_str().into()],
        );
        assert_eq!(old["text"], json!("v3"));
        assert_eq!(new["text"], json!("changed"));
    }

    /// A file without metadata stores no content columns (its content is its body) and reads
    /// back with the body's hash and size; a file with metadata stores and returns its own.
    #[pg_test]
    fn content_columns_only_for_files_with_metadata() {
        let ws = new_workspace(ALICE);
        commit(
            &ws,
            None,
            json!([
                {"op": "upsert", "path": "/plain.md", "text": "body"},
                {"op": "upsert", "path": "/doc.md", "text": "body", "metadata": {"title": "T"}},
            ]),
        );
        Spi::run("RESET ROLE").unwrap();
        let stored = |path: &str| {
            Spi::get_one_with_args::<bool>(
                "SELECT content_hash IS NULL AND content_size IS NULL AND metadata IS NULL
                   FROM supabash.entries WHERE workspace_id = $1::uuid AND path = $2",
                &[ws.as_str().into(), path.into()],
            )
            .unwrap()
            .unwrap()
        };
        assert!(stored("/plain.md"));
        assert!(!stored("/doc.md"));
        become_user(ALICE);
        let files = call(
            "SELECT supabash_load_manifest($1)",
            vec![ws.as_str().into()],
        )["files"]
            .clone();
        let body_hash = supabash_core::hash::sha256_hex(b"body");
        let (doc, plain) = (&files[0], &files[1]);
        assert_eq!(plain["contentHash"], json!(body_hash));
        assert_eq!(plain["size"], json!(4));
        assert_eq!(plain["metadata"], json!({}));
        assert_eq!(doc["bodyHash"], json!(body_hash));
        assert_ne!(doc["contentHash"], json!(body_hash));
        assert_eq!(doc["size"], json!("---\ntitle: \"T\"\n---\nbody".len()));
        assert_eq!(doc["metadata"], json!({"title": "T"}));
    }

    /// About 11 KB of text that compresses about twofold; version `i` edits line `i`.
    fn text_of(i: usize) -> String {
        (0..300u64)
            .map(|l| {
                let noise = l.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (l << 29);
                let edit = if l == i as u64 { " (edited)" } else { "" };
                format!("line {l} of the notes {noise:016x}{edit}\n")
            })
            .collect()
    }

    /// Commits `/notes.md` as `text_of(i)` for each i, one revision each; returns the revisions.
    fn edit_chain(ws: &str, edits: std::ops::Range<usize>) -> Vec<String> {
        let mut head: Option<String> = None;
        let mut revs = Vec::new();
        for i in edits {
            let r = commit(
                ws,
                head.as_deref(),
                json!([{"op": "upsert", "path": "/notes.md", "text": text_of(i)}]),
            );
            head = r["receipt"]["revision"].as_str().map(str::to_owned);
            revs.push(head.clone().unwrap());
        }
        revs
    }

    fn as_superuser<T>(f: impl FnOnce() -> T) -> T {
        Spi::run("RESET ROLE").unwrap();
        let out = f();
        become_user(ALICE);
        out
    }

    /// Edits are stored as deltas against the file's previous version, chains stop at
    /// `bodies::MAX_CHAIN`, and every revision reads back its own text.
    #[pg_test]
    fn edits_are_stored_as_short_delta_chains() {
        let ws = new_workspace(ALICE);
        let revs = edit_chain(&ws, 0..20);
        let (deltas, delta_bytes, whole_bytes) = as_superuser(|| {
            let q = |sql: &str| {
                Spi::get_one_with_args::<i64>(sql, &[ws.as_str().into()])
                    .unwrap()
                    .unwrap()
            };
            (
                q("SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::uuid AND base_hash IS NOT NULL"),
                q("SELECT max(octet_length(body))::bigint FROM supabash.bodies WHERE workspace_id = $1::uuid AND base_hash IS NOT NULL"),
                q("SELECT min(octet_length(body))::bigint FROM supabash.bodies WHERE workspace_id = $1::uuid AND base_hash IS NULL"),
            )
        });
        // 20 versions: whole, 8 deltas, whole, 8 deltas, whole, 1 delta.
        assert_eq!(deltas, 17);
        assert!(
            delta_bytes * 10 < whole_bytes,
            "{delta_bytes} vs {whole_bytes}"
        );
        for (i, rev) in revs.iter().enumerate() {
            let doc = call(
                "SELECT supabash_load_document($1, '/notes.md', $2)",
                vec![ws.as_str().into(), rev.as_str().into()],
            );
            assert_eq!(doc["text"], json!(text_of(i)), "revision {i}");
        }
        let diff = call(
            "SELECT supabash_diff(workspace_id => $1, from_ref => jsonb_build_object('revision', $2::text),
                                  to_ref => jsonb_build_object('revision', $3::text))",
            vec![ws.as_str().into(), revs[3].as_str().into(), revs[7].as_str().into()],
        );
        assert_eq!(diff["entries"][0]["kind"], json!("modified"));
        let preview = diff["entries"][0]["preview"].as_str().unwrap();
        // Both sides decoded through their chains: the before side shows line 3 edited.
        assert!(
            preview.starts_with("--- before\nline 0 of the notes"),
            "{preview}"
        );
        let line3 = preview.lines().nth(4).unwrap();
        assert!(
            line3.starts_with("line 3 of") && line3.ends_with(" (edited)"),
            "{line3}"
        );
    }

    /// Purge keeps the bases a kept body is a delta against, and reclaims them once no kept
    /// body needs them.
    #[pg_test]
    fn purge_keeps_the_bases_kept_bodies_need() {
        let ws = new_workspace(ALICE);
        let revs = edit_chain(&ws, 0..5);
        let purged = call(
            "SELECT supabash_purge(workspace_id => $1, keep_revisions => 1)",
            vec![ws.as_str().into()],
        );
        assert_eq!(purged["revisions"].as_array().unwrap().len(), 4);
        assert_eq!(purged["bodies"], json!(0), "the head sits on all four");
        let doc = call(
            "SELECT supabash_load_document($1, '/notes.md', $2)",
            vec![ws.as_str().into(), revs[4].as_str().into()],
        );
        assert_eq!(doc["text"], json!(text_of(4)));
        // A new file content with nothing in common ends the chain's use.
        let r = commit(
            &ws,
            Some(&revs[4]),
            json!([{"op": "upsert", "path": "/notes.md", "text": "short"}]),
        );
        let head = r["receipt"]["revision"].as_str().unwrap().to_owned();
        let purged = call(
            "SELECT supabash_purge(workspace_id => $1, keep_revisions => 1)",
            vec![ws.as_str().into()],
        );
        assert_eq!(purged["bodies"], json!(5));
        let doc = call(
            "SELECT supabash_load_document($1, '/notes.md', $2)",
            vec![ws.as_str().into(), head.as_str().into()],
        );
        assert_eq!(doc["text"], json!("short"));
    }

    /// A delta whose base was tampered with is reported, never returned wrong.
    #[pg_test(error = "SUPABASH_HISTORY_CORRUPTION: a stored body does not match its hash")]
    fn a_tampered_base_is_history_corruption() {
        let ws = new_workspace(ALICE);
        let revs = edit_chain(&ws, 0..2);
        as_superuser(|| {
            Spi::run_with_args(
                "UPDATE supabash.bodies SET body = '\\x00'::bytea || convert_to($2, 'UTF8')
                  WHERE workspace_id = $1::uuid AND base_hash IS NULL",
                &[ws.as_str().into(), text_of(7).into()],
            )
            .unwrap()
        });
        call(
            "SELECT supabash_load_document($1, '/notes.md', $2)",
            vec![ws.as_str().into(), revs[1].as_str().into()],
        );
    }

    /// The scans of `bodies` in an EXPLAIN (FORMAT JSON) plan: (node type, its index
    /// condition or, for a bitmap heap scan, its bitmap index scan's).
    fn bodies_scans(node: &Value, out: &mut Vec<(String, String)>) {
        let kind = node["Node Type"].as_str().unwrap_or_default().to_owned();
        if node["Relation Name"] == json!("bodies") {
            let cond = match kind.as_str() {
                "Bitmap Heap Scan" => node["Plans"][0]["Index Cond"].as_str(),
                _ => node["Index Cond"].as_str(),
            };
            out.push((kind, cond.unwrap_or_default().to_owned()));
        }
        for child in node["Plans"].as_array().into_iter().flatten() {
            bodies_scans(child, out);
        }
    }

    /// The delta-chain lookup reads `bodies` only by its full key `(workspace_id, hash)`,
    /// whatever the statistics and plan settings: on a store just bulk-loaded without ANALYZE,
    /// among other stores, as a generic and as a custom plan, even with the planner steered
    /// away from nested loops (the shape that made it scan every body of the workspace).
    #[pg_test]
    fn chain_plan_is_keyed() {
        let store = "33333333-3333-4333-8333-333333333333";
        Spi::run_with_args(
            "INSERT INTO supabash.bodies (workspace_id, hash, size, body, base_hash, owner_id)
             SELECT w, sha256(convert_to(w::text || i, 'UTF8')), 1, '\\x00'::bytea,
                    CASE WHEN i > 1 THEN sha256(convert_to(w::text || (i - 1), 'UTF8')) END, w
               FROM generate_series(1, 5000) i,
                    unnest(ARRAY[$1::uuid, gen_random_uuid(), gen_random_uuid()]) w",
            &[store.into()],
        )
        .unwrap();
        for mode in ["force_custom_plan", "force_generic_plan"] {
            for nestloop in ["on", "off"] {
                // Prepared after the settings: a cached plan keeps the settings it was made under.
                Spi::run(&format!("SET LOCAL plan_cache_mode = {mode}")).unwrap();
                Spi::run(&format!("SET LOCAL enable_nestloop = {nestloop}")).unwrap();
                Spi::run(&format!(
                    "PREPARE chain_lookup (text, bytea[], int) AS {}",
                    crate::store::bodies::CHAIN_SQL
                ))
                .unwrap();
                let explained = Spi::get_one::<pgrx::Json>(&format!(
                    "EXPLAIN (FORMAT JSON) EXECUTE chain_lookup('{store}',
                       ARRAY[sha256(convert_to('{store}' || 5000, 'UTF8'))], 8)"
                ))
                .unwrap()
                .unwrap()
                .0;
                let mut scans = Vec::new();
                bodies_scans(&explained[0]["Plan"], &mut scans);
                assert_eq!(scans.len(), 2, "{mode}, nestloop {nestloop}: {explained}");
                for (kind, cond) in &scans {
                    assert!(
                        kind.contains("Index") || kind == "Bitmap Heap Scan",
                        "{mode}, nestloop {nestloop}: {kind} of bodies: {explained}"
                    );
                    assert!(
                        cond.contains("workspace_id") && cond.contains("hash"),
                        "{mode}, nestloop {nestloop}: {kind} of bodies on {cond:?}: {explained}"
                    );
                }
                Spi::run("DEALLOCATE chain_lookup").unwrap();
            }
        }
    }

    /// Adds `n` revisions to `ws` directly (no entries: only the replay lookup reads them).
    fn add_revisions(ws: &str, n: i32) {
        Spi::run_with_args(
            "INSERT INTO supabash.revisions (workspace_id, revision_id, position, transaction_id,
                    request_hash, committed_at, actor, metadata, lines, owner_id)
             SELECT $1::uuid, gen_random_uuid(), 100 + i, gen_random_uuid(), '\\x00', now(), 'a',
                    '{}', '\\x00', w.owner_id
               FROM generate_series(1, $2) i, supabash.workspaces w WHERE w.id = $1::uuid",
            &[ws.into(), n.into()],
        )
        .unwrap();
    }

    /// The plan of the replay lookup in `ws` as `revisions::spent` makes it (generic, with
    /// sorts disabled), as JSON text.
    fn explain_replay_lookup(ws: &str) -> String {
        Spi::run("SET LOCAL plan_cache_mode = force_generic_plan").unwrap();
        Spi::run("SET LOCAL enable_sort = off").unwrap();
        Spi::run(&format!(
            "PREPARE replay_lookup (text, text, text) AS {}",
            crate::store::revisions::SPENT_SQL
        ))
        .unwrap();
        let explained = Spi::get_one::<pgrx::Json>(&format!(
            "EXPLAIN (FORMAT JSON) EXECUTE replay_lookup('{ws}', gen_random_uuid()::text, 'k')"
        ))
        .unwrap()
        .unwrap()
        .0
        .to_string();
        Spi::run("DEALLOCATE replay_lookup").unwrap();
        explained
    }

    /// The replay lookup finds a transaction id through the unique index on (workspace_id,
    /// transaction_id) as a generic plan made on statistics from a one-revision workspace, after
    /// the workspace grew to 2,000 revisions (the plan that walked them all by
    /// `revisions_committed_idx` with the id as a filter).
    #[pg_test]
    fn replay_lookup_is_keyed() {
        let ws = new_workspace(ALICE);
        commit(
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a", "text": "a"}]),
        );
        Spi::run("RESET ROLE").unwrap();
        Spi::run("ANALYZE supabash.revisions").unwrap();
        add_revisions(&ws, 2000);
        let explained = explain_replay_lookup(&ws);
        assert!(
            explained.contains("revisions_workspace_id_transaction_id_key"),
            "{explained}"
        );
        assert!(
            explained.contains("revisions_idempotency_idx"),
            "{explained}"
        );
        assert!(!explained.contains("\"Sort\""), "{explained}");
        assert!(
            !explained.contains("revisions_committed_idx"),
            "{explained}"
        );
    }

    /// The replay lookup's row-level security check is a condition of its index scans (the
    /// owner column against `supabash._row_owner()`), with no subplan and no read of the owner's
    /// workspaces: an owner of thousands of workspaces once made every statement of a commit
    /// read and hash all of them (`workspace_id IN (SELECT id ...)` policies; and, with 0.6.0's
    /// `EXISTS` policies, a per-row lookup of the workspace).
    #[pg_test]
    fn replay_lookup_checks_one_workspace() {
        let ws = new_workspace(ALICE);
        commit(
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a", "text": "a"}]),
        );
        Spi::run("SELECT count(supabash_create_workspace()) FROM generate_series(1, 5000)")
            .unwrap();
        Spi::run("RESET ROLE").unwrap();
        add_revisions(&ws, 2000);
        Spi::run("ANALYZE supabash.workspaces").unwrap();
        Spi::run("ANALYZE supabash.revisions").unwrap();
        // Planned under the policies, as the RPCs run it.
        Spi::run("SET LOCAL ROLE supabash_owner").unwrap();
        let explained = explain_replay_lookup(&ws);
        assert!(!explained.contains("SubPlan"), "{explained}");
        assert!(!explained.contains("workspaces"), "{explained}");
        let policy_in_index = "AND (owner_id = supabash._row_owner()))";
        assert_eq!(explained.matches(policy_in_index).count(), 4, "{explained}");
    }

    /// The receipt's time, formatted in Rust, reads as `supabash.utc_text` writes it, over
    /// times spread across the years a commit can be made in, and the transaction's own.
    #[pg_test]
    fn utc_text_matches_sql() {
        let step: i64 = 7_919_999_999_937; // about 92 days, odd microseconds
        for i in -200..=200i64 {
            let us = 1_796_342_400_000_000 + i * step;
            let sql = Spi::get_one_with_args::<String>(
                "SELECT supabash.utc_text(to_timestamp(0) + $1 * interval '1 microsecond')",
                &[us.into()],
            )
            .unwrap()
            .unwrap();
            assert_eq!(crate::pg::clock::utc_text(us), sql, "{us}");
        }
        let now = Spi::get_one::<String>("SELECT supabash.utc_text(now())")
            .unwrap()
            .unwrap();
        assert_eq!(crate::pg::clock::now_utc_text(), now);
    }

    #[pg_test(error = "SUPABASH_WORKSPACE_DENIED: workspace not found or not owned by the caller")]
    fn another_user_is_denied() {
        let ws = new_workspace(ALICE);
        become_user(BOB);
        call(
            "SELECT supabash_load_manifest($1)",
            vec![ws.as_str().into()],
        );
    }

    #[pg_test(error = "SUPABASH_COMMIT_CONFLICT: the workspace head moved since the base revision")]
    fn stale_base_conflicts() {
        let ws = new_workspace(ALICE);
        commit(
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a", "text": "1"}]),
        );
        commit(
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a", "text": "2"}]),
        );
    }

    #[pg_test(error = "SUPABASH_PATH_NOT_FOUND: \"/missing\" does not exist")]
    fn delete_of_missing_path_fails() {
        let ws = new_workspace(ALICE);
        commit(&ws, None, json!([{"op": "delete", "path": "/missing"}]));
    }

    /// The handler table and the SQL layer agree: every native operation has its public
    /// `supabash_<op>` wrapper, and every operation a wrapper sends is in the table.
    #[pg_test]
    fn the_handler_table_matches_the_sql_wrappers() {
        let table: std::collections::BTreeSet<&str> =
            crate::rpc::operations().into_iter().collect();
        for op in &table {
            let exists = Spi::get_one_with_args::<bool>(
                "SELECT EXISTS (SELECT 1 FROM pg_proc
                                 WHERE pronamespace = 'public'::regnamespace AND proname = $1)",
                &[format!("supabash_{op}").into()],
            )
            .unwrap()
            .unwrap();
            assert!(exists, "no SQL wrapper supabash_{op}");
        }
        let sent: Vec<String> = Spi::get_one::<Vec<String>>(
            r"SELECT array_agg(DISTINCT m[1]) FROM pg_proc p,
                     regexp_matches(p.prosrc, 'supabash\._(?:write|read|call)\(''([a-z_]+)''', 'g') AS m
               WHERE p.pronamespace IN ('public'::regnamespace, 'supabash'::regnamespace)",
        )
        .unwrap()
        .unwrap();
        assert!(sent.len() >= 20, "the wrappers were found: {sent:?}");
        for op in sent {
            assert!(table.contains(op.as_str()), "{op} is sent but not routed");
        }
    }

    /// An installed schema older than the support window is refused on every RPC with the
    /// upgrade hint (the schema is made to look like 0.4.0's: no audit trail).
    #[pg_test(
        error = "SUPABASH_SCHEMA_OUTDATED: this database's supabash schema is older than 0.5.0, the oldest this library serves: run ALTER EXTENSION supabash UPDATE"
    )]
    fn an_older_schema_is_refused() {
        Spi::run("ALTER TABLE supabash.audit_records RENAME TO audit_records_gone").unwrap();
        new_workspace(ALICE);
    }

    #[pg_test(error = "deliberate panic for tests")]
    fn panic_becomes_an_error() {
        Spi::run("SELECT supabash._call('panic', '{}')").unwrap();
    }

    #[pg_test]
    fn claims_under_another_role_identify_nobody() {
        Spi::run_with_args(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[json!({ "sub": ALICE, "role": "authenticated" })
                .to_string()
                .into()],
        )
        .unwrap();
        let owner = Spi::get_one::<pgrx::Uuid>("SELECT supabash.request_owner()").unwrap();
        assert!(
            owner.is_none(),
            "claims without the matching SET ROLE must not identify a user"
        );
    }

    /// A cancel that arrived while native code ran is acted on at the next check: not before
    /// `interrupt::EVERY` units of work, then with PostgreSQL's own error.
    #[pg_test(error = "canceling statement due to user request")]
    fn a_pending_cancel_stops_native_work_at_the_next_check() {
        use crate::pg::interrupt;
        interrupt::tick(interrupt::EVERY);
        // SAFETY: the flags a cancel request's signal handler sets, set on the backend's only
        // thread.
        unsafe {
            pg_sys::QueryCancelPending = 1;
            pg_sys::InterruptPending = 1;
        }
        interrupt::tick(interrupt::EVERY / 2);
        interrupt::tick(interrupt::EVERY / 2);
        unreachable!("the second half should have been checked");
    }
}

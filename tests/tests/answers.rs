//! What only the database can answer (issue 25): one path's history, reads as of a time,
//! server-side search, change announcements, files and rows in one transaction.

use serde_json::{json, Value};
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, SqlRpc};

/// `(op, path, from)` of every version in a page, in order.
fn ops(page: &Value) -> Vec<(String, String, Option<String>)> {
    page["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["op"].as_str().unwrap().to_owned(),
                v["path"].as_str().unwrap().to_owned(),
                v["from"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn v(op: &str, path: &str, from: Option<&str>) -> (String, String, Option<String>) {
    (op.into(), path.into(), from.map(str::to_owned))
}

/// A file written, changed, moved, changed, deleted and written again; another file at the
/// source path after the move.
async fn moved_file(rest: &mut SqlRpc, owner: &Caller) -> (String, Vec<String>) {
    let ws = rest.create_workspace(owner).await;
    let mut revs: Vec<String> = Vec::new();
    for changes in [
        json!([{"op": "upsert", "path": "/a.md", "text": "one"},
               {"op": "upsert", "path": "/other.md", "text": "x"}]),
        json!([{"op": "upsert", "path": "/a.md", "text": "two"}]),
        json!([{"op": "upsert", "path": "/other.md", "text": "y"}]),
        json!([{"op": "move", "from": "/a.md", "path": "/b.md"}]),
        json!([{"op": "upsert", "path": "/b.md", "text": "three"},
               {"op": "upsert", "path": "/a.md", "text": "new a"}]),
        json!([{"op": "delete", "path": "/b.md"}]),
        json!([{"op": "upsert", "path": "/b.md", "text": "again"}]),
    ] {
        let base = revs.last().cloned();
        revs.push(rest.commit_as(owner, &ws, base.as_deref(), changes).await);
    }
    (ws, revs)
}

#[tokio::test]
async fn a_path_history_lists_its_versions_and_follows_moves() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let (ws, revs) = moved_file(&mut rest, &owner).await;
    let history = |args: Value| {
        let mut a = json!({ "workspace_id": ws, "path": "/b.md" });
        a.as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        a
    };

    // Newest first, without following the move: the history starts at the move.
    let page = rest
        .call(&owner, "supabash_path_history", history(json!({})))
        .await
        .unwrap();
    assert_eq!(
        ops(&page),
        vec![
            v("add", "/b.md", None),
            v("delete", "/b.md", None),
            v("modify", "/b.md", None),
            v("move", "/b.md", Some("/a.md")),
        ]
    );
    let newest = &page["versions"][0];
    assert_eq!(newest["revision"], json!(revs[6]));
    assert_eq!(newest["position"], json!(7));
    assert_eq!(newest["size"], json!(5));
    assert_eq!(newest["actor"], json!("owner"));
    assert!(newest["committedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(newest["hash"].as_str().unwrap().len(), 64);
    assert!(page["versions"][1]["hash"].is_null());
    assert!(page["nextCursor"].is_null());

    // Following the move: /a.md's versions before it, oldest first, a page of two at a time.
    let mut all = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let page = rest
            .call(
                &owner,
                "supabash_path_history",
                history(json!({"follow_moves": true, "oldest_first": true, "page_size": 2, "cursor": cursor})),
            )
            .await
            .unwrap();
        pages += 1;
        eprintln!("page {pages}: {page}");
        all.extend(ops(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(
        all,
        vec![
            v("add", "/a.md", None),
            v("modify", "/a.md", None),
            v("move", "/b.md", Some("/a.md")),
            v("modify", "/b.md", None),
            v("delete", "/b.md", None),
            v("add", "/b.md", None),
        ]
    );

    // The source path's own history shows the move away and the new file written there.
    let page = rest
        .call(
            &owner,
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/a.md", "oldest_first": true }),
        )
        .await
        .unwrap();
    assert_eq!(
        ops(&page),
        vec![
            v("add", "/a.md", None),
            v("modify", "/a.md", None),
            v("move", "/b.md", Some("/a.md")),
            v("add", "/a.md", None),
        ]
    );

    // A path with no version, a bad cursor.
    expect_err(
        rest.call(
            &owner,
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/never.md" }),
        )
        .await,
        "22023",
        Some("SUPABASH_PATH_NOT_FOUND"),
    );
    for bad in ["x", "-1", "1e3", " 3"] {
        expect_err(
            rest.call(
                &owner,
                "supabash_path_history",
                history(json!({"cursor": bad})),
            )
            .await,
            "22023",
            Some("SUPABASH_INVALID_ARGUMENT"),
        );
    }
}

#[tokio::test]
async fn a_path_history_survives_purge_and_redaction() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let (ws, _) = moved_file(&mut rest, &owner).await;
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": 2 }),
    )
    .await
    .unwrap();
    // /other.md's first version is still visible at the retained revisions; its revisions
    // are gone.
    let page = rest
        .call(
            &owner,
            "supabash_path_history",
            json!({ "workspace_id": ws, "path": "/other.md" }),
        )
        .await
        .unwrap();
    let versions = page["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{page}");
    // Its predecessor went with the purged revisions: it reads as added.
    assert_eq!(versions[0]["op"], json!("add"));
    assert_eq!(versions[0]["position"], json!(3));
    assert!(versions[0]["revision"].is_null());
    assert!(versions[0]["actor"].is_null());
    assert_eq!(versions[0]["size"], json!(1));
}

/// The detail of an error as JSON.
fn detail(e: &supabash_tests::DbError) -> Value {
    serde_json::from_str(e.detail.as_deref().expect("a detail")).unwrap()
}

#[tokio::test]
async fn reads_take_a_point_in_time() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let mut revs: Vec<String> = Vec::new();
    for i in 1..=5 {
        let base = revs.last().cloned();
        let changes = json!([{"op": "upsert", "path": "/f.md", "text": format!("v{i}")}]);
        revs.push(rest.commit_as(&owner, &ws, base.as_deref(), changes).await);
    }
    let records = rest
        .call(&owner, "supabash_history", json!({ "workspace_id": ws }))
        .await
        .unwrap()["records"]
        .clone();
    let at: Vec<String> = (0..5)
        .map(|i| records[i]["committedAt"].as_str().unwrap().to_owned())
        .collect();
    let call = |rpc: &'static str, args: Value| (rpc, args);
    let doc = |t: &str| {
        call(
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/f.md", "revision": t }),
        )
    };

    // Each revision's own time reads it; an offset that names the same instant does too.
    for (i, t) in at.iter().enumerate() {
        let (rpc, args) = doc(t);
        let d = rest.call(&owner, rpc, args).await.unwrap();
        assert_eq!(d["revision"], json!(revs[i]), "{t}");
        assert_eq!(d["text"], json!(format!("v{}", i + 1)));
    }
    let offset = at[1].replace('Z', "+00:00").replacen("T", "t", 1);
    let (rpc, args) = doc(&offset);
    assert_eq!(
        rest.call(&owner, rpc, args).await.unwrap()["revision"],
        json!(revs[1])
    );
    // Every read that takes a revision takes a time.
    for (rpc, args, field) in [
        (
            "supabash_load_manifest",
            json!({ "workspace_id": ws, "revision": at[2] }),
            "/revision",
        ),
        (
            "supabash_load_snapshot",
            json!({ "workspace_id": ws, "revision": at[2] }),
            "/revision",
        ),
        (
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/", "revision": at[2] }),
            "/revision",
        ),
        (
            "supabash_load_revision",
            json!({ "workspace_id": ws, "revision": at[2] }),
            "/receipt/revision",
        ),
        (
            "supabash_diff",
            json!({ "workspace_id": ws, "from_ref": {"revision": at[2]}, "to_ref": {"revision": at[2]} }),
            "/from",
        ),
    ] {
        let answer = rest.call(&owner, rpc, args).await.unwrap();
        let got = answer.pointer(field).unwrap();
        assert!(
            got == &json!(revs[2]) || got.to_string().contains(&revs[2]),
            "{rpc}: {answer}"
        );
    }

    // Before the first revision, in the future, malformed.
    let (rpc, args) = doc("2001-01-01T00:00:00Z");
    let e = expect_err(
        rest.call(&owner, rpc, args).await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );
    assert_eq!(detail(&e)["nearestRevision"], json!(revs[0]), "{e}");
    let (rpc, args) = doc("2999-01-01T00:00:00.000001Z");
    let e = expect_err(
        rest.call(&owner, rpc, args).await,
        "22023",
        Some("SUPABASH_INVALID_ARGUMENT"),
    );
    assert!(e.message.contains("in the future"), "{e}");
    for bad in [
        "2026-02-30T00:00:00Z",
        "2026-12-03T12:00:00",
        "2026-12-03T12:00:00.1234567Z",
        "2026-12-03 12:00:00Z",
    ] {
        let (rpc, args) = doc(bad);
        let e = expect_err(
            rest.call(&owner, rpc, args).await,
            "22023",
            Some("SUPABASH_INVALID_ARGUMENT"),
        );
        assert!(e.message.contains("malformed time"), "{e}");
    }

    // Purge revisions 2 to 4 (the first is checkpointed): a time among them names both
    // neighbours; the first and the last still read.
    rest.call(
        &owner,
        "supabash_checkpoint",
        json!({ "workspace_id": ws, "revision": revs[0] }),
    )
    .await
    .unwrap();
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": 1 }),
    )
    .await
    .unwrap();
    let (rpc, args) = doc(&at[2]);
    let e = expect_err(
        rest.call(&owner, rpc, args).await,
        "22023",
        Some("SUPABASH_REVISION_NOT_FOUND"),
    );
    assert!(e.message.contains("purged"), "{e}");
    assert_eq!(detail(&e)["nearestRevision"], json!(revs[0]), "{e}");
    assert_eq!(detail(&e)["nextRevision"], json!(revs[4]), "{e}");
    for i in [0, 4] {
        let (rpc, args) = doc(&at[i]);
        assert_eq!(
            rest.call(&owner, rpc, args).await.unwrap()["revision"],
            json!(revs[i])
        );
    }
}

/// `(path, line, column)` of every match in a page.
fn hits(page: &Value) -> Vec<(String, i64, i64)> {
    page["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_owned(),
                m["line"].as_i64().unwrap(),
                m["column"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn hit(path: &str, line: i64, column: i64) -> (String, i64, i64) {
    (path.to_owned(), line, column)
}

#[tokio::test]
async fn grep_searches_a_revision_on_the_server() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([
                {"op": "upsert", "path": "/src/main.rs", "text": "fn main() {\n    let a.b = 1;\n    TODO: axb\n}\n"},
                {"op": "upsert", "path": "/src/deep/lib.rs", "text": "// todo later\r\npub fn f() {}\n"},
                {"op": "upsert", "path": "/docs/guide.md", "text": "# Guide\nnothing to do\nTODO write\n"},
                {"op": "upsert", "path": "/data/tool", "base64": "VE9ETwBUT0RP"},
                {"op": "upsert", "path": "/secret.md", "text": "password=hunter2\n"},
            ]),
        )
        .await;
    let grep = |extra: Value| {
        let mut a = json!({ "workspace_id": ws });
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };

    // A regex, case-sensitive: the binary file (it holds a NUL) is skipped.
    let page = rest
        .call(&owner, "supabash_grep", grep(json!({"pattern": "TODO"})))
        .await
        .unwrap();
    assert_eq!(
        hits(&page),
        vec![hit("/docs/guide.md", 3, 1), hit("/src/main.rs", 3, 5)]
    );
    assert_eq!(page["binarySkipped"], json!(1));
    // It is named as matching (grep's "Binary file ... matches"), and only where it does.
    assert_eq!(page["binaryMatches"], json!(["/data/tool"]));
    assert_eq!(page["filesSearched"], json!(4));
    assert_eq!(page["revision"], json!(r1));
    assert_eq!(page["matches"][1]["text"], json!("    TODO: axb"));
    // Ignoring case; a CR before the newline is not part of the line.
    let page = rest
        .call(
            &owner,
            "supabash_grep",
            grep(json!({"pattern": "todo", "ignore_case": true, "context_lines": 1})),
        )
        .await
        .unwrap();
    assert_eq!(
        hits(&page),
        vec![
            hit("/docs/guide.md", 3, 1),
            hit("/src/deep/lib.rs", 1, 4),
            hit("/src/main.rs", 3, 5)
        ]
    );
    assert_eq!(page["matches"][1]["text"], json!("// todo later"));
    assert_eq!(page["matches"][0]["before"], json!(["nothing to do"]));
    assert_eq!(page["matches"][2]["after"], json!(["}"]));
    // A fixed string takes `.` literally; the regex does not.
    for (fixed, want) in [(true, 1), (false, 2)] {
        let page = rest
            .call(
                &owner,
                "supabash_grep",
                grep(json!({"pattern": "a.b", "fixed_strings": fixed})),
            )
            .await
            .unwrap();
        assert_eq!(hits(&page).len(), want, "fixed {fixed}: {page}");
        assert_eq!(page["binarySkipped"], json!(1));
        assert_eq!(page["binaryMatches"], json!([]));
    }
    // Anchors hold at every line, not only at a body's ends.
    for (pattern, want) in [
        ("^TODO", vec![hit("/docs/guide.md", 3, 1)]),
        ("axb$", vec![hit("/src/main.rs", 3, 11)]),
        ("(?i)later$", vec![hit("/src/deep/lib.rs", 1, 9)]),
        ("\\Apub fn", vec![hit("/src/deep/lib.rs", 2, 1)]),
    ] {
        let page = rest
            .call(&owner, "supabash_grep", grep(json!({ "pattern": pattern })))
            .await
            .unwrap();
        assert_eq!(hits(&page), want, "{pattern}");
    }
    // Globs: a file name, a directory, a rooted path with **.
    for (globs, want) in [
        (json!(["*.md"]), vec![hit("/docs/guide.md", 3, 1)]),
        (
            json!(["/src"]),
            vec![hit("/src/deep/lib.rs", 1, 4), hit("/src/main.rs", 3, 5)],
        ),
        (
            json!(["src/**/lib.rs"]),
            vec![hit("/src/deep/lib.rs", 1, 4)],
        ),
        (json!(["/src/*.rs"]), vec![hit("/src/main.rs", 3, 5)]),
    ] {
        let page = rest
            .call(
                &owner,
                "supabash_grep",
                grep(json!({"pattern": "(?i)todo", "paths": globs})),
            )
            .await
            .unwrap();
        assert_eq!(hits(&page), want, "{globs}");
    }

    // Pages: one match at a time, resumed by the cursor, give the whole list.
    let mut all = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = rest
            .call(
                &owner,
                "supabash_grep",
                grep(json!({"pattern": "(?i)todo|fn", "max_matches": 1, "cursor": cursor})),
            )
            .await
            .unwrap();
        all.extend(hits(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    let whole = rest
        .call(
            &owner,
            "supabash_grep",
            grep(json!({"pattern": "(?i)todo|fn"})),
        )
        .await
        .unwrap();
    assert_eq!(all, hits(&whole));
    assert_eq!(all.len(), 5);

    // A pattern that backtracks exponentially elsewhere is linear here.
    let evil = format!("{}!", "a".repeat(50_000));
    let r2 = rest
        .commit_as(
            &owner,
            &ws,
            Some(&r1),
            json!([{"op": "upsert", "path": "/evil.txt", "text": evil}]),
        )
        .await;
    let t = std::time::Instant::now();
    let page = rest
        .call(
            &owner,
            "supabash_grep",
            grep(json!({"pattern": "(a+)+$", "paths": ["/evil.txt"]})),
        )
        .await
        .unwrap();
    assert_eq!(hits(&page).len(), 0);
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());

    // Redacted versions are never searched: the secret's content is gone from the old revision.
    let r3 = rest
        .commit_as(
            &owner,
            &ws,
            Some(&r2),
            json!([{"op": "delete", "path": "/secret.md"}]),
        )
        .await;
    let secret = grep(json!({"pattern": "hunter2", "revision": r1}));
    assert_eq!(
        hits(
            &rest
                .call(&owner, "supabash_grep", secret.clone())
                .await
                .unwrap()
        )
        .len(),
        1
    );
    rest.call(
        &owner,
        "supabash_redact",
        json!({ "workspace_id": ws, "paths": ["/secret.md"], "before_revision": r3 }),
    )
    .await
    .unwrap();
    assert_eq!(
        hits(&rest.call(&owner, "supabash_grep", secret).await.unwrap()).len(),
        0
    );

    // Bad input.
    for (args, code) in [
        (json!({"pattern": "("}), "22023"),
        (json!({"pattern": ""}), "54000"),
        (json!({"pattern": "x".repeat(4097)}), "54000"),
        (json!({"pattern": "x", "paths": ["[z-a]"]}), "22023"),
        (
            json!({"pattern": "x", "paths": ["a".repeat(1025)]}),
            "54000",
        ),
        (json!({"pattern": "x", "max_matches": 1001}), "54000"),
        (json!({"pattern": "x", "context_lines": 11}), "54000"),
        (json!({"pattern": "x", "cursor": "nope"}), "22023"),
        (json!({"pattern": "x", "cursor": "1:relative"}), "22023"),
        (json!({"pattern": "(x{1000}){1000}"}), "22023"),
    ] {
        expect_err(
            rest.call(&owner, "supabash_grep", grep(args)).await,
            code,
            None,
        );
    }
}

#[tokio::test]
async fn grep_pages_within_the_decode_budget() {
    let cluster = Cluster::shared();
    let dsn = supabash_tests::support::authenticator_with(
        cluster,
        "grep_low_ceiling",
        &[("supabash.max_decoded_per_call", "1MB")],
    )
    .await;
    let mut rest = SqlRpc::connect(&dsn).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    // Three files of 600 KiB: one fits a call's 1 MB, two do not.
    let big = |c: char| {
        format!(
            "{}needle\n",
            format!("{}\n", c.to_string().repeat(99)).repeat(6144)
        )
    };
    rest.commit_as(
        &owner,
        &ws,
        None,
        json!([
            {"op": "upsert", "path": "/a.txt", "text": big('a')},
            {"op": "upsert", "path": "/b.txt", "text": big('b')},
            {"op": "upsert", "path": "/c.txt", "text": big('c')},
        ]),
    )
    .await;
    let mut cursor = Value::Null;
    let mut found = Vec::new();
    let mut pages = 0;
    loop {
        let page = rest
            .call(
                &owner,
                "supabash_grep",
                json!({ "workspace_id": ws, "pattern": "needle", "cursor": cursor }),
            )
            .await
            .unwrap();
        pages += 1;
        assert_eq!(page["filesSearched"], json!(1), "{page}");
        found.extend(hits(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(
        found,
        vec![
            hit("/a.txt", 6145, 1),
            hit("/b.txt", 6145, 1),
            hit("/c.txt", 6145, 1)
        ]
    );
}

/// A direct-SQL caller commits files and its own rows in one transaction: a rollback undoes
/// both and releases the workspace; a retry with the same transaction id commits afresh.
#[tokio::test]
async fn files_and_application_rows_commit_in_one_transaction() {
    let cluster = Cluster::shared();
    let admin = supabash_tests::support::admin(cluster).await;
    admin
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS public.answers_tasks (
               id bigserial PRIMARY KEY, workspace_id uuid NOT NULL, revision uuid NOT NULL,
               title text NOT NULL);
             GRANT SELECT, INSERT ON public.answers_tasks TO authenticated;
             GRANT USAGE ON SEQUENCE public.answers_tasks_id_seq TO authenticated;",
        )
        .await
        .unwrap();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let sub = uuid::Uuid::new_v4().to_string();
    let owner = Caller::User(sub.clone());
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/task.md", "text": "draft"}]),
        )
        .await;
    let (mut app, conn) =
        tokio_postgres::connect(&cluster.dsn("authenticator"), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(conn);
    let claims = json!({ "role": "authenticated", "sub": sub, "aud": "authenticated" }).to_string();
    let transaction_id = uuid::Uuid::new_v4().to_string();
    let changes = json!([{"op": "upsert", "path": "/task.md", "text": "reviewed"}]).to_string();
    let tasks = || async {
        admin
            .query_one(
                "SELECT count(*) FROM public.answers_tasks WHERE workspace_id = $1::text::uuid",
                &[&ws],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
    };

    for attempt in ["rolled back", "committed"] {
        let tx = app.transaction().await.unwrap();
        tx.execute(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[&claims],
        )
        .await
        .unwrap();
        tx.batch_execute("SET LOCAL ROLE authenticated")
            .await
            .unwrap();
        let row = tx
            .query_one(
                "SELECT supabash_commit(workspace_id => $1, changes => $2::text::json, actor => 'app',
                          base_revision => $3, transaction_id => $4)",
                &[&ws, &changes, &r1, &transaction_id],
            )
            .await
            .unwrap();
        let receipt: Value = row.get(0);
        assert_eq!(receipt["replayed"], json!(false), "{attempt}: {receipt}");
        let revision = receipt["receipt"]["revision"].as_str().unwrap().to_owned();
        tx.execute(
            "INSERT INTO public.answers_tasks (workspace_id, revision, title)
             VALUES ($1::text::uuid, $2::text::uuid, 'review')",
            &[&ws, &revision],
        )
        .await
        .unwrap();
        // The workspace's row lock is held until the transaction ends: another commit waits
        // out its lock_timeout and gets the retryable coordination error.
        let busy = rest
            .call(
                &owner,
                "supabash_commit",
                json!({ "workspace_id": ws, "actor": "other", "base_revision": r1,
                        "changes": [{"op": "upsert", "path": "/other.md", "text": "x"}] }),
            )
            .await;
        expect_err(busy, "55P03", Some("SUPABASH_COMMIT_COORDINATION"));
        // A rollback leaves nothing of either (and frees the workspace at once); a commit both.
        let (want_tasks, want_head) = if attempt == "rolled back" {
            tx.rollback().await.unwrap();
            (0, r1.clone())
        } else {
            tx.commit().await.unwrap();
            (1, revision)
        };
        assert_eq!(tasks().await, want_tasks, "{attempt}");
        let head = rest
            .call(
                &owner,
                "supabash_load_manifest",
                json!({ "workspace_id": ws }),
            )
            .await
            .unwrap();
        assert_eq!(head["revision"], json!(want_head), "{attempt}");
    }
}

/// Announcements on a workspace's channel, as a direct connection receives them.
struct Listener {
    rx: tokio::sync::mpsc::UnboundedReceiver<Value>,
    _client: tokio_postgres::Client,
}

impl Listener {
    async fn new(cluster: &Cluster, ws: &str) -> Listener {
        let (client, mut conn) =
            tokio_postgres::connect(&cluster.dsn("postgres"), tokio_postgres::NoTls)
                .await
                .unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(m) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
                if let Ok(tokio_postgres::AsyncMessage::Notification(n)) = m {
                    let _ = tx.send(serde_json::from_str(n.payload()).unwrap());
                }
            }
        });
        client
            .batch_execute(&format!("LISTEN \"supabash:{ws}\""))
            .await
            .unwrap();
        Listener {
            rx,
            _client: client,
        }
    }

    /// The next announcement, or `None` after a short wait.
    async fn next(&mut self) -> Option<Value> {
        tokio::time::timeout(std::time::Duration::from_millis(500), self.rx.recv())
            .await
            .ok()
            .flatten()
    }
}

#[tokio::test]
async fn writes_announce_themselves_after_they_commit() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let mut listener = Listener::new(cluster, &ws).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a.md", "text": "secret words"}]),
        )
        .await;
    let a = listener
        .next()
        .await
        .expect("an announcement of the commit");
    assert_eq!(
        a,
        json!({"workspaceId": ws, "kind": "commit", "position": 1, "revision": r1})
    );
    // Never a path or content.
    assert!(!a.to_string().contains("/a.md") && !a.to_string().contains("secret"));
    let r2 = rest
        .commit_as(
            &owner,
            &ws,
            Some(&r1),
            json!([{"op": "upsert", "path": "/a.md", "text": "v2"}]),
        )
        .await;
    assert_eq!(listener.next().await.unwrap()["revision"], json!(r2));
    // A replayed commit and a refused one announce nothing.
    let refused = rest
        .call(
            &owner,
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "x", "base_revision": r1,
                    "changes": [{"op": "delete", "path": "/a.md"}] }),
        )
        .await;
    assert!(refused.is_err());
    assert_eq!(listener.next().await, None);
    // Purge and redaction announce the head they leave.
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": 1 }),
    )
    .await
    .unwrap();
    assert_eq!(
        listener.next().await.unwrap(),
        json!({"workspaceId": ws, "kind": "purge", "position": 2, "revision": r2})
    );
    rest.call(
        &owner,
        "supabash_redact",
        json!({ "workspace_id": ws, "metadata_keys": ["x"] }),
    )
    .await
    .unwrap();
    assert_eq!(listener.next().await.unwrap()["kind"], json!("redact"));
    // A dry run announces nothing.
    rest.call(
        &owner,
        "supabash_purge",
        json!({ "workspace_id": ws, "keep_revisions": 1, "dry_run": true }),
    )
    .await
    .unwrap();
    assert_eq!(listener.next().await, None);
}

/// The Rust client's methods over both transports.
#[tokio::test]
async fn the_client_reads_path_history_and_searches() {
    use supabash_tests::client::{new_user, workspace_with, BOTH};
    for via in BOTH {
        let ws = workspace_with(via, &new_user(), &[("/notes/a.md", "alpha\nbeta\n")]).await;
        let page = ws
            .path_history("/notes/a.md", None, None, false, false)
            .await
            .unwrap();
        assert_eq!(page.versions.len(), 1, "{via:?}");
        let found = ws
            .grep(
                "BETA",
                supabash_core::rpc::grep::Grep {
                    ignore_case: Some(true),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(found.matches.len(), 1, "{via:?}");
        assert_eq!((found.matches[0].line, found.matches[0].column), (2, 1));
    }
}

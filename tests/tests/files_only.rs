//! Files-only workspaces (issue 24, item 1): a workspace created with `files_only` keeps the
//! seed's text-only behaviour. A commit holding a symbolic link, a directory entry or a file
//! mode other than 0o644 is refused whole with `UNSUPPORTED_CONTENT` (path and what was
//! refused in the detail), nothing stored; times are kept; forks inherit the option; the
//! listing and the open answers show it, and the opened workspace's capabilities say what it
//! stores. A 0.5.0 schema refuses the option with the upgrade hint.

use serde_json::{json, Value};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, OpenMode, PostgresTransport, Workspace};
use supabash_core::posix::Capabilities;
use supabash_tests::client::{cluster, new_user, transport, user_claims, Via, BOTH};
use supabash_tests::{Caller, Cluster, DbError, SqlRpc};

const TIME: i64 = 1_700_000_000_123_456_789;

async fn connect() -> SqlRpc {
    SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await
}

async fn create(rest: &mut SqlRpc, who: &Caller, args: Value) -> Value {
    rest.call(who, "supabash_create_workspace", args)
        .await
        .unwrap()
}

async fn head(rest: &mut SqlRpc, who: &Caller, ws: &str) -> Value {
    rest.call(who, "supabash_load_manifest", json!({ "workspace_id": ws }))
        .await
        .unwrap()
}

async fn commit(
    rest: &mut SqlRpc,
    who: &Caller,
    ws: &str,
    changes: Value,
) -> Result<Value, DbError> {
    let base = head(rest, who, ws).await["revision"].clone();
    rest.call(
        who,
        "supabash_commit",
        json!({ "workspace_id": ws, "actor": "files-only", "base_revision": base,
                "changes": changes }),
    )
    .await
}

/// What each kind of refusal sends, with a plain file beside it (the whole commit goes).
fn refused_commits() -> Vec<(Value, &'static str, &'static str)> {
    let plain = json!({"op": "upsert", "path": "/ok.md", "text": "kept only if all is"});
    vec![
        (
            json!([plain, {"op": "upsert", "path": "/link", "text": "ok.md", "kind": "symlink"}]),
            "/link",
            "symlink",
        ),
        (
            json!([plain, {"op": "upsert", "path": "/empty", "kind": "directory"}]),
            "/empty",
            "directory",
        ),
        (
            json!([plain, {"op": "upsert", "path": "/run.sh", "text": "#!/bin/sh\n", "mode": 0o755}]),
            "/run.sh",
            "mode",
        ),
        (
            json!([plain, {"op": "upsert", "path": "/secret", "text": "x", "mode": 0o600}]),
            "/secret",
            "mode",
        ),
        (
            json!([plain, {"op": "setattr", "path": "/a.md", "mode": 0o755}]),
            "/a.md",
            "mode",
        ),
    ]
}

#[tokio::test]
async fn a_files_only_workspace_refuses_links_directories_and_modes_storing_nothing() {
    let mut rest = connect().await;
    let alice = Caller::new_user();
    let created = create(&mut rest, &alice, json!({ "files_only": true })).await;
    assert_eq!(created["filesOnly"], json!(true), "{created}");
    let ws = created["workspaceId"].as_str().unwrap().to_owned();
    assert_eq!(
        rest.listed_workspace(&alice, &ws).await["filesOnly"],
        json!(true)
    );

    // Plain files, an explicit 0o644 and times are stored.
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([
            {"op": "upsert", "path": "/a.md", "text": "a", "mtimeNs": TIME},
            {"op": "upsert", "path": "/b.md", "text": "b", "mode": 0o644},
        ]),
    )
    .await
    .unwrap();
    let before = head(&mut rest, &alice, &ws).await;
    assert_eq!(before["filesOnly"], json!(true), "the open answer says it");
    let bytes = rest.listed_workspace(&alice, &ws).await["storeBytes"].clone();

    for (changes, path, what) in refused_commits() {
        let e = commit(&mut rest, &alice, &ws, changes.clone())
            .await
            .expect_err(&changes.to_string());
        assert!(
            e.message.starts_with("SUPABASH_UNSUPPORTED_CONTENT"),
            "{changes}: {e}"
        );
        assert_eq!(e.code, "0A000", "{changes}: {e}");
        assert!(e.message.contains(path), "{changes}: {e}");
        let detail: Value = serde_json::from_str(e.detail.as_deref().unwrap()).unwrap();
        assert_eq!(
            (&detail["path"], &detail["refused"]),
            (&json!(path), &json!(what)),
            "{changes}"
        );
    }
    assert_eq!(
        head(&mut rest, &alice, &ws).await,
        before,
        "nothing committed"
    );
    assert_eq!(
        rest.listed_workspace(&alice, &ws).await["storeBytes"],
        bytes,
        "no body stored"
    );

    // A time-only change is a change it stores.
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([{"op": "setattr", "path": "/b.md", "mtimeNs": TIME}]),
    )
    .await
    .unwrap();
    let m = head(&mut rest, &alice, &ws).await;
    let b = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/b.md")
        .unwrap();
    assert_eq!(b["mtimeNs"], json!(TIME));

    // Every open answer says it: the listing of a directory and the changes since a revision.
    let root = rest
        .call(
            &alice,
            "supabash_list_directory",
            json!({ "workspace_id": ws, "path": "/" }),
        )
        .await
        .unwrap();
    assert_eq!(root["filesOnly"], json!(true));
    let since = rest
        .call(
            &alice,
            "supabash_manifest_changes",
            json!({ "workspace_id": ws, "since": before["revision"] }),
        )
        .await
        .unwrap();
    assert_eq!(since["filesOnly"], json!(true));
}

#[tokio::test]
async fn a_normal_workspace_is_unchanged() {
    let mut rest = connect().await;
    let alice = Caller::new_user();
    for args in [json!({}), json!({ "files_only": false })] {
        let created = create(&mut rest, &alice, args.clone()).await;
        assert_eq!(created["filesOnly"], json!(false), "{args}");
        let ws = created["workspaceId"].as_str().unwrap().to_owned();
        assert_eq!(
            rest.listed_workspace(&alice, &ws).await["filesOnly"],
            json!(false)
        );
        commit(
            &mut rest,
            &alice,
            &ws,
            json!([{"op": "upsert", "path": "/a.md", "text": "a"}]),
        )
        .await
        .unwrap();
        for (changes, _, _) in refused_commits() {
            commit(&mut rest, &alice, &ws, changes.clone())
                .await
                .unwrap_or_else(|e| panic!("{args} {changes}: {e}"));
        }
        let m = head(&mut rest, &alice, &ws).await;
        assert!(m.get("filesOnly").is_none(), "absent unless set: {m}");
    }
}

#[tokio::test]
async fn a_fork_inherits_files_only() {
    let mut rest = connect().await;
    let alice = Caller::new_user();
    for files_only in [true, false] {
        let created = create(&mut rest, &alice, json!({ "files_only": files_only })).await;
        let ws = created["workspaceId"].as_str().unwrap().to_owned();
        commit(
            &mut rest,
            &alice,
            &ws,
            json!([{"op": "upsert", "path": "/a.md", "text": "a"}]),
        )
        .await
        .unwrap();
        let fork = rest
            .call(
                &alice,
                "supabash_fork",
                json!({ "workspace_id": ws, "actor": "forker" }),
            )
            .await
            .unwrap();
        let fork = fork["workspaceId"].as_str().unwrap().to_owned();
        assert_eq!(
            rest.listed_workspace(&alice, &fork).await["filesOnly"],
            json!(files_only)
        );
        let link = json!([{"op": "upsert", "path": "/l", "text": "a.md", "kind": "symlink"}]);
        let result = commit(&mut rest, &alice, &fork, link).await;
        assert_eq!(result.is_err(), files_only, "{files_only}: {result:?}");
    }
}

/// Through the client, over both transports: the builder's option, the capabilities of the
/// created and of every way of opening it again, and a refusal before anything is sent.
#[tokio::test]
async fn the_client_reports_and_refuses_before_sending() {
    for via in BOTH {
        let user = new_user();
        let ws = Workspace::builder(transport(via, &user).await)
            .files_only(true)
            .create()
            .await
            .unwrap();
        assert_eq!(ws.capabilities(), Capabilities::files_only("postgres"));
        let fs = ws.fs();
        fs.write("/a.md", "a").await.unwrap();
        ws.commit(CommitOptions::new("seed")).await.unwrap();
        let base = ws.base_revision();

        for (what, path) in [
            ("symlink", "/l"),
            ("directory", "/empty"),
            ("mode", "/a.md"),
        ] {
            match what {
                "symlink" => fs.symlink("a.md", path).await.unwrap(),
                "directory" => fs.mkdir(path, false).await.unwrap(),
                _ => fs.chmod(path, 0o755).await.unwrap(),
            }
            let e = ws
                .commit(CommitOptions::new("refused"))
                .await
                .expect_err(what);
            assert_eq!(
                e.code(),
                ErrorCode::UnsupportedContent,
                "{via:?} {what}: {e}"
            );
            assert_eq!(e.path(), Some(path), "{via:?} {what}: {e}");
            assert!(e.message().contains("files_only"), "{via:?} {what}: {e}");
            assert_eq!(
                ws.base_revision(),
                base,
                "{via:?} {what}: nothing committed"
            );
            ws.discard().await.unwrap();
        }

        for mode in [OpenMode::Eager, OpenMode::Lazy] {
            let again = Workspace::builder(transport(via, &user).await)
                .open_mode(mode)
                .open(ws.id())
                .await
                .unwrap();
            assert_eq!(
                again.capabilities(),
                Capabilities::files_only("postgres"),
                "{via:?} {mode:?}"
            );
            assert_eq!(again.base_revision(), base, "{via:?} {mode:?}");
        }

        let plain = Workspace::builder(transport(via, &user).await)
            .create()
            .await
            .unwrap();
        assert_eq!(plain.capabilities(), Capabilities::posix("postgres"));
    }
}

/// The server refuses what a client that does not check sends (a staged tree opened as a
/// normal workspace would be: here, the commit RPC through the transport).
#[tokio::test]
async fn the_server_refusal_reaches_the_client_typed() {
    let user = new_user();
    let ws = Workspace::builder(transport(Via::Postgres, &user).await)
        .files_only(true)
        .create()
        .await
        .unwrap();
    let t = transport(Via::Postgres, &user).await;
    let request = supabash_core::rpc::requests::Commit {
        workspace_id: ws.id().to_owned(),
        actor: Some("unchecked".into()),
        changes: vec![serde_json::from_value(
            json!({"op": "upsert", "path": "/l", "text": "x", "kind": "symlink"}),
        )
        .unwrap()],
        ..Default::default()
    };
    let e = supabash::transport::call(t.as_ref(), &request)
        .await
        .expect_err("refused");
    assert_eq!(e.code(), ErrorCode::UnsupportedContent, "{e}");
    assert_eq!(e.path(), Some("/l"), "{e}");
}

/// A database still on the 0.5.0 schema has no option to set: the client's create answers the
/// upgrade hint, and so does the extension's handler asked directly; a plain create works.
#[tokio::test]
async fn a_050_schema_refuses_the_option_with_the_upgrade_hint() {
    let c = cluster();
    let db = "files_only_schema_050";
    c.fresh_database(db);
    c.psql(db, "CREATE EXTENSION supabash VERSION '0.5.0'");
    let dsn = c.dsn_on("authenticator", db);
    let user = new_user();
    let connect = || async {
        std::sync::Arc::new(
            PostgresTransport::connect(&dsn, user_claims(&user))
                .await
                .unwrap(),
        ) as std::sync::Arc<dyn supabash::Transport>
    };
    let e = Workspace::builder(connect().await)
        .files_only(true)
        .create()
        .await
        .err()
        .expect("refused on 0.5.0");
    assert!(
        e.message().starts_with("SUPABASH_SCHEMA_OUTDATED")
            && e.message().contains("ALTER EXTENSION supabash UPDATE"),
        "{e}"
    );
    let plain = Workspace::builder(connect().await).create().await.unwrap();
    assert_eq!(plain.capabilities(), Capabilities::posix("postgres"));
    // An open asks for the compact manifest, which 0.5.0 does not have: it falls back to the
    // full one.
    plain.fs().write("/a.md", "a").await.unwrap();
    plain.commit(CommitOptions::new("seed")).await.unwrap();
    let opened = Workspace::builder(connect().await)
        .open_mode(OpenMode::Eager)
        .open(plain.id())
        .await
        .unwrap();
    assert_eq!(opened.fs().read("/a.md").await.unwrap(), b"a");

    // The handler itself refuses it: a wrapper as 0.6.0's passes the option, called as the
    // user PostgREST would call it.
    c.psql(
        db,
        "CREATE FUNCTION public.create_files_only() RETURNS jsonb LANGUAGE sql SECURITY DEFINER
           AS $$ SELECT supabash._write('create_workspace', json_build_object('files_only', true)) $$;
         GRANT EXECUTE ON FUNCTION public.create_files_only() TO authenticated",
    );
    let refused = c
        .try_psql(
            db,
            &format!(
                "SET ROLE authenticated; SET request.jwt.claims = '{}'; SELECT public.create_files_only()",
                user_claims(&user)
            ),
        )
        .expect_err("the handler refuses");
    assert!(
        refused.to_string().contains("SUPABASH_SCHEMA_OUTDATED"),
        "{refused}"
    );
}

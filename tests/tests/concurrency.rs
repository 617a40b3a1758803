//! Real concurrent connections: a commit race has exactly one winner; a workspace lock held
//! by another request makes a commit fail fast with the coordination error, and no session
//! outside the RPCs can take that lock; a failure after the head moved rolls the whole commit
//! back.

use base64::Engine;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use supabash_tests::support::{admin, expect_err, fingerprint, marker, workspace_counts};
use supabash_tests::{Caller, Cluster, SqlRpc};
use tokio::sync::{Barrier, Mutex};

/// These tests measure time and hold locks: one at a time.
static SERIAL: Mutex<()> = Mutex::const_new(());

const WRITERS: usize = 64;

async fn commit(
    rest: &mut SqlRpc,
    owner: &Caller,
    ws: &str,
    base: Option<&str>,
    changes: Value,
) -> Result<Value, supabash_tests::DbError> {
    rest.call(
        owner,
        "supabash_commit",
        json!({ "workspace_id": ws, "actor": "racer", "base_revision": base, "changes": changes }),
    )
    .await
}

/// Bytes unique to writer `i`: binary (not UTF-8) and a few KiB.
fn writer_bytes(i: usize) -> Vec<u8> {
    (0..4096u32)
        .map(|k| ((k.wrapping_mul(31) as usize + i * 7) % 251) as u8 | 0x80)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_writers_one_winner() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::shared();
    let owner = Caller::new_user();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let ws = rest.create_workspace(&owner).await;
    let base = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/race.md", "text": "base"}]),
        )
        .await;

    // 64 connections, all open before anyone starts.
    let mut conns = Vec::new();
    for _ in 0..WRITERS {
        conns.push(SqlRpc::connect(&cluster.dsn("authenticator")).await);
    }
    let barrier = Arc::new(Barrier::new(WRITERS));
    let mut tasks = Vec::new();
    for (i, mut conn) in conns.into_iter().enumerate() {
        let (barrier, owner, ws, base) = (barrier.clone(), owner.clone(), ws.clone(), base.clone());
        tasks.push(tokio::spawn(async move {
            let b64 = base64::engine::general_purpose::STANDARD.encode(writer_bytes(i));
            let changes = json!([
                {"op": "upsert", "path": "/race.md", "text": format!("writer {i} was here ✓")},
                {"op": "upsert", "path": format!("/w{i}.bin"), "base64": b64},
            ]);
            barrier.wait().await;
            let r = commit(&mut conn, &owner, &ws, Some(&base), changes).await;
            let alive = conn.alive().await;
            (i, r, alive)
        }));
    }
    let mut winners = Vec::new();
    let (mut conflicts, mut coordination) = (0, 0);
    for t in tasks {
        let (i, r, alive) = t.await.unwrap();
        assert!(alive, "writer {i}: connection lost");
        match r {
            Ok(v) => winners.push((i, v)),
            Err(e) if e.code == "PT409" => {
                assert_eq!(marker(&e), Some("SUPABASH_COMMIT_CONFLICT"), "{e}");
                conflicts += 1;
            }
            Err(e) if e.code == "55P03" => {
                assert_eq!(marker(&e), Some("SUPABASH_COMMIT_COORDINATION"), "{e}");
                coordination += 1;
            }
            Err(e) => panic!("writer {i}: unexpected error {e}"),
        }
    }
    eprintln!(
        "{WRITERS} writers: {} winner, {conflicts} conflicts, {coordination} coordination errors",
        winners.len()
    );
    assert_eq!(winners.len(), 1, "exactly one winner");
    assert_eq!(conflicts + coordination, WRITERS - 1);
    let (w, receipt) = &winners[0];
    assert_eq!(receipt["receipt"]["parentRevision"], json!(base));

    // The winner's bytes read back intact, and nobody else's landed.
    let doc = rest
        .call(
            &owner,
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": "/race.md" }),
        )
        .await
        .unwrap();
    assert_eq!(doc["text"], json!(format!("writer {w} was here ✓")));
    let bin = rest
        .call(
            &owner,
            "supabash_load_document",
            json!({ "workspace_id": ws, "path": format!("/w{w}.bin") }),
        )
        .await
        .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(bin["base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(bytes, writer_bytes(*w));
    let manifest = rest
        .call(
            &owner,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap();
    let paths: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let winner_bin = format!("/w{w}.bin");
    assert_eq!(paths, vec!["/race.md", winner_bin.as_str()]);
    assert_eq!(manifest["revision"], receipt["receipt"]["revision"]);
    let history = rest
        .call(&owner, "supabash_history", json!({ "workspace_id": ws }))
        .await
        .unwrap();
    assert_eq!(history["records"].as_array().unwrap().len(), 2);
    let admin = admin(cluster).await;
    let (revisions, entries, bodies) = workspace_counts(&admin, &ws).await;
    assert_eq!((revisions, entries, bodies), (2, 3, 3));
}

#[tokio::test]
async fn a_held_lock_gives_coordination_error_after_about_a_second() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::shared();
    let owner = Caller::new_user();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let ws = rest.create_workspace(&owner).await;
    let head = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a.md", "text": "a"}]),
        )
        .await;

    // Another request of the owner holds the workspace lock: its transaction is still open.
    let mut holder = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let tx = holder.client.transaction().await.unwrap();
    tx.execute(
        "SELECT set_config('request.jwt.claims', $1, true)",
        &[&json!({ "role": "authenticated", "sub": owner_sub(&owner) }).to_string()],
    )
    .await
    .unwrap();
    tx.batch_execute("SET LOCAL ROLE authenticated")
        .await
        .unwrap();
    tx.execute("SELECT supabash_checkpoint(workspace_id => $1)", &[&ws])
        .await
        .unwrap();

    let writes: Vec<(&str, Value)> = vec![
        (
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "a", "base_revision": head,
                    "changes": [{"op": "upsert", "path": "/a.md", "text": "b"}] }),
        ),
        ("supabash_checkpoint", json!({ "workspace_id": ws })),
        ("supabash_purge", json!({ "workspace_id": ws })),
    ];
    for (rpc, args) in writes {
        let started = Instant::now();
        let r = rest.call(&owner, rpc, args).await;
        let took = started.elapsed();
        let e = expect_err(r, "55P03", Some("SUPABASH_COMMIT_COORDINATION"));
        assert!(
            took >= Duration::from_millis(800) && took <= Duration::from_secs(5),
            "{rpc}: failed after {took:?}: {e}"
        );
        assert!(rest.alive().await);
    }
    // Reads do not take the lock.
    let m = rest
        .call(
            &owner,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap();
    assert_eq!(m["revision"], json!(head));

    // Once the holder lets go, the same commit goes through.
    tx.rollback().await.unwrap();
    let r = commit(
        &mut rest,
        &owner,
        &ws,
        Some(&head),
        json!([{"op": "upsert", "path": "/a.md", "text": "b"}]),
    )
    .await
    .unwrap();
    assert_eq!(r["receipt"]["parentRevision"], json!(head));
}

fn owner_sub(owner: &Caller) -> String {
    match owner {
        Caller::User(sub) => sub.clone(),
        other => panic!("not a user: {other:?}"),
    }
}

/// Workspace ids are not secret (receipts, URLs, capability claims): no session outside the
/// RPCs may be able to stall a workspace's commits by taking a lock on it.
#[tokio::test]
async fn no_foreign_session_can_block_a_workspace() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::shared();
    let owner = Caller::new_user();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let ws = rest.create_workspace(&owner).await;
    let mut head = None::<String>;

    // A login role holds every advisory lock key the workspace could be known by (the one
    // 0.2.0 used among them), at session level.
    let admin = admin(cluster).await;
    admin
        .batch_execute(
            "DO $$ BEGIN
               IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'lock_squatter') THEN
                 CREATE ROLE lock_squatter LOGIN;
               END IF;
               IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'analytics_reader') THEN
                 CREATE ROLE analytics_reader LOGIN BYPASSRLS;
                 GRANT pg_read_all_data TO analytics_reader;
               END IF;
             END $$",
        )
        .await
        .unwrap();
    let (squatter, conn) =
        tokio_postgres::connect(&cluster.dsn("lock_squatter"), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(conn);
    for key in [
        format!("SELECT pg_advisory_lock(hashtextextended('supabash:' || '{ws}', 0))"),
        format!("SELECT pg_advisory_lock(hashtextextended('{ws}', 0))"),
        format!("SELECT pg_advisory_lock(hashtext('{ws}'))"),
    ] {
        squatter.batch_execute(&key).await.unwrap();
    }
    for i in 0..3 {
        let started = Instant::now();
        let r = commit(
            &mut rest,
            &owner,
            &ws,
            head.as_deref(),
            json!([{"op": "upsert", "path": "/a.md", "text": format!("v{i}")}]),
        )
        .await
        .unwrap_or_else(|e| panic!("commit {i} blocked by a foreign advisory lock: {e}"));
        assert!(started.elapsed() < Duration::from_millis(800));
        head = Some(r["receipt"]["revision"].as_str().unwrap().to_owned());
    }

    // The workspace row lock is out of reach: no API role may lock private rows, and neither
    // may a read-all login that bypasses row-level security (locking needs UPDATE).
    for role in ["lock_squatter", "analytics_reader"] {
        let (c, conn) = tokio_postgres::connect(&cluster.dsn(role), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let e = c
            .execute(
                "SELECT 1 FROM supabash.workspaces WHERE id = $1::text::uuid FOR KEY SHARE",
                &[&ws],
            )
            .await
            .unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{role}: {e}");
    }
    for caller in [Caller::Anon, Caller::Service, owner.clone()] {
        let e = rest
            .sql_as(
                &caller,
                &format!("SELECT 1 FROM supabash.workspaces WHERE id = '{ws}' FOR KEY SHARE"),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, "42501", "{caller:?}: {e}");
    }
}

#[tokio::test]
async fn a_failure_after_the_head_moved_rolls_everything_back() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let owner = Caller::new_user();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let ws = rest.create_workspace(&owner).await;
    let head = commit(
        &mut rest,
        &owner,
        &ws,
        None,
        json!([{"op": "upsert", "path": "/keep.md", "text": "kept"},
               {"op": "upsert", "path": "/gone.md", "text": "to delete"}]),
    )
    .await
    .unwrap()["receipt"]["revision"]
        .as_str()
        .unwrap()
        .to_owned();

    // Test-only fault injection: after the UPDATE that moves the head, raise when this
    // session sets supabash_test.fail_after_head.
    admin
        .batch_execute(
            "CREATE FUNCTION public.inject_failure_after_head() RETURNS trigger
             LANGUAGE plpgsql AS $$
             BEGIN
               IF current_setting('supabash_test.fail_after_head', true) = 'on'
                  AND NEW.head_revision IS DISTINCT FROM OLD.head_revision THEN
                 RAISE EXCEPTION 'injected failure after the head moved to %', NEW.head_revision;
               END IF;
               RETURN NEW;
             END $$;
             CREATE TRIGGER inject_failure_after_head AFTER UPDATE ON supabash.workspaces
               FOR EACH ROW EXECUTE FUNCTION public.inject_failure_after_head();",
        )
        .await
        .unwrap();

    let before = fingerprint(&admin, &ws).await;
    let counts = workspace_counts(&admin, &ws).await;
    rest.client
        .batch_execute("SET supabash_test.fail_after_head = 'on'")
        .await
        .unwrap();
    let r = commit(
        &mut rest,
        &owner,
        &ws,
        Some(&head),
        json!([{"op": "upsert", "path": "/new.md", "text": "brand new body"},
               {"op": "upsert", "path": "/keep.md", "text": "changed"},
               {"op": "delete", "path": "/gone.md"},
               {"op": "move", "from": "/keep.md", "path": "/moved.md"}]),
    )
    .await;
    let e = r.expect_err("the injected failure must fail the commit");
    assert!(
        e.message.contains("injected failure after the head moved"),
        "{e}"
    );
    assert!(rest.alive().await);

    // Nothing of it remains: revisions, entries, bodies and the head are as before.
    assert_eq!(workspace_counts(&admin, &ws).await, counts);
    assert_eq!(fingerprint(&admin, &ws).await, before);
    let stray: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::text::uuid
              AND hash = sha256(convert_to('brand new body', 'UTF8'))",
            &[&ws],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stray, 0);
    rest.client
        .batch_execute("RESET supabash_test.fail_after_head")
        .await
        .unwrap();
    let m = rest
        .call(
            &owner,
            "supabash_load_manifest",
            json!({ "workspace_id": ws }),
        )
        .await
        .unwrap();
    assert_eq!(m["revision"], json!(head));
    assert_eq!(m["files"].as_array().unwrap().len(), 2);

    // Without the fault the same commit lands, on the same base.
    let ok = commit(
        &mut rest,
        &owner,
        &ws,
        Some(&head),
        json!([{"op": "upsert", "path": "/new.md", "text": "brand new body"}]),
    )
    .await
    .unwrap();
    assert_eq!(ok["receipt"]["parentRevision"], json!(head));
    admin
        .batch_execute(
            "DROP TRIGGER inject_failure_after_head ON supabash.workspaces;
             DROP FUNCTION public.inject_failure_after_head();",
        )
        .await
        .unwrap();
}

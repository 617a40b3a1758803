//! The per-owner quotas under concurrency (issue 23, item 5): commits to different workspaces
//! of one owner, and workspaces created at once, are counted one after the other, so neither
//! quota is overshot by interleaving.

use serde_json::{json, Value};
use std::time::Duration;
use supabash_tests::support::{admin, authenticator_with, expect_err};
use supabash_tests::{Caller, Cluster, DbError, SqlRpc};
use tokio::task::JoinHandle;

fn sub(owner: &Caller) -> String {
    match owner {
        Caller::User(sub) => sub.clone(),
        other => panic!("not a user: {other:?}"),
    }
}

/// About 900 KB of text that does not repeat across seeds.
fn blob(seed: u8) -> String {
    blob_of(seed, 900_000)
}

/// `len` bytes of text that does not repeat across seeds.
fn blob_of(seed: u8, len: u32) -> String {
    (0..len)
        .map(|i| (b'a' + ((i as u8).wrapping_mul(seed) % 26)) as char)
        .collect()
}

/// Opens a transaction on `rpc` as `owner` (PostgREST-shaped: claims, role) and runs `sql`
/// with `args` in it, leaving the transaction open.
async fn open_call<'a>(
    rpc: &'a mut SqlRpc,
    owner: &Caller,
    sql: &str,
    args: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> tokio_postgres::Transaction<'a> {
    let tx = rpc.client.transaction().await.unwrap();
    tx.execute(
        "SELECT set_config('request.jwt.claims', $1, true)",
        &[&json!({ "role": "authenticated", "sub": sub(owner) }).to_string()],
    )
    .await
    .unwrap();
    tx.batch_execute("SET LOCAL ROLE authenticated")
        .await
        .unwrap();
    tx.execute(sql, args).await.unwrap();
    tx
}

/// Ends the open transaction `tx` once `second` (a call of login role `role`) is either done or
/// waiting for a lock, whichever comes first, and answers the call's result: the first call is
/// in flight for as long as the second runs unless the second waits for it.
async fn end_first_when_second_waits_or_ends(
    cluster: &Cluster,
    role: &str,
    tx: tokio_postgres::Transaction<'_>,
    second: JoinHandle<Result<Value, DbError>>,
) -> Result<Value, DbError> {
    let admin = admin(cluster).await;
    let started = std::time::Instant::now();
    loop {
        let waiting: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'",
                &[&role],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 || second.is_finished() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the second call neither ended nor waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tx.commit().await.unwrap();
    second.await.unwrap()
}

/// Two 900 KB commits to two workspaces of one owner under a 1 MB quota, the second made
/// while the first is still in flight: the second waits for the first and is refused.
#[tokio::test]
async fn interleaved_commits_do_not_pass_the_byte_quota() {
    let cluster = Cluster::shared();
    let dsn = authenticator_with(
        cluster,
        "quota_race_bytes",
        &[("supabash.max_bytes_per_owner", "1MB")],
    )
    .await;
    let mut rest = SqlRpc::connect(&dsn).await;
    let owner = Caller::new_user();
    let a = rest.create_workspace(&owner).await;
    let b = rest.create_workspace(&owner).await;

    let mut first = SqlRpc::connect(&dsn).await;
    let changes_a = json!([{"op": "upsert", "path": "/a.txt", "text": blob(7)}]).to_string();
    let tx = open_call(
        &mut first,
        &owner,
        "SELECT supabash_commit(workspace_id => $1, actor => 't', changes => $2::text::json)",
        &[&a, &changes_a],
    )
    .await;

    let (o, b2) = (owner.clone(), b.clone());
    let second = tokio::spawn(async move {
        let args = json!({ "workspace_id": b2, "actor": "t",
                           "changes": [{"op": "upsert", "path": "/b.txt", "text": blob(11)}] });
        rest.call(&o, "supabash_commit", args).await
    });
    let r = end_first_when_second_waits_or_ends(cluster, "quota_race_bytes", tx, second).await;
    let e = expect_err(r, "54000", Some("SUPABASH_QUOTA_EXCEEDED"));
    assert!(e.message.contains("supabash.max_bytes_per_owner"), "{e}");
}

/// Far from the limit too: three 400 KB commits to three workspaces of one owner under a
/// 1 MB quota, all in flight at once. Each alone stays under half of the quota, any two fit,
/// all three would pass it: they are counted one after the other and exactly one is refused.
#[tokio::test]
async fn three_small_commits_in_flight_do_not_pass_the_byte_quota_together() {
    let cluster = Cluster::shared();
    let role = "quota_race_small";
    let dsn = authenticator_with(cluster, role, &[("supabash.max_bytes_per_owner", "1MB")]).await;
    let mut rest = SqlRpc::connect(&dsn).await;
    let owner = Caller::new_user();
    let a = rest.create_workspace(&owner).await;
    let b = rest.create_workspace(&owner).await;
    let c = rest.create_workspace(&owner).await;
    let commit =
        "SELECT supabash_commit(workspace_id => $1, actor => 't', changes => $2::text::json)";
    let changes = |path: &str, seed: u8| {
        json!([{ "op": "upsert", "path": path, "text": blob_of(seed, 400_000) }]).to_string()
    };

    // The first stays open until the others have run or wait for it.
    let mut first = SqlRpc::connect(&dsn).await;
    let changes_a = changes("/a.txt", 7);
    let tx = open_call(&mut first, &owner, commit, &[&a, &changes_a]).await;

    // The second commits its transaction only when told, after its statement.
    let (go, wait_go) = tokio::sync::oneshot::channel::<()>();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (o, dsn2, ran2, changes_b) = (
        owner.clone(),
        dsn.clone(),
        ran.clone(),
        changes("/b.txt", 11),
    );
    let second = tokio::spawn(async move {
        let mut conn = SqlRpc::connect(&dsn2).await;
        let tx = conn.client.transaction().await.unwrap();
        tx.execute(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[&json!({ "role": "authenticated", "sub": sub(&o) }).to_string()],
        )
        .await
        .unwrap();
        tx.batch_execute("SET LOCAL ROLE authenticated")
            .await
            .unwrap();
        let r = tx.execute(commit, &[&b, &changes_b]).await;
        ran2.store(true, std::sync::atomic::Ordering::SeqCst);
        wait_go.await.unwrap();
        match r {
            Ok(_) => tx
                .commit()
                .await
                .map(|_| Value::Null)
                .map_err(DbError::from),
            Err(e) => Err(DbError::from(e)),
        }
    });
    let o = owner.clone();
    let third = tokio::spawn(async move {
        let args = json!({ "workspace_id": c, "actor": "t",
                           "changes": [{"op": "upsert", "path": "/c.txt", "text": blob_of(13, 400_000)}] });
        rest.call(&o, "supabash_commit", args).await
    });

    let admin = admin(cluster).await;
    let started = std::time::Instant::now();
    loop {
        let waiting: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'",
                &[&role],
            )
            .await
            .unwrap()
            .get(0);
        let done = ran.load(std::sync::atomic::Ordering::SeqCst) && third.is_finished();
        if waiting >= 2 || done {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the calls neither ended nor waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tx.commit().await.unwrap();
    go.send(()).unwrap();
    let results = [second.await.unwrap(), third.await.unwrap()];
    let refused: Vec<&DbError> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(
        refused.len(),
        1,
        "exactly one of the later two is refused: {results:?}"
    );
    assert_eq!(refused[0].code, "54000", "{}", refused[0]);
    assert!(
        refused[0].message.contains("supabash.max_bytes_per_owner"),
        "{}",
        refused[0]
    );
}

/// Two workspaces created at once by an owner one below the count quota: one is refused.
#[tokio::test]
async fn workspaces_created_at_once_do_not_pass_the_count_quota() {
    let cluster = Cluster::shared();
    let dsn = authenticator_with(
        cluster,
        "quota_race_count",
        &[("supabash.max_workspaces_per_owner", "2")],
    )
    .await;
    let mut rest = SqlRpc::connect(&dsn).await;
    let owner = Caller::new_user();
    rest.create_workspace(&owner).await;

    let mut first = SqlRpc::connect(&dsn).await;
    let tx = open_call(
        &mut first,
        &owner,
        "SELECT supabash_create_workspace()",
        &[],
    )
    .await;
    let o = owner.clone();
    let second =
        tokio::spawn(async move { rest.call(&o, "supabash_create_workspace", json!({})).await });
    let r = end_first_when_second_waits_or_ends(cluster, "quota_race_count", tx, second).await;
    let e = expect_err(r, "54000", Some("SUPABASH_QUOTA_EXCEEDED"));
    assert!(
        e.message.contains("supabash.max_workspaces_per_owner"),
        "{e}"
    );
}

//! The core paths' kept plans (issue 22): the extension runs its statements as generic plans
//! by switching `plan_cache_mode` while they run, and plans them with `jit = off`; the
//! caller's settings are what they were after every call, a failing one included.

use serde_json::json;
use supabash_tests::{Caller, Cluster, SqlRpc};

/// `plan_cache_mode` and `jit` as the session sees them.
async fn mode(tx: &tokio_postgres::Transaction<'_>) -> String {
    tx.query_one(
        "SELECT current_setting('plan_cache_mode') || ' ' || current_setting('jit')",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

#[tokio::test]
async fn rpcs_leave_the_callers_plan_cache_mode_as_it_was() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let busy = rest.create_workspace(&owner).await;
    rest.commit_as(
        &owner,
        &busy,
        None,
        json!([{"op": "upsert", "path": "/b.md", "text": "b"}]),
    )
    .await;
    let sub = match &owner {
        Caller::User(sub) => sub.clone(),
        other => panic!("not a user: {other:?}"),
    };
    rest.client
        .batch_execute("SET plan_cache_mode = force_custom_plan; SET jit = on")
        .await
        .unwrap();
    let tx = rest.client.transaction().await.unwrap();
    tx.execute(
        "SELECT set_config('request.jwt.claims', $1, true)",
        &[&json!({ "role": "authenticated", "sub": sub }).to_string()],
    )
    .await
    .unwrap();
    tx.batch_execute("SET LOCAL ROLE authenticated")
        .await
        .unwrap();
    let changes = json!([{"op": "upsert", "path": "/a.md", "text": "a"}]).to_string();
    tx.execute(
        "SELECT supabash_commit(workspace_id => $1, actor => 't', changes => $2::text::json)",
        &[&ws, &changes],
    )
    .await
    .unwrap();
    assert_eq!(mode(&tx).await, "force_custom_plan on");
    tx.execute("SELECT supabash_load_manifest(workspace_id => $1)", &[&ws])
        .await
        .unwrap();
    assert_eq!(mode(&tx).await, "force_custom_plan on");
    // A commit that fails inside one of those statements (its lock wait times out: another
    // request of the owner holds that workspace), in a savepoint: rolled back to it, the
    // setting is still the caller's.
    let mut holder = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let held = holder.client.transaction().await.unwrap();
    held.execute(
        "SELECT set_config('request.jwt.claims', $1, true)",
        &[&json!({ "role": "authenticated", "sub": sub }).to_string()],
    )
    .await
    .unwrap();
    held.batch_execute("SET LOCAL ROLE authenticated")
        .await
        .unwrap();
    held.execute("SELECT supabash_checkpoint(workspace_id => $1)", &[&busy])
        .await
        .unwrap();
    tx.batch_execute("SAVEPOINT s").await.unwrap();
    let waited = tx
        .execute(
            "SELECT supabash_commit(workspace_id => $1, actor => 't', changes => $2::text::json)",
            &[&busy, &changes],
        )
        .await;
    let e = waited.expect_err("the workspace lock is held");
    let message = e.as_db_error().map(|d| d.message().to_owned());
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("SUPABASH_COMMIT_COORDINATION")),
        "{e:?}"
    );
    tx.batch_execute("ROLLBACK TO SAVEPOINT s").await.unwrap();
    assert_eq!(mode(&tx).await, "force_custom_plan on");
    held.rollback().await.unwrap();
    tx.commit().await.unwrap();
    let after: String = rest
        .client
        .query_one(
            "SELECT current_setting('plan_cache_mode') || ' ' || current_setting('jit')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(after, "force_custom_plan on");
}

//! Helpers the end-to-end tests share: a superuser connection, error-marker checks and a
//! fingerprint of everything stored for one workspace.

use crate::{Cluster, DbError};
use serde_json::Value;
use tokio_postgres::{Client, NoTls};

/// A connection to database `app` as the superuser `postgres` (bypasses row-level security).
pub async fn admin(cluster: &Cluster) -> Client {
    let (client, conn) = tokio_postgres::connect(&cluster.dsn("postgres"), NoTls)
        .await
        .expect("connect as postgres");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// The `SUPABASH_*` marker an error message starts with, if any.
pub fn marker(e: &DbError) -> Option<&str> {
    let m = e.message.split(':').next()?;
    m.starts_with("SUPABASH_").then_some(m)
}

/// Asserts that `r` failed with `code` and, when given, `marker`; returns the error.
#[track_caller]
pub fn expect_err(r: Result<Value, DbError>, code: &str, want: Option<&str>) -> DbError {
    let e = match r {
        Ok(v) => panic!("expected {code} {want:?}, got a result: {v}"),
        Err(e) => e,
    };
    assert_eq!(e.code, code, "{e}");
    if let Some(w) = want {
        assert_eq!(marker(&e), Some(w), "{e}");
    }
    e
}

/// Every stored row of one workspace (workspace, revisions, entries, bodies, checkpoints), as
/// one digest: equal digests mean nothing of that workspace changed.
pub async fn fingerprint(admin: &Client, workspace: &str) -> String {
    let row = admin
        .query_one(
            "SELECT md5(concat_ws('|',
               (SELECT string_agg(w::text, ',') FROM supabash.workspaces w WHERE w.id = $1::text::uuid),
               (SELECT string_agg(r::text, ',' ORDER BY r.position) FROM supabash.revisions r
                 WHERE r.workspace_id = $1::text::uuid),
               (SELECT string_agg(e::text, ',' ORDER BY e.path, e.valid_from) FROM supabash.entries e
                 WHERE e.workspace_id = $1::text::uuid),
               (SELECT string_agg(encode(b.hash, 'hex') || ':' || md5(b.body), ',' ORDER BY b.hash)
                  FROM supabash.bodies b WHERE b.workspace_id = $1::text::uuid),
               (SELECT string_agg(c::text, ',' ORDER BY c.checkpoint_id) FROM supabash.checkpoints c
                 WHERE c.workspace_id = $1::text::uuid),
               (SELECT string_agg(n::text, ',' ORDER BY n.revision_id, n.key, n.version)
                  FROM supabash.revision_notes n WHERE n.workspace_id = $1::text::uuid)))",
            &[&workspace],
        )
        .await
        .expect("fingerprint");
    row.get(0)
}

/// Row counts of every private table, to see that nothing at all was written.
pub async fn table_counts(admin: &Client) -> Vec<i64> {
    let row = admin
        .query_one(
            "SELECT ARRAY[(SELECT count(*) FROM supabash.workspaces), (SELECT count(*) FROM supabash.revisions),
                          (SELECT count(*) FROM supabash.entries), (SELECT count(*) FROM supabash.bodies),
                          (SELECT count(*) FROM supabash.checkpoints)]",
            &[],
        )
        .await
        .expect("table counts");
    row.get(0)
}

/// Counts of one workspace's rows as the superuser sees them: revisions, entries, bodies.
pub async fn workspace_counts(admin: &Client, workspace: &str) -> (i64, i64, i64) {
    let row = admin
        .query_one(
            "SELECT (SELECT count(*) FROM supabash.revisions WHERE workspace_id = $1::text::uuid),
                    (SELECT count(*) FROM supabash.entries WHERE workspace_id = $1::text::uuid),
                    (SELECT count(*) FROM supabash.bodies WHERE workspace_id = $1::text::uuid)",
            &[&workspace],
        )
        .await
        .expect("workspace counts");
    (row.get(0), row.get(1), row.get(2))
}

/// A login role like PostgREST's `authenticator` (NOINHERIT, may become anon, authenticated
/// and service_role) whose sessions start with the given superuser-only settings, so one test
/// can run under its own quotas and ceilings without touching the others. Returns its DSN.
pub async fn authenticator_with(
    cluster: &Cluster,
    name: &str,
    settings: &[(&str, &str)],
) -> String {
    let admin = admin(cluster).await;
    let mut sql = format!(
        "DROP ROLE IF EXISTS {name}; CREATE ROLE {name} LOGIN NOINHERIT;
         GRANT anon, authenticated, service_role TO {name};"
    );
    for (k, v) in settings {
        sql.push_str(&format!("ALTER ROLE {name} SET {k} = '{v}';"));
    }
    admin
        .batch_execute(&sql)
        .await
        .expect("create the login role");
    cluster.dsn(name)
}

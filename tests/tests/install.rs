//! Installing and removing the extension: DROP EXTENSION leaves nothing behind, and the
//! install refuses to proceed when a PostgREST role could reach private objects.

use supabash_tests::Cluster;
use tokio::sync::Mutex;
use tokio_postgres::{Client, NoTls};

/// Roles are cluster-wide: these tests change them, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::const_new(());

async fn connect(cluster: &Cluster, db: &str) -> Client {
    let dsn = format!(
        "host=127.0.0.1 port={} user=postgres dbname={db}",
        cluster.port
    );
    let (client, conn) = tokio_postgres::connect(&dsn, NoTls).await.unwrap();
    tokio::spawn(conn);
    client
}

async fn fresh_database(cluster: &Cluster, name: &str) -> Client {
    let admin = connect(cluster, "postgres").await;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let db = connect(cluster, name).await;
    let bootstrap =
        std::fs::read_to_string(supabash_tests::cluster::repo_root().join("sql/bootstrap.sql"))
            .unwrap();
    db.batch_execute(&bootstrap).await.unwrap();
    db
}

async fn count(db: &Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test]
async fn drop_extension_removes_everything_it_made() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::shared();
    let db = fresh_database(cluster, "install_drop").await;
    let before = count(&db, "SELECT count(*) FROM pg_class").await;
    db.batch_execute("CREATE EXTENSION supabash").await.unwrap();
    assert!(
        count(
            &db,
            "SELECT count(*) FROM pg_proc WHERE proname LIKE 'supabash\\_%'"
        )
        .await
            >= 12
    );
    db.batch_execute("DROP EXTENSION supabash").await.unwrap();
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'supabash'"
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM pg_proc WHERE proname LIKE 'supabash\\_%'"
        )
        .await,
        0
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM pg_class").await,
        before,
        "no relation left behind"
    );
    // It installs again cleanly (the cluster-wide owner role is reused).
    db.batch_execute("CREATE EXTENSION supabash").await.unwrap();
}

#[tokio::test]
async fn install_fails_loudly_when_a_postgrest_role_could_reach_private_objects() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::shared();
    let db = fresh_database(cluster, "install_leak").await;
    // Make sure the owner role exists, then let `authenticated` become it.
    db.batch_execute(
        "CREATE EXTENSION supabash; DROP EXTENSION supabash; GRANT supabash_owner TO authenticated",
    )
    .await
    .unwrap();
    let err = db
        .batch_execute("CREATE EXTENSION supabash")
        .await
        .unwrap_err();
    let message = err
        .as_db_error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(message.starts_with("SUPABASH_INSTALL"), "{message}");
    assert!(
        message.contains("authenticated on membership in supabash_owner"),
        "{message}"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'supabash'"
        )
        .await,
        0
    );
    db.batch_execute("REVOKE supabash_owner FROM authenticated")
        .await
        .unwrap();
}

#[tokio::test]
async fn install_requires_the_supabase_roles() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::shared();
    let admin = connect(cluster, "postgres").await;
    admin
        .batch_execute("CREATE DATABASE install_roles")
        .await
        .unwrap();
    let db = connect(cluster, "install_roles").await;
    // Roles are cluster-wide and exist here, so hide one by renaming it for the duration.
    db.batch_execute("ALTER ROLE service_role RENAME TO service_role_hidden")
        .await
        .unwrap();
    let err = db
        .batch_execute("CREATE EXTENSION supabash")
        .await
        .unwrap_err();
    db.batch_execute("ALTER ROLE service_role_hidden RENAME TO service_role")
        .await
        .unwrap();
    let message = err
        .as_db_error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(
        message.contains("the Supabase roles anon, authenticated and service_role must exist"),
        "{message}"
    );
}

/// Every function of the extension that runs SQL (SQL and PL/pgSQL bodies, and the native
/// dispatcher `supabash._call`) pins its own `search_path`, so no caller's path can redirect
/// an unqualified name inside it.
#[tokio::test]
async fn every_function_that_runs_sql_pins_its_search_path() {
    let cluster = Cluster::shared();
    let db = connect(cluster, "app").await;
    let rows = db
        .query(
            "SELECT p.oid::regprocedure::text FROM pg_proc p
               JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
               JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'supabash'
               JOIN pg_language l ON l.oid = p.prolang
              WHERE (l.lanname <> 'c' OR p.oid = 'supabash._call(text, json)'::regprocedure)
                AND NOT coalesce(p.proconfig::text[] @> ARRAY['search_path=pg_catalog, pg_temp'], false)
              ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    let unpinned: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    assert!(unpinned.is_empty(), "no pinned search_path: {unpinned:?}");
    let checked = count(
        &db,
        "SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
          JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'supabash'
          WHERE p.prolang <> (SELECT oid FROM pg_language WHERE lanname = 'c')",
    )
    .await;
    assert!(checked >= 15, "only {checked} SQL functions found");
}

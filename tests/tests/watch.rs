//! Knowing when something changed without polling (issue 25, item 4): `Workspace::watch` over a
//! direct connection survives its backend being terminated and recovers what it missed from
//! history, exactly once and in order; over PostgREST it polls; and with Supabase Realtime's
//! `realtime` schema present the database broadcasts each announcement on the workspace's
//! private topic, which only the owner may join.

use serde_json::{json, Value};
use std::time::Duration;
use supabash::watch::WatchPoint;
use supabash::workspace::CommitOptions;
use supabash_core::rpc::watch::{Announcement, ChangeKind};
use supabash_tests::client::{new_user, workspace_with, Via};
use supabash_tests::support::admin;
use supabash_tests::{Caller, Cluster, SqlRpc};

/// Writes `/a.md` and commits; answers (position, revision).
async fn change(ws: &supabash::Workspace, text: &str) -> (i64, String) {
    ws.fs().write("/a.md", text).await.unwrap();
    let r = ws
        .commit(CommitOptions::new("writer"))
        .await
        .unwrap()
        .receipt;
    (r.position, r.revision)
}

async fn next(watch: &mut supabash::watch::Watch) -> Announcement {
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("an announcement within 10 s")
        .expect("the watch goes on")
}

fn commit(ws: &str, (position, revision): &(i64, String)) -> Announcement {
    Announcement {
        workspace_id: ws.to_owned(),
        kind: ChangeKind::Commit,
        position: Some(*position),
        revision: Some(revision.clone()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumes_after_its_backend_is_terminated() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let ws = workspace_with(Via::Postgres, &new_user(), &[("/a.md", "1")]).await;
    let id = ws.id().to_owned();
    let mut watch = ws.watch(None).await.unwrap();
    assert_eq!(
        watch.last().map(|l| l.position),
        Some(1),
        "starts at the head"
    );

    let second = change(&ws, "2").await;
    assert_eq!(next(&mut watch).await, commit(&id, &second));

    // The listening backend dies; two commits land while nothing listens.
    let listen = format!("LISTEN \"supabash:{id}\"");
    let killed: Vec<bool> = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1",
            &[&listen],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(killed, vec![true], "one listening backend");
    for _ in 0..100 {
        let left: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE query = $1",
                &[&listen],
            )
            .await
            .unwrap()
            .get(0);
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let third = change(&ws, "3").await;
    let fourth = change(&ws, "4").await;

    // Recovered from history, in order, then live again: each commit exactly once.
    assert_eq!(next(&mut watch).await, commit(&id, &third));
    assert_eq!(next(&mut watch).await, commit(&id, &fourth));
    assert_eq!(watch.reconnects(), 1);
    let fifth = change(&ws, "5").await;
    assert_eq!(next(&mut watch).await, commit(&id, &fifth));
    let quiet = tokio::time::timeout(Duration::from_millis(500), watch.next()).await;
    assert!(quiet.is_err(), "nothing given twice: {quiet:?}");

    // Purge is announced live (its head is the last commit's).
    let mut keep_one = supabash::workspace::PurgeOptions::default();
    keep_one.keep_revisions = Some(1);
    ws.purge(keep_one).await.unwrap();
    let purged = next(&mut watch).await;
    assert_eq!(
        (purged.kind, purged.position),
        (ChangeKind::Purge, Some(fifth.0))
    );

    // Another process resumes from a point: the commits after it, and none before.
    let mut resumed = ws
        .watch(Some(WatchPoint {
            position: third.0,
            revision: third.1.clone(),
        }))
        .await
        .unwrap();
    // The third revision was purged: the resume restarts from the oldest retained one and
    // gives only what lies after the point.
    assert_eq!(next(&mut resumed).await, commit(&id, &fifth));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_over_postgrest_polls_history() {
    let ws = workspace_with(Via::Postgrest, &new_user(), &[("/a.md", "1")]).await;
    let id = ws.id().to_owned();
    let mut watch = ws
        .watch(None)
        .await
        .unwrap()
        .poll_interval(Duration::from_millis(100));
    let second = change(&ws, "2").await;
    let third = change(&ws, "3").await;
    assert_eq!(next(&mut watch).await, commit(&id, &second));
    assert_eq!(next(&mut watch).await, commit(&id, &third));
}

/// A stand-in for Supabase Realtime's database side, written from Supabase's documented
/// contract, not from its code: "Broadcast" (supabase.com/docs/guides/realtime/broadcast,
/// "Broadcast from the database": `realtime.send(payload, event, topic, private)` adds a row
/// to `realtime.messages` that Realtime delivers once the transaction commits) and "Realtime
/// Authorization" (supabase.com/docs/guides/realtime/authorization: RLS policies on
/// `realtime.messages` decide who may join a private topic, the topic being joined read
/// with `realtime.topic()`; Realtime checks them as the joining user with that user's JWT
/// claims).
const REALTIME_STAND_IN: &str = "
CREATE SCHEMA realtime;
CREATE TABLE realtime.messages (
  id uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
  topic text NOT NULL,
  extension text NOT NULL,
  payload jsonb,
  event text,
  private boolean DEFAULT false,
  inserted_at timestamp NOT NULL DEFAULT now()
);
ALTER TABLE realtime.messages ENABLE ROW LEVEL SECURITY;
CREATE FUNCTION realtime.topic() RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT nullif(current_setting('realtime.topic', true), '') $$;
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO realtime.messages (payload, event, topic, private, extension)
  VALUES (payload, event, topic, private, 'broadcast');
END $$;
GRANT USAGE ON SCHEMA realtime TO anon, authenticated, service_role;
GRANT SELECT, INSERT ON realtime.messages TO anon, authenticated, service_role;
";

/// What Realtime's join check sees of `topic` as `caller` (claims set, role switched, the
/// topic in `realtime.topic`): the broadcast messages its policies let through.
async fn visible(db: &tokio_postgres::Client, claims: &Value, role: &str, topic: &str) -> i64 {
    db.batch_execute("BEGIN").await.unwrap();
    db.execute(
        "SELECT set_config('request.jwt.claims', $1, true), set_config('realtime.topic', $2, true)",
        &[&claims.to_string(), &topic],
    )
    .await
    .unwrap();
    db.batch_execute(&format!("SET LOCAL ROLE {role}"))
        .await
        .unwrap();
    let n: i64 = db
        .query_one(
            "SELECT count(*) FROM realtime.messages
              WHERE topic = realtime.topic() AND extension = 'broadcast'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    db.batch_execute("ROLLBACK").await.unwrap();
    n
}

#[tokio::test]
async fn with_realtime_the_database_broadcasts_to_a_private_topic_only_the_owner_joins() {
    let cluster = Cluster::shared();
    let db = "realtime_stand_in";
    cluster.fresh_database(db);
    cluster.psql(db, REALTIME_STAND_IN);
    cluster.psql(db, "CREATE EXTENSION supabash");
    let dsn = |user: &str| cluster.dsn_on(user, db);
    let (su, conn) = tokio_postgres::connect(&dsn("postgres"), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let (auth, conn) = tokio_postgres::connect(&dsn("authenticator"), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut rest = SqlRpc::connect(&dsn("authenticator")).await;

    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/secret.md", "text": "words"}]),
        )
        .await;
    // A refused commit broadcasts nothing (its transaction rolled back).
    let refused = rest
        .call(
            &owner,
            "supabash_commit",
            json!({ "workspace_id": ws, "actor": "x", "base_revision": uuid::Uuid::new_v4().to_string(),
                    "changes": [{"op": "delete", "path": "/secret.md"}] }),
        )
        .await;
    assert!(refused.is_err());
    let sent: Vec<(String, String, bool, Value)> = su
        .query(
            "SELECT topic, event, private, payload FROM realtime.messages ORDER BY inserted_at",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let topic = format!("supabash:{ws}");
    assert_eq!(
        sent,
        vec![(
            topic.clone(),
            "commit".to_owned(),
            true,
            json!({"workspaceId": ws, "kind": "commit", "position": 1, "revision": r1})
        )]
    );
    assert!(
        !sent[0].3.to_string().contains("secret"),
        "never a path or content"
    );

    // Who may join the private topic: the owner; not another user, not anon, not a topic
    // that names no workspace.
    let Caller::User(sub) = &owner else {
        unreachable!()
    };
    let claims = |sub: &str| json!({ "sub": sub, "role": "authenticated" });
    assert_eq!(
        visible(&auth, &claims(sub), "authenticated", &topic).await,
        1
    );
    let stranger = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        visible(&auth, &claims(&stranger), "authenticated", &topic).await,
        0
    );
    assert_eq!(
        visible(&auth, &json!({ "role": "anon" }), "anon", &topic).await,
        0
    );
    assert_eq!(
        visible(
            &auth,
            &claims(sub),
            "authenticated",
            "supabash:not-a-workspace"
        )
        .await,
        0
    );

    // A purge and a redaction broadcast too, with their kind as the event.
    rest.call(
        &owner,
        "supabash_redact",
        json!({ "workspace_id": ws, "metadata_keys": ["x"] }),
    )
    .await
    .unwrap();
    let events: Vec<String> = su
        .query(
            "SELECT event FROM realtime.messages ORDER BY inserted_at",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(events, vec!["commit", "redact"]);
    drop(rest);
    drop(auth);
    drop(su);
}

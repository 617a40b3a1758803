//! Single-writer leases and the workspace manager, end to end on real clusters: the lease RPCs
//! and their refusals, the commit rule (LEASE_HELD without the token while leased, LEASE_LOST
//! with a token that is not the live one, even when nobody took over), two OS processes racing
//! for one lease, a holder that dies, the lease read on a streaming replica, and the manager's
//! warm and cold acquires, in-process exclusion and evictions with their events.
//!
//! The process tests re-run this test binary with `LEASE_CHILD` set: [`child_process`] then
//! plays the child's role (and does nothing in a normal run).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use supabash::capability::PostgresSigner;
use supabash::manager::{EvictReason, ManagerEvent, ManagerOptions, WorkspaceManager};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, PostgresTransport, Transport, Workspace};
use supabash_core::capability::{Operation, OperationSet};
use supabash_tests::capability::register_with;
use supabash_tests::client::{transport, user_claims, workspace_with, Via, BOTH};
use supabash_tests::support::{admin, expect_err};
use supabash_tests::{Caller, Cluster, SqlRpc};
use tokio::sync::broadcast;

const HELD: &str = "SUPABASH_LEASE_HELD";
const LOST: &str = "SUPABASH_LEASE_LOST";
const INVALID: &str = "SUPABASH_INVALID_ARGUMENT";
const DENIED: &str = "SUPABASH_WORKSPACE_DENIED";

fn acquire_args(ws: &str, holder: &str, ttl: i64) -> Value {
    json!({ "workspace_id": ws, "holder": holder, "ttl_seconds": ttl })
}

async fn acquire(rest: &mut SqlRpc, who: &Caller, ws: &str, holder: &str, ttl: i64) -> Value {
    rest.call(who, "supabash_acquire_lease", acquire_args(ws, holder, ttl))
        .await
        .unwrap_or_else(|e| panic!("acquire by {holder}: {e}"))
}

fn commit_args(ws: &str, base: Option<&str>, lease: Option<&str>, text: &str) -> Value {
    let mut a = json!({ "workspace_id": ws, "actor": "host", "base_revision": base,
                        "changes": [{"op": "upsert", "path": "/a.md", "text": text}] });
    if let Some(l) = lease {
        a["lease"] = json!(l);
    }
    a
}

async fn head(rest: &mut SqlRpc, who: &Caller, ws: &str) -> Option<String> {
    let m = rest
        .call(who, "supabash_load_manifest", json!({ "workspace_id": ws }))
        .await
        .unwrap();
    m["revision"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn acquire_renew_release_and_read() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let info = json!({ "workspace_id": ws });

    assert_eq!(
        rest.call(&owner, "supabash_lease", info.clone())
            .await
            .unwrap(),
        Value::Null
    );
    let a = acquire(&mut rest, &owner, &ws, "host-a", 30).await;
    assert_eq!(a["holder"], "host-a");
    assert_eq!(a["takenOver"], false);
    assert_eq!(a["headRevision"], Value::Null);
    let token_a = a["token"].as_str().unwrap().to_owned();
    uuid::Uuid::parse_str(&token_a).expect("the token is a UUID");

    // The read shows holder and times, never the token.
    let state = rest
        .call(&owner, "supabash_lease", info.clone())
        .await
        .unwrap();
    assert_eq!(state["holder"], "host-a");
    assert_eq!(state["expiresAt"], a["expiresAt"]);
    assert!(!state.to_string().contains(&token_a), "{state}");

    // Another holder is refused while the lease lives; the detail names holder and expiry.
    let e = expect_err(
        rest.call(
            &owner,
            "supabash_acquire_lease",
            acquire_args(&ws, "host-b", 30),
        )
        .await,
        "PT423",
        Some(HELD),
    );
    let detail: Value = serde_json::from_str(e.detail.as_deref().unwrap()).unwrap();
    assert_eq!(detail["holder"], "host-a");
    assert_eq!(detail["expiresAt"], a["expiresAt"]);
    assert!(!e.to_string().contains(&token_a));

    // The same holder name without the token is refused like any other (issue 23): the name
    // is public. With the live token it gets a fresh token; the old one is dead.
    let e = expect_err(
        rest.call(
            &owner,
            "supabash_acquire_lease",
            acquire_args(&ws, "host-a", 30),
        )
        .await,
        "PT423",
        Some(HELD),
    );
    assert!(!e.to_string().contains(&token_a));
    let mut with_token = acquire_args(&ws, "host-a", 30);
    with_token["token"] = json!(token_a);
    let a2 = rest
        .call(&owner, "supabash_acquire_lease", with_token)
        .await
        .unwrap();
    let token_a2 = a2["token"].as_str().unwrap().to_owned();
    assert_ne!(token_a2, token_a);
    let renew =
        |token: &str, ttl: i64| json!({ "workspace_id": ws, "token": token, "ttl_seconds": ttl });
    expect_err(
        rest.call(&owner, "supabash_renew_lease", renew(&token_a, 30))
            .await,
        "PT412",
        Some(LOST),
    );
    let r = rest
        .call(&owner, "supabash_renew_lease", renew(&token_a2, 600))
        .await
        .unwrap();
    assert_eq!(r["token"], token_a2.as_str());
    assert!(r["expiresAt"].as_str() > a2["expiresAt"].as_str(), "{r}");
    assert!(r["renewedAt"].as_str() >= a2["renewedAt"].as_str());
    assert_eq!(r["acquiredAt"], a2["acquiredAt"]);

    // Release: the stale token releases nothing, the live one ends the lease.
    let release = |token: &str| json!({ "workspace_id": ws, "token": token });
    let out = rest
        .call(&owner, "supabash_release_lease", release(&token_a))
        .await
        .unwrap();
    assert_eq!(out, json!({ "released": false }));
    let out = rest
        .call(&owner, "supabash_release_lease", release(&token_a2))
        .await
        .unwrap();
    assert_eq!(out, json!({ "released": true }));
    assert_eq!(
        rest.call(&owner, "supabash_lease", info.clone())
            .await
            .unwrap(),
        Value::Null
    );
    expect_err(
        rest.call(&owner, "supabash_renew_lease", renew(&token_a2, 30))
            .await,
        "PT412",
        Some(LOST),
    );
    // Now anyone may take it; nothing expired, so nothing was taken over.
    let b = acquire(&mut rest, &owner, &ws, "host-b", 30).await;
    assert_eq!(b["takenOver"], false);
}

#[tokio::test]
async fn an_expired_lease_is_taken_over() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let a = acquire(&mut rest, &owner, &ws, "host-a", 1).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        rest.call(&owner, "supabash_lease", json!({ "workspace_id": ws }))
            .await
            .unwrap(),
        Value::Null,
        "an expired lease reads as none"
    );
    let renew = json!({ "workspace_id": ws, "token": a["token"], "ttl_seconds": 30 });
    expect_err(
        rest.call(&owner, "supabash_renew_lease", renew).await,
        "PT412",
        Some(LOST),
    );
    let b = acquire(&mut rest, &owner, &ws, "host-b", 30).await;
    assert_eq!(b["takenOver"], true);
    assert_eq!(b["holder"], "host-b");
}

#[tokio::test]
async fn malformed_input_is_refused() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let long = "h".repeat(257);
    let cases = [
        acquire_args(&ws, "h", 0),
        acquire_args(&ws, "h", -5),
        acquire_args(&ws, "h", 3601),
        acquire_args(&ws, "h", i64::from(i32::MAX)),
        acquire_args(&ws, "", 30),
        acquire_args(&ws, &long, 30),
        acquire_args(&ws, "a\nb", 30),
        acquire_args("not-a-uuid", "h", 30),
    ];
    for args in cases {
        expect_err(
            rest.call(&owner, "supabash_acquire_lease", args.clone())
                .await,
            "22023",
            Some(INVALID),
        );
    }
    for (rpc, args) in [
        (
            "supabash_renew_lease",
            json!({ "workspace_id": ws, "token": "nope", "ttl_seconds": 30 }),
        ),
        (
            "supabash_renew_lease",
            json!({ "workspace_id": ws, "token": uuid::Uuid::new_v4().to_string(), "ttl_seconds": 0 }),
        ),
        (
            "supabash_release_lease",
            json!({ "workspace_id": ws, "token": "nope" }),
        ),
        ("supabash_commit", commit_args(&ws, None, Some("nope"), "x")),
    ] {
        expect_err(rest.call(&owner, rpc, args).await, "22023", Some(INVALID));
    }
    // A TTL without a holder is no call at all (no default).
    let e = rest
        .call(
            &owner,
            "supabash_acquire_lease",
            json!({ "workspace_id": ws, "ttl_seconds": 30 }),
        )
        .await;
    assert!(e.is_err(), "{e:?}");
    // Nothing of it left a lease.
    assert_eq!(
        rest.call(&owner, "supabash_lease", json!({ "workspace_id": ws }))
            .await
            .unwrap(),
        Value::Null
    );
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn wrong_callers_and_grants_are_refused() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    let (iss, aud, origin) = ("https://issuer.test", "supabash", "https://project.test");
    let kid = format!("leases-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let secret = register_with(cluster, &kid, (iss, aud, origin), 0, 60);
    let signer = PostgresSigner::new(&kid, &secret, iss, aud, origin).unwrap();
    let grant = |ops: &[Operation], claims: Option<(i64, i64)>| {
        let set = OperationSet::new(ops.iter().copied()).unwrap();
        match claims {
            None => signer.mint("job", &ws, &set, 60, None).unwrap(),
            Some((iat, life)) => signer
                .sign(&signer.claims("job", &ws, &set, iat, life, None))
                .unwrap(),
        }
    };
    let exchange = |t: String| json!({ "capability": t });
    let g = |v: Value| v["delegatedGrant"].as_str().unwrap().to_owned();
    let commit_grant = g(rest
        .call(
            &Caller::Service,
            "supabash_exchange_capability",
            exchange(grant(&[Operation::Commit], None)),
        )
        .await
        .unwrap());
    let read_grant = g(rest
        .call(
            &Caller::Service,
            "supabash_exchange_capability",
            exchange(grant(&[Operation::Read, Operation::History], None)),
        )
        .await
        .unwrap());
    let short_grant = g(rest
        .call(
            &Caller::Service,
            "supabash_exchange_capability",
            exchange(grant(&[Operation::Commit], Some((now() - 10, 12)))),
        )
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let forged = supabash_core::capability::b64_encode(&[7u8; 32]);

    let with = |mut args: Value, grant: Option<&str>| {
        if let Some(g) = grant {
            args["delegated_grant"] = json!(g);
        }
        args
    };
    let token = uuid::Uuid::new_v4().to_string();
    let writes = [
        ("supabash_acquire_lease", acquire_args(&ws, "intruder", 30)),
        (
            "supabash_renew_lease",
            json!({ "workspace_id": ws, "token": token, "ttl_seconds": 30 }),
        ),
        (
            "supabash_release_lease",
            json!({ "workspace_id": ws, "token": token }),
        ),
        ("supabash_lease", json!({ "workspace_id": ws })),
    ];
    let intruders: Vec<(&str, Caller, Option<&str>)> = vec![
        ("another user", Caller::new_user(), None),
        ("anon", Caller::Anon, None),
        ("service_role without a grant", Caller::Service, None),
        ("a forged grant", Caller::Service, Some(&forged)),
        ("an expired grant", Caller::Service, Some(&short_grant)),
        (
            "the owner passing a grant",
            owner.clone(),
            Some(&commit_grant),
        ),
    ];
    let mut refusals = 0;
    for (who, caller, grant) in &intruders {
        for (rpc, args) in &writes {
            let r = rest.call(caller, rpc, with(args.clone(), *grant)).await;
            let e = r.expect_err(&format!("{who} called {rpc}"));
            assert_eq!(e.code, "42501", "{who} {rpc}: {e}");
            refusals += 1;
        }
    }
    // A grant without commit may read the lease, not write it.
    for (rpc, args) in &writes[..3] {
        expect_err(
            rest.call(&Caller::Service, rpc, with(args.clone(), Some(&read_grant)))
                .await,
            "42501",
            Some(DENIED),
        );
        refusals += 1;
    }
    assert_eq!(
        rest.call(
            &Caller::Service,
            "supabash_lease",
            with(json!({ "workspace_id": ws }), Some(&read_grant))
        )
        .await
        .unwrap(),
        Value::Null
    );
    // With commit it may take, renew and release the lease (and its commits need the token).
    let lease = rest
        .call(
            &Caller::Service,
            "supabash_acquire_lease",
            with(acquire_args(&ws, "job-host", 30), Some(&commit_grant)),
        )
        .await
        .unwrap();
    let t = lease["token"].as_str().unwrap();
    rest.call(
        &Caller::Service,
        "supabash_renew_lease",
        with(
            json!({ "workspace_id": ws, "token": t, "ttl_seconds": 30 }),
            Some(&commit_grant),
        ),
    )
    .await
    .unwrap();
    expect_err(
        rest.call(&owner, "supabash_commit", commit_args(&ws, None, None, "x"))
            .await,
        "PT423",
        Some(HELD),
    );
    let out = rest
        .call(
            &Caller::Service,
            "supabash_release_lease",
            with(
                json!({ "workspace_id": ws, "token": t }),
                Some(&commit_grant),
            ),
        )
        .await
        .unwrap();
    assert_eq!(out["released"], true);
    println!("lease refusals: {refusals}, leaks: 0");
    // The lease table refuses every PostgREST role directly.
    for caller in [Caller::Anon, Caller::new_user(), Caller::Service] {
        let e = rest
            .sql_as(&caller, "SELECT * FROM supabash.leases")
            .await
            .expect_err("private table");
        assert_eq!(e.code, "42501", "{caller:?}: {e}");
    }
}

#[tokio::test]
async fn commits_follow_the_lease() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let owner = Caller::new_user();
    let ws = rest.create_workspace(&owner).await;
    // Without any lease, commits work as before.
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            json!([{"op": "upsert", "path": "/a.md", "text": "1"}]),
        )
        .await;
    let a = acquire(&mut rest, &owner, &ws, "host-a", 2).await;
    assert_eq!(a["headRevision"], r1.as_str());
    let token = a["token"].as_str().unwrap().to_owned();
    let other = uuid::Uuid::new_v4().to_string();
    expect_err(
        rest.call(
            &owner,
            "supabash_commit",
            commit_args(&ws, Some(&r1), None, "2"),
        )
        .await,
        "PT423",
        Some(HELD),
    );
    expect_err(
        rest.call(
            &owner,
            "supabash_commit",
            commit_args(&ws, Some(&r1), Some(&other), "2"),
        )
        .await,
        "PT412",
        Some(LOST),
    );
    assert_eq!(
        head(&mut rest, &owner, &ws).await.as_deref(),
        Some(r1.as_str())
    );
    let ok = rest
        .call(
            &owner,
            "supabash_commit",
            commit_args(&ws, Some(&r1), Some(&token), "2"),
        )
        .await
        .unwrap();
    let r2 = ok["receipt"]["revision"].as_str().unwrap().to_owned();

    // The lease lapses and nobody takes over: its token still cannot commit.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let e = expect_err(
        rest.call(
            &owner,
            "supabash_commit",
            commit_args(&ws, Some(&r2), Some(&token), "3"),
        )
        .await,
        "PT412",
        Some(LOST),
    );
    assert!(!e.to_string().contains(&token));
    assert_eq!(
        head(&mut rest, &owner, &ws).await.as_deref(),
        Some(r2.as_str())
    );
    // Without a live lease, a commit that presents none works (leases are opt-in).
    let r3 = rest
        .commit_as(
            &owner,
            &ws,
            Some(&r2),
            json!([{"op": "upsert", "path": "/a.md", "text": "3"}]),
        )
        .await;
    // A released lease's token cannot commit either.
    let b = acquire(&mut rest, &owner, &ws, "host-b", 30).await;
    let tb = b["token"].as_str().unwrap();
    rest.call(
        &owner,
        "supabash_release_lease",
        json!({ "workspace_id": ws, "token": tb }),
    )
    .await
    .unwrap();
    expect_err(
        rest.call(
            &owner,
            "supabash_commit",
            commit_args(&ws, Some(&r3), Some(tb), "4"),
        )
        .await,
        "PT412",
        Some(LOST),
    );
    // The lease row goes with its workspace.
    acquire(&mut rest, &owner, &ws, "host-c", 30).await;
    let db = admin(cluster).await;
    let n: i64 = db
        .query_one(
            "SELECT count(*) FROM supabash.leases WHERE workspace_id = $1::text::uuid",
            &[&ws],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    db.execute(
        "DELETE FROM supabash.workspaces WHERE id = $1::text::uuid",
        &[&ws],
    )
    .await
    .unwrap();
    let n: i64 = db
        .query_one(
            "SELECT count(*) FROM supabash.leases WHERE workspace_id = $1::text::uuid",
            &[&ws],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "ON DELETE CASCADE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_presents_its_lease_over_both_transports() {
    for via in BOTH {
        let user = supabash_tests::client::new_user();
        let a = workspace_with(via, &user, &[("/a.md", "1")]).await;
        let b = Workspace::builder(transport(via, &user).await)
            .open(a.id())
            .await
            .unwrap();
        let lease = a
            .acquire_lease("host-a", Duration::from_secs(30))
            .await
            .unwrap();
        assert!(a.holds_lease());
        assert_eq!(lease.head_revision, a.base_revision());
        let e = b
            .acquire_lease("host-b", Duration::from_secs(30))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaseHeld, "{via:?}: {e}");
        assert!(e.is_retryable() && !e.outcome_unknown());
        assert!(!e.to_string().contains(&lease.token));
        let state = b.lease().await.unwrap().expect("a live lease");
        assert_eq!(state.holder, "host-a");
        // b's commit presents no lease: LEASE_HELD. a's presents its own.
        b.fs().write("/b.md", "b").await.unwrap();
        let e = b.commit(CommitOptions::new("b")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaseHeld, "{via:?}: {e}");
        a.fs().write("/a.md", "2").await.unwrap();
        a.commit(CommitOptions::new("a")).await.unwrap();
        a.renew_lease(Duration::from_secs(60)).await.unwrap();
        // Out-of-range TTLs fail before any request.
        assert_eq!(
            a.renew_lease(Duration::ZERO).await.unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        assert!(a.release_lease().await.unwrap());
        assert!(!a.holds_lease());
        assert!(b.lease().await.unwrap().is_none());
        // b takes it over and its stale-base commit now fails on the base, not the lease.
        b.acquire_lease("host-b", Duration::from_secs(30))
            .await
            .unwrap();
        let e = b.commit(CommitOptions::new("b")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::CommitConflict, "{via:?}: {e}");
        // a's renewal after losing the lease: LEASE_LOST, and its commit too.
        a.acquire_lease("host-a", Duration::from_secs(1))
            .await
            .unwrap_err();
        b.release_lease().await.unwrap();
        a.acquire_lease("host-a", Duration::from_secs(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let e = a.renew_lease(Duration::from_secs(30)).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaseLost, "{via:?}: {e}");
        assert!(e.is_retryable());
        a.fs().write("/a.md", "3").await.unwrap();
        let e = a.commit(CommitOptions::new("a")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaseLost, "{via:?}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_reads_on_a_streaming_replica() {
    let primary = Cluster::start();
    let replica = primary.start_replica();
    let owner = Caller::new_user();
    let mut on_primary = SqlRpc::connect(&primary.dsn("authenticator")).await;
    let ws = on_primary.create_workspace(&owner).await;
    let lease = acquire(&mut on_primary, &owner, &ws, "host-a", 600).await;
    primary.wait_replayed(&replica);
    let mut on_replica = SqlRpc::connect(&replica.dsn("authenticator")).await;
    let info = json!({ "workspace_id": ws });
    let want = on_primary
        .call(&owner, "supabash_lease", info.clone())
        .await
        .unwrap();
    let got = on_replica
        .call(&owner, "supabash_lease", info.clone())
        .await
        .unwrap();
    assert_eq!(got, want);
    assert_eq!(got["holder"], "host-a");
    let token = lease["token"].as_str().unwrap();
    for (rpc, args) in [
        ("supabash_acquire_lease", acquire_args(&ws, "host-b", 30)),
        (
            "supabash_renew_lease",
            json!({ "workspace_id": ws, "token": token, "ttl_seconds": 30 }),
        ),
        (
            "supabash_release_lease",
            json!({ "workspace_id": ws, "token": token }),
        ),
    ] {
        expect_err(
            on_replica.call(&owner, rpc, args).await,
            "25006",
            Some("SUPABASH_READ_ONLY"),
        );
    }
    // Over the client's transport too.
    let t: Arc<dyn Transport> = Arc::new(
        PostgresTransport::connect(&replica.dsn("authenticator"), user_claims_of(&owner))
            .await
            .unwrap(),
    );
    let state: Option<supabash::workspace::LeaseState> = supabash::transport::call(
        t.as_ref(),
        &supabash_core::rpc::requests::LeaseInfo {
            workspace_id: ws.clone(),
            delegated_grant: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(state.unwrap().holder, "host-a");
}

fn user_claims_of(c: &Caller) -> Value {
    match c {
        Caller::User(sub) => user_claims(sub),
        _ => unreachable!("a user"),
    }
}

// ---- two OS processes -------------------------------------------------------------------

/// The environment a child reads: its role, the database, the user, the workspace, a holder.
const CHILD: &str = "LEASE_CHILD";

fn spawn_child(role: &str, ws: &str, user: &str, holder: &str, extra: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, role)
    .env("LEASE_DSN", Cluster::shared().dsn("authenticator"))
    .env("LEASE_USER", user)
    .env("LEASE_WS", ws)
    .env("LEASE_HOLDER", holder)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().expect("the test binary runs again")
}

/// What follows `LEASE ` in a line a child printed (libtest may print before it on the line).
fn report(line: &str) -> Option<String> {
    line.find("LEASE ")
        .map(|i| line[i + "LEASE ".len()..].to_owned())
}

/// The reports of a child, until it exits.
fn reports(child: &mut Child) -> Vec<String> {
    let out = child.stdout.take().unwrap();
    BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| report(&l))
        .collect()
}

/// The child's role (a no-op in a normal test run).
#[test]
fn child_process() {
    let Ok(role) = std::env::var(CHILD) else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let t: Arc<dyn Transport> = Arc::new(
            PostgresTransport::connect(&var("LEASE_DSN"), user_claims(&var("LEASE_USER")))
                .await
                .unwrap(),
        );
        let (ws, holder) = (var("LEASE_WS"), var("LEASE_HOLDER"));
        match role.as_str() {
            "race" => {
                let start: u128 = var("LEASE_START_MS").parse().unwrap();
                let opened = Workspace::builder(t).open(&ws).await.unwrap();
                while SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
                    < start
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                match opened.acquire_lease(&holder, Duration::from_secs(60)).await {
                    Ok(_) => println!("LEASE won"),
                    Err(e) if e.code() == ErrorCode::LeaseHeld => println!("LEASE held"),
                    Err(e) => println!("LEASE error {e}"),
                }
            }
            "hold" => {
                // Holds the lease through a manager whose heartbeat renews it, until killed.
                let options = ManagerOptions::new(holder)
                    .lease_ttl(Duration::from_secs(2))
                    .heartbeat(Duration::from_millis(400));
                let manager = WorkspaceManager::new(Workspace::builder(t), options).unwrap();
                let handle = manager.acquire(&ws).await.unwrap();
                println!("LEASE token {}", handle.lease().token);
                println!("LEASE base {}", handle.base_revision().unwrap_or_default());
                use std::io::Write;
                std::io::stdout().flush().unwrap();
                loop {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            }
            other => panic!("unknown child role {other}"),
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_race_and_exactly_one_wins() {
    let user = supabash_tests::client::new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.md", "1")]).await;
    for round in 0..3 {
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
            + 1500;
        let mut children: Vec<Child> = (0..2)
            .map(|i| {
                spawn_child(
                    "race",
                    ws.id(),
                    &user,
                    &format!("proc-{round}-{i}"),
                    &[("LEASE_START_MS", start.to_string())],
                )
            })
            .collect();
        let outcomes: Vec<String> = children
            .iter_mut()
            .flat_map(|c| {
                let r = reports(c);
                assert!(c.wait().unwrap().success());
                r
            })
            .collect();
        let won = outcomes.iter().filter(|o| *o == "won").count();
        let held = outcomes.iter().filter(|o| *o == "held").count();
        assert_eq!((won, held), (1, 1), "round {round}: {outcomes:?}");
        let state = ws.lease().await.unwrap().expect("the winner's lease");
        assert!(state.holder.starts_with(&format!("proc-{round}-")));
        // Free it for the next round (waiting out the 60 s lease would be slow): remove the
        // winner's row as the superuser.
        let db = admin(Cluster::shared()).await;
        db.execute(
            "DELETE FROM supabash.leases WHERE workspace_id = $1::text::uuid",
            &[&ws.id()],
        )
        .await
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holder_loses_its_lease_and_its_token_cannot_commit() {
    let user = supabash_tests::client::new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.md", "1")]).await;
    let mut child = spawn_child("hold", ws.id(), &user, "doomed-host", &[]);
    let out = child.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    let mut next = || {
        lines
            .next()
            .expect("the child reports")
            .map(|l| report(&l))
            .unwrap()
    };
    let token = loop {
        if let Some(l) = next() {
            break l.strip_prefix("token ").unwrap().to_owned();
        }
    };
    let base = next().unwrap().strip_prefix("base ").unwrap().to_owned();
    assert_eq!(
        Some(base),
        ws.base_revision(),
        "the child opened at the head"
    );
    // While the child lives, its heartbeat keeps the 2 s lease alive well past 2 s.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let e = ws
        .acquire_lease("survivor", Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseHeld, "{e}");
    assert_eq!(ws.lease().await.unwrap().unwrap().holder, "doomed-host");
    // The holder dies without releasing.
    child.kill().unwrap();
    child.wait().unwrap();
    let died = Instant::now();
    let lease = loop {
        match ws.acquire_lease("survivor", Duration::from_secs(30)).await {
            Ok(l) => break l,
            Err(e) if e.code() == ErrorCode::LeaseHeld => {
                assert!(
                    died.elapsed() < Duration::from_secs(5),
                    "the lease never expired"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert!(lease.taken_over);
    assert_eq!(lease.holder, "survivor");
    // The dead holder's token can no longer commit.
    let mut rest = SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await;
    let caller = Caller::User(user.clone());
    let base = ws.base_revision();
    expect_err(
        rest.call(
            &caller,
            "supabash_commit",
            commit_args(ws.id(), base.as_deref(), Some(&token), "zombie"),
        )
        .await,
        "PT412",
        Some(LOST),
    );
    // The survivor commits.
    ws.fs().write("/a.md", "2").await.unwrap();
    ws.commit(CommitOptions::new("survivor")).await.unwrap();
}

// ---- the manager ------------------------------------------------------------------------

fn drain(rx: &mut broadcast::Receiver<ManagerEvent>) -> Vec<ManagerEvent> {
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    events
}

fn acquires(events: &[ManagerEvent]) -> Vec<bool> {
    events
        .iter()
        .filter_map(|e| match e {
            ManagerEvent::Acquire { warm, .. } => Some(*warm),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_acquires_warm_and_cold_and_excludes_a_second_handle() {
    for via in BOTH {
        let user = supabash_tests::client::new_user();
        let seeded = workspace_with(via, &user, &[("/a.md", "1")]).await;
        let id = seeded.id().to_owned();
        let options = ManagerOptions::new(format!("host-{via:?}"));
        let manager =
            WorkspaceManager::new(Workspace::builder(transport(via, &user).await), options)
                .unwrap();
        let mut rx = manager.subscribe();

        let h = manager.acquire(&id).await.unwrap();
        let token = h.lease().token.clone();
        assert_eq!(text(&h, "/a.md").await, "1");
        let e = manager.acquire(&id).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaseHeld);
        assert!(e.message().contains("this process"), "{e}");
        // Another host is refused by the database.
        let e = seeded
            .acquire_lease("elsewhere", Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaseHeld);
        h.fs().write("/a.md", "2").await.unwrap();
        h.commit(CommitOptions::new("agent")).await.unwrap();
        manager.release(h).await.unwrap();
        assert_eq!(manager.cached(), vec![id.clone()]);

        // Clean and at the head: warm, the same staged tree.
        let h = manager.acquire(&id).await.unwrap();
        assert_eq!(text(&h, "/a.md").await, "2");
        // Left dirty: the next acquire is cold and starts from the head.
        h.fs().write("/scratch.md", "unsaved").await.unwrap();
        manager.release(h).await.unwrap();
        let h = manager.acquire(&id).await.unwrap();
        assert!(!h.fs().exists("/scratch.md").await);
        manager.release(h).await.unwrap();

        // Another host commits meanwhile: the cached tree is behind, so cold.
        let other = Workspace::builder(transport(via, &user).await)
            .open(&id)
            .await
            .unwrap();
        other
            .acquire_lease("other-host", Duration::from_secs(5))
            .await
            .unwrap();
        other.fs().write("/a.md", "3").await.unwrap();
        other.commit(CommitOptions::new("other")).await.unwrap();
        other.release_lease().await.unwrap();
        let h = manager.acquire(&id).await.unwrap();
        assert_eq!(text(&h, "/a.md").await, "3");
        // A restore through the handle is reported; discarded, the tree is clean again.
        let first = seeded.base_revision().unwrap();
        let restored = h.restore(&first).await.unwrap();
        assert_eq!(text(&h, "/a.md").await, "1");
        h.discard().await.unwrap();
        manager.release(h).await.unwrap();

        let events = drain(&mut rx);
        let heads: Vec<&ManagerEvent> = events
            .iter()
            .filter(|e| matches!(e, ManagerEvent::BackendHead { .. }))
            .collect();
        assert_eq!(heads.len(), 1, "{via:?}: {events:?}");
        let ManagerEvent::BackendHead {
            head_revision,
            cached_revision,
            ..
        } = heads[0]
        else {
            unreachable!()
        };
        assert_ne!(head_revision, cached_revision);
        assert_eq!(head_revision.as_deref(), other.base_revision().as_deref());
        assert!(events.contains(&ManagerEvent::Restore {
            workspace_id: id.clone(),
            source_revision: first.clone(),
            changes: restored.changes.len(),
        }));
        assert!(!restored.changes.is_empty());
        assert_eq!(
            acquires(&events),
            vec![false, true, false, false],
            "{via:?}: {events:?}"
        );
        let releases = events
            .iter()
            .filter(|e| matches!(e, ManagerEvent::Release { .. }))
            .count();
        assert_eq!(releases, 4);
        let printed = format!("{events:?}");
        assert!(
            !printed.contains(&token) && !printed.contains("/a.md"),
            "{printed}"
        );
        assert!(events.iter().all(|e| match e {
            ManagerEvent::Acquire { duration, .. } => *duration < Duration::from_secs(10),
            _ => true,
        }));
        // A dropped handle (never released) frees the id in this process without caching it;
        // its lease lives on until it expires, and this host may take it again (fresh token).
        let h = manager.acquire(&id).await.unwrap();
        let old = h.lease().token.clone();
        drop(h);
        assert!(manager.cached().is_empty());
        let h = manager.acquire(&id).await.unwrap();
        assert_ne!(h.lease().token, old);
        assert_eq!(acquires(&drain(&mut rx)), vec![true, false]);
        manager.release(h).await.unwrap();
    }
}

/// A staged file as text.
async fn text(ws: &Workspace, path: &str) -> String {
    ws.fs().read_text(path).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_evicts_by_ttl_by_budget_and_on_request() {
    let user = supabash_tests::client::new_user();
    let big = "x".repeat(64 * 1024);
    let a = workspace_with(Via::Postgres, &user, &[("/big.txt", &big)]).await;
    let b = workspace_with(Via::Postgres, &user, &[("/big.txt", &big)]).await;
    let c = workspace_with(Via::Postgres, &user, &[("/small.txt", "s")]).await;
    let builder = Workspace::builder(transport(Via::Postgres, &user).await);
    let options = ManagerOptions::new("evicting-host")
        .idle_ttl(Duration::from_millis(1500))
        .memory_budget_bytes(100 * 1024);
    let manager = WorkspaceManager::new(builder, options).unwrap();
    let mut rx = manager.subscribe();
    let use_big = |id: String| {
        let manager = &manager;
        async move {
            let h = manager.acquire(&id).await.unwrap();
            assert_eq!(h.fs().read("/big.txt").await.unwrap().len(), 64 * 1024);
            let size = h.fs().memory_bytes();
            assert!((64 * 1024..90 * 1024).contains(&size), "estimate {size}");
            manager.release(h).await.unwrap();
        }
    };
    use_big(a.id().to_owned()).await;
    assert_eq!(manager.cached(), vec![a.id().to_owned()]);
    use_big(b.id().to_owned()).await;
    // Both do not fit: the least recently used (a) went.
    assert_eq!(manager.cached(), vec![b.id().to_owned()]);
    let events = drain(&mut rx);
    let evicted: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ManagerEvent::Evict {
                workspace_id,
                reason,
            } => Some((workspace_id.clone(), *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec![(a.id().to_owned(), EvictReason::Budget)]);

    // Explicit eviction; a handle that is out is never evicted.
    let h = manager.acquire(c.id()).await.unwrap();
    assert!(!manager.evict(c.id()));
    manager.release(h).await.unwrap();
    assert!(manager.evict(b.id()));
    assert!(!manager.evict(b.id()));
    // Idle past the TTL: a sweep evicts it.
    assert_eq!(manager.sweep(), 0);
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert_eq!(manager.sweep(), 1);
    assert!(manager.cached().is_empty());
    let events = drain(&mut rx);
    let tail: Vec<&ManagerEvent> = events
        .iter()
        .filter(|e| {
            !matches!(
                e,
                ManagerEvent::Acquire { .. } | ManagerEvent::Release { .. }
            )
        })
        .collect();
    assert_eq!(
        tail,
        vec![
            &ManagerEvent::Evict {
                workspace_id: b.id().to_owned(),
                reason: EvictReason::Explicit
            },
            &ManagerEvent::Sweep {
                evicted: 0,
                kept: 1
            },
            &ManagerEvent::Evict {
                workspace_id: c.id().to_owned(),
                reason: EvictReason::Ttl
            },
            &ManagerEvent::Sweep {
                evicted: 1,
                kept: 0
            },
        ]
    );
    // Options out of bounds are refused.
    let bad = ManagerOptions::new("h")
        .lease_ttl(Duration::from_secs(5))
        .heartbeat(Duration::from_secs(5));
    let builder = Workspace::builder(transport(Via::Postgres, &user).await);
    assert!(WorkspaceManager::new(builder.clone(), bad).is_err());
    let bad = ManagerOptions::new("h").lease_ttl(Duration::from_millis(1500));
    assert!(WorkspaceManager::new(builder, bad).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_keeps_its_sessions_directories_within_the_disk_budget() {
    let user = supabash_tests::client::new_user();
    let big = "d".repeat(40 * 1024);
    let a = workspace_with(Via::Postgres, &user, &[("/big.txt", &big)]).await;
    let b = workspace_with(Via::Postgres, &user, &[("/big.txt", &big)]).await;
    let huge = workspace_with(
        Via::Postgres,
        &user,
        &[("/huge.txt", &"h".repeat(120 * 1024))],
    )
    .await;
    let work = std::env::temp_dir().join(format!("supabash-manager-{}", uuid::Uuid::new_v4()));
    let builder = Workspace::builder(transport(Via::Postgres, &user).await);

    // Without a work directory, materialising through the manager is refused.
    let plain = WorkspaceManager::new(builder.clone(), ManagerOptions::new("no-disk")).unwrap();
    let h = plain.acquire(a.id()).await.unwrap();
    let e = h.materialise().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("work_dir"), "{e}");
    plain.release(h).await.unwrap();
    drop(plain);

    let options = ManagerOptions::new("disk-host")
        .work_dir(&work)
        .disk_budget_bytes(100 * 1024);
    let manager = WorkspaceManager::new(builder, options).unwrap();
    let mut rx = manager.subscribe();

    // a's tree on disk, released and cached with its directory.
    let h = manager.acquire(a.id()).await.unwrap();
    let (dir_a, written) = h.materialise().await.unwrap();
    assert_eq!(dir_a, work.join(a.id()));
    assert_eq!(written.files.len(), 1);
    assert_eq!(
        std::fs::read(dir_a.join("big.txt")).unwrap().len(),
        40 * 1024
    );
    // A program writes next to the tree: it counts at the next measure (the release).
    std::fs::write(dir_a.join("out.log"), vec![b'o'; 30 * 1024]).unwrap();
    manager.release(h).await.unwrap();
    assert_eq!(manager.disk_bytes(), 70 * 1024);
    assert_eq!(manager.cached(), vec![a.id().to_owned()]);

    // b needs 40 KiB: a's 70 KiB must go (least recently used), directory and all.
    let hb = manager.acquire(b.id()).await.unwrap();
    let (dir_b, _) = hb.materialise().await.unwrap();
    assert!(!dir_a.exists(), "the evicted workspace's directory is gone");
    assert!(dir_b.join("big.txt").exists());
    assert_eq!(manager.disk_bytes(), 40 * 1024);
    assert!(manager.cached().is_empty());
    let evicted: Vec<_> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            ManagerEvent::Evict {
                workspace_id,
                reason,
            } => Some((workspace_id, reason)),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec![(a.id().to_owned(), EvictReason::DiskBudget)]);

    // A tree that cannot fit next to b's directory (b's handle is out) is refused before
    // anything is written, with a clear error; b's directory is untouched.
    let hh = manager.acquire(huge.id()).await.unwrap();
    let e = hh.materialise().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded);
    assert!(
        e.message().contains("disk budget") && e.message().contains("disk_budget_bytes"),
        "{e}"
    );
    assert!(!work.join(huge.id()).exists());
    assert_eq!(manager.disk_bytes(), 40 * 1024);
    assert!(dir_b.join("big.txt").exists());
    // Nothing of the refused workspace's staged tree changed either.
    assert!(hh.changes().unwrap().is_empty());
    manager.release(hh).await.unwrap();

    // Materialising again replaces the directory; an explicit eviction removes it.
    let (again, _) = hb.materialise().await.unwrap();
    assert_eq!(again, dir_b);
    assert_eq!(manager.disk_bytes(), 40 * 1024);
    manager.release(hb).await.unwrap();
    assert!(manager.evict(b.id()));
    assert!(!dir_b.exists());
    assert_eq!(manager.disk_bytes(), 0);
    let _ = std::fs::remove_dir_all(&work);
}

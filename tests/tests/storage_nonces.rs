//! The database-backed nonce store of Storage capabilities (`supabash_spend_storage_nonce`,
//! client `DatabaseNonceStore`): a capability presented to two host processes at once is
//! accepted by exactly one, and so is one presented to two clients of one process (over
//! Postgres and over PostgREST with the service key); only the host's service_role spends nonces (anon, a signed-in user,
//! forged role/claim pairs and no claims are refused and change nothing); malformed input is
//! refused and changes nothing; expired nonces are forgotten; the live count is bounded.

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use supabash::capability::{
    new_nonce, DatabaseNonceStore, NonceStore, StorageScope, StorageSigner, StorageVerifier,
};
use supabash::{PostgresTransport, PostgrestTransport, Transport};
use supabash_core::capability::{
    CommonClaims, Operation, OperationSet, Policy, StorageBinding, StorageClaims,
    MAX_LIVE_STORAGE_NONCES, SCHEMA_VERSION,
};
use supabash_core::ErrorCode;
use supabash_tests::client::{postrust_url, sign};
use supabash_tests::support::{admin, expect_err};
use supabash_tests::{Caller, Cluster, SqlRpc};

const SPEND: &str = "supabash_spend_storage_nonce";
/// The child process's settings (see [`a_child_process_presents_the_capability`]).
const CHILD_DSN: &str = "SUPABASH_NONCE_CHILD_DSN";
const CHILD_TOKEN: &str = "SUPABASH_NONCE_CHILD_TOKEN";
const SEED: [u8; 32] = [7; 32];

/// Tests that fill or count the table run one at a time.
static TABLE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn policy() -> Policy {
    Policy {
        issuer: "jobs".into(),
        audience: "storage".into(),
        origin: "https://app.example".into(),
        skew_secs: 30,
        max_lifetime_secs: 900,
    }
}

fn scope() -> StorageScope {
    StorageScope {
        bucket: "workspaces".into(),
        prefix: "job-prefix/".into(),
        operations: OperationSet::new([Operation::Read]).unwrap(),
    }
}

/// A fresh read capability for [`scope`], signed with [`SEED`].
fn capability() -> String {
    let now = now();
    let claims = StorageClaims {
        common: CommonClaims {
            ver: SCHEMA_VERSION,
            iss: "jobs".into(),
            aud: "storage".into(),
            sub: "job-1".into(),
            origin: "https://app.example".into(),
            ops: vec!["read".into()],
            iat: now,
            exp: now + 300,
            nonce: new_nonce(),
            cid: None,
        },
        binding: StorageBinding {
            bucket: "workspaces".into(),
            prefix: "job-prefix/".into(),
        },
    };
    StorageSigner::from_seed("k1", &SEED).mint(&claims).unwrap()
}

/// What one host does with a presented capability: verifies it in process, then opens it
/// with the database nonce store. Answers "accepted" or the refusal's code.
async fn present(service: Arc<dyn Transport>, token: &str) -> String {
    let verifier = StorageVerifier::new(policy())
        .with_key("k1", &StorageSigner::from_seed("k1", &SEED).public_key())
        .unwrap();
    let verified = match verifier.verify(token, &scope()) {
        Ok(v) => v,
        Err(e) => return format!("{:?}", e.code()),
    };
    let nonces = DatabaseNonceStore::new(service);
    match verified.open(&nonces, |_| async { Ok(()) }).await {
        Ok(_) => "accepted".into(),
        Err(e) => format!("{:?}", e.code()),
    }
}

async fn service(dsn: &str) -> Arc<dyn Transport> {
    Arc::new(
        PostgresTransport::connect(dsn, json!({ "role": "service_role" }))
            .await
            .unwrap(),
    )
}

async fn stored(admin: &tokio_postgres::Client) -> i64 {
    admin
        .query_one("SELECT count(*) FROM supabash.storage_nonces", &[])
        .await
        .unwrap()
        .get(0)
}

/// Not a test of its own: the body of each child process
/// [`one_capability_two_processes_one_acceptance`] starts. Without its settings it does nothing.
#[tokio::test]
#[ignore = "run as a child process by one_capability_two_processes_one_acceptance"]
async fn a_child_process_presents_the_capability() {
    let (Ok(dsn), Ok(token)) = (std::env::var(CHILD_DSN), std::env::var(CHILD_TOKEN)) else {
        return;
    };
    let outcome = present(service(&dsn).await, &token).await;
    println!("OUTCOME={outcome}");
}

#[tokio::test]
async fn one_capability_two_processes_one_acceptance() {
    let cluster = Cluster::shared();
    let _table = TABLE.lock().await;
    let token = capability();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "a_child_process_presents_the_capability",
                    "--include-ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_DSN, cluster.dsn("authenticator"))
                .env(CHILD_TOKEN, &token)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut outcomes: Vec<String> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "a child failed");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            // libtest prints the test's name on the same line.
            stdout
                .split("OUTCOME=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_owned)
                .unwrap_or_else(|| panic!("the child reported no outcome: {stdout}"))
        })
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, ["InvalidCapability", "accepted"]);

    // And two clients of one process at once, one over Postgres and one over PostgREST with
    // the service key, with a fresh capability: one acceptance.
    let token = capability();
    let over_http: Arc<dyn Transport> = Arc::new(PostgrestTransport::new(
        postrust_url(),
        "test-service-key",
        &sign(&json!({ "role": "service_role", "exp": 4_000_000_000u64 })),
    ));
    let (a, b) = tokio::join!(
        async { present(service(&cluster.dsn("authenticator")).await, &token).await },
        async { present(over_http.clone(), &token).await },
    );
    let mut both = [a, b];
    both.sort();
    assert_eq!(both, ["InvalidCapability", "accepted"]);
    // A later presentation is refused too, with the nonce still stored.
    assert_eq!(
        present(service(&cluster.dsn("authenticator")).await, &token).await,
        "InvalidCapability"
    );
}

#[tokio::test]
async fn only_the_service_role_spends_and_a_refusal_stores_nothing() {
    let cluster = Cluster::shared();
    let _table = TABLE.lock().await;
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let args = || json!({ "nonce": new_nonce(), "keep_until": now() + 600 });
    let user = uuid::Uuid::new_v4().to_string();
    let refused = [
        ("anon", Caller::Anon),
        ("a signed-in user", Caller::new_user()),
        (
            "service_role claims under authenticated",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: json!({ "role": "service_role", "sub": user }),
            },
        ),
        (
            "user claims under service_role",
            Caller::Raw {
                role: Some("service_role".into()),
                claims: json!({ "role": "authenticated", "sub": user }),
            },
        ),
        (
            "no claims under service_role",
            Caller::Raw {
                role: Some("service_role".into()),
                claims: Value::Null,
            },
        ),
        (
            "service_role claims under the login role",
            Caller::Raw {
                role: None,
                claims: json!({ "role": "service_role" }),
            },
        ),
    ];
    let before = stored(&admin).await;
    for (who, caller) in &refused {
        let e = rest.call(caller, SPEND, args()).await.unwrap_err();
        assert_eq!(e.code, "42501", "{who}: {e}");
        assert!(rest.alive().await, "{who}: connection lost");
    }
    assert_eq!(
        stored(&admin).await,
        before,
        "a refused caller stored a nonce"
    );
    // No PostgREST role reaches the table directly.
    for role in ["anon", "authenticated", "service_role"] {
        let e = admin
            .batch_execute(&format!(
                "BEGIN; SET LOCAL ROLE {role}; SELECT count(*) FROM supabash.storage_nonces; COMMIT"
            ))
            .await
            .unwrap_err();
        assert_eq!(
            e.as_db_error().unwrap().code().code(),
            "42501",
            "{role}: {e}"
        );
        admin.batch_execute("ROLLBACK").await.unwrap();
    }

    // The service role spends once; the second spend is a replay.
    let spend = args();
    let first = rest.call(&Caller::Service, SPEND, spend.clone()).await;
    assert_eq!(first.unwrap(), json!({ "consumed": true }));
    let again = rest.call(&Caller::Service, SPEND, spend).await;
    assert_eq!(again.unwrap(), json!({ "consumed": false }));
    assert_eq!(stored(&admin).await, before + 1);
}

#[tokio::test]
async fn malformed_input_is_refused_and_stores_nothing() {
    let cluster = Cluster::shared();
    let _table = TABLE.lock().await;
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let later = now() + 600;
    let cases = [
        json!({ "nonce": "short", "keep_until": later }),
        json!({ "nonce": "x".repeat(129), "keep_until": later }),
        json!({ "nonce": "has spaces in it, sixteen+", "keep_until": later }),
        json!({ "nonce": "é".repeat(16), "keep_until": later }),
        json!({ "nonce": new_nonce(), "keep_until": -1 }),
        json!({ "nonce": new_nonce(), "keep_until": now() + 3 * 86_400 }),
        json!({ "nonce": Value::Null, "keep_until": later }),
        json!({ "nonce": new_nonce(), "keep_until": Value::Null }),
    ];
    let before = stored(&admin).await;
    for args in cases {
        let e = expect_err(
            rest.call(&Caller::Service, SPEND, args.clone()).await,
            "22023",
            Some("SUPABASH_INVALID_ARGUMENT"),
        );
        assert!(!e.message.contains("pwned"), "{e}");
        assert!(rest.alive().await, "{args}: connection lost");
    }
    assert_eq!(stored(&admin).await, before);
    // The client checks the same shape before it calls.
    let nonces = DatabaseNonceStore::new(service(&cluster.dsn("authenticator")).await);
    let e = nonces.consume("short", now() + 60).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(stored(&admin).await, before);
}

#[tokio::test]
async fn expired_nonces_are_forgotten_and_the_live_count_is_bounded() {
    let cluster = Cluster::shared();
    let _table = TABLE.lock().await;
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    admin
        .batch_execute(
            "INSERT INTO supabash.storage_nonces (nonce_hash, expires_at)
             SELECT sha256(('expired' || g)::bytea), now() - interval '1 minute'
               FROM generate_series(1, 100) g",
        )
        .await
        .unwrap();
    let expired = || async {
        admin
            .query_one(
                "SELECT count(*) FROM supabash.storage_nonces WHERE expires_at <= now()",
                &[],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    let before = expired().await;
    assert!(before >= 100);
    let r = rest
        .call(
            &Caller::Service,
            SPEND,
            json!({ "nonce": new_nonce(), "keep_until": now() + 60 }),
        )
        .await;
    assert_eq!(r.unwrap(), json!({ "consumed": true }));
    assert!(expired().await < before, "a spend forgot no expired nonce");

    // Fill up to the bound with live nonces: the next spend is refused and stores nothing.
    let live: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.storage_nonces WHERE expires_at > now()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    admin
        .execute(
            "INSERT INTO supabash.storage_nonces (nonce_hash, expires_at)
             SELECT sha256(('live' || g)::bytea), now() + interval '1 hour'
               FROM generate_series(1, $1::bigint) g",
            &[&(MAX_LIVE_STORAGE_NONCES - live)],
        )
        .await
        .unwrap();
    let total = stored(&admin).await;
    let e = expect_err(
        rest.call(
            &Caller::Service,
            SPEND,
            json!({ "nonce": new_nonce(), "keep_until": now() + 60 }),
        )
        .await,
        "54000",
        Some("SUPABASH_QUOTA_EXCEEDED"),
    );
    assert!(e.message.contains("bound"), "{e}");
    assert_eq!(stored(&admin).await, total);
    admin
        .batch_execute(
            "DELETE FROM supabash.storage_nonces
              WHERE nonce_hash IN (SELECT sha256(('live' || g)::bytea)
                                     FROM generate_series(1, 200000) g)",
        )
        .await
        .unwrap();
    let r = rest
        .call(
            &Caller::Service,
            SPEND,
            json!({ "nonce": new_nonce(), "keep_until": now() + 60 }),
        )
        .await;
    assert_eq!(r.unwrap(), json!({ "consumed": true }));
}

//! `supabash_grep` on text built to be slow or large (issue 36): patterns whose search leaves
//! the regex crate's DFA (Unicode `\b` on non-ASCII text) stop within a second of a
//! `statement_timeout` or a `pg_cancel_backend`, and a body of 64 Mi empty lines is searched
//! without a list of its lines (peak backend memory sampled as in memory.rs).

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use supabash_tests::memory::Sampler;
use supabash_tests::support::expect_err;
use supabash_tests::{Caller, Cluster, SqlRpc};
use tokio_postgres::NoTls;

const MIB: u64 = 1024 * 1024;
/// Patterns from the attacker review: minutes of NFA simulation on `é a ` text.
const SLOW: [&str; 2] = [r"(?:\b[aé ]){2000}[^aé ]", r"(?:[aé ]*\b){500}[^aé ]"];

async fn session() -> (SqlRpc, i32) {
    let rest = SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await;
    let pid: i32 = rest
        .client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    (rest, pid)
}

/// A workspace holding `/u1m`: `é a ` 262,144 times, one line of 1.3 MB.
async fn slow_text(rest: &mut SqlRpc, owner: &Caller) -> String {
    let ws = rest.create_workspace(owner).await;
    let text = "é a ".repeat(262_144);
    rest.commit_as(
        owner,
        &ws,
        None,
        json!([{"op": "upsert", "path": "/u1m", "text": text}]),
    )
    .await;
    ws
}

fn slow_grep(ws: &str, pattern: &str) -> Value {
    json!({ "workspace_id": ws, "pattern": pattern, "paths": ["/u1m"] })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_patterns_stop_at_a_timeout_and_at_a_cancel() {
    let owner = Caller::new_user();
    let (mut rest, _) = session().await;
    let ws = slow_text(&mut rest, &owner).await;

    // statement_timeout: the error comes within a second of the timeout.
    rest.client
        .batch_execute("SET statement_timeout = '3s'")
        .await
        .unwrap();
    for pattern in SLOW {
        let t = Instant::now();
        let r = rest
            .call(&owner, "supabash_grep", slow_grep(&ws, pattern))
            .await;
        let took = t.elapsed();
        let e = expect_err(r, "57014", None);
        assert!(e.message.contains("statement timeout"), "{e}");
        eprintln!("{pattern}: statement_timeout 3 s, error after {took:?}");
        assert!(
            took < Duration::from_secs(4),
            "{pattern}: the error came {took:?} after the start"
        );
    }
    rest.client
        .batch_execute("RESET statement_timeout")
        .await
        .unwrap();

    // pg_cancel_backend (what a client's cancel sends) 1.5 s in: the error within a second.
    for pattern in SLOW {
        let (mut busy, pid) = session().await;
        let owner2 = owner.clone();
        let args = slow_grep(&ws, pattern);
        let call = tokio::spawn(async move { busy.call(&owner2, "supabash_grep", args).await });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let cancelled: bool = rest
            .client
            .query_one("SELECT pg_cancel_backend($1)", &[&pid])
            .await
            .unwrap()
            .get(0);
        assert!(cancelled);
        let t = Instant::now();
        let r = call.await.unwrap();
        let took = t.elapsed();
        let e = expect_err(r, "57014", None);
        assert!(e.message.contains("canceling statement"), "{e}");
        eprintln!("{pattern}: cancelled at 1.5 s, error {took:?} later");
        assert!(took < Duration::from_secs(1), "{pattern}: {took:?}");
    }

    // The client's own cancel request stops it the same way.
    let (mut busy, _) = session().await;
    let token = busy.client.cancel_token();
    let args = slow_grep(&ws, SLOW[0]);
    let owner2 = owner.clone();
    let call = tokio::spawn(async move { busy.call(&owner2, "supabash_grep", args).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    token.cancel_query(NoTls).await.unwrap();
    let t = Instant::now();
    expect_err(call.await.unwrap(), "57014", None);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());

    // The same patterns still answer on text their DFA handles, and a line of the slow text
    // is found by the slow engine at the same column the regex crate gives.
    let page = rest
        .call(
            &owner,
            "supabash_grep",
            json!({ "workspace_id": ws, "pattern": r"(?:[aé ]*\b){3}a\b", "paths": ["/u1m"] }),
        )
        .await
        .unwrap();
    assert_eq!(page["matches"][0]["line"], json!(1), "{page}");
    assert_eq!(page["matches"][0]["column"], json!(1), "{page}");
}

#[tokio::test]
async fn too_complex_patterns_are_refused() {
    let owner = Caller::new_user();
    let (mut rest, _) = session().await;
    let ws = rest.create_workspace(&owner).await;
    let r = rest
        .call(
            &owner,
            "supabash_grep",
            json!({ "workspace_id": ws, "pattern": r"\w{30}" }),
        )
        .await;
    let e = expect_err(r, "22023", Some("SUPABASH_INVALID_ARGUMENT"));
    assert!(e.message.contains("too complex"), "{e}");
}

#[tokio::test]
async fn many_empty_lines_are_searched_without_a_list_of_lines() {
    let owner = Caller::new_user();
    let (mut rest, _) = session().await;
    let ws = rest.create_workspace(&owner).await;
    let lines = 64 * 1024 * 1024 - 1;
    rest.commit_as(
        &owner,
        &ws,
        None,
        json!([{"op": "upsert", "path": "/big", "text": "\n".repeat(lines)}]),
    )
    .await;
    let (mut one, pid) = session().await;
    one.call(&owner, "supabash_history", json!({ "workspace_id": ws }))
        .await
        .unwrap();
    let sampler = Sampler::start(vec![pid]);
    let t = Instant::now();
    let page = one
        .call(
            &owner,
            "supabash_grep",
            json!({ "workspace_id": ws, "pattern": "^", "max_matches": 1 }),
        )
        .await
        .unwrap();
    let took = t.elapsed();
    let peak = sampler.finish()[&pid];
    eprintln!("64 Mi empty lines: {took:?}, peak {} MiB", peak / MIB);
    assert_eq!(page["matches"][0]["line"], json!(1), "{page}");
    assert_eq!(page["nextCursor"], json!("1:/big"), "{page}");
    // The body decoded (64 MiB) and the rest of the call: docs/sql-contract.md's ceiling.
    assert!(peak < 160 * MIB, "the backend reached {} MiB", peak / MIB);

    // A later page starts after the cursor's line, and context lines stay bounded.
    let page = one
        .call(
            &owner,
            "supabash_grep",
            json!({ "workspace_id": ws, "pattern": "^", "max_matches": 1,
                    "cursor": "40000000:/big", "context_lines": 10 }),
        )
        .await
        .unwrap();
    assert_eq!(page["matches"][0]["line"], json!(40_000_001), "{page}");
    assert_eq!(page["matches"][0]["before"].as_array().unwrap().len(), 10);
    assert_eq!(page["matches"][0]["after"].as_array().unwrap().len(), 10);
}

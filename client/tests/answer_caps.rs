//! Every answer the client reads from the network stops at a cap: PostgREST answers (against a
//! stand-in that follows PostgREST's documented contract, with and without `Content-Length`,
//! and one that never ends) and fetched key sets. A normal answer passes; a longer one fails
//! with `QUOTA_EXCEEDED` naming the cap and the setting that raises it. (Storage answers:
//! `storage_server_rules.rs`.)

use supabash_tests::client::{json_test_server, postgrest_stand_in, Framing};

use serde_json::Map;
use supabash::auth::JwksVerifier;
use supabash::transport::{call, MAX_ANSWER_BYTES};
use supabash::{ErrorCode, PostgrestTransport, SupabashError, Transport};
use supabash_core::rpc::requests::{CreateWorkspace, History};

const CAP: usize = 64 * 1024;

/// A JSON string answer of `n` bytes in all.
fn answer_of(n: usize) -> Vec<u8> {
    serde_json::to_vec(&"a".repeat(n - 2)).unwrap()
}

fn transport(url: &str) -> PostgrestTransport {
    PostgrestTransport::new(url, "key", "token")
        .with_max_answer_bytes(CAP)
        .unwrap()
}

async fn read(url: &str) -> Result<String, SupabashError> {
    transport(url)
        .call_text("supabash_history", Map::new())
        .await
        .map_err(|e| SupabashError::from_rpc(e, false))
}

#[tokio::test]
async fn postgrest_answers_stop_at_the_cap() {
    for framing in [Framing::Length, Framing::Chunked] {
        // An answer of exactly the cap passes.
        let url = postgrest_stand_in(answer_of(CAP), framing).await;
        assert_eq!(read(&url).await.unwrap().len(), CAP, "{framing:?}");
        // One byte more does not.
        let url = postgrest_stand_in(answer_of(CAP + 1), framing).await;
        let e = read(&url).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{framing:?}: {e}");
        assert!(!e.is_retryable(), "{e}");
        let message = e.to_string();
        assert!(message.contains(&CAP.to_string()), "{message}");
        assert!(message.contains("with_max_answer_bytes"), "{message}");
    }
    // A server that never stops sending: the reader stops on its own.
    let url = postgrest_stand_in(answer_of(1000), Framing::Endless).await;
    let e = tokio::time::timeout(std::time::Duration::from_secs(30), read(&url))
        .await
        .expect("a capped read ends")
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}");
}

#[tokio::test]
async fn a_typed_call_reports_the_cap_and_a_mutation_its_unknown_outcome() {
    let url = postgrest_stand_in(answer_of(CAP * 2), Framing::Length).await;
    let t = transport(&url);
    let read = History {
        workspace_id: "w".into(),
        ..Default::default()
    };
    let e = call(&t, &read).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}");
    assert!(!e.outcome_unknown(), "{e}");
    // The server said 200 to a mutation: it ran, but its answer was not read.
    let e = call(&t, &CreateWorkspace::default()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}");
    assert!(e.outcome_unknown(), "{e}");
}

#[test]
fn the_answer_cap_is_a_checked_setting() {
    for bad in [0, MAX_ANSWER_BYTES + 1] {
        let e = PostgrestTransport::new("http://127.0.0.1:9", "k", "t")
            .with_max_answer_bytes(bad)
            .err()
            .expect("refused");
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
        let e = JwksVerifier::supabase("http://127.0.0.1:9")
            .unwrap()
            .with_max_bytes(bad)
            .expect_err("refused");
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
    }
    PostgrestTransport::new("http://127.0.0.1:9", "k", "t")
        .with_max_answer_bytes(MAX_ANSWER_BYTES)
        .unwrap();
}

#[tokio::test]
async fn a_key_set_past_its_cap_is_refused() {
    // Supabase Auth's documented JWKS endpoint, answering a set padded past 1 KiB.
    let padding = "x".repeat(4096);
    let url =
        json_test_server(move |_| ("200 OK", format!(r#"{{"keys":[],"pad":"{padding}"}}"#))).await;
    let verifier = JwksVerifier::supabase(&url)
        .unwrap()
        .with_max_bytes(1024)
        .unwrap();
    // Any token with a kid makes it fetch.
    let token = "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoiSldUIn0.e30.c2ln";
    let e = verifier.verify(token).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}");
    assert!(e.to_string().contains("with_max_bytes"), "{e}");
    // The default cap (1 MiB) reads it: the set is fetched, and simply lacks the key.
    let e = JwksVerifier::supabase(&url)
        .unwrap()
        .verify(token)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authentication, "{e}");
}

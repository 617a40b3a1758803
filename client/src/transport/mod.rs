//! How the client reaches the RPCs. One call is an RPC name plus a JSON object of named
//! arguments; the answer is JSON or an [`RpcError`] that keeps everything the server said.

pub(crate) mod answer;
mod postgres;
mod postgrest;

pub use answer::{DEFAULT_MAX_ANSWER_BYTES, MAX_ANSWER_BYTES};
pub use postgres::{postgres_error, PostgresTransport};
pub use postgrest::PostgrestTransport;

pub use crate::rpc_error::{Delivery, RpcError};

use crate::error::{Result, SupabashError};
use serde_json::{Map, Value};
use supabash_core::rpc::Rpc;
use supabash_core::ErrorCode;
use tracing::Instrument;

/// An answer's JSON text parsed; text that is not JSON is an error of an answered call.
fn json_answer(text: &str) -> Result<Value, RpcError> {
    serde_json::from_str(text).map_err(|e| RpcError {
        status: None,
        code: None,
        message: format!("the answer is not JSON: {e}"),
        details: None,
        hint: None,
        delivery: Delivery::Answered,
    })
}

/// One way to call the supabash RPCs.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Calls `public.<rpc>` with named arguments. `args` never holds JSON `null`: absent
    /// arguments take their SQL defaults.
    async fn call(&self, rpc: &str, args: Map<String, Value>) -> Result<Value, RpcError>;

    /// [`Transport::call`] answering the JSON text as it arrived, for a caller that decodes it
    /// straight into its own types (one parse, no intermediate [`Value`]: a manifest of
    /// thousands of files decodes in a fraction of the time). The default serialises what
    /// `call` answers.
    async fn call_text(&self, rpc: &str, args: Map<String, Value>) -> Result<String, RpcError> {
        self.call(rpc, args).await.map(|v| v.to_string())
    }

    /// Calls `public.<rpc>` on behalf of a delegated grant. By default the grant is the
    /// `delegated_grant` argument, which the direct Postgres transport binds as a parameter
    /// (never in statement text, so never in the server log); HTTP transports send it in a
    /// header instead, so it never reaches a URL or an access log.
    async fn call_with_grant(
        &self,
        rpc: &str,
        mut args: Map<String, Value>,
        grant: &str,
    ) -> Result<Value, RpcError> {
        args.insert("delegated_grant".into(), Value::String(grant.to_owned()));
        self.call(rpc, args).await
    }

    /// Listens for the announcements on `channel` (`LISTEN` on a connection of its own).
    /// `None` when the transport cannot listen: PostgREST runs each call as one HTTP request
    /// and holds no session (a watch over it polls `supabash_history` instead).
    async fn listen(&self, _channel: &str) -> Result<Option<Listening>, RpcError> {
        Ok(None)
    }
}

/// The payloads of one `LISTEN`, as they arrive; the stream ends when its connection does
/// (dropping it closes the connection).
pub struct Listening {
    payloads: tokio::sync::mpsc::UnboundedReceiver<String>,
    /// The session that listens: kept open as long as this is.
    _session: tokio_postgres::Client,
}

impl Listening {
    /// The next payload, or `None` once the connection is gone.
    pub async fn recv(&mut self) -> Option<String> {
        self.payloads.recv().await
    }
}

/// Calls RPC `R` with `request` and decodes its answer. Whether a lost answer leaves the
/// outcome unknown comes from the contract (`R::MUTATES`).
pub async fn call<R: Rpc>(transport: &dyn Transport, request: &R) -> Result<R::Answer> {
    let args = match serde_json::to_value(request) {
        Ok(Value::Object(map)) => map,
        _ => unreachable!("requests serialise to objects"),
    };
    // The span names the RPC and how it ended, never an argument: they hold grants, tokens
    // and contents.
    let span = tracing::debug_span!(
        "supabash.rpc",
        rpc = R::NAME,
        mutates = R::MUTATES,
        code = tracing::field::Empty
    );
    let answer = transport
        .call_text(R::NAME, args)
        .instrument(span.clone())
        .await
        .map_err(|e| {
            // A mutation whose success answer was too long to read ran; its receipt is lost.
            let ran = e.status.is_some_and(|s| (200..300).contains(&s))
                && e.code.as_deref() == Some(postgrest::ANSWER_TOO_LARGE);
            let mut e = SupabashError::from_rpc(e, R::MUTATES);
            e.outcome_unknown |= ran && R::MUTATES;
            e
        });
    if let Err(e) = &answer {
        span.record("code", e.code().as_str());
    }
    let answer = answer?;
    serde_json::from_str(&answer).map_err(|e| {
        SupabashError::new(
            ErrorCode::Backend,
            format!("{} answered an unexpected shape", R::NAME),
        )
        .with_source(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use supabash_core::rpc::requests::{ExchangeCapability, History};

    /// Sends every request and loses every answer.
    struct LosesAnswers;

    #[async_trait::async_trait]
    impl Transport for LosesAnswers {
        async fn call(&self, _: &str, _: Map<String, Value>) -> Result<Value, RpcError> {
            Err(RpcError::transport(Delivery::Lost, "connection reset"))
        }
    }

    #[tokio::test]
    async fn a_lost_exchange_answer_leaves_the_outcome_unknown() {
        let request = ExchangeCapability {
            capability: "x.y.z".into(),
        };
        let e = call(&LosesAnswers, &request).await.unwrap_err();
        assert!(
            e.is_retryable() && e.outcome_unknown(),
            "spends a nonce: {e:?}"
        );
        let read = History {
            workspace_id: "w".into(),
            ..Default::default()
        };
        let e = call(&LosesAnswers, &read).await.unwrap_err();
        assert!(e.is_retryable() && !e.outcome_unknown(), "a read: {e:?}");
    }
}

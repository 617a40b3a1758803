//! How the client reaches the RPCs. One call is an RPC name plus a JSON object of named
//! arguments; the answer is JSON or an [`RpcError`] that keeps everything the server said.

mod postgres;
mod postgrest;

pub use postgres::{call_statement, PostgresTransport};
pub use postgrest::PostgrestTransport;

use crate::error::{Result, SupabashError};
use serde_json::{Map, Value};
use std::fmt;
use supabash_core::rpc::Rpc;
use supabash_core::ErrorCode;

/// Whether a failed request reached the server and whether its answer arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The server answered (with an error).
    Answered,
    /// The request never left: nothing happened on the server.
    Unreached,
    /// The request was sent but no answer arrived: it may have run.
    Lost,
}

/// A failed RPC as the transport saw it.
#[derive(Debug, Clone)]
pub struct RpcError {
    /// The HTTP status (PostgREST); `None` for direct Postgres or when nothing answered.
    pub status: Option<u16>,
    /// SQLSTATE or PostgREST code (`PGRST*`).
    pub code: Option<String>,
    /// The message (database errors start with a `SUPABASH_*` marker).
    pub message: String,
    /// The error detail (the extension sends JSON here).
    pub details: Option<String>,
    /// The error hint.
    pub hint: Option<String>,
    /// Whether the request reached the server.
    pub delivery: Delivery,
}

impl RpcError {
    /// A request that failed before or while being sent.
    pub fn transport(delivery: Delivery, message: impl Into<String>) -> Self {
        RpcError {
            status: None,
            code: None,
            message: message.into(),
            details: None,
            hint: None,
            delivery,
        }
    }

    /// The `path` field of JSON details, when the server named one.
    pub fn detail_path(&self) -> Option<String> {
        let details: Value = serde_json::from_str(self.details.as_deref()?).ok()?;
        details.get("path")?.as_str().map(str::to_owned)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.status {
            write!(f, "HTTP {s} ")?;
        }
        if let Some(c) = &self.code {
            write!(f, "{c} ")?;
        }
        f.write_str(&self.message)?;
        if let Some(d) = &self.details {
            write!(f, " (details: {d})")?;
        }
        Ok(())
    }
}

impl std::error::Error for RpcError {}

/// One way to call the supabash RPCs.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Calls `public.<rpc>` with named arguments. `args` never holds JSON `null`: absent
    /// arguments take their SQL defaults.
    async fn call(&self, rpc: &str, args: Map<String, Value>) -> Result<Value, RpcError>;
}

/// Calls RPC `R` with `request` and decodes its answer. Whether a lost answer leaves the
/// outcome unknown comes from the contract (`R::MUTATES`).
pub async fn call<R: Rpc>(transport: &dyn Transport, request: &R) -> Result<R::Answer> {
    let args = match serde_json::to_value(request) {
        Ok(Value::Object(map)) => map,
        _ => unreachable!("requests serialise to objects"),
    };
    let answer = transport
        .call(R::NAME, args)
        .await
        .map_err(|e| SupabashError::from_rpc(e, R::MUTATES))?;
    serde_json::from_value(answer).map_err(|e| {
        SupabashError::new(
            ErrorCode::Storage,
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
        assert!(e.retryable && e.outcome_unknown, "spends a nonce: {e:?}");
        let read = History {
            workspace_id: "w".into(),
            ..Default::default()
        };
        let e = call(&LosesAnswers, &read).await.unwrap_err();
        assert!(e.retryable && !e.outcome_unknown, "a read: {e:?}");
    }
}

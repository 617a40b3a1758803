//! How the client reaches the RPCs. One call is an RPC name plus a JSON object of named
//! arguments; the answer is JSON or an [`RpcError`] that keeps everything the server said.

mod postgres;
mod postgrest;

pub use postgres::{call_statement, PostgresTransport};
pub use postgrest::PostgrestTransport;

use crate::error::{Result, SupabashError};
use serde_json::{Map, Value};
use std::fmt;

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

/// The RPCs that write. A lost answer to one of them leaves the outcome unknown.
pub fn is_mutation(rpc: &str) -> bool {
    matches!(
        rpc,
        "supabash_create_workspace"
            | "supabash_commit"
            | "supabash_checkpoint"
            | "supabash_delete_checkpoint"
            | "supabash_purge"
    )
}

/// Calls an RPC, dropping `null` arguments, and maps failures to [`SupabashError`].
pub async fn call(transport: &dyn Transport, rpc: &str, args: Value) -> Result<Value> {
    let args = match args {
        Value::Object(map) => map.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        _ => Map::new(),
    };
    transport
        .call(rpc, args)
        .await
        .map_err(|e| SupabashError::from_rpc(e, is_mutation(rpc)))
}

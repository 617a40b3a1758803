//! How the client reaches the RPCs. One call is an RPC name plus a JSON object of named
//! arguments; the answer is JSON or an [`RpcError`] that keeps everything the server said.

mod postgres;
mod postgrest;

pub use postgres::PostgresTransport;
pub use postgrest::PostgrestTransport;

pub use crate::rpc_error::{Delivery, RpcError};

use crate::error::{Result, SupabashError};
use serde_json::{Map, Value};

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

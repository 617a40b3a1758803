//! A failed RPC as a transport reports it ([`RpcError`]), and whether the request reached the
//! server ([`Delivery`]). Transports produce these; the `error` module classifies them. Neither
//! depends on the other modules of the client, so the arrows point one way:
//! `rpc_error` ← `error` ← `transport`.

use serde_json::Value;
use std::fmt;

/// Whether a failed request reached the server and whether its answer arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

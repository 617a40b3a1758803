//! Commit receipts: what a commit did to each path, by rendered content hash and size.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line of a commit receipt: what happened to one path, by rendered content hash and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptLine {
    pub op: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after_size: Option<i64>,
    /// For a move onto an existing file: the content hash of the file it replaced.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replaced_hash: Option<String>,
    /// For a move onto an existing file: the size of the file it replaced.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replaced_size: Option<i64>,
}

/// The record of one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    pub workspace_id: String,
    pub revision: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub parent_revision: Option<String>,
    pub position: i64,
    pub transaction_id: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub idempotency_key: Option<String>,
    pub actor: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub correlation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cause: Option<String>,
    pub metadata: Value,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source_revision: Option<String>,
    pub committed_at: String,
    pub changes: Vec<ReceiptLine>,
}

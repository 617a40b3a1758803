//! Commit receipts: what a commit did to each path, by rendered content hash and size.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// One line of a commit receipt: what happened to one path, by rendered content hash and size.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptLine {
    pub op: String,
    pub path: String,
    pub from: Option<String>,
    pub before_hash: Option<String>,
    pub before_size: Option<i64>,
    pub after_hash: Option<String>,
    pub after_size: Option<i64>,
    /// For a move onto an existing file: the content hash of the file it replaced.
    pub replaced_hash: Option<String>,
    /// For a move onto an existing file: the size of the file it replaced.
    pub replaced_size: Option<i64>,
    /// True when redaction removed the hashes and sizes of redacted content from this line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// The permission bits before and after (a mode-only change is an op `setattr` whose
    /// hashes are equal); absent where unknown (a commit made before modes were stored).
    #[serde(default)]
    pub before_mode: Option<u32>,
    #[serde(default)]
    pub after_mode: Option<u32>,
    /// The kind after the change when it is not a regular file (`symlink`, `directory`).
    #[serde(default)]
    pub kind: Option<crate::posix::Kind>,
}

impl ReceiptLine {
    /// Removes every hash in `hashes` (lowercase hex) from the line, with its size, and marks
    /// the line redacted; answers whether anything was removed.
    pub fn redact(&mut self, hashes: &std::collections::HashSet<String>) -> bool {
        let mut removed = false;
        for (hash, size) in [
            (&mut self.before_hash, &mut self.before_size),
            (&mut self.after_hash, &mut self.after_size),
            (&mut self.replaced_hash, &mut self.replaced_size),
        ] {
            if hash.as_ref().is_some_and(|h| hashes.contains(h)) {
                *hash = None;
                *size = None;
                removed = true;
            }
        }
        self.redacted |= removed;
        removed
    }
}

/// The record of one commit.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    pub workspace_id: String,
    pub revision: String,
    pub parent_revision: Option<String>,
    pub position: i64,
    pub transaction_id: String,
    pub idempotency_key: Option<String>,
    pub actor: String,
    pub correlation_id: Option<String>,
    pub cause: Option<String>,
    pub metadata: Value,
    pub source_revision: Option<String>,
    /// For a commit made with a delegated grant: the key id of the verifier whose capability
    /// was exchanged for it, recorded by the database (a caller cannot set it).
    pub delegation_key_id: Option<String>,
    /// A fork's first revision: where its tree came from.
    pub forked_from: Option<ForkedFrom>,
    /// For a rebased commit: the base revision it was made on; `parent_revision` is the head
    /// it was applied on top of.
    pub rebased_from: Option<String>,
    pub committed_at: String,
    pub changes: Vec<ReceiptLine>,
}

/// The workspace and revision a fork was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    pub workspace_id: String,
    pub revision: String,
}

impl ForkedFrom {
    /// From the two stored columns that name it (both set, or it is not a fork).
    pub fn from_columns(workspace_id: Option<String>, revision: Option<String>) -> Option<Self> {
        Some(ForkedFrom {
            workspace_id: workspace_id?,
            revision: revision?,
        })
    }
}

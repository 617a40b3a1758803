//! The integrity checks behind `supabash_verify`: whether a workspace's stored history holds
//! together, every problem found reported precisely and nothing ever repaired. Three passes,
//! each a page at a time so memory stays bounded however big the workspace is:
//!
//! - [`history`]: the revision chain (parent links, positions, the head) and every receipt
//!   against the entries it describes;
//! - [`entries`]: every entry row the workspace has or reads (a fork's inherited rows, see
//!   `lineage`): intervals, and that its body is stored with its size;
//! - [`stored`]: every body of the workspace's store (shared by its fork family), decoded
//!   through its delta chain and hashed.
//!
//! Redaction tombstones are not problems: they name no body, and receipts lose the hashes of
//! redacted content. Read only: no transaction id, so it works on a hot standby.

pub mod entries;
pub mod history;
pub mod stored;

use supabash_core::rpc::verify::{Problem, MAX_LISTED_PROBLEMS};

/// Problems found so far: all counted, the first [`MAX_LISTED_PROBLEMS`] kept.
#[derive(Default)]
pub struct Found {
    /// Every problem found.
    pub count: i64,
    /// The first [`MAX_LISTED_PROBLEMS`] of them.
    pub listed: Vec<Problem>,
}

impl Found {
    /// Counts `problem`, and keeps it while fewer than [`MAX_LISTED_PROBLEMS`] are kept.
    pub fn add(&mut self, problem: Problem) {
        self.count += 1;
        if self.listed.len() < MAX_LISTED_PROBLEMS {
            self.listed.push(problem);
        }
    }
}

/// A short form of a hash for messages.
pub(crate) fn short(hash: &[u8]) -> String {
    hex::encode(&hash[..hash.len().min(6)])
}

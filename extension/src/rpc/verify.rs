//! `supabash_verify`: whether a workspace's stored history holds together, every problem
//! found reported precisely and nothing ever repaired. Three passes, each a page at a time so
//! memory stays bounded however big the workspace is:
//!
//! - [`history`]: the revision chain (parent links, positions, the head) and every receipt
//!   against the entries it describes;
//! - [`entries`]: every entry row the workspace has or reads (a fork's inherited rows, see
//!   `lineage`): intervals, and that its body is stored with its size;
//! - [`stored`]: every body of the workspace's store (shared by its fork family), decoded
//!   through its delta chain and hashed.
//!
//! Redaction tombstones are not problems: they name no body, and receipts lose the hashes of
//! redacted content. A read: it takes no transaction id and works on a hot standby. It does
//! not charge the call's decoding budget: it holds one page of bodies at a time.

mod entries;
mod history;
mod stored;

use super::Call;
use crate::pg::fail::Outcome;
use crate::store::access;
use supabash_core::capability::Operation;
use supabash_core::rpc::verify::{Checked, Problem, Verify, VerifyReport, MAX_LISTED_PROBLEMS};

/// Problems found so far: all counted, the first [`MAX_LISTED_PROBLEMS`] kept.
#[derive(Default)]
pub(crate) struct Found {
    count: i64,
    listed: Vec<Problem>,
}

impl Found {
    pub(crate) fn add(&mut self, problem: Problem) {
        self.count += 1;
        if self.listed.len() < MAX_LISTED_PROBLEMS {
            self.listed.push(problem);
        }
    }
}

/// `supabash_verify`: the owner, or a delegated grant allowing `history`.
pub fn verify(_call: &Call, req: Verify) -> Outcome<VerifyReport> {
    let ws = access::open(&req, &[Operation::History])?;
    let mut found = Found::default();
    let mut checked = Checked::default();
    history::check(&ws, &mut found, &mut checked)?;
    entries::check(&ws, &mut found, &mut checked)?;
    stored::check(&ws, &mut found, &mut checked)?;
    Ok(VerifyReport {
        workspace_id: ws.id,
        ok: found.count == 0,
        checked,
        problem_count: found.count,
        truncated: found.count > found.listed.len() as i64,
        problems: found.listed,
    })
}

/// A short form of a hash for messages.
pub(crate) fn short(hash: &[u8]) -> String {
    hex::encode(&hash[..hash.len().min(6)])
}

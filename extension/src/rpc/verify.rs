//! `supabash_verify`: the store's integrity checks ([`crate::store::integrity`]) run in order
//! on one workspace, under the caller's access. A read: it takes no transaction id and works on
//! a hot standby. It does not charge the call's decoding budget: it holds one page of bodies at
//! a time.

use super::Call;
use crate::pg::fail::Outcome;
use crate::store::access;
use crate::store::integrity::{entries, history, stored, Found};
use supabash_core::rpc::verify::{Checked, Verify, VerifyReport};

/// `supabash_verify`: the owner, or a delegated grant allowing `history`.
pub fn verify(_call: &Call, req: Verify) -> Outcome<VerifyReport> {
    let ws = access::open(&req)?;
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

//! `supabash_may_watch`: whether the caller may receive a workspace's announcements. Supabase
//! Realtime asks it through the policy on `realtime.messages` (sql/policies.sql) when a client
//! joins the private topic `supabash:<workspace id>`: the owner, or `service_role` presenting a
//! delegated grant holding `history` (in the `x-supabash-grant` request header), may; anyone
//! else gets false, never an error, so the join is simply refused.

use super::Call;
use crate::pg::fail::Outcome;
use crate::store::access;
use supabash_core::rpc::watch::MayWatch;
use supabash_core::Marker;

/// `supabash_may_watch`.
pub fn may_watch(_call: &Call, req: MayWatch) -> Outcome<bool> {
    match access::open(&req) {
        Ok(_) => Ok(true),
        Err(f)
            if matches!(
                f.marker,
                Marker::WorkspaceDenied | Marker::AuthenticationRequired
            ) =>
        {
            Ok(false)
        }
        Err(f) => Err(f),
    }
}

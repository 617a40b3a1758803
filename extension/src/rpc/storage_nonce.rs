//! `supabash_spend_storage_nonce`: the database-backed nonce store of Storage capabilities
//! (client `capability::DatabaseNonceStore`). Storage capabilities are verified in the host
//! process; only their nonce comes here, so a capability is accepted once by every process
//! that shares the database. For the host's `service_role` only (EXECUTE is granted to it
//! alone, and the handler checks the verified role again); bounded in time
//! (`MAX_STORAGE_NONCE_KEEP_SECS`) and in count (`MAX_LIVE_STORAGE_NONCES`).

use super::Call;
use crate::pg::fail::{Fail, Outcome};
use crate::pg::identity;
use crate::store::storage_nonces;
use supabash_core::capability::{MAX_LIVE_STORAGE_NONCES, MAX_STORAGE_NONCE_KEEP_SECS};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::StorageNonce;
use supabash_core::Marker;

/// `supabash_spend_storage_nonce`: see docs/sql-contract.md.
pub fn spend_storage_nonce(call: &Call, req: rq::SpendStorageNonce) -> Outcome<StorageNonce> {
    if identity::role(&identity::claims()).as_deref() != Some("service_role") {
        return Err(Fail::new(
            Marker::AuthenticationRequired,
            "only the host's service_role spends Storage capability nonces",
        ));
    }
    if !call.schema.storage_nonces {
        return Err(Fail::new(
            Marker::SchemaOutdated,
            "the database-backed Storage nonce store needs supabash 0.6.0: run ALTER EXTENSION supabash UPDATE",
        ));
    }
    req.check_fields()
        .map_err(|why| Fail::new(Marker::InvalidArgument, why))?;
    let now = storage_nonces::now()?;
    if req.keep_until > now.saturating_add(MAX_STORAGE_NONCE_KEEP_SECS) {
        return Err(Fail::new(
            Marker::InvalidArgument,
            format!(
                "keep_until is more than {MAX_STORAGE_NONCE_KEEP_SECS} seconds past the database's clock"
            ),
        ));
    }
    storage_nonces::forget_expired()?;
    if storage_nonces::live(MAX_LIVE_STORAGE_NONCES)? >= MAX_LIVE_STORAGE_NONCES {
        return Err(Fail::new(
            Marker::Quota,
            format!(
                "the database keeps {MAX_LIVE_STORAGE_NONCES} unexpired Storage capability nonces, its bound: mint shorter-lived capabilities or wait for some to expire"
            ),
        ));
    }
    Ok(StorageNonce {
        consumed: storage_nonces::spend(&req.nonce, req.keep_until)?,
    })
}

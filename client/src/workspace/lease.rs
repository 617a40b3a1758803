//! The single-writer lease: taken, renewed and released by a workspace (or for one, by the
//! manager), and presented with every commit.

use super::{Lease, LeaseState, Workspace};
use crate::error::{Result, SupabashError};
use crate::transport::{call, Transport};
use std::time::Duration;
use supabash_core::rpc::requests as rq;
use supabash_core::ErrorCode;

impl Workspace {
    /// Takes the workspace's single-writer lease for `holder` (a host id) for `ttl` (1 s to
    /// 1 h, whole seconds), or fails `LEASE_HELD` (retryable) while another holder's lease
    /// lives. Every later commit of this workspace presents the lease; renew it before it ends.
    /// Acquiring again while this workspace holds a live lease presents its token (a fresh one
    /// replaces it); without it, a live lease is `LEASE_HELD` whatever the holder name.
    pub async fn acquire_lease(&self, holder: &str, ttl: Duration) -> Result<Lease> {
        let held = self.pending().lease.clone();
        let lease = acquire_lease(
            self.transport.as_ref(),
            &self.id,
            holder,
            ttl,
            held.as_deref(),
        )
        .await?;
        self.adopt_lease(&lease);
        Ok(lease)
    }

    /// Makes commits present `lease` (one the manager took for this workspace).
    pub(crate) fn adopt_lease(&self, lease: &Lease) {
        self.pending().lease = Some(lease.token.clone());
    }

    /// Extends the lease this workspace holds by `ttl` from now; `LEASE_LOST` (retryable: take
    /// a new lease, reload, retry) when it expired, was released or was taken over.
    pub async fn renew_lease(&self, ttl: Duration) -> Result<Lease> {
        let token = self.pending().lease.clone().ok_or_else(no_lease)?;
        let request = rq::RenewLease {
            workspace_id: self.id.clone(),
            token,
            ttl_seconds: lease_seconds(ttl)?,
            delegated_grant: None,
        };
        request.check_fields().map_err(lease_field)?;
        self.rpc(&request).await
    }

    /// Releases the lease this workspace holds; answers whether it was still live. Later
    /// commits present no lease.
    pub async fn release_lease(&self) -> Result<bool> {
        let token = self.pending().lease.clone().ok_or_else(no_lease)?;
        let released = release_lease(self.transport.as_ref(), &self.id, &token).await?;
        let mut pending = self.pending();
        if pending.lease.as_deref() == Some(token.as_str()) {
            pending.lease = None;
        }
        Ok(released)
    }

    /// The workspace's live lease, whoever holds it (never its token), or `None`. A read: it
    /// works on a read replica.
    pub async fn lease(&self) -> Result<Option<LeaseState>> {
        self.rpc(&rq::LeaseInfo {
            workspace_id: self.id.clone(),
            delegated_grant: None,
        })
        .await
    }

    /// Whether this workspace presents a lease with its commits.
    pub fn holds_lease(&self) -> bool {
        self.pending().lease.is_some()
    }
}

/// `supabash_acquire_lease` for `workspace_id` over `transport`, presenting `token` (the live
/// lease's, to re-acquire it) when given.
pub(crate) async fn acquire_lease(
    transport: &dyn Transport,
    workspace_id: &str,
    holder: &str,
    ttl: Duration,
    token: Option<&str>,
) -> Result<Lease> {
    let request = rq::AcquireLease {
        workspace_id: workspace_id.to_owned(),
        holder: holder.to_owned(),
        ttl_seconds: lease_seconds(ttl)?,
        delegated_grant: None,
        token: token.map(str::to_owned),
    };
    request.check_fields().map_err(lease_field)?;
    call(transport, &request).await
}

/// `supabash_release_lease` of `token`; whether it was still live.
pub(crate) async fn release_lease(
    transport: &dyn Transport,
    workspace_id: &str,
    token: &str,
) -> Result<bool> {
    let request = rq::ReleaseLease {
        workspace_id: workspace_id.to_owned(),
        token: token.to_owned(),
        delegated_grant: None,
    };
    Ok(call(transport, &request).await?.released)
}

fn lease_field(e: rq::LeaseFieldError) -> SupabashError {
    SupabashError::new(ErrorCode::InvalidArgument, e.to_string())
}

fn no_lease() -> SupabashError {
    SupabashError::new(
        ErrorCode::InvalidArgument,
        "this workspace holds no lease (acquire_lease first)",
    )
}

/// A lease TTL in whole seconds (the bounds are checked with the request).
fn lease_seconds(ttl: Duration) -> Result<i32> {
    i32::try_from(ttl.as_secs()).map_err(|_| lease_field(rq::LeaseFieldError::Ttl(i32::MAX)))
}

//! Delegated workspaces as agent mounts.

use crate::{Mount, SharedSnapshot, SnapshotLimits, ViewSpec};
use std::sync::Arc;
use supabash::delegated::DelegatedWorkspace;
use supabash::tree::FsResult;
use supabash_core::capability::Operation;

/// Mounting a [`DelegatedWorkspace`] for an agent.
#[allow(async_fn_in_trait)]
pub trait DelegatedMount {
    /// The workspace as an agent mount at `mount_point`: the writable staged tree when the
    /// grant allows `write`; otherwise a read-only snapshot of the committed base revision
    /// (within `limits`), on which every change is `POLICY_DENIED`.
    async fn mount(
        &self,
        mount_point: &str,
        view: Option<ViewSpec>,
        limits: SnapshotLimits,
    ) -> FsResult<Mount>;
}

impl DelegatedMount for DelegatedWorkspace {
    async fn mount(
        &self,
        mount_point: &str,
        view: Option<ViewSpec>,
        limits: SnapshotLimits,
    ) -> FsResult<Mount> {
        if self.delegation().operations().contains(Operation::Write) {
            let fs: Arc<dyn crate::AgentFs> = self.fs().clone();
            return Mount::writable(mount_point, self.id(), self.base_revision(), fs, view);
        }
        let snap = self.committed_snapshot().await?;
        let snapshot = SharedSnapshot::from_committed(self.id(), snap, limits).await?;
        Mount::snapshot(mount_point, Arc::new(snapshot), view)
    }
}

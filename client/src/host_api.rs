//! [`HostWorkspace`]: the workspace operations every backend offers, so a host (the code that
//! hands an agent its workspace and commits what it did) is written once, generic over a
//! user's [`Workspace`], a delegated job's [`DelegatedWorkspace`] and, with the `storage`
//! feature, a `StorageWorkspace`; the way rust-postgres's `GenericClient` serves both a
//! client and a transaction. See `docs/host-api.md`.

use crate::error::Result;
use crate::tree::{StagedChange, StagedTree};
use crate::workspace::{
    Checkpoint, CheckpointOptions, CommitOptions, Diff, DiffRef, HistoryPage, PurgeOptions,
    PurgeReport, RevisionTree, Workspace,
};
use crate::DelegatedWorkspace;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use supabash_core::rpc::CommitResult;

/// The host's operations on one opened workspace, whatever stores it. Every method does what
/// the type's own method of the same name does (a [`DelegatedWorkspace`] still checks its
/// grant first); the futures are `Send`, so a host can run them on any task.
///
/// Left out, because not every backend has them: the workspace id (a Storage workspace is
/// named by its bucket and prefix), capabilities, leases, forks, redaction, notes, the audit
/// trail, announcements and the committed snapshot; use the concrete type for those.
///
/// ```no_run
/// use supabash::workspace::CommitOptions;
/// use supabash::HostWorkspace;
///
/// type Error = Box<dyn std::error::Error + Send + Sync>;
///
/// /// Lets an "agent" write its report, then commits it: the same code for every backend.
/// async fn run_job(ws: &impl HostWorkspace) -> Result<Option<String>, Error> {
///     ws.fs().write("/report.md", "done\n").await?;
///     if ws.changes()?.is_empty() {
///         return Ok(None);
///     }
///     let committed = ws.commit(CommitOptions::new("nightly-job")).await?;
///     Ok(Some(committed.receipt.revision))
/// }
/// ```
pub trait HostWorkspace: Send + Sync {
    /// One staged change as [`Self::changes`] lists it: a [`StagedChange`] (Postgres), a
    /// `storage::Touched` (Storage: the path's entry before and after).
    type Change: Debug + Clone + Send + Sync;
    /// An old revision as [`Self::read_revision`] answers it: its receipt with every file's
    /// bytes ([`RevisionTree`], Postgres) or with its manifest (`storage::StoredRevision`,
    /// Storage: read a file with `read_revision_file`).
    type Revision: Debug + Clone + Send + Sync;

    /// The staged tree the agent edits.
    fn fs(&self) -> &Arc<StagedTree>;

    /// The revision the staged tree is based on (`None`: nothing committed yet).
    fn base_revision(&self) -> Option<String>;

    /// The staged changes against the base revision.
    fn changes(&self) -> Result<Vec<Self::Change>>;

    /// Throws away every staged edit (and a staged restore).
    fn discard(&self) -> impl Future<Output = Result<()>> + Send;

    /// Commits the staged changes as one atomic revision.
    fn commit(&self, options: CommitOptions) -> impl Future<Output = Result<CommitResult>> + Send;

    /// One page of history, oldest first, after `cursor` (a revision id).
    fn history(
        &self,
        cursor: Option<&str>,
        page_size: Option<usize>,
    ) -> impl Future<Output = Result<HistoryPage>> + Send;

    /// Compares two sides over the whole tree, with the previews the backend gives by default
    /// (Postgres: up to the limit; Storage: none).
    fn diff(&self, from: DiffRef, to: DiffRef) -> impl Future<Output = Result<Diff>> + Send;

    /// An old revision, verified.
    fn read_revision(&self, revision: &str) -> impl Future<Output = Result<Self::Revision>> + Send;

    /// Restores forward: stages the tree of `revision` over the base, which the next commit
    /// records as its source; answers the staged changes then.
    fn restore(&self, revision: &str) -> impl Future<Output = Result<Vec<Self::Change>>> + Send;

    /// Pins a revision (default: the head) so purge keeps it.
    fn checkpoint(
        &self,
        options: CheckpointOptions,
    ) -> impl Future<Output = Result<Checkpoint>> + Send;

    /// Every checkpoint, oldest first.
    fn checkpoints(&self) -> impl Future<Output = Result<Vec<Checkpoint>>> + Send;

    /// Deletes a checkpoint (its revision becomes purgeable).
    fn delete_checkpoint(&self, checkpoint_id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Drops old revisions (never the head or a checkpointed one).
    fn purge(&self, options: PurgeOptions) -> impl Future<Output = Result<PurgeReport>> + Send;
}

/// Implements [`HostWorkspace`] for a Postgres-backed type (`Workspace`, `DelegatedWorkspace`)
/// by calling its inherent methods of the same names.
macro_rules! postgres_host_workspace {
    ($ty:ty) => {
        impl HostWorkspace for $ty {
            type Change = StagedChange;
            type Revision = RevisionTree;

            fn fs(&self) -> &Arc<StagedTree> {
                <$ty>::fs(self)
            }

            fn base_revision(&self) -> Option<String> {
                <$ty>::base_revision(self)
            }

            fn changes(&self) -> Result<Vec<StagedChange>> {
                <$ty>::changes(self)
            }

            async fn discard(&self) -> Result<()> {
                <$ty>::discard(self).await
            }

            async fn commit(&self, options: CommitOptions) -> Result<CommitResult> {
                <$ty>::commit(self, options).await
            }

            async fn history(
                &self,
                cursor: Option<&str>,
                page_size: Option<usize>,
            ) -> Result<HistoryPage> {
                <$ty>::history(self, cursor, page_size).await
            }

            async fn diff(&self, from: DiffRef, to: DiffRef) -> Result<Diff> {
                <$ty>::diff(self, from, to, None, None).await
            }

            async fn read_revision(&self, revision: &str) -> Result<RevisionTree> {
                <$ty>::read_revision(self, revision).await
            }

            async fn restore(&self, revision: &str) -> Result<Vec<StagedChange>> {
                Ok(<$ty>::restore(self, revision).await?.changes)
            }

            async fn checkpoint(&self, options: CheckpointOptions) -> Result<Checkpoint> {
                <$ty>::checkpoint(self, options).await
            }

            async fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
                <$ty>::checkpoints(self).await
            }

            async fn delete_checkpoint(&self, checkpoint_id: &str) -> Result<()> {
                <$ty>::delete_checkpoint(self, checkpoint_id).await
            }

            async fn purge(&self, options: PurgeOptions) -> Result<PurgeReport> {
                <$ty>::purge(self, options).await
            }
        }
    };
}

postgres_host_workspace!(Workspace);
postgres_host_workspace!(DelegatedWorkspace);

#[cfg(feature = "storage")]
mod storage_backend {
    use super::*;
    use crate::storage::{StorageWorkspace, StoredRevision, Touched};

    impl HostWorkspace for StorageWorkspace {
        type Change = Touched;
        type Revision = StoredRevision;

        fn fs(&self) -> &Arc<StagedTree> {
            StorageWorkspace::fs(self)
        }

        fn base_revision(&self) -> Option<String> {
            StorageWorkspace::base_revision(self)
        }

        fn changes(&self) -> Result<Vec<Touched>> {
            StorageWorkspace::changes(self)
        }

        async fn discard(&self) -> Result<()> {
            StorageWorkspace::discard(self).await
        }

        async fn commit(&self, options: CommitOptions) -> Result<CommitResult> {
            StorageWorkspace::commit(self, options).await
        }

        async fn history(
            &self,
            cursor: Option<&str>,
            page_size: Option<usize>,
        ) -> Result<HistoryPage> {
            StorageWorkspace::history(self, cursor, page_size).await
        }

        async fn diff(&self, from: DiffRef, to: DiffRef) -> Result<Diff> {
            StorageWorkspace::diff(self, from, to).await
        }

        async fn read_revision(&self, revision: &str) -> Result<StoredRevision> {
            StorageWorkspace::read_revision(self, revision).await
        }

        async fn restore(&self, revision: &str) -> Result<Vec<Touched>> {
            StorageWorkspace::restore(self, revision).await
        }

        async fn checkpoint(&self, options: CheckpointOptions) -> Result<Checkpoint> {
            StorageWorkspace::checkpoint(self, options).await
        }

        async fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
            StorageWorkspace::checkpoints(self).await
        }

        async fn delete_checkpoint(&self, checkpoint_id: &str) -> Result<()> {
            StorageWorkspace::delete_checkpoint(self, checkpoint_id).await
        }

        async fn purge(&self, options: PurgeOptions) -> Result<PurgeReport> {
            StorageWorkspace::purge(self, options).await
        }
    }
}

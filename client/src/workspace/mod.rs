//! The host's workspace API (never model tools): open or create a workspace, let an agent edit
//! its staged tree, then commit, inspect history, diff, read old revisions, restore forward,
//! checkpoint, purge, fork and delete. This module holds the [`Workspace`] itself, how it is
//! made from a base, and its staged state; each concern of the API has a module of its own.

mod base;
mod commit;
mod fork;
mod history;
mod lease;
mod options;
pub(crate) mod remote;
mod retention;
mod revisions;

use crate::audit::{Action, AuditQueue};
use crate::codec::{DocumentCodec, PlainCodec};
use crate::error::{Result, SupabashError};
use crate::limits::Limits;
use crate::manifests::{CachedManifest, ManifestCache};
use crate::observe::{OperationCounts, OperationObserver, Timed};
use crate::transport::{call, Transport};
use crate::tree::{StagedChange, StagedTree};
use base::Base;
use remote::{OpenMode, RemoteDirectories, RemoteSource};
use std::sync::{Arc, Mutex};
use supabash_core::limits::MAX_AUDIT_ACTIONS;
use supabash_core::rpc::audit as wire;
use supabash_core::rpc::requests as rq;
use supabash_core::ErrorCode;

pub use base::load_manifest;
pub use fork::Forked;
pub(crate) use lease::{acquire_lease, release_lease};
pub use options::{CheckpointOptions, CommitOptions, ForkOptions, PurgeOptions, RedactOptions};
pub use revisions::{Restored, RevisionTree, Snapshot};
pub use supabash_core::rpc::requests::DiffRef;
pub use supabash_core::rpc::{
    Checkpoint, Diff, DiffEntry, DiffKind, ForkedFrom, HistoryPage, Lease, LeaseState, PurgeReport,
    RedactReport, WorkspaceDeleted, WorkspaceInfo, WorkspacePage,
};

/// One opened workspace: a staged tree pinned to a base revision, and a transport.
pub struct Workspace {
    transport: Arc<dyn Transport>,
    id: String,
    tree: Arc<StagedTree>,
    limits: Limits,
    codec: Arc<dyn DocumentCodec>,
    pending: Mutex<Pending>,
    /// The actions staged with the tree (see `crate::audit`).
    audit: AuditQueue,
    observer: Option<OperationObserver>,
    /// The workspace stores plain files only (created `files_only`; see [`Self::capabilities`]).
    files_only: bool,
}

/// A commit whose outcome is unknown: what a retry must send again to be the same request.
#[derive(Clone)]
struct Unknown {
    fingerprint: String,
    transaction_id: String,
    /// The audit actions it carried (actions recorded since go with a later commit).
    audit: Vec<wire::Action>,
}

/// What the workspace keeps beside its staged tree between calls: a pending restore, an
/// unknown-outcome commit, the lease, and the fences the tree was loaded at.
#[derive(Default)]
struct Pending {
    /// The revision a restore staged; the next commit records it.
    restore_source: Option<String>,
    /// The last commit whose outcome is unknown.
    unknown: Option<Unknown>,
    /// The token of the lease this workspace took; every commit presents it. Kept after a
    /// failed renewal, so a commit after the lease lapsed fails LEASE_LOST instead of slipping
    /// through unleased; cleared by a release.
    lease: Option<String>,
    /// The workspace's redaction epoch when the tree was loaded; commits send it.
    redaction_epoch: i64,
    /// The restore fence (a position) when the tree was loaded.
    restore_floor: Option<i64>,
    /// A redaction's outcome is unknown (or the reload after it failed): the tree may hold
    /// redacted content, so commits are refused until the workspace is opened again.
    stale: bool,
}

impl Workspace {
    /// Creates a new, empty workspace owned by the caller (storing plain files only when
    /// `files_only`) and opens it.
    pub(crate) async fn create(
        transport: Arc<dyn Transport>,
        limits: Limits,
        files_only: bool,
    ) -> Result<Self> {
        limits.validate()?;
        let request = rq::CreateWorkspace {
            label: None,
            files_only: files_only.then_some(true),
        };
        let created = call(transport.as_ref(), &request).await.map_err(|e| {
            if files_only {
                files_only_outdated(e)
            } else {
                e
            }
        })?;
        Self::open(transport, &created.workspace_id, limits).await
    }

    /// Opens a workspace the caller owns, pinned to its current head ([`OpenMode::Auto`]).
    /// Bodies load lazily.
    pub(crate) async fn open(
        transport: Arc<dyn Transport>,
        workspace_id: &str,
        limits: Limits,
    ) -> Result<Self> {
        Self::open_as(transport, workspace_id, limits, OpenMode::Auto, None).await
    }

    /// [`Self::open`], loading the tree as `mode` says.
    pub(crate) async fn open_as(
        transport: Arc<dyn Transport>,
        workspace_id: &str,
        limits: Limits,
        mode: OpenMode,
        manifests: Option<&ManifestCache>,
    ) -> Result<Self> {
        limits.validate()?;
        let manifests = manifests.filter(|_| mode != OpenMode::Lazy);
        if let Some(base) = Base::reopen(transport.as_ref(), workspace_id, manifests).await? {
            return Ok(Self::with_base(transport, workspace_id, base, limits));
        }
        let directories = Arc::new(RemoteDirectories {
            transport: transport.clone(),
            workspace_id: workspace_id.to_owned(),
        });
        if let Some(lazy) = directories.lazy_base(mode).await? {
            let source = Arc::new(RemoteSource::new(&transport, workspace_id));
            let tree = StagedTree::lazy(
                lazy.revision,
                lazy.root,
                lazy.totals,
                source,
                directories,
                limits.clone(),
            );
            let (epoch, floor) = (lazy.redaction_epoch, lazy.restore_floor);
            return Ok(
                Self::with_tree(transport, workspace_id, tree, (epoch, floor), limits)
                    .storing_files_only(lazy.files_only),
            );
        }
        let base = Base::load(transport.as_ref(), workspace_id, None).await?;
        if let (Some(cache), Some(revision)) = (manifests, &base.revision) {
            cache.put(
                workspace_id,
                CachedManifest {
                    revision: revision.clone(),
                    redaction_epoch: base.redaction_epoch,
                    base: base.entries.clone(),
                },
            );
        }
        Ok(Self::with_base(transport, workspace_id, base, limits))
    }

    /// A workspace whose staged tree is based on `base` (loaded from `workspace_id`).
    fn with_base(
        transport: Arc<dyn Transport>,
        workspace_id: &str,
        base: Base,
        limits: Limits,
    ) -> Self {
        let source = Arc::new(RemoteSource::new(&transport, workspace_id));
        let tree =
            StagedTree::from_base_map(base.revision, base.entries, Some(source), limits.clone());
        let fences = (base.redaction_epoch, base.restore_floor);
        Self::with_tree(transport, workspace_id, tree, fences, limits)
            .storing_files_only(base.files_only)
    }

    /// Marks the workspace as storing plain files only (what its open answer said): the
    /// capabilities say so and a commit is checked before it is sent.
    fn storing_files_only(mut self, files_only: bool) -> Self {
        self.files_only = files_only;
        self
    }

    /// A workspace over `tree` (loaded from `workspace_id` at redaction epoch and restore
    /// floor `fences`).
    fn with_tree(
        transport: Arc<dyn Transport>,
        workspace_id: &str,
        tree: StagedTree,
        (redaction_epoch, restore_floor): (i64, Option<i64>),
        limits: Limits,
    ) -> Self {
        Workspace {
            transport,
            id: workspace_id.to_owned(),
            tree: Arc::new(tree),
            limits,
            codec: Arc::new(PlainCodec),
            pending: Mutex::new(Pending {
                redaction_epoch,
                restore_floor,
                ..Pending::default()
            }),
            audit: AuditQueue::default(),
            observer: None,
            files_only: false,
        }
    }

    /// Reports every operation of this workspace to `observer` (see `crate::observe`).
    pub(crate) fn with_observer(mut self, observer: OperationObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Uses `codec` to split staged files into body and metadata when committing and diffing
    /// (default: [`PlainCodec`]). Reads always show the server's rendering, whatever the codec.
    pub(crate) fn with_codec(mut self, codec: Arc<dyn DocumentCodec>) -> Self {
        self.codec = codec;
        self
    }

    async fn rpc<R: supabash_core::rpc::Rpc>(&self, request: &R) -> Result<R::Answer> {
        let kind = R::NAME.strip_prefix("supabash_").unwrap_or(R::NAME);
        let timed = Timed::start(self.observer.as_ref(), kind);
        let result = call(self.transport.as_ref(), request).await;
        timed.finish(&result, OperationCounts::default(), false);
        result
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().expect("pending lock")
    }

    /// The workspace id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The workspace's redaction epoch when the tree was loaded (moves with every applied
    /// redaction).
    pub fn redaction_epoch(&self) -> i64 {
        self.pending().redaction_epoch
    }

    /// What the Postgres backend stores for this workspace (the seed's `mounted.capabilities`):
    /// files, symbolic links, empty directories, modes and times (a 0.5.0 database refuses all
    /// but files with `SUPABASH_SCHEMA_OUTDATED` until it is upgraded); a workspace created
    /// `files_only` stores plain files (mode 0o644) and times only, and refuses the rest with
    /// `UNSUPPORTED_CONTENT`.
    pub fn capabilities(&self) -> supabash_core::posix::Capabilities {
        if self.files_only {
            supabash_core::posix::Capabilities::files_only("postgres")
        } else {
            supabash_core::posix::Capabilities::posix("postgres")
        }
    }

    /// The staged tree the agent edits.
    pub fn fs(&self) -> &Arc<StagedTree> {
        &self.tree
    }

    /// The revision the staged tree is based on.
    pub fn base_revision(&self) -> Option<String> {
        self.tree.base_revision()
    }

    /// The staged changes against the base revision.
    pub fn changes(&self) -> Result<Vec<StagedChange>> {
        self.tree.changes()
    }

    /// Throws away every staged edit (and a pending restore), after writing the staged audit
    /// actions marked discarded (`supabash_record_discarded`). If that write fails nothing is
    /// discarded: call it again (a retried write records nothing twice).
    pub async fn discard(&self) -> Result<()> {
        let timed = Timed::start(self.observer.as_ref(), "discard");
        let mut counts = OperationCounts::default();
        let result = self.discard_recorded(&mut counts).await;
        timed.finish(&result, counts, false);
        result
    }

    async fn discard_recorded(&self, counts: &mut OperationCounts) -> Result<()> {
        loop {
            let batch = self.audit.staged(MAX_AUDIT_ACTIONS);
            if batch.is_empty() {
                break;
            }
            let request = wire::RecordDiscarded {
                workspace_id: self.id.clone(),
                actions: batch,
                actor: Some(self.audit.actor()),
                delegated_grant: None,
            };
            call(self.transport.as_ref(), &request).await?;
            self.audit.delivered(&request.actions);
            counts.records += request.actions.len();
        }
        self.tree.discard()?;
        self.pending().restore_source = None;
        Ok(())
    }

    /// Stages an audit action with the tree: the next commit writes it, or a discard marks it
    /// discarded. `action.arguments` must already be redacted.
    pub fn record(&self, action: Action) {
        self.audit.record(action);
    }

    /// The audit queue itself, for surfaces that record without holding the workspace.
    pub fn audit_queue(&self) -> AuditQueue {
        self.audit.clone()
    }

    /// Whether nothing is staged: no changes against the base and no pending restore.
    pub fn is_clean(&self) -> Result<bool> {
        Ok(self.pending().restore_source.is_none() && self.tree.changes()?.is_empty())
    }

    /// Deletes the workspace with its history and every body nothing else needs (its forks
    /// keep working: what they read stays, hidden). Owner only.
    pub async fn delete(self) -> Result<WorkspaceDeleted> {
        self.rpc(&rq::DeleteWorkspace {
            workspace_id: self.id.clone(),
        })
        .await
    }

    /// A page of the caller's workspaces, oldest first, after `cursor` (a workspace id).
    pub async fn list(
        transport: &dyn Transport,
        cursor: Option<&str>,
        page_size: Option<i32>,
    ) -> Result<WorkspacePage> {
        call(
            transport,
            &rq::ListWorkspaces {
                cursor: cursor.map(str::to_owned),
                page_size,
            },
        )
        .await
    }
}

/// Whether `e` says the RPC was not found with the arguments sent (PostgREST's `PGRST202`,
/// PostgreSQL's `42883`): the database's schema predates a parameter that was sent.
fn function_missing(e: &SupabashError) -> bool {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<crate::rpc_error::RpcError>())
        .and_then(|r| r.code.as_deref())
        .is_some_and(|c| matches!(c, "PGRST202" | "42883"))
}

/// A 0.5.0 database has no `files_only` parameter (its `supabash_create_workspace` takes a
/// label alone): the "function not found" it answers becomes the upgrade hint the extension
/// gives for features of a newer schema.
fn files_only_outdated(e: SupabashError) -> SupabashError {
    if !function_missing(&e) {
        return e;
    }
    SupabashError::new(
        ErrorCode::Backend,
        "SUPABASH_SCHEMA_OUTDATED: files_only workspaces need supabash 0.6.0: run ALTER EXTENSION supabash UPDATE",
    )
    .with_source(e)
}

//! The host's workspace API (never model tools): open or create a workspace, let an agent edit
//! its staged tree, then commit, inspect history, diff, read old revisions, restore forward,
//! checkpoint, purge, fork and delete.

use crate::audit::{Action, AuditPage, AuditQueue};
use crate::codec::{DocumentCodec, PlainCodec};
use crate::documents::StoredFile;
use crate::error::{Result, SupabashError};
use crate::limits::Limits;
use crate::manifests::{CachedManifest, ManifestCache};
use crate::observe::{OperationCounts, OperationObserver, Timed};
use crate::open::{OpenMode, RemoteDirectories};
use crate::transport::{call, Transport};
use crate::tree::{BaseEntry, BaseMap, BodySource, ServerGrep, StagedChange, StagedTree};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use supabash_core::hash::sha256_hex;
use supabash_core::limits::MAX_AUDIT_ACTIONS;
use supabash_core::rpc::audit as wire;
use supabash_core::rpc::manifest_changes::{ManifestChanges, ManifestChangesSince};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{CommitResult, File, Receipt, Tree, WireChange};
use supabash_core::ErrorCode;
use tracing::Instrument;

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

/// How [`Workspace::fork`] forks. Only `actor` is required.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ForkOptions {
    /// Recorded on the fork's first revision.
    pub actor: String,
    /// The revision to fork (default: the head).
    pub revision: Option<String>,
    /// A name for people, shown by [`Workspace::list`].
    pub label: Option<String>,
    pub cause: Option<String>,
}

impl ForkOptions {
    /// Options for `actor`.
    pub fn new(actor: impl Into<String>) -> Self {
        ForkOptions {
            actor: actor.into(),
            ..Default::default()
        }
    }
}

/// A fork made by [`Workspace::fork`], opened, and where it came from.
pub struct Forked {
    pub workspace: Workspace,
    pub forked_from: ForkedFrom,
}

/// Who commits and why. Only `actor` is required.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CommitOptions {
    pub actor: String,
    pub correlation_id: Option<String>,
    pub cause: Option<String>,
    pub idempotency_key: Option<String>,
    /// A JSON object stored with the revision.
    pub metadata: Option<Value>,
    /// When the head moved past the base, apply on top of it unless a path this commit
    /// touches changed in between (default: fail with `COMMIT_CONFLICT` on any head move).
    /// After a rebased commit the staged tree is the new revision's, others' files included.
    pub rebase: bool,
}

impl CommitOptions {
    /// Options for `actor`.
    pub fn new(actor: impl Into<String>) -> Self {
        CommitOptions {
            actor: actor.into(),
            ..Default::default()
        }
    }
}

/// Options of [`Workspace::checkpoint`]; the revision defaults to the head.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CheckpointOptions {
    pub label: Option<String>,
    pub retention_class: Option<String>,
    pub idempotency_key: Option<String>,
    pub revision: Option<String>,
}

/// Options of [`Workspace::purge`]. With neither rule the server keeps the newest 50.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PurgeOptions {
    pub keep_revisions: Option<i64>,
    pub max_age_seconds: Option<i64>,
    /// Revisions at or after this one are kept.
    pub floor_revision: Option<String>,
    pub dry_run: bool,
    /// Also remove the audit records a purge keeps by default (denied and discarded actions,
    /// and those of delegated actors) with their revisions (the owner only).
    pub purge_audit: bool,
}

/// Options of [`Workspace::redact`]: what to remove from history. Name paths and/or body
/// hashes, or only metadata keys / cause clearing to scrub revisions. It is a dry run (a
/// report, nothing changed) unless [`RedactOptions::apply`] is set.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RedactOptions {
    /// Exact paths whose versions before the boundary are redacted.
    pub paths: Vec<String>,
    /// Body hashes (hex SHA-256 of the bytes) whose versions before the boundary are redacted.
    pub body_hashes: Vec<String>,
    /// The exclusive boundary revision (default: the head).
    pub before_revision: Option<String>,
    pub reason: Option<String>,
    /// Keys removed from the metadata of the selected revisions.
    pub metadata_keys: Vec<String>,
    /// Clears the cause of the selected revisions.
    pub clear_cause: bool,
    /// Apply the redaction (default: a dry run).
    pub apply: bool,
}

impl RedactOptions {
    /// Empty options (a dry run that still needs a selector).
    pub fn new() -> Self {
        Self::default()
    }

    /// Redacts the versions at `path`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.paths.push(path.into());
        self
    }

    /// Redacts the versions whose body has this hex SHA-256.
    pub fn body_hash(mut self, hash: impl Into<String>) -> Self {
        self.body_hashes.push(hash.into());
        self
    }

    /// Sets the exclusive boundary revision.
    pub fn before(mut self, revision: impl Into<String>) -> Self {
        self.before_revision = Some(revision.into());
        self
    }

    /// Records why.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Removes `key` from the selected revisions' metadata.
    pub fn strip_metadata(mut self, key: impl Into<String>) -> Self {
        self.metadata_keys.push(key.into());
        self
    }

    /// Clears the selected revisions' cause.
    pub fn clear_cause(mut self) -> Self {
        self.clear_cause = true;
        self
    }

    /// Applies the redaction instead of reporting it.
    pub fn apply(mut self) -> Self {
        self.apply = true;
        self
    }
}

/// A full tree at one revision, every file verified: path → rendered bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The revision (`None`: an empty workspace).
    pub revision: Option<String>,
    pub files: BTreeMap<String, Vec<u8>>,
}

/// An old revision: its receipt and its files.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionTree {
    pub receipt: Receipt,
    /// The regular files' bytes.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Every entry with its kind, mode and time: the files', the symbolic links (with their
    /// targets) and the directories that are entries of their own.
    pub entries: Vec<BaseEntry>,
    /// Paths whose version at this revision was redacted (tombstones: no content).
    pub redacted: Vec<String>,
}

/// What a restore staged: the revision it came from and the staged changes it makes.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub source_revision: String,
    pub changes: Vec<StagedChange>,
}

struct RemoteSource {
    transport: Arc<dyn Transport>,
    workspace_id: String,
}

#[async_trait::async_trait]
impl BodySource for RemoteSource {
    async fn load(&self, revision: &str, path: &str) -> Result<StoredFile> {
        let request = rq::LoadDocument {
            workspace_id: self.workspace_id.clone(),
            path: path.to_owned(),
            revision: Some(revision.to_owned()),
            delegated_grant: None,
        };
        StoredFile::try_from(call(self.transport.as_ref(), &request).await?.file)
    }

    /// `supabash_load_documents`, at most [`rq::MAX_DOCUMENTS_PER_CALL`] paths a request;
    /// tombstones (redacted versions) are left out, as paths the revision lacks are.
    async fn load_many(&self, revision: &str, paths: &[String]) -> Result<Vec<StoredFile>> {
        let mut files = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(rq::MAX_DOCUMENTS_PER_CALL) {
            let request = rq::LoadDocuments {
                workspace_id: self.workspace_id.clone(),
                paths: chunk.to_vec(),
                revision: Some(revision.to_owned()),
                delegated_grant: None,
            };
            let answer = call(self.transport.as_ref(), &request).await?;
            files.extend(
                answer
                    .files
                    .into_iter()
                    .filter(|f| !f.redacted)
                    .map(StoredFile::try_from)
                    .collect::<Result<Vec<_>>>()?,
            );
        }
        Ok(files)
    }

    /// `supabash_grep` of one page.
    async fn grep(
        &self,
        revision: &str,
        request: ServerGrep,
    ) -> Option<Result<supabash_core::rpc::grep::GrepPage>> {
        let request = supabash_core::rpc::grep::Grep {
            workspace_id: self.workspace_id.clone(),
            pattern: request.pattern,
            revision: Some(revision.to_owned()),
            paths: request.paths,
            ignore_case: Some(request.ignore_case),
            max_matches: Some(request.max_matches),
            cursor: request.cursor,
            ..Default::default()
        };
        Some(call(self.transport.as_ref(), &request).await)
    }
}

/// The regular files of `files` (links and directories have no bytes of their own), verified.
fn verified_files(files: Vec<File>) -> Result<BTreeMap<String, Vec<u8>>> {
    files
        .into_iter()
        .filter(|f| f.kind == supabash_core::posix::Kind::File)
        .map(|f| {
            let f = StoredFile::try_from(f)?;
            Ok((f.path.clone(), f.verified(None)?))
        })
        .collect()
}

/// A manifest's files as the entries of a staged tree's base.
fn base_entries(files: Vec<File>) -> Result<Vec<BaseEntry>> {
    files
        .into_iter()
        .map(|f| BaseEntry::from_stored(StoredFile::try_from(f)?))
        .collect()
}

/// Sets the audit actions `request` carries (absent when none) and answers the request's
/// fingerprint. The lease is not part of what is committed: a retry under a renewed or new
/// lease is the same request.
fn with_audit(request: &mut rq::Commit, audit: Vec<wire::Action>) -> String {
    request.audit = Some(audit).filter(|a| !a.is_empty());
    sha256_hex(
        serde_json::to_string(&*request)
            .expect("requests serialise")
            .as_bytes(),
    )
}

/// Clears the in-flight mark of the staged tree unless the commit succeeded.
struct InFlight<'a>(&'a StagedTree);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.end_commit(None);
    }
}

/// The head manifest a staged tree is based on.
struct Base {
    revision: Option<String>,
    /// Its entries by path (shared with the host's manifest cache, when one keeps it).
    entries: BaseMap,
    redaction_epoch: i64,
    restore_floor: Option<i64>,
    /// The workspace stores plain files only.
    files_only: bool,
}

impl Base {
    /// The tree at `revision` (default: the head), without bodies.
    async fn load(
        transport: &dyn Transport,
        workspace_id: &str,
        revision: Option<&str>,
    ) -> Result<Self> {
        let manifest = load_manifest(transport, workspace_id, revision).await?;
        let entries = Arc::new(
            base_entries(manifest.files)?
                .into_iter()
                .map(BaseEntry::base_file)
                .collect(),
        );
        Ok(Base {
            revision: manifest.revision,
            entries,
            redaction_epoch: manifest.redaction_epoch,
            restore_floor: manifest.restore_floor,
            files_only: manifest.files_only,
        })
    }
}

impl Base {
    /// The head's tree from the manifest `manifests` keeps for `workspace_id` and the changes
    /// since its revision (one `supabash_manifest_changes` call), kept in turn; `None` when
    /// there is none, or the changes cannot be told (see [`ManifestChanges::complete`]) or a
    /// redaction came since: load the manifest. The cached entries are patched in place when no
    /// tree opened before still shares them (else copied once), and shared with the new tree.
    async fn reopen(
        transport: &dyn Transport,
        workspace_id: &str,
        manifests: Option<&ManifestCache>,
    ) -> Result<Option<Self>> {
        let Some((cache, mut cached)) = manifests.and_then(|c| Some((c, c.take(workspace_id)?)))
        else {
            return Ok(None);
        };
        let request = ManifestChangesSince {
            workspace_id: workspace_id.to_owned(),
            since: cached.revision.clone(),
            revision: None,
            delegated_grant: None,
        };
        let changes: ManifestChanges = match call(transport, &request).await {
            Ok(changes) => changes,
            Err(e) => {
                // Nothing was learnt: the cached manifest stays for the next open.
                if cache.revision(workspace_id).is_none() {
                    cache.put(workspace_id, cached);
                }
                return Err(e);
            }
        };
        // Not put back: the changes cannot be told, or a redaction came since.
        let Some(revision) = changes.revision.filter(|_| changes.complete) else {
            return Ok(None);
        };
        if changes.redaction_epoch != cached.redaction_epoch {
            return Ok(None);
        }
        if !(changes.files.is_empty() && changes.removed.is_empty()) {
            let changed = base_entries(changes.files)?;
            let base = Arc::make_mut(&mut cached.base);
            crate::manifests::patch(base, changed, &changes.removed);
        }
        let entries = cached.base.clone();
        cache.put(
            workspace_id,
            CachedManifest {
                revision: revision.clone(),
                redaction_epoch: changes.redaction_epoch,
                base: cached.base,
            },
        );
        Ok(Some(Base {
            revision: Some(revision),
            entries,
            redaction_epoch: changes.redaction_epoch,
            restore_floor: changes.restore_floor,
            files_only: changes.files_only,
        }))
    }
}

impl Workspace {
    /// Creates a new, empty workspace owned by the caller (storing plain files only when
    /// `files_only`) and opens it.
    pub(crate) async fn create(
        transport: Arc<dyn Transport>,
        limits: Limits,
        files_only: bool,
    ) -> Result<Self> {
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
        let manifests = manifests.filter(|_| mode != OpenMode::Lazy);
        if let Some(base) = Base::reopen(transport.as_ref(), workspace_id, manifests).await? {
            return Ok(Self::with_base(transport, workspace_id, base, limits));
        }
        let directories = Arc::new(RemoteDirectories {
            transport: transport.clone(),
            workspace_id: workspace_id.to_owned(),
        });
        if let Some(lazy) = directories.lazy_base(mode).await? {
            let source = Arc::new(RemoteSource {
                transport: transport.clone(),
                workspace_id: workspace_id.to_owned(),
            });
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
        let source = Arc::new(RemoteSource {
            transport: transport.clone(),
            workspace_id: workspace_id.to_owned(),
        });
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

    /// One page of the workspace's audit records in the order they were written, after
    /// `cursor` (a record id); only those of `revision` when given. Needs `history` when
    /// delegated.
    pub async fn audit(&self, revision: Option<&str>, cursor: Option<&str>) -> Result<AuditPage> {
        self.rpc(&wire::Audit {
            workspace_id: self.id.clone(),
            revision: revision.map(str::to_owned),
            cursor: cursor.map(str::to_owned),
            page_size: None,
            delegated_grant: None,
        })
        .await
    }

    /// Commits the staged changes as one atomic revision. While it runs the staged tree is
    /// read-only (`COMMIT_IN_PROGRESS`). If it fails with `outcome_unknown`, calling `commit`
    /// again with the same options and tree reuses the transaction id, so the server replays
    /// the first attempt's receipt instead of committing twice.
    pub async fn commit(&self, options: CommitOptions) -> Result<CommitResult> {
        let timed = Timed::start(self.observer.as_ref(), "commit");
        let mut counts = OperationCounts::default();
        let span = tracing::info_span!(
            "supabash.commit",
            changes = tracing::field::Empty,
            records = tracing::field::Empty
        );
        let result = self
            .commit_staged(options, &mut counts)
            .instrument(span.clone())
            .await;
        span.record("changes", counts.changes);
        span.record("records", counts.records);
        let replay = result.as_ref().is_ok_and(|r| r.replayed);
        timed.finish(&result, counts, replay);
        result
    }

    /// In a files-only workspace, refuses before the network a commit the server would refuse
    /// (`UNSUPPORTED_CONTENT` with the path, as the server's refusal has it).
    fn check_files_only(&self, changes: &[WireChange]) -> Result<()> {
        if !self.files_only {
            return Ok(());
        }
        for c in changes {
            if let Some(refused) = c.files_only_refusal() {
                return Err(SupabashError::new(
                    ErrorCode::UnsupportedContent,
                    refused.message(&c.path),
                )
                .with_path(&c.path));
            }
        }
        Ok(())
    }

    /// The commit of [`Self::commit`]: the staged changes sent as one request, which a retry
    /// after an unknown outcome repeats exactly.
    async fn commit_staged(
        &self,
        options: CommitOptions,
        counts: &mut OperationCounts,
    ) -> Result<CommitResult> {
        let metadata = self.commit_metadata(&options)?;
        self.tree.begin_commit()?;
        let guard = InFlight(&self.tree);
        self.tree.check_limits()?;
        let planned = self.tree.wire_changes(self.codec.as_ref()).await?;
        self.check_files_only(&planned.wire)?;
        let (mut request, lease) = self.commit_request(options, planned.wire, metadata);
        counts.changes = request.changes.len();
        let (fingerprint, transaction_id) = self.identify_commit(&mut request);
        request.check_fields().map_err(SupabashError::field)?;
        let audit = request.audit.clone().unwrap_or_default();
        counts.records = audit.len();
        request.lease = lease;
        request.transaction_id = Some(transaction_id.clone());
        match call(self.transport.as_ref(), &request).await {
            Ok(result) => {
                self.tree.canonicalise(planned.canonical);
                if result.receipt.rebased_from.is_some() {
                    self.end_rebased_commit(&result.receipt.revision).await;
                } else {
                    self.tree.end_commit(Some(result.receipt.revision.clone()));
                }
                std::mem::forget(guard);
                self.audit.delivered(&audit);
                let mut pending = self.pending();
                pending.unknown = None;
                pending.restore_source = None;
                Ok(result)
            }
            Err(e) => {
                self.pending().unknown = e.outcome_unknown.then_some(Unknown {
                    fingerprint,
                    transaction_id,
                    audit,
                });
                Err(e)
            }
        }
    }

    /// The metadata a commit records (default `{}`), checked against the limit; refused
    /// (`REDACTION_INVALIDATED`) while a redaction may have left the tree stale.
    fn commit_metadata(&self, options: &CommitOptions) -> Result<Value> {
        let metadata = options
            .metadata
            .clone()
            .unwrap_or_else(|| Value::Object(Default::default()));
        supabash_core::limits::check_object(
            "metadata",
            Some(&metadata),
            self.limits.max_transaction_metadata_bytes,
        )
        .map_err(SupabashError::field)?;
        if self.pending().stale {
            return Err(SupabashError::new(
                ErrorCode::RedactionInvalidated,
                "a redaction of this workspace may have happened and the tree was not reloaded: open the workspace again",
            ));
        }
        Ok(metadata)
    }

    /// The commit request of `changes` on the base revision, without audit actions,
    /// transaction id or lease; and the lease the commit presents.
    fn commit_request(
        &self,
        options: CommitOptions,
        changes: Vec<WireChange>,
        metadata: Value,
    ) -> (rq::Commit, Option<String>) {
        let (source_revision, lease, epoch) = {
            let pending = self.pending();
            (
                pending.restore_source.clone(),
                pending.lease.clone(),
                pending.redaction_epoch,
            )
        };
        let request = rq::Commit {
            workspace_id: self.id.clone(),
            changes,
            actor: Some(options.actor),
            base_revision: self.tree.base_revision(),
            transaction_id: None,
            correlation_id: options.correlation_id,
            idempotency_key: options.idempotency_key,
            cause: options.cause,
            metadata: Some(metadata),
            source_revision,
            rebase: options.rebase.then_some(true),
            delegated_grant: None,
            lease: None,
            // 0 travels as absent: servers without redaction do not know the parameter.
            redaction_epoch: Some(epoch).filter(|e| *e > 0),
            audit: None,
        };
        (request, lease)
    }

    /// Sets the audit actions `request` carries and answers its fingerprint and transaction
    /// id. A retry of the commit whose outcome is unknown (the same request) sends the same
    /// audit actions again under the same transaction id; a new commit sends what is staged
    /// under a new one.
    fn identify_commit(&self, request: &mut rq::Commit) -> (String, String) {
        let unknown = self.pending().unknown.clone();
        let mut fingerprint = with_audit(
            request,
            match &unknown {
                Some(u) => u.audit.clone(),
                None => self.audit.staged(MAX_AUDIT_ACTIONS),
            },
        );
        let transaction_id = match unknown {
            Some(u) if u.fingerprint == fingerprint => u.transaction_id,
            _ => {
                fingerprint = with_audit(request, self.audit.staged(MAX_AUDIT_ACTIONS));
                uuid::Uuid::new_v4().to_string()
            }
        };
        (fingerprint, transaction_id)
    }

    /// Ends a rebased commit (`revision`): the staged tree becomes that revision's committed
    /// tree, which also holds what others committed before it. If its manifest cannot be read
    /// the tree ends at `revision` holding this commit's files only; its next commit still
    /// changes only what it shows.
    async fn end_rebased_commit(&self, revision: &str) {
        match Base::load(self.transport.as_ref(), &self.id, Some(revision)).await {
            Ok(base) => self.tree.end_commit_at(revision.to_owned(), base.entries),
            Err(_) => self.tree.end_commit(Some(revision.to_owned())),
        }
    }

    /// One page of history, oldest first, after `cursor` (a revision id).
    pub async fn history(
        &self,
        cursor: Option<&str>,
        page_size: Option<usize>,
    ) -> Result<HistoryPage> {
        let size = self.limits.history_page(page_size)?;
        self.rpc(&rq::History {
            workspace_id: self.id.clone(),
            cursor: cursor.map(str::to_owned),
            page_size: Some(size as i32),
            ..Default::default()
        })
        .await
    }

    /// One page of the versions of `path` (newest first unless `oldest_first`), after `cursor`
    /// (a previous page's `next_cursor`); `follow_moves` follows a version that arrived by a
    /// move back to the path it came from.
    pub async fn path_history(
        &self,
        path: &str,
        cursor: Option<&str>,
        page_size: Option<usize>,
        follow_moves: bool,
        oldest_first: bool,
    ) -> Result<supabash_core::rpc::path_history::PathHistoryPage> {
        let size = self.limits.history_page(page_size)?;
        self.rpc(&supabash_core::rpc::path_history::PathHistory {
            workspace_id: self.id.clone(),
            path: path.to_owned(),
            cursor: cursor.map(str::to_owned),
            page_size: Some(size as i32),
            follow_moves: Some(follow_moves),
            oldest_first: Some(oldest_first),
            delegated_grant: None,
        })
        .await
    }

    /// The workspace's change announcements as a stream ([`crate::watch::Watch`]): every
    /// commit, purge and redaction after `after` (`None`: after the head when the watch
    /// starts), oldest first. On a direct Postgres connection it `LISTEN`s and, when the
    /// connection drops, listens again and recovers the commits it missed from
    /// `supabash_history`; over PostgREST it polls `supabash_history`. Needs `history` (and,
    /// with `after` `None`, `read`) of a delegated grant.
    pub async fn watch(
        &self,
        after: Option<crate::watch::WatchPoint>,
    ) -> Result<crate::watch::Watch> {
        crate::watch::Watch::start(self.transport.clone(), self.id.clone(), after).await
    }

    /// Appends `value` under `key` to `revision` without a new revision (`supabash_add_note`):
    /// the next version of that key, recorded with `actor` and the time. A note is at most
    /// `supabash_core::rpc::notes::MAX_NOTE_BYTES` of compact JSON.
    pub async fn add_note(
        &self,
        revision: &str,
        key: &str,
        value: serde_json::Value,
        actor: &str,
    ) -> Result<supabash_core::rpc::notes::RevisionNote> {
        let request = supabash_core::rpc::notes::AddNote {
            workspace_id: self.id.clone(),
            revision: revision.to_owned(),
            key: key.to_owned(),
            value,
            actor: Some(actor.to_owned()),
            delegated_grant: None,
        };
        request.check_fields().map_err(SupabashError::field)?;
        self.rpc(&request).await
    }

    /// The notes of `revision` (an id or a point in time), every version by key; only those
    /// under `key` when given (`supabash_notes`).
    pub async fn notes(
        &self,
        revision: &str,
        key: Option<&str>,
    ) -> Result<Vec<supabash_core::rpc::notes::RevisionNote>> {
        self.rpc(&supabash_core::rpc::notes::Notes {
            workspace_id: self.id.clone(),
            revision: revision.to_owned(),
            key: key.map(str::to_owned),
            delegated_grant: None,
        })
        .await
    }

    /// One page of the lines matching `pattern` at `revision` (default: the head), searched on
    /// the server (`supabash_grep`): `options` carries the request's optional fields (its
    /// workspace and pattern are set here).
    pub async fn grep(
        &self,
        pattern: &str,
        options: supabash_core::rpc::grep::Grep,
    ) -> Result<supabash_core::rpc::grep::GrepPage> {
        self.rpc(&supabash_core::rpc::grep::Grep {
            workspace_id: self.id.clone(),
            pattern: pattern.to_owned(),
            ..options
        })
        .await
    }

    /// Compares two sides. `paths` limits the entries to those paths (and what lies below);
    /// `preview_bytes` (default and maximum: the limit) caps each text preview, 0 disables them.
    pub async fn diff(
        &self,
        from: DiffRef,
        to: DiffRef,
        paths: Option<Vec<String>>,
        preview_bytes: Option<usize>,
    ) -> Result<Diff> {
        let preview = preview_bytes.unwrap_or(self.limits.max_diff_preview_bytes);
        if preview > self.limits.max_diff_preview_bytes {
            return Err(SupabashError::quota(format!(
                "diff previews are at most {} bytes",
                self.limits.max_diff_preview_bytes
            )));
        }
        let staged = if from == DiffRef::Staged || to == DiffRef::Staged {
            Some(self.tree.staged_documents(self.codec.as_ref()).await?)
        } else {
            None
        };
        self.rpc(&rq::Diff {
            workspace_id: self.id.clone(),
            from_ref: from,
            to_ref: to,
            paths,
            preview_bytes: Some(preview as i32),
            staged,
            delegated_grant: None,
        })
        .await
    }

    /// An old revision's receipt and files, verified.
    pub async fn read_revision(&self, revision: &str) -> Result<RevisionTree> {
        let answer = self
            .rpc(&rq::LoadRevision {
                workspace_id: self.id.clone(),
                revision: revision.to_owned(),
                delegated_grant: None,
            })
            .await?;
        let (tombstones, files): (Vec<File>, Vec<File>) =
            answer.files.into_iter().partition(|f| f.redacted);
        let entries = base_entries(files.clone())?;
        Ok(RevisionTree {
            receipt: answer.receipt,
            entries,
            files: verified_files(files)?,
            redacted: tombstones.into_iter().map(|f| f.path).collect(),
        })
    }

    /// A staged tree holding `revision`'s files, whose bodies load lazily (through the host
    /// cache this workspace's tree uses, if any) and are verified as they are read: a view of an old revision (edits to it never reach this workspace).
    pub async fn tree_at(&self, revision: &str) -> Result<StagedTree> {
        let base = Base::load(self.transport.as_ref(), &self.id, Some(revision)).await?;
        let source = Arc::new(RemoteSource {
            transport: self.transport.clone(),
            workspace_id: self.id.clone(),
        });
        let tree = StagedTree::from_base_map(
            base.revision,
            base.entries,
            Some(source),
            self.limits.clone(),
        );
        if let Some(cache) = self.tree.host_cache() {
            tree.use_host_cache(cache.clone());
        }
        Ok(tree)
    }

    /// Restores forward: stages the tree of `revision` over the current base (shell-owned
    /// paths stay). The next commit makes a new revision recording `revision` as its source.
    /// A revision before a path redaction's boundary, or one holding redacted versions, cannot
    /// be restored (`RESTORE_CROSSES_REDACTION`, `REDACTED`).
    pub async fn restore(&self, revision: &str) -> Result<Restored> {
        let old = self.read_revision(revision).await?;
        if let Some(floor) = self.pending().restore_floor {
            if old.receipt.position < floor {
                return Err(SupabashError::new(
                    ErrorCode::RestoreCrossesRedaction,
                    "this revision is older than a path redaction's boundary: restoring it would bring redacted paths back",
                ));
            }
        }
        if let Some(path) = old.redacted.first() {
            return Err(crate::documents::redacted(path));
        }
        self.tree
            .stage_files(old.files.into_iter().collect())
            .await?;
        self.tree.stage_attrs(&old.entries)?;
        self.pending().restore_source = Some(revision.to_owned());
        Ok(Restored {
            source_revision: revision.to_owned(),
            changes: self.tree.changes()?,
        })
    }

    /// The committed tree at the base revision, in one request, verified.
    pub async fn committed_snapshot(&self) -> Result<Snapshot> {
        let revision = self.tree.base_revision();
        let answer = self
            .rpc(&rq::LoadSnapshot {
                workspace_id: self.id.clone(),
                revision: revision.clone(),
                delegated_grant: None,
            })
            .await?;
        Ok(Snapshot {
            revision,
            files: verified_files(answer.files)?,
        })
    }

    /// Pins a revision (default: the head) so purge keeps it.
    pub async fn checkpoint(&self, options: CheckpointOptions) -> Result<Checkpoint> {
        let request = rq::Checkpoint {
            workspace_id: self.id.clone(),
            label: options.label,
            retention_class: options.retention_class,
            idempotency_key: options.idempotency_key,
            revision: options.revision,
            delegated_grant: None,
        };
        request.check_fields().map_err(SupabashError::field)?;
        self.rpc(&request).await
    }

    /// Every checkpoint, oldest first.
    pub async fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
        self.rpc(&rq::Checkpoints {
            workspace_id: self.id.clone(),
            delegated_grant: None,
        })
        .await
    }

    /// Deletes a checkpoint (its revision becomes purgeable).
    pub async fn delete_checkpoint(&self, checkpoint_id: &str) -> Result<()> {
        self.rpc(&rq::DeleteCheckpoint {
            workspace_id: self.id.clone(),
            checkpoint_id: checkpoint_id.to_owned(),
            delegated_grant: None,
        })
        .await?;
        Ok(())
    }

    /// Drops old revisions (never the head, a checkpointed one, or any at or after the floor).
    pub async fn purge(&self, options: PurgeOptions) -> Result<PurgeReport> {
        let int = |n: Option<i64>| {
            n.map(|n| {
                i32::try_from(n).map_err(|_| {
                    SupabashError::new(ErrorCode::InvalidArgument, "keep_revisions is too large")
                })
            })
            .transpose()
        };
        self.rpc(&rq::Purge {
            workspace_id: self.id.clone(),
            keep_revisions: int(options.keep_revisions)?,
            max_age_seconds: options.max_age_seconds,
            floor_revision: options.floor_revision,
            dry_run: Some(options.dry_run),
            delegated_grant: None,
            purge_audit: options.purge_audit.then_some(true),
        })
        .await
    }

    /// Forks the workspace: a new workspace of the same owner whose first revision's tree is
    /// this one's at `options.revision` (default: the head), made without copying any bytes,
    /// and opens it (same transport, limits and codec). Staged edits here stay here.
    pub async fn fork(&self, options: ForkOptions) -> Result<Forked> {
        let forked = self
            .rpc(&rq::Fork {
                workspace_id: self.id.clone(),
                revision: options.revision,
                label: options.label,
                actor: Some(options.actor),
                cause: options.cause,
                delegated_grant: None,
            })
            .await?;
        let ws = Workspace::open(
            self.transport.clone(),
            &forked.workspace_id,
            self.limits.clone(),
        )
        .await?;
        Ok(Forked {
            workspace: ws.with_codec(self.codec.clone()),
            forked_from: forked.forked_from,
        })
    }

    /// Brings this fork's work back into the workspace it was forked from: the fork's net
    /// change since the fork point (files its committed head holds that differ from the fork
    /// point, and files it removed) is committed onto the source's head with rebase. It lands
    /// when nothing it touches changed in the source since the fork point, and fails
    /// `COMMIT_CONFLICT` naming the paths otherwise (nothing is written then). Staged edits of
    /// this workspace are not part of it: commit them first. The source's receipt says
    /// `rebased_from` the fork point when the source moved on meanwhile.
    pub async fn merge_into_source(&self, options: CommitOptions) -> Result<CommitResult> {
        let origin = self.forked_from().await?.ok_or_else(|| {
            SupabashError::new(ErrorCode::InvalidArgument, "this workspace is not a fork")
        })?;
        let transport = self.transport.as_ref();
        let at_fork = Base::load(transport, &origin.workspace_id, Some(&origin.revision)).await?;
        let head = Base::load(transport, &self.id, None).await?;
        let before: BTreeMap<&str, &str> = at_fork
            .entries
            .iter()
            .map(|(p, e)| (p.as_str(), e.content_hash.as_str()))
            .collect();
        let source = RemoteSource {
            transport: self.transport.clone(),
            workspace_id: self.id.clone(),
        };
        let head_revision = head.revision.clone().unwrap_or_default();
        let mut files = Vec::new();
        for (p, e) in head.entries.iter() {
            if before.get(p.as_str()) != Some(&e.content_hash.as_str()) {
                let stored = source.load(&head_revision, p).await?;
                let bytes = stored.verified(Some((&e.content_hash, e.size)))?;
                files.push((p.clone(), bytes));
            }
        }
        let removed: Vec<String> = before
            .keys()
            .filter(|p| !head.entries.contains_key(**p))
            .map(|p| p.to_string())
            .collect();
        // The source's tree at the fork point is the base the change applies to.
        let target = Workspace::with_base(
            self.transport.clone(),
            &origin.workspace_id,
            at_fork,
            self.limits.clone(),
        )
        .with_codec(self.codec.clone());
        target.tree.apply_files(files, &removed).await?;
        target.commit(options.with_rebase(true)).await
    }

    /// Where this workspace was forked from (`None`: it is not a fork).
    pub async fn forked_from(&self) -> Result<Option<ForkedFrom>> {
        let mut cursor: Option<String> = None;
        loop {
            let page = Workspace::list(self.transport.as_ref(), cursor.as_deref(), None).await?;
            if let Some(w) = page.workspaces.iter().find(|w| w.workspace_id == self.id) {
                return Ok(w.forked_from.clone());
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(None),
            }
        }
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

    /// Removes content from history for good (see [`RedactOptions`]; a dry run unless
    /// applied). After an applied redaction every staged change and cached body is discarded
    /// (the removed bodies leave the host cache too, when the tree has one) and the tree
    /// reloads at the head, with the new redaction epoch. When the outcome is
    /// unknown, commits are refused until the workspace is opened again.
    pub async fn redact(&self, options: RedactOptions) -> Result<RedactReport> {
        let list = |v: Vec<String>| (!v.is_empty()).then_some(v);
        let request = rq::Redact {
            workspace_id: self.id.clone(),
            paths: list(options.paths),
            body_hashes: list(options.body_hashes),
            before_revision: options.before_revision,
            dry_run: Some(!options.apply),
            reason: options.reason,
            metadata_keys: list(options.metadata_keys),
            clear_cause: Some(options.clear_cause),
            delegated_grant: None,
        };
        request.check_fields().map_err(SupabashError::field)?;
        let report = match self.rpc(&request).await {
            Ok(report) => report,
            Err(e) => {
                if e.outcome_unknown && options.apply {
                    self.pending().stale = true;
                }
                return Err(e);
            }
        };
        if !report.dry_run {
            // The bodies it removed leave this host's cache too.
            if let Some(cache) = self.tree.host_cache() {
                cache.forget(&report.bodies);
            }
            self.pending().stale = true;
            let base = Base::load(self.transport.as_ref(), &self.id, None).await?;
            self.tree.reset_base(base.revision, base.entries)?;
            let mut pending = self.pending();
            *pending = Pending {
                redaction_epoch: base.redaction_epoch,
                restore_floor: base.restore_floor,
                lease: pending.lease.take(),
                ..Pending::default()
            };
        }
        Ok(report)
    }

    /// Whether nothing is staged: no changes against the base and no pending restore.
    pub fn is_clean(&self) -> Result<bool> {
        Ok(self.pending().restore_source.is_none() && self.tree.changes()?.is_empty())
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

/// Whether `e` says the RPC was not found with the arguments sent (PostgREST's `PGRST202`,
/// PostgreSQL's `42883`): the database's schema predates a parameter that was sent.
fn function_missing(e: &SupabashError) -> bool {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<crate::rpc_error::RpcError>())
        .and_then(|r| r.code.as_deref())
        .is_some_and(|c| matches!(c, "PGRST202" | "42883"))
}

/// The tree of `workspace_id` at `revision` (default: the head) without bodies, asked in the
/// compact form (about half the bytes), in the full one from a database whose schema predates
/// it (0.5.0).
pub async fn load_manifest(
    transport: &dyn Transport,
    workspace_id: &str,
    revision: Option<&str>,
) -> Result<Tree> {
    let mut request = rq::LoadManifest {
        workspace_id: workspace_id.to_owned(),
        revision: revision.map(str::to_owned),
        delegated_grant: None,
        compact: Some(true),
    };
    let manifest = match call(transport, &request).await {
        Err(e) if function_missing(&e) => {
            request.compact = None;
            call(transport, &request).await?
        }
        answer => answer?,
    };
    Ok(Tree {
        workspace_id: manifest.workspace_id,
        revision: manifest.revision,
        position: manifest.position,
        files: manifest.files.into_iter().map(File::from).collect(),
        redaction_epoch: manifest.redaction_epoch,
        restore_floor: manifest.restore_floor,
        files_only: manifest.files_only,
    })
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

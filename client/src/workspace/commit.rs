//! Committing the staged tree: one request that a retry after an unknown outcome repeats
//! exactly, and the staged tree's state after it.

use super::{Base, CommitOptions, Unknown, Workspace};
use crate::error::{Result, SupabashError};
use crate::observe::{OperationCounts, Timed};
use crate::transport::call;
use crate::tree::StagedTree;
use serde_json::Value;
use supabash_core::hash::sha256_hex;
use supabash_core::limits::MAX_AUDIT_ACTIONS;
use supabash_core::rpc::audit as wire;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{CommitResult, WireChange};
use supabash_core::ErrorCode;
use tracing::Instrument;

impl Workspace {
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

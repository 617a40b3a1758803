//! What history keeps: checkpoints that pin revisions, purges that drop old ones, and
//! redactions that remove content for good.

use super::{Base, Checkpoint, CheckpointOptions, Pending, PurgeOptions, PurgeReport};
use super::{RedactOptions, RedactReport, Workspace};
use crate::error::{Result, SupabashError};
use supabash_core::rpc::requests as rq;
use supabash_core::ErrorCode;

impl Workspace {
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
}

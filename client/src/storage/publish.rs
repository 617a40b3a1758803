//! The writes of a commit (steps 5 to 8 of `commit.rs`): one upload batch (revision pack,
//! snapshot when due, large and replaced bodies), the intent in `head.json`, the visible
//! objects (`visible.rs`; after the head for a large commit), the idempotency record and the
//! head naming the new revision.

use super::api::Upload;
use super::commit::{partial, Plan, Target};
use super::coordinator::{self, Lease};
use super::layout::{only_used, HeadRecord, Loc, Locations, PackHeader, Snapshot, SnapshotRef};
use super::layout::{TreeState, LAYOUT_VERSION};
use super::model::{Intent, FILE_TYPE, RECORD_TYPE};
use super::pack::Builder;
use super::store;
use super::{pending, visible, Base, Partial, StorageWorkspace};
use crate::error::{Result, SupabashError};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use supabash_core::hash::sha256_hex;
use supabash_core::rpc::{CommitResult, Receipt};
use supabash_core::ErrorCode;

/// The largest body a revision pack takes; larger ones are stored alone at
/// `objects/<sha256>`.
pub const PACK_BODY_MAX: usize = 1024 * 1024;

/// The most body bytes one revision pack holds (below the Storage server's default upload
/// limit of 50 MB); the commit's further bodies are stored alone. A pack also stays within
/// the largest upload the bucket check asks for ([`super::setup::largest_upload`]).
pub const PACK_MAX: usize = 32 * 1024 * 1024;

/// Room kept in a pack for its header besides the receipt: the tree's changes (at most
/// [`super::layout::MAX_DELTA`] entries) and the rest.
const HEADER_ROOM: usize = super::layout::MAX_DELTA * 512 + 4096;

/// The body bytes a pack of a commit with `receipt` may hold under `limits`.
fn pack_budget(limits: &crate::limits::Limits, receipt: &Receipt) -> usize {
    let receipt_len = serde_json::to_vec(receipt).map_or(0, |r| r.len());
    let largest = usize::try_from(super::setup::largest_upload(limits)).unwrap_or(usize::MAX);
    PACK_MAX.min(largest.saturating_sub(receipt_len + HEADER_ROOM))
}

/// What a published commit answers: its result, the workspace's new base, and the visible
/// objects still to write after the head (a commit of more than `visible_inline_max`
/// entries).
pub(super) struct Published {
    pub(super) result: CommitResult,
    pub(super) base: Base,
    pub(super) deferred: Option<visible::Deferred>,
}

/// What a commit uploads and publishes.
pub(super) struct Built {
    /// The revision pack, a snapshot when due, large bodies, replaced bodies.
    uploads: Vec<Upload>,
    /// `head.json` naming the new revision.
    head: HeadRecord,
    /// The workspace's base once published.
    base: Base,
    receipt: Receipt,
}

impl StorageWorkspace {
    /// The uploads and records of the commit `intent` announces: small new bodies go into its
    /// revision pack (a body already packed is not sent again), larger ones alone; the tree is
    /// the head's with the changes, or a new snapshot when that passes its bound (or the head
    /// is 0.6.0's, or nothing is published).
    pub(super) fn build(
        &self,
        plan: &Plan,
        intent: &Intent,
        target: &Target,
        bodies: &BTreeMap<String, Arc<Vec<u8>>>,
        receipt: Receipt,
        mut uploads: Vec<Upload>,
    ) -> Built {
        let rev = &intent.new_revision;
        let budget = pack_budget(self.tree.limits(), &receipt);
        let mut pack = Builder::default();
        let mut added = Locations::new();
        for (hash, bytes) in bodies {
            // Already packed for the published manifest (so kept, or moved, by purge).
            if target.locations.contains_key(hash) {
                continue;
            }
            if bytes.len() <= PACK_BODY_MAX && pack.len() + bytes.len() <= budget {
                let (offset, size) = pack.add(bytes);
                let pack = rev.clone();
                added.insert(hash.clone(), Loc { pack, offset, size });
            } else {
                uploads.push(self.object_upload(hash, bytes.to_vec()));
            }
        }
        // Only the locations of bodies the new manifest names: a body no longer named may be
        // purged with its pack, and must then be uploaded again, not taken as stored.
        let mut locations = target.locations.clone();
        locations.extend(added.clone());
        let locations = only_used(locations, target.manifest.values());
        let next = target
            .tree
            .as_ref()
            .and_then(|t| t.advance(&plan.touched, &added));
        let tree = match next {
            Some(t) => t,
            None => {
                let (upload, tree) = self.snapshot(rev, target, locations.clone());
                uploads.push(upload);
                tree
            }
        };
        let header = PackHeader {
            revision: rev.clone(),
            parent_revision: intent.parent_revision.clone(),
            parent_header: target.parent_header.clone(),
            position: target.position + 1,
            receipt: receipt.clone(),
            tree: tree.clone(),
            schema_version: LAYOUT_VERSION,
        };
        let header_bytes = serde_json::to_vec(&header).expect("headers serialise");
        let (bytes, span) = pack.finish(&header_bytes);
        uploads.push(Upload {
            key: self.keys.pack(rev),
            body: bytes,
            content_type: FILE_TYPE,
            metadata: json!({}),
        });
        let head = HeadRecord {
            revision: Some(rev.clone()),
            transaction_id: Some(intent.transaction_id.clone()),
            committed_at: Some(intent.created_at.clone()),
            schema_version: LAYOUT_VERSION,
            position: target.position + 1,
            header: Some(span),
            tree,
            pending: None,
            visible_behind: None,
        };
        let base = Base {
            revision: Some(rev.clone()),
            manifest: Arc::new(target.manifest.clone()),
            locations: Arc::new(locations),
        };
        Built {
            uploads,
            head,
            base,
            receipt,
        }
    }

    /// The snapshot upload of revision `rev` (the target's whole manifest) and the tree that
    /// names it.
    fn snapshot(&self, rev: &str, target: &Target, locations: Locations) -> (Upload, TreeState) {
        let snapshot = Snapshot {
            revision: rev.to_owned(),
            entries: target.manifest.clone(),
            locations,
            schema_version: LAYOUT_VERSION,
        };
        let bytes = serde_json::to_vec(&snapshot).expect("snapshots serialise");
        let tree = TreeState {
            snapshot: Some(SnapshotRef {
                revision: rev.to_owned(),
                sha256: sha256_hex(&bytes),
            }),
            ..TreeState::default()
        };
        let upload = Upload {
            key: self.keys.snapshot(rev),
            body: bytes,
            content_type: RECORD_TYPE,
            metadata: json!({}),
        };
        (upload, tree)
    }

    /// Steps 5 to 8: the upload batch (a failure there is the commit's plain error: nothing
    /// names what it stored); with visible objects, the intent and the visible objects
    /// (undone, and the commit refused, if another host's recovery rolled it back
    /// meanwhile); then the idempotency record and the head. A failure once the intent (or,
    /// without visible objects, the head) may exist is left to recovery ([`partial`]). A
    /// commit of more than `visible_inline_max` entries writes no intent: its head says its
    /// visible objects lag, and they are written after it ([`visible::Deferred`]).
    pub(super) async fn publish(
        &self,
        intent: &Intent,
        target: &Target,
        bodies: &BTreeMap<String, Arc<Vec<u8>>>,
        mut built: Built,
        lease: Option<&dyn Lease>,
    ) -> Result<Published> {
        if let Err(e) = self.api.upload_all(built.uploads).await {
            self.forget_uploads(&intent.new_revision).await;
            return Err(e);
        }
        let defer = self.visible && intent.touched.len() > self.visible_inline_max;
        let mut deferred = None;
        if defer {
            built.head.visible_behind = Some(intent.new_revision.clone());
            deferred = Some(visible::Deferred {
                api: self.api.clone(),
                keys: self.keys.clone(),
                revision: intent.new_revision.clone(),
                touched: intent.touched.clone(),
                bodies: bodies.clone(),
                guard: visible::lock(&self.api).await,
            });
            self.mark_partial(intent);
        } else if self.visible {
            self.write_intent(target.head.as_ref(), intent).await?;
            visible::publish(&self.api, &self.keys, &intent.touched, bodies)
                .await
                .map_err(partial)?;
            if lease.is_none() && self.rolled_back_elsewhere(intent).await.map_err(partial)? {
                return Err(SupabashError::new(
                    ErrorCode::CommitCoordination,
                    "another host's recovery rolled this commit back while it ran (no \
                     coordinator); what it wrote is undone, nothing was published",
                ));
            }
        } else {
            self.mark_partial(intent);
        }
        coordinator::check(lease).await.map_err(partial)?;
        self.write_idempotency(intent).await.map_err(partial)?;
        coordinator::check(lease).await.map_err(partial)?;
        store::write(&self.api, &self.keys.head(), &built.head, false)
            .await
            .map_err(partial)?;
        let result = CommitResult {
            receipt: built.receipt,
            replayed: false,
        };
        Ok(Published {
            result,
            base: built.base,
            deferred,
        })
    }

    /// Deletes the pack and snapshot of revision `rev`, which nothing names (clean-up only:
    /// a failure leaves them to purge).
    async fn forget_uploads(&self, rev: &str) {
        let _ = self
            .api
            .delete(&[self.keys.pack(rev), self.keys.snapshot(rev)])
            .await;
    }

    /// Remembers `intent` as this workspace's own unresolved commit.
    fn mark_partial(&self, intent: &Intent) {
        self.state.lock().expect("state lock").partial = Some(Partial {
            fingerprint: intent.fingerprint.clone(),
            transaction_id: intent.transaction_id.clone(),
            revision: intent.new_revision.clone(),
        });
    }

    /// Step 6: the head as read with `intent` pending (a fresh head with nothing published).
    /// An intent that may have been written counts as written: from then on a failure is left
    /// to recovery ([`partial`]).
    async fn write_intent(&self, head: Option<&HeadRecord>, intent: &Intent) -> Result<()> {
        let mut record = head.cloned().unwrap_or(HeadRecord {
            revision: None,
            transaction_id: None,
            committed_at: None,
            schema_version: LAYOUT_VERSION,
            position: 0,
            header: None,
            tree: TreeState::default(),
            pending: None,
            visible_behind: None,
        });
        record.pending = Some(intent.clone());
        match store::write(&self.api, &self.keys.head(), &record, false).await {
            Err(e) if !e.outcome_unknown => {
                self.forget_uploads(&intent.new_revision).await;
                Err(e)
            }
            written => {
                self.mark_partial(intent);
                written.map_err(partial)
            }
        }
    }

    /// Without a coordinator another host may have run recovery meanwhile and rolled this
    /// commit back (the head no longer names it as pending). Then what this commit wrote
    /// after that rollback is undone too (to the published head), and `true` is returned.
    async fn rolled_back_elsewhere(&self, intent: &Intent) -> Result<bool> {
        let head = store::read_head(&self.api, &self.keys).await?;
        let pending = head.as_ref().and_then(|h| h.pending.as_ref());
        if pending.is_some_and(|p| p.transaction_id == intent.transaction_id) {
            return Ok(false);
        }
        let published = match &head {
            Some(h) => store::load(&self.api, &self.keys, h).await?,
            None => None,
        };
        pending::undo(&self.api, &self.keys, intent, published.as_ref()).await?;
        self.state.lock().expect("state lock").partial = None;
        Ok(true)
    }
}

//! History of a Storage workspace, from the records in the reserved area: the chain of revision
//! records from the head back through `parentRevision` (and, across purged revisions, through
//! `ancestry/<rev>.json` links purge writes before it deletes anything), history pages oldest
//! first, reading old revisions, diffs between manifests, forward restore, checkpoints
//! (`checkpoints/<id>.json`) and purge.
//!
//! Every history call walks the chain from the head: one read per retained revision (a range
//! read of its pack header, whose span the child records; 0.6.0's records whole).

use super::model::{rfc3339, Entry, EntryKind, Manifest, Touched};
use super::pack::Span;
use super::store::{self, Stored};
use super::{diff, tree_io, StorageWorkspace};
use crate::error::{Result, SupabashError};
use crate::workspace::{Checkpoint, CheckpointOptions, Diff, DiffRef, HistoryPage};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::SystemTime;
use supabash_core::capability::Operation;
use supabash_core::rpc::{DiffEntry, DiffKind, Receipt};
use supabash_core::ErrorCode;

/// An old revision: its receipt and its manifest (read files with
/// [`StorageWorkspace::read_revision_file`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRevision {
    pub receipt: Receipt,
    pub entries: Manifest,
}

fn not_found(what: &str) -> SupabashError {
    SupabashError::new(ErrorCode::RevisionNotFound, format!("{what} not found"))
}

/// The entries of a diff from manifest `a` to `b`, by path: a file deleted and one added
/// with the same content are paired as one move.
fn diff_entries(a: &Manifest, b: &Manifest) -> Vec<DiffEntry> {
    let mut entries = Vec::new();
    let (mut gone, mut new) = (Vec::new(), Vec::new());
    for t in diff(a, b) {
        let gone_hash = t
            .after
            .is_none()
            .then(|| t.before.as_ref().and_then(file_hash));
        let new_hash = t
            .before
            .is_none()
            .then(|| t.after.as_ref().and_then(file_hash));
        if let Some(h) = gone_hash.flatten() {
            gone.push((h, t));
        } else if let Some(h) = new_hash.flatten() {
            new.push((h, t));
        } else {
            let kind = match (&t.before, &t.after) {
                (None, _) => DiffKind::Added,
                (_, None) => DiffKind::Deleted,
                _ => DiffKind::Modified,
            };
            entries.push(diff_entry(
                kind,
                t.path,
                None,
                t.before.as_ref(),
                t.after.as_ref(),
            ));
        }
    }
    let paired = supabash_core::moves::pair(gone, new);
    for (old, t) in paired.moves {
        let before = old.before.as_ref();
        entries.push(diff_entry(
            DiffKind::Moved,
            t.path,
            Some(old.path),
            before,
            t.after.as_ref(),
        ));
    }
    for t in paired.sources {
        entries.push(diff_entry(
            DiffKind::Deleted,
            t.path,
            None,
            t.before.as_ref(),
            None,
        ));
    }
    for t in paired.targets {
        entries.push(diff_entry(
            DiffKind::Added,
            t.path,
            None,
            None,
            t.after.as_ref(),
        ));
    }
    entries.sort_by(|x, y| x.path.cmp(&y.path));
    entries
}

/// The content hash of a file entry (`None` for a directory or a symbolic link).
fn file_hash(e: &Entry) -> Option<String> {
    (e.kind == EntryKind::File)
        .then(|| e.hash.clone())
        .flatten()
}

/// The diff entry of `path` (moved from `from`) between its entries `before` and `after`.
fn diff_entry(
    kind: DiffKind,
    path: String,
    from: Option<String>,
    before: Option<&Entry>,
    after: Option<&Entry>,
) -> DiffEntry {
    DiffEntry {
        kind,
        binary: after.or(before).is_some_and(|e| e.kind == EntryKind::File),
        before_hash: before.and_then(|e| e.hash.clone()),
        after_hash: after.and_then(|e| e.hash.clone()),
        path,
        from,
        preview: None,
        before_mode: before.map(|e| e.mode),
        after_mode: after.map(|e| e.mode),
        before_kind: before.map(|e| e.kind),
        after_kind: after.map(|e| e.kind),
    }
}

fn checkpoint_from(v: &serde_json::Value) -> Result<Checkpoint> {
    serde_json::from_value(v.clone()).map_err(|e| {
        SupabashError::new(
            ErrorCode::HistoryCorruption,
            format!("checkpoint record: {e}"),
        )
    })
}

impl StorageWorkspace {
    /// Every retained revision on the head's chain, newest first.
    pub(super) async fn chain(&self) -> Result<Vec<Stored>> {
        let mut out = Vec::new();
        let Some(head) = store::read_head(&self.api, &self.keys).await? else {
            return Ok(out);
        };
        let mut next: Option<(String, Option<Span>)> = head.revision.map(|r| (r, head.header));
        let mut seen = BTreeSet::new();
        while let Some((rev, span)) = next.take() {
            if !seen.insert(rev.clone()) {
                return Err(SupabashError::new(
                    ErrorCode::HistoryCorruption,
                    "the revision chain has a cycle",
                ));
            }
            match store::read_stored(&self.api, &self.keys, &rev, span.as_ref()).await? {
                Some(r) => {
                    next = r.parent().map(|p| (p.clone(), r.parent_span().cloned()));
                    out.push(r);
                }
                None => {
                    let link = self
                        .api
                        .read_json(&self.keys.reserved(&format!("ancestry/{rev}.json")))
                        .await?;
                    next = link
                        .and_then(|l| l["parentRevision"].as_str().map(str::to_owned))
                        .map(|p| (p, None));
                }
            }
        }
        Ok(out)
    }

    /// One page of history, oldest first, after `cursor` (a revision id on the chain, else
    /// `REVISION_NOT_FOUND`).
    pub async fn history(
        &self,
        cursor: Option<&str>,
        page_size: Option<usize>,
    ) -> Result<HistoryPage> {
        self.require(Operation::History)?;
        let size = self.tree.limits().history_page(page_size)?;
        let mut chain = self.chain().await?;
        chain.reverse();
        let start = match cursor {
            None => 0,
            Some(c) => {
                chain
                    .iter()
                    .position(|r| r.revision() == c)
                    .ok_or_else(|| not_found("history cursor"))?
                    + 1
            }
        };
        let rest = &chain[start.min(chain.len())..];
        let page: Vec<Receipt> = rest
            .iter()
            .take(size)
            .map(|r| r.receipt().clone())
            .collect();
        let next_cursor = (rest.len() > size).then(|| page.last().unwrap().revision.clone());
        Ok(HistoryPage {
            records: page,
            next_cursor,
            notes: Vec::new(),
        })
    }

    /// A revision's receipt and manifest (a capability needs `history` or `restore`).
    pub async fn read_revision(&self, revision: &str) -> Result<StoredRevision> {
        if self.require(Operation::History).is_err() {
            self.require(Operation::Restore)?;
        }
        self.load_revision(revision).await
    }

    async fn load_revision(&self, revision: &str) -> Result<StoredRevision> {
        let head = store::read_head(&self.api, &self.keys).await?;
        let span = head
            .filter(|h| h.revision.as_deref() == Some(revision))
            .and_then(|h| h.header);
        let r = store::read_stored(&self.api, &self.keys, revision, span.as_ref())
            .await?
            .ok_or_else(|| not_found("revision"))?;
        let (entries, locations) = r.tree(&self.api, &self.keys).await?;
        self.bodies
            .register(revision, Arc::new(entries.clone()), Arc::new(locations));
        Ok(StoredRevision {
            receipt: r.receipt().clone(),
            entries,
        })
    }

    /// The bytes of a file of a revision, verified against the recorded hash.
    pub async fn read_revision_file(&self, revision: &str, path: &str) -> Result<Vec<u8>> {
        self.read_revision(revision).await?;
        let stored = crate::tree::BodySource::load(self.bodies.as_ref(), revision, path).await?;
        stored.verified(None)
    }

    async fn side(&self, side: &DiffRef) -> Result<(Option<String>, Manifest)> {
        Ok(match side {
            DiffRef::Revision(r) => (Some(r.clone()), self.load_revision(r).await?.entries),
            DiffRef::Checkpoint(c) => {
                let cp = self
                    .list_checkpoints()
                    .await?
                    .into_iter()
                    .find(|x| &x.checkpoint_id == c)
                    .ok_or_else(|| not_found("checkpoint"))?;
                let m = self.load_revision(&cp.revision).await?.entries;
                (Some(cp.revision), m)
            }
            DiffRef::Head => {
                let head = store::read_head(&self.api, &self.keys).await?;
                let published = match &head {
                    Some(h) => store::load(&self.api, &self.keys, h).await?,
                    None => None,
                };
                match published {
                    Some(p) => (Some(p.revision), p.manifest),
                    None => (None, Manifest::new()),
                }
            }
            DiffRef::Staged => (Some("staged".into()), tree_io::snapshot(&self.tree)?.0),
        })
    }

    /// Compares two sides by manifest: every path whose entry differs (content, kind, mode,
    /// mtime or target) is `added`, `deleted` or `modified`; a deleted and an added file with
    /// the same content are one `moved` entry (the rule of `supabash_core::moves`). No
    /// previews.
    pub async fn diff(&self, from: DiffRef, to: DiffRef) -> Result<Diff> {
        self.require(Operation::History)?;
        let (from_label, a) = self.side(&from).await?;
        let (to_label, b) = self.side(&to).await?;
        Ok(Diff {
            from: from_label,
            to: to_label,
            entries: diff_entries(&a, &b),
        })
    }

    /// Restores forward: stages the tree of `revision` over the base. The next commit makes a
    /// new revision recording `revision` as its source; history is never rewritten.
    pub async fn restore(&self, revision: &str) -> Result<Vec<Touched>> {
        self.require(Operation::Restore)?;
        let old = self.load_revision(revision).await?;
        tree_io::stage(&self.tree, revision, &old.entries)?;
        self.state.lock().expect("state lock").restore_source = Some(revision.to_owned());
        self.changes()
    }

    /// Pins a revision (default: the head) so purge keeps it. With an idempotency key, a
    /// repeated call returns the first checkpoint (`replayed`).
    pub async fn checkpoint(&self, options: CheckpointOptions) -> Result<Checkpoint> {
        self.require(Operation::Checkpoint)?;
        let id = match &options.idempotency_key {
            Some(k) => supabash_core::hash::sha256_hex(k.as_bytes()),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let key = self.keys.reserved(&format!("checkpoints/{id}.json"));
        if let Some(existing) = self.api.read_json(&key).await? {
            let mut cp = checkpoint_from(&existing)?;
            cp.replayed = true;
            return Ok(cp);
        }
        let revision = match options.revision {
            Some(r) => {
                self.load_revision(&r).await?;
                r
            }
            None => self
                .base_revision()
                .ok_or_else(|| not_found("head revision"))?,
        };
        let record = json!({
            "checkpointId": id,
            "revision": revision,
            "label": options.label,
            "retentionClass": options.retention_class,
            "idempotencyKey": options.idempotency_key,
            "createdAt": rfc3339(SystemTime::now()),
        });
        self.api.write_json(&key, &record, false).await?;
        checkpoint_from(&record)
    }

    /// Every checkpoint, oldest first.
    pub async fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
        self.require(Operation::Checkpoint)?;
        self.list_checkpoints().await
    }

    pub(super) async fn list_checkpoints(&self) -> Result<Vec<Checkpoint>> {
        let mut out = Vec::new();
        for listed in self.api.list(&self.keys.reserved("checkpoints/")).await? {
            if let Some(v) = self.api.read_json(&listed.name).await? {
                out.push(checkpoint_from(&v)?);
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        Ok(out)
    }

    /// Deletes a checkpoint (its revision becomes purgeable).
    pub async fn delete_checkpoint(&self, checkpoint_id: &str) -> Result<()> {
        self.require(Operation::Checkpoint)?;
        let key = self
            .keys
            .reserved(&format!("checkpoints/{checkpoint_id}.json"));
        if self.api.delete(&[key]).await?.is_empty() {
            return Err(not_found("checkpoint"));
        }
        Ok(())
    }
}

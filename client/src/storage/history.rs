//! History of a Storage workspace, from the records in the reserved area: the chain of revision
//! records from the head back through `parentRevision` (and, across purged revisions, through
//! `ancestry/<rev>.json` links purge writes before it deletes anything), history pages oldest
//! first, reading old revisions, diffs between manifests, forward restore, checkpoints
//! (`checkpoints/<id>.json`) and purge.
//!
//! Every history call walks the chain from the head: one read per retained revision.

use super::model::Intent;
use super::model::{rfc3339, Entry, EntryKind, Manifest, Revision, Touched};
use super::recover::{self, read};
use super::{diff, tree_io, StorageWorkspace};
use crate::error::{Result, SupabashError};
use crate::workspace::{
    Checkpoint, CheckpointOptions, Diff, DiffRef, HistoryPage, PurgeOptions, PurgeReport,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::SystemTime;
use supabash_core::capability::Operation;
use supabash_core::limits::DEFAULT_PURGE_KEEP;
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
    /// Every retained revision record on the head's chain, newest first.
    async fn chain(&self) -> Result<Vec<Revision>> {
        let mut out = Vec::new();
        let Some(head) = read::<super::model::Head>(&self.api, &self.keys.head()).await? else {
            return Ok(out);
        };
        let mut next = Some(head.revision);
        let mut seen = BTreeSet::new();
        while let Some(rev) = next.take() {
            if !seen.insert(rev.clone()) {
                return Err(SupabashError::new(
                    ErrorCode::HistoryCorruption,
                    "the revision chain has a cycle",
                ));
            }
            match read::<Revision>(&self.api, &self.keys.revision(&rev)).await? {
                Some(r) => {
                    next = r.parent_revision.clone();
                    out.push(r);
                }
                None => {
                    let link = self
                        .api
                        .read_json(&self.keys.reserved(&format!("ancestry/{rev}.json")))
                        .await?;
                    next = link.and_then(|l| l["parentRevision"].as_str().map(str::to_owned));
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
                    .position(|r| r.revision == c)
                    .ok_or_else(|| not_found("history cursor"))?
                    + 1
            }
        };
        let rest = &chain[start.min(chain.len())..];
        let page: Vec<Receipt> = rest.iter().take(size).map(|r| r.receipt.clone()).collect();
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
        let r = read::<Revision>(&self.api, &self.keys.revision(revision))
            .await?
            .ok_or_else(|| not_found("revision"))?;
        self.bodies.register(revision, Arc::new(r.entries.clone()));
        Ok(StoredRevision {
            receipt: r.receipt,
            entries: r.entries,
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
            DiffRef::Head => match recover::published(&self.api, &self.keys).await? {
                Some((h, r)) => (Some(h.revision), r.entries),
                None => (None, Manifest::new()),
            },
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

    async fn list_checkpoints(&self) -> Result<Vec<Checkpoint>> {
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

    /// Drops old revision records and the bodies only they used. Kept: the head, the newest
    /// `keep_revisions` (default 50), checkpointed revisions, the floor revision and everything
    /// newer, and (with `max_age_seconds`) anything younger. Ancestry links of removed
    /// revisions are written before anything is deleted, so history stays ordered.
    pub async fn purge(&self, options: PurgeOptions) -> Result<PurgeReport> {
        self.require(Operation::Purge)?;
        let chain = self.chain().await?;
        let (kept, removed) = self.purge_selection(&chain, &options).await?;
        let used = self.bodies_in_use(&kept).await?;
        let garbage = self.unused_bodies(&used).await?;
        let report = PurgeReport {
            dry_run: options.dry_run,
            revisions: removed.iter().map(|r| r.revision.clone()).collect(),
            entries: removed.iter().map(|r| r.entries.len() as i64).sum(),
            bodies: garbage.len() as i64,
            bytes: garbage.values().map(|b| *b as i64).sum(),
        };
        if options.dry_run || (removed.is_empty() && garbage.is_empty()) {
            return Ok(report);
        }
        self.drop_revisions(&removed, garbage).await?;
        Ok(report)
    }

    /// The revisions of `chain` (newest first) that purge keeps and those it removes, by the
    /// rules of [`Self::purge`].
    async fn purge_selection<'c>(
        &self,
        chain: &'c [Revision],
        options: &PurgeOptions,
    ) -> Result<(Vec<&'c Revision>, Vec<&'c Revision>)> {
        let keep_n = options.keep_revisions.unwrap_or(DEFAULT_PURGE_KEEP).max(1) as usize;
        let pinned: BTreeSet<String> = self
            .list_checkpoints()
            .await?
            .into_iter()
            .map(|c| c.revision)
            .collect();
        let floor = match &options.floor_revision {
            None => None,
            Some(f) => Some(
                chain
                    .iter()
                    .position(|r| &r.revision == f)
                    .ok_or_else(|| not_found("floor revision"))?,
            ),
        };
        let cutoff = options
            .max_age_seconds
            .map(|s| rfc3339(SystemTime::now() - std::time::Duration::from_secs(s.max(0) as u64)));
        let (mut kept, mut removed) = (Vec::new(), Vec::new());
        for (i, r) in chain.iter().enumerate() {
            let young = cutoff
                .as_ref()
                .is_some_and(|c| r.receipt.committed_at.as_str() > c.as_str());
            let keep = i < keep_n
                || pinned.contains(&r.revision)
                || floor.is_some_and(|f| i <= f)
                || young;
            if keep {
                kept.push(r);
            } else {
                removed.push(r);
            }
        }
        Ok((kept, removed))
    }

    /// The body hashes still needed: those of the `kept` revisions, and those an unresolved
    /// commit names (it may still be published or rolled back).
    async fn bodies_in_use(&self, kept: &[&Revision]) -> Result<BTreeSet<String>> {
        let mut used: BTreeSet<String> = kept
            .iter()
            .flat_map(|r| r.entries.values().filter_map(|e: &Entry| e.hash.clone()))
            .collect();
        for listed in self.api.list(&self.keys.intents()).await? {
            if let Some(intent) = read::<Intent>(&self.api, &listed.name).await? {
                for t in intent.touched {
                    used.extend(t.before.and_then(|e| e.hash));
                    used.extend(t.after.and_then(|e| e.hash));
                }
            }
        }
        Ok(used)
    }

    /// The stored bodies (`objects/<hash>`) outside `used`: key → size in bytes.
    async fn unused_bodies(&self, used: &BTreeSet<String>) -> Result<BTreeMap<String, u64>> {
        let mut garbage = BTreeMap::new();
        for listed in self.api.list(&self.keys.reserved("objects/")).await? {
            let hash = listed
                .name
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned();
            if !used.contains(&hash) {
                garbage.insert(listed.name, listed.size.unwrap_or(0));
            }
        }
        Ok(garbage)
    }

    /// Deletes the `removed` revision records and the `garbage` bodies, after writing each
    /// removed revision's ancestry link (so history stays ordered).
    async fn drop_revisions(
        &self,
        removed: &[&Revision],
        garbage: BTreeMap<String, u64>,
    ) -> Result<()> {
        for r in removed {
            let link = json!({ "parentRevision": r.parent_revision });
            self.api
                .write_json(
                    &self.keys.reserved(&format!("ancestry/{}.json", r.revision)),
                    &link,
                    true,
                )
                .await?;
        }
        let mut doomed: Vec<String> = removed
            .iter()
            .map(|r| self.keys.revision(&r.revision))
            .collect();
        doomed.extend(garbage.into_keys());
        self.api.delete(&doomed).await?;
        Ok(())
    }
}

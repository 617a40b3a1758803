//! Purge: drops old revisions and the bodies only they used. Kept: the head, the newest
//! `keep_revisions` (default 50), checkpointed revisions, the floor revision and everything
//! newer, and (with `max_age_seconds`) anything younger. Before anything is deleted, the
//! ancestry link of every removed revision is written (so history stays ordered) and every
//! body a kept revision still reads from a removed revision's pack is copied to
//! `objects/<sha256>` (where readers look when a pack is gone). Then the removed revisions'
//! packs (or 0.6.0 records), the snapshots no kept revision names, and the `objects/` bodies
//! nothing names are deleted.

use super::layout::{Loc, Locations, Snapshot, SnapshotRef};
use super::model::{rfc3339, Intent, Manifest, FILE_TYPE};
use super::store::{self, read, Stored};
use super::StorageWorkspace;
use crate::error::{Result, SupabashError};
use crate::workspace::{PurgeOptions, PurgeReport};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::SystemTime;
use supabash_core::capability::Operation;
use supabash_core::limits::DEFAULT_PURGE_KEEP;
use supabash_core::ErrorCode;

/// A revision's manifest and locations, snapshots read once.
#[derive(Default)]
struct Trees {
    snapshots: HashMap<String, Snapshot>,
}

impl Trees {
    async fn of(&mut self, ws: &StorageWorkspace, r: &Stored) -> Result<(Manifest, Locations)> {
        let Stored::Packed(h) = r else {
            return r.tree(&ws.api, &ws.keys).await;
        };
        h.tree.check()?;
        let sref: &SnapshotRef = h.tree.snapshot.as_ref().expect("checked");
        if !self.snapshots.contains_key(&sref.revision) {
            let s = store::read_snapshot(&ws.api, &ws.keys, sref).await?;
            self.snapshots.insert(sref.revision.clone(), s);
        }
        Ok(h.tree.apply(self.snapshots[&sref.revision].clone()))
    }
}

/// What purge removes.
struct Doomed<'c> {
    removed: Vec<&'c Stored>,
    /// Bodies kept revisions read from removed packs: hash → location.
    rehome: BTreeMap<String, Loc>,
    /// Snapshots of removed revisions that no kept revision names.
    snapshots: Vec<String>,
    /// `objects/` bodies nothing names: key → size.
    garbage: BTreeMap<String, u64>,
}

impl StorageWorkspace {
    /// Drops old revisions and the bodies only they used (see the module documentation).
    pub async fn purge(&self, options: PurgeOptions) -> Result<PurgeReport> {
        self.require(Operation::Purge)?;
        let chain = self.chain().await?;
        let (kept, removed) = self.purge_selection(&chain, &options).await?;
        let mut trees = Trees::default();
        let mut used = self.bodies_pending().await?;
        let mut rehome = BTreeMap::new();
        let gone: BTreeSet<&str> = removed.iter().map(|r| r.revision()).collect();
        let mut named_snapshots = BTreeSet::new();
        for r in &kept {
            let (manifest, locations) = trees.of(self, r).await?;
            if let Stored::Packed(h) = r {
                named_snapshots.extend(h.tree.snapshot.iter().map(|s| s.revision.clone()));
            }
            for hash in manifest.values().filter_map(|e| e.hash.clone()) {
                if let Some(l) = locations
                    .get(&hash)
                    .filter(|l| gone.contains(l.pack.as_str()))
                {
                    rehome.insert(hash.clone(), l.clone());
                }
                used.insert(hash);
            }
        }
        // Bodies that go with the removed packs (those no kept revision reads).
        let mut packed: BTreeMap<String, u64> = BTreeMap::new();
        let mut entries = 0;
        for r in &removed {
            let (manifest, locations) = trees.of(self, r).await?;
            entries += manifest.len() as i64;
            for (hash, l) in locations {
                if l.pack == r.revision() && !used.contains(&hash) {
                    packed.insert(hash, l.size);
                }
            }
        }
        let garbage = self.unused_bodies(&used).await?;
        let report = PurgeReport {
            dry_run: options.dry_run,
            revisions: removed.iter().map(|r| r.revision().to_owned()).collect(),
            entries,
            bodies: (garbage.len() + packed.len()) as i64,
            bytes: garbage
                .values()
                .chain(packed.values())
                .map(|b| *b as i64)
                .sum(),
        };
        if options.dry_run || (removed.is_empty() && garbage.is_empty()) {
            return Ok(report);
        }
        let snapshots = gone
            .iter()
            .filter(|g| !named_snapshots.contains(**g))
            .map(|g| (*g).to_owned())
            .collect();
        let doomed = Doomed {
            removed,
            rehome,
            snapshots,
            garbage,
        };
        self.drop_revisions(doomed).await?;
        Ok(report)
    }

    /// The revisions of `chain` (newest first) that purge keeps and those it removes, by the
    /// rules of [`Self::purge`].
    async fn purge_selection<'c>(
        &self,
        chain: &'c [Stored],
        options: &PurgeOptions,
    ) -> Result<(Vec<&'c Stored>, Vec<&'c Stored>)> {
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
                    .position(|r| r.revision() == f)
                    .ok_or_else(|| {
                        SupabashError::new(ErrorCode::RevisionNotFound, "floor revision not found")
                    })?,
            ),
        };
        let cutoff = options
            .max_age_seconds
            .map(|s| rfc3339(SystemTime::now() - std::time::Duration::from_secs(s.max(0) as u64)));
        let (mut kept, mut removed) = (Vec::new(), Vec::new());
        for (i, r) in chain.iter().enumerate() {
            let young = cutoff
                .as_ref()
                .is_some_and(|c| r.receipt().committed_at.as_str() > c.as_str());
            let keep = i < keep_n
                || pinned.contains(r.revision())
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

    /// The body hashes unresolved commits name (they may still be published or rolled back):
    /// the head's pending intent and 0.6.0's intent records.
    async fn bodies_pending(&self) -> Result<BTreeSet<String>> {
        let mut intents = Vec::new();
        if let Some(h) = store::read_head(&self.api, &self.keys).await? {
            intents.extend(h.pending);
        }
        for listed in self.api.list(&self.keys.intents()).await? {
            intents.extend(read::<Intent>(&self.api, &listed.name).await?);
        }
        let mut used = BTreeSet::new();
        for intent in intents {
            for t in intent.touched {
                used.extend(t.before.and_then(|e| e.hash));
                used.extend(t.after.and_then(|e| e.hash));
            }
        }
        Ok(used)
    }

    /// The stored bodies (`objects/<hash>`) outside `used`: key → size in bytes.
    async fn unused_bodies(&self, used: &BTreeSet<String>) -> Result<BTreeMap<String, u64>> {
        let mut garbage = BTreeMap::new();
        for listed in self.api.list(&self.keys.reserved("objects/")).await? {
            let hash = listed.name.rsplit('/').next().unwrap_or_default();
            if !used.contains(hash) {
                garbage.insert(listed.name, listed.size.unwrap_or(0));
            }
        }
        Ok(garbage)
    }

    /// Writes the ancestry links and moves still-used bodies out of doomed packs, then deletes
    /// the doomed revisions, snapshots and bodies.
    async fn drop_revisions(&self, d: Doomed<'_>) -> Result<()> {
        for r in &d.removed {
            let link = json!({ "parentRevision": r.parent() });
            self.api
                .write_json(
                    &self
                        .keys
                        .reserved(&format!("ancestry/{}.json", r.revision())),
                    &link,
                    true,
                )
                .await?;
        }
        self.rehome(&d.rehome).await?;
        let mut doomed: Vec<String> = Vec::new();
        for r in &d.removed {
            doomed.push(self.keys.revision(r.revision()));
            doomed.push(self.keys.pack(r.revision()));
        }
        doomed.extend(d.snapshots.iter().map(|s| self.keys.snapshot(s)));
        doomed.extend(d.garbage.into_keys());
        self.api.delete(&doomed).await?;
        Ok(())
    }

    /// Copies each body at `rehome` from its pack to `objects/<sha256>`.
    async fn rehome(&self, rehome: &BTreeMap<String, Loc>) -> Result<()> {
        let mut packs: HashMap<&str, Vec<u8>> = HashMap::new();
        let mut uploads = Vec::new();
        for (hash, loc) in rehome {
            if !packs.contains_key(loc.pack.as_str()) {
                let bytes = self
                    .api
                    .download(&self.keys.pack(&loc.pack))
                    .await?
                    .unwrap_or_default();
                packs.insert(&loc.pack, bytes);
            }
            let body = super::pack::body_at(&packs[loc.pack.as_str()], loc.offset, loc.size)
                .map_err(|e| SupabashError::new(ErrorCode::HistoryCorruption, e.to_string()))?;
            uploads.push(super::api::Upload {
                key: self.keys.object(hash),
                body: body.to_vec(),
                content_type: FILE_TYPE,
                metadata: json!({}),
            });
        }
        self.api.upload_all(uploads).await
    }
}

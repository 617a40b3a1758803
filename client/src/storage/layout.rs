//! The records of the delta layout (schema 2): a revision's tree is a **snapshot** (the whole
//! manifest, `snapshots/<rev>.json`, written now and then) plus the **changes** since it
//! (path → entry or deletion) and the **locations** of the bodies those changes added (hash →
//! revision pack, offset, size). The head and every revision header carry their changes, at
//! most [`MAX_DELTA`] entries in all; a commit that would pass the bound writes a new
//! snapshot instead (compaction), so a commit's bytes grow with its change, not with the
//! workspace, and opening reads two objects: `head.json` and the snapshot it names.
//!
//! ```text
//! P.supabash/head.json                 HeadRecord: head revision, its tree, a pending commit
//! P.supabash/revisions/<rev>.pack      small bodies + PackHeader (receipt, tree, parent's span)
//! P.supabash/snapshots/<rev>.json      Snapshot: a whole manifest and its body locations
//! ```
//!
//! A body without a location is stored alone at `objects/<sha256>` (large bodies, and every
//! body of 0.6.0's layout).

use super::model::{Entry, Intent, Manifest, Touched};
use super::pack::Span;
use crate::error::{Result, SupabashError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use supabash_core::rpc::Receipt;
use supabash_core::ErrorCode;

/// The schema version of the delta layout's records (0.6.0's layout is 1).
pub const LAYOUT_VERSION: u32 = 2;

/// The most changes plus locations a tree may carry over its snapshot.
pub const MAX_DELTA: usize = 256;

/// Where a body lies in a revision pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loc {
    /// The revision whose pack holds it.
    pub pack: String,
    pub offset: u64,
    pub size: u64,
}

/// Body locations by SHA-256.
pub type Locations = BTreeMap<String, Loc>;

/// Changed paths over a snapshot: the new entry, or `None` for a deletion.
pub type Changes = BTreeMap<String, Option<Entry>>;

/// `snapshots/<rev>.json`: a whole manifest and the locations of its packed bodies. Stored
/// compactly: a packed body by one path whose entry names it (`packed`: pack → path →
/// offset; the SHA-256 and size come from the entry), so a location costs a path and a
/// number, not a hash and a pack id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "SnapshotWire", try_from = "SnapshotWire")]
pub struct Snapshot {
    pub revision: String,
    pub entries: Manifest,
    /// Locations of bodies the entries name (others are not stored).
    pub locations: Locations,
    pub schema_version: u32,
}

/// A snapshot as stored.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotWire {
    revision: String,
    entries: Manifest,
    packed: BTreeMap<String, BTreeMap<String, u64>>,
    schema_version: u32,
}

impl From<Snapshot> for SnapshotWire {
    fn from(s: Snapshot) -> Self {
        let mut packed: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for (path, e) in &s.entries {
            let Some(hash) = &e.hash else { continue };
            let Some(l) = s.locations.get(hash) else {
                continue;
            };
            if l.size == e.size && seen.insert(hash) {
                packed
                    .entry(l.pack.clone())
                    .or_default()
                    .insert(path.clone(), l.offset);
            }
        }
        SnapshotWire {
            revision: s.revision,
            entries: s.entries,
            packed,
            schema_version: s.schema_version,
        }
    }
}

impl TryFrom<SnapshotWire> for Snapshot {
    type Error = String;

    fn try_from(w: SnapshotWire) -> std::result::Result<Self, String> {
        let mut locations = Locations::new();
        for (pack, paths) in w.packed {
            for (path, offset) in paths {
                let e = w.entries.get(&path).filter(|e| e.hash.is_some());
                let e = e.ok_or_else(|| format!("a packed body names no file: {path}"))?;
                let loc = Loc {
                    pack: pack.clone(),
                    offset,
                    size: e.size,
                };
                locations.insert(e.hash.clone().expect("filtered"), loc);
            }
        }
        Ok(Snapshot {
            revision: w.revision,
            entries: w.entries,
            locations,
            schema_version: w.schema_version,
        })
    }
}

/// A snapshot by revision, with the SHA-256 of its bytes (checked when read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRef {
    pub revision: String,
    pub sha256: String,
}

/// The tree of a revision: its snapshot and the changes over it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TreeState {
    #[serde(default)]
    pub snapshot: Option<SnapshotRef>,
    #[serde(default)]
    pub changes: Changes,
    #[serde(default)]
    pub locations: Locations,
}

/// `head.json` in either layout: 0.6.0's (schema 1: revision, transaction, time) or the delta
/// layout's (schema 2: also the head's position, tree and pack header, and a commit in flight).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeadRecord {
    /// The published revision (`None`: nothing published, only a commit in flight).
    #[serde(default)]
    pub revision: Option<String>,
    #[serde(default)]
    pub transaction_id: Option<String>,
    #[serde(default)]
    pub committed_at: Option<String>,
    pub schema_version: u32,
    #[serde(default)]
    pub position: i64,
    /// The head revision's pack header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Span>,
    #[serde(default)]
    pub tree: TreeState,
    /// A commit that may have changed visible objects and is not resolved yet (its intent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Intent>,
    /// The head revision, while the visible objects do not show its changes yet: a commit of
    /// more than `StorageConfig::visible_inline_max` entries publishes its head first and
    /// writes its visible objects afterwards (`visible.rs`). Any later commit (or
    /// `sync_visible`) finishes them when this still names the head's revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visible_behind: Option<String>,
}

impl HeadRecord {
    /// Whether the visible objects lag behind the head's revision (see `visible_behind`).
    pub fn visible_lags(&self) -> bool {
        self.revision.is_some() && self.visible_behind == self.revision
    }
}

/// The header of a revision pack: the receipt and the revision's tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackHeader {
    pub revision: String,
    #[serde(default)]
    pub parent_revision: Option<String>,
    /// The parent's pack header (`None`: the parent is 0.6.0's record, or none).
    #[serde(default)]
    pub parent_header: Option<Span>,
    pub position: i64,
    pub receipt: Receipt,
    pub tree: TreeState,
    pub schema_version: u32,
}

fn corrupt(message: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::HistoryCorruption, message)
}

impl TreeState {
    /// Refuses a tree whose changes pass [`MAX_DELTA`] or that names no snapshot.
    pub fn check(&self) -> Result<()> {
        if self.changes.len() + self.locations.len() > MAX_DELTA {
            return Err(corrupt(format!(
                "a revision's changes pass the bound of {MAX_DELTA} over their snapshot"
            )));
        }
        if self.snapshot.is_none() {
            return Err(corrupt("a revision names no snapshot"));
        }
        Ok(())
    }

    /// The whole manifest and the locations of the bodies it names: `snapshot` with the
    /// changes applied.
    pub fn apply(&self, snapshot: Snapshot) -> (Manifest, Locations) {
        let (mut entries, mut locations) = (snapshot.entries, snapshot.locations);
        for (p, e) in &self.changes {
            match e {
                Some(e) => entries.insert(p.clone(), e.clone()),
                None => entries.remove(p),
            };
        }
        locations.extend(self.locations.clone());
        // A body no entry names any more may go with its pack at purge: not a place to trust.
        let locations = only_used(locations, entries.values());
        (entries, locations)
    }

    /// The tree after `touched` with the bodies at `added`; `None` when it would pass
    /// [`MAX_DELTA`] or has no snapshot (the commit writes a snapshot instead).
    pub fn advance(&self, touched: &[Touched], added: &Locations) -> Option<TreeState> {
        self.snapshot.as_ref()?;
        let mut changes = self.changes.clone();
        for t in touched {
            changes.insert(t.path.clone(), t.after.clone());
        }
        let mut all = self.locations.clone();
        all.extend(added.clone());
        let locations = only_used(all, changes.values().flatten());
        let next = TreeState {
            snapshot: self.snapshot.clone(),
            changes,
            locations,
        };
        (next.changes.len() + next.locations.len() <= MAX_DELTA).then_some(next)
    }
}

/// The locations of the bodies `entries` name.
pub fn only_used<'a>(locations: Locations, entries: impl Iterator<Item = &'a Entry>) -> Locations {
    let used: BTreeSet<&String> = entries.filter_map(|e| e.hash.as_ref()).collect();
    locations
        .into_iter()
        .filter(|(h, _)| used.contains(h))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::model::EntryKind;
    use proptest::prelude::*;

    fn entry(content: u8) -> Entry {
        Entry {
            kind: EntryKind::File,
            mode: 0o644,
            mtime_ms: 0,
            hash: Some(format!("{content:064}")),
            size: u64::from(content),
            target: None,
        }
    }

    fn loc(content: u8) -> Loc {
        Loc {
            pack: format!("r{content}"),
            offset: 8,
            size: u64::from(content),
        }
    }

    proptest! {
        /// A chain of commits, compacted whenever the delta passes its bound, always rebuilds
        /// the real manifest from its snapshot and changes, within the bound.
        #[test]
        fn deltas_rebuild_the_tree(
            commits in proptest::collection::vec(
                proptest::collection::btree_map("/[a-z]{1,3}", proptest::option::of(0u8..50), 1..40),
                1..12,
            )
        ) {
            let mut real = Manifest::new();
            let mut snapshot = Snapshot {
                revision: "s".into(),
                entries: Manifest::new(),
                locations: Locations::new(),
                schema_version: LAYOUT_VERSION,
            };
            let mut tree = TreeState {
                snapshot: Some(SnapshotRef { revision: "s".into(), sha256: String::new() }),
                ..TreeState::default()
            };
            for commit in commits {
                let mut touched = Vec::new();
                let mut added = Locations::new();
                for (p, content) in commit {
                    let after = content.map(entry);
                    if real.get(&p) == after.as_ref() {
                        continue;
                    }
                    if let Some(c) = content {
                        added.insert(entry(c).hash.unwrap(), loc(c));
                    }
                    touched.push(Touched { path: p.clone(), before: real.get(&p).cloned(), after: after.clone() });
                    match after {
                        Some(e) => real.insert(p, e),
                        None => real.remove(&p),
                    };
                }
                tree = match tree.advance(&touched, &added) {
                    Some(next) => next,
                    None => {
                        let (_, mut locations) = tree.apply(snapshot.clone());
                        locations.extend(added);
                        snapshot.entries = real.clone();
                        snapshot.locations = only_used(locations, real.values());
                        TreeState { snapshot: tree.snapshot.clone(), ..TreeState::default() }
                    }
                };
                prop_assert!(tree.check().is_ok());
                let (entries, locations) = tree.apply(snapshot.clone());
                prop_assert_eq!(&entries, &real);
                for e in real.values() {
                    let h = e.hash.clone().unwrap();
                    prop_assert!(locations.contains_key(&h), "no location for {}", h);
                }
                let used: BTreeSet<String> = real.values().filter_map(|e| e.hash.clone()).collect();
                prop_assert!(locations.keys().all(|h| used.contains(h)), "a stale location");
            }
        }
    }

    proptest! {
        /// A snapshot whose locations are those of its files comes back from its bytes whole.
        #[test]
        fn snapshots_round_trip(
            files in proptest::collection::btree_map("/[a-z]{1,4}", (0u8..20, any::<bool>()), 0..30),
        ) {
            let mut entries = Manifest::new();
            let mut locations = Locations::new();
            for (p, (content, packed)) in &files {
                entries.insert(p.clone(), entry(*content));
                if *packed {
                    locations.insert(entry(*content).hash.unwrap(), loc(*content));
                }
            }
            let s = Snapshot { revision: "r".into(), entries, locations, schema_version: 2 };
            let bytes = serde_json::to_vec(&s).unwrap();
            prop_assert_eq!(serde_json::from_slice::<Snapshot>(&bytes).unwrap(), s);
        }
    }

    #[test]
    fn a_packed_body_must_name_a_file() {
        let bad = r#"{"revision":"r","entries":{},"packed":{"p":{"/x":8}},"schemaVersion":2}"#;
        assert!(serde_json::from_str::<Snapshot>(bad).is_err());
    }

    #[test]
    fn a_delta_past_its_bound_or_without_snapshot_is_refused() {
        let mut tree = TreeState::default();
        assert_eq!(tree.check().unwrap_err().code, ErrorCode::HistoryCorruption);
        tree.snapshot = Some(SnapshotRef {
            revision: "s".into(),
            sha256: String::new(),
        });
        for i in 0..=MAX_DELTA {
            tree.changes.insert(format!("/{i}"), None);
        }
        let e = tree.check().unwrap_err();
        assert_eq!(e.code, ErrorCode::HistoryCorruption);
        assert!(e.to_string().contains("bound"), "{e}");
    }
}

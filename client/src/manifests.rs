//! Manifests of revisions this host has seen, so a reopen costs what changed: [`ManifestCache`]
//! keeps, per workspace, the last manifest a builder loaded (in memory), and the next open
//! asks `supabash_manifest_changes` for the entries that differ since that revision (one
//! call) and patches it. A redaction since (the answer's epoch differs), a purged receipt in
//! between, or too many changes make the open load the whole manifest, as without a cache.

use crate::tree::{BaseEntry, BaseMap};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// A manifest as loaded: its revision, the redaction epoch it was read at, and its entries by
/// path, built once: the trees opened on it share them (a reopen neither copies nor rebuilds
/// the base).
#[derive(Debug, Clone)]
pub(crate) struct CachedManifest {
    pub revision: String,
    pub redaction_epoch: i64,
    pub base: BaseMap,
}

/// The manifests of revisions a host has seen, one per workspace (the latest loaded). Cheap
/// to clone (clones share it). Share one cache only among callers that see the same trees
/// (one user's, or one grant's): an open trusts the cached entries of paths that did not
/// change. Give it to [`crate::WorkspaceBuilder::manifest_cache`].
#[derive(Debug, Clone, Default)]
pub struct ManifestCache {
    manifests: Arc<Mutex<HashMap<String, CachedManifest>>>,
}

impl ManifestCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the cached manifest of `workspace_id` out of the cache (to patch it in place when
    /// no tree shares it any more; [`Self::put`] it back).
    pub(crate) fn take(&self, workspace_id: &str) -> Option<CachedManifest> {
        self.lock().remove(workspace_id)
    }

    /// Keeps `manifest` as the one of `workspace_id`.
    pub(crate) fn put(&self, workspace_id: &str, manifest: CachedManifest) {
        self.lock().insert(workspace_id.to_owned(), manifest);
    }

    /// Forgets the manifest of `workspace_id`.
    pub fn forget(&self, workspace_id: &str) {
        self.lock().remove(workspace_id);
    }

    /// The revision whose manifest is kept for `workspace_id`.
    pub fn revision(&self, workspace_id: &str) -> Option<String> {
        self.lock().get(workspace_id).map(|m| m.revision.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CachedManifest>> {
        // A panic while holding the lock leaves a whole map (every update is one insert).
        self.manifests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Puts the entries of `changed` into `base` and takes the paths of `removed` out: a lookup
/// per change, whatever the size of the base.
pub(crate) fn patch(
    base: &mut BTreeMap<String, crate::tree::BaseFile>,
    changed: Vec<BaseEntry>,
    removed: &[String],
) {
    for p in removed {
        base.remove(p);
    }
    for c in changed {
        let (p, file) = c.base_file();
        base.insert(p, file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use supabash_core::posix::Kind;

    fn entry(path: &str, hash: &str) -> BaseEntry {
        BaseEntry {
            path: path.to_owned(),
            content_hash: hash.to_owned(),
            size: 1,
            kind: Kind::File,
            mode: 0o644,
            mtime_ns: None,
            target: None,
        }
    }

    proptest! {
        /// A patch equals applying the changes to a map: every changed path takes its new
        /// entry, every removed one goes, the rest stay, in path order.
        #[test]
        fn a_patch_is_a_map_update(
            base in proptest::collection::btree_map("/[a-e]{1,3}", "[0-9]", 0..20),
            changed in proptest::collection::btree_map("/[a-e]{1,3}", "[x-z]", 0..8),
            removed in proptest::collection::btree_set("/[a-e]{1,3}", 0..8),
        ) {
            let removed: Vec<String> = removed
                .into_iter()
                .filter(|p| base.contains_key(p) && !changed.contains_key(p))
                .collect();
            let mut got: BTreeMap<String, crate::tree::BaseFile> =
                base.iter().map(|(p, h)| entry(p, h).base_file()).collect();
            let changed_entries: Vec<BaseEntry> = changed.iter().map(|(p, h)| entry(p, h)).collect();
            patch(&mut got, changed_entries, &removed);
            let mut want: BTreeMap<String, String> = base.clone();
            for p in &removed {
                want.remove(p);
            }
            want.extend(changed.clone());
            let got: Vec<(String, String)> =
                got.into_iter().map(|(p, f)| (p, f.content_hash)).collect();
            prop_assert_eq!(got, want.into_iter().collect::<Vec<_>>());
        }
    }
}

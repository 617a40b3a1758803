//! The tree a staged tree is based on: a revision's manifest loaded whole, or the head's
//! patched from the host's manifest cache.

use super::function_missing;
use crate::documents::StoredFile;
use crate::error::Result;
use crate::manifests::{CachedManifest, ManifestCache};
use crate::transport::{call, Transport};
use crate::tree::{BaseEntry, BaseMap};
use std::sync::Arc;
use supabash_core::rpc::manifest_changes::{ManifestChanges, ManifestChangesSince};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{File, Tree};

/// The head manifest a staged tree is based on.
pub(super) struct Base {
    pub revision: Option<String>,
    /// Its entries by path (shared with the host's manifest cache, when one keeps it).
    pub entries: BaseMap,
    pub redaction_epoch: i64,
    pub restore_floor: Option<i64>,
    /// The workspace stores plain files only.
    pub files_only: bool,
}

impl Base {
    /// The tree at `revision` (default: the head), without bodies.
    pub(super) async fn load(
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
    pub(super) async fn reopen(
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

/// A manifest's files as the entries of a staged tree's base.
pub(super) fn base_entries(files: Vec<File>) -> Result<Vec<BaseEntry>> {
    files
        .into_iter()
        .map(|f| BaseEntry::from_stored(StoredFile::try_from(f)?))
        .collect()
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

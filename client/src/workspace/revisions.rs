//! Old revisions: read one whole, view one as a lazily loaded tree, take the base's committed
//! snapshot, or restore one forward into the staged tree.

use super::base::{base_entries, Base};
use super::{RemoteSource, Workspace};
use crate::documents::StoredFile;
use crate::error::{Result, SupabashError};
use crate::tree::{BaseEntry, StagedChange, StagedTree};
use std::collections::BTreeMap;
use std::sync::Arc;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{File, Receipt};
use supabash_core::ErrorCode;

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

impl Workspace {
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
    /// cache this workspace's tree uses, if any) and are verified as they are read: a view of
    /// an old revision (edits to it never reach this workspace).
    pub async fn tree_at(&self, revision: &str) -> Result<StagedTree> {
        let base = Base::load(self.transport.as_ref(), &self.id, Some(revision)).await?;
        let source = Arc::new(RemoteSource::new(&self.transport, &self.id));
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

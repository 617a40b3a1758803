//! The point a read is pinned at and the header its answer starts with, built in one place
//! for every answer about a tree at one revision (`supabash_load_manifest`,
//! `supabash_load_snapshot`, `supabash_list_directory`, `supabash_manifest_changes`): the
//! workspace, the revision and its position, the redaction epoch and restore floor a commit
//! of that tree must respect, and whether the workspace stores plain files only.

use crate::pg::args;
use crate::pg::fail::Outcome;
use crate::store::access::{self, Workspace};
use crate::store::{redactions, revisions};
use supabash_core::rpc::listing::DirectoryPage;
use supabash_core::rpc::manifest_changes::ManifestChanges;
use supabash_core::rpc::Tree;

/// A revision of a workspace, or none for an empty workspace.
pub struct Point {
    pub revision: Option<String>,
    pub position: Option<i64>,
}

/// Resolves an optional revision id to the point it names; absent means the head.
pub fn point(ws: &Workspace, revision: Option<&str>) -> Outcome<Point> {
    match args::uuid_opt("revision", revision)? {
        None => Ok(Point {
            revision: ws.head.clone(),
            position: ws.head_position,
        }),
        Some(rev) => {
            let position = access::revision_position(&ws.id, &rev)?;
            Ok(Point {
                revision: Some(rev),
                position: Some(position),
            })
        }
    }
}

/// [`point`] of a revision argument that may also be a point in time
/// ([`revisions::resolve_time`]).
pub fn point_or_time(ws: &Workspace, revision: Option<&str>) -> Outcome<Point> {
    let at = revisions::resolve_time_opt(&ws.id, revision)?;
    point(ws, at.as_deref())
}

/// The fields every answer about a pinned tree starts with.
pub struct Header {
    pub workspace_id: String,
    pub revision: Option<String>,
    pub position: Option<i64>,
    pub redaction_epoch: i64,
    pub restore_floor: Option<i64>,
    pub files_only: bool,
}

impl Header {
    /// The header of `ws` pinned at the revision or time `revision` (default: the head).
    pub fn read(ws: &Workspace, revision: Option<&str>) -> Outcome<Header> {
        let Point { revision, position } = point_or_time(ws, revision)?;
        Ok(Header {
            workspace_id: ws.id.clone(),
            revision,
            position,
            redaction_epoch: ws.redaction_epoch,
            restore_floor: redactions::restore_floor(&ws.id)?,
            files_only: ws.files_only,
        })
    }

    /// A tree answer holding `files`.
    pub fn tree<F>(self, files: Vec<F>) -> Tree<F> {
        Tree {
            workspace_id: self.workspace_id,
            revision: self.revision,
            position: self.position,
            files,
            redaction_epoch: self.redaction_epoch,
            restore_floor: self.restore_floor,
            files_only: self.files_only,
        }
    }

    /// A directory page of `path` with nothing listed yet.
    pub fn directory_page(self, path: String) -> DirectoryPage {
        DirectoryPage {
            workspace_id: self.workspace_id,
            revision: self.revision,
            position: self.position,
            path,
            files: Vec::new(),
            directories: Vec::new(),
            directory_entries: Vec::new(),
            next_cursor: None,
            redaction_epoch: self.redaction_epoch,
            restore_floor: self.restore_floor,
            files_only: self.files_only,
            tree_files: None,
            tree_bytes: None,
        }
    }

    /// Manifest changes not (yet) known to be complete, with nothing listed.
    pub fn manifest_changes(self) -> ManifestChanges {
        ManifestChanges {
            workspace_id: self.workspace_id,
            revision: self.revision,
            position: self.position,
            complete: false,
            files: Vec::new(),
            removed: Vec::new(),
            redaction_epoch: self.redaction_epoch,
            restore_floor: self.restore_floor,
            files_only: self.files_only,
        }
    }
}

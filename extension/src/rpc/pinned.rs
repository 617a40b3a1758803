//! The point a read is pinned at and the header its answer starts with, built in one place
//! for every answer about a tree at one revision (`supabash_load_manifest`,
//! `supabash_load_snapshot`, `supabash_list_directory`, `supabash_manifest_changes`): the
//! workspace, the revision and its position, the redaction epoch and restore floor a commit
//! of that tree must respect, and whether the workspace stores plain files only.
//!
//! It also holds the one rule for which revisions a delegated grant reads ([`readable`]):
//! `read` reads the head, and every revision that was the head at the grant's exchange or
//! later (a job's base stays readable when others commit); an older one needs `history`.
//! Every pinned read goes through [`point`]: manifests, documents, snapshots, listings,
//! grep, and reads as of a time (a time resolves to a revision first).

use crate::pg::args;
use crate::pg::fail::Fail;
use crate::pg::fail::Outcome;
use crate::store::access::{self, Workspace};
use crate::store::{redactions, revisions};
use serde_json::json;
use supabash_core::capability::Operation;
use supabash_core::rpc::listing::DirectoryPage;
use supabash_core::rpc::manifest_changes::ManifestChanges;
use supabash_core::rpc::Tree;
use supabash_core::Marker;

/// A revision of a workspace, or none for an empty workspace.
pub struct Point {
    pub revision: Option<String>,
    pub position: Option<i64>,
}

/// Resolves an optional revision id to the point it names; absent means the head. A revision
/// the caller may not read ([`readable`]) is refused.
pub fn point(ws: &Workspace, revision: Option<&str>) -> Outcome<Point> {
    match args::uuid_opt("revision", revision)? {
        None => Ok(Point {
            revision: ws.head.clone(),
            position: ws.head_position,
        }),
        Some(rev) => {
            let position = access::revision_position(&ws.id, &rev)?;
            if !readable(ws, position)? {
                return Err(Fail::new(
                    Marker::WorkspaceDenied,
                    "the delegated grant reads the head and the revisions made since its exchange: an older revision needs `history`",
                )
                .with_detail(json!({ "revision": rev })));
            }
            Ok(Point {
                revision: Some(rev),
                position: Some(position),
            })
        }
    }
}

/// Whether the caller may read the revision at `position`: the owner and a grant holding
/// `history` read any; another grant reads the head and the revisions that were the head at
/// its exchange or later.
pub fn readable(ws: &Workspace, position: i64) -> Outcome<bool> {
    match &ws.delegation {
        Some(d) if !d.allows(Operation::History) && Some(position) != ws.head_position => {
            revisions::head_at_or_after(&ws.id, position, &d.granted_at)
        }
        _ => Ok(true),
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

//! `supabash_manifest_changes`: how the manifest of one revision became another's, so a host
//! that keeps the manifests of revisions it has seen reopens a workspace for the cost of what
//! changed since.

use super::answers::File;
use super::declare::{request, rpc, WorkspaceRequest};
use super::Rpc;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// The most revisions one answer spans: further apart, loading the manifest is as cheap.
pub const MAX_CHANGED_REVISIONS: i64 = 1000;
/// The most paths one answer lists: more, and loading the manifest is as cheap.
pub const MAX_CHANGED_PATHS: usize = 10_000;

request! {
    "supabash_manifest_changes", mutates = false, ManifestChanges, workspace = [Read];
    /// `supabash_manifest_changes`: the entries that differ between the manifest at revision
    /// `since` and the one at `revision` (default: the head; a point in time as everywhere),
    /// found from the receipts in between (so the cost follows what changed, not the tree).
    /// When the answer cannot be complete (see [`ManifestChanges::complete`]) it lists
    /// nothing: load the manifest.
    pub struct ManifestChangesSince {
        pub workspace_id: String,
        pub since: String,
        pub revision: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

/// An answer of `supabash_manifest_changes`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestChanges {
    pub workspace_id: String,
    /// The revision the changes lead to (null for an empty workspace) and its position.
    pub revision: Option<String>,
    pub position: Option<i64>,
    /// False when the changes cannot be told: `since` is not a retained revision of the
    /// workspace at or before `revision`, purge removed a receipt in between, or more than
    /// [`MAX_CHANGED_REVISIONS`] revisions or [`MAX_CHANGED_PATHS`] paths lie between.
    pub complete: bool,
    /// The entries at `revision` of the paths that changed since (as the manifest lists them,
    /// without bodies), in path order.
    pub files: Vec<File>,
    /// The paths that changed in between and that `revision` does not hold (one added and
    /// removed in between is listed too), in path order.
    pub removed: Vec<String>,
    /// As in the manifest. A host whose cached manifest was loaded at another epoch loads the
    /// manifest instead: a redaction rewrote versions without a revision.
    #[serde(default)]
    pub redaction_epoch: i64,
    pub restore_floor: Option<i64>,
    /// As in the manifest: present (`true`) when the workspace stores plain files only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub files_only: bool,
}

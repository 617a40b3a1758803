//! What the RPCs answer. Field names are camelCase on the wire; decoders accept fields they do
//! not know, so a newer server can add some.

use super::body;
use super::receipt::{ForkedFrom, Receipt};
use crate::posix::Kind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// `supabash_create_workspace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceCreated {
    pub workspace_id: String,
    pub created_at: String,
    /// Always null: a new workspace has no revision.
    pub head_revision: Option<String>,
    /// Whether it stores plain files only (see `CreateWorkspace::files_only`).
    #[serde(default)]
    pub files_only: bool,
}

/// `supabash_fork`: the new workspace and its first revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceForked {
    pub workspace_id: String,
    pub created_at: String,
    /// The fork's first revision (position 1): its tree is the source's at the fork point.
    pub head_revision: String,
    pub forked_from: ForkedFrom,
}

/// `supabash_delete_workspace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceDeleted {
    pub workspace_id: String,
    /// Bodies removed from the store (none while other workspaces of the family use them).
    pub bodies: i64,
    pub bytes: i64,
    /// Forks still read from it: its row stays, hidden, with what they need, until they go.
    pub kept_for_forks: bool,
}

/// One of the caller's workspaces, as `supabash_list_workspaces` lists it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceInfo {
    pub workspace_id: String,
    pub label: Option<String>,
    pub head_revision: Option<String>,
    pub head_position: Option<i64>,
    pub created_at: String,
    pub updated_at: String,
    pub forked_from: Option<ForkedFrom>,
    /// The body store it shares with its fork family (its own id unless it is a fork).
    pub store_id: String,
    /// Plain bytes of the distinct contents in that store (shared by the whole family).
    pub store_bytes: i64,
    /// Whether it stores plain files only (see `CreateWorkspace::files_only`).
    #[serde(default)]
    pub files_only: bool,
}

/// `supabash_list_workspaces`: a page of workspaces and the cursor of the next, if any.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacePage {
    pub workspaces: Vec<WorkspaceInfo>,
    pub next_cursor: Option<String>,
}

/// One stored file: rendered content hash and size, body hash and size, metadata, and the
/// body (`text` or `base64`, see [`body`]) when the RPC sends bodies.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct File {
    pub path: String,
    pub content_hash: String,
    pub size: i64,
    pub body_hash: String,
    pub body_size: i64,
    pub metadata: Value,
    pub text: Option<String>,
    pub base64: Option<String>,
    /// A tombstone: redaction removed this version's content (its hashes are empty, its sizes
    /// 0, and it never carries a body). A file's own metadata cannot set it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// `file`, `symlink` (its body is the target) or `directory` (no body; an empty
    /// directory is kept as one). Absent in an answer of an older server: a file.
    #[serde(default)]
    pub kind: Kind,
    /// Permission bits (at most `0o7777`); absent in an older answer: `0o644`.
    #[serde(default = "default_mode")]
    pub mode: u32,
    /// Modification time, nanoseconds since the epoch (absent on a database not upgraded to
    /// 0.6.0).
    #[serde(default)]
    pub mtime_ns: Option<i64>,
}

fn default_mode() -> u32 {
    Kind::File.default_mode()
}

impl File {
    /// Attaches body bytes in the wire encoding.
    pub fn with_body(mut self, bytes: Vec<u8>) -> Self {
        let e = body::encode(bytes);
        self.text = e.text;
        self.base64 = e.base64;
        self
    }

    /// The body bytes, when the file carries them.
    pub fn body(&self) -> Result<Option<Vec<u8>>, String> {
        body::decode(self.text.as_deref(), self.base64.as_deref())
    }
}

/// `supabash_load_manifest` (files without bodies, as [`ManifestFile`](super::ManifestFile)s) and
/// `supabash_load_snapshot` (with bodies): the tree at one revision; `revision` and `position`
/// are null for an empty workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tree<F = File> {
    pub workspace_id: String,
    pub revision: Option<String>,
    pub position: Option<i64>,
    pub files: Vec<F>,
    /// Counts the workspace's redactions; a commit sends the value its tree was loaded at.
    #[serde(default)]
    pub redaction_epoch: i64,
    /// The position of the latest path redaction's boundary: a restore from a revision
    /// before it is refused (`SUPABASH_RESTORE_CROSSES_REDACTION`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_floor: Option<i64>,
    /// Present (`true`) when the workspace stores plain files only (see
    /// `CreateWorkspace::files_only`): what the opened workspace's capabilities report.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub files_only: bool,
}

/// `supabash_load_document`: one file with its body, and the revision it was read at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    #[serde(flatten)]
    pub file: File,
    pub revision: Option<String>,
}

/// `supabash_load_documents`: the files asked for that the revision holds, with their bodies
/// (tombstones without), in path order; the paths it does not hold; the revision read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Documents {
    pub files: Vec<File>,
    pub missing: Vec<String>,
    pub revision: Option<String>,
}

/// `supabash_load_revision`: a revision's receipt and its files with bodies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevisionTree {
    pub receipt: Receipt,
    pub files: Vec<File>,
}

/// `supabash_history`: receipts oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryPage {
    pub records: Vec<Receipt>,
    /// Pass it back for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// The notes on this page's revisions (`super::notes`), by revision, key and version;
    /// absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<super::notes::RevisionNote>,
}

/// `supabash_commit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitResult {
    pub receipt: Receipt,
    /// True when a retry returned the receipt of the first attempt.
    pub replayed: bool,
}

/// What happened to a path between two sides of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffKind {
    Added,
    Deleted,
    Modified,
    /// A deleted and an added path with the same content (see [`crate::moves`]).
    Moved,
}

impl DiffKind {
    /// The wire name, e.g. `moved`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffKind::Added => "added",
            DiffKind::Deleted => "deleted",
            DiffKind::Modified => "modified",
            DiffKind::Moved => "moved",
        }
    }
}

impl std::fmt::Display for DiffKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One diff entry.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffEntry {
    pub kind: DiffKind,
    pub path: String,
    pub from: Option<String>,
    pub before_hash: Option<String>,
    pub after_hash: Option<String>,
    pub preview: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub binary: bool,
    /// Mode and kind on each side, when they are known (a mode-only change is `modified`
    /// with equal hashes and different modes).
    #[serde(default)]
    pub before_mode: Option<u32>,
    #[serde(default)]
    pub after_mode: Option<u32>,
    #[serde(default)]
    pub before_kind: Option<Kind>,
    #[serde(default)]
    pub after_kind: Option<Kind>,
}

/// `supabash_diff`: the labels of both sides (a revision id, `staged`, or null for an empty
/// head) and the entries, by path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub from: Option<String>,
    pub to: Option<String>,
    pub entries: Vec<DiffEntry>,
}

/// A checkpoint: a named pin on a revision that purge keeps.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub checkpoint_id: String,
    pub revision: String,
    pub label: Option<String>,
    pub retention_class: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at: String,
    /// True when an idempotent retry of `supabash_checkpoint` returned an existing checkpoint.
    #[serde(default)]
    pub replayed: bool,
}

/// `supabash_delete_checkpoint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointDeleted {
    pub checkpoint_id: String,
    pub deleted: bool,
}

/// `supabash_purge`: what went (or would go, on a dry run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurgeReport {
    pub dry_run: bool,
    pub revisions: Vec<String>,
    pub entries: i64,
    pub bodies: i64,
    pub bytes: i64,
}

/// `supabash_redact`: what was (or, on a dry run, would be) redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RedactReport {
    /// The audit record's id (also on a dry run, where nothing is recorded).
    pub redaction_id: String,
    pub dry_run: bool,
    /// The revisions before the boundary that showed a redacted version (or, when only
    /// metadata was scrubbed, every revision before it), oldest first.
    pub revisions: Vec<String>,
    /// How many stored versions became tombstones.
    pub versions: i64,
    /// The bodies removed from the database (hex SHA-256).
    pub bodies: Vec<String>,
    /// Their plain bytes, given back to the owner's usage.
    pub bytes: i64,
    /// The workspace's redaction epoch after the call.
    pub epoch: i64,
    /// Where a selected version's body is still held after the redaction, so its bytes stay
    /// (at most [`MAX_STILL_HELD`]): a fork's own copy at another path, the content a version
    /// keeps from the boundary on, a version a deleted source keeps for a later fork.
    #[serde(default)]
    pub still_held: Vec<HeldBody>,
}

/// Most [`RedactReport::still_held`] entries an answer lists.
pub const MAX_STILL_HELD: i64 = 1000;

/// A body a redaction selected but could not free, and a version that still holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldBody {
    /// Hex SHA-256 of the body.
    pub body_hash: String,
    pub workspace_id: String,
    pub path: String,
    /// The workspace is deleted and kept only for its forks.
    pub deleted: bool,
}

/// `supabash_exchange_capability`: a grant a job presents as `delegated_grant`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub delegated_grant: String,
    pub workspace_id: String,
    pub actor_subject: String,
    pub operations: Vec<String>,
    pub correlation_id: Option<String>,
    pub expires_at: String,
}

/// `supabash_acquire_lease` and `supabash_renew_lease`: the caller's live lease. Times are the
/// database's clock (UTC, as receipts print them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub holder: String,
    /// The lease's secret: present it to renew, release and commit. Never logged.
    pub token: String,
    pub acquired_at: String,
    pub renewed_at: String,
    pub expires_at: String,
    /// True when this acquisition replaced an expired lease (of any holder).
    #[serde(default)]
    pub taken_over: bool,
    /// The workspace head when the lease was written (under the workspace lock): while the
    /// lease lives no one else commits, so a staged tree at this revision is current.
    pub head_revision: Option<String>,
}

/// `supabash_lease`: a live lease as anyone allowed to read the workspace sees it (no token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseState {
    pub holder: String,
    pub acquired_at: String,
    pub renewed_at: String,
    pub expires_at: String,
}

/// `supabash_release_lease`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseReleased {
    /// Whether the token named the live lease until this call.
    pub released: bool,
}

/// `supabash_spend_storage_nonce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageNonce {
    /// True when the nonce was unused and is now spent; false when it had been spent before
    /// (the capability is a replay).
    pub consumed: bool,
}

//! Integrity: `supabash_verify` (does a workspace's stored history hold together?) and
//! `supabash_garbage` (orphan bodies and idle workspaces of the caller). Both report; only
//! `supabash_garbage` with `apply` deletes, and only orphan bodies.

use super::declare::WorkspaceRequest;
use super::Rpc;
use crate::capability::Operation;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Most problems one verify answer lists; past it the answer says `truncated` (the count
/// still covers every problem found).
pub const MAX_LISTED_PROBLEMS: usize = 1000;

/// Most orphan bodies one garbage answer lists (the counts cover all of them).
pub const MAX_LISTED_ORPHANS: usize = 1000;

/// Most idle workspaces one garbage answer lists (the count covers all of them).
pub const MAX_LISTED_IDLE: usize = 1000;

/// The default idleness threshold of `supabash_garbage`, in days.
pub const DEFAULT_IDLE_DAYS: i32 = 30;

/// The largest idleness threshold `supabash_garbage` accepts, in days (a hundred years).
pub const MAX_IDLE_DAYS: i32 = 36_500;

/// `supabash_verify`: checks a workspace without changing anything (the owner, or a delegated
/// grant with `history`). Read-only: it works on a hot standby.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    pub workspace_id: String,
    pub delegated_grant: Option<String>,
}

impl Rpc for Verify {
    const NAME: &'static str = "supabash_verify";
    const MUTATES: bool = false;
    type Answer = VerifyReport;
}

impl WorkspaceRequest for Verify {
    const NEEDS: &'static [Operation] = &[Operation::History];
    fn workspace_id(&self) -> &str {
        &self.workspace_id
    }
    fn delegated_grant(&self) -> Option<&str> {
        self.delegated_grant.as_deref()
    }
}

/// `supabash_garbage`: the caller's orphan bodies (stored, referenced by no entry of their
/// fork family) and workspaces idle for at least `idle_days`. A dry run unless `apply`, which
/// deletes the orphan bodies (idle workspaces are only reported). A mutation because of
/// `apply`, so it runs on the primary only.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Garbage {
    /// Days without a commit (or fork, redaction) after which a workspace counts as idle
    /// (default [`DEFAULT_IDLE_DAYS`], 0 to [`MAX_IDLE_DAYS`]).
    pub idle_days: Option<i32>,
    /// Delete the orphan bodies (default false: report only).
    pub apply: Option<bool>,
}

impl Rpc for Garbage {
    const NAME: &'static str = "supabash_garbage";
    const MUTATES: bool = true;
    type Answer = GarbageReport;
}

/// What `supabash_verify` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    pub workspace_id: String,
    /// True exactly when no problem was found.
    pub ok: bool,
    pub checked: Checked,
    /// How many problems were found (all of them, listed or not).
    pub problem_count: i64,
    /// Every problem found, up to [`MAX_LISTED_PROBLEMS`], in the order they were found.
    pub problems: Vec<Problem>,
    /// True when more problems were found than listed.
    pub truncated: bool,
}

/// How much a verify looked at.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    /// Entry rows: the workspace's own (every version) and, for a fork, those it reads from
    /// its sources.
    pub entries: i64,
    /// Stored bodies of the workspace's body store (its fork family's), each decoded and hashed.
    pub bodies: i64,
    pub revisions: i64,
    /// Receipts whose lines were decoded and compared with the entries.
    pub receipts: i64,
}

/// One thing that does not hold together.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub kind: ProblemKind,
    pub path: Option<String>,
    pub revision: Option<String>,
    pub position: Option<i64>,
    /// A body or content hash (hex SHA-256).
    pub hash: Option<String>,
    pub detail: String,
}

impl Problem {
    /// A problem of `kind`, located by the setters below.
    pub fn new(kind: ProblemKind, detail: impl Into<String>) -> Self {
        Problem {
            kind,
            path: None,
            revision: None,
            position: None,
            hash: None,
            detail: detail.into(),
        }
    }

    pub fn at_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    pub fn at_revision(mut self, revision: impl Into<String>, position: i64) -> Self {
        self.revision = Some(revision.into());
        self.position = Some(position);
        self
    }

    pub fn at_position(mut self, position: i64) -> Self {
        self.position = Some(position);
        self
    }

    /// The hash as raw SHA-256 bytes (shown in hex).
    pub fn with_hash(mut self, hash: &[u8]) -> Self {
        self.hash = Some(hex::encode(hash));
        self
    }
}

/// The kinds of problem `supabash_verify` reports (docs/operations.md describes each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProblemKind {
    /// An entry names a body its store does not hold.
    BodyMissing,
    /// A stored body's bytes do not decode (unknown codec, broken frame, delta without base).
    BodyUnreadable,
    /// A stored body decodes to bytes whose SHA-256 is not its hash.
    BodyHashMismatch,
    /// A stored body decodes to another length than its recorded size.
    BodySizeMismatch,
    /// An entry's body size differs from the stored body's.
    EntrySizeMismatch,
    /// A delta's base is not in the store.
    DeltaBaseMissing,
    /// A delta sits on a base that is itself damaged, so it cannot be read.
    DeltaBaseBroken,
    /// A delta sits on more deltas than any commit stores.
    DeltaChainTooLong,
    /// An entry row's interval is impossible: after the head, or overlapping another version
    /// of its path.
    EntryInterval,
    /// A revision's parent link is wrong: dangling (neither stored nor purged), or not the
    /// revision before it.
    RevisionParent,
    /// A revision's position is impossible (below 1, after the head, or not after its parent's).
    RevisionPosition,
    /// The workspace's head revision or head position is not its last revision.
    HeadMismatch,
    /// A receipt's stored lines do not decode.
    ReceiptUnreadable,
    /// A receipt does not match the entries it describes, or entries changed at a revision
    /// whose receipt does not mention them.
    ReceiptMismatch,
}

impl ProblemKind {
    /// The wire name, e.g. `body_missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::BodyMissing => "body_missing",
            ProblemKind::BodyUnreadable => "body_unreadable",
            ProblemKind::BodyHashMismatch => "body_hash_mismatch",
            ProblemKind::BodySizeMismatch => "body_size_mismatch",
            ProblemKind::EntrySizeMismatch => "entry_size_mismatch",
            ProblemKind::DeltaBaseMissing => "delta_base_missing",
            ProblemKind::DeltaBaseBroken => "delta_base_broken",
            ProblemKind::DeltaChainTooLong => "delta_chain_too_long",
            ProblemKind::EntryInterval => "entry_interval",
            ProblemKind::RevisionParent => "revision_parent",
            ProblemKind::RevisionPosition => "revision_position",
            ProblemKind::HeadMismatch => "head_mismatch",
            ProblemKind::ReceiptUnreadable => "receipt_unreadable",
            ProblemKind::ReceiptMismatch => "receipt_mismatch",
        }
    }
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `supabash_garbage` found (and, with `apply`, deleted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GarbageReport {
    /// True unless `apply` was given.
    pub dry_run: bool,
    pub idle_days: i32,
    /// How many orphan bodies the caller's stores hold (before deletion, with `apply`).
    pub orphan_bodies: i64,
    /// Their plain bytes.
    pub orphan_bytes: i64,
    /// The orphans, up to [`MAX_LISTED_ORPHANS`].
    pub orphans: Vec<Orphan>,
    /// With `apply`: how many bodies were deleted and their plain bytes (0 on a dry run).
    pub deleted_bodies: i64,
    pub deleted_bytes: i64,
    /// How many of the caller's workspaces are idle for at least `idle_days`.
    pub idle_count: i64,
    /// Those workspaces, least recently changed first, up to [`MAX_LISTED_IDLE`].
    pub idle_workspaces: Vec<IdleWorkspace>,
}

/// A stored body nothing references.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Orphan {
    /// The body store (the fork family's first workspace id).
    pub store_id: String,
    /// Hex SHA-256 of the plain bytes.
    pub hash: String,
    pub size: i64,
}

/// A workspace nothing changed for a while.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleWorkspace {
    pub workspace_id: String,
    pub label: Option<String>,
    pub head_position: Option<i64>,
    /// When it last changed (UTC, as receipts print times).
    pub updated_at: String,
    /// Whole days since then.
    pub idle_days: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::params_of;

    #[test]
    fn requests_have_the_sql_parameters() {
        let names = |p: Vec<crate::rpc::Param>| -> Vec<(&str, bool)> {
            p.into_iter().map(|p| (p.name, p.optional)).collect()
        };
        assert_eq!(
            names(params_of::<Verify>()),
            [("workspace_id", false), ("delegated_grant", true)]
        );
        assert_eq!(
            names(params_of::<Garbage>()),
            [("idle_days", true), ("apply", true)]
        );
    }

    #[test]
    fn problems_serialise_without_absent_fields() {
        let p = Problem {
            kind: ProblemKind::BodyMissing,
            path: Some("/a".into()),
            revision: None,
            position: Some(3),
            hash: None,
            detail: "x".into(),
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"kind": "body_missing", "path": "/a", "position": 3, "detail": "x"})
        );
        let kind: ProblemKind = serde_json::from_str("\"receipt_mismatch\"").unwrap();
        assert_eq!(kind.as_str(), "receipt_mismatch");
    }
}

//! The request of every public RPC: its fields are the SQL function's parameters, in order.
//! `Option` fields are omitted when `None` and take the SQL default (the signature test checks
//! that every `Option` parameter has one and no other does).

use super::answers;
use super::changes::{StagedDocument, WireChange};
use super::Rpc;
use crate::limits::{check_object, check_text, FieldError};
use crate::limits::{MAX_CAUSE_BYTES, MAX_COMMIT_METADATA_BYTES, MAX_LABEL_BYTES};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Longest retention class of a checkpoint, in bytes.
pub const MAX_RETENTION_CLASS_BYTES: usize = 255;

/// A request about one workspace, optionally presenting a delegated grant.
pub trait WorkspaceRequest {
    fn workspace_id(&self) -> &str;
    fn delegated_grant(&self) -> Option<&str>;
}

macro_rules! rpc {
    ($req:ident, $name:literal, mutates = $m:literal, $answer:ty) => {
        impl Rpc for $req {
            const NAME: &'static str = $name;
            const MUTATES: bool = $m;
            type Answer = $answer;
        }
    };
    ($req:ident, $name:literal, mutates = $m:literal, $answer:ty, workspace) => {
        rpc!($req, $name, mutates = $m, $answer);
        impl WorkspaceRequest for $req {
            fn workspace_id(&self) -> &str {
                &self.workspace_id
            }
            fn delegated_grant(&self) -> Option<&str> {
                self.delegated_grant.as_deref()
            }
        }
    };
}

/// `supabash_create_workspace()`: a new, empty workspace owned by the caller.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkspace {}
rpc!(
    CreateWorkspace,
    "supabash_create_workspace",
    mutates = true,
    answers::WorkspaceCreated
);

/// `supabash_load_manifest`: the head tree without bodies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadManifest {
    pub workspace_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    LoadManifest,
    "supabash_load_manifest",
    mutates = false,
    answers::Tree,
    workspace
);

/// `supabash_load_document`: one file with its body at a revision (default: the head).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadDocument {
    pub workspace_id: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    LoadDocument,
    "supabash_load_document",
    mutates = false,
    answers::Document,
    workspace
);

/// `supabash_load_snapshot`: every file with its body at a revision (default: the head).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSnapshot {
    pub workspace_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    LoadSnapshot,
    "supabash_load_snapshot",
    mutates = false,
    answers::Tree,
    workspace
);

/// `supabash_load_revision`: a revision's receipt and tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadRevision {
    pub workspace_id: String,
    pub revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    LoadRevision,
    "supabash_load_revision",
    mutates = false,
    answers::RevisionTree,
    workspace
);

/// `supabash_history`: receipts oldest first, after `cursor` (a revision id).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    pub workspace_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// Start from the oldest record when the cursor names a purged revision (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_if_missing: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    History,
    "supabash_history",
    mutates = false,
    answers::HistoryPage,
    workspace
);

/// `supabash_commit`: applies `changes` atomically on `base_revision`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commit {
    pub workspace_id: String,
    pub changes: Vec<WireChange>,
    /// Required unless a delegated grant names the actor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_revision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// A JSON object stored with the revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The revision a forward restore came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_revision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    Commit,
    "supabash_commit",
    mutates = true,
    answers::CommitResult,
    workspace
);

impl Commit {
    /// The database's ceilings on the labels and metadata (both sides check them).
    pub fn check_fields(&self) -> Result<(), FieldError> {
        check_text("actor", self.actor.as_deref(), MAX_LABEL_BYTES)?;
        check_text(
            "correlation_id",
            self.correlation_id.as_deref(),
            MAX_LABEL_BYTES,
        )?;
        check_text(
            "idempotency_key",
            self.idempotency_key.as_deref(),
            MAX_LABEL_BYTES,
        )?;
        check_text("cause", self.cause.as_deref(), MAX_CAUSE_BYTES)?;
        check_object(
            "metadata",
            self.metadata.as_ref(),
            MAX_COMMIT_METADATA_BYTES,
        )
    }
}

/// One side of a diff: `{"revision": id}`, `{"checkpoint": id}`, `{"head": true}` (the
/// committed head) or `{"staged": true}` (the staged documents sent along).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffRef {
    Revision(String),
    Checkpoint(String),
    Head,
    Staged,
}

const DIFF_REF_SHAPE: &str =
    "a diff side is {\"revision\": id}, {\"checkpoint\": id}, {\"head\": true} or {\"staged\": true}";

impl Serialize for DiffRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (key, value) = match self {
            DiffRef::Revision(r) => ("revision", Value::from(r.as_str())),
            DiffRef::Checkpoint(c) => ("checkpoint", Value::from(c.as_str())),
            DiffRef::Head => ("head", Value::Bool(true)),
            DiffRef::Staged => ("staged", Value::Bool(true)),
        };
        let mut map = serde_json::Map::new();
        map.insert(key.to_owned(), value);
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for DiffRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let shape = || D::Error::custom(DIFF_REF_SHAPE);
        let map = serde_json::Map::deserialize(d).map_err(|_| shape())?;
        let mut entries = map.into_iter();
        let (Some((key, value)), None) = (entries.next(), entries.next()) else {
            return Err(shape());
        };
        match (key.as_str(), value) {
            ("revision", Value::String(r)) => Ok(DiffRef::Revision(r)),
            ("checkpoint", Value::String(c)) => Ok(DiffRef::Checkpoint(c)),
            ("head", Value::Bool(true)) => Ok(DiffRef::Head),
            ("staged", Value::Bool(true)) => Ok(DiffRef::Staged),
            _ => Err(shape()),
        }
    }
}

/// `supabash_diff`: compares two sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Diff {
    pub workspace_id: String,
    pub from_ref: DiffRef,
    pub to_ref: DiffRef,
    /// Only these paths and what lies below them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Preview bytes per entry; 0 disables previews.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview_bytes: Option<i32>,
    /// The staged tree, when a side is [`DiffRef::Staged`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged: Option<Vec<StagedDocument>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    Diff,
    "supabash_diff",
    mutates = false,
    answers::Diff,
    workspace
);

/// `supabash_checkpoint`: pins a revision (default: the head); idempotent by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub workspace_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    Checkpoint,
    "supabash_checkpoint",
    mutates = true,
    answers::Checkpoint,
    workspace
);

impl Checkpoint {
    /// The database's ceilings on the labels (both sides check them).
    pub fn check_fields(&self) -> Result<(), FieldError> {
        check_text("label", self.label.as_deref(), MAX_CAUSE_BYTES)?;
        check_text(
            "retention_class",
            self.retention_class.as_deref(),
            MAX_RETENTION_CLASS_BYTES,
        )?;
        check_text(
            "idempotency_key",
            self.idempotency_key.as_deref(),
            MAX_LABEL_BYTES,
        )
    }
}

/// `supabash_checkpoints`: every checkpoint, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoints {
    pub workspace_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    Checkpoints,
    "supabash_checkpoints",
    mutates = false,
    Vec<answers::Checkpoint>,
    workspace
);

/// `supabash_delete_checkpoint`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteCheckpoint {
    pub workspace_id: String,
    pub checkpoint_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    DeleteCheckpoint,
    "supabash_delete_checkpoint",
    mutates = true,
    answers::CheckpointDeleted,
    workspace
);

/// `supabash_purge`: drops old revisions. With neither rule the newest 50 are kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Purge {
    pub workspace_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_revisions: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age_seconds: Option<i64>,
    /// Revisions at or after this one are kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_revision: Option<String>,
    /// Report without removing anything (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_grant: Option<String>,
}
rpc!(
    Purge,
    "supabash_purge",
    mutates = true,
    answers::PurgeReport,
    workspace
);

/// `supabash_exchange_capability` (service_role only): spends the capability's nonce and mints
/// a grant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeCapability {
    pub capability: String,
}
rpc!(
    ExchangeCapability,
    "supabash_exchange_capability",
    mutates = true,
    answers::Grant
);

/// `supabash_register_capability_verifier` (database owner only): registers or rotates a
/// verifier; answers its new secret (unpadded base64url), once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterCapabilityVerifier {
    pub key_id: String,
    pub issuer: String,
    pub audience: String,
    pub origin: String,
    /// Default 60.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_skew_seconds: Option<i32>,
    /// Default 900.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lifetime_seconds: Option<i32>,
}
rpc!(
    RegisterCapabilityVerifier,
    "supabash_register_capability_verifier",
    mutates = true,
    String
);

/// `supabash_revoke_capability_verifier` (database owner only): removes a verifier, its
/// secret and its grants; answers whether it existed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeCapabilityVerifier {
    pub key_id: String,
}
rpc!(
    RevokeCapabilityVerifier,
    "supabash_revoke_capability_verifier",
    mutates = true,
    bool
);

//! The request of every public RPC: its fields are the SQL function's parameters, in order.
//! `Option` fields are omitted when `None` and take the SQL default (the signature test checks
//! that every `Option` parameter has one and no other does).

use super::answers;
use super::changes::{StagedDocument, WireChange};
pub use super::declare::WorkspaceRequest;
use super::declare::{request, rpc};
use super::Rpc;
use crate::capability::Operation;
use crate::limits::{check_object, check_texts, FieldError};
use crate::limits::{MAX_CAUSE_BYTES, MAX_COMMIT_METADATA_BYTES, MAX_LABEL_BYTES};
use crate::limits::{MAX_LEASE_HOLDER_BYTES, MAX_LEASE_TTL_SECONDS, MIN_LEASE_TTL_SECONDS};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// Longest retention class of a checkpoint, in bytes.
pub const MAX_RETENTION_CLASS_BYTES: usize = 255;

request! {
    "supabash_create_workspace", mutates = true, answers::WorkspaceCreated;
    /// `supabash_create_workspace`: a new, empty workspace owned by the caller.
    pub struct CreateWorkspace {
        /// A name for people (1 to 256 bytes), shown by `supabash_list_workspaces`.
        pub label: Option<String>,
        /// `true`: the workspace stores plain files only (the seed's text-only behaviour): a
        /// commit holding a symbolic link, a directory entry or a mode other than
        /// [`crate::posix::Kind::default_mode`] of a file (`0o644`) is refused whole with
        /// `UNSUPPORTED_CONTENT`. Fixed at creation; forks inherit it. Default `false`.
        pub files_only: Option<bool>,
    }
}

request! {
    "supabash_fork", mutates = true, answers::WorkspaceForked, workspace = [Fork];
    /// `supabash_fork`: a new workspace of the same owner whose first revision's tree is this
    /// one's at `revision` (default: the head). Copies no bodies and no entries.
    pub struct Fork {
        pub workspace_id: String,
        pub revision: Option<String>,
        pub label: Option<String>,
        /// Recorded on the fork's first revision (required unless delegated).
        pub actor: Option<String>,
        pub cause: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_delete_workspace", mutates = true, answers::WorkspaceDeleted;
    /// `supabash_delete_workspace` (the owner only): removes a workspace, its history and
    /// every body nothing else needs; what its forks still read is kept for them.
    pub struct DeleteWorkspace {
        pub workspace_id: String,
    }
}

impl WorkspaceRequest for DeleteWorkspace {
    /// None: deleting is the owner's alone.
    const NEEDS: &'static [Operation] = &[];
    fn workspace_id(&self) -> &str {
        &self.workspace_id
    }
    /// Never: deleting is the owner's alone.
    fn delegated_grant(&self) -> Option<&str> {
        None
    }
}

request! {
    "supabash_list_workspaces", mutates = false, answers::WorkspacePage;
    /// `supabash_list_workspaces`: the caller's workspaces, oldest first, a page at a time. The
    /// cursor is the id of the last workspace of the previous page.
    pub struct ListWorkspaces {
        pub cursor: Option<String>,
        pub page_size: Option<i32>,
    }
}

request! {
    "supabash_load_manifest", mutates = false, answers::Tree<super::ManifestFile>, workspace = [Read];
    /// `supabash_load_manifest`: the tree without bodies at a revision (default: the head).
    pub struct LoadManifest {
        pub workspace_id: String,
        pub revision: Option<String>,
        pub delegated_grant: Option<String>,
        /// `true`: each file in the compact form (see [`super::ManifestFile`]), about half
        /// the bytes of a manifest. Default `false`.
        pub compact: Option<bool>,
    }
}

request! {
    "supabash_load_document", mutates = false, answers::Document, workspace = [Read];
    /// `supabash_load_document`: one file with its body at a revision (default: the head).
    pub struct LoadDocument {
        pub workspace_id: String,
        pub path: String,
        pub revision: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_load_documents", mutates = false, answers::Documents, workspace = [Read];
    /// `supabash_load_documents`: many files with their bodies at one revision (default: the
    /// head), in one call: at most [`MAX_DOCUMENTS_PER_CALL`] paths, their plain bytes charged
    /// against `supabash.max_decoded_per_call`. Paths the revision does not hold are answered
    /// as missing, not refused.
    pub struct LoadDocuments {
        pub workspace_id: String,
        pub paths: Vec<String>,
        pub revision: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

/// Most paths one `supabash_load_documents` call may name.
pub const MAX_DOCUMENTS_PER_CALL: usize = 1000;

request! {
    "supabash_load_snapshot", mutates = false, answers::Tree, workspace = [Read];
    /// `supabash_load_snapshot`: every file with its body at a revision (default: the head).
    pub struct LoadSnapshot {
        pub workspace_id: String,
        pub revision: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_load_revision", mutates = false, answers::RevisionTree, workspace = [History, Restore];
    /// `supabash_load_revision`: a revision's receipt and tree.
    pub struct LoadRevision {
        pub workspace_id: String,
        pub revision: String,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_history", mutates = false, answers::HistoryPage, workspace = [History];
    /// `supabash_history`: receipts oldest first, after `cursor` (a revision id).
    pub struct History {
        pub workspace_id: String,
        pub cursor: Option<String>,
        pub page_size: Option<i32>,
        /// Start from the oldest record when the cursor names a purged revision (default false).
        pub restart_if_missing: Option<bool>,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_commit", mutates = true, answers::CommitResult, workspace = [Commit];
    /// `supabash_commit`: applies `changes` atomically on `base_revision`.
    pub struct Commit {
        pub workspace_id: String,
        pub changes: Vec<WireChange>,
        /// Required unless a delegated grant names the actor.
        pub actor: Option<String>,
        pub base_revision: Option<String>,
        pub transaction_id: Option<String>,
        pub correlation_id: Option<String>,
        pub idempotency_key: Option<String>,
        pub cause: Option<String>,
        /// A JSON object stored with the revision.
        pub metadata: Option<Value>,
        /// The revision a forward restore came from.
        pub source_revision: Option<String>,
        /// Apply on top of the head when it moved past `base_revision`, if no path this commit
        /// touches changed in between (default false: strict compare-and-swap).
        pub rebase: Option<bool>,
        pub delegated_grant: Option<String>,
        /// The token of the caller's live lease; required while the workspace is leased.
        pub lease: Option<String>,
        /// The workspace's redaction epoch when the staged tree was loaded (manifest and
        /// snapshot answers carry it); null is accepted only while the workspace was never
        /// redacted.
        pub redaction_epoch: Option<i64>,
        /// The audit actions that led to this commit (`super::audit`), written in its
        /// transaction; a replayed commit writes none again.
        pub audit: Option<Vec<super::audit::Action>>,
    }
}

impl Commit {
    /// The database's ceilings on the labels and metadata (both sides check them).
    pub fn check_fields(&self) -> Result<(), FieldError> {
        check_texts(&[
            ("actor", self.actor.as_deref(), MAX_LABEL_BYTES),
            (
                "correlation_id",
                self.correlation_id.as_deref(),
                MAX_LABEL_BYTES,
            ),
            (
                "idempotency_key",
                self.idempotency_key.as_deref(),
                MAX_LABEL_BYTES,
            ),
            ("cause", self.cause.as_deref(), MAX_CAUSE_BYTES),
        ])?;
        check_object(
            "metadata",
            self.metadata.as_ref(),
            MAX_COMMIT_METADATA_BYTES,
        )?;
        super::audit::check_actions(self.audit.as_deref().unwrap_or_default())
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
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Diff {
    pub workspace_id: String,
    pub from_ref: DiffRef,
    pub to_ref: DiffRef,
    /// Only these paths and what lies below them.
    pub paths: Option<Vec<String>>,
    /// Preview bytes per entry; 0 disables previews.
    pub preview_bytes: Option<i32>,
    /// The staged tree, when a side is [`DiffRef::Staged`].
    pub staged: Option<Vec<StagedDocument>>,
    pub delegated_grant: Option<String>,
}
rpc!(
    Diff,
    "supabash_diff",
    mutates = false,
    answers::Diff,
    workspace = [History]
);

request! {
    "supabash_checkpoint", mutates = true, answers::Checkpoint, workspace = [Checkpoint];
    /// `supabash_checkpoint`: pins a revision (default: the head); idempotent by key.
    pub struct Checkpoint {
        pub workspace_id: String,
        pub label: Option<String>,
        pub retention_class: Option<String>,
        pub idempotency_key: Option<String>,
        pub revision: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

impl Checkpoint {
    /// The database's ceilings on the labels (both sides check them).
    pub fn check_fields(&self) -> Result<(), FieldError> {
        check_texts(&[
            ("label", self.label.as_deref(), MAX_CAUSE_BYTES),
            (
                "retention_class",
                self.retention_class.as_deref(),
                MAX_RETENTION_CLASS_BYTES,
            ),
            (
                "idempotency_key",
                self.idempotency_key.as_deref(),
                MAX_LABEL_BYTES,
            ),
        ])
    }
}

request! {
    "supabash_checkpoints", mutates = false, Vec<answers::Checkpoint>, workspace = [Checkpoint];
    /// `supabash_checkpoints`: every checkpoint, oldest first.
    pub struct Checkpoints {
        pub workspace_id: String,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_delete_checkpoint", mutates = true, answers::CheckpointDeleted, workspace = [Checkpoint];
    /// `supabash_delete_checkpoint`.
    pub struct DeleteCheckpoint {
        pub workspace_id: String,
        pub checkpoint_id: String,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_purge", mutates = true, answers::PurgeReport, workspace = [Purge];
    /// `supabash_purge`: drops old revisions. With neither rule the newest 50 are kept.
    pub struct Purge {
        pub workspace_id: String,
        pub keep_revisions: Option<i32>,
        pub max_age_seconds: Option<i64>,
        /// Revisions at or after this one are kept.
        pub floor_revision: Option<String>,
        /// Report without removing anything (default false).
        pub dry_run: Option<bool>,
        pub delegated_grant: Option<String>,
        /// Also remove the audit records purge keeps by default (denied and discarded actions,
        /// and those of delegated actors) with their revisions. The owner's alone: a delegated
        /// grant asking for it is refused.
        pub purge_audit: Option<bool>,
    }
}

request! {
    "supabash_redact", mutates = true, answers::RedactReport, workspace = [Redact];
    /// `supabash_redact`: removes content from history for good: the versions before the
    /// boundary (default: the head; exclusive) at `paths` (exact) or with `body_hashes` (hex
    /// SHA-256 of the bytes) become tombstones, and the bytes leave the database.
    pub struct Redact {
        pub workspace_id: String,
        pub paths: Option<Vec<String>>,
        pub body_hashes: Option<Vec<String>>,
        pub before_revision: Option<String>,
        /// Report without changing anything (default false).
        pub dry_run: Option<bool>,
        pub reason: Option<String>,
        /// Keys removed from the metadata of the selected revisions.
        pub metadata_keys: Option<Vec<String>>,
        /// Clears the cause of the selected revisions (default false).
        pub clear_cause: Option<bool>,
        pub delegated_grant: Option<String>,
    }
}

impl Redact {
    /// The database's ceilings on the labels (both sides check them).
    pub fn check_fields(&self) -> Result<(), FieldError> {
        check_texts(&[("reason", self.reason.as_deref(), MAX_CAUSE_BYTES)])
    }
}

request! {
    "supabash_exchange_capability", mutates = true, answers::Grant;
    /// `supabash_exchange_capability` (service_role only): spends the capability's nonce and mints
    /// a grant.
    pub struct ExchangeCapability {
        pub capability: String,
    }
}

request! {
    "supabash_register_capability_verifier", mutates = true, Option<String>;
    /// `supabash_register_capability_verifier` (database owner only): registers or rotates a
    /// verifier, ending the grants of its previous registration. With `public_key` (an Ed25519
    /// key the issuer generated) it answers null; without, it answers a new private key
    /// (unpadded base64url), once. The database stores only the public key.
    pub struct RegisterCapabilityVerifier {
        pub key_id: String,
        pub issuer: String,
        pub audience: String,
        pub origin: String,
        /// Default 60.
        pub clock_skew_seconds: Option<i32>,
        /// Default 900.
        pub max_lifetime_seconds: Option<i32>,
        /// 32 bytes, unpadded base64url; default: generate a pair.
        pub public_key: Option<String>,
        /// `EdDSA` (the default) or `HS256` (the TypeScript package's tokens: the answer is
        /// then the derived secret, once; needs `supabash.capability_key_file`, docs/capabilities.md).
        pub algorithm: Option<String>,
    }
}

request! {
    "supabash_spend_storage_nonce", mutates = true, answers::StorageNonce;
    /// `supabash_spend_storage_nonce` (service_role only): marks a Storage capability's nonce
    /// used until `keep_until`, so every host process sharing the database accepts the
    /// capability once (docs/storage.md, "Capabilities across processes").
    pub struct SpendStorageNonce {
        /// The capability's `nonce` claim (`capability::NONCE_CHARS` of `[A-Za-z0-9_-]`).
        pub nonce: String,
        /// Unix seconds until which the nonce is remembered: at most
        /// `capability::MAX_STORAGE_NONCE_KEEP_SECS` past the database's clock.
        pub keep_until: i64,
    }
}

impl SpendStorageNonce {
    /// The shape rules both sides check (the clock bound is the database's): what is wrong,
    /// when something is.
    pub fn check_fields(&self) -> Result<(), &'static str> {
        if !crate::capability::nonce_is_valid(&self.nonce) {
            return Err("nonce must be 16 to 128 characters of [A-Za-z0-9_-]");
        }
        if self.keep_until < 0 {
            return Err("keep_until must not be negative");
        }
        Ok(())
    }
}

request! {
    "supabash_revoke_capability_verifier", mutates = true, bool;
    /// `supabash_revoke_capability_verifier` (database owner only): removes a verifier and its
    /// grants; answers whether it existed.
    pub struct RevokeCapabilityVerifier {
        pub key_id: String,
    }
}

request! {
    "supabash_acquire_lease", mutates = true, answers::Lease, workspace = [Commit];
    /// `supabash_acquire_lease`: takes the workspace's single-writer lease for `holder`, or
    /// replaces an expired one. While the lease lives, acquiring it again (any holder name)
    /// needs its `token` and answers a fresh one; the holder name alone proves nothing.
    pub struct AcquireLease {
        pub workspace_id: String,
        pub holder: String,
        pub ttl_seconds: i32,
        pub delegated_grant: Option<String>,
        /// The live lease's token, to re-acquire it while it lives.
        pub token: Option<String>,
    }
}

impl AcquireLease {
    /// The holder and TTL rules (both sides check them).
    pub fn check_fields(&self) -> Result<(), LeaseFieldError> {
        check_holder(&self.holder)?;
        check_ttl(self.ttl_seconds)
    }
}

request! {
    "supabash_renew_lease", mutates = true, answers::Lease, workspace = [Commit];
    /// `supabash_renew_lease`: extends the live lease `token` names by `ttl_seconds` from now.
    pub struct RenewLease {
        pub workspace_id: String,
        pub token: String,
        pub ttl_seconds: i32,
        pub delegated_grant: Option<String>,
    }
}

impl RenewLease {
    /// The TTL rule (both sides check it).
    pub fn check_fields(&self) -> Result<(), LeaseFieldError> {
        check_ttl(self.ttl_seconds)
    }
}

request! {
    "supabash_release_lease", mutates = true, answers::LeaseReleased, workspace = [Commit];
    /// `supabash_release_lease`: ends the lease `token` names (a no-op for any other token).
    pub struct ReleaseLease {
        pub workspace_id: String,
        pub token: String,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_lease", mutates = false, Option<answers::LeaseState>, workspace = [Read, Commit];
    /// `supabash_lease`: the live lease (holder and times, never its token), or null.
    pub struct LeaseInfo {
        pub workspace_id: String,
        pub delegated_grant: Option<String>,
    }
}

/// A lease field outside its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseFieldError {
    /// The holder id is empty, longer than [`MAX_LEASE_HOLDER_BYTES`] or holds a control
    /// character.
    Holder,
    /// The TTL is outside [`MIN_LEASE_TTL_SECONDS`]..=[`MAX_LEASE_TTL_SECONDS`].
    Ttl(i32),
}

impl std::fmt::Display for LeaseFieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeaseFieldError::Holder => write!(
                f,
                "holder must be 1 to {MAX_LEASE_HOLDER_BYTES} bytes without control characters"
            ),
            LeaseFieldError::Ttl(t) => write!(
                f,
                "ttl_seconds must be {MIN_LEASE_TTL_SECONDS} to {MAX_LEASE_TTL_SECONDS}, not {t}"
            ),
        }
    }
}

impl std::error::Error for LeaseFieldError {}

fn check_holder(holder: &str) -> Result<(), LeaseFieldError> {
    let ok = !holder.is_empty()
        && holder.len() <= MAX_LEASE_HOLDER_BYTES
        && !holder.chars().any(char::is_control);
    ok.then_some(()).ok_or(LeaseFieldError::Holder)
}

fn check_ttl(ttl: i32) -> Result<(), LeaseFieldError> {
    (MIN_LEASE_TTL_SECONDS..=MAX_LEASE_TTL_SECONDS)
        .contains(&ttl)
        .then_some(())
        .ok_or(LeaseFieldError::Ttl(ttl))
}

#[cfg(test)]
mod lease_tests {
    use super::*;
    use proptest::prelude::*;

    fn acquire(holder: &str, ttl: i32) -> AcquireLease {
        AcquireLease {
            workspace_id: "w".into(),
            holder: holder.into(),
            ttl_seconds: ttl,
            delegated_grant: None,
            token: None,
        }
    }

    #[test]
    fn bounds() {
        assert!(acquire("host-1", 1).check_fields().is_ok());
        assert!(acquire("host-1", 3600).check_fields().is_ok());
        assert_eq!(acquire("h", 0).check_fields(), Err(LeaseFieldError::Ttl(0)));
        assert_eq!(
            acquire("h", 3601).check_fields(),
            Err(LeaseFieldError::Ttl(3601))
        );
        assert_eq!(acquire("", 10).check_fields(), Err(LeaseFieldError::Holder));
        assert_eq!(
            acquire("a\nb", 10).check_fields(),
            Err(LeaseFieldError::Holder)
        );
        assert!(acquire(&"x".repeat(256), 10).check_fields().is_ok());
        assert!(acquire(&"x".repeat(257), 10).check_fields().is_err());
    }

    proptest! {
        #[test]
        fn holder_rule_is_length_and_control_characters(h in "\\PC{0,300}", ttl in any::<i32>()) {
            let ok = !h.is_empty() && h.len() <= 256;
            let ttl_ok = (1..=3600).contains(&ttl);
            let got = acquire(&h, ttl).check_fields();
            prop_assert_eq!(got.is_ok(), ok && ttl_ok);
        }
    }
}

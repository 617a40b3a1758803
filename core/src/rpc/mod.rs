//! The RPC contract: for every public function `supabash_*`, one request type (its parameters)
//! and one answer type, shared by the extension (which decodes requests and encodes answers)
//! and the client (which does the opposite), so a wire shape exists once.

mod answers;
pub mod audit;
pub mod body;
mod changes;
mod declare;
pub mod grep;
pub mod listing;
pub mod manifest_changes;
mod manifest_file;
pub mod manifest_text;
pub mod notes;
mod params;
pub mod path_history;
mod receipt;
pub mod requests;
pub mod verify;
pub mod watch;

pub use answers::*;
pub use changes::{parse_changes, Change, ChangeError, Content, Op, StagedDocument, WireChange};
pub use listing::DirectoryPage;
pub use manifest_file::ManifestFile;
pub use params::{params_of, Param};
pub use receipt::{ForkedFrom, Receipt, ReceiptLine};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// One public RPC: the request type names the SQL function and says whether it writes.
pub trait Rpc: Serialize + DeserializeOwned {
    /// The SQL function in schema `public`.
    const NAME: &'static str;
    /// Whether the call writes (or spends something, like a capability's nonce): a lost
    /// answer to it leaves the outcome unknown.
    const MUTATES: bool;
    /// What the call answers.
    type Answer: Serialize + DeserializeOwned;
}

/// Whether the RPC named `name` writes; unknown names count as writing (the safe answer for
/// retries).
pub fn mutates(name: &str) -> bool {
    catalog()
        .iter()
        .find(|r| r.name == name)
        .is_none_or(|r| r.mutates)
}

/// What the catalog knows of one RPC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcInfo {
    pub name: &'static str,
    pub mutates: bool,
    pub params: Vec<Param>,
}

impl RpcInfo {
    fn of<R: Rpc>() -> Self {
        RpcInfo {
            name: R::NAME,
            mutates: R::MUTATES,
            params: params_of::<R>(),
        }
    }
}

/// Every public RPC (the signature test compares it with `pg_proc`).
pub fn catalog() -> Vec<RpcInfo> {
    use requests::*;
    vec![
        RpcInfo::of::<CreateWorkspace>(),
        RpcInfo::of::<Fork>(),
        RpcInfo::of::<DeleteWorkspace>(),
        RpcInfo::of::<ListWorkspaces>(),
        RpcInfo::of::<LoadManifest>(),
        RpcInfo::of::<LoadDocument>(),
        RpcInfo::of::<LoadSnapshot>(),
        RpcInfo::of::<LoadDocuments>(),
        RpcInfo::of::<LoadRevision>(),
        RpcInfo::of::<History>(),
        RpcInfo::of::<listing::ListDirectory>(),
        RpcInfo::of::<Commit>(),
        RpcInfo::of::<Diff>(),
        RpcInfo::of::<Checkpoint>(),
        RpcInfo::of::<Checkpoints>(),
        RpcInfo::of::<DeleteCheckpoint>(),
        RpcInfo::of::<Purge>(),
        RpcInfo::of::<Redact>(),
        RpcInfo::of::<ExchangeCapability>(),
        RpcInfo::of::<RegisterCapabilityVerifier>(),
        RpcInfo::of::<RevokeCapabilityVerifier>(),
        RpcInfo::of::<SpendStorageNonce>(),
        RpcInfo::of::<AcquireLease>(),
        RpcInfo::of::<RenewLease>(),
        RpcInfo::of::<ReleaseLease>(),
        RpcInfo::of::<LeaseInfo>(),
        RpcInfo::of::<audit::RecordDiscarded>(),
        RpcInfo::of::<audit::Audit>(),
        RpcInfo::of::<audit::AuditRows>(),
        RpcInfo::of::<verify::Verify>(),
        RpcInfo::of::<verify::Garbage>(),
        RpcInfo::of::<path_history::PathHistory>(),
        RpcInfo::of::<grep::Grep>(),
        RpcInfo::of::<notes::AddNote>(),
        RpcInfo::of::<notes::Notes>(),
        RpcInfo::of::<watch::MayWatch>(),
        RpcInfo::of::<manifest_changes::ManifestChangesSince>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_names_each_rpc_once() {
        let mut names: Vec<_> = catalog().into_iter().map(|r| r.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        assert!(names.iter().all(|n| n.starts_with("supabash_")));
    }

    #[test]
    fn a_storage_nonce_spend_checks_its_fields() {
        let spend = |nonce: &str, keep_until| requests::SpendStorageNonce {
            nonce: nonce.to_owned(),
            keep_until,
        };
        assert!(spend("0123456789abcdef", 0).check_fields().is_ok());
        assert!(spend(&"A-_z".repeat(32), 1).check_fields().is_ok());
        for bad in [
            "0123456789abcde",
            "0123456789abcde!",
            "0123456789 abcdef",
            "",
        ] {
            assert!(spend(bad, 1).check_fields().is_err(), "{bad:?}");
        }
        assert!(spend(&"a".repeat(129), 1).check_fields().is_err());
        assert!(spend("0123456789abcdef", -1).check_fields().is_err());
        assert!(mutates("supabash_spend_storage_nonce"));
    }

    #[test]
    fn spending_a_capability_is_a_mutation() {
        assert!(mutates("supabash_exchange_capability"));
        assert!(mutates("supabash_commit"));
        assert!(mutates("supabash_unknown"));
        assert!(!mutates("supabash_history"));
        assert!(mutates("supabash_acquire_lease") && mutates("supabash_release_lease"));
        assert!(!mutates("supabash_lease"));
    }

    #[test]
    fn absent_options_are_omitted() {
        let r = requests::History {
            workspace_id: "w".into(),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            serde_json::json!({"workspace_id": "w"})
        );
        let d: requests::DiffRef = serde_json::from_str(r#"{"head": true}"#).unwrap();
        assert_eq!(d, requests::DiffRef::Head);
        assert!(serde_json::from_str::<requests::DiffRef>(r#"{"head": false}"#).is_err());
        assert!(serde_json::from_str::<requests::DiffRef>(r#"{"head": true, "x": 1}"#).is_err());
    }
}

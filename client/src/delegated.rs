//! Delegated workspaces: a job without a user session opens one
//! workspace with a Postgres capability (see [`crate::capability::postgres`]) through a
//! service-role transport.
//!
//! [`DelegatedWorkspace::open`] reads the presented claims *unverified*, only to refuse an
//! obviously wrong request before spending the capability's nonce: the operation set must
//! equal the expected one exactly (an extra, missing or repeated operation is
//! `INVALID_CAPABILITY`) and hold `read`. It then exchanges the capability in the database
//! (`supabash_exchange_capability`, which verifies everything and consumes the nonce), checks
//! that the grant it answers is for the same workspace, subject and operations, and opens the
//! workspace with every call carrying the grant. The database enforces the grant on each
//! call; the guard here refuses what the grant does not allow before any call
//! (`AUTHORIZATION`):
//!
//! | method | needs |
//! |---|---|
//! | `fs` reads, `changes`, `committed_snapshot` | `read` |
//! | `commit` | `commit`, and `write` unless the staged changes are exactly what `restore` staged |
//! | `discard` | nothing when clean (or only a restore is staged), else `write` |
//! | `history`, `diff`, `read_revision` | `history` |
//! | `restore` | `restore` |
//! | `checkpoint`, `checkpoints`, `delete_checkpoint` | `checkpoint` |
//! | `purge` | `purge` |
//!
//! `supabash_agent::DelegatedMount::mount` gives an agent a read-only filesystem when the grant lacks
//! `write`. The staged tree itself ([`DelegatedWorkspace::fs`]) takes edits in memory either
//! way; without `write` none of them can be committed or discarded. Commits record the actor
//! `delegated:<subject>`, the grant's correlation id and (set by the database) its verifier's
//! key id, whatever the options say. The grant rides on every call through
//! [`Transport::call_with_grant`]: over PostgREST in a request header, never in a URL.

use crate::audit::AuditPage;
use crate::capability::refused;
use crate::codec::DocumentCodec;
use crate::error::{Result, SupabashError};
use crate::limits::Limits;
use crate::transport::{call, RpcError, Transport};
use crate::tree::{StagedChange, StagedTree};
use crate::workspace::{
    Checkpoint, CheckpointOptions, CommitOptions, Diff, ForkOptions, HistoryPage, Lease,
    LeaseState, PurgeOptions, PurgeReport, RedactOptions, RedactReport, Restored, RevisionTree,
    Snapshot, Workspace,
};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use supabash_core::capability::{
    parse_compact_among, Algorithm, Operation, OperationSet, PostgresClaims, Reason,
    SeedPostgresClaims,
};
use supabash_core::rpc::audit as wire_audit;
use supabash_core::rpc::notes;
use supabash_core::rpc::requests::{self as rq, WorkspaceRequest};
use supabash_core::rpc::requests::{DiffRef, ExchangeCapability};
use supabash_core::rpc::CommitResult;
use supabash_core::rpc::WorkspaceForked;
use supabash_core::ErrorCode;

/// What the database granted, frozen at the exchange: the answer of
/// `supabash_exchange_capability`, never the presented claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    workspace_id: String,
    subject: String,
    operations: OperationSet,
    correlation_id: Option<String>,
    expires_at: String,
}

impl Delegation {
    /// The one workspace the grant opens.
    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }

    /// The capability's subject (the job acting).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The actor every commit records: `delegated:<subject>`.
    pub fn actor(&self) -> String {
        supabash_core::capability::delegated_actor(&self.subject)
    }

    /// The operations the grant allows.
    pub fn operations(&self) -> &OperationSet {
        &self.operations
    }

    /// The correlation id every commit records.
    pub fn correlation_id(&self) -> Option<&str> {
        self.correlation_id.as_deref()
    }

    /// When the grant expires (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, UTC).
    pub fn expires_at(&self) -> &str {
        &self.expires_at
    }
}

/// A transport that adds the grant to every call. Never prints the grant.
struct GrantTransport {
    inner: Arc<dyn Transport>,
    grant: String,
}

#[async_trait::async_trait]
impl Transport for GrantTransport {
    async fn call(&self, rpc: &str, mut args: Map<String, Value>) -> Result<Value, RpcError> {
        args.remove("delegated_grant");
        self.inner.call_with_grant(rpc, args, &self.grant).await
    }

    /// `LISTEN` takes no grant; what a watch reads to catch up (`supabash_history`) does.
    async fn listen(&self, channel: &str) -> Result<Option<crate::transport::Listening>, RpcError> {
        self.inner.listen(channel).await
    }
}

/// The presented claims, read without verifying the signature, if they ask for exactly
/// `expected` (which must hold `read`). An EdDSA token carries this crate's claims; an HS256
/// one the TypeScript package's (schema version 3, `SeedPostgresClaims`), read into the same
/// form.
fn presented_claims(capability: &str, expected: &OperationSet) -> Result<PostgresClaims> {
    let check = || {
        let algs = Algorithm::ALL.map(Algorithm::as_str);
        let compact = parse_compact_among(capability, &algs)?;
        let (claims, operations) = if compact.header.alg == Algorithm::Hs256.as_str() {
            let seed = SeedPostgresClaims::from_map(compact.claims)?;
            let operations = seed.check_shape()?;
            (seed.into_claims(), operations)
        } else {
            let claims = PostgresClaims::from_map(compact.claims)?;
            let operations = claims.check_shape()?;
            (claims, operations)
        };
        if !operations.contains(Operation::Read) || operations != *expected {
            return Err(Reason::Operations.into());
        }
        Ok(claims)
    };
    check().map_err(refused)
}

fn mismatch() -> SupabashError {
    SupabashError::new(
        ErrorCode::InvalidCapability,
        "the database granted something other than the capability asked for",
    )
}

fn denied(needs: &[Operation], granted: &OperationSet) -> SupabashError {
    let needs: Vec<&str> = needs.iter().map(|op| op.as_str()).collect();
    SupabashError::new(
        ErrorCode::Authorization,
        format!(
            "the delegated capability does not allow {} (it allows {})",
            needs.join(" or "),
            granted.to_wire().join(", ")
        ),
    )
}

/// Methods of [`DelegatedWorkspace`] that check that the grant allows what the RPC they call
/// needs (its request type's [`WorkspaceRequest::NEEDS`], declared once in core's contract and
/// checked again by the database), then do what [`Workspace`]'s method of the same name does.
macro_rules! guarded {
    ($($(#[$doc:meta])* $req:ty => fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        $(
            $(#[$doc])*
            pub async fn $name(&self, $($arg: $ty),*) -> Result<$ret> {
                self.require(<$req as WorkspaceRequest>::NEEDS)?;
                self.workspace.$name($($arg),*).await
            }
        )*
    };
}

/// A workspace opened with a capability: every method checks the grant's operations first.
pub struct DelegatedWorkspace {
    workspace: Workspace,
    delegation: Delegation,
    /// The service transport with the grant on every call (for calls `Workspace` makes in a
    /// way a grant cannot follow, such as opening a fork).
    transport: Arc<dyn Transport>,
    /// The changes the last restore staged (committable without `write`).
    restored: Mutex<Option<Vec<StagedChange>>>,
}

impl DelegatedWorkspace {
    /// Exchanges `capability` through `service` (a transport holding the service-role key) and
    /// opens its workspace. `expected` is the exact operation set the caller means to use; a
    /// capability for any other set, or without `read`, is refused with `INVALID_CAPABILITY`
    /// before the exchange, so its nonce stays unspent. The exchange's own refusals are
    /// `INVALID_CAPABILITY` or `EXPIRED_CAPABILITY`.
    pub async fn open(
        service: Arc<dyn Transport>,
        capability: &str,
        expected: &OperationSet,
        limits: Limits,
    ) -> Result<Self> {
        let claims = presented_claims(capability, expected)?;
        let request = ExchangeCapability {
            capability: capability.to_owned(),
        };
        let exchanged = call(service.as_ref(), &request).await?;
        let operations = OperationSet::from_wire(&exchanged.operations).map_err(|_| mismatch())?;
        if exchanged.workspace_id != claims.binding.workspace
            || exchanged.actor_subject != claims.common.sub
            || exchanged.correlation_id != claims.common.cid
            || operations != *expected
        {
            return Err(mismatch());
        }
        let delegation = Delegation {
            workspace_id: exchanged.workspace_id,
            subject: exchanged.actor_subject,
            operations,
            correlation_id: exchanged.correlation_id,
            expires_at: exchanged.expires_at,
        };
        let transport: Arc<dyn Transport> = Arc::new(GrantTransport {
            inner: service,
            grant: exchanged.delegated_grant,
        });
        let workspace =
            Workspace::open(transport.clone(), &delegation.workspace_id, limits).await?;
        Ok(DelegatedWorkspace {
            workspace,
            delegation,
            transport,
            restored: Mutex::default(),
        })
    }

    /// Uses `codec` for commits and diffs (see [`crate::WorkspaceBuilder::codec`]).
    pub fn with_codec(mut self, codec: Arc<dyn DocumentCodec>) -> Self {
        self.workspace = self.workspace.with_codec(codec);
        self
    }

    /// Refuses, before any request, a call the grant allows none of `needs` for.
    fn require(&self, needs: &[Operation]) -> Result<()> {
        if needs
            .iter()
            .any(|op| self.delegation.operations.contains(*op))
        {
            Ok(())
        } else {
            Err(denied(needs, &self.delegation.operations))
        }
    }

    /// Whether the staged changes need `write`: some exist and they are not exactly what the
    /// last restore staged.
    fn needs_write(&self) -> Result<bool> {
        let changes = self.workspace.changes()?;
        let restored = self.restored.lock().expect("restored lock");
        Ok(!changes.is_empty() && restored.as_ref() != Some(&changes))
    }

    /// What the database granted.
    pub fn delegation(&self) -> &Delegation {
        &self.delegation
    }

    /// The workspace id.
    pub fn id(&self) -> &str {
        self.workspace.id()
    }

    /// The staged tree (see the module notes on `write`). An agent should get
    /// `supabash_agent::DelegatedMount::mount` instead, which is read-only without `write`.
    pub fn fs(&self) -> &Arc<StagedTree> {
        self.workspace.fs()
    }

    /// The revision the staged tree is based on.
    pub fn base_revision(&self) -> Option<String> {
        self.workspace.base_revision()
    }

    /// The staged changes against the base revision.
    pub fn changes(&self) -> Result<Vec<StagedChange>> {
        self.workspace.changes()
    }

    /// Throws away staged edits; needs `write` unless clean or only a restore is staged.
    pub async fn discard(&self) -> Result<()> {
        if self.needs_write()? {
            self.require(&[Operation::Write])?;
        }
        self.workspace.discard().await?;
        *self.restored.lock().expect("restored lock") = None;
        Ok(())
    }

    /// Commits (needs `commit`, and `write` for edits other than a staged restore). The actor
    /// and correlation id are the grant's, whatever `options` say.
    pub async fn commit(&self, options: CommitOptions) -> Result<CommitResult> {
        self.require(rq::Commit::NEEDS)?;
        if self.needs_write()? {
            self.require(&[Operation::Write])?;
        }
        let options = CommitOptions {
            actor: self.delegation.actor(),
            correlation_id: self.delegation.correlation_id.clone(),
            ..options
        };
        let result = self.workspace.commit(options).await?;
        *self.restored.lock().expect("restored lock") = None;
        Ok(result)
    }

    guarded! {
        /// One page of history (needs `history`).
        rq::History => fn history(cursor: Option<&str>, page_size: Option<usize>) -> HistoryPage;
        /// Compares two sides (needs `history`).
        rq::Diff => fn diff(from: DiffRef, to: DiffRef, paths: Option<Vec<String>>,
                           preview_bytes: Option<usize>) -> Diff;
        /// An old revision's receipt and files (needs `history` or `restore`).
        rq::LoadRevision => fn read_revision(revision: &str) -> RevisionTree;
        /// The committed tree at the base revision (needs `read`).
        rq::LoadSnapshot => fn committed_snapshot() -> Snapshot;
        /// Pins a revision (needs `checkpoint`).
        rq::Checkpoint => fn checkpoint(options: CheckpointOptions) -> Checkpoint;
        /// Every checkpoint (needs `checkpoint`).
        rq::Checkpoints => fn checkpoints() -> Vec<Checkpoint>;
        /// Deletes a checkpoint (needs `checkpoint`).
        rq::DeleteCheckpoint => fn delete_checkpoint(checkpoint_id: &str) -> ();
        /// Drops old revisions (needs `purge`).
        rq::Purge => fn purge(options: PurgeOptions) -> PurgeReport;
        /// Removes bodies from history (needs `redact`; no other operation implies it).
        rq::Redact => fn redact(options: RedactOptions) -> RedactReport;
        /// Takes the workspace's commit lease (needs `commit`: a lease guards commits).
        rq::AcquireLease => fn acquire_lease(holder: &str, ttl: Duration) -> Lease;
        /// Renews the lease this handle holds (needs `commit`).
        rq::RenewLease => fn renew_lease(ttl: Duration) -> Lease;
        /// Releases the lease this handle holds (needs `commit`).
        rq::ReleaseLease => fn release_lease() -> bool;
        /// Who holds the lease, if anyone (needs `read` or `commit`; every delegated handle has
        /// `read`).
        rq::LeaseInfo => fn lease() -> Option<LeaseState>;
        /// One page of the audit trail, of one revision or all (needs `history`).
        wire_audit::Audit => fn audit(revision: Option<&str>, cursor: Option<&str>) -> AuditPage;
        /// A revision's notes (needs `history`).
        notes::Notes => fn notes(revision: &str, key: Option<&str>) -> Vec<notes::RevisionNote>;
        /// The workspace's announcements as a stream (needs `history`; `read`, which every
        /// delegated handle has, for `after` `None`).
        rq::History => fn watch(after: Option<crate::watch::WatchPoint>) -> crate::watch::Watch;
    }

    /// Appends a note to a revision (needs `commit`). The database records the grant's actor,
    /// whatever this handle would name.
    pub async fn add_note(
        &self,
        revision: &str,
        key: &str,
        value: serde_json::Value,
    ) -> Result<supabash_core::rpc::notes::RevisionNote> {
        self.require(notes::AddNote::NEEDS)?;
        let actor = self.delegation.actor();
        self.workspace.add_note(revision, key, value, &actor).await
    }

    /// Forks the workspace (needs `fork`). The fork belongs to the workspace's owner and this
    /// grant does not reach it, so the answer is the new workspace's id and where it came
    /// from, not an opened workspace; a job needs a capability of its own to use the fork.
    /// The database records the grant's actor on the fork's first revision, whatever
    /// `options.actor` says.
    pub async fn fork(&self, options: ForkOptions) -> Result<WorkspaceForked> {
        self.require(rq::Fork::NEEDS)?;
        let request = rq::Fork {
            workspace_id: self.id().to_owned(),
            revision: options.revision,
            label: options.label,
            actor: Some(options.actor),
            cause: options.cause,
            delegated_grant: None,
        };
        call(self.transport.as_ref(), &request).await
    }

    /// Stages the tree of an old revision (needs `restore`: a client-side rule, since the
    /// revision's read also serves `history`); committing it then needs `commit` but not
    /// `write`.
    pub async fn restore(&self, revision: &str) -> Result<Restored> {
        self.require(&[Operation::Restore])?;
        let restored = self.workspace.restore(revision).await?;
        *self.restored.lock().expect("restored lock") = Some(restored.changes.clone());
        Ok(restored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::PostgresSigner;
    use crate::transport::Delivery;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use supabash_core::capability::{b64_encode, signing_input, Header};

    const WS: &str = "0b6f3c2e-9a41-4d7e-8c55-1f2a3b4c5d6e";

    /// A test server for the transport contract: counts calls and refuses them all.
    #[derive(Default)]
    struct Refusing(AtomicUsize);

    #[async_trait::async_trait]
    impl Transport for Refusing {
        async fn call(&self, _: &str, _: Map<String, Value>) -> Result<Value, RpcError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err(RpcError::transport(Delivery::Unreached, "test server"))
        }
    }

    fn set(ops: &[Operation]) -> OperationSet {
        OperationSet::new(ops.iter().copied()).unwrap()
    }

    fn signer() -> PostgresSigner {
        PostgresSigner::new("k", &b64_encode(&[3u8; 32]), "i", "a", "o").unwrap()
    }

    async fn open_err(token: &str, expected: &OperationSet) -> (SupabashError, usize) {
        let server = Arc::new(Refusing::default());
        let e = DelegatedWorkspace::open(server.clone(), token, expected, Limits::default())
            .await
            .err()
            .expect("refused");
        (e, server.0.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_wrong_operation_set_is_refused_before_any_call() {
        let read_commit = set(&[Operation::Read, Operation::Commit]);
        let token = signer().mint("job", WS, &read_commit, 60, None).unwrap();
        for expected in [
            set(&[Operation::Read]),
            set(&[Operation::Read, Operation::Commit, Operation::Write]),
            set(&[Operation::Read, Operation::Purge]),
        ] {
            let (e, calls) = open_err(&token, &expected).await;
            assert_eq!(e.code, ErrorCode::InvalidCapability, "{expected:?}");
            assert_eq!(calls, 0);
            assert!(!e.to_string().contains(&token));
        }
        // The right set reaches the exchange.
        let (e, calls) = open_err(&token, &read_commit).await;
        assert_eq!((e.code, calls), (ErrorCode::Backend, 1));
    }

    #[tokio::test]
    async fn read_is_required_and_duplicates_are_refused() {
        let commit = set(&[Operation::Commit]);
        let token = signer().mint("job", WS, &commit, 60, None).unwrap();
        let (e, calls) = open_err(&token, &commit).await;
        assert_eq!((e.code, calls), (ErrorCode::InvalidCapability, 0));

        let mut claims = signer().claims("job", WS, &set(&[Operation::Read]), 1, 60, None);
        claims.common.ops = vec!["read".into(), "read".into()];
        let header = Header {
            alg: crate::capability::postgres::ALGORITHM.into(),
            kid: "k".into(),
            typ: None,
        };
        let token = format!(
            "{}.{}",
            signing_input(&header, &claims.to_json()),
            b64_encode(b"x")
        );
        let (e, calls) = open_err(&token, &set(&[Operation::Read])).await;
        assert_eq!((e.code, calls), (ErrorCode::InvalidCapability, 0));

        for garbage in ["", "a.b", "a.b.c", "e30.e30.e30"] {
            let (e, calls) = open_err(garbage, &set(&[Operation::Read])).await;
            assert_eq!(
                (e.code, calls),
                (ErrorCode::InvalidCapability, 0),
                "{garbage}"
            );
        }
    }

    #[tokio::test]
    async fn a_seed_hs256_token_is_read_in_the_packages_claims() {
        let claims = json!({
            "aud": "a", "backend": "postgres", "corr": "job-2", "exp": 4_000_000_000i64,
            "iat": 3_999_999_900i64, "iss": "i", "nonce": "job-2",
            "ops": ["read", "write", "commit", "history"], "origin": "o", "sub": "job-2",
            "sv": 3, "workspace": WS,
        });
        let header = json!({ "alg": "HS256", "kid": "k1", "typ": "JWS" });
        let token = |claims: &Value| {
            format!(
                "{}.{}.{}",
                b64_encode(header.to_string().as_bytes()),
                b64_encode(claims.to_string().as_bytes()),
                b64_encode(&[9u8; 32])
            )
        };
        let rwch = set(&[
            Operation::Read,
            Operation::Write,
            Operation::Commit,
            Operation::History,
        ]);
        let read = presented_claims(&token(&claims), &rwch).unwrap();
        assert_eq!(read.common.cid.as_deref(), Some("job-2"));
        assert_eq!(read.binding.workspace, WS);
        // The exchange is reached (and refused by the test server).
        let (e, calls) = open_err(&token(&claims), &rwch).await;
        assert_eq!((e.code, calls), (ErrorCode::Backend, 1));
        // The package's schema only: this crate's `ver` in an HS256 token is refused early.
        let mut ours = claims.clone();
        ours["ver"] = json!(1);
        let (e, calls) = open_err(&token(&ours), &rwch).await;
        assert_eq!((e.code, calls), (ErrorCode::InvalidCapability, 0));
        let (e, calls) = open_err(&token(&claims), &set(&[Operation::Read])).await;
        assert_eq!((e.code, calls), (ErrorCode::InvalidCapability, 0));
    }

    proptest::proptest! {
        /// Arbitrary input, and any token with one claims byte changed, never panics the
        /// unverified reader; only an intact token for the expected set passes it.
        #[test]
        fn the_unverified_reader_never_panics(
            junk in "\\PC{0,200}",
            flip in 0usize..400,
            byte in proptest::prelude::any::<u8>(),
        ) {
            let read = set(&[Operation::Read]);
            proptest::prop_assert!(presented_claims(&junk, &read).is_err());
            let token = signer().mint("job", WS, &read, 60, None).unwrap();
            proptest::prop_assert!(presented_claims(&token, &read).is_ok());
            let mut bytes = token.clone().into_bytes();
            let i = flip % bytes.len();
            bytes[i] = byte;
            if let Ok(changed) = String::from_utf8(bytes) {
                let _ = presented_claims(&changed, &read);
            }
        }
    }

    #[tokio::test]
    async fn the_grant_rides_on_every_call_and_replaces_a_forged_one() {
        #[derive(Default)]
        struct Recording(Mutex<Vec<Map<String, Value>>>);
        #[async_trait::async_trait]
        impl Transport for Recording {
            async fn call(&self, _: &str, args: Map<String, Value>) -> Result<Value, RpcError> {
                self.0.lock().unwrap().push(args);
                Ok(Value::Null)
            }
        }
        let inner = Arc::new(Recording::default());
        let t = GrantTransport {
            inner: inner.clone(),
            grant: "g-123".into(),
        };
        let mut args = Map::new();
        args.insert("delegated_grant".into(), json!("forged"));
        t.call("supabash_history", args).await.unwrap();
        assert_eq!(
            inner.0.lock().unwrap()[0]["delegated_grant"],
            json!("g-123")
        );
    }
}

//! The `supabash` Postgres extension. All native work enters through one internal function,
//! `supabash._call(op, args)`, reachable only by the `supabash_owner` role; the public RPCs are
//! SQL wrappers (sql/rpc.sql) that run as that role under forced row-level security.

use pgrx::prelude::*;

mod access;
mod args;
mod bodies;
mod budget;
mod capability;
mod checkpoint;
mod commit;
mod db;
mod diff;
mod fail;
mod garbage;
mod identity;
mod lease;
mod lineage;
mod purge;
mod quota;
mod read;
mod rebase;
mod receipts;
mod redact;
mod schema;
mod scope;
mod stored;
mod verify;
mod workspaces;

::pgrx::pg_module_magic!(name, version);

/// Registers the extension's settings when a backend loads the library.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    budget::define();
    quota::define();
}

// The SQL layer, by concern (extension/sql/schema.sql lists the files). The policies ask the
// native identity functions, so they come after them; everything else only needs to come
// before finalize.sql, which asserts privileges and checks the install once all objects exist.
extension_sql_file!("../sql/schema.sql", name = "schema", bootstrap);
extension_sql_file!(
    "../sql/policies.sql",
    name = "policies",
    requires = [
        request_owner,
        request_role,
        scope_workspace,
        scope_owner,
        scope_store
    ]
);
extension_sql_file!("../sql/rpc.sql", name = "rpc");
extension_sql_file!("../sql/privileges.sql", name = "privileges");
extension_sql_file!("../sql/install_check.sql", name = "install_check");
extension_sql_file!("../sql/finalize.sql", name = "finalize", finalize);

/// Shortens user input quoted in error messages.
pub(crate) fn clip(s: &str) -> &str {
    supabash_core::limits::utf8_prefix(s, 64)
}

/// The private schema (created by sql/schema.sql); pgrx only needs to know its name.
#[pg_schema]
mod supabash {
    use crate::{
        args, capability, checkpoint, clip, commit, diff, fail, garbage, lease, purge, read,
        redact, scope, verify, workspaces,
    };
    use pgrx::prelude::*;
    use pgrx::{Json, JsonB};
    use serde_json::Value;
    use supabash_core::rpc::Rpc;

    /// Dispatches one RPC. `args` is `json` (text), not `jsonb`: large arguments such as a
    /// commit's changes are parsed once, here, instead of being built into jsonb and printed
    /// back to text; then decoded into the RPC's request type. It runs SQL, so, like every such
    /// function of the extension, it pins its own `search_path` whoever calls it (the native
    /// identity and scope functions run none). Errors leave as Postgres ERRORs
    /// with a `SUPABASH_*` marker; a panic is caught by pgrx and becomes an ERROR too, never a
    /// crashed backend.
    #[pg_extern(name = "_call")]
    #[search_path(pg_catalog, pg_temp)]
    fn call(op: &str, args: Json) -> JsonB {
        use supabash_core::rpc::requests as rq;
        use supabash_core::rpc::verify::{Garbage, Verify};
        let _scope = scope::Guard::new();
        crate::budget::start();
        let a = args.0;
        let result = match op {
            "create_workspace" => serve::<rq::CreateWorkspace>(op, a, workspaces::create_workspace),
            "fork" => serve::<rq::Fork>(op, a, workspaces::fork),
            "delete_workspace" => serve::<rq::DeleteWorkspace>(op, a, workspaces::delete_workspace),
            "list_workspaces" => serve::<rq::ListWorkspaces>(op, a, workspaces::list_workspaces),
            "load_manifest" => serve::<rq::LoadManifest>(op, a, read::load_manifest),
            "load_document" => serve::<rq::LoadDocument>(op, a, read::load_document),
            "load_snapshot" => serve::<rq::LoadSnapshot>(op, a, read::load_snapshot),
            "load_revision" => serve::<rq::LoadRevision>(op, a, read::load_revision),
            "history" => serve::<rq::History>(op, a, read::history),
            "commit" => serve::<rq::Commit>(op, a, commit::commit),
            "diff" => serve::<rq::Diff>(op, a, diff::diff),
            "checkpoint" => serve::<rq::Checkpoint>(op, a, checkpoint::checkpoint),
            "checkpoints" => serve::<rq::Checkpoints>(op, a, checkpoint::checkpoints),
            "delete_checkpoint" => {
                serve::<rq::DeleteCheckpoint>(op, a, checkpoint::delete_checkpoint)
            }
            "purge" => serve::<rq::Purge>(op, a, purge::purge),
            "redact" => serve::<rq::Redact>(op, a, redact::redact),
            "exchange_capability" => serve::<rq::ExchangeCapability>(op, a, capability::exchange),
            "acquire_lease" => serve::<rq::AcquireLease>(op, a, lease::acquire),
            "renew_lease" => serve::<rq::RenewLease>(op, a, lease::renew),
            "release_lease" => serve::<rq::ReleaseLease>(op, a, lease::release),
            "lease" => serve::<rq::LeaseInfo>(op, a, lease::lease),
            "verify" => serve::<Verify>(op, a, verify::verify),
            "garbage" => serve::<Garbage>(op, a, garbage::garbage),
            #[cfg(feature = "pg_test")]
            "panic" => panic!("deliberate panic for tests"),
            other => Err(fail::invalid(format!(
                "unknown operation {:?}",
                clip(other)
            ))),
        };
        match result {
            Ok(v) => JsonB(v),
            Err(f) => f.raise(),
        }
    }

    /// Decodes the request of RPC `R` (whose SQL name is `supabash_<op>`), runs `handler`
    /// and encodes its answer.
    fn serve<R: Rpc>(
        op: &str,
        args: Value,
        handler: fn(R) -> fail::Outcome<R::Answer>,
    ) -> fail::Outcome<Value> {
        assert_eq!(
            R::NAME.strip_prefix("supabash_"),
            Some(op),
            "dispatch table and contract disagree"
        );
        if R::MUTATES && read_only() {
            return Err(fail::Fail::new(
                supabash_core::Marker::ReadOnly,
                format!(
                    "{} writes, and this server is a hot standby (read replica) or the transaction is read-only: send it to the primary",
                    R::NAME
                ),
            ));
        }
        let answer = handler(args::decode::<R>(args)?)?;
        Ok(serde_json::to_value(answer).expect("answers serialise"))
    }

    /// Whether this transaction cannot write: the server is in recovery (a hot standby) or the
    /// transaction was declared read-only.
    fn read_only() -> bool {
        // SAFETY: RecoveryInProgress reads shared state and may be called in any backend;
        // XactReadOnly is the backend's own flag, read on the backend's only thread.
        unsafe { pgrx::pg_sys::RecoveryInProgress() || pgrx::pg_sys::XactReadOnly }
    }

    /// The request's claims (see `identity`).
    #[pg_extern(name = "request_claims", stable, parallel_safe)]
    fn request_claims() -> JsonB {
        JsonB(crate::identity::claims())
    }

    /// The claimed role when the session runs as it (row-level security).
    #[pg_extern(name = "request_role", stable, parallel_safe)]
    fn request_role() -> Option<String> {
        crate::identity::role(&crate::identity::claims())
    }

    /// The calling user: `sub` of an `authenticated` caller (row-level security).
    #[pg_extern(name = "request_owner", stable, parallel_safe)]
    fn request_owner() -> Option<pgrx::Uuid> {
        crate::identity::owner(&crate::identity::claims())
    }

    /// The workspace a delegated grant scoped the running call to (row-level security).
    #[pg_extern(name = "_scope_workspace", stable, parallel_unsafe)]
    fn scope_workspace() -> Option<String> {
        scope::workspace()
    }

    /// The owner of that workspace, once known (row-level security).
    #[pg_extern(name = "_scope_owner", stable, parallel_unsafe)]
    fn scope_owner() -> Option<String> {
        scope::owner()
    }

    /// The body store of that workspace, once known: its fork family (row-level security).
    #[pg_extern(name = "_scope_store", stable, parallel_unsafe)]
    fn scope_store() -> Option<String> {
        scope::store()
    }

    /// HMAC-SHA256 of `input` under `secret` equals `signature` (constant time). Only the frozen
    /// install scripts of versions before 0.3.0 declare it (their HS256 verifiers); 0.3.0 drops
    /// the SQL function, the library keeps the symbol so those versions still install.
    #[pg_extern(name = "_hmac_sha256_equal", immutable, parallel_safe, sql = false)]
    fn hmac_sha256_equal(secret: &[u8], input: &[u8], signature: &[u8]) -> bool {
        capability::legacy_hmac_sha256_equal(secret, input, signature)
    }

    /// 32 random bytes: the secret of a pre-0.3.0 HS256 verifier (frozen install scripts only,
    /// as above).
    #[pg_extern(name = "_random_secret", volatile, parallel_safe, sql = false)]
    fn random_secret() -> Vec<u8> {
        capability::strong_random(32)
    }

    /// A fresh Ed25519 key pair for a verifier's registration: the 32-byte private seed, then
    /// the 32-byte public key. Only the public half is ever stored.
    #[pg_extern(name = "_ed25519_key_pair", volatile, parallel_safe)]
    fn ed25519_key_pair() -> Vec<u8> {
        capability::new_key_pair()
    }

    /// Whether `public_key` is a valid 32-byte Ed25519 public key (registration checks it).
    #[pg_extern(name = "_ed25519_public_key_valid", immutable, parallel_safe)]
    fn ed25519_public_key_valid(public_key: &[u8]) -> bool {
        <[u8; 32]>::try_from(public_key).ok().is_some_and(|k| {
            ed25519_dalek::VerifyingKey::from_bytes(&k).is_ok_and(|k| !k.is_weak())
        })
    }
}

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["supabash.bootstrap_roles = on"]
    }
}

//! The `supabash` Postgres extension. All native work enters through one internal function,
//! `supabash._call(op, args)`, reachable only by the `supabash_owner` role; the public RPCs are
//! SQL wrappers (sql/rpc.sql) that run as that role under forced row-level security.

use pgrx::prelude::*;

mod pg;
mod rpc;
mod store;

::pgrx::pg_module_magic!(name, version);

/// Registers the extension's settings when a backend loads the library.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pg::budget::define();
    pg::heap::define();
    pg::key_file::define();
    store::usage::define();
}

// The SQL layer, by concern (extension/sql/schema.sql lists the files). The policies ask the
// native identity functions, so they come after them; everything else only needs to come
// before finalize.sql, which asserts privileges and checks the install once all objects exist.
extension_sql_file!("../sql/schema.sql", name = "schema", bootstrap);
extension_sql_file!(
    "../sql/policies.sql",
    name = "policies",
    requires = [
        row_owner,
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

/// The private schema (created by sql/schema.sql); pgrx only needs to know its name.
#[pg_schema]
mod supabash {
    use crate::pg::json_text::JsonText;
    use crate::pg::{identity, scope};
    use crate::rpc::{self, capability, Entry};
    use pgrx::prelude::*;
    use pgrx::{Json, JsonB};

    /// Dispatches one RPC and answers `jsonb`: every write's wrapper calls it (through
    /// `supabash._write`), and so did every read of 0.4.0, whose install script declares it.
    /// `args` is `json` (text), not `jsonb`: large arguments such as a commit's changes are
    /// parsed once, here, instead of being built into jsonb and printed back to text. It runs
    /// SQL, so, like every such function of the extension, it pins its own `search_path`
    /// whoever calls it (the native identity and scope functions run none). Errors leave as
    /// Postgres ERRORs with a `SUPABASH_*` marker; a panic is caught by pgrx and becomes an
    /// ERROR too, never a crashed backend.
    #[pg_extern(name = "_call")]
    #[search_path(pg_catalog, pg_temp)]
    fn call(op: &str, args: Json) -> JsonB {
        match rpc::dispatch(Entry::Any, op, args.0).and_then(|text| {
            serde_json::from_str(&text).map_err(|e| crate::pg::fail::invalid(e.to_string()))
        }) {
            Ok(v) => JsonB(v),
            Err(f) => f.raise(),
        }
    }

    /// Dispatches one read RPC and answers `json`: the answer is encoded once, as text, and
    /// reaches the caller unchanged (PostgREST passes `json` through), never parsed into
    /// `jsonb` and printed back. Refuses every RPC that writes.
    #[pg_extern(name = "_read")]
    #[search_path(pg_catalog, pg_temp)]
    fn read(op: &str, args: Json) -> JsonText {
        match rpc::dispatch(Entry::ReadsOnly, op, args.0) {
            Ok(text) => JsonText(text),
            Err(f) => f.raise(),
        }
    }

    /// The request's claims (see `identity`).
    #[pg_extern(name = "request_claims", stable, parallel_safe)]
    fn request_claims() -> JsonB {
        JsonB(identity::claims())
    }

    /// The claimed role when the session runs as it (row-level security).
    #[pg_extern(name = "request_role", stable, parallel_safe)]
    fn request_role() -> Option<String> {
        identity::role(&identity::claims())
    }

    /// The calling user: `sub` of an `authenticated` caller (row-level security).
    #[pg_extern(name = "request_owner", stable, parallel_safe)]
    fn request_owner() -> Option<pgrx::Uuid> {
        identity::owner(&identity::claims())
    }

    /// The owner whose rows the running statement may see: every policy's comparison and the
    /// default of every table's `owner_id` (see `scope::row_owner`).
    #[pg_extern(name = "_row_owner", stable, parallel_unsafe)]
    fn row_owner() -> Option<pgrx::Uuid> {
        scope::row_owner()
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
        capability::hmac_sha256_equal(secret, input, signature)
    }

    /// 32 random bytes: the secret of a pre-0.3.0 HS256 verifier (frozen install scripts only,
    /// as above).
    #[pg_extern(name = "_random_secret", volatile, parallel_safe, sql = false)]
    fn random_secret() -> Vec<u8> {
        capability::strong_random(32)
    }

    /// Gives HS256 verifier `key_id` a new generation and answers its secret, derived from the
    /// server key file (`supabash.capability_key_file`), once: the previous secret stops working
    /// (see `rpc::capability::hs256_rotate`). Executable only by supabash_keeper, whose
    /// registration function calls it; the secret is stored nowhere.
    #[pg_extern(name = "_hs256_rotate", volatile, parallel_unsafe)]
    #[search_path(pg_catalog, pg_temp)]
    fn hs256_rotate(key_id: &str) -> String {
        capability::hs256_rotate(key_id).unwrap_or_else(|f| f.raise())
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

//! The `supabash` Postgres extension. All native work enters through one internal function,
//! `supabash._call(op, args)`, reachable only by the `supabash_owner` role; the public RPCs are
//! SQL wrappers (sql/api.sql) that run as that role under forced row-level security.

use pgrx::prelude::*;

mod access;
mod args;
mod checkpoint;
mod commit;
mod db;
mod diff;
mod fail;
mod purge;
mod read;
mod receipts;

::pgrx::pg_module_magic!(name, version);

extension_sql_file!("../sql/schema.sql", name = "schema", bootstrap);
extension_sql_file!("../sql/api.sql", name = "api", finalize);

/// Shortens user input quoted in error messages.
pub(crate) fn clip(s: &str) -> &str {
    supabash_core::limits::utf8_prefix(s, 64)
}

/// The private schema (created by sql/schema.sql); pgrx only needs to know its name.
#[pg_schema]
mod supabash {
    use crate::{args, checkpoint, clip, commit, diff, fail, purge, read};
    use pgrx::prelude::*;
    use pgrx::{Json, JsonB};

    /// Dispatches one RPC. `args` is `json` (text), not `jsonb`: large arguments such as a
    /// commit's changes are parsed once, here, instead of being built into jsonb and printed
    /// back to text. Errors leave as Postgres ERRORs with a `SUPABASH_*` marker; a panic is
    /// caught by pgrx and becomes an ERROR too, never a crashed backend.
    #[pg_extern(name = "_call")]
    fn call(op: &str, args: Json) -> JsonB {
        let a = args::Args(&args.0);
        let result = match op {
            "create_workspace" => read::create_workspace(),
            "load_manifest" => read::load_manifest(&a),
            "load_document" => read::load_document(&a),
            "load_snapshot" => read::load_snapshot(&a),
            "load_revision" => read::load_revision(&a),
            "history" => read::history(&a),
            "commit" => commit::commit(&a),
            "diff" => diff::diff(&a),
            "checkpoint" => checkpoint::checkpoint(&a),
            "checkpoints" => checkpoint::checkpoints(&a),
            "delete_checkpoint" => checkpoint::delete_checkpoint(&a),
            "purge" => purge::purge(&a),
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

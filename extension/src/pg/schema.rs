//! What the installed schema has, computed once per call. The one shared library serves the
//! current schema and the one before it (the support window, `supabash_core::SERVED_SCHEMAS`, README "Versions and upgrades"):
//! a database still on the previous version keeps working until `ALTER EXTENSION supabash
//! UPDATE` runs, and the few things the newer schema added are asked of [`Schema`], never
//! probed where they are used. An older schema gets `SUPABASH_SCHEMA_OUTDATED` on every RPC.

use crate::pg::fail::{Fail, Outcome};
use pgrx::pg_sys;
use std::ffi::CStr;
use supabash_core::{Marker, SERVED_SCHEMAS};

/// The installed schema's features that differ inside the support window (0.5.0 and 0.6.0):
/// each field is named for a feature 0.6.0 added and read from the catalog below, never
/// probed where it is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    /// Entry versions record their kind, mode and modification time (issue 24: columns
    /// `kind`, `mode`, `mtime_ns` of `supabash.entries`). Without them every entry reads as a
    /// regular file, 0o644, with no time, and a commit of anything else is refused with
    /// `SUPABASH_SCHEMA_OUTDATED`.
    pub posix_entries: bool,
    /// 0.6.0: audit records keep their size (`audit_records.stored_bytes`) and count in the
    /// owner's byte quota. On 0.5.0 they are written uncounted.
    pub audit_bytes: bool,
    /// Capability verifiers name their algorithm (HS256 next to Ed25519, 0.6.0).
    pub hs256_verifiers: bool,
    /// Storage capability nonces can be spent in the database (`supabash.storage_nonces`,
    /// 0.6.0); on 0.5.0 `supabash_spend_storage_nonce` is refused.
    pub storage_nonces: bool,
    /// Notes on revisions after the fact (issue 25: table `supabash.revision_notes`). On
    /// 0.5.0 adding or reading notes is refused and history shows none.
    pub revision_notes: bool,
    /// Announcements are also broadcast through Supabase Realtime: the database has the
    /// `realtime` schema and the extension's `supabash._broadcast` (0.6.0), which sends them.
    pub realtime_broadcast: bool,
    /// Revisions keep their tree's file and byte totals (issue 25: `revisions.tree_files`,
    /// `tree_bytes`), written at commit. On 0.5.0 a lazy open's totals are counted by scan.
    pub revision_totals: bool,
    /// Workspaces may store plain files only (issue 24: `workspaces.files_only`, set by
    /// `supabash_create_workspace`'s `files_only`). On 0.5.0 every workspace keeps what the
    /// schema stores, and asking for the option is refused with `SUPABASH_SCHEMA_OUTDATED`.
    pub files_only_option: bool,
}

impl Schema {
    /// The installed schema, or `SUPABASH_SCHEMA_OUTDATED` when it is older than the window.
    pub fn installed() -> Outcome<Schema> {
        // 0.5.0 added the audit trail; anything without it predates the window.
        if has_table(c"audit_records") {
            return Ok(Schema {
                audit_bytes: has_column(c"audit_records", c"stored_bytes"),
                posix_entries: has_column(c"entries", c"mtime_ns"),
                hs256_verifiers: has_column(c"capability_verifiers", c"algorithm"),
                storage_nonces: has_table(c"storage_nonces"),
                revision_notes: has_table(c"revision_notes"),
                realtime_broadcast: has_namespace(c"realtime")
                    && has_function(c"supabash._broadcast(text,text,jsonb)"),
                revision_totals: has_column(c"revisions", c"tree_files"),
                files_only_option: has_column(c"workspaces", c"files_only"),
            });
        }
        Err(Fail::new(
            Marker::SchemaOutdated,
            format!(
                "this database's supabash schema is older than {}, the oldest this library serves: run ALTER EXTENSION supabash UPDATE",
                SERVED_SCHEMAS[SERVED_SCHEMAS.len() - 1]
            ),
        ))
    }
}

impl Schema {
    /// Refuses notes on a schema without them, with `SUPABASH_SCHEMA_OUTDATED`.
    pub fn require_notes(&self) -> Outcome<()> {
        if self.revision_notes {
            return Ok(());
        }
        Err(Fail::new(
            Marker::SchemaOutdated,
            "notes on revisions need supabash 0.6.0: run ALTER EXTENSION supabash UPDATE",
        ))
    }
}

/// Whether table `supabash.<table>` has column `column` (read from the catalog caches).
fn has_column(table: &CStr, column: &CStr) -> bool {
    let relid = relation(table);
    // SAFETY: get_attnum reads the catalog caches, takes a NUL-terminated name that outlives
    // the call, and returns InvalidAttrNumber (0) when nothing is found.
    relid != pg_sys::InvalidOid && unsafe { pg_sys::get_attnum(relid, column.as_ptr()) } > 0
}

/// Whether schema `name` exists (read from the catalog caches).
fn has_namespace(name: &CStr) -> bool {
    // SAFETY: reads the catalog caches, takes a NUL-terminated name that outlives the call,
    // and returns InvalidOid when nothing is found (missing_ok = true).
    unsafe { pg_sys::get_namespace_oid(name.as_ptr(), true) != pg_sys::InvalidOid }
}

/// Whether the function `signature` (`schema.name(types)`) exists, as `to_regprocedure` finds
/// it (the catalog caches).
fn has_function(signature: &CStr) -> bool {
    let text = signature.to_str().unwrap_or_default();
    // SAFETY: to_regprocedure is a strict built-in that takes one text argument and answers
    // NULL (None here) when nothing is found; it errors only on a malformed signature, and this
    // one is a constant.
    unsafe {
        pgrx::direct_function_call::<pg_sys::Oid>(
            pg_sys::to_regprocedure,
            &[pgrx::IntoDatum::into_datum(text)],
        )
    }
    .is_some_and(|oid| oid != pg_sys::InvalidOid)
}

/// Whether table `supabash.<name>` exists (read from the catalog caches).
fn has_table(name: &CStr) -> bool {
    relation(name) != pg_sys::InvalidOid
}

/// The oid of table `supabash.<name>`, or InvalidOid.
fn relation(name: &CStr) -> pg_sys::Oid {
    // SAFETY: both lookups only read the catalog caches, take NUL-terminated names that outlive
    // the calls, and return InvalidOid when nothing is found (missing_ok = true).
    unsafe {
        let schema = pg_sys::get_namespace_oid(c"supabash".as_ptr(), true);
        if schema == pg_sys::InvalidOid {
            return pg_sys::InvalidOid;
        }
        pg_sys::get_relname_relid(name.as_ptr(), schema)
    }
}

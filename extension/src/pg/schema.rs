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
    /// Revisions keep their tree's file and byte totals (issue 25: `revisions.tree_files`,
    /// `tree_bytes`), written at commit. On 0.5.0 a lazy open's totals are counted by scan.
    pub revision_totals: bool,
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
                revision_totals: has_column(c"revisions", c"tree_files"),
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

/// Whether table `supabash.<table>` has column `column` (read from the catalog caches).
fn has_column(table: &CStr, column: &CStr) -> bool {
    let relid = relation(table);
    // SAFETY: get_attnum reads the catalog caches, takes a NUL-terminated name that outlives
    // the call, and returns InvalidAttrNumber (0) when nothing is found.
    relid != pg_sys::InvalidOid && unsafe { pg_sys::get_attnum(relid, column.as_ptr()) } > 0
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

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
/// a change that 0.6.0 adds gets a field here, named for the feature and read from the catalog
/// below, never probed where it is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    /// Capability verifiers name their algorithm (HS256 next to Ed25519, 0.6.0).
    pub hs256_verifiers: bool,
}

impl Schema {
    /// The installed schema, or `SUPABASH_SCHEMA_OUTDATED` when it is older than the window.
    pub fn installed() -> Outcome<Schema> {
        // 0.5.0 added the audit trail; anything without it predates the window.
        if has_table(c"audit_records") {
            return Ok(Schema {
                hs256_verifiers: has_column(c"capability_verifiers", c"algorithm"),
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

/// Whether table `supabash.<name>` exists (read from the catalog caches).
fn has_table(name: &CStr) -> bool {
    // SAFETY: both lookups only read the catalog caches, take NUL-terminated names that outlive
    // the calls, and return InvalidOid when nothing is found (missing_ok = true).
    unsafe {
        let schema = pg_sys::get_namespace_oid(c"supabash".as_ptr(), true);
        schema != pg_sys::InvalidOid
            && pg_sys::get_relname_relid(name.as_ptr(), schema) != pg_sys::InvalidOid
    }
}

/// Whether column `supabash.<table>.<column>` exists (read from the catalog caches).
fn has_column(table: &CStr, column: &CStr) -> bool {
    // SAFETY: as in `has_table`; get_attnum takes a NUL-terminated name that outlives the call
    // and returns InvalidAttrNumber for a missing relation or column.
    unsafe {
        let schema = pg_sys::get_namespace_oid(c"supabash".as_ptr(), true);
        if schema == pg_sys::InvalidOid {
            return false;
        }
        let rel = pg_sys::get_relname_relid(table.as_ptr(), schema);
        rel != pg_sys::InvalidOid
            && pg_sys::get_attnum(rel, column.as_ptr()) != pg_sys::InvalidAttrNumber as i16
    }
}

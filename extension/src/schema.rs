//! What the installed schema has. The one shared library serves every installed version of the
//! extension until `ALTER EXTENSION supabash UPDATE` runs (README: "Versions and upgrades"), so
//! code that needs a table a later version added asks first, from the catalog cache, and runs
//! without it on an older schema (the upgrade script then fills the table from what is stored).

use pgrx::pg_sys;
use std::ffi::CStr;

/// The oid of table `supabash.<name>`, or InvalidOid.
fn table(name: &CStr) -> pg_sys::Oid {
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

/// Whether table `supabash.<name>` exists.
pub fn has_table(name: &CStr) -> bool {
    table(name) != pg_sys::InvalidOid
}

/// Whether table `supabash.<name>` has column `column`.
pub fn has_column(name: &CStr, column: &CStr) -> bool {
    let relid = table(name);
    // SAFETY: get_attnum reads the attribute cache for an existing relation oid and a
    // NUL-terminated name; it returns InvalidAttrNumber (0) when there is no such column.
    relid != pg_sys::InvalidOid && unsafe { pg_sys::get_attnum(relid, column.as_ptr()) } != 0
}

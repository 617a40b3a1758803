//! What the installed schema has. The one shared library serves every installed version of the
//! extension until `ALTER EXTENSION supabash UPDATE` runs (README: "Versions and upgrades"), so
//! code that needs a table a later version added asks first, from the catalog cache, and runs
//! without it on an older schema (the upgrade script then fills the table from what is stored).

use pgrx::pg_sys;
use std::ffi::CStr;

/// Whether table `supabash.<name>` exists.
pub fn has_table(name: &CStr) -> bool {
    // SAFETY: both lookups only read the catalog caches, take NUL-terminated names that outlive
    // the calls, and return InvalidOid when nothing is found (missing_ok = true).
    unsafe {
        let schema = pg_sys::get_namespace_oid(c"supabash".as_ptr(), true);
        schema != pg_sys::InvalidOid
            && pg_sys::get_relname_relid(name.as_ptr(), schema) != pg_sys::InvalidOid
    }
}

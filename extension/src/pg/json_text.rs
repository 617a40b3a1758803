//! `json` answers built as text: [`JsonText`] hands a string of JSON to PostgreSQL as a `json`
//! datum (the same varlena as `text`), so it is neither re-parsed into `jsonb` nor validated a
//! second time.

use pgrx::callconv::{BoxRet, FcInfo};
use pgrx::datum::{Datum, IntoDatum};
use pgrx::pg_sys;

/// JSON text the extension serialised itself (from a serde value, so it is valid JSON).
pub struct JsonText(pub String);

impl IntoDatum for JsonText {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        self.0.as_str().into_datum()
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::JSONOID
    }
}

// SAFETY: the datum is returned to the function's caller, as pgrx does for its own types.
unsafe impl BoxRet for JsonText {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        match self.into_datum() {
            // SAFETY: a freshly made text varlena, in the function's memory context.
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

// SAFETY: a `JsonText` datum is a `json` varlena (text with JSON in it), which is what the SQL
// mapping declares.
pgrx::impl_sql_translatable!(JsonText, "json");

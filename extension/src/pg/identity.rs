//! Who is calling: the claims PostgREST sets (`request.jwt.claims`, or the legacy
//! `request.jwt.claim.role` / `request.jwt.claim.sub` settings), trusted only when the claimed
//! role is the role the session runs as (`SET ROLE`), so claims set by hand under another role
//! identify nobody. Row-level security asks once per statement
//! (`(SELECT supabash.request_owner())`), a commit a dozen times, so this is native code.

use pgrx::pg_sys;
use pgrx::prelude::*;
use serde_json::{Map, Value};
use std::ffi::{CStr, CString};

/// A setting's value; `None` when it was never set.
fn setting(name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    // SAFETY: GetConfigOption returns NULL or a NUL-terminated string owned by the GUC
    // machinery, copied here before anything can change it.
    unsafe {
        let value = pg_sys::GetConfigOption(name.as_ptr(), true, false);
        (!value.is_null()).then(|| CStr::from_ptr(value).to_string_lossy().into_owned())
    }
}

/// The request's claims: `request.jwt.claims` when set, otherwise an object of the legacy
/// `request.jwt.claim.role` and `.sub` settings that are set. Claims that are not JSON are an
/// error, as PostgREST never sets them.
pub fn claims() -> Value {
    if let Some(text) = setting("request.jwt.claims").filter(|t| !t.is_empty()) {
        return serde_json::from_str(&text)
            .unwrap_or_else(|_| error!("request.jwt.claims is not valid JSON"));
    }
    let mut legacy = Map::new();
    for key in ["role", "sub"] {
        if let Some(v) = setting(&format!("request.jwt.claim.{key}")).filter(|v| !v.is_empty()) {
            legacy.insert(key.into(), Value::String(v));
        }
    }
    Value::Object(legacy)
}

/// Request header `name` (lower case) from the `request.headers` PostgREST sets; `None` when
/// absent, empty or not a string. Headers that are not JSON count as absent.
pub fn header(name: &str) -> Option<String> {
    let text = setting("request.headers").filter(|t| !t.is_empty())?;
    let headers: Value = serde_json::from_str(&text).ok()?;
    headers
        .get(name)?
        .as_str()
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The claimed role, when it is the role the session runs as.
pub fn role(claims: &Value) -> Option<String> {
    let claimed = claims.get("role")?.as_str()?;
    (setting("role").as_deref() == Some(claimed)).then(|| claimed.to_owned())
}

/// `8-4-4-4-12` hexadecimal digits, the only form of `sub` accepted as a user id.
fn canonical_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The user: `sub` of an `authenticated` caller, when it is a canonical UUID.
pub fn owner(claims: &Value) -> Option<pgrx::Uuid> {
    if role(claims).as_deref() != Some("authenticated") {
        return None;
    }
    let sub = claims.get("sub")?.as_str()?;
    if !canonical_uuid(sub) {
        return None;
    }
    let id = uuid::Uuid::parse_str(sub).ok()?;
    Some(pgrx::Uuid::from_bytes(*id.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::canonical_uuid;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn canonical_uuids_are_exactly_the_hyphenated_form(id in any::<u128>()) {
            let u = uuid::Uuid::from_u128(id);
            prop_assert!(canonical_uuid(&u.hyphenated().to_string()));
            prop_assert!(canonical_uuid(&u.hyphenated().to_string().to_uppercase()));
            prop_assert!(!canonical_uuid(&u.simple().to_string()));
            prop_assert!(!canonical_uuid(&u.braced().to_string()));
            prop_assert!(!canonical_uuid(&u.urn().to_string()));
        }

        #[test]
        fn strings_of_another_shape_are_refused(s in "[0-9a-f-]{0,40}") {
            let shaped = s.len() == 36 && s.split('-').map(str::len).eq([8, 4, 4, 4, 12]);
            prop_assert_eq!(canonical_uuid(&s), shaped);
        }
    }

    #[test]
    fn refuses_near_misses() {
        for s in [
            "11111111-1111-4111-8111-11111111111g",
            "11111111-1111-4111-8111-1111111111111",
            "11111111_1111-4111-8111-111111111111",
            "' OR true --",
            "",
        ] {
            assert!(!canonical_uuid(s), "{s}");
        }
    }
}

//! A call's arguments: decoded once into the RPC's request type (`supabash_core::rpc`), then
//! the checks a field needs beyond its type (UUIDs, paths, the shared field limits).

use crate::pg::fail::{invalid, Fail, Outcome};
use serde_json::Value;
use supabash_core::limits::FieldError;
use supabash_core::rpc::Rpc;
use supabash_core::Marker;

/// Decodes the argument object the SQL wrapper built. A wrong shape names the offending field
/// (`changes[3].op: unknown variant ...`).
pub fn decode<R: Rpc>(args: Value) -> Outcome<R> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let at = e.path().to_string();
        let inner = e.into_inner().to_string();
        match (at.as_str(), wrong_type(&inner)) {
            (".", _) => invalid(inner),
            (_, Some(shape)) => invalid(format!("{at} {shape}")),
            _ => invalid(format!("{at}: {inner}")),
        }
    })
}

/// serde's "invalid type: X, expected Y" in the contract's words: "must be Y (not X)".
fn wrong_type(message: &str) -> Option<String> {
    let (found, expected) = message
        .strip_prefix("invalid type: ")?
        .split_once(", expected ")?;
    let words = |t: &str| -> String {
        let t = t.split([' ', '`']).next().unwrap_or(t);
        match t {
            "sequence" | "a sequence" => "a list".into(),
            "map" | "a map" | "struct" => "an object".into(),
            "string" | "a string" => "text".into(),
            "boolean" | "a boolean" => "true or false".into(),
            "integer" | "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => {
                "an integer".into()
            }
            "floating" | "f32" | "f64" => "a number".into(),
            "null" | "unit" => "null".into(),
            other => other.to_owned(),
        }
    };
    let expected = match expected {
        e if e.starts_with("struct ") || e == "a map" => "an object".to_owned(),
        "a sequence" => "a list".to_owned(),
        e => words(e.trim_start_matches("a ").trim_start_matches("an ")),
    };
    let found = match found.split_once(' ') {
        Some((kind, _)) => words(kind),
        None => words(found),
    };
    Some(format!("must be {expected} (not {found})"))
}

/// A UUID argument, in canonical lowercase hyphenated form.
pub fn uuid(name: &str, value: &str) -> Outcome<String> {
    uuid::Uuid::parse_str(value)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            invalid(format!(
                "{name} is not a UUID: {:?}",
                crate::pg::clip(value)
            ))
        })
}

/// An optional UUID argument.
pub fn uuid_opt(name: &str, value: Option<&str>) -> Outcome<Option<String>> {
    value.map(|v| uuid(name, v)).transpose()
}

/// A refused field: a size limit is a quota, anything else an invalid argument.
pub fn field(e: FieldError) -> Fail {
    if e.is_quota() {
        Fail::new(Marker::Quota, e.to_string())
    } else {
        invalid(e.to_string())
    }
}

/// Checks a path against the shared path rules (`supabash_core::path::validate`).
pub fn checked_path(p: &str) -> Outcome<String> {
    supabash_core::path::validate(p)
        .map(str::to_owned)
        .map_err(|e| {
            Fail::new(
                Marker::InvalidPath,
                format!("{:?}: {e}", crate::pg::clip(p)),
            )
            .with_detail(serde_json::json!({ "path": crate::pg::clip(p), "reason": e.reason() }))
        })
}

/// A request's `page_size`: `default` when absent, else between 1 and `max` (a larger page is
/// `SUPABASH_QUOTA_EXCEEDED`, as every hard limit).
pub fn page_size(requested: Option<i32>, default: i64, max: i64) -> Outcome<i64> {
    let size = requested.map_or(default, i64::from);
    if !(1..=max).contains(&size) {
        return Err(Fail::new(
            Marker::Quota,
            format!("page_size must be between 1 and {max}"),
        ));
    }
    Ok(size)
}

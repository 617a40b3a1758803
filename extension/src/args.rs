//! Typed access to the JSON argument object the SQL wrappers build from named RPC parameters.

use crate::fail::{invalid, Fail, Outcome};
use serde_json::Value;
use supabash_core::Marker;

/// The arguments of one call.
pub struct Args<'a>(pub &'a Value);

impl Args<'_> {
    fn field(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// An optional UUID, returned in canonical lowercase hyphenated form.
    pub fn uuid_opt(&self, name: &str) -> Outcome<Option<String>> {
        match self.field(name) {
            None => Ok(None),
            Some(Value::String(s)) => uuid::Uuid::parse_str(s)
                .map(|u| Some(u.hyphenated().to_string()))
                .map_err(|_| invalid(format!("{name} is not a UUID: {:?}", crate::clip(s)))),
            Some(_) => Err(invalid(format!("{name} must be a UUID string"))),
        }
    }

    /// A required UUID.
    pub fn uuid(&self, name: &str) -> Outcome<String> {
        self.uuid_opt(name)?
            .ok_or_else(|| invalid(format!("{name} is required")))
    }

    /// An optional string of at most `max` bytes (and at least one).
    pub fn text_opt(&self, name: &str, max: usize) -> Outcome<Option<String>> {
        match self.field(name) {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => {
                Err(invalid(format!("{name} must not be empty")))
            }
            Some(Value::String(s)) if s.len() > max => Err(Fail::new(
                Marker::Quota,
                format!("{name} is longer than {max} bytes"),
            )),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(format!("{name} must be a string"))),
        }
    }

    /// An optional integer.
    pub fn int_opt(&self, name: &str) -> Outcome<Option<i64>> {
        match self.field(name) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| invalid(format!("{name} must be an integer"))),
        }
    }

    /// An optional boolean, false when absent.
    pub fn flag(&self, name: &str) -> Outcome<bool> {
        match self.field(name) {
            None => Ok(false),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(format!("{name} must be a boolean"))),
        }
    }

    /// A required path, checked against the path rules.
    pub fn path(&self, name: &str) -> Outcome<String> {
        match self.field(name) {
            None => Err(invalid(format!("{name} is required"))),
            Some(Value::String(p)) => checked_path(p),
            Some(_) => Err(invalid(format!("{name} must be a string"))),
        }
    }

    /// A raw JSON value (absent or null gives `None`).
    pub fn json(&self, name: &str) -> Option<&Value> {
        self.field(name)
    }
}

/// Checks a path against the shared path rules (`supabash_core::path::validate`).
pub fn checked_path(p: &str) -> Outcome<String> {
    supabash_core::path::validate(p)
        .map(str::to_owned)
        .map_err(|e| {
            Fail::new(Marker::InvalidPath, format!("{:?}: {e}", crate::clip(p)))
                .with_detail(serde_json::json!({ "path": crate::clip(p), "reason": e.reason() }))
        })
}

//! Hard ceilings the database enforces on every request. Clients have their own, lower,
//! configurable defaults; these are the last line.

/// Largest body of one file, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Most changes in one commit.
pub const MAX_CHANGES_PER_COMMIT: usize = 100_000;
/// Longest actor, correlation id or idempotency key, in bytes.
pub const MAX_LABEL_BYTES: usize = 1024;
/// Longest workspace label, in bytes.
pub const MAX_WORKSPACE_LABEL_BYTES: usize = 256;
/// Largest page of `supabash_list_workspaces`.
pub const MAX_WORKSPACE_PAGE: i64 = 1000;
/// Default page of `supabash_list_workspaces`.
pub const DEFAULT_WORKSPACE_PAGE: i64 = 100;
/// Longest commit cause or checkpoint label, in bytes.
pub const MAX_CAUSE_BYTES: usize = 4096;
/// Largest commit metadata object, as compact JSON bytes.
pub const MAX_COMMIT_METADATA_BYTES: usize = 16 * 1024;
/// Largest history page.
pub const MAX_HISTORY_PAGE: i64 = 1000;
/// Default history page.
pub const DEFAULT_HISTORY_PAGE: i64 = 100;
/// Largest diff preview per entry, in bytes.
pub const MAX_DIFF_PREVIEW_BYTES: i64 = 64 * 1024;
/// Default diff preview per entry, in bytes.
pub const DEFAULT_DIFF_PREVIEW_BYTES: i64 = 8 * 1024;
/// Revisions purge keeps when the caller names no rule.
pub const DEFAULT_PURGE_KEEP: i64 = 50;
/// Shortest lease, in seconds.
pub const MIN_LEASE_TTL_SECONDS: i32 = 1;
/// Longest lease, in seconds (a holder renews before it ends).
pub const MAX_LEASE_TTL_SECONDS: i32 = 3600;
/// Longest lease holder id, in bytes.
pub const MAX_LEASE_HOLDER_BYTES: usize = 256;
/// Most audit actions one commit or one `supabash_record_discarded` call carries (more stay
/// queued for the next one).
pub const MAX_AUDIT_ACTIONS: usize = 256;
/// Largest audit action as a whole, as compact JSON bytes (arguments, paths and texts
/// together; clients drop trailing paths to fit: see `rpc::audit::fit_record`). With
/// [`MAX_AUDIT_ACTIONS`] it bounds one call's records to 4 MiB.
pub const MAX_AUDIT_RECORD_BYTES: usize = 16 * 1024;
/// Largest arguments object of one audit action, as compact JSON bytes (clients cap theirs to
/// fit: see `cap_arguments`).
pub const MAX_AUDIT_ARGUMENTS_BYTES: usize = 8 * 1024;
/// Most paths one audit action lists (clients keep the first ones).
pub const MAX_AUDIT_PATHS: usize = 64;
/// Longest tool name, error code or denial reason of an audit action, in bytes.
pub const MAX_AUDIT_TEXT_BYTES: usize = 1024;
/// Largest page of `supabash_audit`.
pub const MAX_AUDIT_PAGE: i64 = 1000;
/// Default page of `supabash_audit`.
pub const DEFAULT_AUDIT_PAGE: i64 = 100;
/// A capability verifier's default longest lifetime (`exp - iat`), in seconds: 900, the
/// database verifier's default and the TypeScript package's.
pub const DEFAULT_CAPABILITY_LIFETIME_SECS: i64 = 900;
/// The longest lifetime a capability verifier may allow, in seconds (one day).
pub const MAX_CAPABILITY_LIFETIME_SECS: i64 = 86_400;
/// A capability verifier's default clock skew, in seconds.
pub const DEFAULT_CAPABILITY_SKEW_SECS: i64 = 60;
/// The largest clock skew a capability verifier may allow, in seconds (one hour).
pub const MAX_CAPABILITY_SKEW_SECS: i64 = 3600;
/// Marker appended to a cut preview.
pub const TRUNCATED_MARKER: &str = "\n[truncated]\n";

/// Why a request field was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// An empty string where text is expected.
    Empty(&'static str),
    /// Longer than its ceiling (a quota).
    TooLong { name: &'static str, max: usize },
    /// Not a JSON object.
    NotAnObject(&'static str),
    /// More items than its ceiling (a quota).
    TooMany { name: &'static str, max: usize },
    /// A number below zero where none can be.
    Negative(&'static str),
}

impl FieldError {
    /// Whether the refusal is a size limit (`QUOTA_EXCEEDED`) rather than a malformed value.
    pub fn is_quota(&self) -> bool {
        matches!(
            self,
            FieldError::TooLong { .. } | FieldError::TooMany { .. }
        )
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldError::Empty(name) => write!(f, "{name} must not be empty"),
            FieldError::TooLong { name, max } => write!(f, "{name} is longer than {max} bytes"),
            FieldError::NotAnObject(name) => write!(f, "{name} must be a JSON object"),
            FieldError::TooMany { name, max } => write!(f, "{name} has more than {max} items"),
            FieldError::Negative(name) => write!(f, "{name} must not be negative"),
        }
    }
}

/// An optional text field: absent, or 1 to `max` bytes.
pub fn check_text(name: &'static str, value: Option<&str>, max: usize) -> Result<(), FieldError> {
    match value {
        Some("") => Err(FieldError::Empty(name)),
        Some(v) if v.len() > max => Err(FieldError::TooLong { name, max }),
        _ => Ok(()),
    }
}

/// Several optional text fields, each `(name, value, max)`: the first failure.
pub fn check_texts(fields: &[(&'static str, Option<&str>, usize)]) -> Result<(), FieldError> {
    fields
        .iter()
        .try_for_each(|&(name, value, max)| check_text(name, value, max))
}

/// An optional JSON object of at most `max` bytes as compact JSON.
pub fn check_object(
    name: &'static str,
    value: Option<&serde_json::Value>,
    max: usize,
) -> Result<(), FieldError> {
    match value {
        Some(v) if !v.is_object() => Err(FieldError::NotAnObject(name)),
        Some(v) if v.to_string().len() > max => Err(FieldError::TooLong { name, max }),
        _ => Ok(()),
    }
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a character boundary.
pub fn utf8_prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn prefix_is_a_boundary(s in "\\PC{0,40}", max in 0usize..50) {
            let p = utf8_prefix(&s, max);
            prop_assert!(p.len() <= max);
            prop_assert!(s.starts_with(p));
            if s.len() > max {
                let next = s[p.len()..].chars().next().unwrap();
                prop_assert!(p.len() + next.len_utf8() > max);
            }
        }
    }
}

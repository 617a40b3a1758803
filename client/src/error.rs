//! `SupabashError`, the one error type of the client, and the one table that turns what a
//! transport reports (a `SUPABASH_*` marker, a SQLSTATE, a PostgREST `PGRST*` code, an HTTP
//! status, or a failure to get any answer) into an error code.

use crate::rpc_error::{Delivery, RpcError};
use std::error::Error as StdError;
use supabash_core::{ErrorCode, Marker};

/// Boxed underlying cause.
pub type Source = Box<dyn StdError + Send + Sync + 'static>;

/// A failed operation: a code from the closed set, the affected path when known, whether an
/// immediate retry may succeed, whether a mutation may have happened although it failed, and
/// the underlying cause. The client never retries by itself.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}{}", path.as_deref().map(|p| format!(" ({p})")).unwrap_or_default())]
pub struct SupabashError {
    /// What went wrong, from the closed set.
    pub(crate) code: ErrorCode,
    /// A human-readable explanation.
    pub(crate) message: String,
    /// The workspace path concerned, when there is one.
    pub(crate) path: Option<String>,
    /// An immediate retry may succeed.
    pub(crate) retryable: bool,
    /// The request was a mutation and may have been applied although no answer arrived.
    pub(crate) outcome_unknown: bool,
    /// The server's hint (PostgREST `hint`, Postgres HINT): what to do about it.
    pub(crate) hint: Option<String>,
    /// The server's details (PostgREST `details`; the extension sends JSON there).
    pub(crate) details: Option<String>,
    /// The underlying error.
    #[source]
    pub(crate) source: Option<Source>,
}

/// Result with [`SupabashError`].
pub type Result<T, E = SupabashError> = std::result::Result<T, E>;

impl SupabashError {
    /// An error with a code and message; retryable as the code says.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SupabashError {
            code,
            message: message.into(),
            path: None,
            retryable: code.retryable(),
            outcome_unknown: false,
            hint: None,
            details: None,
            source: None,
        }
    }

    /// What went wrong, from the closed set.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// A human-readable explanation.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The workspace path concerned, when there is one.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// Whether an immediate retry may succeed. The client never retries by itself.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// Whether the request was a mutation that may have been applied although no answer
    /// arrived (retry a commit with the same transaction id).
    pub fn outcome_unknown(&self) -> bool {
        self.outcome_unknown
    }

    /// The server's hint, when it gave one (PostgREST `hint`): what to do about the error.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The server's details, when it gave them (PostgREST `details`; JSON text from the
    /// extension).
    pub fn details(&self) -> Option<&str> {
        self.details.as_deref()
    }

    /// Sets the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Sets the affected path.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Replaces the message (e.g. with a redacted one).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Sets the underlying cause.
    pub fn with_source(mut self, source: impl Into<Source>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Shorthand for `QUOTA_EXCEEDED`.
    pub fn quota(message: impl Into<String>) -> Self {
        SupabashError::new(ErrorCode::QuotaExceeded, message)
    }

    /// A request field refused by the shared field rules (`supabash_core::limits`).
    pub fn field(e: supabash_core::limits::FieldError) -> Self {
        let code = if e.is_quota() {
            ErrorCode::QuotaExceeded
        } else {
            ErrorCode::InvalidArgument
        };
        SupabashError::new(code, e.to_string())
    }

    /// Maps a transport error for the RPC it came from. `mutation` says whether the RPC
    /// writes, which decides whether a lost answer leaves the outcome unknown.
    pub fn from_rpc(err: RpcError, mutation: bool) -> Self {
        let Classified {
            code,
            retryable,
            maybe_applied,
        } = classify(&err);
        let path = err.detail_path();
        SupabashError {
            code,
            message: err.message.clone(),
            path,
            retryable,
            outcome_unknown: mutation && maybe_applied,
            hint: err.hint.clone(),
            details: err.details.clone(),
            source: Some(Box::new(err)),
        }
    }
}

struct Classified {
    code: ErrorCode,
    retryable: bool,
    maybe_applied: bool,
}

fn known(code: ErrorCode) -> Classified {
    Classified {
        code,
        retryable: code.retryable(),
        maybe_applied: false,
    }
}

/// The mapping table. Order: delivery failures, markers, SQLSTATE / PostgREST codes, HTTP status.
fn classify(err: &RpcError) -> Classified {
    match err.delivery {
        Delivery::Unreached => {
            return Classified {
                code: ErrorCode::Backend,
                retryable: true,
                maybe_applied: false,
            }
        }
        Delivery::Lost => {
            return Classified {
                code: ErrorCode::Backend,
                retryable: true,
                maybe_applied: true,
            }
        }
        Delivery::Answered => {}
    }
    if let Some(marker) = Marker::from_message(&err.message) {
        return known(marker.code());
    }
    if let Some(code) = err.code.as_deref().and_then(code_of) {
        return known(code);
    }
    match err.status {
        Some(401) => known(ErrorCode::Authentication),
        Some(403) => known(ErrorCode::Authorization),
        Some(404) => known(ErrorCode::NotFound),
        Some(409) => known(ErrorCode::CommitConflict),
        Some(412) => known(ErrorCode::LeaseLost),
        Some(423) => known(ErrorCode::LeaseHeld),
        Some(413) => known(ErrorCode::QuotaExceeded),
        // A gateway error: the database may have run the request behind it.
        Some(502 | 504) => Classified {
            code: ErrorCode::Backend,
            retryable: true,
            maybe_applied: true,
        },
        Some(429 | 503) => Classified {
            code: ErrorCode::Backend,
            retryable: true,
            maybe_applied: false,
        },
        Some(s) if (400..500).contains(&s) => known(ErrorCode::InvalidArgument),
        _ => Classified {
            code: ErrorCode::Backend,
            retryable: false,
            maybe_applied: false,
        },
    }
}

/// SQLSTATEs and PostgREST codes with a fixed meaning.
fn code_of(code: &str) -> Option<ErrorCode> {
    Some(match code {
        // PostgREST: JWT missing, invalid or expired.
        "PGRST300" | "PGRST301" | "PGRST302" | "PGRST303" => ErrorCode::Authentication,
        // PostgREST: cannot reach or use the database.
        "PGRST000" | "PGRST001" | "PGRST002" | "PGRST003" => ErrorCode::Backend,
        // PostgREST: function not found, invalid body or arguments.
        "PGRST202" | "PGRST203" | "PGRST102" | "42883" => ErrorCode::InvalidArgument,
        "42501" => ErrorCode::Authorization,
        "28000" | "28P01" => ErrorCode::Authentication,
        "PT409" => ErrorCode::CommitConflict,
        "PT423" => ErrorCode::LeaseHeld,
        "PT412" => ErrorCode::LeaseLost,
        "55P03" | "40001" | "40P01" => ErrorCode::CommitCoordination,
        "23505" => ErrorCode::IdempotencyConflict,
        "54000" => ErrorCode::QuotaExceeded,
        "25006" => ErrorCode::ReadOnly,
        "0A000" => ErrorCode::UnsupportedContent,
        "XX001" | "XX002" => ErrorCode::HistoryCorruption,
        c if c.starts_with("22") => ErrorCode::InvalidArgument,
        c if c.starts_with("08") || c.starts_with("53") || c.starts_with("57") => {
            ErrorCode::Backend
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(status: Option<u16>, code: Option<&str>, message: &str) -> RpcError {
        RpcError {
            status,
            code: code.map(str::to_owned),
            message: message.into(),
            details: None,
            hint: None,
            delivery: Delivery::Answered,
        }
    }

    #[test]
    fn the_servers_hint_and_details_are_kept() {
        let mut err = answered(Some(400), Some("42501"), "SUPABASH_WORKSPACE_DENIED: no");
        err.hint = Some("sign in again".into());
        err.details = Some(r#"{"path":"/a.md"}"#.into());
        let e = SupabashError::from_rpc(err, false);
        assert_eq!(e.hint(), Some("sign in again"));
        assert_eq!(e.details(), Some(r#"{"path":"/a.md"}"#));
        assert_eq!(e.path(), Some("/a.md"));
        let plain = SupabashError::from_rpc(answered(None, None, "x"), false);
        assert_eq!((plain.hint(), plain.details()), (None, None));
        assert_eq!(
            SupabashError::new(ErrorCode::Backend, "x")
                .with_hint("h")
                .hint(),
            Some("h")
        );
    }

    #[test]
    fn markers_win_over_codes_and_status() {
        let e = SupabashError::from_rpc(
            answered(Some(409), Some("PT409"), "SUPABASH_COMMIT_CONFLICT: moved"),
            true,
        );
        assert_eq!(e.code, ErrorCode::CommitConflict);
        assert!(!e.retryable && !e.outcome_unknown);
        let e = SupabashError::from_rpc(
            answered(Some(400), Some("22023"), "SUPABASH_INVALID_PATH: x"),
            false,
        );
        assert_eq!(e.code, ErrorCode::InvalidPath);
        let e = SupabashError::from_rpc(
            answered(
                Some(500),
                Some("55P03"),
                "SUPABASH_COMMIT_COORDINATION: busy",
            ),
            true,
        );
        assert!(e.retryable && !e.outcome_unknown);
        let e = SupabashError::from_rpc(
            answered(Some(423), Some("PT423"), "SUPABASH_LEASE_HELD: leased"),
            true,
        );
        assert!(e.code == ErrorCode::LeaseHeld && e.retryable && !e.outcome_unknown);
    }

    #[test]
    fn codes_then_status() {
        let cases = [
            (Some(401), Some("PGRST303"), ErrorCode::Authentication),
            (Some(401), Some("42501"), ErrorCode::Authorization),
            (Some(404), Some("PGRST202"), ErrorCode::InvalidArgument),
            (None, Some("54000"), ErrorCode::QuotaExceeded),
            (Some(403), None, ErrorCode::Authorization),
            (Some(413), None, ErrorCode::QuotaExceeded),
            (Some(418), None, ErrorCode::InvalidArgument),
            (Some(500), Some("XX000"), ErrorCode::Backend),
            (None, Some("PT423"), ErrorCode::LeaseHeld),
            (None, Some("PT412"), ErrorCode::LeaseLost),
            (Some(423), None, ErrorCode::LeaseHeld),
            (Some(412), None, ErrorCode::LeaseLost),
        ];
        for (status, code, want) in cases {
            assert_eq!(
                SupabashError::from_rpc(answered(status, code, "m"), false).code,
                want
            );
        }
    }

    #[test]
    fn lost_answers_leave_mutations_unknown() {
        let mut lost = answered(None, None, "reset");
        lost.delivery = Delivery::Lost;
        let e = SupabashError::from_rpc(lost.clone(), true);
        assert!(e.retryable && e.outcome_unknown);
        assert!(!SupabashError::from_rpc(lost, false).outcome_unknown);
        let e = SupabashError::from_rpc(answered(Some(504), None, "timeout"), true);
        assert!(e.retryable && e.outcome_unknown);
        let e = SupabashError::from_rpc(answered(Some(503), None, "down"), true);
        assert!(e.retryable && !e.outcome_unknown);
        let mut unreached = answered(None, None, "refused");
        unreached.delivery = Delivery::Unreached;
        let e = SupabashError::from_rpc(unreached, true);
        assert!(e.retryable && !e.outcome_unknown);
    }
}
